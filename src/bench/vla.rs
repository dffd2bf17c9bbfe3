//! `embodia bench vla`: πRL's recipe at small scale on a language-conditioned family: SFT of the
//! VLA on scripted demonstrations with camera images (success S0), then RL from that checkpoint
//! on every training variant at once for a wall-time budget (success S1): GRPO with Flow-SDE or
//! Flow-Noise on the model's weights, or DSRL on its initial noise. Optionally (`distill_steps`)
//! the RL policy's successful episodes are then distilled into a fresh VLA (PLD's "probe, learn,
//! distill"): `vla-sft` on the demonstrations and those episodes (success S2), a VLA that acts
//! without the RL policy. Every policy is measured on the training and the held-out variants;
//! the RL time is split between simulation and rendering, inference and update.

use std::path::PathBuf;
use std::time::Instant;

use embodia_algos::TimeSplit;
use embodia_algos::{
    Checkpoint, EvalMode, EvalResult, Learner, VLA_ACTOR_KEY, VlaActor, VlaDsrl, VlaDsrlConfig, VlaPpo, VlaSftConfig,
    record_policy_episodes,
};
use serde::Serialize;

use crate::algorithms::{AlgoConfig, VlaPpoConfig};
use crate::config::{ConfigSources, TrainConfig, resolve};
use crate::device::default_device;
use crate::run::{CHECKPOINT_DIR, Run, RunError, evaluate_learner_in, load_learner, make_env};

/// What `embodia bench vla` runs.
#[derive(Debug, Clone)]
pub struct VlaBenchSpec {
    /// Language-conditioned task.
    pub task: String,
    /// RL algorithm: `vla-ppo-flow-sde`, `vla-ppo-flow-noise` or `vla-dsrl`.
    pub algorithm: String,
    /// SFT gradient steps.
    pub sft_steps: u64,
    /// Wall-time budget of RL, seconds.
    pub rl_seconds: f64,
    /// Evaluation episodes per split (train, held out), each drawing its variant.
    pub eval_episodes: usize,
    /// Seed.
    pub seed: u64,
    /// `--set` overrides of the SFT run.
    pub sft_overrides: Vec<String>,
    /// `--set` overrides of the RL run.
    pub rl_overrides: Vec<String>,
    /// A finished `vla-sft` run to start RL from instead of training one (`sft_steps` and
    /// `sft_overrides` then unused).
    pub sft_run: Option<PathBuf>,
    /// Gradient steps of the distilled VLA's `vla-sft` run (module docs); 0: no distillation.
    pub distill_steps: u64,
    /// Successful RL episodes (sampled, training variants) the distillation trains on.
    pub distill_episodes: usize,
    /// Directory of the SFT run (`<out>/sft`), the RL curves (`<out>/rl`), and with
    /// distillation the RL episodes (`<out>/rl-episodes`, a dataset) and the distilled run
    /// (`<out>/distilled`).
    pub out: PathBuf,
}

/// Success rates of one policy, deterministic and sampled, on both splits.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SplitSuccess {
    /// Training variants, deterministic chunks.
    pub train: f64,
    /// Held-out variants, deterministic chunks.
    pub held_out: f64,
    /// Training variants, chunks from `x_1 ~ N(0, I)` (ODE).
    pub train_sampled: f64,
    /// Held-out variants, sampled.
    pub held_out_sampled: f64,
}

/// Figures of `embodia bench vla`.
#[derive(Debug, Clone, Serialize)]
pub struct VlaBenchResult {
    /// Task.
    pub task: String,
    /// RL algorithm.
    pub algorithm: String,
    /// Seed.
    pub seed: u64,
    /// Parameters of the VLA.
    pub parameters: usize,
    /// Demonstrations.
    pub demos: usize,
    /// SFT gradient steps.
    pub sft_steps: u64,
    /// Wall seconds of SFT (recording and its periodic evaluations included); 0 for a reused
    /// run.
    pub sft_seconds: f64,
    /// Success of the SFT policy.
    pub s0: SplitSuccess,
    /// Success after RL.
    pub s1: SplitSuccess,
    /// S1 − S0 on the same episodes, with confidence intervals.
    pub s1_gain: Option<SplitGain>,
    /// Environment steps of RL.
    pub rl_env_steps: u64,
    /// Wall seconds of RL (without the evaluations).
    pub rl_seconds: f64,
    /// Seconds of RL spent stepping and rendering environments.
    pub sim_seconds: f64,
    /// Seconds of RL spent observing and sampling chunks.
    pub inference_seconds: f64,
    /// Seconds of RL spent in advantages and updates.
    pub update_seconds: f64,
    /// The distillation, when run.
    pub distilled: Option<DistillFigures>,
}

