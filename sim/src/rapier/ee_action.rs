//! End-effector delta actions: the first three action components move a target of the end
//! effector's position, and damped-least-squares differential IK turns it into joint position
//! targets (after Isaac Lab's differential-IK action in relative mode and ManiSkill's
//! `pd_ee_delta_pos`; both add the step to the measured pose, here it moves the previous
//! target, so that an action of 0 holds the hand where it was sent).
//!
//! The controller keeps the target position (base frame) and the joint solution between steps:
//! each step adds `scale × action` (m) to the target, keeps it within [`MAX_LEAD`] of the
//! measured end effector (a target pushed into the table or out of reach does not wind up), and
//! runs [`IK_ITERATIONS`] iterations of [`Ik::solve`] from the previous solution, towards the
//! target position and a fixed top-down orientation (the one nearest the default pose's, see
//! [`top_down`]). The solution becomes the position target of every driven joint; the PD drives
//! then follow it, so a constant gravity sag of the arm shows as a small steady offset between
//! the target and the measured end effector. Nothing is allocated after construction.

use embodia_robots::RobotModel;
use rapier3d::prelude::*;

use super::kinematics::{Ik, IkTarget, top_down};

/// Largest distance of the end-effector target from the measured end effector, m.
pub const MAX_LEAD: f32 = 0.1;
/// Weight of the orientation error (rad) against the position error (m) in the IK.
pub const ROTATION_WEIGHT: f32 = 0.5;
/// Damping λ of the damped least squares, `Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e`.
pub const IK_DAMPING: f32 = 0.05;
/// IK iterations per control step (warm-started from the previous step's solution).
pub const IK_ITERATIONS: usize = 2;

/// The end-effector delta controller of one environment.
#[derive(Debug, Clone)]
pub struct EeDelta {
    ik: Ik,
    /// Driven joints (actuated indices) the IK moves.
    active: Vec<usize>,
    /// Joint position bounds per actuated joint, rad or m.
    lower: Vec<f32>,
    upper: Vec<f32>,
    /// Joint solution, `[num_actuated]`, rad or m; only `active` entries are written.
    q: Vec<f32>,
    /// End-effector position target, base frame, m.
    target: Vector,
    /// End-effector orientation held, base frame.
    rotation: Rotation,
    /// End-effector position at the default joint positions, base frame, m: the origin of
    /// `end_effector_position` actions.
    home: Vector,
}

impl EeDelta {
    /// The controller of link `link` of `model`, moving the actuated joints `active` (indices
    /// among [`RobotModel::actuated_joints`]) within their limits, and holding the top-down
    /// orientation nearest the link's orientation at `default_q` (`[num_actuated]`, rad or m).
    pub fn new(model: &RobotModel, link: usize, active: &[usize], default_q: &[f32]) -> Self {
        let mut ik = Ik::new(model, link);
        ik.damping = IK_DAMPING;
        let actuated = model.actuated_joints();
        let mut lower = vec![f32::NEG_INFINITY; actuated.len()];
        let mut upper = vec![f32::INFINITY; actuated.len()];
        for (j, &joint) in actuated.iter().enumerate() {
            let joint = &model.joints[joint];
            if let Some(l) = joint.limit.filter(|_| joint.kind != embodia_robots::JointKind::Continuous) {
                (lower[j], upper[j]) = (l.lower as f32, l.upper as f32);
            }
        }
        let default_pose = ik.pose(Pose::IDENTITY, default_q);
        let (rotation, home) = (top_down(default_pose.rotation), default_pose.translation);
        Self { ik, active: active.to_vec(), lower, upper, q: default_q.to_vec(), target: Vector::ZERO, rotation, home }
    }

    /// Starts from joint positions `q` (`[num_actuated]`): the target becomes the end
    /// effector's position there.
    pub fn reset(&mut self, q: &[f32]) {
        self.q.copy_from_slice(q);
        self.target = self.ik.pose(Pose::IDENTITY, q).translation;
    }

    /// The end-effector position target, base frame, m.
    pub fn target(&self) -> Vector {
        self.target
    }

    /// The end-effector position at the default joint positions, base frame, m.
    pub fn home(&self) -> Vector {
        self.home
    }

    /// The end-effector orientation held, base frame.
    pub fn rotation(&self) -> Rotation {
        self.rotation
    }

    /// Moves the target by `delta` (base frame, m), keeps it within [`MAX_LEAD`] of `measured`
    /// (the end effector's position now, base frame, m), solves the IK, and writes the position
    /// targets of the driven joints into `command` (`[num_actuated]`, rad or m).
    pub fn step(&mut self, delta: Vector, measured: Vector, command: &mut [f32]) {
        let lead = self.target + delta - measured;
        let length = lead.length();
        self.target = if length > MAX_LEAD { measured + lead * (MAX_LEAD / length) } else { measured + lead };
        let target =
            IkTarget { position: self.target, rotation: Some(self.rotation), rotation_weight: ROTATION_WEIGHT };
        self.ik.solve(Pose::IDENTITY, &target, &mut self.q, &self.active, &self.lower, &self.upper, IK_ITERATIONS);
        for &j in &self.active {
            command[j] = self.q[j];
        }
    }
}
