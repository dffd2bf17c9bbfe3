//! The measurements behind `embodia bench`, one module per benchmark family: [`vla`] (πRL's
//! recipe on the VLA), [`lang`] (language generalization), [`mcu`] (the microcontroller),
//! [`vla_model`] (VLA latency), [`export_latency`] (exported policies per call), [`fuzz`] (the
//! parsers on mutated input); this module
//! holds `bench solve`, `bench sim`, `bench flow` and the tensor-environment throughput.
//!
//! `embodia bench solve`: steps and wall time until a policy first solves a task.
//!
//! Protocol: train; after every iteration (SAC: every `steps_per_iteration` = 1,000 env steps by
//! default; PPO: every rollout) run a deterministic evaluation of 10 episodes; the task is solved
//! the first time the mean return (the success rate, for tasks with a success criterion) reaches
//! the task's threshold. Wall time includes evaluation.
//!
//! Those 10 episodes start from the same initial states at every evaluation (the seed is fixed),
//! so for tasks with a success criterion 10/10 is only a screen: a policy that passes it is run
//! on [`GATE_EPISODES`] more (also fixed, inside the timing), and the task is solved when the
//! success rate there reaches the threshold. The policy that solved is then run from
//! [`CONFIRM_EPISODES`] fresh initial states (outside the timing): its success rate there (its
//! mean return, for tasks judged by return) is the figure to hold against the criterion.

pub mod allreduce;
pub mod export_latency;
pub mod fuzz;
pub mod lang;
pub mod mcu;
pub mod vla;
pub mod vla_model;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::algorithms::AlgoConfig;
use crate::config::TrainConfig;
use crate::device::default_device;
use crate::run::{RunError, build_learner, evaluate_learner, evaluate_learner_in};
use embodia_algos::{EvalMode, EvalResult, Learner};
use embodia_sim::SolveMetric;

/// Episodes per evaluation in the solve protocol.
pub const SOLVE_EVAL_EPISODES: usize = 10;
/// Episodes of the gate a policy passing the 10-episode screen must also pass (tasks with a
/// success criterion).
pub const GATE_EPISODES: usize = 1000;
/// Offset of the gate episodes' seed from the solve evaluation's seed.
const GATE_SEED_OFFSET: u64 = 104_729;
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
    /// Mean return of the solving policy over [`CONFIRM_EPISODES`] episodes from fresh initial
    /// states, for tasks judged by return (the 10 screening episodes start from the same
    /// states at every evaluation, so passing them once can be luck); `None` if unsolved or
    /// judged by success.
    pub confirm_return: Option<f64>,
}

