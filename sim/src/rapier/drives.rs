//! How each actuated joint is driven: the task's actuator settings (`scene.actuator`) and, with
//! `scene.actuators_from = "robot_file"`, an MJCF file's own `<actuator>`s and joint
//! `armature`, resolved into one [`JointDrive`] per joint.

pub use super::articulation::JointDrive;
use super::task_config::{ActionKind, ActuatorSource, SceneConfig};
use embodia_robots::{ActuatorConfig, ControlMode, SceneRobot};

/// One drive per actuated joint of `robot` (`[num_actuated]`, in
/// [`embodia_robots::RobotModel::actuated_joints`] order), from `scene`'s actuator settings
/// and [`SceneConfig::actuators_from`]. Errors name the field, file or actuator at fault.
pub fn resolve_drives(scene: &SceneConfig, robot: &SceneRobot) -> Result<Vec<JointDrive>, String> {
    scene.actuator.validate().map_err(|e| format!("`env.scene.actuator`: {e}"))?;
    let n = robot.model.actuated_joints().len();
    let task = JointDrive::new(scene.actuator);
    if scene.actuators_from == ActuatorSource::Task {
        return Ok(vec![task; n]);
    }
    let Some(file) = &robot.file_drives else {
        return Err(format!(
            "`env.scene.actuators_from = \"robot_file\"` needs an MJCF robot with actuators of its own; {} is \
             described by a URDF, which has none (use \"task\")",
            robot.source
        ));
    };
    let joints = robot.model.actuated_joints();
    let mut drives = Vec::with_capacity(n);
    for (i, actuator) in file.actuators.iter().enumerate() {
        let armature = file.armature[i];
        let drive = match actuator {
            Some(a) => {
                let at_fault = |e: String| {
                    format!(
                        "{}: actuator \"{}\" on joint \"{}\": {e}",
                        robot.source, a.name, robot.model.joints[joints[i]].name
                    )
                };
                let config = ActuatorConfig { armature, ..a.config };
                config.validate().map_err(at_fault)?;
                let range = a.command_range.map_or(task.command_range, |[lo, hi]| [lo as f32, hi as f32]);
                JointDrive { actuator: config, command_range: range }
            }
            None => JointDrive::new(ActuatorConfig { armature, ..scene.actuator }),
        };
        drives.push(drive);
    }
    Ok(drives)
}

/// The mode an action of `kind` commands in.
pub fn mode_of(kind: ActionKind) -> ControlMode {
    match kind {
        ActionKind::JointPosition
        | ActionKind::JointPositionDelta
        | ActionKind::EndEffectorDelta
        | ActionKind::EndEffectorPosition => ControlMode::Position,
        ActionKind::JointVelocity => ControlMode::Velocity,
        ActionKind::JointEffort => ControlMode::Torque,
    }
}

/// What drives actuated joint `i` of `robot`, for messages: the file's actuator or
/// `env.scene.actuator`.
pub fn drive_origin(scene: &SceneConfig, robot: &SceneRobot, i: usize) -> String {
    let file = robot.file_drives.as_ref().filter(|_| scene.actuators_from == ActuatorSource::RobotFile);
    match file.and_then(|f| f.actuators[i].as_ref()) {
        Some(a) => format!("<{}> actuator \"{}\" of {}", a.element, a.name, robot.source),
        None => "`env.scene.actuator`".into(),
    }
}

#[cfg(test)]
mod tests {
    use embodia_robots::{FileActuator, FileDrives, builtin};

    use super::*;

    fn so101_with_file_drives() -> SceneRobot {
        let mut robot = SceneRobot::from(builtin("so101").unwrap());
        let motor = FileActuator {
            name: "pan".into(),
            element: "motor".into(),
            config: ActuatorConfig { effort_limit: Some(2.0), ..ActuatorConfig::torque() },
            command_range: Some([-1.0, 2.0]),
        };
        let mut actuators = vec![None; 6];
        actuators[0] = Some(motor);
        robot.file_drives = Some(FileDrives { actuators, armature: vec![0.25; 6] });
        robot
    }

    #[test]
    fn the_task_source_drives_every_joint_with_scene_actuator() {
        let scene = crate::task_config("reach").unwrap().scene;
        let drives = resolve_drives(&scene, &so101_with_file_drives()).unwrap();
        assert!(drives.iter().all(|d| *d == JointDrive::new(scene.actuator)));
    }

    #[test]
    fn the_robot_file_source_takes_file_actuators_and_armature_and_the_task_elsewhere() {
        let mut scene = crate::task_config("reach").unwrap().scene;
        scene.actuators_from = ActuatorSource::RobotFile;
        let drives = resolve_drives(&scene, &so101_with_file_drives()).unwrap();
        assert_eq!(drives[0].actuator.mode, ControlMode::Torque);
        assert_eq!(drives[0].command_range, [-1.0, 2.0]);
        assert_eq!(drives[0].actuator.armature, 0.25);
        assert_eq!(drives[1].actuator, ActuatorConfig { armature: 0.25, ..scene.actuator });
        assert_eq!(drives[1].command_range, [f32::NEG_INFINITY, f32::INFINITY]);
    }

    #[test]
    fn names_in_messages_are_the_names_configs_write() {
        use ActionKind::*;
        for kind in
            [JointPosition, JointPositionDelta, JointVelocity, JointEffort, EndEffectorDelta, EndEffectorPosition]
        {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
        for mode in [ControlMode::Position, ControlMode::Velocity, ControlMode::Torque] {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.name());
        }
    }

    #[test]
    fn the_robot_file_source_on_a_urdf_robot_is_a_clear_error() {
        let mut scene = crate::task_config("reach").unwrap().scene;
        scene.actuators_from = ActuatorSource::RobotFile;
        let err = resolve_drives(&scene, &SceneRobot::from(builtin("so101").unwrap())).unwrap_err();
        assert!(err.contains("actuators_from") && err.contains("URDF"), "{err}");
    }
}
