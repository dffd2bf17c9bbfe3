//! The robots that ship with embodia: URDF files under `assets/robots/`, embedded in the
//! binary, and the cart-pole, built in code from the constants of the classic benchmark.

use crate::mjcf::MjcfError;
use crate::model::{Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, Pose, RobotModel, Shape};
use crate::urdf::{UrdfError, parse_urdf};

/// A built-in robot description, as listed by `embodia list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RobotInfo {
    /// Name used on the command line and in configs, e.g. `"so101"`.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
}

/// Where a built-in robot's description comes from.
enum Source {
    /// Embedded URDF text (file name under `assets/robots/`, contents).
    Urdf(&'static str, &'static str),
    /// Built in code.
    Code(fn() -> RobotModel),
    /// Closed-form dynamics inside a classic-control task; no `RobotModel`.
    Classic,
}

struct Entry {
    info: RobotInfo,
    source: Source,
}

macro_rules! urdf {
    ($file:literal) => {
        Source::Urdf($file, include_str!(concat!("../../assets/robots/", $file)))
    };
}

static BUILTIN: [Entry; 9] = [
    Entry {
        info: RobotInfo {
            name: "pendulum",
            description: "single rod on one torque-limited revolute joint (gymnasium Pendulum-v1 constants)",
        },
        source: Source::Classic,
    },
    Entry {
        info: RobotInfo {
            name: "cartpole",
            description: "cart on a prismatic rail with a passive pole (1 kg cart, 0.1 kg × 1 m pole)",
        },
        source: Source::Code(cartpole),
    },
    Entry {
        info: RobotInfo { name: "reacher2", description: "2-DoF planar reacher (gymnasium Reacher proportions)" },
        source: urdf!("reacher2.urdf"),
    },
    Entry {
        info: RobotInfo {
            name: "so101",
            description: "6-DoF desk arm with a one-servo gripper shaped like the SO-100/SO-101 (STS3215 limits)",
        },
        source: urdf!("so101.urdf"),
    },
    Entry {
        info: RobotInfo {
            name: "koch",
            description: "6-DoF Koch v1.1 desk arm on Dynamixel XL430/XL330 servos (LeRobot's koch_follower)",
        },
        source: urdf!("koch.urdf"),
    },
    Entry {
        info: RobotInfo {
            name: "arm7",
            description: "7-DoF arm with a parallel gripper, Franka Panda kinematics and limits",
        },
        source: urdf!("arm7.urdf"),
    },
    Entry {
        info: RobotInfo {
            name: "quadruped12",
            description: "12-DoF quadruped of Unitree Go1 proportions and joint limits",
        },
        source: urdf!("quadruped12.urdf"),
    },
    Entry {
        info: RobotInfo { name: "ant", description: "8-DoF ant with the geometry of gymnasium/MuJoCo Ant-v5" },
        source: urdf!("ant.urdf"),
    },
    Entry {
        info: RobotInfo {
            name: "pusher2d",
            description: "planar x-y pusher: a puck on two prismatic joints over the table (Push-T agent)",
        },
        source: urdf!("pusher2d.urdf"),
    },
];

/// The built-in robot descriptions, in a stable order.
pub fn catalog() -> impl Iterator<Item = &'static RobotInfo> {
    BUILTIN.iter().map(|e| &e.info)
}

