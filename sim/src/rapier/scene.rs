//! One environment of a rapier task: a bevy [`World`] holding its rapier world, robot and task
//! state, and the term systems its task config lists (see [`super::terms`]).
//! [`super::RapierEnv`] holds a batch.

use std::sync::Arc;

use bevy_ecs::prelude::{IntoSystem, World};
use bevy_ecs::system::BoxedSystem;
use rand_chacha::ChaCha8Rng;
use rapier3d::prelude::*;

use super::articulation::{Articulation, SpawnOptions};
use super::contact_filter::SCENE_GROUPS;
use super::ee_action::EeDelta;
use super::objects::Objects;
use super::spec::SceneSpec;
use super::terms::actions::{ActionSystem, action_system, physics_system};
use super::terms::events::{EventSystem, interval_systems, reset_systems};
use super::terms::observations::ObsGroup;
use super::terms::rewards::{self, RewardSystem};
use super::terms::terminations::{FlagSystem, success_system, termination_system};
use super::terms::{
    Actuation, EnvRng, Joints, Physics, SceneState, StepFlags, Task, TaskState, boxed_system, run_term,
};
use crate::SimError;

/// One environment: its state as bevy resources and its task's terms as systems, run in order.
pub struct Scene {
    ecs: World,
    /// Reset events, in order.
    reset_events: Vec<EventSystem>,
    /// The action term.
    action: ActionSystem,
    /// Decimated rapier steps and the joint state read back.
    physics_step: BoxedSystem,
    /// Interval events, after every physics step.
    interval_events: Vec<EventSystem>,
    success: FlagSystem,
    terminations: Vec<FlagSystem>,
    /// Reward terms with their weights.
    rewards: Vec<(f32, RewardSystem)>,
    policy_obs: ObsGroup,
    /// `None`: the critic observes the policy's terms.
    critic_obs: Option<ObsGroup>,
    /// Return accumulated in the current episode.
    pub running_return: f64,
}

impl Scene {
    /// Builds the world of one environment and the systems of its terms.
    pub fn new(spec: &Arc<SceneSpec>, rng: ChaCha8Rng) -> Result<Self, SimError> {
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
                    .friction(s.friction)
                    .collision_groups(SCENE_GROUPS),
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
            collision_filters: spec.collision_filters.clone(),
            excluded_pairs: spec.excluded_pairs.clone(),
        };
        let robot = Articulation::spawn_driven(&mut world, &spec.model, &spec.drives, &options)?;
        if s.gravity_compensation {
            robot.set_gravity_scale(&mut world, 0.0);
        }
        let objects = Objects::build(&mut world, &s.objects, s.table.as_ref());
        let nominal_mass = robot.root_mass_properties();
        let ee = match (spec.config.action.kind, spec.end_effector) {
            (kind, Some(ee)) if kind.is_end_effector() => {
                Some(EeDelta::new(&spec.model, ee, &spec.driven, &spec.default_q))
            }
            _ => None,
        };
        let na = robot.num_actuated();
        let n = spec.num_actions();
        let slots = spec.config.events.max_latency_steps as usize + s.actuator.latency_steps as usize + 1;

        let mut ecs = World::new();
        ecs.insert_resource(Task(spec.clone()));
        ecs.insert_resource(Physics { world, robot, objects });
        ecs.insert_resource(Joints { q: vec![0.0; na], qd: vec![0.0; na], prev_qd: vec![0.0; na] });
        ecs.insert_resource(Actuation {
            action: vec![0.0; n],
            prev_action: vec![0.0; n],
            command: vec![0.0; na],
            delay: vec![0.0; slots * na],
            delay_head: 0,
            latency: 0,
            applied: vec![0.0; na],
            gain_scale: 1.0,
            ee,
        });
        ecs.insert_resource(TaskState {
            dt: s.control_dt(),
            elapsed: 0,
            target: Vector::ZERO,
            target_yaw: 0.0,
            velocity_command: [0.0; 3],
            command_timer: 0.0,
            push_timer: 0.0,
            start_x: 0.0,
            nominal_mass,
            mass: nominal_mass.mass(),
            friction_scale: 1.0,
            variant: 0,
            focus: 0,
            start: Vector::ZERO,
            place: Vector::ZERO,
        });
        ecs.insert_resource(EnvRng(rng));
        ecs.insert_resource(StepFlags::default());

