use super::*;
use crate::{SimError, VecEnv};
use rand_chacha::rand_core::{RngCore, SeedableRng};

fn random_actions<T: ClassicTask>(rng: &mut ChaCha8Rng, env: &ClassicEnv<T>, out: &mut [f32]) {
    // 1.5× the bounds, so clipping is exercised.
    let b = &env.action_spec().bounds;
    let ad = b.dim();
    for (k, a) in out.iter_mut().enumerate() {
        let (lo, hi) = (b.low[k % ad], b.high[k % ad]);
        let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
        *a = 1.5 * (lo + (hi - lo) * u);
    }
}

fn assert_bits_eq(a: &StepBuffers, b: &StepBuffers, ctx: &str) {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.obs), bits(&b.obs), "obs differ: {ctx}");
    assert_eq!(bits(&a.reward), bits(&b.reward), "reward differs: {ctx}");
    assert_eq!(bits(&a.terminated), bits(&b.terminated), "terminated differs: {ctx}");
    assert_eq!(bits(&a.truncated), bits(&b.truncated), "truncated differs: {ctx}");
    assert_eq!(bits(&a.success), bits(&b.success), "success differs: {ctx}");
    assert_eq!(bits(&a.final_obs), bits(&b.final_obs), "final_obs differs: {ctx}");
    assert_eq!(bits(&a.episode_return), bits(&b.episode_return), "return differs: {ctx}");
    assert_eq!(a.episode_length, b.episode_length, "length differs: {ctx}");
}

/// Steps a batch in a 1-thread pool and a 2-thread pool side by side; every buffer must agree
/// bit for bit at every step, across auto-resets.
fn same_results_for_one_and_two_threads<T: ClassicTask + Default>(num_envs: usize, steps: usize) {
    assert!(num_envs >= PARALLEL_THRESHOLD);
    let p1 = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let p2 = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut e1 = ClassicEnv::<T>::new(num_envs).unwrap();
    let mut e2 = ClassicEnv::<T>::new(num_envs).unwrap();
    e1.reset(1234);
    e2.reset(1234);
    assert_bits_eq(e1.buffers(), e2.buffers(), "after reset");
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let mut actions = vec![0.0; num_envs * T::ACTION_DIM];
    let mut ended = 0usize;
    for t in 0..steps {
        random_actions(&mut rng, &e1, &mut actions);
        p1.install(|| e1.step(&actions)).unwrap();
        p2.install(|| e2.step(&actions)).unwrap();
        assert_bits_eq(e1.buffers(), e2.buffers(), &format!("step {t}"));
        ended += (0..num_envs).filter(|&i| e1.buffers().done(i)).count();
    }
    assert!(ended >= num_envs, "the rollout must cross auto-resets");
}

#[test]
fn pendulum_same_results_for_one_and_two_threads() {
    same_results_for_one_and_two_threads::<Pendulum>(PARALLEL_THRESHOLD + 77, 450);
}

#[test]
fn mountain_car_same_results_for_one_and_two_threads() {
    same_results_for_one_and_two_threads::<MountainCarContinuous>(PARALLEL_THRESHOLD + 5, 1100);
}

/// Environment `i` of a large (parallel) batch behaves exactly like environment `i` of a small
/// (sequential) batch: the parallel split changes nothing.
fn parallel_batch_matches_sequential_batch<T: ClassicTask + Default>(steps: usize) {
    let (big, small) = (PARALLEL_THRESHOLD + 13, 40);
    let mut eb = ClassicEnv::<T>::new(big).unwrap();
    let mut es = ClassicEnv::<T>::new(small).unwrap();
    eb.reset(5);
    es.reset(5);
    let ad = T::ACTION_DIM;
    let od = T::OBS_DIM;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut ab = vec![0.0; big * ad];
    for _ in 0..steps {
        random_actions(&mut rng, &eb, &mut ab);
        eb.step(&ab).unwrap();
        es.step(&ab[..small * ad]).unwrap();
        let (b, s) = (eb.buffers(), es.buffers());
        assert_eq!(&b.obs[..small * od], &s.obs[..]);
        assert_eq!(&b.final_obs[..small * od], &s.final_obs[..]);
        assert_eq!(&b.reward[..small], &s.reward[..]);
        assert_eq!(&b.truncated[..small], &s.truncated[..]);
        assert_eq!(&b.terminated[..small], &s.terminated[..]);
    }
}

#[test]
fn pendulum_parallel_batch_matches_sequential_batch() {
    parallel_batch_matches_sequential_batch::<Pendulum>(250);
}

#[test]
fn mountain_car_parallel_batch_matches_sequential_batch() {
    parallel_batch_matches_sequential_batch::<MountainCarContinuous>(1000);
}

