//! πRL's PPO for flow policies (RLinf), Flow-SDE and Flow-Noise, in one place
//! (spec `flow_rl.md` §1.3–§1.8).
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
//! critic and no value loss.
//!
//! Deliberate differences from the reference: the value function is by default an MLP on the
//! observation, not a head on the expert's features ([`CriticInput`]); environments auto-reset
//! (so with GAE the loss mask is all ones and `masked_mean_ratio` reduces to a plain mean; GRPO
//! leaves out the chunk steps after an episode's end); when an episode ends inside a chunk,
//! the chunk's remaining actions run in the next episode and their rewards are dropped (our
//! tasks' time limits are multiples of the default `C`, so only early terminations do this);
//! gradient clipping is per parameter group (policy, value) rather than global; no
//! micro-batch gradient accumulation (mini-batches fit in memory).

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    Activation, FlowPolicy, NoiseMethod, StochasticSteps, ValueCritic, ValueCriticConfig, load_params, named_params,
    seeded_init,
};
use embodia_sim::VecEnv;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::chunk_actor::{CHUNK_ACTOR_KEY, ChunkActor};
use crate::learner::{check_finite, fill_normal, rng_from_state, rng_state, to_host, to_tensor};
use crate::state_replay::FailedStateReplay;
use crate::{
    Adam, AlgoError, Checkpoint, EpisodeStats, EvalMode, InitialNoise, Learner, MetricRow, check_range, compute_gae,
};

/// Which flow-RL variant (`ppo-flow-sde` or `ppo-flow-noise` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FlowRlMethod {
    /// Hybrid ODE-SDE: one SDE step per environment step, log-prob of that step only.
    #[default]
    Sde,
    /// Learned bounded noise on every step, joint log-prob over all steps and an entropy bonus.
    Noise,
}

/// Which denoising steps of a Flow-SDE chunk are stochastic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SdeSteps {
    /// One step `k*` drawn per chunk step, the others ODE steps; the ratio sees that step
    /// only (πRL's hybrid ODE-SDE). The deterministic steps before and after `k*` also move
    /// with the weights, a dependence of the executed chunk on them that the ratio ignores.
    #[default]
    One,
    /// Every step an SDE step and the log-prob reduced over all of them as Flow-Noise's
    /// (`noise_step_reduction`; Flow-GRPO's full SDE sampling): every transition of the chain
    /// is in the ratio, so the likelihood-ratio gradient is that of the chain's own Markov
    /// policy. The update evaluates the expert at all `K` steps instead of one.
    All,
}

/// What the value function reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriticInput {
    /// πRL: the flow policy's value head on pooled action-expert features, averaged over the
    /// denoising steps (spec §1.6). For the VLA: its value head, on the features its
    /// `value_input` names.
    ExpertFeatures,
    /// A separate MLP `V(s)` on the standardized observation, as Gaussian PPO has. The expert's
    /// features are computed from noisy action chunks and trained for flow matching only, so a
    /// head on them must read the state's value through the noise of `x_t`; an observation
    /// critic has no such handicap (deliberate difference from RLinf). For the VLA: on the
    /// task's critic observation where it has one (privileged state), else its vector
    /// observation, standardized by running statistics.
    Observation,
}

/// Where advantages come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvantageEstimator {
    /// GAE(γ, λ) over chunk steps with the learned value function.
    Gae,
    /// GRPO-style group baseline (RLinf's `grpo`): each iteration resets the environments in
    /// groups of `group_size` that share one initial state, runs every environment's episode to
    /// its end, and gives all chunk steps of an episode the advantage
    /// `(R − mean(R_group)) / (std(R_group) + 1e-6)` of its return `R`. No critic.
    Grpo,
}

/// What the learner takes as the reward of a primitive step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardSource {
    /// The task's reward terms.
    Task,
    /// 1 while the task's success criterion holds, else 0 (RLinf's sparse success reward on
    /// ManiSkill and LIBERO): what the success rate measures, without the dense terms'
    /// preferences.
    Success,
}

/// How per-element log-probabilities `[C, D]` become PPO ratios (`logprob_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogProbType {
    /// Sum over `C·D`: one ratio per environment step (RLinf's LIBERO default).
    ChunkLevel,
    /// Sum over `D`: one ratio per action. On the VLA's picks of `lang-cubes-ee-fixed` this
    /// lifted a weak clone where the chunk-level ratio did not (README).
    ActionLevel,
    /// One ratio per element, the advantage broadcast.
    TokenLevel,
}

/// How a joint log-prob (Flow-Noise, Flow-SDE on every step) combines the `K + 1` per-step
/// log-probabilities of a chunk element (its initial-noise term included) before the ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseStepReduction {
    /// Their mean (RLinf's `joint_logprob`). The clip then bounds the geometric mean of the
    /// per-step ratios, so the chain's own ratio may reach `(1 ± ε)^(K+1)`.
    Mean,
    /// Their sum, the chain's joint log-density (ReinFlow): the clip bounds the ratio of the
    /// whole chain. `K + 1` times the mean's log-ratio.
    Sum,
}

