//! Scripted experts: hand-written controllers that solve a task from the simulator's state and
//! write actions in the task's action space (for demonstrations, baselines and tests).
//!
//! - reach: damped-least-squares inverse kinematics of the end-effector position
//!   ([`super::kinematics::Ik`]), action = `(q* − default) / scale`;
//! - pick-cube: a phase machine over IK targets with a top-down orientation (above the cube →
//!   descend → close → carry to the target → hold), re-grasping when the cube drops;
//! - language families ([`super::language`]): the pick expert's approach and grasp, then per
//!   verb a lift, a push along the table with the closed gripper, or a carry onto the other
//!   cube, a release and a retreat;
//! - push-t: a pushing planner that picks a contact point on the T's boundary and a push
//!   direction scoring translation and rotation towards the goal, moves around the block to a
//!   pre-contact point, and pushes.
//!
//! [`scripted_expert`] picks the expert for a task from its terms; [`evaluate_expert`] runs
//! episodes in a [`RapierEnv`] and reports the success rate and mean return. Experts read the
//! true state (object poses, targets): they are privileged, not policies a robot could run.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rapier3d::prelude::*;
use rayon::prelude::*;

use super::env::RapierEnv;
use super::kinematics::{Ik, IkTarget, top_down};
use super::objects::{ObjectShape, planar};
use super::scene::Scene;
use super::spec::SceneSpec;
use super::task::{ActionKind, SuccessTerm, TaskConfig};
use super::tasks::rapier_tasks;
use crate::demonstrations::{Demonstrations, Episode};
use crate::{SimError, VecEnv};

/// A controller that acts in one environment.
pub trait ScriptedExpert: Send {
    /// Starts a new episode of `scene` (called after every reset).
    fn reset(&mut self, spec: &SceneSpec, scene: &Scene);
    /// Writes the action for the current state of `scene` into `action` (`[num_actions]`).
    fn act(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32]);
}

/// The scripted expert of the task `spec` describes: reach (end-effector target, no objects),
/// pick (an object to hold at a target with a gripper) or push-t (T-coverage success).
pub fn scripted_expert(spec: &SceneSpec) -> Result<Box<dyn ScriptedExpert>, SimError> {
    let c = &spec.config;
    let none = |why: &str| SimError::InvalidTask(format!("no scripted expert for this task: {why}"));
    match c.success {
        SuccessTerm::EeNearTarget { .. } if spec.end_effector.is_some() => Ok(Box::new(ReachExpert::new(spec))),
        SuccessTerm::Instruction => {
            if spec.gripper.is_none() || spec.end_effector.is_none() || spec.language.is_none() {
                return Err(none("instructions need `env.command.language`, a gripper and an end effector"));
            }
            Ok(Box::new(LanguageExpert::new(spec)))
        }
        SuccessTerm::ObjectAtGoal { .. } => {
            if spec.gripper.is_none() || spec.end_effector.is_none() {
                return Err(none("picking needs `env.action.gripper` and `env.scene.end_effector`"));
            }
            Ok(Box::new(PickExpert::new(spec)))
        }
        SuccessTerm::TCoverage { .. } => {
            if spec.driven.len() != 2 || spec.end_effector.is_none() {
                return Err(none("pushing needs two driven joints moving the end effector in the plane"));
            }
            Ok(Box::new(PushExpert::new(spec)))
        }
        _ => Err(none("its success term has no expert (reach, pick and push-t have one)")),
    }
}

/// The scripted expert of every environment of a [`RapierEnv`], labelling whatever state the
/// environments are in, whoever acts (DAgger: the expert's action in the states a learned
/// policy visits). Call [`ExpertLabeler::label`] once per control step, before the step: each
/// expert restarts when its environment starts a new episode (elapsed steps 0, or not one more
/// than at the last call, as after a restore).
pub struct ExpertLabeler {
    experts: Vec<Box<dyn ScriptedExpert>>,
    /// Elapsed control steps of each environment at the last label; `None` before the first.
    last_elapsed: Vec<Option<u32>>,
}

impl ExpertLabeler {
    /// The experts of `env`'s task, one per environment; errors when the task has none.
    pub fn new(env: &RapierEnv) -> Result<Self, SimError> {
        let experts = (0..env.num_envs()).map(|_| scripted_expert(env.spec())).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { last_elapsed: vec![None; experts.len()], experts })
    }

    /// Writes every environment's expert action for its present state into `actions`
    /// (`[num_envs, action_dim]`), advancing the experts' phases.
    pub fn label(&mut self, env: &RapierEnv, actions: &mut [f32]) -> Result<(), SimError> {
        let ad = env.spec().num_actions();
        if actions.len() != self.experts.len() * ad {
            return Err(SimError::ActionLength { expected: self.experts.len() * ad, got: actions.len() });
        }
        let spec = env.spec();
        self.experts
            .par_iter_mut()
            .zip(self.last_elapsed.par_iter_mut())
            .zip(env.scenes().par_iter())
            .zip(actions.par_chunks_mut(ad.max(1)))
            .for_each(|(((expert, last), scene), action)| {
                let elapsed = scene.elapsed();
                if elapsed == 0 || *last != Some(elapsed.wrapping_sub(1)) {
                    expert.reset(spec, scene);
                }
                *last = Some(elapsed);
                expert.act(spec, scene, action);
            });
        Ok(())
    }
}

/// Results of [`evaluate_expert`].
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertEval {
    /// Episodes run.
    pub episodes: usize,
    /// Fraction of episodes that ended in success.
    pub success_rate: f64,
    /// Mean undiscounted return.
    pub mean_return: f64,
    /// Mean episode length, control steps.
    pub mean_length: f64,
}

