//! The action term (a policy's action to joint commands, through latency and noise) and the
//! physics step that follows it.

use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;
use rapier3d::prelude::*;

use super::super::task_config::ActionKind;
use super::{Actuation, EnvRng, Joints, Physics, Task, TaskState, boxed_system, ee_position, gaussian};

/// A system taking one environment's action, `[num_actions]`.
pub type ActionSystem = BoxedSystem<InRef<'static, [f32]>, ()>;

/// The action term.
pub fn action_system(world: &mut World) -> ActionSystem {
    boxed_system(apply_action, world)
}

/// The physics step: `scene.decimation` rapier steps, then the joint state.
pub fn physics_system(world: &mut World) -> BoxedSystem {
    boxed_system(step_physics, world)
}

/// Clips the action (finite, `[num_actions]`), turns it into joint commands (joint targets,
/// velocities or efforts, or end-effector steps through IK; the gripper's component maps
/// `[-1, 1]` to closed..open), passes them through the latency delay line and actuator noise,
/// and hands them to the drives.
fn apply_action(
    InRef(action): InRef<[f32]>,
    task: Res<Task>,
    mut physics: ResMut<Physics>,
    mut actuation: ResMut<Actuation>,
    mut rng: ResMut<EnvRng>,
) {
    let (spec, a) = (&task.0, &mut *actuation);
    let c = &spec.config;
    let na = a.command.len();
    a.prev_action.copy_from_slice(&a.action);
    for (x, &y) in a.action.iter_mut().zip(action) {
        *x = y.clamp(-c.action.clip, c.action.clip);
    }
    let scale = c.action.scale;
    if let Some(ee) = &mut a.ee {
        let commanded = Vector::new(a.action[0], a.action[1], a.action[2]) * scale;
        let delta = match c.action.kind {
            ActionKind::EndEffectorPosition => ee.home() + commanded - ee.target(),
            _ => commanded,
        };
        ee.step(delta, ee_position(spec, &physics), &mut a.command);
    } else {
        for (k, &j) in spec.driven.iter().enumerate() {
            let x = a.action[k] * scale;
            a.command[j] = match c.action.kind {
                ActionKind::JointPosition => spec.default_q[j] + x,
                ActionKind::JointPositionDelta => {
                    let (lo, hi) = physics.robot.limits(j);
                    (a.command[j] + x).clamp(lo, hi)
                }
                ActionKind::JointVelocity
                | ActionKind::JointEffort
                | ActionKind::EndEffectorDelta
                | ActionKind::EndEffectorPosition => x,
            };
        }
    }
    if let (Some(j), Some(g)) = (spec.gripper, &c.action.gripper) {
        let x = a.action[spec.arm_actions()].clamp(-1.0, 1.0);
        let x = if g.binary { if x > 0.0 { 1.0 } else { -1.0 } } else { x };
        a.command[j] = g.closed + 0.5 * (x + 1.0) * (g.open - g.closed);
    }
    // Latency: write this step's command, apply the one issued `latency` steps ago.
    let slots = a.delay.len() / na.max(1);
    if na > 0 {
        a.delay_head = (a.delay_head + 1) % slots;
        a.delay[a.delay_head * na..][..na].copy_from_slice(&a.command);
        let read = (a.delay_head + slots - a.latency.min(slots - 1)) % slots;
        a.applied.copy_from_slice(&a.delay[read * na..][..na]);
    }
    let noise = c.scene.actuator.noise_std as f32;
    if noise > 0.0 {
        for x in &mut a.applied {
            *x += noise * gaussian(&mut rng.0);
        }
    }
    let p = &mut *physics;
    p.robot.command(&mut p.world, &a.applied, a.gain_scale);
}

/// Advances `scene.decimation` rapier steps and reads the joint state.
fn step_physics(
    task: Res<Task>,
    mut physics: ResMut<Physics>,
    mut joints: ResMut<Joints>,
    mut state: ResMut<TaskState>,
) {
    let (p, j) = (&mut *physics, &mut *joints);
    for _ in 0..task.0.config.scene.decimation {
        p.robot.apply_efforts(&mut p.world);
        p.world.step_with_events(p.robot.contact_hooks(), &());
    }
    state.elapsed += 1;
    j.prev_qd.copy_from_slice(&j.qd);
    p.robot.joint_state(&p.world, &mut j.q, &mut j.qd);
}
