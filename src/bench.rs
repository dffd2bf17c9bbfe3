//! `embodia bench solve`: steps and wall time until a policy first solves a task.
//!
//! Protocol: train; after every iteration (SAC: every `steps_per_iteration` = 1,000 env steps by
//! default; PPO: every rollout) run a deterministic evaluation of 10 episodes; the task is solved
//! the first time the mean return (the success rate, for tasks with a success criterion) reaches
//! the task's threshold. Wall time includes evaluation.

use std::time::Instant;

use serde::Serialize;

use crate::config::TrainConfig;
use crate::run::{RunError, build_learner, default_device, evaluate_learner};

/// Episodes per evaluation in the solve protocol.
pub const SOLVE_EVAL_EPISODES: usize = 10;

/// Outcome of one seed.
#[derive(Debug, Clone, Serialize)]
pub struct SolveResult {
    /// Training seed.
    pub seed: u64,
    /// Whether the threshold was reached within the budget.
    pub solved: bool,
    /// Environment steps at the solving evaluation (or the budget if unsolved).
    pub env_steps: u64,
    /// Wall seconds from the start of training to the solving evaluation, evaluations included.
    pub wall_seconds: f64,
    /// Mean return of the last evaluation.
    pub last_eval_return: f64,
}

/// Trains `config` (with its seed) until solved or `config.total_steps` is spent.
pub fn solve(config: &TrainConfig) -> Result<SolveResult, RunError> {
    let info = embodia_sim::tasks().iter().find(|t| t.name == config.task).expect("config tasks are validated");
    let mut env = embodia_sim::make_with(&config.task, config.algo.num_envs(), config.env.as_ref())?;
    env.reset(config.seed);
    let mut learner = build_learner(config, env.as_ref(), &default_device())?;
    let start = Instant::now();
    let mut last = f64::NEG_INFINITY;
    while learner.env_steps() < config.total_steps {
        learner.iterate(env.as_mut())?;
        let eval = evaluate_learner(learner.as_ref(), config, SOLVE_EVAL_EPISODES, false)?;
        last = eval.mean_return;
        let score = if info.has_success { eval.success_rate.unwrap_or(0.0) } else { last };
        if score >= info.solve_threshold as f64 {
            return Ok(SolveResult {
                seed: config.seed,
                solved: true,
                env_steps: learner.env_steps(),
                wall_seconds: start.elapsed().as_secs_f64(),
                last_eval_return: last,
            });
        }
    }
    Ok(SolveResult {
        seed: config.seed,
        solved: false,
        env_steps: learner.env_steps(),
        wall_seconds: start.elapsed().as_secs_f64(),
        last_eval_return: last,
    })
}

/// Median of `xs` (mean of the middle two for even counts); `None` if empty.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    Some(if n % 2 == 1 { xs[n / 2] } else { 0.5 * (xs[n / 2 - 1] + xs[n / 2]) })
}
