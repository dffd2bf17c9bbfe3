//! End-to-end tests of the viewer side: `embodia view`, the viewer flags without the `rerun`
//! feature, `eval --render`, and (with `--features rerun`) an episode recording checked with
//! the rerun tools themselves.
//!
//! Run with `cargo test --release --test viz` (and `--features rerun` for the recording test;
//! it creates `bench/.venv-rerun` with the pinned `rerun-sdk` through `bench/rerun_venv.sh`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("embodia-viz-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// Runs `embodia args` in `dir` with extra environment variables; returns (code, stdout, stderr).
fn embodia_env(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(args)
        .envs(vars.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("embodia runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "embodia {args:?} panicked:\n{stderr}");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

fn ok(dir: &Path, args: &[&str]) -> (String, String) {
    let (code, stdout, stderr) = embodia_env(dir, args, &[]);
    assert_eq!(code, Some(0), "embodia {args:?} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

fn png_size(path: &Path) -> (u32, u32) {
    let file = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let info = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a valid PNG").info().clone();
    (info.width, info.height)
}

#[test]
fn view_opens_the_viewer_on_the_runs_recordings() {
    let t = tmp("view");
    let run = t.0.join("run");
    fs::create_dir_all(&run).unwrap();
    // No recordings yet: say how to make one.
    let (code, _, stderr) = embodia_env(&t.0, &["view", "run"], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no recordings") && stderr.contains("--record-episodes"), "{stderr}");
    fs::write(run.join("episodes.rrd"), b"x").unwrap();
    fs::write(run.join("train.rrd"), b"x").unwrap();
    // A missing viewer prints the install command.
    let (code, _, stderr) = embodia_env(&t.0, &["view", "run"], &[("EMBODIA_RERUN", "/nonexistent/rerun")]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("pip install rerun-sdk==0.36.3"), "{stderr}");
    // A stand-in viewer receives every recording.
    let fake = t.0.join("fake-rerun.sh");
    fs::write(&fake, format!("#!/bin/sh\necho \"$@\" > {}\n", t.0.join("args").display())).unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let (code, _, stderr) = embodia_env(&t.0, &["view", "run"], &[("EMBODIA_RERUN", fake.to_str().unwrap())]);
    assert_eq!(code, Some(0), "{stderr}");
    let args = fs::read_to_string(t.0.join("args")).unwrap();
    assert_eq!(args.trim(), "run/episodes.rrd run/train.rrd");
}

#[cfg(not(feature = "rerun"))]
#[test]
fn viewer_flags_say_the_binary_lacks_rerun() {
    let t = tmp("nofeature");
    for args in [&["train", "--viz-save", "x.rrd", "--run-dir", "r"][..], &["train", "--viz", "--run-dir", "r"][..]] {
        let (code, _, stderr) = embodia_env(&t.0, args, &[]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("built without the `rerun` feature") && stderr.contains("--features rerun"),
            "{stderr}"
        );
        assert!(!t.0.join("r").exists(), "a refused train created its run directory");
    }
    ok(&t.0, &["train", "--steps", "1000", "--set", "eval_episodes=1", "--run-dir", "r", "--quiet"]);
    let (code, stdout, stderr) =
        embodia_env(&t.0, &["eval", "--run", "r", "--episodes", "1", "--record-episodes", "1"], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("built without the `rerun` feature"), "{stderr}");
    assert!(stdout.is_empty(), "refused before evaluating, not after: {stdout}");
}

#[test]
fn eval_renders_frames_of_an_episode() {
    let t = tmp("render");
    let (_, stderr) = ok(
        &t.0,
        &[
            "eval",
            "--task",
            "pick-cube",
            "--expert",
            "scripted",
            "--episodes",
            "1",
            "--render",
            "pick.png",
            "--render-frames",
            "4",
        ],
    );
    assert!(stderr.contains("pick.png"), "{stderr}");
    assert_eq!(png_size(&t.0.join("pick.png")), (4 * 480, 400 + 36));
    // Classic tasks have no scene.
    ok(&t.0, &["train", "--steps", "1000", "--set", "eval_episodes=1", "--run-dir", "p", "--quiet"]);
    let (code, _, stderr) = embodia_env(&t.0, &["eval", "--run", "p", "--episodes", "1", "--render", "p.png"], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no scene to draw"), "{stderr}");
}

/// Records two episodes of a (barely trained) reach policy and checks the file with the rerun
/// CLI (`rerun rrd verify`) and the rerun Python SDK (`tests/rerun/rrd_dump.py`): entity
/// paths, the number of frames, and one link transform against the simulator's own pose.
#[cfg(feature = "rerun")]
#[test]
fn recorded_episodes_read_back_with_the_rerun_tools() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = Command::new("bash").arg(root.join("bench/rerun_venv.sh")).output().expect("bash runs");
    assert!(
        venv.status.success(),
        "bench/rerun_venv.sh could not install rerun-sdk (needs pip and PyPI):\n{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let bin = PathBuf::from(String::from_utf8(venv.stdout).unwrap().trim());
    let t = tmp("record");
    ok(
        &t.0,
        &[
            "train",
            "--task",
            "reach",
            "--algo",
            "sac",
            "--steps",
            "1000",
            "--set",
            "eval_episodes=1",
            "--run-dir",
            "r",
            "--quiet",
        ],
    );
    let (stdout, stderr) = ok(&t.0, &["eval", "--run", "r", "--episodes", "2", "--json", "--record-episodes", "2"]);
    let eval: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let rrd = t.0.join("r/episodes.rrd");
    assert!(stderr.contains("episodes.rrd"), "{stderr}");
    let verify = Command::new(bin.join("rerun")).args(["rrd", "verify"]).arg(&rrd).output().unwrap();
    assert!(verify.status.success(), "rerun rrd verify: {}", String::from_utf8_lossy(&verify.stderr));

    // The simulator's pose of the last link at step 17 of episode 0, replayed in-process.
    let step = 17;
    let (config, learner) = embodia::run::load_learner(&t.0.join("r")).unwrap();
    let mut env = embodia::sim::make_with(&config.task, 2, config.env.as_ref()).unwrap();
    env.reset(config.seed + embodia::run::EVAL_SEED_OFFSET);
    let mut actions = vec![0.0; 2 * env.action_spec().bounds.dim()];
    for _ in 0..step {
        learner.act(&env.buffers().obs, &mut actions, None).unwrap();
        env.step(&actions).unwrap();
    }
    let view = env.scene_view().unwrap();
    let bodies = view.bodies();
    let mut poses = Vec::new();
    view.poses(0, &mut poses);
    let k = bodies.iter().rposition(|b| b.path.starts_with("robot/")).unwrap();
    let entity = format!("/episode_0/world/{}", bodies[k].path);

    let dump = Command::new(bin.join("python"))
        .arg(root.join("tests/rerun/rrd_dump.py"))
        .arg(&rrd)
        .arg(&entity)
        .arg(step.to_string())
        .output()
        .unwrap();
    assert!(dump.status.success(), "rrd_dump.py: {}", String::from_utf8_lossy(&dump.stderr));
    let d: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
    let entities = d["entities"].as_object().unwrap();
    for e in 0..2 {
        for path in ["world/target", "observation/0", "action/0", "reward", "return", "success"] {
            assert!(
                entities.contains_key(&format!("/episode_{e}/{path}")),
                "/episode_{e}/{path} missing: {:?}",
                entities.keys()
            );
        }
        for b in &bodies {
            let path = format!("/episode_{e}/world/{}", b.path);
            assert!(entities.contains_key(&path), "{path} missing");
            assert!(entities.contains_key(&format!("{path}/visual_0")), "{path}/visual_0 missing");
        }
    }
    // Frames: a pose per step before each step, a reward after it; lengths match `eval`.
    let frames: u64 = (0..2)
        .map(|e| entities[&format!("/episode_{e}/world/{}", bodies[k].path)]["num_steps"].as_u64().unwrap())
        .sum();
    let rewards: u64 = (0..2).map(|e| entities[&format!("/episode_{e}/reward")]["num_steps"].as_u64().unwrap()).sum();
    assert_eq!(frames, rewards);
    assert_eq!(frames as f64, 2.0 * eval["mean_length"].as_f64().unwrap(), "{eval}");
    let translation = &d["transform"]["translation"][0];
    for (i, expected) in poses[k].translation.iter().enumerate() {
        let got = translation[i].as_f64().unwrap();
        assert!(
            (got - *expected as f64).abs() < 1e-6,
            "{entity} at step {step}: {translation} vs {:?}",
            poses[k].translation
        );
    }
}

/// A VLA run's recorded episodes carry what the model saw and did: the camera view it reads,
/// the instruction, and its action chunks.
#[cfg(feature = "rerun")]
#[test]
fn recorded_vla_episodes_show_camera_instruction_and_action_chunks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = Command::new("bash").arg(root.join("bench/rerun_venv.sh")).output().expect("bash runs");
    assert!(venv.status.success(), "bench/rerun_venv.sh: {}", String::from_utf8_lossy(&venv.stderr));
    let bin = PathBuf::from(String::from_utf8(venv.stdout).unwrap().trim());
    let t = tmp("record-vla");
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--demos", "2", "--steps", "2"];
    args.extend(["--set", "algo.updates_per_iteration=2", "--set", "algo.num_envs=1", "--set", "eval_episodes=1"]);
    args.extend(["--set", "algo.model.backbone_depth=1", "--set", "algo.model.expert_depth=1"]);
    args.extend(["--run-dir", "r", "--quiet"]);
    ok(&t.0, &args);
    ok(&t.0, &["eval", "--run", "r", "--episodes", "1", "--record-episodes", "1"]);
    let rrd = t.0.join("r/episodes.rrd");
    let dump = Command::new(bin.join("python"))
        .arg(root.join("tests/rerun/rrd_dump.py"))
        .arg(&rrd)
        .arg("/episode_0/reward")
        .arg("1")
        .output()
        .unwrap();
    assert!(dump.status.success(), "rrd_dump.py: {}", String::from_utf8_lossy(&dump.stderr));
    let d: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
    let entities = d["entities"].as_object().unwrap();
    let steps = |path: &str| entities.get(path).and_then(|e| e["num_steps"].as_u64());
    let frames = steps("/episode_0/reward").expect("rewards recorded");
    // One image per step acted on, one instruction, one chunk per C = 4 steps.
    assert_eq!(steps("/episode_0/camera/front"), Some(frames), "{:?}", entities.keys());
    assert_eq!(steps("/episode_0/instruction"), Some(1), "{:?}", entities.keys());
    assert_eq!(steps("/episode_0/action_chunk"), Some(frames.div_ceil(4)), "{:?}", entities.keys());
}
