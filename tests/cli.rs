//! End-to-end tests of the `embodia` command line: each test runs the release binary in its own
//! temporary directory (so `runs/` lands there) and checks exit codes, messages and files.
//!
//! Run with `cargo test --release --test cli`. Budgets are small (a few thousand env steps) so
//! the whole file takes seconds on 2 cores.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The columns `metrics.csv` documents (issue 2, `MetricRow::CSV_HEADER`).
const METRIC_COLUMNS: [&str; 19] = [
    "env_steps",
    "wall_seconds",
    "return_mean",
    "return_min",
    "return_max",
    "episode_length",
    "success_rate",
    "policy_loss",
    "value_loss",
    "entropy",
    "alpha",
    "kl",
    "learning_rate",
    "fps",
    "aux_loss",
    "val_loss",
    "val_aux_loss",
    "clip_fraction",
    "mixed_groups",
];

/// Columns that legitimately differ between an interrupted-and-resumed run and an uninterrupted one.
const TIMING_COLUMNS: [&str; 2] = ["wall_seconds", "fps"];

// ---------------------------------------------------------------------------------------------
// helpers

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn embodia(dir: &Path, args: &[&str]) -> Out {
    let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("embodia runs");
    let out = Out {
        code: status.code(),
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(stderr).expect("stderr is UTF-8"),
    };
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "embodia {args:?} panicked:\n{}",
        out.stderr
    );
    out
}

/// Runs `embodia args` and asserts it succeeded.
fn ok(dir: &Path, args: &[&str]) -> Out {
    let out = embodia(dir, args);
    assert_eq!(out.code, Some(0), "embodia {args:?} failed:\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    out
}

/// Runs `embodia args` and asserts it failed with exit code 1.
fn failed(dir: &Path, args: &[&str]) -> Out {
    let out = embodia(dir, args);
    assert_eq!(
        out.code,
        Some(1),
        "embodia {args:?} should fail with exit code 1:\nstdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    out
}

/// Runs `embodia args`, asserts it failed with exit code 1 and one `error: …` line at the end
/// of stderr, and returns that line.
fn fail(dir: &Path, args: &[&str]) -> String {
    let out = failed(dir, args);
    let last = out.stderr.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("error: "), "embodia {args:?}: last stderr line is not an error message:\n{}", out.stderr);
    last
}

/// Like [`fail`], for errors found before any work starts: stderr is exactly that one line.
fn fail_at_once(dir: &Path, args: &[&str]) -> String {
    let out = failed(dir, args);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("error: "),
        "embodia {args:?}: expected one `error: …` line on stderr, got:\n{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "embodia {args:?} printed to stdout on error:\n{}", out.stdout);
    lines[0].to_string()
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "message lacks `{p}`:\n{message}");
    }
}