/// Hyperparameters. Defaults follow RLinf's π0 configs where they carry over (γ, λ, clip 0.2,
/// value clip 0.2, Huber δ 10, AdamW β = (0.9, 0.95), weight decay 0.01, grad clip 1,
/// noise level 0.5, noise std range [0.08, 0.16] in the policy, entropy bonus 0.005 for
/// Flow-Noise); learning rates, batch sizes and epochs are scaled to a small MLP expert.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PpoFlowConfig {
    /// Variant; set from the algorithm name (`ppo-flow-sde`, `ppo-flow-noise`), not a config key.
    #[serde(skip)]
    pub method: FlowRlMethod,
    /// SFT run directory the policy starts from (`--init`); the runner requires it.
    pub init: String,
    /// Parallel environments. Default 32.
    pub num_envs: usize,
    /// Chunk steps collected per environment per iteration (GAE; GRPO runs whole episodes).
    /// Default 25.
    pub chunk_steps: usize,
    /// Passes over each rollout. Default 4.
    pub update_epochs: usize,
    /// Mini-batches per pass. Default 4.
    pub mini_batches: usize,
    /// Learning rate of the policy (expert and noise head). Default 3e-5.
    pub policy_lr: f64,
    /// Learning rate of the value head. Default 1e-3.
    pub value_lr: f64,
    /// AdamW β₁. Default 0.9.
    pub beta1: f64,
    /// AdamW β₂. Default 0.95.
    pub beta2: f64,
    /// AdamW decoupled weight decay. Default 0.01.
    pub weight_decay: f64,
    /// Gradient-norm limit per parameter group. Default 1.0.
    pub max_grad_norm: f64,
    /// Discount per chunk step. Default 0.99.
    pub gamma: f64,
    /// GAE λ. Default 0.95.
    pub lambda: f64,
    /// Surrogate clip ε. Default 0.2.
    pub clip_ratio: f64,
    /// Trust-region guard on the approximate KL between the rollout policy and the updated one
    /// (`mean((r − 1) − log r)` over a mini-batch's ratios). An iteration's update stops at the
    /// first mini-batch whose KL exceeds 1.5 × `target_kl`, without stepping it (SB3's
    /// `target_kl`). Added for Flow-Noise, whose joint log-prob covers every denoising step: on
    /// long push-t runs its KL per iteration grew until the policy collapsed, the clip alone
    /// no longer bounding the step (at 0.01 the guard did not stop its decline; README).
    /// 0 turns it off. Default 0.
    pub target_kl: f64,
    /// Adapt the policy learning rate to the iteration's mean approximate KL (RSL-RL's
    /// adaptive schedule with `target_kl` as its desired KL): ÷ 1.5 when above 2 × `target_kl`,
    /// × 1.5 when below ½ ×, kept within [`policy_lr` / 100, `policy_lr`]. Needs
    /// `target_kl` > 0. Default false.
    pub adaptive_lr: bool,
    /// Value clip around the rollout's values. Default 0.2.
    pub value_clip: f64,
    /// Huber δ of the value loss. Default 10.
    pub huber_delta: f64,
    /// Weight of the value loss. Default 1.
    pub value_loss_coef: f64,
    /// Entropy bonus β (Flow-Noise; Flow-SDE's entropy is 0). Default 0.005.
    pub entropy_coef: f64,
    /// Ratio shaping. Default chunk_level.
    pub logprob_type: LogProbType,
    /// Flow-Noise and Flow-SDE with `sde_steps = "all"`: how the per-step log-probabilities
    /// combine (one-step Flow-SDE has one). On push-t the mean let Flow-Noise drift off and
    /// collapse after ~2M env steps (README). Default mean.
    pub noise_step_reduction: NoiseStepReduction,
    /// SDE noise level `a` (Flow-SDE) when not annealed. Default 0.5.
    pub noise_level: f64,
    /// Anneal the noise level linearly from `noise_start` to `noise_end` over
    /// `noise_anneal_iterations` iterations. Default false.
    pub noise_anneal: bool,
    /// Annealing start level. Default 0.7.
    pub noise_start: f64,
    /// Annealing end level. Default 0.3.
    pub noise_end: f64,
    /// Annealing length, iterations. Default 400.
    pub noise_anneal_iterations: u64,
    /// Flow-SDE: never make the last denoising step the stochastic one. Default false.
    pub ignore_last: bool,
    /// Flow-SDE: one stochastic denoising step per chunk or all of them. Default one.
    pub sde_steps: SdeSteps,
    /// Weight of a flow-matching loss on the chunks that the iteration's successful episodes
    /// (of every group) executed, added to the PPO loss of each mini-batch with a share of them
    /// (self-imitation, Oh et al. 2018: reward-weighted flow matching with 0/1 weights on the
    /// policy's own samples). Where the policy gradient moves the velocity field only through
    /// the log-density of its stochastic steps, this trains it with the objective it was cloned
    /// with, towards what worked. VLA only (`vla-ppo-flow-*`); 0 turns it off. Default 0.
    pub self_imitation_coef: f64,
    /// Self-imitation: weight each successful episode by one over the number of the
    /// iteration's successful episodes with its instruction, so that every instruction that
    /// succeeded counts the same. Without it the skill that succeeds most dominates (on the
    /// weak clone of `lang-cubes-ee-fixed`'s family, pushes took over; README). Default false.
    pub self_imitation_balance: bool,
    /// Multiplier of the chunk rewards (not in RLinf, whose LIBERO rewards are 0/1; our dense
    /// task rewards sum to O(100) per episode, which a fresh value head under a Huber loss
    /// with δ = 10 learns slowly). Default 1.
    pub reward_scale: f64,
    /// Iterations at the start that update only the value head (DPPO's critic warmup; RLinf
    /// has none). Default 0.
    pub critic_warmup_iterations: u64,
    /// What the value function reads. Default observation.
    pub critic: CriticInput,
    /// Hidden widths of the observation critic (ELU). Default [256, 256].
    pub critic_hidden: Vec<usize>,
    /// Reward of a primitive step (before `reward_scale`). Default task.
    pub reward: RewardSource,
    /// Advantage estimator. Default gae.
    pub advantage: AdvantageEstimator,
    /// GRPO: environments per group sharing an initial state; divides `num_envs`. Default 8.
    pub group_size: usize,
    /// GRPO: drop groups whose returns are all equal (no learning signal; RLinf's reward
    /// filter). Default true.
    pub filter_uniform_groups: bool,
    /// GRPO: divide each group's centred returns by the group's standard deviation (GRPO's
    /// advantage); false keeps them in return units (Dr. GRPO, Liu et al. 2025), so that small
    /// differences between returns, such as `failure_progress_coef`'s rankings of failures,
    /// weigh little next to a success. Default true.
    pub divide_by_group_std: bool,
    /// GRPO with `reward = "success"`: a failed episode's return is this weight times the
    /// highest task reward (the dense terms, unscaled) of any of its steps, how close it came,
    /// so that the members of a group that all fail still rank, where the sparse reward leaves
    /// the group out. Keep it below the success return: lang-cubes' dense terms reach 3 per step,
    /// so 0.1 keeps every failure at or under 0.3. On the weak clone of `lang-cubes-ee-fixed`'s
    /// family it lowered success (README). 0 turns it off. Default 0.
    pub failure_progress_coef: f64,
    /// GRPO: weight each episode's chunk steps by `L̄ / L` (`L` its chunk steps, `L̄` their mean
    /// over the episodes in the update) so that every episode counts equally in the loss
    /// (RLinf's `seq-mean-token-mean` aggregation) instead of every chunk step. Without it,
    /// failed episodes, which run to the time limit, outweigh the successful ones, which end
    /// early. Default false.
    pub equal_episode_weights: bool,
    /// GRPO: fraction of each iteration's groups that restart from an initial state that an
    /// earlier group did not all succeed from, while such states wait
    /// ([`crate::state_replay`]: each is replayed until a group solves it, at most
    /// [`crate::state_replay::MAX_REPLAYS`] times); the other groups start from fresh states.
    /// 0 turns it off. The waiting states are not checkpointed: a resumed run starts with none.
    /// On pick-cube-ee it lowered success (0.5: 72% → 45%; 0.25 with 10 epochs: 80% → 64%;
    /// README). Default 0.
    pub replay_failed_states: f64,
    /// A one-step student trained alongside (`--distill-during-rl`; the table's presence turns
    /// it on). Read by the runner, which wraps this learner in a [`crate::DistillAlongside`].
    /// Default absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distill_during_rl: Option<crate::DistillAlongsideConfig>,
}

impl Default for PpoFlowConfig {
    fn default() -> Self {
        Self {
            method: FlowRlMethod::Sde,
            init: String::new(),
            num_envs: 32,
            chunk_steps: 25,
            update_epochs: 4,
            mini_batches: 4,
            policy_lr: 3e-5,
            value_lr: 1e-3,
            beta1: 0.9,
            beta2: 0.95,
            weight_decay: 0.01,
            max_grad_norm: 1.0,
            gamma: 0.99,
            lambda: 0.95,
            clip_ratio: 0.2,
            target_kl: 0.0,
            adaptive_lr: false,
            value_clip: 0.2,
            huber_delta: 10.0,
            value_loss_coef: 1.0,
            entropy_coef: 0.005,
            logprob_type: LogProbType::ChunkLevel,
            noise_step_reduction: NoiseStepReduction::Mean,
            noise_level: 0.5,
            noise_anneal: false,
            noise_start: 0.7,
            noise_end: 0.3,
            noise_anneal_iterations: 400,
            ignore_last: false,
            sde_steps: SdeSteps::One,
            self_imitation_coef: 0.0,
            self_imitation_balance: false,
            failure_progress_coef: 0.0,
            divide_by_group_std: true,
            reward_scale: 1.0,
            critic_warmup_iterations: 0,
            critic: CriticInput::Observation,
            critic_hidden: vec![256, 256],
            reward: RewardSource::Task,
            advantage: AdvantageEstimator::Gae,
            group_size: 8,
            filter_uniform_groups: true,
            equal_episode_weights: false,
            replay_failed_states: 0.0,
            distill_during_rl: None,
        }
    }
}

