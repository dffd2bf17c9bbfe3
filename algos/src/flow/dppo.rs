//! DPPO: PPO over the denoising steps of a diffusion policy
//! (`irom-lab/dppo` `model/diffusion/diffusion_ppo.py`, `diffusion_vpg.py`,
//! `agent/finetune/train_ppo_diffusion_agent.py`), started from a diffusion `sft` run.
//!
//! Two-layer MDP. The outer layer is the chunk-level environment MDP of `ppo-flow`: one
//! environment step of this learner executes the `C` actions of a sampled chunk; its reward is
//! the sum of the `C` rewards and it is done if any of them ended the episode (see
//! [`chunk_rewards`]). The inner layer is the denoising chain: each of the **last `K′`**
//! denoising steps `x_k → x_{k+1}` of the DDIM sampler is a PPO sample with Gaussian policy
//! `N(μ_θ(x_k, k | s), max(σ_k, σ_min)²)`; the earlier `K − K′` steps run the frozen SFT network.
//!
//! Per iteration, in the reference's loop order:
//! 1. `chunk_steps` chunk steps are collected from every environment: draw `x_0 ~ N(0, I)` and
//!    the step noise (clipped to ±`noise_clip`), run the `K` DDIM steps with η = `eta` and the
//!    std floored at `min_sampling_std` (DPPO `min_sampling_denoising_std`); store the chain,
//!    the per-step log-probabilities of the last `K′` steps (`[K′]`: per element
//!    `log N(x_{k+1}; μ_k, max(σ_k, min_log_prob_std))` on the executed slice, clamped to
//!    `[log_prob_min, log_prob_max]`, averaged over `C·D`) and `V(s)` of the critic; execute
//!    the chunk; truncations add `γ·V(s_trunc)` to the reward;
//! 2. the value of the final observation is bootstrapped;
//! 3. GAE(γ, λ) over chunk steps (γ per chunk step), advantages standardized over the rollout;
//! 4. `update_epochs` passes over shuffled mini-batches of environment steps; each sample
//!    contributes its `K′` denoising steps: log-probabilities are recomputed from the stored
//!    chain (never resampling), the advantage of denoising step `i` (0 = noisiest fine-tuned
//!    step) is `A·γ_den^{K′−1−i}` and its surrogate is clipped at
//!    `ε_i = ε_base + (ε − ε_base)·(e^{3i/(K′−1)} − 1)/(e³ − 1)` ([`clip_coefficient`]); the
//!    critic regresses the GAE returns with `0.5·MSE`; updates stop early once the approximate
//!    KL of a mini-batch exceeds `target_kl`. During the first `critic_warmup_iterations`
//!    iterations only the critic learns.
//!
//! With `advantage = grpo` (RLinf's GRPO, as in `ppo-flow`), steps 1–3 become: reset the
//! environments so that groups of `group_size` share an initial state, run every episode to its
//! end, and give each episode's chunk steps its group-normalized return as advantage; there is
//! no critic, no value loss and no critic warmup. Not in DPPO, which uses GAE only.
//!
//! Deliberate differences from the reference: environments auto-reset (no loss mask), and
//! when an episode ends inside a chunk the chunk's remaining actions run in the next episode
//! with their rewards dropped (as in `ppo-flow`); advantages are standardized over the whole
//! rollout rather than per mini-batch; the whole chain is stored (`K + 1` entries, not only the
//! last `K′ + 1`); the predicted `x̂0` and the final action are not clipped to ±1 (actions are
//! standardized, not min-max normalized; the task's bounds clamp executed actions); learning
//! rates, γ, epochs and batch sizes are scaled to a small MLP and short episodes (see
//! [`DppoConfig`]); η defaults to 0 (see [`DppoConfig::eta`]); no BC regularizer, no learned η.

use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    Activation, DenoiseSettings, DiffusionConfig, DiffusionPolicy, ValueCritic, ValueCriticConfig, load_params,
    named_params, seeded_init,
};
use embodia_sim::VecEnv;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::check_finite;
use crate::flow::diffusion_sft::{DIFFUSION_KEY, act_diffusion, diffusion_actor_from_checkpoint};
use crate::flow::gae_collection::{ChunkSampler, collect_chunk_steps};
use crate::flow::grpo::{GrpoSettings, grpo_episodes};
use crate::flow::ppo_flow_config::{AdvantageEstimator, RewardSource};
use crate::flow::ppo_loss::gather_chains;
use crate::flow::{CHUNK_ACTOR_KEY, ChunkActor};
use crate::metrics::TimeSplit;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::storage::FailedStateReplay;
use crate::transfer::{to_host, to_tensor};
use crate::{
    Adam, AlgoError, Checkpoint, EpisodeStats, EvalMode, InitialNoise, Learner, MetricRow, check_num_envs, check_range,
};

