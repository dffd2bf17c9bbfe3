//! The layout of a run directory, `runs/<name>/`: the resolved config, metrics, checkpoints
//! and the final evaluation.
//!
//! ```text
//! runs/<name>/
//!   config.toml        resolved configuration (what `--resume` and `eval` read)
//!   metrics.csv        one row per iteration (see MetricRow::CSV_HEADER)
//!   checkpoint/        latest checkpoint (tensors.safetensors + state.json; see embodia_algos::Checkpoint)
//!   eval.json          final deterministic evaluation
//!   curves.png         training curves, redrawn at every checkpoint (see crate::plot)
//!   student/           ppo-flow-* with algo.distill_during_rl only: the one-step student
//!                      trained alongside, a complete `distill` run directory (config.toml
//!                      naming this run as teacher, metrics.csv with one row per RL iteration,
//!                      checkpoint/ written with the run's, eval.json) that `eval`, `export`
//!                      and `train --resume` (to distill further from the final policy) accept
//! ```

use std::path::Path;

use embodia_algos::Checkpoint;

use crate::error::RunError;

/// Config file name inside a run directory.
pub const CONFIG_FILE: &str = "config.toml";
/// Metrics file name inside a run directory.
pub use crate::plot::METRICS_FILE;
/// Checkpoint directory name inside a run directory.
pub const CHECKPOINT_DIR: &str = "checkpoint";
/// Final evaluation file name inside a run directory.
pub const EVAL_FILE: &str = "eval.json";
/// Directory, inside a flow-RL run with `algo.distill_during_rl`, of the one-step student's
/// own (distill) run.
pub const STUDENT_DIR: &str = "student";

/// Fails with a clear message unless `dir` holds a run's config and a checkpoint.
pub fn check_run_dir(dir: &Path) -> Result<(), RunError> {
    let fail = |message: &str| Err(RunError::Io { path: dir.display().to_string(), message: message.into() });
    if !dir.join(CONFIG_FILE).exists() {
        return fail("is not a run directory (no config.toml)");
    }
    if !dir.join(CHECKPOINT_DIR).exists() && !dir.join(format!("{CHECKPOINT_DIR}.old")).exists() {
        return fail(
            "has no checkpoint (no checkpoint/ directory): the run stopped before its first checkpoint; delete the directory and train again",
        );
    }
    Ok(())
}

/// The checkpoint of the run `init` (`algo.init`) an RL run starts from; `missing` says what
/// to pass when it is empty.
pub fn init_checkpoint(init: &str, missing: &str) -> Result<Checkpoint, RunError> {
    if init.is_empty() {
        return Err(RunError::Io { path: "algo.init".into(), message: missing.into() });
    }
    check_run_dir(Path::new(init))?;
    Ok(Checkpoint::load(&Path::new(init).join(CHECKPOINT_DIR))?)
}
