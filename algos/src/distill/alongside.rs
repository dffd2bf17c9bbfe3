//! One-step distillation alongside flow-policy RL (RL-100's
//! distillation head trained "alongside RL"; `embodia train --distill-during-rl`).
//!
//! [`DistillAlongside`] wraps an RL learner whose checkpoints hold a flow policy
//! (`ppo-flow-sde`, `ppo-flow-noise`) and a [`Distill`] student. Each iteration:
//! 1. the inner learner's [`Learner::iterate`] runs unchanged, on the environment wrapped so
//!    that every observation the policy acts on (one per environment and chunk) is recorded;
//! 2. the recorded observations enter the student's ring buffer (`buffer_size` most recent);
//! 3. the teacher becomes the inner learner's present policy (read from its checkpoint, so the
//!    inner learner needs no hook);
//! 4. `updates_per_iteration` gradient steps of the distillation loss (by default RL-100's
//!    `action_same_noise`: the teacher's `K`-step ODE action and the student's one-step action
//!    from the same noise) on mini-batches of buffered observations, labels computed on the
//!    spot by the present teacher.
//!
//! The RL learner is unaffected: the same seed gives the same RL run with or without a
//! student. The wrapper acts, counts steps and is named as the inner learner; the student is
//! reachable through [`Learner::student`] (a `distill` learner: its checkpoint is a distill
//! run's, so the runner can write it as a run directory that `eval` and `export` read). The
//! wrapper's own checkpoint is the inner learner's with the student's state under
//! [`ALONGSIDE_PREFIX`], so a resumed run continues both exactly.
//!
//! Difference from RL-100: one distillation step after every actor step on the actor's
//! mini-batch there; here a block of steps after each RL iteration on a buffer of recent
//! observations (the RL update is left untouched, and the student sees more than one
//! rollout's states).

use burn::tensor::Device;
use embodia_policies::OneStepPolicyConfig;
use embodia_sim::{ActionSpec, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::{
    AlgoError, Checkpoint, ConsistencyLoss, Distill, DistillConfig, DistillMethod, EvalMode, InitialNoise, Learner,
    MetricRow, check_range,
};

/// Prefix of the student's tensors, and key of its metadata, in the wrapper's checkpoint.
pub const ALONGSIDE_PREFIX: &str = "alongside";

/// Settings of the student trained alongside RL (`[algo.distill_during_rl]`; the table's
/// presence turns it on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DistillAlongsideConfig {
    /// Student gradient steps after each RL iteration. Default 100.
    pub updates_per_iteration: usize,
    /// Observations kept: the most recent ones the RL rollouts visited. Default 20000.
    pub buffer_size: usize,
    /// Mini-batch size. Default 256.
    pub batch_size: usize,
    /// Learning rate (constant after the warmup: the teacher keeps moving). Default 1e-3.
    pub learning_rate: f64,
    /// Linear warmup, gradient steps. Default 100.
    pub warmup_steps: u64,
    /// Global gradient-norm limit. Default 1.0 (RL-100's distillation grad clip).
    pub max_grad_norm: f64,
    /// Consistency loss. Default same_noise (RL-100's `action_same_noise`).
    pub loss: ConsistencyLoss,
    /// Fraction of mini-batch rows drawn with the fixed noise deterministic actions start from
    /// (same_noise). Default 0.25.
    pub fixed_noise_fraction: f64,
    /// Hidden widths of the student MLP (`copy_teacher = false`). Default [256, 256].
    pub hidden: Vec<usize>,
    /// The same_noise student is a copy of the policy's denoiser (RL-100), initialised from the
    /// `--init` policy; false (and the backup loss) trains an MLP of `hidden`. Default true.
    pub copy_teacher: bool,
}