/// Runs `episodes` episodes of the task's scripted expert in `env` from `reset(seed)`, spread
/// evenly over its environments (environment `i` runs `episodes / n` episodes, one more for
/// the first `episodes % n`), and reports the success rate and mean return.
pub fn evaluate_expert(env: &mut RapierEnv, episodes: usize, seed: u64) -> Result<ExpertEval, SimError> {
    let demos = run_expert(env, episodes, seed, false, 0.0, None)?;
    let k = episodes.max(1) as f64;
    let successes = demos.episodes.iter().filter(|e| e.success).count();
    let returns: f64 = demos.episodes.iter().map(|e| e.rewards.iter().map(|&r| r as f64).sum::<f64>()).sum();
    Ok(ExpertEval {
        episodes,
        success_rate: successes as f64 / k,
        mean_return: returns / k,
        mean_length: demos.num_steps() as f64 / k,
    })
}

/// Records `episodes` episodes of the task's scripted expert in `env` from `reset(seed)`
/// (spread over its environments as in [`evaluate_expert`]), successful or not, in the order
/// they end (ties by environment index): observations, actions, rewards and outcome.
pub fn record_expert(env: &mut RapierEnv, episodes: usize, seed: u64) -> Result<Demonstrations, SimError> {
    run_expert(env, episodes, seed, true, 0.0, None)
}

/// [`record_expert`] with the executed actions perturbed (DART, Laskey et al. 2017): every
/// step the environment runs the expert's action plus Gaussian noise of std
/// `noise_std × clip` (clamped to `±clip`, the task's action clip), while the episode records
/// the expert's clean action as the label and the perturbed one in the state that follows.
/// The demonstrations then show how the expert recovers from the small deviations a cloned
/// policy makes, instead of only its own noise-free path; without them a clone never sees the
/// corrective part of the expert's feedback and drifts (the hold of pick-cube, where the
/// expert's states never leave the goal). The last tenth of each episode's time limit is not
/// perturbed. The noise is drawn from a generator seeded by `seed`.
pub fn record_expert_perturbed(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    noise_std: f32,
) -> Result<Demonstrations, SimError> {
    run_expert(env, episodes, seed, true, noise_std, None)
}

/// Mixed into the seed of the visual randomization of recorded episodes (as `CameraEnv` does).
const RECORD_VISUAL_SEED: u64 = 0x5eed_ca3e_7a5e_0001;

/// [`record_expert_perturbed`] with the cameras of `render` rendering every environment after
/// each reset and step: every episode carries, per camera, the image seen with each
/// observation ([`Episode::images`], `[len, height, width, 3]` `u8`) and
/// [`Demonstrations::cameras`] lists the cameras. Visual randomization is drawn anew at each
/// episode start. Errors when a camera does not fit the scene (naming its field).
pub fn record_expert_rendered(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    noise_std: f32,
    render: crate::camera::RenderConfig,
) -> Result<Demonstrations, SimError> {
    use crate::view::SceneView;
    let mut cameras = crate::camera::Cameras::new(&env.bodies(), render, env.num_envs())?;
    run_expert(env, episodes, seed, true, noise_std, Some(&mut cameras))
}

/// The expert loop of [`evaluate_expert`] and [`record_expert`]; stores observations and
/// actions only when `keep_steps` (rewards always, for returns); executes the actions perturbed
/// by `noise_std` (see [`record_expert_perturbed`]).
fn run_expert(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    keep_steps: bool,
    noise_std: f32,
    mut cameras: Option<&mut crate::camera::Cameras>,
) -> Result<Demonstrations, SimError> {
    let n = env.num_envs();
    let mut experts = (0..n).map(|_| scripted_expert(env.spec())).collect::<Result<Vec<_>, _>>()?;
    let quota: Vec<usize> = (0..n).map(|i| episodes / n + usize::from(i < episodes % n)).collect();
    let mut done = vec![0usize; n];
    let (od, ad) = (env.obs_spec().vector.dim(), env.spec().num_actions());
    let mut demos = Demonstrations {
        task: env.info().name.to_string(),
        fps: 1.0 / env.spec().config.scene.control_dt(),
        obs_dim: od,
        action_dim: ad,
        episodes: Vec::with_capacity(episodes),
        cameras: match &cameras {
            Some(c) => c
                .images()
                .iter()
                .map(|i| crate::ImageSpec { name: i.name.clone(), height: i.height, width: i.width, channels: 3 })
                .collect(),
            None => Vec::new(),
        },
        state_dim: if env.obs_spec().critic.is_some() { env.spec().critic_dim } else { 0 },
    };
    let sd = demos.state_dim;
    let num_cameras = demos.cameras.len();
    let empty = || Episode { images: vec![Vec::new(); num_cameras], ..Episode::default() };
    let mut running: Vec<Episode> = (0..n).map(|_| empty()).collect();
    let mut actions = vec![0.0f32; n * ad];
    let mut executed = vec![0.0f32; n * ad];
    let clip = env.spec().config.action.clip;
    // The last tenth of the time limit runs unperturbed, so that a task judged at the end of
    // the episode (pick-cube's hold) is judged on the expert's own behaviour.
    let quiet_from = env.spec().config.episode_steps as usize * 9 / 10;
    let mut noise_rng = ChaCha8Rng::seed_from_u64(seed ^ 0xDA47);
    env.reset(seed);
    if let Some(c) = cameras.as_deref_mut() {
        c.reset(seed ^ RECORD_VISUAL_SEED);
        c.render(&*env)?;
    }
    for (expert, scene) in experts.iter_mut().zip(env.scenes()) {
        expert.reset(env.spec(), scene);
    }
    while done.iter().zip(&quota).any(|(d, q)| d < q) {
        let spec = env.spec();
        experts
            .par_iter_mut()
            .zip(env.scenes().par_iter())
            .zip(actions.par_chunks_mut(ad.max(1)))
            .for_each(|((expert, scene), action)| expert.act(spec, scene, action));
        if keep_steps {
            let obs = &env.buffers().obs;
            for (i, ep) in running.iter_mut().enumerate().filter(|(i, _)| done[*i] < quota[*i]) {
                ep.observations.extend_from_slice(&obs[i * od..(i + 1) * od]);
                ep.actions.extend_from_slice(&actions[i * ad..(i + 1) * ad]);
                ep.states.extend_from_slice(&env.buffers().critic_obs[i * sd..(i + 1) * sd]);
                if let Some(c) = cameras.as_deref() {
                    for (store, images) in ep.images.iter_mut().zip(c.images()) {
                        store.extend_from_slice(images.rgb_of(i));
                    }
                }
            }
        }
        for (i, ep) in running.iter_mut().enumerate() {
            if ep.rewards.is_empty() && ep.instruction.is_none() {
                ep.instruction = env.instruction(i).map(str::to_string);
            }
        }
        executed.copy_from_slice(&actions);
        if noise_std > 0.0 {
            for (i, a) in executed.chunks_exact_mut(ad.max(1)).enumerate() {
                if running[i].rewards.len() >= quiet_from {
                    continue;
                }
                for a in a {
                    let xi = super::terms::gaussian(&mut noise_rng);
                    *a = (*a + noise_std * clip * xi).clamp(-clip, clip);
                }
            }
        }
        env.step(&executed)?;
        let b = env.buffers();
        for i in 0..n {
            if done[i] < quota[i] {
                running[i].rewards.push(b.reward[i]);
            }
            if !b.done(i) {
                continue;
            }
            if done[i] < quota[i] {
                done[i] += 1;
                let mut ep = std::mem::replace(&mut running[i], empty());
                ep.success = b.success[i] > 0.0;
                ep.terminated = b.terminated[i] > 0.0;
                demos.episodes.push(ep);
            }
            experts[i].reset(env.spec(), &env.scenes()[i]);
            if let Some(c) = cameras.as_deref_mut() {
                c.randomize(i);
            }
        }
        if let Some(c) = cameras.as_deref_mut() {
            c.render(&*env)?;
        }
    }
    Ok(demos)
}

