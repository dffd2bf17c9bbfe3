//! One-step students of a `K`-step flow policy: [`Distill`] after training (`embodia distill`),
//! [`DistillAlongside`] during flow-policy RL (`--distill-during-rl`).

pub mod alongside;
pub mod one_step;

pub use alongside::{ALONGSIDE_PREFIX, DistillAlongside, DistillAlongsideConfig};
pub use one_step::{
    ConsistencyLoss, Distill, DistillConfig, DistillMethod, FIXED_NOISE_KEY, STUDENT_KEY, STUDENT_PREFIX,
    teacher_of_checkpoint,
};
