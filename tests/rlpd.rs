//! `sac-rlpd`: demonstrations beside the online data make SAC learn `reach` sooner.

use std::process::Command;

/// Trains `reach` for 6,000 steps with small networks (as on CI's 2 cores) and returns the
/// success rate of its closing evaluation.
fn train_reach(dir: &std::path::Path, demos: usize) -> f64 {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["train", "--task", "reach", "--algo", "sac-rlpd", "--steps", "6000", "--seed", "1", "--run-dir"])
        .arg(dir)
        .args(["--set", "algo.hidden=[64,64]", "--set", "algo.batch_size=128", "--set", "algo.updates_per_step=2"])
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
    assert!(with >= without + 0.3, "with {with}, without {without}");
}
