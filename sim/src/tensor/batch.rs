//! Tasks in batched form: state as `[num_envs]` columns, stepped by the generic dynamics.

use crate::classic::Quadrotor;
use crate::classic::quadrotor_tasks::{DT, POSITION_LIMIT, SUCCESS_FROM_STEP};
use crate::dynamics::cartpole::{self, CartPoleParams, CartPoleState};
use crate::dynamics::flight::{self, ACTION_DIM, OBS_DIM, Target};
use crate::dynamics::quadrotor::{self, QuadBody, QuadConstants, QuadState, Quat, STATE_DIM};
use crate::dynamics::{Vec3, pendulum};
use crate::{ActionSpec, BoxSpace, ObsSpec, TaskInfo};
use burn::tensor::{Bool, Device, Distribution, Tensor};
use embodia_robots::PendulumParams;

/// One value per environment, `[num_envs]`.
pub type Col = Tensor<1>;

/// What one batched step produced.
#[derive(Debug, Clone)]
pub struct BatchOutcome {
    /// State after the step, one column per state variable.
    pub state: Vec<Col>,
    /// Reward, `[num_envs]`.
    pub reward: Col,
    /// Where a terminal state was reached, `[num_envs]`.
    pub terminated: Tensor<1, Bool>,
    /// Where the success criterion holds, `[num_envs]`.
    pub success: Tensor<1, Bool>,
}

/// A task whose environments step together as tensor columns.
pub trait BatchTask: Send + 'static {
    /// Static task description.
    fn info(&self) -> &'static TaskInfo;
    /// Observation layout.
    fn obs_spec(&self) -> ObsSpec;
    /// Action layout.
    fn action_spec(&self) -> ActionSpec;
    /// Number of state columns.
    fn state_dim(&self) -> usize;
    /// `num_envs` initial states drawn from the device's generator, `state_dim` columns.
    fn sample_initial(&self, num_envs: usize, device: &Device) -> Vec<Col>;
    /// Observation columns (`obs_dim` of them) of `state` after `elapsed` steps of its
    /// episode (float `[num_envs]`), noise included.
    fn observe(&self, state: &[Col], elapsed: &Col) -> Vec<Col>;
    /// One control step under the action columns (`action_dim` of them); `elapsed` is the
    /// number of steps taken before it (float `[num_envs]`).
    fn step(&self, state: Vec<Col>, actions: Vec<Col>, elapsed: &Col) -> BatchOutcome;
}

/// Uniform in `[low, high)`; `low` everywhere when the range is empty.
fn uniform(n: usize, low: f32, high: f32, device: &Device) -> Col {
    if low >= high {
        return Tensor::full([n], low, device);
    }
    Tensor::random([n], Distribution::Uniform(f64::from(low), f64::from(high)), device)
}

fn normal(n: usize, sd: f32, device: &Device) -> Col {
    Tensor::random([n], Distribution::Normal(0.0, f64::from(sd)), device)
}

fn never(like: &Col) -> Tensor<1, Bool> {
    like.zeros_like().greater_elem(1.0)
}

/// gymnasium's `Pendulum-v1` as a batch (observation `[cos θ, sin θ, θ̇]`, torque action).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BatchPendulum {
    /// Physical constants.
    pub params: PendulumParams,
}

impl BatchTask for BatchPendulum {
    fn info(&self) -> &'static TaskInfo {
        &crate::classic::pendulum::INFO
    }
    fn obs_spec(&self) -> ObsSpec {
        let s = self.params.max_speed as f32;
        ObsSpec::vector(BoxSpace { low: vec![-1.0, -1.0, -s], high: vec![1.0, 1.0, s] })
    }
    fn action_spec(&self) -> ActionSpec {
        let t = self.params.max_torque as f32;
        ActionSpec { bounds: BoxSpace::uniform(1, -t, t) }
    }
    fn state_dim(&self) -> usize {
        2
    }
    fn sample_initial(&self, n: usize, device: &Device) -> Vec<Col> {
        use std::f32::consts::PI;
        vec![uniform(n, -PI, PI, device), uniform(n, -1.0, 1.0, device)]
    }
    fn observe(&self, s: &[Col], _elapsed: &Col) -> Vec<Col> {
        vec![s[0].clone().cos(), s[0].clone().sin(), s[1].clone()]
    }
    fn step(&self, state: Vec<Col>, actions: Vec<Col>, _elapsed: &Col) -> BatchOutcome {
        let [theta, theta_dot]: [Col; 2] = state.try_into().expect("two state columns");
        let u = actions.into_iter().next().expect("one action column");
        let (theta, theta_dot, cost) = pendulum::step(theta, theta_dot, u, &self.params);
        let terminated = never(&cost);
        BatchOutcome { state: vec![theta, theta_dot], reward: -cost, success: terminated.clone(), terminated }
    }
}

