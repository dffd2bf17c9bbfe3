//! Robots and scenes simulated with rapier3d, many worlds stepped in parallel.
//!
//! - [`articulation`]: a [`RobotModel`](embodia_robots::RobotModel) as a multibody or as
//!   impulse-jointed bodies ([`JointModel`]), with drives.
//! - [`task`]: a task as a typed configuration of observation, reward, termination and event
//!   terms; [`tasks`]: the registered ones.
//! - [`spec`]: what the environments of a task share; [`scene`]: one environment, a bevy_ecs
//!   world; [`terms`]: the task's terms as bevy_ecs systems; [`env`]: the batch behind `VecEnv`.
//! - [`language`]: language-conditioned task families (an instruction drawn per episode).
//! - [`objects`]: dynamic objects on a table (boxes, the Push-T block) and their coverage.
//! - [`kinematics`]: forward kinematics and damped-least-squares IK of a robot model.
//! - [`ee_action`]: end-effector delta actions through differential IK.
//! - [`expert`]: scripted experts (reach, pick, push-t) and their evaluation.
//! - `view`: the [`SceneView`](crate::view::SceneView) of a batch, for viewers.

pub mod articulation;
pub mod ee_action;
pub mod env;
pub mod expert;
pub mod kinematics;
pub mod language;
pub mod objects;
pub mod scene;
pub mod spec;
pub mod task;
pub mod tasks;
pub mod terms;
mod view;

pub use articulation::{Articulation, IMPULSE_PGS_ITERATIONS, JointModel, SpawnOptions};
pub use env::RapierEnv;
pub use scene::Scene;
pub use spec::SceneSpec;
pub use task::TaskConfig;
pub use tasks::rapier_tasks;

#[cfg(test)]
mod tests;
