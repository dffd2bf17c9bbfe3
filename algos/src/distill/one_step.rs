//! Distillation of a `K`-step flow policy (the teacher: an `sft` or `ppo-flow-*` run) into a
//! one-step student ([`OneStepPolicy`]).
//!
//! Observations come from the task itself, DAgger style: every iteration collects
//! `chunk_steps` chunk steps from every environment (by default one whole episode,
//! `⌈max_episode_steps / C⌉`), each chunk acted by the teacher or (after the first iteration,
//! with probability `student_rollout_fraction`) by the student, both from fresh noise; the
//! standardized observations go into a ring buffer. Collection starts where the previous
//! iteration's evaluation left the environments, at fresh episodes (the evaluation resets them),
//! so a collection shorter than an episode never sees the episode's end: with the former fixed
//! 25 chunk steps (100 environment steps) pick-cube's 250-step episodes were distilled on their
//! approach and grasp only, never on carrying and placing the cube. Then
//! `updates_per_iteration` gradient steps, each on a mini-batch of buffered observations with
//! labels the frozen teacher computes on the spot (no grad), under a warmup-cosine learning
//! rate with Adam and a global grad clip. An iteration ends with a deterministic evaluation of
//! the student (one episode per environment) whose success rate goes into the metrics.
//!
//! Objectives ([`DistillMethod`], [`ConsistencyLoss`]):
//! - consistency, `same_noise` (RL-100's default `action_same_noise`): draw `z ~ N(0, I)`,
//!   the teacher integrates its ODE from `z` in `K` steps to `a_T`, the student maps `z` to
//!   `a_S` in one; `L = ‖a_S − a_T‖²` over the executed slice `[:C, :D]`. A fraction
//!   `fixed_noise_fraction` of the rows uses the fixed draw deterministic actions start from,
//!   so the deployed (deterministic) student is fitted where it is used;
//! - consistency, `backup` (LCM-style): on the teacher's ODE chain from `z`, pick a step `n`;
//!   the student at `(x_{t_n}, t_n)` matches the EMA student (decay `target_ema`) at the
//!   teacher's next point `(x_{t_{n+1}}, t_{n+1})`, the boundary `f(x, 0) = x` anchoring it;
//! - meanflow (OFQL's objective, on teacher samples as data): `a` from the teacher, fresh
//!   `ε`, times `t ≥ r`, `z_t = (1 − t)·a + t·ε`, `v = ε − a`; the student's average velocity
//!   `u(z_t, r, t)` regresses on `sg(v − (t − r)·du/dt)` along the tangent `(v, 0, 1)`.
//!
//! Students: by default (`copy_teacher`) RL-100's, a copy of the teacher's denoiser
//! initialised from its weights (one Euler step from noise); otherwise, and always for the
//! backup loss and MeanFlow, an MLP of `student.hidden`.
//!
//! Deliberate differences from the references: MeanFlow's `du/dt` is a central finite
//! difference (burn has no forward-mode JVP), and OFQL's adaptive loss weighting is left out;
//! the backup loss uses the teacher's own ODE chain from noise instead of noising data (the
//! distribution the student must reproduce is the teacher's). The runner's step counter counts
//! **gradient steps**, as for `sft`.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    FlowPolicy, NamedParams, NoiseMethod, OneStepHead, OneStepPolicy, OneStepPolicyConfig, StochasticSteps,
    load_params, named_params, polyak_update, seeded_init,
};
use embodia_sim::VecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::check_finite;
use crate::flow::{CHUNK_ACTOR_KEY, ChunkActor};
use crate::optim::{check_warmup_cosine, warmup_cosine};
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::transfer::{to_host, to_tensor};
use crate::{
    Adam, AlgoError, Checkpoint, EvalMode, InitialNoise, Learner, MetricRow, check_num_envs, check_range, evaluate,
};

/// Which one-step objective (`--method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DistillMethod {
    /// Consistency distillation (RL-100 §3.2); the loss is [`DistillConfig::loss`].
    #[default]
    Consistency,
    /// MeanFlow average-velocity objective (OFQL, §3.3).
    MeanFlow,
}

