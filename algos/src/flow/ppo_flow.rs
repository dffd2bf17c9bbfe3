//! πRL's PPO for flow policies (RLinf), Flow-SDE and Flow-Noise, in one place.
//!
//! Chunk-level MDP: one environment step of this learner executes the `C` actions of a sampled
//! chunk; its reward is the sum of the `C` rewards and it is done if any of them ended the
//! episode. Per iteration, in the reference's loop order:
//! 1. the noise level is set from the iteration count (annealing);
//! 2. `chunk_steps` chunk steps are collected from every environment: sample a chunk with the
//!    rollout policy (Flow-SDE: one stochastic denoising step `k* ~ U{0..K−1}` shared by the
//!    whole batch in that step, the others ODE; Flow-Noise: every step stochastic with the
//!    learned std), store chains, `k*`, old log-probs `[C·D]` and the value (mean over the `K`
//!    steps), execute the chunk; truncations add `γ·V(s_trunc)` to the reward;
//! 3. the value of the final observation is bootstrapped;
//! 4. GAE(γ, λ) over chunk steps (γ per chunk, not γ^C), advantages standardized;
//! 5. `update_epochs` passes over shuffled mini-batches: recompute log-probs, values and
//!    entropies from the stored chains (never resampling), clipped surrogate on the ratio
//!    shaped by `logprob_type`, clipped Huber value loss, entropy bonus; one backward pass,
//!    then AdamW steps with separate policy and value learning rates.
//!
//! With `advantage = grpo` (RLinf's GRPO), steps 2–4 become: reset the environments so that
//! groups of `group_size` share an initial state, run every environment's episode to its end,
//! and give each episode's chunk steps its group-normalized return as advantage; there is no
//! critic and no value loss. With `self_imitation_coef` (GRPO only), each mini-batch's loss adds
//! that weight times the flow-matching loss on chunks that the iteration's successful episodes
//! executed, every group's (self-imitation), reported as `aux_loss`: the policy gradient moves
//! the velocity field only through the density of its stochastic steps, while this trains it,
//! with the objective it was cloned with, towards what worked.
//!
//! Deliberate differences from the reference: the value function is by default an MLP on the
//! observation, not a head on the expert's features ([`CriticInput`]); environments auto-reset
//! (so with GAE the loss mask is all ones and `masked_mean_ratio` reduces to a plain mean; GRPO
//! leaves out the chunk steps after an episode's end); when an episode ends inside a chunk,
//! the chunk's remaining actions run in the next episode and their rewards are dropped (our
//! tasks' time limits are multiples of the default `C`, so only early terminations do this);
//! gradient clipping is per parameter group (policy, value) rather than global; no
//! micro-batch gradient accumulation (mini-batches fit in memory).

use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    Activation, FlowPolicy, NoiseMethod, StochasticSteps, ValueCritic, ValueCriticConfig, load_params, named_params,
    sample_flow_time, seeded_init,
};
use embodia_sim::VecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::check_finite;
use crate::data_parallel::{self, MiniBatchRows, fill_normal_rows};
use crate::flow::gae_collection::{ChunkSampler, collect_chunk_steps};
use crate::flow::grpo::grpo_episodes;
use crate::flow::ppo_flow_config::{AdvantageEstimator, CriticInput, FlowRlMethod, PpoFlowConfig};
use crate::flow::ppo_loss::{
    GroupBatch, PpoStats, epoch_minibatches, gather_chains, kl_guarded_minibatches, ppo_group_loss,
    stochastic_step_groups, tally_self_imitation,
};
use crate::flow::{CHUNK_ACTOR_KEY, ChunkActor, DIFFUSION_KEY};
use crate::metrics::TimeSplit;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::storage::FailedStateReplay;
use crate::transfer::{to_host, to_tensor};
use crate::{Adam, AlgoError, Checkpoint, EpisodeStats, EvalMode, InitialNoise, Learner, MetricRow, check_range};

