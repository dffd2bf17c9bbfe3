//! Robots and scenes simulated with rapier3d, many worlds stepped in parallel.
//!
//! - [`articulation`]: a [`RobotModel`](embodia_robots::RobotModel) as a multibody or as
//!   impulse-jointed bodies ([`JointModel`]), with drives; [`drives`]: how each joint is
//!   driven (the task's actuator or an MJCF file's own); [`contact_filter`]: which shapes touch
//!   (MJCF collision bitmasks and excluded pairs).
//! - [`task_config`]: a task as a typed configuration of observation, reward, termination and
//!   event terms; [`builtin_tasks`]: the registered ones.
//! - [`spec`]: what the environments of a task share; [`scene`]: one environment, a bevy_ecs
//!   world; [`terms`]: the task's terms as bevy_ecs systems; [`env`]: the batch behind `VecEnv`.
//! - [`language`]: language-conditioned task families (an instruction drawn per episode).
//! - [`objects`]: dynamic objects on a table (boxes, the Push-T block) and their coverage;
//!   [`sampling`]: the random draws of resets and events.
//! - [`kinematics`]: forward kinematics and damped-least-squares IK of a robot model.
//! - [`ee_action`]: end-effector delta actions through differential IK.
//! - [`scripted_expert`]: scripted experts (reach, pick, push-t, language) and the labeller of
//!   DAgger; [`expert_runs`]: their episodes evaluated or recorded as demonstrations.
//! - `task_cameras`: where a task's cameras stand (`RenderConfig::for_task`).
//! - `scene_view`: the [`SceneView`](crate::view::SceneView) of a batch, for viewers.

pub mod articulation;
pub mod builtin_tasks;
pub mod contact_filter;
pub mod drives;
pub mod ee_action;
pub mod env;
pub mod expert_runs;
pub mod kinematics;
pub mod language;
pub mod objects;
mod sampling;
pub mod scene;
mod scene_view;
pub mod scripted_expert;
pub mod spec;
mod task_cameras;
pub mod task_config;
pub mod terms;

pub use articulation::{Articulation, IMPULSE_PGS_ITERATIONS, JointModel, SpawnOptions};
pub use builtin_tasks::rapier_tasks;
pub use env::RapierEnv;
pub use scene::Scene;
pub use spec::SceneSpec;
pub use task_config::TaskConfig;

#[cfg(test)]
mod tests;
