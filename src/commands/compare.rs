//! `embodia compare`: two runs on the same episodes, with a paired 95% confidence interval.

use crate::commands::eval::EVAL_MODES;
use clap::Args;
use std::path::PathBuf;

use embodia::algos::EvalMode;

/// The arguments of `embodia compare`.
#[derive(Args)]
pub(crate) struct CompareArgs {
    /// The two run directories, first the baseline: `--run A --run B`.
    #[arg(long, num_args = 1, required = true)]
    pub(crate) run: Vec<PathBuf>,
    /// Episodes per run.
    #[arg(long, default_value_t = 128, value_parser = super::episodes)]
    pub(crate) episodes: usize,
    /// Seed of the shared episodes [default: the first run's].
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// How both policies choose actions: `sampled`, `zero` or `fixed-draw` (see `eval
    /// --mode`) [default: the first run's reference mode].
    #[arg(long, value_parser = EVAL_MODES, conflicts_with = "stochastic")]
    pub(crate) mode: Option<String>,
    /// The same as `--mode sampled`.
    #[arg(long)]
    pub(crate) stochastic: bool,
    /// Language-conditioned tasks (lang-cubes): draw these variants instead of the
    /// configured split: `train`, `held_out` or `all`.
    #[arg(long, value_parser = ["train", "held_out", "all"])]
    pub(crate) split: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn compare(
    runs: &[PathBuf],
    episodes: usize,
    seed: Option<u64>,
    mode: Option<EvalMode>,
    split: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::sim::rapier::language::Split;
    let [a, b] = runs else {
        anyhow::bail!("invalid `--run`: {} given (allowed: exactly two, `--run A --run B`)", runs.len());
    };
    anyhow::ensure!(episodes > 1, "invalid value for `--episodes`: {episodes} (allowed: ≥ 2)");
    let split = split.map(|s| match s {
        "held_out" => Split::HeldOut,
        "all" => Split::All,
        _ => Split::Train,
    });
    let spec = embodia::compare::CompareSpec { episodes, mode, seed, split };
    let c = embodia::compare::compare_runs(a, b, &spec)?;
    if json {
        println!("{}", serde_json::to_string(&c)?);
        return Ok(());
    }
    let (scale, percent, unit) = if c.metric == "success" { (100.0, "%", " points") } else { (1.0, "", "") };
    println!(
        "{} episodes of {} (seed {}, {} evaluation), {} of each run:",
        c.episodes, c.task, c.seed, c.mode, c.metric
    );
    println!("  A {}: {:.1}{percent}", a.display(), scale * c.a);
    println!("  B {}: {:.1}{percent}", b.display(), scale * c.b);
    let mut line = format!(
        "  B − A: {:+.1}{unit}, 95% CI [{:+.1}, {:+.1}] (paired)",
        scale * c.difference,
        scale * c.ci95[0],
        scale * c.ci95[1]
    );
    if let (Some(a_only), Some(b_only)) = (c.a_only, c.b_only) {
        line += &format!("; A alone succeeded in {a_only} episodes, B alone in {b_only}");
    }
    println!("{line}");
    if !c.per_instruction.is_empty() {
        println!("  successes of A / B, of the episodes of each instruction:");
    }
    for r in &c.per_instruction {
        println!("  {:>3} / {:>3} of {:>3}  {}", r.a_successes, r.b_successes, r.episodes, r.instruction);
    }
    Ok(())
}
