//! Supervised fine-tuning (behaviour cloning) of a flow-matching action-chunk policy on
//! demonstrations, π0 style.
//!
//! Setup: every step `t` of every episode gives one sample `(s_t, a_{t..t+H})`, the chunk
//! padded past the episode's end with its last action (LeRobot pads likewise); joint-position
//! actions are taken relative to the joint positions in `s_t` (openpi's `DeltaActions`,
//! `relative_actions`); observations and chunk actions are standardized with statistics of
//! these samples. Recorded demonstrations are perturbed (DART, `demo_noise`).
//!
//! Why (pick-cube, 20 demonstrations, measured): with absolute joint targets and unperturbed
//! demonstrations the clone reached 0–2.5% success, also as a plain MLP regression of the same
//! chunk, so the flow model was not at fault. Relative actions alone gave 12.5% (MLP), DART
//! perturbations alone 17.5%, both 55% (MLP) and 30–38% (flow). Rollouts showed why: with
//! absolute targets the carry ended 10–40 cm from goals between the demonstrations' 20 goals;
//! without perturbations the clone drifted off the goal during the hold, where the expert's
//! states never leave it, and cloned its own last action (the observation's `last_action`).
//!
//! Per gradient step: draw a mini-batch, `ε ~ N(0, I)` and `t = 0.999·Beta(1.5, 1) + 0.001`,
//! minimize `mean((v_θ(x_t, t | s) − (ε − a))²)` with AdamW (global grad clip) under a
//! warmup-cosine learning rate, then update the EMA weights. Every iteration
//! (`updates_per_iteration` steps) ends with a closed-loop evaluation of the EMA policy in
//! simulation (one deterministic episode per environment, chunks of `C` actions executed open
//! loop) whose success rate goes into the metrics.
//!
//! With `dagger_episodes` (DAgger, Ross et al. 2011; shared with `vla-sft`), each iteration
//! then runs that many episodes of the EMA policy in the evaluation environments (the expert
//! executing a chunk instead with probability `dagger_expert_share`), labels every step with the
//! scripted expert's action for the state reached, and adds the episodes to the training
//! samples, standardized with the demonstrations' statistics. Why (pick-cube-ee, measured):
//! the clone reached the target and then drifted off it, its actions barely responding to a
//! 2–3 cm error (gain ~0.03 per metre in height against the expert's ~4–18), because the
//! expert's own holds never leave the target by more than a few millimetres.
//!
//! The runner's step counter counts **gradient steps** for this learner (`total_steps` of an
//! `sft` run is its number of gradient steps); no environment steps are spent on training.
//!
//! Deliberate differences from openpi's defaults: the peak learning rate (1e-3, not 2.5e-5),
//! warmup and decay lengths suit a small MLP expert trained for a few thousand steps, not a
//! 300M-parameter transformer; the batch is 128 instead of 32.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Device;
use embodia_policies::{
    DiffusionConfig, FlowPolicy, FlowPolicyConfig, load_params, named_params, polyak_update, sample_flow_time,
    seeded_init,
};
use embodia_sim::VecEnv;
use embodia_sim::demonstrations::Demonstrations;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::check_finite;
use crate::flow::chunk_samples::fitted_actor;
use crate::flow::recording::dagger_chunk_samples;
use crate::flow::{CHUNK_ACTOR_KEY, ChunkActor, InitialNoise};
use crate::normalizer::Standardizer;
use crate::optim::{check_warmup_cosine, warmup_cosine};
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::transfer::{to_host, to_tensor};
use crate::{Adam, AlgoError, Checkpoint, EvalMode, Learner, MetricRow, check_num_envs, check_range, evaluate};

