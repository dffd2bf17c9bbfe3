//! The `embodia` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use embodia::algos::{ConsistencyLoss, DistillMethod, EvalMode, EvalResult, MetricRow, MetricSink, StepTrace};
use embodia::bench::{CONFIRM_EPISODES, GATE_EPISODES, SOLVE_EVAL_EPISODES, median, solve};
use embodia::config::{ALGORITHMS, AlgoConfig, ConfigSources, TrainConfig, resolve};
use embodia::run::{Run, evaluate_learner_in, fresh_run_dir, load_learner, write_episode_outcomes, write_step_trace};
use embodia::sim::SolveMetric;
use embodia::viz::{MetricsRecorder, VizTarget};
use indicatif::{ProgressBar, ProgressStyle};

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

fn distill(
    req: &embodia::distill::DistillRequest,
    out: Option<PathBuf>,
    settings: embodia::distill::ReportSettings,
    json: bool,
    quiet: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(settings.episodes > 0, "invalid value for `--eval-episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(settings.seeds > 0, "invalid value for `--eval-seeds`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(settings.calls > 0, "invalid value for `--latency-calls`: 0 (allowed: ≥ 1)");
    let config = embodia::distill::distill_config(req)?;
    let dir = out.unwrap_or_else(|| {
        let teacher = req.teacher.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let method = if req.method == DistillMethod::MeanFlow { "meanflow" } else { "consistency" };
        let base = Path::new("runs").join(format!("{teacher}-distill-{method}"));
        let mut dir = base.clone();
        let mut k = 2;
        while dir.exists() {
            dir = PathBuf::from(format!("{}-{k}", base.display()));
            k += 1;
        }
        dir
    });
    let mut run = Run::create(&dir, config.clone())?;
    eprintln!(
        "distilling {} into a one-step student on {} ({} gradient steps) in {}",
        req.teacher.display(),
        config.task,
        config.total_steps,
        dir.display()
    );
    let start = std::time::Instant::now();
    let mut progress = Progress::new(config.total_steps, 0, quiet);
    let result = run.train(&mut [&mut progress]);
    progress.bar.finish_and_clear();
    result?;
    run.final_eval(config.eval_episodes)?;
    eprintln!(
        "student saved in {} after {:.0} s; evaluating teacher and student",
        dir.display(),
        start.elapsed().as_secs_f64()
    );
    let report = embodia::distill::report(&dir, settings)?;
    print!("{}", embodia::distill::describe(&report));
    if json {
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(())
}

fn list() -> anyhow::Result<()> {
    println!("tasks:");
    for t in embodia::sim::tasks() {
        let solved = match t.solved_by {
            SolveMetric::SuccessRate => format!("solved at success ≥ {}%", t.solve_threshold * 100.0),
            SolveMetric::Return => format!("solved at return ≥ {}", t.solve_threshold),
        };
        println!("  {:<26} {} ({solved})", t.name, t.description);
    }
    println!("algorithms:");
    for (name, description) in ALGORITHMS {
        println!("  {name:<26} {description}");
    }
    println!("robots:");
    for r in embodia::robots::catalog() {
        println!("  {:<26} {}", r.name, r.description);
    }
    Ok(())
}

fn train(
    settings: &Settings,
    run_dir: Option<PathBuf>,
    resume: Option<PathBuf>,
    quiet: bool,
    viz: Option<VizTarget>,
) -> anyhow::Result<()> {
    // Refuse the viewer flags of a build without rerun before creating anything.
    let name = |dir: &Path| dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut recorder = match &viz {
        Some(target) => Some(MetricsRecorder::new(
            target,
            &name(run_dir.as_deref().or(resume.as_deref()).unwrap_or(Path::new("train"))),
        )?),
        None => None,
    };
    let mut run = match &resume {
        Some(dir) => Run::resume(dir, settings.steps)?,
        None => {
            let config = settings.resolve()?;
            let dir = run_dir.unwrap_or_else(|| fresh_run_dir(Path::new("runs"), &config));
            Run::create(&dir, config)?
        }
    };
    let config = run.config.clone();
    eprintln!(
        "training {} on {} (seed {}, {} {}) in {}",
        config.algorithm,
        config.task,
        config.seed,
        config.total_steps,
        if embodia::config::GRADIENT_STEP_ALGORITHMS.contains(&config.algorithm.as_str()) {
            "gradient steps"
        } else {
            "env steps"
        },
        run.dir.display()
    );
    let mut progress = Progress::new(config.total_steps, run.learner().env_steps(), quiet);
    let result = match recorder.as_mut() {
        Some(recorder) => run.train(&mut [&mut progress, recorder]),
        None => run.train(&mut [&mut progress]),
    };
    progress.bar.finish_and_clear();
    result?;
    let eval = run.final_eval(config.eval_episodes)?;
    eprintln!("evaluation: {}", describe_eval(&eval));
    if let Some(student) = run.final_student_eval(config.eval_episodes)? {
        eprintln!(
            "one-step student: {}; its run: {}",
            describe_eval(&student),
            run.dir.join(embodia::run::STUDENT_DIR).display()
        );
    }
    eprintln!("run saved in {}", run.dir.display());
    // The run is complete either way: a viewer that could not be reached is a warning, a
    // recording file that could not be written an error.
    if let Some(recorder) = recorder {
        match (recorder.finish(), &viz) {
            (Err(e), Some(VizTarget::Viewer)) => eprintln!("warning: metrics did not reach the viewer: {e}"),
            (result, _) => result?,
        }
    }
    Ok(())
}

/// The training progress bar: env steps, steps/s, ETA and the latest mean episode return.
struct Progress {
    bar: ProgressBar,
    last_return: Option<f64>,
}

impl Progress {
    fn new(total_steps: u64, done_steps: u64, quiet: bool) -> Self {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(total_steps) };
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} steps  {rate}  ETA {eta}  {msg}",
            )
            .expect("valid template")
            .with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} steps/s", state.per_sec());
            })
            .progress_chars("=> "),
        );
        bar.set_position(done_steps);
        bar.reset_eta();
        Self { bar, last_return: None }
    }
}