/// Rollout storage, time-major over chunk steps.
#[derive(Debug, Default)]
struct Rollout {
    /// `[steps, n, obs_dim]`, standardized.
    obs: Vec<f32>,
    /// `[steps, K + 1, n, H·D]`.
    chains: Vec<f32>,
    /// Stochastic step `k*` per chunk step (Flow-SDE), `[steps]`.
    stochastic_step: Vec<usize>,
    /// `[steps, n, C·D]`.
    log_probs: Vec<f32>,
    /// `V(s)` of each row, `[steps, n]`.
    values: Vec<f32>,
    /// `[steps, n]`.
    advantages: Vec<f32>,
    /// `[steps, n]`; GAE only.
    returns: Vec<f32>,
    /// Samples the update uses, indices into `[steps·n]` (GRPO leaves out chunk steps after an
    /// episode's end and filtered groups).
    used: Vec<usize>,
    /// Rows of the iteration's successful episodes, whatever their group (GRPO; self-imitation).
    successful: Vec<usize>,
}

/// PPO for a flow policy started from an SFT checkpoint.
pub struct PpoFlow {
    config: PpoFlowConfig,
    device: Device,
    actor: ChunkActor,
    model: FlowPolicy,
    /// `V(s)` when `config.critic` is observation; its parameters are the value group.
    critic: Option<ValueCritic>,
    policy_optim: Adam,
    value_optim: Adam,
    rng: ChaCha8Rng,
    /// The whole batch's noise in a data-parallel run ([`fill_normal_rows`]).
    batch_noise: Vec<f32>,
    env_steps: u64,
    iterations: u64,
    /// The policy learning rate now: `config.policy_lr`, or adapted ([`PpoFlowConfig::adaptive_lr`]).
    policy_lr: f64,
    episodes: EpisodeStats,
    rollout: Rollout,
    /// Initial states GRPO groups failed from ([`PpoFlowConfig::replay_failed_states`]).
    failed_states: FailedStateReplay,
    last_split: TimeSplit,
    /// GRPO: share of the last collection's groups with differing returns.
    mixed_groups: Option<f64>,
    /// Self-imitation loss summed over the last update's mini-batches, and their count.
    self_imitation_loss: (f64, usize),
}