/// Figures of the distillation of the RL policy into a fresh VLA.
#[derive(Debug, Clone, Serialize)]
pub struct DistillFigures {
    /// Successful RL episodes recorded (its training data besides the demonstrations).
    pub episodes: usize,
    /// RL episodes run to record them.
    pub attempted: usize,
    /// Their frames.
    pub frames: usize,
    /// Gradient steps of the distilled VLA.
    pub steps: u64,
    /// Wall seconds of recording and training (with its periodic evaluations).
    pub seconds: f64,
    /// Success of the distilled VLA (S2).
    pub s2: SplitSuccess,
    /// S2 − S0 on the same episodes, with confidence intervals.
    pub s2_gain: Option<SplitGain>,
}

/// `config` with the language family drawing from `split` (`train`, `held_out`) and the
/// episodes of `seed`.
fn with_split(
    config: &TrainConfig,
    split: embodia_sim::rapier::language::Split,
    seed: u64,
) -> Result<TrainConfig, RunError> {
    let mut config = TrainConfig { seed, ..config.clone() };
    let language = config.env.as_mut().and_then(|e| e.command.language.as_mut()).ok_or_else(|| RunError::Io {
        path: format!("--task {}", config.task),
        message: "bench vla needs a language-conditioned task (lang-cubes)".into(),
    })?;
    language.split = split;
    Ok(config)
}

/// One policy's evaluations on both splits, deterministic (zero noise) and sampled, in the order of
/// [`SplitSuccess`]'s fields; every policy of a bench plays the same episodes (the bench's
/// seed), so they pair.
struct SplitEvals([EvalResult; 4]);

impl SplitEvals {
    fn of(learner: &dyn Learner, config: &TrainConfig, episodes: usize, seed: u64) -> Result<Self, RunError> {
        use embodia_sim::rapier::language::Split::{HeldOut, Train};
        let eval = |split, mode| evaluate_learner_in(learner, &with_split(config, split, seed)?, episodes, mode, None);
        let (zero, sampled) = (EvalMode::Zero, EvalMode::Sampled);
        Ok(Self([eval(Train, zero)?, eval(HeldOut, zero)?, eval(Train, sampled)?, eval(HeldOut, sampled)?]))
    }

    fn success(&self) -> SplitSuccess {
        let [a, b, c, d] = self.0.each_ref().map(|e| e.success_rate.unwrap_or(0.0));
        SplitSuccess { train: a, held_out: b, train_sampled: c, held_out_sampled: d }
    }

    /// The paired gains over `base`; `None` when the episodes differ (an `--rl-set` that
    /// changes what resets draw).
    fn gain_over(&self, base: &Self) -> Option<SplitGain> {
        let gain = |k: usize| {
            let c = crate::compare::pair(&base.0[k], &self.0[k], 0).ok()?;
            Some([c.difference, c.ci95[0], c.ci95[1]])
        };
        Some(SplitGain { train: gain(0)?, held_out: gain(1)?, train_sampled: gain(2)?, held_out_sampled: gain(3)? })
    }
}

/// A policy's success minus S0's on the same episodes, each `[difference, 95% CI low, high]`
/// (paired, [`crate::compare`]).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SplitGain {
    /// Training variants, deterministic.
    pub train: [f64; 3],
    /// Held-out variants, deterministic.
    pub held_out: [f64; 3],
    /// Training variants, sampled.
    pub train_sampled: [f64; 3],
    /// Held-out variants, sampled.
    pub held_out_sampled: [f64; 3],
}

/// The RL learners `bench vla` runs, with their time splits.
enum VlaRl {
    Ppo(Box<VlaPpo>),
    Dsrl(Box<VlaDsrl>),
}

