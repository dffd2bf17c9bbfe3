//! What off-policy and GRPO learners keep between iterations: the transition [`ReplayBuffer`]
//! of SAC and DSRL, and the pool of initial states GRPO groups failed from
//! ([`FailedStateReplay`]).

mod failed_states;
mod replay;

pub use failed_states::{FailedStateReplay, MAX_REPLAYS};
pub use replay::{ReplayBuffer, TransitionBatch};
