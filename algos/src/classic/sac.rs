//! Soft Actor-Critic (Haarnoja et al. 2018, with automatic temperature), in one place.
//!
//! Per environment step after `learning_starts`: `updates_per_step` times, sample a batch,
//! regress both critics to the soft Bellman target built from the Polyak-averaged target
//! critics, update the actor to maximize `min Q − α log π` and adapt `α` toward the target
//! entropy (on every `actor_update_interval`-th of these updates), and move the targets toward
//! the critics.
//!
//! With `critics` > 2 and `layer_norm`, it is REDQ's and RLPD's ensemble (Chen et al. 2021;
//! Ball et al. 2023): the target is the minimum of `critic_subset` members drawn at random per
//! update, the actor maximizes the ensemble's mean, and every member regresses to the same
//! target, which tolerates many updates per environment step. With demonstrations
//! ([`Sac::add_demonstrations`]), every batch draws `demo_ratio` of its rows from them and the
//! rest from the online buffer (RLPD's symmetric sampling).

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use embodia_policies::{
    Activation, QEnsemble, QEnsembleConfig, SquashedGaussianActor, SquashedGaussianActorConfig, load_params,
    named_params, polyak_update, seeded_init,
};
use embodia_sim::VecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::check_finite;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::transfer::{to_host, to_tensor};
use crate::{
    Adam, AlgoError, Checkpoint, EpisodeStats, ExplorationNoise, Learner, MetricRow, PinkNoise, ReplayBuffer,
    TransitionBatch, check_num_envs, check_range,
};

/// SAC hyperparameters. Defaults are the common ones for continuous control (CleanRL and
/// Stable-Baselines3 agree on them); the pendulum preset in `assets/configs/` shrinks the
/// networks and batch, which solves that task in a few thousand steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SacConfig {
    /// Environments stepped together (each step adds `num_envs` transitions). Default 1.
    pub num_envs: usize,
    /// Replay capacity in transitions. Default 1,000,000.
    pub buffer_size: usize,
    /// Transitions per gradient step. Default 256.
    pub batch_size: usize,
    /// Environment steps of uniformly random actions before learning starts. Default 5,000.
    pub learning_starts: u64,
    /// Discount factor γ. Default 0.99.
    pub gamma: f64,
    /// Polyak coefficient τ for the target critics. Default 0.005.
    pub tau: f64,
    /// Adam learning rate of the actor and the critics. Default 3e-4.
    pub learning_rate: f64,
    /// Adam learning rate of log α. Default 1e-3.
    pub alpha_learning_rate: f64,
    /// Initial entropy temperature α. Default 1.0.
    pub init_alpha: f64,
    /// Adapt α toward `target_entropy`; if false α stays at `init_alpha`. Default true.
    pub autotune_alpha: bool,
    /// Target policy entropy: `"auto"` (−action_dim nats) or a number of nats. Default "auto".
    pub target_entropy: TargetEntropy,
    /// Gradient steps per environment step (update-to-data ratio). Default 1.
    pub updates_per_step: usize,
    /// Critic updates per actor and temperature update: 2 halves the actor's share of the
    /// compute, as TD3's delayed policy updates and RLtools' L2F configuration do. Default 1.
    pub actor_update_interval: u64,
    /// Hidden widths of actor and critics. Default [256, 256].
    pub hidden: Vec<usize>,
    /// Hidden activation. Default relu.
    pub activation: Activation,
    /// Bounds of the actor's pre-squash log std. Default [-5, 2].
    pub log_std_bounds: [f64; 2],
    /// Environment steps per iteration (one metrics row, one checkpoint opportunity). Default 1,000.
    pub steps_per_iteration: u64,
    /// Noise that drives exploration when acting: `white` or `pink` (temporally correlated;
    /// also shapes the random actions before `learning_starts`). Default white.
    pub exploration_noise: ExplorationNoise,
    /// Include the entropy bonus `−α log π(a'|s')` in the critics' target (soft Q). Without it
    /// (RLPD's `backup_entropy = False`) the critics estimate the task return alone and only
    /// the actor's loss trades Q against entropy: for sparse rewards of 1 over long episodes,
    /// where the summed bonus would outweigh the reward. Default true.
    pub backup_entropy: bool,
    /// Q networks in the critic ensemble: 2 is SAC's twin critic; more (10 in RLPD) with
    /// `critic_subset` 2 is REDQ's ensemble. Default 2.
    pub critics: usize,
    /// Members whose minimum is the critics' target, drawn at random per update; the actor
    /// maximizes the minimum of all when this equals `critics`, else their mean. Default 2.
    pub critic_subset: usize,
    /// Layer normalization in the critics' hidden layers (RLPD). Default false.
    pub layer_norm: bool,
    /// With demonstrations, the fraction of every batch drawn from them (RLPD: 0.5). Default 0.5.
    pub demo_ratio: f64,
    /// Successful episodes of the task's scripted expert that `embodia train` records as
    /// demonstrations before learning (0: none; not used with `dataset`). Default 0.
    pub demos: usize,
    /// LeRobot dataset directory whose episodes are the demonstrations instead (`--dataset`;
    /// e.g. written by `embodia record`). Default none.
    pub dataset: Option<String>,
}

