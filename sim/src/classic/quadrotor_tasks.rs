//! The quadrotor tasks of "Learning to Fly in Seconds": fly a Crazyflie 2.x by commanding its
//! four rotors directly, to a hover at the origin (`quadrotor-hover`) or along a figure-eight
//! (`quadrotor-track`).
//!
//! Dynamics, observation and reward are the generic ones of [`crate::dynamics::quadrotor`] and
//! [`crate::dynamics::flight`], here in `f32` for one environment at a time; the tensor
//! environments run the same functions on batches. Each episode draws its own mass, thrust
//! coefficient and motor time constant (domain randomization) and every observation gets
//! Gaussian noise. Control at 100 Hz, one RK4 step per control step.
//!
//! Episodes last 3 s (300 steps) and end early when the position error leaves a 0.6 m box
//! (L2F's termination bound). Success: the position error stays below the task's radius
//! (10 cm hover, 20 cm track) at every step from 2 s to the end of the episode.

use super::{ClassicTask, StepOutcome, uniform};
use crate::dynamics::flight::{self, ACTION_DIM, FigureEight, OBS_DIM, RewardWeights, Target};
use crate::dynamics::quadrotor::{self, QuadBody, QuadConstants, QuadState, Quat};
use crate::dynamics::{Scalar, Vec3};
use crate::{ActionSpec, BoxSpace, ObsSpec, SolveMetric, TaskInfo};
use embodia_robots::QuadrotorParams;
use rand_chacha::ChaCha8Rng;

/// Control (and integration) step, s: 100 Hz as in L2F.
pub const DT: f32 = 0.01;
/// Episode length in control steps (3 s).
pub const EPISODE_STEPS: u32 = 300;
/// Step from which the success radius must hold (2 s).
pub const SUCCESS_FROM_STEP: u32 = 200;
/// Half-width of the box the position error must stay in, m (beyond: terminated).
pub const POSITION_LIMIT: f32 = 0.6;

/// Registry entry of `quadrotor-hover`.
pub const HOVER_INFO: TaskInfo = TaskInfo {
    name: "quadrotor-hover",
    description: "Crazyflie rotor-level control: recover from a random state to a hover within 10 cm (Learning to Fly)",
    max_episode_steps: EPISODE_STEPS,
    solve_threshold: 0.95,
    has_success: true,
    solved_by: SolveMetric::SuccessRate,
};

/// Registry entry of `quadrotor-track`.
pub const TRACK_INFO: TaskInfo = TaskInfo {
    name: "quadrotor-track",
    description: "Crazyflie rotor-level control: follow a 1 m × 0.5 m figure-eight within 20 cm",
    max_episode_steps: EPISODE_STEPS,
    solve_threshold: 0.9,
    has_success: true,
    solved_by: SolveMetric::SuccessRate,
};

/// What the quadrotor flies to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mission {
    /// Hover at the origin.
    Hover,
    /// Follow a figure-eight that starts at the origin.
    Track(FigureEight),
}

/// Ranges of the initial-state distribution (each drawn uniformly).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InitialState {
    /// Position offset per axis, ± m.
    pub position: f32,
    /// Tilt: rotation angle about a random axis, at most this many rad.
    pub max_angle: f32,
    /// Velocity per axis, ± m/s.
    pub velocity: f32,
    /// Angular velocity per axis, ± rad/s.
    pub angular_velocity: f32,
}

/// Domain randomization: per-episode multipliers of the nominal parameters, drawn uniformly
/// from `[1 − r, 1 + r]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Randomization {
    /// Relative range of the mass.
    pub mass: f32,
    /// Relative range of the thrust coefficient.
    pub thrust_coefficient: f32,
    /// Relative range of the motor time constant.
    pub motor_time_constant: f32,
}

/// Standard deviations of the Gaussian observation noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObservationNoise {
    /// Position, m.
    pub position: f32,
    /// Each rotation matrix entry.
    pub orientation: f32,
    /// Linear velocity, m/s.
    pub velocity: f32,
    /// Angular velocity, rad/s.
    pub angular_velocity: f32,
}

impl ObservationNoise {
    /// Standard deviation of each of the 18 state observation entries.
    pub fn per_entry(&self) -> [f32; 18] {
        std::array::from_fn(|k| match k {
            0..3 => self.position,
            3..12 => self.orientation,
            12..15 => self.velocity,
            _ => self.angular_velocity,
        })
    }
}

