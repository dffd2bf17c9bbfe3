//! `embodia train` and `embodia list`: train a task with an algorithm into a run directory.

use clap::Args;
use std::path::{Path, PathBuf};

use crate::Settings;
use crate::commands::eval::describe_eval;
use embodia::algorithms::ALGORITHMS;
use embodia::algos::{MetricRow, MetricSink};
use embodia::distributed::DistMode;
use embodia::run::{Run, fresh_run_dir};
use embodia::sim::SolveMetric;
use embodia::viz::{MetricsRecorder, VizTarget};
use indicatif::{ProgressBar, ProgressStyle};

/// The arguments of `embodia config`.
#[derive(Args)]
pub(crate) struct ConfigArgs {
    /// Algorithm (`embodia list` names them all).
    pub(crate) algo: String,
    /// Task.
    #[arg(long, default_value = "pendulum")]
    pub(crate) task: String,
}

/// The arguments of `embodia train`.
#[derive(Args)]
pub(crate) struct TrainArgs {
    #[command(flatten)]
    pub(crate) settings: Settings,
    /// Run directory (default: runs/<task>-<algo>-seed<seed>, never overwritten).
    #[arg(long)]
    pub(crate) run_dir: Option<PathBuf>,
    /// Continue the run in this directory from its last checkpoint.
    #[arg(long, conflicts_with_all = ["task", "algo", "config", "set", "seed", "run_dir"])]
    pub(crate) resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Stream training metrics to a rerun viewer (connects to a running one or spawns
    /// `rerun`; needs the `rerun` feature).
    #[arg(long)]
    pub(crate) viz: bool,
    /// Record training metrics into this .rrd file (needs the `rerun` feature).
    #[arg(long, value_name = "FILE.rrd", conflicts_with = "viz")]
    pub(crate) viz_save: Option<PathBuf>,
    /// Train across the processes of an MPI job (`mpirun -np N embodia train … --dist MODE`;
    /// needs the `mpi` feature): `ddp` runs a learner replica on every rank, each with
    /// `algo.num_envs` environments, and averages their gradients; `actors` trains on rank 0
    /// while the other ranks step `algo.num_envs` environments each.
    #[arg(long, value_enum, conflicts_with_all = ["viz", "viz_save"])]
    pub(crate) dist: Option<DistMode>,
}

pub(crate) fn list() -> anyhow::Result<()> {
    println!("tasks:");
    for t in embodia::sim::tasks() {
        let solved = match t.solved_by {
            SolveMetric::SuccessRate => format!("solved at success ≥ {}%", t.solve_threshold * 100.0),
            SolveMetric::Return => format!("solved at return ≥ {}", t.solve_threshold),
        };
        println!("  {:<26} {} ({solved})", t.name, t.description);
    }
    println!("algorithms:");
    for a in &ALGORITHMS {
        println!("  {:<26} {}", a.name, a.summary);
    }
    println!("robots:");
    for r in embodia::robots::catalog() {
        println!("  {:<26} {}", r.name, r.description);
    }
    Ok(())
}

pub(crate) fn train(
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
    if !quiet {
        for warning in config.warnings() {
            eprintln!("warning: {warning}");
        }
    }
    eprintln!(
        "training {} on {} (seed {}, {} {}) in {}",
        config.algorithm,
        config.task,
        config.seed,
        config.total_steps,
        embodia::algorithms::algorithm(&config.algorithm)?.budget.unit(),
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
    if let Some(e) = &run.curves_error {
        eprintln!("warning: curves.png not drawn (training was not affected): {e}");
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

/// `embodia train --dist MODE`: [`train`] on every rank of an MPI job. Rank 0 reports as
/// [`train`] does (its progress, the evaluation, the time spent communicating); the other
/// ranks stay quiet. A rank that fails names itself and ends the whole job.
pub(crate) fn train_distributed(
    mode: DistMode,
    settings: &Settings,
    run_dir: Option<PathBuf>,
    resume: Option<PathBuf>,
    quiet: bool,
) -> anyhow::Result<()> {
    let job = embodia::distributed::launch(mode)?;
    let result = if job.rank == 0 {
        train(settings, run_dir, resume, quiet, None).map(|()| {
            let comm = embodia::algos::data_parallel::comm_stats();
            match mode {
                DistMode::Ddp => eprintln!(
                    "data-parallel over {} ranks: {} gradient all-reduces of {} bytes; rank 0 spent {:.2} s in {} collectives ({} bytes sent)",
                    job.size, comm.gradient_reduces, comm.gradient_bytes, comm.seconds, comm.calls, comm.bytes
                ),
                DistMode::Actors => eprintln!(
                    "{} rollout ranks: rank 0 spent {:.2} s sending commands and waiting for results ({} messages, {} bytes)",
                    job.size - 1, comm.seconds, comm.calls, comm.bytes
                ),
            }
        })
    } else if mode == DistMode::Actors {
        serve_rollouts(settings, resume)
    } else {
        train_replica(settings, run_dir, resume)
    };
    if let Err(e) = &result {
        eprintln!("error on rank {} of {}: {e:#}", job.rank, job.size);
        embodia::distributed::abort(1);
    }
    result
}

/// [`train`] on a rank other than 0 of a data-parallel run: the same run, nothing printed or
/// written.
fn train_replica(settings: &Settings, run_dir: Option<PathBuf>, resume: Option<PathBuf>) -> anyhow::Result<()> {
    let mut run = match &resume {
        Some(dir) => Run::resume(dir, settings.steps)?,
        None => {
            let config = settings.resolve()?;
            let dir = run_dir.unwrap_or_else(|| Path::new("runs").join("replica"));
            Run::create(&dir, config)?
        }
    };
    run.train(&mut [])?;
    Ok(())
}

/// A rollout rank of `--dist actors`: steps its slice of the run's environments for rank 0.
fn serve_rollouts(settings: &Settings, resume: Option<PathBuf>) -> anyhow::Result<()> {
    let config = match &resume {
        Some(dir) => embodia::config::TrainConfig::from_file(&dir.join(embodia::run::CONFIG_FILE))?,
        None => settings.resolve()?,
    };
    let job = embodia::rollout_ranks::rollout_job().expect("launch joined the rollout job");
    let env = embodia::run::make_env(&config, config.algo.num_envs())?;
    embodia::rollout_ranks::serve_envs(env, job)?;
    Ok(())
}

/// The training progress: a bar (env steps, steps/s, ETA and the latest mean episode return) on a
/// terminal; where stderr is not one (`nohup`, CI, `2> log`), a plain line every
/// [`PLAIN_PROGRESS_SECONDS`] (or `EMBODIA_PROGRESS_SECONDS`) instead, so that a log of an
/// hours-long run shows where it is.
pub(crate) struct Progress {
    pub(crate) bar: ProgressBar,
    last_return: Option<f64>,
    /// Without a terminal: the plain lines' schedule.
    plain: Option<PlainProgress>,
}

/// Seconds between two plain progress lines.
const PLAIN_PROGRESS_SECONDS: f64 = 30.0;

struct PlainProgress {
    total_steps: u64,
    every: std::time::Duration,
    /// When the run (re)started and at which env step, for the rate.
    start: (std::time::Instant, u64),
    last_line: std::time::Instant,
}

impl Progress {
    pub(crate) fn new(total_steps: u64, done_steps: u64, quiet: bool) -> Self {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        let bar = if quiet || !terminal { ProgressBar::hidden() } else { ProgressBar::new(total_steps) };
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
        let plain = (!quiet && !terminal).then(|| {
            let seconds = std::env::var("EMBODIA_PROGRESS_SECONDS")
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(PLAIN_PROGRESS_SECONDS);
            let now = std::time::Instant::now();
            PlainProgress {
                total_steps,
                every: std::time::Duration::from_secs_f64(seconds),
                start: (now, done_steps),
                last_line: now,
            }
        });
        Self { bar, last_return: None, plain }
    }
}

impl PlainProgress {
    /// `progress: 40960/100000 env steps (41%), 1234 steps/s, ETA 48 s, return -160.2, success 0.42`.
    fn line(&self, row: &MetricRow, last_return: Option<f64>) -> String {
        let (start, start_steps) = self.start;
        let rate = row.env_steps.saturating_sub(start_steps) as f64 / start.elapsed().as_secs_f64().max(1e-9);
        let left = self.total_steps.saturating_sub(row.env_steps) as f64;
        let mut line = format!(
            "progress: {}/{} env steps ({:.0}%), {rate:.0} steps/s, ETA {:.0} s",
            row.env_steps,
            self.total_steps,
            100.0 * row.env_steps as f64 / self.total_steps.max(1) as f64,
            if rate > 0.0 { left / rate } else { f64::INFINITY }
        );
        if let Some(r) = last_return {
            line += &format!(", return {r:.1}");
        }
        if let Some(s) = row.success_rate {
            line += &format!(", success {s:.2}");
        }
        line
    }
}

impl MetricSink for Progress {
    fn record(&mut self, row: &MetricRow) {
        self.bar.set_position(row.env_steps);
        self.last_return = row.return_mean.or(self.last_return);
        if let Some(r) = self.last_return {
            self.bar.set_message(format!("return {r:.1}"));
        }
        if let Some(plain) = self.plain.as_mut().filter(|p| p.last_line.elapsed() >= p.every) {
            plain.last_line = std::time::Instant::now();
            eprintln!("{}", plain.line(row, self.last_return));
        }
    }
}
