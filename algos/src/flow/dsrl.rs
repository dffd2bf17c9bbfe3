//! DSRL (Wagenmaker et al. 2025, "Steering Your Diffusion Policy with Latent Space
//! Reinforcement Learning") for a flow policy cloned by `sft`: SAC in its initial-noise space,
//! the clone's weights frozen.
//!
//! A flow policy maps an initial noise `w` (`[H·D]`, what `x_1 ~ N(0, I)` is when it samples)
//! through its deterministic ODE to an action chunk. A small noise policy `π_w(w | s)` picks
//! that noise instead of drawing it, and SAC trains it on the task's reward in the MDP whose
//! actions are noises and whose steps are executed chunks. Whatever the noise policy picks, the
//! chunk is one the clone can produce, so RL cannot leave the demonstrations' manifold; and the
//! clone's weights never change, so nothing it does well is unlearned.
//!
//! How it works, per iteration (every environment runs one episode from a reset, as GRPO's
//! collection does with groups of one):
//! 1. every chunk step: standardize the observation as the clone does, draw
//!    `a ∈ [-1, 1]^{H·D}` (the first `random_iterations` iterations: `N(0, I) / noise_bound`
//!    clipped, the clone's own noise; after: a sample of the noise policy), run the clone's ODE
//!    from `w = noise_bound · a` and execute the chunk's first `C` actions;
//! 2. store `(s, a, r, s', done)` per chunk step in the replay buffer
//!    ([`push_chunk_transitions`]), `r` the chunk's summed reward (scaled). An episode that
//!    reaches the time limit counts as terminated;
//! 3. `updates_per_iteration` SAC updates ([`sac_updates`]: twin critics, Polyak targets,
//!    automatic temperature; the critics' target leaves the entropy bonus out, as `vla-dsrl`).
//!
//! Acting: a sample of the noise policy ([`crate::EvalMode::Sampled`], the reference mode), or
//! its mode in either deterministic mode; then the ODE. `vla-dsrl` ([`crate::vla`]) is the same
//! algorithm on the VLA's features and shares steps 2 and 3.

use std::time::Instant;

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{FlowPolicy, NoiseMethod, StochasticSteps, load_params, named_params};
use embodia_sim::VecEnv;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::classic::sac::SoftActorCritic;
use crate::flow::DIFFUSION_KEY;
use crate::flow::grpo::{GrpoEpisodes, GrpoSettings, grpo_episodes};
use crate::metrics::TimeSplit;
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::storage::{FailedStateReplay, ReplayBuffer};
use crate::transfer::{to_host, to_tensor};
use crate::{
    AlgoError, CHUNK_ACTOR_KEY, Checkpoint, ChunkActor, EpisodeStats, EvalMode, Learner, MetricRow, RewardSource,
    SacConfig, TargetEntropy, check_num_envs, check_range,
};

/// DSRL hyperparameters for flow policies on state observations. SAC's settings are DSRL's
/// for its simulated tasks (batch 256, Polyak 0.005, target entropy 0, noise bound 2.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DsrlConfig {
    /// Run directory of the `sft` run (a flow policy) whose clone is steered, frozen. Required.
    pub init: String,
    /// Environments, each running one episode per iteration. Default 64.
    pub num_envs: usize,
    /// Bound of every initial-noise coordinate the noise policy picks: `w = noise_bound · a`,
    /// `a ∈ [-1, 1]`. Default 2.5; the clone draws `N(0, 1)`.
    pub noise_bound: f64,
    /// Bounds of the noise policy's pre-squash log std. It starts at their midpoint: the
    /// default [-3.4, 2.0] starts it at `w = 2.5 · tanh(N(0, 0.5²))`, close to the clone's
    /// `N(0, 1)`.
    pub log_std_bounds: [f64; 2],
    /// What rewards a chunk: the task's reward terms (default: they rank the failed episodes,
    /// so the critics learn from every transition) or `success` (1 at the step the criterion
    /// holds, which ends the episode).
    pub reward: RewardSource,
    /// Factor on the reward. Default 1.
    pub reward_scale: f64,
    /// Iterations whose noises are the clone's own (`N(0, I)` within the bound) before the
    /// noise policy acts, so that the replay buffer starts with the clone's behaviour. Default 2.
    pub random_iterations: u64,
    /// SAC updates after each iteration's episodes. Default 400.
    pub updates_per_iteration: usize,
    /// Replay capacity in chunk steps. Default 300,000.
    pub buffer_size: usize,
    /// Transitions per update. Default 256.
    pub batch_size: usize,
    /// Discount per chunk step. Default 0.97 (episodes of 30–60 chunk steps).
    pub gamma: f64,
    /// Polyak coefficient of the target critics. Default 0.005.
    pub tau: f64,
    /// Adam learning rate of the noise policy and the critics. Default 1e-4 (on a weak reach
    /// clone, 20 iterations: 26.5% → 64% sampled, against 48% at 3e-4, whose rollouts swung
    /// between 0 and 97% success from one iteration to the next).
    pub learning_rate: f64,
    /// Adam learning rate of log α. Default 3e-4.
    pub alpha_learning_rate: f64,
    /// Initial entropy temperature α. Default 0.01.
    pub init_alpha: f64,
    /// Target entropy of the noise policy, nats: a number or `"auto"` (−H·D). Default 0.
    pub target_entropy: TargetEntropy,
    /// Hidden widths of the noise policy and the critics. Default [256, 256].
    pub hidden: Vec<usize>,
}

