//! Classic-control tasks with closed-form dynamics, batched on the CPU.
//!
//! A task implements [`ClassicTask`] (dynamics of one environment); [`ClassicEnv`] turns it
//! into a [`VecEnv`]: per-environment generators, time limits, episode statistics, auto-reset,
//! snapshots, and parallel stepping with rayon for large batches. Environments are independent
//! and each draws only from its own generator, so results are bit-identical whatever the
//! thread count.

pub mod mountain_car;
pub mod pendulum;
pub mod quadrotor_tasks;

pub use mountain_car::MountainCarContinuous;
pub use pendulum::Pendulum;
pub use quadrotor_tasks::Quadrotor;

use crate::{ActionSpec, EnvSnapshot, ObsSpec, RngState, SimError, StepBuffers, TaskInfo, VecEnv};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// A batch of gymnasium `Pendulum-v1` environments (registry name `pendulum`).
pub type PendulumEnv = ClassicEnv<Pendulum>;
/// A batch of gymnasium `MountainCarContinuous-v0` environments (registry name
/// `mountain-car-continuous`).
pub type MountainCarContinuousEnv = ClassicEnv<MountainCarContinuous>;
/// A batch of quadrotor environments (registry names `quadrotor-hover`, `quadrotor-track`).
pub type QuadrotorEnv = ClassicEnv<Quadrotor>;

/// Batches of at least this many environments are stepped in parallel with rayon; smaller ones
/// sequentially on the calling thread. A classic-control env-step costs 25–65 ns, so a batch of
/// 1024 is 25–65 µs of work: below that, waking rayon's workers costs more than it saves.
pub const PARALLEL_THRESHOLD: usize = 1024;

/// Smallest number of environments one rayon task steps.
const MIN_GRAIN: usize = 256;

/// What one step of one environment produced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// Reward of the step, in the reference implementation's precision (f64).
    pub reward: f64,
    /// Whether a terminal state was reached.
    pub terminated: bool,
    /// Whether the task's success criterion holds after the step.
    pub success: bool,
}

/// Dynamics of one environment of a classic-control task.
///
/// Implementations must be pure functions of their inputs (and the generator passed to
/// [`ClassicTask::sample_initial`]) so that batches are deterministic.
pub trait ClassicTask: Send + Sync + 'static {
    /// Physical state of one environment.
    type State: Copy + Send + Sync + std::fmt::Debug;
    /// Number of `f64` values in the flat form of [`Self::State`].
    const STATE_DIM: usize;
    /// Observation dimension.
    const OBS_DIM: usize;
    /// Action dimension.
    const ACTION_DIM: usize;

    /// Static task description (registry entry).
    fn info(&self) -> &'static TaskInfo;
    /// Observation bounds of one environment.
    fn obs_spec(&self) -> ObsSpec;
    /// Action bounds of one environment.
    fn action_spec(&self) -> ActionSpec;
    /// Draws an initial state from the task's initial-state distribution.
    fn sample_initial(&self, rng: &mut ChaCha8Rng) -> Self::State;
    /// Writes the observation of `state` into `obs`, `[OBS_DIM]`.
    fn observe(&self, state: &Self::State, obs: &mut [f32]);
    /// Advances `state` by one control step under `action`, `[ACTION_DIM]` (finite, possibly
    /// outside the bounds). `elapsed` is the number of steps already taken in the episode;
    /// `rng` is the environment's generator (for tasks with noise).
    fn step(&self, state: &mut Self::State, action: &[f32], elapsed: u32, rng: &mut ChaCha8Rng) -> StepOutcome;
    /// Flat form of `state`, `[STATE_DIM]`.
    fn state_to_f64(&self, state: &Self::State, out: &mut [f64]);
    /// State from its flat form, `[STATE_DIM]` (length already checked; values finite).
    fn state_from_f64(&self, values: &[f64]) -> Self::State;
}

/// Uniform draw in `[low, high)` from 53 random bits: `low + (high - low) * u`, the formula
/// numpy's `Generator.uniform` uses (the bits differ: the generators are not numpy's).
pub(crate) fn uniform(rng: &mut ChaCha8Rng, low: f64, high: f64) -> f64 {
    let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    low + (high - low) * u
}

