//! A task as a typed configuration listing its terms, Isaac-Lab style.
//!
//! A [`TaskConfig`] says which robot stands in which scene, how actions become actuator
//! commands, which observation terms make the actor's and the critic's observations, which
//! weighted reward terms are summed, what ends an episode, what counts as success, and which
//! events reset and randomize the world. `embodia config` prints it as TOML and `--set
//! env.…` overrides any field, so a task variant is a config, not new code.

use std::collections::BTreeMap;

use embodia_robots::ActuatorConfig;
use serde::{Deserialize, Serialize};

use super::articulation::JointModel;
pub use super::objects::{ObjectConfig, ObjectShape, TableConfig};

pub use super::sampling::Range;

/// A complete task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskConfig {
    /// The world and the robot in it.
    pub scene: SceneConfig,
    /// How a policy action becomes actuator commands.
    pub action: ActionConfig,
    /// Observation terms, in order, of the policy (actor) and the critic.
    pub observations: ObservationGroups,
    /// Weighted reward terms by name; the reward of a step is the sum of `weight × value`.
    pub rewards: BTreeMap<String, RewardTerm>,
    /// Terminal conditions (the time limit is `episode_steps`).
    pub terminations: Vec<TerminationTerm>,
    /// What counts as success.
    pub success: SuccessTerm,
    /// What the robot is asked to do: a target position or a velocity command.
    pub command: CommandConfig,
    /// Resets and domain randomization.
    pub events: EventConfig,
    /// Time limit, control steps.
    pub episode_steps: u32,
    /// Where the task counts as solved: the mean evaluation return, or the success rate in
    /// `[0, 1]` for tasks with a success criterion.
    pub solve_threshold: f32,
}

/// The simulated world of one environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneConfig {
    /// Built-in robot name (`embodia list`), or the path of an MJCF file ending in `.xml`
    /// (relative to the working directory).
    pub robot: String,
    /// Whether the robot's root is welded to the world.
    pub fixed_base: bool,
    /// Root position at reset, m (world, z up).
    pub base_position: [f32; 3],
    /// Joint positions at reset by joint name, rad or m; joints not listed start at 0 (clipped
    /// into their limits).
    pub default_joint_positions: BTreeMap<String, f32>,
    /// Link whose pose is the end effector (`ee_*` terms).
    pub end_effector: Option<String>,
    /// How the robot's joints are driven: all of them, or with `actuators_from =
    /// "robot_file"` those the robot file does not drive.
    pub actuator: ActuatorConfig,
    /// Which actuators drive the joints: `task` (`actuator`, the default) or `robot_file` (an
    /// MJCF robot's own `<actuator>`s and joint armature; see [`ActuatorSource`]).
    #[serde(default, skip_serializing_if = "is_task_source")]
    pub actuators_from: ActuatorSource,
    /// Physics step, s.
    pub physics_dt: f32,
    /// Physics steps per control step.
    pub decimation: u32,
    /// Whether there is a ground plane at z = 0.
    pub ground: bool,
    /// Friction coefficient of the ground and the robot.
    pub friction: f32,
    /// Whether links of the robot collide with each other.
    pub self_collisions: bool,
    /// Solver iterations of rapier (more: stiffer contacts, slower).
    pub solver_iterations: u32,
    /// How the robot's joints are simulated: `reduced` (multibody, exact) or `impulse`
    /// (maximal coordinates, faster for floating-base robots, approximate: see [`JointModel`]).
    #[serde(default)]
    pub joint_model: JointModel,
    /// Whether the robot's links are exempt from gravity: ideal gravity compensation, as
    /// Isaac Lab's IK-driven Franka (`disable_gravity`) and ManiSkill's passive-force
    /// balancing; without it the PD drives sag under the arm's weight. Objects still fall.
    #[serde(default)]
    pub gravity_compensation: bool,
    /// Dynamic objects, placed at reset; object terms refer to the first.
    #[serde(default)]
    pub objects: Vec<ObjectConfig>,
    /// A static table the objects stand on (else they stand on the ground at z = 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableConfig>,
}

