//! Robot models for embodia.
//!
//! This crate holds the [`RobotModel`] of a robot (links, joints, limits, inertias, shapes),
//! imported from URDF by [`load_urdf`] / [`parse_urdf`] or from MJCF by [`load_mjcf`] /
//! [`parse_mjcf`], actuator configuration, the physical
//! parameters of the built-in classic-control robots and a [`catalog`] of the built-in robot
//! descriptions (what `embodia list` prints), and [`hardware`] maps (servo ids, calibration,
//! joint↔servo conversion).
#![warn(missing_docs)]

pub mod actuator;
pub mod builtin;
pub mod hardware;
pub mod mjcf;
pub mod model;
pub mod parser_panics;
pub mod quadrotor_params;
pub mod scene_robot;
mod summary;
pub mod urdf;

pub use actuator::{ActuatorConfig, ControlMode};
pub use builtin::{BuiltinError, RobotInfo, builtin, catalog};
pub use hardware::{Calibration, HardwareError, HardwareMap, JointCalibration, ServoBus, ServoJoint};
pub use mjcf::{CollisionFilter, MjcfActuator, MjcfError, MjcfErrorKind, MjcfRobot, load_mjcf, parse_mjcf};
pub use model::{
    Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, MeshCollision, MeshData, Mimic, Pose,
    RobotModel, Shape,
};
pub use quadrotor_params::QuadrotorParams;
pub use scene_robot::{FileActuator, FileDrives, SceneRobot, scene_robot};
pub use urdf::{UrdfError, UrdfErrorKind, load_urdf, parse_urdf};

/// Physical parameters of the single-link pendulum of gymnasium's `Pendulum-v1`.
///
/// A uniform rod of mass `m` and length `l` hangs from a fixed, actuated revolute joint; the
/// angle is measured from the upright position, counter-clockwise positive. The simulator
/// integrates `θ̈ = 3g/(2l)·sin θ + 3/(m l²)·τ` with semi-implicit Euler at step `dt`, clipping
/// the torque `τ` to `±max_torque` and the angular velocity to `±max_speed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendulumParams {
    /// Angular velocity limit, rad/s (the velocity is clipped to `±max_speed` each step).
    pub max_speed: f64,
    /// Torque limit, N·m (actions are clipped to `±max_torque`).
    pub max_torque: f64,
    /// Control and integration step, s.
    pub dt: f64,
    /// Gravitational acceleration, m/s².
    pub g: f64,
    /// Rod mass, kg.
    pub m: f64,
    /// Rod length, m.
    pub l: f64,
}

impl PendulumParams {
    /// The constants of gymnasium's `Pendulum-v1` (with its default `g = 10`).
    pub const GYMNASIUM: Self = Self { max_speed: 8.0, max_torque: 2.0, dt: 0.05, g: 10.0, m: 1.0, l: 1.0 };
}

impl Default for PendulumParams {
    /// Same as [`PendulumParams::GYMNASIUM`].
    fn default() -> Self {
        Self::GYMNASIUM
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_gymnasium() {
        assert_eq!(PendulumParams::default(), PendulumParams::GYMNASIUM);
    }
}