impl Default for DistillAlongsideConfig {
    fn default() -> Self {
        Self {
            updates_per_iteration: 100,
            buffer_size: 20_000,
            batch_size: 256,
            learning_rate: 1e-3,
            warmup_steps: 100,
            max_grad_norm: 1.0,
            loss: ConsistencyLoss::SameNoise,
            fixed_noise_fraction: 0.25,
            hidden: OneStepPolicyConfig::default().hidden,
            copy_teacher: true,
        }
    }
}

impl DistillAlongsideConfig {
    /// Checks every value's range; errors name the field (`algo.distill_during_rl.<field>`).
    pub fn validate(&self) -> Result<(), AlgoError> {
        let field = |f: &str| format!("distill_during_rl.{f}");
        check_range(
            &field("updates_per_iteration"),
            self.updates_per_iteration,
            self.updates_per_iteration > 0,
            "≥ 1",
        )?;
        check_range(&field("buffer_size"), self.buffer_size, self.buffer_size > 0, "≥ 1")?;
        check_range(&field("batch_size"), self.batch_size, self.batch_size > 0, "≥ 1")?;
        check_range(&field("learning_rate"), self.learning_rate, self.learning_rate > 0.0, "> 0")?;
        check_range(&field("max_grad_norm"), self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range(
            &field("fixed_noise_fraction"),
            self.fixed_noise_fraction,
            (0.0..=1.0).contains(&self.fixed_noise_fraction),
            "0 ≤ x ≤ 1",
        )?;
        check_range(
            &field("hidden"),
            format!("{:?}", self.hidden),
            !self.hidden.is_empty() && !self.hidden.contains(&0),
            "at least one positive width",
        )
    }

    /// The equivalent standalone distillation settings (what the student's run directory
    /// records): consistency method, constant learning rate after the warmup, no DAgger
    /// rollouts. `teacher` is the RL run's directory, `num_envs` the RL learner's.
    pub fn distill_config(&self, teacher: String, num_envs: usize) -> DistillConfig {
        DistillConfig {
            teacher,
            method: DistillMethod::Consistency,
            loss: self.loss,
            num_envs,
            student_rollout_fraction: 0.0,
            buffer_size: self.buffer_size,
            batch_size: self.batch_size,
            updates_per_iteration: self.updates_per_iteration,
            learning_rate: self.learning_rate,
            final_learning_rate: self.learning_rate,
            warmup_steps: self.warmup_steps,
            decay_steps: self.warmup_steps + 1,
            max_grad_norm: self.max_grad_norm,
            fixed_noise_fraction: self.fixed_noise_fraction,
            copy_teacher: self.copy_teacher,
            student: OneStepPolicyConfig { hidden: self.hidden.clone(), ..OneStepPolicyConfig::default() },
            ..DistillConfig::default()
        }
    }
}

/// An RL learner with a one-step student distilled from its present policy after every
/// iteration (see the module docs).
pub struct DistillAlongside<L: Learner> {
    inner: L,
    student: Distill,
    updates_per_iteration: usize,
    /// Raw observations recorded during the last inner iteration.
    recorded: Vec<f32>,
}

impl<L: Learner> DistillAlongside<L> {
    /// Wraps `inner` (whose checkpoint must hold a flow policy: an sft or ppo-flow-* learner)
    /// with a fresh student of its present policy, with the settings of `config` for `env`'s
    /// spaces. `device` must have autodiff enabled.
    pub fn new(
        inner: L,
        config: &DistillAlongsideConfig,
        env: &dyn VecEnv,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        let teacher = inner.checkpoint()?;
        let distill = config.distill_config(String::new(), env.num_envs());
        let student = Distill::new(distill, env, &teacher, device, seed.wrapping_add(0x57D)).map_err(|e| match e {
            AlgoError::Config { field, value, allowed } => {
                AlgoError::Config { field: field.replacen("algo.", "algo.distill_during_rl.", 1), value, allowed }
            }
            other => other,
        })?;
        Ok(Self { inner, student, updates_per_iteration: config.updates_per_iteration, recorded: Vec::new() })
    }

