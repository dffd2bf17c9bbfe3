//! The GPU path against the CPU. Built only with `--features gpu` (`required-features` in
//! Cargo.toml) and run on whatever device wgpu offers: Mesa's lavapipe (a Vulkan device on the
//! CPU) in CI, a real GPU elsewhere. A missing device fails every test with the reason, it is
//! never skipped.
//!
//! Tolerances: the GPU runs the same f32 arithmetic in a different order (matmul tiling,
//! reductions, its own `sin`/`exp`), so results differ from the CPU's by a few ulps per op.
//! Each check states how far such differences may grow in what it compares.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use burn::tensor::Device;
use embodia::config::{ConfigSources, TrainConfig, resolve};
use embodia::device::{gpu_probe, named_device};
use embodia::run::build_learner;
use embodia::sim::classic::Quadrotor;
use embodia::sim::classic::quadrotor_tasks::ObservationNoise;
use embodia::sim::tensor::{
    BatchCartPole, BatchOutcome, BatchPendulum, BatchQuadrotor, BatchTask, CartPoleMode, Col, TensorEnv,
};
use embodia::sim::{ObsSpec, VecEnv};

/// Tests draw from burn's process-wide CPU generator (initial states, seeded initialization);
/// one at a time, so the draws of two tests cannot interleave.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn gpu() -> Device {
    named_device("gpu").unwrap_or_else(|e| panic!("the GPU tests need a GPU: {e}"))
}

#[test]
fn gpu_probe_kernels_match_the_host_arithmetic() {
    let device = gpu();
    gpu_probe(&device).expect("probe on the GPU");
    gpu_probe(&Device::flex()).expect("probe on the CPU");
}

// ---------------------------------------------------------------------------------------------
// Tensor environments

/// A batched task whose initial states (and auto-reset states) are drawn on the CPU and moved
/// to the environment's device, so a CPU and a GPU batch receive the same draws: the k-th draw
/// of any `CpuDrawn` seeds the CPU generator with k first. Everything else (dynamics,
/// observations, rewards, terminations, the masked auto-reset) runs on the environment's
/// device: that is what the comparison tests.
struct CpuDrawn<T> {
    task: T,
    draws: std::sync::atomic::AtomicU64,
}

impl<T> CpuDrawn<T> {
    fn new(task: T) -> Self {
        Self { task, draws: 0.into() }
    }
}

impl<T: BatchTask> BatchTask for CpuDrawn<T> {
    fn info(&self) -> &'static embodia::sim::TaskInfo {
        self.task.info()
    }
    fn obs_spec(&self) -> ObsSpec {
        self.task.obs_spec()
    }
    fn action_spec(&self) -> embodia::sim::ActionSpec {
        self.task.action_spec()
    }
    fn state_dim(&self) -> usize {
        self.task.state_dim()
    }
    fn sample_initial(&self, num_envs: usize, device: &Device) -> Vec<Col> {
        let cpu = Device::flex();
        cpu.seed(self.draws.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.task.sample_initial(num_envs, &cpu).into_iter().map(|c| c.to_device(device)).collect()
    }
    fn observe(&self, state: &[Col], elapsed: &Col) -> Vec<Col> {
        self.task.observe(state, elapsed)
    }
    fn step(&self, state: Vec<Col>, actions: Vec<Col>, elapsed: &Col) -> BatchOutcome {
        self.task.step(state, actions, elapsed)
    }
}

/// What a 1,000-step comparison found.
#[derive(Debug)]
struct TensorParity {
    /// Environment-steps compared (observation and reward of one environment after one step).
    compared: usize,
    /// Of those, how many differ by more than 1e-3 relative to max(1, |cpu value|).
    apart: usize,
    /// Median of the largest relative difference per compared environment-step.
    median_error: f32,
    /// Environments whose episode ended on one device and not on the other (a termination
    /// threshold crossed by a tiny difference): their resets fall out of step, so they are
    /// compared no further.
    split: usize,
    /// Episodes that ended on both devices at the same step.
    episodes: usize,
}