/// [`evaluate_expert`] on `num_envs` environments of the registered rapier task `name`, with
/// its default configuration or `config`.
pub fn evaluate_task_expert(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
) -> Result<ExpertEval, SimError> {
    evaluate_expert(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed)
}

/// [`record_expert`] on `num_envs` environments of the registered rapier task `name`, with its
/// default configuration or `config`.
pub fn record_task_expert(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
) -> Result<Demonstrations, SimError> {
    record_expert(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed)
}

/// [`record_expert_perturbed`] on `num_envs` environments of the registered rapier task `name`,
/// with its default configuration or `config`.
pub fn record_task_expert_perturbed(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
    noise_std: f32,
) -> Result<Demonstrations, SimError> {
    record_expert_perturbed(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed, noise_std)
}

/// [`record_expert_rendered`] (cameras from `render`) or, without `render`,
/// [`record_expert_perturbed`], on `num_envs` environments of the registered rapier task
/// `name`, with its default configuration or `config`.
pub fn record_task_expert_rendered(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
    noise_std: f32,
    render: Option<crate::camera::RenderConfig>,
) -> Result<Demonstrations, SimError> {
    let mut env = task_env(name, config, num_envs.min(episodes).max(1))?;
    match render {
        Some(r) => record_expert_rendered(&mut env, episodes, seed, noise_std, r),
        None => record_expert_perturbed(&mut env, episodes, seed, noise_std),
    }
}

/// `num_envs` environments of the registered rapier task `name`.
fn task_env(name: &str, config: Option<&TaskConfig>, num_envs: usize) -> Result<RapierEnv, SimError> {
    let Some(task) = rapier_tasks().into_iter().find(|t| t.info.name == name) else {
        let valid = rapier_tasks().into_iter().map(|t| t.info.name.to_string()).collect();
        return Err(SimError::UnknownTask { name: name.to_string(), valid });
    };
    let config = config.cloned().unwrap_or_else(task.config);
    let model = embodia_robots::scene_robot(&config.scene.robot)
        .map_err(|e| SimError::InvalidTask(format!("`env.scene.robot`: {e}")))?;
    RapierEnv::new(task.info, config, model, num_envs)
}

/// Joint-space IK of the end effector with per-joint bounds of the action space, and an
/// integral term that removes the steady-state error of the PD drive (gravity sag).
struct ArmIk {
    ik: Ik,
    /// Driven joints (actuated indices) the IK moves.
    active: Vec<usize>,
    lower: Vec<f32>,
    upper: Vec<f32>,
    /// The IK solution, warm start of the next solve, `[num_actuated]`.
    q: Vec<f32>,
    /// Integral correction added to the commanded positions, `[num_actuated]`.
    bias: Vec<f32>,
    /// Integral correction added to the end-effector target (`end_effector_delta` actions),
    /// base frame, m.
    ee_bias: Vector,
}

/// Largest integral correction per joint, rad or m.
const MAX_BIAS: f32 = 0.3;
/// Largest integral correction of the end-effector target, m.
const MAX_EE_BIAS: f32 = 0.05;

impl ArmIk {
    fn new(spec: &SceneSpec) -> Self {
        let ee = spec.end_effector.expect("checked by scripted_expert");
        let na = spec.default_q.len();
        let a = &spec.config.action;
        let mut lower = vec![f32::NEG_INFINITY; na];
        let mut upper = vec![f32::INFINITY; na];
        let actuated = spec.model.actuated_joints();
        for j in 0..na {
            if let Some(l) = spec.model.joints[actuated[j]].limit {
                (lower[j], upper[j]) = (l.lower as f32, l.upper as f32);
            }
            if a.kind == ActionKind::JointPosition && spec.driven.contains(&j) {
                let reach = (a.scale * a.clip).abs();
                lower[j] = lower[j].max(spec.default_q[j] - reach);
                upper[j] = upper[j].min(spec.default_q[j] + reach);
            }
        }
        Self {
            ik: Ik::new(&spec.model, ee),
            active: spec.driven.clone(),
            lower,
            upper,
            q: spec.default_q.clone(),
            bias: vec![0.0; na],
            ee_bias: Vector::ZERO,
        }
    }

