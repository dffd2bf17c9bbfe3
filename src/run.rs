//! The training loop over a run directory ([`Run`]; the directory's layout is in
//! [`crate::run_dir`]), and loading, evaluating and tracing a trained run's learner.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;
use embodia_algos::distill::FIXED_NOISE_KEY;
use embodia_algos::{
    CHUNK_ACTOR_KEY, Checkpoint, ChunkActor, EvalMode, EvalResult, InitialNoise, Learner, MetricRow, MetricSink,
    StepTrace, VLA_ACTOR_KEY, VlaActor, evaluate_traced,
};
use embodia_sim::tensor::TensorVecEnv;
use embodia_sim::{EnvSnapshot, VecEnv};

use embodia_algos::data_parallel;

use crate::algorithms::RunContext;
use crate::config::TrainConfig;
use crate::device::{default_device, plain_device};
pub use crate::error::RunError;
pub(crate) use crate::error::io_err;
use crate::run_lock::RunLock;

pub use crate::run_dir::{CHECKPOINT_DIR, CONFIG_FILE, EVAL_FILE, METRICS_FILE, STUDENT_DIR, check_run_dir};

/// Least wall time between two redraws of `curves.png` during training (a redraw costs
/// milliseconds; an iteration of a fast learner costs less).
pub const CURVES_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Offset between the training seed and the evaluation environments' seed, so evaluation
/// episodes differ from training episodes.
pub const EVAL_SEED_OFFSET: u64 = 1_000_003;

/// The environments a run trains on.
enum TrainEnv {
    /// `algo.num_envs` environments stepped on the host, as one batch or as the groups the
    /// algorithm asks for (`algo.env_groups` of PPO: one group simulated while the policy acts
    /// for another).
    Host(Box<dyn VecEnv>),
    /// The task's tensor version on the compute device (`algo.device_rollouts`).
    Device(Box<dyn TensorVecEnv>),
}

impl TrainEnv {
    fn new(config: &TrainConfig) -> Result<Self, RunError> {
        let n = config.algo.num_envs();
        if let Some(job) = crate::rollout_ranks::rollout_job() {
            return Self::remote(config, job);
        }
        if !config.algo.device_rollouts() {
            let groups = config.algo.env_groups();
            if groups == 1 {
                let mut env = make_env(config, n)?;
                if let Some(world) = data_parallel::world() {
                    env.set_first_env(world.rank() * n)?;
                }
                return Ok(Self::Host(env));
            }
            let batches = (0..groups).map(|_| make_env(config, n / groups)).collect::<Result<Vec<_>, _>>()?;
            return Ok(Self::Host(Box::new(embodia_sim::EnvGroups::new(batches)?)));
        }
        if !embodia_sim::tensor::TENSOR_TASKS.contains(&config.task.as_str()) {
            return Err(RunError::Io {
                path: "algo.device_rollouts".into(),
                message: format!(
                    "task `{}` has no tensor version to keep on the device; tasks with one: {}",
                    config.task,
                    embodia_sim::tensor::TENSOR_TASKS.join(", ")
                ),
            });
        }
        Ok(Self::Device(embodia_sim::tensor::make_tensor(&config.task, n, &plain_device())?))
    }

    /// Rank 0's batch of `--dist actors`: the rollout ranks' environments.
    fn remote(config: &TrainConfig, job: &'static dyn data_parallel::Collective) -> Result<Self, RunError> {
        let refuse = |what: &str| {
            Err(RunError::Io {
                path: "--dist actors".into(),
                message: format!("the rollout ranks step one batch of host environments; {what}"),
            })
        };
        if config.algo.device_rollouts() {
            return refuse("`algo.device_rollouts` keeps it on the device instead");
        }
        if config.algo.env_groups() > 1 {
            return refuse("set `algo.env_groups = 1` (the ranks already simulate while the learner acts)");
        }
        if config.algo.cameras(&config.context())?.is_some() {
            return refuse("camera images are not sent between ranks yet (vla-* algorithms)");
        }
        let template = make_env(config, 1)?;
        Ok(Self::Host(Box::new(crate::rollout_ranks::RemoteEnvs::new(template, config.algo.num_envs(), job))))
    }

    fn vec_env(&self) -> &dyn VecEnv {
        match self {
            Self::Host(env) => env.as_ref(),
            Self::Device(env) => env.as_ref(),
        }
    }