/// SFT hyperparameters. Optimizer defaults are openpi's (AdamW β = (0.9, 0.95), ε = 1e-8,
/// weight decay 1e-10, grad clip 1.0, EMA 0.99); see the module docs for the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SftConfig {
    /// Environments of the periodic evaluation (one episode each). Default 20.
    pub num_envs: usize,
    /// Scripted-expert demonstrations to record when no dataset is given (successful episodes
    /// only). Default 20.
    pub demos: usize,
    /// LeRobot dataset directory to train on instead of recorded demonstrations (`--dataset`).
    /// Default none.
    pub dataset: Option<String>,
    /// Mini-batch size. Default 128.
    pub batch_size: usize,
    /// Gradient steps per iteration; each iteration ends with an evaluation. Default 500.
    pub updates_per_iteration: usize,
    /// Peak learning rate. Default 1e-3.
    pub learning_rate: f64,
    /// Learning rate at the end of the cosine decay. Default 1e-4.
    pub final_learning_rate: f64,
    /// Linear warmup, gradient steps. Default 100.
    pub warmup_steps: u64,
    /// Gradient step at which the cosine decay reaches `final_learning_rate`. Default 4000.
    pub decay_steps: u64,
    /// AdamW β₁. Default 0.9.
    pub beta1: f64,
    /// AdamW β₂. Default 0.95.
    pub beta2: f64,
    /// AdamW decoupled weight decay. Default 1e-10.
    pub weight_decay: f64,
    /// Global gradient-norm limit. Default 1.0.
    pub max_grad_norm: f64,
    /// Decay of the exponential moving average of the weights (evaluated and saved). Default 0.99.
    pub ema_decay: f64,
    /// Floor of the standardization std of observations and actions. Default 0.01.
    pub min_std: f32,
    /// Predict the actions of joint-position tasks relative to the present joint positions
    /// (openpi's `DeltaActions`; see [`ChunkActor::relative`]) instead of as absolute targets.
    /// Absolute targets make the clone interpolate the goal-to-joints map between a few
    /// demonstrations' goals; relative ones only need the correction. Default true.
    pub relative_actions: bool,
    /// Perturbation of the scripted expert's executed actions while recording demonstrations
    /// (DART; `embodia_sim::rapier::expert_runs::record_expert_perturbed`), a fraction of the
    /// action clip; 0 records the expert unperturbed. Default 0.05.
    pub demo_noise: f32,
    /// The policy (observation and action widths are taken from the task); with
    /// `model = "diffusion"` its chunk layout and network widths (`horizon`, `chunk`, `width`,
    /// `hidden`, `activation`) shape the diffusion policy and its flow-only fields are unused.
    pub policy: FlowPolicyConfig,
    /// Which generative model is cloned: `flow` (flow matching, [`Sft`]) or `diffusion` (DDPM
    /// ε-prediction sampled with DDIM, [`DiffusionSft`](crate::DiffusionSft); the start of
    /// `dppo`). Default flow.
    pub model: ChunkModel,
    /// Diffusion process and sampler (`model = "diffusion"` only).
    pub diffusion: DiffusionConfig,
    /// DAgger (module docs): episodes of the EMA policy run after every iteration's
    /// evaluation, labelled with the scripted expert's actions and added to the training
    /// samples. 0: off. Default 0.
    pub dagger_episodes: usize,
    /// DAgger's β: the chance that an environment executes the expert's actions instead of the
    /// policy's chunk at each chunk decision. Default 0.5.
    pub dagger_expert_share: f64,
    /// Gradient step from which the DAgger rounds run: a clone that does not work yet visits
    /// states far off the demonstrations, whose expert labels can swamp them. Default 0.
    pub dagger_start_step: u64,
}

/// The generative model of an `sft` run (`algo.model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChunkModel {
    /// Flow matching (π0 style).
    #[default]
    Flow,
    /// DDPM with ε-prediction (Diffusion Policy / DPPO style).
    Diffusion,
}

impl Default for SftConfig {
    fn default() -> Self {
        Self {
            num_envs: 20,
            demos: 20,
            dataset: None,
            batch_size: 128,
            updates_per_iteration: 500,
            learning_rate: 1e-3,
            final_learning_rate: 1e-4,
            warmup_steps: 100,
            decay_steps: 4000,
            beta1: 0.9,
            beta2: 0.95,
            weight_decay: 1e-10,
            max_grad_norm: 1.0,
            ema_decay: 0.99,
            min_std: 0.01,
            relative_actions: true,
            demo_noise: 0.05,
            policy: FlowPolicyConfig::default(),
            model: ChunkModel::Flow,
            diffusion: DiffusionConfig::default(),
            dagger_episodes: 0,
            dagger_expert_share: 0.5,
            dagger_start_step: 0,
        }
    }
}

