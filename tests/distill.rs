//! `embodia distill` end to end on a small flow teacher: the student is a run that `eval`
//! accepts, the report carries both policies' success per evaluation seed and their latency,
//! and bad teachers are refused with a clear message. (Exactness of the student's export:
//! tests/export.rs; the distillation objective itself: embodia-algos' tests/distill.rs.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use embodia::algorithms::AlgoConfig;
use embodia::algos::SftConfig;
use embodia::config::TrainConfig;
use embodia::policies::FlowPolicyConfig;
use embodia::run::Run;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-distill-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small SFT run on reach (K = 3) in `dir/sft`.
fn flow_teacher(dir: &Path) -> PathBuf {
    let policy = FlowPolicyConfig { denoise_steps: 3, width: 16, hidden: vec![32, 16], ..FlowPolicyConfig::default() };
    let algo = SftConfig {
        num_envs: 2,
        demos: 2,
        batch_size: 32,
        updates_per_iteration: 20,
        warmup_steps: 5,
        decay_steps: 40,
        policy,
        ..SftConfig::default()
    };
    let config = TrainConfig {
        task: "reach".into(),
        algorithm: "sft".into(),
        seed: 3,
        total_steps: 40,
        eval_episodes: 1,
        checkpoint_every: 100,
        algo: AlgoConfig::new(algo),
        env: embodia::sim::task_config("reach"),
    };
    let run_dir = dir.join("sft");
    Run::create(&run_dir, config).unwrap().train(&mut []).unwrap();
    run_dir
}