/// Hot per-environment bookkeeping, kept contiguous.
#[derive(Debug, Clone, Copy)]
struct Slot<S> {
    state: S,
    elapsed: u32,
    running_return: f64,
}

/// A [`VecEnv`] of `num_envs` environments of the classic task `T`.
#[derive(Debug)]
pub struct ClassicEnv<T: ClassicTask> {
    task: T,
    obs_spec: ObsSpec,
    action_spec: ActionSpec,
    slots: Vec<Slot<T::State>>,
    rngs: Vec<ChaCha8Rng>,
    buffers: StepBuffers,
    /// Environment `i` draws as environment `first_env + i` ([`VecEnv::set_first_env`]).
    first_env: usize,
}

impl<T: ClassicTask + Default> ClassicEnv<T> {
    /// `num_envs` environments of the task with its default (gymnasium) parameters, reset with
    /// seed 0. Errors with [`SimError::ZeroEnvs`].
    pub fn new(num_envs: usize) -> Result<Self, SimError> {
        Self::with_task(T::default(), num_envs)
    }
}

fn env_rng(seed: u64, env: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(env as u64);
    rng
}

impl<T: ClassicTask> ClassicEnv<T> {
    /// `num_envs` environments of `task`, reset with seed 0. Errors with
    /// [`SimError::ZeroEnvs`].
    pub fn with_task(task: T, num_envs: usize) -> Result<Self, SimError> {
        if num_envs == 0 {
            return Err(SimError::ZeroEnvs);
        }
        let mut rngs: Vec<ChaCha8Rng> = (0..num_envs).map(|i| env_rng(0, i)).collect();
        let slots = rngs
            .iter_mut()
            .map(|rng| Slot { state: task.sample_initial(rng), elapsed: 0, running_return: 0.0 })
            .collect();
        let mut env = Self {
            obs_spec: task.obs_spec(),
            action_spec: task.action_spec(),
            task,
            slots,
            rngs,
            buffers: StepBuffers::new(num_envs, T::OBS_DIM),
            first_env: 0,
        };
        env.reset(0);
        Ok(env)
    }

    /// The task (dynamics and parameters).
    pub fn task(&self) -> &T {
        &self.task
    }

    /// Sets the physical state of environment `env` (flat form, `[T::STATE_DIM]`, in the task's
    /// units) and rewrites its row of `buffers().obs`; the episode counters are kept. Used to
    /// start from a reference implementation's initial state.
    pub fn set_state(&mut self, env: usize, state: &[f64]) -> Result<(), SimError> {
        let n = self.slots.len();
        if env >= n {
            return Err(SimError::InvalidState(format!("environment index {env} out of range for {n} environments")));
        }
        if state.len() != T::STATE_DIM {
            return Err(SimError::InvalidState(format!("state has {} values; expected {}", state.len(), T::STATE_DIM)));
        }
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(SimError::InvalidState(format!("state value {i} is not finite")));
        }
        let s = self.task.state_from_f64(state);
        self.slots[env].state = s;
        let od = T::OBS_DIM;
        self.task.observe(&s, &mut self.buffers.obs[env * od..(env + 1) * od]);
        Ok(())
    }

    /// Physical state of environment `env` in flat form, `[T::STATE_DIM]`; `None` if out of range.
    pub fn state(&self, env: usize) -> Option<Vec<f64>> {
        let slot = self.slots.get(env)?;
        let mut out = vec![0.0; T::STATE_DIM];
        self.task.state_to_f64(&slot.state, &mut out);
        Some(out)
    }

    fn zero_buffers_except_obs(&mut self) {
        let b = &mut self.buffers;
        b.reward.fill(0.0);
        b.terminated.fill(0.0);
        b.truncated.fill(0.0);
        b.success.fill(0.0);
        b.final_obs.fill(0.0);
        b.episode_return.fill(0.0);
        b.episode_length.fill(0);
    }
}

/// Mutable views of the per-environment data of a contiguous range of environments.
struct Chunk<'a, S> {
    slots: &'a mut [Slot<S>],
    rngs: &'a mut [ChaCha8Rng],
    actions: &'a [f32],
    obs: &'a mut [f32],
    reward: &'a mut [f32],
    terminated: &'a mut [f32],
    truncated: &'a mut [f32],
    success: &'a mut [f32],
    final_obs: &'a mut [f32],
    episode_return: &'a mut [f32],
    episode_length: &'a mut [u32],
}

