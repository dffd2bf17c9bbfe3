//! The `embodia` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use embodia::algos::{ConsistencyLoss, DistillMethod};
use embodia::config::{ConfigSources, TrainConfig, resolve};
use embodia::run::load_learner;
use embodia::viz::VizTarget;

mod commands;

use commands::act::{ActArgs, ExportArgs, RunOnnxArgs};
use commands::bench::{
    BenchAllreduceArgs, BenchDeployArgs, BenchExportLatencyArgs, BenchFlowArgs, BenchLangArgs, BenchMcuArgs,
    BenchRenderArgs, BenchSimArgs, BenchSolveArgs, BenchVlaArgs, BenchVlaModelArgs,
};
use commands::compare::CompareArgs;
use commands::deploy::CalibrateArgs;
use commands::distill::DistillArgs;
use commands::eval::{EvalArgs, ViewArgs};
use commands::plot::{PlotArgs, RenderCameraArgs};
use commands::record::RecordArgs;
use commands::train::{ConfigArgs, TrainArgs};
use commands::{act, bench, compare, deploy, distill, eval, plot, record, train};

use commands::act::{ort_dylib_path, read_observations};
use commands::bench::{
    bench_allreduce, bench_deploy, bench_export_latency, bench_flow, bench_lang, bench_mcu, bench_render, bench_sim,
    bench_solve, bench_tensor_ppo, bench_tensor_sim, bench_vla, bench_vla_model,
};
use commands::compare::compare;
use commands::deploy::{calibrate, deploy, servo_emulator};
use commands::distill::distill;
use commands::eval::{EvalCsv, eval, eval_expert, eval_mode, record_rrd};
use commands::plot::plot;
use commands::train::{list, train};

#[derive(Parser)]
#[command(name = "embodia", version, about = "Reinforcement learning for robots: train, evaluate, benchmark.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Compute device for networks and tensor environments: cpu, or gpu (Vulkan; needs the
    /// `gpu` cargo feature).
    #[arg(long, global = true, default_value = "cpu")]
    device: String,
}