impl Default for SacConfig {
    fn default() -> Self {
        Self {
            num_envs: 1,
            buffer_size: 1_000_000,
            batch_size: 256,
            learning_starts: 5_000,
            gamma: 0.99,
            tau: 0.005,
            learning_rate: 3e-4,
            alpha_learning_rate: 1e-3,
            init_alpha: 1.0,
            autotune_alpha: true,
            target_entropy: TargetEntropy::Auto,
            updates_per_step: 1,
            actor_update_interval: 1,
            hidden: vec![256, 256],
            activation: Activation::Relu,
            log_std_bounds: [-5.0, 2.0],
            steps_per_iteration: 1_000,
            exploration_noise: ExplorationNoise::White,
            backup_entropy: true,
            critics: 2,
            critic_subset: 2,
            layer_norm: false,
            demo_ratio: 0.5,
            demos: 0,
            dataset: None,
        }
    }
}

/// Entropy SAC's temperature steers the policy toward; in TOML `"auto"` or a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TargetEntropy {
    /// `−action_dim` nats, the usual heuristic.
    Auto,
    /// A fixed target in nats.
    Nats(f64),
}

impl Serialize for TargetEntropy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Auto => s.serialize_str("auto"),
            Self::Nats(h) => s.serialize_f64(*h),
        }
    }
}

impl<'de> Deserialize<'de> for TargetEntropy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TargetEntropy;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\" or a number of nats")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                match v {
                    "auto" => Ok(TargetEntropy::Auto),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(TargetEntropy::Nats(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TargetEntropy::Nats(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TargetEntropy::Nats(v as f64))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl SacConfig {
    /// Checks every value's range; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("buffer_size", self.buffer_size, self.buffer_size > 0, "≥ 1")?;
        check_range("batch_size", self.batch_size, self.batch_size > 0, "≥ 1")?;
        check_range("gamma", self.gamma, (0.0..=1.0).contains(&self.gamma), "0 ≤ gamma ≤ 1")?;
        check_range("tau", self.tau, self.tau > 0.0 && self.tau <= 1.0, "0 < tau ≤ 1")?;
        check_range("learning_rate", self.learning_rate, self.learning_rate > 0.0, "> 0")?;
        check_range("alpha_learning_rate", self.alpha_learning_rate, self.alpha_learning_rate > 0.0, "> 0")?;
        check_range("init_alpha", self.init_alpha, self.init_alpha > 0.0, "> 0")?;
        check_range("updates_per_step", self.updates_per_step, self.updates_per_step > 0, "≥ 1")?;
        check_range("actor_update_interval", self.actor_update_interval, self.actor_update_interval > 0, "≥ 1")?;
        check_range("hidden", format!("{:?}", self.hidden), self.hidden.iter().all(|&w| w > 0), "positive widths")?;
        let [lo, hi] = self.log_std_bounds;
        check_range("log_std_bounds", format!("[{lo}, {hi}]"), lo < hi, "min < max")?;
        check_range("critics", self.critics, self.critics >= 2, "≥ 2")?;
        let subset = (1..=self.critics).contains(&self.critic_subset);
        check_range(
            "critic_subset",
            self.critic_subset,
            subset,
            &format!("1 ≤ critic_subset ≤ critics ({})", self.critics),
        )?;
        check_range("demo_ratio", self.demo_ratio, (0.0..1.0).contains(&self.demo_ratio), "0 ≤ demo_ratio < 1")?;
        check_range("steps_per_iteration", self.steps_per_iteration, self.steps_per_iteration > 0, "≥ 1")
    }
}

/// SAC's networks, optimizers, temperature and replay buffer with its update: what [`Sac`] and
/// the VLA's noise-space SAC ([`crate::VlaDsrl`]) share. The critics read whole stored
/// observations `[obs_dim]`; the actor reads their first `actor_obs_dim` columns, so a critic
/// may see privileged state the actor never sees (asymmetric actor-critic). Actions are in
/// the actor's squashed units, `[-1, 1]`.
pub(crate) struct SoftActorCritic {
    config: SacConfig,
    device: Device,
    obs_dim: usize,
    actor_obs_dim: usize,
    action_dim: usize,
    target_entropy: f64,
    actor: SquashedGaussianActor,
    critic: QEnsemble,
    critic_target: QEnsemble,
    actor_optim: Adam,
    critic_optim: Adam,
    log_alpha: f64,
    /// Adam state of the scalar log α: (m, v, steps).
    alpha_optim: (f64, f64, u64),
    pub(crate) replay: ReplayBuffer,
    /// Demonstration transitions (RLPD), sampled beside `replay`; empty without any.
    demos: ReplayBuffer,
    /// Scratch: the members, whose first `critic_subset` after a shuffle make this update's
    /// target, `[critics]` (capacity kept between updates).
    subset: Vec<usize>,
    /// Critic updates so far (the actor updates on every `actor_update_interval`-th).
    critic_updates: u64,
    // Reused host scratch buffers.
    batch: TransitionBatch,
    noise: Vec<f32>,
}

/// What one [`SoftActorCritic::update`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SacUpdate {
    /// Both critics' squared Bellman errors, summed.
    pub critic_loss: f64,
    /// The actor's step, on every `actor_update_interval`-th update.
    pub actor: Option<ActorUpdate>,
}

/// The actor's and temperature's step of a SAC update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ActorUpdate {
    /// `E[α log π(a|s) − min Q(s, a)]`.
    pub loss: f64,
    /// The policy's entropy estimate `−E[log π]`, nats.
    pub entropy: f64,
}

