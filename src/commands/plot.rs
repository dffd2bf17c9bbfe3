//! `embodia plot`: learning curves of runs as one PNG.

use clap::Args;
use std::path::{Path, PathBuf};

/// The arguments of `embodia render-camera`.
#[derive(Args)]
pub(crate) struct RenderCameraArgs {
    /// Rapier task.
    #[arg(long, default_value = "pick-cube")]
    pub(crate) task: String,
    /// Output PNG.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Environments (rows).
    #[arg(long, default_value_t = 4, value_parser = super::envs)]
    pub(crate) envs: usize,
    /// Image side, pixels (64 to 224 is the useful range).
    #[arg(long, default_value_t = 128)]
    pub(crate) res: usize,
    /// Visual domain randomization: object colours, light, camera jitter, distractors.
    #[arg(long)]
    pub(crate) randomize: bool,
    /// Reset seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Steps of zero action before the picture.
    #[arg(long, default_value_t = 0)]
    pub(crate) steps: usize,
}

/// The arguments of `embodia plot`.
#[derive(Args)]
pub(crate) struct PlotArgs {
    /// Run directories (each with a metrics.csv).
    #[arg(required = true)]
    pub(crate) runs: Vec<PathBuf>,
    /// Output PNG.
    #[arg(long, default_value = "curves.png")]
    pub(crate) out: PathBuf,
}

pub(crate) fn plot(runs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let curves = runs.iter().map(|dir| embodia::plot::RunCurves::from_run_dir(dir)).collect::<Result<Vec<_>, _>>()?;
    embodia::plot::plot_runs(&curves, out)?;
    println!("wrote {}", out.display());
    Ok(())
}
