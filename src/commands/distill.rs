//! `embodia distill`: a one-step student of a flow policy, then its report against the teacher.

use clap::Args;
use std::path::{Path, PathBuf};

use crate::commands::train::Progress;
use embodia::algos::DistillMethod;
use embodia::run::Run;

/// The arguments of `embodia distill`.
#[derive(Args)]
pub(crate) struct DistillArgs {
    /// The teacher's run directory.
    #[arg(long)]
    pub(crate) run: PathBuf,
    /// Objective: consistency (RL-100's consistency distillation) or meanflow (OFQL's
    /// average-velocity objective on teacher samples; experimental: measured on pick-cube-ee
    /// only, see the README).
    #[arg(long, default_value = "consistency", value_parser = ["consistency", "meanflow"])]
    pub(crate) method: String,
    /// Loss of the consistency method: same_noise (match the teacher's K-step action from
    /// the same noise) or backup (LCM-style self-consistency against an EMA target).
    #[arg(long, default_value = "same_noise", value_parser = ["same_noise", "backup"])]
    pub(crate) loss: String,
    /// Student run directory (default: runs/<teacher>-distill-<method>, never overwritten).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Gradient steps (default: algo.decay_steps of the distill config); the learning rate's
    /// cosine decay ends there too, unless --set algo.decay_steps=N is given.
    #[arg(long)]
    pub(crate) steps: Option<u64>,
    /// Override one distill setting, e.g. --set algo.batch_size=128 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Evaluation episodes per evaluation seed.
    #[arg(long, default_value_t = 100)]
    pub(crate) eval_episodes: usize,
    /// Evaluation seeds.
    #[arg(long, default_value_t = 3)]
    pub(crate) eval_seeds: u64,
    /// Timed calls per latency figure.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) latency_calls: usize,
    /// Evaluate teacher and student with freshly sampled noise at every call instead of
    /// their fixed noise (flow policies whose fixed-noise mode stalls, e.g. on push-t).
    #[arg(long)]
    pub(crate) stochastic: bool,
    /// Also print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
}

pub(crate) fn distill(
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
