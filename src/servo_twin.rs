//! A physics twin of a servo-driven robot (`embodia servo-emulator --physics`): the emulated
//! servos speak their bus protocol as the plain emulator does, but their shafts are the joints
//! of the robot simulated in rapier, so goals written over the bus move a simulated arm (with
//! its gravity, inertia and effort limits) and reads return its state.
//!
//! # How it works
//! 1. The robot's model and hardware map are the built-in ones; the arm is driven as the
//!    robot's first rapier task drives it (its `scene.actuator`: position control with the
//!    task's gains, effort limits and armature; its physics step and gravity compensation), so
//!    a policy meets on the twin the actuator model it was trained on.
//! 2. Each servo's goal (ticks, through the uncalibrated hardware map: ticks 2048 is the
//!    joint's zero) sets a setpoint that moves toward it no faster than the servo may turn
//!    (its speed register, and the joint's velocity limit), as the servo's own profile does;
//!    the joint's position drive tracks the setpoint. A servo with torque off has a free
//!    joint: the arm sags under gravity as a real one does.
//! 3. The bus time since the last packet is simulated in whole physics steps (the remainder
//!    carries over), at most [`MAX_CATCH_UP`] at once; positions, speeds and the drive's
//!    effort (as the load, a fraction of the effort limit) go back to the servos' registers.

use embodia_deploy::{Shaft, ShaftDynamics};
use embodia_robots::{ControlMode, HardwareMap};
use embodia_sim::rapier::{Articulation, SpawnOptions, TaskConfig};
use rapier3d::prelude::*;

/// The most simulated time one bus exchange catches up, s: a bus left idle for longer resumes
/// from where the arm was (it has settled long before under torque, and a hanging arm too).
pub const MAX_CATCH_UP: f64 = 1.0;

/// A simulated robot whose joints are the shafts of emulated servos.
pub struct ServoTwin {
    world: PhysicsWorld,
    arm: Articulation,
    map: HardwareMap,
    /// Physics step, s.
    physics_dt: f64,
    /// Simulated time owed to the arm, less than one physics step, s.
    owed: f64,
    /// Per joint, the position the drive tracks, rad: it follows the goal at the speed limit.
    setpoints: Vec<f64>,
    /// Scratch per joint: commands (rad), positions (rad), velocities (rad/s).
    commands: Vec<f32>,
    q: Vec<f32>,
    qd: Vec<f32>,
}

impl ServoTwin {
    /// The twin of built-in robot `robot`, driven as its first rapier task drives it. Errors
    /// name the robot when it has no servos, no rapier task, or a task that does not drive it
    /// with position control.
    pub fn new(robot: &str) -> Result<Self, String> {
        let model = embodia_robots::builtin(robot).map_err(|e| e.to_string())?;
        let map = HardwareMap::builtin(robot, &model).map_err(|e| e.to_string())?;
        let task = embodia_sim::rapier::rapier_tasks()
            .into_iter()
            .map(|t| (t.config)())
            .find(|c: &TaskConfig| c.scene.robot == robot)
            .ok_or_else(|| format!("robot \"{robot}\" has no simulated task to take its actuator model from"))?;
        let s = &task.scene;
        if s.actuator.mode != ControlMode::Position {
            return Err(format!(
                "robot \"{robot}\": its task drives it in {} mode; servos hold positions",
                s.actuator.mode.name()
            ));
        }
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::new(0.0, 0.0, -9.81);
        world.integration_parameters.dt = s.physics_dt;
        world.integration_parameters.num_solver_iterations = s.solver_iterations as usize;
        let options = SpawnOptions {
            base_pose: Pose::from_translation(Vector::from_array(s.base_position)),
            fixed_base: s.fixed_base,
            joint_model: s.joint_model,
            ..SpawnOptions::default()
        };
        let arm = Articulation::spawn(&mut world, &model, s.actuator, &options).map_err(|e| e.to_string())?;
        if s.gravity_compensation {
            arm.set_gravity_scale(&mut world, 0.0);
        }
        let n = arm.num_actuated();
        if n != map.joints.len() {
            return Err(format!("robot \"{robot}\": {n} actuated joints but {} servos", map.joints.len()));
        }
        Ok(Self {
            world,
            arm,
            map,
            physics_dt: f64::from(s.physics_dt),
            owed: 0.0,
            setpoints: vec![0.0; n],
            commands: vec![0.0; n],
            q: vec![0.0; n],
            qd: vec![0.0; n],
        })
    }
}

impl std::fmt::Debug for ServoTwin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServoTwin").field("robot", &self.map.robot).field("q", &self.q).finish_non_exhaustive()
    }
}

impl ShaftDynamics for ServoTwin {
    fn advance(&mut self, dt: f64, shafts: &mut [Shaft]) {
        self.owed += dt.clamp(0.0, MAX_CATCH_UP);
        let steps = (self.owed / self.physics_dt).floor();
        self.owed -= steps * self.physics_dt;
        let h = self.physics_dt;
        for (i, shaft) in shafts.iter().enumerate() {
            self.arm.set_free(i, !shaft.torque_on);
        }
        for _ in 0..steps as u64 {
            for (i, shaft) in shafts.iter().enumerate() {
                let joint = &self.map.joints[i];
                if !shaft.torque_on {
                    // A free shaft: the setpoint follows the joint, so torque comes on holding it.
                    self.setpoints[i] = f64::from(self.q[i]);
                    continue;
                }
                let goal = joint.to_radians(shaft.goal);
                let speed = joint.speed_to_radians(shaft.max_speed).abs().min(joint.max_velocity);
                let step = (goal - self.setpoints[i]).clamp(-speed * h, speed * h);
                self.setpoints[i] += step;
            }
            for (c, &s) in self.commands.iter_mut().zip(&self.setpoints) {
                *c = s as f32;
            }
            self.arm.command(&mut self.world, &self.commands, 1.0);
            self.arm.apply_efforts(&mut self.world);
            self.world.step_with_events(self.arm.contact_hooks(), &());
            self.arm.joint_state(&self.world, &mut self.q, &mut self.qd);
        }
        for (i, shaft) in shafts.iter_mut().enumerate() {
            let joint = &self.map.joints[i];
            shaft.position = joint.to_ticks(f64::from(self.q[i]));
            shaft.speed = joint.to_ticks(f64::from(self.qd[i])) - joint.to_ticks(0.0);
            let (kp, kd) = self.arm.gains(i);
            let effort = kp * (self.commands[i] - self.q[i]) - kd * self.qd[i];
            shaft.load = f64::from((effort / self.arm.effort_limit(i)).clamp(-1.0, 1.0));
        }
    }
}
