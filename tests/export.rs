//! `embodia export` (issue 7): each exported format maps 1,000 random raw observations to the
//! raw actions `embodia eval` takes (the learner's deterministic `act`) within 1e-5, relative to
//! max(1, |action|). The C export is compiled with the host `cc`, the no_std Rust module with
//! `rustc` as a `#![no_std]` library driven by a std binary. ONNX: `embodia run-onnx` here when
//! the `tract` feature is on; deploy/tests/onnx_runtime.rs (tract, ort) and bench/onnx_check.sh
//! (Python onnxruntime) check the model against the reference forward and `embodia act`.
//!
//! Run with `cargo test --release --test export`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use embodia::algorithms::AlgoConfig;
use embodia::algos::{ConsistencyLoss, DistillMethod, PpoConfig, SacConfig, SftConfig};
use embodia::config::TrainConfig;
use embodia::deploy::export::{Format, PolicySpec, write_export};
use embodia::distill::{DistillRequest, distill_config};
use embodia::export::{ExportRunError, policy_of_run};
use embodia::policies::Activation;
use embodia::policies::FlowPolicyConfig;
use embodia::run::{Run, load_learner};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SAMPLES: usize = 1000;
const TOLERANCE: f32 = 1e-5;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-export-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(algorithm: &str, algo: AlgoConfig, total_steps: u64) -> TrainConfig {
    TrainConfig {
        task: "pendulum".into(),
        algorithm: algorithm.into(),
        seed: 3,
        total_steps,
        eval_episodes: 1,
        checkpoint_every: 100,
        algo,
        env: None,
    }
}

fn ppo(activation: Activation, normalize_obs: bool) -> TrainConfig {
    let algo = PpoConfig {
        num_envs: 4,
        steps_per_env: 32,
        mini_batches: 2,
        epochs: 2,
        hidden: vec![32, 24],
        activation,
        normalize_obs,
        ..PpoConfig::default()
    };
    config("ppo", AlgoConfig::new(algo), 256)
}

fn sac() -> TrainConfig {
    let algo = SacConfig {
        num_envs: 1,
        batch_size: 32,
        buffer_size: 1000,
        learning_starts: 50,
        steps_per_iteration: 100,
        hidden: vec![32, 32],
        ..SacConfig::default()
    };
    config("sac", AlgoConfig::new(algo), 200)
}

/// A run trained for its (tiny) budget in `dir`, so weights and normalizer are not at init.
fn trained(dir: &Path, config: TrainConfig) -> PathBuf {
    let run_dir = dir.join("run");
    let mut run = Run::create(&run_dir, config).unwrap();
    run.train(&mut []).unwrap();
    run_dir
}

/// Random raw observations `[SAMPLES, obs_dim]`, and the action chunks `embodia eval` takes
/// for them. PPO and SAC: wide enough that the normalizer's clip bites. A distilled student
/// standardizes without a clip, so its observations stay within ±3 standard deviations of the
/// normalizer's mean: far outside, `(x − mean)/std` with `std` floored at 0.01 reaches 10³ and
/// float rounding of any summation order exceeds the tolerance.
fn reference(run: &Path) -> (Vec<f32>, Vec<f32>) {
    let (_, learner) = load_learner(run).unwrap();
    let spec = policy_of_run(run).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let obs: Vec<f32> = match &spec.normalizer {
        Some(n) if n.clip == f32::MAX => (0..SAMPLES * spec.obs_dim)
            .map(|i| n.mean[i % spec.obs_dim] + n.std[i % spec.obs_dim] * rng.random_range(-3.0..3.0))
            .collect(),
        _ => (0..SAMPLES * spec.obs_dim).map(|_| rng.random_range(-10.0..10.0)).collect(),
    };
    let mut actions = vec![0.0; SAMPLES * spec.output_dim()];
    learner.act(&obs, &mut actions, None).unwrap();
    (obs, actions)
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    let spread = want.iter().fold(0f32, |m, a| m.max(a.abs()));
    assert!(spread > 1e-3, "{what}: the reference actions are all ~0, the comparison would be weak");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= TOLERANCE * w.abs().max(1.0), "{what}: action {i}: {g} vs embodia's {w}");
    }
}

fn reference_forward(spec: &PolicySpec, obs: &[f32]) -> Vec<f32> {
    let mut scratch = vec![0.0; 2 * spec.max_width()];
    let mut out = vec![0.0; obs.len() / spec.obs_dim * spec.output_dim()];
    for (o, a) in obs.chunks(spec.obs_dim).zip(out.chunks_mut(spec.output_dim())) {
        spec.forward(o, a, &mut scratch);
    }
    out
}

