//! Proximal Policy Optimization as in RSL-RL, in one place.
//!
//! Per iteration: collect `steps_per_env` steps from every environment with the stochastic
//! policy (bootstrapping truncated episodes from their final observation), compute GAE(γ, λ)
//! advantages, then for `epochs` passes over shuffled mini-batches minimize the clipped
//! surrogate + clipped value loss − entropy bonus, adapting the learning rate so the KL between
//! successive policies stays near `desired_kl`.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use embodia_policies::{
    Activation, GaussianActor, GaussianActorConfig, LOG_SQRT_2PI, ValueCritic, ValueCriticConfig, gaussian_entropy,
    gaussian_kl, gaussian_log_prob, load_params, named_params, seeded_init,
};
use embodia_sim::VecEnv;
use embodia_sim::tensor::TensorVecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

mod on_device;

use crate::check_finite;
use crate::data_parallel::{self, MiniBatchRows, fill_normal_rows, mean_std, sum_over_ranks};
use crate::rng::{rng_from_state, rng_state};
use crate::transfer::{to_host, to_tensor};
use crate::{
    Adam, AlgoError, Checkpoint, EpisodeStats, Learner, MetricRow, RunningNormalizer, check_num_envs, check_range,
    compute_gae,
};

/// How the learning rate evolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LrSchedule {
    /// Constant `learning_rate`.
    Fixed,
    /// RSL-RL's KL-adaptive rule: divide by 1.5 when KL > 2·desired, multiply by 1.5 when
    /// KL < desired/2, within [1e-5, 1e-2].
    Adaptive,
}

/// PPO hyperparameters (RSL-RL names where they exist). Defaults are RSL-RL's, except the
/// network size, which suits classic control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PpoConfig {
    /// Parallel environments. Default 64.
    pub num_envs: usize,
    /// Steps collected per environment per iteration. Default 64.
    pub steps_per_env: usize,
    /// Optimization passes over each rollout. Default 5.
    pub epochs: usize,
    /// Mini-batches per epoch. Default 4.
    pub mini_batches: usize,
    /// Initial Adam learning rate. Default 1e-3.
    pub learning_rate: f64,
    /// Learning-rate schedule. Default adaptive.
    pub schedule: LrSchedule,
    /// Target KL for the adaptive schedule. Default 0.01.
    pub desired_kl: f64,
    /// Discount factor γ. Default 0.99.
    pub gamma: f64,
    /// GAE λ. Default 0.95.
    pub lambda: f64,
    /// Surrogate and value clipping range ε. Default 0.2.
    pub clip_param: f64,
    /// Clip the value loss around the rollout's values. Default true.
    pub clip_value_loss: bool,
    /// Weight of the value loss. Default 1.0.
    pub value_loss_coef: f64,
    /// Weight of the entropy bonus. Default 0.0.
    pub entropy_coef: f64,
    /// Global gradient-norm limit. Default 1.0.
    pub max_grad_norm: f64,
    /// Initial action standard deviation, in action units. Default 1.0.
    pub init_noise_std: f64,
    /// Hidden widths of actor and critic. Default [64, 64].
    pub hidden: Vec<usize>,
    /// Hidden activation. Default elu.
    pub activation: Activation,
    /// Normalize observations with running statistics (saved in checkpoints). Default true.
    pub normalize_obs: bool,
    /// 2: the training environments are two groups of `num_envs / 2`, one simulating while the
    /// other's actions are sampled ([`embodia_sim::EnvGroups`]; the runner builds them). 1: one
    /// batch. The two groups run different episodes from one batch of the same seed, and the
    /// observation statistics are updated per group. Default 1.
    pub env_groups: usize,
    /// Train on the task's tensor version on the compute device (pendulum, cartpole-*,
    /// quadrotor-*) and keep the whole rollout there: stepping, GAE, advantage normalization and
    /// mini-batches without a per-step round trip through the host ([`Learner::iterate_tensor`];
    /// the runner builds the batch). Needs `env_groups = 1` and the observation critic.
    /// Default false.
    pub device_rollouts: bool,
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            num_envs: 64,
            steps_per_env: 64,
            epochs: 5,
            mini_batches: 4,
            learning_rate: 1e-3,
            schedule: LrSchedule::Adaptive,
            desired_kl: 0.01,
            gamma: 0.99,
            lambda: 0.95,
            clip_param: 0.2,
            clip_value_loss: true,
            value_loss_coef: 1.0,
            entropy_coef: 0.0,
            max_grad_norm: 1.0,
            init_noise_std: 1.0,
            hidden: vec![64, 64],
            activation: Activation::Elu,
            normalize_obs: true,
            env_groups: 1,
            device_rollouts: false,
        }
    }
}