    fn vec_env_mut(&mut self) -> &mut dyn VecEnv {
        match self {
            Self::Host(env) => env.as_mut(),
            Self::Device(env) => env.as_mut(),
        }
    }

    /// One training iteration of `learner` on these environments.
    fn iterate(&mut self, learner: &mut dyn Learner) -> Result<MetricRow, RunError> {
        Ok(match self {
            Self::Host(env) => learner.iterate(env.as_mut())?,
            Self::Device(env) => learner.iterate_tensor(env.as_mut())?,
        })
    }

    /// Puts the environments where the checkpoint left them. A device batch cannot be: its
    /// randomness is the device's generator, which a snapshot cannot hold, so it starts new
    /// episodes from a seed of its own (`seed + iterations`) and the resumed run is not the
    /// uninterrupted one step for step.
    fn restore(&mut self, snapshot: &EnvSnapshot, seed: u64, iterations: u64) -> Result<(), RunError> {
        match self {
            Self::Host(env) => env.restore(snapshot)?,
            Self::Device(env) => env.reset(seed.wrapping_add(iterations)),
        }
        Ok(())
    }
}

/// `num_envs` environments of the run's task (with its `[env]` table), with the cameras its
/// policy reads (`vla-*` algorithms) rendered after every reset and step.
pub fn make_env(config: &TrainConfig, num_envs: usize) -> Result<Box<dyn VecEnv>, RunError> {
    let env = embodia_sim::make_with(&config.task, num_envs, config.env.as_ref())?;
    let Some((names, size)) = config.algo.cameras(&config.context())? else { return Ok(env) };
    let Some(task) = config.context().task_config() else {
        return Err(RunError::Io {
            path: format!("--task {}", config.task),
            message: "the VLA sees camera images; only rapier tasks have cameras".into(),
        });
    };
    let mut render = embodia_sim::camera::RenderConfig::for_task(&task, size, size);
    render.cameras.retain(|c| names.contains(&c.name));
    Ok(Box::new(embodia_sim::camera::CameraEnv::new(env, render)?))
}

/// Builds the learner `config` describes for `env`.
pub fn build_learner(config: &TrainConfig, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
    config.algo.build(&config.context(), env, device)
}

/// The configuration of the student run (`<run>/student/`, see [`STUDENT_DIR`]) of a flow-RL
/// run with `algo.distill_during_rl` in `run_dir`; `None` for other runs. `total_steps` is the
/// student's gradient steps so far (`student_steps`, at least 1), so the student run is
/// complete as written and `train --resume --steps N` distills further.
pub fn student_config(config: &TrainConfig, run_dir: &Path, student_steps: u64) -> Option<TrainConfig> {
    Some(TrainConfig {
        task: config.task.clone(),
        algorithm: "distill".into(),
        seed: config.seed,
        total_steps: student_steps.max(1),
        eval_episodes: config.eval_episodes,
        checkpoint_every: 1,
        algo: config.algo.student(&run_dir.display().to_string())?,
        env: config.env.clone(),
    })
}

/// A training run in a directory.
pub struct Run {
    /// The run directory.
    pub dir: PathBuf,
    /// The resolved configuration.
    pub config: TrainConfig,
    learner: Box<dyn Learner>,
    env: TrainEnv,
    /// Wall seconds spent before this process (from the checkpoint when resuming).
    wall_offset: f64,
    iterations: u64,
    /// Why the last redraw of `curves.png` failed, if it did: a cosmetic output never stops
    /// training, so the command reports it at the end instead.
    pub curves_error: Option<String>,
    /// This process is the run directory's only writer while the run is open; `None` on the
    /// ranks other than 0 of a data-parallel run, which never write it.
    _lock: Option<RunLock>,
    /// This process's rank in a data-parallel run ([`crate::distributed`]); 0 alone.
    rank: usize,
}

/// Fails unless the run's algorithm trains data-parallel when this process belongs to a
/// data-parallel run.
fn check_data_parallel(config: &TrainConfig) -> Result<(), RunError> {
    if data_parallel::world().is_none() || config.algo.data_parallel() {
        return Ok(());
    }
    let supported: Vec<&str> =
        crate::algorithms::ALGORITHMS.iter().filter(|a| (a.defaults)().data_parallel()).map(|a| a.name).collect();
    Err(RunError::Io {
        path: "--dist ddp".into(),
        message: format!(
            "`{}` with these settings does not train data-parallel yet; algorithms that do with their defaults: {} \
             (PPO with `algo.env_groups = 1` and without `algo.device_rollouts`; ppo-flow-sde and \
             ppo-flow-noise with `algo.advantage = \"gae\"`, no self-imitation and no student alongside)",
            config.algorithm,
            supported.join(", ")
        ),
    })
}