impl Default for DsrlConfig {
    fn default() -> Self {
        Self {
            init: String::new(),
            num_envs: 64,
            noise_bound: 2.5,
            log_std_bounds: [-3.4, 2.0],
            reward: RewardSource::Task,
            reward_scale: 1.0,
            random_iterations: 2,
            updates_per_iteration: 400,
            buffer_size: 300_000,
            batch_size: 256,
            gamma: 0.97,
            tau: 0.005,
            learning_rate: 1e-4,
            alpha_learning_rate: 3e-4,
            init_alpha: 0.01,
            target_entropy: TargetEntropy::Nats(0.0),
            hidden: vec![256, 256],
        }
    }
}

/// Checks the noise-space settings DSRL adds to SAC's; errors name the field.
pub(crate) fn check_noise_settings(noise_bound: f64, random_iterations: u64, updates: usize) -> Result<(), AlgoError> {
    check_range("noise_bound", noise_bound, noise_bound > 0.0 && noise_bound.is_finite(), "> 0")?;
    check_range("random_iterations", random_iterations, random_iterations > 0, "≥ 1")?;
    check_range("updates_per_iteration", updates, updates > 0, "≥ 1")
}

/// The noise-policy actions of one chunk step (module docs, step 1), `[m, H·D]`: the clone's
/// own noise `eps / noise_bound` clipped to `[-1, 1]` while `gathering`, else the noise
/// policy's sample for `inputs` with `eps` (`[m, H·D]` standard normal).
pub(crate) fn noise_actions(
    sac: &SoftActorCritic,
    inputs: &[f32],
    eps: &[f32],
    noise_bound: f64,
    gathering: bool,
) -> Result<Vec<f32>, AlgoError> {
    match gathering {
        true => Ok(eps.iter().map(|e| (e / noise_bound as f32).clamp(-1.0, 1.0)).collect()),
        false => sac.actions(inputs, Some(eps)),
    }
}

impl DsrlConfig {
    /// Checks every value's range; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("reward_scale", self.reward_scale, self.reward_scale > 0.0, "> 0")?;
        check_noise_settings(self.noise_bound, self.random_iterations, self.updates_per_iteration)?;
        self.sac().validate()
    }

    /// The SAC core's settings (fields DSRL does not read keep their defaults). The critics'
    /// target leaves the entropy bonus out (RLPD's `backup_entropy = False`): summed over an
    /// episode's chunk steps it can outweigh a success reward of 1, and the critics then value
    /// entropy, not success.
    fn sac(&self) -> SacConfig {
        SacConfig {
            buffer_size: self.buffer_size,
            batch_size: self.batch_size,
            gamma: self.gamma,
            tau: self.tau,
            learning_rate: self.learning_rate,
            alpha_learning_rate: self.alpha_learning_rate,
            init_alpha: self.init_alpha,
            target_entropy: self.target_entropy,
            hidden: self.hidden.clone(),
            log_std_bounds: self.log_std_bounds,
            backup_entropy: false,
            ..SacConfig::default()
        }
    }
}

/// The collection's settings for DSRL: one episode per environment from a reset, every chunk
/// step kept (groups of one are never filtered).
pub(crate) fn dsrl_collection(reward: RewardSource, reward_scale: f64) -> GrpoSettings {
    GrpoSettings {
        group_size: 1,
        filter_uniform_groups: false,
        equal_episode_weights: false,
        replay_failed_states: 0.0,
        reward,
        success_bonus: 0.0,
        reward_scale,
        failure_progress: 0.0,
        divide_by_group_std: false,
    }
}