impl SftConfig {
    /// Checks every value's range, the policy's widths included; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        self.validate_fields()?;
        check_range("policy.obs_dim", self.policy.obs_dim, self.policy.obs_dim > 0, "≥ 1 (set from the task)")?;
        check_range("policy.action_dim", self.policy.action_dim, self.policy.action_dim > 0, "≥ 1 (set from the task)")
    }

    /// Checks every value's range except the policy's observation and action widths, which
    /// come from the task.
    pub fn validate_fields(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("demos", self.demos, self.demos > 0, "≥ 1")?;
        check_range("batch_size", self.batch_size, self.batch_size > 0, "≥ 1")?;
        check_range("updates_per_iteration", self.updates_per_iteration, self.updates_per_iteration > 0, "≥ 1")?;
        check_warmup_cosine(self.learning_rate, self.final_learning_rate, self.warmup_steps, self.decay_steps)?;
        check_range("beta1", self.beta1, (0.0..1.0).contains(&self.beta1), "0 ≤ beta1 < 1")?;
        check_range("beta2", self.beta2, (0.0..1.0).contains(&self.beta2), "0 ≤ beta2 < 1")?;
        check_range("weight_decay", self.weight_decay, self.weight_decay >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("ema_decay", self.ema_decay, (0.0..1.0).contains(&self.ema_decay), "0 ≤ ema_decay < 1")?;
        check_range("min_std", self.min_std, self.min_std > 0.0, "> 0")?;
        check_range("demo_noise", self.demo_noise, (0.0..=1.0).contains(&self.demo_noise), "0 ≤ demo_noise ≤ 1")?;
        let share = self.dagger_expert_share;
        check_range("dagger_expert_share", share, (0.0..=1.0).contains(&share), "0 ≤ dagger_expert_share ≤ 1")?;
        self.diffusion.validate().map_err(|e| AlgoError::Config {
            field: format!("algo.diffusion.{}", e.field),
            value: e.value,
            allowed: e.allowed,
        })?;
        self.policy.validate().map_err(|e| AlgoError::Config {
            field: format!("algo.policy.{}", e.field),
            value: e.value,
            allowed: e.allowed,
        })
    }
}

/// Behaviour cloning of a flow policy from demonstrations.
pub struct Sft {
    config: SftConfig,
    device: Device,
    actor: ChunkActor,
    model: FlowPolicy,
    /// EMA weights (plain device): what is evaluated, acts and seeds RL.
    ema: FlowPolicy,
    optim: Adam,
    rng: ChaCha8Rng,
    steps: u64,
    eval_seed: u64,
    /// Standardized sample observations, `[samples, obs_dim]`.
    sample_obs: Vec<f32>,
    /// Standardized action chunks, `[samples, H·D]`.
    sample_chunks: Vec<f32>,
    /// Seed of the next DAgger round's episodes.
    dagger_seed: u64,
}

impl Sft {
    /// A fresh learner for `env`'s spaces, fitted to `demos` (which must be of the same task
    /// widths); `device` must have autodiff enabled.
    pub fn new(
        mut config: SftConfig,
        env: &dyn VecEnv,
        demos: &Demonstrations,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let (od, ad) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim());
        config.policy.obs_dim = od;
        config.policy.action_dim = ad;
        config.validate()?;
        if config.model != ChunkModel::Flow {
            return Err(AlgoError::Config {
                field: "algo.model".into(),
                value: "diffusion".into(),
                allowed: "flow for `Sft` (diffusion policies are cloned by `DiffusionSft`)".into(),
            });
        }
        let (actor, sample_obs, sample_chunks) =
            fitted_actor(&config.policy, config.relative_actions, config.min_std, env, demos)?;
        let model = seeded_init(&device, seed, |device| config.policy.init(device));
        Ok(Self {
            ema: model.valid(),
            model,
            optim: Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5F7_5F7),
            steps: 0,
            eval_seed: seed.wrapping_add(0x5EED),
            dagger_seed: seed.wrapping_add(0x00DA_66E5),
            sample_obs,
            sample_chunks,
            actor,
            device,
            config,
        })
    }

    /// Number of `(observation, chunk)` training samples.
    pub fn num_samples(&self) -> usize {
        self.sample_obs.len() / self.actor.policy.obs_dim
    }

    /// The learning rate of the next gradient step.
    pub fn learning_rate(&self) -> f64 {
        let c = &self.config;
        warmup_cosine(self.steps, c.warmup_steps, c.decay_steps, c.learning_rate, c.final_learning_rate)
    }

    /// One gradient step; returns the flow-matching loss of the mini-batch.
    pub fn update(&mut self) -> Result<f64, AlgoError> {
        let (od, hd, bs) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.config.batch_size);
        let n = self.num_samples();
        let mut obs = Vec::with_capacity(bs * od);
        let mut chunks = Vec::with_capacity(bs * hd);
        for _ in 0..bs {
            let i = self.rng.random_range(0..n);
            obs.extend_from_slice(&self.sample_obs[i * od..(i + 1) * od]);
            chunks.extend_from_slice(&self.sample_chunks[i * hd..(i + 1) * hd]);
        }
        let mut noise = vec![0.0f32; bs * hd];
        fill_normal(&mut self.rng, &mut noise);
        let t: Vec<f32> = (0..bs).map(|_| sample_flow_time(self.rng.random::<f32>())).collect();
        let d = &self.device;
        let loss = self.model.flow_matching_loss(
            to_tensor(&obs, bs, od, d),
            to_tensor(&chunks, bs, hd, d),
            to_tensor(&noise, bs, hd, d),
            to_tensor(&t, bs, 1, d),
        );
        let value = check_finite("SFT loss", to_host(loss.clone().inner())?[0] as f64, self.steps)?;
        let grads = GradientsParams::from_grads(loss.backward(), &self.model);
        let lr = self.learning_rate();
        let (model, norm) = self.optim.step(lr, self.model.clone(), &grads, Some(self.config.max_grad_norm));
        check_finite("SFT gradients", norm.unwrap_or(0.0), self.steps)?;
        self.model = model;
        self.ema = polyak_update(self.ema.clone(), &self.model, 1.0 - self.config.ema_decay);
        self.steps += 1;
        Ok(value)
    }

    /// The EMA policy (plain device) and the actor around it.
    pub fn policy(&self) -> (&FlowPolicy, &ChunkActor) {
        (&self.ema, &self.actor)
    }

    /// One DAgger round: `dagger_episodes` episodes of the EMA policy in `env` from a fresh
    /// reset, labelled with the expert's actions, their samples standardized with the
    /// demonstrations' statistics and added to the training samples (not checkpointed).
    pub fn dagger_round(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let (episodes, share) = (self.config.dagger_episodes, self.config.dagger_expert_share);
        let (obs, chunks) = dagger_chunk_samples(self, &self.actor, env, episodes, share, self.dagger_seed)?;
        self.dagger_seed = self.dagger_seed.wrapping_add(1);
        self.sample_obs.extend(obs);
        self.sample_chunks.extend(chunks);
        Ok(())
    }
}