/// Steps `num_envs` environments of `task` on the CPU (flex) and on the GPU for `steps` steps
/// with the same open-loop actions (a smooth function of step and environment index that
/// sweeps each action's range), and compares every step's results.
fn tensor_parity(name: &str, num_envs: usize, steps: usize) -> TensorParity {
    let env_on = |device: &Device| -> Box<dyn VecEnv> {
        // Observation noise is drawn inside `observe` from the environment's own device: off
        // here, so both devices observe the same clean state.
        let quiet = |mut task: Quadrotor| {
            task.noise = ObservationNoise { position: 0.0, orientation: 0.0, velocity: 0.0, angular_velocity: 0.0 };
            BatchQuadrotor(task)
        };
        match name {
            "pendulum" => Box::new(TensorEnv::new(CpuDrawn::new(BatchPendulum::default()), num_envs, device).unwrap()),
            "cartpole-balance" => Box::new(
                TensorEnv::new(CpuDrawn::new(BatchCartPole::new(CartPoleMode::Balance)), num_envs, device).unwrap(),
            ),
            "cartpole-swingup" => Box::new(
                TensorEnv::new(CpuDrawn::new(BatchCartPole::new(CartPoleMode::SwingUp)), num_envs, device).unwrap(),
            ),
            "quadrotor-hover" => {
                Box::new(TensorEnv::new(CpuDrawn::new(quiet(Quadrotor::hover())), num_envs, device).unwrap())
            }
            "quadrotor-track" => {
                Box::new(TensorEnv::new(CpuDrawn::new(quiet(Quadrotor::track())), num_envs, device).unwrap())
            }
            other => panic!("no tensor task {other}"),
        }
    };
    let (mut cpu, mut gpu) = (env_on(&Device::flex()), env_on(&gpu()));
    let ad = cpu.action_spec().bounds.dim();
    let (low, high) = (cpu.action_spec().bounds.low.clone(), cpu.action_spec().bounds.high.clone());
    let mut actions = vec![0.0f32; num_envs * ad];
    let mut split = vec![false; num_envs];
    let (mut errors, mut episodes) = (Vec::with_capacity(num_envs * steps), 0);
    let od = cpu.obs_spec().vector.dim();
    for k in 0..steps {
        for (j, a) in actions.iter_mut().enumerate() {
            let (i, d) = (j / ad, j % ad);
            let unit = 0.5 + 0.5 * (0.05 * k as f32 + 0.37 * i as f32 + 1.3 * d as f32).sin();
            *a = low[d] + unit * (high[d] - low[d]);
        }
        cpu.step(&actions).unwrap();
        gpu.step(&actions).unwrap();
        let (a, b) = (cpu.buffers(), gpu.buffers());
        for (i, split) in split.iter_mut().enumerate() {
            if *split {
                continue;
            }
            let ended = |s: &embodia::sim::StepBuffers| (s.terminated[i] > 0.0, s.truncated[i] > 0.0);
            if ended(a) != ended(b) {
                *split = true;
                continue;
            }
            episodes += usize::from(ended(a) != (false, false));
            let pairs = a.obs[i * od..(i + 1) * od].iter().zip(&b.obs[i * od..(i + 1) * od]);
            let relative = |(x, y): (&f32, &f32)| (x - y).abs() / x.abs().max(1.0);
            let worst = pairs.chain([(&a.reward[i], &b.reward[i])]).map(relative).fold(0.0f32, f32::max);
            errors.push(worst);
        }
    }
    let apart = errors.iter().filter(|e| **e > 1e-3).count();
    let compared = errors.len();
    errors.sort_by(f32::total_cmp);
    let median_error = errors.get(compared / 2).copied().unwrap_or(f32::NAN);
    TensorParity { compared, apart, median_error, split: split.iter().filter(|s| **s).count(), episodes }
}

