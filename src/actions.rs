//! Raw observations as text in, raw actions as text out: `embodia act` (a run's policy, as
//! `embodia eval` takes its deterministic actions: the reference for exported artifacts) and
//! `embodia run-onnx` (an exported `model.onnx` through tract or onnxruntime).
//!
//! Input: one observation per line, values separated by commas and/or whitespace, optionally in
//! `[...]` (a JSON array per line), each a finite f32; blank lines and lines starting with `#`
//! are skipped.
//! Output: one action per line, comma-separated, each value printed so that it parses back to
//! the same f32.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use embodia_deploy::onnx_runtime::{self, OnnxError, Runtime};

use crate::run::{RunError, load_learner};

/// Errors of `embodia act` and `embodia run-onnx`, naming the file and line at fault.
#[derive(Debug, thiserror::Error)]
pub enum ActionsError {
    /// The observation text could not be parsed.
    #[error("{source_name} line {line}: {message}")]
    Observation {
        /// The file (or `stdin`).
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Loading or running the model failed.
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    /// The run could not be loaded.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The run's policy failed.
    #[error("{run}: {message}")]
    Policy {
        /// The run directory.
        run: String,
        /// The learner's message.
        message: String,
    },
}

/// The runtime named `name` (`tract` or `ort`); ort loads onnxruntime from `ort_library`.
pub fn runtime(name: &str, ort_library: Option<PathBuf>) -> Result<Runtime, OnnxError> {
    match name {
        "tract" => Ok(Runtime::Tract),
        "ort" => match ort_library {
            Some(library) => Ok(Runtime::Ort { library }),
            None => Err(OnnxError::Library(
                "set ORT_DYLIB_PATH (or --ort-lib) to libonnxruntime.so, e.g. the one in the PyPI onnxruntime \
                 wheel's onnxruntime/capi/"
                    .into(),
            )),
        },
        other => Err(OnnxError::Input(format!("unknown runtime `{other}`; use tract or ort"))),
    }
}

/// Parses `text` (read from `source_name`) into observations `[rows, obs_dim]`, row-major.
pub fn parse_observations(text: &str, source_name: &str, obs_dim: usize) -> Result<Vec<f32>, ActionsError> {
    let mut obs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let error =
            |message: String| ActionsError::Observation { source_name: source_name.into(), line: i + 1, message };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')).unwrap_or(line);
        let before = obs.len();
        for token in line.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()) {
            let v: f32 = token.parse().map_err(|_| error(format!("`{token}` is not a number")))?;
            // `1e39` parses to infinity in f32: out of range, like NaN, for every policy.
            if !v.is_finite() {
                return Err(error(format!("`{token}` is not a finite f32 (allowed: |x| ≤ {:e})", f32::MAX)));
            }
            obs.push(v);
        }
        if obs.len() - before != obs_dim {
            return Err(error(format!("{} values, the model takes {obs_dim}", obs.len() - before)));
        }
    }
    Ok(obs)
}

/// Runs the observations in `text` through the model at `model` in `runtime`, all rows as one
/// batch; returns the actions as text, one row per line.
pub fn run_onnx(model: &Path, runtime: &Runtime, text: &str, source_name: &str) -> Result<String, ActionsError> {
    let mut policy = onnx_runtime::load(model, runtime)?;
    let obs = parse_observations(text, source_name, policy.obs_dim())?;
    let mut actions = vec![0.0; obs.len() / policy.obs_dim() * policy.output_dim()];
    if !obs.is_empty() {
        policy.run(&obs, &mut actions)?;
    }
    Ok(format_actions(&actions, policy.output_dim()))
}

/// The deterministic actions of the run in `run` for the observations in `text`, all rows as
/// one batch, as text, one row per line.
pub fn act(run: &Path, text: &str, source_name: &str) -> Result<String, ActionsError> {
    let (config, learner) = load_learner(run)?;
    let env = embodia_sim::make_with(&config.task, 1, config.env.as_ref()).map_err(RunError::from)?;
    // A distilled student acts a whole chunk per observation: one row of `chunk · action_dim`.
    let (obs_dim, width) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim() * learner.chunk_len());
    let obs = parse_observations(text, source_name, obs_dim)?;
    let mut actions = vec![0.0; obs.len() / obs_dim * width];
    if !obs.is_empty() {
        learner
            .act(&obs, &mut actions, None)
            .map_err(|e| ActionsError::Policy { run: run.display().to_string(), message: e.to_string() })?;
    }
    Ok(format_actions(&actions, width))
}

/// `actions` (`[rows, action_dim]`) as text, one comma-separated row per line.
fn format_actions(actions: &[f32], action_dim: usize) -> String {
    let mut out = String::new();
    for row in actions.chunks(action_dim) {
        let values: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
        let _ = writeln!(out, "{}", values.join(","));
    }
    out
}
