//! The safety layer between the policy and the robot.
//!
//! Every goal the policy asks for passes [`Safety::filter`]: non-finite values hold the arm,
//! positions are clamped into the joint limits (less a margin), and the change from the last
//! goal is clamped to the per-cycle step and the joint velocity limit. A cycle without fresh
//! state (a failed read, or state older than `watchdog_periods` control periods when the goal
//! would be sent) sends nothing: the servos keep their last goal, which is within one step of
//! where they were last seen. Without fresh state for `disable_after`, torque goes off. Error
//! bits in the servos' replies, low voltage, high temperature or overload, and a stop request
//! (Ctrl-C, SIGTERM) are a safe stop: hold where the arm is, then torque off, latched until
//! [`Safety::rearm`]. Each intervention is returned as a [`SafetyEvent`] with its reason.

use std::time::{Duration, Instant};

use embodia_robots::HardwareMap;

use crate::state::JointState;

/// Limits of the safety layer.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetyConfig {
    /// Distance kept from each joint limit, rad. Default 0.02.
    pub limit_margin: f64,
    /// Largest change of a joint goal from one cycle to the next, rad. Default 0.1.
    pub max_step: f64,
    /// Fraction of each joint's velocity limit the goals may move at. Default 0.8.
    pub velocity_fraction: f64,
    /// State older than this many control periods is not fresh. Default 2.
    pub watchdog_periods: u32,
    /// Torque goes off after this long without fresh state. Default 0.5 s.
    pub disable_after: Duration,
    /// Lowest servo voltage, V. Default 6.0 (the 12 V STS3215 browns out below).
    pub min_voltage: f64,
    /// Highest servo temperature, °C. Default 65 (the servo's own limit is 70).
    pub max_temperature: f64,
    /// Highest servo load magnitude, fraction of stall torque. Default 0.95.
    pub max_load: f64,
    /// How long the load may stay above `max_load` before it counts as a fault: a stall, not
    /// the full effort a servo gives for a moment while it accelerates (the STS3215's own
    /// overload protection also waits, its protection time). Default 0.2 s.
    pub max_load_for: Duration,
    /// How long a safe stop holds the present position before torque goes off. Default 0.1 s.
    pub hold_before_disable: Duration,
}

impl Default for SafetyConfig {
    fn default() -> Self {
        Self {
            limit_margin: 0.02,
            max_step: 0.1,
            velocity_fraction: 0.8,
            watchdog_periods: 2,
            disable_after: Duration::from_millis(500),
            min_voltage: 6.0,
            max_temperature: 65.0,
            max_load: 0.95,
            max_load_for: Duration::from_millis(200),
            hold_before_disable: Duration::from_millis(100),
        }
    }
}

impl SafetyConfig {
    /// The defaults for the servos of `map`: a Dynamixel robot's minimum voltage is 4.0 V
    /// (the XL330 runs from 3.7 V; higher-voltage servos on the bus, such as the Koch's XL430,
    /// report their own undervoltage in their hardware-error bits), a Feetech robot's 6.0 V.
    pub fn for_robot(map: &embodia_robots::HardwareMap) -> Self {
        match map.bus() {
            embodia_robots::ServoBus::Dynamixel => Self { min_voltage: 4.0, ..Self::default() },
            embodia_robots::ServoBus::Feetech => Self::default(),
        }
    }
}

/// Why the safety layer stepped in.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// A goal outside the joint limits was clamped.
    PositionLimit {
        /// Joint index.
        joint: usize,
        /// Goal asked for, rad.
        requested: f64,
        /// Goal sent, rad.
        applied: f64,
    },
    /// A goal too far from the previous one was clamped (step or velocity limit).
    StepLimit {
        /// Joint index.
        joint: usize,
        /// Goal asked for (after the position clamp), rad.
        requested: f64,
        /// Goal sent, rad.
        applied: f64,
    },
    /// The policy produced NaN or infinity.
    NonFinite {
        /// Joint index.
        joint: usize,
    },
    /// The state could not be read this cycle.
    ReadFailed(String),
    /// The state is older than the watchdog allows.
    StaleState {
        /// Its age.
        age: Duration,
    },
    /// No fresh state for longer than `disable_after`.
    WatchdogTimeout {
        /// Time since the last fresh state.
        age: Duration,
    },
    /// A servo reports error bits or a reading beyond the limits.
    ServoFault {
        /// Joint index.
        joint: usize,
        /// What, e.g. `"overheat"` or `"voltage 5.5 V < 6.0 V"`.
        what: String,
    },
    /// The operator asked to stop (Ctrl-C, SIGTERM).
    StopRequested,
    /// Fresh state arrived after a hold.
    FreshState,
    /// Sending goals or torque commands failed.
    WriteFailed(String),
}