/// Fails unless this job has as many ranks of each kind as the run in `dir` (checkpoint
/// `ckpt`) was trained on: each rank's environments are part of the checkpoint.
fn check_ranks(ckpt: &Checkpoint, dir: &Path) -> Result<(), RunError> {
    let layouts = [
        // (checkpoint key, its value when absent, this job's, what it counts, how to launch)
        ("ranks", 1, data_parallel::world().map_or(1, |w| w.size()), "rank(s)", "--dist ddp"),
        (
            "rollout_ranks",
            0,
            crate::rollout_ranks::rollout_job().map_or(0, |j| j.size() - 1),
            "rollout rank(s)",
            "--dist actors",
        ),
    ];
    for (key, absent, now, what, mode) in layouts {
        let trained: usize = ckpt.get(key).unwrap_or(absent);
        if trained != now {
            return Err(RunError::Io {
                path: dir.join(CHECKPOINT_DIR).display().to_string(),
                message: format!(
                    "was written by a run with {trained} {what} and this job has {now}: resume it with as \
                     many (each rank's environments are part of the checkpoint; {mode})"
                ),
            });
        }
    }
    Ok(())
}

/// This process's rank: 0 alone.
fn own_rank() -> usize {
    data_parallel::world().map_or(0, |w| w.rank())
}

impl Run {
    /// Creates a new run directory (never reusing an existing one) and a fresh learner.
    ///
    /// In a data-parallel run every rank calls it with the same arguments; rank 0 alone checks
    /// and writes the directory, and every rank's learner starts from rank 0's.
    pub fn create(dir: &Path, mut config: TrainConfig) -> Result<Self, RunError> {
        check_data_parallel(&config)?;
        let rank = own_rank();
        if rank != 0 {
            let (env, learner) = Self::start(&mut config)?;
            return Ok(Self::open(dir, config, learner, env, None));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(RunError::Io {
                path: dir.display().to_string(),
                message: "is a file, not a directory; choose another --run-dir".into(),
            });
        }
        if dir.join(CONFIG_FILE).exists() {
            return Err(RunError::Io {
                path: dir.display().to_string(),
                message: "already holds a run; continue it with `embodia train --resume` or choose another --run-dir"
                    .into(),
            });
        }
        if let Some(name) = [METRICS_FILE, CHECKPOINT_DIR, EVAL_FILE].into_iter().find(|f| dir.join(f).exists()) {
            return Err(RunError::Io {
                path: dir.join(name).display().to_string(),
                message: "exists and would be overwritten; choose another --run-dir".into(),
            });
        }
        // The learner first: a bad config, init run or dataset leaves no run directory behind.
        let (env, learner) = Self::start(&mut config)?;
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock = RunLock::acquire(dir)?;
        // Another process may have created the run while this one built its learner.
        if dir.join(CONFIG_FILE).exists() {
            return Err(RunError::Io {
                path: dir.display().to_string(),
                message: "was made a run by another process meanwhile; choose another --run-dir".into(),
            });
        }
        let config_path = dir.join(CONFIG_FILE);
        fs::write(&config_path, config.to_toml()).map_err(io_err(&config_path))?;
        let metrics_path = dir.join(METRICS_FILE);
        fs::write(&metrics_path, format!("{}\n", MetricRow::CSV_HEADER)).map_err(io_err(&metrics_path))?;
        if let Some(student) = student_config(&config, dir, 0) {
            let student_dir = dir.join(STUDENT_DIR);
            fs::create_dir_all(&student_dir).map_err(io_err(&student_dir))?;
            let config_path = student_dir.join(CONFIG_FILE);
            fs::write(&config_path, student.to_toml()).map_err(io_err(&config_path))?;
            let metrics_path = student_dir.join(METRICS_FILE);
            fs::write(&metrics_path, format!("{}\n", MetricRow::CSV_HEADER)).map_err(io_err(&metrics_path))?;
        }
        Ok(Self::open(dir, config, learner, env, Some(lock)))
    }

