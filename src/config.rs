//! Typed training configuration: embedded per-task defaults, a TOML file, and `--set` overrides,
//! merged in that order and checked field by field.

use std::path::Path;

use embodia_algos::{
    AdvantageEstimator, DistillConfig, DppoConfig, DsrlConfig, FlowRlMethod, PpoConfig, PpoFlowConfig, SacConfig,
    SftConfig, VlaDsrlConfig, VlaSftConfig,
};
use embodia_sim::TaskConfig;
use serde::{Deserialize, Serialize};

/// What a run's step budget (`total_steps`) counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Environment steps, summed over environments (the RL algorithms).
    EnvSteps,
    /// Gradient steps (behaviour cloning and distillation).
    GradientSteps,
}

impl Budget {
    /// The unit in words, as `train` prints it.
    pub fn unit(self) -> &'static str {
        match self {
            Budget::EnvSteps => "env steps",
            Budget::GradientSteps => "gradient steps",
        }
    }
}

/// One algorithm `embodia train` can run: its name, what `embodia list` says about it, and how
/// its `[algo]` table is defaulted, checked and read. [`ALGORITHMS`] is the registry; adding an
/// algorithm is its learner in `embodia-algos`, an [`AlgoConfig`] variant and one entry there
/// (the compiler then points at every `match` on `AlgoConfig` that builds, exports or
/// benchmarks it).
pub struct Algorithm {
    /// The name `--algo` takes.
    pub name: &'static str,
    /// One line for `embodia list`.
    pub summary: &'static str,
    /// What its step budget counts.
    pub budget: Budget,
    /// The `[algo]` table every run starts from, before presets, files and `--set`.
    defaults: fn() -> AlgoConfig,
    /// Reads a merged configuration table with this algorithm's `[algo]` schema.
    typed: fn(&toml::Table) -> Result<TrainConfig, String>,
    /// Reads a user's file strictly with this schema (unknown keys, wrong types).
    check_file: fn(&str) -> Result<(), toml::de::Error>,
}

