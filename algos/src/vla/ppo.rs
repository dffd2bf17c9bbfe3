//! πRL's PPO for the VLA (RLinf's recipe for π0 / π0.5): Flow-SDE or Flow-Noise sampling with
//! GRPO or GAE advantages, from a `vla-sft` checkpoint, on every instruction of a
//! language-conditioned task at once (multi-task RL in parallel environments). The second half
//! of πRL's recipe.
//!
//! Per iteration (RLinf's LIBERO mode: no auto-reset within an iteration, the loss masked after
//! each episode's end):
//! 1. reset the environments; with `advantage = grpo`, groups of `group_size` share an initial
//!    state (the same instruction, the same objects: the group baseline compares like with like);
//! 2. run every environment's episode to its end, one chunk step at a time: render, observe
//!    (images, instruction, proprioception), encode the prefix once, sample a chunk with the
//!    rollout policy for every environment whose episode still runs (Flow-SDE: one stochastic
//!    denoising step `k*` shared by the batch; Flow-Noise: all steps with the learned std),
//!    store the observation, the chain, `k*`, the old log-probs `[C·D]` and (GAE) the value
//!    function's value, execute the chunk;
//! 3. advantages:
//!    - `grpo`: each episode's chunk steps get the group-normalized return (weighted so that every
//!      episode counts equally with `equal_episode_weights`); groups whose returns are all
//!      equal are left out (`filter_uniform_groups`);
//!    - `gae`: GAE(γ, λ) over each episode's chunk steps with the value function (below),
//!      standardized over the episodes' steps; an episode cut by the time limit counts as terminated (its final images are
//!      gone after the auto-reset; RLinf bootstraps it);
//! 4. `update_epochs` passes over shuffled mini-batches: recompute log-probs, entropies and (GAE)
//!    values from the stored chains and states (re-encoding the stored observations with the
//!    present weights), clipped surrogate, clipped Huber value loss, entropy bonus, one
//!    backward pass, one AdamW step on the value function at `value_lr` and one on the rest of
//!    the model at `policy_lr` (0 during `critic_warmup_iterations`); with
//!    `self_imitation_coef`, plus that weight times the flow-matching loss on the chunks that
//!    the iteration's successful episodes executed (self-imitation; every group's, spread over
//!    the mini-batches as the PPO rows are), reported as `aux_loss`.
//!
//! The hyperparameters are [`PpoFlowConfig`]'s. With GAE, `critic` picks the value function:
//! - `expert_features`: the VLA's own value head (πRL's, on the prefix pooled over
//!   its valid tokens, π0.5's `value_after_vlm`, or on the expert's features, per the model's
//!   `value_input`), which reads the state from the images and the instruction;
//! - `observation`: a separate MLP (`critic_hidden`, ELU) on the environment's state, the
//!   task's `[[env.observations.critic]]` terms where it has them, else its vector observation,
//!   standardized by running statistics (asymmetric actor-critic: privileged state the policy
//!   never sees, used only in training). In simulation the critic may know whether the
//!   instructed cube is in the hand, which a success reward at the end of a pick cannot tell
//!   the grasp's chunk step otherwise.
//!
//! Not implemented for the VLA: one-step students alongside (`distill_during_rl`), refused with
//! an error naming the field.

use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::vla::{VlaInput, VlaModel};
use embodia_policies::{
    Activation, ValueCritic, ValueCriticConfig, load_params, named_params, sample_flow_time, seeded_init,
};
use embodia_sim::VecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::check_finite;
use crate::flow::grpo::grpo_episodes;
use crate::flow::ppo_loss::{
    GroupBatch, PpoStats, gather_chains, kl_guarded_minibatches, minibatches_with_imitation, ppo_group_loss,
    stochastic_step_groups, tally_self_imitation,
};
use crate::metrics::TimeSplit;
use crate::normalizer::RunningNormalizer;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::storage::FailedStateReplay;
use crate::transfer::{to_host, to_tensor};
use crate::vla::{Grounding, VLA_ACTOR_KEY, VlaActor, needs_images, vla_error};
use crate::{
    Adam, AdvantageEstimator, AlgoError, Checkpoint, CriticInput, EpisodeStats, EvalMode, FlowRlMethod, InitialNoise,
    Learner, MetricRow, PpoFlowConfig, check_range,
};