/// Which actuators drive the robot's joints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActuatorSource {
    /// `scene.actuator` drives every joint (the only choice for a URDF robot).
    #[default]
    Task,
    /// An MJCF robot's `<actuator>`s drive the joints they name (mode, gains, effort limit,
    /// control range) with the file's joint `armature`; `scene.actuator` drives the joints no
    /// actuator names (with the file's armature too). Latency and noise are `scene.actuator`'s
    /// for every joint: they belong to the command path, not to the robot.
    RobotFile,
}

fn is_task_source(source: &ActuatorSource) -> bool {
    *source == ActuatorSource::Task
}

impl SceneConfig {
    /// Control step, s.
    pub fn control_dt(&self) -> f32 {
        self.physics_dt * self.decimation as f32
    }
}

/// How actions map to commands. Actions are `[num_actions]` values nominally in `[-1, 1]`
/// (the action space the policy sees); the environment clips them to `[-clip, clip]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionConfig {
    /// What the action sets.
    pub kind: ActionKind,
    /// Driven joints by name, in action order; empty means every actuated joint. With
    /// `end_effector_delta`, the joints the IK moves (the action has three arm components).
    pub joints: Vec<String>,
    /// Command = offset + scale × action, in the command's units (m per unit action for
    /// `end_effector_delta`).
    pub scale: f32,
    /// Actions are clipped to `[-clip, clip]` before scaling.
    pub clip: f32,
    /// A gripper driven by one more action component, after those of `joints`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gripper: Option<GripperAction>,
}

/// A gripper joint driven by the last action component `a ∈ [-1, 1]` (clipped): its position
/// target is `closed + (a + 1)/2 · (open − closed)`, so −1 closes and +1 opens it, or with
/// `binary` fully open for `a > 0` and fully closed otherwise. The joint must be actuated in
/// position mode; `joints` (or, empty, every actuated joint) then leaves it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GripperAction {
    /// The gripper's actuated joint (a mimic joint follows it).
    pub joint: String,
    /// Position target when open, rad or m.
    pub open: f32,
    /// Position target when closed, rad or m (past the object, so that the gripper squeezes).
    pub closed: f32,
    /// Open or close fully by the action's sign (Isaac Lab's binary gripper action), so that
    /// an action that drifts from −1 while carrying cannot loosen the grip. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

/// What an action component sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Joint position target = default position + scale × action (rad or m).
    JointPosition,
    /// Joint position target = current target + scale × action: incremental control.
    JointPositionDelta,
    /// Joint velocity target = scale × action (rad/s or m/s).
    JointVelocity,
    /// Joint effort = scale × action (N·m or N).
    JointEffort,
    /// Three action components move the end effector's position target by `scale × action`
    /// (m, base frame, x y z); damped-least-squares IK of `joints` (see
    /// [`super::ee_action`]) tracks it, holding a top-down orientation. Needs
    /// `scene.end_effector` and position-mode actuators; `gripper` adds a fourth component.
    EndEffectorDelta,
    /// Three action components set the end effector's position target to `home + scale ×
    /// action` (m, base frame), `home` being the end effector's position at the default joint
    /// positions: absolute targets, as Diffusion Policy found better than steps for
    /// generative policies (holding still is repeating a target, so a small bias in the
    /// action cannot integrate into drift). Tracked as [`ActionKind::EndEffectorDelta`], with
    /// the target kept within `MAX_LEAD` of the hand; same requirements.
    EndEffectorPosition,
}

impl ActionKind {
    /// The name a config writes (`joint_position`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::JointPosition => "joint_position",
            Self::JointPositionDelta => "joint_position_delta",
            Self::JointVelocity => "joint_velocity",
            Self::JointEffort => "joint_effort",
            Self::EndEffectorDelta => "end_effector_delta",
            Self::EndEffectorPosition => "end_effector_position",
        }
    }

    /// Whether the arm's actions move an end-effector target (three components) rather than
    /// joints.
    pub fn is_end_effector(self) -> bool {
        matches!(self, Self::EndEffectorDelta | Self::EndEffectorPosition)
    }
}