/// What the safety layer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Changed a goal and sent it.
    Clamped,
    /// Sent no new goal (the servos keep their last one), or commanded the present position.
    Hold,
    /// Turned torque off.
    TorqueOff,
    /// Fresh state is back after a hold; goals flow again.
    Resumed,
}

/// One intervention.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetyEvent {
    /// Control cycle number.
    pub cycle: u64,
    /// When.
    pub at: Instant,
    /// What the layer did.
    pub action: Action,
    /// Why.
    pub reason: Reason,
}

/// The layer's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Goals flow (clamped).
    Active,
    /// No fresh state: no goals sent.
    Holding,
    /// A safe stop is under way: hold the present position, then torque off.
    Stopping,
    /// Torque is off; nothing is sent until [`Safety::rearm`].
    Disabled,
}

/// What the loop must do this cycle, after the read.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the policy on the fresh state and send its goals through [`Safety::filter`].
    Run,
    /// Send nothing.
    Skip,
    /// Command these positions (rad): the last measured ones.
    HoldAt(Vec<f64>),
    /// Turn torque off.
    TorqueOff,
}

/// The safety layer of one robot.
#[derive(Debug, Clone)]
pub struct Safety {
    config: SafetyConfig,
    period: Duration,
    lower: Vec<f64>,
    upper: Vec<f64>,
    /// Largest goal change per cycle per joint, rad.
    step: Vec<f64>,
    last_goal: Option<Vec<f64>>,
    /// Joint positions of the last fresh state, rad (valid once `last_fresh` is set).
    last_position: Vec<f64>,
    last_fresh: Option<Instant>,
    mode: Mode,
    /// Why the stop under way happened, when it started, whether the hold was sent.
    stop: Option<(Reason, Instant, bool)>,
    /// Per joint, since when its load has been above `max_load` (`None`: it is not).
    overloaded_since: Vec<Option<Instant>>,
}

impl Safety {
    /// A layer for the joints of `map` at a control period of `period`.
    pub fn new(config: SafetyConfig, map: &HardwareMap, period: Duration) -> Self {
        let m = config.limit_margin;
        let lower = map.joints.iter().map(|j| j.lower + m).collect();
        let upper = map.joints.iter().map(|j| j.upper - m).collect();
        let step = map
            .joints
            .iter()
            .map(|j| config.max_step.min(j.max_velocity * config.velocity_fraction * period.as_secs_f64()))
            .collect();
        Self {
            config,
            period,
            lower,
            upper,
            step,
            last_goal: None,
            last_position: vec![0.0; map.joints.len()],
            last_fresh: None,
            mode: Mode::Active,
            stop: None,
            overloaded_since: vec![None; map.joints.len()],
        }
    }

    /// Current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The clamp bounds per joint: lowest goal, highest goal, largest step per cycle, rad.
    pub fn bounds(&self) -> (&[f64], &[f64], &[f64]) {
        (&self.lower, &self.upper, &self.step)
    }

    /// The configuration.
    pub fn config(&self) -> &SafetyConfig {
        &self.config
    }

    /// Allows goals again after a safe stop (an operator's decision); steps are measured from
    /// the next fresh state.
    pub fn rearm(&mut self) {
        self.mode = Mode::Active;
        self.stop = None;
        self.last_goal = None;
    }

    /// Requests a safe stop at `now` (Ctrl-C, SIGTERM): hold, then torque off.
    pub fn request_stop(&mut self, cycle: u64, now: Instant, events: &mut Vec<SafetyEvent>) {
        self.start_stop(Reason::StopRequested, cycle, now, events);
    }

