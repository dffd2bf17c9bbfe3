//! The interface every training algorithm offers the runner, and deterministic evaluation.

use embodia_sim::VecEnv;
use embodia_sim::view::{Marker, ViewPose};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::{AlgoError, Checkpoint, InitialNoise, MetricRow};

/// How an evaluation chooses actions. A chunk policy's success can differ by tens of points
/// between modes, so every reported figure names its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvalMode {
    /// Every decision samples from the policy with a generator seeded by the evaluation seed:
    /// a chunk policy draws a fresh initial noise for each chunk and denoises it (the reference
    /// mode of flow, diffusion and VLA policies); a Gaussian policy draws its action.
    Sampled,
    /// Deterministic: a chunk policy denoises from zero, the prior's mean; a Gaussian policy
    /// acts with its mean (the reference mode of Gaussian policies).
    Zero,
    /// Deterministic: a chunk policy denoises every decision from one fixed draw of the noise.
    /// One unlucky draw can ruin it, so it is reported, never the reference.
    FixedDraw,
}

impl EvalMode {
    /// Every mode, in the order figures list them.
    pub const ALL: [EvalMode; 3] = [EvalMode::Sampled, EvalMode::Zero, EvalMode::FixedDraw];

    /// The name figures and the command line use: `sampled`, `zero`, `fixed-draw`.
    pub fn name(self) -> &'static str {
        match self {
            EvalMode::Sampled => "sampled",
            EvalMode::Zero => "zero",
            EvalMode::FixedDraw => "fixed-draw",
        }
    }

    /// The mode called `name` (see [`EvalMode::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The initial noise of a deterministic mode; `None` for [`EvalMode::Sampled`].
    pub fn initial_noise(self) -> Option<InitialNoise> {
        match self {
            EvalMode::Sampled => None,
            EvalMode::Zero => Some(InitialNoise::Zero),
            EvalMode::FixedDraw => Some(InitialNoise::FixedDraw),
        }
    }
}

impl std::fmt::Display for EvalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A training algorithm bound to one task's spaces.
///
/// The runner owns the environment and calls [`Learner::iterate`] until the step budget is
/// spent; between iterations it logs, evaluates and checkpoints. The environment's own state is
/// checkpointed by the runner next to [`Learner::checkpoint`].
pub trait Learner {
    /// Algorithm name as used on the command line (`"sac"`, `"ppo"`).
    fn name(&self) -> &'static str;

    /// Environment steps taken so far, summed over environments.
    fn env_steps(&self) -> u64;

    /// Runs one iteration (SAC: `steps_per_iteration` environment steps with their updates;
    /// PPO: one rollout and its update) and returns its metrics; the runner fills
    /// `wall_seconds` and `fps`. The environment must have been reset before the first call.
    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError>;

    /// [`Learner::iterate`] on a tensor environment, whose batch lives on a device: learners
    /// that can keep the whole rollout there (PPO) override it so that no step goes through
    /// the host; the others step it through its [`VecEnv`] side.
    fn iterate_tensor(&mut self, env: &mut dyn embodia_sim::tensor::TensorVecEnv) -> Result<MetricRow, AlgoError> {
        self.iterate(env)
    }

    /// Actions in the environment's units for raw observations: the policy's mode when
    /// `sampling` is `None`, otherwise a sample drawn with that generator.
    /// `obs`: `[n, obs_dim]`; `actions`: `[n, chunk_len, action_dim]` (the next
    /// [`Learner::chunk_len`] actions of each environment, to be executed in order), overwritten.
    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError>;

    /// [`Learner::act`] for what the environments of `env` observe now. Policies that read
    /// camera images or instructions (VLAs) override it; the default reads the observation
    /// vector.
    fn act_env(
        &self,
        env: &dyn VecEnv,
        actions: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
    ) -> Result<(), AlgoError> {
        self.act(&env.buffers().obs, actions, sampling)
    }

    /// Actions [`Learner::act`] returns per environment and query: the executed chunk length `C`
    /// of action-chunk policies, 1 for per-step policies. Use an [`ActionQueue`] to step them.
    fn chunk_len(&self) -> usize {
        1
    }

