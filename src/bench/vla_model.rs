//! `embodia bench vla-model`: what the VLA costs on the selected device (`--device`), per
//! preset and batch size: the forward latency of the prefix (encoders and shared transformer)
//! and of a whole deterministic action chunk (prefix + K expert steps), and the latency of one
//! SFT gradient step (flow-matching loss, backward, Adam with gradient clipping). These are the
//! costs that decide how large a VLA a run can afford, and what a GPU changes.

use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor};
use embodia_algos::Adam;
use embodia_policies::vla::{VlaConfig, VlaError, VlaInput, VlaModel};
use serde::Serialize;

/// Names of the presets [`preset`] knows.
pub const PRESETS: [&str; 3] = ["tiny", "small", "base"];

/// Proprioception and action width of the benchmarked models (a 7-DoF arm's joints).
const ARM_DIM: usize = 7;

/// The preset called `name` for a 7-D arm, or `None`.
pub fn preset(name: &str) -> Option<VlaConfig> {
    match name {
        "tiny" => Some(VlaConfig::tiny(ARM_DIM, ARM_DIM)),
        "small" => Some(VlaConfig::small(ARM_DIM, ARM_DIM)),
        "base" => Some(VlaConfig::base(ARM_DIM, ARM_DIM)),
        _ => None,
    }
}

/// What `embodia bench vla-model` measures.
#[derive(Debug, Clone)]
pub struct VlaModelBenchSpec {
    /// Presets, from [`PRESETS`].
    pub presets: Vec<String>,
    /// Batch sizes.
    pub batches: Vec<usize>,
    /// Camera views per sample.
    pub views: usize,
    /// Timed calls per figure (after warm-up calls, which on a GPU include kernel compilation).
    pub reps: usize,
    /// Also time SFT gradient steps.
    pub train: bool,
}

/// Latencies of one preset at one batch size, milliseconds: median and minimum of the timed
/// calls. Every call ends by reading its result back to the host, so device work is included.
#[derive(Debug, Clone, Serialize)]
pub struct VlaModelTiming {
    /// Preset name.
    pub preset: String,
    /// Parameters.
    pub parameters: usize,
    /// Batch size.
    pub batch: usize,
    /// Camera views per sample.
    pub views: usize,
    /// Image side, pixels.
    pub image_size: usize,
    /// Prefix encoding, median / min ms.
    pub prefix_ms: (f64, f64),
    /// Whole deterministic chunk (prefix + K expert steps), median / min ms.
    pub chunk_ms: (f64, f64),
    /// SFT gradient step at this batch size, median / min ms (`None` unless asked for).
    pub train_step_ms: Option<(f64, f64)>,
}

/// Median and minimum of `reps` timed calls after two warm-up calls, milliseconds.
fn time(reps: usize, mut call: impl FnMut() -> Result<(), VlaError>) -> Result<(f64, f64), VlaError> {
    call()?;
    call()?;
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        call()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], ms[0]))
}

/// A batch of `batch` samples with deterministic images, alternating instructions and constant
/// proprioception.
fn input(model: &VlaModel, batch: usize, views: usize) -> Result<VlaInput, VlaError> {
    let s = model.config().vision.image_size;
    let images = (0..batch * views * s * s * 3).map(|i| (i * 31 % 251) as u8).collect();
    let texts: Vec<&str> =
        (0..batch).map(|i| if i % 2 == 0 { "pick up the red cube" } else { "push the blue cube left" }).collect();
    let proprio = vec![0.1; batch * model.config().proprio_dim];
    VlaInput::new(&model.tokenizer(), batch, views, s, s, images, &texts, proprio)
}

/// Times every preset × batch of `spec` on `device` (a plain device; training runs on its
/// autodiff twin).
pub fn vla_model_bench(spec: &VlaModelBenchSpec, device: &Device) -> Result<Vec<VlaModelTiming>, VlaError> {
    let mut out = Vec::new();
    for name in &spec.presets {
        let config = preset(name).ok_or_else(|| VlaError::Input {
            field: "presets",
            message: format!("unknown preset `{name}`; valid presets: {}", PRESETS.join(", ")),
        })?;
        let model = config.init(device)?;
        let trainable = if spec.train {
            let autodiff = device.clone().autodiff();
            Some((config.init(&autodiff)?, autodiff))
        } else {
            None
        };
        for &batch in &spec.batches {
            let host = input(&model, batch, spec.views)?;
            let data = model.prepare(&host, device)?;
            let prefix_ms = time(spec.reps, || {
                let _ = model.encode(&data).pooled.into_data();
                Ok(())
            })?;
            let chunk_ms = time(spec.reps, || {
                let _ =
                    model.predict(&data, Tensor::zeros([batch, config.horizon, config.action_dim], device)).into_data();
                Ok(())
            })?;
            let train_step_ms = match &trainable {
                Some((model, autodiff)) => Some(train_step_ms(model.clone(), &host, autodiff, spec.reps)?),
                None => None,
            };
            out.push(VlaModelTiming {
                preset: name.clone(),
                parameters: model.num_params(),
                batch,
                views: spec.views,
                image_size: config.vision.image_size,
                prefix_ms,
                chunk_ms,
                train_step_ms,
            });
        }
    }
    Ok(out)
}

/// Median / min ms of one SFT gradient step on `host`'s batch: flow-matching loss against
/// random target chunks, backward, clipped Adam (as `vla-sft` takes them; the loss read back
/// to the host ends each step).
fn train_step_ms(mut model: VlaModel, host: &VlaInput, device: &Device, reps: usize) -> Result<(f64, f64), VlaError> {
    let c = model.config().clone();
    let shape = [host.batch, c.horizon, c.action_dim];
    let data = model.prepare(host, device)?;
    let actions = Tensor::<3>::random(shape, Distribution::Normal(0.0, 1.0), device);
    let noise = Tensor::<3>::random(shape, Distribution::Normal(0.0, 1.0), device);
    let t = Tensor::<2>::random([host.batch, 1], Distribution::Uniform(0.0, 1.0), device);
    let mut adam = Adam::new(0.9, 0.95, 1e-8);
    time(reps, || {
        let loss = model.flow_matching_loss(&data, actions.clone(), noise.clone(), t.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let (next, _) = adam.step(1e-4, model.clone(), &grads, Some(1.0));
        model = next;
        Ok(())
    })
}
