//! gymnasium's `MountainCarContinuous-v0`: drive an under-powered car up a hill.
//!
//! State `(x, v)`: position on the track (goal at `x ≥ 0.45`) and velocity per step; the hill
//! is `sin(3x)`. Observation `[x, v]`; action `[a]`, the force is `a` clipped to `[-1, 1]`;
//! reward `100·[goal reached] - 0.1·a²` with the **unclipped** `a`; terminated at the goal
//! (`x ≥ 0.45` and `v ≥ 0`), truncated after 999 steps. Initial `x ~ U[-0.6, -0.4)`, `v = 0`.
//!
//! gymnasium stores the state as `f32` after every step while the initial state is `f64`, and
//! numpy 2 then does parts of the step in `f32`; this module reproduces that operation for
//! operation: the first step of an episode runs on the `f64` initial state, every later step
//! in `f32` except `cos(3x)` and the clipped-force term, which Python computes in `f64`.

use super::{ClassicTask, StepOutcome, uniform};
use crate::{ActionSpec, BoxSpace, ObsSpec, SolveMetric, TaskInfo};
use rand_chacha::ChaCha8Rng;

/// Registry entry of the `mountain-car-continuous` task.
pub const INFO: TaskInfo = TaskInfo {
    name: "mountain-car-continuous",
    description: "drive an under-powered car up a hill (gymnasium MountainCarContinuous-v0)",
    max_episode_steps: 999,
    solve_threshold: 90.0,
    has_success: true,
    solved_by: SolveMetric::Return,
};

const MIN_ACTION: f64 = -1.0;
const MAX_ACTION: f64 = 1.0;
const MIN_POSITION: f64 = -1.2;
const MAX_POSITION: f64 = 0.6;
const MAX_SPEED: f64 = 0.07;
const GOAL_POSITION: f64 = 0.45;
const POWER: f64 = 0.0015;

/// State of one car.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MountainCarState {
    /// Position along the track, in `[-1.2, 0.6]`.
    pub position: f64,
    /// Velocity, position units per step, in `[-0.07, 0.07]`.
    pub velocity: f64,
}

/// The continuous mountain-car task (gymnasium's constants, `goal_velocity = 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MountainCarContinuous;

/// Result of `force * power - 0.0025 * cos(3x)`: `f32` when the force is the (in-bounds) `f32`
/// action, `f64` when it was clipped to a Python float.
enum Accel {
    F32(f32),
    F64(f64),
}

fn accel(a: f32, cos3x: f64) -> Accel {
    if f64::from(a) < MIN_ACTION || f64::from(a) > MAX_ACTION {
        let force = if f64::from(a) < MIN_ACTION { MIN_ACTION } else { MAX_ACTION };
        Accel::F64(force * POWER - 0.0025 * cos3x)
    } else {
        Accel::F32(a * POWER as f32 - (0.0025 * cos3x) as f32)
    }
}

fn step_f64(x: f64, v: f64, a: f32) -> (f64, f64, bool) {
    let dv = match accel(a, (3.0 * x).cos()) {
        Accel::F32(d) => f64::from(d),
        Accel::F64(d) => d,
    };
    let mut v = v + dv;
    v = v.clamp(-MAX_SPEED, MAX_SPEED);
    let mut x = x + v;
    x = x.clamp(MIN_POSITION, MAX_POSITION);
    if x == MIN_POSITION && v < 0.0 {
        v = 0.0;
    }
    let terminated = x >= GOAL_POSITION && v >= 0.0;
    (x, v, terminated)
}

fn step_f32(x: f32, v: f32, a: f32) -> (f32, f32, bool) {
    let dv = match accel(a, f64::from(3.0_f32 * x).cos()) {
        Accel::F32(d) => d,
        Accel::F64(d) => d as f32,
    };
    let mut v = v + dv;
    v = v.clamp(-MAX_SPEED as f32, MAX_SPEED as f32);
    let mut x = x + v;
    x = x.clamp(MIN_POSITION as f32, MAX_POSITION as f32);
    if x == MIN_POSITION as f32 && v < 0.0 {
        v = 0.0;
    }
    let terminated = x >= GOAL_POSITION as f32 && v >= 0.0;
    (x, v, terminated)
}