    /// The RL learner.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The student.
    pub fn distill(&self) -> &Distill {
        &self.student
    }
}

impl<L: Learner> Learner for DistillAlongside<L> {
    fn default_eval_mode(&self) -> EvalMode {
        self.inner.default_eval_mode()
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        self.inner.initial_noise()
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn env_steps(&self) -> u64 {
        self.inner.env_steps()
    }

    /// The inner iteration, then the student's gradient steps; the row is the inner
    /// learner's (the student's metrics: [`Distill::last_row`] of [`Learner::student`]).
    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        self.recorded.clear();
        let chunk = self.inner.chunk_len().max(1);
        let row = {
            let mut recorder = ObsRecorder { env, out: &mut self.recorded, chunk, since_query: 0 };
            self.inner.iterate(&mut recorder)?
        };
        self.student.add_raw_observations(&self.recorded);
        self.student.set_teacher(&self.inner.checkpoint()?)?;
        self.student.train_on_buffer(self.updates_per_iteration)?;
        Ok(row)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        self.inner.act(obs, actions, sampling)
    }

    fn chunk_len(&self) -> usize {
        self.inner.chunk_len()
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = self.inner.checkpoint()?;
        let student = self.student.checkpoint()?;
        ckpt.insert_params(ALONGSIDE_PREFIX, student.tensors);
        ckpt.put(ALONGSIDE_PREFIX, &student.meta)?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        let meta: serde_json::Map<String, serde_json::Value> = ckpt.get(ALONGSIDE_PREFIX).map_err(|_| {
            AlgoError::Checkpoint(format!(
                "the checkpoint holds no student (`{ALONGSIDE_PREFIX}`): it is from a run without algo.distill_during_rl"
            ))
        })?;
        let student = Checkpoint { tensors: ckpt.params(ALONGSIDE_PREFIX), meta };
        let inner = Checkpoint {
            tensors: ckpt
                .tensors
                .iter()
                .filter(|(k, _)| !k.starts_with(&format!("{ALONGSIDE_PREFIX}.")))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            meta: ckpt
                .meta
                .iter()
                .filter(|(k, _)| *k != ALONGSIDE_PREFIX)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        self.inner.restore(&inner)?;
        self.student.restore(&student)
    }

    fn student(&self) -> Option<&Distill> {
        Some(&self.student)
    }
}

/// A [`VecEnv`] that passes everything through to `env` and appends to `out` the observations
/// a chunk policy acts on: the present observation at every `chunk`-th step since the last
/// reset or restore.
struct ObsRecorder<'a> {
    env: &'a mut dyn VecEnv,
    out: &'a mut Vec<f32>,
    chunk: usize,
    since_query: usize,
}

impl VecEnv for ObsRecorder<'_> {
    fn info(&self) -> &TaskInfo {
        self.env.info()
    }

    fn num_envs(&self) -> usize {
        self.env.num_envs()
    }

    fn obs_spec(&self) -> &ObsSpec {
        self.env.obs_spec()
    }

    fn action_spec(&self) -> &ActionSpec {
        self.env.action_spec()
    }

    fn reset(&mut self, seed: u64) {
        self.env.reset(seed);
        self.since_query = 0;
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        if self.since_query.is_multiple_of(self.chunk) {
            self.out.extend_from_slice(&self.env.buffers().obs);
        }
        self.env.step(actions)?;
        self.since_query += 1;
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        self.env.buffers()
    }

    fn snapshot(&self) -> EnvSnapshot {
        self.env.snapshot()
    }

    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError> {
        self.env.restore(snapshot)?;
        self.since_query = 0;
        Ok(())
    }

    fn scene_view(&self) -> Option<&dyn embodia_sim::view::SceneView> {
        self.env.scene_view()
    }

    fn action_states(&self) -> Vec<Option<embodia_sim::ActionState>> {
        self.env.action_states()
    }
}
