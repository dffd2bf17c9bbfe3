//! `embodia bench solve`: steps and wall time until a policy first solves a task.
//!
//! Protocol: train; after every iteration (SAC: every `steps_per_iteration` = 1,000 env steps by
//! default; PPO: every rollout) run a deterministic evaluation of 10 episodes; the task is solved
//! the first time the mean return (the success rate, for tasks with a success criterion) reaches
//! the task's threshold. Wall time includes evaluation.
//!
//! Those 10 episodes start from the same initial states at every evaluation (the seed is fixed),
//! so the first 10/10 can be a lucky hit. For tasks with a success criterion, the policy that
//! solved is therefore also run from [`CONFIRM_EPISODES`] fresh initial states (outside the
//! timing): its success rate there is the figure to hold against the criterion.

use std::time::Instant;

use serde::Serialize;

use crate::config::TrainConfig;
use crate::run::{RunError, build_learner, default_device, evaluate_learner};

/// Episodes per evaluation in the solve protocol.
pub const SOLVE_EVAL_EPISODES: usize = 10;
/// Episodes from fresh initial states that confirm a solve (tasks with a success criterion).
pub const CONFIRM_EPISODES: usize = 1000;
/// Offset of the confirmation episodes' seed from the solve evaluation's seed.
const CONFIRM_SEED_OFFSET: u64 = 7_919;

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
    /// Success rate of the solving policy over [`CONFIRM_EPISODES`] episodes from fresh initial
    /// states (deterministic actions); `None` if unsolved or the task has no success criterion.
    pub confirm_success: Option<f64>,
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
            let wall_seconds = start.elapsed().as_secs_f64();
            let confirm_success = if info.has_success {
                let confirm = TrainConfig { seed: config.seed + CONFIRM_SEED_OFFSET, ..config.clone() };
                evaluate_learner(learner.as_ref(), &confirm, CONFIRM_EPISODES, false)?.success_rate
            } else {
                None
            };
            return Ok(SolveResult {
                seed: config.seed,
                solved: true,
                env_steps: learner.env_steps(),
                wall_seconds,
                last_eval_return: last,
                confirm_success,
            });
        }
    }
    Ok(SolveResult {
        seed: config.seed,
        solved: false,
        env_steps: learner.env_steps(),
        wall_seconds: start.elapsed().as_secs_f64(),
        last_eval_return: last,
        confirm_success: None,
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

/// Throughput of one environment batch with uniformly random actions.
#[derive(Debug, Clone, Serialize)]
pub struct SimThroughput {
    /// Environments in the batch.
    pub envs: usize,
    /// rayon worker threads.
    pub threads: usize,
    /// Environment steps taken (summed over the batch).
    pub env_steps: u64,
    /// Episodes that ended (and were reset) during the measurement.
    pub resets: u64,
    /// Environment steps per wall second, resets and observation/reward computation included.
    pub steps_per_s: f64,
}

/// Steps `envs` environments of `config`'s task with uniform random actions in their bounds on
/// `threads` rayon threads until at least `env_steps` steps are taken (after a warm-up of one
/// step per environment).
pub fn sim_throughput(
    config: &TrainConfig,
    envs: usize,
    threads: usize,
    env_steps: u64,
) -> Result<SimThroughput, RunError> {
    use rand::{Rng, SeedableRng};
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| RunError::Io { path: "rayon thread pool".into(), message: e.to_string() })?;
    pool.install(|| {
        let mut env = embodia_sim::make_with(&config.task, envs, config.env.as_ref())?;
        env.reset(config.seed);
        let bounds = env.action_spec().bounds.clone();
        let dim = bounds.dim();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed);
        let mut actions = vec![0.0f32; envs * dim];
        let mut draw = |actions: &mut [f32]| {
            for (i, a) in actions.iter_mut().enumerate() {
                let (lo, hi) = (bounds.low[i % dim], bounds.high[i % dim]);
                *a = rng.random_range(lo.max(-1e3)..=hi.min(1e3));
            }
        };
        draw(&mut actions);
        env.step(&actions)?;
        let (mut steps, mut resets) = (0u64, 0u64);
        let start = Instant::now();
        while steps < env_steps {
            draw(&mut actions);
            env.step(&actions)?;
            steps += envs as u64;
            let b = env.buffers();
            resets += (0..envs).filter(|&i| b.done(i)).count() as u64;
        }
        let seconds = start.elapsed().as_secs_f64();
        Ok(SimThroughput { envs, threads, env_steps: steps, resets, steps_per_s: steps as f64 / seconds })
    })
}