#[derive(Subcommand)]
enum Command {
    /// List tasks, algorithms and robots.
    List,
    /// Print the full default configuration of an algorithm on a task, as TOML.
    Config(train::ConfigArgs),
    /// Train a policy; writes runs/<name>/ (config, metrics.csv, checkpoint, eval.json).
    Train(train::TrainArgs),
    /// Distill a flow-policy run (sft, ppo-flow-*) into a one-step student, saved as a run
    /// (eval, export and deploy accept it); then report teacher and student success over
    /// several evaluation seeds and their inference latency at batch 1.
    Distill(distill::DistillArgs),
    /// Export a PPO, SAC or distill run's deterministic policy (observation normalization, MLP,
    /// action scaling and clipping, action-chunk layout) as C99 source, a no_std Rust module or ONNX (model.onnx).
    Export(act::ExportArgs),
    /// Print the deterministic actions of a run's policy (as `embodia eval` takes them) for raw
    /// observations (one per line, comma- or space-separated, from --obs or stdin): the
    /// reference that exported artifacts reproduce.
    Act(act::ActArgs),
    /// Run an exported model.onnx on raw observations (one per line, comma- or space-separated,
    /// from --obs or stdin); prints one raw action per line.
    RunOnnx(act::RunOnnxArgs),
    /// Evaluate two runs of one task on the same episodes and print their paired difference
    /// (second minus first) with its 95% confidence interval, and success per instruction.
    Compare(compare::CompareArgs),
    /// Evaluate a run's policy (in its reference evaluation mode, or `--mode`), or a task's scripted expert
    /// (`--task NAME --expert scripted`).
    Eval(eval::EvalArgs),
    /// Open the rerun viewer on a run's recordings (its .rrd files).
    View(eval::ViewArgs),
    /// Draw what a rapier task's cameras see (colour, and depth in grey, near bright, 0–2 m) in
    /// a few environments into one PNG: one row per environment, `front` (fixed) and `wrist`
    /// (on the end effector) side by side.
    RenderCamera(plot::RenderCameraArgs),
    /// Draw the training curves of one or more runs into one PNG (one color per run, legend =
    /// run directory name): return and success rate vs env steps and wall time, losses,
    /// entropy, SAC α or PPO KL.
    Plot(plot::PlotArgs),
    /// Record demonstrations of a task's scripted expert, or a trained policy's own episodes
    /// (`--run`), into a LeRobot v3 dataset (observations, actions, rewards, success, episode
    /// boundaries, normalization statistics).
    Record(record::RecordArgs),
    /// Demonstration datasets (LeRobot v3 layout).
    Dataset {
        #[command(subcommand)]
        dataset: DatasetCommand,
    },
    /// Benchmarks that print figures.
    Bench {
        #[command(subcommand)]
        bench: BenchCommand,
    },
    /// Robot descriptions.
    Robot {
        #[command(subcommand)]
        robot: RobotCommand,
    },
    /// Run a trained policy on a robot in a fixed-rate loop with the safety layer: servos on a
    /// serial bus (`--port`), the servo emulator on a pseudo-terminal (`--dry-run`), or the
    /// rapier simulation through the same loop (`--sim`).
    Deploy(deploy::DeployArgs),
    /// Record each joint's range into a calibration file: torque goes off, move every joint
    /// through its full range, then press Enter. `--import FILE.json` converts a calibration
    /// LeRobot wrote instead.
    Calibrate(deploy::CalibrateArgs),
    /// Emulate a robot's servos on a new pseudo-terminal: prints its /dev/pts/N path on the
    /// first line, then serves (so101: STS3215, protocol 0; koch: XL430/XL330, protocol 2.0;
    /// ids as on the robot) until Ctrl-C.
    ServoEmulator(deploy::ServoEmulatorArgs),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Flow-policy recipe: SFT on scripted demonstrations (success S0), then flow RL for a
    /// wall-time budget (success S1), with rollout throughput and the sim / inference / update
    /// time split; per task and seed.
    Flow(bench::BenchFlowArgs),
    /// Env steps and wall seconds until the deterministic evaluation first reaches the task's
    /// solve threshold, per seed, then medians.
    Solve(bench::BenchSolveArgs),
    /// Exported policies on an emulated Cortex-M4F (QEMU mps2-an386, arm-none-eabi-gcc):
    /// actions vs embodia's, instructions and estimated cycles per forward pass, flash / RAM /
    /// stack. Default cases: a [64, 64] MLP (pendulum PPO, ELU and ReLU) and the quadrotor-hover
    /// SAC policy, freshly initialized.
    Mcu(bench::BenchMcuArgs),
    /// The deploy loop against the servo emulator on a pseudo-terminal: timing of a loop at
    /// `--hz` for `--seconds` (read, infer, write, jitter), then fault injection (every fault
    /// kind in turn): commands outside the limits, faults detected, time to a safe state.
    Deploy(bench::BenchDeployArgs),
    /// πRL's recipe on a language-conditioned family: SFT of the VLA on scripted demonstrations
    /// with camera images (success S0), then GRPO on every training variant for a wall-time
    /// budget (S1); success on training and held-out variants, RL time split.
    Vla(bench::BenchVlaArgs),
    /// Cost of the VLA on the selected device (--device): forward latency of the prefix and of a
    /// whole action chunk, and of one SFT gradient step, per preset and batch size.
    VlaModel(bench::BenchVlaModelArgs),
    /// A language-conditioned family: the scripted expert's success per variant (episodes end
    /// on success), then env-steps/s under random actions without a camera, with the front
    /// camera, and with front + wrist cameras.
    Lang(bench::BenchLangArgs),
    /// Images per second of the CPU camera renderer: every camera (colour and depth) of every
    /// environment of a batch of a rapier task, physics stepped (untimed) between renders.
    Render(bench::BenchRenderArgs),
    /// Batch-1 inference latency of an exported MLP policy (default [17, 256, 256, 6]):
    /// embodia's forward pass, and its model.onnx in tract and onnxruntime (ort) where compiled
    /// in; median and p99 per call. bench/export_latency.sh adds PyTorch and Python onnxruntime.
    ExportLatency(bench::BenchExportLatencyArgs),
    /// Environment steps per second with uniformly random actions, resets and observation and
    /// reward computation included, for each combination of batch size and thread count.
    Sim(bench::BenchSimArgs),
    /// Under `mpirun -np N` (feature `mpi`): latency and bandwidth of one gradient all-reduce
    /// between the ranks, for the networks of PPO on a task and of the VLA presets.
    Allreduce(bench::BenchAllreduceArgs),
    /// Every parser of user or device input (URDF, MJCF, configs, checkpoints, datasets,
    /// calibrations, observation text, servo-bus bytes) on mutated inputs: panics (must be 0)
    /// and the slowest input, per target.
    Fuzz(bench::BenchFuzzArgs),
}

