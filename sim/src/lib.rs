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

pub mod camera;
pub mod classic;
pub mod demonstrations;
pub mod dynamics;
mod env_groups;
pub mod rapier;
pub mod tensor;
mod vec_env;
pub mod view;

pub use env_groups::{EnvGroups, EnvGroupsView};
pub use rapier::TaskConfig;
use std::sync::LazyLock;
pub use vec_env::{
    ActionSpec, ActionState, BoxSpace, EnvSnapshot, ImageSpec, ObsSpec, RngState, SolveMetric, StepBuffers, TaskInfo,
    VecEnv,
};

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
    /// A batch larger than its kind of environment may hold was requested ([`MAX_ENVS`],
    /// [`MAX_RAPIER_ENVS`]).
    #[error("num_envs {num_envs} is more than one batch of this task may hold (allowed: 1 ..= {max})")]
    TooManyEnvs {
        /// The size asked for.
        num_envs: usize,
        /// The largest allowed.
        max: usize,
    },
    /// [`VecEnv::restore`] was given a snapshot of another task, size or layout.
    #[error("snapshot does not match this environment: {0}")]
    SnapshotMismatch(String),
    /// A task configuration is inconsistent with itself or its robot (names the `env.` field).
    #[error("invalid task configuration: {0}")]
    InvalidTask(String),
    /// A task without a scripted expert was asked for expert actions (demonstrations, DAgger).
    #[error(
        "task `{name}` has no scripted expert to demonstrate it; tasks with one: {}",
        .with_expert.join(", ")
    )]
    NoExpert {
        /// The task asked for.
        name: String,
        /// The registered tasks that have one.
        with_expert: Vec<String>,
    },
    /// A robot description cannot be simulated (massless moving link, loop, bad actuator).
    #[error("invalid robot: {0}")]
    InvalidRobot(String),
    /// The operation is not supported by this kind of environment (says which and why).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A camera configuration is invalid or does not fit the scene (names the field).
    #[error("invalid camera configuration: {0}")]
    InvalidCamera(String),
    /// A physical state passed to a `set_state` hook is malformed (wrong length, non-finite,
    /// or environment index out of range).
    #[error("invalid state: {0}")]
    InvalidState(String),
}

static TASKS: LazyLock<Vec<TaskInfo>> = LazyLock::new(|| {
    let mut tasks = vec![classic::pendulum::INFO, classic::mountain_car::INFO];
    tasks.extend(rapier::rapier_tasks().into_iter().map(|t| {
        let config = (t.config)();
        TaskInfo { max_episode_steps: config.episode_steps, solve_threshold: config.solve_threshold, ..t.info }
    }));
    tasks.extend([classic::quadrotor_tasks::HOVER_INFO, classic::quadrotor_tasks::TRACK_INFO]);
    tasks
});

/// The registered tasks, in a stable order (what `embodia list` prints).
pub fn tasks() -> &'static [TaskInfo] {
    &TASKS
}

/// The default configuration of a rapier task; `None` for classic tasks and unknown names.
pub fn task_config(name: &str) -> Option<TaskConfig> {
    rapier::rapier_tasks().into_iter().find(|t| t.info.name == name).map(|t| (t.config)())
}

/// The most environments one batch may hold (tensor environments on a GPU run 2^20 of them); a
/// mistyped count fails at once instead of trying to allocate it.
pub const MAX_ENVS: usize = 1 << 21;

/// The most rapier environments one batch may hold: each is a physics world and an ECS world of
/// its own (tens to hundreds of kB).
pub const MAX_RAPIER_ENVS: usize = 1 << 16;

/// Makes a batch of `num_envs` environments of the task called `name`, already reset with
/// seed 0, with the task's default configuration.
///
/// Errors with [`SimError::UnknownTask`] (listing the valid names) or [`SimError::ZeroEnvs`].
pub fn make(name: &str, num_envs: usize) -> Result<Box<dyn VecEnv>, SimError> {
    make_with(name, num_envs, None)
}

/// Like [`make`], with `config` replacing the default configuration of a rapier task (it is an
/// error to pass one for a classic task).
pub fn make_with(name: &str, num_envs: usize, config: Option<&TaskConfig>) -> Result<Box<dyn VecEnv>, SimError> {
    if num_envs > MAX_ENVS {
        return Err(SimError::TooManyEnvs { num_envs, max: MAX_ENVS });
    }
    match (name, config) {
        ("pendulum", None) => return Ok(Box::new(classic::PendulumEnv::new(num_envs)?)),
        ("mountain-car-continuous", None) => return Ok(Box::new(classic::MountainCarContinuousEnv::new(num_envs)?)),
        ("quadrotor-hover", None) => {
            return Ok(Box::new(classic::QuadrotorEnv::with_task(classic::Quadrotor::hover(), num_envs)?));
        }
        ("quadrotor-track", None) => {
            return Ok(Box::new(classic::QuadrotorEnv::with_task(classic::Quadrotor::track(), num_envs)?));
        }
        ("pendulum" | "mountain-car-continuous" | "quadrotor-hover" | "quadrotor-track", Some(_)) => {
            return Err(SimError::InvalidTask(format!("task `{name}` is classic-control and takes no `env` config")));
        }
        _ => {}
    }
    let Some(task) = rapier::rapier_tasks().into_iter().find(|t| t.info.name == name) else {
        return Err(SimError::UnknownTask {
            name: name.to_string(),
            valid: tasks().iter().map(|t| t.name.to_string()).collect(),
        });
    };
    let config = config.cloned().unwrap_or_else(task.config);
    let model = embodia_robots::scene_robot(&config.scene.robot)
        .map_err(|e| SimError::InvalidTask(format!("`env.scene.robot`: {e}")))?;
    Ok(Box::new(rapier::RapierEnv::new(task.info, config, model, num_envs)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_beyond_their_bound_are_refused_before_allocating() {
        let too_many = |num_envs, max| Some(SimError::TooManyEnvs { num_envs, max });
        assert_eq!(make("pendulum", MAX_ENVS + 1).err(), too_many(MAX_ENVS + 1, MAX_ENVS));
        assert_eq!(make("reach", MAX_RAPIER_ENVS + 1).err(), too_many(MAX_RAPIER_ENVS + 1, MAX_RAPIER_ENVS));
    }

    #[test]
    fn unknown_task_lists_valid_names() {
        let err = make("foo", 1).err().expect("must fail");
        assert!(
            err.to_string().starts_with("unknown task `foo`; valid tasks: pendulum, mountain-car-continuous, cartpole")
        );
        match err {
            SimError::UnknownTask { name, valid } => {
                assert_eq!(name, "foo");
                assert_eq!(valid[..3], ["pendulum", "mountain-car-continuous", "cartpole"]);
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
