//! The language-conditioned family `lang-cubes`: variants, splits, instructions, success
//! criteria, scripted experts, and images through the `VecEnv` contract.

use embodia_sim::camera::{CameraEnv, RenderConfig};
use embodia_sim::rapier::builtin_tasks::LANG_CUBES_HELD_OUT;
use embodia_sim::rapier::expert_runs::evaluate_task_expert;
use embodia_sim::rapier::language::{LanguageSpec, Split, variants};
use embodia_sim::{TaskConfig, VecEnv, make_with, task_config};

const TASK: &str = "lang-cubes";

fn config() -> TaskConfig {
    task_config(TASK).expect("registered")
}

/// The family's config drawing only the variant `instruction`.
fn only(instruction: &str) -> TaskConfig {
    let mut c = config();
    let l = c.command.language.as_mut().unwrap();
    l.held_out = vec![instruction.to_string()];
    l.split = Split::HeldOut;
    c
}

fn spec(c: &TaskConfig) -> LanguageSpec {
    LanguageSpec::new(c.command.language.as_ref().unwrap(), c.scene.objects.len()).unwrap()
}

#[test]
fn family_has_28_variants_and_5_held_out() {
    let c = config();
    let s = spec(&c);
    assert_eq!(s.len(), 28);
    assert_eq!(s.held_out.iter().filter(|h| **h).count(), LANG_CUBES_HELD_OUT.len());
    assert_eq!(s.drawn.len(), 23);
    let texts: Vec<&str> = s.variants.iter().map(|v| v.instruction.as_str()).collect();
    assert!(texts.contains(&"pick up the red cube"));
    assert!(texts.contains(&"push the green cube to the left"));
    assert!(texts.contains(&"stack the blue cube on the yellow cube"));
    assert!(texts.contains(&"put the green cube on the target"));
    // Distinct instructions.
    let mut sorted = texts.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 28);
}

#[test]
fn held_out_variants_are_never_drawn_in_training_and_instructions_match_the_one_hot() {
    let c = config();
    let s = spec(&c);
    let mut env = make_with(TASK, 32, Some(&c)).unwrap();
    let od = env.obs_spec().vector.dim();
    // The one-hot is followed only by the last action.
    let at = od - s.len() - env.action_spec().bounds.dim();
    let mut seen = vec![false; s.len()];
    for seed in 0..6 {
        env.reset(seed);
        for i in 0..env.num_envs() {
            let text = env.instruction(i).expect("lang-cubes has instructions");
            let k = s.find(text).expect("a variant's instruction");
            assert!(!s.held_out[k], "held-out `{text}` drawn in training");
            let hot = &env.buffers().obs[i * od + at..i * od + at + s.len()];
            assert_eq!(hot.iter().sum::<f32>(), 1.0);
            assert_eq!(hot[k], 1.0, "one-hot of env {i} does not match `{text}`");
            seen[k] = true;
        }
    }
    assert_eq!(seen.iter().filter(|s| **s).count(), 23, "every training variant is drawn");
    // The held-out split draws only the held-out ones.
    let mut h = config();
    h.command.language.as_mut().unwrap().split = Split::HeldOut;
    let mut env = make_with(TASK, 16, Some(&h)).unwrap();
    env.reset(3);
    for i in 0..16 {
        assert!(LANG_CUBES_HELD_OUT.contains(&env.instruction(i).unwrap()));
    }
    // Tasks without a family have no instruction.
    assert!(embodia_sim::make("pick-cube", 1).unwrap().instruction(0).is_none());
}

#[test]
fn success_is_false_at_reset_and_holding_still_never_succeeds() {
    let c = config();
    let mut c2 = c.clone();
    c2.command.language.as_mut().unwrap().split = Split::All;
    let mut env = make_with(TASK, 24, Some(&c2)).unwrap();
    let ad = env.action_spec().bounds.dim();
    for seed in 0..3 {
        env.reset(seed);
        // Zero actions hold the default pose (gripper half open): nothing is picked, pushed
        // or stacked.
        for _ in 0..5 {
            env.step(&vec![0.0; 24 * ad]).unwrap();
            assert!(env.buffers().success.iter().all(|s| *s == 0.0), "success without acting (seed {seed})");
        }
    }
}

