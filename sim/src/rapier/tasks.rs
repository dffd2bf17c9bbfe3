//! The registered rapier tasks: their default configurations.
//!
//! Each function returns the full [`TaskConfig`] of a task; `embodia config --task NAME` prints
//! it and `--set env.…` overrides it. Weights and scales follow the reference implementations
//! named on each task (Isaac Lab, legged_gym, gymnasium/MuJoCo) where one exists.

use std::collections::BTreeMap;

use embodia_robots::{ActuatorConfig, ControlMode};

use super::task::*;
use crate::TaskInfo;

/// A registered rapier task.
pub struct RapierTask {
    /// Registry entry (its time limit and threshold are overridden by the config's).
    pub info: TaskInfo,
    /// Default configuration.
    pub config: fn() -> TaskConfig,
}

fn info(name: &'static str, description: &'static str, has_success: bool) -> TaskInfo {
    TaskInfo { name, description, max_episode_steps: 0, solve_threshold: 0.0, has_success }
}

/// The rapier tasks, in registry order.
pub fn rapier_tasks() -> [RapierTask; 5] {
    [
        RapierTask {
            info: info("cartpole", "rapier cart-pole: push the cart to keep the pole upright (Isaac Lab Cartpole)", false),
            config: cartpole,
        },
        RapierTask {
            info: info("reach", "SO-101-like arm: move the gripper to a random point; success within 2 cm", true),
            config: || reach("so101", "gripper_frame", [[0.15, 0.30], [-0.15, 0.15], [0.10, 0.30]]),
        },
        RapierTask {
            info: info("reach-arm7", "7-DoF Panda-like arm: move the hand to a random point; success within 2 cm", true),
            config: reach_arm7,
        },
        RapierTask {
            info: info("ant-run", "8-DoF ant: run forward as fast as possible (gymnasium Ant-v5 rewards)", false),
            config: ant_run,
        },
        RapierTask {
            info: info(
                "quadruped-velocity",
                "12-DoF quadruped: track random velocity commands on flat ground with pushes (legged_gym)",
                false,
            ),
            config: quadruped_velocity,
        },
    ]
}

fn rewards(terms: &[(&str, RewardTerm)]) -> BTreeMap<String, RewardTerm> {
    terms.iter().map(|(k, t)| (k.to_string(), t.clone())).collect()
}

fn joints(pairs: &[(&str, f32)]) -> BTreeMap<String, f32> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

/// Cart-pole balance at 60 Hz (1/120 s physics, decimation 2), 5 s episodes, force on the cart
/// up to 100 N; rewards and terminations of Isaac Lab's `Isaac-Cartpole-v0`.
pub fn cartpole() -> TaskConfig {
    use RewardKind::*;
    TaskConfig {
        scene: SceneConfig {
            robot: "cartpole".into(),
            fixed_base: true,
            base_position: [0.0, 0.0, 2.0],
            default_joint_positions: BTreeMap::new(),
            end_effector: None,
            actuator: ActuatorConfig::torque(),
            physics_dt: 1.0 / 120.0,
            decimation: 2,
            ground: false,
            friction: 0.5,
            self_collisions: false,
            solver_iterations: 4,
        },
        action: ActionConfig { kind: ActionKind::JointEffort, joints: vec!["slider".into()], scale: 100.0, clip: 1.0 },
        observations: ObservationGroups {
            policy: vec![ObsTerm::of(ObsKind::JointPos), ObsTerm::of(ObsKind::JointVel)],
            critic: None,
        },
        rewards: rewards(&[
            ("alive", RewardTerm::new(Alive, 1.0)),
            ("terminating", RewardTerm::new(Terminated, -2.0)),
            ("pole_pos", RewardTerm::new(JointPosL2, -1.0).joint("hinge")),
            ("cart_vel", RewardTerm::new(JointVelL2, -0.01).joint("slider")),
            ("pole_vel", RewardTerm::new(JointVelL2, -0.005).joint("hinge")),
        ]),
        terminations: vec![
            TerminationTerm::JointOut { joint: "slider".into(), min: -3.0, max: 3.0 },
            TerminationTerm::JointOut {
                joint: "hinge".into(),
                min: -std::f32::consts::FRAC_PI_2,
                max: std::f32::consts::FRAC_PI_2,
            },
        ],
        success: SuccessTerm::None,
        command: CommandConfig { target: None, velocity: None, resample_s: 0.0 },
        events: EventConfig {
            joint_position_noise: [-0.125 * std::f32::consts::PI, 0.125 * std::f32::consts::PI],
            joint_velocity_noise: [-0.5, 0.5],
            ..EventConfig::default()
        },
        episode_steps: 300,
        solve_threshold: 280.0,
    }
}