fn as_text(values: &[f32]) -> String {
    values.iter().fold(String::new(), |mut s, v| {
        let _ = writeln!(s, "{v:?}");
        s
    })
}

fn run_driver(exe: &Path, obs: &[f32]) -> Vec<f32> {
    let mut child = Command::new(exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    // Fed from a thread: a driver that answers as it reads fills the stdout pipe before all
    // observations are written when the outputs are wide (action chunks).
    let mut stdin = child.stdin.take().unwrap();
    let input = as_text(obs);
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success(), "{} failed", exe.display());
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect()
}

/// Reports a test skipped because `tool` is missing. Under CI (`EMBODIA_CI` set) that is a
/// failure, unless `.ci/run` listed the tool in `EMBODIA_NOT_RUN` (it then prints NOT RUN).
fn skipped(tool: &str, message: &str) {
    let ci = std::env::var_os("EMBODIA_CI").is_some();
    let declared = std::env::var("EMBODIA_NOT_RUN").is_ok_and(|v| v.split(',').any(|t| t == tool));
    assert!(!ci || declared, "{message}: CI expects `{tool}` (.ci/run installs it, or lists it in EMBODIA_NOT_RUN)");
    eprintln!("SKIPPED {message}");
}

fn check_c(dir: &Path, spec: &PolicySpec, obs: &[f32], want: &[f32]) {
    if Command::new("cc").arg("--version").output().is_err() {
        skipped("cc", "C export check: no C compiler `cc` on PATH");
        return;
    }
    let out = dir.join("c");
    write_export(spec, Format::C, &out).unwrap();
    fs::write(
        out.join("main.c"),
        format!(
            "#include <stdio.h>\n#include \"embodia_policy.h\"\n\
             int main(void) {{ float o[EMBODIA_POLICY_OBS_DIM], a[EMBODIA_POLICY_CHUNK * EMBODIA_POLICY_ACTION_DIM]; int n, j;\n\
             for (n = 0; n < {SAMPLES}; ++n) {{\n\
             for (j = 0; j < EMBODIA_POLICY_OBS_DIM; ++j) if (scanf(\"%f\", &o[j]) != 1) return 1;\n\
             embodia_policy_forward(o, a);\n\
             for (j = 0; j < EMBODIA_POLICY_CHUNK * EMBODIA_POLICY_ACTION_DIM; ++j) printf(\"%.9g\\n\", a[j]); }}\n\
             return 0; }}\n"
        ),
    )
    .unwrap();
    let exe = out.join("policy");
    let status = Command::new("cc")
        .args(["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", "-o"])
        .arg(&exe)
        .arg(out.join("main.c"))
        .arg(out.join("embodia_policy.c"))
        .arg("-lm")
        .status()
        .unwrap();
    assert!(status.success(), "cc failed on the exported C");
    assert_close("C export", &run_driver(&exe, obs), want);
}

fn check_rust(dir: &Path, spec: &PolicySpec, obs: &[f32], want: &[f32]) {
    let out = dir.join("rust");
    write_export(spec, Format::Rust, &out).unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    fs::write(out.join("lib.rs"), "#![no_std]\n#![deny(warnings)]\npub mod embodia_policy;\n").unwrap();
    let lib = Command::new(&rustc)
        .args(["--edition", "2021", "--crate-type", "rlib", "--crate-name", "policy", "-O", "--out-dir"])
        .arg(&out)
        .arg(out.join("lib.rs"))
        .status()
        .unwrap();
    assert!(lib.success(), "rustc failed on the exported no_std module");
    fs::write(
        out.join("main.rs"),
        "use policy::embodia_policy::{forward, ACTION_DIM, CHUNK, OBS_DIM};\n\
         fn main() {\n\
         let mut text = String::new();\n\
         std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).unwrap();\n\
         let v: Vec<f32> = text.split_whitespace().map(|t| t.parse().unwrap()).collect();\n\
         for o in v.chunks(OBS_DIM) {\n\
         let mut a = [0.0f32; CHUNK * ACTION_DIM];\n\
         forward(o.try_into().unwrap(), &mut a);\n\
         for x in a { println!(\"{x:?}\"); } } }\n",
    )
    .unwrap();
    let exe = out.join("driver");
    let bin = Command::new(&rustc)
        .args(["--edition", "2021", "-O", "-L"])
        .arg(&out)
        .arg("--extern")
        .arg(format!("policy={}", out.join("libpolicy.rlib").display()))
        .arg("-o")
        .arg(&exe)
        .arg(out.join("main.rs"))
        .status()
        .unwrap();
    assert!(bin.success(), "rustc failed on the driver");
    assert_close("no_std Rust export", &run_driver(&exe, obs), want);
}

