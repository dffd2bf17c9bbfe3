//! Learner throughput on pendulum: SAC µs per environment step with one gradient step each
//! (the cost `bench solve` is made of), and PPO env-steps/s including its updates.
//!
//! `cargo bench -p embodia-algos --bench learner_throughput`

use std::time::Instant;

use burn::tensor::Device;
use embodia_algos::{Learner, Ppo, PpoConfig, Sac, SacConfig};

// The same allocator as the `embodia` binary, so the figures match `bench solve`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let device = Device::flex().autodiff();
    for batch_size in [64, 100, 256] {
        // The pendulum preset (assets/configs/pendulum-sac.toml) at several batch sizes.
        let config = SacConfig {
            batch_size,
            hidden: vec![64, 64],
            learning_rate: 1e-3,
            learning_starts: 1_000,
            steps_per_iteration: 1_000,
            ..SacConfig::default()
        };
        let mut env = embodia_sim::make("pendulum", 1).unwrap();
        env.reset(1);
        let mut sac = Sac::new(config, env.as_ref(), device.clone(), 1).unwrap();
        sac.iterate(env.as_mut()).unwrap(); // random warm-up, fills the replay buffer
        let start = Instant::now();
        for _ in 0..3 {
            sac.iterate(env.as_mut()).unwrap();
        }
        let per_step = start.elapsed().as_secs_f64() / 3_000.0;
        println!(
            "sac pendulum batch={batch_size:<4} hidden=[64, 64]: {:.0} µs per env step (1 update each)",
            per_step * 1e6
        );
    }

    let config = PpoConfig { num_envs: 16, steps_per_env: 128, epochs: 10, gamma: 0.95, ..PpoConfig::default() };
    let mut env = embodia_sim::make("pendulum", config.num_envs).unwrap();
    env.reset(1);
    let mut ppo = Ppo::new(config, env.as_ref(), device, 0).unwrap();
    let start = Instant::now();
    for _ in 0..10 {
        ppo.iterate(env.as_mut()).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ppo pendulum 16 envs x 128 steps, 10 epochs x 4 mini-batches: {:.0} env-steps/s ({:.0} ms per iteration)",
        ppo.env_steps() as f64 / secs,
        secs * 100.0
    );
}
