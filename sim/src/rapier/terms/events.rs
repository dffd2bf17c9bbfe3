//! Events: reset events (domain randomization drawn per episode, the initial state, commands)
//! and interval events (pushes, command resampling, the instruction's moving target).
//!
//! Reset events run in a fixed order, the order in which they draw from the environment's
//! generator; the randomization events always draw, whatever their range, so that the draws
//! of the initial state do not depend on which randomizations are switched on.

use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;
use embodia_robots::ControlMode;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::RngCore;
use rapier3d::prelude::*;

use super::super::spec::SceneSpec;
use super::{Actuation, EnvRng, Joints, Physics, SceneState, Task, TaskState, boxed_system, uniform};

/// A system of an event.
pub type EventSystem = BoxedSystem;

/// The reset events of `spec`, in the order they run.
pub fn reset_systems(spec: &SceneSpec, world: &mut World) -> Vec<EventSystem> {
    let mut systems = vec![
        boxed_system(begin_episode, world),
        boxed_system(randomize_friction, world),
        boxed_system(randomize_base_mass, world),
        boxed_system(randomize_actuator_gains, world),
        boxed_system(randomize_action_latency, world),
        boxed_system(reset_robot, world),
    ];
    if !spec.config.scene.objects.is_empty() {
        systems.push(boxed_system(reset_objects, world));
    }
    systems.push(boxed_system(reset_actuation, world));
    systems.push(boxed_system(reset_commands, world));
    if let Some(language) = &spec.language {
        if language.config.place.is_some() {
            systems.push(boxed_system(draw_place_target, world));
        }
        systems.push(boxed_system(draw_instruction, world));
    }
    systems
}

/// The interval events of `spec` (run after every physics step), in the order they run.
pub fn interval_systems(spec: &SceneSpec, world: &mut World) -> Vec<EventSystem> {
    let mut systems = Vec::new();
    if spec.language.is_some() {
        systems.push(boxed_system(track_instruction_target, world));
    }
    if spec.config.events.push_interval_s > 0.0 {
        systems.push(boxed_system(push_robot, world));
    }
    if spec.config.command.resample_s > 0.0 {
        systems.push(boxed_system(resample_commands, world));
    }
    systems
}

/// Episode counters and event timers back to zero.
fn begin_episode(mut state: ResMut<TaskState>) {
    state.elapsed = 0;
    state.command_timer = 0.0;
    state.push_timer = 0.0;
}

/// Every collider's friction: the scene's, times a factor drawn from `events.friction_scale`.
fn randomize_friction(
    task: Res<Task>,
    mut physics: ResMut<Physics>,
    mut state: ResMut<TaskState>,
    mut rng: ResMut<EnvRng>,
) {
    let c = &task.0.config;
    state.friction_scale = uniform(&mut rng.0, c.events.friction_scale);
    let friction = c.scene.friction * state.friction_scale;
    for (_, collider) in physics.world.colliders.iter_mut() {
        collider.set_friction(friction);
    }
}

/// The root's mass: nominal plus a draw from `events.added_base_mass` (floating bases), never
/// below a tenth of the nominal mass.
fn randomize_base_mass(
    task: Res<Task>,
    mut physics: ResMut<Physics>,
    mut state: ResMut<TaskState>,
    mut rng: ResMut<EnvRng>,
) {
    let c = &task.0.config;
    let added = uniform(&mut rng.0, c.events.added_base_mass);
    if !c.scene.fixed_base && c.events.added_base_mass != [0.0, 0.0] {
        let nominal = state.nominal_mass;
        let mut mass = nominal;
        mass.set_mass((nominal.mass() + added).max(0.1 * nominal.mass()), true);
        state.mass = mass.mass();
        let p = &mut *physics;
        p.world.bodies[p.robot.root()].set_additional_mass_properties(mass, true);
    }
}

/// The actuator gain multiplier, from `events.actuator_gain_scale`.
fn randomize_actuator_gains(task: Res<Task>, mut actuation: ResMut<Actuation>, mut rng: ResMut<EnvRng>) {
    actuation.gain_scale = uniform(&mut rng.0, task.0.config.events.actuator_gain_scale);
}

