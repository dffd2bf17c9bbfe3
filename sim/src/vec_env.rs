//! The `VecEnv` contract: a batch of environments stepped together.
//!
//! Every buffer is contiguous and row-major, `[num_envs, dim]`, so one copy moves a whole batch
//! to a device. Flags are `f32` (0.0 or 1.0) so they can be used as masks directly.

use crate::SimError;

/// A continuous box space: one `[low, high]` interval per dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxSpace {
    /// Lower bound per dimension.
    pub low: Vec<f32>,
    /// Upper bound per dimension.
    pub high: Vec<f32>,
}

impl BoxSpace {
    /// A box with the same bounds in every dimension.
    pub fn uniform(dim: usize, low: f32, high: f32) -> Self {
        Self { low: vec![low; dim], high: vec![high; dim] }
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.low.len()
    }
}

/// One camera's images as the contract exposes them: [`VecEnv::image`] returns
/// `[num_envs, height, width, channels]` `u8` values for it, row-major (RGB for 3 channels).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageSpec {
    /// Camera name, e.g. `front` or `wrist`.
    pub name: String,
    /// Image height, pixels.
    pub height: usize,
    /// Image width, pixels.
    pub width: usize,
    /// Values per pixel (3: RGB).
    pub channels: usize,
}

impl ImageSpec {
    /// Values of one environment's image, `height × width × channels`.
    pub fn len(&self) -> usize {
        self.height * self.width * self.channels
    }

    /// Whether an image holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What one environment observes: a flat vector, optionally a separate critic vector, and the
/// images of any cameras (language instructions come from [`VecEnv::instruction`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ObsSpec {
    /// Flat proprioceptive/state observation the policy acts on, `[dim]`.
    pub vector: BoxSpace,
    /// Privileged observation for a critic (asymmetric actor-critic), `[critic_dim]`; `None`
    /// when the critic sees what the policy sees.
    pub critic: Option<BoxSpace>,
    /// Cameras whose `u8` images [`VecEnv::image`] returns, in camera order; empty for
    /// environments without cameras.
    pub images: Vec<ImageSpec>,
}

impl ObsSpec {
    /// A policy observation with no separate critic observation and no images.
    pub fn vector(vector: BoxSpace) -> Self {
        Self { vector, critic: None, images: Vec::new() }
    }
}

/// What one environment accepts as an action.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionSpec {
    /// Continuous action bounds, `[dim]`. Actions outside are clipped by the environment
    /// exactly as the reference implementation clips them.
    pub bounds: BoxSpace,
}

/// Where the policy observation shows the current value of what one action dimension
/// commands, so that a policy can predict actions relative to the present state (openpi's
/// `DeltaActions`): `obs[column] × scale` is that value in the action's own units (for a
/// joint-position action, the action that would hold the joint where it is).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ActionState {
    /// Column of the policy observation, `[0, obs_dim)`.
    pub column: usize,
    /// Factor from the observed value to action units.
    pub scale: f32,
}

/// Batched results of the last `reset` or `step`.
///
/// After a step in which environment `i` ended (terminated or truncated), it is reset
/// automatically: `obs[i]` is already the first observation of the next episode, and the
/// last observation of the ended episode is kept in `final_obs[i]` for bootstrapping
/// truncated episodes. Where environment `i` did not end, `final_obs[i]` equals `obs[i]`, so
/// `final_obs` is always the true next observation of the transition just taken.
///
/// As in gymnasium's `TimeLimit`, a step that reaches a terminal state on the last allowed
/// step sets both `terminated` and `truncated`; `terminated` then takes precedence (do not
/// bootstrap).
#[derive(Debug, Clone, Default)]
pub struct StepBuffers {
    /// Observation to act on next, `[num_envs, obs_dim]`.
    pub obs: Vec<f32>,
    /// Critic observation matching `obs`, `[num_envs, critic_dim]`; empty when the task has no
    /// separate critic observation ([`ObsSpec::critic`] is `None`).
    pub critic_obs: Vec<f32>,
    /// Critic observation matching `final_obs`, `[num_envs, critic_dim]`; empty likewise.
    pub final_critic_obs: Vec<f32>,
    /// Reward of the last step, `[num_envs]`.
    pub reward: Vec<f32>,
    /// 1.0 where the episode reached a terminal state (no bootstrapping), `[num_envs]`.
    pub terminated: Vec<f32>,
    /// 1.0 where the episode reached the time limit (bootstrap from `final_obs` unless
    /// `terminated` is also 1.0), `[num_envs]`.
    pub truncated: Vec<f32>,
    /// 1.0 where the task's success criterion held at the last step, `[num_envs]`.
    /// Always 0.0 for tasks without a success notion (see [`TaskInfo::has_success`]).
    pub success: Vec<f32>,
    /// Observation produced by the last step before any auto-reset, `[num_envs, obs_dim]`:
    /// the last observation of the episode where it ended, a copy of `obs` elsewhere
    /// (zero after `reset`).
    pub final_obs: Vec<f32>,
    /// Undiscounted return of the episode that just ended, `[num_envs]`; 0.0 where it did not
    /// end.
    pub episode_return: Vec<f32>,
    /// Length in steps of the episode that just ended, `[num_envs]`; 0 where it did not end.
    pub episode_length: Vec<u32>,
}

