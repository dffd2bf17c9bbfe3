//! Reward terms: one system per [`RewardTerm`], returning the term's unweighted value; the
//! scene sums `weight × value` in the config's order.

use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;

use super::super::task_config::{RewardKind, RewardTerm};
use super::{Actuation, Joints, SceneRead, StepFlags, Task, TaskState, boxed_system};

/// A system returning one reward term's unweighted value.
pub type RewardSystem = BoxedSystem<(), f32>;

/// Sum over `joints` of `f(j)²`.
fn sum_sq(joints: &[usize], f: impl Fn(usize) -> f32) -> f32 {
    joints.iter().map(|&j| f(j).powi(2)).sum()
}

/// The system of reward `term`; `joints` are the actuated joints a `joint_*` term sums over.
pub fn term_system(term: &RewardTerm, joints: Vec<usize>, world: &mut World) -> RewardSystem {
    let (std, min_height) = (term.std, term.min_height);
    let tanh_kernel = move |distance: f32| 1.0 - (distance / std).tanh();
    match term.term {
        RewardKind::Alive => boxed_system(|flags: Res<StepFlags>| (!flags.terminated) as u8 as f32, world),
        RewardKind::Terminated => boxed_system(|flags: Res<StepFlags>| flags.terminated as u8 as f32, world),
        RewardKind::Success => boxed_system(|flags: Res<StepFlags>| flags.success as u8 as f32, world),
        RewardKind::ForwardVelocity => boxed_system(
            |s: SceneRead| {
                let p = s.get().physics;
                p.world.bodies[p.robot.root()].linvel().x
            },
            world,
        ),
        RewardKind::TrackLinVelXyExp => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let (v, c) = (s.base_velocity().0, s.state.velocity_command);
                let err = (v.x - c[0]).powi(2) + (v.y - c[1]).powi(2);
                (-err / (std * std)).exp()
            },
            world,
        ),
        RewardKind::TrackAngVelZExp => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                (-(s.base_velocity().1.z - s.state.velocity_command[2]).powi(2) / (std * std)).exp()
            },
            world,
        ),
        RewardKind::LinVelZL2 => boxed_system(|s: SceneRead| s.get().base_velocity().0.z.powi(2), world),
        RewardKind::AngVelXyL2 => boxed_system(
            |s: SceneRead| {
                let w = s.get().base_velocity().1;
                w.x * w.x + w.y * w.y
            },
            world,
        ),
        RewardKind::FlatOrientationL2 => boxed_system(
            |s: SceneRead| {
                let g = s.get().projected_gravity();
                g.x * g.x + g.y * g.y
            },
            world,
        ),
        RewardKind::JointPosL2 => boxed_system(
            move |j: Res<Joints>, task: Res<Task>| sum_sq(&joints, |k| j.q[k] - task.0.default_q[k]),
            world,
        ),
        RewardKind::JointCos => {
            boxed_system(move |j: Res<Joints>| joints.iter().map(|&k| j.q[k].cos()).sum::<f32>(), world)
        }
        RewardKind::JointVelL2 => boxed_system(move |j: Res<Joints>| sum_sq(&joints, |k| j.qd[k]), world),
        RewardKind::JointAccL2 => boxed_system(
            move |j: Res<Joints>, state: Res<TaskState>| sum_sq(&joints, |k| (j.qd[k] - j.prev_qd[k]) / state.dt),
            world,
        ),
        RewardKind::JointTorqueL2 => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                sum_sq(&joints, |k| s.effort(k))
            },
            world,
        ),
        RewardKind::ActionRateL2 => boxed_system(
            |a: Res<Actuation>| a.action.iter().zip(&a.prev_action).map(|(x, y)| (x - y).powi(2)).sum::<f32>(),
            world,
        ),
        RewardKind::ActionL2 => boxed_system(|a: Res<Actuation>| a.action.iter().map(|x| x * x).sum::<f32>(), world),
        RewardKind::JointPosLimits => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let robot = &s.physics.robot;
                joints
                    .iter()
                    .map(|&k| {
                        let (lo, hi) = robot.limits(k);
                        if !(lo.is_finite() && hi.is_finite()) {
                            return 0.0;
                        }
                        let (mid, half) = ((lo + hi) / 2.0, 0.95 * (hi - lo) / 2.0);
                        ((s.joints.q[k] - mid).abs() - half).max(0.0)
                    })
                    .sum::<f32>()
            },
            world,
        ),
        RewardKind::EeDistance => boxed_system(|s: SceneRead| s.get().ee_distance(), world),
        RewardKind::EeDistanceTanh => boxed_system(move |s: SceneRead| tanh_kernel(s.get().ee_distance()), world),
        RewardKind::EeObjectDistanceTanh => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                tanh_kernel((s.object_position() - s.ee_position()).length())
            },
            world,
        ),
        RewardKind::ObjectLifted => {
            boxed_system(move |s: SceneRead| (s.get().object_lift() > min_height) as u8 as f32, world)
        }
        RewardKind::ObjectGrasped => boxed_system(|s: SceneRead| s.get().object_grasped() as u8 as f32, world),
        RewardKind::ObjectGoalDistanceTanh => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let lifted = s.object_lift() > min_height;
                lifted as u8 as f32 * tanh_kernel((s.state.target - s.object_position()).length())
            },
            world,
        ),
        RewardKind::GraspedObjectGoalDistanceTanh => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                let held = s.object_grasped() || s.object_lift() > min_height;
                held as u8 as f32 * tanh_kernel((s.state.target - s.object_position()).length())
            },
            world,
        ),
        RewardKind::TCoverage => boxed_system(|s: SceneRead| s.get().coverage(), world),
        RewardKind::ObjectTargetDistanceTanh => boxed_system(
            move |s: SceneRead| {
                let s = s.get();
                tanh_kernel((s.state.target - s.object_position()).length())
            },
            world,
        ),
    }
}
