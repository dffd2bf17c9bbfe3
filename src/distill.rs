//! `embodia distill`: a one-step student of a flow run, trained as a run of its own
//! (`algorithm = "distill"`), and the figures that compare it with its teacher: success rate
//! over several evaluation seeds and inference latency at batch 1.
//!
//! Protocol of the report: both policies act deterministically (the teacher integrates its
//! ODE in `K` steps from its fixed noise, the student maps the same noise in one step); each
//! evaluation seed runs `episodes` episodes in parallel environments from that seed, the same
//! seeds for both. Latency is the wall time of one [`Learner::act`] call for one observation
//! (standardization, network(s), de-standardization and clipping: what `eval` and the deploy
//! loop call), measured per call over `calls` calls after 100 warm-up calls; the exported
//! student's f32 forward pass ([`PolicySpec::forward`], what `export` writes as C and Rust) is
//! timed the same way.

use std::path::{Path, PathBuf};
use std::time::Instant;

use embodia_algos::{ConsistencyLoss, DistillConfig, DistillMethod, EvalMode, InitialNoise, Learner, evaluate};
use embodia_deploy::export::PolicySpec;
use serde::Serialize;

use crate::config::{ConfigSources, TrainConfig, resolve};
use crate::run::{CHECKPOINT_DIR, CONFIG_FILE, EVAL_SEED_OFFSET, RunError, check_run_dir, load_learner};

/// What `embodia distill` is asked to do.
#[derive(Debug, Clone)]
pub struct DistillRequest {
    /// The teacher's run directory (`sft` or `ppo-flow-*`).
    pub teacher: PathBuf,
    /// Objective.
    pub method: DistillMethod,
    /// Loss of the consistency method.
    pub loss: ConsistencyLoss,
    /// Seed of the student and of the observation collection.
    pub seed: u64,
    /// Gradient steps (default: the config's `decay_steps`); also the learning-rate schedule's
    /// length (`decay_steps`, at least `warmup_steps + 1`) unless `algo.decay_steps` is among the
    /// overrides.
    pub steps: Option<u64>,
    /// `--set key=value` overrides of the distill config.
    pub overrides: Vec<String>,
}

/// The distill run's configuration: the teacher's task and environment, `algo` from the
/// defaults, the request and its overrides.
pub fn distill_config(req: &DistillRequest) -> Result<TrainConfig, RunError> {
    check_run_dir(&req.teacher)?;
    let teacher = TrainConfig::from_file(&req.teacher.join(CONFIG_FILE))?;
    let flow_sft = |c: &embodia_algos::SftConfig| c.model == embodia_algos::ChunkModel::Flow;
    let flow_rl = teacher.algo.get::<embodia_algos::PpoFlowConfig>().is_some();
    if !teacher.algo.get::<embodia_algos::SftConfig>().is_some_and(flow_sft) && !flow_rl {
        return Err(RunError::Io {
            path: req.teacher.display().to_string(),
            message: format!(
                "is a `{}` run; only flow-policy runs (flow sft, ppo-flow-sde, ppo-flow-noise) are distilled (diffusion policies are not yet; PPO and SAC policies are one-step already: export them directly)",
                teacher.algorithm
            ),
        });
    }
    let path = req
        .teacher
        .to_str()
        .ok_or_else(|| RunError::Io { path: req.teacher.display().to_string(), message: "not valid UTF-8".into() })?;
    let method = match req.method {
        DistillMethod::Consistency => "consistency",
        DistillMethod::MeanFlow => "meanflow",
    };
    let loss = match req.loss {
        ConsistencyLoss::SameNoise => "same_noise",
        ConsistencyLoss::Backup => "backup",
    };
    let mut overrides = vec![
        format!("algo.teacher={}", toml::Value::String(path.into())),
        format!("algo.method={method}"),
        format!("algo.loss={loss}"),
    ];
    overrides.extend(req.overrides.iter().cloned());
    let mut config = resolve(&ConfigSources {
        task: Some(&teacher.task),
        algorithm: Some("distill"),
        seed: Some(req.seed),
        total_steps: req.steps,
        overrides: &overrides,
        ..Default::default()
    })?;
    config.env = teacher.env;
    // `--steps` is the schedule's length too, unless `algo.decay_steps` is set: a budget past
    // the cosine's end would otherwise run at the final learning rate.
    let decay_set = req.overrides.iter().any(|o| o.trim_start().starts_with("algo.decay_steps"));
    if let (Some(steps), Some(c), false) = (req.steps, config.algo.get_mut::<DistillConfig>(), decay_set) {
        c.decay_steps = steps.max(c.warmup_steps + 1);
    }
    config.validate()?;
    Ok(config)
}

