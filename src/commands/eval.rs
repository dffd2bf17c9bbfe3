//! `embodia eval`: evaluate a run's policy (in an evaluation mode) or a task's scripted expert.

use clap::Args;
use std::path::{Path, PathBuf};

use embodia::algos::{EvalMode, EvalResult, StepTrace};
use embodia::run::{evaluate_learner_in, load_learner, write_episode_outcomes, write_step_trace};

/// The arguments of `embodia eval`.
#[derive(Args)]
pub(crate) struct EvalArgs {
    /// Run directory.
    #[arg(long, required_unless_present = "expert", conflicts_with = "expert")]
    pub(crate) run: Option<PathBuf>,
    /// Evaluate the task's scripted expert instead of a policy (reach, pick-cube, push-t, lang-cubes).
    #[arg(long, value_parser = ["scripted"], requires = "task")]
    pub(crate) expert: Option<String>,
    /// Task of the expert.
    #[arg(long, requires = "expert")]
    pub(crate) task: Option<String>,
    /// Seed of the expert's episodes.
    #[arg(long, default_value_t = 0, requires = "expert")]
    pub(crate) seed: u64,
    /// Episodes to run.
    #[arg(long, default_value_t = 10, value_parser = super::episodes)]
    pub(crate) episodes: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// How the policy chooses actions: `sampled` (a fresh initial noise per chunk; Gaussian
    /// policies: a sampled action), `zero` (deterministic from zero noise; Gaussian: the
    /// mean) or `fixed-draw` (deterministic from one fixed draw of the noise) [default: the
    /// policy's reference mode: sampled for flow, diffusion and VLA policies, zero otherwise].
    #[arg(long, value_parser = EVAL_MODES, conflicts_with_all = ["stochastic", "expert"])]
    pub(crate) mode: Option<String>,
    /// The same as `--mode sampled`.
    #[arg(long)]
    pub(crate) stochastic: bool,
    /// Also record this many deterministic episodes into RUN/episodes.rrd (link transforms
    /// with visual geometry, targets, observations, actions, rewards; needs the `rerun`
    /// feature).
    #[arg(long, value_name = "N", conflicts_with = "expert", value_parser = super::episodes)]
    pub(crate) record_episodes: Option<usize>,
    /// Also draw frames of the first episode (of the policy or the expert) into this PNG,
    /// with embodia's own renderer (rapier tasks).
    #[arg(long, value_name = "FILE.png")]
    pub(crate) render: Option<PathBuf>,
    /// Frames to draw with `--render`, spread evenly over the episode.
    #[arg(long, default_value_t = 6, requires = "render")]
    pub(crate) render_frames: usize,
    /// Language-conditioned tasks (lang-cubes): evaluate on these variants instead of the
    /// configured split: `train`, `held_out` (generalization) or `all`.
    #[arg(long, value_parser = ["train", "held_out", "all"])]
    pub(crate) split: Option<String>,
    /// Also write every episode into this CSV: return, length, success at the end and at
    /// any step, instruction, and the objects' and targets' positions right after reset and
    /// one step before the end (to see what failing episodes share and how they end).
    #[arg(long, value_name = "FILE.csv", conflicts_with = "expert")]
    pub(crate) episodes_csv: Option<PathBuf>,
    /// Also write every step of every episode into this CSV: reward, success, the
    /// observation acted on, the action executed and the objects' and targets' positions
    /// (to see where failing episodes go wrong).
    #[arg(long, value_name = "FILE.csv", conflicts_with = "expert")]
    pub(crate) steps_csv: Option<PathBuf>,
}

/// The arguments of `embodia view`.
#[derive(Args)]
pub(crate) struct ViewArgs {
    /// Run directory (or one .rrd file).
    pub(crate) run: PathBuf,
}

pub(crate) fn describe_eval(e: &EvalResult) -> String {
    let success = match (e.success_rate, e.success_once_rate) {
        (Some(end), Some(once)) if once != end => {
            format!(", success {:.0}% (at any step: {:.0}%)", 100.0 * end, 100.0 * once)
        }
        (Some(end), _) => format!(", success {:.0}%", 100.0 * end),
        _ => String::new(),
    };
    format!(
        "mean return {:.1} ± {:.1}, mean length {:.0}{success} ({} evaluation, {} episode{})",
        e.mean_return,
        e.std_return,
        e.mean_length,
        e.mode,
        e.episodes,
        if e.episodes == 1 { "" } else { "s" }
    )
}

/// `env` (or the task's default config) with the language family's split set to `split`
/// (`train`, `held_out`, `all`); `env` unchanged without `split`.
pub(crate) fn with_split(
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
pub(crate) struct EvalCsv<'a> {
    pub(crate) episodes: Option<&'a Path>,
    pub(crate) steps: Option<&'a Path>,
}

/// The `--mode` values of `eval` and `compare` ([`EvalMode::name`]).
pub(crate) const EVAL_MODES: [&str; 3] = ["sampled", "zero", "fixed-draw"];

/// The evaluation mode of `--mode NAME` (checked by clap against [`EVAL_MODES`]) or
/// `--stochastic`; `None`: the policy's reference mode.
pub(crate) fn eval_mode(name: Option<&str>, stochastic: bool) -> Option<EvalMode> {
    if stochastic { Some(EvalMode::Sampled) } else { name.and_then(EvalMode::from_name) }
}

pub(crate) fn eval(
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

pub(crate) fn eval_expert(
    task: &str,
    episodes: usize,
    seed: u64,
    json: bool,
    split: Option<&str>,
) -> anyhow::Result<()> {
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let config = with_split(task, None, split)?;
    let e = embodia::sim::rapier::expert_runs::evaluate_task_expert(task, config.as_ref(), 16, episodes, seed)?;
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

pub(crate) fn record_rrd(run: &Path, episodes: usize) -> anyhow::Result<()> {
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