/// Observation groups: the policy sees `policy`; the critic sees `critic` if given (privileged
/// information the robot does not have), else `policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationGroups {
    /// Actor observation terms, concatenated in order.
    pub policy: Vec<ObsTerm>,
    /// Critic observation terms; `None` means the same as `policy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<Vec<ObsTerm>>,
}

/// One observation term. Each is multiplied by `scale` and perturbed by uniform noise in
/// `[-noise, noise]` (per component, per step; not in the critic's copy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObsTerm {
    /// What is observed.
    pub term: ObsKind,
    /// Multiplier.
    #[serde(default = "one")]
    pub scale: f32,
    /// Half-width of additive uniform noise, after scaling.
    #[serde(default)]
    pub noise: f32,
}

fn one() -> f32 {
    1.0
}

impl ObsTerm {
    /// A noiseless, unscaled term.
    pub fn of(term: ObsKind) -> Self {
        Self { term, scale: 1.0, noise: 0.0 }
    }

    /// With multiplier `scale`.
    pub fn scaled(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    /// With noise half-width `noise`.
    pub fn noisy(mut self, noise: f32) -> Self {
        self.noise = noise;
        self
    }
}

/// Observable quantities. Joint quantities cover every actuated joint of the robot (driven by
/// the action or not), in URDF order; base quantities are in the root link's frame; positions
/// of the end effector and the target are in the base frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObsKind {
    /// Joint positions relative to their defaults, `[num_joints]`, rad or m.
    JointPos,
    /// Joint positions as `cos, sin` pairs, `[2 × num_joints]` (for unbounded joints).
    JointPosCosSin,
    /// Joint velocities, `[num_joints]`, rad/s or m/s.
    JointVel,
    /// The previous action, `[num_actions]`.
    LastAction,
    /// Root height above the ground, `[1]`, m.
    BaseHeight,
    /// Root linear velocity in the root frame, `[3]`, m/s.
    BaseLinVel,
    /// Root angular velocity in the root frame, `[3]`, rad/s.
    BaseAngVel,
    /// Gravity direction in the root frame (unit), `[3]`.
    ProjectedGravity,
    /// Velocity command `(vx, vy, yaw rate)`, `[3]`, m/s and rad/s.
    VelocityCommand,
    /// End-effector position, `[3]`, m.
    EePos,
    /// Target position, `[3]`, m.
    TargetPos,
    /// Target minus end-effector position, `[3]`, m.
    EeToTarget,
    /// Position of the object (the first of `scene.objects`), `[3]`, m.
    ObjectPos,
    /// Orientation of the object relative to the base as a unit quaternion `[x, y, z, w]`
    /// (sign chosen with `w >= 0`), `[4]`.
    ObjectQuat,
    /// Yaw of the object relative to the base as `cos, sin`, `[2]` (planar tasks).
    ObjectYawCosSin,
    /// Target minus object position, `[3]`, m.
    ObjectToGoal,
    /// Object minus end-effector position, `[3]`, m.
    EeToObject,
    /// The end-effector position target of `end_effector_delta` actions minus the end
    /// effector's position, `[3]`, m: where the accumulated steps have put the target the
    /// hand follows (up to `MAX_LEAD` ahead, and away from the hand under load), which the
    /// actions move but no other term shows.
    EeTargetOffset,
    /// Gripper opening, 0 at the `closed` target and 1 at `open`, `[1]`.
    GripperOpening,
    /// Positions of every object of `scene.objects`, in order, `[3 × num_objects]`, m.
    ObjectsPos,
    /// One-hot of the episode's instruction among the family's variants (see
    /// [`super::language`]), `[num_variants]`; needs `command.language`.
    Instruction,
}

/// A weighted reward term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardTerm {
    /// What is rewarded.
    pub term: RewardKind,
    /// Multiplier of the term's value (negative for penalties).
    pub weight: f32,
    /// Shape parameter of `*_exp` and `*_tanh` kernels (their length or velocity scale).
    #[serde(default = "one")]
    pub std: f32,
    /// Joints a `joint_*` term sums over, by name; empty means every actuated joint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joints: Vec<String>,
    /// Lift height above its resting height (on the table) at which the object counts as
    /// lifted, m: the threshold of `object_lifted` and `object_goal_distance_tanh`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_height: f32,
}