impl MetricSink for Progress {
    fn record(&mut self, row: &MetricRow) {
        self.bar.set_position(row.env_steps);
        self.last_return = row.return_mean.or(self.last_return);
        if let Some(r) = self.last_return {
            self.bar.set_message(format!("return {r:.1}"));
        }
    }
}

fn describe_eval(e: &EvalResult) -> String {
    let success = match (e.success_rate, e.success_once_rate) {
        (Some(end), Some(once)) if once != end => {
            format!(", success {:.0}% (at any step: {:.0}%)", 100.0 * end, 100.0 * once)
        }
        (Some(end), _) => format!(", success {:.0}%", 100.0 * end),
        _ => String::new(),
    };
    format!(
        "mean return {:.1} ± {:.1}, mean length {:.0}{success} ({} evaluation, {} episodes)",
        e.mean_return, e.std_return, e.mean_length, e.mode, e.episodes
    )
}

/// `env` (or the task's default config) with the language family's split set to `split`
/// (`train`, `held_out`, `all`); `env` unchanged without `split`.
fn with_split(
    task: &str,
    env: Option<embodia::sim::TaskConfig>,
    split: Option<&str>,
) -> anyhow::Result<Option<embodia::sim::TaskConfig>> {
    use embodia::sim::rapier::language::Split;
    let Some(split) = split else { return Ok(env) };
    let mut config = env.or_else(|| embodia::sim::task_config(task));
    let Some(language) = config.as_mut().and_then(|c| c.command.language.as_mut()) else {
        anyhow::bail!("`--split` needs a language-conditioned task (lang-cubes); `{task}` has no instructions");
    };
    language.split = match split {
        "held_out" => Split::HeldOut,
        "all" => Split::All,
        _ => Split::Train,
    };
    Ok(config)
}

/// Where `embodia eval --run` also writes its episodes and its steps.
struct EvalCsv<'a> {
    episodes: Option<&'a Path>,
    steps: Option<&'a Path>,
}

/// The `--mode` values of `eval` and `compare` ([`EvalMode::name`]).
const EVAL_MODES: [&str; 3] = ["sampled", "zero", "fixed-draw"];

/// The evaluation mode of `--mode NAME` (checked by clap against [`EVAL_MODES`]) or
/// `--stochastic`; `None`: the policy's reference mode.
fn eval_mode(name: Option<&str>, stochastic: bool) -> Option<EvalMode> {
    if stochastic { Some(EvalMode::Sampled) } else { name.and_then(EvalMode::from_name) }
}

fn eval(
    run: &Path,
    episodes: usize,
    json: bool,
    mode: Option<EvalMode>,
    split: Option<&str>,
    csv: EvalCsv,
) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let (mut config, learner) = load_learner(run)?;
    config.env = with_split(&config.task, config.env.take(), split)?;
    let mut trace = csv.steps.map(|_| StepTrace::default());
    let mode = mode.unwrap_or_else(|| learner.default_eval_mode());
    let result = evaluate_learner_in(learner.as_ref(), &config, episodes, mode, trace.as_mut())?;
    if let Some(path) = csv.episodes {
        write_episode_outcomes(&result, path)?;
        eprintln!("wrote {} episodes into {}", result.per_episode.len(), path.display());
    }
    if let (Some(path), Some(trace)) = (csv.steps, &trace) {
        write_step_trace(trace, path)?;
        eprintln!("wrote {} steps into {}", trace.len(), path.display());
    }
    if json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        println!(
            "{} on {} after {} env steps: {}",
            config.algorithm,
            config.task,
            learner.env_steps(),
            describe_eval(&result)
        );
        for r in &result.per_instruction {
            println!("  {:>3} of {:>3} successful  {}", r.successes, r.episodes, r.instruction);
        }
        for (name, value) in learner.eval_diagnostics() {
            println!("  {name}: {value:.4}");
        }
    }
    Ok(())
}