impl SoftActorCritic {
    /// Fresh networks for `obs_dim`-wide stored observations (the actor reads the first
    /// `actor_obs_dim`) and `action_dim` actions, the actor's output layer initialized with
    /// `actor_output_gain`; `device` must have autodiff enabled.
    pub(crate) fn new(
        config: SacConfig,
        (obs_dim, actor_obs_dim, action_dim): (usize, usize, usize),
        actor_output_gain: f64,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        let actor_config = SquashedGaussianActorConfig {
            obs_dim: actor_obs_dim,
            action_dim,
            hidden: config.hidden.clone(),
            activation: config.activation,
            log_std_min: config.log_std_bounds[0],
            log_std_max: config.log_std_bounds[1],
            output_gain: actor_output_gain,
        };
        let critic_config = QEnsembleConfig {
            obs_dim,
            action_dim,
            hidden: config.hidden.clone(),
            activation: config.activation,
            members: config.critics,
            layer_norm: config.layer_norm,
        };
        let (actor, critic) =
            seeded_init(&device, seed, |device| (actor_config.init(device), critic_config.init(device)));
        Ok(Self {
            target_entropy: match config.target_entropy {
                TargetEntropy::Auto => -(action_dim as f64),
                TargetEntropy::Nats(h) => h,
            },
            log_alpha: config.init_alpha.ln(),
            alpha_optim: (0.0, 0.0, 0),
            replay: ReplayBuffer::new(obs_dim, action_dim, config.buffer_size),
            demos: ReplayBuffer::new(obs_dim, action_dim, 0),
            subset: Vec::new(),
            critic_updates: 0,
            batch: TransitionBatch::default(),
            noise: Vec::new(),
            critic_target: critic.valid(),
            obs_dim,
            actor_obs_dim,
            action_dim,
            actor,
            critic,
            actor_optim: Adam::default(),
            critic_optim: Adam::default(),
            device,
            config,
        })
    }

    /// The current entropy temperature α.
    pub(crate) fn alpha(&self) -> f64 {
        self.log_alpha.exp()
    }