impl PpoConfig {
    /// Checks every value's range; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("steps_per_env", self.steps_per_env, self.steps_per_env > 0, "≥ 1")?;
        let groups = self.env_groups;
        let allowed = "1, or 2 with an even num_envs";
        check_range("env_groups", groups, groups == 1 || (groups == 2 && self.num_envs.is_multiple_of(2)), allowed)?;
        check_range(
            "device_rollouts",
            self.device_rollouts,
            !self.device_rollouts || self.env_groups == 1,
            "false unless env_groups = 1 (a device batch is one batch)",
        )?;
        check_range("epochs", self.epochs, self.epochs > 0, "≥ 1")?;
        let batch = self.num_envs * self.steps_per_env;
        check_range(
            "mini_batches",
            self.mini_batches,
            self.mini_batches > 0 && self.mini_batches <= batch,
            "1 ≤ mini_batches ≤ num_envs·steps_per_env",
        )?;
        check_range("learning_rate", self.learning_rate, self.learning_rate > 0.0, "> 0")?;
        check_range("desired_kl", self.desired_kl, self.desired_kl > 0.0, "> 0")?;
        check_range("gamma", self.gamma, (0.0..=1.0).contains(&self.gamma), "0 ≤ gamma ≤ 1")?;
        check_range("lambda", self.lambda, (0.0..=1.0).contains(&self.lambda), "0 ≤ lambda ≤ 1")?;
        check_range("clip_param", self.clip_param, self.clip_param > 0.0, "> 0")?;
        check_range("value_loss_coef", self.value_loss_coef, self.value_loss_coef >= 0.0, "≥ 0")?;
        check_range("entropy_coef", self.entropy_coef, self.entropy_coef >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("init_noise_std", self.init_noise_std, self.init_noise_std > 0.0, "> 0")?;
        check_range("hidden", format!("{:?}", self.hidden), self.hidden.iter().all(|&w| w > 0), "positive widths")
    }
}

/// Actor and critic, optimized together.
#[derive(Module, Debug)]
struct ActorCritic {
    actor: GaussianActor,
    critic: ValueCritic,
}

/// Rollout storage, time-major `[steps, num_envs, dim]`.
#[derive(Debug, Default)]
struct Rollout {
    obs: Vec<f32>,
    /// Normalized critic observations, `[steps, num_envs, critic_dim]`; empty when the critic
    /// reads `obs`.
    critic_obs: Vec<f32>,
    actions: Vec<f32>,
    log_probs: Vec<f32>,
    rewards: Vec<f32>,
    dones: Vec<f32>,
    values: Vec<f32>,
    means: Vec<f32>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
}

/// One mini-batch of a rollout on the learner's device; `[batch, dim]` each.
struct MiniBatch {
    /// Normalized policy observations.
    obs: Tensor<2>,
    /// Normalized critic observations (asymmetric actor-critic), else `None`.
    critic_obs: Option<Tensor<2>>,
    /// Unclamped Gaussian samples.
    actions: Tensor<2>,
    /// The rollout policy's means.
    old_mean: Tensor<2>,
    /// `[batch, 1]`.
    old_log_prob: Tensor<2>,
    /// Normalized advantages, `[batch, 1]`.
    advantages: Tensor<2>,
    /// `[batch, 1]`.
    returns: Tensor<2>,
    /// `[batch, 1]`.
    old_values: Tensor<2>,
}

