//! The fixed-rate control loop: read state, infer, make safe, send goals.
//!
//! Cycle `k` starts at `start + k·period`; it reads the joint state (one sync-read on a servo
//! bus), lets the [`Safety`] layer decide, runs the [`Policy`] on fresh state, ensembles its
//! action chunk ([`ChunkEnsembler`]), filters the goals and sends them (one sync-write). The
//! loop measures the read, inference and write times, their sum (the read-infer-write
//! latency) and the jitter (how late each cycle started).

use std::time::{Duration, Instant};

use crate::chunking::ChunkEnsembler;
use crate::safety::{Action, Decision, Mode, Reason, Safety, SafetyEvent};
use crate::state::{JointState, RobotIo};

/// A policy as the loop sees it: joint goals from joint state.
pub trait Policy {
    /// Goals per prediction: 1 for a plain policy, `H` for an action-chunk policy.
    fn chunk_len(&self) -> usize;
    /// Predicts joint position goals, rad `[chunk_len, num_joints]`, from `state`.
    fn predict(&mut self, state: &JointState, goals: &mut [f64]) -> Result<(), String>;
    /// Starts a new episode (clears remembered actions).
    fn reset(&mut self) {}
}

/// Settings of the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    /// Control rate, Hz. Default 50.
    pub hz: f64,
    /// ACT weight decay `m` of the chunk ensembling. Default 0.01.
    pub ensemble_decay: f64,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self { hz: 50.0, ensemble_decay: 0.01 }
    }
}

impl LoopConfig {
    /// The control period.
    pub fn period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.hz)
    }
}

/// What one cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CycleKind {
    /// Goals from the policy were sent.
    Sent,
    /// Nothing was sent (holding, stale state, disabled).
    Skipped,
    /// The last measured positions were sent (a safe stop's hold).
    Held,
    /// Torque was turned off.
    TorqueOff,
}

/// Timing samples of a run, µs.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Sync-read time per cycle.
    pub read_us: Vec<f64>,
    /// Inference time (policy and ensembling) per cycle that ran the policy.
    pub infer_us: Vec<f64>,
    /// Sync-write time per cycle that sent goals.
    pub write_us: Vec<f64>,
    /// Read + infer + write per cycle that sent goals.
    pub latency_us: Vec<f64>,
    /// How late each cycle started.
    pub jitter_us: Vec<f64>,
}

/// Percentiles of one timing series, µs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Samples.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Percentiles of `samples` (nearest rank); zeros when empty.
pub fn summarize(samples: &[f64]) -> Summary {
    if samples.is_empty() {
        return Summary { n: 0, p50: 0.0, p99: 0.0, max: 0.0 };
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    Summary { n: s.len(), p50: at(0.5), p99: at(0.99), max: s[s.len() - 1] }
}

impl Timing {
    fn with_capacity(n: usize) -> Self {
        let v = || Vec::with_capacity(n);
        Self { read_us: v(), infer_us: v(), write_us: v(), latency_us: v(), jitter_us: v() }
    }
}

/// The control loop over one robot and one policy.
pub struct ControlLoop<'a> {
    io: &'a mut dyn RobotIo,
    policy: &'a mut dyn Policy,
    /// The safety layer (public so an operator, or a test, can re-arm it).
    pub safety: Safety,
    config: LoopConfig,
    /// The last state read.
    pub state: JointState,
    chunk: Vec<f64>,
    /// The goals of the last cycle, rad `[num_joints]`.
    pub goals: Vec<f64>,
    ensembler: ChunkEnsembler,
    /// Every intervention of the safety layer so far.
    pub events: Vec<SafetyEvent>,
    /// Timing samples so far.
    pub timing: Timing,
    cycle: u64,
}

impl<'a> ControlLoop<'a> {
    /// A loop on `io` running `policy` through `safety`.
    pub fn new(io: &'a mut dyn RobotIo, policy: &'a mut dyn Policy, safety: Safety, config: LoopConfig) -> Self {
        let n = io.num_joints();
        let h = policy.chunk_len().max(1);
        Self {
            io,
            policy,
            safety,
            ensembler: ChunkEnsembler::new(h, n, config.ensemble_decay),
            config,
            state: JointState::new(n),
            chunk: vec![0.0; h * n],
            goals: vec![0.0; n],
            events: Vec::new(),
            timing: Timing::default(),
            cycle: 0,
        }
    }

    /// The robot underneath.
    pub fn io(&mut self) -> &mut dyn RobotIo {
        self.io
    }