    /// The environments (reset) and learner of a new run, every rank's learner rank 0's in a
    /// data-parallel run.
    fn start(config: &mut TrainConfig) -> Result<(TrainEnv, Box<dyn Learner>), RunError> {
        let TrainConfig { task, algorithm, seed, algo, env, .. } = config;
        algo.adopt_init(&RunContext { task, env: env.as_ref(), seed: *seed, algorithm })?;
        let mut env = TrainEnv::new(config)?;
        env.vec_env_mut().reset(config.seed);
        let mut learner = build_learner(config, env.vec_env(), &default_device())?;
        crate::distributed::sync_learner(learner.as_mut())?;
        Ok((env, learner))
    }

    /// A new run at its start; `lock` is `None` on the ranks that do not write it.
    fn open(dir: &Path, config: TrainConfig, learner: Box<dyn Learner>, env: TrainEnv, lock: Option<RunLock>) -> Self {
        Self {
            dir: dir.to_path_buf(),
            config,
            learner,
            env,
            wall_offset: 0.0,
            iterations: 0,
            curves_error: None,
            _lock: lock,
            rank: own_rank(),
        }
    }

    /// Reopens a run at its last checkpoint. `total_steps` may extend the budget. Rows of
    /// `metrics.csv` written after the checkpoint are dropped, so the file continues exactly.
    ///
    /// In a data-parallel run every rank reads the checkpoint (the directory must be on a
    /// file system they share) and takes back its own environments; rank 0 alone writes. The
    /// run must have been trained on as many ranks.
    pub fn resume(dir: &Path, total_steps: Option<u64>) -> Result<Self, RunError> {
        check_run_dir(dir)?;
        let rank = own_rank();
        let lock = if rank == 0 { Some(RunLock::acquire(dir)?) } else { None };
        let mut config = TrainConfig::from_file(&dir.join(CONFIG_FILE))?;
        if let Some(steps) = total_steps {
            config.total_steps = steps;
        }
        check_data_parallel(&config)?;
        let ckpt = Checkpoint::load(&dir.join(CHECKPOINT_DIR))?;
        check_ranks(&ckpt, dir)?;
        let mut env = TrainEnv::new(&config)?;
        let learner = config.algo.restore(&config.context(), env.vec_env(), &ckpt, &default_device())?;
        let snapshot: EnvSnapshot = match rank {
            0 => ckpt.get("env")?,
            r => {
                ckpt.get::<Vec<EnvSnapshot>>("env_other_ranks")?.into_iter().nth(r - 1).ok_or_else(|| RunError::Io {
                    path: dir.join(CHECKPOINT_DIR).display().to_string(),
                    message: format!("holds no environment state for rank {r}"),
                })?
            }
        };
        let wall_offset: f64 = ckpt.get("wall_seconds")?;
        let iterations: u64 = ckpt.get("iterations")?;
        env.restore(&snapshot, config.seed, iterations)?;
        // Every file the run appends to (rank 0's) is checked before anything is written.
        let mut metrics = vec![(dir.join(METRICS_FILE), learner.env_steps())];
        if let Some(student) = learner.student() {
            metrics.push((dir.join(STUDENT_DIR).join(METRICS_FILE), student.steps()));
        }
        if rank != 0 {
            metrics.clear();
        }
        for (path, _) in &metrics {
            check_metrics(path)?;
        }
        for (path, steps) in &metrics {
            truncate_metrics(path, *steps)?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            config,
            learner,
            env,
            wall_offset,
            iterations,
            curves_error: None,
            _lock: lock,
            rank,
        })
    }

    /// The learner.
    pub fn learner(&self) -> &dyn Learner {
        self.learner.as_ref()
    }

    /// Trains until the step budget is spent; appends every iteration's row to `metrics.csv`
    /// and sends it to `sinks` (progress bars, viewers), checkpoints every `checkpoint_every`
    /// iterations and at the end, and redraws `curves.png` at the first checkpoint, at checkpoints
    /// at least [`CURVES_EVERY`] apart, and at the end (a failed redraw is kept in
    /// [`Run::curves_error`], not returned: it never stops training). On error (e.g. a NaN) the last good checkpoint is left in place.
    ///
    /// On the ranks other than 0 of a data-parallel run it trains (every rank takes part in
    /// every update) without writing anything or calling `sinks`.
    pub fn train(&mut self, sinks: &mut [&mut dyn MetricSink]) -> Result<(), RunError> {
        if self.rank != 0 {
            return self.train_replica();
        }
        let start = Instant::now();
        let metrics_path = self.dir.join(METRICS_FILE);
        let mut csv = fs::OpenOptions::new().append(true).open(&metrics_path).map_err(io_err(&metrics_path))?;
        let student_metrics_path = self.dir.join(STUDENT_DIR).join(METRICS_FILE);
        let mut student_csv = match self.learner.student() {
            Some(_) => Some(
                fs::OpenOptions::new()
                    .append(true)
                    .open(&student_metrics_path)
                    .map_err(io_err(&student_metrics_path))?,
            ),
            None => None,
        };
        let mut last = (start, self.learner.env_steps());
        let mut last_plot: Option<Instant> = None;
        while self.learner.env_steps() < self.config.total_steps {
            let mut row = self.env.iterate(self.learner.as_mut())?;
            let now = Instant::now();
            row.wall_seconds = self.wall_offset + (now - start).as_secs_f64();
            row.fps = Some((row.env_steps - last.1) as f64 / (now - last.0).as_secs_f64().max(1e-9));
            last = (now, row.env_steps);
            writeln!(csv, "{}", row.csv_values()).map_err(io_err(&metrics_path))?;
            if let (Some(file), Some(student_row)) =
                (student_csv.as_mut(), self.learner.student().and_then(|s| s.last_row()))
            {
                let student_row = MetricRow { wall_seconds: row.wall_seconds, ..student_row.clone() };
                writeln!(file, "{}", student_row.csv_values()).map_err(io_err(&student_metrics_path))?;
            }
            for sink in sinks.iter_mut() {
                sink.record(&row);
            }
            self.iterations += 1;
            let done = self.learner.env_steps() >= self.config.total_steps;
            if done || self.iterations.is_multiple_of(self.config.checkpoint_every) {
                csv.flush().map_err(io_err(&metrics_path))?;
                if let Some(file) = student_csv.as_mut() {
                    file.flush().map_err(io_err(&student_metrics_path))?;
                }
                self.save_checkpoint(row.wall_seconds)?;
                if done || last_plot.is_none_or(|t| t.elapsed() >= CURVES_EVERY) {
                    self.curves_error = crate::plot::write_run_curves(&self.dir).err().map(|e| e.to_string());
                    last_plot = Some(Instant::now());
                }
            }
        }
        Ok(())
    }

    /// [`Run::train`] on a rank other than 0: the same iterations and the collectives of
    /// [`Run::save_checkpoint`] at the same points.
    fn train_replica(&mut self) -> Result<(), RunError> {
        while self.learner.env_steps() < self.config.total_steps {
            self.env.iterate(self.learner.as_mut())?;
            self.iterations += 1;
            let done = self.learner.env_steps() >= self.config.total_steps;
            if done || self.iterations.is_multiple_of(self.config.checkpoint_every) {
                self.save_checkpoint(0.0)?;
            }
        }
        Ok(())
    }

    /// Writes the checkpoint (rank 0). In a data-parallel run every rank first checks that
    /// its learner is still rank 0's, and rank 0 saves every rank's environments.
    fn save_checkpoint(&self, wall_seconds: f64) -> Result<(), RunError> {
        let mut ckpt = self.learner.checkpoint()?;
        if let Some(world) = data_parallel::world() {
            crate::distributed::check_replicas(&ckpt)?;
            let snapshot = serde_json::to_vec(&self.env.vec_env().snapshot())
                .map_err(|e| RunError::Io { path: "environment state".into(), message: e.to_string() })?;
            let Some(all) = data_parallel::gather_bytes(world, &snapshot) else { return Ok(()) };
            let others = all[1..]
                .iter()
                .map(|bytes| serde_json::from_slice::<EnvSnapshot>(bytes))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| RunError::Io { path: "environment state of a rank".into(), message: e.to_string() })?;
            ckpt.put("env_other_ranks", &others)?;
            ckpt.put("ranks", &world.size())?;
        }
        if let Some((name, _)) = ckpt.tensors.iter().find(|(_, (_, v))| v.iter().any(|x| !x.is_finite())) {
            return Err(embodia_algos::AlgoError::NonFinite {
                what: format!("tensor `{name}`"),
                env_steps: self.learner.env_steps(),
            }
            .into());
        }
        let snapshot = self.env.vec_env().snapshot();
        let envs = self.env.vec_env().num_envs();
        if snapshot.num_envs() != envs {
            return Err(RunError::Io {
                path: self.dir.join(CHECKPOINT_DIR).display().to_string(),
                message: format!(
                    "not written: the environments' state holds {} of {envs} environments (a rollout rank \
                     sent a state this rank cannot read: is every rank running the same embodia?)",
                    snapshot.num_envs()
                ),
            });
        }
        ckpt.put("env", &snapshot)?;
        ckpt.put("wall_seconds", &wall_seconds)?;
        ckpt.put("iterations", &self.iterations)?;
        if let Some(job) = crate::rollout_ranks::rollout_job() {
            ckpt.put("rollout_ranks", &(job.size() - 1))?;
        }
        ckpt.save(&self.dir.join(CHECKPOINT_DIR))?;
        if let Some(student) = self.learner.student() {
            // A complete distill run: its checkpoint (the teacher is the present RL policy) with
            // what the runner adds (the RL environments' snapshot: the distill config has as many),
            // and its config with the gradient steps taken as budget.
            let dir = self.dir.join(STUDENT_DIR);
            let mut ckpt = student.checkpoint()?;
            ckpt.put("env", &self.env.vec_env().snapshot())?;
            ckpt.put("wall_seconds", &wall_seconds)?;
            ckpt.put("iterations", &self.iterations)?;
            ckpt.save(&dir.join(CHECKPOINT_DIR))?;
            if let Some(config) = student_config(&self.config, &self.dir, student.steps()) {
                let path = dir.join(CONFIG_FILE);
                fs::write(&path, config.to_toml()).map_err(io_err(&path))?;
            }
        }
        Ok(())
    }

    /// Evaluation over `episodes` episodes in the policy's reference mode
    /// ([`Learner::default_eval_mode`]); writes `eval.json`.
    pub fn final_eval(&self, episodes: usize) -> Result<EvalResult, RunError> {
        let mode = self.learner.default_eval_mode();
        let result = evaluate_learner(self.learner.as_ref(), &self.config, episodes, mode)?;
        let path = self.dir.join(EVAL_FILE);
        let json = serde_json::to_string_pretty(&result).expect("eval result serializes");
        fs::write(&path, json + "\n").map_err(io_err(&path))?;
        Ok(result)
    }

    /// Evaluation of the student trained alongside (if any) over `episodes` episodes, the same
    /// as [`Run::final_eval`]'s; writes `student/eval.json`.
    pub fn final_student_eval(&self, episodes: usize) -> Result<Option<EvalResult>, RunError> {
        let Some(student) = self.learner.student() else { return Ok(None) };
        let result = evaluate_learner(student, &self.config, episodes, student.default_eval_mode())?;
        let path = self.dir.join(STUDENT_DIR).join(EVAL_FILE);
        let json = serde_json::to_string_pretty(&result).expect("eval result serializes");
        fs::write(&path, json + "\n").map_err(io_err(&path))?;
        Ok(Some(result))
    }
}

