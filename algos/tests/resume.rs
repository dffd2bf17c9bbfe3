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
    let dir = std::env::temp_dir().join(format!("embodia-resume-{task}-{}", std::process::id()));
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
