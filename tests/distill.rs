//! `embodia distill` end to end on a small flow teacher: the student is a run that `eval`
//! accepts, the report carries both policies' success per evaluation seed and their latency,
//! and bad teachers are refused with a clear message. (Exactness of the student's export:
//! tests/export.rs; the distillation objective itself: embodia-algos' tests/distill.rs.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use embodia::algos::SftConfig;
use embodia::config::{AlgoConfig, TrainConfig};
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
        algo: AlgoConfig::Sft(algo),
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

    // Bad teachers: not a run, and a run without a flow policy (the student itself).
    let o = embodia(&["distill", "--run", dir.join("nothing").to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success() && text(&o.stderr).contains("not a run directory"), "{}", text(&o.stderr));
    let o = embodia(&["distill", "--run", student.to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success() && text(&o.stderr).contains("only flow-policy runs"), "{}", text(&o.stderr));
    fs::remove_dir_all(&dir).unwrap();
}
