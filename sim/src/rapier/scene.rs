//! One environment of a rapier task: its world, its robot, and the task state around them
//! (commands, last actions, randomized parameters). [`super::RapierEnv`] holds a batch.

use embodia_robots::{ControlMode, RobotModel};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::RngCore;
use rapier3d::prelude::*;

use super::articulation::{Articulation, SpawnOptions};
use super::ee_action::EeDelta;
use super::objects::{Objects, ObjectsSpec, coverage, planar};
use super::language::{LanguageSpec, Verb};
use super::task::{ActionKind, ObsKind, ObsTerm, Range, RewardKind, RewardTerm, SuccessTerm, TaskConfig, TerminationTerm};
use crate::{ActionState, SimError};

/// What every environment of a batch shares: the task and everything derived from it once.
#[derive(Debug)]
pub struct SceneSpec {
    /// The task.
    pub config: TaskConfig,
    /// The robot.
    pub model: RobotModel,
    /// For each action component, the index of its joint among the actuated joints.
    pub driven: Vec<usize>,
    /// Default position per actuated joint, rad or m, `[num_actuated]`.
    pub default_q: Vec<f32>,
    /// Reward terms with the actuated joints each sums over.
    pub rewards: Vec<(RewardTerm, Vec<usize>)>,
    /// Terminations, with the actuated joint of `joint_out` terms.
    pub terminations: Vec<(TerminationTerm, usize)>,
    /// Index of the end-effector link, if the task has one.
    pub end_effector: Option<usize>,
    /// Actor observation length.
    pub obs_dim: usize,
    /// Critic observation length.
    pub critic_dim: usize,
    /// Index among the actuated joints of the gripper driven by the last action component.
    pub gripper: Option<usize>,
    /// What the scenes share about their objects.
    pub objects: ObjectsSpec,
    /// The language family of `command.language`, resolved; `None` for single-task configs.
    pub language: Option<LanguageSpec>,
}