/// Stores the chunk steps of `episodes` in `replay` (module docs, step 2). `obs` (`[rows, od]`)
/// and `actions` (`[rows, hd]`) hold what was observed and picked at row `step·n + env`; a
/// running episode's next observation is the row `n` further on.
pub(crate) fn push_chunk_transitions(
    replay: &mut ReplayBuffer,
    episodes: &GrpoEpisodes,
    (obs, od): (&[f32], usize),
    (actions, hd): (&[f32], usize),
    n: usize,
) {
    for &row in &episodes.used {
        let done = episodes.chunk_dones[row];
        let next = if done > 0.0 { row } else { row + n };
        replay.push(
            &obs[row * od..(row + 1) * od],
            &actions[row * hd..(row + 1) * hd],
            episodes.chunk_rewards[row],
            &obs[next * od..(next + 1) * od],
            done,
        );
    }
}

/// Runs `count` SAC updates (module docs, step 3) and writes their mean losses, the noise
/// policy's entropy and α into `row`.
pub(crate) fn sac_updates(
    sac: &mut SoftActorCritic,
    rng: &mut ChaCha8Rng,
    count: usize,
    env_steps: u64,
    row: &mut MetricRow,
) -> Result<(), AlgoError> {
    let (mut critic_loss, mut actor_loss, mut entropy, mut actor_updates) = (0.0, 0.0, 0.0, 0usize);
    for _ in 0..count {
        let update = sac.update(rng, env_steps)?;
        critic_loss += update.critic_loss;
        if let Some(actor) = update.actor {
            actor_loss += actor.loss;
            entropy += actor.entropy;
            actor_updates += 1;
        }
    }
    row.value_loss = Some(critic_loss / count.max(1) as f64);
    if actor_updates > 0 {
        row.policy_loss = Some(actor_loss / actor_updates as f64);
        row.entropy = Some(entropy / actor_updates as f64);
    }
    row.alpha = Some(sac.alpha());
    Ok(())
}

/// What one iteration stores, row `step·n + env` for chunk step `step`.
#[derive(Default)]
struct NoiseRollout {
    /// Standardized observations, `[rows, obs_dim]`.
    obs: Vec<f32>,
    /// Noise-policy actions `a = w / noise_bound`, `[rows, H·D]`.
    actions: Vec<f32>,
}

/// SAC on the initial noise of a frozen flow policy started from an `sft` checkpoint.
pub struct Dsrl {
    config: DsrlConfig,
    device: Device,
    actor: ChunkActor,
    /// The clone, frozen: its EMA weights.
    model: FlowPolicy,
    sac: SoftActorCritic,
    rng: ChaCha8Rng,
    env_steps: u64,
    iterations: u64,
    episodes: EpisodeStats,
    rollout: NoiseRollout,
    last_split: TimeSplit,
}

