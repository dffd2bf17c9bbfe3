//! Task terms as bevy_ecs systems, Isaac Lab style.
//!
//! Every environment ([`Scene`](super::scene::Scene)) is one bevy [`World`] whose resources are
//! its state: the rapier world with the robot and the objects ([`Physics`]), the actuated
//! joints ([`Joints`]), the action and what it commands ([`Actuation`]), the task's commands
//! and episode state ([`TaskState`]), the environment's generator ([`EnvRng`]) and the task
//! every environment shares ([`Task`]). A task's typed config
//! ([`TaskConfig`](super::task_config::TaskConfig)) lists its terms; each becomes a system built once
//! per environment with the term's parameters captured:
//!
//! - [`observations`]: one system per observation term, writing its slice of a group's vector;
//! - [`rewards`]: one system per reward term, returning the term's unweighted value;
//! - [`terminations`]: the success criterion and the termination terms, returning flags;
//! - [`events`]: reset events (domain randomization, initial state, commands) and interval
//!   events (pushes, command resampling, the instruction's moving target);
//! - [`actions`]: the action term (policy output to joint commands) and the physics step.
//!
//! The scene runs them in a fixed order with [`System::run`] on its own world; rayon runs the
//! environments in parallel, and each draws only from its own generator, so a batch is
//! deterministic whatever the thread count.

pub mod actions;
pub mod events;
pub mod observations;
pub mod rewards;
pub mod terminations;

use std::sync::Arc;

use bevy_ecs::prelude::*;
use bevy_ecs::system::{BoxedSystem, SystemInput, SystemParam};
use embodia_robots::ControlMode;
use rand_chacha::ChaCha8Rng;
use rapier3d::prelude::*;

use super::articulation::Articulation;
use super::ee_action::EeDelta;
use super::language::Verb;
use super::objects::{Objects, coverage, planar};
pub(crate) use super::sampling::{gaussian, uniform};
use super::spec::SceneSpec;

/// The task every environment of a batch shares.
#[derive(Resource)]
pub struct Task(pub Arc<SceneSpec>);

/// The rapier world of one environment, the robot in it and the objects on its table.
#[derive(Resource)]
pub struct Physics {
    /// The rapier world.
    pub world: PhysicsWorld,
    /// The robot.
    pub robot: Articulation,
    /// Objects and table.
    pub objects: Objects,
}

/// State of the actuated joints, `[num_actuated]` each.
#[derive(Resource)]
pub struct Joints {
    /// Positions, rad or m.
    pub q: Vec<f32>,
    /// Velocities, rad/s or m/s.
    pub qd: Vec<f32>,
    /// Velocities one control step ago, rad/s or m/s.
    pub prev_qd: Vec<f32>,
}

/// The action and the joint commands it turns into.
#[derive(Resource)]
pub struct Actuation {
    /// Clipped action of this step, `[num_actions]`.
    pub action: Vec<f32>,
    /// Clipped action of the previous step, `[num_actions]`.
    pub prev_action: Vec<f32>,
    /// Commands of every actuated joint, in the actuator's units, `[num_actuated]`.
    pub command: Vec<f32>,
    /// Delay line of issued commands, `[max_latency + 1, num_actuated]`, and its write head.
    pub delay: Vec<f32>,
    /// Slot of `delay` written last.
    pub delay_head: usize,
    /// Control steps between issuing a command and applying it (drawn per episode).
    pub latency: usize,
    /// Command applied this step, `[num_actuated]`.
    pub applied: Vec<f32>,
    /// Actuator gain multiplier drawn per episode.
    pub gain_scale: f32,
    /// The end-effector controller of `end_effector_delta` actions.
    pub ee: Option<EeDelta>,
}

/// Commands and episode state of the task.
#[derive(Resource)]
pub struct TaskState {
    /// Nominal control step, s.
    pub dt: f32,
    /// Control steps taken in the current episode.
    pub elapsed: u32,
    /// Target position, base frame, m.
    pub target: Vector,
    /// Target yaw (of the object, planar goals), rad.
    pub target_yaw: f32,
    /// Velocity command `(vx m/s, vy m/s, yaw rate rad/s)`.
    pub velocity_command: [f32; 3],
    /// Time since the commands were last drawn, s.
    pub command_timer: f32,
    /// Time since the last push, s.
    pub push_timer: f32,
    /// World x of the root at the start of the episode, m.
    pub start_x: f32,
    /// Nominal mass properties of the root body (before randomization).
    pub nominal_mass: MassProperties,
    /// Root mass after randomization, kg.
    pub mass: f32,
    /// Friction multiplier drawn for this episode.
    pub friction_scale: f32,
    /// Variant of the language family drawn for this episode (0 without one).
    pub variant: usize,
    /// The object the object terms refer to: the instruction's, else the first.
    pub focus: usize,
    /// Position of the focus object at the start of the episode, base frame, m.
    pub start: Vector,
    /// Centre of the `place` target pad on the table, world frame, m (zero without one).
    pub place: Vector,
}