/// Loss of the consistency method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConsistencyLoss {
    /// Match the teacher's `K`-step action from the same noise (RL-100's `action_same_noise`).
    #[default]
    SameNoise,
    /// LCM-style self-consistency along the teacher's ODE against an EMA target (`back_up`).
    Backup,
}

/// Distillation hyperparameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DistillConfig {
    /// The teacher's run directory (an `sft` or `ppo-flow-*` run); set by `embodia distill --run`.
    pub teacher: String,
    /// Objective. Default consistency.
    pub method: DistillMethod,
    /// Loss of the consistency method. Default same_noise.
    pub loss: ConsistencyLoss,
    /// Environments observations are collected from (and evaluated on). Default 16.
    pub num_envs: usize,
    /// Chunk steps collected per environment per iteration; 0 collects one whole episode,
    /// `⌈max_episode_steps / C⌉` (the task's time limit over the executed chunk length `C`).
    /// Default 0.
    pub chunk_steps: usize,
    /// Probability that a collected chunk is acted by the student (DAgger) rather than the
    /// teacher, from the second iteration on. Default 0.5.
    pub student_rollout_fraction: f64,
    /// Observations kept (ring buffer). Default 50000.
    pub buffer_size: usize,
    /// Mini-batch size. Default 256.
    pub batch_size: usize,
    /// Gradient steps per iteration. Default 250.
    pub updates_per_iteration: usize,
    /// Peak learning rate. Default 1e-3.
    pub learning_rate: f64,
    /// Learning rate at the end of the cosine decay. Default 5e-5.
    pub final_learning_rate: f64,
    /// Linear warmup, gradient steps. Default 100.
    pub warmup_steps: u64,
    /// Gradient step at which the cosine decay ends (also `embodia distill`'s default budget).
    /// Default 9000: on pick-cube (K = 10 teacher at 23.7%) the student reached 10.0% after
    /// 3,000 steps (loss 0.012) and 20–25% after 9,000 (loss 0.004).
    pub decay_steps: u64,
    /// Global gradient-norm limit. Default 1.0 (RL-100's distillation grad clip).
    pub max_grad_norm: f64,
    /// Fraction of mini-batch rows drawn with the fixed noise of deterministic actions
    /// (same_noise). Default 0.25.
    pub fixed_noise_fraction: f64,
    /// EMA decay of the backup target network. Default 0.95 (RL-100).
    pub target_ema: f64,
    /// MeanFlow: fraction of rows with `r = t` (plain flow matching). Default 0.5.
    pub meanflow_equal_fraction: f64,
    /// MeanFlow: step of the central difference of `du/dt`. Default 1e-3.
    pub meanflow_fd_step: f64,
    /// The same_noise student is a copy of the teacher's denoiser, initialised from the
    /// teacher's weights (RL-100's student; one step is an Euler step from noise);
    /// false trains an MLP of `student.hidden` instead (smaller, e.g. for a microcontroller, but
    /// on push-t 17-70 points below its teacher where the copy matches it). The backup loss and
    /// MeanFlow always train the MLP: their student takes a time the denoiser does not. Default
    /// true.
    pub copy_teacher: bool,
    /// The student's layout (widths are set from the teacher, the head from the method).
    pub student: OneStepPolicyConfig,
}

impl Default for DistillConfig {
    fn default() -> Self {
        Self {
            teacher: String::new(),
            method: DistillMethod::Consistency,
            loss: ConsistencyLoss::SameNoise,
            num_envs: 16,
            chunk_steps: 0,
            student_rollout_fraction: 0.5,
            buffer_size: 50_000,
            batch_size: 256,
            updates_per_iteration: 250,
            learning_rate: 1e-3,
            final_learning_rate: 5e-5,
            warmup_steps: 100,
            decay_steps: 9000,
            max_grad_norm: 1.0,
            fixed_noise_fraction: 0.25,
            target_ema: 0.95,
            meanflow_equal_fraction: 0.5,
            meanflow_fd_step: 1e-3,
            copy_teacher: true,
            student: OneStepPolicyConfig::default(),
        }
    }
}

impl DistillConfig {
    /// Whether the objective is consistency with the same_noise loss (the one a copied
    /// denoiser trains with).
    fn loss_is_same_noise(&self) -> bool {
        (self.method, self.loss) == (DistillMethod::Consistency, ConsistencyLoss::SameNoise)
    }

