//! A task runs the same whether `scene.robot` names a built-in robot (its URDF) or the MJCF
//! file generated from the same numbers (`assets/robots/*.xml`).

use embodia_sim::{VecEnv, make_with, task_config};

/// Deterministic pseudo-random actions in [-1, 1].
fn actions(step: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let x = ((step * 7919 + i * 104_729) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Observations, rewards and done flags of `steps` steps of `task` with `robot`.
fn rollout(task: &str, robot: &str, envs: usize, steps: usize) -> Vec<(Vec<f32>, Vec<f32>, Vec<f32>)> {
    let mut config = task_config(task).unwrap();
    config.scene.robot = robot.to_string();
    let mut env = make_with(task, envs, Some(&config)).unwrap_or_else(|e| panic!("{task} with {robot}: {e}"));
    env.reset(7);
    let dim = env.action_spec().bounds.dim();
    let mut out = vec![(env.buffers().obs.clone(), vec![], vec![])];
    for step in 0..steps {
        env.step(&actions(step, envs * dim)).unwrap();
        let b = env.buffers();
        let done: Vec<f32> = b.terminated.iter().zip(&b.truncated).map(|(t, u)| t + 2.0 * u).collect();
        out.push((b.obs.clone(), b.reward.clone(), done));
    }
    out
}

#[test]
fn tasks_give_the_same_trajectories_with_the_urdf_and_the_mjcf_robot() {
    let assets = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/robots");
    // (task, built-in robot)
    let cases = [("reach", "so101"), ("reach-arm7", "arm7"), ("ant-run", "ant"), ("quadruped-velocity", "quadruped12")];
    let (envs, steps) = (4, 200);
    for (task, robot) in cases {
        let urdf = rollout(task, robot, envs, steps);
        let mjcf = rollout(task, &format!("{assets}/{robot}.xml"), envs, steps);
        let mut worst = (0.0f32, 0usize);
        for (step, (a, b)) in urdf.iter().zip(&mjcf).enumerate() {
            assert_eq!(a.2, b.2, "{task}: episodes end at the same steps (step {step})");
            for (x, y) in a.0.iter().zip(&b.0).chain(a.1.iter().zip(&b.1)) {
                let d = (x - y).abs() / (1.0 + x.abs());
                if d > worst.0 {
                    worst = (d, step);
                }
            }
        }
        // Printed for the record (cargo test -- --nocapture); the bound is what is asserted.
        println!("{task}: largest relative difference {:.3e} at step {} of {steps}", worst.0, worst.1);
        assert!(worst.0 <= 1e-4, "{task}: observations or rewards differ by {:.3e} at step {}", worst.0, worst.1);
    }
}