fn check_all_formats(name: &str, config: TrainConfig) {
    let dir = scratch_dir(name);
    let run = trained(&dir, config);
    check_run_formats(&dir, &run);
    fs::remove_dir_all(&dir).unwrap();
}

fn check_run_formats(dir: &Path, run: &Path) {
    let spec = policy_of_run(run).unwrap();
    let (obs, want) = reference(run);
    assert_close("reference forward", &reference_forward(&spec, &obs), &want);
    check_c(dir, &spec, &obs, &want);
    check_rust(dir, &spec, &obs, &want);
}

/// A small SFT run on reach (a flow teacher, K = 3) in `dir/sft`.
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
        env: embodia::sim::task_config("reach"),
        ..config("sft", AlgoConfig::new(algo), 40)
    };
    let run_dir = dir.join("sft");
    Run::create(&run_dir, config).unwrap().train(&mut []).unwrap();
    run_dir
}

/// A student distilled from `teacher` with `method` for a few gradient steps, in `dir/NAME`.
fn distilled(dir: &Path, teacher: &Path, method: DistillMethod, name: &str, extra: &[&str]) -> PathBuf {
    let overrides = [
        "algo.num_envs=2",
        "algo.chunk_steps=5",
        "algo.batch_size=32",
        "algo.updates_per_iteration=20",
        "algo.warmup_steps=5",
        "algo.student.hidden=[32, 24]",
    ];
    let req = DistillRequest {
        teacher: teacher.to_path_buf(),
        method,
        loss: ConsistencyLoss::SameNoise,
        seed: 2,
        steps: Some(40),
        overrides: overrides.iter().chain(extra).map(|s| s.to_string()).collect(),
    };
    let run_dir = dir.join(name);
    Run::create(&run_dir, distill_config(&req).unwrap()).unwrap().train(&mut []).unwrap();
    run_dir
}

