//! `embodia export`: the deterministic policy of a PPO, SAC or distill run as an
//! [`embodia_deploy::export::PolicySpec`] (weights, observation normalizer, action bounds and
//! chunk layout), written out by the deploy crate's generators.
//!
//! A distilled student `β·z_C + α·F(s, z, 1, 0)` with its fixed noise `z` is exported as a
//! plain MLP of the raw observation: the constant inputs (`z`, `t = 1`, `r = 0`) are folded
//! into the first layer's bias, and `α`, `β·z_C` and the action de-standardization into the
//! last layer.

use std::path::{Path, PathBuf};

use embodia_algos::distill::{FIXED_NOISE_KEY, STUDENT_KEY, STUDENT_PREFIX};
use embodia_algos::{Checkpoint, ChunkActor, RunningNormalizer};
use embodia_deploy::export::{self, ActionHead, Activation, Dense, Format, ObsNormalizer, PolicySpec, StateOffset};
use embodia_policies::{Activation as NetActivation, FlowPolicyConfig, NamedParams, OneStepPolicyConfig};

use crate::algorithms::ExportForm;
use crate::config::TrainConfig;
use crate::run::{CHECKPOINT_DIR, CONFIG_FILE, RunError};

/// Errors of `embodia export`, naming the run, file or field at fault.
#[derive(Debug, thiserror::Error)]
pub enum ExportRunError {
    /// The run directory, its config or its checkpoint could not be read.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The run's policy is not a one-step MLP.
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
    match config.algo.export(&config.algorithm, run) {
        ExportForm::Refused(message) => Err(ExportRunError::NotExportable { run: run.into(), message }),
        ExportForm::Mlp { .. } | ExportForm::OneStepStudent => Ok(()),
    }
}