    /// Checks every value's range; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        let fraction = |x: f64| (0.0..=1.0).contains(&x);
        check_num_envs(self.num_envs)?;
        check_range(
            "student_rollout_fraction",
            self.student_rollout_fraction,
            fraction(self.student_rollout_fraction),
            "0 ≤ x ≤ 1",
        )?;
        check_range("buffer_size", self.buffer_size, self.buffer_size > 0, "≥ 1")?;
        check_range("batch_size", self.batch_size, self.batch_size > 0, "≥ 1")?;
        check_range("updates_per_iteration", self.updates_per_iteration, self.updates_per_iteration > 0, "≥ 1")?;
        check_warmup_cosine(self.learning_rate, self.final_learning_rate, self.warmup_steps, self.decay_steps)?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range(
            "fixed_noise_fraction",
            self.fixed_noise_fraction,
            fraction(self.fixed_noise_fraction),
            "0 ≤ x ≤ 1",
        )?;
        check_range("target_ema", self.target_ema, (0.0..1.0).contains(&self.target_ema), "0 ≤ x < 1")?;
        check_range(
            "meanflow_equal_fraction",
            self.meanflow_equal_fraction,
            fraction(self.meanflow_equal_fraction),
            "0 ≤ x ≤ 1",
        )?;
        check_range(
            "meanflow_fd_step",
            self.meanflow_fd_step,
            self.meanflow_fd_step > 0.0 && self.meanflow_fd_step < 0.1,
            "0 < x < 0.1",
        )?;
        check_range(
            "student.hidden",
            format!("{:?}", self.student.hidden),
            !self.student.hidden.is_empty() && !self.student.hidden.contains(&0),
            "at least one positive width",
        )
    }
}

/// Metadata key of the student's [`OneStepPolicyConfig`] in checkpoints.
pub const STUDENT_KEY: &str = "student_policy";
/// Metadata key of the fixed noise `[H·D]` deterministic student actions start from.
pub const FIXED_NOISE_KEY: &str = "fixed_noise";
/// Tensor prefix of the student's parameters in checkpoints.
pub const STUDENT_PREFIX: &str = "student";

/// The flow policy of a teacher checkpoint (`sft`: its EMA weights; `ppo-flow-*`: its model;
/// `distill`: the teacher it holds) with its actor, on `device`.
pub fn teacher_of_checkpoint(
    ckpt: &Checkpoint,
    obs_dim: usize,
    action_dim: usize,
    device: &Device,
) -> Result<(ChunkActor, FlowPolicy), AlgoError> {
    let algo: String = ckpt.get("algo")?;
    let prefix = match algo.as_str() {
        "sft" => "ema",
        "ppo-flow-sde" | "ppo-flow-noise" => "model",
        "distill" => "teacher",
        "dsrl" => {
            return Err(AlgoError::Checkpoint(
                "a `dsrl` run acts with a noise policy feeding its frozen flow policy; distilling that pair is not implemented (distill the sft run it steers)".into(),
            ));
        }
        other => {
            return Err(AlgoError::Checkpoint(format!(
                "a `{other}` run has no multi-step flow policy to distill (PPO and SAC policies are one-step already: export them directly); the teacher must be an sft or ppo-flow-* run"
            )));
        }
    };
    let actor = ChunkActor::from_checkpoint(ckpt, obs_dim, action_dim)?;
    let model = load_params(actor.policy.init(device), &ckpt.params(prefix))?;
    Ok((actor, model))
}

/// Teacher-to-student distillation bound to one task's spaces.
pub struct Distill {
    config: DistillConfig,
    device: Device,
    /// The teacher's normalization and layout, shared by the student.
    actor: ChunkActor,
    /// The frozen teacher (plain device).
    teacher: FlowPolicy,
    teacher_params: NamedParams,
    student_config: OneStepPolicyConfig,
    student: OneStepPolicy,
    /// The student's current weights on the plain device (what acts).
    acting: OneStepPolicy,
    /// EMA of the student (plain device): the backup loss's target.
    target: OneStepPolicy,
    fixed_noise: Vec<f32>,
    optim: Adam,
    rng: ChaCha8Rng,
    steps: u64,
    iterations: u64,
    eval_seed: u64,
    /// Standardized observations, ring buffer `[len, obs_dim]`.
    buffer: Vec<f32>,
    /// Next row of `buffer` to overwrite once it is full.
    buffer_next: usize,
    /// Metrics of the last [`Distill::train_on_buffer`] call.
    last_row: Option<MetricRow>,
}

