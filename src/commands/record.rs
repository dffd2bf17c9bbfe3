//! `embodia record`: demonstrations from a task's scripted expert or a run's policy, as a LeRobot dataset.

use std::path::PathBuf;

use clap::Args;

/// The arguments of `embodia record`.
#[derive(Args)]
pub(crate) struct RecordArgs {
    /// Task with a scripted expert (reach, pick-cube, push-t, lang-cubes).
    #[arg(long, required_unless_present = "run")]
    pub(crate) task: Option<String>,
    /// Expert.
    #[arg(long, default_value = "scripted")]
    pub(crate) expert: String,
    /// Record this run's policy instead of an expert: the actions it executes and the
    /// images its VLA sees, in the run's own environment (e.g. a `vla-dsrl` run, whose
    /// successful episodes `vla-sft`'s `policy_datasets` distills into the VLA).
    #[arg(long, conflicts_with_all = ["task", "noise", "camera", "for_algo"])]
    pub(crate) run: Option<PathBuf>,
    /// With `--run`: sample the policy's actions instead of taking its mode.
    #[arg(long)]
    pub(crate) stochastic: bool,
    /// Episodes to write.
    #[arg(long, default_value_t = 50, value_parser = super::episodes)]
    pub(crate) episodes: usize,
    /// Dataset directory (written whole or not at all).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Seed of the episodes.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Environments stepped in parallel.
    #[arg(long, default_value_t = 16, value_parser = super::envs)]
    pub(crate) envs: usize,
    /// Keep only successful episodes (recording more until --episodes of them are kept).
    #[arg(long)]
    pub(crate) only_success: bool,
    /// Replace OUT if it holds a dataset (a directory with meta/info.json); anything else is refused.
    #[arg(long)]
    pub(crate) force: bool,
    /// DART perturbation of the executed actions (fraction of the action clip; labels stay
    /// the expert's clean actions). `train --algo sft --demos N` records with 0.05.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) noise: f32,
    /// Also record the task's cameras (front, and wrist on arms) at this many pixels square,
    /// as PNG image columns `observation.images.<camera>`.
    #[arg(long)]
    pub(crate) camera: Option<usize>,
    /// Record in the environment this training algorithm's preset configures for the task
    /// (e.g. vla-sft: the observation is the robot's own state), so `train --algo ALGO
    /// --dataset` can read the dataset.
    #[arg(long, value_name = "ALGO")]
    pub(crate) for_algo: Option<String>,
}