    fn start_stop(&mut self, reason: Reason, cycle: u64, now: Instant, events: &mut Vec<SafetyEvent>) {
        if matches!(self.mode, Mode::Stopping | Mode::Disabled) {
            return;
        }
        events.push(SafetyEvent { cycle, at: now, action: Action::Hold, reason: reason.clone() });
        self.mode = Mode::Stopping;
        self.stop = Some((reason, now, false));
    }

    /// Takes this cycle's read (`Err` with its message when it failed) at `now` and says what
    /// the loop must do; interventions are appended to `events`.
    pub fn on_read(
        &mut self,
        cycle: u64,
        now: Instant,
        read: Result<&JointState, &str>,
        events: &mut Vec<SafetyEvent>,
    ) -> Decision {
        if let Ok(state) = read {
            self.last_fresh = Some(now);
            self.last_position.copy_from_slice(&state.position);
            if let Some(reason) = self.servo_fault(state, now) {
                self.start_stop(reason, cycle, now, events);
            }
        }
        match self.mode {
            Mode::Disabled => return Decision::Skip,
            Mode::Stopping => return self.stop_step(cycle, now, events),
            _ => {}
        }
        match read {
            Err(e) => {
                let age = self.last_fresh.map_or(Duration::ZERO, |t| now - t);
                if self.last_fresh.is_some() && age >= self.config.disable_after {
                    // Already holding for a while, and no fresh position to hold: torque off.
                    let reason = Reason::WatchdogTimeout { age };
                    events.push(SafetyEvent { cycle, at: now, action: Action::TorqueOff, reason });
                    self.mode = Mode::Disabled;
                    return Decision::TorqueOff;
                }
                if self.mode == Mode::Active {
                    self.mode = Mode::Holding;
                    events.push(SafetyEvent {
                        cycle,
                        at: now,
                        action: Action::Hold,
                        reason: Reason::ReadFailed(e.into()),
                    });
                }
                Decision::Skip
            }
            Ok(state) => {
                if self.last_goal.is_none() {
                    self.last_goal = Some(state.position.clone());
                }
                if self.mode == Mode::Holding {
                    self.mode = Mode::Active;
                    events.push(SafetyEvent { cycle, at: now, action: Action::Resumed, reason: Reason::FreshState });
                }
                Decision::Run
            }
        }
    }

    fn stop_step(&mut self, cycle: u64, now: Instant, events: &mut Vec<SafetyEvent>) -> Decision {
        let Some((reason, since, hold_sent)) = &mut self.stop else { return Decision::Skip };
        if !*hold_sent {
            *hold_sent = true;
            if self.last_fresh.is_some() {
                self.last_goal = Some(self.last_position.clone());
                return Decision::HoldAt(self.last_position.clone());
            }
        }
        if now.duration_since(*since) >= self.config.hold_before_disable {
            events.push(SafetyEvent { cycle, at: now, action: Action::TorqueOff, reason: reason.clone() });
            self.mode = Mode::Disabled;
            return Decision::TorqueOff;
        }
        Decision::Skip
    }

    fn servo_fault(&mut self, s: &JointState, now: Instant) -> Option<Reason> {
        let c = &self.config;
        for (since, load) in self.overloaded_since.iter_mut().zip(&s.load) {
            *since = if load.abs() > c.max_load { Some(since.unwrap_or(now)) } else { None };
        }
        let stalled = |j: usize| self.overloaded_since[j].is_some_and(|t| now.duration_since(t) >= c.max_load_for);
        (0..s.len()).find_map(|j| {
            let what = if !s.flags[j].is_ok() {
                s.flags[j].describe()
            } else if s.voltage[j] < c.min_voltage {
                format!("voltage {:.1} V < {:.1} V", s.voltage[j], c.min_voltage)
            } else if s.temperature[j] > c.max_temperature {
                format!("temperature {:.0} °C > {:.0} °C", s.temperature[j], c.max_temperature)
            } else if stalled(j) {
                let held = c.max_load_for.as_secs_f64();
                format!("load {:.0} % > {:.0} % for {held} s", 100.0 * s.load[j].abs(), 100.0 * c.max_load)
            } else {
                return None;
            };
            Some(Reason::ServoFault { joint: j, what })
        })
    }