impl PpoFlow {
    /// A learner whose policy and normalization are those of the SFT checkpoint `init` (its
    /// EMA weights); `device` must have autodiff enabled.
    pub fn new(
        config: PpoFlowConfig,
        env: &dyn VecEnv,
        init: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        let grpo = config.advantage == AdvantageEstimator::Grpo;
        let sil = config.self_imitation_coef;
        check_range("self_imitation_coef", sil, sil == 0.0 || grpo, "0 unless advantage = \"grpo\"")?;
        let balance = config.self_imitation_balance;
        check_range("self_imitation_balance", balance, !balance, "false (instructions: vla-ppo-flow only)")?;
        config.check_task(env)?;
        let algo: String = init.get("algo")?;
        if algo != "sft" {
            return Err(AlgoError::Checkpoint(format!(
                "`algo.init` must be an sft run; {} is from `{algo}`",
                config.init
            )));
        }
        if init.meta.contains_key(DIFFUSION_KEY) {
            return Err(AlgoError::Checkpoint(format!(
                "{} holds a diffusion policy; flow RL starts from a flow policy (dppo fine-tunes diffusion policies)",
                config.init
            )));
        }
        let actor = ChunkActor::from_checkpoint(init, env.obs_spec().vector.dim(), env.action_spec().bounds.dim())?;
        let model = load_params(actor.policy.init(&device), &init.params("ema"))?;
        let gae_with_obs_critic =
            config.advantage == AdvantageEstimator::Gae && config.critic == CriticInput::Observation;
        let critic_config = ValueCriticConfig {
            obs_dim: actor.policy.obs_dim,
            hidden: config.critic_hidden.clone(),
            activation: Activation::Elu,
        };
        let critic = gae_with_obs_critic.then(|| seeded_init(&device, seed, |device| critic_config.init(device)));
        let optim = || Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay);
        Ok(Self {
            policy_optim: optim(),
            value_optim: optim(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xF10F_10F1),
            batch_noise: Vec::new(),
            env_steps: 0,
            iterations: 0,
            policy_lr: config.policy_lr,
            episodes: EpisodeStats::default(),
            rollout: Rollout::default(),
            failed_states: FailedStateReplay::new(config.num_envs / config.group_size.max(1)),
            last_split: TimeSplit::default(),
            mixed_groups: None,
            self_imitation_loss: (0.0, 0),
            actor,
            model,
            critic,
            device,
            config,
        })
    }

    /// Time split of the last iteration.
    pub fn last_time_split(&self) -> TimeSplit {
        self.last_split
    }

    /// Noise tensor `[K + 1, n, H·D]` from the learner's generator.
    fn noise(&mut self, n: usize) -> Tensor<3> {
        let (k, hd) = (self.actor.policy.denoise_steps, self.actor.policy.chunk_width());
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        fill_normal_rows(&mut self.rng, &mut noise, k + 1, &mut self.batch_noise);
        Tensor::from_data(TensorData::new(noise, [k + 1, n, hd]), &self.device.clone().inner())
    }

    /// Values `[n]` of raw observations `[n, obs_dim]`: the observation critic's, or the mean
    /// over an ODE chain's steps as at rollout time.
    fn values(&mut self, model: &FlowPolicy, raw_obs: &[f32]) -> Result<Vec<f32>, AlgoError> {
        let (od, n) = (self.actor.policy.obs_dim, raw_obs.len() / self.actor.policy.obs_dim);
        let obs = to_tensor(&self.actor.normalized_obs(raw_obs), n, od, &self.device.clone().inner());
        if let Some(critic) = &self.critic {
            return to_host(critic.valid().forward(obs));
        }
        let noise = self.noise(n);
        to_host(model.sample(obs, noise, NoiseMethod::Ode, StochasticSteps::None).value)
    }

    /// Clears the rollout for a new iteration.
    fn clear_rollout(&mut self) {
        let r = &mut self.rollout;
        for buf in [&mut r.obs, &mut r.chains, &mut r.log_probs, &mut r.values] {
            buf.clear();
        }
        r.stochastic_step.clear();
        r.used.clear();
        r.successful.clear();
    }

    /// Samples one chunk for every environment from its present observation with the rollout
    /// policy (Flow-SDE: one stochastic step `k*` shared by the batch; Flow-Noise: all steps),
    /// appends observations, chains, `k*`, log-probs and values to the rollout, and writes the
    /// chunk in environment units to `env_actions` (`[n, C, D]`).
    fn sample_chunk(
        &mut self,
        model: &FlowPolicy,
        critic: Option<&ValueCritic>,
        raw_obs: &[f32],
        env_actions: &mut [f32],
    ) -> Result<(), AlgoError> {
        let (od, k) = (self.actor.policy.obs_dim, self.actor.policy.denoise_steps);
        let n = raw_obs.len() / od;
        let obs = self.actor.normalized_obs(raw_obs);
        let k_star = self.config.draw_stochastic_step(k, &mut self.rng);
        let noise = self.noise(n);
        let obs_tensor = to_tensor(&obs, n, od, &self.device.clone().inner());
        let sample = model.sample(
            obs_tensor.clone(),
            noise,
            self.config.noise_method(self.iterations),
            self.config.stochastic_steps(k_star),
        );
        let value = match critic {
            Some(critic) => critic.forward(obs_tensor),
            None => sample.value,
        };
        self.actor.env_actions(raw_obs, &to_host(sample.actions)?, env_actions);
        let r = &mut self.rollout;
        r.obs.extend_from_slice(&obs);
        r.chains.extend(to_host(sample.chains)?);
        r.stochastic_step.push(k_star);
        r.log_probs.extend(to_host(sample.log_prob)?);
        r.values.extend(to_host(value)?);
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
        let critic = self.critic.as_ref().map(|c| c.valid());
        let mut sampler = FlowSampler { learner: self, model: &model, critic: critic.as_ref() };
        let steps = collect_chunk_steps(env, &settings, layout, &mut sampler)?;
        // In a data-parallel run every rank counts the whole batch's steps.
        self.env_steps += steps.env_steps * data_parallel::world().map_or(1, |w| w.size()) as u64;
        let start = Instant::now();
        let r = &mut self.rollout;
        (r.advantages, r.returns) = steps.advantages(&r.values, n, &settings);
        r.used.extend(0..r.values.len());
        self.last_split = steps.split;
        self.last_split.update += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// GRPO collection: resets the environments so that each group of `group_size` shares an
    /// initial state, runs chunk steps until every environment's episode has ended, and gives
    /// each episode's chunk steps its group-normalized return as advantage. Chunk steps after
    /// an episode's end (the environment auto-reset and runs on) and, with
    /// `filter_uniform_groups`, groups whose returns are all equal, are left out of the update.
    fn collect_grpo(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let p = self.actor.policy.clone();
        let model = self.model.valid();
        self.clear_rollout();
        let seed = self.rng.random();
        let settings = self.config.grpo_settings();
        // Taken out while the sampling closure borrows the learner.
        let mut replay = std::mem::take(&mut self.failed_states);
        let episodes = grpo_episodes(env, &settings, &mut replay, seed, (p.chunk, p.action_dim), |env, _, actions| {
            let obs = env.buffers().obs.clone();
            self.sample_chunk(&model, None, &obs, actions)
        });
        self.failed_states = replay;
        let episodes = episodes?;
        episodes.push_ended(&mut self.episodes);
        self.env_steps += episodes.env_steps;
        let r = &mut self.rollout;
        r.advantages = episodes.row_advantages();
        r.used = episodes.used;
        r.successful = episodes.successful_rows;
        // Read by the (zero-weighted) value loss only.
        r.returns.clear();
        r.returns.resize(episodes.steps * n, 0.0);
        self.last_split = episodes.split;
        self.mixed_groups = Some(episodes.mixed_groups);
        Ok(())
    }

    /// `self_imitation_coef` times the flow-matching loss on the chunks executed at rollout rows
    /// `rows` (of successful episodes; indices into `[steps·n]`), `[1]`; records its value. `None`
    /// without rows or weight.
    fn self_imitation_loss(&mut self, rows: &[usize], n: usize) -> Result<Option<Tensor<1>>, AlgoError> {
        let coef = self.config.self_imitation_coef;
        if coef == 0.0 || rows.is_empty() {
            return Ok(None);
        }
        let p = &self.actor.policy;
        let (od, hd, k, b) = (p.obs_dim, p.chunk_width(), p.denoise_steps, rows.len());
        let d = self.device.clone();
        let mut noise = vec![0.0f32; b * hd];
        fill_normal(&mut self.rng, &mut noise);
        let t: Vec<f32> = (0..b).map(|_| sample_flow_time(self.rng.random::<f32>())).collect();
        let r = &self.rollout;
        let obs: Vec<f32> = rows.iter().flat_map(|&i| r.obs[i * od..(i + 1) * od].iter().copied()).collect();
        // The executed chunk is the chain's last element, in the policy's normalized action units.
        let chains = gather_chains(&r.chains, rows, n, k, hd);
        let actions = chains[k * b * hd..].to_vec();
        let loss = self.model.flow_matching_loss(
            to_tensor(&obs, b, od, &d),
            to_tensor(&actions, b, hd, &d),
            to_tensor(&noise, b, hd, &d),
            to_tensor(&t, b, 1, &d),
        );
        let what = "flow PPO self-imitation loss";
        tally_self_imitation(loss, coef, &mut self.self_imitation_loss, what, self.env_steps).map(Some)
    }

    /// Losses of one mini-batch (PPO on rollout rows `indices`, self-imitation on rows
    /// `imitated`; both into `[steps·n]`), with backward pass and optimizer steps unless the KL
    /// guard refuses it. Returns (policy loss, value loss, entropy, approx KL, clip fraction)
    /// and whether it stepped.
    ///
    /// `nominal` is what the loss sums are divided by: the mini-batch's size, or in a
    /// data-parallel run its size over all ranks divided by their number; there the statistics
    /// are averaged over the ranks, and every rank takes the optimizer steps, with zero
    /// gradients where it has no rows in this mini-batch.
    fn update_minibatch(
        &mut self,
        (indices, imitated, nominal): &(Vec<usize>, Vec<usize>, f64),
        n: usize,
    ) -> Result<(PpoStats, bool), AlgoError> {
        let mut total = self.self_imitation_loss(imitated, n)?;
        let p = &self.actor.policy;
        let (od, hd, cd, k) = (p.obs_dim, p.chunk_width(), p.chunk * p.action_dim, p.denoise_steps);
        let d = self.device.clone();
        let method = self.config.noise_method(self.iterations);
        let cfg = &self.config;
        let b = *nominal;
        let groups = stochastic_step_groups(indices, &self.rollout.stochastic_step, n, k, cfg.joint_log_prob());
        let r = &self.rollout;
        let mut stats = PpoStats::default();
        for (g, members) in groups.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
            let m = members.len();
            let mut obs = Vec::with_capacity(m * od);
            let chains = gather_chains(&r.chains, members, n, k, hd);
            let (mut old_lp, mut adv, mut old_v, mut ret) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for &idx in members {
                obs.extend_from_slice(&r.obs[idx * od..(idx + 1) * od]);
                old_lp.extend_from_slice(&r.log_probs[idx * cd..(idx + 1) * cd]);
                adv.push(r.advantages[idx]);
                old_v.push(r.values[idx]);
                ret.push(r.returns[idx]);
            }
            let steps = cfg.stochastic_steps(g);
            let chains = Tensor::<3>::from_data(TensorData::new(chains, [k + 1, m, hd]), &d);
            let obs = to_tensor(&obs, m, od, &d);
            // Values only where the loss uses them: GAE's, from the observation critic or else
            // from the chain.
            let chain_value = cfg.advantage == AdvantageEstimator::Gae && self.critic.is_none();
            let eval = self.model.evaluate_chain(obs.clone(), chains, method, steps, chain_value);
            let value = match &self.critic {
                Some(critic) => Some(critic.forward(obs)),
                None => eval.value,
            };
            let (loss, group_stats) = ppo_group_loss(
                cfg,
                GroupBatch {
                    log_prob: eval.log_prob,
                    entropy: eval.entropy,
                    value,
                    old_lp: &old_lp,
                    adv: &adv,
                    old_v: &old_v,
                    ret: &ret,
                },
                (p.chunk, p.action_dim, k),
                b,
                &d,
            )?;
            stats.add(&group_stats);
            total = Some(match total {
                Some(t) => t + loss,
                None => loss,
            });
        }
        let parallel = data_parallel::world().is_some();
        if parallel {
            stats = stats.averaged_over_ranks();
        }
        if total.is_none() && !parallel {
            return Ok((stats, true));
        }
        check_finite("flow PPO loss", stats.policy_loss + stats.value_loss, self.env_steps)?;
        if cfg.kl_stops_update(stats.approx_kl) {
            return Ok((stats, false));
        }
        let (policy_grads, value_grads) = match total {
            Some(loss) => {
                let mut grads = loss.backward();
                let value_grads = match &self.critic {
                    Some(critic) => GradientsParams::from_module(&mut grads, critic),
                    None => GradientsParams::from_module(&mut grads, self.model.value_head()),
                };
                (GradientsParams::from_grads(grads, &self.model), value_grads)
            }
            None => (GradientsParams::new(), GradientsParams::new()),
        };
        let clip = Some(self.config.max_grad_norm);
        let policy_lr = if self.iterations < self.config.critic_warmup_iterations { 0.0 } else { self.policy_lr };
        let (model, norm) = self.policy_optim.step(policy_lr, self.model.clone(), &policy_grads, clip);
        check_finite("flow PPO policy gradients", norm.unwrap_or(0.0), self.env_steps)?;
        let value_lr = self.config.value_lr;
        let norm = match self.critic.take() {
            Some(critic) => {
                let (critic, norm) = self.value_optim.step(value_lr, critic, &value_grads, clip);
                self.critic = Some(critic);
                self.model = model;
                norm
            }
            None => {
                let (model, norm) = self.value_optim.step(value_lr, model, &value_grads, clip);
                self.model = model;
                norm
            }
        };
        check_finite("flow PPO value gradients", norm.unwrap_or(0.0), self.env_steps)?;
        Ok((stats, true))
    }

    fn update(&mut self, n: usize) -> Result<PpoStats, AlgoError> {
        let c = &self.config;
        self.self_imitation_loss = (0.0, 0);
        let imitated: &[usize] = if c.self_imitation_coef > 0.0 { &self.rollout.successful } else { &[] };
        let ppo: Vec<(Vec<usize>, f64)> = match c.advantage {
            // Every row enters the update: the mini-batches of the whole batch of every rank.
            AdvantageEstimator::Gae => {
                let mut rows = MiniBatchRows::covering(self.rollout.used.len() / n.max(1), n, c.mini_batches);
                let mut out = Vec::new();
                for _ in 0..c.update_epochs {
                    rows.shuffle(&mut self.rng);
                    out.extend((0..rows.count()).map(|k| (rows.batch(k).to_vec(), rows.nominal(k))));
                }
                out
            }
            AdvantageEstimator::Grpo => {
                epoch_minibatches(&self.rollout.used, c.update_epochs, c.mini_batches, &mut self.rng)
                    .into_iter()
                    .map(|rows| {
                        let size = rows.len() as f64;
                        (rows, size)
                    })
                    .collect()
            }
        };
        let imitation = epoch_minibatches(imitated, c.update_epochs, c.mini_batches, &mut self.rng);
        let batches: Vec<(Vec<usize>, Vec<usize>, f64)> = (0..ppo.len().max(imitation.len()))
            .map(|i| {
                let (rows, nominal) = ppo.get(i).cloned().unwrap_or_default();
                (rows, imitation.get(i).cloned().unwrap_or_default(), nominal)
            })
            .collect();
        let means = kl_guarded_minibatches(&batches, |batch| self.update_minibatch(batch, n))?;
        self.policy_lr = self.config.adapted_policy_lr(self.policy_lr, means.approx_kl);
        Ok(means)
    }
}

