//! Learning checks: each algorithm trains pendulum to the solve threshold with a fixed seed.
//! (`embodia bench solve` reports the full figures over several seeds.)

use burn::tensor::Device;
use embodia_algos::{EvalMode, ExplorationNoise, Learner, Ppo, PpoConfig, Sac, SacConfig, TargetEntropy, evaluate};

/// Trains until a 10-episode deterministic evaluation reaches the threshold or the budget is
/// spent; returns the env steps at which it solved.
fn steps_to_solve(learner: &mut dyn Learner, env: &mut dyn embodia_sim::VecEnv, budget: u64) -> Option<u64> {
    let threshold = env.info().solve_threshold as f64;
    let mut eval_env = embodia_sim::make(env.info().name, 10).unwrap();
    while learner.env_steps() < budget {
        let row = learner.iterate(env).unwrap();
        assert!(row.value_loss.is_none_or(f64::is_finite));
        let result = evaluate(learner, eval_env.as_mut(), 12345, EvalMode::Zero).unwrap();
        if result.mean_return >= threshold {
            return Some(learner.env_steps());
        }
    }
    None
}

#[test]
fn sac_solves_pendulum() {
    // The pendulum preset of assets/configs/pendulum-sac.toml.
    let config = SacConfig {
        batch_size: 100,
        learning_starts: 1_000,
        learning_rate: 1e-3,
        hidden: vec![64, 64],
        ..SacConfig::default()
    };
    let mut env = embodia_sim::make("pendulum", config.num_envs).unwrap();
    env.reset(1);
    let mut sac = Sac::new(config, env.as_ref(), Device::flex().autodiff(), 1).unwrap();
    let solved = steps_to_solve(&mut sac, env.as_mut(), 10_000);
    assert!(solved.is_some(), "SAC did not reach -200 within 10k steps");
}

#[test]
fn ppo_solves_pendulum() {
    // The pendulum preset of assets/configs/pendulum-ppo.toml.
    let config = PpoConfig { num_envs: 16, steps_per_env: 128, epochs: 10, gamma: 0.95, ..PpoConfig::default() };
    let mut env = embodia_sim::make("pendulum", config.num_envs).unwrap();
    env.reset(1);
    let mut ppo = Ppo::new(config, env.as_ref(), Device::flex().autodiff(), 1).unwrap();
    let solved = steps_to_solve(&mut ppo, env.as_mut(), 250_000);
    assert!(solved.is_some(), "PPO did not reach -200 within 250k steps");
}

#[test]
fn sac_with_pink_noise_solves_mountain_car() {
    // The preset of assets/configs/mountain-car-continuous-sac.toml; with white noise SAC stays
    // at return 0 on this task.
    let config = SacConfig {
        exploration_noise: ExplorationNoise::Pink,
        batch_size: 100,
        learning_starts: 1_000,
        learning_rate: 1e-3,
        hidden: vec![64, 64],
        ..SacConfig::default()
    };
    let mut env = embodia_sim::make("mountain-car-continuous", 1).unwrap();
    env.reset(1);
    let mut sac = Sac::new(config, env.as_ref(), Device::flex().autodiff(), 1).unwrap();
    let solved = steps_to_solve(&mut sac, env.as_mut(), 20_000);
    assert!(solved.is_some(), "SAC with pink noise did not reach 90 within 20k steps");
}

#[test]
fn sac_learns_to_hover_the_quadrotor() {
    // The quadrotor-hover preset of assets/configs/quadrotor-hover-sac.toml, on a short budget.
    let config = SacConfig {
        num_envs: 4,
        batch_size: 64,
        learning_starts: 5_000,
        learning_rate: 1e-3,
        init_alpha: 0.1,
        target_entropy: TargetEntropy::Nats(-8.0),
        hidden: vec![64, 64],
        ..SacConfig::default()
    };
    let mut env = embodia_sim::make("quadrotor-hover", config.num_envs).unwrap();
    env.reset(1);
    let mut eval_env = embodia_sim::make("quadrotor-hover", 20).unwrap();
    let mut sac = Sac::new(config, env.as_ref(), Device::flex().autodiff(), 1).unwrap();
    let success = |sac: &Sac, eval_env: &mut dyn embodia_sim::VecEnv| {
        evaluate(sac, eval_env, 777, EvalMode::Zero).unwrap().success_rate.expect("hover reports success")
    };
    let before = success(&sac, eval_env.as_mut());
    let mut best = 0.0f64;
    while sac.env_steps() < 120_000 && best < 0.5 {
        sac.iterate(env.as_mut()).unwrap();
        if sac.env_steps() >= 40_000 && sac.env_steps().is_multiple_of(4_000) {
            best = best.max(success(&sac, eval_env.as_mut()));
        }
    }
    eprintln!("quadrotor-hover success: {before} before, best {best} after 40k–{} steps", sac.env_steps());
    assert_eq!(before, 0.0, "an untrained policy does not hover");
    assert!(best >= 0.5, "SAC hovered (within 10 cm after 2 s) in only {best} of 20 episodes");
}