fn compare(
    runs: &[PathBuf],
    episodes: usize,
    seed: Option<u64>,
    mode: Option<EvalMode>,
    split: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::sim::rapier::language::Split;
    let [a, b] = runs else {
        anyhow::bail!("invalid `--run`: {} given (allowed: exactly two, `--run A --run B`)", runs.len());
    };
    anyhow::ensure!(episodes > 1, "invalid value for `--episodes`: {episodes} (allowed: ≥ 2)");
    let split = split.map(|s| match s {
        "held_out" => Split::HeldOut,
        "all" => Split::All,
        _ => Split::Train,
    });
    let spec = embodia::compare::CompareSpec { episodes, mode, seed, split };
    let c = embodia::compare::compare_runs(a, b, &spec)?;
    if json {
        println!("{}", serde_json::to_string(&c)?);
        return Ok(());
    }
    let (scale, percent, unit) = if c.metric == "success" { (100.0, "%", " points") } else { (1.0, "", "") };
    println!(
        "{} episodes of {} (seed {}, {} evaluation), {} of each run:",
        c.episodes, c.task, c.seed, c.mode, c.metric
    );
    println!("  A {}: {:.1}{percent}", a.display(), scale * c.a);
    println!("  B {}: {:.1}{percent}", b.display(), scale * c.b);
    let mut line = format!(
        "  B − A: {:+.1}{unit}, 95% CI [{:+.1}, {:+.1}] (paired)",
        scale * c.difference,
        scale * c.ci95[0],
        scale * c.ci95[1]
    );
    if let (Some(a_only), Some(b_only)) = (c.a_only, c.b_only) {
        line += &format!("; A alone succeeded in {a_only} episodes, B alone in {b_only}");
    }
    println!("{line}");
    if !c.per_instruction.is_empty() {
        println!("  successes of A / B, of the episodes of each instruction:");
    }
    for r in &c.per_instruction {
        println!("  {:>3} / {:>3} of {:>3}  {}", r.a_successes, r.b_successes, r.episodes, r.instruction);
    }
    Ok(())
}

fn eval_expert(task: &str, episodes: usize, seed: u64, json: bool, split: Option<&str>) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let config = with_split(task, None, split)?;
    let e = embodia::sim::rapier::expert::evaluate_task_expert(task, config.as_ref(), 16, episodes, seed)?;
    if json {
        let value = serde_json::json!({
            "task": task, "expert": "scripted", "episodes": e.episodes, "success_rate": e.success_rate,
            "mean_return": e.mean_return, "mean_length": e.mean_length,
        });
        println!("{value}");
    } else {
        println!(
            "scripted expert on {task}, {} episodes: success {:.0}%, mean return {:.1}, mean length {:.0}",
            e.episodes,
            100.0 * e.success_rate,
            e.mean_return,
            e.mean_length
        );
    }
    Ok(())
}