#[test]
fn bad_language_configs_name_the_field() {
    let mut c = config();
    c.command.language.as_mut().unwrap().held_out = vec!["pick up the purple cube".into()];
    let e = make_with(TASK, 1, Some(&c)).err().unwrap().to_string();
    assert!(e.contains("env.command.language.held_out[0]"), "{e}");
    let mut c = config();
    c.command.language.as_mut().unwrap().colors.pop();
    let e = make_with(TASK, 1, Some(&c)).err().unwrap().to_string();
    assert!(e.contains("env.command.language.colors"), "{e}");
    let mut c = config();
    c.command.language = None;
    assert!(make_with(TASK, 1, Some(&c)).is_err());
    // The held-out list names every variant: nothing left for training.
    let mut c = config();
    let l = c.command.language.as_mut().unwrap();
    l.held_out = variants(l).into_iter().map(|v| v.instruction).collect();
    let e = make_with(TASK, 1, Some(&c)).err().unwrap().to_string();
    assert!(e.contains("env.command.language.split"), "{e}");
}

/// The scripted expert on one variant: success rate and mean length over 10 episodes.
fn expert_eval(instruction: &str, seed: u64) -> (f64, f64) {
    let e = evaluate_task_expert(TASK, Some(&only(instruction)), 10, 10, seed).unwrap();
    (e.success_rate, e.mean_length)
}

fn expert_rate(instruction: &str, seed: u64) -> f64 {
    expert_eval(instruction, seed).0
}

#[test]
fn scripted_expert_solves_a_representative_subset() {
    // One variant per verb and direction, over all four colours, held-out ones included.
    let subset = [
        "pick up the red cube",
        "pick up the yellow cube",
        "push the green cube to the left",
        "push the blue cube to the right",
        "stack the blue cube on the red cube",
        "stack the green cube on the yellow cube",
        "put the red cube on the target",
    ];
    let mut failed = Vec::new();
    for (k, text) in subset.iter().enumerate() {
        let rate = expert_rate(text, 100 + k as u64);
        eprintln!("{rate:>5.2}  {text}");
        if rate < 0.8 {
            failed.push(format!("{text}: {rate}"));
        }
    }
    assert!(failed.is_empty(), "expert below 80%: {failed:?}");
}

/// Every variant's expert success (10 episodes each); `--ignored` (about a minute in release).
#[test]
#[ignore]
fn scripted_expert_success_per_variant() {
    let s = spec(&config());
    let mut total = 0.0;
    for (k, v) in s.variants.iter().enumerate() {
        let (rate, length) = expert_eval(&v.instruction, 1000 + k as u64);
        total += rate;
        let held = if s.held_out[k] { "  (held out)" } else { "" };
        println!("{rate:>5.2}  {length:>6.1} steps  {}{held}", v.instruction);
    }
    println!("mean {:.3}", total / s.len() as f64);
}