    fn reset(&mut self, scene: &Scene) {
        self.q.copy_from_slice(scene.joint_positions());
        for (j, q) in self.q.iter_mut().enumerate() {
            *q = q.clamp(self.lower[j], self.upper[j]);
        }
        self.bias.fill(0.0);
        self.ee_bias = Vector::ZERO;
    }

    /// Writes the arm's actions that move the end effector to `target` (base frame): with
    /// joint actions, the IK solution ([`Self::solve`], [`Self::write`]); with
    /// `end_effector_delta` actions, the step from the environment's end-effector target to
    /// `target` plus an integral correction of the measured error (the arm's gravity sag),
    /// which accumulates only when `integrate`; the orientation is the environment's.
    fn drive(
        &mut self,
        spec: &SceneSpec,
        scene: &Scene,
        target: &IkTarget,
        iterations: usize,
        integrate: bool,
        action: &mut [f32],
    ) {
        let Some(at) = scene.ee_target() else {
            self.solve(target, iterations);
            self.write(spec, scene, action, integrate);
            return;
        };
        let a = &spec.config.action;
        let error = target.position - ee_position(spec, scene);
        if integrate && error.length() < 0.03 {
            self.ee_bias = (self.ee_bias + 0.05 * error).clamp_length_max(MAX_EE_BIAS);
        }
        let wanted = target.position + self.ee_bias;
        let step = match a.kind {
            ActionKind::EndEffectorPosition => {
                (wanted - self.ik.pose(Pose::IDENTITY, &spec.default_q).translation) / a.scale
            }
            _ => (wanted - at) / a.scale,
        };
        for (x, s) in action.iter_mut().zip(step.to_array()) {
            *x = s.clamp(-a.clip, a.clip);
        }
    }

    /// Solves for `target` (base frame), warm-started from the last solution.
    fn solve(&mut self, target: &IkTarget, iterations: usize) -> f32 {
        self.ik.solve(Pose::IDENTITY, target, &mut self.q, &self.active, &self.lower, &self.upper, iterations)
    }

    /// Writes the driven joints' actions for the solution plus the integral correction, which
    /// accumulates only when `integrate` (the target is at rest: no wind-up while moving).
    fn write(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32], integrate: bool) {
        let a = &spec.config.action;
        let measured = scene.joint_positions();
        for (k, &j) in spec.driven.iter().enumerate() {
            let error = self.q[j] - measured[j];
            if integrate && error.abs() < 0.1 {
                self.bias[j] = (self.bias[j] + 0.05 * error).clamp(-MAX_BIAS, MAX_BIAS);
            }
            let wanted = self.q[j] + self.bias[j];
            let raw = match a.kind {
                ActionKind::JointPosition => (wanted - spec.default_q[j]) / a.scale,
                ActionKind::JointPositionDelta => (wanted - scene.commands()[j]) / a.scale,
                ActionKind::JointVelocity => 5.0 * (self.q[j] - measured[j]) / a.scale,
                ActionKind::JointEffort | ActionKind::EndEffectorDelta | ActionKind::EndEffectorPosition => 0.0,
            };
            action[k] = raw.clamp(-a.clip, a.clip);
        }
    }
}

/// World pose of the robot's base.
fn base_pose(spec: &SceneSpec, scene: &Scene) -> Pose {
    scene.robot().link_pose(scene.world(), spec.model.root)
}

/// End-effector position in the base frame (measured).
fn ee_position(spec: &SceneSpec, scene: &Scene) -> Vector {
    let ee = scene.robot().link_pose(scene.world(), spec.end_effector.expect("expert tasks have one"));
    base_pose(spec, scene).inverse_transform_point(ee.translation)
}

/// Reach: IK to the target position.
struct ReachExpert {
    arm: ArmIk,
}

impl ReachExpert {
    fn new(spec: &SceneSpec) -> Self {
        Self { arm: ArmIk::new(spec) }
    }
}

impl ScriptedExpert for ReachExpert {
    fn reset(&mut self, _spec: &SceneSpec, scene: &Scene) {
        self.arm.reset(scene);
    }

    fn act(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32]) {
        let target = IkTarget { position: scene.target(), rotation: None, rotation_weight: 0.0 };
        action.fill(0.0);
        self.arm.drive(spec, scene, &target, 30, true, action);
    }
}

/// Phases of the pick expert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Move above the object, gripper open.
    Above,
    /// Lower onto the object.
    Descend,
    /// Close the gripper (counts steps).
    Close(u32),
    /// Carry the object to the target and hold it there.
    Carry,
}

/// Pick: top-down grasp, carry, hold.
struct PickExpert {
    arm: ArmIk,
    phase: Phase,
    /// Steps spent in the current phase.
    steps: u32,
    /// The IK target, moved towards the phase's goal at a bounded speed, base frame.
    waypoint: Vector,
    /// Top-down orientation of the end effector at yaw 0 (base frame).
    down: Rotation,
    /// Yaw of the grasp chosen at the start of the approach.
    yaw: f32,
    /// Object half height, m.
    half_height: f32,
    /// Where the object's centre sits in the end-effector frame when grasped, m.
    grasp_offset: Vector,
    /// Control step, s.
    dt: f32,
}

impl PickExpert {
    fn new(spec: &SceneSpec) -> Self {
        let mut arm = ArmIk::new(spec);
        // The end effector's orientation at the default pose, turned so that its axis closest
        // to straight down points exactly down: the top-down grasp orientation.
        let down = top_down(arm.ik.pose(Pose::IDENTITY, &spec.default_q).rotation);
        arm.q.copy_from_slice(&spec.default_q);
        let half_height = spec.config.scene.objects[0].shape.half_height();
        Self {
            grasp_offset: grasp_offset(spec, half_height),
            arm,
            phase: Phase::Above,
            steps: 0,
            waypoint: Vector::ZERO,
            down,
            yaw: 0.0,
            half_height,
            dt: spec.config.scene.control_dt(),
        }
    }