fn record(run: &Path, episodes: usize) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--record-episodes`: 0 (allowed: ≥ 1)");
    let (config, learner) = load_learner(run)?;
    let out = run.join(embodia::viz::EPISODES_FILE);
    let r = embodia::viz::record_episodes(learner.as_ref(), &config, episodes, &out)?;
    let steps: u32 = r.lengths.iter().sum();
    let success =
        if config.env.is_some() && embodia::sim::tasks().iter().any(|t| t.name == config.task && t.has_success) {
            format!(", {} of {} successful", r.successes.iter().filter(|&&s| s).count(), episodes)
        } else {
            String::new()
        };
    eprintln!(
        "recorded {episodes} episodes ({steps} env steps{success}) in {}; open it with `embodia view {}` (viewer: {})",
        out.display(),
        run.display(),
        embodia::viz::VIEWER_INSTALL
    );
    Ok(())
}

fn plot(runs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let curves = runs.iter().map(|dir| embodia::plot::RunCurves::from_run_dir(dir)).collect::<Result<Vec<_>, _>>()?;
    embodia::plot::plot_runs(&curves, out)?;
    println!("wrote {}", out.display());
    Ok(())
}

fn bench_solve(settings: &Settings, seeds: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(seeds > 0, "invalid value for `--seeds`: 0 (allowed: ≥ 1)");
    let base = settings.resolve()?;
    let info = embodia::sim::tasks().iter().find(|t| t.name == base.task);
    let gate = if info.is_some_and(|t| t.solved_by == SolveMetric::SuccessRate) {
        format!(" (success rate; then on {GATE_EPISODES} more episodes)")
    } else {
        String::new()
    };
    println!(
        "bench solve: {} on {}, deterministic eval of {SOLVE_EVAL_EPISODES} episodes after every iteration, threshold {}{gate}, budget {} steps",
        base.algorithm,
        base.task,
        info.map_or(f32::NAN, |t| t.solve_threshold),
        base.total_steps
    );
    let mut results = Vec::new();
    let first = settings.seed.unwrap_or(1);
    for seed in first..first + seeds {
        let config = TrainConfig { seed, ..base.clone() };
        // A seed can train for many minutes: a line on stderr at most every 30 s shows it is alive.
        let mut shown = 0.0;
        let r = solve(&config, &mut |steps, wall, ret, success| {
            if wall - shown >= 30.0 {
                shown = wall;
                let success = success.map(|s| format!(" success={s:.2}")).unwrap_or_default();
                eprintln!("  seed={seed} env_steps={steps} wall_s={wall:.0} eval_return={ret:.1}{success}");
            }
        })?;
        let confirm = r
            .confirm_success
            .map(|s| format!(" confirm_success={s:.3} ({CONFIRM_EPISODES} fresh initial states)"))
            .unwrap_or_default();
        println!(
            "seed={} solved={} env_steps={} wall_s={:.2} last_eval_return={:.1}{confirm}",
            r.seed, r.solved, r.env_steps, r.wall_seconds, r.last_eval_return
        );
        results.push(r);
    }
    let solved: Vec<_> = results.iter().filter(|r| r.solved).collect();
    let med_steps = median(solved.iter().map(|r| r.env_steps as f64).collect());
    let med_wall = median(solved.iter().map(|r| r.wall_seconds).collect());
    match (med_steps, med_wall) {
        (Some(s), Some(w)) => {
            println!("solved {}/{} median env_steps={s:.0} wall_s={w:.2}", solved.len(), results.len())
        }
        _ => println!("solved 0/{}", results.len()),
    }
    if json {
        let out = serde_json::json!({
            "task": base.task, "algo": base.algorithm, "seeds": results,
            "solved": solved.len(), "median_env_steps": med_steps, "median_wall_s": med_wall,
        });
        println!("{out}");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_flow(tasks: &[String], spec: embodia::bench::FlowBenchSpec, seeds: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(
        spec.num_envs != Some(0) && spec.eval_episodes > 0 && seeds > 0,
        "--envs, --eval-episodes and --seeds must be ≥ 1"
    );
    let budget = match (spec.rl_seconds.is_finite(), spec.rl_steps) {
        (true, Some(n)) => format!("{} s or {n} env steps", spec.rl_seconds),
        (false, Some(n)) => format!("{n} env steps"),
        (_, None) => format!("{} s", spec.rl_seconds),
    };
    println!(
        "bench flow: SFT (the task's sft preset{}), then {} for {budget} with {} envs{}; success over {} episodes in every evaluation mode (sampled, zero, fixed draw)",
        match (spec.demos, spec.sft_steps) {
            (None, None) => String::new(),
            (d, s) => format!(
                "{}{}",
                d.map_or_else(String::new, |d| format!(", {d} demos")),
                s.map_or_else(String::new, |s| format!(", {s} steps"))
            ),
        },
        spec.algorithm,
        spec.num_envs.map_or_else(|| "the config's".to_string(), |n| n.to_string()),
        if spec.baseline { ", and Gaussian PPO from scratch for the same env steps" } else { "" },
        spec.eval_episodes
    );
    let root = spec.out.clone().unwrap_or_default();
    for task in tasks {
        let mut results = Vec::new();
        for seed in spec.seed..spec.seed + seeds {
            let out = root.join(format!("{task}-seed{seed}"));
            let spec =
                embodia::bench::FlowBenchSpec { task: task.clone(), seed, out: Some(out.clone()), ..spec.clone() };
            // A line a minute, so that a 20-minute RL phase shows where it is.
            let mut next_report = 60.0;
            let r = embodia::bench::flow_bench(&spec, &mut |row| {
                if row.wall_seconds >= next_report {
                    next_report += 60.0;
                    eprintln!(
                        "  {task} seed {seed}: RL {:.0} s, {} env steps, rollout success {}",
                        row.wall_seconds,
                        row.env_steps,
                        row.success_rate.map_or_else(|| "-".to_string(), |s| format!("{s:.2}"))
                    );
                }
            })?;
            let baseline = match (r.baseline_success, r.baseline_env_steps) {
                (Some(s), Some(n)) => format!(" ppo-from-scratch={s:.2} after {n} env steps;"),
                _ => String::new(),
            };
            println!(
                "task={} seed={seed} S0={} ({} demos, {} steps, {:.0} s) S1={} after {} env steps / {:.0} s; S1−S0 (paired 95% CI) {};{baseline} rollout chunk_steps/s={:.0}; time sim/inference/update = {:.0}/{:.0}/{:.0} s; curves in {}",
                r.task,
                mode_rates(&r.sft_success),
                r.demos,
                r.sft_steps,
                r.sft_seconds,
                mode_rates(&r.rl_success),
                r.rl_env_steps,
                r.rl_seconds,
                mode_gains(&r.rl_gain),
                r.chunk_steps_per_s,
                r.sim_seconds,
                r.inference_seconds,
                r.update_seconds,
                out.display()
            );
            if json {
                println!("{}", serde_json::to_string(&r)?);
            }
            results.push(r);
        }
        let median = |f: &dyn Fn(&embodia::bench::FlowBenchResult) -> Option<f64>| {
            embodia::bench::median(results.iter().filter_map(f).collect())
                .map_or_else(|| "-".to_string(), |m| format!("{m:.2}"))
        };
        let medians = |f: &dyn Fn(&embodia::bench::FlowBenchResult) -> embodia::bench::ModeSuccess| {
            EvalMode::ALL.map(|m| format!("{} {}", m, median(&|r| Some(f(r).get(m))))).join(" / ")
        };
        println!(
            "task={task} median over {seeds} seed(s): S0={} S1={}{}",
            medians(&|r| r.sft_success),
            medians(&|r| r.rl_success),
            if spec.baseline {
                format!(" ppo-from-scratch={}", median(&|r| r.baseline_success))
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `sampled 0.46 / zero 0.40 / fixed-draw 0.15`: success in every evaluation mode.
fn mode_rates(r: &embodia::bench::ModeSuccess) -> String {
    EvalMode::ALL.map(|m| format!("{m} {:.2}", r.get(m))).join(" / ")
}

/// `sampled +0.12 [+0.03, +0.21] / …`: a paired difference in every evaluation mode.
fn mode_gains(g: &embodia::bench::ModeGain) -> String {
    EvalMode::ALL
        .map(|m| {
            let [d, lo, hi] = g.get(m);
            format!("{m} {d:+.2} [{lo:+.2}, {hi:+.2}]")
        })
        .join(" / ")
}

fn bench_vla_model(spec: &embodia::vla_model_bench::VlaModelBenchSpec, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(!spec.batches.contains(&0), "invalid value for `--batches`: 0 (allowed: ≥ 1)");
    let timings = embodia::vla_model_bench::vla_model_bench(spec, &embodia::run::plain_device())?;
    println!(
        "bench vla-model: {} view(s), 7-D proprio and actions, median (min) of {} calls after 2 warm-ups, ms",
        spec.views, spec.reps
    );
    println!(
        "{:<6} {:>10} {:>6} {:>6} {:>18} {:>22} {:>10} {:>20} {:>12}",
        "preset",
        "params",
        "image",
        "batch",
        "prefix ms",
        "chunk ms (prefix+K)",
        "chunks/s",
        "SFT step ms",
        "samples/s"
    );
    for t in &timings {
        let (step, samples) = match t.train_step_ms {
            Some((median, min)) => {
                (format!("{median:.2} ({min:.2})"), format!("{:.0}", t.batch as f64 / (median / 1e3)))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<6} {:>10} {:>6} {:>6} {:>18} {:>22} {:>10.1} {:>20} {:>12}",
            t.preset,
            t.parameters,
            t.image_size,
            t.batch,
            format!("{:.2} ({:.2})", t.prefix_ms.0, t.prefix_ms.1),
            format!("{:.2} ({:.2})", t.chunk_ms.0, t.chunk_ms.1),
            t.batch as f64 / (t.chunk_ms.0 / 1e3),
            step,
            samples
        );
    }
    if json {
        println!("{}", serde_json::to_string(&timings)?);
    }
    Ok(())
}

fn bench_vla(spec: &embodia::vla_bench::VlaBenchSpec, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(spec.eval_episodes > 0, "invalid value for `--eval-episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(spec.distill_episodes > 0, "invalid value for `--distill-episodes`: 0 (allowed: ≥ 1)");
    let sft = match &spec.sft_run {
        Some(dir) => format!("SFT run {}", dir.display()),
        None => format!("{} SFT steps", spec.sft_steps),
    };
    println!(
        "bench vla: {sft}, then {} for {} s on every training variant; {} episodes per split and policy",
        spec.algorithm, spec.rl_seconds, spec.eval_episodes
    );
    let r = embodia::vla_bench::vla_bench(spec)?;
    let show = |s: &embodia::vla_bench::SplitSuccess| {
        format!(
            "train {:.3} held-out {:.3} (sampled: train {:.3} held-out {:.3})",
            s.train, s.held_out, s.train_sampled, s.held_out_sampled
        )
    };
    println!(
        "task={} seed={} params={} demos={} sft: {} steps in {:.0} s; S0 {}",
        r.task,
        r.seed,
        r.parameters,
        r.demos,
        r.sft_steps,
        r.sft_seconds,
        show(&r.s0)
    );
    println!(
        "{}: {} env steps in {:.0} s ({:.0} env-steps/s); time sim+render/inference/update = {:.0}/{:.0}/{:.0} s; S1 {}",
        r.algorithm,
        r.rl_env_steps,
        r.rl_seconds,
        r.rl_env_steps as f64 / r.rl_seconds.max(1e-9),
        r.sim_seconds,
        r.inference_seconds,
        r.update_seconds,
        show(&r.s1)
    );
    let gain = |name: &str, g: &Option<embodia::vla_bench::SplitGain>| match g {
        Some(g) => {
            let f = |[d, lo, hi]: [f64; 3]| format!("{:+.1} [{:+.1}, {:+.1}]", 100.0 * d, 100.0 * lo, 100.0 * hi);
            println!(
                "{name} − S0, points (paired, 95% CI): train {} held-out {} (sampled: train {} held-out {})",
                f(g.train),
                f(g.held_out),
                f(g.train_sampled),
                f(g.held_out_sampled)
            );
        }
        None => println!("{name} − S0: not paired (the RL settings draw other episodes)"),
    };
    gain("S1", &r.s1_gain);
    if let Some(d) = &r.distilled {
        println!(
            "distilled: {} successful RL episodes of {} ({} frames), {} SFT steps, {:.0} s; S2 {}",
            d.episodes,
            d.attempted,
            d.frames,
            d.steps,
            d.seconds,
            show(&d.s2)
        );
        gain("S2", &d.s2_gain);
    }
    let sft_dir = spec.sft_run.clone().unwrap_or_else(|| spec.out.join("sft"));
    println!("runs: {} (SFT), {} (RL curves)", sft_dir.display(), spec.out.join("rl").display());
    if json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_lang(task: &str, episodes: usize, envs: usize, res: usize, steps: usize, json: bool) -> anyhow::Result<()> {
    use embodia::lang_bench::{expert_per_variant, step_rate};
    anyhow::ensure!(envs > 0 && steps > 0, "`--envs` and `--steps` must be ≥ 1");
    anyhow::ensure!((8..=1024).contains(&res), "invalid value for `--res`: {res} (allowed: 8..=1024)");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("bench lang: {task}, {threads} threads");
    let mut variants = Vec::new();
    if episodes > 0 {
        println!("scripted expert, {episodes} episodes per variant:");
        variants = expert_per_variant(task, episodes, 1000)?;
        for v in &variants {
            println!(
                "  success={:>5.1}%  length={:>6.1}  {}{}",
                100.0 * v.success_rate,
                v.mean_length,
                v.instruction,
                if v.held_out { "  (held out)" } else { "" }
            );
        }
        let mean = |held: bool| {
            let s: Vec<f64> = variants.iter().filter(|v| v.held_out == held).map(|v| v.success_rate).collect();
            100.0 * s.iter().sum::<f64>() / s.len().max(1) as f64
        };
        println!("  mean success: training variants {:.1}%, held-out variants {:.1}%", mean(false), mean(true));
    }
    // Three rounds, settings interleaved, the best of each kept: on a shared machine the
    // slowest rounds measure the other load, not the environment.
    let settings = [&[][..], &["front"][..], &["front", "wrist"][..]];
    let mut rates: Vec<embodia::lang_bench::StepRate> = Vec::new();
    for _ in 0..3 {
        for (k, cameras) in settings.iter().enumerate() {
            let r = step_rate(task, envs, res, cameras, steps)?;
            match rates.get_mut(k) {
                Some(best) if best.env_steps_per_s >= r.env_steps_per_s => {}
                Some(best) => *best = r,
                None => rates.push(r),
            }
        }
    }
    for r in &rates {
        println!("envs={:<4} {:<22} env_steps/s={:>9.0} (best of 3)", r.envs, r.setting, r.env_steps_per_s);
    }
    if json {
        println!("{}", serde_json::json!({ "variants": variants, "step_rates": rates }));
    }
    Ok(())
}