    /// The actor's actions in `[-1, 1]` for observations `[n, actor_obs_dim]`: its mode without
    /// `noise`, else `tanh(μ + σ ε)` with `noise` (`[n, action_dim]` standard normal).
    pub(crate) fn actions(&self, obs: &[f32], noise: Option<&[f32]>) -> Result<Vec<f32>, AlgoError> {
        let n = obs.len() / self.actor_obs_dim;
        let plain = self.device.clone().inner();
        let obs = to_tensor(obs, n, self.actor_obs_dim, &plain);
        let actor = self.actor.valid();
        to_host(match noise {
            None => actor.deterministic(obs),
            Some(noise) => actor.sample(obs, to_tensor(noise, n, self.action_dim, &plain)).0,
        })
    }

    /// Makes `demos` the demonstration transitions every batch draws `demo_ratio` of its rows
    /// from.
    pub(crate) fn set_demonstrations(&mut self, demos: ReplayBuffer) {
        self.demos = demos;
    }

    /// One gradient step on the critics and, every `actor_update_interval`-th call, on the
    /// actor and α, on a batch drawn with `rng` (`demo_ratio` of its rows from the
    /// demonstrations when there are some).
    pub(crate) fn update(&mut self, rng: &mut ChaCha8Rng, env_steps: u64) -> Result<SacUpdate, AlgoError> {
        let (b, od, ad) = (self.config.batch_size, self.obs_dim, self.action_dim);
        let plain = self.device.clone().inner();
        self.replay.sample(rng, b, &mut self.batch);
        if !self.demos.is_empty() {
            let from_demos = (self.config.demo_ratio * b as f64).round() as usize;
            self.demos.sample_rows(rng, 0..from_demos, &mut self.batch);
        }
        self.noise.resize(2 * b * ad, 0.0);
        fill_normal(rng, &mut self.noise);
        let obs = to_tensor(&self.batch.obs, b, od, &plain);
        let actions = to_tensor(&self.batch.actions, b, ad, &plain);
        let rewards = to_tensor(&self.batch.rewards, b, 1, &plain);
        let next_obs = to_tensor(&self.batch.next_obs, b, od, &plain);
        let not_done = to_tensor(&self.batch.terminated, b, 1, &plain).neg().add_scalar(1.0);
        let target_noise = to_tensor(&self.noise[..b * ad], b, ad, &plain);
        let actor_noise = to_tensor(&self.noise[b * ad..], b, ad, &plain);
        let alpha = self.alpha();
        let actor_view = |x: &Tensor<2>| x.clone().narrow(1, 0, self.actor_obs_dim);

        // Critic: y = r + γ (1 − d) (min Q'(s', a') − α log π(a'|s')), a' ~ π(·|s').
        let (next_actions, next_log_prob) = self.actor.valid().sample(actor_view(&next_obs), target_noise);
        let bonus = if self.config.backup_entropy { alpha } else { 0.0 };
        let (members, k) = (self.config.critics, self.config.critic_subset);
        let next_min = if k == members {
            self.critic_target.min(next_obs, next_actions)
        } else {
            // `k` distinct members: a partial Fisher–Yates shuffle of the identity, which depends
            // on the generator alone (a resumed run draws the same members).
            self.subset.clear();
            self.subset.extend(0..members);
            for i in 0..k {
                let j = rng.random_range(i..members);
                self.subset.swap(i, j);
            }
            self.critic_target.min_of(next_obs, next_actions, &self.subset[..k])
        };
        let next_q = next_min - next_log_prob.mul_scalar(bonus);
        let y = rewards + not_done * next_q.mul_scalar(self.config.gamma);
        let critic_loss = self
            .critic
            .forward(obs.clone(), actions)
            .into_iter()
            .map(|q| (q - y.clone()).square().mean())
            .reduce(|a, b| a + b)
            .expect("at least two critics");
        let critic_loss_value = check_finite("critic loss", to_host(critic_loss.clone())?[0] as f64, env_steps)?;
        let grads = GradientsParams::from_grads(critic_loss.backward(), &self.critic);
        self.critic = self.critic_optim.step(self.config.learning_rate, self.critic.clone(), &grads, None).0;
        self.critic_target = polyak_update(self.critic_target.clone(), &self.critic, self.config.tau);
        self.critic_updates += 1;
        if !self.critic_updates.is_multiple_of(self.config.actor_update_interval) {
            return Ok(SacUpdate { critic_loss: critic_loss_value, actor: None });
        }

        // Actor: minimize E[α log π(a|s) − min Q(s, a)], a = tanh(μ + σ ε) reparameterized.
        let (new_actions, log_prob) = self.actor.sample(actor_view(&obs), actor_noise);
        let critic = self.critic.clone().no_grad();
        let q = if k == members { critic.min(obs, new_actions) } else { critic.mean(obs, new_actions) };
        let actor_loss = (log_prob.clone().mul_scalar(alpha) - q).mean();
        let log_prob_mean = to_host(log_prob.mean())?[0] as f64;
        let actor_loss_value = check_finite("actor loss", to_host(actor_loss.clone())?[0] as f64, env_steps)?;
        let grads = GradientsParams::from_grads(actor_loss.backward(), &self.actor);
        self.actor = self.actor_optim.step(self.config.learning_rate, self.actor.clone(), &grads, None).0;

        // Temperature: minimize −log α · (log π + H̄); its gradient is −(E[log π] + H̄).
        if self.config.autotune_alpha {
            let grad = -(log_prob_mean + self.target_entropy);
            self.log_alpha = adam_scalar(&mut self.alpha_optim, self.log_alpha, grad, self.config.alpha_learning_rate);
        }
        let actor = ActorUpdate { loss: actor_loss_value, entropy: -log_prob_mean };
        Ok(SacUpdate { critic_loss: critic_loss_value, actor: Some(actor) })
    }