/// DPPO hyperparameters. Defaults follow DPPO's robomimic state configs where they carry over
/// (K′ = 5 as in its DDIM setting, where K′ = K = 5; the SFT default here is K = 10, so the
/// first 5 steps stay the frozen SFT network's; γ_den 0.99, ε 0.01 with ε_base 1e-3, min std
/// 0.1, noise clip 3, log-prob clamp [−5, 2], λ 0.95, value loss 0.5·MSE with coefficient 0.5,
/// critic lr 1e-3, 2 critic-warmup iterations, target KL 1, 10 epochs); γ is per chunk step
/// (0.99 like `ppo-flow`: our episodes are 50–100 chunk steps, not DPPO's 300×8-step
/// horizons), the actor learning rate is `ppo-flow`'s 3e-5 (DPPO: 1e-5 for a larger network),
/// and the rollout is 32 environments × 25 chunk steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DppoConfig {
    /// Diffusion SFT run directory the policy starts from (`--init`); the runner requires it.
    pub init: String,
    /// Parallel environments. Default 32.
    pub num_envs: usize,
    /// Chunk steps collected per environment per iteration. Default 25.
    pub chunk_steps: usize,
    /// Passes over each rollout. Default 10.
    pub update_epochs: usize,
    /// Mini-batches (of environment steps, each with its `K′` denoising steps) per pass. Default 4.
    pub mini_batches: usize,
    /// Fine-tuned denoising steps `K′` (the last `K′` of the policy's `K` DDIM steps). Default 5.
    pub ft_steps: usize,
    /// DDIM η of the rollout sampler and of the means the policy acts with (1: DDPM-like
    /// variance). Default 0: the rollout's step means are those of the deterministic DDIM
    /// sampler the SFT policy is evaluated with, and exploration comes from the std floor
    /// `min_sampling_std` alone (DPPO fine-tunes DDIM with η = 1 and evaluates the η = 1 means
    /// without noise, which at `K = 5` are not the SFT policy's actions).
    pub eta: f64,
    /// Floor of the sampling std of every denoising step (`min_sampling_denoising_std`). Default 0.1.
    pub min_sampling_std: f64,
    /// Floor of the std in log-probabilities (`min_logprob_denoising_std`). Default 0.1.
    pub min_log_prob_std: f64,
    /// Clip of the standard-normal step noise, in stds (`randn_clip_value`). Default 3.
    pub noise_clip: f64,
    /// Lower clamp of per-element log-densities. Default −5.
    pub log_prob_min: f64,
    /// Upper clamp of per-element log-densities. Default 2.
    pub log_prob_max: f64,
    /// Learning rate of the diffusion policy. Default 3e-5.
    pub policy_lr: f64,
    /// Learning rate of the critic. Default 1e-3.
    pub value_lr: f64,
    /// Adam β₁. Default 0.9.
    pub beta1: f64,
    /// Adam β₂. Default 0.999.
    pub beta2: f64,
    /// Decoupled weight decay. Default 0.
    pub weight_decay: f64,
    /// Gradient-norm limit per network. Default 1.0.
    pub max_grad_norm: f64,
    /// Discount per chunk step (environment MDP). Default 0.99.
    pub gamma: f64,
    /// GAE λ. Default 0.95.
    pub lambda: f64,
    /// Discount over denoising steps `γ_den`: the advantage of fine-tuned step `i` is scaled by
    /// `γ_den^{K′−1−i}`. Default 0.99.
    pub denoising_gamma: f64,
    /// Surrogate clip `ε` of the last (cleanest) denoising step. Default 0.01.
    pub clip_ratio: f64,
    /// Surrogate clip `ε_base` of the noisiest fine-tuned step. Default 1e-3.
    pub clip_ratio_base: f64,
    /// Weight of the `0.5·MSE` value loss. Default 0.5.
    pub value_loss_coef: f64,
    /// Stop the iteration's updates once a mini-batch's approximate KL exceeds this. Default 1.
    pub target_kl: f64,
    /// Iterations at the start that update only the critic. Default 2.
    pub critic_warmup_iterations: u64,
    /// Multiplier of the chunk rewards. Default 1.
    pub reward_scale: f64,
    /// Hidden widths of the critic `V(s)` on standardized observations. Default [256, 256].
    pub critic_hidden: Vec<usize>,
    /// Reward of a primitive step (before `reward_scale`). Default task.
    pub reward: RewardSource,
    /// Advantage estimator: GAE with the critic (DPPO) or GRPO's group baseline (module docs).
    /// Default gae.
    pub advantage: AdvantageEstimator,
    /// GRPO: environments per group sharing an initial state; divides `num_envs`. Default 8.
    pub group_size: usize,
    /// GRPO: drop groups whose returns are all equal (no learning signal). Default true.
    pub filter_uniform_groups: bool,
    /// GRPO: every episode counts equally in the loss, not every chunk step
    /// (`ppo-flow`'s field of the same name). Default false.
    pub equal_episode_weights: bool,
}