fn bench_render(
    task: &str,
    envs: usize,
    res: &[usize],
    camera: Option<&str>,
    randomize: bool,
    threads: &[usize],
    frames: usize,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(envs > 0 && frames > 0, "`--envs` and `--frames` must be ≥ 1");
    anyhow::ensure!(res.iter().all(|r| (8..=1024).contains(r)), "invalid value for `--res`: sides must be in 8..=1024");
    anyhow::ensure!(threads.iter().all(|&n| n > 0), "invalid value for `--threads`: thread counts must be ≥ 1");
    let all = [std::thread::available_parallelism().map_or(1, |n| n.get())];
    let threads = if threads.is_empty() { &all[..] } else { threads };
    println!(
        "bench render: {task}, {envs} envs, {} camera(s), colour + depth, {frames} batch renders per measurement{}",
        camera.unwrap_or("all"),
        if randomize { ", randomized" } else { "" }
    );
    let mut results = Vec::new();
    for &r in res {
        for &t in threads {
            let m = embodia::camera::render_throughput(task, envs, r, camera, randomize, t, frames)?;
            println!(
                "res={:<4} cameras={} threads={} images/s={:>9.0} ms/batch={:>8.2}",
                format!("{r}x{r}"),
                m.cameras,
                m.threads,
                m.images_per_s,
                m.ms_per_batch
            );
            results.push(m);
        }
    }
    if json {
        println!("{}", serde_json::json!({ "results": results }));
    }
    Ok(())
}