    fn set_phase(&mut self, phase: Phase) {
        self.phase = phase;
        self.steps = 0;
    }

    /// Yaw of the grasp: the yaw of the object's faces (of a horizontal axis of the object,
    /// whichever face it lies on) plus a multiple of a quarter turn, closest to `natural`, the
    /// direction of the object seen from the base (what the arm turns to anyway).
    fn grasp_yaw(object: &Pose, natural: f32) -> f32 {
        let quarter = std::f32::consts::FRAC_PI_2;
        let axes = [Vector::X, Vector::Y, Vector::Z].map(|a| object.rotation * a);
        let up = (0..3).max_by(|&a, &b| axes[a].z.abs().total_cmp(&axes[b].z.abs())).expect("three axes");
        let side = axes[(up + 1) % 3];
        let yaw = side.y.atan2(side.x);
        let k = ((natural - yaw) / quarter).round();
        yaw + k * quarter
    }
}

impl ScriptedExpert for PickExpert {
    fn reset(&mut self, spec: &SceneSpec, scene: &Scene) {
        self.arm.reset(scene);
        self.set_phase(Phase::Above);
        self.waypoint = ee_position(spec, scene);
    }

    fn act(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32]) {
        let base = base_pose(spec, scene);
        let object = base.inverse() * scene.object_pose(0);
        let ee = ee_position(spec, scene);
        let cube = object.translation;
        self.steps += 1;
        if self.phase == Phase::Above && self.steps == 1 {
            self.yaw = Self::grasp_yaw(&object, cube.y.atan2(cube.x));
        }
        let rotation = Rotation::from_rotation_z(self.yaw) * self.down;
        let grasp = cube - rotation * self.grasp_offset;
        let above = grasp + Vector::Z * (self.half_height + 0.08);
        let (held, over_grasp) = scene_phase(ee, grasp, above, cube.z - self.half_height);
        match self.phase {
            Phase::Above | Phase::Descend if held => self.set_phase(Phase::Carry),
            Phase::Above if over_grasp => self.set_phase(Phase::Descend),
            _ => {}
        }
        let (goal, speed, open, weight) = match self.phase {
            Phase::Above => {
                if (ee - above).length() < 0.015 || self.steps > 100 {
                    self.set_phase(Phase::Descend);
                }
                (above, 0.6, true, 0.3)
            }
            Phase::Descend => {
                if (ee - grasp).length() < 0.008 || self.steps > 60 {
                    self.set_phase(Phase::Close(0));
                }
                (grasp, 0.25, true, 0.3)
            }
            Phase::Close(n) => {
                self.phase = Phase::Close(n + 1);
                if n >= 15 {
                    self.set_phase(Phase::Carry);
                }
                (self.waypoint, 0.0, false, 0.3)
            }
            Phase::Carry => {
                // Dropped: start over.
                if (ee - cube).length() > 0.05 {
                    self.set_phase(Phase::Above);
                }
                // Move the end effector so that the object, where it sits in the hand, reaches
                // the target; the orientation matters less (a short arm cannot point down high).
                (scene.target() + (ee - cube), 0.3, false, 0.05)
            }
        };
        let to_goal = goal - self.waypoint;
        let step = speed * self.dt;
        let arrived = to_goal.length() <= step;
        self.waypoint += if arrived { to_goal } else { to_goal.normalize() * step };
        let target = IkTarget { position: self.waypoint, rotation: Some(rotation), rotation_weight: weight };
        action.fill(0.0);
        self.arm.drive(spec, scene, &target, 20, arrived, action);
        // Close over 10 steps rather than at once: a slamming jaw knocks the object over.
        action[spec.arm_actions()] = match self.phase {
            Phase::Close(n) => (1.0 - 0.2 * n as f32).max(-1.0),
            _ if open => 1.0,
            _ => -1.0,
        };
    }
}

/// What a top-down-grasping expert reads off a scene that another policy may have driven
/// (DAgger labels the states it reaches), so that its phase follows the scene: `(held, over)`,
/// whether the object is lifted at least 1 cm (`lift`, m above its rest) with the hand at the
/// grasp point, and whether the hand is within 1 cm horizontally of `grasp` and below `top`
/// (+ 1 cm), where a descent starts. On the expert's own path these hold only where its
/// phases change anyway.
fn scene_phase(ee: Vector, grasp: Vector, top: Vector, lift: f32) -> (bool, bool) {
    let held = (ee - grasp).length() < 0.015 && lift > 0.01;
    let over = (ee - grasp).truncate().length() < 0.01 && ee.z < top.z + 0.01;
    (held, over)
}

/// Phases of the language-family expert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LangPhase {
    /// Move above the grasp point (pick, stack) or above the push start (push).
    Above,
    /// Lower onto the object (pick, stack) or beside it, at its mid height (push).
    Descend,
    /// Close the gripper (counts steps).
    Close(u32),
    /// Pick: lift to the target; stack: carry above the other cube.
    Carry,
    /// Stack: lower the held cube onto the other one.
    Lower,
    /// Stack: open the gripper (counts steps).
    Open(u32),
    /// Stack: move up and away.
    Retreat,
    /// Push: move along the push direction.
    Push,
}

/// The expert of language families: reads the episode's variant from the scene and acts it
/// out with the pick expert's top-down grasp and its bounded-speed IK waypoint.
struct LanguageExpert {
    pick: PickExpert,
    phase: LangPhase,
    /// Where the retreat goes, base frame.
    retreat: Vector,
}

