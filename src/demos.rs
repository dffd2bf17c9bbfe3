//! `embodia record` and `embodia dataset info`: episodes of scripted experts or of a trained
//! policy (`--run`) recorded into LeRobot v3 datasets, and a summary of a dataset on disk.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::dataset::{Demonstrations, WriteOptions};

/// Experts `record --expert` accepts.
pub const EXPERTS: &[&str] = &["scripted"];

/// What `embodia record` records.
#[derive(Debug, Clone)]
pub struct RecordRequest {
    /// Registered rapier task with a scripted expert (reach, pick-cube, push-t).
    pub task: String,
    /// Expert kind (one of [`EXPERTS`]).
    pub expert: String,
    /// Episodes to write (successful ones with `only_success`).
    pub episodes: usize,
    /// Seed of the first batch of episodes.
    pub seed: u64,
    /// Environments stepped in parallel.
    pub envs: usize,
    /// Keep only successful episodes, recording more until `episodes` of them are kept.
    pub only_success: bool,
    /// Dataset directory.
    pub out: PathBuf,
    /// Replace a non-empty `out`.
    pub force: bool,
    /// DART perturbation of the executed actions, a fraction of the action clip (the labels
    /// stay the expert's clean actions; see `record_expert_perturbed`); 0 for none.
    pub noise: f32,
    /// Record the task's cameras (`front`, and `wrist` where the task has an end effector) at
    /// this square resolution, pixels, as `observation.images.<camera>` columns; `None`: no
    /// images.
    pub camera: Option<usize>,
    /// Record in the environment the embedded preset of this training algorithm on the task
    /// configures (its `[env]` table: e.g. `vla-sft` on lang-cubes observes the robot's own
    /// state only), so that the dataset's `observation.state` is what that training reads;
    /// `None`: the task's defaults.
    pub for_algo: Option<String>,
}

/// What `embodia record` did.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSummary {
    /// Episodes the expert ran (more than written with `only_success`).
    pub attempted: usize,
    /// Of those, the successful ones.
    pub successes: usize,
    /// Episodes written.
    pub written: usize,
    /// Frames (steps) written.
    pub frames: usize,
}

impl RecordSummary {
    /// One line for `who` (what acted) having written into `out`: its success rate and what was
    /// written.
    pub fn describe(&self, who: &str, out: &Path) -> String {
        format!(
            "{who}: success {:.1}% ({} of {} episodes); wrote {} episodes, {} frames to {}",
            100.0 * self.successes as f64 / self.attempted as f64,
            self.successes,
            self.attempted,
            self.written,
            self.frames,
            out.display()
        )
    }
}

/// With `only_success`, at most this many times the requested episodes are attempted.
const MAX_ATTEMPTS_FACTOR: usize = 10;