fn is_zero(v: &f32) -> bool {
    *v == 0.0
}

impl RewardTerm {
    /// `weight × term` with the default kernel width, over every joint.
    pub fn new(term: RewardKind, weight: f32) -> Self {
        Self { term, weight, std: 1.0, joints: Vec::new(), min_height: 0.0 }
    }

    /// With lift threshold `min_height`, m.
    pub fn min_height(mut self, min_height: f32) -> Self {
        self.min_height = min_height;
        self
    }

    /// With kernel width `std`.
    pub fn std(mut self, std: f32) -> Self {
        self.std = std;
        self
    }

    /// Restricted to the joint called `name`.
    pub fn joint(mut self, name: &str) -> Self {
        self.joints = vec![name.to_string()];
        self
    }
}

/// Reward quantities (before weighting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    /// 1 every step the episode goes on.
    Alive,
    /// 1 on the step that reaches a terminal state.
    Terminated,
    /// Root forward (world x) velocity, m/s.
    ForwardVelocity,
    /// `exp(-|v_xy − cmd_xy|² / std²)` in the root frame.
    TrackLinVelXyExp,
    /// `exp(-(ω_z − cmd_yaw)² / std²)`.
    TrackAngVelZExp,
    /// Root vertical velocity squared.
    LinVelZL2,
    /// Root roll and pitch rates squared.
    AngVelXyL2,
    /// Squared horizontal components of projected gravity (0 when level).
    FlatOrientationL2,
    /// Squared joint positions relative to their defaults.
    JointPosL2,
    /// Cosine of joint positions (1 at zero: a pole upright).
    JointCos,
    /// Squared joint velocities.
    JointVelL2,
    /// Squared joint accelerations (finite differences over a control step).
    JointAccL2,
    /// Squared commanded efforts (torque mode) or PD efforts (position mode), N·m².
    JointTorqueL2,
    /// Squared change of the action between steps.
    ActionRateL2,
    /// Squared action.
    ActionL2,
    /// Amount by which joints are beyond 95% of their position range.
    JointPosLimits,
    /// End-effector distance to the target, m.
    EeDistance,
    /// `1 − tanh(distance / std)`: dense, saturating near the target.
    EeDistanceTanh,
    /// `1 − tanh(|object − end effector| / std)`: reaching the object (Isaac Lab Lift).
    EeObjectDistanceTanh,
    /// 1 while the object is more than `min_height` above its resting height.
    ObjectLifted,
    /// 1 while the gripper holds the object: its centre within the object's half height of
    /// the end effector, and the gripper squeezing something (between 5% and 95% of its
    /// opening, a gripper that closed on nothing being fully shut, with its position target
    /// more than 5% of its range further closed: the fingers are stopped). ManiSkill's
    /// `is_grasped`, judged from geometry and the drive instead of contact forces.
    ObjectGrasped,
    /// `1 − tanh(|target − object| / std)` while the object is lifted (above `min_height`),
    /// else 0.
    ObjectGoalDistanceTanh,
    /// `1 − tanh(|target − object| / std)` while the gripper holds the object
    /// ([`RewardKind::ObjectGrasped`]) or it is lifted above `min_height`, else 0: ManiSkill
    /// PickCube's place reward, which pays from the moment of the grasp, so the way from a
    /// grasp on the table to a lift is already uphill.
    GraspedObjectGoalDistanceTanh,
    /// Fraction of the goal footprint (the object at the target position and `target_yaw`)
    /// that the object covers, in `[0, 1]` (Push-T).
    TCoverage,
    /// `1 − tanh(|target − object| / std)`, lifted or not (language families, whose targets
    /// lie on the table, above it or on another object).
    ObjectTargetDistanceTanh,
    /// 1 while the task's success criterion holds (ManiSkill's sparse reward; `env.success`).
    Success,
}

