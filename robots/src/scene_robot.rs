//! [`SceneRobot`]: the robot a task's `scene.robot` names, as the simulator needs it: the
//! kinematic tree and, from an MJCF file, what the file says beyond it about driving the joints
//! and about which shapes may touch. A URDF (every built-in robot) says none of that: its
//! joints are driven by the task's actuator settings and all its shapes collide.

use std::path::Path;

use crate::actuator::{ActuatorConfig, ControlMode};
use crate::builtin::{BuiltinError, builtin};
use crate::mjcf::{CollisionFilter, MjcfRobot, load_mjcf};
use crate::model::RobotModel;

/// A robot ready to be put into a scene.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneRobot {
    /// Links and joints; an MJCF file's sites are links too
    /// ([`MjcfRobot::model_with_sites`]), so that a site can be the end effector.
    pub model: RobotModel,
    /// Where the robot came from, for messages: the MJCF path or `built-in robot "NAME"`.
    pub source: String,
    /// What the robot file says about driving its joints; `None` for a URDF.
    pub file_drives: Option<FileDrives>,
    /// MuJoCo collision bitmasks of collision shapes that differ from the default
    /// (`contype` 1, `conaffinity` 1); shapes not listed collide with everything.
    pub collision_filters: Vec<CollisionFilter>,
    /// Pairs of links whose shapes never touch (`<contact><exclude>`), link indices.
    pub excluded_pairs: Vec<(usize, usize)>,
}

/// An MJCF file's own drives, per actuated joint of [`SceneRobot::model`] (the order of
/// [`RobotModel::actuated_joints`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FileDrives {
    /// The actuator driving each actuated joint, `[num_actuated]`; `None` where the file has
    /// none (the task's actuator settings drive that joint).
    pub actuators: Vec<Option<FileActuator>>,
    /// The joint's `armature`, kg·m² or kg, `[num_actuated]`.
    pub armature: Vec<f64>,
}

/// One MJCF actuator on one joint, in embodia's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct FileActuator {
    /// The actuator's name in the file.
    pub name: String,
    /// The MJCF element (`motor`, `position`, `velocity`, `general`).
    pub element: String,
    /// Mode, gains and effort limit (its `armature` is the joint's).
    pub config: ActuatorConfig,
    /// The range MuJoCo clamps this actuator's control to (`ctrlrange`), in the command's
    /// units: rad or m (position), rad/s or m/s (velocity), N·m or N (torque: the control range
    /// times the gear). `None` when unlimited.
    pub command_range: Option<[f64; 2]>,
}

impl SceneRobot {
    /// A URDF robot (or one built in code): no file drives, no collision filters.
    pub fn from_model(model: RobotModel, source: String) -> Self {
        Self { model, source, file_drives: None, collision_filters: Vec::new(), excluded_pairs: Vec::new() }
    }

    /// An MJCF robot read from `path`. Errors when two actuators drive one joint (embodia's
    /// drives have one command per joint), naming both.
    pub fn from_mjcf(robot: &MjcfRobot, path: &Path) -> Result<Self, String> {
        let model = robot.model_with_sites();
        let actuated = model.actuated_joints();
        let mut actuators = Vec::with_capacity(actuated.len());
        for &joint in &actuated {
            let mut on_joint = robot.actuators.iter().filter(|a| a.joint == joint);
            let first = on_joint.next();
            if let (Some(a), Some(b)) = (first, on_joint.next()) {
                return Err(format!(
                    "{}: actuators \"{}\" and \"{}\" both drive joint \"{}\": embodia drives a joint with one actuator",
                    path.display(),
                    a.name,
                    b.name,
                    model.joints[joint].name
                ));
            }
            actuators.push(first.map(|a| {
                let range = a.ctrl_range.map(|[lo, hi]| match a.config.mode {
                    ControlMode::Torque => {
                        let (x, y) = (lo * a.gear, hi * a.gear);
                        [x.min(y), x.max(y)]
                    }
                    ControlMode::Position | ControlMode::Velocity => [lo, hi],
                });
                FileActuator {
                    name: a.name.clone(),
                    element: a.element.clone(),
                    config: a.config,
                    command_range: range,
                }
            }));
        }
        let default = |f: &CollisionFilter| f.contype == 1 && f.conaffinity == 1;
        Ok(Self {
            source: path.display().to_string(),
            file_drives: Some(FileDrives {
                actuators,
                armature: actuated.iter().map(|&j| robot.armature[j]).collect(),
            }),
            collision_filters: robot.collision_filters.iter().filter(|f| !default(f)).copied().collect(),
            excluded_pairs: robot.excluded_pairs.clone(),
            model,
        })
    }
}

