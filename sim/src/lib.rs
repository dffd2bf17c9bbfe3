//! Vectorized environments for embodia.
//!
//! Every environment implements the [`VecEnv`] contract: a batch of `num_envs` independent
//! copies of one task, stepped together, with observations, rewards and episode flags in
//! contiguous `[num_envs, dim]` `f32` buffers ([`StepBuffers`]) and automatic reset.
//!
//! Tasks are looked up by name in a registry:
//!
//! ```
//! let mut env = embodia_sim::make("pendulum", 8)?;
//! env.reset(42);
//! let actions = vec![0.0_f32; env.num_envs() * env.action_spec().bounds.dim()];
//! env.step(&actions)?;
//! assert_eq!(env.buffers().reward.len(), 8);
//! # Ok::<(), embodia_sim::SimError>(())
//! ```
//!
//! The classic-control tasks in [`classic`] reproduce gymnasium's `Pendulum-v1` and
//! `MountainCarContinuous-v0` step for step (checked against recorded gymnasium trajectories in
//! `sim/tests/gymnasium_reference.rs`).
#![warn(missing_docs)]

pub mod classic;
pub mod rapier;
mod vec_env;

pub use vec_env::{ActionSpec, BoxSpace, EnvSnapshot, ObsSpec, RngState, StepBuffers, TaskInfo, VecEnv};

/// Errors of the simulator crate. None of them leaves an environment half-updated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// [`make`] was given a name that is not in the registry.
    #[error("unknown task `{name}`; valid tasks: {}", .valid.join(", "))]
    UnknownTask {
        /// The name asked for.
        name: String,
        /// The registered task names, in registry order.
        valid: Vec<String>,
    },
    /// The action buffer passed to [`VecEnv::step`] has the wrong number of values.
    #[error("action buffer has {got} values; expected {expected} (num_envs × action_dim)")]
    ActionLength {
        /// `num_envs * action_dim`.
        expected: usize,
        /// Length of the buffer passed.
        got: usize,
    },
    /// An action value is NaN or infinite.
    #[error("action component {index} of environment {env} is not finite")]
    NonFiniteAction {
        /// Environment index in the batch.
        env: usize,
        /// Component index within that environment's action.
        index: usize,
    },
    /// A batch of zero environments was requested.
    #[error("num_envs must be at least 1")]
    ZeroEnvs,
    /// [`VecEnv::restore`] was given a snapshot of another task, size or layout.
    #[error("snapshot does not match this environment: {0}")]
    SnapshotMismatch(String),
    /// A robot description cannot be simulated (massless moving link, loop, bad actuator).
    #[error("invalid robot: {0}")]
    InvalidRobot(String),
    /// A physical state passed to a `set_state` hook is malformed (wrong length, non-finite,
    /// or environment index out of range).
    #[error("invalid state: {0}")]
    InvalidState(String),
}

static TASKS: [TaskInfo; 2] = [classic::pendulum::INFO, classic::mountain_car::INFO];

/// The registered tasks, in a stable order (what `embodia list` prints).
pub fn tasks() -> &'static [TaskInfo] {
    &TASKS
}

/// Makes a batch of `num_envs` environments of the task called `name`, already reset with
/// seed 0.
///
/// Errors with [`SimError::UnknownTask`] (listing the valid names) or [`SimError::ZeroEnvs`].
pub fn make(name: &str, num_envs: usize) -> Result<Box<dyn VecEnv>, SimError> {
    match name {
        "pendulum" => Ok(Box::new(classic::PendulumEnv::new(num_envs)?)),
        "mountain-car-continuous" => Ok(Box::new(classic::MountainCarContinuousEnv::new(num_envs)?)),
        _ => Err(SimError::UnknownTask {
            name: name.to_string(),
            valid: tasks().iter().map(|t| t.name.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_task_lists_valid_names() {
        let err = make("foo", 1).err().expect("must fail");
        assert_eq!(err.to_string(), "unknown task `foo`; valid tasks: pendulum, mountain-car-continuous");
        match err {
            SimError::UnknownTask { name, valid } => {
                assert_eq!(name, "foo");
                assert_eq!(valid, vec!["pendulum", "mountain-car-continuous"]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn every_registered_task_can_be_made() {
        for t in tasks() {
            let env = make(t.name, 3).unwrap();
            assert_eq!(env.info(), t);
            assert_eq!(env.num_envs(), 3);
            let b = env.buffers();
            assert_eq!(b.obs.len(), 3 * env.obs_spec().vector.dim());
        }
    }

    #[test]
    fn zero_envs_is_an_error() {
        for t in tasks() {
            assert_eq!(make(t.name, 0).err(), Some(SimError::ZeroEnvs));
        }
    }
}