/// A fresh directory under the system temp dir, removed on drop. (Written here rather than
/// taken from the `tempfile` crate, whose dependencies would change feature flags of crates the
/// binary shares and make `cargo run` after `cargo test` rebuild burn.)
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn tmp() -> TempDir {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("embodia-cli-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// Every file and directory under `dir`, with file contents, for before/after comparisons.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for entry in fs::read_dir(dir).expect("readable dir") {
            let path = entry.expect("dir entry").path();
            let rel = path.strip_prefix(root).expect("under root").to_path_buf();
            // The lock file names the last process that opened the run to write it; its content
            // is bookkeeping, not the run's.
            if rel.file_name().is_some_and(|n| n == embodia::run_lock::LOCK_FILE) {
                out.insert(rel, None);
                continue;
            }
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(fs::read(&path).expect("readable file")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn assert_unchanged(before: &BTreeMap<PathBuf, Option<Vec<u8>>>, dir: &Path, what: &str) {
    let after = snapshot(dir);
    let names = |s: &BTreeMap<PathBuf, Option<Vec<u8>>>| s.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(before), names(&after), "{what} changed the files in {}", dir.display());
    for (path, content) in before {
        assert!(after[path] == *content, "{what} changed {}", dir.join(path).display());
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

/// `env_steps` of the checkpoint in `run`, or `None` while there is none. A process killed
/// between the two renames of a checkpoint save leaves only `checkpoint.old/`, which is what
/// `--resume` then reads, so look there too.
fn checkpoint_steps(run: &Path) -> Option<u64> {
    let read = |dir: &str| -> Option<u64> {
        let text = fs::read_to_string(run.join(dir).join("state.json")).ok()?;
        serde_json::from_str::<Value>(&text).ok()?.get("env_steps")?.as_u64()
    };
    read("checkpoint").or_else(|| read("checkpoint.old"))
}

/// Header and rows of a run's metrics.csv, each row split into its fields.
fn metrics(run: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = fs::read_to_string(run.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().expect("metrics.csv has a header").split(',').map(String::from).collect();
    let rows = lines.map(|l| l.split(',').map(String::from).collect()).collect();
    (header, rows)
}

/// A tiny SAC run (1,000 env steps, no gradient updates, one evaluation episode) in `dir/run`.
fn tiny_run(dir: &Path, run: &str) -> PathBuf {
    ok(dir, &["train", "--steps", "1000", "--set", "eval_episodes=1", "--run-dir", run, "--quiet"]);
    dir.join(run)
}

#[test]
fn train_without_a_terminal_prints_plain_progress_lines() {
    let dir = tmp();
    let train = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
            .args([&["train", "--steps", "1000", "--set", "eval_episodes=1"], extra].concat())
            .env("EMBODIA_PROGRESS_SECONDS", "0")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    // stderr is a pipe here, as under nohup or CI: a line per iteration at a 0 s interval (SAC
    // on pendulum: one iteration of 1,000 env steps).
    let err = train(&["--run-dir", "a"]);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("progress: ")).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l.contains("/1000 env steps") && l.contains("steps/s")), "{err}");
    assert!(train(&["--run-dir", "b", "--quiet"]).lines().all(|l| !l.starts_with("progress: ")));
}

#[test]
fn a_curves_png_that_cannot_be_drawn_does_not_stop_training() {
    let dir = tmp();
    // A directory where the picture goes: the rename onto it fails.
    std::fs::create_dir_all(dir.path().join("r/curves.png")).unwrap();
    let out = ok(dir.path(), &["train", "--steps", "1000", "--set", "eval_episodes=1", "--run-dir", "r", "--quiet"]);
    assert!(out.stderr.contains("warning: curves.png not drawn"), "{}", out.stderr);
    assert!(dir.path().join("r/checkpoint").is_dir() && dir.path().join("r/eval.json").is_file());
    assert!(!dir.path().join("r/curves.tmp.png").exists(), "the temporary picture is removed");
}

// ---------------------------------------------------------------------------------------------
// 1. list and config

#[test]
fn list_shows_tasks_and_algorithms() {
    let dir = tmp();
    let out = ok(dir.path(), &["list"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    for name in ["pendulum", "mountain-car-continuous", "sac", "ppo"] {
        let line = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("`embodia list` lacks {name}:\n{}", out.stdout));
        assert!(line.split_whitespace().count() > 2, "{name} has no description: {line}");
    }
    assert_mentions(&out.stdout, &["tasks:", "algorithms:", "robots:"]);
}

#[test]
fn config_prints_toml_that_trains() {
    let dir = tmp();
    let out = ok(dir.path(), &["config", "sac", "--task", "pendulum"]);
    let table: toml::Table = toml::from_str(&out.stdout).unwrap_or_else(|e| panic!("not TOML: {e}\n{}", out.stdout));
    assert_eq!(table["task"].as_str(), Some("pendulum"));
    assert_eq!(table["algorithm"].as_str(), Some("sac"));
    let algo = table["algo"].as_table().expect("an [algo] table");
    assert!(algo["learning_rate"].as_float().is_some_and(|lr| lr > 0.0), "{}", out.stdout);
    assert!(out.stdout.contains("[algo]"));

    // The printed config is a valid --config file; edit one value and train with it.
    let text = out.stdout.replace("batch_size = 100", "batch_size = 64");
    assert_ne!(text, out.stdout, "expected `batch_size = 100` (the pendulum preset) in:\n{}", out.stdout);
    fs::write(dir.path().join("my.toml"), &text).unwrap();
    ok(
        dir.path(),
        &[
            "train",
            "--config",
            "my.toml",
            "--steps",
            "1000",
            "--set",
            "eval_episodes=1",
            "--run-dir",
            "runs/mine",
            "--quiet",
        ],
    );
    let resolved: toml::Table =
        toml::from_str(&fs::read_to_string(dir.path().join("runs/mine/config.toml")).unwrap()).unwrap();
    assert_eq!(resolved["total_steps"].as_integer(), Some(1000), "--steps overrides the file");
    assert_eq!(resolved["eval_episodes"].as_integer(), Some(1));
    assert_eq!(resolved["algo"]["batch_size"].as_integer(), Some(64), "the file's value is used");
    let mut expected = table["algo"].clone();
    expected.as_table_mut().unwrap().insert("batch_size".into(), toml::Value::Integer(64));
    assert_eq!(resolved["algo"], expected);

    // PPO on the other task: its own schema and preset.
    let out = ok(dir.path(), &["config", "ppo", "--task", "mountain-car-continuous"]);
    let table: toml::Table = toml::from_str(&out.stdout).unwrap();
    assert_eq!(table["task"].as_str(), Some("mountain-car-continuous"));
    for key in ["num_envs", "steps_per_env", "clip_param", "desired_kl", "learning_rate"] {
        assert!(table["algo"].get(key).is_some(), "ppo config lacks algo.{key}:\n{}", out.stdout);
    }
}

// ---------------------------------------------------------------------------------------------
// 2. unknown names

#[test]
fn unknown_task_and_algorithm_list_valid_names() {
    let dir = tmp();
    let e = fail_at_once(dir.path(), &["train", "--task", "foo"]);
    assert_mentions(&e, &["`foo`", "pendulum", "mountain-car-continuous"]);
    let e = fail_at_once(dir.path(), &["train", "--algo", "dqn"]);
    assert_mentions(&e, &["`dqn`", "sac, ppo"]);
    let e = fail_at_once(dir.path(), &["config", "dqn"]);
    assert_mentions(&e, &["`dqn`", "sac, ppo"]);
    let e = fail_at_once(dir.path(), &["config", "sac", "--task", "foo"]);
    assert_mentions(&e, &["`foo`", "pendulum", "mountain-car-continuous"]);
    let e = fail_at_once(dir.path(), &["bench", "solve", "--task", "foo", "--seeds", "1"]);
    assert_mentions(&e, &["`foo`", "pendulum", "mountain-car-continuous"]);
    // Through a config file or --set as well.
    fs::write(dir.path().join("t.toml"), "task = \"acrobot\"\n").unwrap();
    let e = fail_at_once(dir.path(), &["train", "--config", "t.toml"]);
    assert_mentions(&e, &["`acrobot`", "pendulum", "mountain-car-continuous", "cartpole", "reach"]);
    let e = fail_at_once(dir.path(), &["train", "--set", "algorithm=td3"]);
    assert_mentions(&e, &["`td3`", "sac, ppo"]);
    assert!(!dir.path().join("runs").exists(), "a failed train created runs/");
}

// ---------------------------------------------------------------------------------------------
// 3. bad config files

#[test]
fn malformed_config_file_names_file_and_line() {
    let dir = tmp();
    let d = dir.path();
    fs::write(d.join("syntax.toml"), "seed = 2\n\n[algo\nlearning_rate = 1e-3\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "syntax.toml"]);
    assert_mentions(&e, &["syntax.toml", "line 3"]);

    fs::write(d.join("typo.toml"), "seed = 2\n[algo]\nlerning_rate = 1e-3\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "typo.toml"]);
    assert_mentions(&e, &["typo.toml", "line 3", "lerning_rate", "unknown field", "learning_rate"]);

    fs::write(d.join("top.toml"), "seed = 2\nsteps = 5\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "top.toml"]);
    assert_mentions(&e, &["top.toml", "line 2", "`steps`", "total_steps"]);

    fs::write(d.join("type.toml"), "seed = \"x\"\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "type.toml"]);
    assert_mentions(&e, &["type.toml", "line 1", "`seed`", "\"x\""]);

    fs::write(d.join("type2.toml"), "# my settings\n[algo]\nbatch_size = 64\nlearning_rate = \"fast\"\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "type2.toml"]);
    assert_mentions(&e, &["type2.toml", "line 4", "algo.learning_rate", "\"fast\""]);

    // A PPO key in a SAC run is unknown.
    fs::write(d.join("ppo-key.toml"), "algorithm = \"sac\"\n[algo]\nclip_param = 0.1\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "ppo-key.toml"]);
    assert_mentions(&e, &["ppo-key.toml", "line 3", "clip_param"]);
    // A file for another algorithm than --algo names both.
    fs::write(d.join("for-ppo.toml"), "algorithm = \"ppo\"\n[algo]\nclip_param = 0.1\n").unwrap();
    let e = fail_at_once(d, &["train", "--algo", "sac", "--config", "for-ppo.toml"]);
    assert_mentions(&e, &["for-ppo.toml", "line 1", "algorithm `ppo`", "`sac` was asked for"]);

    let e = fail_at_once(d, &["train", "--config", "missing.toml"]);
    assert_mentions(&e, &["missing.toml"]);
    assert!(!d.join("runs").exists(), "a failed train created runs/");
}

// ---------------------------------------------------------------------------------------------
// 4. bad --set

#[test]
fn huge_values_are_refused_up_front_and_the_order_of_set_does_not_matter() {
    let dir = tmp();
    let d = dir.path();
    // A huge count is refused before anything is allocated.
    let e = fail_at_once(d, &["train", "--algo", "ppo", "--set", "algo.num_envs=100000000000"]);
    assert_mentions(&e, &["--set algo.num_envs=100000000000", "allowed: 1 ..= 2097152"]);
    // Counts on the command line have a documented upper bound, named with the flag.
    // (clap refuses them while parsing: exit status 2, as for any malformed command line.)
    for (args, flag, range) in [
        (
            &["record", "--task", "reach", "--episodes", "99999999999", "--out", "data/x"][..],
            "--episodes",
            "1 ..= 1000000",
        ),
        (&["bench", "sim", "--task", "reach", "--envs", "0"][..], "--envs", "1 ..= 2097152"),
        (&["calibrate", "--port", "/dev/null", "--seconds", "inf"][..], "--seconds", "(0, 2592000]"),
        (&["bench", "flow", "--rl-seconds", "NaN"][..], "--rl-seconds", "(0, 2592000]"),
    ] {
        let out = embodia(d, args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert_mentions(&out.stderr, &[flag, range]);
    }
    assert!(!d.join("data/x").exists(), "nothing recorded");
    // Flags out of TOML's integer range name the flag and its range.
    let e = fail_at_once(d, &["train", "--steps", "18446744073709551615"]);
    assert_mentions(&e, &["--steps", "18446744073709551615", "allowed"]);
    let e = fail_at_once(d, &["train", "--seed", "18446744073709551615"]);
    assert_mentions(&e, &["--seed", "18446744073709551615", "allowed"]);
    // Cross-field rules are checked once, after every source: the order of --set does not matter.
    let sft = ["train", "--task", "reach", "--algo", "sft", "--demos", "2", "--steps", "2", "--quiet"];
    let small = ["--set", "algo.updates_per_iteration=2", "--set", "algo.num_envs=1", "--set", "eval_episodes=1"];
    let in_order = ["--set", "algo.warmup_steps=5000", "--set", "algo.decay_steps=6000", "--run-dir", "order-a"];
    let reversed = ["--set", "algo.decay_steps=6000", "--set", "algo.warmup_steps=5000", "--run-dir", "order-b"];
    for sets in [&in_order, &reversed] {
        ok(d, &[&sft[..], &small[..], &sets[..]].concat());
    }
    let config = |run: &str| fs::read_to_string(d.join(run).join("config.toml")).unwrap();
    assert_eq!(config("order-a"), config("order-b"), "the same configuration in either order");
    let e = fail_at_once(d, &[&sft[..], &["--set", "algo.decay_steps=10", "--set", "algo.warmup_steps=50"]].concat());
    assert_mentions(&e, &["--set algo.decay_steps=10", "allowed: > warmup_steps"]);
    // No float setting takes NaN or infinity; the error names the field.
    let e = fail_at_once(d, &["train", "--algo", "ppo", "--set", "algo.max_grad_norm=inf"]);
    assert_mentions(&e, &["--set algo.max_grad_norm=inf", "algo.max_grad_norm", "a finite number"]);
    fs::write(d.join("nan.toml"), "[algo]\nentropy_coef = nan\n").unwrap();
    let e = fail_at_once(d, &["train", "--algo", "ppo", "--config", "nan.toml"]);
    assert_mentions(&e, &["nan.toml: line 2", "algo.entropy_coef", "a finite number"]);
}

#[test]
fn bad_overrides_name_key_and_range() {
    let dir = tmp();
    let d = dir.path();
    let e = fail_at_once(d, &["train", "--set", "algo.learning_rate=-1"]);
    assert_mentions(&e, &["algo.learning_rate", "-1", "allowed: > 0"]);
    let e = fail_at_once(d, &["train", "--set", "algo.num_envs=0"]);
    assert_mentions(&e, &["algo.num_envs", "allowed: 1 ..= 2097152"]);
    let e = fail_at_once(d, &["train", "--algo", "ppo", "--set", "algo.num_envs=0"]);
    assert_mentions(&e, &["algo.num_envs", "allowed: 1 ..= 2097152"]);
    let e = fail_at_once(d, &["train", "--set", "algo.gamma=1.5"]);
    assert_mentions(&e, &["algo.gamma", "1.5", "allowed: 0 ≤ gamma ≤ 1"]);
    let e = fail_at_once(d, &["train", "--set", "algo.nope=1"]);
    assert_mentions(&e, &["--set algo.nope=1", "unknown field `nope`", "learning_rate"]);
    let e = fail_at_once(d, &["train", "--set", "garbage"]);
    assert_mentions(&e, &["--set garbage", "expected key=value", "algo.learning_rate=3e-4"]);
    let e = fail_at_once(d, &["train", "--set", "=3"]);
    assert_mentions(&e, &["--set =3", "empty key"]);
    let e = fail_at_once(d, &["train", "--set", "seed=x"]);
    assert_mentions(&e, &["--set seed=x", "u64"]);
    let e = fail_at_once(d, &["train", "--set", "total_steps=0"]);
    assert_mentions(&e, &["total_steps", "allowed: ≥ 1"]);
    // Out-of-range values in a file are caught too.
    fs::write(d.join("neg.toml"), "[algo]\nlearning_rate = -0.5\n").unwrap();
    let e = fail_at_once(d, &["train", "--config", "neg.toml"]);
    assert_mentions(&e, &["neg.toml: line 2", "algo.learning_rate", "-0.5", "allowed: > 0"]);
    assert!(!d.join("runs").exists(), "a failed train created runs/");
}

// ---------------------------------------------------------------------------------------------
// 5. missing run or checkpoint

#[test]
fn resume_or_eval_without_checkpoint_changes_nothing() {
    let dir = tmp();
    let d = dir.path();

    // A directory that is not a run.
    fs::create_dir(d.join("notes")).unwrap();
    fs::write(d.join("notes/readme.txt"), "my notes\n").unwrap();
    let before = snapshot(&d.join("notes"));
    let e = fail_at_once(d, &["train", "--resume", "notes"]);
    assert_mentions(&e, &["notes", "not a run directory", "config.toml"]);
    assert_unchanged(&before, &d.join("notes"), "train --resume");
    let e = fail_at_once(d, &["eval", "--run", "notes"]);
    assert_mentions(&e, &["notes", "not a run directory", "config.toml"]);
    assert_unchanged(&before, &d.join("notes"), "eval --run");

    // A directory that does not exist is not created.
    let e = fail_at_once(d, &["eval", "--run", "nowhere"]);
    assert_mentions(&e, &["nowhere", "not a run directory"]);
    let e = fail_at_once(d, &["train", "--resume", "nowhere"]);
    assert_mentions(&e, &["nowhere", "not a run directory"]);
    assert!(!d.join("nowhere").exists());

    // A run that stopped before its first checkpoint.
    let run = tiny_run(d, "runs/early");
    fs::remove_dir_all(run.join("checkpoint")).unwrap();
    fs::write(run.join("metrics.csv"), format!("{}\n", METRIC_COLUMNS.join(","))).unwrap();
    let before = snapshot(&run);
    let e = fail_at_once(d, &["train", "--resume", "runs/early"]);
    assert_mentions(&e, &["runs/early", "no checkpoint"]);
    assert_unchanged(&before, &run, "train --resume");
    let e = fail_at_once(d, &["eval", "--run", "runs/early"]);
    assert_mentions(&e, &["runs/early", "no checkpoint"]);
    assert_unchanged(&before, &run, "eval --run");
}

// ---------------------------------------------------------------------------------------------
// 6. corrupt checkpoint

#[test]
fn corrupt_checkpoint_is_reported_and_left_alone() {
    let dir = tmp();
    let d = dir.path();
    let good = tiny_run(d, "runs/good");

    let garbage = d.join("runs/garbage");
    copy_dir(&good, &garbage);
    fs::write(garbage.join("checkpoint/tensors.safetensors"), b"this is not a safetensors file").unwrap();

    let truncated = d.join("runs/truncated");
    copy_dir(&good, &truncated);
    let state = fs::read(truncated.join("checkpoint/state.json")).unwrap();
    fs::write(truncated.join("checkpoint/state.json"), &state[..state.len() / 2]).unwrap();

    for (run, file) in [("runs/garbage", "tensors.safetensors"), ("runs/truncated", "state.json")] {
        let before = snapshot(&d.join(run));
        let e = fail_at_once(d, &["eval", "--run", run]);
        assert_mentions(&e, &[&format!("{run}/checkpoint/{file}"), "corrupt"]);
        assert_unchanged(&before, &d.join(run), "eval of a corrupt checkpoint");
        let e = fail_at_once(d, &["train", "--resume", run]);
        assert_mentions(&e, &[&format!("{run}/checkpoint/{file}"), "corrupt"]);
        assert_unchanged(&before, &d.join(run), "train --resume of a corrupt checkpoint");
    }

    // A resume checks every file it appends to before its first step: an empty or garbled
    // metrics.csv is refused by line, and the checkpoint does not move.
    for (name, metrics, at) in [
        ("runs/empty", "", "metrics.csv: line 1"),
        ("runs/garbled", "env_steps,wall_seconds\n1000,x,y\n", "metrics.csv:2"),
    ] {
        let run = d.join(name);
        copy_dir(&good, &run);
        fs::write(run.join("metrics.csv"), metrics).unwrap();
        let before = snapshot(&run);
        let e = fail(d, &["train", "--resume", name, "--steps", "100000", "--quiet"]);
        assert_mentions(&e, &[name, at]);
        assert_unchanged(&before, &run, "train --resume with a broken metrics.csv");
    }
    // A checkpoint tensor changed after it was saved is refused by name.
    let edited = d.join("runs/edited");
    copy_dir(&good, &edited);
    let sums: Value =
        serde_json::from_str(&fs::read_to_string(edited.join("checkpoint/checksums.json")).unwrap()).unwrap();
    let tensor = sums.as_object().unwrap().keys().find(|k| *k != "state.json").unwrap().clone();
    let mut sums = sums;
    sums[&tensor] = Value::String("0000000000000000".into());
    fs::write(edited.join("checkpoint/checksums.json"), sums.to_string()).unwrap();
    let e = fail_at_once(d, &["eval", "--run", "runs/edited"]);
    assert_mentions(&e, &["runs/edited/checkpoint/tensors.safetensors", &format!("`{tensor}`"), "checksum"]);

    // The copies were faithful: the intact run still evaluates.
    ok(d, &["eval", "--run", "runs/good", "--episodes", "1"]);
}

// ---------------------------------------------------------------------------------------------
// 7. existing runs are never overwritten

#[test]
fn existing_run_dir_is_refused_untouched() {
    let dir = tmp();
    let d = dir.path();
    let run = tiny_run(d, "runs/taken");
    let before = snapshot(&run);
    for args in [
        &["train", "--steps", "1000", "--run-dir", "runs/taken", "--quiet"][..],
        &["train", "--algo", "ppo", "--seed", "7", "--run-dir", "runs/taken", "--quiet"][..],
    ] {
        let e = fail_at_once(d, args);
        assert_mentions(&e, &["runs/taken", "already holds a run", "--resume"]);
        assert_unchanged(&before, &run, "train into an existing run");
    }

    // A directory that is not a run but holds files a run would write is refused too.
    fs::create_dir_all(d.join("elsewhere")).unwrap();
    fs::write(d.join("elsewhere/metrics.csv"), "precious\n").unwrap();
    let e = fail_at_once(d, &["train", "--steps", "1000", "--run-dir", "elsewhere", "--quiet"]);
    assert_mentions(&e, &["elsewhere/metrics.csv", "would be overwritten"]);
    assert_eq!(fs::read_to_string(d.join("elsewhere/metrics.csv")).unwrap(), "precious\n");

    // Without --run-dir a fresh name is chosen beside the existing one.
    ok(d, &["train", "--steps", "1000", "--set", "eval_episodes=1", "--quiet"]);
    ok(d, &["train", "--steps", "1000", "--set", "eval_episodes=1", "--quiet"]);
    assert!(d.join("runs/pendulum-sac-seed1/checkpoint/state.json").exists());
    assert!(d.join("runs/pendulum-sac-seed1-2/checkpoint/state.json").exists());
}

// ---------------------------------------------------------------------------------------------
// 8. NaN stops training and keeps the last good checkpoint

#[test]
fn non_finite_training_stops_and_keeps_last_checkpoint() {
    let dir = tmp();
    let d = dir.path();
    // SAC iterations are 1,000 env steps and checkpoint_every = 1. With learning_starts = 1001
    // the first iteration (steps 1..=1000) is pure random exploration without a single gradient
    // step, so its checkpoint at step 1000 is certainly finite. The first update happens at
    // step 1001, where a learning rate of 1e30 makes Adam move every weight by ~1e30 and the
    // next losses overflow f32: training must stop inside the second iteration, every time.
    let e = fail(
        d,
        &[
            "train",
            "--steps",
            "3000",
            "--set",
            "algo.learning_rate=1e30",
            "--set",
            "algo.learning_starts=1001",
            "--run-dir",
            "runs/nan",
            "--quiet",
        ],
    );
    assert!(e.starts_with("error: non-finite value in "), "{e}");
    assert_mentions(&e, &["env step"]);

    let run = d.join("runs/nan");
    assert_eq!(checkpoint_steps(&run), Some(1000), "the checkpoint of step 1000 is kept");
    assert!(!run.join("eval.json").exists(), "no final evaluation after a failure");
    let (_, rows) = metrics(&run);
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["1000"], "rows after the last good checkpoint");

    let out = ok(d, &["eval", "--run", "runs/nan", "--episodes", "2", "--json"]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert!(v["mean_return"].as_f64().is_some_and(f64::is_finite), "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// 9. a killed run resumes exactly

/// Trains `args` into runs/a, kills it (SIGKILL) once its checkpoint reaches `kill_after`
/// env steps, resumes it to completion, trains the same config uninterrupted into runs/b, and
/// compares metrics (all but timing columns) and checkpoint tensors.
fn kill_resume_matches_uninterrupted(args: &[&str], kill_after: u64, total: u64) {
    let dir = tmp();
    let d = dir.path();
    let run_a = d.join("runs/a");
    let run_b = d.join("runs/b");

    let mut child = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["train", "--quiet", "--run-dir", "runs/a"])
        .args(args)
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("embodia starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if checkpoint_steps(&run_a).is_some_and(|s| s >= kill_after) {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("training exited ({status}) before it could be killed");
        }
        assert!(Instant::now() < deadline, "no checkpoint at {kill_after} steps within 120 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    // While it trains, a second writer is refused, naming the process that holds the run (and
    // once that process is killed, its lock is gone: the resume below proceeds).
    let e = fail(d, &["train", "--resume", "runs/a", "--quiet"]);
    assert_mentions(&e, &["runs/a", &format!("is being written by process {}", child.id())]);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "training finished before the kill; give it a larger budget");
    let killed_at = checkpoint_steps(&run_a).expect("a checkpoint survives the kill");
    assert!(killed_at < total, "training finished before the kill (checkpoint at {killed_at})");
    assert!(!run_a.join("eval.json").exists());
    eprintln!("killed with the checkpoint at {killed_at} of {total} env steps");

    let out = ok(d, &["train", "--resume", "runs/a", "--quiet"]);
    assert_mentions(&out.stderr, &["runs/a"]);
    ok(d, &[&["train", "--quiet", "--run-dir", "runs/b"][..], args].concat());

    assert_eq!(checkpoint_steps(&run_a), Some(total));
    assert_eq!(checkpoint_steps(&run_b), Some(total));
    let (header_a, rows_a) = metrics(&run_a);
    let (header_b, rows_b) = metrics(&run_b);
    assert_eq!(header_a, METRIC_COLUMNS);
    assert_eq!(header_b, METRIC_COLUMNS);
    assert_eq!(rows_a.len(), rows_b.len(), "metrics rows (killed at {killed_at})");
    for (ra, rb) in rows_a.iter().zip(&rows_b) {
        assert_eq!(ra.len(), METRIC_COLUMNS.len(), "row {ra:?}");
        for (i, col) in METRIC_COLUMNS.iter().enumerate() {
            if !TIMING_COLUMNS.contains(col) {
                assert_eq!(ra[i], rb[i], "column {col} at env step {} differs (killed at {killed_at})", rb[0]);
            }
        }
    }
    let ta = fs::read(run_a.join("checkpoint/tensors.safetensors")).unwrap();
    let tb = fs::read(run_b.join("checkpoint/tensors.safetensors")).unwrap();
    assert!(ta == tb, "final parameters differ between the resumed and the uninterrupted run (killed at {killed_at})");
    assert_eq!(read_json(&run_a.join("eval.json")), read_json(&run_b.join("eval.json")));
}

#[test]
fn sac_killed_and_resumed_matches_uninterrupted_and_refuses_a_second_writer_meanwhile() {
    kill_resume_matches_uninterrupted(
        &["--task", "pendulum", "--algo", "sac", "--seed", "3", "--steps", "6000"],
        2000,
        6000,
    );
}

#[test]
fn ppo_killed_and_resumed_matches_uninterrupted_and_refuses_a_second_writer_meanwhile() {
    // 8 × 128 = 1,024 env steps per iteration; 30 iterations, so the kill after the first
    // checkpoint lands well before the end even on a loaded machine.
    kill_resume_matches_uninterrupted(
        &[
            "--task",
            "pendulum",
            "--algo",
            "ppo",
            "--seed",
            "3",
            "--steps",
            "30720",
            "--set",
            "algo.num_envs=8",
            "--set",
            "algo.steps_per_env=128",
        ],
        1024,
        30720,
    );
}

// ---------------------------------------------------------------------------------------------
// 10. eval --json

fn eval_json(dir: &Path, run: &str) -> serde_json::Map<String, Value> {
    let out = ok(dir, &["eval", "--run", run, "--episodes", "3", "--json"]);
    assert_eq!(out.stdout.lines().count(), 1, "one line of JSON:\n{}", out.stdout);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("not JSON: {e}\n{}", out.stdout));
    let obj = v.as_object().expect("a JSON object").clone();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["episodes", "mean_length", "mean_return", "mode", "std_return", "success_once_rate", "success_rate", "task"]
    );
    assert_eq!(obj["episodes"].as_u64(), Some(3));
    assert!(obj["mean_return"].as_f64().is_some_and(f64::is_finite));
    assert!(obj["std_return"].as_f64().is_some_and(|s| s.is_finite() && s >= 0.0));
    // Deterministic actions: the same evaluation twice gives the same numbers.
    assert_eq!(ok(dir, &["eval", "--run", run, "--episodes", "3", "--json"]).stdout, out.stdout);
    obj
}

#[test]
fn eval_json_reports_one_object() {
    let dir = tmp();
    let d = dir.path();
    tiny_run(d, "runs/pend");
    let v = eval_json(d, "runs/pend");
    assert_eq!(v["task"], "pendulum");
    assert_eq!(v["success_rate"], Value::Null, "pendulum has no success notion");
    assert_eq!(v["success_once_rate"], Value::Null);
    assert_eq!(v["mean_length"].as_f64(), Some(200.0), "pendulum episodes are 200 steps");
    assert_eq!(v["mode"], "zero", "a Gaussian policy is reported with its mean");
    let e = fail(d, &["eval", "--run", "runs/pend", "--mode", "fixed-draw"]);
    assert_mentions(&e, &["fixed-draw", "sac", "without an initial noise"]);

    ok(
        d,
        &[
            "train",
            "--task",
            "mountain-car-continuous",
            "--steps",
            "1000",
            "--set",
            "eval_episodes=1",
            "--run-dir",
            "runs/car",
            "--quiet",
        ],
    );
    let v = eval_json(d, "runs/car");
    assert_eq!(v["task"], "mountain-car-continuous");
    assert!(
        v["success_rate"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)),
        "success_rate: {}",
        v["success_rate"]
    );
    // Mountain car ends on success, so succeeding at some step is succeeding at the end.
    assert_eq!(v["success_once_rate"], v["success_rate"]);
    assert!(v["mean_length"].as_f64().is_some_and(|l| l > 0.0 && l <= 999.0));

    // Without --json: one human-readable line.
    let out = ok(d, &["eval", "--run", "runs/pend", "--episodes", "2"]);
    assert_mentions(&out.stdout, &["sac", "pendulum", "1000 env steps", "mean return"]);

    // --episodes-csv: one row per episode; the success columns stay empty without a success notion.
    // --steps-csv: one row per step of every episode, numbered within its episode.
    let args =
        ["eval", "--run", "runs/car", "--episodes", "2", "--episodes-csv", "car.csv", "--steps-csv", "steps.csv"];
    let out = ok(d, &args);
    assert_mentions(&out.stderr, &["2 episodes", "car.csv", "steps.csv"]);
    let csv = fs::read_to_string(d.join("car.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "episode,return,length,success,success_once,instruction");
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[1].starts_with("0,") && lines[2].starts_with("1,"), "{csv}");
    let lengths: Vec<usize> = lines[1..].iter().map(|row| row.split(',').nth(2).unwrap().parse().unwrap()).collect();
    let steps = fs::read_to_string(d.join("steps.csv")).unwrap();
    let rows: Vec<Vec<&str>> = steps.lines().map(|row| row.split(',').collect()).collect();
    // Mountain car: position and velocity observed, one force action.
    assert_eq!(rows[0], ["episode", "step", "reward", "success", "obs.0", "obs.1", "action.0"]);
    assert_eq!(rows.len() - 1, lengths.iter().sum::<usize>(), "one row per step");
    for (episode, &length) in lengths.iter().enumerate() {
        let numbered: Vec<usize> =
            rows[1..].iter().filter(|r| r[0] == episode.to_string()).map(|r| r[1].parse().unwrap()).collect();
        assert_eq!(numbered, (0..length).collect::<Vec<_>>(), "steps of episode {episode}");
    }
    ok(d, &["eval", "--run", "runs/pend", "--episodes", "1", "--episodes-csv", "pend.csv"]);
    let pend = fs::read_to_string(d.join("pend.csv")).unwrap();
    assert!(pend.lines().nth(1).is_some_and(|row| row.ends_with(",200,,,")), "{pend}");
    // A scripted expert's evaluation keeps no episodes: the options of a run's are refused, not ignored.
    for option in ["--episodes-csv", "--steps-csv", "--record-episodes"] {
        let out = embodia(d, &["eval", "--task", "reach", "--expert", "scripted", option, "2"]);
        assert_eq!(out.code, Some(2), "a usage error: {}", out.stderr);
        assert_mentions(&out.stderr, &[option, "--expert"]);
    }
    // Outputs are checked before the evaluation runs: nothing is evaluated for a path that
    // cannot take the result.
    for (option, path, cause) in [
        ("--render", "missing/ep.png", "does not exist"),
        ("--episodes-csv", "runs", "is a directory"),
        ("--steps-csv", "nowhere/steps.csv", "does not exist"),
    ] {
        let e = fail(d, &["eval", "--run", "runs/pend", "--episodes", "1000", option, path]);
        assert_mentions(&e, &[option, path, cause]);
    }
    let out = embodia(d, &["eval", "--run", "runs/pend", "--episodes", "0"]);
    assert_eq!(out.code, Some(2), "a count out of range is a command-line error: {}", out.stderr);
    assert_mentions(&out.stderr, &["--episodes", "1 ..= 1000000"]);
}

/// `compare` evaluates both runs on the episodes of one seed (the first run's unless
/// `--seed`): each run's figure is what `eval` gives it on that seed, and a run against itself
/// differs by nothing.
#[test]
fn compare_pairs_two_runs_on_the_same_episodes() {
    let dir = tmp();
    let d = dir.path();
    tiny_run(d, "a");
    ok(d, &["train", "--steps", "1000", "--seed", "2", "--set", "eval_episodes=1", "--run-dir", "b", "--quiet"]);
    let compare = |args: &[&str]| -> Value {
        let out = ok(d, &[&["compare", "--episodes", "3", "--json"], args].concat());
        serde_json::from_str(out.stdout.trim()).unwrap()
    };
    let itself = compare(&["--run", "a", "--run", "a"]);
    assert_eq!(itself["metric"], "return", "pendulum has no success notion");
    assert_eq!((itself["difference"].as_f64(), itself["ci95"][0].as_f64()), (Some(0.0), Some(0.0)), "{itself}");
    let mean_return = |run: &str| eval_json(d, run)["mean_return"].as_f64().unwrap();
    let close = |x: &Value, y: f64| x.as_f64().is_some_and(|x| (x - y).abs() < 1e-3 * y.abs().max(1.0));
    let (a, b) = (mean_return("a"), mean_return("b"));
    let on_a = compare(&["--run", "a", "--run", "b"]);
    assert!(close(&on_a["a"], a) && on_a["seed"] == 1, "{on_a} against eval's {a}");
    let on_b = compare(&["--run", "a", "--run", "b", "--seed", "2"]);
    assert!(close(&on_b["b"], b), "{on_b} against eval's {b}");
    assert!(close(&on_b["difference"], on_b["b"].as_f64().unwrap() - on_b["a"].as_f64().unwrap()), "{on_b}");
    let lo_hi = (on_b["ci95"][0].as_f64().unwrap(), on_b["ci95"][1].as_f64().unwrap());
    assert!(lo_hi.0 <= lo_hi.1, "{on_b}");
    let out = ok(d, &["compare", "--run", "a", "--run", "b", "--episodes", "3"]);
    assert_mentions(&out.stdout, &["3 episodes of pendulum (seed 1", "B − A", "95% CI"]);

    let e = fail(d, &["compare", "--run", "a", "--run", "b", "--split", "held_out"]);
    assert_mentions(&e, &["--split", "language-conditioned", "pendulum"]);
    let e = fail_at_once(d, &["compare", "--run", "a"]);
    assert_mentions(&e, &["--run", "exactly two"]);
    let args = ["train", "--task", "mountain-car-continuous", "--steps", "1000", "--set", "eval_episodes=1"];
    ok(d, &[&args[..], &["--run-dir", "car", "--quiet"]].concat());
    let e = fail(d, &["compare", "--run", "a", "--run", "car", "--episodes", "2"]);
    assert_mentions(&e, &["car", "mountain-car-continuous", "pendulum", "one task"]);
}

// ---------------------------------------------------------------------------------------------
// 11. the run directory

#[test]
fn train_writes_run_directory() {
    let dir = tmp();
    let d = dir.path();
    let out = ok(
        d,
        &["train", "--seed", "5", "--steps", "2000", "--set", "eval_episodes=4", "--run-dir", "runs/full", "--quiet"],
    );
    assert_mentions(&out.stderr, &["runs/full", "mean return"]);
    let run = d.join("runs/full");

    let config: toml::Table = toml::from_str(&fs::read_to_string(run.join("config.toml")).unwrap()).unwrap();
    assert_eq!(config["task"].as_str(), Some("pendulum"));
    assert_eq!(config["algorithm"].as_str(), Some("sac"));
    assert_eq!(config["seed"].as_integer(), Some(5));
    assert_eq!(config["total_steps"].as_integer(), Some(2000));
    assert!(config["algo"].as_table().is_some_and(|t| t.contains_key("learning_rate")));

    let (header, rows) = metrics(&run);
    assert_eq!(header, METRIC_COLUMNS);
    assert_eq!(rows.len(), 2, "one row per 1,000-step iteration");
    for (row, steps) in rows.iter().zip([1000u64, 2000]) {
        assert_eq!(row.len(), METRIC_COLUMNS.len(), "{row:?}");
        let field = |name: &str| &row[METRIC_COLUMNS.iter().position(|c| *c == name).unwrap()];
        assert_eq!(field("env_steps").parse::<u64>().ok(), Some(steps));
        for name in [
            "wall_seconds",
            "return_mean",
            "return_min",
            "return_max",
            "episode_length",
            "alpha",
            "learning_rate",
            "fps",
        ] {
            assert!(field(name).parse::<f64>().is_ok_and(f64::is_finite), "{name} = `{}` in {row:?}", field(name));
        }
        let (lo, mean, hi) = (
            field("return_min").parse::<f64>().unwrap(),
            field("return_mean").parse::<f64>().unwrap(),
            field("return_max").parse::<f64>().unwrap(),
        );
        assert!(lo <= mean && mean <= hi, "{row:?}");
        assert_eq!(field("success_rate"), "", "pendulum has no success notion");
        assert_eq!(field("kl"), "", "SAC has no KL");
    }
    // Learning started after 1,000 steps: the second row has losses and entropy.
    for name in ["policy_loss", "value_loss", "entropy"] {
        let i = METRIC_COLUMNS.iter().position(|c| *c == name).unwrap();
        assert!(rows[1][i].parse::<f64>().is_ok_and(f64::is_finite), "{name} in {:?}", rows[1]);
    }

    let state = read_json(&run.join("checkpoint/state.json"));
    assert_eq!(state["env_steps"].as_u64(), Some(2000));
    // safetensors: an 8-byte little-endian header length, a JSON header, then the data.
    let tensors = fs::read(run.join("checkpoint/tensors.safetensors")).unwrap();
    let n = u64::from_le_bytes(tensors[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&tensors[8..8 + n]).expect("safetensors JSON header");
    let names: Vec<&String> = header.as_object().unwrap().keys().collect();
    assert!(names.iter().any(|k| k.starts_with("actor.")), "{names:?}");
    assert!(names.iter().any(|k| k.starts_with("critic.")), "{names:?}");

    let eval = read_json(&run.join("eval.json"));
    assert_eq!(eval["task"], "pendulum");
    assert_eq!(eval["episodes"].as_u64(), Some(4));
    assert_eq!(eval["success_rate"], Value::Null);
    // `eval` on the finished run reproduces the final evaluation.
    let again = eval_json_episodes(d, "runs/full", 4);
    assert_eq!(again, eval);

    // --resume is exclusive with settings that would change the run.
    let out = embodia(d, &["train", "--resume", "runs/full", "--seed", "2"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert_mentions(&out.stderr, &["--resume", "--seed"]);
}

fn eval_json_episodes(dir: &Path, run: &str, episodes: usize) -> Value {
    let out = ok(dir, &["eval", "--run", run, "--episodes", &episodes.to_string(), "--json"]);
    serde_json::from_str(out.stdout.trim()).unwrap()
}

/// `eval --run run` in each `--mode`: the default is `sampled`, each mode is reproducible and
/// named in the result, and the three act differently.
fn assert_eval_modes_differ(dir: &Path, run: &str, episodes: usize) {
    let episodes = episodes.to_string();
    let eval = |extra: &[&str]| {
        let out = ok(dir, &[&["eval", "--run", run, "--episodes", &episodes, "--json"], extra].concat());
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
        (v["mode"].as_str().unwrap().to_string(), v["mean_return"].as_f64().unwrap())
    };
    let (default_mode, default_return) = eval(&[]);
    assert_eq!(default_mode, "sampled", "{run}: chunk policies are reported sampled");
    let mut returns = Vec::new();
    for mode in ["sampled", "zero", "fixed-draw"] {
        let (named, r) = eval(&["--mode", mode]);
        assert_eq!((named.as_str(), eval(&["--mode", mode]).1), (mode, r), "{run}: `{mode}` is reproducible");
        returns.push(r);
    }
    assert_eq!(returns[0], default_return, "{run}: the default is `sampled`");
    assert!(returns[0] != returns[1] && returns[1] != returns[2], "{run}: the modes act alike: {returns:?}");
}

// ---------------------------------------------------------------------------------------------
// 12. robot check

#[test]
fn robot_check_prints_a_summary() {
    let dir = tmp();
    let d = dir.path();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("robots/tests/fixtures/arm"), &d.join("arm"));
    // Meshes resolve relative to the URDF's directory, not the working directory.
    let out = ok(d, &["robot", "check", "arm/urdf/arm.urdf"]);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "robot \"test_arm\": 7 links, 6 joints, 4 actuated DoF, total mass 3.85 kg");
    let row = |name: &str| {
        let found = lines.iter().rev().find(|l| l.split_whitespace().next() == Some(name));
        found
            .unwrap_or_else(|| panic!("no row {name}:\n{}", out.stdout))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("shoulder"),
        "shoulder revolute base_link -> upper_arm [-2.5, 2.5] rad effort 20 N·m velocity 2 rad/s"
    );
    assert!(row("finger_right").ends_with("mimics finger_left (multiplier 1, offset 0.001 m)"), "{}", out.stdout);
    assert_eq!(row("tool_frame"), "tool_frame massless");

    // Every robot description shipped in assets/ passes.
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/robots");
    for entry in fs::read_dir(&assets).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "urdf" || e == "xml") {
            let out = ok(d, &["robot", "check", path.to_str().unwrap()]);
            assert!(out.stdout.starts_with("robot \""), "{}:\n{}", path.display(), out.stdout);
        }
    }
}

#[test]
fn robot_check_reads_mjcf_and_names_refused_elements() {
    let dir = tmp();
    let d = dir.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("robots/tests/fixtures/mjcf");
    copy_dir(&fixtures.join("menagerie_arm"), &d.join("menagerie_arm"));
    let out = ok(d, &["robot", "check", "menagerie_arm/arm.xml"]);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.starts_with("robot \"menagerie_arm\": 5 links, 4 joints, 3 actuated DoF"), "{}", out.stdout);
    for line in [
        "  shoulder  <position> -> shoulder  position kp 50 kv 5  ctrl [-2, 2]  effort 20",
        "  ee  on fore",
        "  line 88: <sensor>: observations come from the task's terms",
    ] {
        assert!(out.stdout.contains(line), "{line:?} in\n{}", out.stdout);
    }

    let xml = "<mujoco model=\"m\">\n  <worldbody>\n    <body name=\"a\">\n      <geom size=\"0.1\"/>\n    </body>\n  </worldbody>\n  <tendon>\n    <fixed name=\"t\"/>\n  </tendon>\n</mujoco>\n";
    fs::write(d.join("tendon.xml"), xml).unwrap();
    let e = fail_at_once(d, &["robot", "check", "tendon.xml"]);
    assert_eq!(
        e,
        "error: tendon.xml:7: <tendon> is not supported: tendons have no counterpart in embodia's RobotModel"
    );
}

#[test]
fn robot_check_reports_file_line_and_element() {
    let dir = tmp();
    let d = dir.path();
    let urdf = r#"<robot name="r">
  <link name="base"/>
  <link name="arm"/>
  <joint name="elbow" type="revolute">
    <parent link="upper_arm"/>
    <child link="arm"/>
    <limit lower="-1" upper="1" effort="5" velocity="2"/>
  </joint>
</robot>
"#;
    fs::write(d.join("robot.urdf"), urdf).unwrap();
    let e = fail_at_once(d, &["robot", "check", "robot.urdf"]);
    assert_eq!(e, "error: robot.urdf:5: joint \"elbow\": parent link \"upper_arm\" does not exist");

    fs::write(d.join("syntax.urdf"), urdf.replace("</joint>", "</joint")).unwrap();
    let e = fail_at_once(d, &["robot", "check", "syntax.urdf"]);
    assert_mentions(&e, &["error: syntax.urdf:9: XML syntax error"]);

    let e = fail_at_once(d, &["robot", "check", "missing.urdf"]);
    assert_mentions(&e, &["error: missing.urdf: cannot read the file"]);
}

#[test]
fn eval_runs_a_tasks_scripted_expert() {
    let dir = tmp();
    let d = dir.path();
    let out = ok(d, &["eval", "--task", "pick-cube", "--expert", "scripted", "--episodes", "2", "--json"]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["episodes"].as_u64(), Some(2), "{v}");
    assert!(v["success_rate"].as_f64().is_some_and(|s| s >= 0.5), "the pick expert lifts the cube: {v}");
    let out = ok(d, &["eval", "--task", "reach-arm7", "--expert", "scripted", "--episodes", "2"]);
    assert_mentions(&out.stdout, &["scripted expert on reach-arm7", "2 episodes", "success"]);
    let e = fail_at_once(d, &["eval", "--task", "cartpole", "--expert", "scripted"]);
    assert_mentions(&e, &["no scripted expert"]);
}

#[test]
fn sft_then_flow_rl_from_the_command_line() {
    let dir = tmp();
    let d = dir.path();
    let small = ["--set", "algo.policy.width=32", "--set", "algo.policy.hidden=[32]", "--quiet"];
    let mut args =
        vec!["train", "--task", "reach", "--algo", "sft", "--demos", "4", "--steps", "40", "--run-dir", "sft"];
    args.extend(["--set", "algo.updates_per_iteration=20", "--set", "algo.num_envs=2"]);
    ok(d, &[&args[..], &small[..]].concat());
    let (header, rows) = metrics(&d.join("sft"));
    let success = header.iter().position(|h| h == "success_rate").unwrap();
    assert_eq!(rows.len(), 2, "one row per 20 gradient steps");
    assert!(rows.iter().all(|r| r[success].parse::<f64>().is_ok_and(|s| (0.0..=1.0).contains(&s))), "{rows:?}");
    assert!(d.join("sft/eval.json").exists());

    ok(
        d,
        &[
            "train",
            "--task",
            "reach",
            "--algo",
            "ppo-flow-noise",
            "--init",
            "sft",
            "--steps",
            "800",
            "--set",
            "algo.num_envs=4",
            "--set",
            "algo.chunk_steps=50",
            "--run-dir",
            "rl",
            "--quiet",
        ],
    );
    let eval = eval_json(d, "rl");
    assert!(eval["success_rate"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{eval:?}");

    // DSRL steers the same clone: one iteration of 2 episodes, evaluated from its run.
    let mut args = vec!["train", "--task", "reach", "--algo", "dsrl", "--init", "sft", "--steps", "400"];
    args.extend(["--set", "algo.num_envs=2", "--set", "algo.random_iterations=1", "--set", "algo.batch_size=16"]);
    args.extend(["--set", "algo.updates_per_iteration=4", "--set", "eval_episodes=2", "--run-dir", "dsrl", "--quiet"]);
    ok(d, &args);
    let eval = eval_json(d, "dsrl");
    assert_eq!(eval["mode"].as_str(), Some("sampled"), "{eval:?}");
    assert!(eval["success_rate"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{eval:?}");
    let e =
        fail(d, &["train", "--task", "reach", "--algo", "dsrl", "--init", "rl", "--run-dir", "bad-dsrl", "--quiet"]);
    assert_mentions(&e, &["sft run of a flow policy", "rl", "ppo-flow-noise"]);
    let e = fail(d, &["export", "--run", "dsrl", "--format", "onnx", "--out", "dsrl.onnx"]);
    assert_mentions(&e, &["dsrl", "noise policy", "not implemented"]);

    let e = fail(d, &["train", "--task", "reach", "--algo", "ppo-flow-sde", "--run-dir", "no-init", "--quiet"]);
    assert_mentions(&e, &["--init"]);
    let e = fail(
        d,
        &["train", "--task", "reach", "--algo", "ppo-flow-sde", "--init", "rl", "--run-dir", "bad-init", "--quiet"],
    );
    assert_mentions(&e, &["sft run", "ppo-flow-noise"]);
    let e =
        fail(d, &["train", "--task", "reach", "--algo", "sft", "--dataset", "data/x", "--run-dir", "ds", "--quiet"]);
    assert_mentions(&e, &["data/x", "info.json"]);
    assert_eq!(e.matches("No such file or directory").count(), 1, "the cause is printed once: {e}");
    assert!(!d.join("ds").exists(), "a failed start leaves no run directory");

    // SFT from a recorded LeRobot dataset instead of in-memory demonstrations.
    ok(d, &["record", "--task", "reach", "--expert", "scripted", "--episodes", "4", "--out", "data/reach-4"]);
    let mut args = vec!["train", "--task", "reach", "--algo", "sft", "--dataset", "data/reach-4", "--steps", "20"];
    args.extend(["--set", "algo.updates_per_iteration=20", "--set", "algo.num_envs=2", "--run-dir", "ds"]);
    ok(d, &[&args[..], &small[..]].concat());
    assert_eq!(metrics(&d.join("ds")).1.len(), 1, "one row per 20 gradient steps");
    // A Parquet file that makes the Parquet reader panic reads as one error naming the file, with
    // no panic message before it (`embodia` asserts "panicked" is absent from stderr).
    ok(d, &["record", "--task", "reach", "--episodes", "1", "--out", "data/corrupt"]);
    let file = d.join("data/corrupt/data/chunk-000/file-000.parquet");
    let corrupt = Path::new(env!("CARGO_MANIFEST_DIR")).join("dataset/tests/data/arrow-schema-panic.parquet");
    std::fs::copy(corrupt, &file).unwrap();
    let e = fail(d, &["dataset", "info", "data/corrupt"]);
    assert_mentions(&e, &["data/corrupt/data/chunk-000/file-000.parquet", "corrupt file"]);
    let e = fail(
        d,
        &["train", "--task", "cartpole", "--algo", "sft", "--dataset", "data/reach-4", "--run-dir", "ds2", "--quiet"],
    );
    assert_mentions(&e, &["obs_dim", "action_dim"]);
    // A task without a scripted expert cannot be demonstrated: the error lists those that can.
    let e = fail(d, &["train", "--task", "pendulum", "--algo", "sft", "--run-dir", "no-expert", "--quiet"]);
    assert_mentions(&e, &["`pendulum` has no scripted expert", "reach", "pick-cube"]);
    assert!(!d.join("no-expert").exists(), "no run directory is left behind");
}

#[test]
fn diffusion_sft_then_dppo_from_the_command_line() {
    let dir = tmp();
    let d = dir.path();
    let small = ["--set", "algo.policy.width=32", "--set", "algo.policy.hidden=[32]", "--quiet"];
    let mut args = vec!["train", "--task", "reach", "--algo", "sft", "--set", "algo.model=diffusion", "--demos", "4"];
    args.extend(["--steps", "40", "--set", "algo.updates_per_iteration=20", "--set", "algo.num_envs=2"]);
    args.extend(["--run-dir", "dsft"]);
    ok(d, &[&args[..], &small[..]].concat());
    assert_eq!(metrics(&d.join("dsft")).1.len(), 2, "one row per 20 gradient steps");
    let dppo = |run: &str, init: &str| {
        let mut a = vec!["train", "--task", "reach", "--algo", "dppo", "--init", init, "--steps", "400"];
        a.extend([
            "--set",
            "algo.num_envs=4",
            "--set",
            "algo.chunk_steps=25",
            "--set",
            "algo.critic_warmup_iterations=1",
        ]);
        a.extend(["--set", "algo.update_epochs=1", "--run-dir", run, "--quiet"]);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    // Sampled, from zero noise or from one fixed draw: three policies, each reproducible.
    assert_eval_modes_differ(d, "dsft", 3);
    let args = dppo("rl", "dsft");
    ok(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let (header, rows) = metrics(&d.join("rl"));
    let kl = header.iter().position(|h| h == "kl").unwrap();
    assert_eq!(rows[0][kl], "0", "critic warmup: ratios exactly 1");
    assert!(rows.iter().all(|r| r[kl].parse::<f64>().is_ok_and(f64::is_finite)), "{rows:?}");
    assert!(eval_json(d, "rl")["success_rate"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)));
    ok(d, &["train", "--resume", "rl", "--steps", "800", "--quiet"]);
    assert_eq!(metrics(&d.join("rl")).1.len(), 2 * rows.len(), "resumed to twice the budget");

    let e = fail(d, &["train", "--task", "reach", "--algo", "dppo", "--run-dir", "no-init", "--quiet"]);
    assert_mentions(&e, &["--init", "algo.model=diffusion"]);
    let args = vec!["train", "--task", "reach", "--algo", "sft", "--steps", "20", "--run-dir", "fsft"];
    ok(d, &[&args[..], &["--set", "algo.updates_per_iteration=20", "--set", "algo.num_envs=2"], &small[..]].concat());
    let args = dppo("bad", "fsft");
    let e = fail(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_mentions(&e, &["flow policy", "algo.model=diffusion"]);
    let e = fail_at_once(d, &["train", "--algo", "sft", "--set", "algo.diffusion.sampling_steps=7", "--task", "reach"]);
    assert_mentions(&e, &["algo.diffusion.sampling_steps"]);
}

#[test]
fn device_selection_is_checked_before_any_work() {
    let dir = tmp();
    let msg = fail_at_once(dir.path(), &["--device", "tpu", "list"]);
    assert_mentions(&msg, &["--device", "unknown device `tpu`", "cpu, gpu"]);
    if !cfg!(feature = "gpu") {
        let msg = fail_at_once(dir.path(), &["train", "--task", "quadrotor-hover", "--device", "gpu"]);
        assert_mentions(&msg, &["built without the `gpu` feature", "--features gpu"]);
    }
}

/// `bench vla-model` times the preset it is given at the batch it is given, its JSON carries
/// the model's true size, and a bad preset or batch is refused before any work.
#[test]
fn bench_vla_model_times_the_presets_asked_for() {
    let dir = tmp();
    let out = ok(
        dir.path(),
        &["bench", "vla-model", "--presets", "tiny", "--batches", "2", "--reps", "1", "--train", "--json"],
    );
    let json: Value = serde_json::from_str(out.stdout.lines().last().expect("a JSON line")).expect("JSON");
    let rows = json.as_array().expect("one row per preset and batch");
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["preset"], "tiny");
    assert_eq!(row["batch"], 2);
    assert_eq!(row["parameters"].as_u64(), Some(embodia_policies::vla::VlaConfig::tiny(7, 7).param_count() as u64));
    for figure in ["prefix_ms", "chunk_ms", "train_step_ms"] {
        let (median, min) = (row[figure][0].as_f64().expect(figure), row[figure][1].as_f64().expect(figure));
        assert!(min > 0.0 && min <= median, "{figure}: median {median}, min {min}");
    }
    assert_mentions(
        &fail_at_once(dir.path(), &["bench", "vla-model", "--presets", "huge"]),
        &["huge", "tiny, small, base"],
    );
    assert_mentions(&fail_at_once(dir.path(), &["bench", "vla-model", "--batches", "0"]), &["--batches"]);
}

#[test]
fn bench_sim_measures_quadrotor_cpu_and_tensor_environments() {
    let dir = tmp();
    let out = ok(
        dir.path(),
        &["bench", "sim", "--task", "quadrotor-hover", "--envs", "4", "--tensor", "--measure-steps", "400", "--json"],
    );
    let json: Vec<Value> =
        out.stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(json.len(), 2, "{}", out.stdout);
    let cpu = &json[0]["results"][0];
    let tensor = &json[1]["tensor_results"][0];
    for r in [cpu, tensor] {
        assert_eq!(r["envs"], 4);
        assert!(r["env_steps"].as_u64().unwrap() >= 400 && r["steps_per_s"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn bench_flow_writes_learning_curves_and_the_gaussian_ppo_baseline() {
    let dir = tmp();
    let d = dir.path();
    let mut args = vec!["bench", "flow", "--tasks", "reach", "--demos", "2", "--sft-steps", "20", "--rl-steps", "400"];
    args.extend(["--envs", "4", "--eval-episodes", "4", "--baseline", "--out", "bf", "--json", "--seed", "2"]);
    args.extend(["--set", "algo.chunk_steps=10", "--set", "algo.critic_hidden=[16]"]);
    let out = ok(d, &args);
    let json: Vec<Value> =
        out.stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(json.len(), 1, "{}", out.stdout);
    let r = &json[0];
    // S0 and S1 in every evaluation mode.
    for stage in ["sft_success", "rl_success"] {
        for mode in ["sampled", "zero", "fixed_draw"] {
            assert!(r[stage][mode].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{stage}.{mode}: {r}");
        }
    }
    assert!(r["baseline_success"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{r}");
    // The paired gain in each mode is S1 − S0 of the same episodes, inside its interval.
    for (mode, key) in [("sampled", "sampled"), ("zero", "zero"), ("fixed-draw", "fixed_draw")] {
        let g: Vec<f64> = r["rl_gain"][key].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let d = r["rl_success"][key].as_f64().unwrap() - r["sft_success"][key].as_f64().unwrap();
        assert!((g[0] - d).abs() < 1e-9 && g[1] <= g[0] && g[0] <= g[2], "{mode}: {g:?} vs {d}");
    }
    assert_eq!((r["demos"].as_u64(), r["sft_steps"].as_u64(), r["seed"].as_u64()), (Some(2), Some(20), Some(2)), "{r}");
    // RL stops at the first iteration that reaches the env-step budget (4 envs × 10 chunks of 4).
    let rl_steps = r["rl_env_steps"].as_u64().unwrap();
    assert!((400..400 + 160).contains(&rl_steps), "{r}");
    // The baseline takes at least as many env steps as flow RL (whole PPO iterations).
    assert!(r["baseline_env_steps"].as_u64().unwrap() >= rl_steps, "{r}");
    let line = out.stdout.lines().find(|l| l.starts_with("task=reach seed=2")).unwrap();
    assert!(line.contains("S0=sampled ") && line.contains(" / zero ") && line.contains(" / fixed-draw "), "{line}");
    assert!(out.stdout.contains("median over 1 seed(s)") && out.stdout.contains("ppo-from-scratch="), "{}", out.stdout);
    for algo in ["ppo-flow-sde", "ppo"] {
        let run = d.join("bf/reach-seed2").join(algo);
        let (header, rows) = metrics(&run);
        assert!(header.iter().any(|h| h == "wall_seconds") && !rows.is_empty(), "{algo}");
        assert!(run.join("curves.png").exists(), "{algo}");
    }
    // The SFT and RL policies are runs that eval reads (and the RL run's init is the SFT run).
    for run in ["sft", "ppo-flow-sde"] {
        let run = format!("bf/reach-seed2/{run}");
        let out = ok(d, &["eval", "--run", &run, "--episodes", "2", "--json"]);
        assert!(out.stdout.contains("\"success_rate\""), "{run}: {}", out.stdout);
    }
    let rl_config = std::fs::read_to_string(d.join("bf/reach-seed2/ppo-flow-sde/config.toml")).unwrap();
    assert!(rl_config.contains("init = \"bf/reach-seed2/sft\""), "{rl_config}");
    // The RL run is a run `train --resume` continues.
    let rl = d.join("bf/reach-seed2/ppo-flow-sde");
    let (more, rows_before) = ((rl_steps + 160).to_string(), metrics(&rl).1.len());
    ok(d, &["train", "--resume", "bf/reach-seed2/ppo-flow-sde", "--steps", &more, "--quiet"]);
    assert!(checkpoint_steps(&rl).is_some_and(|s| s >= rl_steps + 160), "{:?}", checkpoint_steps(&rl));
    assert!(metrics(&rl).1.len() > rows_before, "the resumed iterations are appended to metrics.csv");
    // The overrides reach the flow-RL config: a bad one is named.
    let mut bad = args.clone();
    bad.extend(["--set", "algo.clip_ratio=-1"]);
    assert_mentions(&fail(d, &bad), &["clip_ratio"]);
    // So do the SFT overrides.
    let mut bad = args.clone();
    bad.extend(["--sft-set", "algo.learning_rate=-1"]);
    assert_mentions(&fail(d, &bad), &["learning_rate"]);
}

#[test]
fn bench_solve_runs_the_seeds_from_seed_on() {
    let dir = tmp();
    let args = [
        "bench", "solve", "--task", "pendulum", "--algo", "sac", "--steps", "1000", "--seed", "7", "--seeds", "2",
        "--json",
    ];
    let out = ok(dir.path(), &args);
    let json: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    let seeds: Vec<u64> = json["seeds"].as_array().unwrap().iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [7, 8], "{}", out.stdout);
}

#[test]
fn bench_solve_judges_mountain_car_by_its_return_not_its_success_flag() {
    // Mountain car reports success (the flag reached) but is solved at return ≥ 90, as
    // gymnasium's; PPO's preset gets there in ~65k steps.
    let dir = tmp();
    let args = ["bench", "solve", "--task", "mountain-car-continuous", "--algo", "ppo", "--steps", "200000", "--json"];
    let out = ok(dir.path(), &args);
    let json: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    let seed = &json["seeds"][0];
    assert_eq!(seed["solved"], true, "{}", out.stdout);
    assert!(seed["last_eval_return"].as_f64().unwrap() >= 90.0, "{}", out.stdout);
    assert!(out.stdout.contains("threshold 90,"), "{}", out.stdout);
    // The solving policy holds on 1,000 fresh initial states, not only on the 10 screened.
    assert!(seed["confirm_return"].as_f64().is_some_and(|r| r >= 90.0), "{}", out.stdout);
    assert!(seed["confirm_success"].is_null(), "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// The VLA: vla-sft from demonstrations recorded with camera images, then vla-ppo-flow-sde.

#[test]
fn vla_trains_from_camera_demonstrations_then_grpo_and_evaluates() {
    let dir = tmp();
    let d = dir.path();
    // A reduced model: one block each, narrow.
    let small = [
        "--set",
        "algo.model.vision.width=32",
        "--set",
        "algo.model.vision.depth=1",
        "--set",
        "algo.model.backbone_width=32",
        "--set",
        "algo.model.backbone_depth=1",
        "--set",
        "algo.model.expert_depth=1",
        "--quiet",
    ];
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--demos", "3", "--steps", "10"];
    args.extend(["--set", "algo.updates_per_iteration=5", "--set", "algo.num_envs=2", "--set", "eval_episodes=2"]);
    args.extend(["--run-dir", "sft"]);
    ok(d, &[&args[..], &small[..]].concat());
    let (header, rows) = metrics(&d.join("sft"));
    let loss = header.iter().position(|h| h == "policy_loss").unwrap();
    assert_eq!(rows.len(), 2, "one row per 5 gradient steps");
    assert!(rows.iter().all(|r| r[loss].parse::<f64>().is_ok_and(|l| l.is_finite() && l > 0.0)), "{rows:?}");
    let eval = read_json(&d.join("sft/eval.json"));
    assert!(eval["per_instruction"].as_array().is_some_and(|a| !a.is_empty()), "{eval:?}");
    // `--mode` reaches the VLA's actor too.
    assert_eval_modes_differ(d, "sft", 2);

    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-ppo-flow-sde", "--init", "sft"];
    args.extend(["--steps", "100", "--set", "algo.num_envs=4", "--set", "algo.group_size=2", "--set"]);
    args.extend(["eval_episodes=2", "--run-dir", "rl", "--quiet"]);
    ok(d, &args);
    let (_, rows) = metrics(&d.join("rl"));
    assert_eq!(rows.len(), 1, "one GRPO iteration runs every episode to its end");
    // `--split held_out` evaluates on instructions the training split never draws.
    let instructions = |split: &str| -> std::collections::BTreeSet<String> {
        let out = ok(d, &["eval", "--run", "rl", "--episodes", "6", "--split", split, "--json"]);
        let eval: Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert!(eval["success_rate"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{eval:?}");
        let per_instruction = eval["per_instruction"].as_array().expect("per-instruction results");
        per_instruction.iter().map(|r| r["instruction"].as_str().unwrap().to_string()).collect()
    };
    let (held_out, train) = (instructions("held_out"), instructions("train"));
    assert!(!held_out.is_empty() && !train.is_empty(), "{held_out:?} {train:?}");
    assert!(held_out.is_disjoint(&train), "held-out {held_out:?} overlaps training {train:?}");

    // `bench vla` from that SFT run: S0, one RL iteration, S1 and the time split. An RL run is
    // refused as the starting point.
    let mut args = vec!["bench", "vla", "--sft-run", "sft", "--rl-seconds", "0.1", "--eval-episodes", "1"];
    args.extend(["--rl-set", "algo.num_envs=4", "--rl-set", "algo.group_size=2", "--out", "bv", "--json"]);
    let out = ok(d, &args);
    let r: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["sft_seconds"].as_f64(), Some(0.0), "{r:?}");
    assert_eq!(r["sft_steps"].as_u64(), Some(10), "{r:?}");
    assert!(r["rl_env_steps"].as_u64().is_some_and(|s| s > 0), "{r:?}");
    for key in ["sim_seconds", "inference_seconds", "update_seconds"] {
        assert!(r[key].as_f64().is_some_and(|s| s > 0.0), "{key}: {r:?}");
    }
    for policy in ["s0", "s1"] {
        assert!(r[policy]["held_out_sampled"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{r:?}");
    }
    // S1 − S0 is paired: both played the bench's episodes.
    for split in ["train", "held_out", "train_sampled", "held_out_sampled"] {
        let g: Vec<f64> = r["s1_gain"][split].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let difference = r["s1"][split].as_f64().unwrap() - r["s0"][split].as_f64().unwrap();
        assert!((g[0] - difference).abs() < 1e-9 && g[1] <= g[0] && g[0] <= g[2], "{split}: {r:?}");
    }
    let e = fail(d, &["bench", "vla", "--sft-run", "rl", "--rl-seconds", "0.1", "--eval-episodes", "1"]);
    assert_mentions(&e, &["rl", "vla-sft"]);
    // Distillation needs successful RL episodes; this untrained policy has none, which is named
    // (after 10 attempts, kept short here).
    let mut args = vec!["bench", "vla", "--sft-run", "sft", "--rl-seconds", "0.1", "--eval-episodes", "1"];
    args.extend(["--rl-set", "algo.num_envs=4", "--rl-set", "algo.group_size=2", "--rl-set", "env.episode_steps=8"]);
    args.extend(["--out", "bv", "--distill-steps", "101", "--distill-episodes", "1"]);
    let e = fail(d, &args);
    assert_mentions(&e, &["bv/rl-episodes", "the vla-ppo-flow-sde policy succeeded in 0 of", "needs 1"]);
    // A distillation within the SFT run's warm-up (100 steps) is refused before RL runs.
    let bench = ["bench", "vla", "--sft-run", "sft", "--rl-seconds", "0.1", "--out", "bv-refused"];
    let e = fail(d, &[&bench[..], &["--distill-steps", "50"]].concat());
    assert_mentions(&e, &["--distill-steps", "50", "warmup_steps, 100"]);
    assert!(!d.join("bv-refused").exists(), "a refused bench writes nothing");

    // Flow-Noise: the learned noise head's joint log-probs, and its entropy in the metrics.
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-ppo-flow-noise", "--init", "sft"];
    args.extend(["--steps", "100", "--set", "algo.num_envs=4", "--set", "algo.group_size=2", "--set"]);
    args.extend(["algo.filter_uniform_groups=false", "--set", "eval_episodes=1", "--run-dir", "noise", "--quiet"]);
    ok(d, &args);
    let (header, rows) = metrics(&d.join("noise"));
    let entropy = header.iter().position(|h| h == "entropy").unwrap();
    assert!(rows[0][entropy].parse::<f64>().is_ok_and(|e| e.is_finite() && e != 0.0), "{rows:?}");
    ok(d, &["eval", "--run", "rl", "--episodes", "1", "--render", "vla.png", "--render-frames", "2"]);
    assert!(d.join("vla.png").exists(), "eval --render draws a VLA run's episode");
    let e = fail(d, &["train", "--task", "lang-cubes", "--algo", "vla-ppo-flow-sde", "--run-dir", "x", "--quiet"]);
    assert_mentions(&e, &["algo.init", "vla-sft"]);
    let e = fail(d, &["export", "--run", "rl", "--format", "onnx", "--out", "rl.onnx"]);
    assert_mentions(&e, &["vision-language-action", "not implemented"]);
    // A dataset of the task's default observation does not fit the VLA preset's
    // proprioception; one recorded in the preset's environment, with the camera, trains.
    ok(d, &["record", "--task", "lang-cubes", "--expert", "scripted", "--episodes", "1", "--out", "data/lc"]);
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--dataset", "data/lc", "--steps", "5"];
    args.extend(["--run-dir", "ds", "--quiet"]);
    let e = fail(d, &args);
    assert_mentions(&e, &["demonstrations", "obs_dim 71", "obs_dim 25"]);
    let mut args = vec!["record", "--task", "lang-cubes", "--episodes", "2", "--camera", "48", "--for-algo", "vla-sft"];
    args.extend(["--out", "data/vla"]);
    ok(d, &args);
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--dataset", "data/vla", "--steps", "5"];
    args.extend(["--set", "algo.updates_per_iteration=5", "--set", "algo.num_envs=1", "--set", "eval_episodes=1"]);
    args.extend(["--run-dir", "ds"]);
    ok(d, &[&args[..], &small[..]].concat());
    // A dataset holding an instruction the task holds out of training is refused, naming it.
    let mut held = embodia::dataset::read(&d.join("data/vla")).unwrap().demonstrations;
    let held_out = embodia::sim::rapier::builtin_tasks::LANG_CUBES_HELD_OUT[0];
    held.episodes[0].instruction = Some(held_out.to_string());
    embodia::dataset::write(&held, &d.join("data/held"), &Default::default()).unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| match *a {
            "data/vla" => "data/held",
            "ds" => "ds-held",
            a => a,
        })
        .collect();
    let e = fail(d, &[&args[..], &small[..]].concat());
    assert_mentions(&e, &["algo.dataset: data/held", "1 episodes", held_out, "held-out evaluation"]);

    // A policy's own episodes (`record --run`, images included) train beside the
    // demonstrations; a dataset of other observations is refused, naming it.
    let out = ok(d, &["record", "--run", "rl", "--episodes", "2", "--envs", "2", "--out", "data/own"]);
    assert!(out.stdout.contains("wrote 2 episodes"), "{}", out.stdout);
    let own = embodia::dataset::read(&d.join("data/own")).unwrap().demonstrations;
    assert_eq!(own.cameras.iter().map(|c| (c.name.as_str(), c.width)).collect::<Vec<_>>(), [("front", 48)]);
    assert!(own.episodes.iter().all(|e| e.images[0].len() == e.len() * 48 * 48 * 3 && e.instruction.is_some()));
    let distill = |dataset: &str, run: &str| {
        let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--demos", "3", "--steps", "5"];
        args.extend(["--set", "algo.updates_per_iteration=5", "--set", "algo.num_envs=1", "--set", "eval_episodes=1"]);
        let datasets = format!("algo.policy_datasets=[\"{dataset}\"]");
        args.extend(["--run-dir", run, "--set"]);
        [&args[..], &[datasets.as_str()], &small[..]].concat().iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let args = distill("data/own", "distilled");
    ok(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let args = distill("data/lc", "refused");
    let e = fail(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_mentions(&e, &["algo.policy_datasets: data/lc", "71 observation"]);
    // Or they fine-tune the policy they came from (`--init`): the run adopts its model, not
    // the preset's; an RL run is refused as the start.
    let mut args = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--init", "sft", "--steps", "5"];
    args.extend(["--demos", "3", "--set", "algo.updates_per_iteration=5", "--set", "algo.num_envs=1", "--set"]);
    args.extend(["eval_episodes=1", "--set", "algo.policy_datasets=[\"data/own\"]", "--run-dir", "tuned", "--quiet"]);
    ok(d, &args);
    let config = std::fs::read_to_string(d.join("tuned/config.toml")).unwrap();
    assert!(config.contains("backbone_width = 32") && config.contains("init = \"sft\""), "{config}");
    args[6] = "rl";
    let e = fail(d, &[&args[..args.len() - 2], &["refused-init", "--quiet"]].concat());
    assert_mentions(&e, &["must be a vla-sft run", "rl is from `vla-ppo-flow-sde`"]);
}

#[test]
fn ppo_with_device_rollouts_trains_resumes_and_refuses_tasks_without_a_tensor_version() {
    let tmp = tmp();
    let dir = tmp.path();
    let set = ["--set", "algo.device_rollouts=true", "--set", "algo.num_envs=64", "--set", "algo.steps_per_env=16"];
    let train = |extra: &[&str]| {
        let mut args = vec!["train", "--task", "quadrotor-hover", "--algo", "ppo", "--quiet"];
        args.extend(set);
        args.extend(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let args = train(&["--steps", "2048", "--set", "eval_episodes=2", "--run-dir", "dev"]);
    ok(dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let run = dir.join("dev");
    let (_, rows) = metrics(&run);
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["1024", "2048"]);
    // Every iteration updated the policy (episodes of 16 steps rarely end in the first).
    assert!(rows.iter().all(|r| r[7].parse::<f64>().is_ok_and(f64::is_finite)), "policy_loss: {rows:?}");
    assert!(fs::read_to_string(run.join("config.toml")).unwrap().contains("device_rollouts = true"));
    // Resuming continues on the device (new episodes, the learner exactly where it was).
    ok(dir, &["train", "--resume", "dev", "--steps", "4096", "--quiet"]);
    let (_, rows) = metrics(&run);
    assert_eq!(rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["1024", "2048", "3072", "4096"]);
    assert_eq!(checkpoint_steps(&run), Some(4096));
    // A task without a tensor version is refused by the field, before any run directory exists.
    let e = fail(dir, &["train", "--task", "reach", "--algo", "ppo", "--set", "algo.device_rollouts=true"]);
    assert_mentions(&e, &["algo.device_rollouts", "`reach` has no tensor version", "quadrotor-hover"]);
    assert!(!dir.join("runs").exists());
}
