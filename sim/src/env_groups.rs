//! A batch of environments split into groups that can step while the caller works on another
//! group: simulation and inference busy at the same time (double-buffered groups, as EnvPool's
//! asynchronous mode and RLinf's pipelining do).
//!
//! How it works:
//! 1. [`EnvGroups::new`] takes `G` batches of one task (same specs); the batch of all of them
//!    is itself a [`VecEnv`] (environment `g·m + j` is environment `j` of group `g`, with `m`
//!    environments per group), so evaluation, checkpoints and every learner use it unchanged;
//! 2. [`EnvGroups::step_group_while`] steps one group on a scoped worker thread while a closure
//!    runs on the caller's thread, reading the other groups; with [`EnvGroups::set_overlap`]
//!    `(false)` the same calls run one after the other, so a learner's pipelined loop can be
//!    checked against itself without overlap, bit for bit;
//! 3. after each group step the group's buffers are copied into the whole batch's
//!    [`StepBuffers`] (a copy of `[m, obs_dim]` floats per step: no allocation).
//!
//! A learner that knows about groups ([`VecEnv::groups_mut`]) pipelines its rollout: while
//! group A's worlds step, it samples group B's actions. Rapier environments step their worlds
//! on rayon's pool, so the worker thread's step and the caller's inference share that pool's
//! threads with the caller's.
//!
//! `reset(seed)` resets group `g` from `seed` mixed with `g`: a grouped batch runs different
//! (equally random) episodes from one batch of the same size and seed.

use crate::{ActionSpec, ActionState, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};

/// `G` batches of one task stepped as one, or one group at a time on a worker thread.
pub struct EnvGroups {
    groups: Vec<Box<dyn VecEnv>>,
    /// Environments per group.
    per_group: usize,
    /// The whole batch's buffers, `[G·m, …]`.
    buffers: StepBuffers,
    /// Whether [`EnvGroups::step_group_while`] overlaps the step with the caller's work.
    overlap: bool,
}

impl EnvGroups {
    /// Groups of one task with equal sizes, reset with seed 0; errors name the group that
    /// differs.
    pub fn new(groups: Vec<Box<dyn VecEnv>>) -> Result<Self, SimError> {
        let Some(first) = groups.first() else {
            return Err(SimError::InvalidTask("env groups: at least one group is needed".into()));
        };
        let per_group = first.num_envs();
        for (g, group) in groups.iter().enumerate().skip(1) {
            let same = group.info() == first.info()
                && group.num_envs() == per_group
                && group.obs_spec() == first.obs_spec()
                && group.action_spec() == first.action_spec();
            if !same {
                return Err(SimError::InvalidTask(format!(
                    "env groups: group {g} is not of group 0's task and size ({} × {per_group})",
                    first.info().name
                )));
            }
        }
        if !first.obs_spec().images.is_empty() {
            return Err(SimError::Unsupported("cameras in grouped batches (env groups) are not implemented".into()));
        }
        let dim = first.obs_spec().vector.dim();
        let n = per_group * groups.len();
        let mut buffers = StepBuffers::new(n, dim);
        if let Some(critic) = &first.obs_spec().critic {
            buffers.critic_obs = vec![0.0; n * critic.dim()];
            buffers.final_critic_obs = vec![0.0; n * critic.dim()];
        }
        let mut env = Self { groups, per_group, buffers, overlap: true };
        // As every new batch: reset with seed 0 (the groups' own resets used the same seed).
        env.reset(0);
        Ok(env)
    }

    /// Number of groups.
    pub fn num_groups(&self) -> usize {
        self.groups.len()
    }

    /// Environments per group.
    pub fn per_group(&self) -> usize {
        self.per_group
    }

    /// Group `g`.
    pub fn group(&self, g: usize) -> &dyn VecEnv {
        self.groups[g].as_ref()
    }

    /// Whether [`EnvGroups::step_group_while`] runs the step on a worker thread at the same time
    /// as the caller's work (default) or before it.
    pub fn set_overlap(&mut self, overlap: bool) {
        self.overlap = overlap;
    }

    /// Steps group `g` with `actions` (`[m, action_dim]`) while `work` runs on this thread with
    /// the batch as it was before the step (`work` must not read group `g`'s buffers, which the
    /// step is changing: they are its previous step's). Returns `work`'s result once both are
    /// done; the batch's buffers then hold group `g`'s step. On a step error nothing of group
    /// `g` changed and `work` still ran.
    pub fn step_group_while<R>(
        &mut self,
        g: usize,
        actions: &[f32],
        work: impl FnOnce(&EnvGroupsView<'_>) -> R,
    ) -> (Result<(), SimError>, R) {
        let per_group = self.per_group;
        let (before, rest) = self.groups.split_at_mut(g);
        let (stepped, after) = rest.split_first_mut().expect("group index within the batch");
        let view = EnvGroupsView { before, after, skipped: g, per_group };
        let (stepped, result) = match self.overlap {
            true => std::thread::scope(|scope| {
                let worker = scope.spawn(|| stepped.step(actions));
                let result = work(&view);
                (worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), result)
            }),
            false => {
                let stepped = stepped.step(actions);
                (stepped, work(&view))
            }
        };
        if stepped.is_ok() {
            self.copy_buffers(g);
        }
        (stepped, result)
    }

