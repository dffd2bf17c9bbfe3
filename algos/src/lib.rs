//! Reinforcement-learning algorithms for embodia: PPO, SAC, flow-policy behaviour cloning
//! (SFT) and RL, SFT and RL of the vision-language-action model (PPO on its weights, or SAC on
//! its initial noise with the weights frozen), and one-step distillation of flow policies, with their buffers, normalizer,
//! optimizer, checkpoints and metrics.
//!
//! Algorithms implement [`Learner`]; they take a [`VecEnv`](embodia_sim::VecEnv), report
//! through [`MetricRow`]s and never print.
#![warn(missing_docs)]

mod checkpoint;
mod chunk_actor;
pub mod diffusion_sft;
pub mod distill;
pub mod distill_alongside;
pub mod dppo;
mod gae;
mod learner;
mod metrics;
mod noise;
mod normalizer;
mod optim;
pub mod ppo;
pub mod ppo_flow;
mod replay;
mod rollouts;
pub mod sac;
pub mod sft;
pub mod state_replay;
mod vla_actor;
pub mod vla_dsrl;
pub mod vla_ppo;
pub mod vla_sft;

pub use checkpoint::{Checkpoint, STATE_FILE, TENSORS_FILE};
pub use chunk_actor::{CHUNK_ACTOR_KEY, ChunkActor, InitialNoise};
pub use diffusion_sft::{DIFFUSION_KEY, DiffusionSft, act_diffusion, diffusion_actor_from_checkpoint};
pub use distill::{ConsistencyLoss, Distill, DistillConfig, DistillMethod};
pub use distill_alongside::{ALONGSIDE_PREFIX, DistillAlongside, DistillAlongsideConfig};
pub use dppo::{Dppo, DppoConfig};
pub use gae::compute_gae;
pub use learner::{
    ActionQueue, EpisodeOutcome, EvalMode, EvalResult, InstructionResult, Learner, StepTrace, check_eval_mode,
    evaluate, evaluate_traced, host_reads,
};
pub use metrics::{EpisodeStats, MetricRow, MetricSink};
pub use noise::{ExplorationNoise, PINK_OCTAVES, PinkNoise};
pub use normalizer::{RunningNormalizer, Standardizer};
pub use optim::Adam;
pub use ppo::{Ppo, PpoConfig};
pub use ppo_flow::{
    AdvantageEstimator, CriticInput, FlowRlMethod, PpoFlow, PpoFlowConfig, RewardSource, SdeSteps, group_advantages,
    share_initial_states,
};
pub use replay::{ReplayBuffer, TransitionBatch};
pub use rollouts::record_policy_episodes;
pub use sac::{Sac, SacConfig, TargetEntropy};
pub use sft::{ChunkModel, Sft, SftConfig};
pub use vla_actor::{Grounding, VLA_ACTOR_KEY, VlaActor};
pub use vla_dsrl::{VlaDsrl, VlaDsrlConfig};
pub use vla_ppo::VlaPpo;
pub use vla_sft::{DaggerLabels, VlaSft, VlaSftConfig};

/// Errors of the learners.
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    /// A loss, observation or parameter became NaN or infinite.
    #[error("non-finite value in {what} at env step {env_steps}; training stopped")]
    NonFinite {
        /// Where it appeared (e.g. "critic loss", "observations").
        what: String,
        /// Environment steps at the time.
        env_steps: u64,
    },
    /// A configuration value is out of its allowed range.
    #[error("invalid value for `{field}`: {value} (allowed: {allowed})")]
    Config {
        /// Config field name (`algo.<name>`).
        field: String,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A checkpoint is missing, corrupt, or from another configuration.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The environment rejected a step.
    #[error(transparent)]
    Sim(#[from] embodia_sim::SimError),
    /// A parameter set does not fit the networks.
    #[error(transparent)]
    Params(#[from] embodia_policies::ParamError),
    /// The tensor backend failed.
    #[error("tensor backend: {0}")]
    Backend(String),
}

/// Fails with [`AlgoError::Config`] naming `algo.<field>` unless `ok`.
pub(crate) fn check_range(
    field: &str,
    value: impl std::fmt::Display,
    ok: bool,
    allowed: &str,
) -> Result<(), AlgoError> {
    if ok {
        Ok(())
    } else {
        Err(AlgoError::Config { field: format!("algo.{field}"), value: value.to_string(), allowed: allowed.into() })
    }
}