/// The registry of algorithms, in the order `embodia list` prints them.
pub const ALGORITHMS: [Algorithm; 12] = [
    Algorithm {
        name: "sac",
        summary: "Soft Actor-Critic: off-policy, twin Q, automatic entropy temperature; sample-efficient",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::Sac(SacConfig::default()),
        typed: |t| typed(t, AlgoConfig::Sac),
        check_file: check_file_as::<SacConfig>,
    },
    Algorithm {
        name: "ppo",
        summary: "Proximal Policy Optimization (RSL-RL style): clipped surrogate, GAE, KL-adaptive learning rate",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::Ppo(PpoConfig::default()),
        typed: |t| typed(t, AlgoConfig::Ppo),
        check_file: check_file_as::<PpoConfig>,
    },
    Algorithm {
        name: "sft",
        summary: "flow-matching (or, with --set algo.model=diffusion, DDPM) behaviour cloning of an action-chunk policy from demonstrations (--demos N)",
        budget: Budget::GradientSteps,
        defaults: || AlgoConfig::Sft(SftConfig::default()),
        typed: |t| typed(t, AlgoConfig::Sft),
        check_file: check_file_as::<SftConfig>,
    },
    Algorithm {
        name: "ppo-flow-sde",
        summary: "πRL Flow-SDE: PPO on a flow policy with one stochastic denoising step (--init runs/<sft-run>; --distill-during-rl adds a one-step student)",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::PpoFlow(PpoFlowConfig::default()),
        typed: |t| typed(t, |c: PpoFlowConfig| AlgoConfig::PpoFlow(PpoFlowConfig { method: FlowRlMethod::Sde, ..c })),
        check_file: check_file_as::<PpoFlowConfig>,
    },
    Algorithm {
        name: "ppo-flow-noise",
        summary: "πRL Flow-Noise: PPO on a flow policy with a learned noise head (--init runs/<sft-run>; --distill-during-rl adds a one-step student)",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::PpoFlow(PpoFlowConfig::default()),
        typed: |t| typed(t, |c: PpoFlowConfig| AlgoConfig::PpoFlow(PpoFlowConfig { method: FlowRlMethod::Noise, ..c })),
        check_file: check_file_as::<PpoFlowConfig>,
    },
    Algorithm {
        name: "dppo",
        summary: "DPPO: PPO over the last K′ denoising steps of a diffusion policy (--init runs/<diffusion-sft-run>)",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::Dppo(DppoConfig::default()),
        typed: |t| typed(t, AlgoConfig::Dppo),
        check_file: check_file_as::<DppoConfig>,
    },
    Algorithm {
        name: "dsrl",
        summary: "DSRL: SAC on the initial noise of a frozen flow policy (--init runs/<sft-run>)",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::Dsrl(DsrlConfig::default()),
        typed: |t| typed(t, AlgoConfig::Dsrl),
        check_file: check_file_as::<DsrlConfig>,
    },
    Algorithm {
        name: "distill",
        summary: "one-step student of a flow policy's K-step sampler (`embodia distill --run runs/<flow-run>`)",
        budget: Budget::GradientSteps,
        defaults: || AlgoConfig::Distill(DistillConfig::default()),
        typed: |t| typed(t, AlgoConfig::Distill),
        check_file: check_file_as::<DistillConfig>,
    },
    Algorithm {
        name: "vla-sft",
        summary: "flow-matching behaviour cloning of the vision-language-action model from demonstrations with camera images and instructions (language tasks: lang-cubes)",
        budget: Budget::GradientSteps,
        defaults: || AlgoConfig::VlaSft(VlaSftConfig::default()),
        typed: |t| typed(t, AlgoConfig::VlaSft),
        check_file: check_file_as::<VlaSftConfig>,
    },
    Algorithm {
        name: "vla-ppo-flow-sde",
        summary: "πRL Flow-SDE on the VLA (GRPO, or GAE with its value head), every instruction at once (--init runs/<vla-sft-run>)",
        budget: Budget::EnvSteps,
        defaults: || {
            AlgoConfig::VlaPpo(PpoFlowConfig { advantage: AdvantageEstimator::Grpo, ..PpoFlowConfig::default() })
        },
        typed: |t| typed(t, |c: PpoFlowConfig| AlgoConfig::VlaPpo(PpoFlowConfig { method: FlowRlMethod::Sde, ..c })),
        check_file: check_file_as::<PpoFlowConfig>,
    },
    Algorithm {
        name: "vla-ppo-flow-noise",
        summary: "πRL Flow-Noise on the VLA (GRPO, or GAE with its value head) (--init runs/<vla-sft-run>)",
        budget: Budget::EnvSteps,
        defaults: || {
            AlgoConfig::VlaPpo(PpoFlowConfig { advantage: AdvantageEstimator::Grpo, ..PpoFlowConfig::default() })
        },
        typed: |t| typed(t, |c: PpoFlowConfig| AlgoConfig::VlaPpo(PpoFlowConfig { method: FlowRlMethod::Noise, ..c })),
        check_file: check_file_as::<PpoFlowConfig>,
    },
    Algorithm {
        name: "vla-dsrl",
        summary: "DSRL: SAC on the initial noise of a frozen VLA, every instruction at once (--init runs/<vla-sft-run>)",
        budget: Budget::EnvSteps,
        defaults: || AlgoConfig::VlaDsrl(VlaDsrlConfig::default()),
        typed: |t| typed(t, AlgoConfig::VlaDsrl),
        check_file: check_file_as::<VlaDsrlConfig>,
    },
];

/// The registered algorithm called `name`.
pub fn algorithm(name: &str) -> Result<&'static Algorithm, ConfigError> {
    ALGORITHMS.iter().find(|a| a.name == name).ok_or_else(|| ConfigError::UnknownAlgorithm(name.to_string()))
}

/// The registered algorithms' names, comma-separated.
fn algorithm_names() -> String {
    ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// The most episodes one evaluation or recording may ask for.
pub const MAX_EPISODES: usize = 1_000_000;

/// Everything a training run needs; written to `runs/<name>/config.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Task name from the registry (`embodia list`).
    pub task: String,
    /// Algorithm name: `sac` or `ppo`.
    pub algorithm: String,
    /// Seed of networks, environments and sampling.
    pub seed: u64,
    /// Environment-step budget, summed over environments.
    pub total_steps: u64,
    /// Episodes of the final deterministic evaluation (`eval.json`).
    pub eval_episodes: usize,
    /// Write a checkpoint every this many iterations (and always at the end).
    pub checkpoint_every: u64,
    /// Hyperparameters of the algorithm.
    pub algo: AlgoConfig,
    /// The task's terms, scene and events (rapier tasks; classic tasks have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<TaskConfig>,
}