impl Default for DppoConfig {
    fn default() -> Self {
        Self {
            init: String::new(),
            num_envs: 32,
            chunk_steps: 25,
            update_epochs: 10,
            mini_batches: 4,
            ft_steps: 5,
            eta: 0.0,
            min_sampling_std: 0.1,
            min_log_prob_std: 0.1,
            noise_clip: 3.0,
            log_prob_min: -5.0,
            log_prob_max: 2.0,
            policy_lr: 3e-5,
            value_lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            weight_decay: 0.0,
            max_grad_norm: 1.0,
            gamma: 0.99,
            lambda: 0.95,
            denoising_gamma: 0.99,
            clip_ratio: 0.01,
            clip_ratio_base: 1e-3,
            value_loss_coef: 0.5,
            target_kl: 1.0,
            critic_warmup_iterations: 2,
            reward_scale: 1.0,
            critic_hidden: vec![256, 256],
            reward: RewardSource::Task,
            advantage: AdvantageEstimator::Gae,
            group_size: 8,
            filter_uniform_groups: true,
            equal_episode_weights: false,
        }
    }
}

impl DppoConfig {
    /// Checks every value's range; errors name the field. `ft_steps ≤ K` is checked against
    /// the SFT policy in [`Dppo::new`].
    pub fn validate(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("chunk_steps", self.chunk_steps, self.chunk_steps > 0, "≥ 1")?;
        check_range("update_epochs", self.update_epochs, self.update_epochs > 0, "≥ 1")?;
        let batch = self.num_envs * self.chunk_steps;
        check_range(
            "mini_batches",
            self.mini_batches,
            self.mini_batches > 0 && self.mini_batches <= batch,
            "1 ≤ mini_batches ≤ num_envs·chunk_steps",
        )?;
        check_range("ft_steps", self.ft_steps, self.ft_steps > 0, "≥ 1 (and ≤ the policy's sampling steps)")?;
        check_range("eta", self.eta, (0.0..=1.0).contains(&self.eta), "0 ≤ eta ≤ 1")?;
        check_range("min_sampling_std", self.min_sampling_std, self.min_sampling_std > 0.0, "> 0")?;
        check_range("min_log_prob_std", self.min_log_prob_std, self.min_log_prob_std > 0.0, "> 0")?;
        check_range("noise_clip", self.noise_clip, self.noise_clip > 0.0, "> 0")?;
        check_range("log_prob_max", self.log_prob_max, self.log_prob_max > self.log_prob_min, "> log_prob_min")?;
        check_range("policy_lr", self.policy_lr, self.policy_lr >= 0.0, "≥ 0")?;
        check_range("value_lr", self.value_lr, self.value_lr >= 0.0, "≥ 0")?;
        check_range("beta1", self.beta1, (0.0..1.0).contains(&self.beta1), "0 ≤ beta1 < 1")?;
        check_range("beta2", self.beta2, (0.0..1.0).contains(&self.beta2), "0 ≤ beta2 < 1")?;
        check_range("weight_decay", self.weight_decay, self.weight_decay >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("gamma", self.gamma, (0.0..=1.0).contains(&self.gamma), "0 ≤ gamma ≤ 1")?;
        check_range("lambda", self.lambda, (0.0..=1.0).contains(&self.lambda), "0 ≤ lambda ≤ 1")?;
        check_range(
            "denoising_gamma",
            self.denoising_gamma,
            (0.0..=1.0).contains(&self.denoising_gamma),
            "0 ≤ denoising_gamma ≤ 1",
        )?;
        check_range("clip_ratio", self.clip_ratio, self.clip_ratio > 0.0, "> 0")?;
        check_range(
            "clip_ratio_base",
            self.clip_ratio_base,
            self.clip_ratio_base > 0.0 && self.clip_ratio_base <= self.clip_ratio,
            "0 < clip_ratio_base ≤ clip_ratio",
        )?;
        check_range("value_loss_coef", self.value_loss_coef, self.value_loss_coef >= 0.0, "≥ 0")?;
        check_range("target_kl", self.target_kl, self.target_kl > 0.0, "> 0")?;
        check_range("reward_scale", self.reward_scale, self.reward_scale > 0.0, "> 0")?;
        if self.advantage == AdvantageEstimator::Grpo {
            check_range(
                "group_size",
                self.group_size,
                self.group_size >= 2 && self.num_envs.is_multiple_of(self.group_size),
                "≥ 2 and dividing num_envs",
            )?;
        }
        check_range(
            "critic_hidden",
            format!("{:?}", self.critic_hidden),
            !self.critic_hidden.is_empty() && !self.critic_hidden.contains(&0),
            "at least one positive width",
        )
    }

    fn grpo(&self) -> bool {
        self.advantage == AdvantageEstimator::Grpo
    }

    /// The GRPO fields, for [`grpo_episodes`] (no failed-state replay).
    fn grpo_settings(&self) -> GrpoSettings {
        GrpoSettings {
            group_size: self.group_size,
            filter_uniform_groups: self.filter_uniform_groups,
            equal_episode_weights: self.equal_episode_weights,
            replay_failed_states: 0.0,
            reward: self.reward,
            success_bonus: 0.0,
            reward_scale: self.reward_scale,
            failure_progress: 0.0,
            divide_by_group_std: true,
        }
    }

    /// The sampler settings of rollouts and recomputation.
    fn denoise_settings(&self) -> DenoiseSettings {
        DenoiseSettings {
            eta: self.eta,
            min_std: self.min_sampling_std,
            min_log_prob_std: self.min_log_prob_std,
            log_prob_clamp: (self.log_prob_min, self.log_prob_max),
            ft_steps: self.ft_steps,
        }
    }
}

/// DPPO's clip coefficient of fine-tuned denoising step `i` of `ft_steps` (0 = noisiest):
/// `ε_i = ε_base + (ε − ε_base)·(e^{3i/(K′−1)} − 1)/(e³ − 1)`, so `ε_0 = ε_base` and
/// `ε_{K′−1} = ε`; with `K′ = 1` the single step gets `ε`.
pub fn clip_coefficient(i: usize, ft_steps: usize, base: f64, clip: f64) -> f64 {
    let t = if ft_steps > 1 { i as f64 / (ft_steps - 1) as f64 } else { 1.0 };
    base + (clip - base) * ((3.0 * t).exp() - 1.0) / (3.0f64.exp() - 1.0)
}

/// Advantage weight `γ_den^{K′−1−i}` of fine-tuned denoising step `i` (the last step gets 1).
pub fn denoising_discount(i: usize, ft_steps: usize, denoising_gamma: f64) -> f64 {
    denoising_gamma.powi((ft_steps - 1 - i.min(ft_steps - 1)) as i32)
}

/// Rollout storage, time-major over chunk steps.
#[derive(Debug, Default)]
struct Rollout {
    /// `[steps, n, obs_dim]`, standardized.
    obs: Vec<f32>,
    /// `[steps, K + 1, n, H·D]`.
    chains: Vec<f32>,
    /// `[steps, n, K′]`.
    log_probs: Vec<f32>,
    /// `[steps, n]`.
    values: Vec<f32>,
    /// `[steps, n]`; GAE only.
    returns: Vec<f32>,
    /// `[steps, n]`.
    advantages: Vec<f32>,
    /// Rows (`step·n + env`) that enter the update: all with GAE; with GRPO those sampled
    /// while the environment's episode ran, in groups not filtered out.
    used: Vec<usize>,
}

/// Losses of a mini-batch, or their means over an iteration's mini-batches.
#[derive(Debug, Clone, Copy, Default)]
struct UpdateStats {
    policy_loss: f64,
    value_loss: f64,
    kl: f64,
}

/// DPPO for a diffusion policy started from a diffusion SFT checkpoint.
pub struct Dppo {
    config: DppoConfig,
    device: Device,
    actor: ChunkActor,
    /// The fine-tuned network (last `K′` steps).
    model: DiffusionPolicy,
    /// The SFT network, frozen (plain device): the first `K − K′` steps.
    base: DiffusionPolicy,
    critic: ValueCritic,
    /// The SFT run's diffusion process and sampler.
    diffusion: DiffusionConfig,
    policy_optim: Adam,
    value_optim: Adam,
    rng: ChaCha8Rng,
    env_steps: u64,
    iterations: u64,
    episodes: EpisodeStats,
    rollout: Rollout,
    last_split: TimeSplit,
    /// GRPO: share of the last collection's groups with differing returns.
    mixed_groups: Option<f64>,
}

impl Dppo {
    /// A learner whose policy and normalization are those of the diffusion SFT checkpoint
    /// `init` (its EMA weights) and a fresh critic; `device` must have autodiff enabled.
    pub fn new(
        config: DppoConfig,
        env: &dyn VecEnv,
        init: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        config.reward.check_task(env)?;
        let algo: String = init.get("algo")?;
        if algo != "sft" {
            return Err(AlgoError::Checkpoint(format!(
                "`algo.init` must be a diffusion sft run; {} is from `{algo}`",
                config.init
            )));
        }
        let (od, ad) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim());
        let (actor, diffusion) = diffusion_actor_from_checkpoint(init, od, ad)?;
        check_range(
            "ft_steps",
            config.ft_steps,
            config.ft_steps <= diffusion.sampling_steps,
            &format!("1 ≤ ft_steps ≤ the SFT policy's sampling steps ({})", diffusion.sampling_steps),
        )?;
        let model = load_params(DiffusionPolicy::new(&actor.policy, &diffusion, &device), &init.params("ema"))?;
        let base = model.valid();
        let critic_config =
            ValueCriticConfig { obs_dim: od, hidden: config.critic_hidden.clone(), activation: Activation::Elu };
        let critic = seeded_init(&device, seed ^ 0xC817, |device| critic_config.init(device));
        let optim = || Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay);
        Ok(Self {
            policy_optim: optim(),
            value_optim: optim(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xD770_D770),
            env_steps: 0,
            iterations: 0,
            episodes: EpisodeStats::default(),
            rollout: Rollout::default(),
            last_split: TimeSplit::default(),
            mixed_groups: None,
            actor,
            model,
            base,
            critic,
            diffusion,
            device,
            config,
        })
    }

    /// Time split of the last iteration (simulation, chunk sampling and values, update).
    pub fn last_time_split(&self) -> TimeSplit {
        self.last_split
    }

    /// Critic values `[n]` of raw observations `[n, obs_dim]`.
    fn values(&self, critic: &ValueCritic, raw_obs: &[f32]) -> Result<Vec<f32>, AlgoError> {
        let (od, n) = (self.actor.policy.obs_dim, raw_obs.len() / self.actor.policy.obs_dim);
        let obs = to_tensor(&self.actor.normalized_obs(raw_obs), n, od, &self.device.clone().inner());
        to_host(critic.forward(obs))
    }

    /// Fills `noise` (`[K + 1, n, H·D]`) with `x_0 ~ N(0, I)` and step noise clipped to ±`noise_clip`.
    fn draw_noise(&mut self, noise: &mut [f32], n: usize) {
        fill_normal(&mut self.rng, noise);
        let clip = self.config.noise_clip as f32;
        let first = n * self.actor.policy.chunk_width();
        for z in &mut noise[first..] {
            *z = z.clamp(-clip, clip);
        }
    }

    fn clear_rollout(&mut self) {
        let r = &mut self.rollout;
        let buffers = [&mut r.obs, &mut r.chains, &mut r.log_probs, &mut r.values];
        for buf in buffers.into_iter().chain([&mut r.advantages, &mut r.returns]) {
            buf.clear();
        }
        r.used.clear();
    }

    /// Samples one chunk for every environment from the raw observations `raw_obs`
    /// (`[n, obs_dim]`), stores the standardized observation, the chain, the log-probs of the
    /// fine-tuned steps and, given `critic`, `V(s)`; writes the chunk in environment units to
    /// `env_actions` (`[n, C, D]`).
    fn sample_chunk(
        &mut self,
        model: &DiffusionPolicy,
        critic: Option<&ValueCritic>,
        raw_obs: &[f32],
        env_actions: &mut [f32],
    ) -> Result<(), AlgoError> {
        let (od, hd, k) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.base.sampling_steps());
        let n = raw_obs.len() / od;
        let plain = self.device.clone().inner();
        let obs = self.actor.normalized_obs(raw_obs);
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        self.draw_noise(&mut noise, n);
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), &plain);
        let obs_t = to_tensor(&obs, n, od, &plain);
        let sample = model.sample(obs_t.clone(), noise, &self.config.denoise_settings(), Some(&self.base));
        self.actor.env_actions(raw_obs, &to_host(sample.actions)?, env_actions);
        let r = &mut self.rollout;
        r.obs.extend_from_slice(&obs);
        r.chains.extend(to_host(sample.chains)?);
        r.log_probs.extend(to_host(sample.log_prob)?);
        if let Some(critic) = critic {
            self.rollout.values.extend(to_host(critic.forward(obs_t))?);
        }
        Ok(())
    }

    /// Collects `chunk_steps` chunk steps from every environment and computes GAE advantages.
    fn collect(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let p = &self.actor.policy;
        let layout = (p.obs_dim, p.action_dim, p.chunk);
        let settings = self.config.gae_settings();
        self.clear_rollout();
        let model = self.model.valid();
        let critic = self.critic.valid();
        let mut sampler = DiffusionSampler { learner: self, model: &model, critic: &critic };
        let steps = collect_chunk_steps(env, &settings, layout, &mut sampler)?;
        self.env_steps += steps.env_steps;
        let start = Instant::now();
        let r = &mut self.rollout;
        (r.advantages, r.returns) = steps.advantages(&r.values, n, &settings);
        r.used.extend(0..r.values.len());
        self.last_split = steps.split;
        self.last_split.update += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// GRPO collection (module docs): every episode of groups sharing an initial state runs to
    /// its end; its chunk steps get its group-normalized return as advantage.
    fn collect_grpo(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let layout = (self.actor.policy.chunk, self.actor.policy.action_dim);
        let model = self.model.valid();
        self.clear_rollout();
        let seed = self.rng.random();
        let settings = self.config.grpo_settings();
        let episodes =
            grpo_episodes(env, &settings, &mut FailedStateReplay::new(0), seed, layout, |env, _, actions| {
                let obs = env.buffers().obs.clone();
                self.sample_chunk(&model, None, &obs, actions)
            })?;
        episodes.push_ended(&mut self.episodes);
        self.env_steps += episodes.env_steps;
        let r = &mut self.rollout;
        r.advantages = episodes.row_advantages();
        r.used = episodes.used;
        self.last_split = episodes.split;
        self.mixed_groups = Some(episodes.mixed_groups);
        Ok(())
    }

    /// Losses of one mini-batch of environment steps (`indices` into `[steps·n]`), each with its
    /// `K′` denoising steps, with backward pass and optimizer steps.
    fn update_minibatch(&mut self, indices: &[usize], n: usize) -> Result<UpdateStats, AlgoError> {
        let p = &self.actor.policy;
        let (od, hd, k) = (p.obs_dim, p.chunk_width(), self.base.sampling_steps());
        let ft = self.config.ft_steps;
        let d = self.device.clone();
        let cfg = &self.config;
        let r = &self.rollout;
        let m = indices.len();
        let mut obs = Vec::with_capacity(m * od);
        let (mut old_lp, mut adv, mut ret) = (Vec::with_capacity(m * ft), Vec::with_capacity(m * ft), Vec::new());
        let mut clip_lo = Vec::with_capacity(m * ft);
        let mut clip_hi = Vec::with_capacity(m * ft);
        for &idx in indices {
            obs.extend_from_slice(&r.obs[idx * od..(idx + 1) * od]);
            old_lp.extend_from_slice(&r.log_probs[idx * ft..(idx + 1) * ft]);
            for i in 0..ft {
                adv.push(r.advantages[idx] * denoising_discount(i, ft, cfg.denoising_gamma) as f32);
                let eps = clip_coefficient(i, ft, cfg.clip_ratio_base, cfg.clip_ratio) as f32;
                clip_lo.push(1.0 - eps);
                clip_hi.push(1.0 + eps);
            }
            ret.push(r.returns.get(idx).copied().unwrap_or(0.0));
        }
        let obs = to_tensor(&obs, m, od, &d);
        let chains = gather_chains(&r.chains, indices, n, k, hd);
        let chains = Tensor::<3>::from_data(TensorData::new(chains, [k + 1, m, hd]), &d);
        let new_lp = self.model.evaluate_chain(obs.clone(), chains, &cfg.denoise_settings());
        let log_ratio = new_lp - to_tensor(&old_lp, m, ft, &d);
        let ratio = log_ratio.clone().clamp(-20.0, 20.0).exp();
        let adv = to_tensor(&adv, m, ft, &d);
        let clipped = ratio.clone().max_pair(to_tensor(&clip_lo, m, ft, &d)).min_pair(to_tensor(&clip_hi, m, ft, &d));
        let policy_loss = (ratio.clone() * adv.clone()).neg().max_pair((clipped * adv).neg()).mean();
        let approx_kl = ((ratio - 1.0) - log_ratio).mean();
        // GRPO has no critic to train.
        let gae = !cfg.grpo();
        let value_loss = match gae {
            true => (self.critic.forward(obs) - to_tensor(&ret, m, 1, &d)).square().mean().mul_scalar(0.5),
            false => Tensor::zeros([1], &d),
        };
        let warmup = gae && self.iterations < cfg.critic_warmup_iterations;
        let loss = match (warmup, gae) {
            (true, _) => value_loss.clone().mul_scalar(cfg.value_loss_coef),
            (false, true) => policy_loss.clone() + value_loss.clone().mul_scalar(cfg.value_loss_coef),
            (false, false) => policy_loss.clone(),
        };
        let host = to_host(Tensor::cat(vec![policy_loss.inner(), value_loss.inner(), approx_kl.inner()], 0))?;
        let stats = UpdateStats { policy_loss: host[0] as f64, value_loss: host[1] as f64, kl: host[2] as f64 };
        check_finite("DPPO loss", stats.policy_loss + stats.value_loss, self.env_steps)?;
        let mut grads = loss.backward();
        let value_grads = GradientsParams::from_module(&mut grads, &self.critic);
        let clip = Some(self.config.max_grad_norm);
        if !warmup {
            let policy_grads = GradientsParams::from_grads(grads, &self.model);
            let (model, norm) = self.policy_optim.step(self.config.policy_lr, self.model.clone(), &policy_grads, clip);
            check_finite("DPPO policy gradients", norm.unwrap_or(0.0), self.env_steps)?;
            self.model = model;
        }
        if gae {
            let (critic, norm) = self.value_optim.step(self.config.value_lr, self.critic.clone(), &value_grads, clip);
            check_finite("DPPO critic gradients", norm.unwrap_or(0.0), self.env_steps)?;
            self.critic = critic;
        }
        Ok(stats)
    }

    fn update(&mut self, n: usize) -> Result<UpdateStats, AlgoError> {
        let mut order = self.rollout.used.clone();
        if order.is_empty() {
            // Every GRPO group was uniform: nothing to learn from this iteration.
            return Ok(UpdateStats::default());
        }
        let size = order.len().div_ceil(self.config.mini_batches);
        let mut sums = UpdateStats::default();
        let mut count = 0.0;
        'epochs: for _ in 0..self.config.update_epochs {
            order.shuffle(&mut self.rng);
            for batch in order.chunks(size) {
                let stats = self.update_minibatch(batch, n)?;
                sums.policy_loss += stats.policy_loss;
                sums.value_loss += stats.value_loss;
                sums.kl += stats.kl;
                count += 1.0;
                if stats.kl > self.config.target_kl {
                    break 'epochs;
                }
            }
        }
        Ok(UpdateStats {
            policy_loss: sums.policy_loss / count,
            value_loss: sums.value_loss / count,
            kl: sums.kl / count,
        })
    }
}