impl Distill {
    /// A fresh learner distilling the teacher of `teacher_ckpt` (see [`teacher_of_checkpoint`])
    /// for `env`'s spaces; `device` must have autodiff enabled.
    pub fn new(
        mut config: DistillConfig,
        env: &dyn VecEnv,
        teacher_ckpt: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        let plain = device.clone().inner();
        let (od, ad) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim());
        let (actor, teacher) = teacher_of_checkpoint(teacher_ckpt, od, ad, &plain)?;
        let p = &actor.policy;
        config.student.obs_dim = od;
        config.student.chunk_width = p.chunk_width();
        config.student.output_dim = p.chunk * p.action_dim;
        let copy = config.copy_teacher && config.loss_is_same_noise();
        config.student.head = match config.method {
            DistillMethod::Consistency if !copy => OneStepHead::Consistency,
            // The copied denoiser's output is a velocity: MeanFlow's head makes one step an Euler step.
            _ => OneStepHead::MeanFlow,
        };
        config.student.denoiser = copy.then(|| p.clone());
        let mut student = seeded_init(&device, seed, |device| config.student.init(device));
        if copy {
            let params = named_params(&teacher).into_iter().map(|(name, p)| (format!("denoiser.{name}"), p)).collect();
            student = load_params(student, &params)?;
        }
        Ok(Self {
            target: student.valid(),
            acting: student.valid(),
            student,
            student_config: config.student.clone(),
            teacher_params: named_params(&teacher),
            teacher,
            fixed_noise: actor.deterministic_noise(),
            actor,
            optim: Adam::new(0.9, 0.999, 1e-8),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x0D15_7111),
            steps: 0,
            iterations: 0,
            eval_seed: seed.wrapping_add(0xE7A1),
            buffer: Vec::new(),
            buffer_next: 0,
            last_row: None,
            device,
            config,
        })
    }

    /// The student's layout (what export reads back from the checkpoint).
    pub fn student_config(&self) -> &OneStepPolicyConfig {
        &self.student_config
    }

    /// Observations in the buffer.
    pub fn buffer_len(&self) -> usize {
        self.buffer.len() / self.actor.policy.obs_dim
    }

    /// The learning rate of the next gradient step.
    pub fn learning_rate(&self) -> f64 {
        let c = &self.config;
        warmup_cosine(self.steps, c.warmup_steps, c.decay_steps, c.learning_rate, c.final_learning_rate)
    }

    /// Gradient steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The teacher's action layout and normalization, which the student shares.
    pub fn actor(&self) -> &ChunkActor {
        &self.actor
    }

    /// Metrics of the last [`Distill::train_on_buffer`] call (`env_steps` counts gradient
    /// steps, `policy_loss` is the mean distillation loss); `None` before the first.
    pub fn last_row(&self) -> Option<&MetricRow> {
        self.last_row.as_ref()
    }

    /// Replaces the teacher with the flow policy of `ckpt` (see [`teacher_of_checkpoint`]),
    /// e.g. the present policy of an RL learner the student is trained alongside. The
    /// checkpoint's action layout and normalization must be the present teacher's.
    pub fn set_teacher(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        let plain = self.device.clone().inner();
        let (od, ad) = (self.actor.policy.obs_dim, self.actor.policy.action_dim);
        let (actor, teacher) = teacher_of_checkpoint(ckpt, od, ad, &plain)?;
        if actor != self.actor {
            return Err(AlgoError::Checkpoint(
                "the new teacher's policy layout or normalization differs from the student's".into(),
            ));
        }
        self.teacher_params = named_params(&teacher);
        self.teacher = teacher;
        Ok(())
    }

    /// Standardizes raw observations `[n, obs_dim]` with the teacher's normalization and adds
    /// them to the ring buffer.
    pub fn add_raw_observations(&mut self, raw: &[f32]) {
        let obs = self.actor.normalized_obs(raw);
        self.add_observations(&obs);
    }

    /// `updates` gradient steps on the buffered observations with the present teacher's
    /// labels, counted as one iteration; returns (and keeps, see [`Distill::last_row`]) the
    /// metrics: gradient steps so far, mean loss, learning rate.
    pub fn train_on_buffer(&mut self, updates: usize) -> Result<MetricRow, AlgoError> {
        let mut loss = 0.0;
        for _ in 0..updates {
            loss += self.update()?;
        }
        self.iterations += 1;
        let row = MetricRow {
            env_steps: self.steps,
            policy_loss: Some(loss / updates.max(1) as f64),
            learning_rate: Some(self.learning_rate()),
            ..Default::default()
        };
        self.last_row = Some(row.clone());
        Ok(row)
    }

    /// Adds standardized observations `[n, obs_dim]` to the ring buffer.
    pub fn add_observations(&mut self, obs: &[f32]) {
        let od = self.actor.policy.obs_dim;
        for row in obs.chunks_exact(od) {
            if self.buffer_len() < self.config.buffer_size {
                self.buffer.extend_from_slice(row);
            } else {
                self.buffer[self.buffer_next * od..(self.buffer_next + 1) * od].copy_from_slice(row);
                self.buffer_next = (self.buffer_next + 1) % self.config.buffer_size;
            }
        }
    }

    /// Teacher's `K`-step ODE chain from noise `z` (`[n, H·D]`) at standardized `obs`:
    /// `[K + 1, n, H·D]` on the plain device, no grad.
    fn teacher_chain(&self, obs: &[f32], z: &[f32], n: usize) -> Tensor<3> {
        let (od, hd, k) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.actor.policy.denoise_steps);
        let plain = self.device.clone().inner();
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        noise[..n * hd].copy_from_slice(z);
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), &plain);
        self.teacher.sample(to_tensor(obs, n, od, &plain), noise, NoiseMethod::Ode, StochasticSteps::None).chains
    }

    /// Standardized executed actions `[n, C·D]` of the teacher from noise `z` `[n, H·D]`.
    pub fn teacher_actions(&self, obs: &[f32], z: &[f32]) -> Result<Vec<f32>, AlgoError> {
        let n = obs.len() / self.actor.policy.obs_dim;
        let (k, hd, cd) =
            (self.actor.policy.denoise_steps, self.actor.policy.chunk_width(), self.student_config.output_dim);
        let last = self.teacher_chain(obs, z, n).narrow(0, k, 1).reshape([n, hd]).narrow(1, 0, cd);
        to_host(last)
    }

    /// Standardized executed actions `[n, C·D]` of the student (plain weights) from noise `z`.
    pub fn student_actions(&self, obs: &[f32], z: &[f32]) -> Result<Vec<f32>, AlgoError> {
        let plain = self.device.clone().inner();
        let (n, od, hd) =
            (obs.len() / self.actor.policy.obs_dim, self.actor.policy.obs_dim, self.actor.policy.chunk_width());
        to_host(self.acting.sample(to_tensor(obs, n, od, &plain), to_tensor(z, n, hd, &plain)))
    }

    /// `n` rows of standard-normal noise `[n, H·D]`, the first `fixed` of them the fixed draw.
    fn noise_rows(&mut self, n: usize, fixed: usize) -> Vec<f32> {
        let hd = self.actor.policy.chunk_width();
        let mut z = vec![0.0f32; n * hd];
        fill_normal(&mut self.rng, &mut z);
        for row in z.chunks_exact_mut(hd).take(fixed) {
            row.copy_from_slice(&self.fixed_noise);
        }
        z
    }

    /// One gradient step on a mini-batch of buffered observations; returns the loss.
    pub fn update(&mut self) -> Result<f64, AlgoError> {
        let (od, bs) = (self.actor.policy.obs_dim, self.config.batch_size);
        let len = self.buffer_len();
        if len == 0 {
            return Err(AlgoError::Config {
                field: "distill buffer".into(),
                value: "empty".into(),
                allowed: "observations collected before the first update".into(),
            });
        }
        let mut obs = Vec::with_capacity(bs * od);
        for _ in 0..bs {
            let i = self.rng.random_range(0..len);
            obs.extend_from_slice(&self.buffer[i * od..(i + 1) * od]);
        }
        let loss = match (self.config.method, self.config.loss) {
            (DistillMethod::Consistency, ConsistencyLoss::SameNoise) => self.same_noise_loss(&obs)?,
            (DistillMethod::Consistency, ConsistencyLoss::Backup) => self.backup_loss(&obs)?,
            (DistillMethod::MeanFlow, _) => self.meanflow_loss(&obs)?,
        };
        let value = check_finite("distillation loss", to_host(loss.clone().inner())?[0] as f64, self.steps)?;
        let grads = GradientsParams::from_grads(loss.backward(), &self.student);
        let lr = self.learning_rate();
        let (student, norm) = self.optim.step(lr, self.student.clone(), &grads, Some(self.config.max_grad_norm));
        check_finite("distillation gradients", norm.unwrap_or(0.0), self.steps)?;
        self.acting = student.valid();
        self.student = student;
        if self.config.loss == ConsistencyLoss::Backup {
            self.target = polyak_update(self.target.clone(), &self.student, 1.0 - self.config.target_ema);
        }
        self.steps += 1;
        Ok(value)
    }

    /// `mean(‖a_S(s, z) − a_T(s, z)‖²)` over the executed slice.
    fn same_noise_loss(&mut self, obs: &[f32]) -> Result<Tensor<1>, AlgoError> {
        let bs = self.config.batch_size;
        let fixed = (self.config.fixed_noise_fraction * bs as f64).round() as usize;
        let z = self.noise_rows(bs, fixed);
        let target = self.teacher_actions(obs, &z)?;
        let (d, od, hd, cd) =
            (&self.device, self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.student_config.output_dim);
        let pred = self.student.sample(to_tensor(obs, bs, od, d), to_tensor(&z, bs, hd, d));
        Ok((pred - to_tensor(&target, bs, cd, d)).square().mean())
    }

    /// LCM backup: `‖f_θ(x_{t_n}, t_n) − sg(f_EMA(x_{t_{n+1}}, t_{n+1}))‖²` on the teacher's chain.
    fn backup_loss(&mut self, obs: &[f32]) -> Result<Tensor<1>, AlgoError> {
        let (bs, od, hd, k) = (
            self.config.batch_size,
            self.actor.policy.obs_dim,
            self.actor.policy.chunk_width(),
            self.actor.policy.denoise_steps,
        );
        let z = self.noise_rows(bs, 0);
        let chain = to_host(self.teacher_chain(obs, &z, bs))?;
        let (mut x_n, mut x_next, mut t_n, mut t_next) =
            (Vec::with_capacity(bs * hd), Vec::with_capacity(bs * hd), Vec::with_capacity(bs), Vec::with_capacity(bs));
        for i in 0..bs {
            let n = self.rng.random_range(0..k);
            let at = |step: usize| &chain[(step * bs + i) * hd..(step * bs + i + 1) * hd];
            x_n.extend_from_slice(at(n));
            x_next.extend_from_slice(at(n + 1));
            t_n.push(1.0 - n as f32 / k as f32);
            t_next.push(1.0 - (n + 1) as f32 / k as f32);
        }
        let plain = self.device.clone().inner();
        let zeros = vec![0.0f32; bs];
        let target = to_host(self.target.forward(
            to_tensor(obs, bs, od, &plain),
            to_tensor(&x_next, bs, hd, &plain),
            to_tensor(&t_next, bs, 1, &plain),
            to_tensor(&zeros, bs, 1, &plain),
        ))?;
        let d = &self.device;
        let pred = self.student.forward(
            to_tensor(obs, bs, od, d),
            to_tensor(&x_n, bs, hd, d),
            to_tensor(&t_n, bs, 1, d),
            to_tensor(&zeros, bs, 1, d),
        );
        Ok((pred - to_tensor(&target, bs, self.student_config.output_dim, d)).square().mean())
    }

    /// MeanFlow: `‖u_θ(z_t, r, t) − sg(v − (t − r)·du/dt)‖²` on teacher samples.
    fn meanflow_loss(&mut self, obs: &[f32]) -> Result<Tensor<1>, AlgoError> {
        let (bs, od, hd, k) = (
            self.config.batch_size,
            self.actor.policy.obs_dim,
            self.actor.policy.chunk_width(),
            self.actor.policy.denoise_steps,
        );
        let cd = self.student_config.output_dim;
        let z = self.noise_rows(bs, 0);
        let chain = to_host(self.teacher_chain(obs, &z, bs))?;
        let actions = &chain[k * bs * hd..];
        let eps = self.noise_rows(bs, 0);
        let (mut t, mut r) = (Vec::with_capacity(bs), Vec::with_capacity(bs));
        for _ in 0..bs {
            let (a, b): (f32, f32) = (self.rng.random(), self.rng.random());
            let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
            t.push(hi);
            r.push(if self.rng.random::<f64>() < self.config.meanflow_equal_fraction { hi } else { lo });
        }
        let mut z_t = vec![0.0f32; bs * hd];
        let mut v = vec![0.0f32; bs * hd];
        for i in 0..bs {
            for j in 0..hd {
                let (a, e) = (actions[i * hd + j], eps[i * hd + j]);
                z_t[i * hd + j] = (1.0 - t[i]) * a + t[i] * e;
                v[i * hd + j] = e - a;
            }
        }
        // du/dt along (v, 0, 1) by a central difference of the current network, no grad.
        let h = self.config.meanflow_fd_step as f32;
        let plain = self.device.clone().inner();
        let model = &self.acting;
        let obs_plain = to_tensor(obs, bs, od, &plain);
        let r_plain = to_tensor(&r, bs, 1, &plain);
        let shifted = |sign: f32| {
            let x: Vec<f32> = z_t.iter().zip(&v).map(|(z, v)| z + sign * h * v).collect();
            let tt: Vec<f32> = t.iter().map(|t| t + sign * h).collect();
            model.raw(obs_plain.clone(), to_tensor(&x, bs, hd, &plain), to_tensor(&tt, bs, 1, &plain), r_plain.clone())
        };
        let du_dt = to_host((shifted(1.0) - shifted(-1.0)).div_scalar(2.0 * h as f64))?;
        let mut target = vec![0.0f32; bs * cd];
        for i in 0..bs {
            for j in 0..cd {
                target[i * cd + j] = v[i * hd + j] - (t[i] - r[i]) * du_dt[i * cd + j];
            }
        }
        let d = &self.device;
        let u = self.student.raw(
            to_tensor(obs, bs, od, d),
            to_tensor(&z_t, bs, hd, d),
            to_tensor(&t, bs, 1, d),
            to_tensor(&r, bs, 1, d),
        );
        Ok((u - to_tensor(&target, bs, cd, d)).square().mean())
    }

    /// Chunk steps one collection runs per environment of `env`: `chunk_steps`, or when that
    /// is 0 one whole episode, `⌈max_episode_steps / C⌉` (25 for a task without a time limit).
    pub fn collection_chunk_steps(&self, env: &dyn VecEnv) -> usize {
        match (self.config.chunk_steps, env.info().max_episode_steps as usize) {
            (0, 0) => 25,
            (0, limit) => limit.div_ceil(self.actor.policy.chunk),
            (steps, _) => steps,
        }
    }

    /// Collects [`Distill::collection_chunk_steps`] chunk steps from every environment of
    /// `env` into the buffer.
    fn collect(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let (ad, c, cd) = (self.actor.policy.action_dim, self.actor.policy.chunk, self.student_config.output_dim);
        let student_fraction = if self.iterations == 0 { 0.0 } else { self.config.student_rollout_fraction };
        let mut chunk = vec![0.0f32; n * cd];
        let mut step_actions = vec![0.0f32; n * ad];
        for _ in 0..self.collection_chunk_steps(env) {
            let obs = self.actor.normalized_obs(&env.buffers().obs);
            self.add_observations(&obs);
            let z = self.noise_rows(n, 0);
            let by_student: Vec<bool> = (0..n).map(|_| self.rng.random::<f64>() < student_fraction).collect();
            let teacher = self.teacher_actions(&obs, &z)?;
            let student = if by_student.iter().any(|&s| s) { Some(self.student_actions(&obs, &z)?) } else { None };
            for i in 0..n {
                let source = match (&student, by_student[i]) {
                    (Some(s), true) => s,
                    _ => &teacher,
                };
                chunk[i * cd..(i + 1) * cd].copy_from_slice(&source[i * cd..(i + 1) * cd]);
            }
            self.actor.to_env_units(&env.buffers().obs, &mut chunk);
            for j in 0..c {
                for i in 0..n {
                    step_actions[i * ad..(i + 1) * ad].copy_from_slice(&chunk[(i * c + j) * ad..(i * c + j + 1) * ad]);
                }
                env.step(&step_actions)?;
            }
        }
        Ok(())
    }
}

