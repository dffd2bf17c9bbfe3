//! `embodia record` and `embodia dataset info` end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn embodia(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("embodia runs");
    let (stdout, stderr) = (String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap());
    assert!(!stderr.contains("panicked"), "embodia {args:?} panicked:\n{stderr}");
    (status.success(), stdout, stderr)
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn record_writes_a_dataset_that_info_reads_back() {
    let dir = scratch("record");
    let args =
        ["record", "--task", "pick-cube", "--expert", "scripted", "--episodes", "3", "--envs", "2", "--out", "data/pc"];
    let (ok, out, err) = embodia(&dir, &args);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "scripted expert on pick-cube: success 100.0% (3 of 3 episodes); wrote 3 episodes, 750 frames to data/pc"
    );
    let ds = embodia::dataset::read(&dir.join("data/pc")).unwrap();
    assert_eq!(ds.demonstrations.episodes.len(), 3);
    assert_eq!(ds.demonstrations.task, "pick-cube");
    assert_eq!(ds.info.robot_type.as_deref(), Some("arm7"));

    let (ok, out, err) = embodia(&dir, &["dataset", "info", "data/pc"]);
    assert!(ok, "{err}");
    for line in
        ["task      pick-cube", "episodes  3", "frames    750 (mean length 250.0)", "fps       50", "success   100.0%"]
    {
        assert!(out.contains(line), "`{line}` missing from:\n{out}");
    }
    assert!(out.contains("observation.state    float32  [37]"), "{out}");

    // An existing dataset is not overwritten without --force, and not touched.
    let info = std::fs::read(dir.join("data/pc/meta/info.json")).unwrap();
    let (ok, _, err) = embodia(&dir, &["record", "--task", "reach", "--episodes", "2", "--out", "data/pc"]);
    assert!(!ok);
    assert!(err.trim().ends_with("data/pc exists and is not empty (pass --force to replace it)"), "{err}");
    assert_eq!(std::fs::read(dir.join("data/pc/meta/info.json")).unwrap(), info);
    let (ok, _, err) = embodia(&dir, &["record", "--task", "reach", "--episodes", "2", "--out", "data/pc", "--force"]);
    assert!(ok, "{err}");
    assert_eq!(embodia::dataset::read(&dir.join("data/pc")).unwrap().demonstrations.task, "reach");
    assert_eq!(std::fs::read_dir(dir.join("data")).unwrap().count(), 1, "no temporary directory left behind");
    // --force replaces only a dataset: a directory of other files, or a file, is refused before
    // anything is recorded, and left as it was.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/notes.txt"), "keep").unwrap();
    std::fs::write(dir.join("file"), "keep").unwrap();
    for (out, found) in [("mine", "a directory of 1 entries"), ("file", "a file")] {
        let (ok, _, err) = embodia(&dir, &["record", "--task", "reach", "--episodes", "2", "--out", out, "--force"]);
        assert!(!ok && err.contains(&format!("{out} is {found}, not a dataset")), "{err}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("mine/notes.txt")).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(dir.join("file")).unwrap(), "keep");
}

#[test]
fn only_success_keeps_successful_episodes_and_same_seed_same_data() {
    let dir = scratch("only-success");
    let base = ["record", "--task", "push-t", "--episodes", "2", "--envs", "2", "--seed", "4"];
    let (ok, out, err) = embodia(&dir, &[&base[..], &["--only-success", "--out", "a"]].concat());
    assert!(ok, "{err}");
    // Seed 4's first two episodes include a failure: more are recorded until two succeed.
    assert!(out.contains("success 50.0% (2 of 4 episodes); wrote 2 episodes"), "{out}");
    let a = embodia::dataset::read(&dir.join("a")).unwrap().demonstrations;
    assert!(a.episodes.iter().all(|e| e.success));
    let (ok, _, err) = embodia(&dir, &[&base[..], &["--only-success", "--out", "b"]].concat());
    assert!(ok, "{err}");
    assert_eq!(embodia::dataset::read(&dir.join("b")).unwrap().demonstrations, a, "same seed, same episodes");
}

#[test]
fn bad_record_and_info_arguments_are_named() {
    let dir = scratch("bad");
    let (ok, _, err) = embodia(&dir, &["record", "--task", "pick-cube", "--expert", "human", "--out", "x"]);
    assert!(!ok && err.contains("unknown expert `human`; valid experts: scripted"), "{err}");
    let (ok, _, err) = embodia(&dir, &["record", "--task", "pendulum", "--episodes", "1", "--out", "x"]);
    // A registered task without a scripted expert: said so, with the tasks that have one.
    assert!(!ok && err.contains("`pendulum` has no scripted expert") && err.contains("pick-cube"), "{err}");
    assert!(!dir.join("x").exists(), "nothing written on error");
    let (ok, _, err) = embodia(&dir, &["dataset", "info", "nowhere"]);
    assert!(!ok && err.contains("nowhere/meta/info.json"), "{err}");
}

#[test]
fn record_lang_cubes_with_cameras_round_trips_instructions_and_images() {
    let dir = scratch("lang");
    let args = [
        "record",
        "--task",
        "lang-cubes",
        "--expert",
        "scripted",
        "--episodes",
        "6",
        "--envs",
        "6",
        "--camera",
        "32",
        "--out",
        "data/lang",
    ];
    let (ok, out, err) = embodia(&dir, &args);
    assert!(ok, "{err}");
    assert!(out.contains("wrote 6 episodes"), "{out}");
    let ds = embodia::dataset::read(&dir.join("data/lang")).unwrap();
    let d = &ds.demonstrations;
    assert_eq!(d.task, "lang-cubes");
    assert_eq!(d.cameras.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["front", "wrist"]);
    let family = embodia::sim::task_config("lang-cubes").unwrap();
    let lang = family.command.language.as_ref().unwrap();
    let spec = embodia::sim::rapier::language::LanguageSpec::new(lang, family.scene.objects.len()).unwrap();
    let od = d.obs_dim;
    let at = od - spec.len() - d.action_dim;
    for (e, ep) in d.episodes.iter().enumerate() {
        // The instruction is one of the family's training variants, and matches the one-hot in
        // every frame of the episode.
        let text = ep.instruction.as_deref().expect("every episode has its instruction");
        let k = spec.find(text).unwrap_or_else(|| panic!("episode {e}: `{text}` is not a variant"));
        assert!(!spec.held_out[k]);
        for t in 0..ep.len() {
            assert_eq!(ep.observations[t * od + at + k], 1.0, "episode {e} frame {t}");
        }
        // Images: one [len, 32, 32, 3] buffer per camera, and the view changes over the episode.
        assert_eq!(ep.images.len(), 2);
        for images in &ep.images {
            assert_eq!(images.len(), ep.len() * 32 * 32 * 3);
        }
        let n = 32 * 32 * 3;
        assert_ne!(ep.images[1][..n], ep.images[1][(ep.len() - 1) * n..], "episode {e}: the wrist view moved");
    }
    assert_eq!(ds.info.features["observation.images.front"].dtype, "image");
    assert_eq!(ds.info.features["observation.images.front"].shape, [32, 32, 3]);
    let distinct: std::collections::BTreeSet<_> = d.episodes.iter().map(|e| e.instruction.clone()).collect();
    assert_eq!(ds.info.total_tasks, distinct.len());

    // Writing what was read gives back the same demonstrations.
    embodia::dataset::save(d, &dir.join("data/copy"), &embodia::dataset::WriteOptions::default(), false).unwrap();
    assert_eq!(&embodia::dataset::read(&dir.join("data/copy")).unwrap().demonstrations, d);

    let (ok, out, err) = embodia(&dir, &["dataset", "info", "data/lang"]);
    assert!(ok, "{err}");
    assert!(out.contains("camera    front 32x32x3") && out.contains("instructions "), "{out}");
    let (ok, _, err) =
        embodia(&dir, &["record", "--task", "lang-cubes", "--episodes", "1", "--camera", "2", "--out", "data/x"]);
    assert!(!ok && err.contains("--camera"), "{err}");

    // Held-out variants are selectable for evaluation; other tasks have no split.
    let (ok, out, err) = embodia(
        &dir,
        &["eval", "--task", "lang-cubes", "--expert", "scripted", "--episodes", "4", "--split", "held_out"],
    );
    assert!(ok && out.contains("4 episodes: success"), "{out}{err}");
    let (ok, _, err) =
        embodia(&dir, &["eval", "--task", "pick-cube", "--expert", "scripted", "--episodes", "1", "--split", "all"]);
    assert!(!ok && err.contains("`--split` needs a language-conditioned task"), "{err}");
}

#[test]
fn record_run_writes_the_policys_own_executed_actions() {
    let dir = scratch("policy");
    let mut train = vec!["train", "--task", "reach", "--algo", "ppo", "--steps", "512", "--set", "algo.num_envs=4"];
    train.extend(["--set", "eval_episodes=1", "--run-dir", "runs/r", "--quiet"]);
    let (ok, _, err) = embodia(&dir, &train);
    assert!(ok, "{err}");
    let record = ["record", "--run", "runs/r", "--episodes", "3", "--envs", "2"];
    let (ok, out, err) = embodia(&dir, &[&record[..], &["--out", "data/own"]].concat());
    assert!(ok, "{err}");
    assert!(out.starts_with("policy of runs/r: success") && out.contains("wrote 3 episodes"), "{out}");
    let d = embodia::dataset::read(&dir.join("data/own")).unwrap().demonstrations;
    assert_eq!((d.task.as_str(), d.episodes.len(), d.fps), ("reach", 3, 50.0));

    // Every recorded action is the policy's deterministic action for the recorded observation,
    // as `embodia act` gives it.
    let (od, ad) = (d.obs_dim, d.action_dim);
    let ep = &d.episodes[1];
    let rows = 20.min(ep.len());
    let obs: Vec<String> =
        ep.observations.chunks(od).take(rows).map(|o| format!("{o:?}").replace(['[', ']'], "")).collect();
    std::fs::write(dir.join("obs.txt"), obs.join("\n")).unwrap();
    let (ok, out, err) = embodia(&dir, &["act", "--run", "runs/r", "--obs", "obs.txt"]);
    assert!(ok, "{err}");
    let acted: Vec<f32> = out
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(acted.len(), rows * ad, "{out}");
    for (k, (a, b)) in acted.iter().zip(&ep.actions).enumerate() {
        assert!((a - b).abs() < 1e-4, "action value {k}: act gives {a}, the dataset holds {b}");
    }

    // Sampled actions differ from the mode.
    let (ok, _, err) = embodia(&dir, &[&record[..], &["--stochastic", "--out", "data/sampled"]].concat());
    assert!(ok, "{err}");
    let sampled = embodia::dataset::read(&dir.join("data/sampled")).unwrap().demonstrations;
    assert_ne!(sampled.episodes[0].actions[..ad], d.episodes[0].actions[..ad]);

    // The run's environment is the policy's own: expert options are refused with it.
    let (ok, _, err) = embodia(&dir, &[&record[..], &["--camera", "32", "--out", "data/x"]].concat());
    assert!(!ok && err.contains("--camera") && err.contains("--run"), "{err}");
    let (ok, _, err) = embodia(&dir, &["record", "--task", "reach", "--stochastic", "--out", "data/x"]);
    assert!(!ok && err.contains("--stochastic") && err.contains("--run"), "{err}");
    assert!(!dir.join("data/x").exists(), "nothing written on error");
}
