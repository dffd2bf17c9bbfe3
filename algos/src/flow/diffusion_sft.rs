//! Behaviour cloning of a diffusion action-chunk policy (DDPM, ε-prediction) on
//! demonstrations: `embodia train --algo sft --set algo.model=diffusion`, the starting point
//! of `dppo` (Diffusion Policy / DPPO pre-training).
//!
//! Everything but the model and its loss is the flow [`Sft`](crate::Sft)'s: the same samples
//! `(s_t, a_{t..t+H})` (relative actions, DART-perturbed demonstrations, standardization), the
//! same optimizer (AdamW, global grad clip, warmup-cosine, EMA weights), the same periodic
//! closed-loop evaluation and the same DAgger rounds. Per gradient step: draw a mini-batch,
//! `ε ~ N(0, I)` and `t ~ U{0..T−1}`, minimize `mean((ε_θ(√ᾱ_t·a + √(1 − ᾱ_t)·ε, t | s) − ε)²)`. The policy acts
//! with deterministic DDIM (`η = 0`, `K` steps) from one fixed draw of `x_0`, as the flow policy
//! acts with its ODE.
//!
//! Checkpoints hold `algo = "sft"`, `model = "diffusion"`, the [`ChunkActor`] (layout and
//! normalization) and the [`DiffusionConfig`], so `dppo --init` can rebuild the policy.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    DenoiseSettings, DiffusionConfig, DiffusionPolicy, load_params, named_params, polyak_update, seeded_init,
};
use embodia_sim::VecEnv;
use embodia_sim::demonstrations::Demonstrations;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::check_finite;
use crate::flow::chunk_samples::fitted_actor;
use crate::flow::recording::dagger_chunk_samples;
use crate::flow::sft::{ChunkModel, SftConfig};
use crate::flow::{CHUNK_ACTOR_KEY, ChunkActor};
use crate::normalizer::Standardizer;
use crate::optim::warmup_cosine;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::transfer::{to_host, to_tensor};
use crate::{Adam, AlgoError, Checkpoint, EvalMode, InitialNoise, Learner, MetricRow, evaluate};

/// Checkpoint key of the [`DiffusionConfig`] of a diffusion policy.
pub const DIFFUSION_KEY: &str = "diffusion";

/// Noise-free DDIM actions of `model` (plain device) for raw `obs` (`[n, obs_dim]`) into `out`
/// (`[n, C, D]`, the task's units): every step takes its mean `μ_k` under `settings` (its η
/// and, with `base`, its fine-tuned steps `K′`; its std floor is ignored). `x_0` is drawn with
/// `sampling`; deterministic actions use the actor's one fixed draw for every row and call.
///
/// The SFT policy acts with [`DenoiseSettings::deterministic`] and no `base`. DPPO acts as it
/// rolls out and as its reference evaluates: the first `K − K′` steps run the frozen SFT network
/// `base`, the last `K′` the fine-tuned `model`, which RL never trained on the earlier steps.
#[allow(clippy::too_many_arguments, reason = "the actor, both networks, the sampler and the batch")]
pub fn act_diffusion(
    actor: &ChunkActor,
    model: &DiffusionPolicy,
    base: Option<&DiffusionPolicy>,
    settings: &DenoiseSettings,
    obs: &[f32],
    out: &mut [f32],
    sampling: Option<&mut ChaCha8Rng>,
    device: &Device,
) -> Result<(), AlgoError> {
    let (od, hd, k) = (actor.policy.obs_dim, actor.policy.chunk_width(), model.sampling_steps());
    let n = obs.len() / od;
    // Only x_0 matters: every step's std is 0, so the later entries stay zero.
    let mut noise = vec![0.0f32; (k + 1) * n * hd];
    match sampling {
        Some(rng) => fill_normal(rng, &mut noise[..n * hd]),
        None => {
            let first = actor.deterministic_noise();
            for row in noise[..n * hd].chunks_exact_mut(hd) {
                row.copy_from_slice(&first);
            }
        }
    }
    let normalized = to_tensor(&actor.normalized_obs(obs), n, od, device);
    let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), device);
    let settings = DenoiseSettings { min_std: 0.0, ..*settings };
    let sample = model.sample(normalized, noise, &settings, base);
    actor.env_actions(obs, &to_host(sample.actions)?, out);
    Ok(())
}

/// Reads the actor and diffusion settings of a diffusion `sft` checkpoint, checked against the
/// task's widths; errors name what is wrong (another algorithm, a flow policy).
pub fn diffusion_actor_from_checkpoint(
    ckpt: &Checkpoint,
    obs_dim: usize,
    action_dim: usize,
) -> Result<(ChunkActor, DiffusionConfig), AlgoError> {
    let model: ChunkModel = ckpt.get("model").unwrap_or(ChunkModel::Flow);
    if model != ChunkModel::Diffusion {
        return Err(AlgoError::Checkpoint(
            "the checkpoint holds a flow policy; dppo starts from a diffusion sft run (`--set algo.model=diffusion`)"
                .into(),
        ));
    }
    let actor = ChunkActor::from_checkpoint(ckpt, obs_dim, action_dim)?;
    actor.policy.validate().map_err(|e| AlgoError::Checkpoint(format!("policy layout: {e}")))?;
    let diffusion: DiffusionConfig = ckpt.get(DIFFUSION_KEY)?;
    diffusion.validate().map_err(|e| AlgoError::Checkpoint(format!("diffusion settings: {e}")))?;
    Ok((actor, diffusion))
}