#[test]
fn tensor_environments_on_the_gpu_follow_the_cpu_for_1000_steps_at_1024_envs() {
    let _serial = serial();
    // Open-loop actions on smooth dynamics: ulp-level differences per step grow slowly, so
    // after 1,000 steps (5 pendulum episodes) observations still agree to 1e-2 relative.
    // An environment whose termination threshold is crossed on one device only (cart-pole
    // and quadrotor limits) leaves the comparison; at most 1% may. 1,024 environments: on
    // lavapipe the kernels' cost grows with the batch, and a larger one finds nothing more
    // (bench/gpu.sh runs 4,096 and more on a GPU).
    for name in ["pendulum", "cartpole-balance", "cartpole-swingup", "quadrotor-hover", "quadrotor-track"] {
        let p = tensor_parity(name, 1024, 1000);
        eprintln!("{name}: {p:?}");
        assert!(p.episodes > 0, "{name}: no episode ended in 1,000 steps: {p:?}");
        assert!(p.split <= 1024 / 100, "{name}: {} of 1,024 environments ended differently: {p:?}", p.split);
        assert!(p.median_error < 1e-5, "{name}: observations differ: {p:?}");
        assert!(p.apart <= p.compared / 100, "{name}: observations differ: {p:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Learners

fn config(task: &str, algo: &str, overrides: &[&str]) -> TrainConfig {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    resolve(&ConfigSources {
        task: Some(task),
        algorithm: Some(algo),
        file: None,
        seed: Some(3),
        total_steps: None,
        overrides: &overrides,
    })
    .unwrap_or_else(|e| panic!("{task}/{algo}: {e}"))
}

/// The learner's parameters after `iterations` iterations on CPU environments, with its
/// networks on `device`.
fn params_after(config: &TrainConfig, device: &Device, iterations: usize) -> embodia::policies::NamedParams {
    let mut env = embodia::run::make_env(config, config.algo.num_envs()).unwrap();
    env.reset(config.seed);
    let mut learner = build_learner(config, env.as_ref(), &device.clone().autodiff()).unwrap();
    for _ in 0..iterations {
        learner.iterate(env.as_mut()).unwrap();
    }
    learner.checkpoint().unwrap().tensors
}

/// Largest difference between two parameter sets with the same names and shapes, relative to
/// max(1, |cpu value|).
fn max_param_error(cpu: &embodia::policies::NamedParams, gpu: &embodia::policies::NamedParams) -> f32 {
    assert_eq!(cpu.keys().collect::<Vec<_>>(), gpu.keys().collect::<Vec<_>>(), "parameter names");
    let mut worst = 0.0f32;
    for (name, (shape, a)) in cpu {
        let (gshape, b) = &gpu[name];
        assert_eq!(shape, gshape, "{name}: shape");
        for (x, y) in a.iter().zip(b) {
            assert!(y.is_finite(), "{name}: non-finite on the GPU");
            worst = worst.max((x - y).abs() / x.abs().max(1.0));
        }
    }
    worst
}

/// The entries of `params` that `like` also has, with the same shape.
fn shared(
    params: &embodia::policies::NamedParams,
    like: &embodia::policies::NamedParams,
) -> embodia::policies::NamedParams {
    let keep = |(k, v): &(&String, &(Vec<usize>, Vec<f32>))| like.get(*k).is_some_and(|l| l.0 == v.0);
    params.iter().filter(keep).map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn ppo_and_sac_updates_on_the_gpu_match_the_cpu_from_the_same_seed() {
    let _serial = serial();
    let gpu = gpu();
    // Same seed, same initial parameters (seeded on the CPU whatever the device), same host
    // generator for exploration noise: only f32 summation order differs. Adam normalizes each
    // step to about the learning rate (3e-4 to 1e-3), so after a few updates parameters may
    // differ by a few learning rates where a gradient's sign flips on a tiny component; 5e-3
    // relative bounds that and is far below what a different update (another seed) moves.
    let cases = [
        ("ppo", vec!["algo.num_envs=8", "algo.steps_per_env=64", "algo.mini_batches=2", "algo.epochs=2"], 2),
        (
            "sac",
            vec!["algo.num_envs=4", "algo.learning_starts=256", "algo.batch_size=64", "algo.steps_per_iteration=64"],
            8,
        ),
    ];
    for (algo, overrides, iterations) in cases {
        let config = config("pendulum", algo, &overrides);
        let cpu = params_after(&config, &Device::flex(), iterations);
        let on_gpu = params_after(&config, &gpu, iterations);
        let error = max_param_error(&cpu, &on_gpu);
        assert!(error < 5e-3, "{algo}: parameters after {iterations} iterations differ by {error}");
        // And the updates did move the parameters: a comparison of two untouched networks
        // would prove nothing.
        let initial = params_after(&config, &Device::flex(), 0);
        // Networks only: optimizer moments and the replay buffer start empty.
        let moved = max_param_error(&shared(&initial, &cpu), &shared(&cpu, &initial));
        eprintln!(
            "{algo}: GPU vs CPU after {iterations} iterations {error:.2e}; the updates moved parameters {moved:.2e}"
        );
        assert!(moved > 10.0 * error, "{algo}: updates moved parameters by {moved}, parity error {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// The command line: train on one device, evaluate, export and resume on the other.

/// Runs `embodia args` in `dir`, requires success, returns (stdout, stderr).
fn embodia_output(dir: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("embodia runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "embodia {}: exit {:?}\n{stdout}\n{stderr}", args.join(" "), out.status.code());
    (stdout.into_owned(), stderr.into_owned())
}

fn embodia(dir: &Path, args: &[&str]) -> String {
    embodia_output(dir, args).0
}

#[test]
fn device_gpu_probes_in_a_child_process_and_names_the_adapter() {
    // `--device gpu` first runs the probe kernels in a child process (a driver crash there is
    // an error, not a crash of the command), then says which adapter wgpu chose.
    let (_, stderr) = embodia_output(&std::env::temp_dir(), &["--device", "gpu", "list"]);
    let line = stderr.lines().find(|l| l.starts_with("--device gpu: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.len() > "--device gpu: ".len() + 3, "{line}");
    // The probe child alone: exit 0 on a usable GPU.
    let status = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .env(embodia::device::GPU_PROBE_ONLY_ENV, "1")
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "probe child: {status}");
}

fn eval_return(dir: &Path, run: &str, device: &str) -> f64 {
    let out = embodia(dir, &["--device", device, "eval", "--run", run, "--episodes", "8", "--json"]);
    let eval: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON: {e}\n{out}"));
    eval["mean_return"].as_f64().unwrap_or_else(|| panic!("eval of {run} lacks mean_return: {eval}"))
}

#[test]
fn ppo_trains_with_its_rollouts_on_the_gpu_and_evaluates_on_the_cpu() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("embodia-gpu-rollouts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let settings =
        ["--set", "algo.device_rollouts=true", "--set", "algo.num_envs=256", "--set", "algo.steps_per_env=16"];
    let mut args = vec!["--device", "gpu", "train", "--task", "pendulum", "--algo", "ppo", "--steps", "8192"];
    args.extend(settings);
    args.extend(["--set", "eval_episodes=2", "--run-dir", "run", "--quiet"]);
    embodia(&dir, &args);
    let metrics = std::fs::read_to_string(dir.join("run/metrics.csv")).unwrap();
    assert_eq!(metrics.lines().count(), 3, "two iterations of 4,096 env steps:\n{metrics}");
    let eval = embodia(&dir, &["eval", "--run", "run", "--episodes", "2"]);
    assert!(eval.contains("mean return"), "{eval}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn checkpoints_move_between_gpu_and_cpu_for_evaluation_export_and_resume() {
    let _serial = serial();
    gpu();
    let dir = std::env::temp_dir().join(format!("embodia-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = ScratchDir(dir);
    let train = |device: &str, run: &str| {
        embodia(
            dir.path(),
            &["--device", device, "train", "--task", "pendulum", "--algo", "ppo", "--quiet"]
                .iter()
                .copied()
                .chain(["--run-dir", run, "--steps", "4096", "--seed", "5"])
                .collect::<Vec<_>>(),
        )
    };
    train("gpu", "on-gpu");
    train("cpu", "on-cpu");
    // The same run on either device: evaluated on the CPU, returns agree closely (a short
    // PPO run from the same seed and parameters; the tolerance covers a pendulum episode of
    // 200 steps where an ulp difference in an action moves the return a little).
    let (g, c) = (eval_return(dir.path(), "on-gpu", "cpu"), eval_return(dir.path(), "on-cpu", "cpu"));
    assert!((g - c).abs() <= 0.05 * c.abs().max(1.0), "evaluation of the GPU run {g} vs the CPU run {c}");
    // A CPU run evaluated on the GPU gives the CPU's evaluation.
    let c_on_gpu = eval_return(dir.path(), "on-cpu", "gpu");
    assert!((c_on_gpu - c).abs() <= 0.05 * c.abs().max(1.0), "CPU run evaluated on the GPU {c_on_gpu} vs {c}");
    // Export the GPU-trained run (export reads the checkpoint on the host).
    embodia(dir.path(), &["export", "--run", "on-gpu", "--format", "onnx", "--out", "on-gpu-onnx"]);
    assert!(dir.path().join("on-gpu-onnx/model.onnx").metadata().unwrap().len() > 1000);
    // Resume each on the other device.
    for (run, device) in [("on-gpu", "cpu"), ("on-cpu", "gpu")] {
        embodia(dir.path(), &["--device", device, "train", "--resume", run, "--steps", "8192", "--quiet"]);
        let metrics = std::fs::read_to_string(dir.path().join(run).join("metrics.csv")).unwrap();
        let last: u64 = metrics.lines().last().unwrap().split(',').next().unwrap().parse().unwrap();
        assert_eq!(last, 8192, "{run} resumed on {device}: last env_steps row {last}");
    }
}

/// A scratch directory this test created, removed when the test ends.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Every other learner: a tiny run of each on both devices from the same seed (and the same
// CPU-trained SFT run where it starts from one), then the checkpoint tensors compared.

/// The tensors of `run`'s checkpoint.
fn run_tensors(dir: &Path, run: &str) -> embodia::policies::NamedParams {
    embodia::algos::Checkpoint::load(&dir.join(run).join(embodia::run::CHECKPOINT_DIR))
        .unwrap_or_else(|e| panic!("{run}: {e}"))
        .tensors
}

/// What one learner's tiny run gave on both devices.
struct DeviceParity {
    /// Largest relative difference between the CPU and GPU checkpoints' tensors.
    error: f32,
    /// Largest relative change of the CPU run's networks from the run it started from
    /// (`None` for runs that start from fresh parameters).
    moved: Option<f32>,
}

/// Trains `args` (a `train`/`distill` command without device and run directory) on the CPU into
/// `NAME-cpu` and on the GPU into `NAME-gpu`, and compares their checkpoints with each other and
/// with the checkpoint of `init`, the run they started from.
fn device_parity(dir: &Path, name: &str, args: &[&str], out_flag: &str, init: Option<&str>) -> DeviceParity {
    for device in ["cpu", "gpu"] {
        let run = format!("{name}-{device}");
        let mut full = vec!["--device", device];
        full.extend_from_slice(args);
        full.extend([out_flag, &run, "--quiet"]);
        embodia(dir, &full);
    }
    let (cpu, gpu) = (run_tensors(dir, &format!("{name}-cpu")), run_tensors(dir, &format!("{name}-gpu")));
    let moved = init.map(|init| {
        let start = run_tensors(dir, init);
        // The networks a run shares with its start have the same names in both checkpoints
        // (an actor, a denoiser); the rest (critics, optimizer moments, replay) are new.
        max_param_error(&shared(&start, &cpu), &shared(&cpu, &start))
    });
    DeviceParity { error: max_param_error(&cpu, &gpu), moved }
}

#[test]
fn flow_diffusion_distill_and_vla_learners_on_the_gpu_match_the_cpu() {
    let _serial = serial();
    gpu();
    let dir = ScratchDir(std::env::temp_dir().join(format!("embodia-gpu-algos-{}", std::process::id())));
    std::fs::create_dir_all(dir.path()).unwrap();
    let d = dir.path();
    let small = ["--set", "algo.policy.width=32", "--set", "algo.policy.hidden=[32]", "--seed", "4"];
    let sft = |model: &'static str| {
        let mut a = vec!["train", "--task", "reach", "--algo", "sft", "--demos", "4", "--steps", "20"];
        a.extend(["--set", "algo.updates_per_iteration=10", "--set", "algo.num_envs=2", "--set", "eval_episodes=1"]);
        a.extend(["--set", model]);
        a.extend_from_slice(&small);
        a
    };
    // Each case: a few gradient steps (SFT, distillation) or one or two RL iterations. Adam moves
    // every parameter by about the learning rate per step whatever the gradient's size, so a
    // component whose gradient is near zero can flip sign between devices: 2e-2 relative bounds
    // that for these short runs (typical differences are 1e-5).
    let mut errors = Vec::new();
    errors.push(("sft (flow)", device_parity(d, "sft", &sft("algo.model=flow"), "--run-dir", None)));
    errors.push(("sft (diffusion)", device_parity(d, "dsft", &sft("algo.model=diffusion"), "--run-dir", None)));
    // RL from the CPU-trained SFT runs (the same starting point for both devices).
    for algo in ["ppo-flow-sde", "ppo-flow-noise"] {
        let mut a = vec!["train", "--task", "reach", "--algo", algo, "--init", "sft-cpu", "--steps", "200"];
        a.extend(["--set", "algo.num_envs=4", "--set", "algo.chunk_steps=50", "--set", "eval_episodes=1"]);
        errors.push((algo, device_parity(d, algo, &a, "--run-dir", Some("sft-cpu"))));
    }
    let mut a = vec!["train", "--task", "reach", "--algo", "dppo", "--init", "dsft-cpu", "--steps", "200"];
    a.extend(["--set", "algo.num_envs=4", "--set", "algo.chunk_steps=25", "--set", "algo.critic_warmup_iterations=1"]);
    a.extend(["--set", "algo.update_epochs=1", "--set", "eval_episodes=1"]);
    errors.push(("dppo", device_parity(d, "dppo", &a, "--run-dir", Some("dsft-cpu"))));
    let mut a = vec!["distill", "--run", "sft-cpu", "--steps", "10", "--eval-episodes", "1", "--eval-seeds", "1"];
    a.extend(["--latency-calls", "5"]);
    for s in ["algo.num_envs=2", "algo.chunk_steps=5", "algo.batch_size=32", "algo.updates_per_iteration=5"] {
        a.extend(["--set", s]);
    }
    a.extend(["--set", "algo.warmup_steps=2", "--set", "algo.student.hidden=[32]", "--set", "eval_episodes=1"]);
    errors.push(("distill", device_parity(d, "distill", &a, "--out", None)));
    // The VLA: a reduced model, SFT from camera demonstrations, then GRPO and DSRL from it.
    let vla = [
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
        "--set",
        "eval_episodes=1",
    ];
    let mut a = vec!["train", "--task", "lang-cubes", "--algo", "vla-sft", "--demos", "2", "--steps", "4"];
    a.extend(["--set", "algo.updates_per_iteration=4", "--set", "algo.num_envs=2", "--seed", "4"]);
    a.extend_from_slice(&vla);
    errors.push(("vla-sft", device_parity(d, "vla-sft", &a, "--run-dir", None)));
    let mut a = vec!["train", "--task", "lang-cubes", "--algo", "vla-ppo-flow-sde", "--init", "vla-sft-cpu"];
    a.extend(["--steps", "100", "--set", "algo.num_envs=4", "--set", "algo.group_size=2", "--set", "eval_episodes=1"]);
    // GAE with the dense task reward: GRPO's group advantages are all zero while every episode
    // of a 4-step clone fails, and the policy would not move.
    a.extend(["--set", "algo.advantage=gae"]);
    errors.push(("vla-ppo-flow-sde", device_parity(d, "vla-rl", &a, "--run-dir", Some("vla-sft-cpu"))));
    let mut a = vec!["train", "--task", "lang-cubes", "--algo", "vla-dsrl", "--init", "vla-sft-cpu", "--steps", "64"];
    a.extend(["--set", "algo.num_envs=4", "--set", "eval_episodes=1", "--set", "algo.random_iterations=1"]);
    a.extend(["--set", "algo.updates_per_iteration=8", "--set", "algo.batch_size=32"]);
    // DSRL keeps the VLA frozen and trains a noise policy that its start does not have: the
    // updates show in the critic's loss instead.
    errors.push(("vla-dsrl", device_parity(d, "vla-dsrl", &a, "--run-dir", None)));
    let metrics = std::fs::read_to_string(d.join("vla-dsrl-cpu/metrics.csv")).unwrap();
    let column = metrics.lines().next().unwrap().split(',').position(|c| c == "value_loss").unwrap();
    let losses: Vec<f64> = metrics.lines().skip(1).filter_map(|l| l.split(',').nth(column)?.parse().ok()).collect();
    assert!(losses.iter().any(|l| *l > 0.0), "vla-dsrl ran no critic update: value_loss {losses:?}");
    let report: Vec<String> = errors
        .iter()
        .map(|(n, p)| format!("{n}: {:.2e} (moved {})", p.error, p.moved.map_or("-".into(), |m| format!("{m:.2e}"))))
        .collect();
    eprintln!("checkpoint differences GPU vs CPU: {}", report.join(", "));
    for (name, p) in &errors {
        assert!(p.error < 2e-2, "{name}: checkpoint differences GPU vs CPU: {}", report.join(", "));
        // An RL run that did not change its policy would make the comparison empty.
        if let Some(moved) = p.moved {
            assert!(moved > 10.0 * p.error, "{name} barely moved ({moved}): {}", report.join(", "));
        }
    }
}