/// The deterministic policy of a PPO, SAC or distill learner checkpoint `ckpt` trained with `config`;
/// `source` names it in errors and in the generated files.
pub fn policy_of_checkpoint(
    config: &TrainConfig,
    ckpt: &Checkpoint,
    source: &str,
) -> Result<PolicySpec, ExportRunError> {
    let corrupt = |message: String| ExportRunError::Corrupt { run: source.into(), message };
    let env = embodia_sim::make_with(&config.task, 1, config.env.as_ref()).map_err(RunError::from)?;
    let bounds = &env.action_spec().bounds;
    let obs_dim = env.obs_spec().vector.dim();
    let (prefix, activation, head, normalized) = match config.algo.export(&config.algorithm, source) {
        ExportForm::Mlp { layers, activation, head, normalized } => (layers, activation, head, normalized),
        ExportForm::OneStepStudent => {
            let mut spec = student_policy(ckpt, obs_dim, bounds.dim()).map_err(corrupt)?;
            spec.source = format!("{source} ({}, task {})", config.algorithm, config.task);
            spec.validate().map_err(|e| corrupt(e.to_string()))?;
            return Ok(spec);
        }
        ExportForm::Refused(message) => return Err(ExportRunError::NotExportable { run: source.into(), message }),
    };
    let normalizer = if normalized {
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
    let spec = PolicySpec {
        source: format!("{source} ({}, task {})", config.algorithm, config.task),
        obs_dim,
        action_dim: bounds.dim(),
        chunk: 1,
        normalizer,
        layers: layers(&ckpt.tensors, prefix).map_err(corrupt)?,
        activation: exported_activation(activation),
        head,
        action_low: bounds.low.clone(),
        action_high: bounds.high.clone(),
        state_offsets: Vec::new(),
    };
    spec.validate().map_err(|e| corrupt(e.to_string()))?;
    Ok(spec)
}

/// The deterministic one-step student of a distill checkpoint as a plain MLP of the raw
/// observation (see the module docs for the folding).
fn student_policy(ckpt: &Checkpoint, obs_dim: usize, action_dim: usize) -> Result<PolicySpec, String> {
    let actor = ChunkActor::from_checkpoint(ckpt, obs_dim, action_dim).map_err(|e| e.to_string())?;
    let student: OneStepPolicyConfig = ckpt.get(STUDENT_KEY).map_err(|e| e.to_string())?;
    let z: Vec<f32> = ckpt.get(FIXED_NOISE_KEY).map_err(|e| e.to_string())?;
    let (hd, cd) = (student.chunk_width, student.output_dim);
    if student.obs_dim != obs_dim || z.len() != hd || cd != actor.policy.chunk * action_dim || cd > hd {
        return Err(format!(
            "the student's layout (obs {}, noise {hd}/{}, output {cd}) does not fit the task (obs {obs_dim}, chunk {} × {action_dim})",
            student.obs_dim,
            z.len(),
            actor.policy.chunk
        ));
    }
    let mut layers = match &student.denoiser {
        Some(layout) => denoiser_student_layers(&ckpt.tensors, layout, &z, cd)?,
        None => mlp_student_layers(&ckpt.tensors, &student, &z)?,
    };
    let last = layers.last_mut().expect("at least one layer");
    if last.output != cd {
        return Err(format!("the student's last layer has {} outputs, its layout {cd}", last.output));
    }
    // raw action_j = (β·z_j + α·(x·W + b)_j)·std_j + mean_j.
    let (alpha, beta) = student.head.one_step_coefficients();
    let scale: Vec<f64> = (0..cd).map(|j| alpha * actor.action_norm.std[j % action_dim] as f64).collect();
    for (k, w) in last.weight.iter_mut().enumerate() {
        *w = (*w as f64 * scale[k % cd]) as f32;
    }
    for (j, b) in last.bias.iter_mut().enumerate() {
        let (std, mean) = (actor.action_norm.std[j % action_dim] as f64, actor.action_norm.mean[j % action_dim] as f64);
        *b = ((beta * z[j] as f64 + alpha * *b as f64) * std + mean) as f32;
    }
    Ok(PolicySpec {
        source: String::new(),
        obs_dim,
        action_dim,
        chunk: actor.policy.chunk,
        // The student standardizes without clipping.
        normalizer: Some(ObsNormalizer {
            mean: actor.obs_norm.mean.clone(),
            std: actor.obs_norm.std.clone(),
            clip: f32::MAX,
        }),
        layers,
        activation: exported_activation(student.denoiser.as_ref().map_or(student.activation, |d| d.activation)),
        head: ActionHead::Clip,
        action_low: actor.action_low.clone(),
        action_high: actor.action_high.clone(),
        state_offsets: actor
            .relative
            .iter()
            .map(|r| r.map(|s| StateOffset { column: s.column, scale: s.scale }))
            .collect(),
    })
}

/// The MLP student `F(s, z, 1, 0)` with its fixed noise `z` as an MLP of `s`: inputs
/// `[s ‖ z ‖ t = 1 ‖ r = 0]`, whose constant part joins the first bias.
fn mlp_student_layers(tensors: &NamedParams, student: &OneStepPolicyConfig, z: &[f32]) -> Result<Vec<Dense>, String> {
    let mut layers = layers(tensors, &format!("{STUDENT_PREFIX}.net.layers"))?;
    let first = &mut layers[0];
    if first.input != student.input_dim() {
        return Err(format!(
            "the student's first layer has {} inputs, its layout {}",
            first.input,
            student.input_dim()
        ));
    }
    let od = student.obs_dim;
    let mut constant = z.to_vec();
    constant.extend([1.0, 0.0]);
    fold_constant_inputs(first, od, &constant);
    Ok(layers)
}

/// A student that copies the teacher's denoiser, `F = v(s, z, 1)_C`, as an MLP of `s`:
/// the observation encoder's two layers, then the trunk, whose first layer's inputs
/// `[features ‖ action_in(z) ‖ time embedding(1)]` are constant but for the features, then
/// the executed columns of `action_out`. One activation throughout, after every layer but the last.
fn denoiser_student_layers(
    tensors: &NamedParams,
    layout: &FlowPolicyConfig,
    z: &[f32],
    cd: usize,
) -> Result<Vec<Dense>, String> {
    let prefix = format!("{STUDENT_PREFIX}.denoiser");
    let mut out = layers(tensors, &format!("{prefix}.obs_encoder.layers"))?;
    let action_in = linear(tensors, &format!("{prefix}.action_in"))?;
    let mut trunk = layers(tensors, &format!("{prefix}.trunk.layers"))?;
    let mut action_out = linear(tensors, &format!("{prefix}.action_out"))?;
    let w = layout.width;
    if action_in.input != z.len() || action_in.output != w || trunk[0].input != 3 * w || action_out.output < cd {
        return Err(format!("the copied denoiser's layers do not fit its layout (width {w}, chunk width {})", z.len()));
    }
    let mut constant: Vec<f32> = (0..w)
        .map(|o| action_in.bias[o] + z.iter().enumerate().map(|(k, zk)| zk * action_in.weight[k * w + o]).sum::<f32>())
        .collect();
    constant.extend(layout.time_embedding(1.0));
    fold_constant_inputs(&mut trunk[0], w, &constant);
    // Only the executed slice `[:C·D]` of the velocity is used.
    let hd = action_out.output;
    action_out.weight = action_out.weight.chunks_exact(hd).flat_map(|row| row[..cd].to_vec()).collect();
    action_out.bias.truncate(cd);
    action_out.output = cd;
    out.extend(trunk);
    out.push(action_out);
    Ok(out)
}

/// Removes the inputs `kept..` of `layer`, whose values are `constant`, adding their
/// contribution to the bias.
fn fold_constant_inputs(layer: &mut Dense, kept: usize, constant: &[f32]) {
    let out = layer.output;
    let row = |k: usize| &layer.weight[k * out..(k + 1) * out];
    let bias: Vec<f32> = (0..out)
        .map(|o| {
            let folded: f64 = constant.iter().enumerate().map(|(k, c)| *c as f64 * row(kept + k)[o] as f64).sum();
            (layer.bias[o] as f64 + folded) as f32
        })
        .collect();
    layer.weight.truncate(kept * out);
    layer.bias = bias;
    layer.input = kept;
}

/// One linear layer `prefix.weight`, `prefix.bias`.
fn linear(tensors: &NamedParams, prefix: &str) -> Result<Dense, String> {
    let (w, b) = (format!("{prefix}.weight"), format!("{prefix}.bias"));
    let (shape, weight) = tensors.get(&w).ok_or_else(|| format!("tensor `{w}` is missing"))?;
    let (_, bias) = tensors.get(&b).ok_or_else(|| format!("tensor `{b}` is missing"))?;
    let [input, output] = shape[..] else { return Err(format!("tensor `{w}` has shape {shape:?}, expected 2-D")) };
    Ok(Dense { input, output, weight: weight.clone(), bias: bias.clone() })
}

fn exported_activation(a: NetActivation) -> Activation {
    match a {
        NetActivation::Tanh => Activation::Tanh,
        NetActivation::Relu => Activation::Relu,
        NetActivation::Elu => Activation::Elu,
    }
}

/// The linear layers `prefix.0`, `prefix.1`, … in order.
fn layers(tensors: &NamedParams, prefix: &str) -> Result<Vec<Dense>, String> {
    let mut out = Vec::new();
    while tensors.contains_key(&format!("{prefix}.{}.weight", out.len())) {
        out.push(linear(tensors, &format!("{prefix}.{}", out.len()))?);
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