impl PpoFlowConfig {
    /// Checks every value's range; errors name the field.
    pub fn validate(&self) -> Result<(), AlgoError> {
        check_range("num_envs", self.num_envs, self.num_envs > 0, "≥ 1")?;
        check_range("chunk_steps", self.chunk_steps, self.chunk_steps > 0, "≥ 1")?;
        check_range("update_epochs", self.update_epochs, self.update_epochs > 0, "≥ 1")?;
        let batch = self.num_envs * self.chunk_steps;
        check_range(
            "mini_batches",
            self.mini_batches,
            self.mini_batches > 0 && self.mini_batches <= batch,
            "1 ≤ mini_batches ≤ num_envs·chunk_steps",
        )?;
        check_range("policy_lr", self.policy_lr, self.policy_lr >= 0.0, "≥ 0")?;
        check_range("value_lr", self.value_lr, self.value_lr >= 0.0, "≥ 0")?;
        check_range("beta1", self.beta1, (0.0..1.0).contains(&self.beta1), "0 ≤ beta1 < 1")?;
        check_range("beta2", self.beta2, (0.0..1.0).contains(&self.beta2), "0 ≤ beta2 < 1")?;
        check_range("weight_decay", self.weight_decay, self.weight_decay >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("gamma", self.gamma, (0.0..=1.0).contains(&self.gamma), "0 ≤ gamma ≤ 1")?;
        check_range("lambda", self.lambda, (0.0..=1.0).contains(&self.lambda), "0 ≤ lambda ≤ 1")?;
        check_range("clip_ratio", self.clip_ratio, self.clip_ratio > 0.0, "> 0")?;
        let sil = self.self_imitation_coef;
        check_range("self_imitation_coef", sil, sil >= 0.0, "≥ 0")?;
        check_range("target_kl", self.target_kl, self.target_kl >= 0.0, "≥ 0 (0: off)")?;
        check_range(
            "adaptive_lr",
            self.adaptive_lr,
            !self.adaptive_lr || self.target_kl > 0.0,
            "false unless target_kl > 0",
        )?;
        check_range("value_clip", self.value_clip, self.value_clip > 0.0, "> 0")?;
        check_range("huber_delta", self.huber_delta, self.huber_delta > 0.0, "> 0")?;
        check_range("value_loss_coef", self.value_loss_coef, self.value_loss_coef >= 0.0, "≥ 0")?;
        check_range("entropy_coef", self.entropy_coef, self.entropy_coef >= 0.0, "≥ 0")?;
        check_range("reward_scale", self.reward_scale, self.reward_scale > 0.0, "> 0")?;
        if self.advantage == AdvantageEstimator::Grpo {
            check_range(
                "group_size",
                self.group_size,
                self.group_size >= 2 && self.num_envs.is_multiple_of(self.group_size),
                "≥ 2 and dividing num_envs",
            )?;
        }
        let progress = self.failure_progress_coef;
        check_range(
            "failure_progress_coef",
            progress,
            (0.0..1.0).contains(&progress),
            "0 ≤ failure_progress_coef < 1",
        )?;
        check_range(
            "failure_progress_coef",
            progress,
            progress == 0.0 || (self.advantage == AdvantageEstimator::Grpo && self.reward == RewardSource::Success),
            "0 unless advantage = \"grpo\" and reward = \"success\"",
        )?;
        let replay = self.replay_failed_states;
        check_range("replay_failed_states", replay, (0.0..=1.0).contains(&replay), "0 ≤ replay_failed_states ≤ 1")?;
        let grpo_only = "0 unless advantage = \"grpo\" (it replays the initial states of GRPO groups)";
        check_range(
            "replay_failed_states",
            replay,
            replay == 0.0 || self.advantage == AdvantageEstimator::Grpo,
            grpo_only,
        )?;
        check_range(
            "critic_hidden",
            format!("{:?}", self.critic_hidden),
            !self.critic_hidden.contains(&0),
            "positive widths",
        )?;
        for (field, level) in
            [("noise_level", self.noise_level), ("noise_start", self.noise_start), ("noise_end", self.noise_end)]
        {
            check_range(field, level, level >= 0.0, "≥ 0")?;
        }
        check_range("noise_anneal_iterations", self.noise_anneal_iterations, self.noise_anneal_iterations > 0, "≥ 1")
    }

    /// The GRPO fields, for [`grpo_episodes`].
    pub(crate) fn grpo_settings(&self) -> GrpoSettings {
        GrpoSettings {
            group_size: self.group_size,
            filter_uniform_groups: self.filter_uniform_groups,
            equal_episode_weights: self.equal_episode_weights,
            replay_failed_states: self.replay_failed_states,
            reward: self.reward,
            reward_scale: self.reward_scale,
            failure_progress: self.failure_progress_coef as f32,
            divide_by_group_std: self.divide_by_group_std,
        }
    }

    /// The rollout sampler at training iteration `iteration`: Flow-SDE at the (annealed) noise
    /// level, or Flow-Noise.
    pub(crate) fn noise_method(&self, iteration: u64) -> NoiseMethod {
        match self.method {
            FlowRlMethod::Sde => NoiseMethod::Sde { level: self.noise_level_at(iteration) },
            FlowRlMethod::Noise => NoiseMethod::Noise,
        }
    }

    /// Whether every denoising step is stochastic and in the log-prob (Flow-Noise, or Flow-SDE
    /// with `sde_steps = "all"`).
    pub(crate) fn joint_log_prob(&self) -> bool {
        self.method == FlowRlMethod::Noise || self.sde_steps == SdeSteps::All
    }

    /// Which denoising steps are stochastic when `k_star` is the drawn one: that one, or all of
    /// them ([`Self::joint_log_prob`]).
    pub(crate) fn stochastic_steps(&self, k_star: usize) -> StochasticSteps {
        match self.joint_log_prob() {
            true => StochasticSteps::Joint,
            false => StochasticSteps::One(k_star),
        }
    }

    /// Flow-SDE's stochastic denoising step `k*` of one chunk step, uniform over the `k` steps
    /// (the last one excluded with `ignore_last`).
    pub(crate) fn draw_stochastic_step(&self, k: usize, rng: &mut ChaCha8Rng) -> usize {
        match self.ignore_last {
            true if k > 1 => rng.random_range(0..k - 1),
            _ => rng.random_range(0..k),
        }
    }

    /// Whether a mini-batch whose approximate KL to the rollout policy is `kl` is refused by
    /// the [`Self::target_kl`] guard: not stepped, and the iteration's update ends there.
    pub(crate) fn kl_stops_update(&self, kl: f64) -> bool {
        self.target_kl > 0.0 && kl > 1.5 * self.target_kl
    }

    /// The policy learning rate after an iteration whose mean approximate KL was `kl`, from
    /// `lr` ([`Self::adaptive_lr`]; `lr` unchanged without it).
    pub fn adapted_policy_lr(&self, lr: f64, kl: f64) -> f64 {
        if !self.adaptive_lr {
            return lr;
        }
        let lr = if kl > 2.0 * self.target_kl {
            lr / 1.5
        } else if kl < 0.5 * self.target_kl {
            lr * 1.5
        } else {
            lr
        };
        lr.clamp(self.policy_lr / 100.0, self.policy_lr)
    }

    /// The SDE noise level `a` at training iteration `step` (RLinf `_get_noise_level`).
    pub fn noise_level_at(&self, step: u64) -> f64 {
        if !self.noise_anneal {
            return self.noise_level;
        }
        let n = self.noise_anneal_iterations;
        self.noise_start + (self.noise_end - self.noise_start) * step.min(n) as f64 / n as f64
    }
}

/// Chunk-level rewards and dones of one chunk step from its `C` primitive steps: the reward is
/// the sum of the rewards up to and including the first end of episode, a truncation (not also
/// a termination) adds `γ·V(s_trunc)`, and the step is done if any primitive step ended.
/// `rewards`, `terminated`, `truncated`, `trunc_values`: `[C, n]`; writes `[n]`.
pub fn chunk_rewards(
    rewards: &[f32],
    terminated: &[f32],
    truncated: &[f32],
    trunc_values: &[f32],
    gamma: f32,
    out_rewards: &mut [f32],
    out_dones: &mut [f32],
) {
    let n = out_rewards.len();
    out_rewards.fill(0.0);
    out_dones.fill(0.0);
    for c in 0..rewards.len() / n {
        for i in 0..n {
            if out_dones[i] > 0.0 {
                continue;
            }
            let k = c * n + i;
            out_rewards[i] += rewards[k];
            if terminated[k] > 0.0 {
                out_dones[i] = 1.0;
            } else if truncated[k] > 0.0 {
                out_rewards[i] += gamma * trunc_values[k];
                out_dones[i] = 1.0;
            }
        }
    }
}

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
    /// `[steps, n]`.
    values: Vec<f32>,
    rewards: Vec<f32>,
    dones: Vec<f32>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
    /// Samples the update uses, indices into `[steps·n]` (GRPO leaves out chunk steps after an
    /// episode's end and filtered groups).
    used: Vec<usize>,
}

/// Per-chunk-step scratch of the primitive steps, `[C, n]`.
#[derive(Debug, Default)]
struct ChunkScratch {
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    trunc_values: Vec<f32>,
}

