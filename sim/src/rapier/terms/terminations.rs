//! The success criterion ([`SuccessTerm`]) and the termination terms ([`TerminationTerm`]),
//! each a system returning whether it holds.

use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;

use super::super::language::Verb;
use super::super::task_config::{SuccessTerm, TerminationTerm};
use super::{Joints, SceneRead, SceneState, StepFlags, boxed_system};

/// A system returning whether a condition holds.
pub type FlagSystem = BoxedSystem<(), bool>;

/// The system of the success criterion.
pub fn success_system(term: SuccessTerm, world: &mut World) -> FlagSystem {
    match term {
        SuccessTerm::None => boxed_system(|| false, world),
        SuccessTerm::EeNearTarget { distance } => {
            boxed_system(move |s: SceneRead| s.get().ee_distance() < distance, world)
        }
        SuccessTerm::ForwardSpeed { speed } => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let travelled = s.base_pose().translation.x - s.state.start_x;
                travelled >= speed * s.state.dt * s.state.elapsed.max(1) as f32
            },
            world,
        ),
        SuccessTerm::ObjectAtGoal { distance, max_joint_speed } => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                (s.object_position() - s.state.target).length() < distance
                    && s.joints.qd.iter().all(|v| v.abs() < max_joint_speed)
            },
            world,
        ),
        SuccessTerm::TCoverage { threshold } => {
            boxed_system(move |s: SceneRead| s.get().coverage() >= threshold, world)
        }
        SuccessTerm::Instruction => boxed_system(|s: SceneRead| instruction_success(&s.get()), world),
    }
}

/// Whether the instruction of the episode is fulfilled (see [`SuccessTerm::Instruction`]).
fn instruction_success(s: &SceneState) -> bool {
    let Some(l) = &s.spec.language else { return false };
    let v = &l.variants[s.state.variant];
    let c = &l.config;
    let lift = s.object_lift();
    match (v.verb, v.onto) {
        (Verb::Pick, _) => lift > c.lift_height,
        (Verb::Push, _) => {
            let moved = (s.object_position() - s.state.start).y * v.direction;
            moved >= c.push_distance && lift < 0.01
        }
        (Verb::Stack, Some(j)) => {
            let objects = &s.spec.config.scene.objects;
            let (a, b) = (s.object_position(), s.object_position_of(j));
            let up = objects[j].shape.half_height() + objects[v.object].shape.half_height();
            (a.x - b.x).hypot(a.y - b.y) < c.stack_tolerance && (a.z - b.z - up).abs() < 0.01 && s.gripper_released()
        }
        (Verb::Stack, None) => false,
        (Verb::Place, _) => {
            let Some(p) = &c.place else { return false };
            let at = s.physics.objects.pose(&s.physics.world, s.state.focus).translation;
            let place = s.state.place;
            let inside = (at.x - place.x).abs() <= p.radius && (at.y - place.y).abs() <= p.radius;
            inside && lift < 0.01 && s.gripper_released()
        }
    }
}

/// The system of termination `term`; `joint` is the actuated joint of a `joint_out` term.
pub fn termination_system(term: &TerminationTerm, joint: usize, world: &mut World) -> FlagSystem {
    match *term {
        TerminationTerm::BaseHeightOut { min, max } => {
            boxed_system(move |s: SceneRead| !(min..=max).contains(&s.get().base_pose().translation.z), world)
        }
        TerminationTerm::BaseTilt { max_angle } => {
            let min_up = max_angle.cos();
            boxed_system(
                move |s: SceneRead| (s.get().base_pose().rotation * rapier3d::prelude::Vector::Z).z < min_up,
                world,
            )
        }
        TerminationTerm::JointOut { min, max, .. } => {
            boxed_system(move |j: Res<Joints>| !(min..=max).contains(&j.q[joint]), world)
        }
        TerminationTerm::Success => boxed_system(|flags: Res<StepFlags>| flags.success, world),
        TerminationTerm::ObjectOffTable { drop } => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let (p, floor) = (s.physics, s.spec.objects.table_top - drop);
                (0..s.spec.config.scene.objects.len()).any(|i| p.objects.pose(&p.world, i).translation.z < floor)
            },
            world,
        ),
    }
}