/// Success of one policy per evaluation seed.
#[derive(Debug, Clone, Serialize)]
pub struct SuccessFigures {
    /// Success rate per evaluation seed, in order.
    pub per_seed: Vec<f64>,
    /// Mean over seeds.
    pub mean: f64,
    /// Mean return over all episodes.
    pub mean_return: f64,
}

/// Latency of one call at batch 1, microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
}

/// Figures of `embodia distill`.
#[derive(Debug, Clone, Serialize)]
pub struct DistillReport {
    /// Task.
    pub task: String,
    /// Teacher run directory.
    pub teacher: String,
    /// Student run directory.
    pub student: String,
    /// Denoising steps `K` of the teacher.
    pub teacher_steps: usize,
    /// Episodes per evaluation seed.
    pub episodes: usize,
    /// Evaluation seeds.
    pub eval_seeds: Vec<u64>,
    /// Whether both policies sampled their initial noise (`--stochastic`) instead of acting
    /// from their fixed noise.
    pub stochastic: bool,
    /// Teacher success.
    pub teacher_success: Option<SuccessFigures>,
    /// Student success.
    pub student_success: Option<SuccessFigures>,
    /// Calls timed per latency figure.
    pub latency_calls: usize,
    /// Teacher `act` latency.
    pub teacher_latency: Latency,
    /// Student `act` latency.
    pub student_latency: Latency,
    /// The exported student's f32 forward pass.
    pub student_export_latency: Latency,
    /// Teacher median over student median (`act`).
    pub latency_ratio: f64,
}

/// Success of `learner` on `config`'s task: `episodes` episodes per seed, deterministic or
/// with sampled noise.
fn success(
    learner: &dyn Learner,
    config: &TrainConfig,
    episodes: usize,
    seeds: &[u64],
    stochastic: bool,
) -> Result<Option<SuccessFigures>, RunError> {
    let mut env = embodia_sim::make_with(&config.task, episodes, config.env.as_ref())?;
    // Deterministic: from the initial noise the policy acts with (the student's is its teacher's).
    let mode = match (stochastic, learner.initial_noise()) {
        (true, _) => EvalMode::Sampled,
        (false, Some(InitialNoise::FixedDraw)) => EvalMode::FixedDraw,
        (false, _) => EvalMode::Zero,
    };
    let (mut per_seed, mut returns) = (Vec::new(), 0.0);
    for &seed in seeds {
        let r = evaluate(learner, env.as_mut(), seed, mode)?;
        returns += r.mean_return;
        match r.success_rate {
            Some(s) => per_seed.push(s),
            None => return Ok(None),
        }
    }
    let n = seeds.len() as f64;
    Ok(Some(SuccessFigures { mean: per_seed.iter().sum::<f64>() / n, per_seed, mean_return: returns / n }))
}