/// What one iteration stores, row `step·n + env` for chunk step `step`.
#[derive(Default)]
struct VlaRollout {
    /// The observations, `[rows]` of a [`VlaInput`] (images `[rows, V, H, W, 3]`, tokens and
    /// mask `[rows, max_len]`, standardized proprioception `[rows, proprio_dim]`).
    obs: VlaInput,
    /// Denoising chains, `[steps, K + 1, n, H·D]`.
    chains: Vec<f32>,
    /// The stochastic denoising step of each chunk step, `[steps]`.
    stochastic_step: Vec<usize>,
    /// Old log-probs, `[rows, C·D]`.
    log_probs: Vec<f32>,
    /// Standardized state critic inputs, `[rows, critic_dim]` (GAE with the state critic).
    critic_obs: Vec<f32>,
    /// The value function's values at rollout time, `[rows]` (GAE).
    values: Vec<f32>,
    /// Advantages, `[rows]`.
    advantages: Vec<f32>,
    /// Value targets, `[rows]` (GAE).
    returns: Vec<f32>,
    /// Rows that enter the update.
    used: Vec<usize>,
    /// Rows of the successful episodes, whatever their group (self-imitation).
    successful: Vec<usize>,
    /// Self-imitation weight of each environment's episode, `[n]`.
    imitation_weights: Vec<f32>,
}

/// Weights of episodes `[n]` with instruction keys `instructions` (equal keys, equal
/// instruction): one over the number of successful episodes (`success`) with the same key, 0
/// for the failed ones.
fn instruction_balanced_weights<K: PartialEq>(instructions: &[K], success: &[bool]) -> Vec<f32> {
    (0..instructions.len())
        .map(|i| match success[i] {
            true => {
                let same = (0..instructions.len()).filter(|&j| success[j] && instructions[j] == instructions[i]);
                1.0 / same.count() as f32
            }
            false => 0.0,
        })
        .collect()
}

/// Rows `rows` of `x` (`[lead, n, width]`), as `[lead, rows, width]`.
pub(crate) fn select_rows(x: &[f32], rows: &[usize], n: usize, width: usize) -> Vec<f32> {
    x.chunks_exact(n * width)
        .flat_map(|slab| rows.iter().flat_map(move |&i| &slab[i * width..(i + 1) * width]))
        .copied()
        .collect()
}

/// `x` (`[lead, rows, width]`) placed at rows `rows` of a zeroed `[lead, n, width]`.
pub(crate) fn scatter_rows(x: &[f32], rows: &[usize], n: usize, width: usize) -> Vec<f32> {
    let lead = x.len() / (rows.len() * width).max(1);
    let mut out = vec![0.0f32; lead * n * width];
    for (src, dst) in x.chunks_exact(width).zip((0..lead).flat_map(|l| rows.iter().map(move |&i| l * n + i))) {
        out[dst * width..(dst + 1) * width].copy_from_slice(src);
    }
    out
}

/// PPO with GRPO or GAE advantages for a VLA started from a `vla-sft` checkpoint.
pub struct VlaPpo {
    config: PpoFlowConfig,
    device: Device,
    actor: VlaActor,
    model: VlaModel,
    /// The value function on the environment's state (GAE with `critic = "observation"`).
    critic: Option<StateCritic>,
    /// Every parameter of the model but the value head's.
    optim: Adam,
    /// The value function's parameters (GAE): the state critic's, or the model's value head.
    value_optim: Adam,
    rng: ChaCha8Rng,
    env_steps: u64,
    iterations: u64,
    /// The policy learning rate now ([`PpoFlowConfig::adaptive_lr`]).
    policy_lr: f64,
    episodes: EpisodeStats,
    rollout: VlaRollout,
    /// The present observation of every environment (reused buffers).
    observation: VlaInput,
    /// Initial states GRPO groups failed from ([`PpoFlowConfig::replay_failed_states`]).
    failed_states: FailedStateReplay,
    last_split: TimeSplit,
    /// GRPO: share of the last collection's groups with differing returns.
    mixed_groups: Option<f64>,
    /// Self-imitation: the flow-matching loss on successful chunks summed over the last
    /// update's mini-batches, and their count.
    self_imitation_loss: (f64, usize),
}