/// Hyperparameters of one algorithm (the `[algo]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AlgoConfig {
    /// SAC.
    Sac(SacConfig),
    /// PPO.
    Ppo(PpoConfig),
    /// Flow-policy behaviour cloning.
    Sft(SftConfig),
    /// PPO on a flow policy (`ppo-flow-sde`, `ppo-flow-noise`).
    PpoFlow(PpoFlowConfig),
    /// One-step distillation of a flow policy.
    Distill(DistillConfig),
    /// DPPO on a diffusion policy.
    Dppo(DppoConfig),
    /// SAC on the initial noise of a frozen flow policy (`dsrl`).
    Dsrl(DsrlConfig),
    /// Behaviour cloning of the VLA.
    VlaSft(VlaSftConfig),
    /// PPO with GRPO or GAE advantages on the VLA (`vla-ppo-flow-sde`, `vla-ppo-flow-noise`).
    VlaPpo(PpoFlowConfig),
    /// SAC on the initial noise of a frozen VLA (`vla-dsrl`).
    VlaDsrl(VlaDsrlConfig),
}

impl AlgoConfig {
    /// Number of parallel training environments.
    pub fn num_envs(&self) -> usize {
        match self {
            Self::Sac(c) => c.num_envs,
            Self::Ppo(c) => c.num_envs,
            Self::Sft(c) => c.num_envs,
            Self::PpoFlow(c) => c.num_envs,
            Self::Distill(c) => c.num_envs,
            Self::Dppo(c) => c.num_envs,
            Self::Dsrl(c) => c.num_envs,
            Self::VlaSft(c) => c.num_envs,
            Self::VlaPpo(c) => c.num_envs,
            Self::VlaDsrl(c) => c.num_envs,
        }
    }

    /// The cameras the policy reads, by name, and their square resolution, pixels; `None` for
    /// policies of the observation vector alone. RL from a VLA checkpoint reads them there.
    pub fn vla_cameras(&self) -> Option<(Vec<String>, usize)> {
        match self {
            Self::VlaSft(c) => Some((c.cameras.clone(), c.model.vision.image_size)),
            _ => None,
        }
    }
}