impl Learner for Sft {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(self.actor.initial_noise)
    }

    fn name(&self) -> &'static str {
        "sft"
    }

    /// Gradient steps taken (an SFT run's budget is counted in gradient steps).
    fn env_steps(&self) -> u64 {
        self.steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        let mut loss = 0.0;
        for _ in 0..self.config.updates_per_iteration {
            loss += self.update()?;
        }
        let eval = evaluate(self, env, self.eval_seed, self.default_eval_mode())?;
        if self.config.dagger_episodes > 0 && self.steps >= self.config.dagger_start_step {
            self.dagger_round(env)?;
        }
        let mean_loss = loss / self.config.updates_per_iteration as f64;
        Ok(MetricRow::supervised(self.steps, mean_loss, self.learning_rate(), &eval))
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        self.actor.act(&self.ema, obs, actions, sampling, &self.device.clone().inner())
    }

    fn chunk_len(&self) -> usize {
        self.actor.policy.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        ckpt.insert_params("ema", named_params(&self.ema));
        ckpt.put_optim("model", &self.optim)?;
        ckpt.put("algo", &"sft")?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put("steps", &self.steps)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("sft")?;
        let actor = ChunkActor::from_checkpoint(ckpt, self.actor.policy.obs_dim, self.actor.policy.action_dim)?;
        if actor.policy != self.actor.policy || actor.relative != self.actor.relative {
            return Err(AlgoError::Checkpoint(
                "the checkpoint's policy layout or relative actions differ from the config's".into(),
            ));
        }
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        self.ema = load_params(self.ema.clone(), &ckpt.params("ema"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("model", &mut self.optim, &self.model, &plain)?;
        // Training samples are standardized with the checkpoint's statistics.
        if actor != self.actor {
            let scale = |x: &mut Vec<f32>, from: &Standardizer, to: &Standardizer| {
                from.denormalize(x);
                to.normalize(x);
            };
            scale(&mut self.sample_obs, &self.actor.obs_norm, &actor.obs_norm);
            scale(&mut self.sample_chunks, &self.actor.action_norm, &actor.action_norm);
            self.actor = actor;
        }
        self.steps = ckpt.get("steps")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DAgger rounds start at `dagger_start_step` and add whole episodes of the clone.
    #[test]
    fn dagger_rounds_start_at_their_step() {
        let demos = embodia_sim::rapier::expert_runs::record_task_expert("reach", None, 2, 2, 7).unwrap();
        let config = SftConfig {
            num_envs: 2,
            updates_per_iteration: 1,
            dagger_episodes: 2,
            dagger_start_step: 2,
            policy: FlowPolicyConfig { width: 16, hidden: vec![16], ..Default::default() },
            ..Default::default()
        };
        let mut env = embodia_sim::make("reach", 2).unwrap();
        let mut sft = Sft::new(config, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
        let demo_samples = sft.num_samples();
        sft.iterate(env.as_mut()).unwrap();
        assert_eq!(sft.num_samples(), demo_samples, "no round before step 2");
        sft.iterate(env.as_mut()).unwrap();
        // Two whole reach episodes (200 steps each).
        assert_eq!(sft.num_samples(), demo_samples + 2 * 200);
    }

    #[test]
    fn dagger_fields_are_checked() {
        let bad = SftConfig { dagger_expert_share: 1.5, ..Default::default() };
        assert!(bad.validate_fields().unwrap_err().to_string().contains("dagger_expert_share"));
    }
}
