//! gymnasium's `Pendulum-v1`: swing a torque-limited pendulum up and balance it.
//!
//! State `(θ, θ̇)` in rad and rad/s, θ = 0 upright; observation `[cos θ, sin θ, θ̇]`; action
//! `[τ]` in N·m, clipped to `±2`; reward `-(norm(θ)² + 0.1 θ̇² + 0.001 τ²)` with `norm` wrapping
//! to `[-π, π)` and τ the clipped torque; 200-step time limit, no terminal state.
//!
//! The arithmetic follows gymnasium 1.x under numpy 2 operation for operation, including the
//! parts numpy computes in `f32` because the action is an `f32` array (`τ²·0.001` and `3τ`).

use super::{ClassicTask, StepOutcome, uniform};
use crate::{ActionSpec, BoxSpace, ObsSpec, SolveMetric, TaskInfo};
use embodia_robots::PendulumParams;
use rand_chacha::ChaCha8Rng;
use std::f64::consts::PI;

/// Registry entry of the `pendulum` task.
pub const INFO: TaskInfo = TaskInfo {
    name: "pendulum",
    description: "swing up and balance a torque-limited pendulum (gymnasium Pendulum-v1)",
    max_episode_steps: 200,
    solve_threshold: -200.0,
    has_success: false,
    solved_by: SolveMetric::Return,
};

/// State of one pendulum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendulumState {
    /// Angle from upright, rad, counter-clockwise positive (not wrapped).
    pub theta: f64,
    /// Angular velocity, rad/s.
    pub theta_dot: f64,
}

/// The pendulum task, with its physical parameters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pendulum {
    /// Physical constants; the default is gymnasium's.
    pub params: PendulumParams,
}

/// `((x + π) mod 2π) - π` with Python's (floored) modulo, as gymnasium's `angle_normalize`.
fn angle_normalize(x: f64) -> f64 {
    let b = 2.0 * PI;
    let mut m = (x + PI) % b;
    if m < 0.0 {
        m += b;
    }
    m - PI
}

impl ClassicTask for Pendulum {
    type State = PendulumState;
    const STATE_DIM: usize = 2;
    const OBS_DIM: usize = 3;
    const ACTION_DIM: usize = 1;

    fn info(&self) -> &'static TaskInfo {
        &INFO
    }

    fn obs_spec(&self) -> ObsSpec {
        let s = self.params.max_speed as f32;
        ObsSpec::vector(BoxSpace { low: vec![-1.0, -1.0, -s], high: vec![1.0, 1.0, s] })
    }

    fn action_spec(&self) -> ActionSpec {
        let t = self.params.max_torque as f32;
        ActionSpec { bounds: BoxSpace::uniform(1, -t, t) }
    }

    /// θ ~ U[-π, π), θ̇ ~ U[-1, 1).
    fn sample_initial(&self, rng: &mut ChaCha8Rng) -> PendulumState {
        let theta = uniform(rng, -PI, PI);
        let theta_dot = uniform(rng, -1.0, 1.0);
        PendulumState { theta, theta_dot }
    }

    fn observe(&self, s: &PendulumState, obs: &mut [f32]) {
        obs[0] = s.theta.cos() as f32;
        obs[1] = s.theta.sin() as f32;
        obs[2] = s.theta_dot as f32;
    }

    fn step(&self, s: &mut PendulumState, action: &[f32], _elapsed: u32, _rng: &mut ChaCha8Rng) -> StepOutcome {
        let p = &self.params;
        let (th, thdot) = (s.theta, s.theta_dot);
        // np.clip on an f32 array: bounds cast to f32.
        let max_torque = p.max_torque as f32;
        let u = action[0].clamp(-max_torque, max_torque);
        // `0.001 * (u**2)` is f32 arithmetic in numpy 2 (weak Python scalar).
        let ctrl_cost = 0.001_f32 * (u * u);
        let an = angle_normalize(th);
        let costs = an * an + 0.1 * (thdot * thdot) + f64::from(ctrl_cost);
        // `3.0 / (m * l**2) * u` is f32 arithmetic too.
        let torque_term = (3.0 / (p.m * (p.l * p.l))) as f32 * u;
        let mut newthdot = thdot + (3.0 * p.g / (2.0 * p.l) * th.sin() + f64::from(torque_term)) * p.dt;
        newthdot = newthdot.clamp(-p.max_speed, p.max_speed);
        let newth = th + newthdot * p.dt;
        *s = PendulumState { theta: newth, theta_dot: newthdot };
        StepOutcome { reward: -costs, terminated: false, success: false }
    }

    fn state_to_f64(&self, s: &PendulumState, out: &mut [f64]) {
        out[0] = s.theta;
        out[1] = s.theta_dot;
    }

    fn state_from_f64(&self, v: &[f64]) -> PendulumState {
        PendulumState { theta: v[0], theta_dot: v[1] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_normalize_matches_python_modulo() {
        // Values computed with Python: ((x + math.pi) % (2 * math.pi)) - math.pi
        assert_eq!(angle_normalize(0.0), 0.0);
        assert!((angle_normalize(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-15);
        assert!((angle_normalize(-3.0 * PI / 2.0) - PI / 2.0).abs() < 1e-15);
        assert_eq!(angle_normalize(PI), -PI);
        assert_eq!(angle_normalize(-PI), -PI);
    }

    #[test]
    fn clipping_of_torque_and_speed() {
        let task = Pendulum::default();
        let mut s = PendulumState { theta: 0.0, theta_dot: 7.9 };
        let out = task.step(&mut s, &[100.0], 0, &mut rand_chacha::rand_core::SeedableRng::seed_from_u64(0));
        assert_eq!(s.theta_dot, 8.0);
        // Torque clipped to 2: ctrl cost 0.004 (in f32).
        let expect = -(0.1 * 7.9 * 7.9 + f64::from(0.001_f32 * 4.0));
        assert_eq!(out.reward, expect);
    }
}