/// A quadrotor task: robot, mission and the distributions episodes are drawn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quadrotor {
    /// Nominal robot parameters.
    pub params: QuadrotorParams,
    /// Hover or track.
    pub mission: Mission,
    /// Initial-state ranges.
    pub init: InitialState,
    /// Domain randomization ranges.
    pub randomization: Randomization,
    /// Observation noise.
    pub noise: ObservationNoise,
    /// Success radius, m.
    pub success_radius: f32,
    /// Reward terms.
    pub reward: RewardWeights,
}

impl Quadrotor {
    /// `quadrotor-hover`: starts within ±0.2 m (L2F's range), ±0.5 m/s, ±0.5 rad/s and tilted
    /// up to 20° (L2F: ±1 m/s, ±1 rad/s, 90°); ±10 % mass and thrust coefficient, ±20 % motor
    /// time constant; small sensor noise; L2F's reward plus a distance term
    /// ([`RewardWeights::L2F_WITH_DISTANCE`]).
    pub fn hover() -> Self {
        Self {
            params: QuadrotorParams::CRAZYFLIE,
            mission: Mission::Hover,
            init: InitialState { position: 0.2, max_angle: 20f32.to_radians(), velocity: 0.5, angular_velocity: 0.5 },
            randomization: Randomization { mass: 0.1, thrust_coefficient: 0.1, motor_time_constant: 0.2 },
            noise: ObservationNoise { position: 0.001, orientation: 0.001, velocity: 0.002, angular_velocity: 0.002 },
            success_radius: 0.1,
            reward: RewardWeights::L2F_WITH_DISTANCE,
        }
    }

    /// `quadrotor-track`: the hover task's randomization and noise, starting near the origin
    /// (±5 cm, ±0.2 m/s, tilts up to 10°) on the default [`FigureEight`], 20 cm radius.
    pub fn track() -> Self {
        Self {
            mission: Mission::Track(FigureEight::default()),
            init: InitialState { position: 0.05, max_angle: 10f32.to_radians(), velocity: 0.2, angular_velocity: 0.5 },
            success_radius: 0.2,
            ..Self::hover()
        }
    }

    /// Nominal relative hover throttle `rpm_hover / max_rpm` (the reward's reference).
    pub fn hover_throttle(&self) -> f32 {
        (self.params.hover_rpm() / self.params.max_rpm) as f32
    }

    /// The target at time `t` s.
    pub fn target(&self, t: f32) -> Target<f32> {
        match self.mission {
            Mission::Hover => {
                let zero = Vec3::new(0.0, 0.0, 0.0);
                Target { position: zero, velocity: zero }
            }
            Mission::Track(f) => f.at(t),
        }
    }

    fn draw_noise(&self, rng: &mut ChaCha8Rng) -> [f32; 18] {
        self.noise.per_entry().map(|sd| sd * normal(rng))
    }
}

impl Default for Quadrotor {
    /// Same as [`Quadrotor::hover`].
    fn default() -> Self {
        Self::hover()
    }
}

/// Standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f32 {
    let u1 = uniform(rng, f64::MIN_POSITIVE, 1.0);
    let u2 = uniform(rng, 0.0, 1.0);
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// State of one quadrotor environment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadrotorState {
    /// Rigid body and rotors.
    pub body: QuadState<f32>,
    /// This episode's randomized parameters.
    pub params: QuadBody<f32>,
    /// Previous normalized action (clipped to `[-1, 1]`).
    pub prev_action: [f32; 4],
    /// Time since the episode started, s.
    pub time: f32,
    /// Whether the position error stayed within the success radius at every step since
    /// [`SUCCESS_FROM_STEP`].
    pub held: bool,
    /// Noise added to the current observation's 18 state entries.
    pub noise: [f32; 18],
}

/// Flat length of [`QuadrotorState`].
const FLAT_DIM: usize = quadrotor::STATE_DIM + 3 + 4 + 2 + 18;

impl ClassicTask for Quadrotor {
    type State = QuadrotorState;
    const STATE_DIM: usize = FLAT_DIM;
    const OBS_DIM: usize = OBS_DIM;
    const ACTION_DIM: usize = ACTION_DIM;