impl StepBuffers {
    /// Buffers for `num_envs` environments with `obs_dim`-dimensional observations, zeroed.
    pub fn new(num_envs: usize, obs_dim: usize) -> Self {
        Self {
            obs: vec![0.0; num_envs * obs_dim],
            critic_obs: Vec::new(),
            final_critic_obs: Vec::new(),
            reward: vec![0.0; num_envs],
            terminated: vec![0.0; num_envs],
            truncated: vec![0.0; num_envs],
            success: vec![0.0; num_envs],
            final_obs: vec![0.0; num_envs * obs_dim],
            episode_return: vec![0.0; num_envs],
            episode_length: vec![0; num_envs],
        }
    }

    /// Whether environment `i` ended its episode in the last step.
    pub fn done(&self, i: usize) -> bool {
        self.terminated[i] > 0.0 || self.truncated[i] > 0.0
    }
}

/// Static description of a task, shared by all its environments.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskInfo {
    /// Registry name, e.g. `"pendulum"`.
    pub name: &'static str,
    /// One-line description for `embodia list`.
    pub description: &'static str,
    /// Time limit in control steps; the step that reaches it sets `truncated`.
    pub max_episode_steps: u32,
    /// Where the task counts as solved, in units of [`TaskInfo::solved_by`].
    pub solve_threshold: f32,
    /// Whether the task reports a success criterion in [`StepBuffers::success`].
    pub has_success: bool,
    /// What [`TaskInfo::solve_threshold`] is compared with.
    pub solved_by: SolveMetric,
}

/// The evaluation figure a task's solve threshold applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolveMetric {
    /// The mean deterministic evaluation return.
    Return,
    /// The success rate in `[0, 1]` (tasks with [`TaskInfo::has_success`]).
    SuccessRate,
}

/// A batch of `num_envs` independent environments of one task.
///
/// The same seed gives the same rollout whatever the thread count: environment `i` draws its
/// randomness only from its own generator, seeded from `(seed, i)`. A newly made batch is
/// already reset with seed 0.
pub trait VecEnv: Send {
    /// Static task description.
    fn info(&self) -> &TaskInfo;
    /// Number of environments in the batch.
    fn num_envs(&self) -> usize;
    /// Observation layout of one environment.
    fn obs_spec(&self) -> &ObsSpec;
    /// Action layout of one environment.
    fn action_spec(&self) -> &ActionSpec;
    /// Resets every environment with generators derived from `seed`; fills `obs`, zeroes the rest.
    fn reset(&mut self, seed: u64);
    /// Steps every environment with `actions`, `[num_envs, action_dim]`, then auto-resets the
    /// ones that ended. Errors on a wrong-length or non-finite action buffer, in which case
    /// nothing is changed; allocates nothing.
    fn step(&mut self, actions: &[f32]) -> Result<(), SimError>;
    /// Results of the last `reset`/`step`.
    fn buffers(&self) -> &StepBuffers;
    /// Raw simulator state for checkpoints: per-environment physical state and generator state,
    /// enough for `restore` to continue the exact same rollout.
    fn snapshot(&self) -> EnvSnapshot;
    /// Restores a state written by `snapshot` of an environment of the same task and size:
    /// `buffers().obs` becomes the snapshot's observation and the other buffers are zeroed,
    /// so the next `step` continues the snapshotted rollout exactly. On error nothing changes.
    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError>;
    /// What a viewer needs to draw the environments (bodies, shapes, poses, targets); `None`
    /// for tasks without a scene to draw.
    fn scene_view(&self) -> Option<&dyn crate::view::SceneView> {
        None
    }
    /// For each action dimension, where the policy observation holds the current value of what
    /// it commands (see [`ActionState`]), `[action_dim]`; empty when the task's actions are not
    /// absolute targets of observed quantities.
    fn action_states(&self) -> Vec<Option<ActionState>> {
        Vec::new()
    }
    /// Images of camera `camera` (an index into [`ObsSpec::images`]) after the last
    /// `reset`/`step`, `[num_envs, height, width, channels]` `u8`, rendered from the state
    /// `buffers().obs` describes; `None` when there is no such camera (the default: no
    /// cameras).
    fn image(&self, camera: usize) -> Option<&[u8]> {
        let _ = camera;
        None
    }
    /// The language instruction environment `env` is following in its current episode (the
    /// one `buffers().obs[env]` belongs to), e.g. `"pick up the red cube"`; `None` for tasks
    /// without instructions (the default) or an index out of range.
    fn instruction(&self, env: usize) -> Option<&str> {
        let _ = env;
        None
    }
    /// The task's scripted expert's action for every environment's present state,
    /// `[num_envs, action_dim]` (privileged: the expert reads the true state), for labelling the
    /// states a learned policy visits (DAgger). Call it once per step, before stepping: the
    /// experts keep their phase between calls and restart with each new episode. The default
    /// errors: the task has no scripted expert.
    fn expert_actions(&mut self, actions: &mut [f32]) -> Result<(), SimError> {
        let _ = actions;
        Err(SimError::Unsupported(format!("task `{}` has no scripted expert to label states", self.info().name)))
    }

