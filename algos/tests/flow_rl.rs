//! Learning checks of the flow-policy pipeline on `reach`: behaviour cloning of scripted
//! demonstrations, then Flow-SDE PPO from that SFT policy. (`embodia bench flow` reports the
//! full figures on pick-cube and push-t.)

use burn::tensor::Device;
use embodia_algos::{Learner, PpoFlow, PpoFlowConfig, Sft, SftConfig, evaluate};
use embodia_policies::FlowPolicyConfig;
use embodia_sim::rapier::expert::record_task_expert;

fn small_policy() -> FlowPolicyConfig {
    FlowPolicyConfig { width: 128, hidden: vec![128, 128], horizon: 8, chunk: 4, denoise_steps: 4, ..Default::default() }
}

#[test]
fn probe() {
    let t0 = std::time::Instant::now();
    let demos = record_task_expert("reach", None, 10, 10, 7).unwrap();
    eprintln!("demos {} steps success {} in {:.1}s", demos.num_steps(), demos.success_rate(), t0.elapsed().as_secs_f64());
    let config = SftConfig { num_envs: 20, updates_per_iteration: 100, decay_steps: 1000, policy: small_policy(), ..Default::default() };
    let mut env = embodia_sim::make("reach", config.num_envs).unwrap();
    let mut sft = Sft::new(config, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
    for _ in 0..10 {
        let t = std::time::Instant::now();
        let row = sft.iterate(env.as_mut()).unwrap();
        eprintln!("step {} loss {:.4} success {:?} return {:?} ({:.1}s)", row.env_steps, row.policy_loss.unwrap(), row.success_rate, row.return_mean, t.elapsed().as_secs_f64());
    }
    let ckpt = sft.checkpoint().unwrap();
    let ppo_config = PpoFlowConfig { init: "test".into(), num_envs: 16, chunk_steps: 25, ..Default::default() };
    let mut env = embodia_sim::make("reach", ppo_config.num_envs).unwrap();
    env.reset(3);
    let mut ppo = PpoFlow::new(ppo_config, env.as_ref(), &ckpt, Device::flex().autodiff(), 1).unwrap();
    let mut eval_env = embodia_sim::make("reach", 20).unwrap();
    for _ in 0..10 {
        let t = std::time::Instant::now();
        let row = ppo.iterate(env.as_mut()).unwrap();
        let e = evaluate(&ppo, eval_env.as_mut(), 99, false).unwrap();
        eprintln!("ppo steps {} train success {:?} loss {:?} v {:?} kl {:?} eval {:?} {:?} ({:.1}s)", row.env_steps, row.success_rate, row.policy_loss, row.value_loss, row.kl, e.success_rate, ppo.last_time_split(), t.elapsed().as_secs_f64());
    }
}