/// Behaviour cloning of a diffusion policy from demonstrations.
pub struct DiffusionSft {
    config: SftConfig,
    device: Device,
    actor: ChunkActor,
    model: DiffusionPolicy,
    /// EMA weights (plain device): what is evaluated, acts and seeds RL.
    ema: DiffusionPolicy,
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
    /// Mini-batch scratch, reused across gradient steps.
    batch_obs: Vec<f32>,
    batch_chunks: Vec<f32>,
    batch_noise: Vec<f32>,
    batch_t: Vec<usize>,
}

impl DiffusionSft {
    /// A fresh learner for `env`'s spaces, fitted to `demos`; `config.model` must be
    /// `diffusion`; `device` must have autodiff enabled.
    pub fn new(
        mut config: SftConfig,
        env: &dyn VecEnv,
        demos: &Demonstrations,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.policy.obs_dim = env.obs_spec().vector.dim();
        config.policy.action_dim = env.action_spec().bounds.dim();
        config.validate()?;
        if config.model != ChunkModel::Diffusion {
            return Err(AlgoError::Config {
                field: "algo.model".into(),
                value: "flow".into(),
                allowed: "diffusion for `DiffusionSft` (flow policies are cloned by `Sft`)".into(),
            });
        }
        let (actor, sample_obs, sample_chunks) =
            fitted_actor(&config.policy, config.relative_actions, config.min_std, env, demos)?;
        let model =
            seeded_init(&device, seed, |device| DiffusionPolicy::new(&config.policy, &config.diffusion, device));
        Ok(Self {
            ema: model.valid(),
            model,
            optim: Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x0D1F_F5F7),
            steps: 0,
            eval_seed: seed.wrapping_add(0x5EED),
            dagger_seed: seed.wrapping_add(0x00DA_66E5),
            sample_obs,
            sample_chunks,
            batch_obs: Vec::new(),
            batch_chunks: Vec::new(),
            batch_noise: Vec::new(),
            batch_t: Vec::new(),
            actor,
            device,
            config,
        })
    }

    /// Number of `(observation, chunk)` training samples.
    pub fn num_samples(&self) -> usize {
        self.sample_obs.len() / self.actor.policy.obs_dim
    }

    /// One DAgger round ([`Sft::dagger_round`](crate::Sft::dagger_round)'s, for the diffusion
    /// policy).
    pub fn dagger_round(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let (episodes, share) = (self.config.dagger_episodes, self.config.dagger_expert_share);
        let (obs, chunks) = dagger_chunk_samples(self, &self.actor, env, episodes, share, self.dagger_seed)?;
        self.dagger_seed = self.dagger_seed.wrapping_add(1);
        self.sample_obs.extend(obs);
        self.sample_chunks.extend(chunks);
        Ok(())
    }

    /// The learning rate of the next gradient step.
    pub fn learning_rate(&self) -> f64 {
        let c = &self.config;
        warmup_cosine(self.steps, c.warmup_steps, c.decay_steps, c.learning_rate, c.final_learning_rate)
    }

    /// One gradient step; returns the ε-prediction loss of the mini-batch.
    pub fn update(&mut self) -> Result<f64, AlgoError> {
        let (od, hd, bs) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.config.batch_size);
        let (n, t_max) = (self.num_samples(), self.config.diffusion.train_steps);
        self.batch_obs.clear();
        self.batch_chunks.clear();
        self.batch_t.clear();
        for _ in 0..bs {
            let i = self.rng.random_range(0..n);
            self.batch_obs.extend_from_slice(&self.sample_obs[i * od..(i + 1) * od]);
            self.batch_chunks.extend_from_slice(&self.sample_chunks[i * hd..(i + 1) * hd]);
            self.batch_t.push(self.rng.random_range(0..t_max));
        }
        self.batch_noise.resize(bs * hd, 0.0);
        fill_normal(&mut self.rng, &mut self.batch_noise);
        let d = &self.device;
        let loss = self.model.loss(
            to_tensor(&self.batch_obs, bs, od, d),
            to_tensor(&self.batch_chunks, bs, hd, d),
            to_tensor(&self.batch_noise, bs, hd, d),
            &self.batch_t,
        );
        let value = check_finite("diffusion SFT loss", to_host(loss.clone().inner())?[0] as f64, self.steps)?;
        let grads = GradientsParams::from_grads(loss.backward(), &self.model);
        let lr = self.learning_rate();
        let (model, norm) = self.optim.step(lr, self.model.clone(), &grads, Some(self.config.max_grad_norm));
        check_finite("diffusion SFT gradients", norm.unwrap_or(0.0), self.steps)?;
        self.model = model;
        self.ema = polyak_update(self.ema.clone(), &self.model, 1.0 - self.config.ema_decay);
        self.steps += 1;
        Ok(value)
    }

    /// The EMA policy (plain device) and the actor around it.
    pub fn policy(&self) -> (&DiffusionPolicy, &ChunkActor) {
        (&self.ema, &self.actor)
    }
}

impl Learner for DiffusionSft {
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
        let settings = DenoiseSettings::deterministic();
        act_diffusion(&self.actor, &self.ema, None, &settings, obs, actions, sampling, &self.device.clone().inner())
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
        ckpt.put("model", &ChunkModel::Diffusion)?;
        ckpt.put(DIFFUSION_KEY, &self.config.diffusion)?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put("steps", &self.steps)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("sft")?;
        let (od, ad) = (self.actor.policy.obs_dim, self.actor.policy.action_dim);
        let (actor, diffusion) = diffusion_actor_from_checkpoint(ckpt, od, ad)?;
        if actor.policy != self.actor.policy
            || actor.relative != self.actor.relative
            || diffusion != self.config.diffusion
        {
            return Err(AlgoError::Checkpoint(
                "the checkpoint's policy layout, diffusion settings or relative actions differ from the config's"
                    .into(),
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