    /// Everything needed to continue training exactly: networks, optimizers, buffers, RNG.
    fn checkpoint(&self) -> Result<Checkpoint, AlgoError>;

    /// Restores a state written by [`Learner::checkpoint`] of a learner with the same config.
    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError>;

    /// The one-step student trained alongside this learner ([`crate::DistillAlongside`]):
    /// a `distill` learner whose checkpoint is a distill run's. `None` for learners without one.
    fn student(&self) -> Option<&crate::Distill> {
        None
    }

    /// Statistics gathered while acting since the last call, as (name, value), then cleared:
    /// what an evaluation reveals beyond success and return (the VLA's closed-loop grounding
    /// error). Empty for learners without any.
    fn eval_diagnostics(&self) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// The mode this policy's figures are reported in: [`EvalMode::Sampled`] for policies that
    /// denoise a drawn noise (flow, diffusion, VLA, their one-step students), whose
    /// deterministic modes hinge on one choice of the noise; [`EvalMode::Zero`] (the mean) for
    /// Gaussian policies.
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Zero
    }

    /// Where this policy's deterministic actions start denoising; `None` for policies that do
    /// not denoise (their deterministic action is the mean).
    fn initial_noise(&self) -> Option<InitialNoise> {
        None
    }
}

/// Feeds a learner's action chunks to an environment one step at a time: queries the learner
/// for all environments every [`Learner::chunk_len`] steps (open loop within a chunk, as
/// action-chunk policies are run) and hands out the next action of each.
#[derive(Debug, Clone)]
pub struct ActionQueue {
    /// `[n, chunk_len, action_dim]`.
    chunk: Vec<f32>,
    chunk_len: usize,
    action_dim: usize,
    /// Index of the next action within the chunk; `chunk_len` when a query is due.
    next: usize,
}

impl ActionQueue {
    /// A queue for `num_envs` environments with `action_dim` actions, empty (the first
    /// [`ActionQueue::step`] queries the learner).
    pub fn new(learner: &dyn Learner, num_envs: usize, action_dim: usize) -> Self {
        let chunk_len = learner.chunk_len().max(1);
        Self { chunk: vec![0.0; num_envs * chunk_len * action_dim], chunk_len, action_dim, next: chunk_len }
    }

    /// Writes the next action of every environment into `actions` (`[n, action_dim]`),
    /// querying `learner` on what `env` observes now when the chunk is used up.
    pub fn step(
        &mut self,
        learner: &dyn Learner,
        env: &dyn VecEnv,
        actions: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
    ) -> Result<(), AlgoError> {
        if self.next == self.chunk_len {
            learner.act_env(env, &mut self.chunk, sampling)?;
            self.next = 0;
        }
        let (c, ad, k) = (self.chunk_len, self.action_dim, self.next);
        for (i, a) in actions.chunks_exact_mut(ad).enumerate() {
            a.copy_from_slice(&self.chunk[(i * c + k) * ad..(i * c + k + 1) * ad]);
        }
        self.next += 1;
        Ok(())
    }

    /// Actions per chunk.
    pub fn chunk_len(&self) -> usize {
        self.chunk_len
    }

    /// Whether the last [`ActionQueue::step`] queried the learner for a new chunk.
    pub fn started_chunk(&self) -> bool {
        self.next == 1
    }

    /// The chunk of environment `env` being executed, `[chunk_len, action_dim]`.
    pub fn chunk_of(&self, env: usize) -> &[f32] {
        let len = self.chunk_len * self.action_dim;
        &self.chunk[env * len..(env + 1) * len]
    }
}