/// The environment's generator: every random draw of its terms comes from here.
#[derive(Resource)]
pub struct EnvRng(pub ChaCha8Rng);

/// Flags of the current step, set before the terms that read them run.
#[derive(Resource, Default)]
pub struct StepFlags {
    /// The success criterion holds.
    pub success: bool,
    /// A termination term holds.
    pub terminated: bool,
}

/// Read access to the whole state of an environment, for terms that need more than one part.
#[derive(SystemParam)]
pub struct SceneRead<'w> {
    task: Res<'w, Task>,
    physics: Res<'w, Physics>,
    joints: Res<'w, Joints>,
    actuation: Res<'w, Actuation>,
    state: Res<'w, TaskState>,
}

impl SceneRead<'_> {
    /// The state as plain references.
    pub fn get(&self) -> SceneState<'_> {
        SceneState {
            spec: &self.task.0,
            physics: &self.physics,
            joints: &self.joints,
            actuation: &self.actuation,
            state: &self.state,
        }
    }
}

/// Borrowed state of an environment and the quantities terms derive from it.
#[derive(Clone, Copy)]
pub struct SceneState<'a> {
    /// The task.
    pub spec: &'a SceneSpec,
    /// The rapier world.
    pub physics: &'a Physics,
    /// Joint state.
    pub joints: &'a Joints,
    /// Action and commands.
    pub actuation: &'a Actuation,
    /// Task state.
    pub state: &'a TaskState,
}

/// How far (as a fraction of the gripper's range) the gripper's position target must lie
/// beyond its position towards `closed` for an object to count as grasped: the drive pushes
/// the fingers onto something that stops them (a stand-in for a contact force).
const GRASP_SQUEEZE: f32 = 0.05;