/// Sums of the mini-batch statistics of one update, averaged into the metrics row.
#[derive(Debug, Default)]
struct UpdateStats {
    surrogate: f64,
    value_loss: f64,
    entropy: f64,
    kl: f64,
    count: f64,
}

impl UpdateStats {
    /// Adds one mini-batch's [surrogate, value loss, entropy] and KL.
    fn add(&mut self, losses: [f32; 3], kl: f64) {
        self.surrogate += losses[0] as f64;
        self.value_loss += losses[1] as f64;
        self.entropy += losses[2] as f64;
        self.kl += kl;
        self.count += 1.0;
    }
}

/// A PPO learner for one task.
pub struct Ppo {
    config: PpoConfig,
    device: Device,
    obs_dim: usize,
    /// Input size of the critic: the task's critic observation, or `obs_dim`.
    critic_dim: usize,
    action_dim: usize,
    action_low: Vec<f32>,
    action_high: Vec<f32>,
    model: ActorCritic,
    optim: Adam,
    learning_rate: f64,
    normalizer: RunningNormalizer,
    /// Normalizer of the critic observation (asymmetric actor-critic only).
    critic_normalizer: Option<RunningNormalizer>,
    rng: ChaCha8Rng,
    env_steps: u64,
    episodes: EpisodeStats,
    rollout: Rollout,
    // Reused host scratch buffers.
    obs: Vec<f32>,
    critic_obs: Vec<f32>,
    noise: Vec<f32>,
    env_actions: Vec<f32>,
    /// The whole batch's noise in a data-parallel run ([`fill_normal_rows`]).
    batch_noise: Vec<f32>,
    /// The normalizer's sums over the ranks ([`RunningNormalizer::update_over_ranks`]).
    moments: Vec<f64>,
}