/// Result of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResult {
    /// Task name.
    pub task: String,
    /// How actions were chosen.
    pub mode: EvalMode,
    /// Episodes run.
    pub episodes: usize,
    /// Mean undiscounted return.
    pub mean_return: f64,
    /// Population standard deviation of the returns.
    pub std_return: f64,
    /// Fraction of episodes whose success criterion held at their last step (ManiSkill's
    /// `success_at_end`); `None` when the task has no success notion.
    pub success_rate: Option<f64>,
    /// Fraction of episodes whose success criterion held at any step (ManiSkill's
    /// `success_once`); differs from `success_rate` on tasks that do not end on success, where
    /// the robot must also hold the result until the time limit. `None` without a success
    /// notion.
    #[serde(default)]
    pub success_once_rate: Option<f64>,
    /// Mean episode length in steps.
    pub mean_length: f64,
    /// Language-conditioned tasks ([`VecEnv::instruction`]): per instruction, in order of
    /// first appearance, the episodes run and how many succeeded; empty for other tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_instruction: Vec<InstructionResult>,
    /// Every episode, in environment order (not in `eval.json`: `embodia eval --episodes-csv`
    /// writes them), to find what failing episodes share.
    #[serde(skip)]
    pub per_episode: Vec<EpisodeOutcome>,
    /// Names of the columns of [`EpisodeOutcome::initial_positions`] and
    /// [`EpisodeOutcome::last_positions`]: `<path>.x`, `.y`, `.z` of every movable object
    /// (`objects/<name>`) and marker (targets) of the scene; empty for tasks without a
    /// [`SceneView`](embodia_sim::view::SceneView).
    #[serde(skip)]
    pub position_names: Vec<String>,
}

/// One episode of an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeOutcome {
    /// Undiscounted return.
    pub episode_return: f32,
    /// Length in steps.
    pub length: u32,
    /// Success at the last step and at any step; `None` without a success notion.
    pub success: Option<(bool, bool)>,
    /// The instruction of language-conditioned tasks.
    pub instruction: Option<String>,
    /// Object and marker positions right after reset, m, world frame, in the order of
    /// [`EvalResult::position_names`].
    pub initial_positions: Vec<f32>,
    /// The same one control step before the episode's end (the step that ends an episode
    /// resets its scene), m; the initial positions for a one-step episode.
    pub last_positions: Vec<f32>,
}

/// Success of the episodes of one instruction in an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionResult {
    /// The instruction.
    pub instruction: String,
    /// Episodes run with it.
    pub episodes: usize,
    /// Of those, the successful ones.
    pub successes: usize,
}

/// Every step of an evaluation's episodes (`embodia eval --steps-csv`): what the policy saw and
/// did along the way, to find where failing episodes go wrong, not only how they end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepTrace {
    /// Observation width.
    pub obs_dim: usize,
    /// Action width.
    pub action_dim: usize,
    /// Names of the columns of [`StepTrace::positions`] (as [`EvalResult::position_names`]).
    pub position_names: Vec<String>,
    /// Per row: the episode (= environment index) and the step within it, from 0.
    pub steps: Vec<(u32, u32)>,
    /// Per row: the observation acted on, `[rows, obs_dim]`, raw.
    pub observations: Vec<f32>,
    /// Per row: the action executed, `[rows, action_dim]`, in the task's action space.
    pub actions: Vec<f32>,
    /// Per row: object and marker positions when the observation was taken,
    /// `[rows, position_names.len()]`, m, world frame; empty for tasks without a scene view.
    pub positions: Vec<f32>,
    /// Per row: the reward the action earned.
    pub rewards: Vec<f32>,
    /// Per row: whether the success criterion held after the action; `false` without one.
    pub success: Vec<bool>,
}