/// Runs `episodes` evaluation episodes of `learner` on fresh environments in `mode`, which must
/// be one the learner acts in as it is ([`embodia_algos::check_eval_mode`]; see
/// [`evaluate_learner_in`] for any mode).
pub fn evaluate_learner(
    learner: &dyn Learner,
    config: &TrainConfig,
    episodes: usize,
    mode: EvalMode,
) -> Result<EvalResult, RunError> {
    evaluate_learner_traced(learner, config, episodes, mode, None)
}

/// [`evaluate_learner`], also filling `trace` with every step of every episode.
pub fn evaluate_learner_traced(
    learner: &dyn Learner,
    config: &TrainConfig,
    episodes: usize,
    mode: EvalMode,
    trace: Option<&mut StepTrace>,
) -> Result<EvalResult, RunError> {
    let mut env = make_env(config, episodes)?;
    Ok(evaluate_traced(learner, env.as_mut(), config.seed + EVAL_SEED_OFFSET, mode, trace)?)
}

/// [`evaluate_learner_traced`] in any mode: a chunk policy whose deterministic actions start
/// from another initial noise than `mode`'s is evaluated as a copy loaded from its checkpoint
/// with that initial noise.
pub fn evaluate_learner_in(
    learner: &dyn Learner,
    config: &TrainConfig,
    episodes: usize,
    mode: EvalMode,
    trace: Option<&mut StepTrace>,
) -> Result<EvalResult, RunError> {
    match (mode.initial_noise(), learner.initial_noise()) {
        (Some(wanted), Some(own)) if wanted != own => {
            let mut ckpt = learner.checkpoint()?;
            set_initial_noise(&mut ckpt, wanted, &config.algorithm)?;
            let copy = learner_from_checkpoint(config, &ckpt)?;
            evaluate_learner_traced(copy.as_ref(), config, episodes, mode, trace)
        }
        _ => evaluate_learner_traced(learner, config, episodes, mode, trace),
    }
}