/// A configuration problem, in words that name the file, line or field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unknown algorithm name.
    #[error("unknown algorithm `{0}`; valid algorithms: {names}", names = algorithm_names())]
    UnknownAlgorithm(String),
    /// The TOML file could not be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// A `--set key=value` override is malformed or names an unknown key.
    #[error("--set {arg}: {message}")]
    Override {
        /// The override as given.
        arg: String,
        /// What is wrong.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("invalid value for `{field}`: {value} (allowed: {allowed})")]
    OutOfRange {
        /// Dotted key, e.g. `algo.learning_rate`.
        field: String,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A key that is not a setting (dotted, e.g. `algo.model.vision.flim`).
    #[error("unknown key `{0}`")]
    UnknownKey(String),
    /// A value is of the wrong type, or the task is unknown.
    #[error("{0}")]
    Invalid(String),
}

/// Default settings every run starts from, before the per-task preset.
fn base_table(task: &str, name: &str) -> Result<toml::Table, ConfigError> {
    let entry = algorithm(name)?;
    let algo = match (entry.defaults)() {
        AlgoConfig::Sac(c) => toml::Table::try_from(c),
        AlgoConfig::Ppo(c) => toml::Table::try_from(c),
        AlgoConfig::Sft(c) => toml::Table::try_from(c),
        AlgoConfig::PpoFlow(c) | AlgoConfig::VlaPpo(c) => toml::Table::try_from(c),
        AlgoConfig::Distill(c) => toml::Table::try_from(c),
        AlgoConfig::Dppo(c) => toml::Table::try_from(c),
        AlgoConfig::Dsrl(c) => toml::Table::try_from(c),
        AlgoConfig::VlaSft(c) => toml::Table::try_from(c),
        AlgoConfig::VlaDsrl(c) => toml::Table::try_from(c),
    }
    .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let mut t = toml::Table::new();
    t.insert("task".into(), task.into());
    t.insert("algorithm".into(), name.into());
    t.insert("seed".into(), toml::Value::Integer(1));
    // Behaviour cloning and distillation train to the end of their learning-rate schedule.
    let total_steps = match (entry.defaults)() {
        AlgoConfig::Sft(c) => c.decay_steps as i64,
        AlgoConfig::Distill(c) => c.decay_steps as i64,
        AlgoConfig::VlaSft(c) => c.decay_steps as i64,
        _ => 100_000,
    };
    t.insert("total_steps".into(), toml::Value::Integer(total_steps));
    t.insert("eval_episodes".into(), toml::Value::Integer(10));
    t.insert("checkpoint_every".into(), toml::Value::Integer(1));
    t.insert("algo".into(), toml::Value::Table(algo));
    if let Some(env) = embodia_sim::task_config(task) {
        let env = toml::Table::try_from(env).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        t.insert("env".into(), toml::Value::Table(env));
    }
    Ok(t)
}

/// Embedded per-(task, algorithm) presets from `assets/configs/`.
fn preset(task: &str, algorithm: &str) -> Option<&'static str> {
    Some(match (task, algorithm) {
        ("pendulum", "sac") => include_str!("../assets/configs/pendulum-sac.toml"),
        ("pendulum", "ppo") => include_str!("../assets/configs/pendulum-ppo.toml"),
        ("mountain-car-continuous", "sac") => include_str!("../assets/configs/mountain-car-continuous-sac.toml"),
        ("mountain-car-continuous", "ppo") => include_str!("../assets/configs/mountain-car-continuous-ppo.toml"),
        ("quadrotor-hover", "sac") => include_str!("../assets/configs/quadrotor-hover-sac.toml"),
        ("reach" | "reach-koch", "ppo") => include_str!("../assets/configs/reach-ppo.toml"),
        ("ant-run", "ppo") => include_str!("../assets/configs/ant-run-ppo.toml"),
        ("pick-cube-ee", "ppo") => include_str!("../assets/configs/pick-cube-ee-ppo.toml"),
        ("push-t", "sft") => include_str!("../assets/configs/push-t-sft.toml"),
        ("push-t", "ppo-flow-sde") => include_str!("../assets/configs/push-t-ppo-flow.toml"),
        ("push-t", "ppo-flow-noise") => include_str!("../assets/configs/push-t-ppo-flow-noise.toml"),
        ("pick-cube", "ppo-flow-sde" | "ppo-flow-noise") => include_str!("../assets/configs/pick-cube-ppo-flow.toml"),
        ("pick-cube-ee", "ppo-flow-sde" | "ppo-flow-noise") => {
            include_str!("../assets/configs/pick-cube-ee-ppo-flow.toml")
        }
        ("pick-cube", "dppo") => include_str!("../assets/configs/pick-cube-dppo.toml"),
        ("pick-cube-ee", "dppo") => include_str!("../assets/configs/pick-cube-ee-dppo.toml"),
        ("lang-cubes" | "lang-cubes-ee" | "lang-cubes-ee-fixed", "vla-sft") => {
            include_str!("../assets/configs/lang-cubes-vla-sft.toml")
        }
        ("lang-cubes" | "lang-cubes-ee" | "lang-cubes-ee-fixed", "vla-ppo-flow-sde" | "vla-ppo-flow-noise") => {
            concat!(
                include_str!("../assets/configs/lang-cubes-vla-ppo.toml"),
                include_str!("../assets/configs/lang-cubes-vla-rl-observations.toml")
            )
        }
        ("lang-cubes" | "lang-cubes-ee" | "lang-cubes-ee-fixed", "vla-dsrl") => concat!(
            include_str!("../assets/configs/lang-cubes-vla-dsrl.toml"),
            include_str!("../assets/configs/lang-cubes-vla-rl-observations.toml")
        ),
        _ => return None,
    })
}

/// Overlays `over` onto `base`, recursing into tables.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Parses `key.path=value` into a one-entry table; the value is TOML, or a bare string.
fn parse_override(arg: &str) -> Result<toml::Table, ConfigError> {
    let err = |message: &str| ConfigError::Override { arg: arg.to_string(), message: message.to_string() };
    let (key, value) = arg.split_once('=').ok_or_else(|| err("expected key=value, e.g. algo.learning_rate=3e-4"))?;
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").expect("parsed table has v"),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let mut parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err("empty key"));
    }
    let mut table = toml::Table::new();
    table.insert(parts.pop().expect("non-empty").to_string(), value);
    while let Some(p) = parts.pop() {
        let mut outer = toml::Table::new();
        outer.insert(p.to_string(), toml::Value::Table(table));
        table = outer;
    }
    Ok(table)
}

/// Reads a user's file strictly with the `[algo]` schema `A`, so that unknown keys and wrong
/// types are reported with their line.
fn check_file_as<A: serde::de::DeserializeOwned>(text: &str) -> Result<(), toml::de::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // Read only to check the file.
    struct File<A> {
        task: Option<String>,
        algorithm: Option<String>,
        seed: Option<u64>,
        total_steps: Option<u64>,
        eval_episodes: Option<usize>,
        checkpoint_every: Option<u64>,
        algo: Option<A>,
        // Partial [env] tables are merged over the task's defaults and checked whole afterwards.
        env: Option<toml::Table>,
    }
    toml::from_str::<File<A>>(text).map(|_| ())
}

