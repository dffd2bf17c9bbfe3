//! The `embodia` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use embodia::algos::{ConsistencyLoss, DistillMethod};
use embodia::config::{AlgoConfig, ConfigSources, TrainConfig, resolve};
use embodia::run::load_learner;
use embodia::viz::VizTarget;

mod commands;

use commands::act::{ort_dylib_path, read_observations};
use commands::bench::{
    bench_deploy, bench_export_latency, bench_flow, bench_lang, bench_mcu, bench_render, bench_sim, bench_solve,
    bench_tensor_ppo, bench_tensor_sim, bench_vla, bench_vla_model,
};
use commands::compare::compare;
use commands::deploy::{calibrate, deploy, servo_emulator};
use commands::distill::distill;
use commands::eval::{EVAL_MODES, EvalCsv, eval, eval_expert, eval_mode, record};
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
    Config {
        /// Algorithm (`embodia list` names them all).
        algo: String,
        /// Task.
        #[arg(long, default_value = "pendulum")]
        task: String,
    },
    /// Train a policy; writes runs/<name>/ (config, metrics.csv, checkpoint, eval.json).
    Train {
        #[command(flatten)]
        settings: Settings,
        /// Run directory (default: runs/<task>-<algo>-seed<seed>, never overwritten).
        #[arg(long)]
        run_dir: Option<PathBuf>,
        /// Continue the run in this directory from its last checkpoint.
        #[arg(long, conflicts_with_all = ["task", "algo", "config", "set", "seed", "run_dir"])]
        resume: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Stream training metrics to a rerun viewer (connects to a running one or spawns
        /// `rerun`; needs the `rerun` feature).
        #[arg(long)]
        viz: bool,
        /// Record training metrics into this .rrd file (needs the `rerun` feature).
        #[arg(long, value_name = "FILE.rrd", conflicts_with = "viz")]
        viz_save: Option<PathBuf>,
    },
    /// Distill a flow-policy run (sft, ppo-flow-*) into a one-step student, saved as a run
    /// (eval, export and deploy accept it); then report teacher and student success over
    /// several evaluation seeds and their inference latency at batch 1.
    Distill {
        /// The teacher's run directory.
        #[arg(long)]
        run: PathBuf,
        /// Objective: consistency (RL-100's consistency distillation) or meanflow (OFQL's
        /// average-velocity objective on teacher samples; experimental: measured on pick-cube-ee
        /// only, see the README).
        #[arg(long, default_value = "consistency", value_parser = ["consistency", "meanflow"])]
        method: String,
        /// Loss of the consistency method: same_noise (match the teacher's K-step action from
        /// the same noise) or backup (LCM-style self-consistency against an EMA target).
        #[arg(long, default_value = "same_noise", value_parser = ["same_noise", "backup"])]
        loss: String,
        /// Student run directory (default: runs/<teacher>-distill-<method>, never overwritten).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Gradient steps (default: algo.decay_steps of the distill config); the learning rate's
        /// cosine decay ends there too, unless --set algo.decay_steps=N is given.
        #[arg(long)]
        steps: Option<u64>,
        /// Override one distill setting, e.g. --set algo.batch_size=128 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Evaluation episodes per evaluation seed.
        #[arg(long, default_value_t = 100)]
        eval_episodes: usize,
        /// Evaluation seeds.
        #[arg(long, default_value_t = 3)]
        eval_seeds: u64,
        /// Timed calls per latency figure.
        #[arg(long, default_value_t = 10_000)]
        latency_calls: usize,
        /// Evaluate teacher and student with freshly sampled noise at every call instead of
        /// their fixed noise (flow policies whose fixed-noise mode stalls, e.g. on push-t).
        #[arg(long)]
        stochastic: bool,
        /// Also print the report as one JSON object.
        #[arg(long)]
        json: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Export a PPO, SAC or distill run's deterministic policy (observation normalization, MLP,
    /// action scaling and clipping, action-chunk layout) as C99 source, a no_std Rust module or ONNX (model.onnx).
    Export {
        /// Run directory.
        #[arg(long)]
        run: PathBuf,
        /// Output format.
        #[arg(long, value_parser = ["c", "rust", "onnx"])]
        format: String,
        /// Output directory (created; must not exist or be empty).
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the deterministic actions of a run's policy (as `embodia eval` takes them) for raw
    /// observations (one per line, comma- or space-separated, from --obs or stdin): the
    /// reference that exported artifacts reproduce.
    Act {
        /// Run directory.
        #[arg(long)]
        run: PathBuf,
        /// Observations file (default: stdin).
        #[arg(long)]
        obs: Option<PathBuf>,
    },
    /// Run an exported model.onnx on raw observations (one per line, comma- or space-separated,
    /// from --obs or stdin); prints one raw action per line.
    RunOnnx {
        /// The ONNX model (`embodia export --format onnx`).
        #[arg(long, value_name = "FILE.onnx")]
        model: PathBuf,
        /// Observations file (default: stdin).
        #[arg(long)]
        obs: Option<PathBuf>,
        /// ONNX runtime: tract (feature `tract`) or ort (onnxruntime, feature `ort`).
        #[arg(long, default_value = "tract", value_parser = ["tract", "ort"])]
        runtime: String,
        /// onnxruntime shared library for `--runtime ort` (default: $ORT_DYLIB_PATH).
        #[arg(long, value_name = "libonnxruntime.so")]
        ort_lib: Option<PathBuf>,
    },
    /// Evaluate two runs of one task on the same episodes and print their paired difference
    /// (second minus first) with its 95% confidence interval, and success per instruction.
    Compare {
        /// The two run directories, first the baseline: `--run A --run B`.
        #[arg(long, num_args = 1, required = true)]
        run: Vec<PathBuf>,
        /// Episodes per run.
        #[arg(long, default_value_t = 128)]
        episodes: usize,
        /// Seed of the shared episodes [default: the first run's].
        #[arg(long)]
        seed: Option<u64>,
        /// How both policies choose actions: `sampled`, `zero` or `fixed-draw` (see `eval
        /// --mode`) [default: the first run's reference mode].
        #[arg(long, value_parser = EVAL_MODES, conflicts_with = "stochastic")]
        mode: Option<String>,
        /// The same as `--mode sampled`.
        #[arg(long)]
        stochastic: bool,
        /// Language-conditioned tasks (lang-cubes): draw these variants instead of the
        /// configured split: `train`, `held_out` or `all`.
        #[arg(long, value_parser = ["train", "held_out", "all"])]
        split: Option<String>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate a run's policy with deterministic actions, or a task's scripted expert
    /// (`--task NAME --expert scripted`).
    Eval {
        /// Run directory.
        #[arg(long, required_unless_present = "expert", conflicts_with = "expert")]
        run: Option<PathBuf>,
        /// Evaluate the task's scripted expert instead of a policy (reach, pick-cube, push-t, lang-cubes).
        #[arg(long, value_parser = ["scripted"], requires = "task")]
        expert: Option<String>,
        /// Task of the expert.
        #[arg(long, requires = "expert")]
        task: Option<String>,
        /// Seed of the expert's episodes.
        #[arg(long, default_value_t = 0, requires = "expert")]
        seed: u64,
        /// Episodes to run.
        #[arg(long, default_value_t = 10)]
        episodes: usize,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// How the policy chooses actions: `sampled` (a fresh initial noise per chunk; Gaussian
        /// policies: a sampled action), `zero` (deterministic from zero noise; Gaussian: the
        /// mean) or `fixed-draw` (deterministic from one fixed draw of the noise) [default: the
        /// policy's reference mode: sampled for flow, diffusion and VLA policies, zero otherwise].
        #[arg(long, value_parser = EVAL_MODES, conflicts_with_all = ["stochastic", "expert"])]
        mode: Option<String>,
        /// The same as `--mode sampled`.
        #[arg(long)]
        stochastic: bool,
        /// Also record this many deterministic episodes into RUN/episodes.rrd (link transforms
        /// with visual geometry, targets, observations, actions, rewards; needs the `rerun`
        /// feature).
        #[arg(long, value_name = "N", conflicts_with = "expert")]
        record_episodes: Option<usize>,
        /// Also draw frames of the first episode (of the policy or the expert) into this PNG,
        /// with embodia's own renderer (rapier tasks).
        #[arg(long, value_name = "FILE.png")]
        render: Option<PathBuf>,
        /// Frames to draw with `--render`, spread evenly over the episode.
        #[arg(long, default_value_t = 6, requires = "render")]
        render_frames: usize,
        /// Language-conditioned tasks (lang-cubes): evaluate on these variants instead of the
        /// configured split: `train`, `held_out` (generalization) or `all`.
        #[arg(long, value_parser = ["train", "held_out", "all"])]
        split: Option<String>,
        /// Also write every episode into this CSV: return, length, success at the end and at
        /// any step, instruction, and the objects' and targets' positions right after reset and
        /// one step before the end (to see what failing episodes share and how they end).
        #[arg(long, value_name = "FILE.csv", conflicts_with = "expert")]
        episodes_csv: Option<PathBuf>,
        /// Also write every step of every episode into this CSV: reward, success, the
        /// observation acted on, the action executed and the objects' and targets' positions
        /// (to see where failing episodes go wrong).
        #[arg(long, value_name = "FILE.csv", conflicts_with = "expert")]
        steps_csv: Option<PathBuf>,
    },
    /// Open the rerun viewer on a run's recordings (its .rrd files).
    View {
        /// Run directory (or one .rrd file).
        run: PathBuf,
    },
    /// Draw what a rapier task's cameras see (colour, and depth in grey, near bright, 0–2 m) in
    /// a few environments into one PNG: one row per environment, `front` (fixed) and `wrist`
    /// (on the end effector) side by side.
    RenderCamera {
        /// Rapier task.
        #[arg(long, default_value = "pick-cube")]
        task: String,
        /// Output PNG.
        #[arg(long)]
        out: PathBuf,
        /// Environments (rows).
        #[arg(long, default_value_t = 4)]
        envs: usize,
        /// Image side, pixels (64 to 224 is the useful range).
        #[arg(long, default_value_t = 128)]
        res: usize,
        /// Visual domain randomization: object colours, light, camera jitter, distractors.
        #[arg(long)]
        randomize: bool,
        /// Reset seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Steps of zero action before the picture.
        #[arg(long, default_value_t = 0)]
        steps: usize,
    },
    /// Draw the training curves of one or more runs into one PNG (one color per run, legend =
    /// run directory name): return and success rate vs env steps and wall time, losses,
    /// entropy, SAC α or PPO KL.
    Plot {
        /// Run directories (each with a metrics.csv).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Output PNG.
        #[arg(long, default_value = "curves.png")]
        out: PathBuf,
    },
    /// Record demonstrations of a task's scripted expert, or a trained policy's own episodes
    /// (`--run`), into a LeRobot v3 dataset (observations, actions, rewards, success, episode
    /// boundaries, normalization statistics).
    Record {
        /// Task with a scripted expert (reach, pick-cube, push-t, lang-cubes).
        #[arg(long, required_unless_present = "run")]
        task: Option<String>,
        /// Expert.
        #[arg(long, default_value = "scripted")]
        expert: String,
        /// Record this run's policy instead of an expert: the actions it executes and the
        /// images its VLA sees, in the run's own environment (e.g. a `vla-dsrl` run, whose
        /// successful episodes `vla-sft`'s `policy_datasets` distills into the VLA).
        #[arg(long, conflicts_with_all = ["task", "noise", "camera", "for_algo"])]
        run: Option<PathBuf>,
        /// With `--run`: sample the policy's actions instead of taking its mode.
        #[arg(long)]
        stochastic: bool,
        /// Episodes to write.
        #[arg(long, default_value_t = 50)]
        episodes: usize,
        /// Dataset directory (written whole or not at all).
        #[arg(long)]
        out: PathBuf,
        /// Seed of the episodes.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Environments stepped in parallel.
        #[arg(long, default_value_t = 16)]
        envs: usize,
        /// Keep only successful episodes (recording more until --episodes of them are kept).
        #[arg(long)]
        only_success: bool,
        /// Replace OUT if it exists and is not empty.
        #[arg(long)]
        force: bool,
        /// DART perturbation of the executed actions (fraction of the action clip; labels stay
        /// the expert's clean actions). `train --algo sft --demos N` records with 0.05.
        #[arg(long, default_value_t = 0.0)]
        noise: f32,
        /// Also record the task's cameras (front, and wrist on arms) at this many pixels square,
        /// as PNG image columns `observation.images.<camera>`.
        #[arg(long)]
        camera: Option<usize>,
        /// Record in the environment this training algorithm's preset configures for the task
        /// (e.g. vla-sft: the observation is the robot's own state), so `train --algo ALGO
        /// --dataset` can read the dataset.
        #[arg(long, value_name = "ALGO")]
        for_algo: Option<String>,
    },
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
    Deploy(DeployArgs),
    /// Record each joint's range into a calibration file: torque goes off, move every joint
    /// through its full range, then press Enter.
    Calibrate {
        /// Serial port of the servo bus, e.g. /dev/ttyUSB0.
        #[arg(long)]
        port: String,
        /// Robot (hardware map).
        #[arg(long, default_value = "so101")]
        robot: String,
        /// Output file (default: calibration-<robot>.json).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Record for this many seconds instead of until Enter (non-interactive).
        #[arg(long)]
        seconds: Option<f64>,
    },
    /// Emulate a robot's STS3215 servos on a new pseudo-terminal: prints its /dev/pts/N path on
    /// the first line, then serves (protocol 0, ids as on the robot) until Ctrl-C.
    ServoEmulator {
        /// Robot whose servos to emulate.
        #[arg(long, default_value = "so101")]
        robot: String,
    },
}

/// Arguments of `embodia deploy`.
#[derive(Args)]
struct DeployArgs {
    /// Run directory (a PPO or SAC run of a rapier arm task, e.g. `reach`).
    #[arg(long)]
    run: PathBuf,
    /// Robot (hardware map).
    #[arg(long, default_value = "so101")]
    robot: String,
    /// Serial port of the servo bus, e.g. /dev/ttyUSB0 (needs `--calibration`).
    #[arg(long, required_unless_present_any = ["dry_run", "sim"], conflicts_with_all = ["dry_run", "sim"])]
    port: Option<String>,
    /// Calibration file written by `embodia calibrate`.
    #[arg(long, requires = "port")]
    calibration: Option<PathBuf>,
    /// Control rate, Hz.
    #[arg(long, default_value_t = 50.0)]
    hz: f64,
    /// Run against the servo emulator on a pseudo-terminal instead of hardware.
    #[arg(long, conflicts_with = "sim")]
    dry_run: bool,
    /// Run against the rapier simulation of the run's task.
    #[arg(long)]
    sim: bool,
    /// Episodes (a new target each; servo robots home to the default pose before each).
    #[arg(long, default_value_t = 5)]
    episodes: usize,
    /// Seed of the targets.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Record the episodes (observations and actions at the control rate) into a new LeRobot
    /// v3 dataset in this directory.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Flow-policy recipe: SFT on scripted demonstrations (success S0), then flow RL for a
    /// wall-time budget (success S1), with rollout throughput and the sim / inference / update
    /// time split; per task and seed.
    Flow {
        /// Tasks, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "pick-cube,push-t")]
        tasks: Vec<String>,
        /// Flow-RL variant: ppo-flow-sde or ppo-flow-noise; or dppo (the SFT trains a diffusion
        /// policy instead).
        #[arg(long, default_value = "ppo-flow-sde")]
        algo: String,
        /// Successful scripted demonstrations for SFT (default: the task's `sft` preset, as
        /// `embodia train --algo sft` uses: 20, push-t 200).
        #[arg(long)]
        demos: Option<usize>,
        /// SFT gradient steps (default: the task's `sft` preset).
        #[arg(long)]
        sft_steps: Option<u64>,
        /// Override one SFT setting, e.g. --sft-set algo.policy.chunk=1 (repeatable).
        #[arg(long = "sft-set", value_name = "KEY=VALUE")]
        sft_overrides: Vec<String>,
        /// Wall-time budget of flow RL per task and seed, seconds (default 300 without
        /// `--rl-steps`, unlimited with it); RL stops at the first budget it reaches.
        #[arg(long)]
        rl_seconds: Option<f64>,
        /// Env-step budget of flow RL per task and seed.
        #[arg(long)]
        rl_steps: Option<u64>,
        /// Parallel environments of flow RL (default: the flow-RL config's `algo.num_envs`).
        #[arg(long)]
        envs: Option<usize>,
        /// Evaluation episodes for S0 and S1.
        #[arg(long, default_value_t = 100)]
        eval_episodes: usize,
        /// Number of seeds: `--seed` and the N − 1 after it.
        #[arg(long, default_value_t = 1)]
        seeds: u64,
        /// First seed, so that seeds can run as separate processes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// TOML file overriding the flow-RL run's defaults, as `embodia train --config` reads.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Override one flow-RL setting, e.g. --set algo.policy_lr=1e-5 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Write learning curves (metrics.csv, curves.png) under DIR/<task>-seed<N>/<algo>/, and the
        /// SFT and RL policies as runs in DIR/<task>-seed<N>/sft/ and …/<algo>/ (for eval, distill, export).
        #[arg(long, value_name = "DIR", default_value = "runs/bench-flow")]
        out: PathBuf,
        /// Also train Gaussian PPO from scratch for as many env steps as flow RL took and report its success.
        #[arg(long)]
        baseline: bool,
        /// Also print one JSON object per result.
        #[arg(long)]
        json: bool,
    },
    /// Env steps and wall seconds until the deterministic evaluation first reaches the task's
    /// solve threshold, per seed, then medians.
    Solve {
        #[command(flatten)]
        settings: Settings,
        /// Number of seeds: `--seed` (default 1) and the N − 1 after it, so that seeds can run
        /// as separate processes.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
    /// Exported policies on an emulated Cortex-M4F (QEMU mps2-an386, arm-none-eabi-gcc):
    /// actions vs embodia's, instructions and estimated cycles per forward pass, flash / RAM /
    /// stack. Default cases: a [64, 64] MLP (pendulum PPO, ELU and ReLU) and the quadrotor-hover
    /// SAC policy, freshly initialized.
    Mcu {
        /// Trained runs to measure as well (repeatable).
        #[arg(long)]
        run: Vec<PathBuf>,
        /// Also measure the no_std Rust export (needs `rustup target add thumbv7em-none-eabihf`).
        #[arg(long)]
        rust: bool,
        /// Also run the same policies with RLtools' ARM dense layers (its headers in
        /// RLTOOLS_INCLUDE: `export RLTOOLS_INCLUDE="$(bash bench/rltools_include.sh)"`); ELU
        /// policies are skipped, RLtools has no ELU.
        #[arg(long)]
        rltools: bool,
        /// Keep the firmware build directories here instead of a temporary directory.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// Also print the figures as one JSON line.
        #[arg(long)]
        json: bool,
    },
    /// The deploy loop against the servo emulator on a pseudo-terminal: timing of a loop at
    /// `--hz` for `--seconds` (read, infer, write, jitter), then fault injection (every fault
    /// kind in turn): commands outside the limits, faults detected, time to a safe state.
    Deploy {
        /// Run whose policy drives the arm (default: a joint sweep beyond the limits).
        #[arg(long)]
        run: Option<PathBuf>,
        /// Control rate, Hz.
        #[arg(long, default_value_t = 50.0)]
        hz: f64,
        /// Seconds of the timing phase.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Faults to inject.
        #[arg(long, default_value_t = 1000)]
        faults: usize,
        /// Seed of the fault schedule.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
    /// πRL's recipe on a language-conditioned family: SFT of the VLA on scripted demonstrations
    /// with camera images (success S0), then GRPO on every training variant for a wall-time
    /// budget (S1); success on training and held-out variants, RL time split.
    Vla {
        /// The language-conditioned family.
        #[arg(long, default_value = "lang-cubes")]
        task: String,
        /// RL algorithm: vla-ppo-flow-sde, vla-ppo-flow-noise or vla-dsrl.
        #[arg(long, default_value = "vla-ppo-flow-sde")]
        algo: String,
        /// SFT gradient steps.
        #[arg(long, default_value_t = 3000)]
        sft_steps: u64,
        /// Wall-time budget of RL, seconds.
        #[arg(long, default_value_t = 1800.0)]
        rl_seconds: f64,
        /// Evaluation episodes per split (training and held-out variants), each policy.
        #[arg(long, default_value_t = 64)]
        eval_episodes: usize,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Override one SFT setting, e.g. --sft-set algo.demos=460 (repeatable).
        #[arg(long = "sft-set", value_name = "KEY=VALUE")]
        sft_overrides: Vec<String>,
        /// Override one RL setting, e.g. --rl-set algo.policy_lr=1e-4 (repeatable).
        #[arg(long = "rl-set", value_name = "KEY=VALUE")]
        rl_overrides: Vec<String>,
        /// Start RL from this finished vla-sft run instead of training one (--sft-steps and
        /// --sft-set unused).
        #[arg(long, value_name = "RUN_DIR")]
        sft_run: Option<PathBuf>,
        /// Then distill the RL policy into a fresh VLA (PLD): vla-sft with the SFT run's
        /// settings for this many gradient steps on the demonstrations and the RL policy's
        /// successful episodes (S2); 0: no distillation.
        #[arg(long, default_value_t = 0)]
        distill_steps: u64,
        /// Successful RL episodes (sampled, training variants) the distillation trains on.
        #[arg(long, default_value_t = 1000)]
        distill_episodes: usize,
        /// Directory of the SFT run (<out>/sft, a run directory), the RL curves (<out>/rl) and
        /// with distillation the RL episodes (<out>/rl-episodes) and the distilled run
        /// (<out>/distilled).
        #[arg(long, default_value = "bench-vla")]
        out: PathBuf,
        /// Also print one JSON object with the result.
        #[arg(long)]
        json: bool,
    },
    /// Cost of the VLA on the selected device (--device): forward latency of the prefix and of a
    /// whole action chunk, and of one SFT gradient step, per preset and batch size.
    VlaModel {
        /// Presets, comma-separated: tiny (1.2M parameters), small (10.8M), base (105M).
        #[arg(long, value_delimiter = ',', default_value = "tiny,small")]
        presets: Vec<String>,
        /// Batch sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,64")]
        batches: Vec<usize>,
        /// Camera views per sample (1 or 2).
        #[arg(long, default_value_t = 1)]
        views: usize,
        /// Timed calls per figure, after two warm-up calls.
        #[arg(long, default_value_t = 7)]
        reps: usize,
        /// Also time SFT gradient steps (flow-matching loss, backward, Adam).
        #[arg(long)]
        train: bool,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
    /// A language-conditioned family: the scripted expert's success per variant (episodes end
    /// on success), then env-steps/s under random actions without a camera, with the front
    /// camera, and with front + wrist cameras.
    Lang {
        /// The family.
        #[arg(long, default_value = "lang-cubes")]
        task: String,
        /// Expert episodes per variant (0: skip the expert figures).
        #[arg(long, default_value_t = 10)]
        episodes: usize,
        /// Batch size of the throughput figures.
        #[arg(long, default_value_t = 64)]
        envs: usize,
        /// Camera image side, pixels.
        #[arg(long, default_value_t = 64)]
        res: usize,
        /// Batch steps timed per throughput figure.
        #[arg(long, default_value_t = 50)]
        steps: usize,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
    /// Images per second of the CPU camera renderer: every camera (colour and depth) of every
    /// environment of a batch of a rapier task, physics stepped (untimed) between renders.
    Render {
        /// Rapier task.
        #[arg(long, default_value = "pick-cube")]
        task: String,
        /// Batch size.
        #[arg(long, default_value_t = 64)]
        envs: usize,
        /// Image sides, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "64,128")]
        res: Vec<usize>,
        /// Only this camera (default: all of the task's, `front` and `wrist`).
        #[arg(long)]
        camera: Option<String>,
        /// With visual domain randomization (3 distractors and the rest).
        #[arg(long)]
        randomize: bool,
        /// rayon thread counts, comma-separated (default: all cores).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// Batch renders timed per measurement.
        #[arg(long, default_value_t = 50)]
        frames: usize,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
    /// Batch-1 inference latency of an exported MLP policy (default [17, 256, 256, 6]):
    /// embodia's forward pass, and its model.onnx in tract and onnxruntime (ort) where compiled
    /// in; median and p99 per call. bench/export_latency.sh adds PyTorch and Python onnxruntime.
    ExportLatency {
        /// Layer widths: observation, hidden…, action.
        #[arg(long, value_delimiter = ',', default_value = "17,256,256,6")]
        layers: Vec<usize>,
        /// Timed calls per implementation.
        #[arg(long, default_value_t = 10_000)]
        calls: usize,
        /// Directory to write model.onnx into (new; default: a temporary one, removed after).
        #[arg(long)]
        out: Option<PathBuf>,
        /// onnxruntime shared library for the ort row (default: $ORT_DYLIB_PATH; the row is
        /// skipped without one).
        #[arg(long, value_name = "libonnxruntime.so")]
        ort_lib: Option<PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Environment steps per second with uniformly random actions, resets and observation and
    /// reward computation included, for each combination of batch size and thread count.
    Sim {
        #[command(flatten)]
        settings: Settings,
        /// Batch sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "64")]
        envs: Vec<usize>,
        /// rayon thread counts, comma-separated (default: all cores).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// Environment steps per measurement.
        #[arg(long = "measure-steps", default_value_t = 20_000)]
        measure_steps: u64,
        /// Also measure the task's tensor environment on `--device` (stepped on the device with
        /// device-side random actions, results left there).
        #[arg(long)]
        tensor: bool,
        /// With --tensor and --algo ppo: also train PPO (`--set` applies) for this many iterations
        /// with its rollouts kept on the device, and report training env-steps/s.
        #[arg(long, value_name = "N", requires = "tensor")]
        ppo_iterations: Option<u64>,
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
    },
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
    /// Validate a URDF file and print a summary of its links and joints.
    ///
    /// The summary lists each link's mass, each joint's type, parent -> child, limits and mimic,
    /// the total mass and the actuated degrees of freedom. An invalid file is reported as
    /// `error: FILE:LINE: ELEMENT: MESSAGE` with exit code 1.
    Check {
        /// The URDF file (meshes are resolved relative to its directory).
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
    /// sft: record this many successful scripted-expert demonstrations in memory
    /// (sets algo.demos).
    #[arg(long, value_name = "N")]
    demos: Option<usize>,
    /// sft: train on a LeRobot dataset directory instead of recorded demonstrations.
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
        if !matches!(config.algo, AlgoConfig::PpoFlow(_)) {
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
    if std::env::var_os(embodia::run::GPU_PROBE_ONLY_ENV).is_some() {
        // The child of `gpu_probe_in_child`: select the GPU (which runs the probe kernels), exit.
        return match embodia::run::named_device("gpu") {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.device == "gpu" && cfg!(feature = "gpu") {
        embodia::run::gpu_probe_in_child(&std::env::current_exe()?)?;
    }
    embodia::run::select_device(&cli.device)?;
    if let Some(name) = embodia::run::gpu_name() {
        // wgpu picks the adapter (Vulkan, Metal, DX12, or OpenGL where nothing else exists):
        // say which, so a run on a software rasterizer is never mistaken for a GPU run.
        eprintln!("--device gpu: {name}");
    }
    match cli.command {
        Command::List => list(),
        Command::Config { algo, task } => {
            let config = resolve(&ConfigSources { task: Some(&task), algorithm: Some(&algo), ..Default::default() })?;
            print!("{}", config.to_toml());
            Ok(())
        }
        Command::Train { settings, run_dir, resume, quiet, viz, viz_save } => {
            let target = match (viz, viz_save) {
                (true, _) => Some(VizTarget::Viewer),
                (false, Some(file)) => Some(VizTarget::File(file)),
                (false, None) => None,
            };
            train(&settings, run_dir, resume, quiet, target)
        }
        Command::Distill {
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
        } => {
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
        Command::Export { run, format, out } => {
            let format = embodia::deploy::export::Format::parse(&format).expect("clap checked the format");
            for file in embodia::export::export_run(&run, format, &out)? {
                println!("{}", file.display());
            }
            Ok(())
        }
        Command::RunOnnx { model, obs, runtime, ort_lib } => {
            let runtime = embodia::actions::runtime(&runtime, ort_lib.or_else(ort_dylib_path))?;
            let (text, source) = read_observations(obs.as_deref())?;
            print!("{}", embodia::actions::run_onnx(&model, &runtime, &text, &source)?);
            Ok(())
        }
        Command::Act { run, obs } => {
            let (text, source) = read_observations(obs.as_deref())?;
            print!("{}", embodia::actions::act(&run, &text, &source)?);
            Ok(())
        }
        Command::Eval {
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
        } => {
            let csv = EvalCsv { episodes: episodes_csv.as_deref(), steps: steps_csv.as_deref() };
            eval(&run, episodes, json, eval_mode(mode.as_deref(), stochastic), split.as_deref(), csv)?;
            if let Some(out) = render {
                let (config, learner) = load_learner(&run)?;
                embodia::render::render_learner_episode(learner.as_ref(), &config, render_frames, &out)?;
                eprintln!("drew {render_frames} frames of the first episode into {}", out.display());
            }
            match record_episodes {
                Some(n) => record(&run, n),
                None => Ok(()),
            }
        }
        Command::Compare { run, episodes, seed, mode, stochastic, split, json } => {
            compare(&run, episodes, seed, eval_mode(mode.as_deref(), stochastic), split.as_deref(), json)
        }
        Command::View { run } => Ok(embodia::viz::view(&run)?),
        Command::Eval { task, episodes, json, seed, render, render_frames, split, .. } => {
            let task = task.as_deref().unwrap_or_default();
            eval_expert(task, episodes, seed, json, split.as_deref())?;
            if let Some(out) = render {
                embodia::render::render_expert_episode(task, seed, render_frames, &out)?;
                eprintln!("drew {render_frames} frames of the expert's first episode into {}", out.display());
            }
            Ok(())
        }
        Command::Bench { bench: BenchCommand::Solve { settings, seeds, json } } => bench_solve(&settings, seeds, json),
        Command::Bench {
            bench:
                BenchCommand::Flow {
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
                },
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
            bench: BenchCommand::Sim { settings, envs, threads, measure_steps, tensor, ppo_iterations, json },
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
        Command::Bench { bench: BenchCommand::ExportLatency { layers, calls, out, ort_lib, json } } => {
            bench_export_latency(&layers, calls, out, ort_lib.or_else(ort_dylib_path), json)
        }
        Command::Bench { bench: BenchCommand::Deploy { run, hz, seconds, faults, seed, json } } => {
            bench_deploy(run.as_deref(), hz, seconds, faults, seed, json)
        }
        Command::Bench { bench: BenchCommand::Mcu { run, rust, rltools, keep, json } } => {
            bench_mcu(&run, rust, rltools, keep, json)
        }
        Command::Deploy(args) => deploy(&args),
        Command::Calibrate { port, robot, out, seconds } => calibrate(&port, &robot, out, seconds),
        Command::ServoEmulator { robot } => servo_emulator(&robot),
        Command::Plot { runs, out } => plot(&runs, &out),
        Command::RenderCamera { task, out, envs, res, randomize, seed, steps } => {
            anyhow::ensure!(envs > 0 && (8..=1024).contains(&res), "`--envs` must be ≥ 1 and `--res` in 8..=1024");
            let names = embodia::camera::render_task(&task, envs, res, randomize, seed, steps, &out)?;
            eprintln!("drew cameras {} of {envs} environments of {task} into {}", names.join(", "), out.display());
            Ok(())
        }
        Command::Bench {
            bench:
                BenchCommand::Vla {
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
                },
        } => {
            let spec = embodia::vla_bench::VlaBenchSpec {
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
        Command::Bench { bench: BenchCommand::VlaModel { presets, batches, views, reps, train, json } } => {
            bench_vla_model(&embodia::vla_model_bench::VlaModelBenchSpec { presets, batches, views, reps, train }, json)
        }
        Command::Bench { bench: BenchCommand::Lang { task, episodes, envs, res, steps, json } } => {
            bench_lang(&task, episodes, envs, res, steps, json)
        }
        Command::Bench {
            bench: BenchCommand::Render { task, envs, res, camera, randomize, threads, frames, json },
        } => bench_render(&task, envs, &res, camera.as_deref(), randomize, &threads, frames, json),
        Command::Record { run: Some(run), episodes, out, seed, envs, only_success, force, stochastic, .. } => {
            let req =
                embodia::demos::PolicyRecordRequest { run, episodes, seed, envs, only_success, stochastic, out, force };
            let s = embodia::demos::record_policy(&req)?;
            println!("{}", s.describe(&format!("policy of {}", req.run.display()), &req.out));
            Ok(())
        }
        Command::Record {
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
        } => {
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
            print!("{}", embodia::robots::load_urdf(&file)?.summary());
            Ok(())
        }
    }
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