/// Time spent in one iteration, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeSplit {
    /// Stepping environments.
    pub sim: f64,
    /// Sampling chunks (rollout inference) and bootstrap values.
    pub inference: f64,
    /// Advantages and gradient updates.
    pub update: f64,
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
    env_steps: u64,
    iterations: u64,
    /// The policy learning rate now: `config.policy_lr`, or adapted ([`PpoFlowConfig::adaptive_lr`]).
    policy_lr: f64,
    episodes: EpisodeStats,
    rollout: Rollout,
    scratch: ChunkScratch,
    /// Initial states GRPO groups failed from ([`PpoFlowConfig::replay_failed_states`]).
    failed_states: FailedStateReplay,
    last_split: TimeSplit,
    /// GRPO: share of the last collection's groups with differing returns.
    mixed_groups: Option<f64>,
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
        let sil = config.self_imitation_coef;
        check_range("self_imitation_coef", sil, sil == 0.0, "0: not implemented for ppo-flow (vla-ppo-flow has it)")?;
        let has_success = env.info().has_success;
        let allowed = format!("task (`{}` has no success criterion)", env.info().name);
        check_range("reward", "success", config.reward == RewardSource::Task || has_success, &allowed)?;
        let algo: String = init.get("algo")?;
        if algo != "sft" {
            return Err(AlgoError::Checkpoint(format!(
                "`algo.init` must be an sft run; {} is from `{algo}`",
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
            env_steps: 0,
            iterations: 0,
            policy_lr: config.policy_lr,
            episodes: EpisodeStats::default(),
            rollout: Rollout::default(),
            scratch: ChunkScratch::default(),
            failed_states: FailedStateReplay::new(config.num_envs / config.group_size.max(1)),
            last_split: TimeSplit::default(),
            mixed_groups: None,
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
        fill_normal(&mut self.rng, &mut noise);
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
        for buf in [&mut r.obs, &mut r.chains, &mut r.log_probs, &mut r.values, &mut r.rewards, &mut r.dones] {
            buf.clear();
        }
        r.stochastic_step.clear();
        r.used.clear();
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
        use std::time::Instant;
        let n = env.num_envs();
        let p = self.actor.policy.clone();
        let (od, ad, c) = (p.obs_dim, p.action_dim, p.chunk);
        let model = self.model.valid();
        let critic = self.critic.as_ref().map(|c| c.valid());
        let gamma = self.config.gamma as f32;
        self.clear_rollout();
        let mut split = TimeSplit::default();
        let mut env_actions = vec![0.0f32; n * c * ad];
        let mut step_actions = vec![0.0f32; n * ad];
        let (mut rewards, mut dones) = (vec![0.0f32; n], vec![0.0f32; n]);
        for _ in 0..self.config.chunk_steps {
            let start = Instant::now();
            let obs = env.buffers().obs.clone();
            self.sample_chunk(&model, critic.as_ref(), &obs, &mut env_actions)?;
            split.inference += start.elapsed().as_secs_f64();

            let s = &mut self.scratch;
            for buf in [&mut s.rewards, &mut s.terminated, &mut s.truncated, &mut s.trunc_values] {
                buf.clear();
            }
            for j in 0..c {
                chunk_column(&env_actions, j, c, ad, &mut step_actions);
                let start = Instant::now();
                env.step(&step_actions)?;
                split.sim += start.elapsed().as_secs_f64();
                self.env_steps += n as u64;
                let b = env.buffers();
                self.episodes.push_ended(b);
                let s = &mut self.scratch;
                let scale = self.config.reward_scale as f32;
                s.rewards.extend(step_rewards(b, self.config.reward).map(|r| r * scale));
                s.terminated.extend_from_slice(&b.terminated);
                s.truncated.extend_from_slice(&b.truncated);
                let base = s.trunc_values.len();
                s.trunc_values.resize(base + n, 0.0);
                // Truncated, not terminated: bootstrap from V(final_obs) (empty, so allocation-free,
                // on the steps where no episode was cut).
                let cut: Vec<usize> = (0..n).filter(|&i| b.truncated[i] > 0.0 && b.terminated[i] == 0.0).collect();
                if !cut.is_empty() {
                    let start = Instant::now();
                    let final_obs: Vec<f32> =
                        cut.iter().flat_map(|&i| b.final_obs[i * od..(i + 1) * od].iter().copied()).collect();
                    let v = self.values(&model, &final_obs)?;
                    for (&i, v) in cut.iter().zip(v) {
                        self.scratch.trunc_values[base + i] = v;
                    }
                    split.inference += start.elapsed().as_secs_f64();
                }
            }
            let s = &self.scratch;
            chunk_rewards(&s.rewards, &s.terminated, &s.truncated, &s.trunc_values, gamma, &mut rewards, &mut dones);
            self.rollout.rewards.extend_from_slice(&rewards);
            self.rollout.dones.extend_from_slice(&dones);
        }
        let start = Instant::now();
        let obs = env.buffers().obs.clone();
        let last_values = self.values(&model, &obs)?;
        split.inference += start.elapsed().as_secs_f64();

        let start = Instant::now();
        let r = &mut self.rollout;
        let len = r.rewards.len();
        r.advantages.resize(len, 0.0);
        r.returns.resize(len, 0.0);
        compute_gae(
            &r.rewards,
            &r.values,
            &r.dones,
            &last_values,
            n,
            gamma,
            self.config.lambda as f32,
            &mut r.advantages,
            &mut r.returns,
        );
        standardize(&mut r.advantages);
        r.used.extend(0..len);
        split.update += start.elapsed().as_secs_f64();
        self.last_split = split;
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
        // Read by the (zero-weighted) value loss only.
        r.returns.clear();
        r.returns.resize(episodes.steps * n, 0.0);
        self.last_split = episodes.split;
        self.mixed_groups = Some(episodes.mixed_groups);
        Ok(())
    }

    /// Losses of one mini-batch of rollout samples (`indices` into `[steps·n]`), with backward
    /// pass and optimizer steps unless the KL guard refuses it. Returns (policy loss, value
    /// loss, entropy, approx KL, clip fraction) and whether it stepped.
    fn update_minibatch(&mut self, indices: &[usize], n: usize) -> Result<([f64; 5], bool), AlgoError> {
        let p = &self.actor.policy;
        let (od, hd, cd, k) = (p.obs_dim, p.chunk_width(), p.chunk * p.action_dim, p.denoise_steps);
        let d = self.device.clone();
        let method = self.config.noise_method(self.iterations);
        let cfg = &self.config;
        let b = indices.len();
        let groups = stochastic_step_groups(indices, &self.rollout.stochastic_step, n, k, cfg.joint_log_prob());
        let r = &self.rollout;
        let mut total: Option<Tensor<1>> = None;
        let mut stats = [0.0f64; 5];
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
            for (s, g) in stats.iter_mut().zip(group_stats) {
                *s += g;
            }
            total = Some(match total {
                Some(t) => t + loss,
                None => loss,
            });
        }
        let loss = total.expect("a non-empty mini-batch");
        check_finite("flow PPO loss", stats[0] + stats[1], self.env_steps)?;
        if cfg.kl_stops_update(stats[3]) {
            return Ok((stats, false));
        }
        let mut grads = loss.backward();
        let value_grads = match &self.critic {
            Some(critic) => GradientsParams::from_module(&mut grads, critic),
            None => GradientsParams::from_module(&mut grads, self.model.value_head()),
        };
        let policy_grads = GradientsParams::from_grads(grads, &self.model);
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

    fn update(&mut self, n: usize) -> Result<[f64; 5], AlgoError> {
        let c = &self.config;
        let batches = epoch_minibatches(&self.rollout.used, c.update_epochs, c.mini_batches, &mut self.rng);
        let means = kl_guarded_minibatches(&batches, |batch| self.update_minibatch(batch, n))?;
        self.policy_lr = self.config.adapted_policy_lr(self.policy_lr, means[3]);
        Ok(means)
    }
}

/// Rewards `[n]` of the last step from `source`.
pub(crate) fn step_rewards(b: &embodia_sim::StepBuffers, source: RewardSource) -> impl Iterator<Item = f32> + '_ {
    let rewards = match source {
        RewardSource::Task => &b.reward,
        RewardSource::Success => &b.success,
    };
    rewards.iter().copied()
}

/// Copies chunk step `j` of `chunks` (`[n, C, D]`) into `out` (`[n, D]`).
pub(crate) fn chunk_column(chunks: &[f32], j: usize, c: usize, d: usize, out: &mut [f32]) {
    for (i, row) in out.chunks_mut(d).enumerate() {
        row.copy_from_slice(&chunks[(i * c + j) * d..(i * c + j + 1) * d]);
    }
}

/// Standardizes `xs` in place to zero mean and unit variance (population std + 1e-5).
fn standardize(xs: &mut [f32]) {
    let len = xs.len().max(1) as f64;
    let mean = xs.iter().map(|&a| a as f64).sum::<f64>() / len;
    let std = (xs.iter().map(|&a| (a as f64 - mean).powi(2)).sum::<f64>() / len).sqrt();
    for a in xs {
        *a = ((*a as f64 - mean) / (std + 1e-5)) as f32;
    }
}

/// Makes every environment of a group of `group_size` consecutive environments start from its
/// group leader's state: copies the leader's per-environment rows (physical state, episode
/// counters, generator, observation) of `snapshot` to the other members. Restoring the result
/// gives each group one initial state (rapier scenes re-reset from the copied generator).
pub fn share_initial_states(snapshot: &mut embodia_sim::EnvSnapshot, group_size: usize) {
    let n = snapshot.rng.len();
    let copy_rows = |v: &mut Vec<f64>| copy_leader_rows(v, n, group_size);
    copy_rows(&mut snapshot.state);
    copy_rows(&mut snapshot.running_return);
    copy_leader_rows(&mut snapshot.elapsed, n, group_size);
    copy_leader_rows(&mut snapshot.rng, n, group_size);
    copy_leader_rows(&mut snapshot.obs, n, group_size);
}

/// Copies row `i / group · group` of `v` (`[n, row]`, any row width, possibly empty) to row `i`.
fn copy_leader_rows<T: Clone>(v: &mut [T], n: usize, group: usize) {
    let width = v.len() / n.max(1);
    if width == 0 {
        return;
    }
    for i in 0..n {
        let leader = i / group * group;
        if leader != i {
            let (head, tail) = v.split_at_mut(i * width);
            tail[..width].clone_from_slice(&head[leader * width..(leader + 1) * width]);
        }
    }
}

/// GRPO advantages of episode `returns` (`[n]`) in groups of `group_size` consecutive
/// environments: `(R − mean) / (std + 1e-6)` with the population std of the group, or `R − mean`
/// without `divide_by_std`; `None` for every member of a group whose returns are all equal when
/// `filter_uniform` (no signal).
pub fn group_advantages(
    returns: &[f32],
    group_size: usize,
    filter_uniform: bool,
    divide_by_std: bool,
) -> Vec<Option<f32>> {
    returns
        .chunks(group_size)
        .flat_map(|group| {
            let len = group.len() as f64;
            let mean = group.iter().map(|&r| r as f64).sum::<f64>() / len;
            let std = (group.iter().map(|&r| (r as f64 - mean).powi(2)).sum::<f64>() / len).sqrt();
            let scale = if divide_by_std { std + 1e-6 } else { 1.0 };
            let uniform = group.iter().all(|&r| r == group[0]);
            group.iter().map(move |&r| (!(filter_uniform && uniform)).then(|| ((r as f64 - mean) / scale) as f32))
        })
        .collect()
}

/// Runs `minibatch` (its statistics (policy loss, value loss, entropy, approx KL, clip
/// fraction) and whether it stepped the optimizer) over `batches` in order until one is
/// refused by the KL guard; returns the mean statistics over the mini-batches run (zeros
/// without any).
pub(crate) fn kl_guarded_minibatches<B>(
    batches: &[B],
    mut minibatch: impl FnMut(&B) -> Result<([f64; 5], bool), AlgoError>,
) -> Result<[f64; 5], AlgoError> {
    let (mut sums, mut run) = ([0.0f64; 5], 0usize);
    for batch in batches {
        let (stats, stepped) = minibatch(batch)?;
        for (s, x) in sums.iter_mut().zip(stats) {
            *s += x;
        }
        run += 1;
        if !stepped {
            break;
        }
    }
    Ok(sums.map(|s| s / run.max(1) as f64))
}

/// The mini-batches of `update_epochs` passes over rollout rows `rows`: each pass shuffles the
/// previous pass's order with `rng` and cuts it into `mini_batches` slices of equal size (the
/// last shorter). Empty without rows.
pub(crate) fn epoch_minibatches(
    rows: &[usize],
    update_epochs: usize,
    mini_batches: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<usize>> {
    let mut order = rows.to_vec();
    if order.is_empty() {
        return Vec::new();
    }
    let size = order.len().div_ceil(mini_batches);
    let mut batches = Vec::new();
    for _ in 0..update_epochs {
        order.shuffle(rng);
        batches.extend(order.chunks(size).map(<[usize]>::to_vec));
    }
    batches
}

/// What one GRPO collection ([`grpo_episodes`]) gathered besides the learner's own storage.
pub(crate) struct GrpoEpisodes {
    /// Chunk steps taken: the longest episode's.
    pub steps: usize,
    /// Rows (`step·n + env`) that enter the update: those sampled while the environment's
    /// episode ran, in groups not filtered out.
    pub used: Vec<usize>,
    /// The advantage of every chunk step of each environment's episode, `[n]`.
    pub advantages: Vec<f32>,
    /// (return, length, success) of each episode, in the order they ended.
    pub ended: Vec<(f32, u32, bool)>,
    /// The reward (`config.reward`, scaled) summed over each row's chunk while its episode ran,
    /// `[steps·n]`: what GAE over these episodes reads.
    pub chunk_rewards: Vec<f32>,
    /// 1 on the row whose chunk ended its environment's episode, else 0, `[steps·n]`.
    pub chunk_dones: Vec<f32>,
    /// Environment steps taken.
    pub env_steps: u64,
    /// Share of the groups whose returns differ.
    pub mixed_groups: f64,
    /// Rows sampled while a successful episode ran, whatever its group (`step·n + env`).
    pub successful_rows: Vec<usize>,
    /// Time spent: stepping, sampling (`sample`), computing advantages.
    pub split: TimeSplit,
}

impl GrpoEpisodes {
    /// The advantage of every row `step·n + env`, `[steps·n]`: each episode's, repeated over
    /// the chunk steps (rows outside `used` are never read).
    pub fn row_advantages(&self) -> Vec<f32> {
        self.advantages.repeat(self.steps)
    }

    /// GAE(γ, λ) over the episodes' chunk steps with `values` (`[steps·n]`, V of each row's
    /// observation): (advantages, returns), each `[steps·n]`, the advantages standardized over
    /// the `used` rows. Every episode ran to its end, so nothing is bootstrapped past it: an
    /// episode cut by the time limit counts as terminated (its final observation is gone once
    /// the environment auto-resets; with a success reward, nothing more would have come).
    pub fn gae(&self, values: &[f32], n: usize, gamma: f64, lambda: f64) -> (Vec<f32>, Vec<f32>) {
        let rows = self.chunk_rewards.len();
        let (mut advantages, mut returns) = (vec![0.0f32; rows], vec![0.0f32; rows]);
        let last_values = vec![0.0f32; n];
        compute_gae(
            &self.chunk_rewards,
            values,
            &self.chunk_dones,
            &last_values,
            n,
            gamma as f32,
            lambda as f32,
            &mut advantages,
            &mut returns,
        );
        let mut used: Vec<f32> = self.used.iter().map(|&i| advantages[i]).collect();
        standardize(&mut used);
        for (&i, a) in self.used.iter().zip(used) {
            advantages[i] = a;
        }
        (advantages, returns)
    }

    /// Adds the ended episodes to `stats`.
    pub fn push_ended(&self, stats: &mut EpisodeStats) {
        for &(ret, len, success) in &self.ended {
            stats.push(ret, len, success);
        }
    }
}

/// What a GRPO collection ([`grpo_episodes`]) reads from a learner's configuration (the
/// fields of the same names in [`PpoFlowConfig`] and [`crate::DppoConfig`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GrpoSettings {
    pub group_size: usize,
    pub filter_uniform_groups: bool,
    pub equal_episode_weights: bool,
    pub replay_failed_states: f64,
    pub reward: RewardSource,
    pub reward_scale: f64,
    /// [`PpoFlowConfig::failure_progress_coef`].
    pub failure_progress: f32,
    /// [`PpoFlowConfig::divide_by_group_std`].
    pub divide_by_group_std: bool,
}

/// GRPO collection (module docs): resets `env` from `seed` so that each group of
/// `config.group_size` environments shares an initial state, then runs chunk steps until every
/// environment's episode has ended. `sample` samples one chunk for every environment from what
/// `env` observes now, stores what its learner needs (the rows of chunk step `s` are
/// `s·n + env`), and writes the chunk in environment units (`[n, C, D]`, layout `(C, D)`); its
/// second argument says which environments' episodes still run (`[n]`: the chunks of the
/// others are not used, so a sampler may skip them).
/// Each episode's chunk steps get its group-normalized return as advantage
/// ([`episode_advantages`]); chunk steps after an episode's end (the environment auto-resets and
/// runs on) and, with `filter_uniform_groups`, groups whose returns are all equal are left out.
pub(crate) fn grpo_episodes(
    env: &mut dyn VecEnv,
    config: &GrpoSettings,
    replay: &mut FailedStateReplay,
    seed: u64,
    (c, ad): (usize, usize),
    mut sample: impl FnMut(&dyn VecEnv, &[bool], &mut [f32]) -> Result<(), AlgoError>,
) -> Result<GrpoEpisodes, AlgoError> {
    use std::time::Instant;
    let n = env.num_envs();
    let mut split = TimeSplit::default();
    let start = Instant::now();
    env.reset(seed);
    let mut snapshot = env.snapshot();
    share_initial_states(&mut snapshot, config.group_size);
    let groups = n / config.group_size;
    replay.restart_groups(
        &mut snapshot,
        config.group_size,
        (config.replay_failed_states * groups as f64).round() as usize,
    );
    env.restore(&snapshot)?;
    split.sim += start.elapsed().as_secs_f64();

    let mut env_actions = vec![0.0f32; n * c * ad];
    let mut step_actions = vec![0.0f32; n * ad];
    let mut returns = vec![0.0f32; n];
    let mut success = vec![false; n];
    let mut running = vec![true; n];
    let mut best_task_reward = vec![f32::NEG_INFINITY; n];
    let (mut used, mut ended, mut env_steps, mut step) = (Vec::new(), Vec::new(), 0u64, 0);
    let (mut chunk_rewards, mut chunk_dones) = (Vec::new(), Vec::new());
    while running.iter().any(|&r| r) {
        let start = Instant::now();
        sample(&*env, &running, &mut env_actions)?;
        used.extend((0..n).filter(|&i| running[i]).map(|i| step * n + i));
        split.inference += start.elapsed().as_secs_f64();
        let row = chunk_rewards.len();
        chunk_rewards.resize(row + n, 0.0);
        chunk_dones.resize(row + n, 0.0);
        for j in 0..c {
            chunk_column(&env_actions, j, c, ad, &mut step_actions);
            let start = Instant::now();
            env.step(&step_actions)?;
            split.sim += start.elapsed().as_secs_f64();
            env_steps += n as u64;
            let b = env.buffers();
            let scale = config.reward_scale as f32;
            for (i, reward) in step_rewards(b, config.reward).enumerate() {
                if !running[i] {
                    continue;
                }
                best_task_reward[i] = best_task_reward[i].max(b.reward[i]);
                returns[i] += reward * scale;
                chunk_rewards[row + i] += reward * scale;
                if b.done(i) {
                    running[i] = false;
                    chunk_dones[row + i] = 1.0;
                    success[i] = b.success[i] > 0.0;
                    ended.push((b.episode_return[i], b.episode_length[i], success[i]));
                }
            }
        }
        step += 1;
    }
    let start = Instant::now();
    if config.replay_failed_states > 0.0 {
        replay.record(&snapshot, config.group_size, &success);
    }
    if config.failure_progress > 0.0 {
        for i in (0..n).filter(|&i| !success[i]) {
            returns[i] += config.failure_progress * best_task_reward[i] * config.reward_scale as f32;
        }
    }
    let group_advantages =
        group_advantages(&returns, config.group_size, config.filter_uniform_groups, config.divide_by_group_std);
    let mixed = returns.chunks(config.group_size).filter(|g| g.iter().any(|&r| r != g[0])).count();
    let mixed_groups = mixed as f64 / groups.max(1) as f64;
    let advantages = episode_advantages(&group_advantages, &used, n, config.equal_episode_weights);
    let successful_rows = used.iter().copied().filter(|&idx| success[idx % n]).collect();
    used.retain(|&idx| group_advantages[idx % n].is_some());
    split.update += start.elapsed().as_secs_f64();
    Ok(GrpoEpisodes {
        steps: step,
        used,
        advantages,
        ended,
        chunk_rewards,
        chunk_dones,
        env_steps,
        mixed_groups,
        successful_rows,
        split,
    })
}

/// The advantage of every chunk step of each environment's episode, `[n]`: its group advantage
/// (0 when filtered), scaled by `L̄ / L` with `equal_weights` (`L`: the episode's chunk steps
/// among `used` rows, `L̄`: their mean over the episodes kept). Scaling the advantage scales the
/// clipped surrogate of the row by the same positive factor.
pub(crate) fn episode_advantages(
    group_advantages: &[Option<f32>],
    used: &[usize],
    n: usize,
    equal_weights: bool,
) -> Vec<f32> {
    let mut advantages: Vec<f32> = group_advantages.iter().map(|a| a.unwrap_or(0.0)).collect();
    if !equal_weights {
        return advantages;
    }
    let mut lengths = vec![0usize; n];
    for &idx in used {
        lengths[idx % n] += 1;
    }
    let kept: Vec<usize> = (0..n).filter(|&i| group_advantages[i].is_some() && lengths[i] > 0).collect();
    let mean = kept.iter().map(|&i| lengths[i] as f64).sum::<f64>() / kept.len().max(1) as f64;
    for &i in &kept {
        advantages[i] *= (mean / lengths[i] as f64) as f32;
    }
    advantages
}

/// Mini-batch rows `indices` (into `[steps·n]`) grouped by the denoising step `k*` that was
/// stochastic when their chunk step was sampled (`stochastic_step`, `[steps]`): one-step
/// Flow-SDE log-probs of different `k*` are evaluated separately. With a joint log-prob over
/// every step (`joint`), all in group 0. `[K]` groups.
pub(crate) fn stochastic_step_groups(
    indices: &[usize],
    stochastic_step: &[usize],
    n: usize,
    k: usize,
    joint: bool,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for &idx in indices {
        let group = if joint { 0 } else { stochastic_step[idx / n] };
        groups[group].push(idx);
    }
    groups
}

/// The stored chains of rows `members` (into `[steps·n]`) of `chains` (`[steps, K + 1, n, H·D]`),
/// as `[K + 1, members, H·D]`.
pub(crate) fn gather_chains(chains: &[f32], members: &[usize], n: usize, k: usize, hd: usize) -> Vec<f32> {
    let m = members.len();
    let mut out = vec![0.0f32; (k + 1) * m * hd];
    for (row, &idx) in members.iter().enumerate() {
        let (step, env) = (idx / n, idx % n);
        for s in 0..=k {
            let src = ((step * (k + 1) + s) * n + env) * hd;
            let dst = (s * m + row) * hd;
            out[dst..dst + hd].copy_from_slice(&chains[src..src + hd]);
        }
    }
    out
}

/// One group of a mini-batch as the PPO loss reads it: recomputed log-probs `[m, C·D]`,
/// entropies `[m, 1]` and values `[m, 1]` (with gradients; `None` without a critic, as in
/// GRPO), and the rollout's old log-probs (`[m, C·D]`), advantages, old values and returns
/// (`[m]` each).
pub(crate) struct GroupBatch<'a> {
    pub log_prob: Tensor<2>,
    pub entropy: Tensor<2>,
    pub value: Option<Tensor<2>>,
    pub old_lp: &'a [f32],
    pub adv: &'a [f32],
    pub old_v: &'a [f32],
    pub ret: &'a [f32],
}