#[derive(Subcommand)]
enum DatasetCommand {
    /// Print a dataset's task, episodes, frames, fps, features, success rate and statistics.
    Info {
        /// Dataset directory.
        dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum RobotCommand {
    /// Validate a URDF or MJCF (`.xml`) file and print a summary of its links and joints.
    ///
    /// The summary lists each link's mass, each joint's type, parent -> child, limits and mimic,
    /// the total mass and the actuated degrees of freedom; for MJCF also the actuators, sites,
    /// cameras, excluded contacts and the scene elements that were not used. An invalid or
    /// unsupported file is reported as `error: FILE:LINE: ELEMENT: MESSAGE` with exit code 1.
    Check {
        /// The URDF file, or the MJCF file when it ends in `.xml` (meshes are resolved relative to
        /// its directory).
        file: PathBuf,
    },
}

/// Where a run's configuration comes from.
#[derive(Args)]
struct Settings {
    /// Task (see `embodia list`). Default: pendulum.
    #[arg(long)]
    task: Option<String>,
    /// Algorithm (`embodia list` names them all: sac, ppo, sft, ..., vla-dsrl). Default: sac.
    #[arg(long)]
    algo: Option<String>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Total environment-step budget (sft: gradient steps).
    #[arg(long)]
    steps: Option<u64>,
    /// sft, sac-rlpd (and sac): record this many successful scripted-expert demonstrations in
    /// memory (sets algo.demos).
    #[arg(long, value_name = "N")]
    demos: Option<usize>,
    /// sft, sac-rlpd (and sac): train on (sac: take the demonstrations from) a LeRobot dataset
    /// directory instead of recorded demonstrations (sets algo.dataset).
    #[arg(long, value_name = "DIR", conflicts_with = "demos")]
    dataset: Option<PathBuf>,
    /// ppo-flow-sde / ppo-flow-noise / dppo / vla-ppo-flow-* / vla-dsrl: the SFT run to start
    /// from; vla-sft: a vla-sft run to fine-tune (sets algo.init; dppo needs a diffusion SFT
    /// run, `--set algo.model=diffusion`; the vla-* ones a vla-sft run).
    #[arg(long, value_name = "RUN_DIR")]
    init: Option<PathBuf>,
    /// ppo-flow-sde / ppo-flow-noise: also train a one-step student of the RL policy alongside,
    /// written as a distill run to <run-dir>/student/ (adds the [algo.distill_during_rl] table
    /// with its defaults; tune it with --set algo.distill_during_rl.KEY=VALUE).
    #[arg(long)]
    distill_during_rl: bool,
    /// TOML file overriding the defaults (see `embodia config`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one setting, e.g. --set algo.learning_rate=3e-4 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl Settings {
    fn resolve(&self) -> anyhow::Result<TrainConfig> {
        let mut overrides = self.set.clone();
        if let Some(dir) = &self.dataset {
            let dir = dir.to_str().ok_or_else(|| anyhow::anyhow!("--dataset {}: not valid UTF-8", dir.display()))?;
            overrides.insert(0, format!("algo.dataset={}", toml::Value::String(dir.into())));
        }
        if let Some(n) = self.demos {
            overrides.insert(0, format!("algo.demos={n}"));
        }
        if let Some(dir) = &self.init {
            let dir = dir.to_str().ok_or_else(|| anyhow::anyhow!("--init {}: not valid UTF-8", dir.display()))?;
            overrides.insert(0, format!("algo.init={}", toml::Value::String(dir.into())));
        }
        let resolve_with = |overrides: &[String]| {
            resolve(&ConfigSources {
                task: self.task.as_deref(),
                algorithm: self.algo.as_deref(),
                file: self.config.as_deref(),
                seed: self.seed,
                total_steps: self.steps,
                overrides,
            })
        };
        let config = resolve_with(&overrides)?;
        if !self.distill_during_rl {
            return Ok(config);
        }
        if config.algo.get::<embodia::algos::PpoFlowConfig>().is_none() {
            anyhow::bail!(
                "--distill-during-rl: only flow-policy RL (--algo ppo-flow-sde or ppo-flow-noise) trains a one-step student alongside; `{}` is not a flow-policy RL algorithm{}",
                config.algorithm,
                match config.algorithm.as_str() {
                    "ppo" | "sac" => " (its Gaussian policy is one-step already: export it directly)",
                    "sft" => " (distill an sft run with `embodia distill --run runs/<sft-run>`)",
                    _ => "",
                }
            );
        }
        overrides.insert(0, "algo.distill_during_rl={}".into());
        Ok(resolve_with(&overrides)?)
    }
}

fn main() -> ExitCode {
    if std::env::var_os(embodia::device::GPU_PROBE_ONLY_ENV).is_some() {
        // The child of `gpu_probe_in_child`: select the GPU (which runs the probe kernels), exit.
        return match embodia::device::named_device("gpu") {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    // A third-party parser's panic that embodia catches and reports as an error naming the file
    // (a corrupt dataset or ONNX file) is not printed.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !embodia_robots::parser_panics::panic_becomes_error() {
            default_hook(info);
        }
    }));
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            match e.downcast_ref::<commands::deploy::EarlyStop>() {
                Some(stop) => ExitCode::from(stop.exit_code()),
                None => ExitCode::FAILURE,
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.device == "gpu" && cfg!(feature = "gpu") {
        embodia::device::gpu_probe_in_child(&std::env::current_exe()?)?;
    }
    embodia::device::select_device(&cli.device)?;
    if let Some(name) = embodia::device::gpu_name() {
        // wgpu picks the adapter (Vulkan, Metal, DX12, or OpenGL where nothing else exists):
        // say which, so a run on a software rasterizer is never mistaken for a GPU run.
        eprintln!("--device gpu: {name}");
    }
    match cli.command {
        Command::List => list(),
        Command::Config(ConfigArgs { algo, task }) => {
            let config = resolve(&ConfigSources { task: Some(&task), algorithm: Some(&algo), ..Default::default() })?;
            print!("{}", config.to_toml());
            Ok(())
        }
        Command::Train(TrainArgs { settings, run_dir, resume, quiet, viz, viz_save, dist }) => {
            let target = match (viz, viz_save) {
                (true, _) => Some(VizTarget::Viewer),
                (false, Some(file)) => Some(VizTarget::File(file)),
                (false, None) => None,
            };
            match dist {
                Some(mode) => train::train_distributed(mode, &settings, run_dir, resume, quiet),
                None => train(&settings, run_dir, resume, quiet, target),
            }
        }
        Command::Distill(DistillArgs {
            run,
            method,
            loss,
            out,
            seed,
            steps,
            set,
            eval_episodes,
            eval_seeds,
            latency_calls,
            stochastic,
            json,
            quiet,
        }) => {
            let req = embodia::distill::DistillRequest {
                teacher: run,
                method: if method == "meanflow" { DistillMethod::MeanFlow } else { DistillMethod::Consistency },
                loss: if loss == "backup" { ConsistencyLoss::Backup } else { ConsistencyLoss::SameNoise },
                seed,
                steps,
                overrides: set,
            };
            let settings = embodia::distill::ReportSettings {
                episodes: eval_episodes,
                seeds: eval_seeds,
                calls: latency_calls,
                stochastic,
            };
            distill(&req, out, settings, json, quiet)
        }
        Command::Export(ExportArgs { run, format, out }) => {
            let format = embodia::deploy::export::Format::parse(&format).expect("clap checked the format");
            for file in embodia::export::export_run(&run, format, &out)? {
                println!("{}", file.display());
            }
            Ok(())
        }
        Command::RunOnnx(RunOnnxArgs { model, obs, runtime, ort_lib }) => {
            let runtime = embodia::actions::runtime(&runtime, ort_lib.or_else(ort_dylib_path))?;
            let (text, source) = read_observations(obs.as_deref())?;
            print!("{}", embodia::actions::run_onnx(&model, &runtime, &text, &source)?);
            Ok(())
        }
        Command::Act(ActArgs { run, obs }) => {
            let (text, source) = read_observations(obs.as_deref())?;
            print!("{}", embodia::actions::act(&run, &text, &source)?);
            Ok(())
        }
        Command::Eval(EvalArgs {
            run: Some(run),
            episodes,
            json,
            stochastic,
            record_episodes,
            render,
            render_frames,
            split,
            episodes_csv,
            steps_csv,
            mode,
            ..
        }) => {
            // Every output is checked before the evaluation, whose result would be lost.
            if record_episodes.is_some() {
                embodia::viz::check_built("`--record-episodes`")?;
            }
            for (path, flag) in [(&render, "--render"), (&episodes_csv, "--episodes-csv"), (&steps_csv, "--steps-csv")]
            {
                if let Some(path) = path {
                    commands::check_writable(path, flag)?;
                }
            }
            let csv = EvalCsv { episodes: episodes_csv.as_deref(), steps: steps_csv.as_deref() };
            eval(&run, episodes, json, eval_mode(mode.as_deref(), stochastic), split.as_deref(), csv)?;
            if let Some(out) = render {
                let (config, learner) = load_learner(&run)?;
                embodia::render::render_learner_episode(learner.as_ref(), &config, render_frames, &out)?;
                eprintln!("drew {render_frames} frames of the first episode into {}", out.display());
            }
            match record_episodes {
                Some(n) => record_rrd(&run, n),
                None => Ok(()),
            }
        }
        Command::Compare(CompareArgs { run, episodes, seed, mode, stochastic, split, json }) => {
            compare(&run, episodes, seed, eval_mode(mode.as_deref(), stochastic), split.as_deref(), json)
        }
        Command::View(ViewArgs { run }) => Ok(embodia::viz::view(&run)?),
        Command::Eval(EvalArgs { task, episodes, json, seed, render, render_frames, split, .. }) => {
            let task = task.as_deref().unwrap_or_default();
            if let Some(path) = &render {
                commands::check_writable(path, "--render")?;
            }
            eval_expert(task, episodes, seed, json, split.as_deref())?;
            if let Some(out) = render {
                embodia::render::render_expert_episode(task, seed, render_frames, &out)?;
                eprintln!("drew {render_frames} frames of the expert's first episode into {}", out.display());
            }
            Ok(())
        }
        Command::Bench { bench: BenchCommand::Solve(BenchSolveArgs { settings, seeds, json }) } => {
            bench_solve(&settings, seeds, json)
        }
        Command::Bench {
            bench:
                BenchCommand::Flow(BenchFlowArgs {
                    tasks,
                    algo,
                    demos,
                    sft_steps,
                    sft_overrides,
                    rl_seconds,
                    rl_steps,
                    envs,
                    eval_episodes,
                    seeds,
                    seed,
                    config,
                    overrides,
                    out,
                    baseline,
                    json,
                }),
        } => {
            let default_seconds = if rl_steps.is_some() { f64::INFINITY } else { 300.0 };
            let spec = embodia::bench::FlowBenchSpec {
                algorithm: algo,
                demos,
                sft_steps,
                sft_overrides,
                rl_seconds: rl_seconds.unwrap_or(default_seconds),
                rl_steps,
                num_envs: envs,
                eval_episodes,
                config_file: config,
                overrides,
                out: Some(out),
                baseline,
                seed,
                ..Default::default()
            };
            bench_flow(&tasks, spec, seeds, json)
        }
        Command::Bench {
            bench:
                BenchCommand::Sim(BenchSimArgs { settings, envs, threads, measure_steps, tensor, ppo_iterations, json }),
        } => {
            bench_sim(&settings, &envs, &threads, measure_steps, json)?;
            if tensor {
                bench_tensor_sim(&settings, &envs, measure_steps, &cli.device, json)?;
            }
            match ppo_iterations {
                Some(iterations) => bench_tensor_ppo(&settings, &envs, iterations, &cli.device, json),
                None => Ok(()),
            }
        }
        Command::Bench {
            bench: BenchCommand::ExportLatency(BenchExportLatencyArgs { layers, calls, out, ort_lib, json }),
        } => bench_export_latency(&layers, calls, out, ort_lib.or_else(ort_dylib_path), json),
        Command::Bench {
            bench: BenchCommand::Deploy(BenchDeployArgs { robot, run, hz, seconds, faults, seed, json }),
        } => bench_deploy(&robot, run.as_deref(), hz, seconds, faults, seed, json),
        Command::Bench { bench: BenchCommand::Mcu(BenchMcuArgs { run, rust, rltools, keep, json }) } => {
            bench_mcu(&run, rust, rltools, keep, json)
        }
        Command::Bench { bench: BenchCommand::Fuzz(args) } => bench::bench_fuzz(&args),
        Command::Deploy(args) => deploy(&args),
        Command::Calibrate(CalibrateArgs { port, import, robot, out, seconds }) => {
            calibrate(port.as_deref(), import.as_deref(), &robot, out, seconds)
        }
        Command::ServoEmulator(args) => servo_emulator(&args),
        Command::Plot(PlotArgs { runs, out }) => plot(&runs, &out),
        Command::RenderCamera(RenderCameraArgs { task, out, envs, res, randomize, seed, steps }) => {
            anyhow::ensure!(envs > 0 && (8..=1024).contains(&res), "`--envs` must be ≥ 1 and `--res` in 8..=1024");
            let names = embodia::camera::render_task(&task, envs, res, randomize, seed, steps, &out)?;
            eprintln!("drew cameras {} of {envs} environments of {task} into {}", names.join(", "), out.display());
            Ok(())
        }
        Command::Bench {
            bench:
                BenchCommand::Vla(BenchVlaArgs {
                    task,
                    algo,
                    sft_steps,
                    rl_seconds,
                    eval_episodes,
                    seed,
                    sft_overrides,
                    rl_overrides,
                    sft_run,
                    distill_steps,
                    distill_episodes,
                    out,
                    json,
                }),
        } => {
            let spec = embodia::bench::vla::VlaBenchSpec {
                task,
                algorithm: algo,
                sft_steps,
                rl_seconds,
                eval_episodes,
                seed,
                sft_overrides,
                rl_overrides,
                sft_run,
                distill_steps,
                distill_episodes,
                out,
            };
            bench_vla(&spec, json)
        }
        Command::Bench {
            bench: BenchCommand::VlaModel(BenchVlaModelArgs { presets, batches, views, reps, train, json }),
        } => bench_vla_model(
            &embodia::bench::vla_model::VlaModelBenchSpec { presets, batches, views, reps, train },
            json,
        ),
        Command::Bench { bench: BenchCommand::Allreduce(BenchAllreduceArgs { networks, reps, json }) } => {
            bench_allreduce(&networks, reps, json)
        }
        Command::Bench { bench: BenchCommand::Lang(BenchLangArgs { task, episodes, envs, res, steps, json }) } => {
            bench_lang(&task, episodes, envs, res, steps, json)
        }
        Command::Bench {
            bench: BenchCommand::Render(BenchRenderArgs { task, envs, res, camera, randomize, threads, frames, json }),
        } => bench_render(&task, envs, &res, camera.as_deref(), randomize, &threads, frames, json),
        Command::Record(RecordArgs {
            run: Some(run),
            episodes,
            out,
            seed,
            envs,
            only_success,
            force,
            stochastic,
            ..
        }) => {
            let req =
                embodia::demos::PolicyRecordRequest { run, episodes, seed, envs, only_success, stochastic, out, force };
            let s = embodia::demos::record_policy(&req)?;
            println!("{}", s.describe(&format!("policy of {}", req.run.display()), &req.out));
            Ok(())
        }
        Command::Record(RecordArgs {
            task,
            expert,
            episodes,
            out,
            seed,
            envs,
            only_success,
            force,
            noise,
            camera,
            for_algo,
            stochastic,
            ..
        }) => {
            anyhow::ensure!(!stochastic, "`--stochastic` samples a policy's actions: it needs `--run`");
            let req = embodia::demos::RecordRequest {
                task: task.unwrap_or_default(),
                expert,
                episodes,
                seed,
                envs,
                only_success,
                out,
                force,
                noise,
                camera,
                for_algo,
            };
            let s = embodia::demos::record(&req)?;
            println!("{}", s.describe(&format!("{} expert on {}", req.expert, req.task), &req.out));
            Ok(())
        }
        Command::Dataset { dataset: DatasetCommand::Info { dir } } => {
            print!("{}", embodia::demos::info(&dir)?);
            Ok(())
        }
        Command::Robot { robot: RobotCommand::Check { file } } => {
            if file.extension().is_some_and(|e| e == "xml") {
                print!("{}", embodia::robots::load_mjcf(&file)?.summary());
            } else {
                print!("{}", embodia::robots::load_urdf(&file)?.summary());
            }
            Ok(())
        }
    }
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