fn embodia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn distill_trains_a_student_run_and_reports_both_policies() {
    let dir = scratch_dir("cli");
    let teacher = flow_teacher(&dir);
    let student = dir.join("student");
    let small = [
        "algo.num_envs=2",
        "algo.chunk_steps=5",
        "algo.batch_size=32",
        "algo.updates_per_iteration=10",
        "algo.warmup_steps=5",
        "algo.student.hidden=[32]",
        "eval_episodes=2",
    ];
    let mut args = vec!["distill", "--run", teacher.to_str().unwrap(), "--out", student.to_str().unwrap()];
    args.extend([
        "--steps",
        "20",
        "--eval-episodes",
        "3",
        "--eval-seeds",
        "2",
        "--latency-calls",
        "50",
        "--json",
        "--quiet",
    ]);
    for s in &small {
        args.extend(["--set", s]);
    }
    let o = embodia(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    for needle in
        ["teacher act (K = 3)", "student act", "student exported f32 forward", "per seed", "teacher / student"]
    {
        assert!(stdout.contains(needle), "report lacks `{needle}`:\n{stdout}");
    }
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for who in ["teacher_success", "student_success"] {
        let per_seed = json[who]["per_seed"].as_array().unwrap();
        assert_eq!(per_seed.len(), 2, "{who}: {json}");
        assert!(per_seed.iter().all(|s| (0.0..=1.0).contains(&s.as_f64().unwrap())), "{json}");
    }
    for who in ["teacher_latency", "student_latency", "student_export_latency"] {
        let (median, p99) = (json[who]["median_us"].as_f64().unwrap(), json[who]["p99_us"].as_f64().unwrap());
        assert!(median > 0.0 && p99 >= median, "{who}: {json}");
    }
    assert_eq!(json["teacher_steps"], 3);
    assert_eq!(json["stochastic"], false);

    // `--stochastic`: both policies sample their noise; same episodes, other actions.
    let settings = embodia::distill::ReportSettings { episodes: 3, seeds: 2, calls: 10, stochastic: true };
    let sampled = embodia::distill::report(&student, settings).unwrap();
    assert!(embodia::distill::describe(&sampled).contains("success, sampled noise"));
    let deterministic_return = json["teacher_success"]["mean_return"].as_f64().unwrap();
    let sampled_return = sampled.teacher_success.as_ref().unwrap().mean_return;
    assert_ne!(sampled_return, deterministic_return, "sampled noise changed nothing");

    // The student is a run: config, metrics with one row per iteration, checkpoint, eval.json.
    assert!(fs::read_to_string(student.join("config.toml")).unwrap().contains("algorithm = \"distill\""));
    assert_eq!(fs::read_to_string(student.join("metrics.csv")).unwrap().lines().count(), 3, "header + 2 iterations");
    let o = embodia(&["eval", "--run", student.to_str().unwrap(), "--episodes", "2", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let eval: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).unwrap();
    assert_eq!(eval["episodes"], 2);
    // It holds its teacher: evaluation works without the teacher's directory.
    fs::rename(&teacher, dir.join("moved")).unwrap();
    let o = embodia(&["eval", "--run", student.to_str().unwrap(), "--episodes", "1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // `train --resume` distills further from the saved student and the teacher it holds.
    let saved = checkpoint_bytes(&student);
    let o = embodia(&["train", "--resume", student.to_str().unwrap(), "--steps", "30", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(metric_steps(&student), vec![10, 20, 30], "one more iteration of 10 gradient steps");
    assert_ne!(checkpoint_bytes(&student), saved, "the resumed run trained the student further");

    // Bad teachers: not a run, and a run without a flow policy (the student itself).
    let o = embodia(&["distill", "--run", dir.join("nothing").to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success() && text(&o.stderr).contains("not a run directory"), "{}", text(&o.stderr));
    let o = embodia(&["distill", "--run", student.to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success() && text(&o.stderr).contains("only flow-policy runs"), "{}", text(&o.stderr));
    fs::remove_dir_all(&dir).unwrap();
}

/// `--steps` sets the learning-rate schedule's length (at least one step past the warmup) unless
/// `algo.decay_steps` is set: a longer budget must not run mostly at the final learning rate.
#[test]
fn distill_steps_stretch_the_learning_rate_schedule() {
    use embodia::algos::{ConsistencyLoss, DistillConfig, DistillMethod};
    use embodia::distill::{DistillRequest, distill_config};
    let dir = scratch_dir("decay");
    let teacher = flow_teacher(&dir);
    let decay = |steps: Option<u64>, overrides: &[&str]| {
        let req = DistillRequest {
            teacher: teacher.clone(),
            method: DistillMethod::Consistency,
            loss: ConsistencyLoss::SameNoise,
            seed: 1,
            steps,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
        };
        let config = distill_config(&req).unwrap();
        let c = config.algo.get::<embodia::algos::DistillConfig>().expect("a distill config");
        (config.total_steps, c.decay_steps)
    };
    let default = DistillConfig::default().decay_steps;
    assert_eq!(decay(None, &[]), (default, default));
    assert_eq!(decay(Some(12_000), &[]), (12_000, 12_000));
    assert_eq!(decay(Some(12_000), &["algo.decay_steps=5000"]), (12_000, 5000));
    assert_eq!(decay(Some(20), &[]), (20, DistillConfig::default().warmup_steps + 1));
    assert_eq!(decay(Some(20), &["algo.warmup_steps=5"]), (20, 20));
    fs::remove_dir_all(&dir).unwrap();
}

/// The files of a run's checkpoint directory, in name order.
fn checkpoint_bytes(run: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = fs::read_dir(run.join("checkpoint")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|f| fs::read(f).unwrap()).collect()
}

/// Rows of a run's metrics.csv after the header, as their first field (steps).
fn metric_steps(run: &Path) -> Vec<u64> {
    let text = fs::read_to_string(run.join("metrics.csv")).unwrap();
    text.lines().skip(1).map(|l| l.split(',').next().unwrap().parse().unwrap()).collect()
}

#[test]
fn distill_during_rl_writes_a_student_run_that_eval_export_and_resume_accept() {
    let dir = scratch_dir("alongside");
    let teacher = flow_teacher(&dir);
    let rl = dir.join("rl");
    let mut args = vec![
        "train",
        "--task",
        "reach",
        "--algo",
        "ppo-flow-sde",
        "--init",
        teacher.to_str().unwrap(),
        "--distill-during-rl",
        "--steps",
        "80",
        "--run-dir",
        rl.to_str().unwrap(),
        "--quiet",
    ];
    let small = [
        "algo.num_envs=2",
        "algo.chunk_steps=5",
        "algo.mini_batches=2",
        "algo.critic_hidden=[16]",
        "algo.distill_during_rl.updates_per_iteration=5",
        "algo.distill_during_rl.batch_size=16",
        "algo.distill_during_rl.warmup_steps=2",
        "algo.distill_during_rl.hidden=[32]",
        "eval_episodes=2",
    ];
    for s in &small {
        args.extend(["--set", s]);
    }
    let o = embodia(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("one-step student"), "{}", text(&o.stderr));
    // chunks of C = 4: 2 envs × 5 chunk steps × 4 = 40 env steps per iteration, 2 iterations.
    assert_eq!(metric_steps(&rl), vec![40, 80]);
    let student = rl.join("student");
    let config = fs::read_to_string(student.join("config.toml")).unwrap();
    assert!(config.contains("algorithm = \"distill\"") && config.contains("total_steps = 10"), "{config}");
    assert_eq!(metric_steps(&student), vec![5, 10], "student gradient steps per RL iteration");
    assert!(student.join("checkpoint").is_dir() && student.join("eval.json").is_file());
    assert!(fs::read_to_string(rl.join("config.toml")).unwrap().contains("[algo.distill_during_rl]"));

    // The student is a distill run: eval and export take it; the RL run itself points to it.
    let o = embodia(&["eval", "--run", student.to_str().unwrap(), "--episodes", "2", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = dir.join("export");
    let o =
        embodia(&["export", "--run", student.to_str().unwrap(), "--format", "rust", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o =
        embodia(&["export", "--run", rl.to_str().unwrap(), "--format", "c", "--out", dir.join("x").to_str().unwrap()]);
    assert!(!o.status.success() && text(&o.stderr).contains("student"), "{}", text(&o.stderr));

    // Resume continues both: one more RL iteration, one more block of student steps.
    let o = embodia(&["train", "--resume", rl.to_str().unwrap(), "--steps", "120", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(metric_steps(&rl), vec![40, 80, 120]);
    assert_eq!(metric_steps(&student), vec![5, 10, 15]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn distill_during_rl_is_refused_for_non_flow_algorithms_and_bad_settings() {
    let dir = scratch_dir("alongside-bad");
    let run = dir.join("ppo");
    let o = embodia(&[
        "train",
        "--task",
        "reach",
        "--algo",
        "ppo",
        "--distill-during-rl",
        "--run-dir",
        run.to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success() && stderr.contains("--distill-during-rl") && stderr.contains("`ppo`"), "{stderr}");
    assert!(!run.exists(), "nothing is created");
    let o = embodia(&[
        "train",
        "--task",
        "reach",
        "--algo",
        "ppo-flow-noise",
        "--init",
        dir.to_str().unwrap(),
        "--distill-during-rl",
        "--set",
        "algo.distill_during_rl.buffer_size=0",
        "--run-dir",
        run.to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success() && stderr.contains("algo.distill_during_rl.buffer_size"), "{stderr}");
    assert!(!run.exists(), "nothing is created");
    fs::remove_dir_all(&dir).unwrap();
}
