//! A learner restored from its checkpoint (and its environment from a snapshot) continues
//! exactly as the original: same parameters after the same number of further iterations.

use burn::tensor::Device;
use embodia_algos::{Checkpoint, ExplorationNoise, Learner, Ppo, PpoConfig, Sac, SacConfig};
use embodia_sim::VecEnv;

fn continue_matches(task: &str, num_envs: usize, build: impl Fn(&dyn VecEnv) -> Box<dyn Learner>) {
    let mut env = embodia_sim::make(task, num_envs).unwrap();
    env.reset(3);
    let mut learner = build(env.as_ref());
    for _ in 0..2 {
        learner.iterate(env.as_mut()).unwrap();
    }
    let ckpt = learner.checkpoint().unwrap();
    let snapshot = env.snapshot();
    // Through the files, as a resumed run would read them.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("embodia-resume-{task}-{}-{run}", std::process::id()));
    ckpt.save(&dir).unwrap();
    let ckpt = Checkpoint::load(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    let rows_a: Vec<_> = (0..2).map(|_| learner.iterate(env.as_mut()).unwrap()).collect();
    let mut env_b = embodia_sim::make(task, num_envs).unwrap();
    env_b.restore(&snapshot).unwrap();
    let mut resumed = build(env_b.as_ref());
    resumed.restore(&ckpt).unwrap();
    let rows_b: Vec<_> = (0..2).map(|_| resumed.iterate(env_b.as_mut()).unwrap()).collect();

    assert_eq!(rows_a, rows_b, "metrics after resume differ");
    assert_eq!(learner.checkpoint().unwrap(), resumed.checkpoint().unwrap(), "state after resume differs");
}

#[test]
fn sac_with_pink_noise_resumes_exactly() {
    let config = SacConfig {
        exploration_noise: ExplorationNoise::Pink,
        hidden: vec![16, 16],
        batch_size: 32,
        learning_starts: 300,
        steps_per_iteration: 250,
        // 125 updates per iteration: resuming out of phase would update the actor at the wrong steps.
        actor_update_interval: 3,
        ..SacConfig::default()
    };
    continue_matches("mountain-car-continuous", 2, |env| {
        Box::new(Sac::new(config.clone(), env, Device::flex().autodiff(), 5).unwrap())
    });
}

#[test]
fn sac_rlpd_with_an_ensemble_and_demonstrations_resumes_exactly() {
    use embodia_sim::demonstrations::{Demonstrations, Episode};
    let config = SacConfig {
        hidden: vec![16, 16],
        batch_size: 32,
        learning_starts: 300,
        steps_per_iteration: 250,
        critics: 5,
        critic_subset: 2,
        layer_norm: true,
        updates_per_step: 2,
        ..SacConfig::default()
    };
    // A terminated pendulum "episode" of 40 steps: demonstrations the batches draw half from.
    let episode = Episode {
        observations: (0..120).map(|i| ((i as f32) * 0.37).sin()).collect(),
        actions: (0..40).map(|t| ((t as f32) * 0.11).cos() * 2.0).collect(),
        rewards: (0..40).map(|t| -(t as f32) * 0.01).collect(),
        terminated: true,
        ..Default::default()
    };
    let demos = Demonstrations {
        task: "pendulum".into(),
        fps: 20.0,
        obs_dim: 3,
        action_dim: 1,
        episodes: vec![episode],
        cameras: Vec::new(),
        state_dim: 0,
    };
    continue_matches("pendulum", 1, |env| {
        let mut sac = Sac::new(config.clone(), env, Device::flex().autodiff(), 5).unwrap();
        sac.add_demonstrations(&demos).unwrap();
        Box::new(sac)
    });
}

#[test]
fn ppo_resumes_exactly() {
    let config = PpoConfig { num_envs: 4, steps_per_env: 64, hidden: vec![16, 16], ..PpoConfig::default() };
    continue_matches("pendulum", 4, |env| {
        Box::new(Ppo::new(config.clone(), env, Device::flex().autodiff(), 5).unwrap())
    });
}

#[test]
fn restoring_another_algorithms_checkpoint_is_refused() {
    let mut env = embodia_sim::make("pendulum", 4).unwrap();
    env.reset(0);
    let ppo = Ppo::new(PpoConfig { num_envs: 4, ..PpoConfig::default() }, env.as_ref(), Device::flex().autodiff(), 0)
        .unwrap();
    let mut sac = Sac::new(SacConfig::default(), env.as_ref(), Device::flex().autodiff(), 0).unwrap();
    let err = sac.restore(&ppo.checkpoint().unwrap()).unwrap_err().to_string();
    assert!(err.contains("`ppo`"), "{err}");
}