/// Checks a user's file strictly with the schema of `algorithm` (PPO's for an unknown name,
/// which is reported later), naming the line of an unknown key or a wrong type.
fn check_file(path: &Path, text: &str, algorithm: &str) -> Result<(), ConfigError> {
    let fallback: fn(&str) -> Result<(), toml::de::Error> = check_file_as::<PpoConfig>;
    let check = ALGORITHMS.iter().find(|a| a.name == algorithm).map_or(fallback, |a| a.check_file);
    let result = check(text);
    match result {
        // A file overlays the defaults, so a nested table may set only some of its fields
        // (`[algo.model.vision]` with `stem = "cnn"`); the merged configuration is checked whole
        // afterwards, where a field missing from every source is still an error.
        Err(e) if e.message().starts_with("missing field") => Ok(()),
        result => result.map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            message: describe_toml_error(text, &e),
        }),
    }
}

/// "line L, column C, key `table.key`: message" for a TOML error (the key part when the
/// error is on a `key = value` line).
fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end().to_string();
    match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            match key_at(text, start) {
                Some(key) => format!("line {line}, column {column}, key `{key}`: {message}"),
                None => format!("line {line}, column {column}: {message}"),
            }
        }
        None => message,
    }
}

/// The dotted key of the `key = value` line holding byte `pos` of `text`, prefixed with the
/// enclosing `[table]`; `None` on header lines or lines without `=`.
fn key_at(text: &str, pos: usize) -> Option<String> {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    let line = &text[line_start..line_end];
    if line.trim_start().starts_with('[') {
        return None;
    }
    let key = line.split_once('=')?.0.trim();
    if key.is_empty() || key.starts_with('#') {
        return None;
    }
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .and_then(|l| l.split(']').next())
        .map(|l| l.trim_start_matches('[').trim());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

/// Where a run's settings come from, in order of increasing precedence.
#[derive(Debug, Default, Clone)]
pub struct ConfigSources<'a> {
    /// `--task`.
    pub task: Option<&'a str>,
    /// `--algo`.
    pub algorithm: Option<&'a str>,
    /// `--config FILE`.
    pub file: Option<&'a Path>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--steps`.
    pub total_steps: Option<u64>,
    /// `--set key=value`, in order.
    pub overrides: &'a [String],
}

