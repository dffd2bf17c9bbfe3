//! PPO on a tensor environment without leaving the device ([`Learner::iterate_tensor`]).
//!
//! How it works, per iteration:
//! 1. The observation normalizer's statistics are uploaded once (`[obs_dim]` mean and inverse
//!    standard deviation) and stay fixed for the rollout.
//! 2. `steps_per_env` steps: the actor's mean and the critic's value are computed on the device,
//!    exploration noise is drawn from the device's generator, actions are clamped to the bounds
//!    and passed to [`TensorVecEnv::step_tensor`]; every quantity of the rollout stays a device
//!    tensor, `[num_envs]` or `[num_envs, dim]` per step. Truncated episodes are bootstrapped
//!    with γ·V(final observation) as in the host loop (computed for every environment and
//!    masked, since checking "any truncated?" would need the host).
//! 3. GAE over the `[steps, num_envs]` columns, a backward loop of tensor ops.
//! 4. The update: advantages normalized on the device, mini-batches drawn by a device-side
//!    permutation, then the same clipped-surrogate step as the host loop ([`Ppo::minibatch_step`]).
//! 5. Once per iteration the host reads back what it must: observation sums for the normalizer,
//!    episode statistics for the metrics, and each mini-batch's losses and KL.
//!
//! Differences from the host loop ([`Ppo::collect`]), on the same seed: exploration noise and
//! mini-batch permutations come from the device's generator instead of the learner's host
//! generator, and the normalizer is refreshed once per iteration from the whole rollout instead
//! of before every step. Host transfers per iteration do not grow with `steps_per_env`
//! (`algos/tests/ppo_on_device.rs` counts them).

use burn::module::Module;
use burn::tensor::{Distribution, Int, Tensor};
use embodia_sim::tensor::TensorVecEnv;

use super::{MiniBatch, Ppo, UpdateStats};
use crate::transfer::to_host;
use crate::{AlgoError, MetricRow};
use embodia_policies::LOG_SQRT_2PI;

/// One rollout on the device, time-major: each field is `[steps · num_envs, …]` after
/// [`Ppo::collect_on_device`].
struct DeviceRollout {
    /// Normalized observations, `[steps · num_envs, obs_dim]`.
    obs: Tensor<2>,
    /// Unclamped Gaussian samples, `[steps · num_envs, action_dim]`.
    actions: Tensor<2>,
    /// The policy's means, `[steps · num_envs, action_dim]`.
    means: Tensor<2>,
    /// `[steps · num_envs, 1]`.
    log_probs: Tensor<2>,
    /// `[steps · num_envs, 1]`.
    values: Tensor<2>,
    /// GAE advantages, `[steps · num_envs, 1]`.
    advantages: Tensor<2>,
    /// `[steps · num_envs, 1]`.
    returns: Tensor<2>,
}

impl Ppo {
    /// One iteration on `env`'s device: [`Ppo::collect_on_device`], then
    /// [`Ppo::update_on_device`].
    pub(super) fn iterate_on_device(&mut self, env: &mut dyn TensorVecEnv) -> Result<MetricRow, AlgoError> {
        if self.critic_normalizer.is_some() {
            return Err(AlgoError::Config {
                field: "env.observations.critic".into(),
                value: "a privileged critic observation".into(),
                allowed: "none on a tensor environment (PPO's device rollout)".into(),
            });
        }
        let rollout = self.collect_on_device(env)?;
        let stats = self.update_on_device(rollout)?;
        Ok(self.metric_row(stats, env.info().has_success))
    }

