//! `embodia deploy`, `calibrate`, `servo-emulator` and `bench deploy`: a trained run's policy
//! on a servo bus (real, or the emulator on a pseudo-terminal) or in the rapier simulation,
//! through the same control loop and safety layer.
//!
//! The policy is the run's exported one-step policy ([`PolicySpec`], what `embodia export`
//! writes as C or Rust): its plain-f32 forward pass runs in the loop, with no burn and no
//! allocation, and a run that cannot be exported (a multi-step flow policy) is refused with the
//! export's "distill first" message. Observations are built from the measured joint state exactly as the task's
//! observation terms build them in simulation ([`TaskPolicy::observe`]; a test compares the
//! two), with the end effector from forward kinematics of the measured joint positions.

use std::path::Path;
use std::sync::Arc;

use embodia_deploy::control::{ControlLoop, CycleKind, LoopConfig, Policy, Summary, summarize};
use embodia_deploy::export::PolicySpec;
use embodia_deploy::safety::{Action, Mode, Reason, Safety, SafetyConfig, SafetyEvent};
use embodia_deploy::state::{IoError, JointState, RobotIo};
use embodia_robots::HardwareMap;
use embodia_sim::demonstrations::{Demonstrations, Episode};
use embodia_sim::rapier::kinematics::Ik;
use embodia_sim::rapier::task_config::{ActionKind, ObsKind, SuccessTerm};
use embodia_sim::rapier::{Scene, SceneSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rapier3d::prelude::{Pose, Vector};
use serde::Serialize;

use crate::config::TrainConfig;

/// Errors of deployment, with the run, file or setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The run's task cannot be deployed as it is.
    #[error("task `{task}`: {message}")]
    Task {
        /// Task name.
        task: String,
        /// Why.
        message: String,
    },
    /// Robot I/O failed outside the loop (torque on, homing).
    #[error("robot I/O failed")]
    Io(#[from] IoError),
    /// The simulator failed.
    #[error(transparent)]
    Sim(#[from] embodia_sim::SimError),
}

/// A run's policy on measured joint state: builds the task's observation, runs the exported
/// policy's forward pass and turns its action into joint position goals as the task's action
/// term does.
pub struct TaskPolicy {
    policy: PolicySpec,
    /// Forward-pass scratch, `[2 × max layer width]`.
    scratch: Vec<f32>,
    spec: SceneSpec,
    ik: Ik,
    /// Actuated-joint index of each hardware-map joint.
    joint_index: Vec<usize>,
    q: Vec<f32>,
    qd: Vec<f32>,
    obs: Vec<f32>,
    /// The last predicted chunk, `[chunk, num_actions]` in the task's action units.
    action: Vec<f32>,
    /// The action executed last (the chunk's first, clipped), `[num_actions]`.
    last_action: Vec<f32>,
    /// Joint targets per actuated joint, rad (scratch).
    command: Vec<f32>,
    /// Target of the reach command, m, in the base frame.
    pub target: [f32; 3],
    /// Name of the run's task.
    task: String,
    /// The episode being recorded (`deploy --record`): the observation and the clipped action
    /// of every cycle the policy ran; rewards are 0 (there is no reward on hardware).
    pub recording: Option<Episode>,
}

impl TaskPolicy {
    /// The exported `policy` of a run trained with `config`, for the joints of `map`.
    pub fn new(config: &TrainConfig, policy: PolicySpec, map: &HardwareMap) -> Result<Self, DeployError> {
        let fail = |message: String| DeployError::Task { task: config.task.clone(), message };
        let task = config
            .env
            .clone()
            .or_else(|| embodia_sim::task_config(&config.task))
            .ok_or_else(|| fail("is not a rapier task: only rapier arm tasks can be deployed".into()))?;
        if task.action.kind != ActionKind::JointPosition {
            return Err(fail(format!(
                "action kind {:?}: deploy drives servos with joint positions only",
                task.action.kind
            )));
        }
        if task.scene.robot != map.robot {
            return Err(fail(format!("trained on robot `{}`, deploying to `{}`", task.scene.robot, map.robot)));
        }
        let model = embodia_robots::builtin(&task.scene.robot).map_err(|e| fail(e.to_string()))?;
        for t in &task.observations.policy {
            if !matches!(
                t.term,
                ObsKind::JointPos
                    | ObsKind::JointPosCosSin
                    | ObsKind::JointVel
                    | ObsKind::LastAction
                    | ObsKind::EePos
                    | ObsKind::TargetPos
                    | ObsKind::EeToTarget
            ) {
                return Err(fail(format!("observation term {:?} needs sensors a servo arm does not have", t.term)));
            }
        }
        let spec = SceneSpec::new(task, model)?;
        let actuated = spec.model.actuated_joints();
        let joint_index =
            map.joints
                .iter()
                .map(|j| {
                    actuated.iter().position(|&a| spec.model.joints[a].name == j.joint).ok_or_else(|| {
                        fail(format!("hardware joint `{}` is not an actuated joint of the model", j.joint))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
        if joint_index.len() != actuated.len() {
            return Err(fail(format!(
                "the model has {} actuated joints, the hardware map {}",
                actuated.len(),
                joint_index.len()
            )));
        }
        let ee = spec.end_effector.unwrap_or(0);
        let (na, n) = (actuated.len(), spec.num_actions());
        if (policy.obs_dim, policy.action_dim) != (spec.obs_dim, n) {
            return Err(fail(format!(
                "the policy maps {} observations to {} actions, the task has {} and {}",
                policy.obs_dim, policy.action_dim, spec.obs_dim, n
            )));
        }
        let output_dim = policy.output_dim();
        Ok(Self {
            scratch: vec![0.0; 2 * policy.max_width()],
            policy,
            ik: Ik::new(&spec.model, ee),
            joint_index,
            q: vec![0.0; na],
            qd: vec![0.0; na],
            obs: vec![0.0; spec.obs_dim],
            action: vec![0.0; output_dim],
            last_action: vec![0.0; n],
            command: vec![0.0; na],
            target: [0.0; 3],
            recording: None,
            task: config.task.clone(),
            spec,
        })
    }

    /// `episodes` recorded by [`deploy`] at `hz`, as demonstrations of this policy's task.
    pub fn demonstrations(&self, episodes: Vec<Episode>, hz: f64) -> Demonstrations {
        Demonstrations {
            cameras: Vec::new(),
            state_dim: 0,
            task: self.task.clone(),
            fps: hz as f32,
            obs_dim: self.obs.len(),
            action_dim: self.last_action.len(),
            episodes,
        }
    }

    /// The task and robot.
    pub fn spec(&self) -> &SceneSpec {
        &self.spec
    }

    /// Default (home) joint positions in hardware-map order, rad.
    pub fn home(&self) -> Vec<f64> {
        self.joint_index.iter().map(|&i| f64::from(self.spec.default_q[i])).collect()
    }

    /// Draws a target from the task's command box.
    pub fn sample_target(&mut self, rng: &mut ChaCha8Rng) {
        if let Some(r) = self.spec.config.command.target {
            self.target = [0, 1, 2].map(|i| rng.random_range(r[i][0]..=r[i][1]));
        }
    }

    /// End-effector position, m in the base frame, for joint positions in map order.
    pub fn ee_position(&mut self, position: &[f64]) -> [f32; 3] {
        for (&i, &p) in self.joint_index.iter().zip(position) {
            self.q[i] = p as f32;
        }
        self.ik.pose(Pose::IDENTITY, &self.q).translation.to_array()
    }

    /// Distance from the end effector to the target, m.
    pub fn distance(&mut self, position: &[f64]) -> f32 {
        (Vector::from(self.ee_position(position)) - Vector::from(self.target)).length()
    }

    /// Success radius of the task, m (`None` if success is not a reach distance).
    pub fn success_distance(&self) -> Option<f32> {
        match self.spec.config.success {
            SuccessTerm::EeNearTarget { distance } => Some(distance),
            _ => None,
        }
    }

    /// The observation of `state` (`[obs_dim]`), term by term as the simulator writes it.
    pub fn observe(&mut self, state: &JointState) -> &[f32] {
        for (j, &i) in self.joint_index.iter().enumerate() {
            self.q[i] = state.position[j] as f32;
            self.qd[i] = state.velocity[j] as f32;
        }
        let ee = self.ik.pose(Pose::IDENTITY, &self.q).translation;
        let target = Vector::from(self.target);
        let mut at = 0;
        for term in &self.spec.config.observations.policy {
            let n = match term.term {
                ObsKind::JointPos | ObsKind::JointVel => self.q.len(),
                ObsKind::JointPosCosSin => 2 * self.q.len(),
                ObsKind::LastAction => self.last_action.len(),
                _ => 3,
            };
            let out = &mut self.obs[at..at + n];
            match term.term {
                ObsKind::JointPos => {
                    for ((o, q), q0) in out.iter_mut().zip(&self.q).zip(&self.spec.default_q) {
                        *o = q - q0;
                    }
                }
                ObsKind::JointPosCosSin => {
                    for (o, q) in out.chunks_mut(2).zip(&self.q) {
                        (o[1], o[0]) = q.sin_cos();
                    }
                }
                ObsKind::JointVel => out.copy_from_slice(&self.qd),
                ObsKind::LastAction => out.copy_from_slice(&self.last_action),
                ObsKind::EePos => out.copy_from_slice(&ee.to_array()),
                ObsKind::TargetPos => out.copy_from_slice(&self.target),
                ObsKind::EeToTarget => out.copy_from_slice(&(target - ee).to_array()),
                _ => unreachable!("checked in TaskPolicy::new"),
            }
            for x in out.iter_mut() {
                *x *= term.scale;
            }
            at += n;
        }
        &self.obs
    }

    /// Goals (rad, map order) for action `i` of the last predicted chunk, as the task's
    /// joint-position action term maps it (joints the action does not drive stay at their
    /// defaults).
    fn goals_of_action(&mut self, i: usize, goals: &mut [f64]) {
        let c = &self.spec.config.action;
        let action = &self.action[i * self.last_action.len()..(i + 1) * self.last_action.len()];
        self.command.copy_from_slice(&self.spec.default_q);
        for (k, &j) in self.spec.driven.iter().enumerate() {
            self.command[j] = self.spec.default_q[j] + action[k].clamp(-c.clip, c.clip) * c.scale;
        }
        if let (Some(j), Some(g)) = (self.spec.gripper, &c.gripper) {
            let a = action[self.spec.driven.len()].clamp(-1.0, 1.0);
            self.command[j] = g.closed + 0.5 * (a + 1.0) * (g.open - g.closed);
        }
        for (g, &joint) in goals.iter_mut().zip(&self.joint_index) {
            *g = f64::from(self.command[joint]);
        }
    }
}

impl Policy for TaskPolicy {
    /// The exported policy's chunk: 1 for PPO and SAC, `C` for a distilled student.
    fn chunk_len(&self) -> usize {
        self.policy.chunk
    }

    fn predict(&mut self, state: &JointState, goals: &mut [f64]) -> Result<(), String> {
        self.observe(state);
        self.policy.forward(&self.obs, &mut self.action, &mut self.scratch);
        for (i, g) in goals.chunks_exact_mut(self.joint_index.len()).enumerate() {
            self.goals_of_action(i, g);
        }
        // The loop replans every cycle and executes (the ensemble around) the chunk's first
        // action now: that is the next observation's last action.
        let clip = self.spec.config.action.clip;
        for (l, a) in self.last_action.iter_mut().zip(&self.action) {
            *l = a.clamp(-clip, clip);
        }
        if let Some(ep) = &mut self.recording {
            ep.observations.extend_from_slice(&self.obs);
            ep.actions.extend_from_slice(&self.last_action);
            ep.rewards.push(0.0);
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.last_action.fill(0.0);
    }
}

/// Goals fixed at one pose (homing between episodes).
pub struct HoldPose(pub Vec<f64>);

impl Policy for HoldPose {
    fn chunk_len(&self) -> usize {
        1
    }
    fn predict(&mut self, _: &JointState, goals: &mut [f64]) -> Result<(), String> {
        goals.copy_from_slice(&self.0);
        Ok(())
    }
}

/// The rapier simulation of a task as the loop's robot: goals become the task's actions, one
/// control step per write.
pub struct SimIo {
    spec: Arc<SceneSpec>,
    /// The simulated scene.
    pub scene: Scene,
    joint_index: Vec<usize>,
    action: Vec<f32>,
}

impl SimIo {
    /// A scene of `policy`'s task, reset with `seed`.
    pub fn new(policy: &TaskPolicy, seed: u64) -> Result<Self, DeployError> {
        let spec = Arc::new(SceneSpec::new(policy.spec.config.clone(), policy.spec.model.clone())?);
        let mut scene = Scene::new(&spec, ChaCha8Rng::seed_from_u64(seed))?;
        scene.reset();
        let n = spec.num_actions();
        Ok(Self { joint_index: policy.joint_index.clone(), action: vec![0.0; n], spec, scene })
    }

    /// Starts a new episode (new target, joints near their defaults).
    pub fn reset(&mut self) {
        self.scene.reset();
    }

    /// The scene's target, m.
    pub fn target(&self) -> [f32; 3] {
        self.scene.target().to_array()
    }
}

impl RobotIo for SimIo {
    fn num_joints(&self) -> usize {
        self.joint_index.len()
    }

    fn read_state(&mut self, s: &mut JointState) -> Result<(), IoError> {
        let (q, qd) = (self.scene.joint_positions(), self.scene.joint_velocities());
        for (j, &i) in self.joint_index.iter().enumerate() {
            s.position[j] = f64::from(q[i]);
            s.velocity[j] = f64::from(qd[i]);
        }
        Ok(())
    }

    fn write_goals(&mut self, goals: &[f64]) -> Result<(), IoError> {
        let c = &self.spec.config.action;
        let goal = |i: usize| goals[self.joint_index.iter().position(|&k| k == i).unwrap_or(0)] as f32;
        for (k, &j) in self.spec.driven.iter().enumerate() {
            self.action[k] = (goal(j) - self.spec.default_q[j]) / c.scale;
        }
        if let (Some(j), Some(g)) = (self.spec.gripper, &c.gripper) {
            self.action[self.spec.driven.len()] = 2.0 * (goal(j) - g.closed) / (g.open - g.closed) - 1.0;
        }
        self.scene.step(&self.action);
        Ok(())
    }

    fn set_torque(&mut self, _on: bool) -> Result<(), IoError> {
        Ok(())
    }
}

/// Outcome of one deployed episode.
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeOutcome {
    /// Target, m in the base frame.
    pub target: [f32; 3],
    /// Final end-effector position, m in the base frame.
    pub final_position: [f32; 3],
    /// Final end-effector distance to the target, m.
    pub final_distance: f32,
    /// Whether it ended within the task's success distance.
    pub success: bool,
    /// Cycles run.
    pub cycles: u64,
}

/// Timing of a deployment, µs.
#[derive(Debug, Clone, Serialize)]
pub struct TimingReport {
    /// Sync-read.
    pub read: Summary,
    /// Policy (observation, network, goals).
    pub infer: Summary,
    /// Sync-write.
    pub write: Summary,
    /// Read + infer + write.
    pub latency: Summary,
    /// Cycle start lateness.
    pub jitter: Summary,
}

impl TimingReport {
    /// Percentiles of the loop's samples.
    pub fn of(t: &embodia_deploy::control::Timing) -> Self {
        Self {
            read: summarize(&t.read_us),
            infer: summarize(&t.infer_us),
            write: summarize(&t.write_us),
            latency: summarize(&t.latency_us),
            jitter: summarize(&t.jitter_us),
        }
    }
}

/// What a deployment did.
#[derive(Debug, Clone, Serialize)]
pub struct DeployReport {
    /// Per episode.
    pub episodes: Vec<EpisodeOutcome>,
    /// Fraction of successful episodes.
    pub success_rate: f64,
    /// Timing of the policy cycles (homing excluded).
    pub timing: TimingReport,
    /// Safety interventions by reason.
    pub interventions: std::collections::BTreeMap<String, usize>,
    /// Whether a stop request (Ctrl-C, SIGTERM) or the safety layer ended the run early.
    pub stopped_early: Option<String>,
    /// The episodes' observations and clipped actions, with [`DeploySettings::record`] (an
    /// episode ended early is kept, unsuccessful); rewards are 0.
    #[serde(skip)]
    pub recorded: Vec<Episode>,
}

/// Short name of an intervention's reason, for counts.
pub fn reason_name(e: &SafetyEvent) -> String {
    let r = match &e.reason {
        Reason::PositionLimit { .. } => "position limit",
        Reason::StepLimit { .. } => "step limit",
        Reason::NonFinite { .. } => "non-finite goal",
        Reason::ReadFailed(_) => "read failed",
        Reason::StaleState { .. } => "stale state",
        Reason::WatchdogTimeout { .. } => "watchdog timeout",
        Reason::ServoFault { .. } => "servo fault",
        Reason::StopRequested => "stop requested",
        Reason::FreshState => "fresh state",
        Reason::WriteFailed(_) => "write failed",
    };
    let a = match e.action {
        Action::Clamped => "clamp",
        Action::Hold => "hold",
        Action::TorqueOff => "torque off",
        Action::Resumed => "resume",
    };
    format!("{a}: {r}")
}

/// Settings of [`deploy`].
#[derive(Debug, Clone)]
pub struct DeploySettings {
    /// Control rate, Hz.
    pub hz: f64,
    /// Episodes to run.
    pub episodes: usize,
    /// Cycles per episode (default: the task's episode length).
    pub episode_cycles: Option<u64>,
    /// Cycles spent homing to the default pose before each episode (servo robots).
    pub home_cycles: u64,
    /// Seed of the targets.
    pub seed: u64,
    /// Safety limits.
    pub safety: SafetyConfig,
    /// Record every episode's observations and actions into [`DeployReport::recorded`].
    pub record: bool,
}

/// The robot a deployment drives.
pub enum Target<'a> {
    /// Servos (real or emulated): episodes start with homing to the default pose.
    Servos(&'a mut dyn RobotIo),
    /// The simulation: episodes start with a reset, which also draws the target.
    Sim(&'a mut SimIo),
}

/// Runs `policy` on `target` for the configured episodes: before each, homes to the default
/// pose and draws a target (or resets the simulation); after each, measures the end effector's
/// distance to the target. `stop` is polled every cycle (Ctrl-C, SIGTERM).
pub fn deploy(
    policy: &mut TaskPolicy,
    mut target: Target<'_>,
    map: &HardwareMap,
    settings: &DeploySettings,
    stop: &dyn Fn() -> bool,
) -> Result<DeployReport, DeployError> {
    let config = LoopConfig { hz: settings.hz, ..LoopConfig::default() };
    let period = config.period();
    let cycles = settings.episode_cycles.unwrap_or(u64::from(policy.spec.config.episode_steps));
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut episodes = Vec::new();
    let mut events = Vec::new();
    let mut timing = embodia_deploy::control::Timing::default();
    let mut stopped_early = None;
    let mut recorded = Vec::new();
    let home = policy.home();
    for _ in 0..settings.episodes {
        let io: &mut dyn RobotIo = match &mut target {
            Target::Sim(sim) => {
                sim.reset();
                policy.target = sim.target();
                *sim
            }
            Target::Servos(io) => {
                let mut hold = HoldPose(home.clone());
                let safety = Safety::new(settings.safety.clone(), map, period);
                let mut lp = ControlLoop::new(*io, &mut hold, safety, config.clone());
                lp.run(settings.home_cycles, stop, &mut ControlLoop::until_disabled)?;
                if let Some(e) = lp.events.iter().find(|e| matches!(e.action, Action::TorqueOff)) {
                    stopped_early = Some(format!("while homing: {}", reason_name(e)));
                }
                events.extend(lp.events.drain(..).filter(|e| e.action != Action::Clamped));
                if stopped_early.is_some() {
                    break;
                }
                policy.sample_target(&mut rng);
                *io
            }
        };
        policy.recording = settings.record.then(Episode::default);
        let safety = Safety::new(settings.safety.clone(), map, period);
        let mut lp = ControlLoop::new(io, policy, safety, config.clone());
        let mut last = CycleKind::Sent;
        lp.run(cycles, stop, &mut |lp, kind| {
            last = kind;
            lp.until_disabled(kind)
        })?;
        let (ran, position) = (lp.cycles(), lp.state.position.clone());
        if last == CycleKind::TorqueOff {
            stopped_early = lp.events.iter().rev().find(|e| e.action == Action::TorqueOff).map(reason_name);
        }
        let t = std::mem::take(&mut lp.timing);
        events.append(&mut lp.events);
        drop(lp);
        for (dst, src) in [
            (&mut timing.read_us, t.read_us),
            (&mut timing.infer_us, t.infer_us),
            (&mut timing.write_us, t.write_us),
            (&mut timing.latency_us, t.latency_us),
            (&mut timing.jitter_us, t.jitter_us),
        ] {
            dst.extend(src);
        }
        let final_position = policy.ee_position(&position);
        let d = policy.distance(&position);
        let success = policy.success_distance().is_some_and(|r| d <= r) && stopped_early.is_none();
        episodes.push(EpisodeOutcome {
            target: policy.target,
            final_position,
            final_distance: d,
            success,
            cycles: ran,
        });
        if let Some(ep) = policy.recording.take() {
            recorded.push(Episode { success, ..ep });
        }
        if stopped_early.is_some() {
            break;
        }
    }
    let mut interventions = std::collections::BTreeMap::new();
    for e in &events {
        *interventions.entry(reason_name(e)).or_insert(0) += 1;
    }
    let success_rate = episodes.iter().filter(|e| e.success).count() as f64 / episodes.len().max(1) as f64;
    Ok(DeployReport {
        episodes,
        success_rate,
        timing: TimingReport::of(&timing),
        interventions,
        stopped_early,
        recorded,
    })
}

/// Loads a run's exported policy for `map`.
pub fn load_policy(run: &Path, map: &HardwareMap) -> anyhow::Result<TaskPolicy> {
    let config = TrainConfig::from_file(&run.join(crate::run::CONFIG_FILE))?;
    let policy = crate::export::policy_of_run(run)?;
    Ok(TaskPolicy::new(&config, policy, map)?)
}

/// A one-line-per-figure summary of a deployment.
pub fn describe(r: &DeployReport) -> String {
    let mut out = String::new();
    for (i, e) in r.episodes.iter().enumerate() {
        out += &format!(
            "episode {i}: target ({:.3}, {:.3}, {:.3}) m, final distance {:.1} mm, {}\n",
            e.target[0],
            e.target[1],
            e.target[2],
            1000.0 * e.final_distance,
            if e.success { "success" } else { "miss" }
        );
    }
    out += &format!("success {:.0}% of {} episodes\n", 100.0 * r.success_rate, r.episodes.len());
    out += &describe_timing(&r.timing);
    if r.interventions.is_empty() {
        out += "safety: no interventions\n";
    } else {
        let list: Vec<_> = r.interventions.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        out += &format!("safety: {}\n", list.join(", "));
    }
    if let Some(why) = &r.stopped_early {
        out += &format!("stopped early: {why}\n");
    }
    out
}

fn describe_timing(t: &TimingReport) -> String {
    let f = |name: &str, s: &Summary| format!("{name} p50 {:.0} µs p99 {:.0} µs max {:.0} µs", s.p50, s.p99, s.max);
    format!(
        "timing over {} cycles: {}; {}; {}; read-infer-write {}; jitter {}\n",
        t.jitter.n,
        f("read", &t.read),
        f("infer", &t.infer),
        f("write", &t.write),
        f("", &t.latency).trim_start(),
        f("", &t.jitter).trim_start()
    )
}

/// Goals swinging through ±1.5× each joint's limits: an adversarial policy for the
/// fault-injection benchmark, so the clamps are exercised all the time.
pub struct Sweep {
    lower: Vec<f64>,
    upper: Vec<f64>,
    k: u64,
}

impl Sweep {
    /// A sweep over the limits of `map`.
    pub fn new(map: &HardwareMap) -> Self {
        Self {
            lower: map.joints.iter().map(|j| j.lower).collect(),
            upper: map.joints.iter().map(|j| j.upper).collect(),
            k: 0,
        }
    }
}

impl Policy for Sweep {
    fn chunk_len(&self) -> usize {
        1
    }
    fn predict(&mut self, _: &JointState, goals: &mut [f64]) -> Result<(), String> {
        self.k += 1;
        for (j, g) in goals.iter_mut().enumerate() {
            let (mid, half) = (0.5 * (self.lower[j] + self.upper[j]), 0.5 * (self.upper[j] - self.lower[j]));
            *g = mid + 1.5 * half * (self.k as f64 * 0.05 + j as f64).sin();
        }
        Ok(())
    }
}

/// Fault-injection results of one fault kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindStats {
    /// Faults injected.
    pub injected: usize,
    /// Faults after which the safety layer held or turned torque off.
    pub detected: usize,
    /// Detections in one of the 2 control cycles after the fault took effect.
    pub safe_within_two_cycles: usize,
    /// Detections within 2 control periods of wall time after the fault took effect (host
    /// stalls on a busy machine count against this one).
    pub safe_within_two_periods: usize,
    /// Slowest time from the fault to the safe state, ms.
    pub max_time_to_safe_ms: f64,
}

/// Results of `embodia bench deploy`.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Robot whose emulated servos ran.
    pub robot: String,
    /// Control rate, Hz.
    pub hz: f64,
    /// Policy of the timing phase.
    pub policy: String,
    /// Timing phase.
    pub timing: TimingReport,
    /// Reach success of the run's policy on the emulated arm (timing phase), if a run was given.
    pub reach_success: Option<(usize, f64)>,
    /// Cycles of the fault phase.
    pub fault_cycles: u64,
    /// Per fault kind.
    pub faults: std::collections::BTreeMap<String, KindStats>,
    /// Goal sync-writes checked in the fault phase (each checked on the emulator's registers).
    pub commands_checked: u64,
    /// Commands with a goal outside the joint limits.
    pub commands_outside_limits: u64,
    /// Commands moving a goal by more than the step limit.
    pub commands_over_step: u64,
}

/// How long the loop's bus waits for a reply at `hz`: 40 % of the period, at most 10 ms, so a
/// lost reply leaves time to decide within the cycle.
pub fn bus_timeout(hz: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64((0.4 / hz).min(0.01))
}

/// The emulated servos of `map` on a pseudo-terminal, and a robot driving them through the
/// real serial driver.
fn emulated_robot(
    map: &HardwareMap,
    hz: f64,
) -> anyhow::Result<(embodia_deploy::PtyEmulator, Box<dyn embodia_deploy::RobotIo>)> {
    let chain = embodia_deploy::ServoChain::for_map(map)
        .ok_or_else(|| anyhow::anyhow!("no emulation of the servos of {} ({:?})", map.robot, map.models()))?;
    let emulator = embodia_deploy::PtyEmulator::start(chain)?;
    let port = embodia_deploy::SerialBusPort::open(emulator.path(), 1_000_000)?;
    let config = embodia_deploy::BusConfig { timeout: bus_timeout(hz), retries: 0 };
    let robot = embodia_deploy::servo_io::connect(port, config, map, embodia_deploy::ServoGains::default(), None)?;
    Ok((emulator, robot))
}

/// Whether the safety layer's intervention for `reason` is the detection of `fault` injected
/// into servo `id`: a read fault (lost, late, corrupt or cut reply, silence) by a failed read
/// naming that servo, a reported fault by that servo's joint reporting it. An intervention for
/// another cause or servo is not credited to the fault.
fn detects(fault: embodia_deploy::Fault, id: u8, reason: &Reason, map: &HardwareMap) -> bool {
    use embodia_deploy::Fault;
    let joint_is_servo = |joint: usize| map.joints.get(joint).is_some_and(|j| j.id == id);
    let reports = |words: &[&str]| match reason {
        Reason::ServoFault { joint, what } => joint_is_servo(*joint) && words.iter().any(|w| what.contains(w)),
        _ => false,
    };
    match fault {
        Fault::Undervoltage(_) => reports(&["voltage"]),
        Fault::Overheat(_) => reports(&["overheat", "temperature"]),
        Fault::Overload(_) => reports(&["overload"]),
        Fault::Drop | Fault::Delay(_) | Fault::Corrupt | Fault::Truncate | Fault::Silence(_) => match reason {
            // The bus errors name the servo: `servo 3: no reply…`, `servo 3 reports…`, or in a
            // sync read whose reply is missing, `expected a reply from servo 3, got one from…`.
            Reason::ReadFailed(message) => [format!("servo {id}:"), format!("servo {id} "), format!("servo {id},")]
                .iter()
                .any(|m| message.starts_with(m.as_str()) || message.contains(&format!("from {m}"))),
            _ => false,
        },
    }
}

/// `embodia bench deploy`: a loop at `hz` for `seconds` against the emulator on a
/// pseudo-terminal (the run's policy reaching targets, or a sweep), then `faults` injected
/// faults, every kind in turn on random servos, one at a time, under the sweep policy.
pub fn bench(
    robot_name: &str,
    run: Option<&Path>,
    hz: f64,
    seconds: f64,
    faults: usize,
    seed: u64,
) -> anyhow::Result<BenchReport> {
    use embodia_deploy::Fault;
    use std::time::{Duration, Instant};
    let model = embodia_robots::builtin(robot_name)?;
    let map = HardwareMap::builtin(robot_name, &model)?;
    let config = LoopConfig { hz, ..LoopConfig::default() };
    let period = config.period();
    let cycles = (seconds * hz).round() as u64;
    // Phase 1: timing.
    let (emulator, mut robot) = emulated_robot(&map, hz)?;
    let (timing, policy_name, reach_success) = match run {
        Some(run) => {
            let mut policy = load_policy(run, &map)?;
            let per_episode = u64::from(policy.spec.config.episode_steps);
            let settings = DeploySettings {
                hz,
                episodes: cycles.div_ceil(per_episode).max(1) as usize,
                episode_cycles: None,
                home_cycles: (hz / 2.0) as u64,
                seed,
                safety: SafetyConfig::for_robot(&map),
                record: false,
            };
            let r = deploy(&mut policy, Target::Servos(robot.as_mut()), &map, &settings, &|| false)?;
            (r.timing, format!("{} (reach episodes)", run.display()), Some((r.episodes.len(), r.success_rate)))
        }
        None => {
            let mut sweep = Sweep::new(&map);
            let mut lp = ControlLoop::new(
                robot.as_mut(),
                &mut sweep,
                Safety::new(SafetyConfig::for_robot(&map), &map, period),
                config.clone(),
            );
            lp.run(cycles, &|| false, &mut ControlLoop::until_disabled)?;
            (TimingReport::of(&lp.timing), "joint sweep".to_string(), None)
        }
    };
    drop(robot);
    emulator.stop()?;
    // Phase 2: faults.
    let (emulator, mut robot) = emulated_robot(&map, hz)?;
    let responder = emulator.responder().clone();
    let mut sweep = Sweep::new(&map);
    let safety = Safety::new(SafetyConfig::for_robot(&map), &map, period);
    let (lower, upper, step) = {
        let (l, u, s) = safety.bounds();
        (l.to_vec(), u.to_vec(), s.to_vec())
    };
    let disable_after = safety.config().disable_after;
    let timeout = bus_timeout(hz);
    let kinds = |i: usize, long: bool| match i % 8 {
        0 => Fault::Drop,
        1 => Fault::Delay(timeout + timeout / 2),
        2 => Fault::Corrupt,
        3 => Fault::Truncate,
        4 if long => Fault::Silence(disable_after + period * 4),
        4 => Fault::Silence(period * 3),
        5 => Fault::Undervoltage(period * 3),
        6 => Fault::Overheat(period * 3),
        _ => Fault::Overload(period * 3),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut stats: std::collections::BTreeMap<String, KindStats> = std::collections::BTreeMap::new();
    // Goals reach the servos rounded to whole ticks: allow one tick (and float error).
    let tick = 1.01 * std::f64::consts::TAU / 4096.0;
    let (mut checked, mut outside, mut over_step) = (0u64, 0u64, 0u64);
    // Every goal the servos received, checked in bus order: one group of writes per cycle that
    // sent goals (tagged with what sent them), the step checked from the group before.
    responder.lock().expect("emulator").chain.record_goal_writes();
    let n = map.joints.len();
    let (mut writes, mut tags) = (Vec::new(), std::collections::VecDeque::new());
    // `run` starts with torque on, which writes goal = present position.
    tags.push_back(CycleKind::TorqueOff);
    let mut previous: Option<Vec<f64>> = None;
    let mut check = |writes: &mut Vec<(u8, u16)>, tags: &mut std::collections::VecDeque<CycleKind>| {
        let groups = writes.len() / n;
        for group in writes.chunks_exact(n).take(groups) {
            let tag = tags.pop_front();
            let goals: Vec<f64> = map.joints.iter().zip(group).map(|(j, &(_, t))| j.to_radians(f64::from(t))).collect();
            if tag != Some(CycleKind::TorqueOff) {
                checked += 1;
                for j in 0..n {
                    if goals[j] < lower[j] - tick || goals[j] > upper[j] + tick {
                        outside += 1;
                    }
                    if let (Some(p), Some(CycleKind::Sent)) = (&previous, tag)
                        && (goals[j] - p[j]).abs() > step[j] + tick
                    {
                        over_step += 1;
                    }
                }
            }
            previous = Some(goals);
        }
        writes.drain(..groups * n);
    };
    // The fault under way: its kind, index in the emulator's log, end, cycle, detected.
    let mut current: Option<(Fault, usize, Instant, u64, bool)> = None;
    // The servo of the fault under way.
    let mut servo = 0u8;
    let (mut injected, mut gap, mut events_seen) = (0usize, 2u32, 0usize);
    // A loop that cannot get back to Active (an overloaded machine starving the emulator makes
    // real bus faults, which latch a stop nobody re-arms) would wait for its next injection
    // forever: after this many cycles without progress the bench stops and says so.
    let stall_cycles = (10.0 * hz).ceil() as u64;
    let (mut progress_at, mut stalled) = (0u64, None);
    let mut lp = ControlLoop::new(robot.as_mut(), &mut sweep, safety, config);
    lp.run(u64::MAX, &|| false, &mut |lp, kind| {
        let now = Instant::now();
        match kind {
            CycleKind::Sent | CycleKind::Held => tags.push_back(kind),
            _ => {}
        }
        responder.lock().expect("emulator").chain.take_goal_writes(&mut writes);
        check(&mut writes, &mut tags);
        match &mut current {
            None if injected >= faults => return false,
            None if gap > 0 => gap -= 1,
            // Inject only into a running loop, so each detection belongs to its fault.
            None if kind != CycleKind::Sent || lp.safety.mode() != Mode::Active => {
                if lp.cycles() - progress_at > stall_cycles {
                    stalled = Some(lp.safety.mode());
                    return false;
                }
            }
            None => {
                let fault = kinds(injected, rng.random_bool(0.25));
                let id = map.joints[rng.random_range(0..map.joints.len())].id;
                servo = id;
                let mut r = responder.lock().expect("emulator");
                let index = r.chain.fault_log().len();
                r.chain.inject(id, fault, now);
                let end = now
                    + match fault {
                        Fault::Silence(d)
                        | Fault::Undervoltage(d)
                        | Fault::Overheat(d)
                        | Fault::Overload(d)
                        | Fault::Delay(d) => d,
                        _ => Duration::ZERO,
                    };
                current = Some((fault, index, end, lp.cycles(), false));
                progress_at = lp.cycles();
                injected += 1;
                stats.entry(fault.kind().to_string()).or_default().injected += 1;
                events_seen = lp.events.len();
            }
            Some((fault, index, end, since, detected)) => {
                let at = responder.lock().expect("emulator").chain.fault_log().get(*index).map(|f| f.at);
                let s = stats.entry(fault.kind().to_string()).or_default();
                if let (Some(at), false) = (at, *detected) {
                    let first = lp.events[events_seen..].iter().find(|e| {
                        matches!(e.action, Action::Hold | Action::TorqueOff)
                            && e.at >= at
                            && detects(*fault, servo, &e.reason, &map)
                    });
                    if let Some(e) = first {
                        let dt = e.at - at;
                        *detected = true;
                        s.detected += 1;
                        s.safe_within_two_periods += usize::from(dt <= 2 * period);
                        // The fault is in effect from cycle `since` (the first after injection).
                        s.safe_within_two_cycles += usize::from(e.cycle < *since + 2);
                        s.max_time_to_safe_ms = s.max_time_to_safe_ms.max(dt.as_secs_f64() * 1e3);
                    }
                }
                let over = now >= *end;
                let given_up = lp.cycles() - *since > 200;
                if lp.safety.mode() == Mode::Disabled && over {
                    // The operator's part after a latched stop: re-arm and hold torque again.
                    // Torque on first (it writes goal = present position, a step of any size:
                    // tagged apart from the policy's goals); re-arm only once it worked.
                    if lp.io().set_torque(true).is_err() {
                        return true;
                    }
                    tags.push_back(CycleKind::TorqueOff);
                    lp.safety.rearm();
                }
                if (*detected && over && kind == CycleKind::Sent) || given_up {
                    current = None;
                    gap = 2;
                    progress_at = lp.cycles();
                }
            }
        }
        true
    })?;
    let fault_cycles = lp.cycles();
    drop(lp);
    drop(robot);
    if let Some(mode) = stalled {
        emulator.stop()?;
        anyhow::bail!(
            "bench deploy: after {injected} of {faults} faults the loop stayed {mode:?} for {stall_cycles} cycles \
             (10 s) with no fault under way, so no further fault could be injected; bus replies too late \
             for --hz {hz} (an overloaded machine?)"
        );
    }
    // The last writes reach the emulator a moment after they were sent.
    std::thread::sleep(Duration::from_millis(20));
    responder.lock().expect("emulator").chain.take_goal_writes(&mut writes);
    check(&mut writes, &mut tags);
    emulator.stop()?;
    Ok(BenchReport {
        robot: robot_name.to_string(),
        hz,
        policy: policy_name,
        timing,
        reach_success,
        fault_cycles,
        faults: stats,
        commands_checked: checked,
        commands_outside_limits: outside,
        commands_over_step: over_step,
    })
}

/// The figures of `embodia bench deploy`.
pub fn describe_bench(r: &BenchReport) -> String {
    let servos = match r.robot.as_str() {
        "so101" => "SO-101 (STS3215, Feetech protocol 0)",
        "koch" => "Koch v1.1 (XL430/XL330, Dynamixel protocol 2.0)",
        other => other,
    };
    let mut out = format!("bench deploy: {servos} emulator on a pseudo-terminal, {} Hz, policy: {}\n", r.hz, r.policy);
    out += &describe_timing(&r.timing);
    if let Some((n, s)) = r.reach_success {
        out += &format!("reach on the emulated arm: success {:.0}% of {n} episodes\n", 100.0 * s);
    }
    let (mut inj, mut det, mut cycles, mut wall) = (0, 0, 0, 0);
    for (kind, s) in &r.faults {
        out += &format!(
            "fault {kind:<12} injected {:>5} detected {:>5} safe within 2 cycles {:>5}, within 2 periods of wall time {:>5}, max time to safe {:.1} ms\n",
            s.injected, s.detected, s.safe_within_two_cycles, s.safe_within_two_periods, s.max_time_to_safe_ms
        );
        (inj, det) = (inj + s.injected, det + s.detected);
        (cycles, wall) = (cycles + s.safe_within_two_cycles, wall + s.safe_within_two_periods);
    }
    out += &format!(
        "faults: {inj} injected over {} cycles, {det} detected, safe within 2 control cycles {cycles}, within 2 periods of wall time {wall}; commands: {} checked, {} outside the limits, {} over the step limit\n",
        r.fault_cycles, r.commands_checked, r.commands_outside_limits, r.commands_over_step
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use embodia_deploy::Fault;
    use std::time::Duration;

    #[test]
    fn a_fault_is_detected_only_by_an_intervention_for_its_servo_and_kind() {
        let model = embodia_robots::builtin("so101").unwrap();
        let map = HardwareMap::builtin("so101", &model).unwrap();
        let (id, other) = (map.joints[2].id, map.joints[3].id);
        let read = |m: String| Reason::ReadFailed(m);
        let silence = Fault::Silence(Duration::from_millis(60));
        assert!(detects(silence, id, &read(format!("servo {id}: no reply within 10ms")), &map));
        assert!(detects(
            silence,
            id,
            &read(format!("expected a reply from servo {id}, got one from servo {other}")),
            &map
        ));
        assert!(!detects(silence, id, &read(format!("servo {other}: no reply within 10ms")), &map));
        assert!(!detects(
            silence,
            id,
            &read(format!("expected a reply from servo {other}, got one from servo {id}")),
            &map
        ));
        assert!(!detects(silence, id, &Reason::StaleState { age: Duration::from_millis(40) }, &map));
        let overheat = Fault::Overheat(Duration::from_millis(60));
        let fault = |joint: usize, what: &str| Reason::ServoFault { joint, what: what.into() };
        assert!(detects(overheat, id, &fault(2, "temperature 66 °C > 65 °C"), &map));
        assert!(!detects(overheat, id, &fault(3, "overheat"), &map), "another servo's fault");
        assert!(!detects(overheat, id, &fault(2, "overload"), &map), "another kind of fault");
        assert!(!detects(Fault::Drop, id, &fault(2, "overload"), &map), "a read fault is not a reported one");
    }
}
