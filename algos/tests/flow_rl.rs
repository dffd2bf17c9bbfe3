//! Learning checks of the flow-policy pipeline on `reach`: behaviour cloning of scripted
//! demonstrations to a success rate, then the PPO machinery on that SFT policy.
//! (`embodia bench flow` reports the figures on pick-cube and push-t.)

use burn::tensor::Device;
use embodia_algos::{
    ActionQueue, Checkpoint, EvalMode, InitialNoise, Learner, PpoFlow, PpoFlowConfig, Sft, SftConfig, evaluate,
};
use embodia_policies::FlowPolicyConfig;
use embodia_sim::rapier::expert_runs::record_task_expert;

fn sft_on_reach(steps: usize) -> (Sft, f64) {
    let demos = record_task_expert("reach", None, 10, 10, 7).unwrap();
    let policy = FlowPolicyConfig { width: 128, hidden: vec![128, 128], ..Default::default() };
    let config =
        SftConfig { num_envs: 20, updates_per_iteration: steps, decay_steps: 1000, policy, ..Default::default() };
    let env = embodia_sim::make("reach", 1).unwrap();
    let mut sft = Sft::new(config, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
    let mut last = f64::INFINITY;
    for i in 0..steps {
        let loss = sft.update().unwrap();
        if i >= steps - 50 {
            last = last.min(loss);
        }
    }
    (sft, last)
}

#[test]
fn sft_fits_reach_demonstrations_and_succeeds_in_closed_loop() {
    let (sft, loss) = sft_on_reach(600);
    // The flow-matching loss starts near 2 (velocity of unit-variance noise and actions).
    assert!(loss < 0.25, "flow-matching loss {loss} after 600 steps");
    let mut env = embodia_sim::make("reach", 20).unwrap();
    let eval = evaluate(&sft, env.as_mut(), 99, EvalMode::Zero).unwrap();
    // The scripted expert succeeds in 90%; a partly working clone is the starting point of RL.
    let success = eval.success_rate.unwrap();
    assert!(success >= 0.5, "SFT success {success} on 20 reach episodes");
    // A new flow policy acts deterministically from zero noise, is reported sampled, and
    // refuses to be reported in the fixed draw it does not act with.
    assert_eq!((sft.initial_noise(), sft.default_eval_mode()), (Some(InitialNoise::Zero), EvalMode::Sampled));
    assert!(evaluate(&sft, env.as_mut(), 99, EvalMode::FixedDraw).is_err());
}

/// A frozen, deterministic policy succeeds as often in episodes that start with an auto-reset
/// as in the first batch after `reset(seed)`: nothing of a previous episode leaks into the next
/// (sim side: `embodia-sim`'s `auto_reset` tests), and action chunks stay aligned with episode
/// starts (reach's 200-step limit is a multiple of C = 4). Counted per episode index over 32
/// environments for 4 episodes each, from the demonstrations' seed (the first batch starts
/// where the demonstrations did) and from another seed.
#[test]
fn frozen_sft_policy_succeeds_as_often_after_auto_resets_as_in_the_first_batch() {
    let (sft, _) = sft_on_reach(600);
    let (n, episodes) = (32, 4);
    for seed in [7u64, 99] {
        let mut env = embodia_sim::make("reach", n).unwrap();
        let ad = env.action_spec().bounds.dim();
        let mut queue = ActionQueue::new(&sft, n, ad);
        let mut actions = vec![0.0f32; n * ad];
        // Successes per episode index; every environment ends its k-th episode at the same step.
        let mut successes = vec![0u32; episodes];
        let mut ended = vec![0usize; n];
        env.reset(seed);
        while ended.iter().any(|&e| e < episodes) {
            queue.step(&sft, env.as_ref(), &mut actions, None).unwrap();
            env.step(&actions).unwrap();
            let b = env.buffers();
            for (i, e) in ended.iter_mut().enumerate() {
                if b.done(i) && *e < episodes {
                    successes[*e] += u32::from(b.success[i] > 0.0);
                    *e += 1;
                }
            }
        }
        let first = successes[0] as f64 / n as f64;
        let later = successes[1..].iter().sum::<u32>() as f64 / ((episodes - 1) * n) as f64;
        assert!(first >= 0.5, "seed {seed}: first-batch success {first} (per episode {successes:?})");
        // Binomial noise over 32 and 96 episodes at ~0.8 is ~0.08: 0.2 is ~2.5 standard errors.
        assert!(later >= first - 0.2, "seed {seed}: success {first} in the first batch, {later} after auto-resets");
    }
}

/// With the policy frozen (critic warmup), recomputed log-probabilities equal the rollout's
/// (approximate KL exactly 0, ratio 1) for both variants and for Flow-SDE with every step
/// stochastic, the value head learns, and the policy's actions stay exactly those of the SFT
/// checkpoint; with a policy learning rate the policy moves.
#[test]
fn flow_ppo_recomputes_stored_chains_and_updates_the_right_parameters() {
    let (sft, _) = sft_on_reach(100);
    let ckpt: Checkpoint = sft.checkpoint().unwrap();
    let obs = embodia_sim::make("reach", 4).unwrap().buffers().obs.clone();
    let mut reference = vec![0.0f32; 4 * 4 * 6];
    sft.act(&obs, &mut reference, None).unwrap();
    use AdvantageEstimator::{Gae, Grpo};
    use embodia_algos::SdeSteps::{All, One};
    use embodia_algos::{AdvantageEstimator, CriticInput};
    for (init, critic, advantage, replay_failed_states, sde_steps) in [
        ("sde", CriticInput::Observation, Gae, 0.0, One),
        ("noise", CriticInput::Observation, Gae, 0.0, One),
        ("sde", CriticInput::ExpertFeatures, Gae, 0.0, One),
        ("sde", CriticInput::Observation, Grpo, 0.0, One),
        ("sde", CriticInput::Observation, Grpo, 1.0, One),
        ("sde-all", CriticInput::Observation, Grpo, 0.0, All),
    ] {
        let method =
            if init == "noise" { embodia_algos::FlowRlMethod::Noise } else { embodia_algos::FlowRlMethod::Sde };
        let config = PpoFlowConfig {
            method,
            sde_steps,
            num_envs: 8,
            chunk_steps: 10,
            critic_warmup_iterations: 2,
            reward_scale: 0.02,
            critic,
            critic_hidden: vec![32],
            advantage,
            group_size: 4,
            replay_failed_states,
            ..Default::default()
        };
        let mut env = embodia_sim::make("reach", config.num_envs).unwrap();
        env.reset(5);
        let mut ppo = PpoFlow::new(config, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
        let mut value_losses = Vec::new();
        for _ in 0..2 {
            let row = ppo.iterate(env.as_mut()).unwrap();
            assert_eq!(row.kl, Some(0.0), "{init}: the frozen policy's ratios must be exactly 1");
            value_losses.push(row.value_loss.unwrap());
            // One SDE step has no entropy term; a joint log-prob over every step has the mean
            // Gaussian entropy of its steps and of the initial N(0, 1).
            match init {
                "sde" => assert_eq!(row.entropy, Some(0.0)),
                "noise" => assert!(row.entropy.unwrap() < 0.0, "{row:?}"),
                _ => assert!(row.entropy.unwrap() != 0.0 && row.entropy.unwrap().is_finite(), "{row:?}"),
            }
        }
        let mut actions = vec![0.0f32; reference.len()];
        ppo.act(&obs, &mut actions, None).unwrap();
        assert_eq!(actions, reference, "{init}: critic warmup must leave the policy unchanged");
        let row = ppo.iterate(env.as_mut()).unwrap();
        assert!(row.kl.unwrap() > 0.0 && row.kl.unwrap().is_finite(), "{init}: {row:?}");
        ppo.act(&obs, &mut actions, None).unwrap();
        assert_ne!(actions, reference, "{init}: the policy must move after the warmup");
        assert!(value_losses.iter().all(|v| v.is_finite()), "{value_losses:?}");
        if advantage == Grpo {
            assert!(value_losses.iter().all(|&v| v == 0.0), "GRPO has no critic: {value_losses:?}");
            assert!(row.mixed_groups.is_some_and(|m| (0.0..=1.0).contains(&m)), "{row:?}");
        } else {
            assert_eq!(row.mixed_groups, None, "GAE has no groups");
        }

        // A restored learner (its critic and optimizer state included) continues identically.
        let saved = ppo.checkpoint().unwrap();
        let config = PpoFlowConfig {
            method,
            sde_steps,
            critic,
            critic_hidden: vec![32],
            advantage,
            group_size: 4,
            ..Default::default()
        };
        let mut restored = PpoFlow::new(config, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
        restored.restore(&saved).unwrap();
        assert_eq!(restored.checkpoint().unwrap().params("critic"), saved.params("critic"), "{init}");
        assert_eq!(restored.checkpoint().unwrap().params("optim.value"), saved.params("optim.value"), "{init}");
        let mut again = vec![0.0f32; reference.len()];
        restored.act(&obs, &mut again, None).unwrap();
        ppo.act(&obs, &mut actions, None).unwrap();
        assert_eq!(again, actions, "{init}");
    }
}

/// The KL guard on a real update: with a target KL far below any step's, the first mini-batch
/// (ratios exactly 1) steps, the second is refused, and the adaptive learning rate falls by
/// 1.5; the learning rate survives a checkpoint round trip.
#[test]
fn kl_guard_limits_a_flow_noise_update_and_adapts_the_learning_rate() {
    let (sft, _) = sft_on_reach(100);
    let ckpt = sft.checkpoint().unwrap();
    let obs = embodia_sim::make("reach", 4).unwrap().buffers().obs.clone();
    let mut reference = vec![0.0f32; 4 * 4 * 6];
    sft.act(&obs, &mut reference, None).unwrap();
    let config = PpoFlowConfig {
        method: embodia_algos::FlowRlMethod::Noise,
        num_envs: 8,
        chunk_steps: 10,
        critic_hidden: vec![32],
        policy_lr: 3e-4,
        target_kl: 1e-12,
        adaptive_lr: true,
        ..Default::default()
    };
    let mut env = embodia_sim::make("reach", config.num_envs).unwrap();
    env.reset(5);
    let mut ppo = PpoFlow::new(config.clone(), env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
    let row = ppo.iterate(env.as_mut()).unwrap();
    // Mean over the two mini-batches run: 0 and the refused one's KL.
    assert!(row.kl.unwrap() > 0.0, "{row:?}");
    assert!((row.learning_rate.unwrap() - 2e-4).abs() < 1e-12, "{row:?}");
    let mut actions = vec![0.0f32; reference.len()];
    ppo.act(&obs, &mut actions, None).unwrap();
    assert_ne!(actions, reference, "the first mini-batch must step");
    let saved = ppo.checkpoint().unwrap();
    let mut restored = PpoFlow::new(config, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
    restored.restore(&saved).unwrap();
    assert_eq!(restored.checkpoint().unwrap().get::<f64>("policy_lr").unwrap(), row.learning_rate.unwrap());
}

/// The flow SFT recipe on pick-cube from 20 scripted demonstrations recorded with DART
/// perturbations and cloned with joint actions relative to the present joint positions: a
/// partly working policy (`embodia bench flow --tasks pick-cube` reports the 100-episode
/// figure). With absolute targets and unperturbed demonstrations the same run succeeded in 0%.
#[test]
fn sft_on_perturbed_pick_cube_demonstrations_partly_succeeds() {
    use embodia_sim::rapier::expert_runs::record_task_expert_perturbed;
    let mut demos = record_task_expert_perturbed("pick-cube", None, 16, 20, 2_000_030, 0.05).unwrap();
    demos.episodes.retain(|e| e.success);
    assert!(demos.episodes.len() >= 18, "{} of 20 perturbed expert episodes succeeded", demos.episodes.len());
    let steps = 4000;
    let config = SftConfig { decay_steps: steps, ..Default::default() };
    let spaces = embodia_sim::make("pick-cube", 1).unwrap();
    let mut sft = Sft::new(config, spaces.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
    for _ in 0..steps {
        sft.update().unwrap();
    }
    // 100 episodes: on 20 the same policy measured 5%, on these 100 16%.
    let mut env = embodia_sim::make("pick-cube", 100).unwrap();
    let success = evaluate(&sft, env.as_mut(), 2_100_000, EvalMode::Zero).unwrap().success_rate.unwrap();
    assert!(success >= 0.1, "SFT success {success} on 100 pick-cube episodes");
}

/// DAgger (`dagger_episodes`): after every iteration the clone's own episodes, labelled with
/// the scripted expert's actions, join the training samples. On pick-cube-ee they teach the
/// clone to correct the drift of its hold, which the expert's own demonstrations never show
/// (README: 200-episode figures). Same demonstrations, seed and gradient steps with and
/// without a round of 20 episodes after every 500 steps.
#[test]
fn dagger_rounds_raise_a_pick_cube_ee_clone() {
    use embodia_sim::rapier::expert_runs::record_task_expert_perturbed;
    let demos = record_task_expert_perturbed("pick-cube-ee", None, 10, 10, 41, 0.05).unwrap();
    let demo_steps = demos.num_steps();
    let clone = |dagger_episodes: usize| {
        let config = SftConfig { decay_steps: 2000, dagger_episodes, ..Default::default() };
        let mut env = embodia_sim::make("pick-cube-ee", config.num_envs).unwrap();
        let mut sft = Sft::new(config, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
        for _ in 0..4 {
            sft.iterate(env.as_mut()).unwrap();
        }
        let samples = sft.num_samples();
        let mut eval_env = embodia_sim::make("pick-cube-ee", 50).unwrap();
        (evaluate(&sft, eval_env.as_mut(), 4_100, EvalMode::Zero).unwrap().success_rate.unwrap(), samples)
    };
    let (plain, plain_samples) = clone(0);
    let (dagger, dagger_samples) = clone(20);
    assert_eq!(plain_samples, demo_steps);
    // Four rounds of 20 whole 100-step episodes.
    assert_eq!(dagger_samples, demo_steps + 4 * 20 * 100);
    // Measured: 34% with DAgger, 18% without (since a seeded reset builds every world anew;
    // before, 0.25 apart or more). One seed and 50 episodes: the margin asserts a clear gain.
    assert!(dagger >= plain + 0.1, "success on 50 episodes: {dagger} with DAgger, {plain} without");
}

#[test]
fn grpo_groups_start_from_one_initial_state() {
    let mut env = embodia_sim::make("reach", 4).unwrap();
    env.reset(9);
    let mut snapshot = env.snapshot();
    embodia_algos::share_initial_states(&mut snapshot, 2);
    env.restore(&snapshot).unwrap();
    let od = env.obs_spec().vector.dim();
    let obs = env.buffers().obs.clone();
    let row = |i: usize| &obs[i * od..(i + 1) * od];
    // Same joints and target; the end-effector terms agree to float rounding (forward
    // kinematics through worlds with different histories).
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
    assert!(close(row(0), row(1)), "{:?} vs {:?}", row(0), row(1));
    assert!(close(row(2), row(3)), "{:?} vs {:?}", row(2), row(3));
    assert!(!close(row(0), row(2)));
}

#[test]
fn success_reward_needs_a_task_with_a_success_criterion() {
    let (sft, _) = sft_on_reach(60);
    let config = PpoFlowConfig { reward: embodia_algos::RewardSource::Success, ..Default::default() };
    let env = embodia_sim::make("pendulum", config.num_envs).unwrap();
    let err = PpoFlow::new(config, env.as_ref(), &sft.checkpoint().unwrap(), Device::flex().autodiff(), 3)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("algo.reward") && err.contains("pendulum"), "{err}");
    let config = PpoFlowConfig { success_bonus: 20.0, ..Default::default() };
    let err = PpoFlow::new(config, env.as_ref(), &sft.checkpoint().unwrap(), Device::flex().autodiff(), 3)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("algo.success_bonus") && err.contains("pendulum"), "{err}");
}

/// The success bonus changes what GRPO learns from the same rollouts (same seeds, the first
/// iteration, some episodes successful): their group advantages, hence the policy loss. (Which
/// steps it pays is `step_rewards`' unit test.)
#[test]
fn success_bonus_changes_the_advantages_of_the_same_rollouts() {
    let (sft, _) = sft_on_reach(150);
    let ckpt = sft.checkpoint().unwrap();
    let run = |success_bonus: f64| {
        let config = PpoFlowConfig {
            advantage: embodia_algos::AdvantageEstimator::Grpo,
            num_envs: 16,
            group_size: 4,
            success_bonus,
            ..Default::default()
        };
        let mut env = embodia_sim::make("reach", 16).unwrap();
        let mut ppo = PpoFlow::new(config, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
        ppo.iterate(env.as_mut()).unwrap()
    };
    let (plain, bonus) = (run(0.0), run(100.0));
    assert_eq!(plain.success_rate, bonus.success_rate, "the rollouts must be the same");
    assert!(plain.success_rate.unwrap() > 0.0, "{plain:?}");
    assert!(plain.policy_loss != bonus.policy_loss, "the bonus must change the advantages");
}

/// With the sparse success reward, groups whose members all fail carry no signal; with
/// `failure_progress_coef` a failed episode's return is how close it came (its best dense task
/// reward), so more groups rank their members. The same rollouts (same seeds, the first
/// iteration) with and without it. GAE refuses the field.
#[test]
fn failure_progress_ranks_the_members_of_groups_that_all_fail() {
    let (sft, _) = sft_on_reach(60);
    let ckpt = sft.checkpoint().unwrap();
    let config = |failure_progress_coef: f64| PpoFlowConfig {
        reward: embodia_algos::RewardSource::Success,
        advantage: embodia_algos::AdvantageEstimator::Grpo,
        num_envs: 16,
        group_size: 4,
        failure_progress_coef,
        ..Default::default()
    };
    let mixed = |coef: f64| {
        let mut env = embodia_sim::make("reach", 16).unwrap();
        let mut ppo = PpoFlow::new(config(coef), env.as_ref(), &ckpt, Device::flex().autodiff(), 3).unwrap();
        ppo.iterate(env.as_mut()).unwrap().mixed_groups.unwrap()
    };
    let (sparse, ranked) = (mixed(0.0), mixed(0.1));
    assert!(sparse < 1.0 && ranked > sparse, "mixed groups: {sparse} sparse, {ranked} with progress");

    let gae = PpoFlowConfig { advantage: embodia_algos::AdvantageEstimator::Gae, ..config(0.1) };
    let env = embodia_sim::make("reach", 16).unwrap();
    let err = PpoFlow::new(gae, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).err().unwrap().to_string();
    assert!(err.contains("failure_progress_coef") && err.contains("grpo"), "{err}");
}

/// Self-imitation needs whole episodes (GRPO's collection) and has no instructions to balance:
/// other settings are refused by name. Under GRPO it adds the flow-matching loss on the
/// successful episodes' chunks, reported as `aux_loss`, and changes the update.
#[test]
fn self_imitation_trains_on_successful_grpo_episodes_only() {
    use embodia_algos::AdvantageEstimator::{Gae, Grpo};
    let (sft, _) = sft_on_reach(150);
    let ckpt = sft.checkpoint().unwrap();
    let config = |self_imitation_coef: f64| PpoFlowConfig {
        advantage: Grpo,
        num_envs: 16,
        group_size: 4,
        self_imitation_coef,
        ..Default::default()
    };
    let new = |config: PpoFlowConfig| {
        let env = embodia_sim::make("reach", 16).unwrap();
        PpoFlow::new(config, env.as_ref(), &ckpt, Device::flex().autodiff(), 3).map(|learner| (learner, env))
    };
    let gae = PpoFlowConfig { advantage: Gae, ..config(1.0) };
    let err = new(gae).err().unwrap().to_string();
    assert!(err.contains("self_imitation_coef") && err.contains("grpo"), "{err}");
    let balanced = PpoFlowConfig { self_imitation_balance: true, ..config(1.0) };
    let err = new(balanced).err().unwrap().to_string();
    assert!(err.contains("self_imitation_balance") && err.contains("vla"), "{err}");

    let obs = embodia_sim::make("reach", 4).unwrap().buffers().obs.clone();
    let mut after = Vec::new();
    for coef in [0.0, 1.0] {
        let (mut ppo, mut env) = new(config(coef)).unwrap();
        let row = ppo.iterate(env.as_mut()).unwrap();
        assert!(row.success_rate.unwrap() > 0.0, "the clone must succeed sometimes: {row:?}");
        match coef > 0.0 {
            true => assert!(row.aux_loss.is_some_and(|l| l > 0.0 && l.is_finite()), "{row:?}"),
            false => assert_eq!(row.aux_loss, None),
        }
        let mut actions = vec![0.0f32; 4 * 4 * 6];
        ppo.act(&obs, &mut actions, None).unwrap();
        after.push(actions);
    }
    assert_ne!(after[0], after[1], "self-imitation must change the update");
}
