//! gymnasium's `Pendulum-v1` step for any [`Scalar`], in `f32`.
//!
//! [`crate::classic::Pendulum`] keeps its own `f64` step, which reproduces gymnasium's numpy
//! arithmetic bit for bit (including the parts numpy computes in `f32`); this generic version
//! is the one tensor batches run, and a test holds it to the `f64` one.

use super::scalar::Scalar;
use embodia_robots::PendulumParams;

/// `((x + π) mod 2π) − π` with a floored modulo (gymnasium's `angle_normalize`), rad.
pub fn angle_normalize<S: Scalar>(x: S) -> S {
    use std::f32::consts::PI;
    let shifted = x.clone() + PI;
    x - (shifted / (2.0 * PI)).floor() * (2.0 * PI)
}

/// One step from `(θ, θ̇)` (rad, rad/s, θ = 0 upright) under torque `u` (N·m, clipped to the
/// limit): returns `(θ', θ̇', cost)` with gymnasium's cost `norm(θ)² + 0.1 θ̇² + 0.001 u²`.
pub fn step<S: Scalar>(theta: S, theta_dot: S, u: S, p: &PendulumParams) -> (S, S, S) {
    let (g, l, m, dt) = (p.g as f32, p.l as f32, p.m as f32, p.dt as f32);
    let u = u.clamp(-p.max_torque as f32, p.max_torque as f32);
    let an = angle_normalize(theta.clone());
    let cost = an.square() + theta_dot.clone().square() * 0.1 + u.clone().square() * 0.001;
    let accel = theta.clone().sin() * (3.0 * g / (2.0 * l)) + u * (3.0 / (m * l * l));
    let theta_dot = (theta_dot + accel * dt).clamp(-p.max_speed as f32, p.max_speed as f32);
    let theta = theta + theta_dot.clone() * dt;
    (theta, theta_dot, cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classic::pendulum::PendulumState;
    use crate::classic::{ClassicTask, Pendulum};
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn f32_step_follows_the_gymnasium_f64_step() {
        let task = Pendulum::default();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut reference = PendulumState { theta: 2.9, theta_dot: -0.4 };
        let (mut th, mut thd) = (2.9f32, -0.4f32);
        for k in 0..100 {
            let u = ((k * 37) % 9) as f32 * 0.6 - 2.4;
            let out = task.step(&mut reference, &[u], k, &mut rng);
            let (a, b, cost) = step(th, thd, u, &task.params);
            (th, thd) = (a, b);
            assert!((f64::from(th) - reference.theta).abs() < 1e-3, "step {k}: θ {th} vs {}", reference.theta);
            assert!((f64::from(thd) - reference.theta_dot).abs() < 1e-3);
            assert!((f64::from(-cost) - out.reward).abs() < 1e-3 * out.reward.abs().max(1.0));
        }
    }

    #[test]
    fn angle_normalize_wraps_into_minus_pi_to_pi() {
        use std::f32::consts::PI;
        assert!((angle_normalize(1.5 * PI) + 0.5 * PI).abs() < 1e-6);
        assert!((angle_normalize(-1.5 * PI) - 0.5 * PI).abs() < 1e-6);
        assert!((angle_normalize(0.3f32) - 0.3).abs() < 1e-7);
    }
}
