//! `evaluate`'s success figures (at the end of an episode and at any step of it) and its
//! per-episode outcomes.

use burn::tensor::Device;
use embodia_algos::{EvalMode, Ppo, PpoConfig, evaluate};
use embodia_sim::{ActionSpec, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};

/// Pendulum whose success criterion is scripted: environment 0 succeeds only at step 3,
/// environment 1 from step 3 to the end, environment 2 never.
struct ScriptedSuccess {
    env: Box<dyn VecEnv>,
    info: TaskInfo,
    buffers: StepBuffers,
    steps: u32,
}

impl VecEnv for ScriptedSuccess {
    fn info(&self) -> &TaskInfo {
        &self.info
    }
    fn num_envs(&self) -> usize {
        self.env.num_envs()
    }
    fn obs_spec(&self) -> &ObsSpec {
        self.env.obs_spec()
    }
    fn action_spec(&self) -> &ActionSpec {
        self.env.action_spec()
    }
    fn reset(&mut self, seed: u64) {
        self.env.reset(seed);
        self.buffers = self.env.buffers().clone();
        self.steps = 0;
    }
    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        self.env.step(actions)?;
        self.steps += 1;
        self.buffers = self.env.buffers().clone();
        self.buffers.success = vec![f32::from(self.steps == 3), f32::from(self.steps >= 3), 0.0];
        Ok(())
    }
    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }
    fn snapshot(&self) -> EnvSnapshot {
        self.env.snapshot()
    }
    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError> {
        self.env.restore(snapshot)
    }
}

#[test]
fn success_at_any_step_counts_episodes_that_lose_their_success_before_the_end() {
    let env = embodia_sim::make("pendulum", 3).unwrap();
    let info = TaskInfo { has_success: true, ..env.info().clone() };
    let buffers = env.buffers().clone();
    let mut env = ScriptedSuccess { env, info, buffers, steps: 0 };
    let ppo = Ppo::new(PpoConfig { num_envs: 3, ..PpoConfig::default() }, &env, Device::flex().autodiff(), 1).unwrap();
    let result = evaluate(&ppo, &mut env, 7, EvalMode::Zero).unwrap();
    assert_eq!(result.episodes, 3);
    assert_eq!(result.success_rate, Some(1.0 / 3.0), "only environment 1 succeeds at its last step");
    assert_eq!(result.success_once_rate, Some(2.0 / 3.0), "environments 0 and 1 succeed at some step");
    let flags: Vec<_> = result.per_episode.iter().map(|e| e.success).collect();
    assert_eq!(flags, [Some((false, true)), Some((true, true)), Some((false, false))]);
    assert!(result.position_names.is_empty(), "the pendulum has no scene view");
}

#[test]
fn every_episode_is_reported_with_the_positions_of_objects_and_target_at_its_start_and_end() {
    let mut env = embodia_sim::make("pick-cube", 4).unwrap();
    let ppo = Ppo::new(PpoConfig { num_envs: 4, ..PpoConfig::default() }, &*env, Device::flex().autodiff(), 1).unwrap();
    let result = evaluate(&ppo, env.as_mut(), 3, EvalMode::Zero).unwrap();
    let names = ["objects/cube.x", "objects/cube.y", "objects/cube.z", "target.x", "target.y", "target.z"];
    assert_eq!(result.position_names, names);
    assert_eq!(result.per_episode.len(), 4);
    for e in &result.per_episode {
        let [x, y, z, tx, ty, tz] = e.initial_positions[..] else { panic!("{:?}", e.initial_positions) };
        // pick-cube draws the cube at x ∈ [0.4, 0.6], y ∈ [-0.25, 0.25] m, resting on the table, and
        // the target in x ∈ [0.4, 0.6], y ∈ [-0.25, 0.25], z ∈ [0.25, 0.5] m.
        assert!((0.4..=0.6).contains(&x) && (-0.25..=0.25).contains(&y) && (0.02..0.03).contains(&z), "{x} {y} {z}");
        assert!((0.4..=0.6).contains(&tx) && (-0.25..=0.25).contains(&ty) && (0.25..=0.5).contains(&tz));
        // The untrained policy's arm may nudge the cube; it stays on the table, and the target
        // (drawn once per episode) stays put.
        let [.., lz, ltx, lty, ltz] = e.last_positions[..] else { panic!("{:?}", e.last_positions) };
        assert!((0.02..0.03).contains(&lz), "cube at z {lz} after the episode");
        assert_eq!([ltx, lty, ltz], [tx, ty, tz]);
        assert_eq!(e.length, 250, "pick-cube runs to its time limit");
        assert!(e.success.is_some());
    }
    let returns: f64 = result.per_episode.iter().map(|e| e.episode_return as f64).sum();
    assert!((returns / 4.0 - result.mean_return).abs() < 1e-3);
    assert_ne!(result.per_episode[0].initial_positions, result.per_episode[1].initial_positions);
}

#[test]
fn an_evaluation_refuses_a_deterministic_mode_the_policy_does_not_act_in() {
    let mut env = embodia_sim::make("pendulum", 2).unwrap();
    let ppo = Ppo::new(PpoConfig { num_envs: 2, ..PpoConfig::default() }, &*env, Device::flex().autodiff(), 1).unwrap();
    // A Gaussian policy's deterministic action is its mean (`zero`); it has no fixed draw.
    assert_eq!(evaluate(&ppo, env.as_mut(), 3, EvalMode::Zero).unwrap().mode, EvalMode::Zero);
    assert_eq!(evaluate(&ppo, env.as_mut(), 3, EvalMode::Sampled).unwrap().mode, EvalMode::Sampled);
    let err = evaluate(&ppo, env.as_mut(), 3, EvalMode::FixedDraw).unwrap_err().to_string();
    assert!(err.contains("fixed-draw") && err.contains("ppo") && err.contains("without an initial noise"), "{err}");
    assert_eq!(EvalMode::ALL.map(|m| EvalMode::from_name(m.name())), EvalMode::ALL.map(Some));
}