/// The PPO loss of one group of `m` samples of a mini-batch of `b` (spec §1.7): clipped
/// surrogate on the ratio shaped by `logprob_type` and `noise_step_reduction` (chunk layout
/// `(C, D, K)`), clipped Huber value loss (none without values, as in GRPO), entropy bonus.
/// Returns the group's share of the mini-batch loss (its per-sample losses summed, divided by
/// `b`) and its shares of the mini-batch means of (policy loss, value loss, entropy,
/// approximate KL, clip fraction).
pub(crate) fn ppo_group_loss(
    cfg: &PpoFlowConfig,
    g: GroupBatch<'_>,
    (chunk, action_dim, denoise_steps): (usize, usize, usize),
    b: usize,
    d: &Device,
) -> Result<(Tensor<1>, [f64; 5]), AlgoError> {
    let m = g.adv.len();
    let cd = chunk * action_dim;
    let step_scale = match (cfg.joint_log_prob(), cfg.noise_step_reduction) {
        (true, NoiseStepReduction::Sum) => (denoise_steps + 1) as f64,
        _ => 1.0,
    };
    let (groups_n, per) = match cfg.logprob_type {
        LogProbType::ChunkLevel => (1, cd),
        LogProbType::ActionLevel => (chunk, action_dim),
        LogProbType::TokenLevel => (cd, 1),
    };
    // Reduction order: per element, already averaged over denoising steps (scaled back to
    // their sum by `step_scale`); then summed according to `logprob_type`.
    let lp = g.log_prob.reshape([m, groups_n, per]).sum_dim(2).reshape([m, groups_n]);
    let old = to_tensor(g.old_lp, m, cd, d).reshape([m, groups_n, per]).sum_dim(2).reshape([m, groups_n]);
    let log_ratio = (lp - old).mul_scalar(step_scale);
    let ratio = log_ratio.clone().clamp(-20.0, 20.0).exp();
    let adv = to_tensor(g.adv, m, 1, d);
    let clip = cfg.clip_ratio;
    let surrogate =
        (ratio.clone() * adv.clone()).min_pair(ratio.clone().clamp(1.0 - clip, 1.0 + clip) * adv).neg().mean_dim(1);
    let clipped = (ratio.clone() - 1.0).abs().greater_elem(clip).float().mean_dim(1);
    let approx_kl = ((ratio - 1.0) - log_ratio).mean();
    let value_loss = match g.value {
        Some(value) => {
            let (old_v, ret) = (to_tensor(g.old_v, m, 1, d), to_tensor(g.ret, m, 1, d));
            let clipped = old_v.clone() + (value.clone() - old_v).clamp(-cfg.value_clip, cfg.value_clip);
            huber(ret.clone() - value, cfg.huber_delta).max_pair(huber(ret - clipped, cfg.huber_delta))
        }
        // No critic: the group baseline replaces it.
        None => Tensor::zeros([m, 1], d),
    };
    let per_sample = surrogate.clone() + value_loss.clone().mul_scalar(cfg.value_loss_coef)
        - g.entropy.clone().mul_scalar(cfg.entropy_coef);
    let loss = per_sample.sum().div_scalar(b as f64);
    let host = to_host(Tensor::cat(
        vec![
            surrogate.sum().inner(),
            value_loss.sum().inner(),
            g.entropy.sum().inner(),
            approx_kl.inner(),
            clipped.sum().inner(),
        ],
        0,
    ))?;
    let mut stats = [0.0f64; 5];
    for (s, h) in stats.iter_mut().zip(&host) {
        *s = *h as f64 / b as f64;
    }
    stats[3] = host[3] as f64 * m as f64 / b as f64;
    Ok((loss, stats))
}

