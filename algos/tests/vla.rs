//! Learning checks of the VLA pipeline on one lang-cubes variant ("push the red cube to the left"):
//! behaviour cloning from demonstrations with front-camera images and the instruction, then
//! GRPO with Flow-SDE, or DSRL on the frozen model, from that SFT checkpoint. (`embodia bench
//! vla` reports the figures on every variant.)

use burn::tensor::Device;
use embodia_algos::{
    AdvantageEstimator, CriticInput, EvalMode, Learner, PpoFlowConfig, VlaDsrl, VlaDsrlConfig, VlaPpo, VlaSft,
    VlaSftConfig, evaluate,
};
use embodia_policies::vla::{TextConfig, VisionConfig, VlaConfig};
use embodia_sim::TaskConfig;
use embodia_sim::VecEnv;
use embodia_sim::camera::{CameraEnv, RenderConfig};
use embodia_sim::rapier::expert_runs::record_task_expert_rendered;
use embodia_sim::rapier::language::Verb;
use embodia_sim::rapier::task_config::{ObsKind, ObsTerm};

const SIZE: usize = 32;
const VARIANT: &str = "push the red cube to the left";
/// DSRL iterations of the steering test.
const ITERATIONS: usize = 10;

/// A task of the lang-cubes family, by name, with its config as a test edits it.
struct Variant {
    name: &'static str,
    task: TaskConfig,
}

/// The lang-cubes task `name` reduced to [`VARIANT`] (the other push variants held out, the
/// other verbs off), observing the robot's own state only.
fn one_variant(name: &'static str) -> Variant {
    let mut task = embodia_sim::task_config(name).unwrap();
    let language = task.command.language.as_mut().unwrap();
    language.verbs = vec![Verb::Push];
    language.held_out = ["red", "green", "blue", "yellow"]
        .iter()
        .flat_map(|c| ["left", "right"].map(|side| format!("push the {c} cube to the {side}")))
        .filter(|v| v != VARIANT)
        .collect();
    task.observations.policy = vec![
        ObsTerm::of(ObsKind::JointPos),
        ObsTerm::of(ObsKind::JointVel).scaled(0.1),
        ObsTerm::of(ObsKind::GripperOpening),
        ObsTerm::of(ObsKind::LastAction),
    ];
    Variant { name, task }
}

/// `variant` with every cube spawning within ±1 cm of a spot of its own (the red one mid-table,
/// the others clear of its push): nearly one scene.
fn one_scene(mut variant: Variant) -> Variant {
    for object in &mut variant.task.scene.objects {
        let (dx, dy) = match object.name.as_str() {
            "red_cube" => (0.0, 0.0),
            "green_cube" => (0.08, 0.14),
            "blue_cube" => (-0.08, 0.14),
            _ => (0.08, -0.14),
        };
        let x = 0.5 * (object.x[0] + object.x[1]) + dx;
        let y = 0.5 * (object.y[0] + object.y[1]) + dy;
        object.x = [x - 0.01, x + 0.01];
        object.y = [y - 0.01, y + 0.01];
        object.min_object_distance = 0.0;
    }
    variant
}

fn front_camera(task: &TaskConfig) -> RenderConfig {
    let mut render = RenderConfig::for_task(task, SIZE, SIZE);
    render.cameras.retain(|c| c.name == "front");
    render
}

fn env(v: &Variant, n: usize) -> CameraEnv {
    CameraEnv::new(embodia_sim::make_with(v.name, n, Some(&v.task)).unwrap(), front_camera(&v.task)).unwrap()
}

fn small_model() -> VlaConfig {
    VlaConfig::new(0, 0)
        .with_vision(VisionConfig::new().with_image_size(SIZE).with_width(48).with_depth(1).with_heads(4))
        .with_text(TextConfig::new().with_max_len(32).with_width(32).with_heads(2))
        .with_backbone_width(64)
        .with_backbone_depth(1)
        .with_expert_width(48)
        .with_expert_depth(1)
        .with_value_hidden(vec![32])
}

