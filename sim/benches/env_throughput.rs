//! Environment throughput: env-steps per second of the classic-control tasks.
//!
//! `cargo bench -p embodia-sim --bench env_throughput` (set `EMBODIA_BENCH_SECS` to change the
//! measured time per configuration, default 2 s). Actions are random, drawn once before timing
//! (64 steps' worth, cycled), within the action bounds. Environments are stepped through
//! `Box<dyn VecEnv>` as a training loop would; auto-resets are included.

use embodia_sim::{VecEnv, make};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use std::time::{Duration, Instant};

const ACTION_STEPS: usize = 64;

fn precomputed_actions(env: &dyn VecEnv) -> Vec<f32> {
    let b = &env.action_spec().bounds;
    let ad = b.dim();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    (0..ACTION_STEPS * env.num_envs() * ad)
        .map(|k| {
            let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
            b.low[k % ad] + (b.high[k % ad] - b.low[k % ad]) * u
        })
        .collect()
}

/// Steps `env` for about `secs`, returning env-steps per second.
fn measure(env: &mut dyn VecEnv, secs: f64) -> f64 {
    let actions = precomputed_actions(env);
    let per_step = actions.len() / ACTION_STEPS;
    let mut k = 0;
    let mut step = |env: &mut dyn VecEnv| {
        env.step(&actions[k * per_step..(k + 1) * per_step]).expect("valid actions");
        k = (k + 1) % ACTION_STEPS;
    };
    // Check the clock about every 2^16 env-steps (at least every batch step).
    let batch = (65_536 / env.num_envs()).max(1);
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs_f64(0.2_f64.min(secs)) {
        for _ in 0..batch {
            step(env);
        }
    }
    let start = Instant::now();
    let mut steps = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        for _ in 0..batch {
            step(env);
        }
        steps += batch as u64;
    }
    (steps * env.num_envs() as u64) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let secs: f64 = std::env::var("EMBODIA_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let threads = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("thread pool");
    println!("embodia-sim env throughput ({secs} s per configuration, rayon threads: {threads})");
    println!("{:<26} {:>9} {:>8} {:>16} {:>12}", "task", "num_envs", "threads", "env-steps/s", "ns/env-step");
    // (task, num_envs, force one thread)
    let configs: [(&str, usize, bool); 10] = [
        ("pendulum", 1, false),
        ("pendulum", 256, false),
        ("pendulum", 4096, true),
        ("pendulum", 4096, false),
        ("pendulum", 65536, true),
        ("pendulum", 65536, false),
        ("mountain-car-continuous", 1, false),
        ("mountain-car-continuous", 4096, true),
        ("mountain-car-continuous", 4096, false),
        ("mountain-car-continuous", 65536, false),
    ];
    for (task, n, single_thread) in configs {
        let mut env = make(task, n).expect("registered task");
        env.reset(0);
        let (rate, t) = if single_thread {
            (one.install(|| measure(env.as_mut(), secs)), 1)
        } else {
            let t = if n >= embodia_sim::classic::PARALLEL_THRESHOLD { threads } else { 1 };
            (measure(env.as_mut(), secs), t)
        };
        println!("{task:<26} {n:>9} {t:>8} {rate:>16.0} {:>12.2}", 1e9 / rate);
    }
}