    /// Makes the policy's goals `goals` (rad, `[num_joints]`) safe to send at `now`, in
    /// place; returns false when nothing may be sent (state too old, or a non-finite goal).
    pub fn filter(&mut self, cycle: u64, now: Instant, goals: &mut [f64], events: &mut Vec<SafetyEvent>) -> bool {
        let mut push = |action, reason| events.push(SafetyEvent { cycle, at: now, action, reason });
        let age = self.last_fresh.map_or(Duration::MAX, |t| now.saturating_duration_since(t));
        if self.mode != Mode::Active || age > self.period * self.config.watchdog_periods {
            push(Action::Hold, Reason::StaleState { age });
            return false;
        }
        if let Some(joint) = goals.iter().position(|g| !g.is_finite()) {
            push(Action::Hold, Reason::NonFinite { joint });
            return false;
        }
        let last = self.last_goal.get_or_insert_with(|| goals.to_vec());
        for (j, g) in goals.iter_mut().enumerate() {
            let requested = *g;
            let clamped = requested.clamp(self.lower[j], self.upper[j]);
            if clamped != requested {
                push(Action::Clamped, Reason::PositionLimit { joint: j, requested, applied: clamped });
            }
            let stepped = clamped.clamp(last[j] - self.step[j], last[j] + self.step[j]);
            if stepped != clamped {
                push(Action::Clamped, Reason::StepLimit { joint: j, requested: clamped, applied: stepped });
            }
            *g = stepped;
            last[j] = stepped;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> HardwareMap {
        HardwareMap::builtin("so101", &embodia_robots::builtin("so101").unwrap()).unwrap()
    }

    const P: Duration = Duration::from_millis(20);

    #[test]
    fn goals_are_clamped_to_limits_and_steps() {
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        let (t0, mut ev) = (Instant::now(), Vec::new());
        let state = JointState::new(6);
        assert_eq!(s.on_read(0, t0, Ok(&state), &mut ev), Decision::Run);
        let mut goals = [5.0, -0.05, 0.0, 0.0, 0.0, 0.0];
        assert!(s.filter(0, t0, &mut goals, &mut ev));
        // Step bound: min(0.1 rad, 0.8 × 4.71 rad/s × 20 ms = 0.0754 rad).
        assert!((goals[0] - 0.8 * 4.71 * 0.02).abs() < 1e-12, "{goals:?}");
        assert_eq!(goals[1], -0.05);
        assert!(matches!(ev[0].reason, Reason::PositionLimit { joint: 0, requested: 5.0, .. }));
        assert!(matches!(ev[1].reason, Reason::StepLimit { joint: 0, .. }));
        assert_eq!(ev.len(), 2);
        // Many cycles later the goal sits at the limit less the margin, never beyond.
        for c in 1..100 {
            let now = t0 + P * c;
            s.on_read(c as u64, now, Ok(&state), &mut ev);
            let mut g = [5.0, 0.0, 0.0, 0.0, 0.0, f64::NEG_INFINITY.max(-9.0)];
            assert!(s.filter(c as u64, now, &mut g, &mut ev));
            assert!(g[0] <= 1.91986 - 0.02 + 1e-12 && g[5] >= -0.174533 + 0.02 - 1e-12);
        }
        let mut nan = [f64::NAN, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!(!s.filter(100, t0 + P * 99, &mut nan, &mut ev));
        assert!(matches!(ev.last().unwrap().reason, Reason::NonFinite { joint: 0 }));
    }

    #[test]
    fn watchdog_holds_at_once_and_disables_after_the_timeout() {
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        let (t0, mut ev) = (Instant::now(), Vec::new());
        let state = JointState::new(6);
        assert_eq!(s.on_read(0, t0, Ok(&state), &mut ev), Decision::Run);
        // State read at t0 but the goal computed 3 periods later: stale, not sent.
        let mut g = [0.0; 6];
        assert!(!s.filter(0, t0 + P * 3, &mut g, &mut ev));
        assert!(matches!(ev.last().unwrap().reason, Reason::StaleState { .. }));
        assert_eq!(s.on_read(1, t0 + P, Err("servo 3: no reply"), &mut ev), Decision::Skip);
        assert_eq!((s.mode(), ev.last().unwrap().action), (Mode::Holding, Action::Hold));
        assert_eq!(s.on_read(2, t0 + P * 2, Ok(&state), &mut ev), Decision::Run);
        assert_eq!(ev.last().unwrap().action, Action::Resumed);
        let mut c = 3;
        let decision = loop {
            let d = s.on_read(c, t0 + P * c as u32, Err("timeout"), &mut ev);
            if d != Decision::Skip {
                break d;
            }
            c += 1;
        };
        assert_eq!(decision, Decision::TorqueOff);
        // 500 ms after the last fresh state (cycle 2): cycle 27.
        assert_eq!(c, 27);
        assert!(matches!(ev.last().unwrap().reason, Reason::WatchdogTimeout { .. }));
        assert_eq!(s.on_read(c + 1, t0 + P * (c as u32 + 1), Ok(&state), &mut ev), Decision::Skip, "latched");
        s.rearm();
        assert_eq!(s.on_read(c + 2, t0 + P * (c as u32 + 2), Ok(&state), &mut ev), Decision::Run);
    }

    #[test]
    fn servo_faults_and_stop_requests_hold_then_disable() {
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        let (t0, mut ev) = (Instant::now(), Vec::new());
        let mut state = JointState::new(6);
        state.position[2] = 0.3;
        state.temperature[2] = 66.0;
        assert_eq!(s.on_read(0, t0, Ok(&state), &mut ev), Decision::HoldAt(state.position.clone()));
        assert!(matches!(&ev[0].reason, Reason::ServoFault { joint: 2, what } if what.contains("temperature 66")));
        assert_eq!(s.on_read(1, t0 + P, Ok(&state), &mut ev), Decision::Skip);
        assert_eq!(s.on_read(5, t0 + P * 5, Ok(&state), &mut ev), Decision::TorqueOff);
        assert_eq!(s.mode(), Mode::Disabled);
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        let ok = JointState::new(6);
        s.on_read(0, t0, Ok(&ok), &mut ev);
        s.request_stop(0, t0, &mut ev);
        assert_eq!(s.on_read(1, t0 + P, Ok(&ok), &mut ev), Decision::HoldAt(ok.position.clone()));
        assert!(matches!(ev.last().unwrap().reason, Reason::StopRequested));
        let mut flagged = ok.clone();
        flagged.flags[0] = crate::StatusFlags(crate::StatusFlags::OVERLOAD);
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        assert!(matches!(s.on_read(0, t0, Ok(&flagged), &mut ev), Decision::HoldAt(_)));
        assert!(matches!(&ev.last().unwrap().reason, Reason::ServoFault { joint: 0, what } if what == "overload"));
    }

    #[test]
    fn a_load_above_the_limit_is_a_fault_only_once_it_lasts() {
        let mut s = Safety::new(SafetyConfig::default(), &map(), P);
        let (t0, mut ev) = (Instant::now(), Vec::new());
        let mut state = JointState::new(6);
        state.load[1] = 1.0;
        // Full effort for a moment (accelerating) is no fault, nor is it once the load drops.
        for c in 0..5 {
            assert_eq!(s.on_read(c, t0 + P * c as u32, Ok(&state), &mut ev), Decision::Run);
        }
        state.load[1] = 0.5;
        assert_eq!(s.on_read(5, t0 + P * 5, Ok(&state), &mut ev), Decision::Run);
        // Held for the 0.2 s the default allows (ten 20 ms cycles): a stall.
        state.load[1] = -1.0;
        for c in 6..16 {
            assert_eq!(s.on_read(c, t0 + P * c as u32, Ok(&state), &mut ev), Decision::Run, "cycle {c}");
        }
        assert!(matches!(s.on_read(16, t0 + P * 16, Ok(&state), &mut ev), Decision::HoldAt(_)));
        assert!(
            matches!(&ev.last().unwrap().reason, Reason::ServoFault { joint: 1, what } if what == "load 100 % > 95 % for 0.2 s"),
            "{:?}",
            ev.last()
        );
    }
}
