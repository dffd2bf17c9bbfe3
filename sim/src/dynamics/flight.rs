//! What the quadrotor tasks observe and how they score, after "Learning to Fly in Seconds"
//! (Eschmann et al. 2024), written once for any [`Scalar`].
//!
//! Observation, `[22]`: position error `p − p_target` (m, 3), rotation matrix body→world
//! row-major (9), velocity error `v − v_target` (m/s, 3), body angular velocity (rad/s, 3) and
//! the previous normalized action (4).
//!
//! Reward, L2F's `squared` function: `1 − 0.1 · (10 ‖e_p‖² + 2.5 (1 − q_w²) + 0.005 ‖e_v‖²
//! + 0.1 Σ_i (u_i − u_hover)²)` with `u = (a + 1)/2` the relative throttle and `u_hover` its
//! nominal hover value; the constant 1 makes staying alive worth more than crashing early.

use super::quadrotor::QuadState;
use super::scalar::{Scalar, Vec3};

/// Observation dimension.
pub const OBS_DIM: usize = 22;
/// Action dimension: one normalized command per rotor.
pub const ACTION_DIM: usize = 4;

/// Where the quadrotor should be and how fast it should move there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target<S> {
    /// Target position, world frame, m.
    pub position: Vec3<S>,
    /// Target velocity, world frame, m/s.
    pub velocity: Vec3<S>,
}

/// A horizontal figure-eight (Lissajous 1:2) through the origin:
/// `x = a sin(2π t/T)`, `y = (b/2) sin(4π t/T)`, `z = 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FigureEight {
    /// Half-width along x, m.
    pub a: f32,
    /// Half-width along y of each lobe pair (peak |y| is b/2), m.
    pub b: f32,
    /// Period, s.
    pub period: f32,
}

impl Default for FigureEight {
    /// 1 m × 0.5 m, one loop per 6 s (peak speed ≈ 0.7 m/s).
    fn default() -> Self {
        Self { a: 0.5, b: 0.5, period: 6.0 }
    }
}

impl FigureEight {
    /// The target at time `t` seconds.
    pub fn at<S: Scalar>(&self, t: S) -> Target<S> {
        let w = 2.0 * std::f32::consts::PI / self.period;
        let phase = t * w;
        let phase2 = phase.clone() * 2.0;
        let zero = phase.splat(0.0);
        Target {
            position: Vec3::new(phase.clone().sin() * self.a, phase2.clone().sin() * (0.5 * self.b), zero.clone()),
            velocity: Vec3::new(phase.cos() * (self.a * w), phase2.cos() * (self.b * w), zero),
        }
    }
}

/// The state part of the observation (everything but the previous action), `[18]`.
pub fn observe_state<S: Scalar>(s: &QuadState<S>, target: &Target<S>) -> [S; 18] {
    let e = s.position.clone().sub(target.position.clone());
    let v = s.velocity.clone().sub(target.velocity.clone());
    let r = s.orientation.matrix();
    let w = s.angular_velocity.clone();
    let [r0, r1, r2, r3, r4, r5, r6, r7, r8] = r;
    [e.x, e.y, e.z, r0, r1, r2, r3, r4, r5, r6, r7, r8, v.x, v.y, v.z, w.x, w.y, w.z]
}

/// L2F's weighted cost of being in `s` after taking the normalized `action`; the reward is
/// `1 − 0.1 · cost` (see the module docs). `hover_throttle` is the nominal `u_hover`.
pub fn cost<S: Scalar>(s: &QuadState<S>, target: &Target<S>, action: &[S; 4], hover_throttle: f32) -> S {
    let e = s.position.clone().sub(target.position.clone()).norm_sq();
    let v = s.velocity.clone().sub(target.velocity.clone()).norm_sq();
    let tilt = -s.orientation.w.clone().square() + 1.0;
    let throttle = action
        .iter()
        .map(|a| ((a.clone().clamp(-1.0, 1.0) + 1.0) * 0.5 - hover_throttle).square())
        .reduce(|x, y| x + y)
        .expect("four rotors");
    e * 10.0 + tilt * 2.5 + v * 0.005 + throttle * 0.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::quadrotor::Quat;

    #[test]
    fn figure_eight_velocity_is_the_derivative_of_its_position() {
        let f = FigureEight::default();
        let (t, h) = (1.3f32, 1e-3f32);
        let (a, b, c) = (f.at(t - h), f.at(t + h), f.at(t));
        let dx = (b.position.x - a.position.x) / (2.0 * h);
        let dy = (b.position.y - a.position.y) / (2.0 * h);
        assert!((dx - c.velocity.x).abs() < 1e-2 && (dy - c.velocity.y).abs() < 1e-2);
        let start = f.at(0.0f32);
        assert_eq!((start.position.x, start.position.y), (0.0, 0.0));
    }

    #[test]
    fn cost_is_zero_only_at_hover_on_target() {
        let zero = Vec3::new(0.0f32, 0.0, 0.0);
        let s = QuadState {
            position: zero,
            orientation: Quat { w: 1.0, x: 0.0, y: 0.0, z: 0.0 },
            velocity: zero,
            angular_velocity: zero,
            rpm: [0.0; 4],
        };
        let target = Target { position: zero, velocity: zero };
        let hover = 0.667;
        let a_hover = 2.0 * hover - 1.0;
        assert!(cost(&s, &target, &[a_hover; 4], hover).abs() < 1e-10);
        let mut off = s;
        off.position.x = 0.1;
        assert!((cost(&off, &target, &[a_hover; 4], hover) - 0.1).abs() < 1e-6);
    }
}