/// Step `n`, snapshot, step `m`; restore into a fresh batch (through JSON), step the same `m`:
/// identical, across auto-resets (which draw from the restored generators).
fn snapshot_restore_continues_exactly<T: ClassicTask + Default>(num_envs: usize, n: usize, m: usize) {
    let mut env = ClassicEnv::<T>::new(num_envs).unwrap();
    env.reset(77);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut actions = vec![0.0; num_envs * T::ACTION_DIM];
    for _ in 0..n {
        random_actions(&mut rng, &env, &mut actions);
        env.step(&actions).unwrap();
    }
    let snap = env.snapshot();
    let json = serde_json::to_string(&snap).unwrap();
    let snap2: EnvSnapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(snap, snap2, "snapshot must survive JSON exactly");

    let mut later_actions = Vec::new();
    let mut first = Vec::new();
    for _ in 0..m {
        random_actions(&mut rng, &env, &mut actions);
        env.step(&actions).unwrap();
        later_actions.push(actions.clone());
        first.push(env.buffers().clone());
    }

    let mut fresh = ClassicEnv::<T>::new(num_envs).unwrap();
    fresh.reset(1); // different seed: restore must override everything
    fresh.restore(&snap2).unwrap();
    assert_eq!(fresh.buffers().obs, snap.obs);
    for (t, (acts, expect)) in later_actions.iter().zip(&first).enumerate() {
        fresh.step(acts).unwrap();
        assert_bits_eq(fresh.buffers(), expect, &format!("step {t} after restore"));
    }
    assert_eq!(fresh.snapshot(), env.snapshot());
}

#[test]
fn pendulum_snapshot_restore_continues_exactly() {
    snapshot_restore_continues_exactly::<Pendulum>(7, 150, 320);
    snapshot_restore_continues_exactly::<Pendulum>(PARALLEL_THRESHOLD, 150, 120);
}

#[test]
fn mountain_car_snapshot_restore_continues_exactly() {
    snapshot_restore_continues_exactly::<MountainCarContinuous>(7, 900, 250);
}

#[test]
fn restore_rejects_mismatched_snapshots() {
    let mut p = PendulumEnv::new(4).unwrap();
    let m = MountainCarContinuousEnv::new(4).unwrap();
    let before = p.snapshot();
    let err = p.restore(&m.snapshot()).unwrap_err();
    assert!(matches!(err, SimError::SnapshotMismatch(_)), "{err}");
    assert!(err.to_string().contains("mountain-car-continuous"), "{err}");

    let small = PendulumEnv::new(3).unwrap().snapshot();
    assert!(matches!(p.restore(&small), Err(SimError::SnapshotMismatch(_))));

    let mut bad = before.clone();
    bad.state[1] = f64::NAN;
    assert!(matches!(p.restore(&bad), Err(SimError::SnapshotMismatch(_))));
    let mut bad = before.clone();
    bad.elapsed[0] = 200;
    assert!(matches!(p.restore(&bad), Err(SimError::SnapshotMismatch(_))));
    assert_eq!(p.snapshot(), before, "a failed restore changes nothing");
}

#[test]
fn wrong_action_length_is_an_error_and_changes_nothing() {
    let mut env = PendulumEnv::new(4).unwrap();
    let before = env.snapshot();
    let err = env.step(&[0.0; 3]).unwrap_err();
    assert_eq!(err, SimError::ActionLength { expected: 4, got: 3 });
    assert_eq!(err.to_string(), "action buffer has 3 values; expected 4 (num_envs × action_dim)");
    assert_eq!(env.step(&[0.0; 5]).unwrap_err(), SimError::ActionLength { expected: 4, got: 5 });
    assert_eq!(env.snapshot(), before);
}

#[test]
fn non_finite_action_is_an_error_and_changes_nothing() {
    let mut env = MountainCarContinuousEnv::new(4).unwrap();
    let before = env.snapshot();
    let err = env.step(&[0.0, 0.5, f32::NAN, 0.0]).unwrap_err();
    assert_eq!(err, SimError::NonFiniteAction { env: 2, index: 0 });
    assert_eq!(err.to_string(), "action component 0 of environment 2 is not finite");
    let err = env.step(&[f32::INFINITY, 0.0, 0.0, f32::NEG_INFINITY]).unwrap_err();
    assert_eq!(err, SimError::NonFiniteAction { env: 0, index: 0 });
    assert_eq!(env.snapshot(), before);
}

#[test]
fn zero_envs_is_an_error() {
    assert_eq!(PendulumEnv::new(0).unwrap_err(), SimError::ZeroEnvs);
    assert_eq!(MountainCarContinuousEnv::new(0).unwrap_err(), SimError::ZeroEnvs);
}

