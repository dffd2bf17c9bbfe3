use super::*;
use crate::VecEnv;
use crate::classic::quadrotor_tasks::{InitialState, ObservationNoise, Randomization};
use crate::classic::{Quadrotor, QuadrotorEnv};
use crate::dynamics::flight::OBS_DIM as OBS;
use burn::tensor::Tensor;

/// Tensor environments draw from the device's generator, which `reset` seeds; tests running in
/// parallel on one device would interleave their draws, so each test holds this lock.
static DEVICE_RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn device() -> Device {
    Device::flex()
}

/// A hover task with one fixed initial state and no randomness, so CPU and tensor runs must
/// agree.
fn deterministic_hover() -> Quadrotor {
    let mut task = Quadrotor::hover();
    task.init = InitialState { position: 0.0, max_angle: 0.0, velocity: 0.0, angular_velocity: 0.0 };
    task.randomization = Randomization { mass: 0.0, thrust_coefficient: 0.0, motor_time_constant: 0.0 };
    task.noise = ObservationNoise { position: 0.0, orientation: 0.0, velocity: 0.0, angular_velocity: 0.0 };
    task
}

#[test]
fn tensor_quadrotor_follows_the_cpu_quadrotor() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let task = deterministic_hover();
    let n = 3;
    let mut cpu = QuadrotorEnv::with_task(task, n).unwrap();
    let mut gpu = TensorEnv::new(BatchQuadrotor(task), n, &device()).unwrap();
    assert_eq!(cpu.buffers().obs, gpu.buffers().obs);
    for k in 0..120 {
        let actions: Vec<f32> = (0..n * 4).map(|j| 0.33 + 0.05 * (((j * 3 + k) % 7) as f32 - 3.0) / 3.0).collect();
        cpu.step(&actions).unwrap();
        gpu.step(&actions).unwrap();
        let (a, b) = (cpu.buffers(), gpu.buffers());
        for (x, y) in a.obs.iter().zip(&b.obs) {
            assert!((x - y).abs() < 1e-4 * x.abs().max(1.0), "step {k}: cpu {x} vs tensor {y}");
        }
        for (x, y) in a.reward.iter().zip(&b.reward) {
            assert!((x - y).abs() < 1e-4, "step {k}: reward cpu {x} vs tensor {y}");
        }
        assert_eq!(a.terminated, b.terminated, "step {k}");
    }
}

#[test]
fn hover_command_holds_and_succeeds_as_a_tensor_batch() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let task = deterministic_hover();
    let mut env = TensorEnv::new(BatchQuadrotor(task), 2, &device()).unwrap();
    let hover = 2.0 * task.hover_throttle() - 1.0;
    let actions = Tensor::<2>::full([2, 4], hover, &device());
    let mut last = None;
    for _ in 0..300 {
        last = Some(env.step_tensor(actions.clone()).unwrap());
    }
    let last = last.unwrap();
    let host = |t: Tensor<1>| t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
    assert_eq!(host(last.truncated), [1.0, 1.0]);
    assert_eq!(host(last.success), [1.0, 1.0]);
    assert_eq!(host(last.episode_length), [300.0, 300.0]);
    assert!(host(last.episode_return).iter().all(|r| *r > 299.0));
}

#[test]
fn falling_quadrotors_terminate_and_reset() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = make_tensor("quadrotor-hover", 64, &device()).unwrap();
    let off = vec![-1.0; 64 * 4];
    let mut ended = [false; 64];
    for _ in 0..80 {
        env.step(&off).unwrap();
        let b = env.buffers();
        for (i, ended) in ended.iter_mut().enumerate() {
            if b.terminated[i] > 0.0 {
                *ended = true;
                assert_eq!(b.success[i], 0.0);
                assert!(b.episode_length[i] > 0);
                // The new episode starts inside the initial box (±0.2 m, plus noise).
                assert!(b.obs[i * OBS..i * OBS + 3].iter().all(|p| p.abs() < 0.25));
            }
        }
    }
    assert!(ended.iter().all(|&e| e), "without thrust every quadrotor leaves the 0.6 m box");
}

#[test]
fn pendulum_batch_truncates_at_its_time_limit() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = make_tensor("pendulum", 5, &device()).unwrap();
    let zero = vec![0.0; 5];
    for k in 1..=200 {
        env.step(&zero).unwrap();
        let b = env.buffers();
        let want = if k == 200 { 1.0 } else { 0.0 };
        assert!(b.truncated.iter().all(|&t| t == want), "step {k}");
        assert!(b.reward.iter().all(|&r| r <= 0.0));
    }
    let b = env.buffers();
    assert!(b.episode_length.iter().all(|&l| l == 200));
    assert_ne!(b.obs, b.final_obs, "auto-reset started new episodes");
}

#[test]
fn cartpole_balance_without_force_falls_and_swingup_starts_hanging() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = make_tensor("cartpole-balance", 8, &device()).unwrap();
    let zero = vec![0.0; 8];
    let mut lengths = Vec::new();
    for _ in 0..200 {
        env.step(&zero).unwrap();
        let b = env.buffers();
        for i in 0..8 {
            if b.terminated[i] > 0.0 {
                assert_eq!(b.episode_return[i], b.episode_length[i] as f32, "+1 per step");
                lengths.push(b.episode_length[i]);
            }
        }
    }
    assert!(lengths.len() >= 8 && lengths.iter().all(|&l| l < 200), "{lengths:?}");
    let swing = make_tensor("cartpole-swingup", 4, &device()).unwrap();
    let obs = &swing.buffers().obs;
    assert!((0..4).all(|i| obs[i * 5 + 2] < -0.99), "cos θ ≈ −1 hanging down: {obs:?}");
}

#[test]
fn tensor_envs_reject_bad_input_and_restore() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = make_tensor("cartpole-swingup", 2, &device()).unwrap();
    assert_eq!(env.step(&[0.0; 3]).err(), Some(SimError::ActionLength { expected: 2, got: 3 }));
    assert_eq!(env.step(&[0.0, f32::NAN]).err(), Some(SimError::NonFiniteAction { env: 1, index: 0 }));
    let snap = env.snapshot();
    assert_eq!(snap.state.len(), 2 * 4);
    assert!(matches!(env.restore(&snap), Err(SimError::Unsupported(_))));
    assert!(matches!(make_tensor("ant-run", 1, &device()), Err(SimError::UnknownTask { .. })));
    assert_eq!(
        make_tensor("pendulum", 0, &device()).err().map(|e| e.to_string()),
        Some(SimError::ZeroEnvs.to_string())
    );
}

#[test]
fn same_seed_same_rollout() {
    let _rng = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let run = || {
        let mut env = make_tensor("quadrotor-track", 4, &device()).unwrap();
        env.reset(9);
        for _ in 0..5 {
            env.step(&[0.3; 16]).unwrap();
        }
        env.buffers().obs.clone()
    };
    assert_eq!(run(), run());
}