impl SceneState<'_> {
    /// World pose of the root body.
    pub fn base_pose(&self) -> Pose {
        let p = self.physics;
        *p.world.bodies[p.robot.root()].position()
    }

    /// Linear (m/s) and angular (rad/s) velocity of the root, in its own frame.
    pub fn base_velocity(&self) -> (Vector, Vector) {
        let p = self.physics;
        let rb = &p.world.bodies[p.robot.root()];
        let rot = rb.position().rotation;
        (rot.inverse() * rb.linvel(), rot.inverse() * rb.angvel())
    }

    /// Gravity's direction in the root's frame (unit vector).
    pub fn projected_gravity(&self) -> Vector {
        self.base_pose().rotation.inverse() * Vector::NEG_Z
    }

    /// End-effector position, base frame, m (zero without an end effector).
    pub fn ee_position(&self) -> Vector {
        ee_position(self.spec, self.physics)
    }

    /// Distance from the end effector to the target, m.
    pub fn ee_distance(&self) -> f32 {
        (self.ee_position() - self.state.target).length()
    }

    /// Position of the focus object (the instruction's, else the first), base frame, m.
    pub fn object_position(&self) -> Vector {
        self.object_position_of(self.state.focus)
    }

    /// Position of object `i`, base frame, m.
    pub fn object_position_of(&self, i: usize) -> Vector {
        let p = self.physics;
        self.base_pose().inverse_transform_point(p.objects.pose(&p.world, i).translation)
    }

    /// Height of the focus object above its resting height on the table, m.
    pub fn object_lift(&self) -> f32 {
        let (spec, p, focus) = (self.spec, self.physics, self.state.focus);
        let rest = spec.objects.table_top + spec.config.scene.objects[focus].shape.half_height();
        p.objects.pose(&p.world, focus).translation.z - rest
    }

    /// Whether the gripper holds the focus object: the object is at the end effector, the
    /// fingers are neither shut nor open, and the drive squeezes them onto it.
    pub fn object_grasped(&self) -> bool {
        let spec = self.spec;
        let (Some(j), Some(g), Some(object)) =
            (spec.gripper, &spec.config.action.gripper, spec.config.scene.objects.get(self.state.focus))
        else {
            return false;
        };
        let opening = (self.joints.q[j] - g.closed) / (g.open - g.closed);
        let commanded = (self.actuation.applied[j] - g.closed) / (g.open - g.closed);
        let near = (self.object_position() - self.ee_position()).length() < object.shape.half_height();
        near && (0.05..0.95).contains(&opening) && opening - commanded > GRASP_SQUEEZE
    }

    /// Whether the gripper is more than half open (always, without a gripper).
    pub fn gripper_released(&self) -> bool {
        match (self.spec.gripper, &self.spec.config.action.gripper) {
            (Some(g), Some(cfg)) => (self.joints.q[g] - cfg.closed) / (cfg.open - cfg.closed) > 0.5,
            _ => true,
        }
    }

    /// Fraction of the goal footprint (the first object at the target and target yaw, base
    /// frame) covered by the first object.
    pub fn coverage(&self) -> f32 {
        let Some(object) = self.spec.config.scene.objects.first() else { return 0.0 };
        let s = self.state;
        let goal = self.base_pose() * Pose::from_parts(s.target, Rotation::from_rotation_z(s.target_yaw));
        let at = self.physics.objects.pose(&self.physics.world, 0);
        coverage(&object.shape, &self.spec.objects.grid, planar(&goal), planar(&at))
    }

    /// Effort of actuated joint `j` this step, N·m or N (estimated from the PD law in position
    /// and velocity modes), clamped to the joint's effort limit.
    pub fn effort(&self, j: usize) -> f32 {
        let (act, q, qd) = (self.actuation, &self.joints.q, &self.joints.qd);
        let (kp, kd) = self.physics.robot.gains(j);
        let tau = match self.physics.robot.drive(j).actuator.mode {
            ControlMode::Torque => act.applied[j],
            ControlMode::Position => kp * (act.applied[j] - q[j]) - kd * qd[j],
            ControlMode::Velocity => kd * (act.applied[j] - qd[j]),
        };
        let limit = self.physics.robot.effort_limit(j);
        tau.clamp(-limit, limit)
    }

    /// The target of the episode's instruction: above the object's start (pick), beside it
    /// (push), on the other object (stack; follows it), over the pad (place). `None` without a
    /// language family.
    pub fn instruction_target(&self) -> Option<Vector> {
        let l = self.spec.language.as_ref()?;
        let (v, c, s) = (&l.variants[self.state.variant], &l.config, self.state);
        let objects = &self.spec.config.scene.objects;
        Some(match (v.verb, v.onto) {
            (Verb::Pick, _) => s.start + Vector::Z * (c.lift_height + 0.03),
            (Verb::Push, _) => s.start + Vector::Y * (v.direction * (c.push_distance + 0.02)),
            (Verb::Stack, Some(j)) => {
                let up = objects[j].shape.half_height() + objects[v.object].shape.half_height();
                self.object_position_of(j) + Vector::Z * up
            }
            (Verb::Stack, None) => s.start,
            (Verb::Place, _) => {
                let half = objects[v.object].shape.half_height();
                self.base_pose().inverse_transform_point(s.place) + Vector::Z * half
            }
        })
    }
}

/// End-effector position, base frame, m (zero without an end effector).
pub fn ee_position(spec: &SceneSpec, physics: &Physics) -> Vector {
    let Some(ee) = spec.end_effector else { return Vector::ZERO };
    let world = physics.robot.link_pose(&physics.world, ee).translation;
    let base = physics.world.bodies[physics.robot.root()].position();
    base.inverse_transform_point(world)
}

/// Runs a term system on its environment's world. Every resource a term reads is inserted
/// when the scene is built and never removed, and no term skips itself, so running cannot fail.
pub fn run_term<I: SystemInput + 'static, O: 'static>(
    system: &mut BoxedSystem<I, O>,
    input: I::Inner<'_>,
    world: &mut World,
) -> O {
    system.run(input, world).expect("term resources are inserted when the scene is built")
}

/// Boxes a system and prepares it to run on `world`.
pub fn boxed_system<I: SystemInput + 'static, O: 'static, M>(
    system: impl IntoSystem<I, O, M>,
    world: &mut World,
) -> BoxedSystem<I, O> {
    let mut system: BoxedSystem<I, O> = Box::new(IntoSystem::into_system(system));
    system.initialize(world);
    system
}