fn bench_sim(settings: &Settings, envs: &[usize], threads: &[usize], steps: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(envs.iter().all(|&n| n > 0), "invalid value for `--envs`: batch sizes must be ≥ 1");
    anyhow::ensure!(threads.iter().all(|&n| n > 0), "invalid value for `--threads`: thread counts must be ≥ 1");
    let config = settings.resolve()?;
    let all = [std::thread::available_parallelism().map_or(1, |n| n.get())];
    let threads = if threads.is_empty() { &all[..] } else { threads };
    println!("bench sim: {} with uniform random actions, {steps} env steps per measurement", config.task);
    let mut results = Vec::new();
    for &n in envs {
        for &t in threads {
            let r = embodia::bench::sim_throughput(&config, n, t, steps)?;
            println!(
                "envs={:<5} threads={} env_steps/s={:>10.0} per_thread={:>10.0} resets={}",
                r.envs,
                r.threads,
                r.steps_per_s,
                r.steps_per_s / t as f64,
                r.resets
            );
            results.push(r);
        }
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "results": results }));
    }
    Ok(())
}

fn deploy(args: &DeployArgs) -> anyhow::Result<()> {
    let DeployArgs { run, robot, port, calibration, hz, sim, episodes, seed, json, .. } = args;
    let (robot, port, hz, sim, episodes, seed, json) =
        (robot.as_str(), port.as_deref(), *hz, *sim, *episodes, *seed, *json);
    use embodia::deployment::{self, DeploySettings, SimIo, Target};
    anyhow::ensure!(hz > 0.0 && hz <= 1000.0, "invalid value for `--hz`: {hz} (allowed: 0 < hz ≤ 1000)");
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let model = embodia::robots::builtin(robot)?;
    let base_map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    let map = match (port, calibration.as_deref()) {
        (Some(_), Some(file)) => {
            let cal = embodia::robots::Calibration::load(file)?;
            base_map.calibrated(&cal, &file.display().to_string())?
        }
        (Some(port), None) => anyhow::bail!(
            "no calibration for {robot}: run `embodia calibrate --port {port} --robot {robot}` and pass its file with --calibration"
        ),
        // The emulator's servos start centred, where the uncalibrated map puts each joint's zero.
        (None, _) => base_map,
    };
    let mut policy = deployment::load_policy(run, &map)?;
    let settings = DeploySettings {
        hz,
        episodes,
        episode_cycles: None,
        home_cycles: hz as u64,
        seed,
        safety: embodia::deploy::SafetyConfig::default(),
        record: args.record.is_some(),
    };
    if let Some(dir) = &args.record {
        // Refuse an occupied directory before the robot moves, not after.
        anyhow::ensure!(
            std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none()),
            "{}: not empty; choose another --record directory",
            dir.display()
        );
    }
    embodia::deploy::signal::install_stop_handler()?;
    let stop = embodia::deploy::signal::stop_requested;
    let target = if sim {
        "the rapier simulation"
    } else if port.is_some() {
        "the servo bus"
    } else {
        "the servo emulator"
    };
    eprintln!(
        "deploying {} on {robot} via {target} at {hz} Hz, {episodes} episodes (in-process policy: deterministic mean action; Ctrl-C stops safely)",
        run.display()
    );
    let report = if sim {
        let mut io = SimIo::new(&policy, seed)?;
        deployment::deploy(&mut policy, Target::Sim(&mut io), &map, &settings, &stop)?
    } else {
        let emulator;
        let path = match port {
            Some(p) => p.to_string(),
            None => {
                let ids = map.ids();
                emulator = embodia::deploy::PtyEmulator::start(embodia::deploy::ServoChain::new(&ids))?;
                emulator.path().to_string()
            }
        };
        let port =
            embodia::deploy::SerialBusPort::open(&path, 1_000_000).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let bus_config = embodia::deploy::BusConfig { timeout: deployment::bus_timeout(hz), retries: 0 };
        let mut io = embodia::deploy::ServoRobot::new(embodia::deploy::Bus::new(port, bus_config), map.clone());
        io.configure(embodia::deploy::ServoGains::default())?;
        deployment::deploy(&mut policy, Target::Servos(&mut io), &map, &settings, &stop)?
    };
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", deployment::describe(&report));
    }
    if let Some(dir) = &args.record {
        let demos = policy.demonstrations(report.recorded, hz);
        let options = embodia::dataset::WriteOptions { robot_type: Some(robot.to_string()), ..Default::default() };
        embodia::dataset::save(&demos, dir, &options, false)?;
        eprintln!("recorded {} episodes ({} frames) into {}", demos.episodes.len(), demos.num_steps(), dir.display());
    }
    Ok(())
}