/// Which cart-pole task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CartPoleMode {
    /// Start near upright (every variable ±0.05); +1 per step; ends when |θ| > 12° or |x| > 2.4 m.
    Balance,
    /// Start hanging down (θ = π ± 0.05); reward `(1 + cos θ)/2` per step; ends when |x| > 2.4 m.
    SwingUp,
}

/// Continuous-force cart-pole as a batch; observation `[x, ẋ, cos θ, sin θ, θ̇]`, action a
/// force in `[-1, 1] · 10 N`, 500 steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchCartPole {
    /// Balance or swing-up.
    pub mode: CartPoleMode,
    /// Physical constants.
    pub params: CartPoleParams,
}

impl BatchCartPole {
    /// The task in `mode` with gymnasium's constants.
    pub fn new(mode: CartPoleMode) -> Self {
        Self { mode, params: CartPoleParams::default() }
    }
}

impl BatchTask for BatchCartPole {
    fn info(&self) -> &'static TaskInfo {
        match self.mode {
            CartPoleMode::Balance => &super::CARTPOLE_BALANCE_INFO,
            CartPoleMode::SwingUp => &super::CARTPOLE_SWINGUP_INFO,
        }
    }
    fn obs_spec(&self) -> ObsSpec {
        let high = vec![4.8, f32::INFINITY, 1.0, 1.0, f32::INFINITY];
        ObsSpec::vector(BoxSpace { low: high.iter().map(|h| -h).collect(), high })
    }
    fn action_spec(&self) -> ActionSpec {
        ActionSpec { bounds: BoxSpace::uniform(1, -1.0, 1.0) }
    }
    fn state_dim(&self) -> usize {
        4
    }
    fn sample_initial(&self, n: usize, device: &Device) -> Vec<Col> {
        let mut s: Vec<Col> = (0..4).map(|_| uniform(n, -0.05, 0.05, device)).collect();
        if self.mode == CartPoleMode::SwingUp {
            s[2] = s[2].clone() + std::f32::consts::PI;
        }
        s
    }
    fn observe(&self, s: &[Col], _elapsed: &Col) -> Vec<Col> {
        vec![s[0].clone(), s[1].clone(), s[2].clone().cos(), s[2].clone().sin(), s[3].clone()]
    }
    fn step(&self, state: Vec<Col>, actions: Vec<Col>, _elapsed: &Col) -> BatchOutcome {
        let [x, x_dot, theta, theta_dot]: [Col; 4] = state.try_into().expect("four state columns");
        let a = actions.into_iter().next().expect("one action column");
        let n = cartpole::step(&CartPoleState { x, x_dot, theta, theta_dot }, a, &self.params);
        let out_of_track = n.x.clone().abs().lower_equal_elem(2.4).bool_not();
        let (reward, terminated) = match self.mode {
            CartPoleMode::Balance => {
                let fallen = n.theta.clone().abs().lower_equal_elem(12f32.to_radians()).bool_not();
                (n.x.ones_like(), out_of_track.bool_or(fallen))
            }
            CartPoleMode::SwingUp => ((n.theta.clone().cos() + 1.0) * 0.5, out_of_track),
        };
        let success = never(&reward);
        BatchOutcome { state: vec![n.x, n.x_dot, n.theta, n.theta_dot], reward, terminated, success }
    }
}

/// A quadrotor task (see [`Quadrotor`]) as a batch. State columns: the 17 of [`QuadState`],
/// then mass, thrust coefficient, motor time constant, the previous action (4) and the
/// success flag (1.0 while the radius has held).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchQuadrotor(pub Quadrotor);

const QUAD_COLUMNS: usize = STATE_DIM + 3 + 4 + 1;

impl BatchQuadrotor {
    fn target(&self, time: &Col) -> Target<Col> {
        match self.0.mission {
            crate::classic::quadrotor_tasks::Mission::Hover => {
                let zero = time.zeros_like();
                let v = Vec3::new(zero.clone(), zero.clone(), zero);
                Target { position: v.clone(), velocity: v }
            }
            crate::classic::quadrotor_tasks::Mission::Track(f) => f.at(time.clone()),
        }
    }
}

fn split_quad(s: &[Col]) -> (QuadState<Col>, QuadBody<Col>) {
    let body = QuadState::from_array(std::array::from_fn(|k| s[k].clone()));
    let params = QuadBody {
        mass: s[STATE_DIM].clone(),
        thrust_coefficient: s[STATE_DIM + 1].clone(),
        motor_time_constant: s[STATE_DIM + 2].clone(),
    };
    (body, params)
}

