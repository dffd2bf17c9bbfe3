//! Forward and inverse kinematics of a [`RobotModel`], independent of any physics world.
//!
//! [`Kinematics`] computes link poses from actuated joint positions with the same conventions
//! as [`super::Articulation`] (URDF joint origins, axes in the joint frame, mimic joints
//! following their source): for a robot spawned at `base`, `link_poses(base, q)` equals the
//! simulator's `link_pose` after `set_state(q)`. [`Ik`] solves for joint positions that put a
//! link at a position (and optionally an orientation) by damped least squares on a numerical
//! Jacobian, within joint bounds. Scripted experts use both.

use embodia_robots::{JointKind, RobotModel};
use rapier3d::prelude::*;

/// How a joint moves its child.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Motion {
    Fixed,
    Revolute,
    Prismatic,
}

/// Where a joint's position comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    /// Not moving (fixed joints, and joints that are neither actuated nor mimic).
    Zero,
    /// Actuated joint number `i` (index into the actuated joint vector).
    Actuated(usize),
    /// `multiplier × q[i] + offset` of actuated joint `i`.
    Mimic(usize, f32, f32),
}

#[derive(Debug, Clone)]
struct KinJoint {
    parent: usize,
    child: usize,
    origin: Pose,
    axis: Vector,
    motion: Motion,
    source: Source,
}

/// Forward kinematics of a robot model.
#[derive(Debug, Clone)]
pub struct Kinematics {
    /// Joints, parents first.
    joints: Vec<KinJoint>,
    root: usize,
    num_links: usize,
    num_actuated: usize,
}

fn to_pose(p: &embodia_robots::Pose) -> Pose {
    let [x, y, z, w] = p.quaternion();
    Pose::from_parts(
        Vector::new(p.xyz[0] as f32, p.xyz[1] as f32, p.xyz[2] as f32),
        Rotation::from_xyzw(x as f32, y as f32, z as f32, w as f32).normalize(),
    )
}

impl Kinematics {
    /// The kinematic tree of `model`.
    pub fn new(model: &RobotModel) -> Self {
        let actuated = model.actuated_joints();
        let actuated_index = |j: usize| actuated.iter().position(|&a| a == j);
        let joints = model
            .joints_topological()
            .into_iter()
            .map(|j| {
                let joint = &model.joints[j];
                let motion = match joint.kind {
                    JointKind::Revolute | JointKind::Continuous => Motion::Revolute,
                    JointKind::Prismatic => Motion::Prismatic,
                    JointKind::Fixed | JointKind::Floating => Motion::Fixed,
                };
                let source = match (actuated_index(j), joint.mimic) {
                    (Some(i), _) => Source::Actuated(i),
                    (None, Some(m)) => match actuated_index(m.joint) {
                        Some(i) => Source::Mimic(i, m.multiplier as f32, m.offset as f32),
                        None => Source::Zero,
                    },
                    _ => Source::Zero,
                };
                let [ax, ay, az] = joint.axis.map(|v| v as f32);
                KinJoint {
                    parent: joint.parent,
                    child: joint.child,
                    origin: to_pose(&joint.origin),
                    axis: Vector::new(ax, ay, az),
                    motion,
                    source,
                }
            })
            .collect();
        Self { joints, root: model.root, num_links: model.links.len(), num_actuated: actuated.len() }
    }

    /// Number of links (the length of [`Self::link_poses`]' output).
    pub fn num_links(&self) -> usize {
        self.num_links
    }

    /// Number of actuated joints (the length of `q`).
    pub fn num_actuated(&self) -> usize {
        self.num_actuated
    }

    /// Writes the pose of every link (`[num_links]`, indexed as [`RobotModel::links`]) for a
    /// root at `base` and actuated joint positions `q` (`[num_actuated]`, rad or m).
    pub fn link_poses(&self, base: Pose, q: &[f32], out: &mut [Pose]) {
        out[self.root] = base;
        for j in &self.joints {
            let value = match j.source {
                Source::Zero => 0.0,
                Source::Actuated(i) => q[i],
                Source::Mimic(i, m, o) => m * q[i] + o,
            };
            let motion = match j.motion {
                Motion::Fixed => Pose::IDENTITY,
                Motion::Revolute => Pose::from_rotation(Rotation::from_axis_angle(j.axis, value)),
                Motion::Prismatic => Pose::from_translation(j.axis * value),
            };
            out[j.child] = out[j.parent] * j.origin * motion;
        }
    }
}

/// What [`Ik::solve`] aims for.
#[derive(Debug, Clone, Copy)]
pub struct IkTarget {
    /// Position of the link, m (in the frame of `base`).
    pub position: Vector,
    /// Orientation of the link, if it matters.
    pub rotation: Option<Rotation>,
    /// Weight of the orientation error (rad) against the position error (m).
    pub rotation_weight: f32,
}

/// Damped-least-squares inverse kinematics of one link.
#[derive(Debug, Clone)]
pub struct Ik {
    kin: Kinematics,
    link: usize,
    poses: Vec<Pose>,
    /// Jacobian columns, `[num_actuated][6]`.
    jacobian: Vec<[f32; 6]>,
    scratch: Vec<f32>,
    /// Damping λ of `Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e`.
    pub damping: f32,
    /// Largest change of one joint per iteration, rad or m.
    pub max_step: f32,
}

