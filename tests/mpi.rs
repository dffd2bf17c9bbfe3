//! Data-parallel training across MPI ranks (`embodia train --dist ddp`), on this machine's
//! loopback: `mpirun --oversubscribe -np 2` of the release binary. Built only with the `mpi`
//! feature (`required-features` in Cargo.toml); without `mpirun` on PATH every test fails
//! under CI unless `.ci/run` lists `mpirun` in `EMBODIA_NOT_RUN`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use embodia::algos::Checkpoint;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-mpi-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `mpirun` runs here; otherwise reports the test as not run (a failure under CI
/// unless `.ci/run` declared it).
fn have_mpirun() -> bool {
    if Command::new("mpirun").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    let ci = std::env::var_os("EMBODIA_CI").is_some();
    let declared = std::env::var("EMBODIA_NOT_RUN").is_ok_and(|v| v.split(',').any(|t| t == "mpirun"));
    assert!(!ci || declared, "no `mpirun` on PATH: CI expects Open MPI (.ci/run installs openmpi-bin)");
    eprintln!("SKIPPED: no `mpirun` on PATH (apt install openmpi-bin)");
    false
}

/// `mpirun -np <ranks> embodia <args>` in `dir`, not waited for.
fn spawn_mpirun(dir: &Path, ranks: usize, args: &[&str]) -> Child {
    Command::new("mpirun")
        .args(["--oversubscribe", "-np", &ranks.to_string(), env!("CARGO_BIN_EXE_embodia")])
        .args(args)
        .current_dir(dir)
        // CI runs as root, which Open MPI refuses unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        // Each test's jobs keep their session files in its own directory: two `mpirun`s
        // starting at once race to create the same default one under /tmp.
        .env("OMPI_MCA_orte_tmpdir_base", dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts")
}

fn mpirun(dir: &Path, ranks: usize, args: &[&str]) -> Output {
    spawn_mpirun(dir, ranks, args).wait_with_output().unwrap()
}

fn embodia(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what} failed: {}", stderr(out));
}

/// Every tensor of the checkpoint in `run` (parameters, optimizer moments), by name.
fn tensors(run: &Path) -> BTreeMap<String, Vec<f32>> {
    let ckpt = Checkpoint::load(&run.join("checkpoint")).unwrap();
    ckpt.tensors.into_iter().map(|(name, (_, values))| (name, values)).collect()
}

/// Largest difference between two checkpoints' tensors, relative to `1 + |a|`; they must hold
/// the same tensors.
fn largest_difference(a: &BTreeMap<String, Vec<f32>>, b: &BTreeMap<String, Vec<f32>>) -> f32 {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the checkpoints hold different tensors");
    let mut worst = 0.0f32;
    for (name, x) in a {
        let y = &b[name];
        assert_eq!(x.len(), y.len(), "`{name}` differs in size");
        for (p, q) in x.iter().zip(y) {
            worst = worst.max((p - q).abs() / (1.0 + p.abs()));
        }
    }
    worst
}

/// Runs `embodia train <args>` in `dir` on one process with `2·envs` environments (run
/// `single`) and on two ranks with `envs` each (run `ddp`); returns the largest relative
/// difference of their checkpoints' tensors.
fn one_process_vs_two_ranks(dir: &Path, args: &[&str], envs: usize) -> f32 {
    let (all, half) = (format!("algo.num_envs={}", 2 * envs), format!("algo.num_envs={envs}"));
    let mut single = args.to_vec();
    single.extend(["--set", &all, "--run-dir", "single", "--quiet"]);
    assert_ok(&embodia(dir, &single), "one process");
    let mut ddp = args.to_vec();
    ddp.extend(["--set", &half, "--run-dir", "ddp", "--quiet", "--dist", "ddp"]);
    let out = mpirun(dir, 2, &ddp);
    assert_ok(&out, "two ranks");
    assert!(stderr(&out).contains("data-parallel over 2 ranks"), "rank 0 reports its communication: {}", stderr(&out));
    largest_difference(&tensors(&dir.join("single")), &tensors(&dir.join("ddp")))
}

