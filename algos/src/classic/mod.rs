//! Reinforcement learning of Gaussian policies on observation vectors: on-policy [`Ppo`] and
//! off-policy [`Sac`].

pub mod ppo;
pub mod sac;

pub use ppo::{Ppo, PpoConfig};
pub use sac::{Sac, SacConfig, TargetEntropy};