impl Ik {
    /// IK of link `link` of `model`.
    pub fn new(model: &RobotModel, link: usize) -> Self {
        let kin = Kinematics::new(model);
        let n = kin.num_actuated();
        Self {
            poses: vec![Pose::IDENTITY; kin.num_links()],
            jacobian: vec![[0.0; 6]; n],
            scratch: vec![0.0; n],
            kin,
            link,
            damping: 0.05,
            max_step: 0.2,
        }
    }

    /// The forward kinematics used.
    pub fn kinematics(&self) -> &Kinematics {
        &self.kin
    }

    /// Pose of the link for joint positions `q`, root at `base`.
    pub fn pose(&mut self, base: Pose, q: &[f32]) -> Pose {
        self.kin.link_poses(base, q, &mut self.poses);
        self.poses[self.link]
    }

    /// Error `[position (m); weighted rotation vector (rad)]` from `pose` to `target`.
    fn error(pose: &Pose, target: &IkTarget) -> [f32; 6] {
        let p = target.position - pose.translation;
        let r = match target.rotation {
            Some(rot) => {
                let d = rot * pose.rotation.inverse();
                let d = if d.w < 0.0 { -d } else { d };
                let (axis, angle) = d.to_axis_angle();
                axis * angle * target.rotation_weight
            }
            None => Vector::ZERO,
        };
        [p.x, p.y, p.z, r.x, r.y, r.z]
    }

    /// Moves `q` (`[num_actuated]`, the start) towards joint positions that put the link at
    /// `target`, for at most `iterations` iterations, changing only the joints in `active` and
    /// keeping each within `[lower[j], upper[j]]`. Returns the remaining position error, m.
    #[allow(clippy::too_many_arguments, reason = "the IK problem's parts; a struct would only rename them")]
    pub fn solve(
        &mut self,
        base: Pose,
        target: &IkTarget,
        q: &mut [f32],
        active: &[usize],
        lower: &[f32],
        upper: &[f32],
        iterations: usize,
    ) -> f32 {
        let eps = 1e-3f32;
        let rows = if target.rotation.is_some() { 6 } else { 3 };
        for _ in 0..iterations {
            let pose = self.pose(base, q);
            let e = Self::error(&pose, target);
            if e[..rows].iter().map(|x| x * x).sum::<f32>() < 1e-9 {
                break;
            }
            // Numerical Jacobian of the (weighted) error's negation, column per active joint.
            for &j in active {
                let saved = q[j];
                q[j] = saved + eps;
                let moved = self.pose(base, q);
                q[j] = saved;
                let e2 = Self::error(&moved, target);
                for r in 0..6 {
                    self.jacobian[j][r] = (e[r] - e2[r]) / eps;
                }
            }
            // A = J Jᵀ + λ² I (rows × rows), solve A y = e, Δq = Jᵀ y.
            let mut a = [[0.0f32; 6]; 6];
            #[allow(clippy::needless_range_loop, reason = "row and column indices of a matrix")]
            for r in 0..rows {
                for c in 0..rows {
                    a[r][c] = active.iter().map(|&j| self.jacobian[j][r] * self.jacobian[j][c]).sum();
                }
                a[r][r] += self.damping * self.damping;
            }
            let y = solve_spd(a, e, rows);
            let mut scale = 1.0f32;
            for &j in active {
                let dq: f32 = (0..rows).map(|r| self.jacobian[j][r] * y[r]).sum();
                self.scratch[j] = dq;
                if dq.abs() * scale > self.max_step {
                    scale = self.max_step / dq.abs();
                }
            }
            for &j in active {
                q[j] = (q[j] + scale * self.scratch[j]).clamp(lower[j], upper[j]);
            }
        }
        let pose = self.pose(base, q);
        (target.position - pose.translation).length()
    }
}

/// `rotation` turned so that its axis closest to straight down points exactly down (world −z,
/// z up): the top-down grasp orientation nearest to a given end-effector orientation. The
/// scripted pick expert and end-effector actions hold it.
pub fn top_down(rotation: Rotation) -> Rotation {
    let axes = [Vector::X, Vector::Y, Vector::Z, -Vector::X, -Vector::Y, -Vector::Z];
    let approach = axes.into_iter().map(|a| rotation * a).max_by(|a, b| (-a.z).total_cmp(&-b.z)).unwrap_or(-Vector::Z);
    Rotation::from_rotation_arc(approach, -Vector::Z) * rotation
}

/// Solves `a x = b` for a symmetric positive definite `a` of size `n ≤ 6` (Cholesky).
fn solve_spd(a: [[f32; 6]; 6], b: [f32; 6], n: usize) -> [f32; 6] {
    let mut l = [[0.0f32; 6]; 6];
    for i in 0..n {
        for j in 0..=i {
            let s: f32 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f32>();
            l[i][j] = if i == j { s.max(1e-12).sqrt() } else { s / l[j][j] };
        }
    }
    let mut y = [0.0f32; 6];
    for i in 0..n {
        y[i] = (b[i] - (0..i).map(|k| l[i][k] * y[k]).sum::<f32>()) / l[i][i];
    }
    let mut x = [0.0f32; 6];
    for i in (0..n).rev() {
        x[i] = (y[i] - (i + 1..n).map(|k| l[k][i] * x[k]).sum::<f32>()) / l[i][i];
    }
    x
}