impl ClassicTask for MountainCarContinuous {
    type State = MountainCarState;
    const STATE_DIM: usize = 2;
    const OBS_DIM: usize = 2;
    const ACTION_DIM: usize = 1;

    fn info(&self) -> &'static TaskInfo {
        &INFO
    }

    fn obs_spec(&self) -> ObsSpec {
        ObsSpec::vector(BoxSpace {
            low: vec![MIN_POSITION as f32, -MAX_SPEED as f32],
            high: vec![MAX_POSITION as f32, MAX_SPEED as f32],
        })
    }

    fn action_spec(&self) -> ActionSpec {
        ActionSpec { bounds: BoxSpace::uniform(1, MIN_ACTION as f32, MAX_ACTION as f32) }
    }

    /// x ~ U[-0.6, -0.4), v = 0.
    fn sample_initial(&self, rng: &mut ChaCha8Rng) -> MountainCarState {
        MountainCarState { position: uniform(rng, -0.6, -0.4), velocity: 0.0 }
    }

    fn observe(&self, s: &MountainCarState, obs: &mut [f32]) {
        obs[0] = s.position as f32;
        obs[1] = s.velocity as f32;
    }

    /// The first step of an episode (`elapsed == 0`) uses the state at full `f64` precision,
    /// like gymnasium right after `reset`; later steps use it rounded to `f32`, like gymnasium's
    /// stored state.
    fn step(&self, s: &mut MountainCarState, action: &[f32], elapsed: u32, _rng: &mut ChaCha8Rng) -> StepOutcome {
        let a = action[0];
        let (x, v, terminated) = if elapsed == 0 {
            step_f64(s.position, s.velocity, a)
        } else {
            let (x, v, t) = step_f32(s.position as f32, s.velocity as f32, a);
            (f64::from(x), f64::from(v), t)
        };
        // gymnasium stores `np.array([position, velocity], dtype=np.float32)`.
        *s = MountainCarState { position: f64::from(x as f32), velocity: f64::from(v as f32) };
        let a64 = f64::from(a);
        let base = if terminated { 100.0 } else { 0.0 };
        StepOutcome { reward: base - a64 * a64 * 0.1, terminated, success: terminated }
    }

    fn state_to_f64(&self, s: &MountainCarState, out: &mut [f64]) {
        out[0] = s.position;
        out[1] = s.velocity;
    }

    fn state_from_f64(&self, v: &[f64]) -> MountainCarState {
        MountainCarState { position: v[0], velocity: v[1] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_wall_stops_the_car() {
        let task = MountainCarContinuous;
        let mut s = MountainCarState { position: -1.19, velocity: -0.05 };
        let out = task.step(&mut s, &[-1.0], 1, &mut rand_chacha::rand_core::SeedableRng::seed_from_u64(0));
        assert_eq!(s.position, f64::from(-1.2_f32));
        assert_eq!(s.velocity, 0.0);
        assert!(!out.terminated);
    }

    #[test]
    fn goal_terminates_with_bonus_and_unclipped_action_cost() {
        let task = MountainCarContinuous;
        let mut s = MountainCarState { position: 0.44, velocity: 0.03 };
        let out = task.step(&mut s, &[3.0], 5, &mut rand_chacha::rand_core::SeedableRng::seed_from_u64(0));
        assert!(out.terminated && out.success);
        assert_eq!(out.reward, 100.0 - 9.0 * 0.1);
    }

    #[test]
    fn velocity_is_clipped() {
        let task = MountainCarContinuous;
        let mut s = MountainCarState { position: -0.5, velocity: 0.0699 };
        task.step(&mut s, &[1.0], 3, &mut rand_chacha::rand_core::SeedableRng::seed_from_u64(0));
        assert_eq!(s.velocity, f64::from(0.07_f32));
    }
}
