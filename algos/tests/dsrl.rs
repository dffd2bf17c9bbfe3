//! DSRL on a frozen flow clone of `reach`: SAC picks the initial noise the clone's ODE starts
//! from. (`embodia bench flow --algo dsrl` reports the figures on pick-cube.)

use burn::tensor::Device;
use embodia_algos::{
    ChunkModel, DiffusionSft, Dsrl, DsrlConfig, EvalMode, Learner, RewardSource, Sft, SftConfig, evaluate,
};
use embodia_policies::FlowPolicyConfig;
use embodia_sim::rapier::expert_runs::record_task_expert;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// SFT of a small flow (or diffusion) policy on 10 reach demonstrations for `steps` steps.
fn sft_on_reach(steps: usize, model: ChunkModel) -> Box<dyn Learner> {
    let demos = record_task_expert("reach", None, 10, 10, 7).unwrap();
    let policy = FlowPolicyConfig { width: 128, hidden: vec![128, 128], ..Default::default() };
    let config = SftConfig {
        num_envs: 20,
        updates_per_iteration: steps,
        decay_steps: 1000,
        policy,
        model,
        ..Default::default()
    };
    let env = embodia_sim::make("reach", 1).unwrap();
    let device = Device::flex().autodiff();
    match model {
        ChunkModel::Flow => {
            let mut sft = Sft::new(config, env.as_ref(), &demos, device, 1).unwrap();
            for _ in 0..steps {
                sft.update().unwrap();
            }
            Box::new(sft)
        }
        ChunkModel::Diffusion => {
            let mut sft = DiffusionSft::new(config, env.as_ref(), &demos, device, 1).unwrap();
            for _ in 0..steps {
                sft.update().unwrap();
            }
            Box::new(sft)
        }
    }
}

fn small_dsrl() -> DsrlConfig {
    DsrlConfig {
        num_envs: 32,
        updates_per_iteration: 100,
        batch_size: 128,
        hidden: vec![128, 128],
        ..Default::default()
    }
}

#[test]
fn dsrl_refuses_a_diffusion_clone_and_a_success_reward_without_a_criterion() {
    let diffusion = sft_on_reach(1, ChunkModel::Diffusion).checkpoint().unwrap();
    let env = embodia_sim::make("reach", 2).unwrap();
    let e = Dsrl::new(small_dsrl(), env.as_ref(), &diffusion, Device::flex().autodiff(), 1).err().unwrap();
    assert!(e.to_string().contains("flow policy"), "{e}");

    let flow = sft_on_reach(1, ChunkModel::Flow).checkpoint().unwrap();
    let pendulum_like = embodia_sim::make("pendulum", 2).unwrap();
    let config = DsrlConfig { reward: RewardSource::Success, ..small_dsrl() };
    let e = Dsrl::new(config, pendulum_like.as_ref(), &flow, Device::flex().autodiff(), 1).err().unwrap();
    assert!(e.to_string().contains("reward"), "{e}");
    let e =
        Dsrl::new(DsrlConfig { noise_bound: 0.0, ..small_dsrl() }, env.as_ref(), &flow, Device::flex().autodiff(), 1)
            .err()
            .unwrap();
    assert!(e.to_string().contains("noise_bound"), "{e}");
}

/// The clone's weights never change; a checkpoint restores the same noise policy; an
/// iteration runs every environment's episode to its end and trains the critics on them.
#[test]
fn dsrl_keeps_the_clone_frozen_and_restores_the_same_noise_policy() {
    let sft = sft_on_reach(100, ChunkModel::Flow);
    let init = sft.checkpoint().unwrap();
    let config =
        DsrlConfig { num_envs: 8, updates_per_iteration: 20, batch_size: 32, random_iterations: 1, ..small_dsrl() };
    let mut env = embodia_sim::make("reach", config.num_envs).unwrap();
    env.reset(3);
    let mut dsrl = Dsrl::new(config.clone(), env.as_ref(), &init, Device::flex().autodiff(), 3).unwrap();
    for _ in 0..2 {
        let row = dsrl.iterate(env.as_mut()).unwrap();
        assert!(row.value_loss.unwrap().is_finite() && row.value_loss.unwrap() > 0.0, "{row:?}");
        assert!(
            row.return_mean.is_some() && row.success_rate.is_some(),
            "every episode ends in its iteration: {row:?}"
        );
    }
    let saved = dsrl.checkpoint().unwrap();
    let ema = init.params("ema");
    let model = saved.params("model");
    assert!(!ema.is_empty() && ema.len() == model.len());
    for (name, tensor) in &ema {
        assert_eq!(model.get(name), Some(tensor), "the clone's parameter {name} changed");
    }

    let obs = env.buffers().obs.clone();
    let mut restored = Dsrl::new(config, env.as_ref(), &init, Device::flex().autodiff(), 99).unwrap();
    restored.restore(&saved).unwrap();
    let act = |learner: &Dsrl, seed: Option<u64>| {
        let mut out = vec![0.0f32; 8 * 4 * env.action_spec().bounds.dim()];
        let mut rng = seed.map(ChaCha8Rng::seed_from_u64);
        learner.act(&obs, &mut out, rng.as_mut()).unwrap();
        out
    };
    assert_eq!(act(&dsrl, None), act(&restored, None));
    assert_eq!(act(&dsrl, Some(5)), act(&restored, Some(5)));
    assert_ne!(act(&dsrl, None), act(&dsrl, Some(5)), "a sampled noise must differ from the mode");
}

/// Steering the noise of a weak clone (sampled evaluation, the same 64 episodes before and
/// after) raises its success rate.
#[test]
fn dsrl_raises_the_success_of_a_weak_reach_clone() {
    let sft = sft_on_reach(150, ChunkModel::Flow);
    let episodes = |learner: &dyn Learner| {
        let mut env = embodia_sim::make("reach", 64).unwrap();
        evaluate(learner, env.as_mut(), 1234, EvalMode::Sampled).unwrap().success_rate.unwrap()
    };
    let before = episodes(sft.as_ref());
    let config = small_dsrl();
    let mut env = embodia_sim::make("reach", config.num_envs).unwrap();
    env.reset(11);
    let mut dsrl = Dsrl::new(config, env.as_ref(), &sft.checkpoint().unwrap(), Device::flex().autodiff(), 11).unwrap();
    for _ in 0..20 {
        dsrl.iterate(env.as_mut()).unwrap();
    }
    // Measured: 26.5% → 64%.
    let after = episodes(&dsrl);
    assert!(after >= before + 0.2, "DSRL success {after} from the clone's {before}");
}