/// The command latency: the actuator's, plus uniformly `0..=events.max_latency_steps` steps.
fn randomize_action_latency(task: Res<Task>, mut actuation: ResMut<Actuation>, mut rng: ResMut<EnvRng>) {
    let c = &task.0.config;
    let extra = ((rng.0.next_u32() as u64 * (c.events.max_latency_steps as u64 + 1)) >> 32) as usize;
    actuation.latency = c.scene.actuator.latency_steps as usize + extra;
}

/// The robot's initial state: default joint positions plus noise (within limits), velocity
/// noise, and (floating bases) a root offset in the plane and a yaw.
fn reset_robot(
    task: Res<Task>,
    mut physics: ResMut<Physics>,
    mut joints: ResMut<Joints>,
    mut state: ResMut<TaskState>,
    mut rng: ResMut<EnvRng>,
) {
    let (spec, p, j, rng) = (&task.0, &mut *physics, &mut *joints, &mut rng.0);
    let (c, e) = (&spec.config, &spec.config.events);
    j.q.copy_from_slice(&spec.default_q);
    j.qd.fill(0.0);
    for k in 0..j.q.len() {
        j.q[k] += uniform(rng, e.joint_position_noise);
        j.qd[k] = uniform(rng, e.joint_velocity_noise);
        let (lo, hi) = p.robot.limits(k);
        j.q[k] = j.q[k].clamp(lo, hi);
    }
    let mut base = Pose::from_translation(Vector::from_array(c.scene.base_position));
    if !c.scene.fixed_base {
        base.translation.x += uniform(rng, [-e.base_xy, e.base_xy]);
        base.translation.y += uniform(rng, [-e.base_xy, e.base_xy]);
        base.rotation = Rotation::from_rotation_z(uniform(rng, e.base_yaw));
    }
    state.start_x = base.translation.x;
    p.robot.set_state(&mut p.world, base, Vector::ZERO, Vector::ZERO, &j.q, &j.qd);
    j.prev_qd.copy_from_slice(&j.qd);
}

/// The objects at drawn poses on the table (see [`super::super::objects::Objects::reset`]).
fn reset_objects(task: Res<Task>, mut physics: ResMut<Physics>, state: Res<TaskState>, mut rng: ResMut<EnvRng>) {
    let (spec, p) = (&task.0, &mut *physics);
    let s = &spec.config.scene;
    let ee = spec.end_effector.map(|l| p.robot.link_pose(&p.world, l).translation);
    p.objects.reset(&mut p.world, &s.objects, s.table.as_ref(), &mut rng.0, ee, state.friction_scale);
}

/// No action history; every command (and the delay line) holds the initial state.
fn reset_actuation(mut physics: ResMut<Physics>, joints: Res<Joints>, mut actuation: ResMut<Actuation>) {
    let (a, p) = (&mut *actuation, &mut *physics);
    a.action.fill(0.0);
    a.prev_action.fill(0.0);
    // Position drives hold where the joint starts; velocity and torque drives command 0.
    for (j, c) in a.command.iter_mut().enumerate() {
        *c = if p.robot.drive(j).actuator.mode == ControlMode::Position { joints.q[j] } else { 0.0 };
    }
    if let Some(ee) = &mut a.ee {
        ee.reset(&joints.q);
    }
    for slot in a.delay.chunks_mut(a.command.len().max(1)) {
        slot.copy_from_slice(&a.command);
    }
    a.applied.copy_from_slice(&a.command);
    p.robot.command(&mut p.world, &a.command, a.gain_scale);
}

/// Draws the commands `command` configures: target position, target yaw, velocity command.
fn draw_commands(spec: &SceneSpec, state: &mut TaskState, rng: &mut ChaCha8Rng) {
    let c = &spec.config.command;
    if let Some(r) = c.target {
        state.target = Vector::new(uniform(rng, r[0]), uniform(rng, r[1]), uniform(rng, r[2]));
    }
    if let Some(r) = c.target_yaw {
        state.target_yaw = uniform(rng, r);
    }
    if let Some(r) = c.velocity {
        for (k, range) in r.iter().enumerate() {
            state.velocity_command[k] = uniform(rng, *range);
        }
    }
}