/// Errors of [`builtin`].
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// No built-in robot has that name.
    #[error("unknown robot `{name}`; built-in robots: {}", .valid.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The built-in names.
        valid: Vec<String>,
    },
    /// The robot's dynamics are closed-form inside a classic task.
    #[error("robot `{0}` is simulated in closed form by its classic-control task and has no RobotModel")]
    Classic(String),
    /// The embedded URDF does not parse (a bug in the shipped asset).
    #[error(transparent)]
    Urdf(#[from] UrdfError),
    /// The MJCF file named by [`scene_robot`](crate::scene_robot) is unreadable, invalid or
    /// unsupported.
    #[error(transparent)]
    Mjcf(#[from] MjcfError),
    /// The MJCF file's actuators cannot drive the joints as embodia does (the message names the
    /// file, the actuators and the joint).
    #[error("{0}")]
    Drives(String),
}

/// The [`RobotModel`] of the built-in robot called `name`.
pub fn builtin(name: &str) -> Result<RobotModel, BuiltinError> {
    let entry = BUILTIN.iter().find(|e| e.info.name == name).ok_or_else(|| BuiltinError::Unknown {
        name: name.to_string(),
        valid: BUILTIN.iter().map(|e| e.info.name.to_string()).collect(),
    })?;
    match entry.source {
        Source::Urdf(file, text) => parse_urdf(text, None)
            .map_err(|e| BuiltinError::Urdf(e.in_file(std::path::Path::new("assets/robots").join(file)))),
        Source::Code(build) => Ok(build()),
        Source::Classic => Err(BuiltinError::Classic(name.to_string())),
    }
}

/// Cart-pole: a 1 kg cart on a prismatic rail (±3 m) along x with a passive 0.1 kg, 1 m
/// uniform pole hinged about y; the pole is upright at zero. The masses and pole length are
/// those of the classic benchmark (Barto, Sutton and Anderson 1983; gymnasium CartPole).
pub fn cartpole() -> RobotModel {
    let (cart_mass, pole_mass, pole_length) = (1.0, 0.1, 1.0);
    let box_inertia = |m: f64, [x, y, z]: [f64; 3]| {
        [m * (y * y + z * z) / 12.0, 0.0, 0.0, m * (x * x + z * z) / 12.0, 0.0, m * (x * x + y * y) / 12.0]
    };
    let shape = |origin: Pose, geometry: Geometry, rgba: Option<[f32; 4]>| Shape { name: None, origin, geometry, rgba };
    let cart_size = [0.3, 0.2, 0.1];
    let pole_radius = 0.02;
    let pole_i = pole_mass * pole_length * pole_length / 12.0;
    let half = Pose::translation(0.0, 0.0, pole_length / 2.0);
    let pole_geometry = Geometry::Cylinder { radius: pole_radius, length: pole_length };
    RobotModel {
        name: "cartpole".into(),
        links: vec![
            Link {
                name: "rail".into(),
                inertial: None,
                visuals: vec![shape(
                    Pose::IDENTITY,
                    Geometry::Box { size: [6.0, 0.02, 0.02] },
                    Some([0.5, 0.5, 0.5, 1.0]),
                )],
                collisions: vec![],
            },
            Link {
                name: "cart".into(),
                inertial: Some(Inertial {
                    origin: Pose::IDENTITY,
                    mass: cart_mass,
                    inertia: box_inertia(cart_mass, cart_size),
                }),
                visuals: vec![shape(Pose::IDENTITY, Geometry::Box { size: cart_size }, Some([0.2, 0.4, 0.8, 1.0]))],
                collisions: vec![],
            },
            Link {
                name: "pole".into(),
                inertial: Some(Inertial {
                    origin: half,
                    mass: pole_mass,
                    inertia: [pole_i, 0.0, 0.0, pole_i, 0.0, pole_mass * pole_radius * pole_radius / 2.0],
                }),
                visuals: vec![shape(half, pole_geometry.clone(), Some([0.9, 0.6, 0.2, 1.0]))],
                collisions: vec![],
            },
        ],
        joints: vec![
            Joint {
                name: "slider".into(),
                kind: JointKind::Prismatic,
                parent: 0,
                child: 1,
                origin: Pose::IDENTITY,
                axis: [1.0, 0.0, 0.0],
                limit: Some(JointLimit { lower: -3.0, upper: 3.0, effort: 100.0, velocity: 100.0 }),
                dynamics: JointDynamics::default(),
                mimic: None,
            },
            Joint {
                name: "hinge".into(),
                kind: JointKind::Continuous,
                parent: 1,
                child: 2,
                origin: Pose::IDENTITY,
                axis: [0.0, 1.0, 0.0],
                limit: None,
                dynamics: JointDynamics::default(),
                mimic: None,
            },
        ],
        root: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_urdf_robot_parses_with_its_declared_dof() {
        let expected = [
            ("reacher2", 2),
            ("so101", 6),
            ("koch", 6),
            ("arm7", 8),
            ("quadruped12", 12),
            ("ant", 8),
            ("cartpole", 2),
            ("pusher2d", 2),
        ];
        for (name, dof) in expected {
            let model = builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(model.actuated_joints().len(), dof, "{name}");
            assert!(model.total_mass() > 0.0, "{name}");
        }
    }

    #[test]
    fn scene_robot_reads_mjcf_files_and_built_in_names() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/robots/so101.xml");
        let mjcf = crate::scene_robot(path).unwrap().model;
        assert_eq!((mjcf.name.as_str(), mjcf.actuated_joints().len()), ("so101", 6));
        let missing = crate::scene_robot("no/such/robot.xml").unwrap_err();
        assert!(matches!(missing, BuiltinError::Mjcf(_)));
        assert!(missing.to_string().starts_with("no/such/robot.xml: cannot read the file"), "{missing}");
    }

    #[test]
    fn unknown_and_classic_robots_are_clear_errors() {
        assert!(builtin("nope").unwrap_err().to_string().contains("built-in robots: pendulum, cartpole"));
        assert!(matches!(builtin("pendulum"), Err(BuiltinError::Classic(_))));
    }

    #[test]
    fn catalog_names_are_unique_and_described() {
        let names: Vec<_> = catalog().map(|r| r.name).collect();
        for (i, r) in catalog().enumerate() {
            assert!(!r.description.is_empty());
            assert!(!names[i + 1..].contains(&r.name));
        }
    }
}