/// SFT of [`small_model`] on 24 demonstrations for `steps` steps, and its mean losses over the
/// first 20 and the last 50 steps.
fn sft(v: &Variant, steps: usize) -> (VlaSft, f64, f64) {
    let camera = Some(front_camera(&v.task));
    let demos = record_task_expert_rendered(v.name, Some(&v.task), 8, 24, 7, 0.05, camera).unwrap();
    assert!(demos.episodes.iter().all(|e| e.instruction.as_deref() == Some(VARIANT)));
    let config = VlaSftConfig {
        model: small_model(),
        batch_size: 32,
        learning_rate: 1e-3,
        final_learning_rate: 1e-4,
        decay_steps: steps as u64,
        ..Default::default()
    };
    let env = env(v, 1);
    let mut sft = VlaSft::new(config, &env, demos, None, Device::flex().autodiff(), 1).unwrap();
    let losses: Vec<f64> = (0..steps).map(|_| sft.update().unwrap().0).collect();
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    (sft, mean(&losses[..20]), mean(&losses[steps - 50..]))
}

/// Success rate over `episodes` episodes with chunks sampled from `x_1 ~ N(0, I)` (ODE).
fn success(learner: &dyn Learner, v: &Variant, episodes: usize, seed: u64) -> f64 {
    let mut env = env(v, episodes);
    evaluate(learner, &mut env, seed, EvalMode::Sampled).unwrap().success_rate.unwrap()
}

