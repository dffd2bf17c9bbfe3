//! A one-step student distilled alongside flow RL (`DistillAlongside`) on `reach`, from a tiny
//! SFT policy: the student's loss falls while the RL policy trains, the RL run is the one it
//! would be without a student, and a restored wrapper continues both exactly.

use burn::tensor::Device;
use embodia_algos::{
    Checkpoint, DistillAlongside, DistillAlongsideConfig, Learner, PpoFlow, PpoFlowConfig, Sft, SftConfig,
};
use embodia_policies::FlowPolicyConfig;
use embodia_sim::VecEnv;
use embodia_sim::rapier::expert_runs::record_task_expert;

/// A small SFT policy (K = 10, H = 8, C = 4) on 10 scripted reach demonstrations: its checkpoint.
fn sft_checkpoint() -> Checkpoint {
    let demos = record_task_expert("reach", None, 10, 10, 7).unwrap();
    let policy = FlowPolicyConfig { width: 32, hidden: vec![64, 64], ..Default::default() };
    let config = SftConfig {
        num_envs: 4,
        updates_per_iteration: 150,
        warmup_steps: 10,
        decay_steps: 150,
        policy,
        ..Default::default()
    };
    let env = embodia_sim::make("reach", 1).unwrap();
    let mut sft = Sft::new(config, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
    for _ in 0..150 {
        sft.update().unwrap();
    }
    sft.checkpoint().unwrap()
}

fn rl_config() -> PpoFlowConfig {
    PpoFlowConfig { num_envs: 8, chunk_steps: 10, update_epochs: 2, mini_batches: 2, ..Default::default() }
}

fn alongside_config() -> DistillAlongsideConfig {
    DistillAlongsideConfig {
        updates_per_iteration: 30,
        batch_size: 128,
        warmup_steps: 10,
        learning_rate: 3e-3,
        hidden: vec![64, 64],
        copy_teacher: false,
        ..Default::default()
    }
}

/// The flow-RL learner (its critic is initialized from `seed`, so two learners start equal).
fn flow_rl(sft: &Checkpoint, env: &dyn VecEnv) -> PpoFlow {
    let device = Device::flex().autodiff();
    PpoFlow::new(rl_config(), env, sft, device, 5).unwrap()
}

fn learner(sft: &Checkpoint, env: &dyn VecEnv) -> DistillAlongside<PpoFlow> {
    let device = Device::flex().autodiff();
    let rl = flow_rl(sft, env);
    DistillAlongside::new(rl, &alongside_config(), env, device, 5).unwrap()
}

#[test]
fn student_loss_falls_while_flow_rl_trains_and_rl_is_unaffected() {
    let sft = sft_checkpoint();
    let mut env = embodia_sim::make("reach", 8).unwrap();
    env.reset(5);
    let mut wrapped = learner(&sft, env.as_ref());
    let mut losses = Vec::new();
    let mut rows = Vec::new();
    for i in 0..6 {
        rows.push(wrapped.iterate(env.as_mut()).unwrap());
        let student = wrapped.student().unwrap().last_row().unwrap().clone();
        assert_eq!(student.env_steps, 30 * (i + 1), "student gradient steps");
        losses.push(student.policy_loss.unwrap());
        // One observation per environment and chunk step: 8 × 10 per iteration.
        assert_eq!(wrapped.distill().buffer_len(), 80 * (i as usize + 1));
    }
    let rl_params = wrapped.checkpoint().unwrap().params("model");
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    assert!(last < 0.3 * first, "student loss {first} → {last}: {losses:?}");

    // The same seed without a student: the very same RL run, metrics and policy, bit for bit.
    let mut env = embodia_sim::make("reach", 8).unwrap();
    env.reset(5);
    let mut plain = flow_rl(&sft, env.as_ref());
    for row in &rows {
        let plain_row = plain.iterate(env.as_mut()).unwrap();
        assert_eq!(plain_row.env_steps, row.env_steps);
        assert_eq!(
            [plain_row.policy_loss, plain_row.value_loss, plain_row.kl],
            [row.policy_loss, row.value_loss, row.kl],
            "{:?}",
            plain_row.env_steps
        );
    }
    assert_eq!(plain.checkpoint().unwrap().params("model"), rl_params);
}

/// Exact resume, learner side: the checkpoint round-trips the RL learner's and the student's
/// whole state, and the restored wrapper then does what the original does, iteration for
/// iteration, from equal environment states (fresh batches reset with one seed; the
/// environments' own snapshot and restore are the runner's and embodia-sim's to test).
#[test]
fn restored_wrapper_continues_rl_and_student_exactly() {
    let sft = sft_checkpoint();
    let mut env = embodia_sim::make("reach", 8).unwrap();
    env.reset(5);
    let mut a = learner(&sft, env.as_ref());
    for _ in 0..2 {
        a.iterate(env.as_mut()).unwrap();
    }
    let saved = a.checkpoint().unwrap();
    // The student's state travels in the checkpoint, and its own checkpoint is a distill run's.
    assert!(saved.tensors.keys().any(|k| k.starts_with("alongside.student.")));
    assert_eq!(saved.get::<String>("algo").unwrap(), "ppo-flow-sde");
    let student_ckpt = a.student().unwrap().checkpoint().unwrap();
    assert_eq!(student_ckpt.get::<String>("algo").unwrap(), "distill");
    assert_eq!(student_ckpt.params("teacher"), saved.params("model"), "the teacher is the present RL policy");

    let mut env_b = embodia_sim::make("reach", 8).unwrap();
    let mut b = learner(&sft, env_b.as_ref());
    b.restore(&saved).unwrap();
    assert_eq!(b.checkpoint().unwrap(), saved);
    // Both continue on fresh environments: a rapier world's contact state after a reset depends
    // in its last bits on the world's history.
    let mut env_a = embodia_sim::make("reach", 8).unwrap();
    env_a.reset(9);
    env_b.reset(9);
    for _ in 0..2 {
        let (row_a, row_b) = (a.iterate(env_a.as_mut()).unwrap(), b.iterate(env_b.as_mut()).unwrap());
        assert_eq!(row_a, row_b);
        assert_eq!(a.student().unwrap().last_row(), b.student().unwrap().last_row());
    }
    assert_eq!(a.checkpoint().unwrap(), b.checkpoint().unwrap());

    // A flow-RL checkpoint without a student is refused, naming the setting.
    let plain = flow_rl(&sft, env_b.as_ref()).checkpoint().unwrap();
    let err = learner(&sft, env_b.as_ref()).restore(&plain).err().unwrap().to_string();
    assert!(err.contains("distill_during_rl"), "{err}");
}

#[test]
fn bad_settings_name_the_field() {
    let bad = DistillAlongsideConfig { updates_per_iteration: 0, ..Default::default() };
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("algo.distill_during_rl.updates_per_iteration"), "{err}");
}

/// The default student, a copy of the policy's denoiser, trains alongside RL too: it starts as the
/// `--init` policy's denoiser and its loss falls.
#[test]
fn teacher_copy_student_trains_alongside_flow_rl() {
    let sft = sft_checkpoint();
    let mut env = embodia_sim::make("reach", 8).unwrap();
    env.reset(5);
    let config = DistillAlongsideConfig { copy_teacher: true, learning_rate: 1e-3, ..alongside_config() };
    let mut wrapped =
        DistillAlongside::new(flow_rl(&sft, env.as_ref()), &config, env.as_ref(), Device::flex().autodiff(), 5)
            .unwrap();
    let student = wrapped.student().unwrap().checkpoint().unwrap().params("student");
    for (name, value) in sft.params("ema") {
        assert_eq!(student[&format!("denoiser.{name}")], value, "{name}: the copy starts as the teacher");
    }
    let mut losses = Vec::new();
    for _ in 0..4 {
        wrapped.iterate(env.as_mut()).unwrap();
        losses.push(wrapped.student().unwrap().last_row().unwrap().policy_loss.unwrap());
    }
    assert!(losses.iter().all(|l| l.is_finite()) && losses[3] < losses[0], "copy student loss {losses:?}");
}
