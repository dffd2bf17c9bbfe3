//! Compares the rapier joint models on a floating-base task: env-steps/s, where the robot
//! settles with zero actions, and the largest body speed under uniform random actions.
//!
//! `RAYON_NUM_THREADS=1 cargo run -p embodia-sim --release --example joint_models -- ant-run 16 200`

use std::time::Instant;

use embodia_sim::VecEnv;
use embodia_sim::rapier::{JointModel, RapierEnv, rapier_tasks};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let task = args.get(1).map_or("ant-run", |s| s.as_str());
    let n: usize = args.get(2).map_or(16, |s| s.parse().expect("number of envs"));
    let steps: usize = args.get(3).map_or(200, |s| s.parse().expect("number of steps"));
    let entry = rapier_tasks().into_iter().find(|t| t.info.name == task).expect("a rapier task");
    for model in [JointModel::Reduced, JointModel::Impulse] {
        let mut config = (entry.config)();
        config.scene.joint_model = model;
        let robot = embodia_robots::builtin::builtin(&config.scene.robot).expect("built-in robot");
        for random in [false, true] {
            let mut env = RapierEnv::new(entry.info.clone(), config.clone(), robot.clone(), n).expect("env");
            let dim = env.action_spec().bounds.dim();
            let mut actions = vec![0.0f32; n * dim];
            let mut seed: u64 = 1;
            let (mut elapsed, mut dones, mut max_speed) = (0.0, 0, 0.0f32);
            for _ in 0..steps {
                if random {
                    for a in &mut actions {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        *a = (seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                    }
                }
                let t = Instant::now();
                env.step(&actions).expect("step");
                elapsed += t.elapsed().as_secs_f64();
                dones += (0..n).filter(|&i| env.buffers().done(i)).count();
                for scene in env.scenes() {
                    for (_, body) in scene.world().bodies.iter() {
                        max_speed = max_speed.max(body.linvel().length());
                    }
                }
            }
            let heights: Vec<f32> =
                env.scenes().iter().map(|s| s.world().bodies[s.robot().root()].translation().z).collect();
            let mean = heights.iter().sum::<f32>() / n as f32;
            let (lo, hi) = heights.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &h| (lo.min(h), hi.max(h)));
            println!(
                "{task} {model:?} {}: {:.0} env-steps/s; root z mean {mean:.3} [{lo:.3}, {hi:.3}] m; episodes ended {dones}; max body speed {max_speed:.2} m/s",
                if random { "random" } else { "zero" },
                (n * steps) as f64 / elapsed,
            );
        }
    }
}