/// An MLP value function on the environment's state and the running statistics that
/// standardize its input.
struct StateCritic {
    net: ValueCritic,
    norm: RunningNormalizer,
    /// The present standardized input of every environment, `[n, dim]` (reused buffer).
    input: Vec<f32>,
}

impl StateCritic {
    /// The environment's state for the critic: its critic observation where the task has one,
    /// else its vector observation, `[n, dim]`.
    fn raw(env: &dyn VecEnv) -> &[f32] {
        let b = env.buffers();
        if env.obs_spec().critic.is_some() { &b.critic_obs } else { &b.obs }
    }

    /// Updates the statistics with the environments' present state and standardizes it into
    /// `self.input`.
    fn observe(&mut self, env: &dyn VecEnv) {
        let raw = Self::raw(env);
        self.norm.update(raw);
        self.input.clear();
        self.input.extend_from_slice(raw);
        self.norm.normalize(&mut self.input);
    }
}

impl VlaPpo {
    /// A learner whose model and normalization are those of the `vla-sft` checkpoint `init`
    /// (its EMA weights); `device` must have autodiff enabled.
    pub fn new(
        config: PpoFlowConfig,
        env: &dyn VecEnv,
        init: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        check_range(
            "distill_during_rl",
            "set",
            config.distill_during_rl.is_none(),
            "absent: not implemented for the VLA",
        )?;
        config.check_task(env)?;
        let (actor, model) = VlaActor::from_sft_checkpoint(init, &config.init, env, &device)?;
        let state_critic = config.advantage == AdvantageEstimator::Gae && config.critic == CriticInput::Observation;
        let critic = state_critic.then(|| {
            let spec = env.obs_spec();
            let dim = spec.critic.as_ref().unwrap_or(&spec.vector).dim();
            let net =
                ValueCriticConfig { obs_dim: dim, hidden: config.critic_hidden.clone(), activation: Activation::Elu };
            StateCritic {
                net: seeded_init(&device, seed, |device| net.init(device)),
                norm: RunningNormalizer::new(dim, 10.0),
                input: Vec::new(),
            }
        });
        let optim = || Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay);
        Ok(Self {
            optim: optim(),
            value_optim: optim(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x71A_F10F),
            env_steps: 0,
            iterations: 0,
            policy_lr: config.policy_lr,
            episodes: EpisodeStats::default(),
            rollout: VlaRollout::default(),
            observation: VlaInput::default(),
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

    /// Time split of the last iteration (rendering counts as simulation).
    pub fn last_time_split(&self) -> TimeSplit {
        self.last_split
    }

    /// Samples one chunk for every environment whose episode still runs (`running`, `[n]`) from
    /// what it observes now with the rollout policy, appends the observations, chains, `k*`
    /// and log-probs of all `n` to the rollout (zeros for the others: their rows are never
    /// used), and writes the chunks in environment units to `env_actions` (`[n, C, D]`).
    fn sample_chunk(
        &mut self,
        model: &VlaModel,
        env: &dyn VecEnv,
        cameras: &[usize],
        running: &[bool],
        env_actions: &mut [f32],
    ) -> Result<(), AlgoError> {
        let (n, k, hd) = (env.num_envs(), self.actor.model.denoise_steps, self.actor.chunk.policy.chunk_width());
        let cd = self.actor.model.chunk * self.actor.model.action_dim;
        self.actor.observe(env, cameras, &model.tokenizer(), &mut self.observation)?;
        let k_star = self.config.draw_stochastic_step(k, &mut self.rng);
        // Drawn for all n, so that an environment's noise does not depend on which others ended.
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        fill_normal(&mut self.rng, &mut noise);
        let active: Vec<usize> = (0..n).filter(|&i| running[i]).collect();
        let plain = self.device.clone().inner();
        let batch = model.prepare(&self.observation.select(&active), &plain).map_err(vla_error)?;
        let noise = select_rows(&noise, &active, n, hd);
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, active.len(), hd]), &plain);
        let sample = model.sample(
            &model.encode(&batch),
            noise,
            self.config.noise_method(self.iterations),
            self.config.stochastic_steps(k_star),
        );
        let actions = scatter_rows(&to_host(sample.actions)?, &active, n, hd);
        self.actor.chunk.env_actions(&env.buffers().obs, &actions, env_actions);
        let (o, r) = (&self.observation, &mut self.rollout);
        r.obs.images.extend_from_slice(&o.images);
        r.obs.tokens.extend_from_slice(&o.tokens);
        r.obs.token_mask.extend_from_slice(&o.token_mask);
        r.obs.proprio.extend_from_slice(&o.proprio);
        r.obs.batch += n;
        (r.obs.views, r.obs.height, r.obs.width) = (o.views, o.height, o.width);
        r.chains.extend(scatter_rows(&to_host(sample.chains)?, &active, n, hd));
        r.stochastic_step.push(k_star);
        r.log_probs.extend(scatter_rows(&to_host(sample.log_prob)?, &active, n, cd));
        if self.config.advantage == AdvantageEstimator::Gae {
            let values = match self.critic.as_mut() {
                Some(critic) => {
                    critic.observe(env);
                    r.critic_obs.extend_from_slice(&critic.input);
                    let dim = critic.norm.dim();
                    to_host(critic.net.valid().forward(to_tensor(&critic.input, n, dim, &plain)))?
                }
                None => scatter_rows(&to_host(sample.value)?, &active, n, 1),
            };
            r.values.extend(values);
        }
        Ok(())
    }

    /// Collection (module docs, steps 1–3).
    fn collect(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let layout = (self.actor.model.chunk, self.actor.model.action_dim);
        let cameras = self.actor.camera_indices(env)?;
        let model = self.model.valid();
        self.rollout = VlaRollout::default();
        let seed = self.rng.random();
        let gae = self.config.advantage == AdvantageEstimator::Gae;
        let mut settings = self.config.grpo_settings();
        if gae {
            // Independent initial states; every episode's steps enter the update.
            (settings.group_size, settings.filter_uniform_groups) = (1, false);
        }
        // Taken out while the sampling closure borrows the learner.
        let mut replay = std::mem::take(&mut self.failed_states);
        let episodes = grpo_episodes(env, &settings, &mut replay, seed, layout, |env, running, actions| {
            self.sample_chunk(&model, env, &cameras, running, actions)
        });
        self.failed_states = replay;
        let episodes = episodes?;
        episodes.push_ended(&mut self.episodes);
        self.env_steps += episodes.env_steps;
        self.last_split = episodes.split;
        self.mixed_groups = (!gae).then_some(episodes.mixed_groups);
        let r = &mut self.rollout;
        if gae {
            let start = Instant::now();
            (r.advantages, r.returns) = episodes.gae(&r.values, n, self.config.gamma, self.config.lambda);
            self.last_split.update += start.elapsed().as_secs_f64();
        } else {
            r.advantages = episodes.row_advantages();
        }
        r.used = episodes.used;
        r.successful = episodes.successful_rows;
        let mut success = vec![false; n];
        for &row in &r.successful {
            success[row % n] = true;
        }
        r.imitation_weights = match self.config.self_imitation_balance {
            true => {
                // The first chunk step's tokens name each episode's instruction.
                let len = r.obs.tokens.len() / r.obs.batch.max(1);
                let keys: Vec<&[u32]> = (0..n).map(|i| &r.obs.tokens[i * len..(i + 1) * len]).collect();
                instruction_balanced_weights(&keys, &success)
            }
            false => success.iter().map(|&s| if s { 1.0 } else { 0.0 }).collect(),
        };
        debug_assert_eq!(r.advantages.len(), episodes.steps * n);
        Ok(())
    }

    /// `self_imitation_coef` times the flow-matching loss on the chunks executed at rollout rows
    /// `rows` (of successful episodes), their mean weighted by `imitation_weights`, `[1]`;
    /// records its value. `None` without rows or weight.
    fn self_imitation_loss(&mut self, rows: &[usize], n: usize) -> Result<Option<Tensor<1>>, AlgoError> {
        let coef = self.config.self_imitation_coef;
        if coef == 0.0 || rows.is_empty() {
            return Ok(None);
        }
        let m = &self.actor.model;
        let (h, ad, k, b) = (m.horizon, m.action_dim, m.denoise_steps, rows.len());
        let d = self.device.clone();
        let mut noise = vec![0.0f32; b * h * ad];
        fill_normal(&mut self.rng, &mut noise);
        let t: Vec<f32> = (0..b).map(|_| sample_flow_time(self.rng.random::<f32>())).collect();
        // The executed chunk is the chain's last element, in normalized action units.
        let chains = gather_chains(&self.rollout.chains, rows, n, k, h * ad);
        let actions: Vec<f32> = chains[k * b * h * ad..].to_vec();
        let batch = self.model.prepare(&self.rollout.obs.select(rows), &d).map_err(vla_error)?;
        let losses = self.model.flow_matching_sample_losses_at(
            &self.model.encode(&batch),
            Tensor::from_data(TensorData::new(actions, [b, h, ad]), &d),
            Tensor::from_data(TensorData::new(noise, [b, h, ad]), &d),
            Tensor::from_data(TensorData::new(t, [b, 1]), &d),
        );
        let weights: Vec<f32> = rows.iter().map(|&i| self.rollout.imitation_weights[i % n]).collect();
        let total = weights.iter().sum::<f32>() as f64;
        let loss = (losses * Tensor::from_data(TensorData::new(weights, [b]), &d)).sum().div_scalar(total);
        let what = "VLA PPO self-imitation loss";
        tally_self_imitation(loss, coef, &mut self.self_imitation_loss, what, self.env_steps).map(Some)
    }

    /// Loss of one mini-batch (PPO on rollout rows `indices`, self-imitation on rows
    /// `imitated`), backward pass and optimizer steps unless the KL guard refuses it. Returns
    /// (policy loss, value loss (0 under GRPO), entropy, approx KL, clip fraction) and whether it
    /// stepped.
    fn update_minibatch(
        &mut self,
        (indices, imitated): &(Vec<usize>, Vec<usize>),
        n: usize,
    ) -> Result<(PpoStats, bool), AlgoError> {
        let m = &self.actor.model;
        let (hd, cd, k) = (m.horizon * m.action_dim, m.chunk * m.action_dim, m.denoise_steps);
        let layout = (m.chunk, m.action_dim, k);
        let d = self.device.clone();
        let method = self.config.noise_method(self.iterations);
        let gae = self.config.advantage == AdvantageEstimator::Gae;
        let b = indices.len();
        let groups = stochastic_step_groups(indices, &self.rollout.stochastic_step, n, k, self.config.joint_log_prob());
        let mut total = self.self_imitation_loss(imitated, n)?;
        let mut stats = PpoStats::default();
        for (g, members) in groups.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
            let r = &self.rollout;
            let rows = members.len();
            let chains = gather_chains(&r.chains, members, n, k, hd);
            let old_lp: Vec<f32> =
                members.iter().flat_map(|&i| r.log_probs[i * cd..(i + 1) * cd].iter().copied()).collect();
            let adv: Vec<f32> = members.iter().map(|&i| r.advantages[i]).collect();
            let (old_v, ret): (Vec<f32>, Vec<f32>) = match gae {
                true => members.iter().map(|&i| (r.values[i], r.returns[i])).unzip(),
                false => (vec![0.0; rows], vec![0.0; rows]),
            };
            let batch = self.model.prepare(&self.rollout.obs.select(members), &d).map_err(vla_error)?;
            let chains = Tensor::<3>::from_data(TensorData::new(chains, [k + 1, rows, hd]), &d);
            let eval = self.model.evaluate_chain(
                &self.model.encode(&batch),
                chains,
                method,
                self.config.stochastic_steps(g),
                gae && self.critic.is_none(),
            );
            let value = match &self.critic {
                Some(critic) => {
                    let dim = critic.norm.dim();
                    let input: Vec<f32> =
                        members.iter().flat_map(|&i| r.critic_obs[i * dim..(i + 1) * dim].iter().copied()).collect();
                    Some(critic.net.forward(to_tensor(&input, rows, dim, &d)))
                }
                None => eval.value,
            };
            let group = GroupBatch {
                log_prob: eval.log_prob,
                entropy: eval.entropy,
                value,
                old_lp: &old_lp,
                adv: &adv,
                old_v: &old_v,
                ret: &ret,
            };
            let (loss, group_stats) = ppo_group_loss(&self.config, group, layout, b as f64, &d)?;
            stats.add(&group_stats);
            total = Some(match total {
                Some(t) => t + loss,
                None => loss,
            });
        }
        let Some(loss) = total else { return Ok((stats, true)) };
        check_finite("VLA PPO loss", stats.policy_loss, self.env_steps)?;
        if self.config.kl_stops_update(stats.approx_kl) {
            return Ok((stats, false));
        }
        let mut grads = loss.backward();
        let value_grads = match &self.critic {
            Some(critic) => GradientsParams::from_module(&mut grads, &critic.net),
            None => GradientsParams::from_module(&mut grads, self.model.value_head()),
        };
        let grads = GradientsParams::from_grads(grads, &self.model);
        let clip = Some(self.config.max_grad_norm);
        let warming_up = gae && self.iterations < self.config.critic_warmup_iterations;
        let policy_lr = if warming_up { 0.0 } else { self.policy_lr };
        let (model, norm) = self.optim.step(policy_lr, self.model.clone(), &grads, clip);
        check_finite("VLA PPO gradients", norm.unwrap_or(0.0), self.env_steps)?;
        self.model = model;
        if gae {
            let lr = self.config.value_lr;
            let norm = match self.critic.as_mut() {
                Some(critic) => {
                    let (net, norm) = self.value_optim.step(lr, critic.net.clone(), &value_grads, clip);
                    critic.net = net;
                    norm
                }
                None => {
                    let (model, norm) = self.value_optim.step(lr, self.model.clone(), &value_grads, clip);
                    self.model = model;
                    norm
                }
            };
            check_finite("VLA PPO value gradients", norm.unwrap_or(0.0), self.env_steps)?;
        }
        Ok((stats, true))
    }

    fn update(&mut self, n: usize) -> Result<PpoStats, AlgoError> {
        let c = &self.config;
        self.self_imitation_loss = (0.0, 0);
        let imitated: &[usize] = if c.self_imitation_coef > 0.0 { &self.rollout.successful } else { &[] };
        let batches =
            minibatches_with_imitation(&self.rollout.used, imitated, c.update_epochs, c.mini_batches, &mut self.rng);
        let means = kl_guarded_minibatches(&batches, |batch| self.update_minibatch(batch, n))?;
        self.policy_lr = self.config.adapted_policy_lr(self.policy_lr, means.approx_kl);
        Ok(means)
    }
}