/// Huber loss with threshold δ, elementwise.
fn huber(error: Tensor<2>, delta: f64) -> Tensor<2> {
    let abs = error.clone().abs();
    let quadratic = error.square().mul_scalar(0.5);
    let linear = abs.clone().sub_scalar(0.5 * delta).mul_scalar(delta);
    quadratic.mask_where(abs.greater_elem(delta), linear)
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
        let start = std::time::Instant::now();
        let [policy_loss, value_loss, entropy, kl, clip_fraction] = self.update(env.num_envs())?;
        self.last_split.update += start.elapsed().as_secs_f64();
        self.iterations += 1;
        let mut row = MetricRow { env_steps: self.env_steps, ..Default::default() };
        self.episodes.drain_into(&mut row, env.info().has_success);
        row.policy_loss = Some(policy_loss);
        row.value_loss = Some(value_loss);
        row.entropy = Some(entropy);
        row.kl = Some(kl);
        row.clip_fraction = Some(clip_fraction);
        row.mixed_groups = self.mixed_groups;
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
        for (name, optim) in [("policy", &self.policy_optim), ("value", &self.value_optim)] {
            let (steps, state) = optim.state();
            ckpt.insert_params(&format!("optim.{name}"), state);
            ckpt.put(&format!("optim_{name}_steps"), &steps)?;
        }
        ckpt.put("algo", &self.name())?;
        ckpt.put(CHUNK_ACTOR_KEY, &self.actor)?;
        ckpt.put("env_steps", &self.env_steps)?;
        ckpt.put("iterations", &self.iterations)?;
        ckpt.put("policy_lr", &self.policy_lr)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        let algo: String = ckpt.get("algo")?;
        if algo != self.name() {
            return Err(AlgoError::Checkpoint(format!("checkpoint is from `{algo}`, not `{}`", self.name())));
        }
        self.actor = ChunkActor::from_checkpoint(ckpt, self.actor.policy.obs_dim, self.actor.policy.action_dim)?;
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        let plain = self.device.clone().inner();
        let steps = ckpt.get("optim_policy_steps")?;
        self.policy_optim.load_state(steps, &ckpt.params("optim.policy"), &self.model, &plain)?;
        let (steps, state) = (ckpt.get("optim_value_steps")?, ckpt.params("optim.value"));
        match self.critic.take() {
            Some(critic) => {
                let critic = load_params(critic, &ckpt.params("critic"))?;
                self.value_optim.load_state(steps, &state, &critic, &plain)?;
                self.critic = Some(critic);
            }
            None => self.value_optim.load_state(steps, &state, &self.model, &plain)?,
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

    /// Two environments, chunks of C = 2, three chunk steps. Env 0 terminates in the first
    /// primitive step of chunk 1 (the chunk's remaining reward is dropped); env 1 is truncated
    /// at the end of chunk 0 (bootstrapped with γ·V(s_trunc) = 0.9·5).
    #[test]
    fn chunk_rewards_and_gae_match_a_hand_computed_example() {
        let gamma = 0.9f32;
        let lambda = 0.5f32;
        // [step][c][env]
        let rewards = [[[1.0, 0.5], [1.0, 0.5]], [[2.0, 1.0], [3.0, 1.0]], [[0.0, 0.0], [1.0, 2.0]]];
        let terminated = [[[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]];
        let truncated = [[[0.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]];
        let trunc_values = [[[0.0, 0.0], [0.0, 5.0]], [[0.0; 2]; 2], [[0.0; 2]; 2]];
        let flat = |x: &[[f32; 2]; 2]| x.iter().flatten().copied().collect::<Vec<f32>>();
        let (mut r, mut d) = (Vec::new(), Vec::new());
        for s in 0..3 {
            let (mut rs, mut ds) = ([0.0; 2], [0.0; 2]);
            chunk_rewards(
                &flat(&rewards[s]),
                &flat(&terminated[s]),
                &flat(&truncated[s]),
                &flat(&trunc_values[s]),
                gamma,
                &mut rs,
                &mut ds,
            );
            r.extend(rs);
            d.extend(ds);
        }
        assert_eq!(r, vec![2.0, 1.0 + 0.9 * 5.0, 2.0, 2.0, 1.0, 2.0]);
        assert_eq!(d, vec![0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);

        let values = [0.5, 1.0, 1.5, 0.2, 0.4, 0.3];
        let last = [10.0, 4.0];
        let (mut adv, mut ret) = ([0.0; 6], [0.0; 6]);
        compute_gae(&r, &values, &d, &last, 2, gamma, lambda, &mut adv, &mut ret);
        // env 0: step 1 terminal; step 2 starts a new episode and bootstraps from 10.
        let a02 = 1.0 + 0.9 * 10.0 - 0.4;
        let a01 = 2.0 - 1.5;
        let a00 = (2.0 + 0.9 * 1.5 - 0.5) + 0.9 * 0.5 * a01;
        // env 1: step 0 truncated (bootstrap already in the reward); steps 1, 2 continue.
        let a12 = 2.0 + 0.9 * 4.0 - 0.3;
        let a11 = (2.0 + 0.9 * 0.3 - 0.2) + 0.45 * a12;
        let a10 = 5.5 - 1.0;
        for (got, want) in adv.iter().zip([a00, a10, a01, a11, a02, a12]) {
            assert!((got - want).abs() < 1e-5, "{adv:?}");
        }
    }

    #[test]
    fn group_advantages_normalize_within_groups_and_filter_uniform_ones() {
        let returns = [1.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0];
        let adv = group_advantages(&returns, 4, true, true);
        let std = (0.25f64 * 0.75).sqrt();
        for (a, e) in adv[..4].iter().zip([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std]) {
            assert!((a.unwrap() as f64 - e).abs() < 1e-4, "{adv:?}");
        }
        assert!(adv[4..].iter().all(Option::is_none), "{adv:?}");
        let kept = group_advantages(&returns, 4, false, true);
        assert!(kept[4..].iter().all(|a| *a == Some(0.0)), "{kept:?}");
        let centered = group_advantages(&returns, 4, true, false);
        assert_eq!(centered[..4], [Some(0.75), Some(-0.25), Some(-0.25), Some(-0.25)]);
    }

    /// Two environments run to their episodes' ends: env 0 after two chunk steps (reward 1 on
    /// the second), env 1 after three (no reward); env 0's third row belongs to its next episode.
    #[test]
    fn gae_over_whole_episodes_stops_at_each_end_and_standardizes_the_used_rows() {
        let episodes = GrpoEpisodes {
            steps: 3,
            used: vec![0, 1, 2, 3, 5],
            advantages: vec![0.0; 2],
            ended: Vec::new(),
            chunk_rewards: vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            chunk_dones: vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
            env_steps: 0,
            mixed_groups: 1.0,
            successful_rows: vec![0, 2],
            split: TimeSplit::default(),
        };
        let values = [0.5f32; 6];
        let (advantages, returns) = episodes.gae(&values, 2, 0.9, 1.0);
        // By hand, γ 0.9, λ 1: env 0: A₁ = 1 − 0.5 = 0.5, A₀ = (0.9·0.5 − 0.5) + 0.9·0.5 = 0.4;
        // env 1: A₂ = −0.5, A₁ = (0.45 − 0.5) − 0.45 = −0.5, A₀ = −0.5. R = A + V.
        let expected = [(0, 0.9), (2, 1.0), (1, 0.0), (3, 0.0), (5, 0.0)];
        for (row, ret) in expected {
            assert!((returns[row] - ret).abs() < 1e-6, "row {row}: {} vs {ret}", returns[row]);
        }
        let raw = [0.4f64, 0.5, -0.5, -0.5, -0.5];
        let mean = raw.iter().sum::<f64>() / 5.0;
        let std = (raw.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
        for (&row, a) in [0usize, 2, 1, 3, 5].iter().zip(raw) {
            let standardized = (a - mean) / (std + 1e-5);
            assert!((f64::from(advantages[row]) - standardized).abs() < 1e-5, "row {row}");
        }
    }

    #[test]
    fn equal_episode_weights_make_each_kept_episode_count_the_same() {
        // 2 environments of one group kept, 1 filtered; env 0 ran 1 chunk step, env 1 ran 3.
        let group = [Some(1.0), Some(-1.0), None];
        let used = [0, 1, 2, 4, 5, 7, 8];
        assert_eq!(episode_advantages(&group, &used, 3, false), vec![1.0, -1.0, 0.0]);
        let weighted = episode_advantages(&group, &used, 3, true);
        // Mean length 2: env 0's single step weighs 2, env 1's three steps 2/3 each.
        assert_eq!(weighted, vec![2.0, -2.0 / 3.0, 0.0]);
        let per_episode = [weighted[0] * 1.0, weighted[1] * 3.0];
        assert!((per_episode[0] + per_episode[1]).abs() < 1e-6, "{per_episode:?}");
    }

    #[test]
    fn kl_guard_stops_at_the_first_minibatch_over_one_and_a_half_target_kl() {
        let cfg = PpoFlowConfig { target_kl: 0.01, ..Default::default() };
        assert!(!cfg.kl_stops_update(0.015) && cfg.kl_stops_update(0.0151));
        assert!(!PpoFlowConfig::default().kl_stops_update(1e9), "target_kl = 0 is off");
        let kls = [0.0, 0.004, 0.02, 0.001];
        let batches: Vec<Vec<usize>> = (0..kls.len()).map(|i| vec![i]).collect();
        let mut stepped = Vec::new();
        let means = kl_guarded_minibatches(&batches, |b| {
            let kl = kls[b[0]];
            let step = !cfg.kl_stops_update(kl);
            if step {
                stepped.push(b[0]);
            }
            Ok(([1.0, 2.0, 3.0, kl, 0.5], step))
        })
        .unwrap();
        assert_eq!(stepped, [0, 1], "the third mini-batch is refused and ends the update");
        assert_eq!(means[..3], [1.0, 2.0, 3.0]);
        assert!((means[3] - 0.024 / 3.0).abs() < 1e-12, "{means:?}");
    }

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
    fn shared_initial_states_copy_each_group_leaders_rows() {
        let rng = |k: u8| embodia_sim::RngState { seed: [k; 32], stream: 0, word_pos: 0 };
        let mut snapshot = embodia_sim::EnvSnapshot {
            task: "t".into(),
            state: (0..8).map(f64::from).collect(),
            elapsed: vec![5, 6, 7, 8],
            running_return: Vec::new(),
            rng: (0..4).map(rng).collect(),
            obs: vec![0.0, 1.0, 2.0, 3.0],
        };
        share_initial_states(&mut snapshot, 2);
        assert_eq!(snapshot.state, [0.0, 1.0, 0.0, 1.0, 4.0, 5.0, 4.0, 5.0]);
        assert_eq!(snapshot.elapsed, [5, 5, 7, 7]);
        assert_eq!(snapshot.rng, [rng(0), rng(0), rng(2), rng(2)]);
        assert_eq!(snapshot.obs, [0.0, 0.0, 2.0, 2.0]);
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

    /// One sample, C·D = 2 elements whose step-mean log-probs rose by 0.01 each, advantage 1,
    /// K = 4: the mean reduction gives the ratio e^0.02, the sum e^0.1 (5 terms), which the clip
    /// at 0.05 caps; one-step Flow-SDE ignores the setting, Flow-SDE on every step follows it.
    #[test]
    fn noise_step_reduction_scales_flow_noise_log_ratios() {
        let d = Device::flex();
        let loss_and_kl_with = |cfg: PpoFlowConfig| {
            let cfg = PpoFlowConfig { clip_ratio: 0.05, ..cfg };
            let batch = GroupBatch {
                log_prob: Tensor::<2>::from_floats([[-0.99, -1.99]], &d),
                entropy: Tensor::zeros([1, 1], &d),
                value: None,
                old_lp: &[-1.0, -2.0],
                adv: &[1.0],
                old_v: &[0.0],
                ret: &[0.0],
            };
            let (loss, stats) = ppo_group_loss(&cfg, batch, (1, 2, 4), 1, &d).unwrap();
            (to_host(loss).unwrap()[0] as f64, stats[3], stats[4])
        };
        let loss_and_kl = |method, reduction| {
            loss_and_kl_with(PpoFlowConfig { method, noise_step_reduction: reduction, ..Default::default() })
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-5;
        let (mean_loss, mean_kl, mean_clipped) = loss_and_kl(FlowRlMethod::Noise, NoiseStepReduction::Mean);
        assert!(close(mean_loss, -(0.02f64).exp()), "{mean_loss}");
        assert!(close(mean_kl, (0.02f64).exp() - 1.0 - 0.02), "{mean_kl}");
        assert_eq!(mean_clipped, 0.0, "ratio 1.02 is inside the clip range 1 ± 0.05");
        let (sum_loss, sum_kl, sum_clipped) = loss_and_kl(FlowRlMethod::Noise, NoiseStepReduction::Sum);
        assert!(close(sum_loss, -1.05), "clipped: {sum_loss}");
        assert!(close(sum_kl, (0.1f64).exp() - 1.0 - 0.1), "{sum_kl}");
        assert_eq!(sum_clipped, 1.0, "ratio 1.105 is outside it");
        assert_eq!(loss_and_kl(FlowRlMethod::Sde, NoiseStepReduction::Sum), (mean_loss, mean_kl, mean_clipped));
        let sde_all = PpoFlowConfig {
            sde_steps: SdeSteps::All,
            noise_step_reduction: NoiseStepReduction::Sum,
            ..Default::default()
        };
        assert_eq!(loss_and_kl_with(sde_all), (sum_loss, sum_kl, sum_clipped), "every SDE step in the ratio");
    }

    #[test]
    fn huber_is_quadratic_inside_and_linear_outside() {
        let d = Device::flex();
        let e = Tensor::<2>::from_floats([[0.5, -2.0, 12.0, -30.0]], &d);
        let h = to_host(huber(e, 10.0)).unwrap();
        assert_eq!(h, vec![0.125, 2.0, 10.0 * (12.0 - 5.0), 10.0 * (30.0 - 5.0)]);
    }
}