fn calibrate(port: &str, robot: &str, out: Option<PathBuf>, seconds: Option<f64>) -> anyhow::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let model = embodia::robots::builtin(robot)?;
    let map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("calibration-{robot}.json")));
    let serial = embodia::deploy::SerialBusPort::open(port, 1_000_000).map_err(|e| anyhow::anyhow!("{port}: {e}"))?;
    let mut bus = embodia::deploy::Bus::new(serial, embodia::deploy::BusConfig::default());
    let names: Vec<_> = map.joints.iter().map(|j| j.joint.clone()).collect();
    let enter = std::sync::Arc::new(AtomicBool::new(false));
    match seconds {
        Some(s) => {
            anyhow::ensure!(s > 0.0, "invalid value for `--seconds`: {s} (allowed: > 0)");
            eprintln!("torque off: move every joint of the {robot} through its full range ({s} s)");
        }
        None => {
            eprintln!("torque off: move every joint of the {robot} through its full range, then press Enter");
            let enter = enter.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
                enter.store(true, Ordering::SeqCst);
            });
        }
    }
    let start = std::time::Instant::now();
    let mut last_print = start;
    let cal =
        embodia::deploy::calibrate::record_ranges(&mut bus, &map, std::time::Duration::from_millis(20), &mut |p| {
            if last_print.elapsed().as_secs_f64() > 0.5 {
                last_print = std::time::Instant::now();
                let ranges: Vec<_> =
                    names.iter().zip(p.min.iter().zip(&p.max)).map(|(n, (lo, hi))| format!("{n} {lo}..{hi}")).collect();
                eprint!("\r{}", ranges.join("  "));
            }
            match seconds {
                Some(s) => start.elapsed().as_secs_f64() >= s,
                None => enter.load(Ordering::SeqCst),
            }
        })?;
    eprintln!();
    // Refuse a range that was not moved through before writing anything.
    map.calibrated(&cal, &out.display().to_string())?;
    cal.save(&out)?;
    println!("wrote {}", out.display());
    Ok(())
}

fn servo_emulator(robot: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let model = embodia::robots::builtin(robot)?;
    let map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    embodia::deploy::signal::install_stop_handler()?;
    let emulator = embodia::deploy::PtyEmulator::start(embodia::deploy::ServoChain::new(&map.ids()))?;
    println!("{}", emulator.path());
    std::io::stdout().flush()?;
    eprintln!("emulating {} STS3215 servos (ids {:?}, protocol 0, 1 Mbaud) until Ctrl-C", map.ids().len(), map.ids());
    while !embodia::deploy::signal::stop_requested() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    emulator.stop()?;
    Ok(())
}

/// The observation text of `--obs FILE` or stdin, and its name for errors.
fn read_observations(file: Option<&Path>) -> anyhow::Result<(String, String)> {
    Ok(match file {
        Some(f) => {
            (std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?, f.display().to_string())
        }
        None => (std::io::read_to_string(std::io::stdin())?, "stdin".into()),
    })
}

/// `$ORT_DYLIB_PATH`, where onnxruntime's shared library is by convention.
fn ort_dylib_path() -> Option<PathBuf> {
    std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()).map(PathBuf::from)
}

fn bench_export_latency(
    layers: &[usize],
    calls: usize,
    out: Option<PathBuf>,
    ort_lib: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::deploy::onnx_runtime::Runtime;
    use embodia::export_latency::{LatencyConfig, export_latency};
    let [obs_dim, hidden @ .., action_dim] = layers else {
        anyhow::bail!("--layers needs at least an observation and an action width, got {layers:?}");
    };
    let config = LatencyConfig {
        obs_dim: *obs_dim,
        hidden: hidden.to_vec(),
        action_dim: *action_dim,
        calls,
        ..LatencyConfig::default()
    };
    let mut runtimes = vec![Runtime::Tract];
    let mut skipped = Vec::new();
    match ort_lib {
        Some(library) => runtimes.push(Runtime::Ort { library }),
        None => skipped.push("ort: no onnxruntime library (set ORT_DYLIB_PATH or --ort-lib)".to_string()),
    }
    let temporary = out.is_none();
    let dir =
        out.unwrap_or_else(|| std::env::temp_dir().join(format!("embodia-export-latency-{}", std::process::id())));
    let result = export_latency(&config, &dir, &runtimes);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (results, not_compiled) = result?;
    skipped.extend(not_compiled);
    if json {
        let value = serde_json::json!({ "layers": layers, "calls": calls, "results": results, "skipped": skipped });
        println!("{value}");
        return Ok(());
    }
    println!("batch-1 latency of a {layers:?} MLP policy, {calls} calls each (µs per call)");
    println!("{:<18} {:>10} {:>10} {:>14}", "implementation", "median", "p99", "median / ours");
    let ours = results[0].median_us;
    for r in &results {
        println!("{:<18} {:>10.2} {:>10.2} {:>14.2}", r.name, r.median_us, r.p99_us, r.median_us / ours);
    }
    for s in &skipped {
        println!("not measured: {s}");
    }
    Ok(())
}

