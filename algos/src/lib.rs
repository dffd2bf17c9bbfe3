//! Reinforcement-learning algorithms for embodia, grouped by family:
//!
//! - [`classic`]: PPO and SAC for Gaussian policies.
//! - [`flow`]: flow-matching and diffusion action-chunk policies: behaviour cloning (SFT, with
//!   DAgger), πRL's PPO (Flow-SDE, Flow-Noise), DPPO and DSRL, with what they share (GRPO's
//!   collection and advantages, chunk-step rewards, the clipped-surrogate update).
//! - [`vla`]: the vision-language-action model: SFT, PPO on its weights, DSRL on its noise.
//! - [`distill`]: one-step students of a flow policy, after RL or alongside it.
//!
//! Beside them, what every family uses: the [`Learner`] interface and evaluation, [`storage`]
//! (replay buffers), [`data_parallel`] training, GAE, the running normalizer, Adam and its schedule, checkpoints, metrics.
//! Algorithms take a [`VecEnv`](embodia_sim::VecEnv), report through [`MetricRow`]s and never
//! print. `use embodia_algos::prelude::*` brings the learners and their configurations.
#![warn(missing_docs)]

pub mod classic;
pub mod data_parallel;
pub mod distill;
pub mod flow;
pub mod storage;
pub mod vla;

mod checkpoint;
mod error;
mod gae;
mod learner;
mod metrics;
mod noise;
mod normalizer;
mod optim;
mod rng;
mod transfer;

pub use checkpoint::{CHECKSUMS_FILE, Checkpoint, STATE_FILE, TENSORS_FILE};
pub use error::AlgoError;
pub(crate) use error::{check_finite, check_num_envs, check_range};
pub use gae::compute_gae;
pub use learner::{
    ActionQueue, EpisodeOutcome, EvalMode, EvalResult, InstructionResult, Learner, StepTrace, check_eval_mode,
    evaluate, evaluate_traced,
};
pub use metrics::{EpisodeStats, MetricRow, MetricSink, TimeSplit};
pub use noise::{ExplorationNoise, PINK_OCTAVES, PinkNoise};
pub use normalizer::{RunningNormalizer, Standardizer};
pub use optim::Adam;
pub use transfer::host_reads;

pub use classic::{Ppo, PpoConfig, Sac, SacConfig, TargetEntropy};
pub use distill::{
    ALONGSIDE_PREFIX, ConsistencyLoss, Distill, DistillAlongside, DistillAlongsideConfig, DistillConfig, DistillMethod,
};
pub use flow::{
    AdvantageEstimator, CHUNK_ACTOR_KEY, ChunkActor, ChunkModel, CriticInput, DIFFUSION_KEY, DiffusionSft, Dppo,
    DppoConfig, Dsrl, DsrlConfig, FlowRlMethod, InitialNoise, PpoFlow, PpoFlowConfig, RewardSource, SdeSteps, Sft,
    SftConfig, act_diffusion, diffusion_actor_from_checkpoint, group_advantages, record_policy_episodes,
    share_initial_states,
};
pub use storage::{ReplayBuffer, TransitionBatch};
pub use vla::{DaggerLabels, Grounding, VLA_ACTOR_KEY, VlaActor, VlaDsrl, VlaDsrlConfig, VlaPpo, VlaSft, VlaSftConfig};

/// The learners, their configurations and what a runner needs to drive them.
pub mod prelude {
    pub use crate::{
        AlgoError, Checkpoint, DiffusionSft, Distill, DistillAlongside, DistillConfig, Dppo, DppoConfig, Dsrl,
        DsrlConfig, EvalMode, EvalResult, Learner, MetricRow, MetricSink, Ppo, PpoConfig, PpoFlow, PpoFlowConfig, Sac,
        SacConfig, Sft, SftConfig, VlaDsrl, VlaDsrlConfig, VlaPpo, VlaSft, VlaSftConfig, evaluate,
    };
}
