//! `EnvGroups`: a batch of two groups steps as its groups do, one group at a time (with or
//! without overlap) gives the same buffers as the whole batch's step, a snapshot restores
//! exactly (pendulum), and mismatched groups or snapshots are refused.

use embodia_sim::{EnvGroups, VecEnv};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn grouped(task: &str, per_group: usize) -> EnvGroups {
    let groups = vec![embodia_sim::make(task, per_group).unwrap(), embodia_sim::make(task, per_group).unwrap()];
    let mut env = EnvGroups::new(groups).unwrap();
    env.reset(11);
    env
}

fn random_actions(env: &dyn VecEnv, rng: &mut ChaCha8Rng) -> Vec<f32> {
    let n = env.num_envs() * env.action_spec().bounds.dim();
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

#[test]
fn stepping_one_group_at_a_time_gives_the_batch_step() {
    for overlap in [true, false] {
        let (mut whole, mut by_group) = (grouped("reach", 3), grouped("reach", 3));
        by_group.set_overlap(overlap);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..30 {
            let actions = random_actions(&whole, &mut rng);
            whole.step(&actions).unwrap();
            let half = actions.len() / 2;
            let (stepped, seen) = by_group.step_group_while(0, &actions[..half], |others| others.buffers(1).is_some());
            stepped.unwrap();
            assert!(seen, "the other group is readable while group 0 steps");
            let (stepped, hidden) =
                by_group.step_group_while(1, &actions[half..], |others| others.buffers(1).is_none());
            stepped.unwrap();
            assert!(hidden, "the stepping group is not readable");
            let (a, b) = (whole.buffers(), by_group.buffers());
            assert_eq!(
                (&a.obs, &a.reward, &a.terminated, &a.truncated),
                (&b.obs, &b.reward, &b.terminated, &b.truncated)
            );
        }
    }
}

/// On pendulum, whose snapshot holds the physical state (a rapier task's restore starts new
/// episodes from the saved generators).
#[test]
fn a_snapshot_of_the_groups_restores_exactly() {
    let mut env = grouped("pendulum", 2);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for _ in 0..7 {
        env.step(&random_actions(&env, &mut rng)).unwrap();
    }
    let snapshot = env.snapshot();
    let later: Vec<Vec<f32>> = (0..5).map(|_| random_actions(&env, &mut rng)).collect();
    let run = |env: &mut EnvGroups| -> Vec<Vec<f32>> {
        later
            .iter()
            .map(|a| {
                env.step(a).unwrap();
                env.buffers().obs.clone()
            })
            .collect()
    };
    let first = run(&mut env);
    env.restore(&snapshot).unwrap();
    assert_eq!(run(&mut env), first);

    let mut other = grouped("pendulum", 3);
    let e = other.restore(&snapshot).unwrap_err().to_string();
    assert!(e.contains("4 environments") && e.contains("6"), "{e}");
}

#[test]
fn groups_of_different_tasks_or_sizes_are_refused() {
    let e = EnvGroups::new(vec![embodia_sim::make("reach", 2).unwrap(), embodia_sim::make("pendulum", 2).unwrap()])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("group 1") && e.contains("reach"), "{e}");
    let e = EnvGroups::new(vec![embodia_sim::make("reach", 2).unwrap(), embodia_sim::make("reach", 3).unwrap()])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("group 1"), "{e}");
    assert!(EnvGroups::new(Vec::new()).is_err());
}
