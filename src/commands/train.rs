//! `embodia train` and `embodia list`: train a task with an algorithm into a run directory.

use clap::Args;
use std::path::{Path, PathBuf};

use crate::Settings;
use crate::commands::eval::describe_eval;
use embodia::algos::{MetricRow, MetricSink};
use embodia::config::ALGORITHMS;
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
    for (name, description) in ALGORITHMS {
        println!("  {name:<26} {description}");
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
pub(crate) struct Progress {
    pub(crate) bar: ProgressBar,
    last_return: Option<f64>,
}

impl Progress {
    pub(crate) fn new(total_steps: u64, done_steps: u64, quiet: bool) -> Self {
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