/// Reach: joint-position control (targets = default + 0.5 × action) at 50 Hz, targets drawn in
/// `target` (base frame), Isaac Lab `Isaac-Reach` reward shape (distance and tanh terms, action
/// rate and joint velocity penalties), 4 s episodes; success when the end effector is within
/// 2 cm of the target at the end.
pub fn reach(robot: &str, end_effector: &str, target: [Range; 3]) -> TaskConfig {
    use RewardKind::*;
    TaskConfig {
        scene: SceneConfig {
            robot: robot.into(),
            fixed_base: true,
            base_position: [0.0, 0.0, 0.0],
            default_joint_positions: BTreeMap::new(),
            end_effector: Some(end_effector.into()),
            actuator: ActuatorConfig { armature: 0.01, ..ActuatorConfig::position(40.0, 2.0) },
            physics_dt: 1.0 / 200.0,
            decimation: 4,
            ground: false,
            friction: 1.0,
            self_collisions: false,
            solver_iterations: 4,
        },
        action: ActionConfig { kind: ActionKind::JointPosition, joints: Vec::new(), scale: 0.5, clip: 1.0 },
        observations: ObservationGroups {
            policy: vec![
                ObsTerm::of(ObsKind::JointPos),
                ObsTerm::of(ObsKind::JointVel).scaled(0.1),
                ObsTerm::of(ObsKind::TargetPos),
                ObsTerm::of(ObsKind::EeToTarget),
                ObsTerm::of(ObsKind::LastAction),
            ],
            critic: None,
        },
        rewards: rewards(&[
            ("ee_distance", RewardTerm::new(EeDistance, -1.0)),
            ("ee_near", RewardTerm::new(EeDistanceTanh, 0.5).std(0.05)),
            ("action_rate", RewardTerm::new(ActionRateL2, -0.005)),
            ("joint_vel", RewardTerm::new(JointVelL2, -0.001)),
        ]),
        terminations: Vec::new(),
        success: SuccessTerm::EeNearTarget { distance: 0.02 },
        command: CommandConfig { target: Some(target), velocity: None, resample_s: 0.0 },
        events: EventConfig { joint_position_noise: [-0.1, 0.1], ..EventConfig::default() },
        episode_steps: 200,
        solve_threshold: f32::INFINITY,
    }
}

/// Reach with the 7-DoF arm from its Panda home pose (fingers not driven).
pub fn reach_arm7() -> TaskConfig {
    let mut c = reach("arm7", "tcp", [[0.35, 0.65], [-0.2, 0.2], [0.15, 0.5]]);
    c.scene.default_joint_positions = joints(&[
        ("joint2", -0.785),
        ("joint4", -2.356),
        ("joint6", 1.571),
        ("joint7", 0.785),
        ("finger_joint1", 0.04),
    ]);
    c.scene.actuator = ActuatorConfig { armature: 0.1, ..ActuatorConfig::position(400.0, 40.0) };
    c.action.joints = (1..=7).map(|i| format!("joint{i}")).collect();
    c
}

/// Ant running forward with the reward of gymnasium `Ant-v5`: forward velocity + 1 while
/// healthy − 0.5·|a|²; torque control (150 N·m per unit action, MuJoCo's gear), control at
/// 20 Hz (0.01 s physics × 5, MuJoCo's frame skip); episode ends when the torso leaves
/// `0.2 ≤ z ≤ 1.0`. 1000 steps.
pub fn ant_run() -> TaskConfig {
    use RewardKind::*;
    TaskConfig {
        scene: SceneConfig {
            robot: "ant".into(),
            fixed_base: false,
            base_position: [0.0, 0.0, 0.75],
            default_joint_positions: BTreeMap::new(),
            end_effector: None,
            // MuJoCo's ant.xml gives every joint armature 1 and damping 1 (set in the URDF).
            actuator: ActuatorConfig { armature: 1.0, ..ActuatorConfig::torque() },
            physics_dt: 0.01,
            decimation: 5,
            ground: true,
            friction: 1.0,
            self_collisions: false,
            solver_iterations: 4,
        },
        action: ActionConfig { kind: ActionKind::JointEffort, joints: Vec::new(), scale: 150.0, clip: 1.0 },
        observations: ObservationGroups {
            policy: vec![
                ObsTerm::of(ObsKind::BaseHeight),
                ObsTerm::of(ObsKind::ProjectedGravity),
                ObsTerm::of(ObsKind::BaseLinVel),
                ObsTerm::of(ObsKind::BaseAngVel),
                ObsTerm::of(ObsKind::JointPos),
                ObsTerm::of(ObsKind::JointVel).scaled(0.1),
            ],
            critic: None,
        },
        rewards: rewards(&[
            ("forward", RewardTerm::new(ForwardVelocity, 1.0)),
            ("healthy", RewardTerm::new(Alive, 1.0)),
            ("ctrl_cost", RewardTerm::new(ActionL2, -0.5)),
        ]),
        terminations: vec![TerminationTerm::BaseHeightOut { min: 0.2, max: 1.0 }],
        success: SuccessTerm::None,
        command: CommandConfig { target: None, velocity: None, resample_s: 0.0 },
        events: EventConfig { joint_position_noise: [-0.1, 0.1], joint_velocity_noise: [-0.1, 0.1], ..EventConfig::default() },
        episode_steps: 1000,
        solve_threshold: 3000.0,
    }
}