/// Records the request's episodes and writes them atomically as a dataset at `out`. The
/// directory is checked before recording, so a refused `out` costs no simulation.
pub fn record(req: &RecordRequest) -> anyhow::Result<RecordSummary> {
    anyhow::ensure!(req.episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(req.envs > 0, "invalid value for `--envs`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(
        (0.0..=1.0).contains(&req.noise),
        "invalid value for `--noise`: {} (allowed: 0 ≤ noise ≤ 1)",
        req.noise
    );
    anyhow::ensure!(
        EXPERTS.contains(&req.expert.as_str()),
        "unknown expert `{}`; valid experts: {}",
        req.expert,
        EXPERTS.join(", ")
    );
    // Before recording: an output that would be refused wastes no episodes.
    crate::dataset::check_output(&req.out, req.force)?;
    let config = match &req.for_algo {
        Some(algo) => {
            let sources =
                crate::config::ConfigSources { task: Some(&req.task), algorithm: Some(algo), ..Default::default() };
            crate::config::resolve(&sources)?.env
        }
        None => crate::sim::task_config(&req.task),
    };
    let robot_type = config.as_ref().map(|c| c.scene.robot.clone());
    if let Some(size) = req.camera {
        anyhow::ensure!((8..=512).contains(&size), "invalid value for `--camera`: {size} (allowed: 8 ≤ pixels ≤ 512)");
        anyhow::ensure!(config.is_some(), "`--camera` needs a rapier task; `{}` has no scene", req.task);
    }
    let render =
        req.camera.zip(config.as_ref()).map(|(size, c)| crate::sim::camera::RenderConfig::for_task(c, size, size));
    let rec = |episodes: usize, seed: u64| {
        crate::sim::rapier::expert_runs::record_task_expert_rendered(
            &req.task,
            config.as_ref(),
            req.envs,
            episodes,
            seed,
            req.noise,
            render.clone(),
        )
    };

    let who = format!("the {} expert of {}", req.expert, req.task);
    let (demos, attempted, successes) = record_until(req.episodes, req.only_success, req.seed, &who, rec)?;
    let options = WriteOptions { robot_type, ..WriteOptions::default() };
    crate::dataset::save(&demos, &req.out, &options, req.force)?;
    Ok(RecordSummary { attempted, successes, written: demos.episodes.len(), frames: demos.num_steps() })
}

/// What `embodia record --run` records: a trained policy's own episodes.
#[derive(Debug, Clone)]
pub struct PolicyRecordRequest {
    /// Run directory whose policy acts, in its own environment (task, `[env]` table, cameras).
    pub run: PathBuf,
    /// Episodes to write (successful ones with `only_success`).
    pub episodes: usize,
    /// Seed of the first batch of episodes.
    pub seed: u64,
    /// Environments stepped in parallel.
    pub envs: usize,
    /// Keep only successful episodes, recording more until `episodes` of them are kept.
    pub only_success: bool,
    /// Sample the policy's actions instead of taking its mode.
    pub stochastic: bool,
    /// Dataset directory.
    pub out: PathBuf,
    /// Replace a non-empty `out`.
    pub force: bool,
}

/// Records the request's episodes of the run's policy (the actions it executed, the images
/// its environment renders) and writes them atomically as a dataset at `out`.
pub fn record_policy(req: &PolicyRecordRequest) -> anyhow::Result<RecordSummary> {
    anyhow::ensure!(req.episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(req.envs > 0, "invalid value for `--envs`: 0 (allowed: ≥ 1)");
    // Before recording: an output that would be refused wastes no episodes.
    crate::dataset::check_output(&req.out, req.force)?;
    let (config, learner) = crate::run::load_learner(&req.run)?;
    let task = config.env.clone().or_else(|| crate::sim::task_config(&config.task));
    let fps = task.as_ref().map_or(0.0, |t| 1.0 / t.scene.control_dt());
    anyhow::ensure!(
        fps > 0.0,
        "{}: `{}` is not a rapier task; only those record datasets",
        req.run.display(),
        config.task
    );
    let mut env = crate::run::make_env(&config, req.envs)?;
    let rec = |episodes: usize, seed: u64| {
        embodia_algos::record_policy_episodes(learner.as_ref(), env.as_mut(), episodes, seed, req.stochastic, fps)
    };
    let who = format!("the policy of {}", req.run.display());
    let (demos, attempted, successes) = record_until(req.episodes, req.only_success, req.seed, &who, rec)?;
    let robot_type = task.map(|t| t.scene.robot);
    let options = WriteOptions { robot_type, ..WriteOptions::default() };
    crate::dataset::save(&demos, &req.out, &options, req.force)?;
    Ok(RecordSummary { attempted, successes, written: demos.episodes.len(), frames: demos.num_steps() })
}

/// `episodes` episodes from `record(count, seed)`, or with `only_success` that many successful
/// ones, recording more (seeds `seed + 1`, …) until they are kept or
/// [`MAX_ATTEMPTS_FACTOR`] times as many were attempted (else an error naming `who`, what
/// acted). Returns the kept episodes, the episodes attempted and the successes.
pub(crate) fn record_until<E: Into<anyhow::Error>>(
    episodes: usize,
    only_success: bool,
    seed: u64,
    who: &str,
    mut record: impl FnMut(usize, u64) -> Result<Demonstrations, E>,
) -> anyhow::Result<(Demonstrations, usize, usize)> {
    let mut demos = record(episodes, seed).map_err(Into::into)?;
    let (mut attempted, mut successes) = (demos.episodes.len(), demos.episodes.iter().filter(|e| e.success).count());
    if only_success {
        demos.episodes.retain(|e| e.success);
        let mut round = 1;
        while demos.episodes.len() < episodes && attempted < MAX_ATTEMPTS_FACTOR * episodes {
            let more = record(episodes - demos.episodes.len(), seed.wrapping_add(round)).map_err(Into::into)?;
            attempted += more.episodes.len();
            successes += more.episodes.iter().filter(|e| e.success).count();
            demos.episodes.extend(more.episodes.into_iter().filter(|e| e.success));
            round += 1;
        }
        anyhow::ensure!(
            demos.episodes.len() >= episodes,
            "{who} succeeded in {successes} of {attempted} episodes; --only-success needs {episodes}"
        );
        demos.episodes.truncate(episodes);
    }
    Ok((demos, attempted, successes))
}

/// A human-readable summary of the dataset at `dir`: task, episodes, frames, fps, features,
/// success rate, return and length, and the observation/action statistics.
pub fn info(dir: &Path) -> anyhow::Result<String> {
    let ds = crate::dataset::read(dir)?;
    let d = &ds.demonstrations;
    let n = d.episodes.len().max(1) as f64;
    let mut s = String::new();
    writeln!(s, "dataset {} (LeRobot {})", dir.display(), ds.info.codebase_version)?;
    writeln!(s, "  task      {}", d.task)?;
    let mut instructions: Vec<&str> = d.episodes.iter().filter_map(|e| e.instruction.as_deref()).collect();
    instructions.sort_unstable();
    instructions.dedup();
    if !instructions.is_empty() {
        writeln!(s, "  instructions {} (e.g. \"{}\")", instructions.len(), instructions[0])?;
    }
    for c in &d.cameras {
        writeln!(s, "  camera    {} {}x{}x{}", c.name, c.height, c.width, c.channels)?;
    }
    if let Some(robot) = &ds.info.robot_type {
        writeln!(s, "  robot     {robot}")?;
    }
    writeln!(s, "  episodes  {}", d.episodes.len())?;
    writeln!(s, "  frames    {} (mean length {:.1})", d.num_steps(), d.num_steps() as f64 / n)?;
    writeln!(s, "  fps       {}", ds.info.fps)?;
    if ds.has_success() {
        writeln!(s, "  success   {:.1}%", 100.0 * d.success_rate())?;
    } else {
        writeln!(s, "  success   not recorded (no next.success column)")?;
    }
    if ds.info.features.contains_key(crate::dataset::info::column::REWARD) {
        let mean_return =
            d.episodes.iter().map(|e| e.rewards.iter().map(|&r| f64::from(r)).sum::<f64>()).sum::<f64>() / n;
        writeln!(s, "  return    {mean_return:.2} (mean per episode)")?;
    } else {
        writeln!(s, "  return    not recorded (no next.reward column)")?;
    }
    writeln!(s, "  features")?;
    for (name, f) in &ds.info.features {
        writeln!(s, "    {name:<20} {:<8} {:?}", f.dtype, f.shape)?;
    }
    for (name, st) in [("observation.state", &ds.stats.observation), ("action", &ds.stats.action)] {
        let fmt = |v: &[f64]| v.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(" ");
        writeln!(s, "  {name} stats over {} frames", st.count)?;
        writeln!(s, "    mean [{}]", fmt(&st.mean))?;
        writeln!(s, "    std  [{}]", fmt(&st.std))?;
        writeln!(s, "    min  [{}]", fmt(&st.min))?;
        writeln!(s, "    max  [{}]", fmt(&st.max))?;
    }
    Ok(s)
}