/// Terminal conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "term", rename_all = "snake_case", deny_unknown_fields)]
pub enum TerminationTerm {
    /// The root fell below `min` or rose above `max`, m.
    BaseHeightOut {
        /// Lowest healthy height, m.
        min: f32,
        /// Highest healthy height, m.
        max: f32,
    },
    /// The root tilted more than `max_angle` from upright, rad.
    BaseTilt {
        /// Largest healthy tilt, rad.
        max_angle: f32,
    },
    /// The joint called `joint` left `[min, max]`.
    JointOut {
        /// Joint name.
        joint: String,
        /// Lower bound, rad or m.
        min: f32,
        /// Upper bound, rad or m.
        max: f32,
    },
    /// The success term holds: the episode ends on success (Push-T).
    Success,
    /// An object fell more than `drop` below the table top, m: it left the table, and in a
    /// scene without a ground it would fall (and its observations grow) without end.
    ObjectOffTable {
        /// Depth below the table top, m.
        drop: f32,
    },
}

/// What counts as success.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "term", rename_all = "snake_case", deny_unknown_fields)]
pub enum SuccessTerm {
    /// The task has no success notion (it is judged by return).
    None,
    /// The end effector is within `distance` of the target, m.
    EeNearTarget {
        /// Radius, m.
        distance: f32,
    },
    /// The root moved forward (world x) faster than `speed` on average over the episode, m/s.
    ForwardSpeed {
        /// Mean forward speed, m/s.
        speed: f32,
    },
    /// The object is within `distance` of the target and every joint is slower than
    /// `max_joint_speed` (the robot holds it still there).
    ObjectAtGoal {
        /// Radius, m.
        distance: f32,
        /// Largest joint speed, rad/s or m/s.
        max_joint_speed: f32,
    },
    /// The object covers at least `threshold` of the goal footprint (the object's footprint
    /// at the target position and `target_yaw`), as Push-T's success.
    TCoverage {
        /// Coverage fraction in `[0, 1]`.
        threshold: f32,
    },
    /// The criterion of the episode's instruction (`command.language`): picked (lifted by
    /// `lift_height`), pushed (moved `push_distance` along the direction, on the table),
    /// stacked (on the other object within `stack_tolerance`, the gripper open) or placed (its
    /// centre over the target pad, on the table, the gripper open).
    Instruction,
}

/// What the robot is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// Target positions are drawn uniformly in this box (base frame, m), `[x, y, z]` ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<[Range; 3]>,
    /// Target yaw (of the object, for planar goals) is drawn uniformly in this range, rad.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_yaw: Option<Range>,
    /// Velocity commands are drawn uniformly: `[vx (m/s), vy (m/s), yaw rate (rad/s)]` ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velocity: Option<[Range; 3]>,
    /// Commands are redrawn every this many seconds (and at reset); 0 means only at reset.
    #[serde(default)]
    pub resample_s: f32,
    /// A language-conditioned family: an instruction drawn per episode, which picks the object
    /// of the object terms and sets the target (see [`super::language`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<super::language::LanguageConfig>,
}

/// Reset and domain-randomization events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventConfig {
    /// At reset, joint positions are default + uniform offset in this range, rad or m.
    pub joint_position_noise: Range,
    /// At reset, joint velocities are uniform in this range, rad/s or m/s.
    pub joint_velocity_noise: Range,
    /// At reset, the root's yaw is uniform in this range, rad (floating bases).
    pub base_yaw: Range,
    /// At reset, the root's x and y are offset uniformly within ± this, m (floating bases).
    pub base_xy: f32,
    /// At reset, friction of robot and ground is scaled uniformly in this range.
    pub friction_scale: Range,
    /// At reset, the root's mass gets an extra uniform amount in this range, kg.
    pub added_base_mass: Range,
    /// At reset, actuator stiffness and damping are scaled uniformly in this range.
    pub actuator_gain_scale: Range,
    /// At reset, the command latency is drawn uniformly from `0..=max_latency_steps` control
    /// steps (on top of the actuator's fixed latency).
    pub max_latency_steps: u32,
    /// Every `push_interval_s` seconds (0: never) the root's horizontal velocity is changed by
    /// a uniform amount in `[-push_velocity, push_velocity]` per axis, m/s.
    pub push_interval_s: f32,
    /// Largest push, m/s.
    pub push_velocity: f32,
}