/// Quadruped velocity tracking, legged_gym / Isaac Lab `Velocity-Flat` style: joint-position
/// PD (kp 20, kd 0.5, targets = standing pose + 0.25 × action) at 50 Hz, commands
/// vx, vy ∈ [-1, 1] m/s and yaw rate ∈ [-1, 1] rad/s redrawn every 10 s, friction scaled in
/// [0.5, 1.25], base mass +[-1, 3] kg, gains ×[0.8, 1.2], pushes of up to 1 m/s every 15 s,
/// observation noise; 20 s episodes.
pub fn quadruped_velocity() -> TaskConfig {
    use RewardKind::*;
    let mut stand = Vec::new();
    for leg in ["FL", "FR", "RL", "RR"] {
        stand.push((format!("{leg}_hip_joint"), 0.0));
        stand.push((format!("{leg}_thigh_joint"), 0.9));
        stand.push((format!("{leg}_calf_joint"), -1.8));
    }
    TaskConfig {
        scene: SceneConfig {
            robot: "quadruped12".into(),
            fixed_base: false,
            base_position: [0.0, 0.0, 0.32],
            default_joint_positions: stand.into_iter().collect(),
            end_effector: None,
            actuator: ActuatorConfig { mode: ControlMode::Position, armature: 0.01, ..ActuatorConfig::position(20.0, 0.5) },
            physics_dt: 0.005,
            decimation: 4,
            ground: true,
            friction: 1.0,
            self_collisions: false,
            solver_iterations: 4,
        },
        action: ActionConfig { kind: ActionKind::JointPosition, joints: Vec::new(), scale: 0.25, clip: 100.0 },
        observations: ObservationGroups {
            policy: vec![
                ObsTerm::of(ObsKind::BaseLinVel).scaled(2.0).noisy(0.1),
                ObsTerm::of(ObsKind::BaseAngVel).scaled(0.25).noisy(0.05),
                ObsTerm::of(ObsKind::ProjectedGravity).noisy(0.05),
                ObsTerm::of(ObsKind::VelocityCommand),
                ObsTerm::of(ObsKind::JointPos).noisy(0.01),
                ObsTerm::of(ObsKind::JointVel).scaled(0.05).noisy(0.075),
                ObsTerm::of(ObsKind::LastAction),
            ],
            critic: None,
        },
        rewards: rewards(&[
            ("track_lin_vel_xy", RewardTerm::new(TrackLinVelXyExp, 1.0).std(0.5)),
            ("track_ang_vel_z", RewardTerm::new(TrackAngVelZExp, 0.5).std(0.5)),
            ("lin_vel_z", RewardTerm::new(LinVelZL2, -2.0)),
            ("ang_vel_xy", RewardTerm::new(AngVelXyL2, -0.05)),
            ("torques", RewardTerm::new(JointTorqueL2, -2.5e-5)),
            ("joint_acc", RewardTerm::new(JointAccL2, -2.5e-7)),
            ("action_rate", RewardTerm::new(ActionRateL2, -0.01)),
            ("flat_orientation", RewardTerm::new(FlatOrientationL2, -2.5)),
            ("termination", RewardTerm::new(Terminated, -10.0)),
        ]),
        terminations: vec![
            TerminationTerm::BaseHeightOut { min: 0.15, max: 1.0 },
            TerminationTerm::BaseTilt { max_angle: 1.0 },
        ],
        success: SuccessTerm::None,
        command: CommandConfig {
            target: None,
            velocity: Some([[-1.0, 1.0], [-1.0, 1.0], [-1.0, 1.0]]),
            resample_s: 10.0,
        },
        events: EventConfig {
            joint_position_noise: [-0.1, 0.1],
            base_yaw: [-std::f32::consts::PI, std::f32::consts::PI],
            friction_scale: [0.5, 1.25],
            added_base_mass: [-1.0, 3.0],
            actuator_gain_scale: [0.8, 1.2],
            push_interval_s: 15.0,
            push_velocity: 1.0,
            ..EventConfig::default()
        },
        episode_steps: 1000,
        solve_threshold: 15.0,
    }
}
