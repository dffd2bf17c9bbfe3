//! `embodia export`: the deterministic policy of a PPO or SAC run as an
//! [`embodia_deploy::export::PolicySpec`] (weights, observation normalizer, action bounds),
//! written out by the deploy crate's generators.

use std::path::{Path, PathBuf};

use embodia_algos::{Checkpoint, RunningNormalizer};
use embodia_deploy::export::{self, ActionHead, Activation, Dense, Format, ObsNormalizer, PolicySpec};
use embodia_policies::{Activation as NetActivation, NamedParams};

use crate::config::{AlgoConfig, TrainConfig};
use crate::run::{CHECKPOINT_DIR, CONFIG_FILE, RunError};

/// Errors of `embodia export`, naming the run, file or field at fault.
#[derive(Debug, thiserror::Error)]
pub enum ExportRunError {
    /// The run directory, its config or its checkpoint could not be read.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The run's policy is not a one-step Gaussian MLP.
    #[error("{run}: {message}")]
    NotExportable {
        /// The run directory.
        run: String,
        /// Why, and what to do instead.
        message: String,
    },
    /// The checkpoint lacks a tensor or metadata entry, or its shapes are wrong.
    #[error("{run}: corrupt checkpoint: {message}")]
    Corrupt {
        /// The run directory.
        run: String,
        /// What is missing or wrong.
        message: String,
    },
    /// Writing the artifact failed.
    #[error(transparent)]
    Export(#[from] export::ExportError),
}

/// The deterministic policy of the run in `dir`.
pub fn policy_of_run(dir: &Path) -> Result<PolicySpec, ExportRunError> {
    let run = dir.display().to_string();
    if !dir.join(CONFIG_FILE).exists() {
        return Err(RunError::Io { path: run, message: "is not a run directory (no config.toml)".into() }.into());
    }
    let config = TrainConfig::from_file(&dir.join(CONFIG_FILE)).map_err(RunError::from)?;
    check_exportable(&config, &run)?;
    let ckpt = Checkpoint::load(&dir.join(CHECKPOINT_DIR))
        .map_err(|e| ExportRunError::Corrupt { run: run.clone(), message: e.to_string() })?;
    policy_of_checkpoint(&config, &ckpt, &run)
}

fn check_exportable(config: &TrainConfig, run: &str) -> Result<(), ExportRunError> {
    match &config.algo {
        AlgoConfig::Ppo(_) | AlgoConfig::Sac(_) => Ok(()),
        AlgoConfig::Sft(_) | AlgoConfig::PpoFlow(_) => Err(not_exportable(config, run)),
    }
}

fn not_exportable(config: &TrainConfig, run: &str) -> ExportRunError {
    ExportRunError::NotExportable {
        run: run.into(),
        message: format!(
            "a `{}` run has a multi-step flow policy, which cannot be exported as one forward pass; \
             distill it into a one-step policy first (`embodia distill`, not implemented yet). \
             PPO and SAC runs export directly",
            config.algorithm
        ),
    }
}

/// The deterministic policy of a PPO or SAC learner checkpoint `ckpt` trained with `config`;
/// `source` names it in errors and in the generated files.
pub fn policy_of_checkpoint(config: &TrainConfig, ckpt: &Checkpoint, source: &str) -> Result<PolicySpec, ExportRunError> {
    let corrupt = |message: String| ExportRunError::Corrupt { run: source.into(), message };
    let env = embodia_sim::make_with(&config.task, 1, config.env.as_ref()).map_err(RunError::from)?;
    let bounds = &env.action_spec().bounds;
    let obs_dim = env.obs_spec().vector.dim();
    let (prefix, activation, head, normalizer) = match &config.algo {
        AlgoConfig::Ppo(c) => {
            let normalizer = if c.normalize_obs {
                let n: RunningNormalizer = ckpt.get("normalizer").map_err(|e| corrupt(e.to_string()))?;
                if n.dim() != obs_dim {
                    return Err(corrupt(format!("normalizer has {} features, the task observes {obs_dim}", n.dim())));
                }
                Some(ObsNormalizer {
                    mean: n.mean().iter().map(|&m| m as f32).collect(),
                    std: n.var().iter().map(|&v| (v + n.eps()).sqrt() as f32).collect(),
                    clip: n.clip(),
                })
            } else {
                None
            };
            ("model.actor.mean.layers", c.activation, ActionHead::Clip, normalizer)
        }
        AlgoConfig::Sac(c) => ("actor.net.layers", c.activation, ActionHead::SquashedAffine, None),
        AlgoConfig::Sft(_) | AlgoConfig::PpoFlow(_) => return Err(not_exportable(config, source)),
    };
    let spec = PolicySpec {
        source: format!("{source} ({}, task {})", config.algorithm, config.task),
        obs_dim,
        action_dim: bounds.dim(),
        normalizer,
        layers: layers(&ckpt.tensors, prefix).map_err(corrupt)?,
        activation: match activation {
            NetActivation::Tanh => Activation::Tanh,
            NetActivation::Relu => Activation::Relu,
            NetActivation::Elu => Activation::Elu,
        },
        head,
        action_low: bounds.low.clone(),
        action_high: bounds.high.clone(),
    };
    spec.validate().map_err(|e| corrupt(e.to_string()))?;
    Ok(spec)
}

/// The linear layers `prefix.0`, `prefix.1`, … in order.
fn layers(tensors: &NamedParams, prefix: &str) -> Result<Vec<Dense>, String> {
    let mut out = Vec::new();
    loop {
        let (w, b) = (format!("{prefix}.{}.weight", out.len()), format!("{prefix}.{}.bias", out.len()));
        let Some((shape, weight)) = tensors.get(&w) else { break };
        let (_, bias) = tensors.get(&b).ok_or_else(|| format!("tensor `{b}` is missing"))?;
        let [input, output] = shape[..] else { return Err(format!("tensor `{w}` has shape {shape:?}, expected 2-D")) };
        out.push(Dense { input, output, weight: weight.clone(), bias: bias.clone() });
    }
    if out.is_empty() {
        return Err(format!("no tensor `{prefix}.0.weight`"));
    }
    Ok(out)
}

/// `embodia export`: writes the run's policy in `format` into `out`; returns the files written.
pub fn export_run(dir: &Path, format: Format, out: &Path) -> Result<Vec<PathBuf>, ExportRunError> {
    let spec = policy_of_run(dir)?;
    Ok(export::write_export(&spec, format, out)?)
}