#[test]
fn set_state_validates_and_updates_obs() {
    let mut env = PendulumEnv::new(2).unwrap();
    assert!(matches!(env.set_state(2, &[0.0, 0.0]), Err(SimError::InvalidState(_))));
    assert!(matches!(env.set_state(0, &[0.0]), Err(SimError::InvalidState(_))));
    assert!(matches!(env.set_state(0, &[0.0, f64::INFINITY]), Err(SimError::InvalidState(_))));
    env.set_state(1, &[0.0, 0.5]).unwrap();
    assert_eq!(&env.buffers().obs[3..6], &[1.0, 0.0, 0.5]);
    assert_eq!(env.state(1), Some(vec![0.0, 0.5]));
    assert_eq!(env.state(2), None);
}

#[test]
fn reset_is_deterministic_and_seed_dependent() {
    let mut a = PendulumEnv::new(16).unwrap();
    let mut b = PendulumEnv::new(16).unwrap();
    a.reset(3);
    b.reset(3);
    assert_eq!(a.buffers().obs, b.buffers().obs);
    b.reset(4);
    assert_ne!(a.buffers().obs, b.buffers().obs);
    // Environments in one batch differ from each other.
    assert_ne!(&a.buffers().obs[0..3], &a.buffers().obs[3..6]);
}

#[test]
fn initial_state_distributions() {
    let mut p = PendulumEnv::new(2000).unwrap();
    p.reset(0);
    let (mut th_min, mut th_max, mut w_min, mut w_max) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for i in 0..2000 {
        let s = p.state(i).unwrap();
        th_min = th_min.min(s[0]);
        th_max = th_max.max(s[0]);
        w_min = w_min.min(s[1]);
        w_max = w_max.max(s[1]);
    }
    let pi = std::f64::consts::PI;
    assert!((-pi..-pi + 0.05).contains(&th_min) && (pi - 0.05..pi).contains(&th_max));
    assert!((-1.0..-0.98).contains(&w_min) && (0.98..1.0).contains(&w_max));

    let mut m = MountainCarContinuousEnv::new(2000).unwrap();
    m.reset(0);
    for i in 0..2000 {
        let s = m.state(i).unwrap();
        assert!((-0.6..-0.4).contains(&s[0]));
        assert_eq!(s[1], 0.0);
    }
}

#[test]
fn pendulum_truncates_at_200_and_auto_resets() {
    let n = 3;
    let mut env = PendulumEnv::new(n).unwrap();
    env.reset(9);
    let actions = [0.5_f32, -1.0, 3.0];
    let mut sums = [0.0_f64; 3];
    for t in 1..=200u32 {
        env.step(&actions).unwrap();
        let b = env.buffers();
        for (i, sum) in sums.iter_mut().enumerate() {
            *sum += f64::from(b.reward[i]);
            assert_eq!(b.terminated[i], 0.0);
            assert_eq!(b.success[i], 0.0);
            if t < 200 {
                assert_eq!(b.truncated[i], 0.0);
                assert_eq!(b.final_obs, b.obs);
                assert_eq!(b.episode_length[i], 0);
            } else {
                assert_eq!(b.truncated[i], 1.0);
                assert_eq!(b.episode_length[i], 200);
                assert!((f64::from(b.episode_return[i]) - *sum).abs() < 1e-3);
                assert_ne!(&b.final_obs[i * 3..i * 3 + 3], &b.obs[i * 3..i * 3 + 3]);
            }
        }
    }
    // The new episode continues normally.
    env.step(&actions).unwrap();
    assert!((0..n).all(|i| !env.buffers().done(i)));
}

#[test]
fn mountain_car_goal_sets_terminated_and_success() {
    // Bang-bang energy pumping reaches the goal well within the time limit.
    let n = 8;
    let mut env = MountainCarContinuousEnv::new(n).unwrap();
    env.reset(2);
    let mut reached = [false; 8];
    let mut actions = vec![0.0_f32; n];
    for _ in 0..400 {
        for (a, o) in actions.iter_mut().zip(env.buffers().obs.chunks_exact(2)) {
            *a = if o[1] >= 0.0 { 1.0 } else { -1.0 };
        }
        env.step(&actions).unwrap();
        let b = env.buffers();
        for (i, reached) in reached.iter_mut().enumerate() {
            assert_eq!(b.success[i], b.terminated[i]);
            if b.terminated[i] > 0.0 {
                *reached = true;
                assert!(b.final_obs[2 * i] >= 0.45);
                assert!(b.reward[i] > 99.0);
                assert!(b.episode_return[i] > 80.0);
                assert!((-0.6..-0.4).contains(&b.obs[2 * i]));
                assert_eq!(b.obs[2 * i + 1], 0.0);
            }
        }
    }
    assert!(reached.iter().all(|&r| r));
}