impl VlaRl {
    fn learner(&mut self) -> &mut dyn Learner {
        match self {
            Self::Ppo(l) => l.as_mut(),
            Self::Dsrl(l) => l.as_mut(),
        }
    }

    fn last_time_split(&self) -> TimeSplit {
        match self {
            Self::Ppo(l) => l.last_time_split(),
            Self::Dsrl(l) => l.last_time_split(),
        }
    }
}

/// The error for a run `bench vla` cannot start RL from.
fn not_sft(dir: &std::path::Path, config: &TrainConfig) -> RunError {
    RunError::Io {
        path: dir.display().to_string(),
        message: format!("bench vla starts RL from a vla-sft run, not {}", config.algorithm),
    }
}

/// Refuses, before anything runs, an SFT run that is not `vla-sft` and a distillation too short
/// for its learning-rate schedule (the SFT run's warm-up), which would otherwise fail after RL.
fn check_sft_run(spec: &VlaBenchSpec, dir: &std::path::Path, config: &TrainConfig) -> Result<(), RunError> {
    let Some(algo) = config.algo.get::<VlaSftConfig>() else { return Err(not_sft(dir, config)) };
    if spec.distill_steps != 0 && spec.distill_steps <= algo.warmup_steps {
        let allowed = format!("0 or more than the SFT run's algo.warmup_steps, {}", algo.warmup_steps);
        let (field, value) = ("--distill-steps".into(), spec.distill_steps.to_string());
        return Err(embodia_algos::AlgoError::Config { field, value, allowed }.into());
    }
    Ok(())
}

/// SFT (a run directory in `<out>/sft`, or the reused `sft_run`), S0, RL for the budget, S1.
pub fn vla_bench(spec: &VlaBenchSpec) -> Result<VlaBenchResult, RunError> {
    let (sft_dir, sft_config, sft_seconds, s0) = match &spec.sft_run {
        Some(dir) => {
            let (config, learner) = load_learner(dir)?;
            check_sft_run(spec, dir, &config)?;
            let s0 = SplitEvals::of(learner.as_ref(), &config, spec.eval_episodes, spec.seed)?;
            (dir.clone(), config, 0.0, s0)
        }
        None => {
            let config = resolve(&ConfigSources {
                task: Some(&spec.task),
                algorithm: Some("vla-sft"),
                seed: Some(spec.seed),
                total_steps: Some(spec.sft_steps),
                overrides: &spec.sft_overrides,
                ..Default::default()
            })?;
            let dir = spec.out.join("sft");
            check_sft_run(spec, &dir, &config)?;
            let start = Instant::now();
            let mut sft = Run::create(&dir, config.clone())?;
            sft.train(&mut [])?;
            let seconds = start.elapsed().as_secs_f64();
            let s0 = SplitEvals::of(sft.learner(), &config, spec.eval_episodes, spec.seed)?;
            (dir, config, seconds, s0)
        }
    };
    let Some(sft_algo) = sft_config.algo.get::<VlaSftConfig>() else { return Err(not_sft(&sft_dir, &sft_config)) };
    let demos = sft_algo.demos;

    let mut rl_overrides = vec![format!("algo.init={}", toml::Value::String(sft_dir.display().to_string()))];
    rl_overrides.extend(spec.rl_overrides.iter().cloned());
    let rl_config = resolve(&ConfigSources {
        task: Some(&spec.task),
        algorithm: Some(&spec.algorithm),
        seed: Some(spec.seed),
        overrides: &rl_overrides,
        ..Default::default()
    })?;
    let mut env = make_env(&rl_config, rl_config.algo.num_envs())?;
    env.reset(spec.seed);
    let init = Checkpoint::load(&sft_dir.join(CHECKPOINT_DIR))?;
    let parameters = init.get::<VlaActor>(VLA_ACTOR_KEY)?.model.param_count();
    let (device, seed) = (default_device(), spec.seed);
    let mut rl = if let Some(VlaPpoConfig(c)) = rl_config.algo.get() {
        VlaRl::Ppo(Box::new(VlaPpo::new(c.clone(), env.as_ref(), &init, device, seed)?))
    } else if let Some(c) = rl_config.algo.get::<VlaDsrlConfig>() {
        VlaRl::Dsrl(Box::new(VlaDsrl::new(c.clone(), env.as_ref(), &init, device, seed)?))
    } else {
        return Err(RunError::Io {
            path: "--algo".into(),
            message: format!(
                "bench vla trains vla-ppo-flow-sde, vla-ppo-flow-noise or vla-dsrl from a vla-sft run, not `{}`",
                spec.algorithm
            ),
        });
    };
    let (mut sim, mut inference, mut update, mut rl_seconds) = (0.0, 0.0, 0.0, 0.0);
    let mut rows = Vec::new();
    while rl_seconds < spec.rl_seconds {
        let t = Instant::now();
        let mut row = rl.learner().iterate(env.as_mut())?;
        rl_seconds += t.elapsed().as_secs_f64();
        row.wall_seconds = rl_seconds;
        rows.push(row);
        let split = rl.last_time_split();
        (sim, inference, update) = (sim + split.sim, inference + split.inference, update + split.update);
    }
    crate::bench::write_curves(&spec.out.join("rl"), &rows)?;
    let rl = rl.learner();
    let s1 = SplitEvals::of(rl, &rl_config, spec.eval_episodes, spec.seed)?;
    let distilled = match spec.distill_steps {
        0 => None,
        steps => Some(distill(spec, rl, &rl_config, &sft_config, sft_algo, steps, &s0)?),
    };
    Ok(VlaBenchResult {
        task: spec.task.clone(),
        algorithm: spec.algorithm.clone(),
        seed: spec.seed,
        parameters,
        demos,
        sft_steps: sft_config.total_steps,
        sft_seconds,
        s0: s0.success(),
        s1: s1.success(),
        s1_gain: s1.gain_over(&s0),
        rl_env_steps: rl.env_steps(),
        rl_seconds,
        sim_seconds: sim,
        inference_seconds: inference,
        update_seconds: update,
        distilled,
    })
}