fn bench_deploy(run: Option<&Path>, hz: f64, seconds: f64, faults: usize, seed: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(hz > 0.0 && hz <= 1000.0, "invalid value for `--hz`: {hz} (allowed: 0 < hz ≤ 1000)");
    anyhow::ensure!(seconds >= 0.0, "invalid value for `--seconds`: {seconds} (allowed: ≥ 0)");
    let r = embodia::deployment::bench(run, hz, seconds, faults, seed)?;
    print!("{}", embodia::deployment::describe_bench(&r));
    if json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

fn bench_mcu(runs: &[PathBuf], rust: bool, rltools: bool, keep: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    use embodia::deploy::mcu::{Implementation, OPT_FLAGS, Toolchain};
    use embodia::mcu_bench::{CHECKED_INPUTS, COUNTED_INPUTS, McuCase, default_cases, describe, measure, run_case};
    let toolchain = Toolchain::find()?;
    println!(
        "bench mcu: Cortex-M4F on QEMU {}.{} mps2-an386, {} ({}, hard float); instructions counted from \
         QEMU's one-instruction-per-block execution trace over {COUNTED_INPUTS} observations (QEMU models no \
         cycle timing; its DWT cycle counter does not count); cycles estimated from the Cortex-M4 manual's \
         instruction timings without memory wait states (taken branches 1 + {}); actions checked on \
         {CHECKED_INPUTS} observations; µs@168MHz = estimated cycles at the Crazyflie's clock",
        toolchain.qemu_version.0,
        toolchain.qemu_version.1,
        toolchain.gcc_version,
        OPT_FLAGS.join(" "),
        embodia::deploy::mcu::cycles::BRANCH_REFILL
    );
    let mut cases = default_cases()?;
    for r in runs {
        cases.push(run_case(r)?);
    }
    let work =
        keep.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("embodia-bench-mcu-{}", std::process::id())));
    let mut implementations = vec![Implementation::C];
    implementations.extend(rust.then_some(Implementation::Rust));
    implementations.extend(rltools.then_some(Implementation::RlTools));
    let runs_on = |case: &McuCase, implementation: Implementation| {
        implementation != Implementation::RlTools || embodia::deploy::mcu::rltools::check(&case.spec).is_ok()
    };
    let figures: Result<Vec<_>, _> = cases
        .iter()
        .flat_map(|case| implementations.iter().map(move |&implementation| (case, implementation)))
        .filter(|&(case, implementation)| runs_on(case, implementation))
        .map(|(case, implementation)| measure(&toolchain, case, implementation, &work))
        .collect();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    let figures = figures?;
    print!("{}", describe(&figures));
    if json {
        println!("{}", serde_json::to_string(&figures)?);
    }
    Ok(())
}

fn bench_tensor_sim(settings: &Settings, envs: &[usize], steps: u64, device: &str, json: bool) -> anyhow::Result<()> {
    let config = settings.resolve()?;
    println!(
        "bench sim --tensor: {} on {device}, device-side uniform random actions, at least {steps} env steps",
        config.task
    );
    let mut results = Vec::new();
    for &n in envs {
        let r =
            embodia::bench::tensor_sim_throughput(&config.task, n, &embodia::run::plain_device(), steps, config.seed)?;
        println!("envs={:<8} tensor env_steps/s={:>12.0} resets={}", r.envs, r.steps_per_s, r.resets);
        results.push(r);
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "device": device, "tensor_results": results }));
    }
    Ok(())
}

fn bench_tensor_ppo(
    settings: &Settings,
    envs: &[usize],
    iterations: u64,
    device: &str,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(iterations > 0, "invalid value for `--ppo-iterations`: 0 (allowed: ≥ 1)");
    let config = settings.resolve()?;
    anyhow::ensure!(
        config.algorithm == "ppo",
        "--ppo-iterations trains PPO: add `--algo ppo` (the config resolved to `{}`)",
        config.algorithm
    );
    println!(
        "bench sim --ppo-iterations: PPO on {} with its rollouts on {device}, {iterations} iterations",
        config.task
    );
    let mut results = Vec::new();
    for &n in envs {
        let r = embodia::bench::tensor_ppo_throughput(&config, n, iterations)?;
        println!(
            "envs={:<8} ppo env_steps/s={:>12.0} (rollout + update) return {:.1} -> {:.1}",
            r.envs, r.steps_per_s, r.first_return, r.last_return
        );
        results.push(r);
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "device": device, "ppo_results": results }));
    }
    Ok(())
}

// glibc's allocator returned and re-faulted pages on every update of the small-network
// learners (~10% of SAC's time in malloc, free and page faults); mimalloc keeps them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