impl SceneSpec {
    /// Resolves joint and link names of `config` against `model`.
    pub fn new(config: TaskConfig, model: RobotModel) -> Result<Self, SimError> {
        let bad = SimError::InvalidTask;
        config.validate().map_err(bad)?;
        let actuated = model.actuated_joints();
        let find = |field: &str, name: &str| {
            (0..actuated.len()).find(|&i| model.joints[actuated[i]].name == name).ok_or_else(|| {
                bad(format!("`env.{field}`: robot \"{}\" has no actuated joint \"{name}\"", model.name))
            })
        };
        let find_all = |field: &str, names: &[String]| -> Result<Vec<usize>, SimError> {
            if names.is_empty() {
                return Ok((0..actuated.len()).collect());
            }
            names.iter().map(|name| find(field, name)).collect()
        };
        let gripper = match &config.action.gripper {
            Some(g) => Some(find("action.gripper.joint", &g.joint)?),
            None => None,
        };
        let mut driven = find_all("action.joints", &config.action.joints)?;
        if config.action.joints.is_empty() {
            driven.retain(|&j| Some(j) != gripper);
        }
        let mut default_q = vec![0.0; actuated.len()];
        for (name, &value) in &config.scene.default_joint_positions {
            default_q[find("scene.default_joint_positions", name)?] = value;
        }
        let rewards = config
            .rewards
            .iter()
            .map(|(key, term)| Ok((term.clone(), find_all(&format!("rewards.{key}.joints"), &term.joints)?)))
            .collect::<Result<Vec<_>, SimError>>()?;
        let terminations = config
            .terminations
            .iter()
            .map(|t| match t {
                TerminationTerm::JointOut { joint, .. } => Ok((t.clone(), find("terminations.joint", joint)?)),
                _ => Ok((t.clone(), 0)),
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        for (i, q) in default_q.iter_mut().enumerate() {
            let joint = &model.joints[actuated[i]];
            if let Some(limit) = joint.limit.filter(|_| joint.kind != embodia_robots::JointKind::Continuous) {
                *q = q.clamp(limit.lower as f32, limit.upper as f32);
            }
        }
        let end_effector = match &config.scene.end_effector {
            Some(name) => Some(model.link_index(name).ok_or_else(|| {
                bad(format!("`env.scene.end_effector`: robot \"{}\" has no link \"{name}\"", model.name))
            })?),
            None => None,
        };
        let needs_ee = |terms: &[ObsTerm]| {
            terms.iter().any(|t| matches!(t.term, ObsKind::EePos | ObsKind::EeToTarget | ObsKind::EeToObject))
        };
        let uses_ee = needs_ee(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(needs_ee)
            || config.rewards.values().any(|r| {
                matches!(
                    r.term,
                    RewardKind::EeDistance
                        | RewardKind::EeDistanceTanh
                        | RewardKind::EeObjectDistanceTanh
                        | RewardKind::ObjectGrasped
                        | RewardKind::GraspedObjectGoalDistanceTanh
                )
            })
            || matches!(config.success, SuccessTerm::EeNearTarget { .. });
        let language = match &config.command.language {
            Some(l) => Some(LanguageSpec::new(l, config.scene.objects.len()).map_err(bad)?),
            None => None,
        };
        let uses_instruction = |terms: &[ObsTerm]| terms.iter().any(|t| t.term == ObsKind::Instruction);
        if language.is_none()
            && (matches!(config.success, SuccessTerm::Instruction)
                || uses_instruction(&config.observations.policy)
                || config.observations.critic.as_deref().is_some_and(uses_instruction))
        {
            return Err(bad(
                "the `instruction` success term and observation need `env.command.language`".into(),
            ));
        }
        let needs_object = |terms: &[ObsTerm]| terms.iter().any(|t| is_object_obs(t.term));
        let uses_object = needs_object(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(needs_object)
            || config.rewards.values().any(|r| {
                matches!(
                    r.term,
                    RewardKind::EeObjectDistanceTanh
                        | RewardKind::ObjectLifted
                        | RewardKind::ObjectGrasped
                        | RewardKind::ObjectGoalDistanceTanh
                        | RewardKind::GraspedObjectGoalDistanceTanh
                        | RewardKind::TCoverage
                        | RewardKind::ObjectTargetDistanceTanh
                )
            })
            || matches!(
                config.success,
                SuccessTerm::ObjectAtGoal { .. } | SuccessTerm::TCoverage { .. } | SuccessTerm::Instruction
            );
        if uses_object && config.scene.objects.is_empty() {
            return Err(bad("the task uses object terms but `env.scene.objects` is empty".into()));
        }
        let uses_opening = |terms: &[ObsTerm]| terms.iter().any(|t| t.term == ObsKind::GripperOpening);
        let opening = uses_opening(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(uses_opening);
        if opening && gripper.is_none() {
            return Err(bad("the `gripper_opening` observation needs `env.action.gripper`".into()));
        }
        for (kind, name) in [
            (RewardKind::ObjectGrasped, "object_grasped"),
            (RewardKind::GraspedObjectGoalDistanceTanh, "grasped_object_goal_distance_tanh"),
        ] {
            if gripper.is_none() && config.rewards.values().any(|r| r.term == kind) {
                return Err(bad(format!("the `{name}` reward needs `env.action.gripper`")));
            }
        }
        if config.success == SuccessTerm::None && config.rewards.values().any(|r| r.term == RewardKind::Success) {
            return Err(bad("the `success` reward needs a success criterion in `env.success`".into()));
        }
        if uses_ee && end_effector.is_none() {
            return Err(bad("the task uses end-effector terms but `env.scene.end_effector` is not set".into()));
        }
        let ee_action = config.action.kind == ActionKind::EndEffectorDelta;
        if ee_action && driven.is_empty() {
            return Err(bad("`env.action.joints`: `end_effector_delta` actions need at least one arm joint".into()));
        }
        let arm_actions = if ee_action { 3 } else { driven.len() };
        let (na, n) = (actuated.len(), arm_actions + gripper.is_some() as usize);
        let (no, nv) = (config.scene.objects.len(), language.as_ref().map_or(0, LanguageSpec::len));
        let dim = |terms: &[ObsTerm]| terms.iter().map(|t| obs_dim(t.term, na, n, no, nv)).sum();
        let obs_dim = dim(&config.observations.policy);
        let critic_dim = config.observations.critic.as_deref().map_or(obs_dim, dim);
        let objects = ObjectsSpec::new(&config.scene.objects, config.scene.table.as_ref());
        Ok(Self {
            config,
            model,
            driven,
            default_q,
            rewards,
            terminations,
            end_effector,
            obs_dim,
            critic_dim,
            gripper,
            objects,
            language,
        })
    }

    /// Length of observation term `kind`.
    pub fn term_dim(&self, kind: ObsKind) -> usize {
        let nv = self.language.as_ref().map_or(0, LanguageSpec::len);
        obs_dim(kind, self.default_q.len(), self.num_actions(), self.config.scene.objects.len(), nv)
    }

    /// Number of action components (the arm's, then the gripper's if any).
    pub fn num_actions(&self) -> usize {
        self.arm_actions() + self.gripper.is_some() as usize
    }

    /// Number of action components before the gripper's: one per driven joint, or three
    /// (x, y, z) with `end_effector_delta` actions. The gripper's component is at this index.
    pub fn arm_actions(&self) -> usize {
        match self.config.action.kind {
            ActionKind::EndEffectorDelta => 3,
            _ => self.driven.len(),
        }
    }

    /// Where the policy observation shows what each action commands (see [`ActionState`]):
    /// with joint-position actions (`target = default + scale × action`) and a `joint_pos`
    /// term (`scale' × (q − default)`), driven joint `k`'s action holding it in place is
    /// `obs[offset + j] / (scale' × scale)`; the gripper's action has none.
    pub fn action_states(&self) -> Vec<Option<ActionState>> {
        let a = &self.config.action;
        if a.kind != ActionKind::JointPosition || a.scale == 0.0 {
            return Vec::new();
        }
        let n = self.num_actions();
        let mut offset = 0;
        for term in &self.config.observations.policy {
            if term.term == ObsKind::JointPos && term.scale != 0.0 {
                let mut states: Vec<Option<ActionState>> = self
                    .driven
                    .iter()
                    .map(|&j| Some(ActionState { column: offset + j, scale: 1.0 / (term.scale * a.scale) }))
                    .collect();
                states.resize(n, None);
                return states;
            }
            offset += self.term_dim(term.term);
        }
        Vec::new()
    }
}

/// Length of an observation term for `na` actuated joints, `n` actions, `no` objects and `nv`
/// instruction variants.
fn obs_dim(kind: ObsKind, na: usize, n: usize, no: usize, nv: usize) -> usize {
    match kind {
        ObsKind::ObjectsPos => 3 * no,
        ObsKind::Instruction => nv,
        ObsKind::JointPos | ObsKind::JointVel => na,
        ObsKind::LastAction => n,
        ObsKind::JointPosCosSin => 2 * na,
        ObsKind::BaseHeight | ObsKind::GripperOpening => 1,
        ObsKind::ObjectYawCosSin => 2,
        ObsKind::ObjectQuat => 4,
        _ => 3,
    }
}

/// Whether an observation term is about the object.
fn is_object_obs(kind: ObsKind) -> bool {
    use ObsKind::*;
    matches!(kind, ObjectPos | ObjectQuat | ObjectYawCosSin | ObjectToGoal | EeToObject | ObjectsPos)
}

/// How far (as a fraction of the gripper's range) the gripper's position target must lie
/// beyond its position towards `closed` for [`RewardKind::ObjectGrasped`]: the drive pushes the
/// fingers onto something that stops them (a stand-in for a contact force).
const GRASP_SQUEEZE: f32 = 0.05;

/// Uniform draw in `[r[0], r[1]]`.
pub(crate) fn uniform(rng: &mut ChaCha8Rng, r: Range) -> f32 {
    let u = (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
    r[0] + (r[1] - r[0]) * u
}

/// One environment.
pub struct Scene {
    world: PhysicsWorld,
    robot: Articulation,
    /// Nominal mass properties of the root body (before randomization).
    base_mass: MassProperties,
    /// Root mass after randomization, kg.
    mass: f32,
    /// Nominal control step, s.
    dt: f32,
    // Per-step state, `[num_actuated]` or `[num_actions]`.
    q: Vec<f32>,
    qd: Vec<f32>,
    prev_qd: Vec<f32>,
    action: Vec<f32>,
    prev_action: Vec<f32>,
    /// Commands of every actuated joint, in the actuator's units.
    command: Vec<f32>,
    /// Delay line of issued commands, `[max_latency + 1, num_actuated]`, and its write head.
    delay: Vec<f32>,
    delay_head: usize,
    latency: usize,
    /// Command actually applied this step, `[num_actuated]`.
    applied: Vec<f32>,
    /// Objects and table.
    objects: Objects,
    /// The end-effector controller of `end_effector_delta` actions.
    ee_action: Option<EeDelta>,
    // Task state.
    target: Vector,
    target_yaw: f32,
    velocity_command: [f32; 3],
    command_timer: f32,
    push_timer: f32,
    gain_scale: f32,
    start_x: f32,
    /// Variant of the language family drawn for this episode (0 without one).
    variant: usize,
    /// The object the object terms refer to: the instruction's, else the first.
    focus: usize,
    /// Position of the focus object at the start of the episode, base frame, m.
    start: Vector,
    /// Centre of the `place` target pad on the table, world frame, m (zero without one).
    place: Vector,
    /// Generator of this environment.
    pub rng: ChaCha8Rng,
    /// Control steps taken in the current episode.
    pub elapsed: u32,
    /// Return accumulated in the current episode.
    pub running_return: f64,
}

impl Scene {
    /// Builds the world of one environment.
    pub fn new(spec: &SceneSpec, rng: ChaCha8Rng) -> Result<Self, SimError> {
        let s = &spec.config.scene;
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::new(0.0, 0.0, -9.81);
        world.integration_parameters.dt = s.physics_dt;
        world.integration_parameters.num_solver_iterations = s.solver_iterations as usize;
        if s.ground {
            let ground = world.insert_body(RigidBodyBuilder::fixed());
            world.insert_collider(
                ColliderBuilder::cuboid(100.0, 100.0, 0.5)
                    .translation(Vector::new(0.0, 0.0, -0.5))
                    .friction(s.friction),
                Some(ground),
            );
        }
        let options = SpawnOptions {
            base_pose: Pose::from_translation(Vector::from_array(s.base_position)),
            fixed_base: s.fixed_base,
            self_collisions: s.self_collisions,
            friction: s.friction,
            groups: InteractionGroups::all(),
            joint_model: s.joint_model,
        };
        let robot = Articulation::spawn(&mut world, &spec.model, s.actuator, &options)?;
        if s.gravity_compensation {
            robot.set_gravity_scale(&mut world, 0.0);
        }
        let objects = Objects::build(&mut world, &s.objects, s.table.as_ref());
        let base_mass = robot.root_mass_properties();
        let ee_action = match (spec.config.action.kind, spec.end_effector) {
            (ActionKind::EndEffectorDelta, Some(ee)) => Some(EeDelta::new(&spec.model, ee, &spec.driven, &spec.default_q)),
            _ => None,
        };
        let na = robot.num_actuated();
        let n = spec.num_actions();
        let slots = spec.config.events.max_latency_steps as usize + s.actuator.latency_steps as usize + 1;
        Ok(Self {
            world,
            robot,
            base_mass,
            mass: base_mass.mass(),
            dt: s.control_dt(),
            q: vec![0.0; na],
            qd: vec![0.0; na],
            prev_qd: vec![0.0; na],
            action: vec![0.0; n],
            prev_action: vec![0.0; n],
            command: vec![0.0; na],
            delay: vec![0.0; slots * na],
            delay_head: 0,
            latency: 0,
            applied: vec![0.0; na],
            objects,
            ee_action,
            target: Vector::ZERO,
            target_yaw: 0.0,
            velocity_command: [0.0; 3],
            command_timer: 0.0,
            push_timer: 0.0,
            gain_scale: 1.0,
            start_x: 0.0,
            variant: 0,
            focus: 0,
            start: Vector::ZERO,
            place: Vector::ZERO,
            rng,
            elapsed: 0,
            running_return: 0.0,
        })
    }

    /// The physics world (read-only; for viewers and tests).
    pub fn world(&self) -> &PhysicsWorld {
        &self.world
    }

    /// The robot.
    pub fn robot(&self) -> &Articulation {
        &self.robot
    }

    /// The current target position in the base frame, m.
    pub fn target(&self) -> Vector {
        self.target
    }

    /// The current target yaw (of the object, planar goals), rad.
    pub fn target_yaw(&self) -> f32 {
        self.target_yaw
    }

    /// Number of objects.
    pub fn num_objects(&self) -> usize {
        self.objects.len()
    }

    /// World pose of object `i` (as listed in `scene.objects`).
    pub fn object_pose(&self, i: usize) -> Pose {
        self.objects.pose(&self.world, i)
    }

    /// World poses of the objects, in `scene.objects` order (for viewers).
    pub fn object_poses(&self) -> impl Iterator<Item = Pose> + '_ {
        (0..self.objects.len()).map(|i| self.objects.pose(&self.world, i))
    }

    /// The latest command of every actuated joint, in the actuator's units (position targets
    /// in position mode).
    pub fn commands(&self) -> &[f32] {
        &self.command
    }

    /// The end-effector position target of `end_effector_delta` actions, base frame, m
    /// (`None` with other action kinds).
    pub fn ee_target(&self) -> Option<Vector> {
        self.ee_action.as_ref().map(EeDelta::target)
    }

    /// Current actuated joint velocities, rad/s or m/s.
    pub fn joint_velocities(&self) -> &[f32] {
        &self.qd
    }

    /// The current velocity command `(vx, vy, yaw rate)`.
    pub fn velocity_command(&self) -> [f32; 3] {
        self.velocity_command
    }

    /// Actuator gain multiplier drawn at the last reset.
    pub fn gain_scale(&self) -> f32 {
        self.gain_scale
    }

    /// Friction coefficient of the robot's first collider (after randomization).
    pub fn robot_friction(&self) -> f32 {
        let root = &self.world.bodies[self.robot.root()];
        root.colliders().first().map_or(0.0, |&c| self.world.colliders[c].friction())
    }

    /// Mass of the root body, kg (after randomization).
    pub fn base_mass(&self) -> f32 {
        self.mass
    }

    /// Current actuated joint positions, rad or m.
    pub fn joint_positions(&self) -> &[f32] {
        &self.q
    }

    /// Draws a new episode: randomized parameters, initial state, commands.
    pub fn reset(&mut self, spec: &SceneSpec) {
        let c = &spec.config;
        let e = &c.events;
        self.elapsed = 0;
        self.running_return = 0.0;

        // Domain randomization drawn per episode.
        let friction_scale = uniform(&mut self.rng, e.friction_scale);
        let friction = c.scene.friction * friction_scale;
        for (_, collider) in self.world.colliders.iter_mut() {
            collider.set_friction(friction);
        }
        let added = uniform(&mut self.rng, e.added_base_mass);
        if !c.scene.fixed_base && e.added_base_mass != [0.0, 0.0] {
            // Never below a tenth of the nominal mass, whatever the configured range.
            let mut mass = self.base_mass;
            mass.set_mass((self.base_mass.mass() + added).max(0.1 * self.base_mass.mass()), true);
            self.mass = mass.mass();
            self.world.bodies[self.robot.root()].set_additional_mass_properties(mass, true);
        }
        self.gain_scale = uniform(&mut self.rng, e.actuator_gain_scale);
        let extra = ((self.rng.next_u32() as u64 * (e.max_latency_steps as u64 + 1)) >> 32) as usize;
        self.latency = c.scene.actuator.latency_steps as usize + extra;

        // Initial state.
        let na = self.robot.num_actuated();
        self.q.copy_from_slice(&spec.default_q);
        self.qd.fill(0.0);
        for j in 0..na {
            self.q[j] += uniform(&mut self.rng, e.joint_position_noise);
            self.qd[j] = uniform(&mut self.rng, e.joint_velocity_noise);
            let (lo, hi) = self.robot.limits(j);
            self.q[j] = self.q[j].clamp(lo, hi);
        }
        let mut base = Pose::from_translation(Vector::from_array(c.scene.base_position));
        if !c.scene.fixed_base {
            base.translation.x += uniform(&mut self.rng, [-e.base_xy, e.base_xy]);
            base.translation.y += uniform(&mut self.rng, [-e.base_xy, e.base_xy]);
            base.rotation = Rotation::from_rotation_z(uniform(&mut self.rng, e.base_yaw));
        }
        self.start_x = base.translation.x;
        self.robot.set_state(&mut self.world, base, Vector::ZERO, Vector::ZERO, &self.q, &self.qd);
        if !self.objects.is_empty() {
            let ee = spec.end_effector.map(|l| self.robot.link_pose(&self.world, l).translation);
            let s = &c.scene;
            self.objects.reset(&mut self.world, &s.objects, s.table.as_ref(), &mut self.rng, ee, friction_scale);
        }
        self.prev_qd.copy_from_slice(&self.qd);
        self.action.fill(0.0);
        self.prev_action.fill(0.0);
        self.command.fill(0.0);
        if c.scene.actuator.mode == ControlMode::Position {
            self.command.copy_from_slice(&self.q);
        }
        if let Some(ee) = &mut self.ee_action {
            ee.reset(&self.q);
        }
        for slot in self.delay.chunks_mut(na) {
            slot.copy_from_slice(&self.command);
        }
        self.applied.copy_from_slice(&self.command);
        self.robot.command(&mut self.world, &self.command, self.gain_scale);
        self.sample_commands(spec);
        self.command_timer = 0.0;
        self.push_timer = 0.0;
        if let Some(p) = spec.language.as_ref().and_then(|l| l.config.place.as_ref()) {
            let top = spec.objects.table_top;
            let draw = |rng: &mut ChaCha8Rng| Vector::new(uniform(rng, p.area[0]), uniform(rng, p.area[1]), top);
            let nearest = |scene: &Self, at: Vector| {
                (0..scene.objects.len())
                    .map(|i| {
                        let t = scene.objects.pose(&scene.world, i).translation;
                        (t.x - at.x).hypot(t.y - at.y)
                    })
                    .fold(f32::INFINITY, f32::min)
            };
            let mut best = draw(&mut self.rng);
            let mut far = nearest(self, best);
            for _ in 0..32 {
                if far >= p.clearance {
                    break;
                }
                let at = draw(&mut self.rng);
                let d = nearest(self, at);
                if d > far {
                    (best, far) = (at, d);
                }
            }
            self.place = best;
        }
        if let Some(l) = &spec.language {
            let k = ((self.rng.next_u32() as u64 * l.drawn.len() as u64) >> 32) as usize;
            self.variant = l.drawn[k];
            self.focus = l.variants[self.variant].object;
            self.start = self.object_position();
            self.update_language_target(spec);
        }
    }

    /// The target of the instruction: above the object's start (pick), beside it (push), on
    /// the other object (stack; follows it).
    fn update_language_target(&mut self, spec: &SceneSpec) {
        let Some(l) = &spec.language else { return };
        let v = &l.variants[self.variant];
        let c = &l.config;
        self.target = match (v.verb, v.onto) {
            (Verb::Pick, _) => self.start + Vector::Z * (c.lift_height + 0.03),
            (Verb::Push, _) => self.start + Vector::Y * (v.direction * (c.push_distance + 0.02)),
            (Verb::Stack, Some(j)) => {
                let objects = &spec.config.scene.objects;
                let up = objects[j].shape.half_height() + objects[v.object].shape.half_height();
                self.object_position_of(j) + Vector::Z * up
            }
            (Verb::Stack, None) => self.start,
            (Verb::Place, _) => {
                let half = spec.config.scene.objects[v.object].shape.half_height();
                self.base_pose().inverse_transform_point(self.place) + Vector::Z * half
            }
        };
    }

    /// Centre of the `place` target pad on the table top, world frame, m (zero without one).
    pub fn place_target(&self) -> Vector {
        self.place
    }

    /// The variant of the language family drawn for the current episode (0 without one).
    pub fn variant(&self) -> usize {
        self.variant
    }

    /// The object the object terms refer to: the instruction's object, else 0.
    pub fn focus(&self) -> usize {
        self.focus
    }

    /// Where the focus object was at the start of the episode, base frame, m.
    pub fn focus_start(&self) -> Vector {
        self.start
    }

    /// The instruction of the current episode; `None` without a language family.
    pub fn instruction<'a>(&self, spec: &'a SceneSpec) -> Option<&'a str> {
        spec.language.as_ref().map(|l| l.variants[self.variant].instruction.as_str())
    }

    fn sample_commands(&mut self, spec: &SceneSpec) {
        let c = &spec.config.command;
        if let Some(r) = c.target {
            self.target = Vector::new(
                uniform(&mut self.rng, r[0]),
                uniform(&mut self.rng, r[1]),
                uniform(&mut self.rng, r[2]),
            );
        }
        if let Some(r) = c.target_yaw {
            self.target_yaw = uniform(&mut self.rng, r);
        }
        if let Some(r) = c.velocity {
            for (k, range) in r.iter().enumerate() {
                self.velocity_command[k] = uniform(&mut self.rng, *range);
            }
        }
    }

    /// Applies `action` (`[num_actions]`, finite), advances one control step, and returns the
    /// reward, whether a terminal state was reached, and whether the task succeeded.
    pub fn step(&mut self, spec: &SceneSpec, action: &[f32]) -> (f64, bool, bool) {
        let c = &spec.config;
        let na = self.robot.num_actuated();
        self.prev_action.copy_from_slice(&self.action);
        for (a, &x) in self.action.iter_mut().zip(action) {
            *a = x.clamp(-c.action.clip, c.action.clip);
        }
        let scale = c.action.scale;
        if self.ee_action.is_some() {
            let delta = Vector::new(self.action[0], self.action[1], self.action[2]) * scale;
            let measured = self.ee_position(spec);
            if let Some(ee) = &mut self.ee_action {
                ee.step(delta, measured, &mut self.command);
            }
        } else {
            for (k, &j) in spec.driven.iter().enumerate() {
                let a = self.action[k] * scale;
                self.command[j] = match c.action.kind {
                    ActionKind::JointPosition => spec.default_q[j] + a,
                    ActionKind::JointPositionDelta => {
                        let (lo, hi) = self.robot.limits(j);
                        (self.command[j] + a).clamp(lo, hi)
                    }
                    ActionKind::JointVelocity | ActionKind::JointEffort | ActionKind::EndEffectorDelta => a,
                };
            }
        }
        if let (Some(j), Some(g)) = (spec.gripper, &c.action.gripper) {
            let a = self.action[spec.arm_actions()].clamp(-1.0, 1.0);
            self.command[j] = g.closed + 0.5 * (a + 1.0) * (g.open - g.closed);
        }
        // Latency: write this step's command, apply the one issued `latency` steps ago.
        let slots = self.delay.len() / na.max(1);
        if na > 0 {
            self.delay_head = (self.delay_head + 1) % slots;
            self.delay[self.delay_head * na..][..na].copy_from_slice(&self.command);
            let read = (self.delay_head + slots - self.latency.min(slots - 1)) % slots;
            self.applied.copy_from_slice(&self.delay[read * na..][..na]);
        }
        let noise = c.scene.actuator.noise_std as f32;
        if noise > 0.0 {
            for x in &mut self.applied {
                *x += noise * gaussian(&mut self.rng);
            }
        }
        self.robot.command(&mut self.world, &self.applied, self.gain_scale);
        for _ in 0..c.scene.decimation {
            self.robot.apply_efforts(&mut self.world);
            self.world.step();
        }
        self.elapsed += 1;
        self.prev_qd.copy_from_slice(&self.qd);
        self.robot.joint_state(&self.world, &mut self.q, &mut self.qd);
        self.update_language_target(spec);

        // Interval events.
        if c.events.push_interval_s > 0.0 {
            self.push_timer += self.dt;
            if self.push_timer >= c.events.push_interval_s {
                self.push_timer = 0.0;
                let v = c.events.push_velocity;
                let dv = Vector::new(uniform(&mut self.rng, [-v, v]), uniform(&mut self.rng, [-v, v]), 0.0);
                self.robot.push_root(&mut self.world, dv);
            }
        }
        if c.command.resample_s > 0.0 {
            self.command_timer += self.dt;
            if self.command_timer >= c.command.resample_s {
                self.command_timer = 0.0;
                self.sample_commands(spec);
            }
        }

        let terminated = self.terminated(spec);
        let mut reward = 0.0f64;
        for (term, joints) in &spec.rewards {
            reward += (term.weight * self.reward_term(spec, term, joints, terminated)) as f64;
        }
        (reward, terminated, self.success(spec))
    }

    fn base_pose(&self) -> Pose {
        *self.world.bodies[self.robot.root()].position()
    }

    fn base_velocity(&self) -> (Vector, Vector) {
        let rb = &self.world.bodies[self.robot.root()];
        let rot = rb.position().rotation;
        (rot.inverse() * rb.linvel(), rot.inverse() * rb.angvel())
    }

    fn projected_gravity(&self) -> Vector {
        self.base_pose().rotation.inverse() * Vector::NEG_Z
    }

    fn ee_position(&self, spec: &SceneSpec) -> Vector {
        let Some(ee) = spec.end_effector else { return Vector::ZERO };
        let world = self.robot.link_pose(&self.world, ee).translation;
        self.base_pose().inverse_transform_point(world)
    }

    fn ee_distance(&self, spec: &SceneSpec) -> f32 {
        (self.ee_position(spec) - self.target).length()
    }

    fn terminated(&self, spec: &SceneSpec) -> bool {
        let pose = self.base_pose();
        spec.terminations.iter().any(|(t, j)| match *t {
            TerminationTerm::BaseHeightOut { min, max } => !(min..=max).contains(&pose.translation.z),
            TerminationTerm::BaseTilt { max_angle } => (pose.rotation * Vector::Z).z < max_angle.cos(),
            TerminationTerm::JointOut { min, max, .. } => !(min..=max).contains(&self.q[*j]),
            TerminationTerm::Success => self.success(spec),
        })
    }

    fn success(&self, spec: &SceneSpec) -> bool {
        match spec.config.success {
            SuccessTerm::None => false,
            SuccessTerm::EeNearTarget { distance } => self.ee_distance(spec) < distance,
            SuccessTerm::ForwardSpeed { speed } => {
                let travelled = self.base_pose().translation.x - self.start_x;
                travelled >= speed * self.dt * self.elapsed.max(1) as f32
            }
            SuccessTerm::ObjectAtGoal { distance, max_joint_speed } => {
                (self.object_position() - self.target).length() < distance
                    && self.qd.iter().all(|v| v.abs() < max_joint_speed)
            }
            SuccessTerm::TCoverage { threshold } => self.coverage(spec) >= threshold,
            SuccessTerm::Instruction => self.instruction_success(spec),
        }
    }

    /// Whether the instruction of the episode is fulfilled (see [`SuccessTerm::Instruction`]).
    fn instruction_success(&self, spec: &SceneSpec) -> bool {
        let Some(l) = &spec.language else { return false };
        let v = &l.variants[self.variant];
        let c = &l.config;
        let lift = self.object_lift(spec);
        match (v.verb, v.onto) {
            (Verb::Pick, _) => lift > c.lift_height,
            (Verb::Push, _) => {
                let moved = (self.object_position() - self.start).y * v.direction;
                moved >= c.push_distance && lift < 0.01
            }
            (Verb::Stack, Some(j)) => {
                let objects = &spec.config.scene.objects;
                let (a, b) = (self.object_position(), self.object_position_of(j));
                let up = objects[j].shape.half_height() + objects[v.object].shape.half_height();
                let released = self.gripper_released(spec);
                (a.x - b.x).hypot(a.y - b.y) < c.stack_tolerance && (a.z - b.z - up).abs() < 0.01 && released
            }
            (Verb::Stack, None) => false,
            (Verb::Place, _) => {
                let Some(p) = &c.place else { return false };
                let at = self.objects.pose(&self.world, self.focus).translation;
                let inside = (at.x - self.place.x).abs() <= p.radius && (at.y - self.place.y).abs() <= p.radius;
                inside && lift < 0.01 && self.gripper_released(spec)
            }
        }
    }

    /// Whether the gripper is more than half open (always, without a gripper).
    fn gripper_released(&self, spec: &SceneSpec) -> bool {
        match (spec.gripper, &spec.config.action.gripper) {
            (Some(g), Some(cfg)) => (self.q[g] - cfg.closed) / (cfg.open - cfg.closed) > 0.5,
            _ => true,
        }
    }

    /// Effort of actuated joint `j` this step, N·m or N (estimated from the PD law in position
    /// and velocity modes).
    fn effort(&self, spec: &SceneSpec, j: usize) -> f32 {
        let a = &spec.config.scene.actuator;
        let (kp, kd) = (a.stiffness as f32 * self.gain_scale, a.damping as f32 * self.gain_scale);
        let tau = match a.mode {
            ControlMode::Torque => self.applied[j],
            ControlMode::Position => kp * (self.applied[j] - self.q[j]) - kd * self.qd[j],
            ControlMode::Velocity => kd * (self.applied[j] - self.qd[j]),
        };
        let limit = self.robot.effort_limit(j);
        tau.clamp(-limit, limit)
    }

    fn reward_term(&self, spec: &SceneSpec, term: &RewardTerm, joints: &[usize], terminated: bool) -> f32 {
        let std = term.std;
        let joints = || joints.iter().copied();
        let sum_sq = |f: &dyn Fn(usize) -> f32| joints().map(|j| f(j).powi(2)).sum::<f32>();
        match term.term {
            RewardKind::Alive => (!terminated) as u8 as f32,
            RewardKind::Terminated => terminated as u8 as f32,
            RewardKind::ForwardVelocity => self.world.bodies[self.robot.root()].linvel().x,
            RewardKind::TrackLinVelXyExp => {
                let (v, _) = self.base_velocity();
                let c = self.velocity_command;
                let err = (v.x - c[0]).powi(2) + (v.y - c[1]).powi(2);
                (-err / (std * std)).exp()
            }
            RewardKind::TrackAngVelZExp => {
                let (_, w) = self.base_velocity();
                (-(w.z - self.velocity_command[2]).powi(2) / (std * std)).exp()
            }
            RewardKind::LinVelZL2 => self.base_velocity().0.z.powi(2),
            RewardKind::AngVelXyL2 => {
                let (_, w) = self.base_velocity();
                w.x * w.x + w.y * w.y
            }
            RewardKind::FlatOrientationL2 => {
                let g = self.projected_gravity();
                g.x * g.x + g.y * g.y
            }
            RewardKind::JointPosL2 => sum_sq(&|j| self.q[j] - spec.default_q[j]),
            RewardKind::JointCos => joints().map(|j| self.q[j].cos()).sum(),
            RewardKind::JointVelL2 => sum_sq(&|j| self.qd[j]),
            RewardKind::JointAccL2 => sum_sq(&|j| (self.qd[j] - self.prev_qd[j]) / self.dt),
            RewardKind::JointTorqueL2 => sum_sq(&|j| self.effort(spec, j)),
            RewardKind::ActionRateL2 => {
                self.action.iter().zip(&self.prev_action).map(|(a, b)| (a - b).powi(2)).sum()
            }
            RewardKind::ActionL2 => self.action.iter().map(|a| a * a).sum(),
            RewardKind::JointPosLimits => joints()
                .map(|j| {
                    let (lo, hi) = self.robot.limits(j);
                    if !(lo.is_finite() && hi.is_finite()) {
                        return 0.0;
                    }
                    let (mid, half) = ((lo + hi) / 2.0, 0.95 * (hi - lo) / 2.0);
                    ((self.q[j] - mid).abs() - half).max(0.0)
                })
                .sum(),
            RewardKind::EeDistance => self.ee_distance(spec),
            RewardKind::EeDistanceTanh => 1.0 - (self.ee_distance(spec) / std).tanh(),
            RewardKind::EeObjectDistanceTanh => {
                1.0 - ((self.object_position() - self.ee_position(spec)).length() / std).tanh()
            }
            RewardKind::ObjectLifted => (self.object_lift(spec) > term.min_height) as u8 as f32,
            RewardKind::ObjectGrasped => self.object_grasped(spec) as u8 as f32,
            RewardKind::ObjectGoalDistanceTanh => {
                let lifted = self.object_lift(spec) > term.min_height;
                lifted as u8 as f32 * (1.0 - ((self.target - self.object_position()).length() / std).tanh())
            }
            RewardKind::GraspedObjectGoalDistanceTanh => {
                let held = self.object_grasped(spec) || self.object_lift(spec) > term.min_height;
                held as u8 as f32 * (1.0 - ((self.target - self.object_position()).length() / std).tanh())
            }
            RewardKind::TCoverage => self.coverage(spec),
            RewardKind::ObjectTargetDistanceTanh => {
                1.0 - ((self.target - self.object_position()).length() / std).tanh()
            }
            RewardKind::Success => self.success(spec) as u8 as f32,
        }
    }

    /// Writes the observation of `terms` into `out` (`[dim]`); noise is added when `noisy`.
    pub fn observe(&mut self, spec: &SceneSpec, terms: &[ObsTerm], noisy: bool, out: &mut [f32]) {
        let mut at = 0;
        for term in terms {
            let n = spec.term_dim(term.term);
            let slot = &mut out[at..at + n];
            self.write_term(spec, term.term, slot);
            for x in slot.iter_mut() {
                *x *= term.scale;
                if noisy && term.noise > 0.0 {
                    *x += uniform(&mut self.rng, [-term.noise, term.noise]);
                }
            }
            at += n;
        }
    }

    fn write_term(&self, spec: &SceneSpec, kind: ObsKind, out: &mut [f32]) {
        let put3 = |out: &mut [f32], v: Vector| out.copy_from_slice(&v.to_array());
        match kind {
            ObsKind::JointPos => {
                for ((o, q), q0) in out.iter_mut().zip(&self.q).zip(&spec.default_q) {
                    *o = q - q0;
                }
            }
            ObsKind::JointPosCosSin => {
                for (o, q) in out.chunks_mut(2).zip(&self.q) {
                    (o[1], o[0]) = q.sin_cos();
                }
            }
            ObsKind::JointVel => out.copy_from_slice(&self.qd),
            ObsKind::LastAction => out.copy_from_slice(&self.action),
            ObsKind::BaseHeight => out[0] = self.base_pose().translation.z,
            ObsKind::BaseLinVel => put3(out, self.base_velocity().0),
            ObsKind::BaseAngVel => put3(out, self.base_velocity().1),
            ObsKind::ProjectedGravity => put3(out, self.projected_gravity()),
            ObsKind::VelocityCommand => out.copy_from_slice(&self.velocity_command),
            ObsKind::EePos => put3(out, self.ee_position(spec)),
            ObsKind::TargetPos => put3(out, self.target),
            ObsKind::EeToTarget => put3(out, self.target - self.ee_position(spec)),
            ObsKind::ObjectPos => put3(out, self.object_position()),
            ObsKind::ObjectQuat => {
                let r = self.base_pose().rotation.inverse() * self.objects.pose(&self.world, self.focus).rotation;
                let r = if r.w < 0.0 { -r } else { r };
                out.copy_from_slice(&r.to_array());
            }
            ObsKind::ObjectYawCosSin => {
                let r = self.base_pose().rotation.inverse() * self.objects.pose(&self.world, self.focus).rotation;
                (out[1], out[0]) = super::objects::yaw_of(r).sin_cos();
            }
            ObsKind::ObjectToGoal => put3(out, self.target - self.object_position()),
            ObsKind::EeToObject => put3(out, self.object_position() - self.ee_position(spec)),
            ObsKind::GripperOpening => {
                out[0] = match (spec.gripper, &spec.config.action.gripper) {
                    (Some(j), Some(g)) => (self.q[j] - g.closed) / (g.open - g.closed),
                    _ => 0.0,
                }
            }
            ObsKind::ObjectsPos => {
                for (i, o) in out.chunks_exact_mut(3).enumerate() {
                    o.copy_from_slice(&self.object_position_of(i).to_array());
                }
            }
            ObsKind::Instruction => {
                out.fill(0.0);
                if let Some(x) = out.get_mut(self.variant) {
                    *x = 1.0;
                }
            }
        }
    }

    /// Position of the object (the focus: the instruction's, else the first) in the base
    /// frame, m.
    fn object_position(&self) -> Vector {
        self.object_position_of(self.focus)
    }

    /// Position of object `i` in the base frame, m.
    pub fn object_position_of(&self, i: usize) -> Vector {
        self.base_pose().inverse_transform_point(self.objects.pose(&self.world, i).translation)
    }

    /// See [`RewardKind::ObjectGrasped`].
    fn object_grasped(&self, spec: &SceneSpec) -> bool {
        let (Some(j), Some(g), Some(object)) =
            (spec.gripper, &spec.config.action.gripper, spec.config.scene.objects.get(self.focus))
        else {
            return false;
        };
        let opening = (self.q[j] - g.closed) / (g.open - g.closed);
        let commanded = (self.applied[j] - g.closed) / (g.open - g.closed);
        let near = (self.object_position() - self.ee_position(spec)).length() < object.shape.half_height();
        near && (0.05..0.95).contains(&opening) && opening - commanded > GRASP_SQUEEZE
    }

    /// Height of the object above its resting height on the table, m.
    fn object_lift(&self, spec: &SceneSpec) -> f32 {
        let rest = spec.objects.table_top + spec.config.scene.objects[self.focus].shape.half_height();
        self.objects.pose(&self.world, self.focus).translation.z - rest
    }

    /// Fraction of the goal footprint (the object at the target and target yaw, base frame)
    /// covered by the object.
    pub fn coverage(&self, spec: &SceneSpec) -> f32 {
        let Some(object) = spec.config.scene.objects.first() else { return 0.0 };
        let goal = self.base_pose() * Pose::from_parts(self.target, Rotation::from_rotation_z(self.target_yaw));
        coverage(&object.shape, &spec.objects.grid, planar(&goal), planar(&self.objects.pose(&self.world, 0)))
    }
}

/// Standard normal draw (Box–Muller).
pub(crate) fn gaussian(rng: &mut ChaCha8Rng) -> f32 {
    let u1 = uniform(rng, [f32::EPSILON, 1.0]);
    let u2 = uniform(rng, [0.0, 1.0]);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
