//! The `embodia` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use embodia::algos::{EvalResult, MetricRow, MetricSink};
use embodia::bench::{SOLVE_EVAL_EPISODES, median, solve};
use embodia::config::{ALGORITHMS, ConfigSources, TrainConfig, resolve};
use embodia::run::{Run, evaluate_learner, fresh_run_dir, load_learner};
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
        /// Algorithm (sac, ppo).
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
    /// Evaluate a run's policy with deterministic actions, or a task's scripted expert
    /// (`--task NAME --expert scripted`).
    Eval {
        /// Run directory.
        #[arg(long, required_unless_present = "expert", conflicts_with = "expert")]
        run: Option<PathBuf>,
        /// Evaluate the task's scripted expert instead of a policy (reach, pick-cube, push-t).
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
        /// Sample actions from the policy instead of taking its mode.
        #[arg(long)]
        stochastic: bool,
        /// Also record this many deterministic episodes into RUN/episodes.rrd (link transforms
        /// with visual geometry, targets, observations, actions, rewards; needs the `rerun`
        /// feature).
        #[arg(long, value_name = "N", requires = "run")]
        record_episodes: Option<usize>,
        /// Also draw frames of the first episode (of the policy or the expert) into this PNG,
        /// with embodia's own renderer (rapier tasks).
        #[arg(long, value_name = "FILE.png")]
        render: Option<PathBuf>,
        /// Frames to draw with `--render`, spread evenly over the episode.
        #[arg(long, default_value_t = 6, requires = "render")]
        render_frames: usize,
    },
    /// Open the rerun viewer on a run's recordings (its .rrd files).
    View {
        /// Run directory (or one .rrd file).
        run: PathBuf,
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
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Env steps and wall seconds until the deterministic evaluation first reaches the task's
    /// solve threshold, per seed, then medians.
    Solve {
        #[command(flatten)]
        settings: Settings,
        /// Seeds 1..=N.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Also print one JSON object with all results.
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
        /// Also print one JSON object with all results.
        #[arg(long)]
        json: bool,
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
    /// Algorithm (sac, ppo). Default: sac.
    #[arg(long)]
    algo: Option<String>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Total environment-step budget.
    #[arg(long)]
    steps: Option<u64>,
    /// TOML file overriding the defaults (see `embodia config`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one setting, e.g. --set algo.learning_rate=3e-4 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl Settings {
    fn resolve(&self) -> anyhow::Result<TrainConfig> {
        Ok(resolve(&ConfigSources {
            task: self.task.as_deref(),
            algorithm: self.algo.as_deref(),
            file: self.config.as_deref(),
            seed: self.seed,
            total_steps: self.steps,
            overrides: &self.set,
        })?)
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    embodia::run::select_device(&cli.device)?;
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
        Command::Eval {
            run: Some(run), episodes, json, stochastic, record_episodes, render, render_frames, ..
        } => {
            eval(&run, episodes, json, stochastic)?;
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
        Command::View { run } => Ok(embodia::viz::view(&run)?),
        Command::Eval { task, episodes, json, seed, render, render_frames, .. } => {
            let task = task.as_deref().unwrap_or_default();
            eval_expert(task, episodes, seed, json)?;
            if let Some(out) = render {
                embodia::render::render_expert_episode(task, seed, render_frames, &out)?;
                eprintln!("drew {render_frames} frames of the expert's first episode into {}", out.display());
            }
            Ok(())
        }
        Command::Bench { bench: BenchCommand::Solve { settings, seeds, json } } => bench_solve(&settings, seeds, json),
        Command::Bench { bench: BenchCommand::Sim { settings, envs, threads, measure_steps, tensor, json } } => {
            bench_sim(&settings, &envs, &threads, measure_steps, json)?;
            if tensor { bench_tensor_sim(&settings, &envs, measure_steps, &cli.device, json) } else { Ok(()) }
        }
        Command::Plot { runs, out } => plot(&runs, &out),
        Command::Robot { robot: RobotCommand::Check { file } } => {
            print!("{}", embodia::robots::load_urdf(&file)?.summary());
            Ok(())
        }
    }
}

fn list() -> anyhow::Result<()> {
    println!("tasks:");
    for t in embodia::sim::tasks() {
        let solved = if t.has_success {
            format!("solved at success ≥ {}%", t.solve_threshold * 100.0)
        } else {
            format!("solved at return ≥ {}", t.solve_threshold)
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
        "training {} on {} (seed {}, {} env steps) in {}",
        config.algorithm,
        config.task,
        config.seed,
        config.total_steps,
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
    eprintln!("evaluation ({} episodes, deterministic): {}", eval.episodes, describe_eval(&eval));
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
    let success = e.success_rate.map(|s| format!(", success {:.0}%", 100.0 * s)).unwrap_or_default();
    format!("mean return {:.1} ± {:.1}, mean length {:.0}{success}", e.mean_return, e.std_return, e.mean_length)
}

fn eval(run: &Path, episodes: usize, json: bool, stochastic: bool) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let (config, learner) = load_learner(run)?;
    let result = evaluate_learner(learner.as_ref(), &config, episodes, stochastic)?;
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
    }
    Ok(())
}

fn eval_expert(task: &str, episodes: usize, seed: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let e = embodia::sim::rapier::expert::evaluate_task_expert(task, None, 16, episodes, seed)?;
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
    let threshold = embodia::sim::tasks().iter().find(|t| t.name == base.task).map(|t| t.solve_threshold);
    println!(
        "bench solve: {} on {}, deterministic eval of {SOLVE_EVAL_EPISODES} episodes after every iteration, threshold {}, budget {} steps",
        base.algorithm,
        base.task,
        threshold.unwrap_or(f32::NAN),
        base.total_steps
    );
    let mut results = Vec::new();
    for seed in 1..=seeds {
        let config = TrainConfig { seed, ..base.clone() };
        let r = solve(&config)?;
        println!(
            "seed={} solved={} env_steps={} wall_s={:.2} last_eval_return={:.1}",
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

// glibc's allocator returned and re-faulted pages on every update of the small-network
// learners (~10% of SAC's time in malloc, free and page faults); mimalloc keeps them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
