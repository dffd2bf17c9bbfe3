//! `embodia train --dist actors`: one learner (rank 0) whose environments are stepped by the
//! other ranks of an MPI job, for simulation-bound runs (rapier worlds on many cores feeding one
//! learner, on a GPU where there is one).
//!
//! # How it works
//! 1. Rollout rank `r` (1 … S − 1) builds `algo.num_envs` environments, slice `r − 1` of one
//!    batch of `(S − 1)·num_envs` ([`embodia_sim::VecEnv::set_first_env`]), and serves them
//!    ([`serve_envs`]): it waits for a command from rank 0, runs it on its slice and answers.
//! 2. Rank 0 trains the run as one process would, on a [`RemoteEnvs`]: a [`VecEnv`] of the
//!    whole batch whose `reset`, `step`, `snapshot` and `restore` send each rollout rank its part
//!    and assemble the answers. Its policy acts for the whole batch at once, where the network
//!    is (its GPU).
//! 3. So every learner (PPO, SAC, the flow learners) collects exactly the transitions it would
//!    collect stepping the whole batch itself, stays on-policy, and writes the run directory
//!    and checkpoints as alone: the checkpoint's environment state is the whole batch's.
//!
//! What crosses the network per step: the actions `[n, action_dim]` to each rollout rank and
//! its step results `[n, …]` back (a few hundred bytes per environment); per checkpoint, the
//! environments' state. Rollout ranks hold no copy of the policy.

use std::sync::OnceLock;

use embodia_algos::data_parallel::{Collective, counted};
use embodia_sim::{ActionSpec, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};

use crate::error::RunError;

static ROLLOUT_RANKS: OnceLock<Box<dyn Collective>> = OnceLock::new();

/// Makes `collective` the job whose ranks 1 … S − 1 step this process's environments (rank 0)
/// or ask it for commands (the others). Once per process.
pub fn join(collective: Box<dyn Collective>) -> Result<(), Box<dyn Collective>> {
    ROLLOUT_RANKS.set(collective)
}

/// The job of `--dist actors`, when this process belongs to one.
pub fn rollout_job() -> Option<&'static dyn Collective> {
    ROLLOUT_RANKS.get().map(|c| c.as_ref())
}

/// A command from rank 0, sent as the first value of a message.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Command {
    /// `reset(seed)`: the seed follows as two 32-bit halves.
    Reset = 1,
    /// `step(actions)`: the actions follow in a second message.
    Step = 2,
    /// Send the slice's snapshot (JSON bytes).
    Snapshot = 3,
    /// Restore the snapshot that follows (JSON bytes).
    Restore = 4,
    /// Training is over.
    Stop = 5,
}

/// A command and its argument as one message: f32 holds integers below 2^24 exactly, so the
/// argument travels as four 16-bit pieces.
fn command_message(command: Command, arg: u64) -> [f32; 5] {
    let piece = |shift: u32| ((arg >> shift) & 0xFFFF) as f32;
    [command as u8 as f32, piece(48), piece(32), piece(16), piece(0)]
}

/// The argument of a message of [`command_message`].
fn command_arg(message: &[f32; 5]) -> u64 {
    message[1..].iter().fold(0u64, |acc, &p| (acc << 16) | p as u64)
}

/// Per-environment widths of the step results a rollout rank sends back.
#[derive(Debug, Clone, Copy)]
struct Layout {
    obs: usize,
    critic: usize,
}

impl Layout {
    fn of(buffers: &StepBuffers, n: usize) -> Self {
        Self { obs: buffers.obs.len() / n, critic: buffers.critic_obs.len() / n }
    }

    /// Values per environment: observation, final observation, critic and final critic
    /// observation, then reward, terminated, truncated, success, episode return and length.
    fn width(&self) -> usize {
        2 * self.obs + 2 * self.critic + 6
    }

    /// Writes environments `0 … n` of `b` as `[n, width]` into `out`.
    fn pack(&self, b: &StepBuffers, out: &mut [f32]) {
        let (od, cd) = (self.obs, self.critic);
        for (i, row) in out.chunks_exact_mut(self.width()).enumerate() {
            let (obs, rest) = row.split_at_mut(od);
            obs.copy_from_slice(&b.obs[i * od..(i + 1) * od]);
            let (final_obs, rest) = rest.split_at_mut(od);
            final_obs.copy_from_slice(&b.final_obs[i * od..(i + 1) * od]);
            let (critic, rest) = rest.split_at_mut(cd);
            critic.copy_from_slice(&b.critic_obs[i * cd..(i + 1) * cd]);
            let (final_critic, rest) = rest.split_at_mut(cd);
            final_critic.copy_from_slice(&b.final_critic_obs[i * cd..(i + 1) * cd]);
            rest.copy_from_slice(&[
                b.reward[i],
                b.terminated[i],
                b.truncated[i],
                b.success[i],
                b.episode_return[i],
                b.episode_length[i] as f32,
            ]);
        }
    }

