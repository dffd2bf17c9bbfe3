//! `embodia plot`: learning curves of runs as one PNG.

use std::path::{Path, PathBuf};

pub(crate) fn plot(runs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let curves = runs.iter().map(|dir| embodia::plot::RunCurves::from_run_dir(dir)).collect::<Result<Vec<_>, _>>()?;
    embodia::plot::plot_runs(&curves, out)?;
    println!("wrote {}", out.display());
    Ok(())
}
