//! Cart-pole with a continuous force, for any [`Scalar`]: gymnasium's `CartPole-v1` equations
//! of motion (Barto, Sutton & Anderson 1983; Florian 2007 corrected form without friction),
//! explicit Euler at 50 Hz, with the action a force in `[-1, 1] · force_mag` instead of ±force.
//!
//! State `(x, ẋ, θ, θ̇)`: cart position (m) and velocity, pole angle from upright (rad,
//! clockwise positive as in gymnasium) and angular velocity.

use super::scalar::Scalar;

/// Physical constants (gymnasium's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CartPoleParams {
    /// Gravitational acceleration, m/s².
    pub gravity: f32,
    /// Cart mass, kg.
    pub cart_mass: f32,
    /// Pole mass, kg.
    pub pole_mass: f32,
    /// Half the pole length, m.
    pub half_length: f32,
    /// Force at action 1, N.
    pub force_mag: f32,
    /// Step, s.
    pub dt: f32,
}

impl Default for CartPoleParams {
    fn default() -> Self {
        Self { gravity: 9.8, cart_mass: 1.0, pole_mass: 0.1, half_length: 0.5, force_mag: 10.0, dt: 0.02 }
    }
}

/// State of a cart-pole (see the module docs for units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CartPoleState<S> {
    /// Cart position, m.
    pub x: S,
    /// Cart velocity, m/s.
    pub x_dot: S,
    /// Pole angle from upright, rad.
    pub theta: S,
    /// Pole angular velocity, rad/s.
    pub theta_dot: S,
}

/// One Euler step under the normalized action `a` (clipped to `[-1, 1]`).
pub fn step<S: Scalar>(s: &CartPoleState<S>, a: S, p: &CartPoleParams) -> CartPoleState<S> {
    let force = a.clamp(-1.0, 1.0) * p.force_mag;
    let total_mass = p.cart_mass + p.pole_mass;
    let pole_ml = p.pole_mass * p.half_length;
    let (cos, sin) = (s.theta.clone().cos(), s.theta.clone().sin());
    let temp = (force + s.theta_dot.clone().square() * sin.clone() * pole_ml) / total_mass;
    let theta_acc = (sin * p.gravity - cos.clone() * temp.clone())
        / ((-(cos.clone().square()) * (p.pole_mass / total_mass) + 4.0 / 3.0) * p.half_length);
    let x_acc = temp - theta_acc.clone() * cos * (pole_ml / total_mass);
    CartPoleState {
        x: s.x.clone() + s.x_dot.clone() * p.dt,
        x_dot: s.x_dot.clone() + x_acc * p.dt,
        theta: s.theta.clone() + s.theta_dot.clone() * p.dt,
        theta_dot: s.theta_dot.clone() + theta_acc * p.dt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_gymnasium_cartpole_step() {
        // gymnasium CartPole-v1 from state (0.01, -0.02, 0.03, 0.04) with action 1 (force +10).
        let s = CartPoleState { x: 0.01f32, x_dot: -0.02, theta: 0.03, theta_dot: 0.04 };
        let n = step(&s, 1.0, &CartPoleParams::default());
        // Expected values computed from gymnasium's formulas in f64.
        let (g, mc, mp, l, f, tau) = (9.8f64, 1.0, 0.1, 0.5, 10.0, 0.02);
        let (x, xd, th, thd) = (0.01f64, -0.02f64, 0.03f64, 0.04f64);
        let temp = (f + mp * l * thd * thd * th.sin()) / (mc + mp);
        let thacc = (g * th.sin() - th.cos() * temp) / (l * (4.0 / 3.0 - mp * th.cos().powi(2) / (mc + mp)));
        let xacc = temp - mp * l * thacc * th.cos() / (mc + mp);
        let want = [x + tau * xd, xd + tau * xacc, th + tau * thd, thd + tau * thacc];
        for (got, want) in [n.x, n.x_dot, n.theta, n.theta_dot].iter().zip(want) {
            assert!((f64::from(*got) - want).abs() < 1e-6, "{got} vs {want}");
        }
    }

    #[test]
    fn pole_falls_away_from_upright_without_force() {
        let mut s = CartPoleState { x: 0.0f32, x_dot: 0.0, theta: 0.01, theta_dot: 0.0 };
        for _ in 0..50 {
            s = step(&s, 0.0, &CartPoleParams::default());
        }
        assert!(s.theta > 0.1, "{s:?}");
        assert!(s.x < 0.0, "the cart is pushed back as the pole falls forward: {s:?}");
    }
}