    /// Copies group `g`'s buffers into its rows of the batch's.
    fn copy_buffers(&mut self, g: usize) {
        let b = self.groups[g].buffers();
        let m = self.per_group;
        let rows = |dim: usize| g * m * dim..(g + 1) * m * dim;
        let od = b.obs.len() / m.max(1);
        let all = &mut self.buffers;
        all.obs[rows(od)].copy_from_slice(&b.obs);
        all.final_obs[rows(od)].copy_from_slice(&b.final_obs);
        if !b.critic_obs.is_empty() {
            let cd = b.critic_obs.len() / m.max(1);
            all.critic_obs[rows(cd)].copy_from_slice(&b.critic_obs);
            all.final_critic_obs[rows(cd)].copy_from_slice(&b.final_critic_obs);
        }
        all.reward[rows(1)].copy_from_slice(&b.reward);
        all.terminated[rows(1)].copy_from_slice(&b.terminated);
        all.truncated[rows(1)].copy_from_slice(&b.truncated);
        all.success[rows(1)].copy_from_slice(&b.success);
        all.episode_return[rows(1)].copy_from_slice(&b.episode_return);
        all.episode_length[rows(1)].copy_from_slice(&b.episode_length);
    }
}

/// The groups of an [`EnvGroups`] other than the one stepping, for
/// [`EnvGroups::step_group_while`]'s work.
pub struct EnvGroupsView<'a> {
    before: &'a [Box<dyn VecEnv>],
    after: &'a [Box<dyn VecEnv>],
    skipped: usize,
    per_group: usize,
}

impl EnvGroupsView<'_> {
    /// Group `g`'s buffers; `None` for the group that is stepping.
    pub fn buffers(&self, g: usize) -> Option<&StepBuffers> {
        match g.cmp(&self.skipped) {
            std::cmp::Ordering::Less => self.before.get(g).map(|e| e.buffers()),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => self.after.get(g - self.skipped - 1).map(|e| e.buffers()),
        }
    }

    /// Environments per group.
    pub fn per_group(&self) -> usize {
        self.per_group
    }
}

/// Seed of group `g` for a reset from `seed` (SplitMix64 of both).
fn group_seed(seed: u64, g: usize) -> u64 {
    let mut z = seed ^ (g as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl VecEnv for EnvGroups {
    fn info(&self) -> &TaskInfo {
        self.groups[0].info()
    }

    fn num_envs(&self) -> usize {
        self.per_group * self.groups.len()
    }

    fn obs_spec(&self) -> &ObsSpec {
        self.groups[0].obs_spec()
    }

    fn action_spec(&self) -> &ActionSpec {
        self.groups[0].action_spec()
    }

    fn reset(&mut self, seed: u64) {
        for g in 0..self.groups.len() {
            self.groups[g].reset(group_seed(seed, g));
            self.copy_buffers(g);
        }
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        let width = actions.len() / self.groups.len();
        let expected = self.num_envs() * self.action_spec().bounds.dim();
        if actions.len() != expected {
            return Err(SimError::ActionLength { expected, got: actions.len() });
        }
        if let Some(k) = actions.iter().position(|a| !a.is_finite()) {
            let ad = self.action_spec().bounds.dim();
            return Err(SimError::NonFiniteAction { env: k / ad, index: k % ad });
        }
        for g in 0..self.groups.len() {
            self.groups[g].step(&actions[g * width..(g + 1) * width])?;
            self.copy_buffers(g);
        }
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }

    fn snapshot(&self) -> EnvSnapshot {
        let mut all = self.groups[0].snapshot();
        for group in &self.groups[1..] {
            all.append(group.snapshot());
        }
        all
    }

    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError> {
        let (n, g_count) = (self.num_envs(), self.groups.len());
        if snapshot.elapsed.len() != n
            || !snapshot.state.len().is_multiple_of(n)
            || !snapshot.obs.len().is_multiple_of(n)
        {
            return Err(SimError::SnapshotMismatch(format!(
                "the snapshot holds {} environments; this grouped batch has {n}",
                snapshot.elapsed.len()
            )));
        }
        let parts: Vec<EnvSnapshot> =
            (0..g_count).map(|g| snapshot.envs(g * self.per_group..(g + 1) * self.per_group)).collect();
        // Every part is checked by restoring it; a group that refuses leaves the groups
        // before it restored, so restore them all from their own snapshots first to undo.
        let saved: Vec<EnvSnapshot> = self.groups.iter().map(|e| e.snapshot()).collect();
        for (g, part) in parts.iter().enumerate() {
            if let Err(e) = self.groups[g].restore(part) {
                for (h, s) in saved.iter().enumerate().take(g) {
                    let _ = self.groups[h].restore(s);
                }
                return Err(e);
            }
        }
        for g in 0..g_count {
            self.copy_buffers(g);
        }
        Ok(())
    }

    fn action_states(&self) -> Vec<Option<ActionState>> {
        self.groups[0].action_states()
    }

    fn instruction(&self, env: usize) -> Option<&str> {
        self.groups.get(env / self.per_group.max(1))?.instruction(env % self.per_group.max(1))
    }

    fn expert_actions(&mut self, actions: &mut [f32]) -> Result<(), SimError> {
        let width = actions.len() / self.groups.len();
        for (g, group) in self.groups.iter_mut().enumerate() {
            group.expert_actions(&mut actions[g * width..(g + 1) * width])?;
        }
        Ok(())
    }

    fn groups_mut(&mut self) -> Option<&mut EnvGroups> {
        Some(self)
    }
}