    /// Collects `steps_per_env` steps from every environment of `env` on its device.
    fn collect_on_device(&mut self, env: &mut dyn TensorVecEnv) -> Result<DeviceRollout, AlgoError> {
        let (n, od, ad, steps) = (env.num_envs(), self.obs_dim, self.action_dim, self.config.steps_per_env);
        let device = env.device().clone();
        let (gamma, lambda) = (self.config.gamma as f32, self.config.lambda as f32);
        let model = self.model.valid().to_device(&device);
        let log_std = model.actor.log_std();
        let std = log_std.clone().exp().unsqueeze_dim::<2>(0).expand([n, ad]);
        let log_prob_const = log_std.sum() + ad as f32 * LOG_SQRT_2PI as f32;
        // 1. The normalizer as of the start of the rollout.
        let (shift, scale, clip) = self.normalizer_tensors(&device);
        let normalize = |raw: Tensor<2>| {
            if self.config.normalize_obs { ((raw - shift.clone()) * scale.clone()).clamp(-clip, clip) } else { raw }
        };
        let low = Tensor::<1>::from_floats(self.action_low.as_slice(), &device).unsqueeze_dim::<2>(0).expand([n, ad]);
        let high = Tensor::<1>::from_floats(self.action_high.as_slice(), &device).unsqueeze_dim::<2>(0).expand([n, ad]);
        let value_of = |obs: Tensor<2>| model.critic.forward(obs).reshape([n]);

        // 2. The rollout.
        let (mut obs_t, mut act_t, mut mean_t, mut logp_t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut value_t, mut reward_t, mut done_t) = (Vec::new(), Vec::new(), Vec::new());
        let mut raw = env.obs_tensor();
        let (mut raw_sum, mut raw_sq) = (Tensor::<1>::zeros([od], &device), Tensor::<1>::zeros([od], &device));
        let mut episodes = EpisodeSums::new(&device);
        for _ in 0..steps {
            raw_sum = raw_sum + raw.clone().sum_dim(0).reshape([od]);
            raw_sq = raw_sq + raw.clone().square().sum_dim(0).reshape([od]);
            let obs = normalize(raw.clone());
            let (mean, _) = model.actor.forward(obs.clone());
            let value = value_of(obs.clone());
            let eps = Tensor::<2>::random([n, ad], Distribution::Normal(0.0, 1.0), &device);
            let action = mean.clone() + eps.clone() * std.clone();
            let log_prob = eps.square().sum_dim(1).reshape([n]).mul_scalar(-0.5) - log_prob_const.clone();
            let step = env.step_tensor(action.clone().max_pair(low.clone()).min_pair(high.clone()))?;
            // Truncated episodes did not end in the MDP: bootstrap them with γ·V(final obs).
            let bootstrap = step.truncated.clone() * (step.terminated.clone().neg() + 1.0);
            let reward = step.reward.clone() + value_of(normalize(step.final_obs.clone())) * bootstrap * gamma;
            let done = step.terminated.clone().max_pair(step.truncated.clone());
            episodes.add(&step.episode_return, &step.episode_length, &step.success, &done);
            obs_t.push(obs);
            act_t.push(action);
            mean_t.push(mean);
            logp_t.push(log_prob);
            value_t.push(value);
            reward_t.push(reward);
            done_t.push(done);
            raw = step.obs;
        }
        let last_value = value_of(normalize(raw));
        self.env_steps += (n * steps) as u64;

        // 3. GAE(γ, λ), backwards over the steps.
        let mut advantages = vec![Tensor::<1>::zeros([n], &device); steps];
        let (mut next_value, mut next_advantage) = (last_value, Tensor::<1>::zeros([n], &device));
        for t in (0..steps).rev() {
            let not_done = done_t[t].clone().neg() + 1.0;
            let delta = reward_t[t].clone() + next_value * not_done.clone() * gamma - value_t[t].clone();
            next_advantage = delta + next_advantage * not_done * (gamma * lambda);
            advantages[t] = next_advantage.clone();
            next_value = value_t[t].clone();
        }
        let column = |v: Vec<Tensor<1>>| Tensor::cat(v, 0).reshape([n * steps, 1]);
        let (values, advantages) = (column(value_t), column(advantages));

        // 5. What the host needs from the rollout: normalizer moments, episode statistics.
        let moments = to_host(Tensor::cat(vec![raw_sum, raw_sq], 0))?;
        self.normalizer.update_moments((n * steps) as f64, &moments[..od], &moments[od..]);
        episodes.drain_into(&mut self.episodes)?;
        Ok(DeviceRollout {
            obs: Tensor::cat(obs_t, 0),
            actions: Tensor::cat(act_t, 0),
            means: Tensor::cat(mean_t, 0),
            log_probs: column(logp_t),
            returns: advantages.clone() + values.clone(),
            values,
            advantages,
        })
    }

    /// The normalizer's statistics as device tensors: shift `[1, obs_dim]`, scale
    /// `1/√(var + ε)` `[1, obs_dim]`, and the clip.
    fn normalizer_tensors(&self, device: &burn::tensor::Device) -> (Tensor<2>, Tensor<2>, f32) {
        let norm = &self.normalizer;
        let shift: Vec<f32> = norm.mean().iter().map(|&m| m as f32).collect();
        let scale: Vec<f32> = norm.var().iter().map(|&v| (1.0 / (v + norm.eps()).sqrt()) as f32).collect();
        let row = |v: Vec<f32>| Tensor::<1>::from_floats(v.as_slice(), device).unsqueeze_dim::<2>(0);
        (row(shift), row(scale), norm.clip())
    }