impl BatchTask for BatchQuadrotor {
    fn info(&self) -> &'static TaskInfo {
        crate::classic::ClassicTask::info(&self.0)
    }
    fn obs_spec(&self) -> ObsSpec {
        crate::classic::ClassicTask::obs_spec(&self.0)
    }
    fn action_spec(&self) -> ActionSpec {
        crate::classic::ClassicTask::action_spec(&self.0)
    }
    fn state_dim(&self) -> usize {
        QUAD_COLUMNS
    }

    fn sample_initial(&self, n: usize, device: &Device) -> Vec<Col> {
        let (task, i) = (&self.0, &self.0.init);
        let start = self.target(&Tensor::zeros([n], device));
        let u = |r: f32| uniform(n, -r, r, device);
        let position = start.position.add(Vec3::new(u(i.position), u(i.position), u(i.position)));
        let velocity = start.velocity.add(Vec3::new(u(i.velocity), u(i.velocity), u(i.velocity)));
        let w = i.angular_velocity;
        let angular_velocity = Vec3::new(u(w), u(w), u(w));
        // Axis uniform on the sphere (normalized Gaussian), angle uniform in [0, max_angle].
        let axis = Vec3::new(normal(n, 1.0, device), normal(n, 1.0, device), normal(n, 1.0, device));
        let norm = axis.clone().norm_sq().sqrt().clamp(1e-6, f32::MAX);
        let half = uniform(n, 0.0, 0.5 * i.max_angle, device);
        let (c, s) = (half.clone().cos(), half.sin() / norm);
        let orientation = Quat { w: c, x: axis.x * s.clone(), y: axis.y * s.clone(), z: axis.z * s };
        let (r, p) = (&task.randomization, &task.params);
        let scale = |range: f32, nominal: f64| uniform(n, 1.0 - range, 1.0 + range, device) * nominal as f32;
        let mass = scale(r.mass, p.mass);
        let thrust_coefficient = scale(r.thrust_coefficient, p.thrust_coefficient);
        let motor_time_constant = scale(r.motor_time_constant, p.motor_time_constant);
        let hover_rpm = (mass.clone() * p.gravity as f32 / (thrust_coefficient.clone() * 4.0)).sqrt();
        let hover_action = hover_rpm.clone() * (2.0 / p.max_rpm as f32) - 1.0;
        let state = QuadState {
            position,
            orientation,
            velocity,
            angular_velocity,
            rpm: std::array::from_fn(|_| hover_rpm.clone()),
        };
        let mut cols: Vec<Col> = state.to_array().into();
        cols.extend([mass, thrust_coefficient, motor_time_constant]);
        cols.extend(std::iter::repeat_n(hover_action.clone(), 4));
        cols.push(hover_action.ones_like());
        cols
    }

    fn observe(&self, s: &[Col], elapsed: &Col) -> Vec<Col> {
        let (body, _) = split_quad(s);
        let n = elapsed.dims()[0];
        let device = elapsed.device();
        let clean = flight::observe_state(&body, &self.target(&(elapsed.clone() * DT)));
        let noise = self.0.noise.per_entry();
        let mut obs: Vec<Col> =
            clean.into_iter().zip(noise).map(|(c, sd)| if sd > 0.0 { c + normal(n, sd, &device) } else { c }).collect();
        obs.extend(flight::observe_rotors(&body, self.0.params.max_rpm as f32));
        obs.extend(s[STATE_DIM + 3..STATE_DIM + 7].iter().cloned());
        debug_assert_eq!(obs.len(), OBS_DIM);
        obs
    }

    fn step(&self, state: Vec<Col>, actions: Vec<Col>, elapsed: &Col) -> BatchOutcome {
        let task = &self.0;
        let c = QuadConstants::from(&task.params);
        let (body, params) = split_quad(&state);
        let a: [Col; ACTION_DIM] = std::array::from_fn(|i| actions[i].clone().clamp(-1.0, 1.0));
        let body = quadrotor::rk4_step(&body, &quadrotor::rpm_command(a.clone(), &c), &params, &c, DT);
        let after = elapsed.clone() + 1.0;
        let target = self.target(&(after.clone() * DT));
        let e = body.position.clone().sub(target.position.clone());
        let inside = |x: Col| x.abs().lower_equal_elem(POSITION_LIMIT);
        let terminated = inside(e.x.clone()).bool_and(inside(e.y.clone())).bool_and(inside(e.z.clone())).bool_not();
        let past = after.greater_equal_elem(SUCCESS_FROM_STEP as f32);
        let within = e.norm_sq().lower_elem(task.success_radius * task.success_radius);
        let held = state[QUAD_COLUMNS - 1].clone().greater_elem(0.5).bool_and(within.bool_or(past.clone().bool_not()));
        let success = held.clone().bool_and(past).bool_and(terminated.clone().bool_not());
        let prev: [Col; ACTION_DIM] = std::array::from_fn(|i| state[STATE_DIM + 3 + i].clone());
        let reward = flight::reward(&task.reward, &body, &target, &a, &prev, task.hover_throttle())
            .mask_fill(terminated.clone(), task.reward.termination);
        let mut cols: Vec<Col> = body.to_array().into();
        cols.extend([params.mass, params.thrust_coefficient, params.motor_time_constant]);
        cols.extend(a);
        cols.push(held.float());
        BatchOutcome { state: cols, reward, terminated, success }
    }
}