impl Default for EventConfig {
    /// No randomization: exact default joint positions, nominal friction, mass and gains.
    fn default() -> Self {
        Self {
            joint_position_noise: [0.0, 0.0],
            joint_velocity_noise: [0.0, 0.0],
            base_yaw: [0.0, 0.0],
            base_xy: 0.0,
            friction_scale: [1.0, 1.0],
            added_base_mass: [0.0, 0.0],
            actuator_gain_scale: [1.0, 1.0],
            max_latency_steps: 0,
            push_interval_s: 0.0,
            push_velocity: 0.0,
        }
    }
}

impl TaskConfig {
    /// Checks values that the types allow but the simulator cannot use, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let s = &self.scene;
        let positive = [
            ("env.scene.physics_dt", s.physics_dt),
            ("env.scene.friction", s.friction + f32::MIN_POSITIVE),
            ("env.action.clip", self.action.clip),
        ];
        for (field, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("`{field}` must be a positive number, got {v}"));
            }
        }
        if s.decimation == 0 {
            return Err("`env.scene.decimation` must be at least 1".into());
        }
        if s.solver_iterations == 0 {
            return Err("`env.scene.solver_iterations` must be at least 1".into());
        }
        if self.episode_steps == 0 {
            return Err("`env.episode_steps` must be at least 1".into());
        }
        if !self.action.scale.is_finite() {
            return Err("`env.action.scale` must be finite".into());
        }
        s.actuator.validate().map_err(|e| format!("`env.scene.actuator`: {e}"))?;
        let e = &self.events;
        let ranges = [
            ("joint_position_noise", e.joint_position_noise),
            ("joint_velocity_noise", e.joint_velocity_noise),
            ("base_yaw", e.base_yaw),
            ("friction_scale", e.friction_scale),
            ("added_base_mass", e.added_base_mass),
            ("actuator_gain_scale", e.actuator_gain_scale),
        ];
        for (field, [lo, hi]) in ranges {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(format!("`env.events.{field}` must be [low, high] with low <= high, got [{lo}, {hi}]"));
            }
        }
        if e.friction_scale[0] < 0.0 || e.actuator_gain_scale[0] < 0.0 {
            return Err("`env.events` friction and gain scales must be >= 0".into());
        }
        for (name, r) in &self.rewards {
            if !(r.weight.is_finite() && r.std.is_finite() && r.std > 0.0 && r.min_height.is_finite()) {
                return Err(format!("`env.rewards.{name}`: weight and min_height must be finite and std > 0"));
            }
        }
        for (i, o) in s.objects.iter().enumerate() {
            o.validate(&format!("env.scene.objects[{i}]"))?;
        }
        if let Some(t) = &s.table
            && !(t.size.iter().all(|v| v.is_finite() && *v > 0.0) && t.height.is_finite() && t.friction >= 0.0)
        {
            return Err("`env.scene.table`: size must be positive, height finite and friction >= 0".into());
        }
        if self.action.kind.is_end_effector() {
            let kind = "`env.action.kind = \"end_effector_delta\"` or `\"end_effector_position\"`";
            if s.end_effector.is_none() {
                return Err(format!("{kind} needs `env.scene.end_effector` (the link it moves)"));
            }
            if s.actuators_from == ActuatorSource::Task && s.actuator.mode != embodia_robots::ControlMode::Position {
                return Err(format!("{kind} needs `env.scene.actuator.mode = \"position\"`"));
            }
            if !(self.action.scale > 0.0) {
                return Err(format!(
                    "`env.action.scale` must be a positive distance (m per unit action) with {kind}, got {}",
                    self.action.scale
                ));
            }
        }
        if let Some(g) = &self.action.gripper {
            if !(g.open.is_finite() && g.closed.is_finite() && g.open != g.closed) {
                return Err("`env.action.gripper`: open and closed must be different finite numbers".into());
            }
            if s.actuators_from == ActuatorSource::Task && s.actuator.mode != embodia_robots::ControlMode::Position {
                return Err("`env.action.gripper` needs `env.scene.actuator.mode = \"position\"`".into());
            }
        }
        Ok(())
    }
}