    /// Reads `[n, width]` from `data` into environments `first …` of `b`.
    fn unpack(&self, data: &[f32], first: usize, b: &mut StepBuffers) {
        let (od, cd) = (self.obs, self.critic);
        for (k, row) in data.chunks_exact(self.width()).enumerate() {
            let i = first + k;
            let (obs, rest) = row.split_at(od);
            b.obs[i * od..(i + 1) * od].copy_from_slice(obs);
            let (final_obs, rest) = rest.split_at(od);
            b.final_obs[i * od..(i + 1) * od].copy_from_slice(final_obs);
            let (critic, rest) = rest.split_at(cd);
            b.critic_obs[i * cd..(i + 1) * cd].copy_from_slice(critic);
            let (final_critic, rest) = rest.split_at(cd);
            b.final_critic_obs[i * cd..(i + 1) * cd].copy_from_slice(final_critic);
            b.reward[i] = rest[0];
            b.terminated[i] = rest[1];
            b.truncated[i] = rest[2];
            b.success[i] = rest[3];
            b.episode_return[i] = rest[4];
            // Episode lengths are counts below 2^24, exact in f32.
            b.episode_length[i] = rest[5] as u32;
        }
    }
}

/// The environments of rollout ranks 1 … S − 1, `per_rank` each, as one [`VecEnv`] on rank 0.
pub struct RemoteEnvs {
    job: &'static dyn Collective,
    /// One environment of the task, for its description (info, spaces).
    template: Box<dyn VecEnv>,
    per_rank: usize,
    layout: Layout,
    buffers: StepBuffers,
    /// Step results of one rank, `[per_rank, layout.width()]`.
    message: Vec<f32>,
}

impl RemoteEnvs {
    /// The batch of `job`'s rollout ranks, `per_rank` environments each, of the task of
    /// `template` (one environment of it, which describes the task).
    pub fn new(template: Box<dyn VecEnv>, per_rank: usize, job: &'static dyn Collective) -> Self {
        let n = per_rank * (job.size() - 1);
        let layout = Layout::of(template.buffers(), 1);
        let mut buffers = StepBuffers::new(n, layout.obs);
        buffers.critic_obs = vec![0.0; n * layout.critic];
        buffers.final_critic_obs = vec![0.0; n * layout.critic];
        let message = vec![0.0; per_rank * layout.width()];
        Self { job, template, per_rank, layout, buffers, message }
    }

    fn ranks(&self) -> std::ops::Range<usize> {
        1..self.job.size()
    }

    fn send_command(&self, rank: usize, command: Command, arg: u64) {
        let header = command_message(command, arg);
        counted(std::mem::size_of_val(&header), || self.job.send_f32(rank, &header));
    }

    /// Receives every rollout rank's step results into the batch's buffers.
    fn receive_results(&mut self) {
        let job = self.job;
        for rank in self.ranks() {
            let bytes = std::mem::size_of_val(self.message.as_slice());
            counted(bytes, || job.receive_f32(rank, &mut self.message));
            self.layout.unpack(&self.message, (rank - 1) * self.per_rank, &mut self.buffers);
        }
    }
}

impl Drop for RemoteEnvs {
    fn drop(&mut self) {
        for rank in self.ranks() {
            self.send_command(rank, Command::Stop, 0);
        }
    }
}

impl VecEnv for RemoteEnvs {
    fn info(&self) -> &TaskInfo {
        self.template.info()
    }

    fn num_envs(&self) -> usize {
        self.per_rank * (self.job.size() - 1)
    }

    fn obs_spec(&self) -> &ObsSpec {
        self.template.obs_spec()
    }

    fn action_spec(&self) -> &ActionSpec {
        self.template.action_spec()
    }

    fn reset(&mut self, seed: u64) {
        for rank in self.ranks() {
            self.send_command(rank, Command::Reset, seed);
        }
        self.receive_results();
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        let ad = self.action_spec().bounds.dim();
        let expected = self.num_envs() * ad;
        if actions.len() != expected {
            return Err(SimError::ActionLength { expected, got: actions.len() });
        }
        if let Some(k) = actions.iter().position(|a| !a.is_finite()) {
            return Err(SimError::NonFiniteAction { env: k / ad, index: k % ad });
        }
        let width = self.per_rank * ad;
        let job = self.job;
        for rank in self.ranks() {
            self.send_command(rank, Command::Step, 0);
            let part = &actions[(rank - 1) * width..rank * width];
            counted(std::mem::size_of_val(part), || job.send_f32(rank, part));
        }
        self.receive_results();
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }

    /// The task's layout, the same for every environment: the template's.
    fn action_states(&self) -> Vec<Option<embodia_sim::ActionState>> {
        self.template.action_states()
    }

    fn expert_actions(&mut self, _actions: &mut [f32]) -> Result<(), SimError> {
        Err(SimError::Unsupported(
            "the scripted expert does not label states on rollout ranks (`--dist actors`) yet; \
             record demonstrations or train with DAgger in one process"
                .into(),
        ))
    }

    fn snapshot(&self) -> EnvSnapshot {
        let job = self.job;
        let mut whole: Option<EnvSnapshot> = None;
        for rank in self.ranks() {
            self.send_command(rank, Command::Snapshot, 0);
            let bytes = counted(0, || job.receive_bytes(rank));
            // A part that does not parse (another embodia build on that rank) is left out: the
            // runner refuses a snapshot with fewer environments than the batch before saving it.
            let Ok(part) = serde_json::from_slice::<EnvSnapshot>(&bytes) else { continue };
            match whole.as_mut() {
                None => whole = Some(part),
                Some(w) => w.append(part),
            }
        }
        whole.unwrap_or_else(|| self.template.snapshot())
    }

    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError> {
        let n = self.num_envs();
        if snapshot.num_envs() != n || snapshot.task != self.info().name {
            return Err(SimError::Unsupported(format!(
                "the checkpoint holds {} environments of `{}`; this job's rollout ranks hold {n} of `{}` \
                 ({} ranks × algo.num_envs {}): resume on as many rollout ranks",
                snapshot.num_envs(),
                snapshot.task,
                self.info().name,
                self.job.size() - 1,
                self.per_rank
            )));
        }
        let per = self.per_rank;
        for rank in self.ranks() {
            let part = snapshot.envs((rank - 1) * per..rank * per);
            let bytes = serde_json::to_vec(&part).map_err(|e| SimError::Unsupported(e.to_string()))?;
            self.send_command(rank, Command::Restore, 0);
            let job = self.job;
            counted(bytes.len(), || job.send_bytes(rank, &bytes));
        }
        self.receive_results();
        Ok(())
    }
}

/// A rollout rank's work: makes `env` (the run's `algo.num_envs` environments) its slice of the
/// batch and runs rank 0's commands on it until training is over. An error here (a
/// simulator's) ends the job: the caller aborts it.
pub fn serve_envs(mut env: Box<dyn VecEnv>, job: &dyn Collective) -> Result<(), RunError> {
    let rank = job.rank();
    let n = env.num_envs();
    env.set_first_env((rank - 1) * n)?;
    let layout = Layout::of(env.buffers(), n);
    let mut results = vec![0.0f32; n * layout.width()];
    let mut actions = vec![0.0f32; n * env.action_spec().bounds.dim()];
    let mut header = [0.0f32; 5];
    loop {
        job.receive_f32(0, &mut header);
        match header[0] as u8 {
            c if c == Command::Reset as u8 => env.reset(command_arg(&header)),
            c if c == Command::Step as u8 => {
                job.receive_f32(0, &mut actions);
                env.step(&actions)?;
            }
            c if c == Command::Snapshot as u8 => {
                let bytes = serde_json::to_vec(&env.snapshot()).map_err(|e| RunError::Io {
                    path: format!("environment state of rollout rank {rank}"),
                    message: e.to_string(),
                })?;
                job.send_bytes(0, &bytes);
                continue;
            }
            c if c == Command::Restore as u8 => {
                let bytes = job.receive_bytes(0);
                let snapshot: EnvSnapshot = serde_json::from_slice(&bytes).map_err(|e| RunError::Io {
                    path: format!("environment state for rollout rank {rank}"),
                    message: e.to_string(),
                })?;
                env.restore(&snapshot)?;
            }
            c if c == Command::Stop as u8 => return Ok(()),
            c => {
                return Err(RunError::Io {
                    path: format!("rollout rank {rank}"),
                    message: format!("rank 0 sent an unknown command {c}"),
                });
            }
        }
        layout.pack(env.buffers(), &mut results);
        job.send_f32(0, &results);
    }
}