impl Learner for VlaPpo {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(self.actor.chunk.initial_noise)
    }

    fn name(&self) -> &'static str {
        match self.config.method {
            FlowRlMethod::Sde => "vla-ppo-flow-sde",
            FlowRlMethod::Noise => "vla-ppo-flow-noise",
        }
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        self.collect(env)?;
        let start = Instant::now();
        let stats = self.update(env.num_envs())?;
        self.last_split.update += start.elapsed().as_secs_f64();
        self.iterations += 1;
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.drain_into(&mut row, env.info().has_success);
        stats.write_to(&mut row);
        // GRPO has no critic: no value loss to report.
        row.value_loss = (self.config.advantage == AdvantageEstimator::Gae).then_some(stats.value_loss);
        row.mixed_groups = self.mixed_groups;
        let (sil_sum, sil_count) = self.self_imitation_loss;
        row.aux_loss = (sil_count > 0).then(|| sil_sum / sil_count as f64);
        row.learning_rate = Some(self.policy_lr);
        Ok(row)
    }

    fn act(&self, _obs: &[f32], _actions: &mut [f32], _sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        Err(needs_images())
    }

    fn act_env(
        &self,
        env: &dyn VecEnv,
        actions: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
    ) -> Result<(), AlgoError> {
        self.actor.act(
            &self.model.valid(),
            env,
            actions,
            sampling,
            Grounding::Predicted,
            &self.device.clone().inner(),
        )?;
        Ok(())
    }

    fn chunk_len(&self) -> usize {
        self.actor.model.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        if let Some(critic) = &self.critic {
            ckpt.insert_params("critic", named_params(&critic.net));
            ckpt.put("critic_normalizer", &critic.norm)?;
        }
        ckpt.put_optim("model", &self.optim)?;
        ckpt.put_optim("value", &self.value_optim)?;
        ckpt.put("algo", &self.name())?;
        ckpt.put(VLA_ACTOR_KEY, &self.actor)?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("iterations", &self.iterations)?;
        ckpt.put("policy_lr", &self.policy_lr)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo(self.name())?;
        self.actor = VlaActor::from_checkpoint(ckpt, self.actor.model.proprio_dim, self.actor.model.action_dim)?;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("model", &mut self.optim, &self.model, &plain)?;
        // Runs written before GAE (GRPO only) have no value optimizer state.
        if ckpt.meta.contains_key("optim_value_steps") {
            match self.critic.as_mut() {
                Some(critic) => {
                    critic.net = load_params(critic.net.clone(), &ckpt.params("critic"))?;
                    critic.norm = ckpt.get("critic_normalizer")?;
                    ckpt.restore_optim("value", &mut self.value_optim, &critic.net, &plain)?;
                }
                None => ckpt.restore_optim("value", &mut self.value_optim, &self.model, &plain)?,
            }
        }
        self.env_steps = ckpt.get("env_steps")?;
        self.iterations = ckpt.get("iterations")?;
        self.policy_lr = ckpt.get("policy_lr").unwrap_or(self.config.policy_lr);
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two successful episodes of instruction 1, one of instruction 2, a failed one of each.
    #[test]
    fn balanced_weights_give_every_successful_instruction_the_same_total() {
        let weights = instruction_balanced_weights(&[1, 1, 2, 1, 2], &[true, true, true, false, false]);
        assert_eq!(weights, vec![0.5, 0.5, 1.0, 0.0, 0.0]);
    }

    /// Rows 0 and 2 of 3, width 2, two leading slabs (as a chain's `[K + 1, n, H·D]`): the
    /// selection keeps them in order per slab and scattering puts them back with row 1 zeroed.
    #[test]
    fn selected_rows_scatter_back_to_their_places() {
        let x: Vec<f32> = (1..=12).map(|v| v as f32).collect();
        let picked = select_rows(&x, &[0, 2], 3, 2);
        assert_eq!(picked, vec![1.0, 2.0, 5.0, 6.0, 7.0, 8.0, 11.0, 12.0]);
        let back = scatter_rows(&picked, &[0, 2], 3, 2);
        assert_eq!(back, vec![1.0, 2.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0, 0.0, 0.0, 11.0, 12.0]);
    }
}