#[test]
fn ppo_on_two_ranks_computes_what_one_process_with_both_batches_computes() {
    if !have_mpirun() {
        return;
    }
    // Four updates of 4 mini-batches (episodes end in the second and fourth): every rank's
    // mini-batches are its rows of the one process's, so only the order of floating-point sums
    // differs. A fixed learning rate: the adaptive rule's thresholds turn a difference in the
    // last bits of one mini-batch's KL into a factor 1.5 (the rapier test below keeps it, over
    // two updates).
    let dir = temp_dir("pendulum");
    let args = ["train", "--task", "pendulum", "--algo", "ppo", "--steps", "6400", "--set", "algo.steps_per_env=100"];
    let worst = one_process_vs_two_ranks(&dir, &[&args[..], &["--set", "algo.schedule=\"fixed\""]].concat(), 8);
    assert!(worst < 1e-4, "pendulum: parameters differ by {worst} (relative)");
    // The metrics agree too: rank 0 writes every rank's episodes and losses.
    let rows = |run: &str| fs::read_to_string(dir.join(run).join("metrics.csv")).unwrap();
    let (single, ddp) = (rows("single"), rows("ddp"));
    assert_eq!(single.lines().count(), ddp.lines().count());
    let returns = |text: &str| -> Vec<f64> {
        text.lines().skip(1).filter_map(|l| l.split(',').nth(2).and_then(|v| v.parse().ok())).collect()
    };
    let (a, b) = (returns(&single), returns(&ddp));
    assert!(!a.is_empty() && a.len() == b.len(), "episode returns in both: {a:?} {b:?}");
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-3 * (1.0 + x.abs()), "return_mean {x} vs {y}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn ppo_on_two_ranks_of_rapier_reach_computes_what_one_process_computes() {
    if !have_mpirun() {
        return;
    }
    // A rapier task: each rank's worlds draw as their slice of the one process's batch.
    let dir = temp_dir("reach");
    let args = ["train", "--task", "reach", "--algo", "ppo", "--steps", "256", "--set", "algo.steps_per_env=16"];
    let worst = one_process_vs_two_ranks(&dir, &args, 4);
    assert!(worst < 1e-4, "reach: parameters differ by {worst} (relative)");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn flow_sde_on_two_ranks_computes_what_one_process_computes() {
    if !have_mpirun() {
        return;
    }
    // A flow policy cloned from 4 demonstrations, then three updates of Flow-SDE with GAE (the
    // chain's value): the rows' noise, the standardized advantages, the mini-batches and the
    // approximate KL are the whole batch's on both layouts.
    let dir = temp_dir("flow-sde");
    let sft = ["train", "--task", "reach", "--algo", "sft", "--demos", "4", "--steps", "20", "--run-dir", "sft"];
    let small = ["--set", "algo.policy.width=32", "--set", "algo.policy.hidden=[32]", "--set", "eval_episodes=1"];
    let more = ["--set", "algo.updates_per_iteration=10", "--set", "algo.num_envs=2", "--quiet"];
    assert_ok(&embodia(&dir, &[&sft[..], &small, &more].concat()), "sft");
    let args = ["train", "--task", "reach", "--algo", "ppo-flow-sde", "--init", "sft", "--steps", "2400"];
    let gae = ["--set", "algo.advantage=\"gae\"", "--set", "algo.chunk_steps=25", "--set", "eval_episodes=2"];
    let worst = one_process_vs_two_ranks(&dir, &[&args[..], &gae].concat(), 4);
    assert!(worst < 1e-4, "flow-sde: parameters differ by {worst} (relative)");
    let _ = fs::remove_dir_all(&dir);
}

/// The pid of rank `rank` of an `embodia train` whose command line names `run_dir`.
fn rank_pid(run_dir: &str, rank: usize) -> Option<u32> {
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = fs::read(entry.path().join("environ")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        let environ = String::from_utf8_lossy(&environ);
        if cmdline.contains("embodia")
            && cmdline.split('\0').any(|arg| arg == run_dir)
            && !cmdline.starts_with("mpirun")
            && environ.split('\0').any(|v| v == format!("OMPI_COMM_WORLD_RANK={rank}"))
        {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_killed_rank_ends_the_job_and_resume_continues_exactly() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir("kill");
    let args = |run: &'static str| {
        [
            "train",
            "--task",
            "pendulum",
            "--algo",
            "ppo",
            "--steps",
            "200000",
            "--set",
            "algo.num_envs=8",
            "--set",
            "checkpoint_every=1",
            "--quiet",
            "--run-dir",
            run,
            "--dist",
            "ddp",
        ]
    };
    // The uninterrupted reference.
    assert_ok(&mpirun(&dir, 2, &args("whole")), "uninterrupted run");

    let mut job = spawn_mpirun(&dir, 2, &args("ddp-killed"));
    let metrics = dir.join("ddp-killed").join("metrics.csv");
    let start = Instant::now();
    while fs::read_to_string(&metrics).map_or(0, |t| t.lines().count()) < 20 {
        assert!(start.elapsed() < Duration::from_secs(120), "the run did not start");
        assert!(job.try_wait().unwrap().is_none(), "the run ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rank_pid("ddp-killed", 1).expect("rank 1 is running");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let out = job.wait_with_output().unwrap();
    assert!(!out.status.success(), "the job must fail when a rank dies");
    assert!(rank_pid("ddp-killed", 0).is_none(), "rank 0 must not outlive rank 1");

    // Resumed on as many ranks, it ends where the uninterrupted run did, exactly.
    let resume = ["train", "--resume", "ddp-killed", "--quiet", "--dist", "ddp"];
    assert_ok(&mpirun(&dir, 2, &resume), "resumed run");
    let worst = largest_difference(&tensors(&dir.join("whole")), &tensors(&dir.join("ddp-killed")));
    assert_eq!(worst, 0.0, "the resumed run's parameters differ from the uninterrupted run's");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn dist_errors_name_the_launch_the_world_size_and_what_each_mode_takes() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir("errors");
    // Outside a launcher.
    let out = embodia(&dir, &["train", "--task", "pendulum", "--algo", "ppo", "--steps", "2048", "--dist", "ddp"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("mpirun -np 2"), "says how to launch: {}", stderr(&out));
    // An algorithm that does not train data-parallel: every rank fails, naming those that do.
    let out = mpirun(&dir, 2, &["train", "--task", "pendulum", "--algo", "sac", "--steps", "2048", "--dist", "ddp"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("algorithms that do with their defaults: ppo"), "{}", stderr(&out));
    // Rollout ranks step host environments of one batch only.
    let args = ["train", "--task", "pendulum", "--algo", "ppo", "--set", "algo.env_groups=2", "--dist", "actors"];
    let out = mpirun(&dir, 2, &args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("algo.env_groups = 1"), "{}", stderr(&out));
    // A run trained on two ranks resumes on two only.
    let train = ["train", "--task", "pendulum", "--algo", "ppo", "--steps", "1024", "--set", "algo.num_envs=8"];
    let mut args = train.to_vec();
    args.extend(["--run-dir", "two", "--quiet", "--dist", "ddp"]);
    assert_ok(&mpirun(&dir, 2, &args), "two-rank run");
    let out = mpirun(&dir, 3, &["train", "--resume", "two", "--steps", "4096", "--dist", "ddp"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("with 2 rank(s) and this job has 3"), "{}", stderr(&out));
    let out = embodia(&dir, &["train", "--resume", "two", "--steps", "4096"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("with 2 rank(s) and this job has 1"), "{}", stderr(&out));
    // The run itself evaluates and exports as any other.
    assert_ok(&embodia(&dir, &["eval", "--run", "two", "--episodes", "4"]), "eval of a two-rank run");
    let _ = fs::remove_dir_all(&dir);
}

/// `embodia train <args>` alone and `mpirun -np 3 embodia train <args with half the
/// environments> --dist actors` (rank 0 learns, ranks 1 and 2 step half the batch each) in
/// `dir`, runs `single` and `actors`.
fn alone_and_with_two_rollout_ranks(dir: &Path, args: &[&str], envs: usize) {
    let (all, half) = (format!("algo.num_envs={envs}"), format!("algo.num_envs={}", envs / 2));
    let mut single = args.to_vec();
    single.extend(["--set", &all, "--run-dir", "single", "--quiet"]);
    assert_ok(&embodia(dir, &single), "one process");
    let mut actors = args.to_vec();
    actors.extend(["--set", &half, "--run-dir", "actors", "--quiet", "--dist", "actors"]);
    let out = mpirun(dir, 3, &actors);
    assert_ok(&out, "rank 0 with two rollout ranks");
    assert!(stderr(&out).contains("2 rollout ranks"), "rank 0 reports its messages: {}", stderr(&out));
}

#[test]
fn rollout_ranks_collect_exactly_what_one_process_collects() {
    if !have_mpirun() {
        return;
    }
    // The learner sees the same batch, step for step: every tensor, metric and evaluation is
    // bit-identical (PPO on pendulum and on rapier's reach, SAC on pendulum, flow GRPO on reach).
    let cases: [(&str, &[&str], usize); 3] = [
        (
            "ppo-pendulum",
            &["train", "--task", "pendulum", "--algo", "ppo", "--steps", "6400", "--set", "algo.steps_per_env=100"],
            16,
        ),
        (
            "ppo-reach",
            &["train", "--task", "reach", "--algo", "ppo", "--steps", "256", "--set", "algo.steps_per_env=16"],
            8,
        ),
        ("sac-pendulum", &["train", "--task", "pendulum", "--algo", "sac", "--steps", "1500"], 4),
    ];
    for (name, args, envs) in cases {
        let dir = temp_dir(&format!("actors-{name}"));
        alone_and_with_two_rollout_ranks(&dir, args, envs);
        let worst = largest_difference(&tensors(&dir.join("single")), &tensors(&dir.join("actors")));
        assert_eq!(worst, 0.0, "{name}: parameters differ");
        let columns = |run: &str| -> Vec<String> {
            let text = fs::read_to_string(dir.join(run).join("metrics.csv")).unwrap();
            // Everything but wall_seconds and fps, which are timings.
            text.lines()
                .map(|l| l.split(',').enumerate().filter(|(k, _)| *k != 1 && *k != 13).map(|(_, v)| v).collect())
                .collect()
        };
        assert_eq!(columns("single"), columns("actors"), "{name}: metrics differ");
        let eval = |run: &str| fs::read_to_string(dir.join(run).join("eval.json")).unwrap();
        assert_eq!(eval("single"), eval("actors"), "{name}: evaluations differ");
        let _ = fs::remove_dir_all(&dir);
    }
    // Flow RL's recipe: GRPO, whose groups start from shared states (the environments'
    // snapshot and restore go through the rollout ranks), on a flow policy cloned from 4 demos.
    let dir = temp_dir("actors-grpo");
    let sft = ["train", "--task", "reach", "--algo", "sft", "--demos", "4", "--steps", "20", "--run-dir", "sft"];
    let small = ["--set", "algo.policy.width=32", "--set", "algo.policy.hidden=[32]", "--set", "eval_episodes=1"];
    let more = ["--set", "algo.updates_per_iteration=10", "--set", "algo.num_envs=2", "--quiet"];
    assert_ok(&embodia(&dir, &[&sft[..], &small, &more].concat()), "sft");
    let grpo = ["train", "--task", "reach", "--algo", "ppo-flow-sde", "--init", "sft", "--steps", "3000"];
    let set = ["--set", "algo.advantage=\"grpo\"", "--set", "algo.group_size=4", "--set", "eval_episodes=2"];
    alone_and_with_two_rollout_ranks(&dir, &[&grpo[..], &set].concat(), 8);
    let worst = largest_difference(&tensors(&dir.join("single")), &tensors(&dir.join("actors")));
    assert_eq!(worst, 0.0, "flow GRPO: parameters differ");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_rollout_run_resumes_exactly_on_as_many_ranks_and_a_dead_rollout_rank_ends_the_job() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir("actors-resume");
    let args = |run: &'static str, steps: &'static str| {
        ["train", "--task", "pendulum", "--algo", "ppo", "--steps", steps, "--set", "algo.num_envs=8"]
            .into_iter()
            .chain(["--set", "algo.steps_per_env=100", "--quiet", "--run-dir", run, "--dist", "actors"])
            .collect::<Vec<_>>()
    };
    assert_ok(&mpirun(&dir, 3, &args("whole", "9600")), "uninterrupted run");
    assert_ok(&mpirun(&dir, 3, &args("resumed", "4800")), "first part");
    let out = mpirun(&dir, 2, &["train", "--resume", "resumed", "--steps", "9600", "--dist", "actors"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("2 rollout rank(s)"), "names the number: {}", stderr(&out));
    let resume = ["train", "--resume", "resumed", "--steps", "9600", "--quiet", "--dist", "actors"];
    assert_ok(&mpirun(&dir, 3, &resume), "resumed run");
    let worst = largest_difference(&tensors(&dir.join("whole")), &tensors(&dir.join("resumed")));
    assert_eq!(worst, 0.0, "the resumed run differs from the uninterrupted one");

    // A rollout rank that dies ends the job with a failure, rank 0 included.
    let mut job = spawn_mpirun(&dir, 3, &args("rollout-killed", "2000000"));
    let metrics = dir.join("rollout-killed").join("metrics.csv");
    let start = Instant::now();
    while fs::read_to_string(&metrics).map_or(0, |t| t.lines().count()) < 3 {
        assert!(start.elapsed() < Duration::from_secs(120), "the run did not start");
        assert!(job.try_wait().unwrap().is_none(), "the run ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rank_pid("rollout-killed", 2).expect("rank 2 is running");
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let out = job.wait_with_output().unwrap();
    assert!(!out.status.success(), "the job must fail when a rollout rank dies");
    assert!(rank_pid("rollout-killed", 0).is_none(), "rank 0 must not outlive its rollout ranks");
    let _ = fs::remove_dir_all(&dir);
}