    /// Writes networks, optimizers, temperature and replay buffer into `ckpt`.
    pub(crate) fn save(&self, ckpt: &mut Checkpoint) -> Result<(), AlgoError> {
        ckpt.insert_params("actor", named_params(&self.actor));
        ckpt.insert_params("critic", named_params(&self.critic));
        ckpt.insert_params("critic_target", named_params(&self.critic_target));
        ckpt.put_optim("actor", &self.actor_optim)?;
        ckpt.put_optim("critic", &self.critic_optim)?;
        self.replay.save(ckpt)?;
        ckpt.put("critic_updates", &self.critic_updates)?;
        ckpt.put("log_alpha", &self.log_alpha)?;
        ckpt.put("alpha_optim", &self.alpha_optim)
    }

    /// Restores what [`Self::save`] wrote.
    pub(crate) fn load(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        self.actor = load_params(self.actor.clone(), &ckpt.params("actor"))?;
        self.critic = load_params(self.critic.clone(), &ckpt.params("critic"))?;
        self.critic_target = load_params(self.critic_target.clone(), &ckpt.params("critic_target"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("actor", &mut self.actor_optim, &self.actor, &plain)?;
        ckpt.restore_optim("critic", &mut self.critic_optim, &self.critic, &plain)?;
        self.replay.load(ckpt)?;
        self.critic_updates = ckpt.get("critic_updates")?;
        self.log_alpha = ckpt.get("log_alpha")?;
        self.alpha_optim = ckpt.get("alpha_optim")?;
        Ok(())
    }
}

/// One Adam step on a scalar parameter; `state` is (m, v, steps).
fn adam_scalar(state: &mut (f64, f64, u64), x: f64, grad: f64, lr: f64) -> f64 {
    let (b1, b2, eps) = (0.9, 0.999, 1e-8);
    state.2 += 1;
    state.0 = b1 * state.0 + (1.0 - b1) * grad;
    state.1 = b2 * state.1 + (1.0 - b2) * grad * grad;
    let t = state.2 as i32;
    x - lr * (1.0 - b2.powi(t)).sqrt() / (1.0 - b1.powi(t)) * state.0 / (state.1.sqrt() + eps)
}

/// A SAC learner for one task.
pub struct Sac {
    config: SacConfig,
    obs_dim: usize,
    action_dim: usize,
    /// Action bounds: env action = `low + (a + 1)/2 · (high − low)` for `a ∈ [-1, 1]`.
    action_low: Vec<f32>,
    action_scale: Vec<f32>,
    sac: SoftActorCritic,
    rng: ChaCha8Rng,
    /// Exploration noise state when `exploration_noise` is pink, `[num_envs · action_dim]` streams.
    pink: Option<PinkNoise>,
    env_steps: u64,
    episodes: EpisodeStats,
    // Reused host scratch buffers.
    noise: Vec<f32>,
    actions: Vec<f32>,
    env_actions: Vec<f32>,
    prev_obs: Vec<f32>,
}

impl Sac {
    /// A fresh learner for `env`'s spaces; `device` must have autodiff enabled.
    pub fn new(config: SacConfig, env: &dyn VecEnv, device: Device, seed: u64) -> Result<Self, AlgoError> {
        if env.obs_spec().critic.is_some() {
            return Err(AlgoError::Config {
                field: "env.observations.critic".into(),
                value: "a critic observation group".into(),
                allowed: "none with sac (its Q networks read the policy observation; use ppo)".into(),
            });
        }
        let obs_dim = env.obs_spec().vector.dim();
        let bounds = &env.action_spec().bounds;
        let action_dim = bounds.dim();
        let sac = SoftActorCritic::new(config.clone(), (obs_dim, obs_dim, action_dim), 1.0, device, seed)?;
        let n = env.num_envs();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5AC0_5AC0);
        let pink =
            (config.exploration_noise == ExplorationNoise::Pink).then(|| PinkNoise::new(n * action_dim, &mut rng));
        Ok(Self {
            sac,
            rng,
            pink,
            env_steps: 0,
            episodes: EpisodeStats::default(),
            noise: Vec::new(),
            actions: vec![0.0; n * action_dim],
            env_actions: vec![0.0; n * action_dim],
            prev_obs: vec![0.0; n * obs_dim],
            action_low: bounds.low.clone(),
            action_scale: bounds.low.iter().zip(&bounds.high).map(|(l, h)| h - l).collect(),
            obs_dim,
            action_dim,
            config,
        })
    }

    /// The current entropy temperature α.
    pub fn alpha(&self) -> f64 {
        self.sac.alpha()
    }

    /// Makes the transitions of `demos` (the task's raw observations and actions) the
    /// demonstrations every batch draws `demo_ratio` of its rows from (RLPD). A step's next
    /// observation is the episode's next one; an episode's last step is kept when the episode
    /// terminated (its next observation then never matters) and left out when the time limit
    /// cut it. Errors when the sizes do not match the task's or nothing is left.
    pub fn add_demonstrations(&mut self, demos: &embodia_sim::demonstrations::Demonstrations) -> Result<(), AlgoError> {
        let (od, ad) = (self.obs_dim, self.action_dim);
        if demos.obs_dim != od || demos.action_dim != ad {
            return Err(AlgoError::Config {
                field: "demonstrations".into(),
                value: format!("observations of {} and actions of {}", demos.obs_dim, demos.action_dim),
                allowed: format!("the task's: observations of {od}, actions of {ad}"),
            });
        }
        let kept = |e: &embodia_sim::demonstrations::Episode| e.len() - usize::from(!e.terminated);
        let total: usize = demos.episodes.iter().map(kept).sum();
        if total == 0 {
            return Err(AlgoError::Config {
                field: "demonstrations".into(),
                value: format!("{} episodes without a usable step", demos.episodes.len()),
                allowed: "at least one transition".into(),
            });
        }
        let mut buffer = ReplayBuffer::new(od, ad, total);
        let mut squashed = vec![0.0; ad];
        for e in &demos.episodes {
            for t in 0..kept(e) {
                let obs = &e.observations[t * od..(t + 1) * od];
                let last = t + 1 == e.len();
                let next = if last { obs } else { &e.observations[(t + 1) * od..(t + 2) * od] };
                for (j, a) in squashed.iter_mut().enumerate() {
                    let env = e.actions[t * ad + j];
                    *a = (2.0 * (env - self.action_low[j]) / self.action_scale[j] - 1.0).clamp(-1.0, 1.0);
                }
                buffer.push(obs, &squashed, e.rewards[t], next, if last { 1.0 } else { 0.0 });
            }
        }
        self.sac.set_demonstrations(buffer);
        Ok(())
    }

    fn scale_actions(&self, squashed: &[f32], out: &mut [f32]) {
        for (i, (o, a)) in out.iter_mut().zip(squashed).enumerate() {
            let j = i % self.action_dim;
            *o = self.action_low[j] + 0.5 * (a + 1.0) * self.action_scale[j];
        }
    }
}

impl Learner for Sac {
    fn name(&self) -> &'static str {
        "sac"
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        let n = env.num_envs() as u64;
        let (od, ad) = (self.obs_dim, self.action_dim);
        let target = self.env_steps + self.config.steps_per_iteration;
        let (mut critic_loss, mut actor_loss, mut entropy) = (0.0, 0.0, 0.0);
        let (mut updates, mut actor_updates) = (0u64, 0u64);
        while self.env_steps < target {
            // Act: uniform random before learning starts, otherwise a sample from the policy.
            self.prev_obs.copy_from_slice(&env.buffers().obs);
            self.noise.resize(self.actions.len(), 0.0);
            match self.pink.as_mut() {
                Some(pink) => pink.sample(&mut self.rng, &mut self.noise),
                None if self.env_steps >= self.config.learning_starts => fill_normal(&mut self.rng, &mut self.noise),
                None => {}
            }
            if self.env_steps < self.config.learning_starts {
                for (a, eps) in self.actions.iter_mut().zip(&self.noise) {
                    *a = if self.pink.is_some() { eps.tanh() } else { self.rng.random_range(-1.0..=1.0) };
                }
            } else {
                self.actions = self.sac.actions(&self.prev_obs, Some(&self.noise))?;
            }
            let mut env_actions = std::mem::take(&mut self.env_actions);
            self.scale_actions(&self.actions, &mut env_actions);
            env.step(&env_actions)?;
            self.env_actions = env_actions;
            self.env_steps += n;

            let b = env.buffers();
            self.episodes.push_ended(b);
            for i in 0..n as usize {
                let next = if b.done(i) { &b.final_obs[i * od..(i + 1) * od] } else { &b.obs[i * od..(i + 1) * od] };
                if next.iter().any(|x| !x.is_finite()) {
                    return Err(AlgoError::NonFinite { what: "observations".into(), env_steps: self.env_steps });
                }
                self.sac.replay.push(
                    &self.prev_obs[i * od..(i + 1) * od],
                    &self.actions[i * ad..(i + 1) * ad],
                    b.reward[i],
                    next,
                    b.terminated[i],
                );
            }

            if self.env_steps >= self.config.learning_starts {
                for _ in 0..self.config.updates_per_step {
                    let update = self.sac.update(&mut self.rng, self.env_steps)?;
                    critic_loss += update.critic_loss;
                    updates += 1;
                    if let Some(actor) = update.actor {
                        actor_loss += actor.loss;
                        entropy += actor.entropy;
                        actor_updates += 1;
                    }
                }
            }
        }
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.drain_into(&mut row, env.info().has_success);
        if updates > 0 {
            row.value_loss = Some(critic_loss / updates as f64);
        }
        if actor_updates > 0 {
            let k = actor_updates as f64;
            row.policy_loss = Some(actor_loss / k);
            row.entropy = Some(entropy / k);
        }
        row.alpha = Some(self.alpha());
        row.learning_rate = Some(self.config.learning_rate);
        Ok(row)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        let noise = sampling.map(|rng| {
            let mut noise = vec![0.0; obs.len() / self.obs_dim * self.action_dim];
            fill_normal(rng, &mut noise);
            noise
        });
        self.scale_actions(&self.sac.actions(obs, noise.as_deref())?, actions);
        Ok(())
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        self.sac.save(&mut ckpt)?;
        ckpt.put("algo", &"sac")?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        ckpt.put("pink_noise", &self.pink)?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("sac")?;
        self.sac.load(ckpt)?;
        self.env_steps = ckpt.get("env_steps")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        let pink: Option<PinkNoise> = ckpt.get("pink_noise")?;
        if pink.as_ref().map(PinkNoise::streams) != self.pink.as_ref().map(PinkNoise::streams) {
            return Err(AlgoError::Checkpoint("exploration noise state does not match the config".into()));
        }
        self.pink = pink;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actor_updates_only_on_every_interval_th_critic_update() {
        let mut env = embodia_sim::make("pendulum", 1).unwrap();
        env.reset(0);
        let config = |actor_update_interval| SacConfig {
            hidden: vec![8],
            batch_size: 8,
            learning_starts: 21,
            steps_per_iteration: 30,
            actor_update_interval,
            ..SacConfig::default()
        };
        // Updates after env steps 21..=30: 10 critic updates in the first iteration.
        let mut changed = |interval| {
            let mut sac = Sac::new(config(interval), env.as_ref(), Device::flex().autodiff(), 1).unwrap();
            let actor_before = named_params(&sac.sac.actor);
            let critic_before = named_params(&sac.sac.critic);
            let row = sac.iterate(env.as_mut()).unwrap();
            (named_params(&sac.sac.actor) != actor_before, named_params(&sac.sac.critic) != critic_before, row)
        };
        let (actor, critic, row) = changed(11);
        assert!(!actor && critic, "interval 11: the actor waits for the 11th critic update");
        assert!(row.value_loss.is_some() && row.policy_loss.is_none() && row.entropy.is_none());
        let (actor, critic, row) = changed(10);
        assert!(actor && critic, "interval 10: the 10th critic update also updates the actor");
        assert!(row.policy_loss.is_some());
    }