/// Writes an evaluation's steps as CSV, one row per environment step: `episode, step, reward,
/// success` (0/1 after the step), the observation acted on (`obs.0` …), the action executed
/// (`action.0` …) and the object and marker positions when the observation was taken (names
/// from [`StepTrace::position_names`]).
pub fn write_step_trace(trace: &StepTrace, path: &Path) -> Result<(), RunError> {
    use std::fmt::Write as _;
    let mut text = String::from("episode,step,reward,success");
    for k in 0..trace.obs_dim {
        let _ = write!(text, ",obs.{k}");
    }
    for k in 0..trace.action_dim {
        let _ = write!(text, ",action.{k}");
    }
    for name in &trace.position_names {
        let _ = write!(text, ",{name}");
    }
    text.push('\n');
    let pd = trace.position_names.len();
    for (r, &(episode, step)) in trace.steps.iter().enumerate() {
        let _ = write!(text, "{episode},{step},{},{}", trace.rewards[r], u8::from(trace.success[r]));
        let obs = &trace.observations[r * trace.obs_dim..(r + 1) * trace.obs_dim];
        let action = &trace.actions[r * trace.action_dim..(r + 1) * trace.action_dim];
        let positions = trace.positions.get(r * pd..(r + 1) * pd).unwrap_or_default();
        for v in obs.iter().chain(action).chain(positions) {
            let _ = write!(text, ",{v}");
        }
        text.push('\n');
    }
    fs::write(path, text).map_err(io_err(path))
}