impl<'a, S> Chunk<'a, S> {
    fn split_at(self, n: usize, od: usize, ad: usize) -> (Self, Self) {
        let (s0, s1) = self.slots.split_at_mut(n);
        let (g0, g1) = self.rngs.split_at_mut(n);
        let (a0, a1) = self.actions.split_at(n * ad);
        let (o0, o1) = self.obs.split_at_mut(n * od);
        let (r0, r1) = self.reward.split_at_mut(n);
        let (t0, t1) = self.terminated.split_at_mut(n);
        let (u0, u1) = self.truncated.split_at_mut(n);
        let (c0, c1) = self.success.split_at_mut(n);
        let (f0, f1) = self.final_obs.split_at_mut(n * od);
        let (e0, e1) = self.episode_return.split_at_mut(n);
        let (l0, l1) = self.episode_length.split_at_mut(n);
        (
            Chunk {
                slots: s0,
                rngs: g0,
                actions: a0,
                obs: o0,
                reward: r0,
                terminated: t0,
                truncated: u0,
                success: c0,
                final_obs: f0,
                episode_return: e0,
                episode_length: l0,
            },
            Chunk {
                slots: s1,
                rngs: g1,
                actions: a1,
                obs: o1,
                reward: r1,
                terminated: t1,
                truncated: u1,
                success: c1,
                final_obs: f1,
                episode_return: e1,
                episode_length: l1,
            },
        )
    }
}

fn step_chunk<T: ClassicTask>(task: &T, c: Chunk<'_, T::State>) {
    let (od, ad) = (T::OBS_DIM, T::ACTION_DIM);
    let max_steps = task.info().max_episode_steps;
    for (i, (slot, rng)) in c.slots.iter_mut().zip(c.rngs.iter_mut()).enumerate() {
        let out = task.step(&mut slot.state, &c.actions[i * ad..(i + 1) * ad], slot.elapsed, rng);
        slot.elapsed += 1;
        slot.running_return += out.reward;
        let truncated = slot.elapsed >= max_steps;
        c.reward[i] = out.reward as f32;
        c.terminated[i] = f32::from(u8::from(out.terminated));
        c.truncated[i] = f32::from(u8::from(truncated));
        c.success[i] = f32::from(u8::from(out.success));
        let obs = &mut c.obs[i * od..(i + 1) * od];
        let final_obs = &mut c.final_obs[i * od..(i + 1) * od];
        task.observe(&slot.state, final_obs);
        if out.terminated || truncated {
            c.episode_return[i] = slot.running_return as f32;
            c.episode_length[i] = slot.elapsed;
            slot.state = task.sample_initial(rng);
            slot.elapsed = 0;
            slot.running_return = 0.0;
            task.observe(&slot.state, obs);
        } else {
            c.episode_return[i] = 0.0;
            c.episode_length[i] = 0;
            obs.copy_from_slice(final_obs);
        }
    }
}

fn step_parallel<T: ClassicTask>(task: &T, c: Chunk<'_, T::State>, grain: usize) {
    let n = c.slots.len();
    if n <= grain {
        step_chunk(task, c);
    } else {
        let (a, b) = c.split_at(n / 2, T::OBS_DIM, T::ACTION_DIM);
        rayon::join(|| step_parallel(task, a, grain), || step_parallel(task, b, grain));
    }
}

impl<T: ClassicTask> VecEnv for ClassicEnv<T> {
    fn info(&self) -> &TaskInfo {
        self.task.info()
    }

    fn num_envs(&self) -> usize {
        self.slots.len()
    }

    fn obs_spec(&self) -> &ObsSpec {
        &self.obs_spec
    }

    fn action_spec(&self) -> &ActionSpec {
        &self.action_spec
    }

    fn reset(&mut self, seed: u64) {
        let od = T::OBS_DIM;
        for (i, (slot, rng)) in self.slots.iter_mut().zip(self.rngs.iter_mut()).enumerate() {
            *rng = env_rng(seed, self.first_env + i);
            *slot = Slot { state: self.task.sample_initial(rng), elapsed: 0, running_return: 0.0 };
            self.task.observe(&slot.state, &mut self.buffers.obs[i * od..(i + 1) * od]);
        }
        self.zero_buffers_except_obs();
    }