    fn pendulum_demos(
        episodes: Vec<embodia_sim::demonstrations::Episode>,
    ) -> embodia_sim::demonstrations::Demonstrations {
        embodia_sim::demonstrations::Demonstrations {
            task: "pendulum".into(),
            fps: 20.0,
            obs_dim: 3,
            action_dim: 1,
            episodes,
            cameras: Vec::new(),
            state_dim: 0,
        }
    }

    fn episode(len: usize, terminated: bool) -> embodia_sim::demonstrations::Episode {
        embodia_sim::demonstrations::Episode {
            observations: (0..3 * len).map(|i| i as f32).collect(),
            actions: (0..len).map(|t| if t == 0 { 2.0 } else { -1.0 }).collect(),
            rewards: (0..len).map(|t| t as f32).collect(),
            terminated,
            ..Default::default()
        }
    }

    #[test]
    fn demonstrations_become_transitions_with_next_observations_and_squashed_actions() {
        let env = embodia_sim::make("pendulum", 1).unwrap();
        let mut sac =
            Sac::new(SacConfig { hidden: vec![8], ..SacConfig::default() }, env.as_ref(), Device::flex().autodiff(), 1)
                .unwrap();
        // A 3-step episode cut by the time limit keeps 2 steps; a terminated one keeps all 3.
        sac.add_demonstrations(&pendulum_demos(vec![episode(3, false), episode(3, true)])).unwrap();
        let demos = &sac.sac.demos;
        assert_eq!(demos.len(), 5);
        let mut batch = TransitionBatch::default();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        demos.sample(&mut rng, 64, &mut batch);
        for b in 0..64 {
            let (obs, next) = (&batch.obs[3 * b..3 * b + 3], &batch.next_obs[3 * b..3 * b + 3]);
            let t = obs[0] as usize / 3;
            assert_eq!(batch.rewards[b], t as f32);
            // Pendulum's torque bounds are ±2: 2 N·m is the squashed 1, −1 N·m is −0.5.
            assert_eq!(batch.actions[b], if t == 0 { 1.0 } else { -0.5 });
            if batch.terminated[b] == 1.0 {
                assert_eq!(t, 2, "only the terminated episode's last step is terminal");
            } else {
                assert_eq!(next[0], obs[0] + 3.0, "the next observation is the episode's next");
            }
        }
        let wrong =
            embodia_sim::demonstrations::Demonstrations { obs_dim: 4, ..pendulum_demos(vec![episode(3, true)]) };
        assert!(sac.add_demonstrations(&wrong).unwrap_err().to_string().contains("demonstrations"));
    }