/// Figures of `embodia bench flow`: SFT from scripted demonstrations, then flow RL for a wall
/// time budget.
#[derive(Debug, Clone, Serialize)]
pub struct FlowBenchResult {
    /// Task.
    pub task: String,
    /// Flow-RL variant (`ppo-flow-sde`, `ppo-flow-noise`) or `dppo` (diffusion SFT then DPPO).
    pub algorithm: String,
    /// Demonstrations (successful scripted-expert episodes).
    pub demos: usize,
    /// SFT gradient steps.
    pub sft_steps: u64,
    /// Wall seconds of SFT (recording the demonstrations included).
    pub sft_seconds: f64,
    /// Success rate of the SFT policy (deterministic, `eval_episodes` episodes).
    pub sft_success: f64,
    /// Success rate after flow RL (same protocol).
    pub rl_success: f64,
    /// Environment steps of flow RL.
    pub rl_env_steps: u64,
    /// Wall seconds of flow RL (without the evaluations).
    pub rl_seconds: f64,
    /// Chunk steps (policy queries × environments) per second of RL rollouts.
    pub chunk_steps_per_s: f64,
    /// Seconds spent stepping environments during RL.
    pub sim_seconds: f64,
    /// Seconds spent sampling chunks and bootstrap values during RL.
    pub inference_seconds: f64,
    /// Seconds spent in advantages and updates during RL.
    pub update_seconds: f64,
}

/// SFT of the default flow policy on `demos` scripted demonstrations of `task` for `sft_steps`
/// gradient steps, evaluation (S0), then `algorithm` from that policy for `rl_seconds` of
/// wall time with `num_envs` environments, evaluation (S1). Evaluations run `eval_episodes`
/// deterministic episodes from the evaluation seed.
#[allow(clippy::too_many_arguments)]
pub fn flow_bench(
    task: &str,
    algorithm: &str,
    demos: usize,
    sft_steps: u64,
    rl_seconds: f64,
    num_envs: usize,
    eval_episodes: usize,
    seed: u64,
) -> Result<FlowBenchResult, RunError> {
    use embodia_algos::{FlowRlMethod, Learner, PpoFlow, PpoFlowConfig, Sft, SftConfig, evaluate};
    let method = match algorithm {
        "dppo" => return dppo_bench(task, demos, sft_steps, rl_seconds, num_envs, eval_episodes, seed),
        "ppo-flow-sde" => FlowRlMethod::Sde,
        "ppo-flow-noise" => FlowRlMethod::Noise,
        other => return Err(crate::config::ConfigError::UnknownAlgorithm(other.into()).into()),
    };
    let env_config = embodia_sim::task_config(task);
    let eval_seed = seed + crate::run::EVAL_SEED_OFFSET;
    let mut eval_env = embodia_sim::make_with(task, eval_episodes, env_config.as_ref())?;
    let start = Instant::now();
    let config =
        SftConfig { decay_steps: sft_steps.max(SftConfig::default().warmup_steps + 1), ..SftConfig::default() };
    let recorded = crate::run::record_demos(task, env_config.as_ref(), demos, seed, config.demo_noise)?;
    let mut sft = Sft::new(config, eval_env.as_ref(), &recorded, default_device(), seed)?;
    for _ in 0..sft_steps {
        sft.update()?;
    }
    let sft_seconds = start.elapsed().as_secs_f64();
    let sft_success = evaluate(&sft, eval_env.as_mut(), eval_seed, false)?.success_rate.unwrap_or(0.0);

    let config = PpoFlowConfig { method, num_envs, init: "(in memory)".into(), ..PpoFlowConfig::default() };
    let mut env = embodia_sim::make_with(task, num_envs, env_config.as_ref())?;
    env.reset(seed);
    let mut rl = PpoFlow::new(config.clone(), env.as_ref(), &sft.checkpoint()?, default_device(), seed)?;
    let (mut sim, mut inference, mut update, mut rl_time) = (0.0, 0.0, 0.0, 0.0);
    let mut chunk_steps = 0u64;
    while rl_time < rl_seconds {
        let t = Instant::now();
        rl.iterate(env.as_mut())?;
        rl_time += t.elapsed().as_secs_f64();
        let split = rl.last_time_split();
        (sim, inference, update) = (sim + split.sim, inference + split.inference, update + split.update);
        chunk_steps += (config.chunk_steps * num_envs) as u64;
    }
    let rl_success = evaluate(&rl, eval_env.as_mut(), eval_seed, false)?.success_rate.unwrap_or(0.0);
    Ok(FlowBenchResult {
        task: task.into(),
        algorithm: algorithm.into(),
        demos,
        sft_steps,
        sft_seconds,
        sft_success,
        rl_success,
        rl_env_steps: rl.env_steps(),
        rl_seconds: rl_time,
        chunk_steps_per_s: chunk_steps as f64 / (sim + inference).max(1e-9),
        sim_seconds: sim,
        inference_seconds: inference,
        update_seconds: update,
    })
}