    fn info(&self) -> &'static TaskInfo {
        match self.mission {
            Mission::Hover => &HOVER_INFO,
            Mission::Track(_) => &TRACK_INFO,
        }
    }

    fn obs_spec(&self) -> ObsSpec {
        // Unbounded: every entry carries Gaussian sensor noise, so even the rotation matrix's
        // entries (|x| ≤ 1 in truth) and the position at the edge of its 0.6 m box leave any
        // finite range now and then; a declared bound must hold for every observation.
        ObsSpec::vector(BoxSpace::uniform(OBS_DIM, f32::NEG_INFINITY, f32::INFINITY))
    }

    fn action_spec(&self) -> ActionSpec {
        ActionSpec { bounds: BoxSpace::uniform(ACTION_DIM, -1.0, 1.0) }
    }

    fn sample_initial(&self, rng: &mut ChaCha8Rng) -> QuadrotorState {
        let i = &self.init;
        let mut u = |r: f32| uniform(rng, -f64::from(r), f64::from(r)) as f32;
        let start = self.target(0.0);
        let position = start.position.add(Vec3::new(u(i.position), u(i.position), u(i.position)));
        let velocity = start.velocity.add(Vec3::new(u(i.velocity), u(i.velocity), u(i.velocity)));
        let angular_velocity = Vec3::new(u(i.angular_velocity), u(i.angular_velocity), u(i.angular_velocity));
        // A random axis (not uniform on the sphere; any direction is possible) and angle.
        let axis = loop {
            let a = Vec3::new(u(1.0), u(1.0), u(1.0));
            let n = a.norm_sq();
            if n > 1e-4 && n <= 1.0 {
                break a.scale_f(1.0 / n.sqrt());
            }
        };
        let half = 0.5 * uniform(rng, 0.0, f64::from(i.max_angle)) as f32;
        let orientation =
            Quat { w: half.cos(), x: axis.x * half.sin(), y: axis.y * half.sin(), z: axis.z * half.sin() };
        let r = &self.randomization;
        let p = &self.params;
        let mut scale = |range: f32| 1.0 + uniform(rng, -f64::from(range), f64::from(range)) as f32;
        let params = QuadBody {
            mass: p.mass as f32 * scale(r.mass),
            thrust_coefficient: p.thrust_coefficient as f32 * scale(r.thrust_coefficient),
            motor_time_constant: p.motor_time_constant as f32 * scale(r.motor_time_constant),
        };
        // Rotors start at this body's hover speed, with the previous action to match.
        let hover_rpm = (params.mass * p.gravity as f32 / (4.0 * params.thrust_coefficient)).sqrt();
        let hover_action = 2.0 * hover_rpm / p.max_rpm as f32 - 1.0;
        QuadrotorState {
            body: QuadState { position, orientation, velocity, angular_velocity, rpm: [hover_rpm; 4] },
            params,
            prev_action: [hover_action; 4],
            time: 0.0,
            held: true,
            noise: self.draw_noise(rng),
        }
    }

    fn observe(&self, s: &QuadrotorState, obs: &mut [f32]) {
        let clean = flight::observe_state(&s.body, &self.target(s.time));
        for ((o, c), n) in obs.iter_mut().zip(clean).zip(s.noise) {
            *o = c + n;
        }
        obs[18..22].copy_from_slice(&flight::observe_rotors(&s.body, self.params.max_rpm as f32));
        obs[22..26].copy_from_slice(&s.prev_action);
    }

    fn step(&self, s: &mut QuadrotorState, action: &[f32], elapsed: u32, rng: &mut ChaCha8Rng) -> StepOutcome {
        let c = QuadConstants::from(&self.params);
        let a: [f32; 4] = std::array::from_fn(|i| action[i].clamp(-1.0, 1.0));
        s.body = quadrotor::rk4_step(&s.body, &quadrotor::rpm_command(a, &c), &s.params, &c, DT);
        s.time = (elapsed + 1) as f32 * DT;
        let prev = std::mem::replace(&mut s.prev_action, a);
        s.noise = self.draw_noise(rng);
        let target = self.target(s.time);
        let error = s.body.position.sub(target.position);
        let terminated = [error.x, error.y, error.z].iter().any(|e| !(e.abs() <= POSITION_LIMIT));
        if elapsed + 1 >= SUCCESS_FROM_STEP {
            s.held &= error.norm_sq() < self.success_radius.square();
        }
        let reward = if terminated {
            self.reward.termination
        } else {
            flight::reward(&self.reward, &s.body, &target, &a, &prev, self.hover_throttle())
        };
        StepOutcome {
            reward: f64::from(reward),
            terminated,
            success: !terminated && s.held && elapsed + 1 >= SUCCESS_FROM_STEP,
        }
    }

    fn state_to_f64(&self, s: &QuadrotorState, out: &mut [f64]) {
        let flat = s.body.to_array().into_iter().chain([
            s.params.mass,
            s.params.thrust_coefficient,
            s.params.motor_time_constant,
        ]);
        let flat = flat.chain(s.prev_action).chain([s.time, f32::from(u8::from(s.held))]).chain(s.noise);
        for (o, v) in out.iter_mut().zip(flat) {
            *o = f64::from(v);
        }
    }

    fn state_from_f64(&self, v: &[f64]) -> QuadrotorState {
        let f = |k: usize| v[k] as f32;
        let n = quadrotor::STATE_DIM;
        QuadrotorState {
            body: QuadState::from_array(std::array::from_fn(f)),
            params: QuadBody { mass: f(n), thrust_coefficient: f(n + 1), motor_time_constant: f(n + 2) },
            prev_action: std::array::from_fn(|i| f(n + 3 + i)),
            time: f(n + 7),
            held: v[n + 8] > 0.5,
            noise: std::array::from_fn(|i| f(n + 9 + i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecEnv;
    use crate::classic::QuadrotorEnv;

    #[test]
    fn holding_the_hover_command_from_rest_succeeds() {
        let mut task = Quadrotor::hover();
        task.init = InitialState { position: 0.0, max_angle: 0.0, velocity: 0.0, angular_velocity: 0.0 };
        task.randomization = Randomization { mass: 0.0, thrust_coefficient: 0.0, motor_time_constant: 0.0 };
        let mut env = QuadrotorEnv::with_task(task, 2).unwrap();
        let hover = 2.0 * task.hover_throttle() - 1.0;
        let actions = vec![hover; 8];
        let mut successes = 0;
        for step in 0..EPISODE_STEPS {
            env.step(&actions).unwrap();
            let b = env.buffers();
            assert_eq!(b.terminated, [0.0, 0.0], "step {step}");
            assert!(b.reward[0] > 0.99, "reward {} at step {step}", b.reward[0]);
            successes += b.success[0] as u32;
        }
        assert_eq!(successes, EPISODE_STEPS - SUCCESS_FROM_STEP + 1);
        assert_eq!(env.buffers().episode_length[0], EPISODE_STEPS);
    }

    #[test]
    fn rotors_off_falls_out_of_the_box_and_fails() {
        let mut env = QuadrotorEnv::new(4).unwrap();
        let actions = vec![-1.0; 16];
        let mut ended = [false; 4];
        for _ in 0..100 {
            env.step(&actions).unwrap();
            let b = env.buffers();
            for (i, ended) in ended.iter_mut().enumerate() {
                if b.terminated[i] > 0.0 {
                    *ended = true;
                    assert_eq!(b.success[i], 0.0);
                }
            }
        }
        assert_eq!(ended, [true; 4], "falling 0.6 m takes about 0.35 s");
    }

    #[test]
    fn episodes_randomize_the_body_and_observations_are_noisy() {
        let env = QuadrotorEnv::new(3).unwrap();
        let snap = env.snapshot();
        let masses: Vec<f64> = (0..3).map(|i| snap.state[i * FLAT_DIM + quadrotor::STATE_DIM]).collect();
        assert!(masses[0] != masses[1] && masses.iter().all(|m| (m / 0.027 - 1.0).abs() <= 0.1 + 1e-6), "{masses:?}");
        // Observation = clean state + the stored noise: noise is present and small.
        let s = env.task().state_from_f64(&snap.state[..FLAT_DIM]);
        let clean = flight::observe_state(&s.body, &env.task().target(0.0));
        let obs = &env.buffers().obs[..OBS_DIM];
        let diff: Vec<f32> = obs.iter().zip(clean).map(|(o, c)| o - c).collect();
        assert!(diff.iter().any(|d| *d != 0.0) && diff.iter().all(|d| d.abs() < 0.02), "{diff:?}");
    }

    #[test]
    fn snapshot_round_trip_continues_the_same_rollout() {
        let mut a = QuadrotorEnv::with_task(Quadrotor::track(), 3).unwrap();
        let actions: Vec<f32> = (0..12).map(|k| ((k * 7) % 5) as f32 * 0.2 - 0.3).collect();
        a.step(&actions).unwrap();
        let snap = a.snapshot();
        let mut b = QuadrotorEnv::with_task(Quadrotor::track(), 3).unwrap();
        b.restore(&snap).unwrap();
        for _ in 0..5 {
            a.step(&actions).unwrap();
            b.step(&actions).unwrap();
            assert_eq!(a.buffers().obs, b.buffers().obs);
            assert_eq!(a.buffers().reward, b.buffers().reward);
        }
    }
}
