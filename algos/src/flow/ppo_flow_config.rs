//! The hyperparameters of πRL's PPO for flow policies ([`super::PpoFlow`]), which the VLA's PPO
//! shares, with the choices they make: the variant, where noise enters, the critic, the
//! advantage estimator, the reward, and how log-probabilities enter the ratio.

use embodia_policies::{NoiseMethod, StochasticSteps};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::{AlgoError, check_num_envs, check_range};

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
    /// denoising steps. For the VLA: its value head, on the features its
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

impl RewardSource {
    /// Fails when the success reward is asked of a task without a success criterion.
    pub(crate) fn check_task(self, env: &dyn embodia_sim::VecEnv) -> Result<(), crate::AlgoError> {
        let allowed = format!("task (`{}` has no success criterion)", env.info().name);
        crate::check_range("reward", "success", self == RewardSource::Task || env.info().has_success, &allowed)
    }
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
    /// Dual clip `c` (Ye et al. 2020): for a negative advantage the surrogate's objective is
    /// floored at `c·A`. PPO's clip bounds a ratio `r` above `1 + ε` only where the advantage is
    /// positive; where it is negative, `r·A` stays in the loss, and a chunk whose probability
    /// rose e^5-fold since its rollout weighs 150 times a typical one in the gradient. On
    /// pick-cube the approximate KL spikes to 2–6 in a few iterations (most are ≈ 0.02) with
    /// an ordinary clip fraction: a few such samples. 0 turns it off; else > 1 (3 is usual).
    /// Default 0.
    pub dual_clip: f64,
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
    /// with, towards what worked. Needs `advantage = "grpo"` (whole episodes) in `ppo-flow-*`;
    /// the VLA's collection always runs whole episodes. 0 turns it off. Default 0.
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
    /// Added to the reward of every primitive step at which the task's success criterion holds
    /// (before `reward_scale`). With the task's dense reward this makes success what the return
    /// ranks first: on pick-cube the dense terms (reach, lift, track the goal) pay almost as much
    /// for a cube jittering 3 cm from the goal as for one held still within the criterion's
    /// 2.5 cm, and 2.7M env steps of GRPO on them raised the return by half while success fell
    /// (docs/results/flow-rl.md). 0 turns it off. Default 0.
    pub success_bonus: f64,
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
    /// ([`crate::storage::FailedStateReplay`]: each is replayed until a group solves it, at most
    /// [`crate::storage::MAX_REPLAYS`] times); the other groups start from fresh states.
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
            dual_clip: 0.0,
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
            success_bonus: 0.0,
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
    /// Fails when the success reward or a success bonus is asked of a task without a success
    /// criterion.
    pub(crate) fn check_task(&self, env: &dyn embodia_sim::VecEnv) -> Result<(), AlgoError> {
        self.reward.check_task(env)?;
        let allowed = format!("0 (`{}` has no success criterion)", env.info().name);
        let bonus = self.success_bonus;
        check_range("success_bonus", bonus, bonus == 0.0 || env.info().has_success, &allowed)
    }

    /// Checks every value's range; errors name the field.
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
        check_range("policy_lr", self.policy_lr, self.policy_lr >= 0.0, "≥ 0")?;
        check_range("value_lr", self.value_lr, self.value_lr >= 0.0, "≥ 0")?;
        check_range("beta1", self.beta1, (0.0..1.0).contains(&self.beta1), "0 ≤ beta1 < 1")?;
        check_range("beta2", self.beta2, (0.0..1.0).contains(&self.beta2), "0 ≤ beta2 < 1")?;
        check_range("weight_decay", self.weight_decay, self.weight_decay >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("gamma", self.gamma, (0.0..=1.0).contains(&self.gamma), "0 ≤ gamma ≤ 1")?;
        check_range("lambda", self.lambda, (0.0..=1.0).contains(&self.lambda), "0 ≤ lambda ≤ 1")?;
        check_range("clip_ratio", self.clip_ratio, self.clip_ratio > 0.0, "> 0")?;
        check_range("dual_clip", self.dual_clip, self.dual_clip == 0.0 || self.dual_clip > 1.0, "0 (off) or > 1")?;
        let sil = self.self_imitation_coef;
        check_range("self_imitation_coef", sil, sil >= 0.0, "≥ 0")?;
        let bonus = self.success_bonus;
        check_range("success_bonus", bonus, bonus >= 0.0 && bonus.is_finite(), "finite, ≥ 0")?;
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