/// Trains `config` (with its seed) until solved or `config.total_steps` is spent. After every
/// evaluation `progress` gets the env steps so far, the wall seconds and the evaluation's mean
/// return and success rate (for a caller that shows progress).
pub fn solve(
    config: &TrainConfig,
    progress: &mut dyn FnMut(u64, f64, f64, Option<f64>),
) -> Result<SolveResult, RunError> {
    let info = embodia_sim::tasks().iter().find(|t| t.name == config.task).expect("config tasks are validated");
    let mut env = embodia_sim::make_with(&config.task, config.algo.num_envs(), config.env.as_ref())?;
    env.reset(config.seed);
    let mut learner = build_learner(config, env.as_ref(), &default_device())?;
    let start = Instant::now();
    let mut last = f64::NEG_INFINITY;
    while learner.env_steps() < config.total_steps {
        learner.iterate(env.as_mut())?;
        let eval = evaluate_learner(learner.as_ref(), config, SOLVE_EVAL_EPISODES, learner.default_eval_mode())?;
        last = eval.mean_return;
        progress(learner.env_steps(), start.elapsed().as_secs_f64(), last, eval.success_rate);
        let threshold = f64::from(info.solve_threshold);
        let by_success = info.solved_by == SolveMetric::SuccessRate;
        let solved = if by_success {
            eval.success_rate.unwrap_or(0.0) >= threshold && {
                let gate = TrainConfig { seed: config.seed + GATE_SEED_OFFSET, ..config.clone() };
                let rate =
                    evaluate_learner(learner.as_ref(), &gate, GATE_EPISODES, learner.default_eval_mode())?.success_rate;
                rate.unwrap_or(0.0) >= threshold
            }
        } else {
            last >= threshold
        };
        if solved {
            let wall_seconds = start.elapsed().as_secs_f64();
            let confirm = TrainConfig { seed: config.seed + CONFIRM_SEED_OFFSET, ..config.clone() };
            let confirmed =
                evaluate_learner(learner.as_ref(), &confirm, CONFIRM_EPISODES, learner.default_eval_mode())?;
            let (confirm_success, confirm_return) = match by_success {
                true => (confirmed.success_rate, None),
                false => (None, Some(confirmed.mean_return)),
            };
            return Ok(SolveResult {
                seed: config.seed,
                solved: true,
                env_steps: learner.env_steps(),
                wall_seconds,
                last_eval_return: last,
                confirm_success,
                confirm_return,
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
        confirm_return: None,
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

/// What `embodia bench flow` runs for one task and seed.
#[derive(Debug, Clone, Default)]
pub struct FlowBenchSpec {
    /// Task.
    pub task: String,
    /// Flow-RL variant (`ppo-flow-sde`, `ppo-flow-noise`) or `dppo` (from a diffusion SFT).
    pub algorithm: String,
    /// Successful scripted demonstrations for SFT (default: the task's `sft` preset, as
    /// `embodia train --algo sft` uses).
    pub demos: Option<usize>,
    /// SFT gradient steps (default: the task's `sft` preset).
    pub sft_steps: Option<u64>,
    /// `--set key=value` overrides of the SFT run (`algo.*` of `sft`), in order.
    pub sft_overrides: Vec<String>,
    /// Wall-time budget of flow RL, seconds; RL stops at whichever budget it reaches first.
    pub rl_seconds: f64,
    /// Env-step budget of flow RL.
    pub rl_steps: Option<u64>,
    /// Parallel environments of flow RL (replaces `algo.num_envs` when set).
    pub num_envs: Option<usize>,
    /// Evaluation episodes for S0 and S1, each run in every [`EvalMode`], and the baseline.
    pub eval_episodes: usize,
    /// Seed of demonstrations, networks and environments.
    pub seed: u64,
    /// `--config FILE` of the flow-RL run (`[algo]` and `[env]` tables, as `embodia train` reads).
    pub config_file: Option<PathBuf>,
    /// `--set key=value` overrides of the flow-RL run, in order.
    pub overrides: Vec<String>,
    /// Directory for learning curves and policies: `<out>/<algorithm>/` and `<out>/ppo/` each get
    /// a `metrics.csv` (one row per iteration, wall seconds counted from the start of RL) and
    /// `curves.png`; `<out>/sft/` and `<out>/<algorithm>/` also hold the SFT and RL policies as
    /// runs (`config.toml` and `checkpoint/`) that `eval --run`, `distill --run`, `export --run`
    /// and `train --init` read (not `train --resume`: no environment state is saved).
    pub out: Option<PathBuf>,
    /// Also train Gaussian PPO from scratch (the task's `ppo` defaults) for as many env steps as
    /// flow RL took.
    pub baseline: bool,
}

/// Figures of `embodia bench flow`: SFT from scripted demonstrations, then flow RL for a wall
/// time budget.
#[derive(Debug, Clone, Serialize)]
pub struct FlowBenchResult {
    /// Task.
    pub task: String,
    /// Flow-RL variant (`ppo-flow-sde`, `ppo-flow-noise`) or `dppo` (diffusion SFT then DPPO).
    pub algorithm: String,
    /// Seed.
    pub seed: u64,
    /// Demonstrations (successful scripted-expert episodes).
    pub demos: usize,
    /// SFT gradient steps.
    pub sft_steps: u64,
    /// Wall seconds of SFT (recording the demonstrations included).
    pub sft_seconds: f64,
    /// Success rates of the SFT policy (S0) on `eval_episodes` episodes.
    pub sft_success: ModeSuccess,
    /// Success rates after flow RL (S1) on the same episodes.
    pub rl_success: ModeSuccess,
    /// S1 − S0 on the same episodes in every mode, each `[difference, 95% CI low, high]`
    /// (paired, as `embodia compare` computes it).
    pub rl_gain: ModeGain,
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
    /// Success rate of Gaussian PPO from scratch after as many env steps as flow RL (its mean,
    /// on the same episodes), when the baseline ran.
    pub baseline_success: Option<f64>,
    /// Environment steps of that baseline.
    pub baseline_env_steps: Option<u64>,
}

/// Success rates of one policy on the same episodes in every [`EvalMode`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ModeSuccess {
    /// A fresh initial noise per chunk (the reference mode of chunk policies).
    pub sampled: f64,
    /// Deterministic from zero noise.
    pub zero: f64,
    /// Deterministic from one fixed draw of the noise.
    pub fixed_draw: f64,
}

impl ModeSuccess {
    /// The rate in `mode`.
    pub fn get(&self, mode: EvalMode) -> f64 {
        match mode {
            EvalMode::Sampled => self.sampled,
            EvalMode::Zero => self.zero,
            EvalMode::FixedDraw => self.fixed_draw,
        }
    }

    /// Success rates of `learner` (trained with `config`) over `episodes` episodes from the
    /// evaluation seed of `config`, in every mode; with the evaluations, in [`EvalMode::ALL`]'s order.
    fn measure(
        learner: &dyn Learner,
        config: &TrainConfig,
        episodes: usize,
    ) -> Result<(Self, Vec<Option<EvalResult>>), RunError> {
        // A policy that picks its own initial noise (`dsrl`) has no fixed draw: that mode is
        // not measured (NaN), not stood in for by another.
        let evals = EvalMode::ALL
            .into_iter()
            .map(|mode| match mode {
                EvalMode::FixedDraw if learner.initial_noise().is_none() => Ok(None),
                _ => evaluate_learner_in(learner, config, episodes, mode, None).map(Some),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rate = |k: usize| evals[k].as_ref().map_or(f64::NAN, |e| e.success_rate.unwrap_or(0.0));
        Ok((Self { sampled: rate(0), zero: rate(1), fixed_draw: rate(2) }, evals))
    }
}

/// A paired difference of success rates in every [`EvalMode`], each `[difference, 95% CI low,
/// high]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ModeGain {
    /// Sampled.
    pub sampled: [f64; 3],
    /// Zero noise.
    pub zero: [f64; 3],
    /// Fixed draw.
    pub fixed_draw: [f64; 3],
}

impl ModeGain {
    /// `after − before`, paired episode by episode; evaluations in [`EvalMode::ALL`]'s order.
    /// A mode either side was not measured in has a NaN gain.
    fn between(before: &[Option<EvalResult>], after: &[Option<EvalResult>], seed: u64) -> Result<Self, RunError> {
        let gain = |k: usize| {
            let (Some(before), Some(after)) = (&before[k], &after[k]) else { return Ok([f64::NAN; 3]) };
            let c = crate::compare::pair(before, after, seed)
                .map_err(|message| RunError::Io { path: "bench flow".into(), message })?;
            Ok::<_, RunError>([c.difference, c.ci95[0], c.ci95[1]])
        };
        Ok(Self { sampled: gain(0)?, zero: gain(1)?, fixed_draw: gain(2)? })
    }

    /// The gain in `mode`.
    pub fn get(&self, mode: EvalMode) -> [f64; 3] {
        match mode {
            EvalMode::Sampled => self.sampled,
            EvalMode::Zero => self.zero,
            EvalMode::FixedDraw => self.fixed_draw,
        }
    }
}

/// SFT of the task's flow policy (its `sft` preset, with the spec's demos, steps and overrides),
/// evaluation (S0), then flow RL from that policy until its wall-time or env-step budget is spent,
/// evaluation (S1), and optionally the Gaussian PPO baseline. S0 and S1 run `eval_episodes`
/// episodes from the evaluation seed in every [`EvalMode`].
/// `progress` sees every RL iteration's metrics (wall seconds counted from the start of RL).
pub fn flow_bench(
    spec: &FlowBenchSpec,
    progress: &mut dyn FnMut(&embodia_algos::MetricRow),
) -> Result<FlowBenchResult, RunError> {
    use crate::config::{ConfigSources, resolve};
    use embodia_algos::{
        ChunkModel, DiffusionSft, Dppo, DppoConfig, Dsrl, DsrlConfig, PpoFlow, PpoFlowConfig, Sft, SftConfig,
    };
    let rl_config = resolve(&ConfigSources {
        task: Some(&spec.task),
        algorithm: Some(&spec.algorithm),
        file: spec.config_file.as_deref(),
        seed: Some(spec.seed),
        total_steps: None,
        overrides: &spec.overrides,
    })?;
    let diffusion = rl_config.algo.get::<DppoConfig>().is_some();
    let mut sft_overrides = spec.sft_overrides.clone();
    if diffusion {
        sft_overrides.insert(0, "algo.model=\"diffusion\"".into());
    }
    let sft_run = resolve(&ConfigSources {
        task: Some(&spec.task),
        algorithm: Some("sft"),
        file: None,
        seed: Some(spec.seed),
        total_steps: spec.sft_steps,
        overrides: &sft_overrides,
    })?;
    let Some(mut sft_config) = sft_run.algo.get::<SftConfig>().cloned() else {
        unreachable!("`sft` resolves to an sft configuration")
    };
    sft_config.demos = spec.demos.unwrap_or(sft_config.demos);
    let sft_steps = sft_run.total_steps;
    if spec.sft_steps.is_some() {
        sft_config.decay_steps = sft_steps.max(sft_config.warmup_steps + 1);
    }
    let (task, seed, env_config) = (spec.task.as_str(), spec.seed, rl_config.env.as_ref());
    // The task's spaces, for the SFT learners.
    let spaces = embodia_sim::make_with(task, 1, env_config)?;
    let start = Instant::now();
    let recorded = crate::algorithms::record_demos(task, env_config, sft_config.demos, seed, sft_config.demo_noise)?;
    let sft: Box<dyn Learner> = if sft_config.model == ChunkModel::Diffusion {
        let mut sft = DiffusionSft::new(sft_config.clone(), spaces.as_ref(), &recorded, default_device(), seed)?;
        for _ in 0..sft_steps {
            sft.update()?;
        }
        Box::new(sft)
    } else {
        let mut sft = Sft::new(sft_config.clone(), spaces.as_ref(), &recorded, default_device(), seed)?;
        for _ in 0..sft_steps {
            sft.update()?;
        }
        Box::new(sft)
    };
    let sft_seconds = start.elapsed().as_secs_f64();
    // S0 is evaluated on the flow-RL run's environments, on which its demonstrations were recorded.
    let sft_run = TrainConfig {
        total_steps: sft_steps,
        algo: AlgoConfig::new(sft_config.clone()),
        env: rl_config.env.clone(),
        ..sft_run
    };
    let (sft_success, sft_evals) = ModeSuccess::measure(sft.as_ref(), &sft_run, spec.eval_episodes)?;
    let sft_checkpoint = sft.checkpoint()?;
    let sft_dir = spec.out.as_ref().map(|out| out.join("sft"));
    if let Some(dir) = &sft_dir {
        write_run(dir, &sft_run, &sft_checkpoint)?;
    }

    let init = sft_dir.map_or_else(|| "(in memory)".to_string(), |dir| dir.display().to_string());
    let device = default_device();
    let rl_algo;
    let num_envs = |n: usize| spec.num_envs.unwrap_or(n);
    let mut rl = if let Some(c) = rl_config.algo.get::<PpoFlowConfig>() {
        let c = PpoFlowConfig { num_envs: num_envs(c.num_envs), init, ..c.clone() };
        c.validate()?;
        rl_algo = AlgoConfig::new(c.clone());
        let env = embodia_sim::make_with(task, c.num_envs, env_config)?;
        ChunkRl::Flow(Box::new(PpoFlow::new(c, env.as_ref(), &sft_checkpoint, device, seed)?), env)
    } else if let Some(c) = rl_config.algo.get::<DppoConfig>() {
        let c = DppoConfig { num_envs: num_envs(c.num_envs), init, ..c.clone() };
        c.validate()?;
        rl_algo = AlgoConfig::new(c.clone());
        let env = embodia_sim::make_with(task, c.num_envs, env_config)?;
        ChunkRl::Dppo(Box::new(Dppo::new(c, env.as_ref(), &sft_checkpoint, device, seed)?), env)
    } else if let Some(c) = rl_config.algo.get::<DsrlConfig>() {
        let c = DsrlConfig { num_envs: num_envs(c.num_envs), init, ..c.clone() };
        c.validate()?;
        rl_algo = AlgoConfig::new(c.clone());
        let env = embodia_sim::make_with(task, c.num_envs, env_config)?;
        ChunkRl::Dsrl(Box::new(Dsrl::new(c, env.as_ref(), &sft_checkpoint, device, seed)?), env)
    } else {
        return Err(RunError::Io {
            path: "--algo".into(),
            message: format!(
                "bench flow trains ppo-flow-sde, ppo-flow-noise, dppo or dsrl from an SFT clone, not `{}`",
                spec.algorithm
            ),
        });
    };
    rl.env().reset(seed);
    let (mut sim, mut inference, mut update, mut rl_time) = (0.0, 0.0, 0.0, 0.0);
    let mut rows = Vec::new();
    while rl_time < spec.rl_seconds && spec.rl_steps.is_none_or(|n| rl.learner().env_steps() < n) {
        let t = Instant::now();
        let mut row = rl.iterate()?;
        rl_time += t.elapsed().as_secs_f64();
        row.wall_seconds = rl_time;
        progress(&row);
        rows.push(row);
        let split = rl.last_time_split();
        (sim, inference, update) = (sim + split.sim, inference + split.inference, update + split.update);
    }
    // What `train --resume` continues from, beside the learner's own checkpoint.
    let env_snapshot = rl.env().snapshot();
    let learner = rl.learner();
    let rl_run = TrainConfig { total_steps: learner.env_steps(), algo: rl_algo, ..rl_config };
    let (rl_success, rl_evals) = ModeSuccess::measure(learner, &rl_run, spec.eval_episodes)?;
    let rl_gain = ModeGain::between(&sft_evals, &rl_evals, seed)?;
    let chunk_steps = learner.env_steps() / learner.chunk_len().max(1) as u64;
    if let Some(out) = &spec.out {
        let dir = out.join(&spec.algorithm);
        write_curves(&dir, &rows)?;
        let mut checkpoint = learner.checkpoint()?;
        checkpoint.put("env", &env_snapshot)?;
        checkpoint.put("wall_seconds", &rl_time)?;
        checkpoint.put("iterations", &(rows.len() as u64))?;
        write_run(&dir, &rl_run, &checkpoint)?;
    }
    let (baseline_success, baseline_env_steps) = match spec.baseline {
        true => {
            let (success, steps) = ppo_baseline(spec, rl_run.env.as_ref(), learner.env_steps())?;
            (Some(success), Some(steps))
        }
        false => (None, None),
    };
    Ok(FlowBenchResult {
        task: task.into(),
        algorithm: spec.algorithm.clone(),
        seed,
        demos: sft_config.demos,
        sft_steps,
        sft_seconds,
        sft_success,
        rl_success,
        rl_gain,
        rl_env_steps: learner.env_steps(),
        rl_seconds: rl_time,
        chunk_steps_per_s: chunk_steps as f64 / (sim + inference).max(1e-9),
        sim_seconds: sim,
        inference_seconds: inference,
        update_seconds: update,
        baseline_success,
        baseline_env_steps,
    })
}

/// Gaussian PPO from scratch with the task's `ppo` defaults on flow RL's environments
/// (`env_config`) for `env_steps` env steps (the first iteration past them ends it); its success
/// rate in its reference mode (the mean) over `spec.eval_episodes` episodes and its env steps.
/// Writes its curves to `<out>/ppo/` when `spec.out` is set.
fn ppo_baseline(
    spec: &FlowBenchSpec,
    env_config: Option<&embodia_sim::TaskConfig>,
    env_steps: u64,
) -> Result<(f64, u64), RunError> {
    use crate::config::{ConfigSources, resolve};
    let mut config = resolve(&ConfigSources {
        task: Some(&spec.task),
        algorithm: Some("ppo"),
        seed: Some(spec.seed),
        ..ConfigSources::default()
    })?;
    config.env = env_config.cloned();
    let mut env = embodia_sim::make_with(&config.task, config.algo.num_envs(), config.env.as_ref())?;
    env.reset(spec.seed);
    let mut learner = build_learner(&config, env.as_ref(), &default_device())?;
    let start = Instant::now();
    let mut rows = Vec::new();
    while learner.env_steps() < env_steps {
        let mut row = learner.iterate(env.as_mut())?;
        row.wall_seconds = start.elapsed().as_secs_f64();
        rows.push(row);
    }
    if let Some(out) = &spec.out {
        write_curves(&out.join("ppo"), &rows)?;
    }
    let eval = evaluate_learner(learner.as_ref(), &config, spec.eval_episodes, learner.default_eval_mode())?;
    Ok((eval.success_rate.unwrap_or(0.0), learner.env_steps()))
}

/// Writes `rows` as `dir/metrics.csv` (the run directory format) and draws `dir/curves.png`.
pub(crate) fn write_curves(dir: &Path, rows: &[embodia_algos::MetricRow]) -> Result<(), RunError> {
    std::fs::create_dir_all(dir).map_err(crate::run::io_err(dir))?;
    let mut text = format!("{}\n", embodia_algos::MetricRow::CSV_HEADER);
    for row in rows {
        text.push_str(&row.csv_values());
        text.push('\n');
    }
    let path = dir.join(crate::run::METRICS_FILE);
    std::fs::write(&path, text).map_err(crate::run::io_err(&path))?;
    crate::plot::write_run_curves(dir)?;
    Ok(())
}

/// Writes `config` and `checkpoint` as the run in `dir`, so that `eval --run` and friends read it.
fn write_run(dir: &Path, config: &TrainConfig, checkpoint: &embodia_algos::Checkpoint) -> Result<(), RunError> {
    std::fs::create_dir_all(dir).map_err(crate::run::io_err(dir))?;
    let path = dir.join(crate::run::CONFIG_FILE);
    std::fs::write(&path, config.to_toml()).map_err(crate::run::io_err(&path))?;
    Ok(checkpoint.save(&dir.join(crate::run::CHECKPOINT_DIR))?)
}

/// The RL learner of a flow benchmark with its environments.
enum ChunkRl {
    Flow(Box<embodia_algos::PpoFlow>, Box<dyn embodia_sim::VecEnv>),
    Dppo(Box<embodia_algos::Dppo>, Box<dyn embodia_sim::VecEnv>),
    Dsrl(Box<embodia_algos::Dsrl>, Box<dyn embodia_sim::VecEnv>),
}

impl ChunkRl {
    fn env(&mut self) -> &mut dyn embodia_sim::VecEnv {
        match self {
            ChunkRl::Flow(_, env) | ChunkRl::Dppo(_, env) | ChunkRl::Dsrl(_, env) => env.as_mut(),
        }
    }

    fn learner(&self) -> &dyn embodia_algos::Learner {
        match self {
            ChunkRl::Flow(l, _) => l.as_ref(),
            ChunkRl::Dppo(l, _) => l.as_ref(),
            ChunkRl::Dsrl(l, _) => l.as_ref(),
        }
    }

    fn iterate(&mut self) -> Result<embodia_algos::MetricRow, embodia_algos::AlgoError> {
        use embodia_algos::Learner;
        match self {
            ChunkRl::Flow(l, env) => l.iterate(env.as_mut()),
            ChunkRl::Dppo(l, env) => l.iterate(env.as_mut()),
            ChunkRl::Dsrl(l, env) => l.iterate(env.as_mut()),
        }
    }

    fn last_time_split(&self) -> embodia_algos::TimeSplit {
        match self {
            ChunkRl::Flow(l, _) => l.last_time_split(),
            ChunkRl::Dppo(l, _) => l.last_time_split(),
            ChunkRl::Dsrl(l, _) => l.last_time_split(),
        }
    }
}

/// PPO trained on tensor environments with its rollouts kept on the device
/// ([`embodia_algos::Learner::iterate_tensor`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct TensorPpoThroughput {
    /// Environments.
    pub envs: usize,
    /// Iterations run.
    pub iterations: u64,
    /// Training environment steps per second over all iterations (rollout and update).
    pub steps_per_s: f64,
    /// Mean return of the episodes that ended in the first and in the last iteration.
    pub first_return: f64,
    /// See `first_return`.
    pub last_return: f64,
}

/// Trains `config`'s PPO on `envs` tensor environments of its task for `iterations`
/// iterations, environments and networks on the selected device.
pub fn tensor_ppo_throughput(
    config: &TrainConfig,
    envs: usize,
    iterations: u64,
) -> Result<TensorPpoThroughput, RunError> {
    let Some(ppo) = config.algo.get::<embodia_algos::PpoConfig>() else {
        return Err(RunError::Device("bench sim --ppo-iterations: the config is not PPO's".into()));
    };
    let device = crate::device::plain_device();
    let mut env = embodia_sim::tensor::make_tensor(&config.task, envs, &device)?;
    env.reset(config.seed);
    let ppo = embodia_algos::PpoConfig { num_envs: envs, ..ppo.clone() };
    let mut learner = embodia_algos::Ppo::new(ppo, env.as_ref(), default_device(), config.seed)?;
    let start = Instant::now();
    let mut returns = Vec::new();
    for _ in 0..iterations {
        let row = embodia_algos::Learner::iterate_tensor(&mut learner, env.as_mut())?;
        returns.push(row.return_mean.unwrap_or(f64::NAN));
    }
    let seconds = start.elapsed().as_secs_f64();
    let steps = embodia_algos::Learner::env_steps(&learner);
    Ok(TensorPpoThroughput {
        envs,
        iterations,
        steps_per_s: steps as f64 / seconds,
        first_return: returns[0],
        last_return: returns[returns.len() - 1],
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