    /// `epochs` passes over device-side permutations of `rollout` in `mini_batches` mini-batches.
    fn update_on_device(&mut self, rollout: DeviceRollout) -> Result<UpdateStats, AlgoError> {
        let total = rollout.obs.dims()[0];
        let mb = total / self.config.mini_batches;
        let plain = self.device.clone().inner();
        let to_learner = |t: Tensor<2>| t.to_device(&plain);
        let adv = rollout.advantages;
        let (mean, var) = (adv.clone().mean(), adv.clone().var_bias(0).reshape([1]));
        let advantages = (adv - mean.unsqueeze_dim::<2>(0)) / (var.sqrt().unsqueeze_dim::<2>(0) + 1e-8);
        let rollout = DeviceRollout {
            obs: to_learner(rollout.obs),
            actions: to_learner(rollout.actions),
            means: to_learner(rollout.means),
            log_probs: to_learner(rollout.log_probs),
            values: to_learner(rollout.values),
            advantages: to_learner(advantages),
            returns: to_learner(rollout.returns),
        };
        let old_log_std = to_host(self.model.actor.log_std())?;
        let mut stats = UpdateStats::default();
        for _ in 0..self.config.epochs {
            let order: Tensor<1, Int> =
                Tensor::<1>::random([total], Distribution::Uniform(0.0, 1.0), &plain).argsort(0);
            for k in 0..self.config.mini_batches {
                let rows = order.clone().narrow(0, k * mb, mb);
                let pick = |t: &Tensor<2>| t.clone().select(0, rows.clone());
                let minibatch = MiniBatch {
                    obs: pick(&rollout.obs),
                    critic_obs: None,
                    actions: pick(&rollout.actions),
                    old_mean: pick(&rollout.means),
                    old_log_prob: pick(&rollout.log_probs),
                    advantages: pick(&rollout.advantages),
                    returns: pick(&rollout.returns),
                    old_values: pick(&rollout.values),
                };
                let (losses, kl) = self.minibatch_step(minibatch, mb as f64, &old_log_std)?;
                stats.add(losses, kl);
            }
        }
        Ok(stats)
    }
}

/// Statistics of the episodes that ended during a rollout, summed on the device.
struct EpisodeSums {
    /// [count, Σ return, Σ length, Σ success], `[4]`.
    sums: Tensor<1>,
    /// Smallest and largest return of an ended episode (±∞ when none ended), `[1]` each.
    min: Tensor<1>,
    max: Tensor<1>,
}

impl EpisodeSums {
    fn new(device: &burn::tensor::Device) -> Self {
        Self {
            sums: Tensor::zeros([4], device),
            min: Tensor::full([1], f32::INFINITY, device),
            max: Tensor::full([1], f32::NEG_INFINITY, device),
        }
    }

    /// Adds the episodes that ended in one step (`done`, `[num_envs]`, 0/1).
    fn add(&mut self, ret: &Tensor<1>, length: &Tensor<1>, success: &Tensor<1>, done: &Tensor<1>) {
        let ended = done.clone().greater_elem(0.5);
        let step = Tensor::cat(
            vec![
                done.clone().sum(),
                (ret.clone() * done.clone()).sum(),
                (length.clone() * done.clone()).sum(),
                (success.clone() * done.clone()).sum(),
            ],
            0,
        );
        self.sums = self.sums.clone() + step;
        let lowest = ret.clone().mask_fill(ended.clone().bool_not(), f32::INFINITY).min();
        let highest = ret.clone().mask_fill(ended.bool_not(), f32::NEG_INFINITY).max();
        self.min = self.min.clone().min_pair(lowest);
        self.max = self.max.clone().max_pair(highest);
    }

    /// Reads the sums back (one transfer) into the learner's episode statistics.
    fn drain_into(self, stats: &mut crate::EpisodeStats) -> Result<(), AlgoError> {
        let host = to_host(Tensor::cat(vec![self.sums, self.min, self.max], 0))?;
        let [count, returns, lengths, successes, min, max] = std::array::from_fn(|k| f64::from(host[k]));
        stats.push_summed(count as u64, returns, lengths, successes, min, max);
        Ok(())
    }
}