/// Writes an evaluation's episodes as CSV, one row per episode: `episode, return, length,
/// success, success_once` (empty without a success notion), `instruction` (quoted, empty for
/// tasks without instructions), then the object and marker positions right after reset
/// (`initial.<name>`) and one step before the end (`last.<name>`; names from
/// [`EvalResult::position_names`]).
pub fn write_episode_outcomes(result: &EvalResult, path: &Path) -> Result<(), RunError> {
    let mut text = String::from("episode,return,length,success,success_once,instruction");
    for when in ["initial", "last"] {
        for name in &result.position_names {
            text.push_str(&format!(",{when}.{name}"));
        }
    }
    text.push('\n');
    for (i, e) in result.per_episode.iter().enumerate() {
        let (end, once) = match e.success {
            Some((end, once)) => (u8::from(end).to_string(), u8::from(once).to_string()),
            None => (String::new(), String::new()),
        };
        let instruction =
            e.instruction.as_deref().map(|t| format!("\"{}\"", t.replace('"', "\"\""))).unwrap_or_default();
        text.push_str(&format!("{i},{},{},{end},{once},{instruction}", e.episode_return, e.length));
        for p in e.initial_positions.iter().chain(&e.last_positions) {
            text.push_str(&format!(",{p}"));
        }
        text.push('\n');
    }
    fs::write(path, text).map_err(io_err(path))
}

/// Loads the learner of a finished or interrupted run, for evaluation.
pub fn load_learner(dir: &Path) -> Result<(TrainConfig, Box<dyn Learner>), RunError> {
    check_run_dir(dir)?;
    let config = TrainConfig::from_file(&dir.join(CONFIG_FILE))?;
    let ckpt = Checkpoint::load(&dir.join(CHECKPOINT_DIR))?;
    let learner = learner_from_checkpoint(&config, &ckpt)?;
    Ok((config, learner))
}

/// The learner of `config` restored from `ckpt`, for evaluation.
fn learner_from_checkpoint(config: &TrainConfig, ckpt: &Checkpoint) -> Result<Box<dyn Learner>, RunError> {
    let env = make_env(config, 1)?;
    config.algo.for_evaluation(&config.context(), env.as_ref(), ckpt, &default_device())
}