#[test]
fn distilled_students_export_exactly_with_their_chunk_layout() {
    let dir = scratch_dir("distill");
    let teacher = flow_teacher(&dir);
    // The multi-step teacher itself is refused, with the command that distills it.
    let err = embodia::export::export_run(&teacher, Format::C, &dir.join("teacher-c")).unwrap_err();
    assert!(matches!(err, ExportRunError::NotExportable { .. }), "{err}");
    assert!(err.to_string().contains(&format!("embodia distill --run {}", teacher.display())), "{err}");
    assert!(!dir.join("teacher-c").exists());
    // The default consistency student copies the teacher's denoiser (RL-100): its encoder,
    // trunk and output layer fold into one MLP. The others are MLPs.
    for (method, name, extra) in [
        (DistillMethod::Consistency, "copy", &[][..]),
        (DistillMethod::Consistency, "consistency", &["algo.copy_teacher=false"]),
        (DistillMethod::MeanFlow, "meanflow", &[]),
    ] {
        let student = distilled(&dir, &teacher, method, name, extra);
        let spec = policy_of_run(&student).unwrap();
        assert_eq!((spec.chunk, spec.action_dim), (4, 6), "{name}: reach's chunk layout");
        // SFT predicts joint targets relative to the present joint positions: the export adds
        // the observed state back, and the checks below compare it with the learner's actions.
        assert_eq!(spec.state_offsets.iter().flatten().count(), 6, "{name}: relative joint actions");
        let sub = dir.join(format!("{name}-out"));
        fs::create_dir_all(&sub).unwrap();
        check_run_formats(&sub, &student);
        let header = fs::read_to_string(sub.join("c").join("embodia_policy.h")).unwrap();
        assert!(header.contains("#define EMBODIA_POLICY_CHUNK 4"), "{header}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ppo_elu_with_normalizer_exports_exactly() {
    check_all_formats("ppo-elu", ppo(Activation::Elu, true));
}

#[test]
fn ppo_tanh_without_normalizer_exports_exactly() {
    check_all_formats("ppo-tanh", ppo(Activation::Tanh, false));
}

#[test]
fn sac_squashed_relu_exports_exactly() {
    check_all_formats("sac", sac());
}

#[test]
fn flow_runs_corrupt_runs_and_full_outputs_are_refused_without_leftovers() {
    let dir = scratch_dir("bad");
    // A flow-policy run: refused before its checkpoint is read, pointing at distillation.
    let flow = dir.join("flow");
    fs::create_dir_all(&flow).unwrap();
    let sft = config("sft", AlgoConfig::new(SftConfig::default()), 100);
    fs::write(flow.join("config.toml"), sft.to_toml()).unwrap();
    let err = policy_of_run(&flow).unwrap_err();
    assert!(matches!(err, ExportRunError::NotExportable { .. }), "{err}");
    assert!(err.to_string().contains("embodia distill --run"), "{err}");

    // A run whose tensors file is truncated: reported as corrupt, nothing written.
    let run = trained(&dir, ppo(Activation::Elu, true));
    let tensors = run.join("checkpoint").join(embodia::algos::TENSORS_FILE);
    let bytes = fs::read(&tensors).unwrap();
    fs::write(&tensors, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.join("out");
    let err = embodia::export::export_run(&run, Format::C, &out).unwrap_err();
    assert!(matches!(err, ExportRunError::Corrupt { .. }), "{err}");
    assert!(!out.exists());

    // A non-empty output directory is not overwritten.
    fs::write(&tensors, &bytes).unwrap();
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("keep.txt"), "mine").unwrap();
    let err = embodia::export::export_run(&run, Format::Rust, &out).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(fs::read_dir(&out).unwrap().count(), 1);
    // ONNX goes through the same temporary directory: refused into the non-empty directory.
    let err = embodia::export::export_run(&run, Format::Onnx, &out).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(fs::read_dir(&out).unwrap().count(), 1);
    // Nothing temporary is left beside the outputs.
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_exports_every_format_and_reports_bad_runs() {
    let dir = scratch_dir("cli");
    let run = trained(&dir, ppo(Activation::Elu, true));
    let embodia = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).output().unwrap();
    let formats = [
        ("c", vec!["embodia_policy.c", "embodia_policy.h"]),
        ("rust", vec!["embodia_policy.rs"]),
        ("onnx", vec!["model.onnx"]),
    ];
    for (format, files) in formats {
        let out = dir.join(format);
        let o =
            embodia(&["export", "--run", run.to_str().unwrap(), "--format", format, "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut written: Vec<String> =
            fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        written.sort();
        assert_eq!(written, files);
        assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), files.len(), "prints the files written");
    }
    let missing = dir.join("no-such-run");
    let o = embodia(&["export", "--run", missing.to_str().unwrap(), "--format", "c", "--out", "x"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a run directory"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_mcu_measures_a_trained_run_on_the_emulated_cortex_m4f() {
    if let Err(e) = embodia::deploy::mcu::Toolchain::find() {
        skipped("cortex-m", &format!("bench_mcu_measures_a_trained_run_on_the_emulated_cortex_m4f: {e}"));
        return;
    }
    let dir = scratch_dir("bench-mcu");
    let run = trained(&dir, ppo(Activation::Tanh, true));
    let o = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["bench", "mcu", "--json", "--run", run.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json = stdout.lines().find(|l| l.starts_with('[')).expect("a JSON line");
    let figures: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
    // The three default cases, then the run: PPO's 3-32-24-1 tanh network on pendulum.
    assert_eq!(figures.len(), 4, "{stdout}");
    let f = &figures[3];
    assert_eq!(f["shape"], "3-32-24-1 tanh");
    assert!(f["max_relative_error"].as_f64().unwrap() <= 1e-5, "{f}");
    let macs = (3 * 32 + 32 * 24 + 24) as f64;
    assert_eq!(f["macs"].as_f64().unwrap(), macs);
    let median = f["instructions"][1].as_f64().unwrap();
    assert!(median > 2.0 * macs && median < 40.0 * macs, "{f}");
    // Every instruction takes at least one cycle; tanhf's divisions and the branches take more.
    let cycles = f["cycles"].as_f64().unwrap();
    assert!(cycles > median && cycles < 2.0 * median, "{f}");
    let weights = 4.0 * (macs + 32.0 + 24.0 + 1.0);
    assert!(f["policy_flash"].as_f64().unwrap() > weights, "{f}");
    fs::remove_dir_all(&dir).unwrap();
}

/// `embodia act` prints the learner's deterministic actions; `embodia run-onnx` runs the exported
/// model.onnx on the same observations: equal within 1e-5 with tract compiled in, a clear
/// error without it. Bad observation lines are reported with file and line.
#[test]
fn cli_act_and_run_onnx_agree() {
    let dir = scratch_dir("act");
    let run = trained(&dir, ppo(Activation::Elu, true));
    let (obs, want) = reference(&run);
    let obs_dim = policy_of_run(&run).unwrap().obs_dim;
    let obs_file = dir.join("obs.csv");
    let rows: Vec<String> =
        obs.chunks(obs_dim).map(|o| o.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ")).collect();
    fs::write(&obs_file, format!("# raw observations\n{}\n", rows.join("\n"))).unwrap();
    let embodia = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_embodia")).args(args).output().unwrap();
    let parse = |out: &[u8]| -> Vec<f32> {
        String::from_utf8_lossy(out)
            .lines()
            .flat_map(|l| l.split(',').map(|t| t.parse::<f32>().unwrap()).collect::<Vec<_>>())
            .collect()
    };
    let o = embodia(&["act", "--run", run.to_str().unwrap(), "--obs", obs_file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_close("embodia act", &parse(&o.stdout), &want);

    let out = dir.join("onnx");
    write_export(&policy_of_run(&run).unwrap(), Format::Onnx, &out).unwrap();
    let model = out.join("model.onnx");
    let o = embodia(&["run-onnx", "--model", model.to_str().unwrap(), "--obs", obs_file.to_str().unwrap()]);
    if cfg!(feature = "tract") {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_close("embodia run-onnx (tract)", &parse(&o.stdout), &want);
    } else {
        assert!(!o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--features tract"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    let bad = dir.join("bad.csv");
    fs::write(&bad, format!("{}\n1.0, two, 3.0\n", rows[0])).unwrap();
    let o = embodia(&["act", "--run", run.to_str().unwrap(), "--obs", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("bad.csv line 2") && stderr.contains("`two`"), "{stderr}");
    // NaN, and values beyond f32's range, are refused by line and token, not acted on.
    for token in ["NaN", "1e39"] {
        let row: Vec<&str> = std::iter::once(token).chain(std::iter::repeat_n("0.5", obs_dim - 1)).collect();
        fs::write(&bad, format!("{}\n{}\n", rows[0], row.join(","))).unwrap();
        let o = embodia(&["act", "--run", run.to_str().unwrap(), "--obs", bad.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "act accepted {token}");
        assert!(stderr.contains("bad.csv line 2") && stderr.contains(&format!("`{token}`")), "{stderr}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// The student trained alongside flow RL (`--distill-during-rl`, `<run>/student/`) exports
/// exactly like a distill run; the RL run itself is refused and pointed to it.
#[test]
fn student_trained_alongside_flow_rl_exports_exactly() {
    use embodia::algos::{DistillAlongsideConfig, PpoFlowConfig};
    let dir = scratch_dir("alongside");
    let teacher = flow_teacher(&dir);
    let algo = PpoFlowConfig {
        init: teacher.to_str().unwrap().into(),
        num_envs: 2,
        chunk_steps: 5,
        mini_batches: 2,
        critic_hidden: vec![16],
        distill_during_rl: Some(DistillAlongsideConfig {
            updates_per_iteration: 10,
            batch_size: 16,
            warmup_steps: 2,
            hidden: vec![32, 24],
            ..Default::default()
        }),
        ..Default::default()
    };
    let config = TrainConfig {
        task: "reach".into(),
        env: embodia::sim::task_config("reach"),
        ..config("ppo-flow-sde", AlgoConfig::new(algo), 80)
    };
    let rl = dir.join("rl");
    Run::create(&rl, config).unwrap().train(&mut []).unwrap();
    let err = embodia::export::export_run(&rl, Format::C, &dir.join("rl-c")).unwrap_err();
    assert!(err.to_string().contains(&rl.join("student").display().to_string()), "{err}");
    let student = rl.join("student");
    let spec = policy_of_run(&student).unwrap();
    assert_eq!((spec.chunk, spec.action_dim), (4, 6), "reach's chunk layout");
    let sub = dir.join("student-out");
    fs::create_dir_all(&sub).unwrap();
    check_run_formats(&sub, &student);
    fs::remove_dir_all(&dir).unwrap();
}