impl From<RobotModel> for SceneRobot {
    /// [`SceneRobot::from_model`], with the model's name as its source.
    fn from(model: RobotModel) -> Self {
        let source = format!("robot \"{}\"", model.name);
        Self::from_model(model, source)
    }
}

/// The robot a task's `scene.robot` names: the path of an MJCF file when it ends in `.xml`
/// (relative to the working directory; see [`crate::mjcf`]), else a built-in robot
/// ([`builtin`]).
pub fn scene_robot(robot: &str) -> Result<SceneRobot, BuiltinError> {
    if robot.ends_with(".xml") {
        let path = Path::new(robot);
        return SceneRobot::from_mjcf(&load_mjcf(path)?, path).map_err(BuiltinError::Drives);
    }
    Ok(SceneRobot::from_model(builtin(robot)?, format!("built-in robot \"{robot}\"")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_mjcf;

    const TWO_JOINTS: &str = r#"<mujoco model="two">
      <worldbody><body name="a">
        <joint name="j1" type="hinge" axis="0 0 1" range="-90 90" armature="0.5"/>
        <geom type="box" size="0.1 0.1 0.1" contype="2" conaffinity="4"/>
        <body name="b" pos="0.3 0 0">
          <joint name="j2" type="hinge" axis="0 0 1" range="-90 90"/>
          <geom type="sphere" size="0.05"/>
        </body>
      </body></worldbody>
      <contact><exclude body1="a" body2="b"/></contact>
      <actuator>
        <motor name="m" joint="j1" gear="10" ctrlrange="-1 0.5"/>
        ACTUATOR2
      </actuator>
    </mujoco>"#;

    fn load(xml: &str) -> Result<SceneRobot, String> {
        SceneRobot::from_mjcf(&parse_mjcf(xml, None).unwrap(), Path::new("two.xml"))
    }

    #[test]
    fn mjcf_drives_are_per_actuated_joint_with_commands_in_joint_units() {
        let robot =
            load(&TWO_JOINTS.replace("ACTUATOR2", r#"<position joint="j2" kp="7" ctrlrange="-0.5 0.5"/>"#)).unwrap();
        let drives = robot.file_drives.unwrap();
        assert_eq!(drives.armature, vec![0.5, 0.0]);
        let motor = drives.actuators[0].as_ref().unwrap();
        assert_eq!((motor.name.as_str(), motor.config.mode), ("m", ControlMode::Torque));
        assert_eq!(motor.command_range, Some([-10.0, 5.0]), "ctrlrange times gear, N·m");
        let servo = drives.actuators[1].as_ref().unwrap();
        assert_eq!((servo.config.mode, servo.config.stiffness), (ControlMode::Position, 7.0));
        assert_eq!(servo.command_range, Some([-0.5, 0.5]));
        // The box's non-default bitmasks are kept, the sphere's defaults are not.
        assert_eq!(robot.collision_filters.len(), 1);
        assert_eq!((robot.collision_filters[0].contype, robot.collision_filters[0].conaffinity), (2, 4));
        assert_eq!(robot.excluded_pairs.len(), 1);
    }

    #[test]
    fn two_actuators_on_one_joint_are_refused_naming_both() {
        let err = load(&TWO_JOINTS.replace("ACTUATOR2", r#"<velocity name="v" joint="j1"/>"#)).unwrap_err();
        assert!(err.contains(r#"actuators "m" and "v" both drive joint "j1""#), "{err}");
    }

    #[test]
    fn built_in_robots_have_no_file_drives() {
        let robot = scene_robot("so101").unwrap();
        assert_eq!(robot.model, builtin("so101").unwrap());
        assert!(robot.file_drives.is_none() && robot.collision_filters.is_empty());
    }
}