#[test]
fn images_come_through_the_contract_and_change_with_the_scene() {
    let c = config();
    let n = 3;
    let render = RenderConfig::for_task(&c, 32, 24);
    let mut env: Box<dyn VecEnv> = Box::new(CameraEnv::new(make_with(TASK, n, Some(&c)).unwrap(), render).unwrap());
    let spec = env.obs_spec().images.clone();
    assert_eq!(spec.len(), 2, "front and wrist");
    assert_eq!((spec[0].name.as_str(), spec[0].height, spec[0].width, spec[0].channels), ("front", 24, 32, 3));
    env.reset(5);
    let before = env.image(0).unwrap().to_vec();
    assert_eq!(before.len(), n * 24 * 32 * 3);
    assert!(env.image(2).is_none());
    assert!(env.instruction(0).is_some(), "CameraEnv forwards instructions");
    // Different environments show different scenes (cube positions differ).
    let one = 24 * 32 * 3;
    assert_ne!(before[..one], before[one..2 * one]);
    let ad = env.action_spec().bounds.dim();
    let actions: Vec<f32> = (0..n * ad).map(|i| if i % ad == 0 { 1.0 } else { 0.0 }).collect();
    for _ in 0..10 {
        env.step(&actions).unwrap();
    }
    let after = env.image(0).unwrap();
    assert_ne!(before.as_slice(), after, "the arm moved; the front view must change");
    // Tasks without cameras expose none.
    let plain = make_with(TASK, 1, Some(&c)).unwrap();
    assert!(plain.obs_spec().images.is_empty() && plain.image(0).is_none());
}

#[test]
fn same_seed_same_instructions_and_observations() {
    let c = config();
    let mut a = make_with(TASK, 8, Some(&c)).unwrap();
    let mut b = make_with(TASK, 8, Some(&c)).unwrap();
    a.reset(11);
    b.reset(11);
    let ad = a.action_spec().bounds.dim();
    let actions: Vec<f32> = (0..8 * ad).map(|i| ((i * 37 % 17) as f32 / 8.0 - 1.0) * 0.5).collect();
    for _ in 0..20 {
        a.step(&actions).unwrap();
        b.step(&actions).unwrap();
    }
    assert_eq!(a.buffers().obs, b.buffers().obs);
    for i in 0..8 {
        assert_eq!(a.instruction(i), b.instruction(i));
    }
    // Another seed draws other instructions somewhere in the batch.
    b.reset(12);
    a.reset(11);
    assert!((0..8).any(|i| a.instruction(i) != b.instruction(i)));
}

/// `lang-cubes-ee-fixed` (LIBERO-Goal-like): every reset puts each cube and the pad within 1 cm
/// of its spot, the variants still vary, and the scripted expert solves both splits.
#[test]
fn fixed_layout_resets_within_a_centimetre_and_its_expert_solves_both_splits() {
    use embodia_sim::rapier::objects::planar;
    use embodia_sim::rapier::{RapierEnv, rapier_tasks};
    let name = "lang-cubes-ee-fixed";
    let c = task_config(name).unwrap();
    let task = rapier_tasks().into_iter().find(|t| t.info.name == name).unwrap();
    let model = embodia_robots::builtin(&c.scene.robot).unwrap();
    let mut env = RapierEnv::new(task.info, c.clone(), model, 32).unwrap();
    let mut drawn = std::collections::BTreeSet::new();
    for seed in 0..3 {
        env.reset(seed);
        for s in env.scenes() {
            for (i, object) in c.scene.objects.iter().enumerate() {
                let [x, y, _] = planar(&s.object_pose(i));
                let (cx, cy) = (0.5 * (object.x[0] + object.x[1]), 0.5 * (object.y[0] + object.y[1]));
                assert!((x - cx).abs() <= 0.0101 && (y - cy).abs() <= 0.0101, "{}: ({x}, {y})", object.name);
            }
            let pad = s.place_target();
            assert!((pad.x - 0.5).abs() <= 0.0101 && pad.y.abs() <= 0.0101, "pad at ({}, {})", pad.x, pad.y);
            drawn.insert(s.variant());
        }
    }
    assert!(drawn.len() >= 15, "only {} variants drawn in 96 resets", drawn.len());
    let train = evaluate_task_expert(name, Some(&c), 32, 92, 3).unwrap();
    let mut held = c.clone();
    held.command.language.as_mut().unwrap().split = Split::HeldOut;
    let held = evaluate_task_expert(name, Some(&held), 20, 40, 4).unwrap();
    assert!(train.success_rate >= 0.95, "training split: {train:?}");
    assert!(held.success_rate >= 0.95, "held-out split: {held:?}");
}