/// Horizontal distance from the cube's centre at which the closed fingers start a push, m.
const PUSH_STANDOFF: f32 = 0.075;
/// Horizontal distance from the cube's centre of the closed fingers in contact, m.
const PUSH_CONTACT: f32 = 0.04;

impl LanguageExpert {
    fn new(spec: &SceneSpec) -> Self {
        Self { pick: PickExpert::new(spec), phase: LangPhase::Above, retreat: Vector::ZERO }
    }

    fn set_phase(&mut self, phase: LangPhase) {
        self.phase = phase;
        self.pick.steps = 0;
    }
}

impl ScriptedExpert for LanguageExpert {
    fn reset(&mut self, spec: &SceneSpec, scene: &Scene) {
        self.pick.reset(spec, scene);
        self.set_phase(LangPhase::Above);
    }

    fn act(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32]) {
        let Some(language) = &spec.language else { return action.fill(0.0) };
        let variant = &language.variants[scene.variant()];
        let base = base_pose(spec, scene);
        let object = base.inverse() * scene.object_pose(scene.focus());
        let ee = ee_position(spec, scene);
        let cube = object.translation;
        let p = &mut self.pick;
        p.steps += 1;
        if self.phase == LangPhase::Above && p.steps == 1 {
            p.yaw = PickExpert::grasp_yaw(&object, cube.y.atan2(cube.x));
        }
        let rotation = Rotation::from_rotation_z(p.yaw) * p.down;
        let grasp = cube - rotation * p.grasp_offset;
        let above = grasp + Vector::Z * (p.half_height + 0.08);
        let dir = Vector::Y * variant.direction;
        let push = variant.verb == super::language::Verb::Push;
        // Stacking and placing both carry the cube above its target, lower it and let go.
        let place = matches!(variant.verb, super::language::Verb::Stack | super::language::Verb::Place);
        let start = scene.focus_start();
        let low = cube.z - 0.005;
        let push_from = Vector::new(cube.x, cube.y, low) - dir * PUSH_STANDOFF;
        // The end effector's offset from the held cube, to place the cube rather than the hand.
        let hold = ee - cube;
        let (descent, top) = if push { (push_from, push_from + Vector::Z * 0.08) } else { (grasp, above) };
        let (held, over) = scene_phase(ee, descent, top, cube.z - start.z);
        match self.phase {
            LangPhase::Above | LangPhase::Descend if held && !push => self.set_phase(LangPhase::Carry),
            LangPhase::Above if over => self.set_phase(LangPhase::Descend),
            _ => {}
        }
        let (goal, speed, open, weight) = match self.phase {
            LangPhase::Above => {
                let goal = if push { push_from + Vector::Z * 0.08 } else { above };
                if (ee - goal).length() < 0.015 || self.pick.steps > 100 {
                    self.set_phase(LangPhase::Descend);
                }
                (goal, 0.6, !push, 0.3)
            }
            LangPhase::Descend => {
                let goal = if push { push_from } else { grasp };
                if (ee - goal).length() < 0.008 || self.pick.steps > 60 {
                    self.set_phase(if push { LangPhase::Push } else { LangPhase::Close(0) });
                }
                (goal, 0.25, !push, 0.3)
            }
            LangPhase::Close(n) => {
                self.phase = LangPhase::Close(n + 1);
                if n >= 15 {
                    self.set_phase(LangPhase::Carry);
                }
                (self.pick.waypoint, 0.0, false, 0.3)
            }
            LangPhase::Carry => {
                if hold.length() > 0.05 {
                    self.set_phase(LangPhase::Above);
                }
                let goal = if place { scene.target() + hold + Vector::Z * 0.04 } else { scene.target() + hold };
                if place && ((ee - goal).length() < 0.01 || self.pick.steps > 150) {
                    self.set_phase(LangPhase::Lower);
                }
                (goal, 0.3, false, 0.3)
            }
            LangPhase::Lower => {
                let goal = scene.target() + hold + Vector::Z * 0.003;
                if (ee - goal).length() < 0.006 || self.pick.steps > 60 {
                    self.set_phase(LangPhase::Open(0));
                }
                (goal, 0.1, false, 0.3)
            }
            LangPhase::Open(n) => {
                self.phase = LangPhase::Open(n + 1);
                if n >= 15 {
                    self.retreat = ee + Vector::Z * 0.1;
                    self.set_phase(LangPhase::Retreat);
                }
                (self.pick.waypoint, 0.0, true, 0.3)
            }
            LangPhase::Retreat => (self.retreat, 0.2, true, 0.3),
            LangPhase::Push => {
                let distance = language.config.push_distance + 0.03;
                let goal = Vector::new(start.x, start.y, low) + dir * (distance - PUSH_CONTACT);
                (Vector::new(goal.x, goal.y, low), 0.15, false, 0.3)
            }
        };
        let p = &mut self.pick;
        let to_goal = goal - p.waypoint;
        let step = speed * p.dt;
        let arrived = to_goal.length() <= step;
        p.waypoint += if arrived { to_goal } else { to_goal.normalize() * step };
        let target = IkTarget { position: p.waypoint, rotation: Some(rotation), rotation_weight: weight };
        action.fill(0.0);
        p.arm.drive(spec, scene, &target, 20, arrived, action);
        action[spec.arm_actions()] = match self.phase {
            LangPhase::Close(n) => (1.0 - 0.2 * n as f32).max(-1.0),
            _ if open => 1.0,
            _ => -1.0,
        };
    }
}

/// Where the object's centre sits in the end-effector frame when grasped: the origin for
/// symmetric parallel grippers. The SO-101's jaw closes the object against a fixed jaw whose
/// inner face is 3.1 mm below its tool centre point (`gripper_frame`, along the frame's z) and
/// whose tip reaches 1.2 mm past it (along x): the object's centre then sits `half + 1 mm`
/// above that face, and 6 mm back along x so that the jaw tips clear the table.
fn grasp_offset(spec: &SceneSpec, half: f32) -> Vector {
    match spec.model.name.as_str() {
        "so101" => Vector::new(0.006, 0.0, -0.0031 + half + 0.001),
        _ => Vector::ZERO,
    }
}

