//! `embodia compare`: two runs evaluated on the same episodes, and their paired difference.
//!
//! `embodia eval` draws a run's episodes from the run's own seed, so two runs' success rates
//! differ by the draw as well as by the policy. Here both policies act from the same initial
//! states and instructions (the episodes of one evaluation seed), so every episode is a pair,
//! and the confidence interval of the difference comes from the spread of the paired
//! differences: on lang-cubes' held-out variants at 512 episodes it is about ±2.4 points
//! where two independent rates would give about ±5.7.

use std::collections::BTreeMap;
use std::path::Path;

use embodia_algos::{EpisodeOutcome, EvalMode, EvalResult};
use embodia_sim::rapier::language::Split;
use serde::Serialize;

use crate::config::TrainConfig;
use crate::run::{RunError, evaluate_learner_in, load_learner};

/// What `embodia compare` evaluates.
#[derive(Debug, Clone)]
pub struct CompareSpec {
    /// Episodes per run (one environment each).
    pub episodes: usize,
    /// How both policies choose actions; `None`: the first run's reference mode
    /// ([`embodia_algos::Learner::default_eval_mode`]).
    pub mode: Option<EvalMode>,
    /// Seed of the shared episodes; `None`: the first run's.
    pub seed: Option<u64>,
    /// Language-conditioned tasks: the variants to draw instead of each run's configured split.
    pub split: Option<Split>,
}

/// Two runs on the same episodes: `b − a`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedComparison {
    /// Task of both runs.
    pub task: String,
    /// Episodes each run played.
    pub episodes: usize,
    /// The shared seed (each run's `seed` replaced by it for the evaluation).
    pub seed: u64,
    /// How both policies chose actions.
    pub mode: EvalMode,
    /// `success` (0 or 1 per episode, at its last step) or `return` (tasks without a success
    /// notion).
    pub metric: String,
    /// Mean of the metric for the first run (success: a fraction).
    pub a: f64,
    /// The same for the second run.
    pub b: f64,
    /// `b − a`.
    pub difference: f64,
    /// 95% confidence interval of the difference: mean ± 1.96 standard errors of the paired
    /// differences.
    pub ci95: [f64; 2],
    /// Success only: episodes only the first run succeeded in.
    pub a_only: Option<usize>,
    /// Success only: episodes only the second run succeeded in.
    pub b_only: Option<usize>,
    /// Success per instruction (language-conditioned tasks), sorted by instruction.
    pub per_instruction: Vec<InstructionPair>,
}

/// Both runs' successes on the episodes of one instruction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstructionPair {
    /// The instruction.
    pub instruction: String,
    /// Episodes drawn with it.
    pub episodes: usize,
    /// Of those, the first run's successes.
    pub a_successes: usize,
    /// The second run's.
    pub b_successes: usize,
}

/// Evaluates the runs in `a` and `b` on the same `spec.episodes` episodes and pairs them.
/// The runs must be of one task and draw the same episodes from one seed (the same `[env]`
/// table, or `spec.env`); otherwise the error says which episode differs.
pub fn compare_runs(a: &Path, b: &Path, spec: &CompareSpec) -> Result<PairedComparison, RunError> {
    let (mut config_a, learner_a) = load_learner(a)?;
    let (mut config_b, learner_b) = load_learner(b)?;
    if config_a.task != config_b.task {
        return Err(RunError::Io {
            path: b.display().to_string(),
            message: format!(
                "is a run of `{}`, {} of `{}`: compare runs of one task",
                config_b.task,
                a.display(),
                config_a.task
            ),
        });
    }
    let seed = spec.seed.unwrap_or(config_a.seed);
    let mode = spec.mode.unwrap_or_else(|| learner_a.default_eval_mode());
    let evaluate = |config: &mut TrainConfig, learner: &dyn embodia_algos::Learner| {
        config.seed = seed;
        if let Some(split) = spec.split {
            let task = config.env.take().or_else(|| embodia_sim::task_config(&config.task));
            let mut task = task.filter(|t| t.command.language.is_some()).ok_or_else(|| RunError::Io {
                path: "--split".into(),
                message: format!(
                    "needs a language-conditioned task (lang-cubes); `{}` has no instructions",
                    config.task
                ),
            })?;
            task.command.language.as_mut().expect("filtered").split = split;
            config.env = Some(task);
        }
        evaluate_learner_in(learner, config, spec.episodes, mode, None)
    };
    let ra = evaluate(&mut config_a, learner_a.as_ref())?;
    let rb = evaluate(&mut config_b, learner_b.as_ref())?;
    pair(&ra, &rb, seed).map_err(|message| RunError::Io { path: b.display().to_string(), message })
}