impl Dsrl {
    /// A learner steering the flow policy of the `sft` checkpoint `init` (its EMA weights);
    /// `device` must have autodiff enabled.
    pub fn new(
        config: DsrlConfig,
        env: &dyn VecEnv,
        init: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        config.validate()?;
        config.reward.check_task(env)?;
        let algo: String = init.get("algo")?;
        if algo != "sft" || init.meta.contains_key(DIFFUSION_KEY) {
            return Err(AlgoError::Checkpoint(format!(
                "`algo.init` must be an sft run of a flow policy (`algo.model = \"flow\"`); {} is {}",
                config.init,
                if algo == "sft" { "a diffusion policy's".to_string() } else { format!("from `{algo}`") }
            )));
        }
        let actor = ChunkActor::from_checkpoint(init, env.obs_spec().vector.dim(), env.action_spec().bounds.dim())?;
        let plain = device.clone().inner();
        let model = load_params(actor.policy.init(&plain), &init.params("ema"))?;
        let (od, hd) = (actor.policy.obs_dim, actor.policy.chunk_width());
        let sac = SoftActorCritic::new(config.sac(), (od, od, hd), 0.01, device.clone(), seed)?;
        Ok(Self {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xD5_2105),
            env_steps: 0,
            iterations: 0,
            episodes: EpisodeStats::default(),
            rollout: NoiseRollout::default(),
            last_split: TimeSplit::default(),
            sac,
            actor,
            model,
            device,
            config,
        })
    }

    /// Time split of the last iteration (`update`: the SAC updates).
    pub fn last_time_split(&self) -> TimeSplit {
        self.last_split
    }

    /// The clone's ODE chunks `[n, H·D]` (standardized units) for standardized observations
    /// `obs` (`[n, obs_dim]`) from noise-policy actions `a` (`[n, H·D]` in `[-1, 1]`).
    fn decode(&self, obs: &[f32], a: &[f32]) -> Result<Vec<f32>, AlgoError> {
        let (od, hd, k) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width(), self.actor.policy.denoise_steps);
        let n = obs.len() / od;
        let bound = self.config.noise_bound as f32;
        // Slices 1..=k are the noise of stochastic steps, which the ODE never reads.
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        for (w, a) in noise.iter_mut().zip(a) {
            *w = bound * a;
        }
        let plain = self.device.clone().inner();
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), &plain);
        let sample = self.model.sample(to_tensor(obs, n, od, &plain), noise, NoiseMethod::Ode, StochasticSteps::None);
        to_host(sample.actions)
    }

    /// One chunk step of the collection (module docs, step 1) for every environment.
    fn sample_chunk(&mut self, env: &dyn VecEnv, env_actions: &mut [f32]) -> Result<(), AlgoError> {
        let (n, hd) = (env.num_envs(), self.actor.policy.chunk_width());
        let raw = &env.buffers().obs;
        let obs = self.actor.normalized_obs(raw);
        let mut eps = vec![0.0f32; n * hd];
        fill_normal(&mut self.rng, &mut eps);
        let gathering = self.iterations < self.config.random_iterations;
        let a = noise_actions(&self.sac, &obs, &eps, self.config.noise_bound, gathering)?;
        self.actor.env_actions(raw, &self.decode(&obs, &a)?, env_actions);
        self.rollout.obs.extend_from_slice(&obs);
        self.rollout.actions.extend_from_slice(&a);
        Ok(())
    }
}

impl Learner for Dsrl {
    fn name(&self) -> &'static str {
        "dsrl"
    }

    fn env_steps(&self) -> u64 {
        self.env_steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        let n = env.num_envs();
        self.rollout = NoiseRollout::default();
        let settings = dsrl_collection(self.config.reward, self.config.reward_scale);
        let seed = self.rng.random();
        let layout = (self.actor.policy.chunk, self.actor.policy.action_dim);
        let mut no_replay = FailedStateReplay::new(0);
        let episodes = grpo_episodes(env, &settings, &mut no_replay, seed, layout, |env, _running, actions| {
            self.sample_chunk(env, actions)
        })?;
        episodes.push_ended(&mut self.episodes);
        self.env_steps += episodes.env_steps;
        self.last_split = episodes.split;
        let (od, hd) = (self.actor.policy.obs_dim, self.actor.policy.chunk_width());
        let r = &self.rollout;
        push_chunk_transitions(&mut self.sac.replay, &episodes, (&r.obs, od), (&r.actions, hd), n);

        let start = Instant::now();
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        sac_updates(&mut self.sac, &mut self.rng, self.config.updates_per_iteration, self.env_steps, &mut row)?;
        self.last_split.update += start.elapsed().as_secs_f64();
        self.iterations += 1;
        self.episodes.drain_into(&mut row, env.info().has_success);
        row.learning_rate = Some(self.config.learning_rate);
        Ok(row)
    }

    fn act(&self, obs: &[f32], actions: &mut [f32], sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        let normalized = self.actor.normalized_obs(obs);
        let eps = sampling.map(|rng| {
            let mut eps =
                vec![0.0f32; (normalized.len() / self.actor.policy.obs_dim) * self.actor.policy.chunk_width()];
            fill_normal(rng, &mut eps);
            eps
        });
        let a = self.sac.actions(&normalized, eps.as_deref())?;
        self.actor.env_actions(obs, &self.decode(&normalized, &a)?, actions);
        Ok(())
    }

    fn chunk_len(&self) -> usize {
        self.actor.policy.chunk
    }

    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        self.sac.save(&mut ckpt)?;
        ckpt.put("algo", &self.name())?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("iterations", &self.iterations)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo(self.name())?;
        self.actor = ChunkActor::from_checkpoint(ckpt, self.actor.policy.obs_dim, self.actor.policy.action_dim)?;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        self.sac.load(ckpt)?;
        self.env_steps = ckpt.get("env_steps")?;
        self.iterations = ckpt.get("iterations")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}