/// Push-T: choose a push from the block's pose error, go around the block, push.
///
/// A push at a contact point `p` (on the block's boundary, the puck pressing along the inward
/// normal `d`) moves the block, quasi-statically, roughly along the twist `(d, τ/ρ)` with
/// `τ = (p − com) × d` and `ρ` the footprint's radius of gyration. The expert takes the
/// candidate contact whose twist points closest to the wanted one, `(e_p, ρ·e_θ)` (position
/// error of the centre of mass, yaw error), moves to a point just outside it (around the block
/// when the straight way is blocked), and pushes along `d` at a speed that falls with the
/// remaining error; it re-chooses every step and re-approaches when a clearly better contact
/// appears or the puck loses the contact.
struct PushExpert {
    shape: ObjectShape,
    /// Candidate contacts on the block's boundary: (point, inward normal), block frame.
    contacts: Vec<([f32; 2], [f32; 2])>,
    /// Centre of mass of the footprint, block frame.
    com: [f32; 2],
    /// Radius of gyration of the footprint about its centre of mass, m.
    gyration: f32,
    /// Largest distance of the footprint from its centre of mass, m.
    extent: f32,
    /// Radius of the puck, m.
    radius: f32,
    /// The contact being approached or pushed.
    plan: Option<usize>,
    pushing: bool,
}

/// Clearance kept between the puck and the block while moving around it, m.
const CLEARANCE: f32 = 0.03;