    /// The policy.
    pub fn policy(&mut self) -> &mut dyn Policy {
        self.policy
    }

    /// Cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// Runs one cycle now, `late` after its scheduled start; `stop` requests a safe stop.
    pub fn step(&mut self, late: Duration, stop: bool) -> CycleKind {
        let k = self.cycle;
        self.cycle += 1;
        let t0 = Instant::now();
        self.timing.jitter_us.push(late.as_secs_f64() * 1e6);
        if stop {
            self.safety.request_stop(k, t0, &mut self.events);
        }
        let read = self.io.read_state(&mut self.state);
        let t1 = Instant::now();
        self.timing.read_us.push((t1 - t0).as_secs_f64() * 1e6);
        let read = read.as_ref().map(|_| &self.state).map_err(|e| e.0.as_str());
        match self.safety.on_read(k, t1, read, &mut self.events) {
            Decision::Run => {
                if let Err(e) = self.policy.predict(&self.state, &mut self.chunk) {
                    let reason = Reason::WriteFailed(format!("policy failed: {e}"));
                    self.events.push(SafetyEvent { cycle: k, at: Instant::now(), action: Action::Hold, reason });
                    return CycleKind::Skipped;
                }
                self.ensembler.push(&self.chunk, &mut self.goals);
                let t2 = Instant::now();
                self.timing.infer_us.push((t2 - t1).as_secs_f64() * 1e6);
                if !self.safety.filter(k, t2, &mut self.goals, &mut self.events) {
                    return CycleKind::Skipped;
                }
                let written = self.io.write_goals(&self.goals);
                let t3 = Instant::now();
                self.timing.write_us.push((t3 - t2).as_secs_f64() * 1e6);
                self.timing.latency_us.push((t3 - t0).as_secs_f64() * 1e6);
                if let Err(e) = written {
                    self.events.push(SafetyEvent {
                        cycle: k,
                        at: t3,
                        action: Action::Hold,
                        reason: Reason::WriteFailed(e.0),
                    });
                }
                CycleKind::Sent
            }
            Decision::Skip => {
                // Predictions made before a gap are stale when goals flow again.
                self.ensembler.reset();
                CycleKind::Skipped
            }
            Decision::HoldAt(p) => {
                self.goals.copy_from_slice(&p);
                if let Err(e) = self.io.write_goals(&p) {
                    self.events.push(SafetyEvent {
                        cycle: k,
                        at: Instant::now(),
                        action: Action::Hold,
                        reason: Reason::WriteFailed(e.0),
                    });
                }
                CycleKind::Held
            }
            Decision::TorqueOff => {
                if let Err(e) = self.io.set_torque(false) {
                    let reason = Reason::WriteFailed(format!("torque off failed: {}", e.0));
                    self.events.push(SafetyEvent { cycle: k, at: Instant::now(), action: Action::TorqueOff, reason });
                }
                CycleKind::TorqueOff
            }
        }
    }

    /// Turns torque on and runs cycles at the configured rate until `cycles` have run or `hook`
    /// (called after every cycle) returns false; [`ControlLoop::until_disabled`] is the hook
    /// that ends the run when the safety layer has turned torque off. `stop` is polled every
    /// cycle: when it turns true the safety layer performs a safe stop.
    pub fn run(
        &mut self,
        cycles: u64,
        stop: &dyn Fn() -> bool,
        hook: &mut dyn FnMut(&mut ControlLoop<'a>, CycleKind) -> bool,
    ) -> Result<(), crate::state::IoError> {
        self.io.set_torque(true)?;
        self.policy.reset();
        self.timing = Timing::with_capacity(cycles.min(1 << 16) as usize);
        let period = self.config.period();
        let start = Instant::now();
        for k in 0..cycles {
            let scheduled = start + period.mul_f64(k as f64);
            let now = Instant::now();
            if scheduled > now {
                std::thread::sleep(scheduled - now);
            }
            let late = Instant::now().saturating_duration_since(scheduled);
            let kind = self.step(late, stop());
            if !hook(self, kind) {
                break;
            }
        }
        Ok(())
    }

    /// A [`ControlLoop::run`] hook: go on until the safety layer has turned torque off.
    pub fn until_disabled(&mut self, _: CycleKind) -> bool {
        self.safety.mode() != Mode::Disabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        let m = summarize(&s);
        assert_eq!((m.n, m.p50, m.p99, m.max), (100, 50.0, 99.0, 100.0));
        assert_eq!(summarize(&[]).n, 0);
    }
}