/// Sets the initial noise of the chunk actor (of a flow, diffusion or VLA policy) in `ckpt`;
/// other policies have none, which is an error naming the option.
fn set_initial_noise(ckpt: &mut Checkpoint, start: InitialNoise, algorithm: &str) -> Result<(), RunError> {
    if ckpt.meta.contains_key(CHUNK_ACTOR_KEY) {
        let mut actor: ChunkActor = ckpt.get(CHUNK_ACTOR_KEY)?;
        actor.initial_noise = start;
        ckpt.put(CHUNK_ACTOR_KEY, &actor)?;
        // A one-step student maps its teacher's deterministic initial noise.
        if ckpt.meta.contains_key(FIXED_NOISE_KEY) {
            ckpt.put(FIXED_NOISE_KEY, &actor.deterministic_noise())?;
        }
    } else if ckpt.meta.contains_key(VLA_ACTOR_KEY) {
        let mut actor: VlaActor = ckpt.get(VLA_ACTOR_KEY)?;
        actor.chunk.initial_noise = start;
        ckpt.put(VLA_ACTOR_KEY, &actor)?;
    } else {
        return Err(RunError::Config(crate::error::ConfigError::OutOfRange {
            field: "--mode".into(),
            value: format!(
                "`{}` for a `{algorithm}` run",
                if start == InitialNoise::Zero { "zero" } else { "fixed-draw" }
            ),
            allowed: "runs of flow, diffusion and VLA policies, which act from an initial noise".into(),
        }));
    }
    Ok(())
}

/// Fails unless `path` is a `metrics.csv` that a resumed run can continue: readable, with the
/// header of this version (or an older one that ends early) and rows that parse.
fn check_metrics(path: &Path) -> Result<(), RunError> {
    let text = fs::read_to_string(path).map_err(io_err(path))?;
    let header = text.lines().next().unwrap_or_default();
    if header.is_empty() || !MetricRow::CSV_HEADER.starts_with(header) {
        return Err(RunError::Io {
            path: path.display().to_string(),
            message: format!(
                "line 1 is not the header of a metrics.csv that embodia wrote (expected it to begin `{}`); \
                 restore the file or train a new run",
                MetricRow::CSV_HEADER.split(',').take(3).collect::<Vec<_>>().join(",")
            ),
        });
    }
    crate::plot::parse_metrics(&text, &path.display().to_string())?;
    Ok(())
}

/// Keeps the header and the rows up to `env_steps`.
fn truncate_metrics(path: &Path, env_steps: u64) -> Result<(), RunError> {
    let text = fs::read_to_string(path).map_err(io_err(path))?;
    // A file written before columns were added at the end gets them, empty in its old rows, so
    // that the rows this run appends match its header.
    let header = text.lines().next().unwrap_or_default();
    let added = match MetricRow::CSV_HEADER.strip_prefix(header) {
        Some(rest) if rest.starts_with(',') => rest.matches(',').count(),
        _ => 0,
    };
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            out.push_str(if added > 0 { MetricRow::CSV_HEADER } else { line });
        } else if line.split(',').next().and_then(|s| s.parse::<u64>().ok()).is_some_and(|s| s <= env_steps) {
            out.push_str(line);
            out.push_str(&",".repeat(added));
        } else {
            continue;
        }
        out.push('\n');
    }
    fs::write(path, out).map_err(io_err(path))
}

/// A fresh run directory name under `root`: `<task>-<algo>-seed<seed>`, with `-2`, `-3`, …
/// appended if taken.
pub fn fresh_run_dir(root: &Path, config: &TrainConfig) -> PathBuf {
    let base = format!("{}-{}-seed{}", config.task, config.algorithm, config.seed);
    let mut dir = root.join(&base);
    let mut k = 2;
    while dir.exists() {
        dir = root.join(format!("{base}-{k}"));
        k += 1;
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resuming_drops_later_rows_and_adds_columns_newer_than_the_file() {
        let dir = std::env::temp_dir().join(format!("embodia-truncate-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(METRICS_FILE);
        let (old_header, added) = MetricRow::CSV_HEADER.rsplit_once(',').unwrap();
        let old_row = |steps: u64| format!("{steps},1.5{}", ",".repeat(old_header.matches(',').count() - 1));
        fs::write(&path, format!("{old_header}\n{}\n{}\n", old_row(10), old_row(20))).unwrap();
        truncate_metrics(&path, 10).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, [MetricRow::CSV_HEADER.to_string(), format!("{},", old_row(10))], "added `{added}`");
        let rows = crate::plot::parse_metrics(&text, "metrics.csv").unwrap();
        assert_eq!(rows.len(), 1);
        // A current file is left as it was.
        truncate_metrics(&path, 10).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        fs::remove_dir_all(&dir).unwrap();
    }
}