#[test]
fn vla_clones_one_variant_from_camera_demonstrations_and_grpo_updates_it() {
    let variant = one_variant("lang-cubes");
    let (sft, first, last) = sft(&variant, 2000);
    let s0 = success(&sft, &variant, 64, 99);
    eprintln!("VLA SFT loss {first:.3} -> {last:.3} ({} samples), success {s0:.3}", sft.num_samples());
    // Measured: 1.95 -> 0.18, success 0.16-0.25 over 64 sampled episodes (the scripted expert
    // succeeds in ~95%); a partly working clone is where RL starts.
    assert!(last < 0.3 * first, "flow-matching loss {first} -> {last}");
    assert!(s0 >= 0.05, "SFT success {s0} on 64 episodes");

    // GRPO iterations with a zero learning rate: the log-probs recomputed from the stored
    // observations and chains equal the rollout's (approximate KL 0, ratios 1), and the policy
    // does not move.
    let config = PpoFlowConfig {
        num_envs: 8,
        group_size: 4,
        advantage: AdvantageEstimator::Grpo,
        reward: embodia_algos::RewardSource::Success,
        filter_uniform_groups: false,
        mini_batches: 4,
        update_epochs: 1,
        policy_lr: 0.0,
        ..Default::default()
    };
    let mut train_env = env(&variant, config.num_envs);
    train_env.reset(3);
    let init = sft.checkpoint().unwrap();
    let mut rl = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    let row = rl.iterate(&mut train_env).unwrap();
    let kl = row.kl.unwrap();
    eprintln!("VLA GRPO at lr 0: approx KL {kl:e}, {} env steps", row.env_steps);
    assert!(kl.abs() < 1e-5, "approx KL {kl} with unchanged parameters");
    assert_eq!(success(&rl, &variant, 64, 99), s0, "a zero learning rate changed the policy");

    // At a learning rate, with groups of mixed outcomes, the policy moves by a bounded amount,
    // and a restored learner acts as the saved one. (That a short run raises success over the
    // whole spawn area is not asserted: 10 iterations of 32 environments from this checkpoint
    // measured 0.250 -> 0.266 and 0.250 -> 0.219 over 64 sampled episodes, training success
    // 9% -> 28-50% -> 6-31%. On lang-cubes-ee, where an episode is 40 chunk decisions instead
    // of 100, this variant and model, 128 environments at lr 3e-5 went 0.28 -> 0.34, 0.41,
    // 0.34, 0.39, 0.42, 0.42 every 10 iterations (205k env steps each; 1,115 s in all on the 2
    // cores): too long for here. The next test asserts it in one scene.)
    let config = PpoFlowConfig {
        num_envs: 32,
        policy_lr: 2e-5,
        filter_uniform_groups: true,
        equal_episode_weights: true,
        update_epochs: 2,
        ..config
    };
    let mut train_env = env(&variant, config.num_envs);
    train_env.reset(3);
    let mut rl = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    // An iteration whose groups all have uniform outcomes carries no signal (KL 0): up to three.
    let mut kl = 0.0;
    for _ in 0..3 {
        let row = rl.iterate(&mut train_env).unwrap();
        kl = row.kl.unwrap();
        let mixed = row.mixed_groups.unwrap();
        eprintln!("VLA GRPO at lr 2e-5: training success {:?}, approx KL {kl:e}", row.success_rate);
        assert_eq!(mixed == 0.0, kl == 0.0, "mixed groups {mixed}, KL {kl}: only mixed groups enter the update");
        if kl != 0.0 {
            break;
        }
    }
    assert!(kl > 1e-6 && kl < 0.5, "approx KL {kl}");
    let mut probe = env(&variant, 4);
    probe.reset(11);
    let act = |learner: &dyn Learner| {
        let mut actions = vec![0.0f32; 4 * 4 * 8];
        learner.act_env(&probe, &mut actions, None).unwrap();
        actions
    };
    let moved = act(&rl);
    assert_ne!(moved, act(&sft), "the policy must move");
    let mut restored = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    restored.restore(&rl.checkpoint().unwrap()).unwrap();
    assert_eq!(act(&restored), moved, "a restored learner acts as the saved one");

    // Self-imitation: the same first iteration with and without it (identical rollouts) differs
    // only by the flow-matching loss on the successful episodes' chunks.
    let imitation = PpoFlowConfig { num_envs: 16, self_imitation_coef: 1.0, ..config.clone() };
    let plain = PpoFlowConfig { self_imitation_coef: 0.0, ..imitation.clone() };
    let first_iteration = |config: &PpoFlowConfig| {
        let mut train_env = env(&variant, config.num_envs);
        train_env.reset(3);
        let mut rl = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
        let row = rl.iterate(&mut train_env).unwrap();
        (row, act(&rl))
    };
    let ((with, imitated), (without, not_imitated)) = (first_iteration(&imitation), first_iteration(&plain));
    eprintln!("VLA self-imitation: training success {:?}, loss {:?}", with.success_rate, with.aux_loss);
    assert_eq!(with.success_rate, without.success_rate, "the rollouts must be the same");
    assert!(with.success_rate.unwrap() > 0.0, "no successful episode to imitate in 16: {with:?}");
    assert!(with.aux_loss.is_some_and(|l| l.is_finite() && l > 0.0), "{with:?}");
    assert_eq!(without.aux_loss, None);
    assert_ne!(imitated, not_imitated, "self-imitation must change the update");

    // GAE with the model's value head (πRL's PPO): during the critic warm-up only the value
    // head learns, so the policy acts as the SFT one; a restored learner (value optimizer
    // included) continues exactly. (Each continues on a fresh environment: a rapier world's
    // contact state after a reset depends in its last bits on the world's history.)
    let config = PpoFlowConfig {
        num_envs: 8,
        advantage: AdvantageEstimator::Gae,
        critic: CriticInput::ExpertFeatures,
        value_lr: 1e-3,
        critic_warmup_iterations: 10,
        ..config
    };
    let mut train_env = env(&variant, config.num_envs);
    let mut gae = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 5).unwrap();
    let row = gae.iterate(&mut train_env).unwrap();
    let (value_loss, kl) = (row.value_loss.expect("a value loss under GAE"), row.kl.unwrap());
    eprintln!("VLA PPO with GAE, critic warm-up: value loss {value_loss:.4}, approx KL {kl:e}");
    assert!(value_loss.is_finite() && value_loss > 0.0, "value loss {value_loss}");
    assert!(kl.abs() < 1e-5, "approx KL {kl} while only the value head learns");
    assert_eq!(act(&gae), act(&sft), "the warm-up moved the policy");
    let value_head = |params: embodia_policies::NamedParams| -> Vec<f32> {
        params.into_iter().filter(|(name, _)| name.starts_with("value_head")).flat_map(|(_, (_, v))| v).collect()
    };
    let trained = value_head(gae.checkpoint().unwrap().params("model"));
    assert!(!trained.is_empty());
    assert_ne!(trained, value_head(init.params("ema")), "the value head learns");
    let mut restored = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 5).unwrap();
    restored.restore(&gae.checkpoint().unwrap()).unwrap();
    let (mut env_a, mut env_b) = (env(&variant, config.num_envs), env(&variant, config.num_envs));
    let (next, again) = (gae.iterate(&mut env_a).unwrap(), restored.iterate(&mut env_b).unwrap());
    assert_eq!(next.value_loss, again.value_loss);
}