/// The paired comparison of two evaluations of the same episodes; `Err` names the first
/// episode whose initial state or instruction differs.
pub(crate) fn pair(a: &EvalResult, b: &EvalResult, seed: u64) -> Result<PairedComparison, String> {
    let (ea, eb) = (&a.per_episode, &b.per_episode);
    let drawn = |e: &EpisodeOutcome| (e.instruction.clone(), e.initial_positions.clone());
    if let Some(k) = (0..ea.len().max(eb.len())).find(|&k| ea.get(k).map(drawn) != eb.get(k).map(drawn)) {
        return Err(format!(
            "episode {k} starts from another state or instruction than the first run's: the runs' [env] tables \
             draw different episodes, so they cannot be paired"
        ));
    }
    let success = |e: &EpisodeOutcome| e.success.map(|(end, _)| end);
    let has_success = ea.iter().chain(eb).all(|e| success(e).is_some());
    let value = |e: &EpisodeOutcome| match success(e) {
        Some(s) if has_success => f64::from(u8::from(s)),
        _ => f64::from(e.episode_return),
    };
    let diffs: Vec<f64> = ea.iter().zip(eb).map(|(x, y)| value(y) - value(x)).collect();
    let n = diffs.len() as f64;
    let mean = |v: &mut dyn Iterator<Item = f64>| v.sum::<f64>() / n;
    let difference = mean(&mut diffs.iter().copied());
    let variance = diffs.iter().map(|d| (d - difference).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let half = 1.96 * (variance / n).sqrt();
    let only = |x: &[EpisodeOutcome], y: &[EpisodeOutcome]| {
        x.iter().zip(y).filter(|(p, q)| success(p) == Some(true) && success(q) != Some(true)).count()
    };
    let mut per_instruction = BTreeMap::<String, InstructionPair>::new();
    for (x, y) in ea.iter().zip(eb) {
        let Some(instruction) = &x.instruction else { continue };
        let row = per_instruction.entry(instruction.clone()).or_insert_with(|| InstructionPair {
            instruction: instruction.clone(),
            episodes: 0,
            a_successes: 0,
            b_successes: 0,
        });
        row.episodes += 1;
        row.a_successes += usize::from(success(x) == Some(true));
        row.b_successes += usize::from(success(y) == Some(true));
    }
    Ok(PairedComparison {
        task: a.task.clone(),
        episodes: ea.len(),
        seed,
        mode: a.mode,
        metric: if has_success { "success" } else { "return" }.into(),
        a: mean(&mut ea.iter().map(value)),
        b: mean(&mut eb.iter().map(value)),
        difference,
        ci95: [difference - half, difference + half],
        a_only: has_success.then(|| only(ea, eb)),
        b_only: has_success.then(|| only(eb, ea)),
        per_instruction: per_instruction.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(instruction: &str, start: f32, success: bool) -> EpisodeOutcome {
        EpisodeOutcome {
            episode_return: if success { 10.0 } else { 1.0 },
            length: 5,
            success: Some((success, success)),
            instruction: Some(instruction.into()),
            initial_positions: vec![start],
            last_positions: vec![start],
        }
    }

    fn result(episodes: Vec<EpisodeOutcome>) -> EvalResult {
        EvalResult {
            task: "t".into(),
            mode: EvalMode::Sampled,
            episodes: episodes.len(),
            mean_return: 0.0,
            std_return: 0.0,
            success_rate: None,
            success_once_rate: None,
            mean_length: 5.0,
            per_instruction: Vec::new(),
            per_episode: episodes,
            position_names: vec!["objects/cube.x".into()],
        }
    }

    #[test]
    fn paired_successes_give_the_difference_its_interval_and_the_discordant_episodes() {
        let a = result(vec![
            outcome("x", 0.0, true),
            outcome("x", 1.0, false),
            outcome("y", 2.0, false),
            outcome("y", 3.0, true),
        ]);
        let b = result(vec![
            outcome("x", 0.0, true),
            outcome("x", 1.0, true),
            outcome("y", 2.0, true),
            outcome("y", 3.0, true),
        ]);
        let c = pair(&a, &b, 7).unwrap();
        assert_eq!((c.metric.as_str(), c.a, c.b, c.difference), ("success", 0.5, 1.0, 0.5));
        // Differences 0, 1, 1, 0: sample variance 1/3, standard error sqrt(1/12).
        let half = 1.96 * (1.0f64 / 12.0).sqrt();
        assert!((c.ci95[0] - (0.5 - half)).abs() < 1e-12 && (c.ci95[1] - (0.5 + half)).abs() < 1e-12, "{c:?}");
        assert_eq!((c.a_only, c.b_only), (Some(0), Some(2)));
        let rows: Vec<_> = c
            .per_instruction
            .iter()
            .map(|r| (r.instruction.as_str(), r.episodes, r.a_successes, r.b_successes))
            .collect();
        assert_eq!(rows, [("x", 2, 1, 2), ("y", 2, 1, 2)]);
        // The same evaluation against itself: no difference and a zero-width interval.
        let same = pair(&a, &a, 7).unwrap();
        assert_eq!((same.difference, same.ci95, same.a_only, same.b_only), (0.0, [0.0, 0.0], Some(0), Some(0)));
    }

    #[test]
    fn episodes_that_start_apart_are_not_paired() {
        let a = result(vec![outcome("x", 0.0, true), outcome("x", 1.0, false)]);
        let moved = result(vec![outcome("x", 0.0, true), outcome("x", 1.5, false)]);
        assert!(pair(&a, &moved, 1).unwrap_err().contains("episode 1 starts from another state"));
        let other = result(vec![outcome("x", 0.0, true), outcome("z", 1.0, false)]);
        assert!(pair(&a, &other, 1).unwrap_err().contains("episode 1"));
    }

    #[test]
    fn tasks_without_success_compare_returns() {
        let plain =
            |r: f32| EpisodeOutcome { episode_return: r, success: None, instruction: None, ..outcome("", 0.0, false) };
        let c = pair(&result(vec![plain(1.0), plain(3.0)]), &result(vec![plain(2.0), plain(5.0)]), 0).unwrap();
        assert_eq!((c.metric.as_str(), c.a, c.b, c.difference), ("return", 2.0, 3.5, 1.5));
        assert_eq!((c.a_only, c.b_only), (None, None));
        assert!(c.per_instruction.is_empty());
    }
}