        let observations = &spec.config.observations;
        Ok(Self {
            reset_events: reset_systems(spec, &mut ecs),
            action: action_system(&mut ecs),
            physics_step: physics_system(&mut ecs),
            interval_events: interval_systems(spec, &mut ecs),
            success: success_system(spec.config.success, &mut ecs),
            terminations: spec.terminations.iter().map(|(t, j)| termination_system(t, *j, &mut ecs)).collect(),
            rewards: spec
                .rewards
                .iter()
                .map(|(t, joints)| (t.weight, rewards::term_system(t, joints.clone(), &mut ecs)))
                .collect(),
            policy_obs: ObsGroup::new(spec, &observations.policy, &mut ecs),
            critic_obs: observations.critic.as_deref().map(|terms| ObsGroup::new(spec, terms, &mut ecs)),
            ecs,
            running_return: 0.0,
        })
    }

    /// Adds a reward term, `weight × system()`, after the configured ones. `system` reads the
    /// environment's resources (see [`super::terms`]) and returns the term's unweighted value.
    pub fn add_reward_term<M>(&mut self, weight: f32, system: impl IntoSystem<(), f32, M>) {
        self.rewards.push((weight, boxed_system(system, &mut self.ecs)));
    }

    /// Draws a new episode: the reset events in order (randomized parameters, initial state,
    /// commands, instruction).
    pub fn reset(&mut self) {
        self.running_return = 0.0;
        for event in &mut self.reset_events {
            run_term(event, (), &mut self.ecs);
        }
        // Change ticks advance with every system run; keep them from wrapping on long runs.
        if let Some(check) = self.ecs.check_change_ticks() {
            for event in self.reset_events.iter_mut().chain(&mut self.interval_events) {
                event.check_change_tick(check);
            }
            self.action.check_change_tick(check);
            self.physics_step.check_change_tick(check);
            self.success.check_change_tick(check);
            for flag in &mut self.terminations {
                flag.check_change_tick(check);
            }
            for (_, reward) in &mut self.rewards {
                reward.check_change_tick(check);
            }
            self.policy_obs.check_change_tick(check);
            if let Some(critic) = &mut self.critic_obs {
                critic.check_change_tick(check);
            }
        }
    }

    /// Applies `action` (`[num_actions]`, finite), advances one control step, and returns the
    /// reward, whether a terminal state was reached, and whether the task succeeded.
    pub fn step(&mut self, action: &[f32]) -> (f64, bool, bool) {
        let ecs = &mut self.ecs;
        run_term(&mut self.action, action, ecs);
        run_term(&mut self.physics_step, (), ecs);
        for event in &mut self.interval_events {
            run_term(event, (), ecs);
        }
        let success = run_term(&mut self.success, (), ecs);
        ecs.resource_mut::<StepFlags>().success = success;
        let terminated = self.terminations.iter_mut().any(|t| run_term(t, (), ecs));
        ecs.resource_mut::<StepFlags>().terminated = terminated;
        let mut reward = 0.0f64;
        for (weight, term) in &mut self.rewards {
            reward += (*weight * run_term(term, (), ecs)) as f64;
        }
        (reward, terminated, success)
    }

    /// Writes the policy observation into `out` (`[obs_dim]`), with its terms' noise when
    /// `noisy`.
    pub fn observe_policy(&mut self, noisy: bool, out: &mut [f32]) {
        self.policy_obs.write(&mut self.ecs, noisy, out);
    }

    /// Writes the critic observation into `out` (`[critic_dim]`), without noise: the critic's
    /// copy is privileged and clean.
    pub fn observe_critic(&mut self, out: &mut [f32]) {
        match &mut self.critic_obs {
            Some(critic) => critic.write(&mut self.ecs, false, out),
            None => self.policy_obs.write(&mut self.ecs, false, out),
        }
    }

    /// The environment's state, for reading.
    fn state(&self) -> SceneState<'_> {
        let ecs = &self.ecs;
        SceneState {
            spec: &ecs.resource::<Task>().0,
            physics: ecs.resource(),
            joints: ecs.resource(),
            actuation: ecs.resource(),
            state: ecs.resource(),
        }
    }

    /// The task.
    pub fn spec(&self) -> &SceneSpec {
        self.state().spec
    }

    /// The environment's generator.
    pub fn rng(&self) -> &ChaCha8Rng {
        &self.ecs.resource::<EnvRng>().0
    }

    /// Replaces the environment's generator (before a reset).
    pub fn set_rng(&mut self, rng: ChaCha8Rng) {
        self.ecs.resource_mut::<EnvRng>().0 = rng;
    }

    /// Control steps taken in the current episode.
    pub fn elapsed(&self) -> u32 {
        self.state().state.elapsed
    }

    /// The physics world (read-only; for viewers and tests).
    pub fn world(&self) -> &PhysicsWorld {
        &self.state().physics.world
    }

    /// The robot.
    pub fn robot(&self) -> &Articulation {
        &self.state().physics.robot
    }

    /// The current target position in the base frame, m.
    pub fn target(&self) -> Vector {
        self.state().state.target
    }

    /// The current target yaw (of the object, planar goals), rad.
    pub fn target_yaw(&self) -> f32 {
        self.state().state.target_yaw
    }

    /// Number of objects.
    pub fn num_objects(&self) -> usize {
        self.state().physics.objects.len()
    }

    /// World pose of object `i` (as listed in `scene.objects`).
    pub fn object_pose(&self, i: usize) -> Pose {
        let p = self.state().physics;
        p.objects.pose(&p.world, i)
    }

    /// World poses of the objects, in `scene.objects` order (for viewers).
    pub fn object_poses(&self) -> impl Iterator<Item = Pose> + '_ {
        let p = self.state().physics;
        (0..p.objects.len()).map(|i| p.objects.pose(&p.world, i))
    }

    /// Position of object `i` in the base frame, m.
    pub fn object_position_of(&self, i: usize) -> Vector {
        self.state().object_position_of(i)
    }

    /// The latest command of every actuated joint, in the actuator's units (position targets
    /// in position mode).
    pub fn commands(&self) -> &[f32] {
        &self.state().actuation.command
    }

    /// The end-effector position target of `end_effector_delta` actions, base frame, m
    /// (`None` with other action kinds).
    pub fn ee_target(&self) -> Option<Vector> {
        self.state().actuation.ee.as_ref().map(EeDelta::target)
    }

    /// Current actuated joint positions, rad or m.
    pub fn joint_positions(&self) -> &[f32] {
        &self.state().joints.q
    }

    /// Current actuated joint velocities, rad/s or m/s.
    pub fn joint_velocities(&self) -> &[f32] {
        &self.state().joints.qd
    }

    /// The current velocity command `(vx, vy, yaw rate)`.
    pub fn velocity_command(&self) -> [f32; 3] {
        self.state().state.velocity_command
    }

    /// Actuator gain multiplier drawn at the last reset.
    pub fn gain_scale(&self) -> f32 {
        self.state().actuation.gain_scale
    }

    /// Friction coefficient of the robot's first collider (after randomization).
    pub fn robot_friction(&self) -> f32 {
        let p = self.state().physics;
        let root = &p.world.bodies[p.robot.root()];
        root.colliders().first().map_or(0.0, |&c| p.world.colliders[c].friction())
    }

    /// Mass of the root body, kg (after randomization).
    pub fn base_mass(&self) -> f32 {
        self.state().state.mass
    }

    /// Centre of the `place` target pad on the table top, world frame, m (zero without one).
    pub fn place_target(&self) -> Vector {
        self.state().state.place
    }

    /// The variant of the language family drawn for the current episode (0 without one).
    pub fn variant(&self) -> usize {
        self.state().state.variant
    }

    /// The object the object terms refer to: the instruction's object, else 0.
    pub fn focus(&self) -> usize {
        self.state().state.focus
    }

    /// Where the focus object was at the start of the episode, base frame, m.
    pub fn focus_start(&self) -> Vector {
        self.state().state.start
    }

    /// The instruction of the current episode; `None` without a language family.
    pub fn instruction(&self) -> Option<&str> {
        let s = self.state();
        s.spec.language.as_ref().map(|l| l.variants[s.state.variant].instruction.as_str())
    }

    /// Fraction of the goal footprint (the object at the target and target yaw, base frame)
    /// covered by the object.
    pub fn coverage(&self) -> f32 {
        self.state().coverage()
    }
}
