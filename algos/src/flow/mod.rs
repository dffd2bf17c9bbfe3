//! Action-chunk policies whose actions come from a denoising chain (flow matching or DDPM
//! diffusion), and how they learn.
//!
//! 1. [`Sft`] (and [`DiffusionSft`]) clones demonstrations, optionally with DAgger rounds
//!    ([`recording`] drives the learner and labels what it reached); [`chunk_samples`] turns
//!    demonstrations into `(s_t, a_{t..t+H})` pairs and fits the [`ChunkActor`] around the model.
//! 2. [`PpoFlow`] (πRL's Flow-SDE and Flow-Noise) and [`Dppo`] improve a clone with RL. Each
//!    decision executes a whole chunk ([`chunk_rewards`]); advantages come from GAE over
//!    [`gae_collection`]'s chunk steps or from [`grpo`]'s groups that share an initial state; the update is [`ppo_loss`]'s clipped
//!    surrogate over the stored denoising chains.
//! 3. [`Dsrl`] steers a frozen flow clone instead: SAC picks the initial noise its ODE starts
//!    from.
//!
//! The VLA's learners ([`crate::vla`]) and the one-step students ([`crate::distill`]) build on
//! the same pieces.

mod chunk_actor;
pub mod chunk_rewards;
pub mod chunk_samples;
pub mod diffusion_sft;
pub mod dppo;
pub mod dsrl;
pub mod gae_collection;
pub mod grpo;
pub mod ppo_flow;
pub mod ppo_flow_config;
pub mod ppo_loss;
pub mod recording;
pub mod sft;

pub use chunk_actor::{CHUNK_ACTOR_KEY, ChunkActor, InitialNoise};
pub use diffusion_sft::{DIFFUSION_KEY, DiffusionSft, act_diffusion, diffusion_actor_from_checkpoint};
pub use dppo::{Dppo, DppoConfig};
pub use dsrl::{Dsrl, DsrlConfig};
pub use grpo::{group_advantages, share_initial_states};
pub use ppo_flow::PpoFlow;
pub use ppo_flow_config::{AdvantageEstimator, CriticInput, FlowRlMethod, PpoFlowConfig, RewardSource, SdeSteps};
pub use recording::record_policy_episodes;
pub use sft::{ChunkModel, Sft, SftConfig};
