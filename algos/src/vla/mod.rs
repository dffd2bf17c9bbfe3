//! The vision-language-action model's learners: behaviour cloning ([`VlaSft`]), πRL's PPO on
//! its weights ([`VlaPpo`]) and DSRL on its initial noise with the weights frozen
//! ([`VlaDsrl`]), around the [`VlaActor`] that connects the model to a task.

mod actor;
pub mod dsrl;
pub mod ppo;
pub mod sft;

pub use actor::{Grounding, VLA_ACTOR_KEY, VlaActor};
pub(crate) use actor::{needs_images, vla_error};
pub use dsrl::{VlaDsrl, VlaDsrlConfig};
pub use ppo::VlaPpo;
pub use sft::{DaggerLabels, VlaSft, VlaSftConfig};