/// A [`PpoFlow`] with the inference copies of its networks, as a GAE collection samples it.
struct FlowSampler<'a> {
    learner: &'a mut PpoFlow,
    model: &'a FlowPolicy,
    critic: Option<&'a ValueCritic>,
}

impl ChunkSampler for FlowSampler<'_> {
    fn sample_chunk(&mut self, obs: &[f32], env_actions: &mut [f32]) -> Result<(), AlgoError> {
        self.learner.sample_chunk(self.model, self.critic, obs, env_actions)
    }

    fn values(&mut self, obs: &[f32]) -> Result<Vec<f32>, AlgoError> {
        self.learner.values(self.model, obs)
    }

    fn episodes(&mut self) -> &mut EpisodeStats {
        &mut self.learner.episodes
    }
}

impl Learner for PpoFlow {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(self.actor.initial_noise)
    }

    fn name(&self) -> &'static str {
        match self.config.method {
            FlowRlMethod::Sde => "ppo-flow-sde",
            FlowRlMethod::Noise => "ppo-flow-noise",
        }
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        match self.config.advantage {
            AdvantageEstimator::Gae => self.collect(env)?,
            AdvantageEstimator::Grpo => self.collect_grpo(env)?,
        }
        let start = Instant::now();
        let stats = self.update(env.num_envs())?;
        self.last_split.update += start.elapsed().as_secs_f64();
        self.iterations += 1;
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.combine_over_ranks();
        self.episodes.drain_into(&mut row, env.info().has_success);
        stats.write_to(&mut row);
        row.mixed_groups = self.mixed_groups;
        let (sil_sum, sil_count) = self.self_imitation_loss;
        row.aux_loss = (sil_count > 0).then(|| sil_sum / sil_count as f64);
        row.learning_rate = Some(self.policy_lr);
        Ok(row)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        self.actor.act(&self.model.valid(), obs, actions, sampling, &self.device.clone().inner())
    }

    fn chunk_len(&self) -> usize {
        self.actor.policy.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        if let Some(critic) = &self.critic {
            ckpt.insert_params("critic", named_params(critic));
        }
        ckpt.put_optim("policy", &self.policy_optim)?;
        ckpt.put_optim("value", &self.value_optim)?;
        ckpt.put("algo", &self.name())?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("iterations", &self.iterations)?;
        ckpt.put("policy_lr", &self.policy_lr)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo(self.name())?;
        self.actor = ChunkActor::from_checkpoint(ckpt, self.actor.policy.obs_dim, self.actor.policy.action_dim)?;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("policy", &mut self.policy_optim, &self.model, &plain)?;
        match self.critic.take() {
            Some(critic) => {
                let critic = load_params(critic, &ckpt.params("critic"))?;
                ckpt.restore_optim("value", &mut self.value_optim, &critic, &plain)?;
                self.critic = Some(critic);
            }
            None => ckpt.restore_optim("value", &mut self.value_optim, &self.model, &plain)?,
        }
        self.env_steps = ckpt.get("env_steps")?;
        self.iterations = ckpt.get("iterations")?;
        // Checkpoints from before the adaptive learning rate have none: the configured one.
        self.policy_lr = ckpt.get("policy_lr").unwrap_or(self.config.policy_lr);
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_lr_follows_the_kl_within_its_bounds() {
        let cfg = PpoFlowConfig { target_kl: 0.01, adaptive_lr: true, policy_lr: 3e-5, ..Default::default() };
        assert!((cfg.adapted_policy_lr(3e-5, 0.03) - 2e-5).abs() < 1e-15);
        assert_eq!(cfg.adapted_policy_lr(2e-5, 0.01), 2e-5);
        assert!((cfg.adapted_policy_lr(1e-5, 0.001) - 1.5e-5).abs() < 1e-15);
        assert_eq!(cfg.adapted_policy_lr(3e-5, 0.0), 3e-5, "never above policy_lr");
        assert_eq!(cfg.adapted_policy_lr(3e-7, 1.0), 3e-7, "never below policy_lr / 100");
        assert_eq!(PpoFlowConfig { adaptive_lr: false, ..cfg.clone() }.adapted_policy_lr(3e-5, 1.0), 3e-5);
        let err = PpoFlowConfig { target_kl: 0.0, ..cfg }.validate().unwrap_err().to_string();
        assert!(err.contains("algo.adaptive_lr"), "{err}");
    }

    #[test]
    fn replaying_failed_states_needs_grpo_and_a_fraction() {
        let grpo =
            PpoFlowConfig { advantage: AdvantageEstimator::Grpo, replay_failed_states: 0.5, ..Default::default() };
        assert!(grpo.validate().is_ok());
        let err =
            PpoFlowConfig { advantage: AdvantageEstimator::Gae, ..grpo.clone() }.validate().unwrap_err().to_string();
        assert!(err.contains("algo.replay_failed_states") && err.contains("grpo"), "{err}");
        let err = PpoFlowConfig { replay_failed_states: 1.5, ..grpo }.validate().unwrap_err().to_string();
        assert!(err.contains("algo.replay_failed_states") && err.contains("≤ 1"), "{err}");
    }

    #[test]
    fn noise_level_anneals_linearly_then_holds() {
        let mut c = PpoFlowConfig { noise_anneal: true, noise_anneal_iterations: 400, ..Default::default() };
        assert!((c.noise_level_at(0) - 0.7).abs() < 1e-12);
        assert!((c.noise_level_at(200) - 0.5).abs() < 1e-12);
        assert!((c.noise_level_at(4000) - 0.3).abs() < 1e-12);
        c.noise_anneal = false;
        assert_eq!(c.noise_level_at(200), 0.5);
    }
}