impl Ppo {
    /// A fresh learner for `env`'s spaces; `device` must have autodiff enabled.
    pub fn new(config: PpoConfig, env: &dyn VecEnv, device: Device, seed: u64) -> Result<Self, AlgoError> {
        config.validate()?;
        let obs_dim = env.obs_spec().vector.dim();
        let bounds = &env.action_spec().bounds;
        let action_dim = bounds.dim();
        let actor = GaussianActorConfig {
            obs_dim,
            action_dim,
            hidden: config.hidden.clone(),
            activation: config.activation,
            init_std: config.init_noise_std,
        };
        // Asymmetric actor-critic: a task with a privileged critic observation feeds it to the
        // value network only; the policy never sees it.
        let critic_spec = env.obs_spec().critic.as_ref();
        let critic_dim = critic_spec.map_or(obs_dim, |c| c.dim());
        let critic =
            ValueCriticConfig { obs_dim: critic_dim, hidden: config.hidden.clone(), activation: config.activation };
        let model =
            seeded_init(&device, seed, |device| ActorCritic { actor: actor.init(device), critic: critic.init(device) });
        let n = env.num_envs();
        Ok(Self {
            learning_rate: config.learning_rate,
            normalizer: RunningNormalizer::new(obs_dim, 10.0),
            critic_normalizer: critic_spec.map(|c| RunningNormalizer::new(c.dim(), 10.0)),
            critic_obs: Vec::new(),
            critic_dim,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x0BB0_0BB0),
            env_steps: 0,
            episodes: EpisodeStats::default(),
            rollout: Rollout::default(),
            obs: vec![0.0; n * obs_dim],
            noise: vec![0.0; n * action_dim],
            env_actions: vec![0.0; n * action_dim],
            batch_noise: Vec::new(),
            moments: Vec::new(),
            action_low: bounds.low.clone(),
            action_high: bounds.high.clone(),
            obs_dim,
            action_dim,
            model,
            optim: Adam::default(),
            device,
            config,
        })
    }

    /// Copies raw observations into `self.obs`, normalized if configured.
    fn normalized(&mut self, raw: &[f32]) {
        self.obs.resize(raw.len(), 0.0);
        self.obs.copy_from_slice(raw);
        if self.config.normalize_obs {
            self.normalizer.normalize(&mut self.obs);
        }
    }

    /// Copies the raw critic observations into `self.critic_obs`, normalized if configured
    /// (asymmetric actor-critic only).
    fn critic_normalized(&mut self, raw: &[f32]) {
        self.critic_obs.clear();
        self.critic_obs.extend_from_slice(raw);
        if let Some(norm) = self.critic_normalizer.as_ref().filter(|_| self.config.normalize_obs) {
            norm.normalize(&mut self.critic_obs);
        }
    }

    /// Values `[n]` of the critic input: `self.critic_obs` for asymmetric tasks, else the
    /// normalized policy observations in `self.obs`.
    fn values(&self, model: &ActorCritic) -> Result<Vec<f32>, AlgoError> {
        let input = if self.critic_normalizer.is_some() { &self.critic_obs } else { &self.obs };
        let n = input.len() / self.critic_dim;
        to_host(model.critic.forward(to_tensor(input, n, self.critic_dim, &self.device.clone().inner())))
    }

    /// Collects one rollout of `steps_per_env` steps from every environment: one batch, or two
    /// groups whose simulation overlaps the sampling of the other's actions
    /// ([`Ppo::collect_pipelined`]).
    fn collect(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let model = self.model.valid();
        let log_std = to_host(model.actor.log_std())?;
        self.clear_rollout();
        let mut env_actions = std::mem::take(&mut self.env_actions);
        let collected = match env.groups_mut().filter(|groups| groups.num_groups() == 2) {
            Some(groups) => self.collect_pipelined(groups, &model, &log_std, &mut env_actions),
            None => (0..self.config.steps_per_env).try_for_each(|_| {
                let b = env.buffers();
                self.act_rows(&model, &log_std, &b.obs, &b.critic_obs, &mut env_actions)?;
                env.step(&env_actions)?;
                self.record_rows(&model, env.buffers())
            }),
        };
        self.env_actions = env_actions;
        collected?;
        self.finish_rollout(&model, env.buffers())
    }

    /// [`Ppo::collect`] over two groups A and B (`env_actions` holds both groups' actions,
    /// A's then B's): A's actions are sampled, then A steps while B's are sampled, then B steps
    /// while A's step is recorded and its next actions sampled, and so on. The rollout rows come
    /// out in the batch's order (A's environments, then B's, at every step), and the result is
    /// that of the same calls without overlap ([`embodia_sim::EnvGroups::set_overlap`]).
    fn collect_pipelined(
        &mut self,
        groups: &mut embodia_sim::EnvGroups,
        model: &ActorCritic,
        log_std: &[f32],
        env_actions: &mut [f32],
    ) -> Result<(), AlgoError> {
        let (actions_a, actions_b) = env_actions.split_at_mut(env_actions.len() / 2);
        let steps = self.config.steps_per_env;
        let b = groups.group(0).buffers();
        self.act_rows(model, log_std, &b.obs, &b.critic_obs, actions_a)?;
        for t in 0..steps {
            let (stepped, work) = groups.step_group_while(0, actions_a, |others| {
                let b = others.buffers(1).expect("group B is not stepping");
                if t > 0 {
                    self.record_rows(model, b)?;
                }
                self.act_rows(model, log_std, &b.obs, &b.critic_obs, actions_b)
            });
            stepped?;
            work?;
            let (stepped, work) = groups.step_group_while(1, actions_b, |others| {
                let b = others.buffers(0).expect("group A is not stepping");
                self.record_rows(model, b)?;
                match t + 1 < steps {
                    true => self.act_rows(model, log_std, &b.obs, &b.critic_obs, actions_a),
                    false => Ok(()),
                }
            });
            stepped?;
            work?;
        }
        self.record_rows(model, groups.group(1).buffers())
    }

    /// Empties the rollout for a new collection.
    fn clear_rollout(&mut self) {
        let r = &mut self.rollout;
        for buf in [&mut r.obs, &mut r.critic_obs, &mut r.actions, &mut r.means] {
            buf.clear();
        }
        for buf in [&mut r.log_probs, &mut r.rewards, &mut r.dones, &mut r.values] {
            buf.clear();
        }
    }

    /// Samples the actions of the environments whose raw observations are `raw` (`[m, obs_dim]`;
    /// `raw_critic` `[m, critic_dim]` for a task with a critic observation, else empty):
    /// updates the normalizers, appends the rollout rows (observations, actions, means, values,
    /// log-probs) and writes the actions, clipped to the bounds, to `env_actions`
    /// (`[m, action_dim]`).
    fn act_rows(
        &mut self,
        model: &ActorCritic,
        log_std: &[f32],
        raw: &[f32],
        raw_critic: &[f32],
        env_actions: &mut [f32],
    ) -> Result<(), AlgoError> {
        let (od, ad) = (self.obs_dim, self.action_dim);
        let m = raw.len() / od;
        let log_prob_const: f32 = log_std.iter().sum::<f32>() + ad as f32 * LOG_SQRT_2PI as f32;
        if self.config.normalize_obs {
            self.normalizer.update_over_ranks(raw, &mut self.moments);
        }
        self.normalized(raw);
        if let Some(norm) = self.critic_normalizer.as_mut() {
            if self.config.normalize_obs {
                norm.update_over_ranks(raw_critic, &mut self.moments);
            }
            self.critic_normalized(raw_critic);
        }
        let obs = to_tensor(&self.obs, m, od, &self.device.clone().inner());
        let (mean, _) = model.actor.forward(obs);
        let mean = to_host(mean)?;
        let values = self.values(model)?;
        let noise = &mut self.noise[..m * ad];
        fill_normal_rows(&mut self.rng, noise, 1, &mut self.batch_noise);
        let r = &mut self.rollout;
        r.obs.extend_from_slice(&self.obs);
        if self.critic_normalizer.is_some() {
            r.critic_obs.extend_from_slice(&self.critic_obs);
        }
        r.means.extend_from_slice(&mean);
        r.values.extend_from_slice(&values);
        for i in 0..m {
            let mut sq = 0.0;
            for (j, ls) in log_std.iter().enumerate() {
                let k = i * ad + j;
                let eps = noise[k];
                let a = mean[k] + ls.exp() * eps;
                sq += eps * eps;
                r.actions.push(a);
                env_actions[k] = a.clamp(self.action_low[j], self.action_high[j]);
            }
            r.log_probs.push(-0.5 * sq - log_prob_const);
        }
        Ok(())
    }

    /// Appends the rewards and done flags of one step of the environments whose buffers are `b`
    /// (`[m, …]`), counts their ended episodes, and bootstraps the truncated ones with
    /// `γ·V(final obs)`.
    fn record_rows(&mut self, model: &ActorCritic, b: &embodia_sim::StepBuffers) -> Result<(), AlgoError> {
        let m = b.reward.len();
        // In a data-parallel run every rank counts the whole batch's steps.
        self.env_steps += (m * data_parallel::world().map_or(1, |w| w.size())) as u64;
        self.episodes.push_ended(b);
        if b.obs.iter().any(|x| !x.is_finite()) {
            return Err(AlgoError::NonFinite { what: "observations".into(), env_steps: self.env_steps });
        }
        let start = self.rollout.rewards.len();
        for i in 0..m {
            self.rollout.rewards.push(b.reward[i]);
            self.rollout.dones.push(if b.done(i) { 1.0 } else { 0.0 });
        }
        // Truncated episodes did not end in the MDP: bootstrap them with γ·V(final obs).
        let truncated = |i: usize| b.truncated[i] > 0.0 && b.terminated[i] == 0.0;
        if (0..m).any(truncated) {
            self.normalized(&b.final_obs);
            if self.critic_normalizer.is_some() {
                self.critic_normalized(&b.final_critic_obs);
            }
            let v = self.values(model)?;
            for i in (0..m).filter(|&i| truncated(i)) {
                self.rollout.rewards[start + i] += self.config.gamma as f32 * v[i];
            }
        }
        Ok(())
    }

    /// GAE over the collected rollout, bootstrapped from the values of the batch's present
    /// observations (`b`).
    fn finish_rollout(&mut self, model: &ActorCritic, b: &embodia_sim::StepBuffers) -> Result<(), AlgoError> {
        let n = b.reward.len();
        self.normalized(&b.obs);
        if self.critic_normalizer.is_some() {
            self.critic_normalized(&b.critic_obs);
        }
        let last_values = self.values(model)?;
        let r = &mut self.rollout;
        r.advantages.resize(r.rewards.len(), 0.0);
        r.returns.resize(r.rewards.len(), 0.0);
        compute_gae(
            &r.rewards,
            &r.values,
            &r.dones,
            &last_values,
            n,
            self.config.gamma as f32,
            self.config.lambda as f32,
            &mut r.advantages,
            &mut r.returns,
        );
        Ok(())
    }

    /// Optimizes on the stored rollout.
    fn update(&mut self) -> Result<UpdateStats, AlgoError> {
        let (od, ad, cd) = (self.obs_dim, self.action_dim, self.critic_dim);
        let asymmetric = self.critic_normalizer.is_some();
        // Taken for the update (mini-batch steps borrow the learner mutably), put back after it.
        let rollout = std::mem::take(&mut self.rollout);
        let r = &rollout;
        let envs = r.rewards.len() / self.config.steps_per_env;
        // Advantages normalized over the whole rollout (of every rank).
        let (mean, std) = mean_std(&r.advantages);
        let advantages: Vec<f32> = r.advantages.iter().map(|&a| ((a as f64 - mean) / (std + 1e-8)) as f32).collect();
        let old_log_std = to_host(self.model.actor.log_std())?;

        let plain = self.device.clone().inner();
        let mut rows = MiniBatchRows::new(self.config.steps_per_env, envs, self.config.mini_batches);
        let (mut g_obs, mut g_act, mut g_logp, mut g_adv, mut g_ret, mut g_val, mut g_mean) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut g_critic = Vec::new();
        let mut stats = UpdateStats::default();
        for _ in 0..self.config.epochs {
            rows.shuffle(&mut self.rng);
            for k in 0..rows.count() {
                let batch = rows.batch(k);
                if batch.is_empty() {
                    self.empty_minibatch_step()?;
                    continue;
                }
                for v in [&mut g_obs, &mut g_act, &mut g_logp, &mut g_adv, &mut g_ret, &mut g_val, &mut g_mean] {
                    v.clear();
                }
                g_critic.clear();
                for &i in batch {
                    g_obs.extend_from_slice(&r.obs[i * od..(i + 1) * od]);
                    if asymmetric {
                        g_critic.extend_from_slice(&r.critic_obs[i * cd..(i + 1) * cd]);
                    }
                    g_act.extend_from_slice(&r.actions[i * ad..(i + 1) * ad]);
                    g_mean.extend_from_slice(&r.means[i * ad..(i + 1) * ad]);
                    g_logp.push(r.log_probs[i]);
                    g_adv.push(advantages[i]);
                    g_ret.push(r.returns[i]);
                    g_val.push(r.values[i]);
                }
                let b = batch.len();
                let minibatch = MiniBatch {
                    obs: to_tensor(&g_obs, b, od, &plain),
                    critic_obs: asymmetric.then(|| to_tensor(&g_critic, b, cd, &plain)),
                    actions: to_tensor(&g_act, b, ad, &plain),
                    old_mean: to_tensor(&g_mean, b, ad, &plain),
                    old_log_prob: to_tensor(&g_logp, b, 1, &plain),
                    advantages: to_tensor(&g_adv, b, 1, &plain),
                    returns: to_tensor(&g_ret, b, 1, &plain),
                    old_values: to_tensor(&g_val, b, 1, &plain),
                };
                let (losses, kl) = self.minibatch_step(minibatch, rows.nominal(k), &old_log_std)?;
                stats.add(losses, kl);
            }
        }
        self.rollout = rollout;
        Ok(stats)
    }

    /// The metrics row of an iteration whose update gave `stats`.
    fn metric_row(&mut self, stats: UpdateStats, has_success: bool) -> MetricRow {
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.combine_over_ranks();
        self.episodes.drain_into(&mut row, has_success);
        let mut sums = [stats.surrogate, stats.value_loss, stats.entropy, stats.kl, stats.count];
        sum_over_ranks(&mut sums);
        let [surrogate, value_loss, entropy, kl, n] = sums;
        row.policy_loss = Some(surrogate / n);
        row.value_loss = Some(value_loss / n);
        row.entropy = Some(entropy / n);
        row.kl = Some(kl / n);
        row.learning_rate = Some(self.learning_rate);
        row
    }

    /// One clipped-surrogate gradient step on `mb`, adapting the learning rate from the KL to the
    /// rollout's policy (`old_log_std`, `[action_dim]`). The losses are sums over the rows
    /// divided by `nominal`, the mini-batch size (the rows' count alone; in a data-parallel run
    /// this rank's share of it, see [`MiniBatchRows`]). Returns the [surrogate, value loss,
    /// entropy] of the mini-batch and the KL.
    fn minibatch_step(
        &mut self,
        mb: MiniBatch,
        nominal: f64,
        old_log_std: &[f32],
    ) -> Result<([f32; 3], f64), AlgoError> {
        let plain = self.device.clone().inner();
        let clip = self.config.clip_param;
        let MiniBatch { obs, critic_obs, actions, old_mean, old_log_prob, advantages: adv, returns, old_values } = mb;
        let rows = obs.dims()[0];
        let per_row = 1.0 / nominal;
        let (mean, log_std) = self.model.actor.forward(obs.clone());
        // KL(old ‖ new), for the adaptive learning rate: its mean over the mini-batch of every rank.
        let old_log_std = Tensor::<1>::from_floats(old_log_std, &plain).unsqueeze_dim::<2>(0);
        let kl = gaussian_kl(old_mean, old_log_std, mean.clone().inner(), log_std.clone().inner()).sum();
        let mut kl = [to_host(kl)?[0] as f64, rows as f64];
        sum_over_ranks(&mut kl);
        let kl = kl[0] / kl[1];
        self.adapt_learning_rate(kl);

        let entropy = gaussian_entropy(log_std.clone()).mean();
        let log_prob = gaussian_log_prob(actions, mean, log_std);
        // The clamp only bites when a policy has moved absurdly far within one update;
        // it keeps exp finite so such a step is clipped instead of producing inf·0.
        let ratio = (log_prob - old_log_prob).clamp(-20.0, 20.0).exp();
        let surrogate = (ratio.clone() * adv.clone())
            .min_pair(ratio.clamp(1.0 - clip, 1.0 + clip) * adv)
            .sum()
            .mul_scalar(-per_row);
        let critic_input = critic_obs.unwrap_or(obs);
        let values = self.model.critic.forward(critic_input);
        let value_loss = if self.config.clip_value_loss {
            let clipped = old_values.clone() + (values.clone() - old_values).clamp(-clip, clip);
            let a = (values - returns.clone()).square();
            let b = (clipped - returns).square();
            a.max_pair(b).sum().mul_scalar(per_row)
        } else {
            (values - returns).square().sum().mul_scalar(per_row)
        };
        let loss = surrogate.clone() + value_loss.clone().mul_scalar(self.config.value_loss_coef)
            - entropy.clone().mul_scalar(self.config.entropy_coef);
        let stats = to_host(Tensor::cat(vec![surrogate.inner(), value_loss.inner(), entropy.inner()], 0))?;
        check_finite("PPO loss", (stats[0] + stats[1]) as f64, self.env_steps)?;
        let grads = GradientsParams::from_grads(loss.backward(), &self.model);
        let (model, grad_norm) =
            self.optim.step(self.learning_rate, self.model.clone(), &grads, Some(self.config.max_grad_norm));
        check_finite("PPO gradients", grad_norm.unwrap_or(0.0), self.env_steps)?;
        self.model = model;
        Ok(([stats[0], stats[1], stats[2]], kl))
    }

    /// A data-parallel rank's part in a mini-batch without any of its rows: the collectives of
    /// [`Ppo::minibatch_step`] with nothing to add, so that the other ranks' step goes on.
    fn empty_minibatch_step(&mut self) -> Result<(), AlgoError> {
        let mut kl = [0.0, 0.0];
        sum_over_ranks(&mut kl);
        self.adapt_learning_rate(kl[0] / kl[1].max(1.0));
        let no_gradients = GradientsParams::new();
        let clip = Some(self.config.max_grad_norm);
        let (model, grad_norm) = self.optim.step(self.learning_rate, self.model.clone(), &no_gradients, clip);
        check_finite("PPO gradients", grad_norm.unwrap_or(0.0), self.env_steps)?;
        self.model = model;
        Ok(())
    }

    /// RSL-RL's KL-adaptive rule ([`LrSchedule::Adaptive`]) after a mini-batch whose KL to the
    /// rollout's policy was `kl`.
    fn adapt_learning_rate(&mut self, kl: f64) {
        if self.config.schedule == LrSchedule::Adaptive {
            if kl > 2.0 * self.config.desired_kl {
                self.learning_rate = (self.learning_rate / 1.5).max(1e-5);
            } else if kl < 0.5 * self.config.desired_kl && kl > 0.0 {
                self.learning_rate = (self.learning_rate * 1.5).min(1e-2);
            }
        }
    }
}