/// A [`Dppo`] with the inference copies of its networks, as a GAE collection samples it.
struct DiffusionSampler<'a> {
    learner: &'a mut Dppo,
    model: &'a DiffusionPolicy,
    critic: &'a ValueCritic,
}

impl ChunkSampler for DiffusionSampler<'_> {
    fn sample_chunk(&mut self, obs: &[f32], env_actions: &mut [f32]) -> Result<(), AlgoError> {
        self.learner.sample_chunk(self.model, Some(self.critic), obs, env_actions)
    }

    fn values(&mut self, obs: &[f32]) -> Result<Vec<f32>, AlgoError> {
        self.learner.values(self.critic, obs)
    }

    fn episodes(&mut self) -> &mut EpisodeStats {
        &mut self.learner.episodes
    }
}

impl Learner for Dppo {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(self.actor.initial_noise)
    }

    fn name(&self) -> &'static str {
        "dppo"
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        match self.config.grpo() {
            true => self.collect_grpo(env)?,
            false => self.collect(env)?,
        }
        let start = Instant::now();
        let stats = self.update(env.num_envs())?;
        self.last_split.update += start.elapsed().as_secs_f64();
        self.iterations += 1;
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.drain_into(&mut row, env.info().has_success);
        row.policy_loss = Some(stats.policy_loss);
        row.value_loss = (!self.config.grpo()).then_some(stats.value_loss);
        row.kl = Some(stats.kl);
        row.mixed_groups = self.mixed_groups;
        row.learning_rate = Some(self.config.policy_lr);
        Ok(row)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        act_diffusion(
            &self.actor,
            &self.model.valid(),
            Some(&self.base),
            &self.config.denoise_settings(),
            obs,
            actions,
            sampling,
            &self.device.clone().inner(),
        )
    }

    fn chunk_len(&self) -> usize {
        self.actor.policy.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        ckpt.insert_params("base", named_params(&self.base));
        ckpt.insert_params("critic", named_params(&self.critic));
        ckpt.put_optim("policy", &self.policy_optim)?;
        ckpt.put_optim("value", &self.value_optim)?;
        ckpt.put("algo", &self.name())?;
        ckpt.put("model", &crate::ChunkModel::Diffusion)?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put(DIFFUSION_KEY, &self.diffusion)?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("iterations", &self.iterations)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo(self.name())?;
        let (od, ad) = (self.actor.policy.obs_dim, self.actor.policy.action_dim);
        let (actor, _) = diffusion_actor_from_checkpoint(ckpt, od, ad)?;
        self.actor = actor;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        self.base = load_params(self.base.clone(), &ckpt.params("base"))?;
        self.critic = load_params(self.critic.clone(), &ckpt.params("critic"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("policy", &mut self.policy_optim, &self.model, &plain)?;
        ckpt.restore_optim("value", &mut self.value_optim, &self.critic, &plain)?;
        self.env_steps = ckpt.get("env_steps")?;
        self.iterations = ckpt.get("iterations")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec §5: the DPPO ε_i endpoints are 1e-3 and 0.01.
    #[test]
    fn clip_schedule_endpoints_and_growth() {
        let eps: Vec<f64> = (0..10).map(|i| clip_coefficient(i, 10, 1e-3, 0.01)).collect();
        assert!((eps[0] - 1e-3).abs() < 1e-15, "{eps:?}");
        assert!((eps[9] - 0.01).abs() < 1e-15, "{eps:?}");
        assert!(eps.windows(2).all(|w| w[1] > w[0]), "{eps:?}");
        // Exponential growth: the midpoint (i/(K′−1) = 0.5 at K′ = 3) is (e^1.5 − 1)/(e³ − 1) of the way.
        let mid = clip_coefficient(1, 3, 1e-3, 0.01);
        let want = 1e-3 + 9e-3 * (1.5f64.exp() - 1.0) / (3.0f64.exp() - 1.0);
        assert!((mid - want).abs() < 1e-15 && mid < 0.0055, "{mid}");
        assert!((clip_coefficient(0, 1, 1e-3, 0.01) - 0.01).abs() < 1e-15);
    }

    #[test]
    fn denoising_discount_gives_the_last_step_weight_one() {
        let w: Vec<f64> = (0..3).map(|i| denoising_discount(i, 3, 0.9)).collect();
        assert_eq!(w, vec![0.81, 0.9, 1.0]);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = DppoConfig { clip_ratio_base: 0.1, ..Default::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("algo.clip_ratio_base"), "{e}");
        let e = DppoConfig { ft_steps: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("algo.ft_steps"), "{e}");
    }
}