/// [`flow_bench`] for `dppo`: SFT of the default diffusion policy (`model = diffusion`), then
/// DPPO with its defaults and `num_envs` environments.
fn dppo_bench(
    task: &str,
    demos: usize,
    sft_steps: u64,
    rl_seconds: f64,
    num_envs: usize,
    eval_episodes: usize,
    seed: u64,
) -> Result<FlowBenchResult, RunError> {
    use embodia_algos::{ChunkModel, DiffusionSft, Dppo, DppoConfig, Learner, SftConfig, evaluate};
    let env_config = embodia_sim::task_config(task);
    let eval_seed = seed + crate::run::EVAL_SEED_OFFSET;
    let mut eval_env = embodia_sim::make_with(task, eval_episodes, env_config.as_ref())?;
    let start = Instant::now();
    let config = SftConfig {
        decay_steps: sft_steps.max(SftConfig::default().warmup_steps + 1),
        model: ChunkModel::Diffusion,
        ..SftConfig::default()
    };
    let recorded = crate::run::record_demos(task, env_config.as_ref(), demos, seed, config.demo_noise)?;
    let mut sft = DiffusionSft::new(config, eval_env.as_ref(), &recorded, default_device(), seed)?;
    for _ in 0..sft_steps {
        sft.update()?;
    }
    let sft_seconds = start.elapsed().as_secs_f64();
    let sft_success = evaluate(&sft, eval_env.as_mut(), eval_seed, false)?.success_rate.unwrap_or(0.0);

    let config = DppoConfig { num_envs, init: "(in memory)".into(), ..DppoConfig::default() };
    let mut env = embodia_sim::make_with(task, num_envs, env_config.as_ref())?;
    env.reset(seed);
    let mut rl = Dppo::new(config.clone(), env.as_ref(), &sft.checkpoint()?, default_device(), seed)?;
    let (mut sim, mut inference, mut update, mut rl_time) = (0.0, 0.0, 0.0, 0.0);
    let mut chunk_steps = 0u64;
    while rl_time < rl_seconds {
        let t = Instant::now();
        rl.iterate(env.as_mut())?;
        rl_time += t.elapsed().as_secs_f64();
        let split = rl.last_time_split();
        (sim, inference, update) = (sim + split.sim, inference + split.inference, update + split.update);
        chunk_steps += (config.chunk_steps * num_envs) as u64;
    }
    let rl_success = evaluate(&rl, eval_env.as_mut(), eval_seed, false)?.success_rate.unwrap_or(0.0);
    Ok(FlowBenchResult {
        task: task.into(),
        algorithm: "dppo".into(),
        demos,
        sft_steps,
        sft_seconds,
        sft_success,
        rl_success,
        rl_env_steps: rl.env_steps(),
        rl_seconds: rl_time,
        chunk_steps_per_s: chunk_steps as f64 / (sim + inference).max(1e-9),
        sim_seconds: sim,
        inference_seconds: inference,
        update_seconds: update,
    })
}

/// Steps `envs` tensor environments of `task` on `device` with uniform random actions drawn on
/// the device, through [`embodia_sim::tensor::TensorVecEnv::step_tensor`] (nothing comes back
/// to the host but one reset count per measurement), until at least `env_steps` steps are
/// taken, after a warm-up of one step. `threads` in the result is 0: the backend decides.
pub fn tensor_sim_throughput(
    task: &str,
    envs: usize,
    device: &burn::tensor::Device,
    env_steps: u64,
    seed: u64,
) -> Result<SimThroughput, RunError> {
    use burn::tensor::{Distribution, Tensor};
    let mut env = embodia_sim::tensor::make_tensor(task, envs, device)?;
    env.reset(seed);
    let bounds = env.action_spec().bounds.clone();
    let dim = bounds.dim();
    let low = Tensor::<1>::from_floats(bounds.low.as_slice(), device).reshape([1, dim]);
    let span = Tensor::<1>::from_floats(
        bounds.low.iter().zip(&bounds.high).map(|(l, h)| (h - l).min(2e3)).collect::<Vec<_>>().as_slice(),
        device,
    )
    .reshape([1, dim]);
    let draw = || Tensor::<2>::random([envs, dim], Distribution::Default, device) * span.clone() + low.clone();
    env.step_tensor(draw())?;
    let mut ended = Tensor::<1>::zeros([envs], device);
    let mut steps = 0u64;
    let start = Instant::now();
    while steps < env_steps {
        let s = env.step_tensor(draw())?;
        ended = ended + (s.terminated + s.truncated).clamp(0.0, 1.0);
        steps += envs as u64;
    }
    // Reading the count waits for the device to finish the queued steps.
    let resets = ended.sum().into_scalar::<f32>() as u64;
    let seconds = start.elapsed().as_secs_f64();
    Ok(SimThroughput { envs, threads: 0, env_steps: steps, resets, steps_per_s: steps as f64 / seconds })
}
