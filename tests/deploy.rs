//! Deployment end to end: the policy's observation on hardware equals the simulator's, and the
//! `deploy`, `calibrate`, `servo-emulator` and `bench deploy` commands against the emulator.
//!
//! Run with `cargo test --release --test deploy`; budgets are small (one short PPO run, loops of
//! a few seconds).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use embodia::config::{ConfigSources, resolve};
use embodia::deploy::JointState;
use embodia::deployment::TaskPolicy;
use embodia::robots::HardwareMap;
use embodia::sim::rapier::{Scene, SceneSpec};
use rand::SeedableRng;

fn so101_map() -> HardwareMap {
    HardwareMap::builtin("so101", &embodia::robots::builtin("so101").unwrap()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn embodia(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(!stderr.contains("panicked"), "embodia {args:?} panicked:\n{stderr}");
    (out.status.code(), stdout, stderr)
}

#[test]
fn the_deployed_observation_is_the_simulators() {
    let config = resolve(&ConfigSources { task: Some("reach"), algorithm: Some("ppo"), ..Default::default() }).unwrap();
    let env = embodia::sim::make("reach", 1).unwrap();
    let learner = embodia::run::build_learner(&config, env.as_ref(), &embodia::device::default_device()).unwrap();
    let exported = embodia::export::policy_of_checkpoint(&config, &learner.checkpoint().unwrap(), "untrained").unwrap();
    let mut policy = TaskPolicy::new(&config, exported, &so101_map()).unwrap();
    let task = embodia::sim::task_config("reach").unwrap();
    let spec = std::sync::Arc::new(SceneSpec::new(task, embodia::robots::builtin("so101").unwrap()).unwrap());
    let mut scene = Scene::new(&spec, rand_chacha::ChaCha8Rng::seed_from_u64(3)).unwrap();
    scene.reset();
    policy.target = scene.target().to_array();
    let mut state = JointState::new(6);
    let mut goals = [0.0; 6];
    let (mut sim_obs, mut checked) = (vec![0.0f32; spec.obs_dim], 0);
    for _ in 0..20 {
        for j in 0..6 {
            state.position[j] = f64::from(scene.joint_positions()[j]);
            state.velocity[j] = f64::from(scene.joint_velocities()[j]);
        }
        // Same state and last action on both sides: the observations agree term by term.
        let obs = policy.observe(&state).to_vec();
        scene.observe_policy(false, &mut sim_obs);
        for (i, (a, b)) in obs.iter().zip(&sim_obs).enumerate() {
            assert!((a - b).abs() < 1e-4, "observation {i}: deployed {a} vs simulated {b}");
        }
        checked += 1;
        use embodia::deploy::Policy;
        policy.predict(&state, &mut goals).unwrap();
        // The policy's goals, as actions, are what the simulator steps with.
        let action: Vec<f32> =
            (0..6).map(|j| ((goals[j] as f32) - spec.default_q[j]) / spec.config.action.scale).collect();
        scene.step(&action);
    }
    assert_eq!(checked, 20);
    assert_eq!(sim_obs.len(), 6 + 6 + 3 + 3 + 6);
}

#[test]
fn servo_emulator_prints_its_pty_and_answers_the_driver_until_interrupted() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["servo-emulator", "--robot", "so101"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let path = first.trim();
    assert!(path.starts_with("/dev/pts/"), "first line: {first:?}");
    let port = embodia::deploy::SerialBusPort::open(path, 1_000_000).unwrap();
    let mut bus = embodia::deploy::Bus::new(port, embodia::deploy::BusConfig::default());
    for id in 1..=6 {
        assert_eq!(bus.read_register(id, embodia::deploy::control_table::MODEL_NUMBER), Ok(777), "servo {id}");
    }
    assert!(bus.ping(7).is_err());
    drop(bus);
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn servo_emulator_serves_the_koch_dynamixel_servos() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["servo-emulator", "--robot", "koch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let path = first.trim();
    assert!(path.starts_with("/dev/pts/"), "first line: {first:?}");
    let port = embodia::deploy::SerialBusPort::open(path, 1_000_000).unwrap();
    let mut bus = embodia::deploy::Bus::with_protocol(
        port,
        embodia::deploy::BusConfig::default(),
        embodia::deploy::Dynamixel::new(),
    );
    let models: Vec<u32> = (1..=6)
        .map(|id| bus.read_value(id, embodia::deploy::dynamixel::control_table::MODEL_NUMBER).unwrap())
        .collect();
    assert_eq!(models, [1060, 1060, 1200, 1200, 1200, 1200]);
    assert!(bus.ping(7).is_err());
    drop(bus);
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn calibrate_imports_a_lerobot_file_and_names_the_field_at_fault() {
    let dir = temp_dir("import");
    // A Koch follower calibration in LeRobot's format (per motor: id, drive_mode,
    // homing_offset, range_min, range_max).
    let lerobot = r#"{
        "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -2048, "range_min": 1020, "range_max": 3080},
        "shoulder_lift": {"id": 2, "drive_mode": 1, "homing_offset": 1024, "range_min": 900, "range_max": 3100},
        "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": -1024, "range_min": 950, "range_max": 3000},
        "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": 0, "range_min": 1000, "range_max": 3100},
        "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": 2048, "range_min": 100, "range_max": 4000},
        "gripper": {"id": 6, "drive_mode": 0, "homing_offset": 0, "range_min": 2000, "range_max": 3200}
    }"#;
    std::fs::write(dir.join("koch_follower.json"), lerobot).unwrap();
    let (code, out, err) = embodia(&dir, &["calibrate", "--robot", "koch", "--import", "koch_follower.json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("imported 6 joints of koch from koch_follower.json into calibration-koch.json"), "{out}");
    let cal = embodia::robots::Calibration::load(&dir.join("calibration-koch.json")).unwrap();
    assert_eq!(cal.joints["shoulder_lift"].drive_mode, 1);
    assert_eq!(cal.joints["wrist_roll"].homing_offset, 2048);
    std::fs::write(
        dir.join("bad.json"),
        lerobot.replace(r#""range_min": 950, "range_max": 3000"#, r#""range_min": 950"#),
    )
    .unwrap();
    let (code, _, err) =
        embodia(&dir, &["calibrate", "--robot", "koch", "--import", "bad.json", "--out", "bad-out.json"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("bad.json: elbow_flex.range_max: missing"), "{err}");
    assert!(!dir.join("bad-out.json").exists());
}

#[test]
fn calibrate_refuses_joints_that_did_not_move_and_deploy_refuses_a_missing_calibration() {
    let dir = temp_dir("cal");
    let emulator = embodia::deploy::PtyEmulator::start(embodia::deploy::ServoChain::new(&[1, 2, 3, 4, 5, 6])).unwrap();
    let (code, _, err) = embodia(&dir, &["calibrate", "--port", emulator.path(), "--seconds", "0.2"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("calibration-so101.json: shoulder_pan.range_max: range 2048..2048 spans 0 ticks"), "{err}");
    assert!(!dir.join("calibration-so101.json").exists());
    let (code, _, err) = embodia(&dir, &["deploy", "--run", "nowhere", "--port", emulator.path()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no calibration for so101: run `embodia calibrate"), "{err}");
    // A port that opens but is no serial device is named as such, not as "Not a typewriter".
    std::fs::write(dir.join("notes.txt"), "not a port").unwrap();
    for port in ["notes.txt", "/dev/null"] {
        let (code, _, err) = embodia(&dir, &["calibrate", "--port", port, "--seconds", "0.2", "--out", "c.json"]);
        assert_eq!(code, Some(1));
        assert!(err.contains(&format!("{port}: not a serial device")), "{err}");
    }
    assert!(!dir.join("c.json").exists());
}

#[test]
fn deploy_runs_a_trained_run_on_the_emulator_and_in_the_simulation() {
    let dir = temp_dir("run");
    let (code, _, err) = embodia(
        &dir,
        &["train", "--task", "reach", "--algo", "ppo", "--steps", "2048", "--run-dir", "runs/r", "--quiet"],
    );
    assert_eq!(code, Some(0), "{err}");
    // A dry run checks the calibration it is given instead of ignoring it.
    std::fs::write(dir.join("broken-cal.json"), "{ not json").unwrap();
    let args = ["deploy", "--run", "runs/r", "--dry-run", "--calibration", "broken-cal.json", "--episodes", "1"];
    let (code, _, err) = embodia(&dir, &args);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("broken-cal.json"), "{err}");
    // The emulator, the emulator on the physics twin, and the simulation.
    for target in [&["--dry-run"][..], &["--dry-run", "--physics"], &["--sim"]] {
        let record = format!("data/{}", target.last().unwrap().trim_start_matches('-'));
        let mut args = vec!["deploy", "--run", "runs/r"];
        args.extend(target);
        args.extend(["--episodes", "1", "--hz", "100", "--json", "--record", &record]);
        let (code, out, err) = embodia(&dir, &args);
        assert_eq!(code, Some(0), "{target:?}: {err}");
        // The recorded dataset holds the episode's observations and actions, one per cycle that
        // sent goals: a cycle held for a late reply (a loaded machine) records none.
        let data = embodia::dataset::read(&dir.join(&record)).unwrap();
        let demos = &data.demonstrations;
        assert_eq!((demos.task.as_str(), demos.fps, demos.episodes.len()), ("reach", 100.0, 1));
        let frames = demos.episodes[0].len();
        assert!(demos.episodes[0].actions.iter().all(|a| a.is_finite() && a.abs() <= 1.0));
        let (code, _, err) = embodia(&dir, &args);
        assert_ne!(code, Some(0), "recording into an occupied directory must be refused");
        assert!(err.contains("not empty"), "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["episodes"].as_array().unwrap().len(), 1, "{out}");
        assert_eq!(report["episodes"][0]["cycles"], 200, "{out}");
        let sent = report["timing"]["latency"]["n"].as_u64().unwrap() as usize;
        assert!(sent > 0 && frames == sent, "{frames} frames for {sent} cycles that sent goals: {out}");
        assert!(report["stopped_early"].is_null(), "{out}");
        let d = report["episodes"][0]["final_distance"].as_f64().unwrap();
        assert!(d > 0.0 && d < 0.5, "{target:?}: final distance {d}");
    }
    // A `--record` path that is a file is refused before the robot moves, and left as it was.
    std::fs::write(dir.join("data/file"), "not a dataset").unwrap();
    let (code, _, err) =
        embodia(&dir, &["deploy", "--run", "runs/r", "--sim", "--episodes", "1", "--record", "data/file"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("data/file: exists and is not a directory") && !err.contains("deploying"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("data/file")).unwrap(), "not a dataset");
    // A stop request (SIGTERM) ends the run early: reported, and exit status 4 so a script can tell.
    let mut child = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["deploy", "--run", "runs/r", "--sim", "--episodes", "50", "--hz", "100"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("deploying") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "deploy ended before it started");
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let report = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(4), "{report}\n{rest}");
    assert!(report.contains("stopped early: torque off: stop requested"), "{report}");
    assert!(rest.contains("deploy stopped early"), "{rest}");
}

#[test]
fn bench_deploy_injects_every_fault_kind_and_detects_each() {
    let dir = temp_dir("bench");
    let (code, out, err) = embodia(&dir, &["bench", "deploy", "--seconds", "0.5", "--faults", "24", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let faults = json["faults"].as_object().unwrap();
    assert_eq!(faults.len(), 8, "{out}");
    for (kind, s) in faults {
        assert_eq!(s["injected"], 3, "{kind}");
        assert_eq!(s["detected"], 3, "{kind}: {out}");
        assert_eq!(s["safe_within_two_cycles"], 3, "{kind}: {out}");
    }
    assert_eq!(json["commands_outside_limits"], 0);
    assert_eq!(json["commands_over_step"], 0);
    assert!(json["commands_checked"].as_u64().unwrap() > 24);
}

/// The Koch end to end: a `reach-koch` run deploys on its emulated Dynamixel servos, with and
/// without a calibration on a port, and a servo whose homing offset differs from the
/// calibration's is refused before the arm moves.
#[test]
fn a_koch_run_deploys_over_dynamixel_and_a_changed_homing_offset_is_refused() {
    let dir = temp_dir("koch");
    let (code, _, err) = embodia(
        &dir,
        &["train", "--task", "reach-koch", "--algo", "ppo", "--steps", "2048", "--run-dir", "runs/k", "--quiet"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = embodia(
        &dir,
        &["deploy", "--run", "runs/k", "--robot", "koch", "--dry-run", "--episodes", "1", "--hz", "100", "--json"],
    );
    assert_eq!(code, Some(0), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["episodes"][0]["cycles"], 200, "{out}");
    assert!(report["stopped_early"].is_null(), "{out}");
    // On a port, with a calibration (ranges around the emulated servos' centre, offsets 0).
    let map = embodia::robots::HardwareMap::builtin("koch", &embodia::robots::builtin("koch").unwrap()).unwrap();
    let mut cal = embodia::robots::Calibration::default();
    for j in &map.joints {
        let c = embodia::robots::JointCalibration {
            id: j.id,
            drive_mode: 0,
            homing_offset: 0,
            range_min: 900,
            range_max: 3100,
        };
        cal.joints.insert(j.joint.clone(), c);
    }
    cal.save(&dir.join("calibration-koch.json")).unwrap();
    let emulator = embodia::deploy::PtyEmulator::start(embodia::deploy::ServoChain::for_map(&map).unwrap()).unwrap();
    let args = [
        "deploy",
        "--run",
        "runs/k",
        "--robot",
        "koch",
        "--port",
        emulator.path(),
        "--calibration",
        "calibration-koch.json",
        "--episodes",
        "1",
        "--hz",
        "100",
        "--json",
    ];
    let (code, out, err) = embodia(&dir, &args);
    assert_eq!(code, Some(0), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["episodes"][0]["cycles"], 200, "{out}");
    emulator.responder().lock().unwrap().chain.write_register(
        4,
        embodia::deploy::dynamixel::control_table::HOMING_OFFSET.addr,
        &512i32.to_le_bytes(),
    );
    let (code, out, err) = embodia(&dir, &args);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("servo 4 (wrist_flex): homing offset 512 differs from the calibration's 0"), "{err}");
    assert!(out.trim().is_empty(), "refused before any episode ran: {out}");
}

#[test]
fn bench_deploy_on_the_koch_injects_every_fault_kind_and_detects_each() {
    let dir = temp_dir("bench-koch");
    let (code, out, err) =
        embodia(&dir, &["bench", "deploy", "--robot", "koch", "--seconds", "0.5", "--faults", "24", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("bench deploy: Koch v1.1 (XL430/XL330, Dynamixel protocol 2.0) emulator"), "{out}");
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(json["robot"], "koch");
    let faults = json["faults"].as_object().unwrap();
    assert_eq!(faults.len(), 8, "{out}");
    for (kind, s) in faults {
        assert_eq!(s["injected"], 3, "{kind}");
        assert_eq!(s["detected"], 3, "{kind}: {out}");
        assert_eq!(s["safe_within_two_cycles"], 3, "{kind}: {out}");
    }
    assert_eq!(json["commands_outside_limits"], 0);
    assert_eq!(json["commands_over_step"], 0);
    assert!(json["commands_checked"].as_u64().unwrap() > 24);
}

/// A distilled one-step student deploys with its action chunk: each predicted row of goals is
/// the exported forward pass's action of that chunk step (relative joint targets made absolute),
/// and `deploy --sim` runs it through the loop's chunk ensembling.
#[test]
fn a_distilled_student_deploys_its_whole_chunk() {
    let dir = temp_dir("student");
    let tiny = [
        "--set",
        "algo.num_envs=2",
        "--set",
        "algo.batch_size=32",
        "--set",
        "algo.updates_per_iteration=20",
        "--set",
        "algo.warmup_steps=5",
    ];
    let mut train =
        vec!["train", "--task", "reach", "--algo", "sft", "--steps", "40", "--run-dir", "runs/sft", "--quiet"];
    train.extend(tiny);
    train.extend(["--set", "algo.demos=2", "--set", "algo.decay_steps=40", "--set", "algo.policy.denoise_steps=3"]);
    let (code, _, err) = embodia(&dir, &train);
    assert_eq!(code, Some(0), "{err}");
    let mut distill = vec!["distill", "--run", "runs/sft", "--out", "runs/student", "--steps", "40", "--quiet"];
    distill.extend([
        "--eval-episodes",
        "1",
        "--eval-seeds",
        "1",
        "--latency-calls",
        "10",
        "--set",
        "algo.chunk_steps=5",
    ]);
    distill.extend(tiny);
    let (code, _, err) = embodia(&dir, &distill);
    assert_eq!(code, Some(0), "{err}");

    let student = dir.join("runs/student");
    let (config, _) = embodia::run::load_learner(&student).unwrap();
    let exported = embodia::export::policy_of_run(&student).unwrap();
    let (chunk, n) = (exported.chunk, exported.action_dim);
    assert_eq!((chunk, n), (4, 6));
    let mut policy = TaskPolicy::new(&config, exported.clone(), &so101_map()).unwrap();
    use embodia::deploy::Policy;
    assert_eq!(policy.chunk_len(), chunk);
    let mut state = JointState::new(6);
    state.position.copy_from_slice(&[0.1, -0.3, 0.4, 0.2, -0.1, 0.05]);
    let obs = policy.observe(&state).to_vec();
    let mut want = vec![0.0f32; exported.output_dim()];
    exported.forward(&obs, &mut want, &mut vec![0.0; 2 * exported.max_width()]);
    let mut goals = vec![0.0; chunk * 6];
    policy.predict(&state, &mut goals).unwrap();
    let spec = SceneSpec::new(embodia::sim::task_config("reach").unwrap(), embodia::robots::builtin("so101").unwrap())
        .unwrap();
    let action = &spec.config.action;
    for (i, (row, a)) in goals.chunks(6).zip(want.chunks(n)).enumerate() {
        for j in 0..6 {
            let expected = spec.default_q[j] + a[j].clamp(-action.clip, action.clip) * action.scale;
            assert!((row[j] - f64::from(expected)).abs() < 1e-6, "chunk step {i}, joint {j}: {} vs {expected}", row[j]);
        }
    }
    assert!(goals[..6] != goals[18..], "the chunk's steps differ");

    let (code, out, err) =
        embodia(&dir, &["deploy", "--run", "runs/student", "--sim", "--episodes", "1", "--hz", "100", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["episodes"][0]["cycles"], 200, "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