/// Records `spec.distill_episodes` successful episodes of the RL policy `rl` (sampled, on the
/// training variants) into `<out>/rl-episodes`, trains `vla-sft` with the SFT run's settings on
/// the demonstrations and them for `steps` gradient steps in `<out>/distilled`, and measures it.
fn distill(
    spec: &VlaBenchSpec,
    rl: &dyn Learner,
    rl_config: &TrainConfig,
    sft_config: &TrainConfig,
    sft_algo: &VlaSftConfig,
    steps: u64,
    s0: &SplitEvals,
) -> Result<DistillFigures, RunError> {
    let start = Instant::now();
    let fps = rl_config.env.as_ref().map_or(0.0, |t| 1.0 / t.scene.control_dt());
    let mut env = make_env(rl_config, rl_config.algo.num_envs())?;
    let record = |episodes: usize, seed: u64| record_policy_episodes(rl, env.as_mut(), episodes, seed, true, fps);
    let who = format!("the {} policy", spec.algorithm);
    let (episodes, attempted, _) =
        crate::demos::record_until(spec.distill_episodes, true, spec.seed ^ 0xD157, &who, record).map_err(|e| {
            RunError::Io { path: spec.out.join("rl-episodes").display().to_string(), message: e.to_string() }
        })?;
    let dataset = spec.out.join("rl-episodes");
    crate::dataset::save(&episodes, &dataset, &crate::dataset::WriteOptions::default(), true)?;
    let policy_datasets = vec![dataset.display().to_string()];
    let algo = VlaSftConfig { decay_steps: steps, policy_datasets, ..sft_algo.clone() };
    let config = TrainConfig { total_steps: steps, algo: AlgoConfig::new(algo), ..sft_config.clone() };
    let dir = spec.out.join("distilled");
    let mut run = Run::create(&dir, config.clone())?;
    run.train(&mut [])?;
    let seconds = start.elapsed().as_secs_f64();
    let s2 = SplitEvals::of(run.learner(), &config, spec.eval_episodes, spec.seed)?;
    Ok(DistillFigures {
        episodes: episodes.episodes.len(),
        attempted,
        frames: episodes.num_steps(),
        steps,
        seconds,
        s2: s2.success(),
        s2_gain: s2.gain_over(s0),
    })
}