impl Learner for Distill {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    /// The student's deterministic actions map its teacher's deterministic initial noise.
    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(if self.fixed_noise.iter().all(|v| *v == 0.0) { InitialNoise::Zero } else { InitialNoise::FixedDraw })
    }

    fn name(&self) -> &'static str {
        "distill"
    }

    /// Gradient steps taken (a distill run's budget is counted in gradient steps).
    fn env_steps(&self) -> u64 {
        self.steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        self.collect(env)?;
        let mut loss = 0.0;
        for _ in 0..self.config.updates_per_iteration {
            loss += self.update()?;
        }
        self.iterations += 1;
        // A new evaluation seed each iteration, so the next collection starts from new states.
        let eval = evaluate(self, env, self.eval_seed.wrapping_add(self.iterations), self.default_eval_mode())?;
        let mean_loss = loss / self.config.updates_per_iteration as f64;
        Ok(MetricRow::supervised(self.steps, mean_loss, self.learning_rate(), &eval))
    }

    /// The student's actions: from the fixed noise when deterministic, fresh noise otherwise.
    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        let (od, hd) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width());
        let n = obs.len() / od;
        let mut z = vec![0.0f32; n * hd];
        match sampling {
            Some(rng) => fill_normal(rng, &mut z),
            None => z.chunks_exact_mut(hd).for_each(|row| row.copy_from_slice(&self.fixed_noise)),
        }
        let executed = self.student_actions(&self.actor.normalized_obs(obs), &z)?;
        actions.copy_from_slice(&executed);
        self.actor.to_env_units(obs, actions);
        Ok(())
    }

    fn chunk_len(&self) -> usize {
        self.actor.policy.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params(STUDENT_PREFIX, named_params(&self.student));
        ckpt.insert_params("target", named_params(&self.target));
        ckpt.insert_params("teacher", self.teacher_params.clone());
        ckpt.put_optim("student", &self.optim)?;
        let od = self.actor.policy.obs_dim;
        ckpt.tensors.insert("buffer.obs".into(), (vec![self.buffer_len(), od], self.buffer.clone()));
        ckpt.put("buffer_next", &self.buffer_next)?;
        ckpt.put("algo", &"distill")?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put(STUDENT_KEY, &self.student_config)?;
        ckpt.put(FIXED_NOISE_KEY, &self.fixed_noise)?;
        ckpt.put("steps", &self.steps)?;
        ckpt.put("distill_iterations", &self.iterations)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("distill")?;
        let student_config: OneStepPolicyConfig = ckpt.get(STUDENT_KEY)?;
        if student_config != self.student_config {
            return Err(AlgoError::Checkpoint("the checkpoint's student layout differs from the config's".into()));
        }
        let plain = self.device.clone().inner();
        let (actor, teacher) =
            teacher_of_checkpoint(ckpt, self.actor.policy.obs_dim, self.actor.policy.action_dim, &plain)?;
        self.teacher_params = named_params(&teacher);
        self.teacher = teacher;
        self.actor = actor;
        self.fixed_noise = ckpt.get(FIXED_NOISE_KEY)?;
        self.student = load_params(self.student.clone(), &ckpt.params(STUDENT_PREFIX))?;
        self.acting = self.student.valid();
        self.target = load_params(self.target.clone(), &ckpt.params("target"))?;
        ckpt.restore_optim("student", &mut self.optim, &self.student, &plain)?;
        let (_, buffer) = ckpt
            .tensors
            .get("buffer.obs")
            .ok_or_else(|| AlgoError::Checkpoint("tensor `buffer.obs` is missing".into()))?;
        self.buffer = buffer.clone();
        self.buffer_next = ckpt.get("buffer_next")?;
        self.steps = ckpt.get("steps")?;
        self.iterations = ckpt.get("distill_iterations")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}