impl PushExpert {
    fn new(spec: &SceneSpec) -> Self {
        let shape = spec.config.scene.objects[0].shape;
        let radius = puck_radius(spec).unwrap_or(0.025);
        let (rects, n) = shape.footprint();
        let (mut area, mut cx, mut cy) = (0.0, 0.0, 0.0);
        for &(c, h) in &rects[..n] {
            let a = 4.0 * h[0] * h[1];
            area += a;
            cx += a * c[0];
            cy += a * c[1];
        }
        let com = [cx / area, cy / area];
        let (mut inertia, mut extent) = (0.0f32, 0.0f32);
        for &(c, h) in &rects[..n] {
            let a = 4.0 * h[0] * h[1];
            let d2 = (c[0] - com[0]).powi(2) + (c[1] - com[1]).powi(2);
            inertia += a * ((4.0 * h[0] * h[0] + 4.0 * h[1] * h[1]) / 12.0 + d2);
            for (sx, sy) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
                extent = extent.max((c[0] + sx * h[0] - com[0]).hypot(c[1] + sy * h[1] - com[1]));
            }
        }
        // Boundary points every 5 mm on every rectangle edge, kept where the puck fits against
        // the edge without touching the block elsewhere.
        let mut contacts = Vec::new();
        for &(c, h) in &rects[..n] {
            for (normal, along, half_along, offset) in [
                ([0.0, -1.0], [1.0, 0.0], h[0], [c[0], c[1] + h[1]]),
                ([0.0, 1.0], [1.0, 0.0], h[0], [c[0], c[1] - h[1]]),
                ([-1.0, 0.0], [0.0, 1.0], h[1], [c[0] + h[0], c[1]]),
                ([1.0, 0.0], [0.0, 1.0], h[1], [c[0] - h[0], c[1]]),
            ] {
                let k = (2.0 * half_along / 0.005).floor().max(1.0) as i32;
                for i in 0..=k {
                    let s = -half_along + 2.0 * half_along * i as f32 / k as f32;
                    let p = [offset[0] + along[0] * s, offset[1] + along[1] * s];
                    let puck = [p[0] - normal[0] * (radius + 0.002), p[1] - normal[1] * (radius + 0.002)];
                    let outside = [p[0] - normal[0] * 0.001, p[1] - normal[1] * 0.001];
                    if shape.distance(puck) >= radius + 0.001 && shape.distance(outside) > 0.0 {
                        contacts.push((p, normal));
                    }
                }
            }
        }
        Self { shape, contacts, com, gyration: (inertia / area).sqrt(), extent, radius, plan: None, pushing: false }
    }

    /// Score of contact `i` for the block at `block` with goal `goal` (planar poses of the
    /// block frame): the cosine between the twist its push produces and the wanted one.
    fn score(&self, block: [f32; 3], goal: [f32; 3], i: usize) -> f32 {
        let (s, c) = block[2].sin_cos();
        let rot = |v: [f32; 2]| [c * v[0] - s * v[1], s * v[0] + c * v[1]];
        let (e, eyaw) = self.error(block, goal);
        let rho = self.gyration;
        let want = [e[0], e[1], rho * eyaw];
        let want_len = (want[0] * want[0] + want[1] * want[1] + want[2] * want[2]).sqrt().max(1e-9);
        let (p, n) = self.contacts[i];
        let d = rot(n);
        let r = rot([p[0] - self.com[0], p[1] - self.com[1]]);
        let torque = (r[0] * d[1] - r[1] * d[0]) / rho;
        let twist_len = (1.0 + torque * torque).sqrt();
        (d[0] * want[0] + d[1] * want[1] + torque * want[2]) / (twist_len * want_len)
    }

    /// Position error of the centre of mass (world) and yaw error.
    fn error(&self, block: [f32; 3], goal: [f32; 3]) -> ([f32; 2], f32) {
        let at = |pose: [f32; 3]| {
            let (s, c) = pose[2].sin_cos();
            [pose[0] + c * self.com[0] - s * self.com[1], pose[1] + s * self.com[0] + c * self.com[1]]
        };
        let (from, to) = (at(block), at(goal));
        ([to[0] - from[0], to[1] - from[1]], wrap(goal[2] - block[2]))
    }

    /// The contact with the highest score, and its score.
    fn best(&self, block: [f32; 3], goal: [f32; 3]) -> (usize, f32) {
        (0..self.contacts.len())
            .map(|i| (i, self.score(block, goal, i)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a T has contacts")
    }
}

/// Radius of the end effector's puck: the largest cylinder among the robot's collision shapes
/// (pusher2d's puck).
fn puck_radius(spec: &SceneSpec) -> Option<f32> {
    spec.model
        .links
        .iter()
        .flat_map(|l| &l.collisions)
        .filter_map(|s| match s.geometry {
            embodia_robots::Geometry::Cylinder { radius, .. } => Some(radius as f32),
            _ => None,
        })
        .reduce(f32::max)
}

/// Angle wrapped into `[-π, π)`.
fn wrap(a: f32) -> f32 {
    let tau = std::f32::consts::TAU;
    a - tau * ((a + std::f32::consts::PI) / tau).floor()
}

impl ScriptedExpert for PushExpert {
    fn reset(&mut self, _spec: &SceneSpec, _scene: &Scene) {
        self.plan = None;
        self.pushing = false;
    }

    fn act(&mut self, spec: &SceneSpec, scene: &Scene, action: &mut [f32]) {
        let base = base_pose(spec, scene);
        let block = planar(&(base.inverse() * scene.object_pose(0)));
        let goal = [scene.target().x, scene.target().y, scene.target_yaw()];
        let tip = ee_position(spec, scene);
        let tip = [tip.x, tip.y];
        let (s, c) = block[2].sin_cos();
        let to_world = |v: [f32; 2]| [block[0] + c * v[0] - s * v[1], block[1] + s * v[0] + c * v[1]];
        let to_block = |q: [f32; 2]| {
            let (x, y) = (q[0] - block[0], q[1] - block[1]);
            [c * x + s * y, -s * x + c * y]
        };

        // Keep the current contact unless a clearly better one appears or it went bad.
        let (best, best_score) = self.best(block, goal);
        let keep = self.plan.is_some_and(|i| {
            let score = self.score(block, goal, i);
            score > 0.3 && score > best_score - 0.25
        });
        if !keep {
            if self.plan != Some(best) {
                self.pushing = false;
            }
            self.plan = Some(best);
        }
        let (p, n) = self.contacts[self.plan.expect("planned")];
        let d = [c * n[0] - s * n[1], s * n[0] + c * n[1]];
        let contact = to_world(p);
        let standoff = self.radius + 0.008;
        let pre = [contact[0] - d[0] * standoff, contact[1] - d[1] * standoff];
        let gap = (tip[0] - pre[0]).hypot(tip[1] - pre[1]);
        if self.pushing && self.shape.distance(to_block(tip)) > self.radius + 0.012 {
            self.pushing = false; // the puck slid off the block
        }
        if !self.pushing && gap < 0.006 {
            self.pushing = true;
        }
        let (e, eyaw) = self.error(block, goal);
        let error = e[0].hypot(e[1]) + self.gyration * eyaw.abs();
        let local = to_block(tip);
        let near = self.shape.closest(local);
        let away = [local[0] - near[0], local[1] - near[1]];
        let away_len = away[0].hypot(away[1]);
        // Largest move of the puck's target this step, m.
        let mut speed = (spec.config.action.scale * spec.config.action.clip).abs();
        let waypoint = if self.pushing {
            // Push on through the contact, slower as the block nears its goal.
            speed = (0.6 * error).clamp(0.003, 0.03);
            [contact[0] + d[0] * 0.03, contact[1] + d[1] * 0.03]
        } else if away_len < self.radius + 0.5 * CLEARANCE && gap > 0.02 {
            // Touching the block but not where it wants to push: back off, straight away from it.
            let dir = if away_len > 1e-6 { [away[0] / away_len, away[1] / away_len] } else { [-n[0], -n[1]] };
            let dir = [c * dir[0] - s * dir[1], s * dir[0] + c * dir[1]];
            [tip[0] + dir[0] * 0.03, tip[1] + dir[1] * 0.03]
        } else {
            // Straight to the pre-contact point if the way is clear, else around the block.
            let clear = (0..=12).all(|k| {
                let t = k as f32 / 12.0;
                let q = [tip[0] + t * (pre[0] - tip[0]), tip[1] + t * (pre[1] - tip[1])];
                self.shape.distance(to_block(q)) > self.radius + 0.005
            });
            if clear {
                pre
            } else {
                let centre = to_world(self.com);
                let ring = self.extent + self.radius + CLEARANCE;
                let at = (tip[1] - centre[1]).atan2(tip[0] - centre[0]);
                let want = (pre[1] - centre[1]).atan2(pre[0] - centre[0]);
                let a = at + wrap(want - at).clamp(-0.3, 0.3);
                [centre[0] + ring * a.cos(), centre[1] + ring * a.sin()]
            }
        };
        // The two driven joints move the puck along the base's x and y: move their targets
        // towards the waypoint by at most `speed`.
        let a = &spec.config.action;
        let (jx, jy) = (spec.driven[0], spec.driven[1]);
        let from = match a.kind {
            ActionKind::JointPositionDelta => [scene.commands()[jx], scene.commands()[jy]],
            _ => tip,
        };
        let mut step = [waypoint[0] - from[0], waypoint[1] - from[1]];
        let len = step[0].hypot(step[1]);
        if len > speed {
            step = [step[0] * speed / len, step[1] * speed / len];
        }
        let target = [from[0] + step[0], from[1] + step[1]];
        for (k, &j) in [jx, jy].iter().enumerate() {
            let raw = match a.kind {
                ActionKind::JointPositionDelta => step[k] / a.scale,
                ActionKind::JointPosition => (target[k] - spec.default_q[j]) / a.scale,
                _ => 0.0,
            };
            action[k] = raw.clamp(-a.clip, a.clip);
        }
    }
}
