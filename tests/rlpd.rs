//! `sac-rlpd`: demonstrations beside the online data make SAC learn `reach` sooner.

use std::process::Command;

/// Trains `reach` for 6,000 steps with small networks (as on CI's 2 cores) and returns the
/// success rate of its closing evaluation (50 episodes).
fn train_reach(dir: &std::path::Path, demos: usize) -> f64 {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["train", "--task", "reach", "--algo", "sac-rlpd", "--steps", "6000", "--seed", "1", "--run-dir"])
        .arg(dir)
        .args(["--set", "algo.hidden=[64,64]", "--set", "algo.batch_size=128", "--set", "algo.updates_per_step=2"])
        .args(["--set", "eval_episodes=50"])
        .args(["--set", &format!("algo.demos={demos}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("eval.json")).unwrap()).unwrap();
    eval["success_rate"].as_f64().unwrap()
}

#[test]
fn sac_rlpd_with_demonstrations_reaches_where_it_has_not_yet_without_them() {
    let tmp = std::env::temp_dir().join(format!("embodia-rlpd-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (with, without) = std::thread::scope(|s| {
        let with = s.spawn(|| train_reach(&tmp.join("with-demos"), 20));
        let without = s.spawn(|| train_reach(&tmp.join("without"), 0));
        (with.join().unwrap(), without.join().unwrap())
    });
    std::fs::remove_dir_all(&tmp).unwrap();
    println!("reach after 6,000 steps, deterministic evaluation: {with} with 20 demonstrations, {without} without");
    assert!(with >= 0.4, "with demonstrations: success {with}");
    assert!(with >= without + 0.2, "with {with}, without {without}");
}

/// `embodia ARGS…` in `dir`: exit status, stderr.
fn embodia(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).current_dir(dir).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn sac_rlpd_takes_its_demonstrations_from_a_dataset_and_refuses_another_tasks() {
    let dir = std::env::temp_dir().join(format!("embodia-rlpd-dataset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = |task: &str, out: &str| {
        let (code, err) = embodia(&dir, &["record", "--task", task, "--episodes", "3", "--only-success", "--out", out]);
        assert_eq!(code, Some(0), "{err}");
    };
    record("reach", "reach-demos");
    record("pick-cube", "pick-demos");
    // 100 updates after 1,000 random steps, tiny networks: enough to see whose batches they are.
    let small = ["--set", "algo.hidden=[16]", "--set", "algo.batch_size=16", "--set", "algo.updates_per_step=1"];
    let train = |run: &str, source: &[&str]| {
        let mut args = vec!["train", "--task", "reach", "--algo", "sac-rlpd", "--steps", "1100", "--run-dir", run];
        args.extend(small);
        args.extend(source);
        embodia(&dir, &args)
    };
    let (code, err) = train("runs/dataset", &["--dataset", "reach-demos"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = train("runs/none", &["--set", "algo.demos=0"]);
    assert_eq!(code, Some(0), "{err}");
    let losses = |run: &str| -> String {
        let csv = std::fs::read_to_string(dir.join(run).join("metrics.csv")).unwrap();
        let last = csv.lines().last().unwrap().split(',').collect::<Vec<_>>();
        format!("{} {}", last[7], last[8])
    };
    assert_ne!(losses("runs/dataset"), losses("runs/none"), "the dataset's rows are in the batches");
    let (code, err) = train("runs/wrong", &["--dataset", "pick-demos"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("demonstrations") && err.contains("the task's: observations of"), "{err}");
}
