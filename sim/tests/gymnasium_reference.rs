//! Replays trajectories recorded from gymnasium (`tests/reference/generate.py`) and checks that
//! embodia's environments reproduce them: observations and rewards to 1e-5, `terminated` and
//! `truncated` exactly, plus `final_obs`, episode return and length where an episode ends.
//!
//! Each episode starts from gymnasium's own initial state (set with `set_state`, since the
//! generators differ). All episodes of a task run side by side in one batch, once as a small
//! batch (sequential path) and once replicated into a batch of at least `PARALLEL_THRESHOLD`
//! (rayon path).

use embodia_sim::VecEnv;
use embodia_sim::classic::{ClassicEnv, ClassicTask, MountainCarContinuous, PARALLEL_THRESHOLD, Pendulum};
use serde::Deserialize;

const TOL: f64 = 1e-5;

#[derive(Deserialize)]
struct RefFile {
    gymnasium: String,
    task: String,
    env_id: String,
    episodes: Vec<Episode>,
}

#[derive(Deserialize)]
struct Episode {
    seed: u64,
    policy: String,
    initial_state: Vec<f64>,
    initial_obs: Vec<f64>,
    actions: Vec<f64>,
    obs: Vec<Vec<f64>>,
    reward: Vec<f64>,
    terminated: Vec<u8>,
    truncated: Vec<u8>,
}

fn load(name: &str) -> RefFile {
    let path = format!("{}/tests/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Largest deviations seen, and how many values were bit-identical to gymnasium's f32 value.
#[derive(Default)]
struct MaxErr {
    obs: f64,
    reward: f64,
    exact: usize,
    total: usize,
}

impl MaxErr {
    fn count(&mut self, got: f32, want: f64) {
        self.total += 1;
        self.exact += usize::from(got == want as f32);
    }
}

fn check_close(got: &[f32], want: &[f64], what: &str, err: &mut MaxErr) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let d = (f64::from(g) - w).abs();
        err.obs = err.obs.max(d);
        err.count(g, w);
        assert!(d <= TOL, "{what}[{k}]: got {g}, gymnasium {w} (|diff| {d:e})");
    }
}

fn replay<T: ClassicTask + Default>(file: &RefFile, replicas: usize) -> MaxErr {
    let eps = &file.episodes;
    let n = eps.len() * replicas;
    let od = T::OBS_DIM;
    let mut env = ClassicEnv::<T>::new(n).unwrap();
    assert_eq!(env.info().name, file.task);
    let mut err = MaxErr::default();
    for i in 0..n {
        let ep = &eps[i % eps.len()];
        env.set_state(i, &ep.initial_state).unwrap();
        let ctx = format!("{} seed {} ({}) initial obs", file.env_id, ep.seed, ep.policy);
        check_close(&env.buffers().obs[i * od..(i + 1) * od], &ep.initial_obs, &ctx, &mut err);
    }
    let max_len = eps.iter().map(|e| e.actions.len()).max().unwrap();
    let mut actions = vec![0.0_f32; n];
    for t in 0..max_len {
        for (i, a) in actions.iter_mut().enumerate() {
            // f64 repr of an f32 value: the cast is exact. Finished episodes get 0.
            *a = eps[i % eps.len()].actions.get(t).map_or(0.0, |&v| v as f32);
        }
        env.step(&actions).unwrap();
        let b = env.buffers();
        for i in 0..n {
            let ep = &eps[i % eps.len()];
            let len = ep.actions.len();
            if t >= len {
                continue;
            }
            let ctx = format!("{} seed {} ({}) step {}", file.env_id, ep.seed, ep.policy, t + 1);
            let r = (f64::from(b.reward[i]) - ep.reward[t]).abs();
            err.reward = err.reward.max(r);
            err.count(b.reward[i], ep.reward[t]);
            assert!(r <= TOL, "{ctx}: reward {} vs gymnasium {}", b.reward[i], ep.reward[t]);
            assert_eq!(b.terminated[i], f32::from(ep.terminated[t]), "{ctx}: terminated");
            assert_eq!(b.truncated[i], f32::from(ep.truncated[t]), "{ctx}: truncated");
            assert_eq!(b.success[i], b.terminated[i], "{ctx}: success");
            let fin = &b.final_obs[i * od..(i + 1) * od];
            check_close(fin, &ep.obs[t], &format!("{ctx}: obs"), &mut err);
            if t + 1 == len {
                assert!(b.done(i), "{ctx}: episode must end here");
                assert_eq!(b.episode_length[i] as usize, len, "{ctx}: episode length");
                let ret: f64 = ep.reward.iter().sum();
                let d = (f64::from(b.episode_return[i]) - ret).abs();
                assert!(d <= 1e-3 * ret.abs().max(1.0), "{ctx}: return {} vs {ret}", b.episode_return[i]);
            } else {
                assert!(!b.done(i), "{ctx}: episode must not end here");
                assert_eq!(fin, &b.obs[i * od..(i + 1) * od], "{ctx}: final_obs == obs");
            }
        }
    }
    err
}

fn check_task<T: ClassicTask + Default>(file_name: &str, expect_ends: &[(&str, usize)]) {
    let file = load(file_name);
    assert!(file.gymnasium.starts_with("1."), "recorded with gymnasium {}", file.gymnasium);
    for (k, &(end, len)) in expect_ends.iter().enumerate() {
        let ep = &file.episodes[k];
        assert_eq!(ep.actions.len(), len, "episode {k} length");
        let last = ep.actions.len() - 1;
        let got = if ep.terminated[last] == 1 { "terminated" } else { "truncated" };
        assert_eq!(got, end, "episode {k} end");
    }
    // One small batch (sequential path), then enough replicas for the rayon path.
    let big = PARALLEL_THRESHOLD.div_ceil(file.episodes.len()) + 3;
    for replicas in [1, big] {
        let err = replay::<T>(&file, replicas);
        println!(
            "{}: {} episodes × {replicas}: max |obs diff| {:e}, max |reward diff| {:e}, \
             {}/{} values bit-identical at f32",
            file.env_id,
            file.episodes.len(),
            err.obs,
            err.reward,
            err.exact,
            err.total
        );
    }
}

#[test]
fn pendulum_matches_gymnasium() {
    let t = "truncated";
    check_task::<Pendulum>("pendulum.json", &[(t, 200), (t, 200), (t, 200), (t, 200)]);
}

#[test]
fn mountain_car_continuous_matches_gymnasium() {
    check_task::<MountainCarContinuous>(
        "mountain_car_continuous.json",
        &[("terminated", 107), ("terminated", 106), ("terminated", 94), ("truncated", 999), ("terminated", 15)],
    );
}