impl Learner for Ppo {
    fn name(&self) -> &'static str {
        "ppo"
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        self.collect(env)?;
        let stats = self.update()?;
        Ok(self.metric_row(stats, env.info().has_success))
    }

    fn iterate_tensor(&mut self, env: &mut dyn TensorVecEnv) -> Result<MetricRow, AlgoError> {
        self.iterate_on_device(env)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], mut sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        let n = obs.len() / self.obs_dim;
        let mut x = obs.to_vec();
        if self.config.normalize_obs {
            self.normalizer.normalize(&mut x);
        }
        let model = self.model.valid();
        let (mean, log_std) = model.actor.forward(to_tensor(&x, n, self.obs_dim, &self.device.clone().inner()));
        let log_std = to_host(log_std)?;
        for (i, (a, m)) in actions.iter_mut().zip(to_host(mean)?).enumerate() {
            let j = i % self.action_dim;
            let noise = sampling.as_deref_mut().map_or(0.0, |rng| rng.sample::<f32, _>(StandardNormal));
            *a = (m + log_std[i].exp() * noise).clamp(self.action_low[j], self.action_high[j]);
        }
        Ok(())
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        ckpt.put_optim("model", &self.optim)?;
        ckpt.put("algo", &"ppo")?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("learning_rate", &self.learning_rate)?;
        ckpt.put("normalizer", &self.normalizer)?;
        ckpt.put("critic_normalizer", &self.critic_normalizer)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("ppo")?;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("model", &mut self.optim, &self.model, &plain)?;
        self.env_steps = ckpt.get("env_steps")?;
        self.learning_rate = ckpt.get("learning_rate")?;
        let normalizer: RunningNormalizer = ckpt.get("normalizer")?;
        if normalizer.dim() != self.obs_dim {
            return Err(AlgoError::Checkpoint(format!(
                "normalizer has {} features, the task observes {}",
                normalizer.dim(),
                self.obs_dim
            )));
        }
        self.normalizer = normalizer;
        // Checkpoints written before asymmetric critics existed have no such entry.
        let critic_normalizer: Option<RunningNormalizer> = ckpt.get("critic_normalizer").unwrap_or(None);
        if critic_normalizer.as_ref().map(RunningNormalizer::dim) != self.critic_normalizer.as_ref().map(|n| n.dim()) {
            return Err(AlgoError::Checkpoint(
                "the checkpoint's critic observation does not match the task's (asymmetric actor-critic)".into(),
            ));
        }
        self.critic_normalizer = critic_normalizer;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}
