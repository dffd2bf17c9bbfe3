//! Observation terms: one system per [`ObsTerm`] of a group, each writing its slice of the
//! group's vector; the group then scales it and adds the term's noise.

use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;
use rapier3d::prelude::*;

use super::super::objects::yaw_of;
use super::super::spec::SceneSpec;
use super::super::task_config::{ObsKind, ObsTerm};
use super::{Actuation, EnvRng, Joints, SceneRead, Task, TaskState, boxed_system, run_term, uniform};

/// A system writing one observation term into its slice (`[term_dim]`).
pub type ObsSystem = BoxedSystem<InMut<'static, [f32]>, ()>;

/// One term of a group: its system and where its values go.
struct Slot {
    system: ObsSystem,
    start: usize,
    len: usize,
    scale: f32,
    noise: f32,
}

/// An observation group (the actor's or the critic's): its terms concatenated in order.
pub struct ObsGroup {
    slots: Vec<Slot>,
}

impl ObsGroup {
    /// Builds the systems of `terms` on `world`.
    pub fn new(spec: &SceneSpec, terms: &[ObsTerm], world: &mut World) -> Self {
        let mut start = 0;
        let slots = terms
            .iter()
            .map(|t| {
                let len = spec.term_dim(t.term);
                let slot = Slot { system: term_system(t.term, world), start, len, scale: t.scale, noise: t.noise };
                start += len;
                slot
            })
            .collect();
        Self { slots }
    }

    /// Keeps the systems' change ticks from wrapping (see [`World::check_change_ticks`]).
    pub fn check_change_tick(&mut self, check: bevy_ecs::change_detection::CheckChangeTicks) {
        for slot in &mut self.slots {
            slot.system.check_change_tick(check);
        }
    }

    /// Writes the group's observation into `out` (`[group dim]`); each term's noise is drawn
    /// from the environment's generator when `noisy`.
    pub fn write(&mut self, world: &mut World, noisy: bool, out: &mut [f32]) {
        for slot in &mut self.slots {
            let values = &mut out[slot.start..slot.start + slot.len];
            run_term(&mut slot.system, values, world);
            let noise = if noisy { slot.noise } else { 0.0 };
            let mut rng = world.resource_mut::<EnvRng>();
            for x in values.iter_mut() {
                *x *= slot.scale;
                if noise > 0.0 {
                    *x += uniform(&mut rng.0, [-noise, noise]);
                }
            }
        }
    }
}

fn put3(out: &mut [f32], v: Vector) {
    out.copy_from_slice(&v.to_array());
}

/// The system of observation term `kind`.
pub fn term_system(kind: ObsKind, world: &mut World) -> ObsSystem {
    match kind {
        ObsKind::JointPos => boxed_system(
            |InMut(out): InMut<[f32]>, joints: Res<Joints>, task: Res<Task>| {
                for ((o, q), q0) in out.iter_mut().zip(&joints.q).zip(&task.0.default_q) {
                    *o = q - q0;
                }
            },
            world,
        ),
        ObsKind::JointPosCosSin => boxed_system(
            |InMut(out): InMut<[f32]>, joints: Res<Joints>| {
                for (o, q) in out.chunks_mut(2).zip(&joints.q) {
                    (o[1], o[0]) = q.sin_cos();
                }
            },
            world,
        ),
        ObsKind::JointVel => {
            boxed_system(|InMut(out): InMut<[f32]>, joints: Res<Joints>| out.copy_from_slice(&joints.qd), world)
        }
        ObsKind::LastAction => {
            boxed_system(|InMut(out): InMut<[f32]>, a: Res<Actuation>| out.copy_from_slice(&a.action), world)
        }
        ObsKind::BaseHeight => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| out[0] = s.get().base_pose().translation.z, world)
        }
        ObsKind::BaseLinVel => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| put3(out, s.get().base_velocity().0), world)
        }
        ObsKind::BaseAngVel => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| put3(out, s.get().base_velocity().1), world)
        }
        ObsKind::ProjectedGravity => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| put3(out, s.get().projected_gravity()), world)
        }
        ObsKind::VelocityCommand => boxed_system(
            |InMut(out): InMut<[f32]>, state: Res<TaskState>| out.copy_from_slice(&state.velocity_command),
            world,
        ),
        ObsKind::EePos => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| put3(out, s.get().ee_position()), world)
        }
        ObsKind::TargetPos => {
            boxed_system(|InMut(out): InMut<[f32]>, state: Res<TaskState>| put3(out, state.target), world)
        }
        ObsKind::EeToTarget => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let s = s.get();
                put3(out, s.state.target - s.ee_position())
            },
            world,
        ),
        ObsKind::ObjectPos => {
            boxed_system(|InMut(out): InMut<[f32]>, s: SceneRead| put3(out, s.get().object_position()), world)
        }
        ObsKind::ObjectQuat => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let r = object_rotation(&s);
                let r = if r.w < 0.0 { -r } else { r };
                out.copy_from_slice(&r.to_array());
            },
            world,
        ),
        ObsKind::ObjectYawCosSin => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| (out[1], out[0]) = yaw_of(object_rotation(&s)).sin_cos(),
            world,
        ),
        ObsKind::ObjectToGoal => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let s = s.get();
                put3(out, s.state.target - s.object_position())
            },
            world,
        ),
        ObsKind::EeToObject => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let s = s.get();
                put3(out, s.object_position() - s.ee_position())
            },
            world,
        ),
        ObsKind::EeTargetOffset => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let s = s.get();
                let target = s.actuation.ee.as_ref().map(|ee| ee.target() - s.ee_position());
                put3(out, target.unwrap_or(Vector::ZERO))
            },
            world,
        ),
        ObsKind::GripperOpening => boxed_system(
            |InMut(out): InMut<[f32]>, joints: Res<Joints>, task: Res<Task>| {
                out[0] = match (task.0.gripper, &task.0.config.action.gripper) {
                    (Some(j), Some(g)) => (joints.q[j] - g.closed) / (g.open - g.closed),
                    _ => 0.0,
                }
            },
            world,
        ),
        ObsKind::ObjectsPos => boxed_system(
            |InMut(out): InMut<[f32]>, s: SceneRead| {
                let s = s.get();
                for (i, o) in out.chunks_exact_mut(3).enumerate() {
                    put3(o, s.object_position_of(i));
                }
            },
            world,
        ),
        ObsKind::Instruction => boxed_system(
            |InMut(out): InMut<[f32]>, state: Res<TaskState>| {
                out.fill(0.0);
                if let Some(x) = out.get_mut(state.variant) {
                    *x = 1.0;
                }
            },
            world,
        ),
    }
}

/// Orientation of the focus object relative to the base.
fn object_rotation(s: &SceneRead) -> Rotation {
    let s = s.get();
    let p = s.physics;
    s.base_pose().rotation.inverse() * p.objects.pose(&p.world, s.state.focus).rotation
}