/// A short GRPO run from a fixed SFT checkpoint raises the success of a weak clone of one
/// variant. On `lang-cubes-ee` (40 chunk decisions per episode) in [`one_scene`]: over the
/// variant's whole spawn area the change of a CI-sized run is within the noise of 64 episodes
/// (see the first test), in one scene it is not.
#[test]
fn vla_grpo_raises_the_success_of_a_weak_clone_on_one_variant_in_one_scene() {
    let variant = one_scene(one_variant("lang-cubes-ee"));
    let (sft, _, _) = sft(&variant, 250);
    let s0 = success(&sft, &variant, 64, 99);
    let config = PpoFlowConfig {
        num_envs: 64,
        group_size: 4,
        advantage: AdvantageEstimator::Grpo,
        reward: embodia_algos::RewardSource::Success,
        equal_episode_weights: true,
        mini_batches: 4,
        update_epochs: 2,
        policy_lr: 5e-5,
        ..Default::default()
    };
    let mut train_env = env(&variant, config.num_envs);
    train_env.reset(3);
    let init = sft.checkpoint().unwrap();
    let mut rl = VlaPpo::new(config, &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    let mut env_steps = 0;
    for _ in 0..10 {
        env_steps = rl.iterate(&mut train_env).unwrap().env_steps;
    }
    let s1 = success(&rl, &variant, 64, 99);
    eprintln!("VLA GRPO in one scene: success {s0:.3} -> {s1:.3} after {env_steps} env steps");
    // Measured: 0.219 -> 0.562, and 0.547 and 0.547 with RL seeds 4 and 5 (102k env steps).
    assert!(s1 >= s0 + 0.15, "success {s0} -> {s1}");
}

/// DSRL: SAC on the initial noise of the same weak clone raises its success while the VLA's
/// weights stay as SFT left them; a restored learner continues exactly.
#[test]
fn vla_dsrl_steers_a_frozen_weak_clone_to_more_success_on_one_variant_in_one_scene() {
    let mut variant = one_scene(one_variant("lang-cubes-ee"));
    let (sft, _, _) = sft(&variant, 250);
    let s0 = success(&sft, &variant, 64, 99);
    let init = sft.checkpoint().unwrap();
    let config = VlaDsrlConfig { num_envs: 64, ..Default::default() };
    let refused = VlaDsrl::new(config.clone(), &env(&variant, 1), &init, Device::flex().autodiff(), 3).err();
    assert!(
        refused.is_some_and(|e| e.to_string().contains("algo.privileged_critic")),
        "a privileged critic without the task's critic observation must be refused naming the field"
    );
    variant.task.observations.critic = Some(vec![
        ObsTerm::of(ObsKind::EeToObject),
        ObsTerm::of(ObsKind::ObjectPos),
        ObsTerm::of(ObsKind::GripperOpening),
    ]);
    let mut train_env = env(&variant, config.num_envs);
    let mut rl = VlaDsrl::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    let mut env_steps = 0;
    for _ in 0..ITERATIONS {
        env_steps = rl.iterate(&mut train_env).unwrap().env_steps;
    }
    let s1 = success(&rl, &variant, 64, 99);
    eprintln!("VLA DSRL in one scene: success {s0:.3} -> {s1:.3} (sampled noise policy) after {env_steps} env steps");
    // Measured: 0.219 -> 0.719 (102k env steps; training success 0.25 -> 0.81 by iteration 7).
    assert!(s1 >= s0 + 0.15, "success {s0} -> {s1}");
    let ckpt = rl.checkpoint().unwrap();
    assert_eq!(ckpt.params("model"), init.params("ema"), "DSRL moved the VLA's weights");

    let mut restored = VlaDsrl::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 3).unwrap();
    restored.restore(&ckpt).unwrap();
    let (mut env_a, mut env_b) = (env(&variant, 8), env(&variant, 8));
    let (next, again) = (rl.iterate(&mut env_a).unwrap(), restored.iterate(&mut env_b).unwrap());
    assert_eq!((next.value_loss, next.policy_loss), (again.value_loss, again.policy_loss));
}