/// Resolves the final configuration: base defaults, then the embedded preset of the task and
/// algorithm, then the file, then flags, then `--set`. Validates every field.
pub fn resolve(src: &ConfigSources) -> Result<TrainConfig, ConfigError> {
    let file = match src.file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError::File { path: path.display().to_string(), message: e.to_string() })?;
            let table = toml::from_str::<toml::Table>(&text).map_err(|e| ConfigError::File {
                path: path.display().to_string(),
                message: describe_toml_error(&text, &e),
            })?;
            Some((path, text, table))
        }
        None => None,
    };
    let overrides: Vec<toml::Table> = src.overrides.iter().map(|o| parse_override(o)).collect::<Result<_, _>>()?;
    // The task and algorithm decide which defaults apply, so find them first.
    let pick = |key: &str, flag: Option<&str>, default: &str| -> String {
        let from_set = overrides.iter().rev().find_map(|t| t.get(key).and_then(|v| v.as_str()).map(String::from));
        let from_file = file.as_ref().and_then(|(_, _, t)| t.get(key).and_then(|v| v.as_str()).map(String::from));
        from_set.or(flag.map(String::from)).or(from_file).unwrap_or_else(|| default.to_string())
    };
    let task = pick("task", src.task, "pendulum");
    let algorithm = pick("algorithm", src.algorithm, "sac");
    // A file written for one algorithm holds that algorithm's [algo] keys: say so, rather than
    // reporting its first key as unknown to the other algorithm.
    if let Some((path, text, table)) = &file
        && let Some(file_algorithm) = table.get("algorithm").and_then(|v| v.as_str())
        && file_algorithm != algorithm
    {
        let line = line_of_key(text, "algorithm").map_or(String::new(), |l| format!("line {l}: "));
        return Err(ConfigError::File {
            path: path.display().to_string(),
            message: format!(
                "{line}the file is for algorithm `{file_algorithm}`, but `{algorithm}` was asked for (--algo or \
                 --set algorithm=…); drop one of them"
            ),
        });
    }
    embodia_sim::tasks().iter().find(|t| t.name == task).ok_or_else(|| {
        ConfigError::Invalid(
            embodia_sim::SimError::UnknownTask {
                name: task.clone(),
                valid: embodia_sim::tasks().iter().map(|t| t.name.to_string()).collect(),
            }
            .to_string(),
        )
    })?;

    let mut table = base_table(&task, &algorithm)?;
    if let Some(text) = preset(&task, &algorithm) {
        merge(&mut table, toml::from_str(text).expect("embedded presets are valid TOML"));
    }
    if let Some((path, text, user)) = &file {
        check_file(path, text, &algorithm)?;
        merge(&mut table, user.clone());
    }
    for (flag, value) in [("--seed", src.seed), ("--steps", src.total_steps)] {
        let Some(value) = value else { continue };
        // TOML integers are signed 64-bit.
        let value = i64::try_from(value).map_err(|_| ConfigError::OutOfRange {
            field: flag.into(),
            value: value.to_string(),
            allowed: format!("0 ..= {}", i64::MAX),
        })?;
        let key = if flag == "--seed" { "seed" } else { "total_steps" };
        table.insert(key.into(), toml::Value::Integer(value));
    }
    for o in &overrides {
        merge(&mut table, o.clone());
    }
    table.insert("task".into(), task.clone().into());
    table.insert("algorithm".into(), algorithm.clone().into());
    // Every rule is checked once, on the merged configuration, so that neither the order of the
    // sources nor that of the `--set`s matters; an error is blamed on the last source that sets
    // the field at fault (the last `--set` for a value of the wrong type).
    let blame = |e: ConfigError| -> ConfigError {
        let field = match &e {
            ConfigError::OutOfRange { field, .. } | ConfigError::UnknownKey(field) => Some(field.as_str()),
            _ => None,
        };
        let sets = |arg: &str, field: &str| {
            arg.split_once('=').is_some_and(|(key, _)| {
                let key = key.trim();
                key == field
                    || field.starts_with(&format!("{key}."))
                    || field.starts_with(&format!("{key}["))
                    || key.starts_with(&format!("{field}."))
            })
        };
        let by_override = match field {
            Some(field) => src.overrides.iter().rev().find(|arg| sets(arg, field)),
            None => src.overrides.last(),
        };
        if let Some(arg) = by_override {
            return ConfigError::Override { arg: arg.clone(), message: e.to_string() };
        }
        match (&file, field.and_then(|f| file.as_ref().and_then(|(_, text, _)| line_of_key(text, f)))) {
            (Some((path, _, _)), Some(line)) => {
                ConfigError::File { path: path.display().to_string(), message: format!("line {line}: {e}") }
            }
            _ => e,
        }
    };
    let config = from_table(&table, &algorithm).map_err(|m| blame(ConfigError::Invalid(m)))?;
    let resolved = toml::Table::try_from(&config).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    // Keys the configuration types ignored (nested model tables accept unknown keys when
    // deserialized), named with the source that set them.
    if let Some((path, text, user)) = &file
        && let Some(key) = unknown_key(user, &resolved, "")
    {
        let e = ConfigError::UnknownKey(key.clone());
        let message = match line_of_key(text, &key) {
            Some(line) => format!("line {line}: {e}"),
            None => e.to_string(),
        };
        return Err(ConfigError::File { path: path.display().to_string(), message });
    }
    for (arg, o) in src.overrides.iter().zip(&overrides) {
        if let Some(key) = unknown_key(o, &resolved, "") {
            return Err(ConfigError::Override { arg: arg.clone(), message: ConfigError::UnknownKey(key).to_string() });
        }
    }
    if let Some((field, value)) = non_finite_value(&resolved, "") {
        let e = ConfigError::OutOfRange { field, value: value.to_string(), allowed: "a finite number".into() };
        return Err(blame(e));
    }
    config.validate().map_err(blame)?;
    Ok(config)
}

