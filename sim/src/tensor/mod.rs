//! Environments whose state lives in burn tensors on a device: every environment of the batch
//! is one element of `[num_envs]` columns, and a step is a sequence of batched tensor ops, so
//! on a GPU backend observations reach the policy without leaving the device.
//!
//! The dynamics are the generic ones of [`crate::dynamics`] (the same functions the `f32` CPU
//! environments run). A [`TensorEnv`] is also a [`VecEnv`]: `step` uploads the actions, steps
//! on the device and downloads all results in one transfer into [`StepBuffers`];
//! [`TensorVecEnv::step_tensor`] skips the host entirely.
//!
//! Randomness (initial states, domain randomization, observation noise) comes from the
//! device's generator, seeded by `reset(seed)`: a seed reproduces a rollout on the same
//! backend and device, but the draws differ from the CPU environments', and the generator
//! state cannot be snapshotted (`restore` reports that).

mod batch;
mod env;

pub use batch::{BatchCartPole, BatchOutcome, BatchPendulum, BatchQuadrotor, BatchTask, CartPoleMode, Col};
pub use env::{TensorEnv, TensorStep, TensorVecEnv};

use crate::{SimError, SolveMetric, TaskInfo};
use burn::tensor::Device;

/// Names of the tasks available as tensor environments.
pub const TENSOR_TASKS: [&str; 5] =
    ["pendulum", "cartpole-balance", "cartpole-swingup", "quadrotor-hover", "quadrotor-track"];

/// Makes a batch of `num_envs` tensor environments of the task `name` on `device`, reset with
/// seed 0. Errors with [`SimError::UnknownTask`] (listing [`TENSOR_TASKS`]) or
/// [`SimError::ZeroEnvs`].
pub fn make_tensor(name: &str, num_envs: usize, device: &Device) -> Result<Box<dyn TensorVecEnv>, SimError> {
    use crate::classic::Quadrotor;
    Ok(match name {
        "pendulum" => Box::new(TensorEnv::new(BatchPendulum::default(), num_envs, device)?),
        "cartpole-balance" => Box::new(TensorEnv::new(BatchCartPole::new(CartPoleMode::Balance), num_envs, device)?),
        "cartpole-swingup" => Box::new(TensorEnv::new(BatchCartPole::new(CartPoleMode::SwingUp), num_envs, device)?),
        "quadrotor-hover" => Box::new(TensorEnv::new(BatchQuadrotor(Quadrotor::hover()), num_envs, device)?),
        "quadrotor-track" => Box::new(TensorEnv::new(BatchQuadrotor(Quadrotor::track()), num_envs, device)?),
        _ => {
            return Err(SimError::UnknownTask {
                name: name.to_string(),
                valid: TENSOR_TASKS.iter().map(|s| s.to_string()).collect(),
            });
        }
    })
}

/// Registry entry of the continuous cart-pole balance task (tensor environments only).
pub const CARTPOLE_BALANCE_INFO: TaskInfo = TaskInfo {
    name: "cartpole-balance",
    description: "keep a pole upright on a cart pushed by a continuous force (gymnasium CartPole physics)",
    max_episode_steps: 500,
    solve_threshold: 475.0,
    has_success: false,
    solved_by: SolveMetric::Return,
};

/// Registry entry of the continuous cart-pole swing-up task (tensor environments only).
pub const CARTPOLE_SWINGUP_INFO: TaskInfo = TaskInfo {
    name: "cartpole-swingup",
    description: "swing a hanging pole up and balance it on a cart pushed by a continuous force",
    max_episode_steps: 500,
    solve_threshold: 350.0,
    has_success: false,
    solved_by: SolveMetric::Return,
};

#[cfg(test)]
mod tests;
