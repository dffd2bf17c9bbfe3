//! Typed training configuration: embedded per-task defaults, a TOML file, and `--set` overrides,
//! merged in that order and checked field by field.

use std::path::Path;

use embodia_algos::PpoConfig;
use embodia_sim::TaskConfig;
use serde::{Deserialize, Serialize};

use crate::algorithms::{AlgoConfig, RunContext, algorithm, check_file_as};
pub use crate::error::ConfigError;

/// The most episodes one evaluation or recording may ask for.
pub const MAX_EPISODES: usize = 1_000_000;

/// Everything a training run needs; written to `runs/<name>/config.toml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainConfig {
    /// Task name from the registry (`embodia list`).
    pub task: String,
    /// Algorithm name (`embodia list`).
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

/// Default settings every run starts from, before the per-task preset.
fn base_table(task: &str, name: &str) -> Result<toml::Table, ConfigError> {
    let defaults = (algorithm(name)?.defaults)();
    let algo = toml::Table::try_from(&defaults).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let mut t = toml::Table::new();
    t.insert("task".into(), task.into());
    t.insert("algorithm".into(), name.into());
    t.insert("seed".into(), toml::Value::Integer(1));
    let total_steps = i64::try_from(defaults.default_total_steps()).unwrap_or(i64::MAX);
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

/// Checks a user's file strictly with the schema of `algorithm` (PPO's for an unknown name,
/// which is reported later), naming the line of an unknown key or a wrong type.
fn check_file(path: &Path, text: &str, algorithm: &str) -> Result<(), ConfigError> {
    let fallback: fn(&str) -> Result<(), toml::de::Error> = check_file_as::<PpoConfig>;
    let check = crate::algorithms::algorithm(algorithm).map_or(fallback, |a| a.check_file);
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
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Untyped {
        task: String,
        algorithm: String,
        seed: u64,
        total_steps: u64,
        eval_episodes: usize,
        checkpoint_every: u64,
        algo: toml::Value,
        #[serde(default)]
        env: Option<TaskConfig>,
    }
    let entry = algorithm(name).map_err(|e| e.to_string())?;
    let c: Untyped = toml::Table::try_into(table.clone()).map_err(|e| e.message().trim_end().to_string())?;
    Ok(TrainConfig {
        task: c.task,
        algorithm: c.algorithm,
        seed: c.seed,
        total_steps: c.total_steps,
        eval_episodes: c.eval_episodes,
        checkpoint_every: c.checkpoint_every,
        algo: (entry.read)(c.algo)?,
        env: c.env,
    })
}

impl TrainConfig {
    /// What the algorithm's learner is built for: task, `[env]` table, seed, algorithm name.
    pub fn context(&self) -> RunContext<'_> {
        RunContext { task: &self.task, env: self.env.as_ref(), seed: self.seed, algorithm: &self.algorithm }
    }

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
        self.algo.validate().map_err(|e| match e {
            embodia_algos::AlgoError::Config { field, value, allowed } => {
                ConfigError::OutOfRange { field, value, allowed }
            }
            other => ConfigError::Invalid(other.to_string()),
        })
    }

    /// Settings that are valid but probably not what was meant, in words, for the command to
    /// print before it starts.
    pub fn warnings(&self) -> Vec<String> {
        self.algo.warnings(self.total_steps)
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
            for algorithm in crate::algorithms::ALGORITHMS.iter().map(|a| a.name) {
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