    fn set_first_env(&mut self, first: usize) -> Result<(), SimError> {
        self.first_env = first;
        Ok(())
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        let n = self.slots.len();
        let ad = T::ACTION_DIM;
        if actions.len() != n * ad {
            return Err(SimError::ActionLength { expected: n * ad, got: actions.len() });
        }
        if let Some(k) = actions.iter().position(|a| !a.is_finite()) {
            return Err(SimError::NonFiniteAction { env: k / ad, index: k % ad });
        }
        let b = &mut self.buffers;
        let chunk = Chunk {
            slots: &mut self.slots,
            rngs: &mut self.rngs,
            actions,
            obs: &mut b.obs,
            reward: &mut b.reward,
            terminated: &mut b.terminated,
            truncated: &mut b.truncated,
            success: &mut b.success,
            final_obs: &mut b.final_obs,
            episode_return: &mut b.episode_return,
            episode_length: &mut b.episode_length,
        };
        if n >= PARALLEL_THRESHOLD {
            // About 4 leaves per worker thread, of at least MIN_GRAIN environments. The split
            // does not affect results: environments are independent.
            let grain = n.div_ceil(4 * rayon::current_num_threads()).max(MIN_GRAIN);
            step_parallel(&self.task, chunk, grain);
        } else {
            step_chunk(&self.task, chunk);
        }
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }

    fn snapshot(&self) -> EnvSnapshot {
        let sd = T::STATE_DIM;
        let mut state = vec![0.0; self.slots.len() * sd];
        for (slot, out) in self.slots.iter().zip(state.chunks_exact_mut(sd)) {
            self.task.state_to_f64(&slot.state, out);
        }
        EnvSnapshot {
            task: self.task.info().name.to_string(),
            state,
            elapsed: self.slots.iter().map(|s| s.elapsed).collect(),
            running_return: self.slots.iter().map(|s| s.running_return).collect(),
            rng: self
                .rngs
                .iter()
                .map(|r| RngState { seed: r.get_seed(), stream: r.get_stream(), word_pos: r.get_word_pos() })
                .collect(),
            obs: self.buffers.obs.clone(),
        }
    }

    fn restore(&mut self, snap: &EnvSnapshot) -> Result<(), SimError> {
        let info = self.task.info();
        let n = self.slots.len();
        let (sd, od) = (T::STATE_DIM, T::OBS_DIM);
        let mismatch = |what: &str, got: usize, expected: usize| {
            SimError::SnapshotMismatch(format!("{what} has {got} values; expected {expected}"))
        };
        if snap.task != info.name {
            return Err(SimError::SnapshotMismatch(format!(
                "snapshot of task `{}`, environment is `{}`",
                snap.task, info.name
            )));
        }
        if snap.elapsed.len() != n {
            return Err(mismatch("elapsed", snap.elapsed.len(), n));
        }
        if snap.state.len() != n * sd {
            return Err(mismatch("state", snap.state.len(), n * sd));
        }
        if snap.running_return.len() != n {
            return Err(mismatch("running_return", snap.running_return.len(), n));
        }
        if snap.rng.len() != n {
            return Err(mismatch("rng", snap.rng.len(), n));
        }
        if snap.obs.len() != n * od {
            return Err(mismatch("obs", snap.obs.len(), n * od));
        }
        if let Some(i) = snap.state.iter().position(|v| !v.is_finite()) {
            return Err(SimError::SnapshotMismatch(format!("state value {i} is not finite")));
        }
        if let Some(i) = snap.elapsed.iter().position(|&e| e >= info.max_episode_steps) {
            return Err(SimError::SnapshotMismatch(format!(
                "environment {i} has elapsed {} ≥ the time limit {}",
                snap.elapsed[i], info.max_episode_steps
            )));
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            *slot = Slot {
                state: self.task.state_from_f64(&snap.state[i * sd..(i + 1) * sd]),
                elapsed: snap.elapsed[i],
                running_return: snap.running_return[i],
            };
        }
        for (rng, st) in self.rngs.iter_mut().zip(&snap.rng) {
            let mut r = ChaCha8Rng::from_seed(st.seed);
            r.set_stream(st.stream);
            r.set_word_pos(st.word_pos);
            *rng = r;
        }
        self.buffers.obs.copy_from_slice(&snap.obs);
        self.zero_buffers_except_obs();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