/// Median and p99 of `calls` timed calls of `f`, after 100 untimed ones.
pub fn time_calls(calls: usize, mut f: impl FnMut() -> Result<(), RunError>) -> Result<Latency, RunError> {
    for _ in 0..100 {
        f()?;
    }
    let mut us = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        f()?;
        us.push(start.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| us[((q * (us.len() - 1) as f64).round() as usize).min(us.len() - 1)];
    Ok(Latency { median_us: at(0.5), p99_us: at(0.99) })
}

/// `act` latency of `learner` at batch 1 on the task's first observation.
fn act_latency(learner: &dyn Learner, config: &TrainConfig, calls: usize) -> Result<Latency, RunError> {
    let mut env = embodia_sim::make_with(&config.task, 1, config.env.as_ref())?;
    env.reset(config.seed);
    let obs = env.buffers().obs.clone();
    let mut actions = vec![0.0f32; learner.chunk_len().max(1) * env.action_spec().bounds.dim()];
    time_calls(calls, || Ok(learner.act(&obs, &mut actions, None)?))
}

/// What [`report`] measures.
#[derive(Debug, Clone, Copy)]
pub struct ReportSettings {
    /// Episodes per evaluation seed.
    pub episodes: usize,
    /// Evaluation seeds.
    pub seeds: u64,
    /// Timed calls per latency figure.
    pub calls: usize,
    /// Both policies sample their initial noise each call, as flow policies are usually run,
    /// instead of acting from their fixed noise (on push-t the fixed noise deadlocks).
    pub stochastic: bool,
}

/// Compares the student run `student` with its teacher: success over `settings.episodes`
/// episodes for each of `settings.seeds` evaluation seeds, and latency over `settings.calls`
/// calls (see the module docs).
pub fn report(student: &Path, settings: ReportSettings) -> Result<DistillReport, RunError> {
    let ReportSettings { episodes, seeds, calls, stochastic } = settings;
    let (config, student_learner) = load_learner(student)?;
    let Some(c) = config.algo.get::<DistillConfig>() else {
        return Err(RunError::Io { path: student.display().to_string(), message: "is not a distill run".into() });
    };
    let teacher_dir = Path::new(&c.teacher);
    let (_, teacher) = load_learner(teacher_dir)?;
    let teacher_steps = embodia_algos::Checkpoint::load(&teacher_dir.join(CHECKPOINT_DIR))?
        .get::<embodia_algos::ChunkActor>(embodia_algos::CHUNK_ACTOR_KEY)?
        .policy
        .denoise_steps;
    let eval_seeds: Vec<u64> = (0..seeds).map(|s| config.seed + EVAL_SEED_OFFSET + s).collect();
    let teacher_success = success(teacher.as_ref(), &config, episodes, &eval_seeds, stochastic)?;
    let student_success = success(student_learner.as_ref(), &config, episodes, &eval_seeds, stochastic)?;
    let teacher_latency = act_latency(teacher.as_ref(), &config, calls)?;
    let student_latency = act_latency(student_learner.as_ref(), &config, calls)?;
    let spec: PolicySpec = crate::export::policy_of_run(student)
        .map_err(|e| RunError::Io { path: student.display().to_string(), message: format!("export: {e}") })?;
    let obs = {
        let mut env = embodia_sim::make_with(&config.task, 1, config.env.as_ref())?;
        env.reset(config.seed);
        env.buffers().obs.clone()
    };
    let (mut out, mut scratch) = (vec![0.0f32; spec.output_dim()], vec![0.0f32; 2 * spec.max_width()]);
    let student_export_latency = time_calls(calls, || {
        spec.forward(std::hint::black_box(&obs), &mut out, &mut scratch);
        std::hint::black_box(&out);
        Ok(())
    })?;
    Ok(DistillReport {
        task: config.task.clone(),
        teacher: teacher_dir.display().to_string(),
        student: student.display().to_string(),
        teacher_steps,
        episodes,
        eval_seeds,
        stochastic,
        teacher_success,
        student_success,
        latency_calls: calls,
        latency_ratio: teacher_latency.median_us / student_latency.median_us,
        teacher_latency,
        student_latency,
        student_export_latency,
    })
}

/// The report as text lines.
pub fn describe(r: &DistillReport) -> String {
    let mut s = format!(
        "distill report: {} — teacher {} (K = {}), student {}\n",
        r.task, r.teacher, r.teacher_steps, r.student
    );
    let seeds: Vec<String> = r.eval_seeds.iter().map(|s| s.to_string()).collect();
    s.push_str(&format!(
        "success, {}, {} episodes per evaluation seed (seeds {}):\n",
        if r.stochastic { "sampled noise" } else { "deterministic" },
        r.episodes,
        seeds.join(", ")
    ));
    for (name, f) in [("teacher", &r.teacher_success), ("student", &r.student_success)] {
        match f {
            Some(f) => {
                let per: Vec<String> = f.per_seed.iter().map(|x| format!("{:.1}%", 100.0 * x)).collect();
                s.push_str(&format!(
                    "  {name}: {:.1}% (per seed {}), mean return {:.1}\n",
                    100.0 * f.mean,
                    per.join(" "),
                    f.mean_return
                ));
            }
            None => s.push_str(&format!("  {name}: the task has no success criterion\n")),
        }
    }
    if let (Some(t), Some(st)) = (&r.teacher_success, &r.student_success) {
        s.push_str(&format!("  student − teacher: {:+.1} percentage points\n", 100.0 * (st.mean - t.mean)));
    }
    s.push_str(&format!("latency at batch 1, {} calls (median / p99):\n", r.latency_calls));
    s.push_str(&format!(
        "  teacher act (K = {}): {:.1} / {:.1} µs\n",
        r.teacher_steps, r.teacher_latency.median_us, r.teacher_latency.p99_us
    ));
    s.push_str(&format!("  student act: {:.1} / {:.1} µs\n", r.student_latency.median_us, r.student_latency.p99_us));
    s.push_str(&format!(
        "  student exported f32 forward: {:.2} / {:.2} µs\n",
        r.student_export_latency.median_us, r.student_export_latency.p99_us
    ));
    s.push_str(&format!("  teacher / student (act, median): {:.1}x\n", r.latency_ratio));
    s
}