/// The first float of `table` (dotted key under `prefix`) that is NaN or infinite: no setting
/// takes one, and a NaN would otherwise surface mid-training under another name.
fn non_finite_value(table: &toml::Table, prefix: &str) -> Option<(String, f64)> {
    fn walk(value: &toml::Value, path: String) -> Option<(String, f64)> {
        match value {
            toml::Value::Float(x) if !x.is_finite() => Some((path, *x)),
            toml::Value::Table(t) => non_finite_value(t, &path),
            toml::Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| walk(v, format!("{path}[{i}]"))),
            _ => None,
        }
    }
    table
        .iter()
        .find_map(|(key, value)| walk(value, if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") }))
}

/// The first dotted key of `source` (under `prefix`) that `resolved` does not have: a key the
/// configuration types ignored. Arrays of tables are compared entry by entry.
fn unknown_key(source: &toml::Table, resolved: &toml::Table, prefix: &str) -> Option<String> {
    source.iter().find_map(|(key, value)| {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (value, resolved.get(key)) {
            (_, None) => Some(path),
            (toml::Value::Table(s), Some(toml::Value::Table(r))) => unknown_key(s, r, &path),
            (toml::Value::Array(s), Some(toml::Value::Array(r))) => {
                s.iter().zip(r).enumerate().find_map(|(i, pair)| match pair {
                    (toml::Value::Table(s), toml::Value::Table(r)) => unknown_key(s, r, &format!("{path}[{i}]")),
                    _ => None,
                })
            }
            _ => None,
        }
    })
}

/// 1-based line on which the dotted `key` (e.g. `algo.learning_rate`) is assigned in `text`.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if key_at(text, offset).as_deref() == Some(key) {
            return Some(i + 1);
        }
        offset += line.len();
    }
    None
}

/// Deserializes a merged table with the algorithm's schema.
fn from_table(table: &toml::Table, name: &str) -> Result<TrainConfig, String> {
    (algorithm(name).map_err(|e| e.to_string())?.typed)(table)
}

/// Deserializes a merged table whose `[algo]` table has the schema `A`, wrapped by `wrap`.
fn typed<A: serde::de::DeserializeOwned>(t: &toml::Table, wrap: fn(A) -> AlgoConfig) -> Result<TrainConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Typed<A> {
        task: String,
        algorithm: String,
        seed: u64,
        total_steps: u64,
        eval_episodes: usize,
        checkpoint_every: u64,
        algo: A,
        #[serde(default)]
        env: Option<TaskConfig>,
    }
    let c: Typed<A> = toml::Table::try_into(t.clone()).map_err(|e| e.message().trim_end().to_string())?;
    Ok(TrainConfig {
        task: c.task,
        algorithm: c.algorithm,
        seed: c.seed,
        total_steps: c.total_steps,
        eval_episodes: c.eval_episodes,
        checkpoint_every: c.checkpoint_every,
        algo: wrap(c.algo),
        env: c.env,
    })
}