/// GAE with a value function on the task's privileged state (asymmetric actor-critic): it
/// reads the task's critic observation, not the images; during the warm-up it learns while the
/// VLA, its value head included, stays as SFT left it; a restored learner continues exactly.
#[test]
fn vla_ppo_state_critic_learns_the_task_state_value_while_the_policy_waits() {
    let mut variant = one_scene(one_variant("lang-cubes-ee"));
    let (sft, _, _) = sft(&variant, 250);
    let init = sft.checkpoint().unwrap();
    variant.task.observations.critic = Some(vec![
        ObsTerm::of(ObsKind::EeToObject),
        ObsTerm::of(ObsKind::ObjectPos),
        ObsTerm::of(ObsKind::GripperOpening),
    ]);
    let config = PpoFlowConfig {
        num_envs: 16,
        advantage: AdvantageEstimator::Gae,
        critic: CriticInput::Observation,
        critic_hidden: vec![64, 64],
        reward_scale: 0.01,
        critic_warmup_iterations: 8,
        ..Default::default()
    };
    let mut train_env = env(&variant, config.num_envs);
    let mut rl = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 5).unwrap();
    let losses: Vec<f64> = (0..6).map(|_| rl.iterate(&mut train_env).unwrap().value_loss.unwrap()).collect();
    eprintln!("VLA PPO state critic, value loss per warm-up iteration: {losses:.4?}");
    // Measured: 0.106, 0.099, 0.037, 0.052, 0.030, 0.051.
    let late = losses[3..].iter().sum::<f64>() / 3.0;
    assert!(late < 0.7 * losses[0], "value loss {losses:?}");

    let ckpt = rl.checkpoint().unwrap();
    let critic = ckpt.params("critic");
    let first_layer = critic.iter().find(|(name, _)| name.ends_with("weight")).expect("critic weights").1;
    assert_eq!(first_layer.0[0], 7, "the critic reads the 7 values of the critic observation");
    assert_eq!(ckpt.params("model"), init.params("ema"), "the warm-up moved the VLA (value head included)");

    let mut restored = VlaPpo::new(config.clone(), &train_env, &init, Device::flex().autodiff(), 5).unwrap();
    restored.restore(&ckpt).unwrap();
    let (mut env_a, mut env_b) = (env(&variant, config.num_envs), env(&variant, config.num_envs));
    let (next, again) = (rl.iterate(&mut env_a).unwrap(), restored.iterate(&mut env_b).unwrap());
    assert_eq!(next.value_loss, again.value_loss);
}

#[test]
fn vla_sft_grounding_head_learns_the_environment_state_it_needs_and_keeps_validation_episodes_out_of_training() {
    let mut variant = one_variant("lang-cubes");
    let record = |v: &Variant| {
        record_task_expert_rendered(v.name, Some(&v.task), 4, 4, 3, 0.05, Some(front_camera(&v.task))).unwrap()
    };
    let config = VlaSftConfig {
        model: small_model(),
        batch_size: 32,
        learning_rate: 1e-3,
        warmup_steps: 10,
        decay_steps: 150,
        grounding_weight: 1.0,
        ..Default::default()
    };
    // Demonstrations without environment states cannot teach it: refused, naming the field.
    let err = VlaSft::new(config.clone(), &env(&variant, 1), record(&variant), None, Device::flex().autodiff(), 1)
        .err()
        .unwrap();
    assert!(err.to_string().contains("grounding_weight"), "{err}");

    variant.task.observations.critic = Some(vec![ObsTerm::of(ObsKind::ObjectPos), ObsTerm::of(ObsKind::EeToObject)]);
    let demos = record(&variant);
    assert_eq!(demos.state_dim, 6);
    let too_many = VlaSftConfig { validation_episodes: 4, ..config.clone() };
    let err =
        VlaSft::new(too_many, &env(&variant, 1), demos.clone(), None, Device::flex().autodiff(), 1).err().unwrap();
    assert!(err.to_string().contains("validation_episodes"), "{err}");
    let config = VlaSftConfig { validation_episodes: 1, ..config };
    let samples = demos.num_steps() - demos.episodes[3].len();
    let mut sft = VlaSft::new(config, &env(&variant, 1), demos, None, Device::flex().autodiff(), 1).unwrap();
    assert_eq!(sft.num_samples(), samples, "the last episode is held out");
    assert_eq!(sft.policy().0.config().grounding_dim, 6);
    let (val_flow, val_grounding) = sft.validation_losses().unwrap().expect("validation samples");
    assert!(val_flow.is_finite() && val_grounding.is_some_and(f64::is_finite));
    let losses: Vec<f64> = (0..150).map(|_| sft.update().unwrap().1.expect("grounding loss")).collect();
    let (first, last) = (losses[..10].iter().sum::<f64>() / 10.0, losses[140..].iter().sum::<f64>() / 10.0);
    eprintln!("grounding loss {first:.3} -> {last:.3}");
    assert!(last < 0.5 * first, "grounding loss (standardized state MSE) {first} -> {last}");
    // The same samples every call: a changed value means the EMA model moved.
    let again = sft.validation_losses().unwrap().unwrap();
    assert_eq!(again, sft.validation_losses().unwrap().unwrap());
    assert_ne!(again.0, val_flow);
}