impl StepTrace {
    /// Number of rows (environment steps).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether no step was traced.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Runs one episode in each environment of `env` (so `env.num_envs()` episodes), starting from
/// `reset(seed)`, choosing actions as `mode` says (sampled ones from a generator seeded by
/// `seed`). Action-chunk learners execute each chunk open loop (see [`ActionQueue`]).
///
/// A deterministic mode must be the learner's own: a chunk policy whose deterministic actions
/// start from another initial noise, or a Gaussian policy asked for a fixed draw, is an error
/// (reload the policy with that initial noise), so that no figure is reported in a mode it was
/// not measured in.
pub fn evaluate(
    learner: &dyn Learner,
    env: &mut dyn VecEnv,
    seed: u64,
    mode: EvalMode,
) -> Result<EvalResult, AlgoError> {
    evaluate_traced(learner, env, seed, mode, None)
}

/// Fails unless `learner` can act in `mode` as it is (see [`evaluate`]).
pub fn check_eval_mode(learner: &dyn Learner, mode: EvalMode) -> Result<(), AlgoError> {
    let own = learner.initial_noise();
    let fits = match mode.initial_noise() {
        None => true,
        Some(wanted) => own.map_or(wanted == InitialNoise::Zero, |own| own == wanted),
    };
    if fits {
        return Ok(());
    }
    let allowed = match own {
        None => "`sampled` or `zero` (the mean) for a policy without an initial noise".to_string(),
        Some(InitialNoise::Zero) => {
            "`sampled` or `zero` for this policy as loaded; reload it with a fixed-draw initial noise for `fixed-draw`"
                .into()
        }
        Some(InitialNoise::FixedDraw) => {
            "`sampled` or `fixed-draw` for this policy as loaded; reload it with a zero initial noise for `zero`".into()
        }
    };
    Err(AlgoError::Config {
        field: "evaluation mode".into(),
        value: format!("`{mode}` for `{}`", learner.name()),
        allowed,
    })
}

/// [`evaluate`], also filling `trace` (cleared first) with every step of every episode.
pub fn evaluate_traced(
    learner: &dyn Learner,
    env: &mut dyn VecEnv,
    seed: u64,
    mode: EvalMode,
    mut trace: Option<&mut StepTrace>,
) -> Result<EvalResult, AlgoError> {
    use rand::SeedableRng;
    check_eval_mode(learner, mode)?;
    let mut rng = (mode == EvalMode::Sampled).then(|| ChaCha8Rng::seed_from_u64(seed));
    let n = env.num_envs();
    let action_dim = env.action_spec().bounds.dim();
    let mut actions = vec![0.0f32; n * action_dim];
    let mut returns = vec![0.0f32; n];
    let mut lengths = vec![0u32; n];
    let mut success = vec![false; n];
    let mut success_once = vec![false; n];
    let mut finished = vec![false; n];
    let mut queue = ActionQueue::new(learner, n, action_dim);
    env.reset(seed);
    // Each environment runs one episode: the instruction it starts with is the episode's.
    let instructions: Vec<Option<String>> = (0..n).map(|i| env.instruction(i).map(str::to_string)).collect();
    let mut positions = ScenePositions::new(&*env);
    let mut initial_positions = vec![Vec::new(); n];
    if let Some(p) = positions.as_mut() {
        for (i, out) in initial_positions.iter_mut().enumerate() {
            p.read(&*env, i, out);
        }
    }
    let mut last_positions = initial_positions.clone();
    let obs_dim = env.obs_spec().vector.dim();
    if let Some(t) = trace.as_deref_mut() {
        *t = StepTrace {
            obs_dim,
            action_dim,
            position_names: positions.as_ref().map(|p| p.names.clone()).unwrap_or_default(),
            ..StepTrace::default()
        };
    }
    let mut step_positions = Vec::new();
    while finished.iter().any(|f| !f) {
        queue.step(learner, &*env, &mut actions, rng.as_mut())?;
        if let Some(t) = trace.as_deref_mut() {
            let obs = &env.buffers().obs;
            for i in (0..n).filter(|&i| !finished[i]) {
                t.steps.push((i as u32, lengths[i]));
                t.observations.extend_from_slice(&obs[i * obs_dim..(i + 1) * obs_dim]);
                t.actions.extend_from_slice(&actions[i * action_dim..(i + 1) * action_dim]);
                if let Some(p) = positions.as_mut() {
                    p.read(&*env, i, &mut step_positions);
                    t.positions.extend_from_slice(&step_positions);
                }
            }
        }
        env.step(&actions)?;
        let b = env.buffers();
        if let Some(t) = trace.as_deref_mut() {
            for i in (0..n).filter(|&i| !finished[i]) {
                t.rewards.push(b.reward[i]);
                t.success.push(b.success[i] > 0.0);
            }
        }
        for i in 0..n {
            if finished[i] {
                continue;
            }
            // Counts the steps traced so far; the buffers' own length replaces it at the end.
            lengths[i] += 1;
            // The step that ends an episode resets its scene: the last positions read are
            // those one step before the end.
            if let (Some(p), false) = (positions.as_mut(), b.done(i)) {
                p.read(&*env, i, &mut last_positions[i]);
            }
            success_once[i] |= b.success[i] > 0.0;
            if !b.done(i) {
                continue;
            }
            finished[i] = true;
            returns[i] = b.episode_return[i];
            lengths[i] = b.episode_length[i];
            success[i] = b.success[i] > 0.0;
        }
    }
    let mut per_instruction: Vec<InstructionResult> = Vec::new();
    for (text, &ok) in instructions.iter().zip(&success) {
        let Some(text) = text else { continue };
        let k = match per_instruction.iter().position(|r| &r.instruction == text) {
            Some(k) => k,
            None => {
                per_instruction.push(InstructionResult { instruction: text.clone(), episodes: 0, successes: 0 });
                per_instruction.len() - 1
            }
        };
        per_instruction[k].episodes += 1;
        per_instruction[k].successes += usize::from(ok);
    }
    let has_success = env.info().has_success;
    let per_episode = (0..n)
        .map(|i| EpisodeOutcome {
            episode_return: returns[i],
            length: lengths[i],
            success: has_success.then_some((success[i], success_once[i])),
            instruction: instructions[i].clone(),
            initial_positions: std::mem::take(&mut initial_positions[i]),
            last_positions: std::mem::take(&mut last_positions[i]),
        })
        .collect();
    let k = n as f64;
    let rate = |flags: &[bool]| flags.iter().filter(|&&s| s).count() as f64 / k;
    let mean = returns.iter().map(|&r| r as f64).sum::<f64>() / k;
    let var = returns.iter().map(|&r| (r as f64 - mean).powi(2)).sum::<f64>() / k;
    Ok(EvalResult {
        task: env.info().name.to_string(),
        mode,
        episodes: n,
        mean_return: mean,
        std_return: var.sqrt(),
        success_rate: has_success.then(|| rate(&success)),
        success_once_rate: has_success.then(|| rate(&success_once)),
        mean_length: lengths.iter().map(|&l| l as f64).sum::<f64>() / k,
        per_instruction,
        per_episode,
        position_names: positions.map(|p| p.names).unwrap_or_default(),
    })
}

/// Reads the positions of a scene's movable objects (`objects/<name>`) and markers (targets)
/// for [`EpisodeOutcome`]: `[x, y, z]` each, m, world frame.
struct ScenePositions {
    /// Indices of the movable objects among the view's bodies.
    objects: Vec<usize>,
    /// `<path>.x`, `.y`, `.z` of every object, then every marker.
    names: Vec<String>,
    poses: Vec<ViewPose>,
    markers: Vec<Marker>,
}

impl ScenePositions {
    /// `None` for tasks without a scene view.
    fn new(env: &dyn VecEnv) -> Option<Self> {
        let view = env.scene_view()?;
        let bodies = view.bodies();
        let objects: Vec<usize> = (0..bodies.len()).filter(|&k| bodies[k].path.starts_with("objects/")).collect();
        let mut markers = Vec::new();
        view.markers(0, &mut markers);
        let paths = objects.iter().map(|&k| bodies[k].path.as_str()).chain(markers.iter().map(|m| m.path.as_str()));
        let names = paths.flat_map(|path| ["x", "y", "z"].map(|axis| format!("{path}.{axis}"))).collect();
        Some(Self { objects, names, poses: Vec::new(), markers })
    }

    /// Environment `i`'s positions now into `out` (cleared first).
    fn read(&mut self, env: &dyn VecEnv, i: usize, out: &mut Vec<f32>) {
        out.clear();
        let Some(view) = env.scene_view() else { return };
        view.poses(i, &mut self.poses);
        view.markers(i, &mut self.markers);
        out.extend(self.objects.iter().flat_map(|&k| self.poses[k].translation));
        out.extend(self.markers.iter().flat_map(|m| m.position));
    }
}
