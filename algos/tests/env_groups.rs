//! PPO over two environment groups (`env_groups = 2`): one group simulates while the other's
//! actions are sampled. The pipelined collection is the same sequence of calls as without
//! overlap, so both give the same parameters bit for bit; and it learns.

use burn::tensor::Device;
use embodia_algos::{EvalMode, Learner, Ppo, PpoConfig, evaluate};
use embodia_sim::{EnvGroups, VecEnv};

fn grouped(task: &str, per_group: usize, overlap: bool) -> EnvGroups {
    let groups = vec![embodia_sim::make(task, per_group).unwrap(), embodia_sim::make(task, per_group).unwrap()];
    let mut env = EnvGroups::new(groups).unwrap();
    env.set_overlap(overlap);
    env.reset(3);
    env
}

#[test]
fn ppo_over_two_groups_updates_the_same_with_and_without_overlap() {
    let train = |overlap: bool| {
        let mut env = grouped("reach", 4, overlap);
        let config = PpoConfig { num_envs: 8, steps_per_env: 16, env_groups: 2, ..Default::default() };
        let mut ppo = Ppo::new(config, &env, Device::flex().autodiff(), 1).unwrap();
        let rows: Vec<_> = (0..3).map(|_| ppo.iterate(&mut env).unwrap()).collect();
        (ppo.checkpoint().unwrap().params("model"), rows.iter().map(|r| r.env_steps).collect::<Vec<_>>())
    };
    let (overlapped, steps) = train(true);
    let (sequential, _) = train(false);
    assert_eq!(steps, [128, 256, 384], "every step of both groups is counted once");
    assert_eq!(overlapped, sequential, "overlap must not change the result");
}

/// The pendulum PPO preset (`assets/configs/pendulum-ppo.toml`) on two groups of 8
/// environments solves pendulum (a 10-episode deterministic evaluation at −200 or above)
/// within the one-batch learning test's budget of 250k env steps.
#[test]
fn ppo_over_two_groups_solves_pendulum() {
    let mut env = grouped("pendulum", 8, true);
    let config =
        PpoConfig { num_envs: 16, steps_per_env: 128, epochs: 10, gamma: 0.95, env_groups: 2, ..Default::default() };
    let mut ppo = Ppo::new(config, &env, Device::flex().autodiff(), 1).unwrap();
    let mut eval_env = embodia_sim::make("pendulum", 10).unwrap();
    let mut best = f64::NEG_INFINITY;
    while ppo.env_steps() < 250_000 && best < -200.0 {
        ppo.iterate(&mut env).unwrap();
        best = best.max(evaluate(&ppo, eval_env.as_mut(), 12345, EvalMode::Zero).unwrap().mean_return);
    }
    assert!(best >= -200.0, "best evaluation return {best:.0} after {} env steps", ppo.env_steps());
}