    #[test]
    fn batches_draw_demo_ratio_of_their_rows_from_the_demonstrations() {
        let mut env = embodia_sim::make("pendulum", 1).unwrap();
        env.reset(0);
        let config = SacConfig {
            hidden: vec![8],
            batch_size: 10,
            learning_starts: 5,
            steps_per_iteration: 5,
            demo_ratio: 0.3,
            critics: 4,
            critic_subset: 2,
            layer_norm: true,
            ..SacConfig::default()
        };
        let mut sac = Sac::new(config, env.as_ref(), Device::flex().autodiff(), 1).unwrap();
        sac.iterate(env.as_mut()).unwrap();
        // Demonstration rewards are 1000 + t, far from any pendulum reward (≤ 0).
        let mut demo = episode(4, true);
        demo.rewards.iter_mut().for_each(|r| *r += 1000.0);
        sac.add_demonstrations(&pendulum_demos(vec![demo])).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let update = sac.sac.update(&mut rng, 5).unwrap();
        assert!(update.critic_loss.is_finite());
        let from_demos = sac.sac.batch.rewards.iter().filter(|&&r| r >= 1000.0).count();
        assert_eq!(from_demos, 3, "rows {:?}", sac.sac.batch.rewards);
        assert!(sac.sac.batch.rewards[..3].iter().all(|&r| r >= 1000.0));
    }
}