    /// Makes environment `i` of this batch draw its randomness at every later `reset` as
    /// environment `first + i` of a larger batch does, so that processes holding consecutive
    /// slices of one batch (the ranks of a data-parallel run) together step what one process
    /// stepping the whole batch would. The default errors: the batch cannot.
    fn set_first_env(&mut self, first: usize) -> Result<(), SimError> {
        let _ = first;
        Err(SimError::Unsupported(format!(
            "this batch of task `{}` cannot be a slice of a larger one (data-parallel training)",
            self.info().name
        )))
    }

    /// The batch as [`crate::EnvGroups`], for a learner that overlaps one group's simulation with
    /// its work on another; `None` (the default) for a batch that steps as one.
    fn groups_mut(&mut self) -> Option<&mut crate::EnvGroups> {
        None
    }
}

/// Serializable state of a [`VecEnv`], for exact resume.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnvSnapshot {
    /// Task name the snapshot was taken from.
    pub task: String,
    /// Physical state, `[num_envs, state_dim]`, in the task's own units (f64 to keep resume exact).
    pub state: Vec<f64>,
    /// Steps taken in the current episode, `[num_envs]`.
    pub elapsed: Vec<u32>,
    /// Return accumulated in the current episode, `[num_envs]` (f64, the precision it is
    /// accumulated in).
    pub running_return: Vec<f64>,
    /// Generator state per environment (ChaCha seed + word position), `[num_envs]`.
    pub rng: Vec<RngState>,
    /// The observation buffer at snapshot time, `[num_envs, obs_dim]`.
    pub obs: Vec<f32>,
}

impl EnvSnapshot {
    /// Environments this snapshot holds.
    pub fn num_envs(&self) -> usize {
        self.elapsed.len()
    }

    /// Appends `other`'s environments after this snapshot's: the snapshot of the batch made of
    /// both, in that order.
    pub fn append(&mut self, other: EnvSnapshot) {
        self.state.extend(other.state);
        self.elapsed.extend(other.elapsed);
        self.running_return.extend(other.running_return);
        self.rng.extend(other.rng);
        self.obs.extend(other.obs);
    }

    /// The snapshot of environments `envs` alone (a range within `0 … num_envs`).
    pub fn envs(&self, envs: std::ops::Range<usize>) -> EnvSnapshot {
        let n = self.num_envs().max(1);
        let (state_dim, obs_dim) = (self.state.len() / n, self.obs.len() / n);
        EnvSnapshot {
            task: self.task.clone(),
            state: self.state[envs.start * state_dim..envs.end * state_dim].to_vec(),
            elapsed: self.elapsed[envs.clone()].to_vec(),
            running_return: self.running_return[envs.clone()].to_vec(),
            rng: self.rng[envs.clone()].to_vec(),
            obs: self.obs[envs.start * obs_dim..envs.end * obs_dim].to_vec(),
        }
    }
}

/// State of one environment's ChaCha8 generator.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RngState {
    /// 32-byte seed.
    pub seed: [u8; 32],
    /// Stream number.
    pub stream: u64,
    /// Word position within the stream.
    pub word_pos: u128,
}