/// The commands of the new episode.
fn reset_commands(task: Res<Task>, mut state: ResMut<TaskState>, mut rng: ResMut<EnvRng>) {
    draw_commands(&task.0, &mut state, &mut rng.0);
}

/// Redraws the commands every `command.resample_s`.
fn resample_commands(task: Res<Task>, mut state: ResMut<TaskState>, mut rng: ResMut<EnvRng>) {
    state.command_timer += state.dt;
    if state.command_timer >= task.0.config.command.resample_s {
        state.command_timer = 0.0;
        draw_commands(&task.0, &mut state, &mut rng.0);
    }
}

/// Pushes the root every `events.push_interval_s`: a velocity change drawn uniformly within
/// ± `events.push_velocity` in x and y, m/s.
fn push_robot(task: Res<Task>, mut physics: ResMut<Physics>, mut state: ResMut<TaskState>, mut rng: ResMut<EnvRng>) {
    let e = &task.0.config.events;
    state.push_timer += state.dt;
    if state.push_timer >= e.push_interval_s {
        state.push_timer = 0.0;
        let v = e.push_velocity;
        let dv = Vector::new(uniform(&mut rng.0, [-v, v]), uniform(&mut rng.0, [-v, v]), 0.0);
        let p = &mut *physics;
        p.robot.push_root(&mut p.world, dv);
    }
}

/// The `place` target pad: drawn in its area, redrawn (up to 32 times, keeping the draw
/// farthest from its nearest object) while closer than its clearance to an object.
fn draw_place_target(task: Res<Task>, physics: Res<Physics>, mut state: ResMut<TaskState>, mut rng: ResMut<EnvRng>) {
    let (spec, rng) = (&task.0, &mut rng.0);
    let Some(p) = spec.language.as_ref().and_then(|l| l.config.place.as_ref()) else { return };
    let top = spec.objects.table_top;
    let draw = |rng: &mut ChaCha8Rng| Vector::new(uniform(rng, p.area[0]), uniform(rng, p.area[1]), top);
    let nearest = |at: Vector| {
        (0..physics.objects.len())
            .map(|i| {
                let t = physics.objects.pose(&physics.world, i).translation;
                (t.x - at.x).hypot(t.y - at.y)
            })
            .fold(f32::INFINITY, f32::min)
    };
    let mut best = draw(rng);
    let mut far = nearest(best);
    for _ in 0..32 {
        if far >= p.clearance {
            break;
        }
        let at = draw(rng);
        let d = nearest(at);
        if d > far {
            (best, far) = (at, d);
        }
    }
    state.place = best;
}

/// The episode's instruction: a variant drawn among the family's training variants, its
/// object as the focus, and its target.
fn draw_instruction(
    task: Res<Task>,
    physics: Res<Physics>,
    joints: Res<Joints>,
    actuation: Res<Actuation>,
    mut state: ResMut<TaskState>,
    mut rng: ResMut<EnvRng>,
) {
    let Some(l) = &task.0.language else { return };
    let k = ((rng.0.next_u32() as u64 * l.drawn.len() as u64) >> 32) as usize;
    state.variant = l.drawn[k];
    state.focus = l.variants[state.variant].object;
    let view = SceneState { spec: &task.0, physics: &physics, joints: &joints, actuation: &actuation, state: &state };
    state.start = view.object_position();
    track_target(&task, &physics, &joints, &actuation, &mut state);
}

/// The instruction's target, which moves with the object of a `stack` instruction.
fn track_instruction_target(
    task: Res<Task>,
    physics: Res<Physics>,
    joints: Res<Joints>,
    actuation: Res<Actuation>,
    mut state: ResMut<TaskState>,
) {
    track_target(&task, &physics, &joints, &actuation, &mut state);
}

fn track_target(task: &Task, physics: &Physics, joints: &Joints, actuation: &Actuation, state: &mut TaskState) {
    let view = SceneState { spec: &task.0, physics, joints, actuation, state };
    if let Some(target) = view.instruction_target() {
        state.target = target;
    }
}