impl TrainConfig {
    /// Checks ranges of the run settings and the algorithm's hyperparameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &str, value: &dyn std::fmt::Display, allowed: &str| {
            Err(ConfigError::OutOfRange { field: field.into(), value: value.to_string(), allowed: allowed.into() })
        };
        if self.total_steps == 0 {
            return bad("total_steps", &self.total_steps, "≥ 1");
        }
        if !(1..=MAX_EPISODES).contains(&self.eval_episodes) {
            return bad("eval_episodes", &self.eval_episodes, &format!("1 ..= {MAX_EPISODES}"));
        }
        if let AlgoConfig::Sac(c) = &self.algo
            && c.batch_size > c.buffer_size
        {
            return bad("algo.batch_size", &c.batch_size, &format!("≤ algo.buffer_size ({})", c.buffer_size));
        }
        if self.checkpoint_every == 0 {
            return bad("checkpoint_every", &self.checkpoint_every, "≥ 1");
        }
        match (&self.env, embodia_sim::task_config(&self.task)) {
            (Some(env), Some(_)) => env.validate().map_err(ConfigError::Invalid)?,
            (Some(_), None) => {
                return Err(ConfigError::Invalid(format!("task `{}` takes no [env] table", self.task)));
            }
            (None, Some(_)) => return Err(ConfigError::Invalid(format!("task `{}` needs its [env] table", self.task))),
            (None, None) => {}
        }
        match &self.algo {
            AlgoConfig::Sac(c) => c.validate(),
            AlgoConfig::Ppo(c) => c.validate(),
            AlgoConfig::Sft(c) => c.validate_fields(),
            AlgoConfig::PpoFlow(c) => {
                c.validate().and_then(|()| c.distill_during_rl.as_ref().map_or(Ok(()), |d| d.validate()))
            }
            AlgoConfig::Distill(c) => c.validate(),
            AlgoConfig::Dppo(c) => c.validate(),
            AlgoConfig::Dsrl(c) => c.validate(),
            AlgoConfig::VlaSft(c) => c.validate_fields(),
            AlgoConfig::VlaPpo(c) => c.validate(),
            AlgoConfig::VlaDsrl(c) => c.validate(),
        }
        .map_err(|e| match e {
            embodia_algos::AlgoError::Config { field, value, allowed } => {
                ConfigError::OutOfRange { field, value, allowed }
            }
            other => ConfigError::Invalid(other.to_string()),
        })
    }

    /// Settings that are valid but probably not what was meant, in words, for the command to
    /// print before it starts.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let AlgoConfig::Sac(c) = &self.algo
            && c.learning_starts >= self.total_steps
        {
            out.push(format!(
                "algo.learning_starts ({}) ≥ total_steps ({}): the run acts at random and never updates",
                c.learning_starts, self.total_steps
            ));
        }
        out
    }

    /// The configuration as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serializes")
    }

    /// Reads a resolved configuration written by [`TrainConfig::to_toml`].
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::File { path: path.display().to_string(), message: e.to_string() })?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            message: describe_toml_error(&text, &e),
        })?;
        let algorithm = table.get("algorithm").and_then(|v| v.as_str()).unwrap_or("").to_string();
        check_file(path, &text, &algorithm)?;
        let config = from_table(&table, &algorithm)
            .map_err(|message| ConfigError::File { path: path.display().to_string(), message })?;
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_preset_resolves_and_sets_what_it_says() {
        let mut checked = 0;
        for task in embodia_sim::tasks() {
            for algorithm in ALGORITHMS.iter().map(|a| a.name) {
                let Some(text) = preset(task.name, algorithm) else { continue };
                let sources = ConfigSources { task: Some(task.name), algorithm: Some(algorithm), ..Default::default() };
                let config = resolve(&sources).unwrap_or_else(|e| panic!("{} {algorithm}: {e}", task.name));
                let resolved = toml::Table::try_from(&config).unwrap();
                let preset: toml::Table = toml::from_str(text).unwrap();
                assert_sets(
                    &toml::Value::Table(resolved),
                    &toml::Value::Table(preset),
                    &format!("{} {algorithm}", task.name),
                );
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked} presets");
    }

    #[test]
    fn a_file_may_set_some_fields_of_a_nested_table() {
        let dir = std::env::temp_dir().join(format!("embodia-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("vision.toml");
        std::fs::write(&path, "[algo.model.vision]\nstem = \"cnn\"\nfilm = true\n").unwrap();
        let sources = ConfigSources {
            task: Some("lang-cubes-ee"),
            algorithm: Some("vla-sft"),
            file: Some(&path),
            ..Default::default()
        };
        let resolved = toml::Table::try_from(resolve(&sources).unwrap()).unwrap();
        let vision = &resolved["algo"]["model"]["vision"];
        assert_eq!((vision["stem"].as_str(), vision["film"].as_bool()), (Some("cnn"), Some(true)));
        // The preset's image size survives the partial table.
        assert_eq!(vision["image_size"].as_integer(), Some(48));
        // Unknown keys in the nested table are named with their line, in a file and in --set.
        std::fs::write(&path, "[algo.model.vision]\nstem = \"cnn\"\nflim = true\n").unwrap();
        let e = resolve(&sources).unwrap_err().to_string();
        assert!(e.contains("vision.toml: line 3") && e.contains("`algo.model.vision.flim`"), "{e}");
        let overrides = ["algo.model.vision.keypionts=8".to_string()];
        let sources = ConfigSources { file: None, overrides: &overrides, ..sources };
        let e = resolve(&sources).unwrap_err().to_string();
        assert!(e.contains("--set algo.model.vision.keypionts=8") && e.contains("unknown key"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Every value of `preset` is the same in `resolved`: nested tables and arrays of tables
    /// key by key (the resolved ones also hold defaults), floats as the f32 they configure.
    fn assert_sets(resolved: &toml::Value, preset: &toml::Value, path: &str) {
        let number = |v: &toml::Value| v.as_float().or(v.as_integer().map(|i| i as f64));
        match (resolved, preset) {
            (toml::Value::Table(got), toml::Value::Table(want)) => {
                for (key, value) in want {
                    let got = got.get(key).unwrap_or_else(|| panic!("{path}.{key} is not a setting"));
                    assert_sets(got, value, &format!("{path}.{key}"));
                }
            }
            (toml::Value::Array(got), toml::Value::Array(want)) if want.iter().all(|v| v.is_table()) => {
                assert_eq!(got.len(), want.len(), "{path}: {} entries, preset {}", got.len(), want.len());
                for (k, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_sets(g, w, &format!("{path}[{k}]"));
                }
            }
            (got, want) => {
                let same = got == want
                    || number(got)
                        .zip(number(want))
                        .is_some_and(|(g, w)| (g as f32 - w as f32).abs() <= 1e-6 * w.abs() as f32);
                assert!(same, "{path} = {got}, preset {want}");
            }
        }
    }
}
