//! Diffusion action-chunk policy (Diffusion Policy / DPPO at small scale): DDPM training with
//! ε-prediction, DDIM sampling with `K` steps, and the per-denoising-step Gaussians DPPO
//! fine-tunes ( `irom-lab/dppo` `model/diffusion/diffusion.py`,
//! `diffusion_vpg.py`).
//!
//! Conventions (DDPM): `T` training steps with noise schedule `β_t`, `α_t = 1 − β_t`,
//! `ᾱ_t = Π_{s≤t} α_s` (`t = 0..T−1`); the forward process is
//! `x_t = √ᾱ_t·a + √(1 − ᾱ_t)·ε` and the network predicts `ε` from `(x_t, t | s)`.
//! Sampling runs DDIM on the `K` timesteps `τ_0 > τ_1 > … > τ_{K−1}` (by default DPPO's
//! `ddim_t` reversed, `τ_k = (K − 1 − k)·T/K`; see [`TimestepSpacing`]), from
//! `x_{τ_0} ~ N(0, I)`; step `k` maps `x_k` to `x_{k+1}`:
//!
//! ```text
//! x̂0 = (x_k − √(1 − ᾱ_τ)·ε̂) / √ᾱ_τ
//! σ_k = η·√((1 − ᾱ_prev)/(1 − ᾱ_τ))·√(1 − ᾱ_τ/ᾱ_prev)
//! μ_k = √ᾱ_prev·x̂0 + √(1 − ᾱ_prev − σ_k²)·ε̂
//! x_{k+1} = μ_k + max(σ_k, σ_min)·ξ
//! ```
//!
//! with `ᾱ_prev = ᾱ_{τ_{k+1}}`, and `ᾱ_prev = 1` after the last step (so `x_K = x̂0`, plus noise
//! when stochastic). `η = 0` is deterministic DDIM; `η = 1` with `K = T` is exactly DDPM's
//! ancestral sampler (posterior mean and variance `β̃_t`), which is how DDPM sampling is
//! offered here (one code path). `σ_min` is DPPO's floor of the exploration std
//! (`min_sampling_denoising_std`, 0.1 when fine-tuning; 0 for plain sampling).
//!
//! Shapes as for the flow policy: chunks flattened row-major `[batch, H·D]` (normalized action
//! units), the first `C·D` columns executed; chains time-major `[K + 1, batch, H·D]`.
//!
//! Where we deliberately differ from the reference: the ε-network is the flow policy's MLP
//! (observation encoder, chunk projection, sinusoidal embedding of `t/T`), not a U-Net or
//! DPPO's `DiffusionMLP` with a residual trunk; the predicted `x̂0` is not clipped (DPPO clips it
//! to ±1 in min-max normalized units; ours are standardized, so ±1 would cut the data); there
//! is no value head (DPPO's critic is a separate network on observations).

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::distributions::LOG_SQRT_2PI;
use crate::flow::{FlowPolicyConfig, InvalidConfig};
use crate::mlp::{Activation, Mlp, MlpConfig};

/// Noise schedule `β_t` of the forward process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BetaSchedule {
    /// Nichol & Dhariwal's cosine schedule, `ᾱ(t) ∝ cos²(((t/T) + s)/(1 + s)·π/2)`, `s = 0.008`,
    /// `β` capped at 0.999 (DPPO's `cosine_beta_schedule`).
    #[default]
    Cosine,
    /// `β` linear from 1e-4 to 0.02 over `T = 1000`, rescaled by `1000/T` (DDPM's schedule).
    Linear,
}

/// Which `K` of the `T` training timesteps DDIM visits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimestepSpacing {
    /// `τ_k = T − 1 − k·T/K`: starts at the last (pure-noise) timestep, where `x_0 ~ N(0, I)`
    /// is what training saw ("trailing" in diffusers). Needs the `x̂0` clip: `√ᾱ_{T−1}` of the
    /// cosine schedule is ~0.015.
    Trailing,
    /// `τ_k = (K − 1 − k)·T/K`: ends at timestep 0 (DPPO's `ddim_t`; "leading"), so with few
    /// steps the first step receives pure noise as if it were `x_{τ_0}` with `ᾱ_{τ_0}` ≈ 0.09.
    #[default]
    Leading,
}

/// Settings of the diffusion process and its sampler (`algo.diffusion` in an `sft` run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiffusionConfig {
    /// Training (DDPM) steps `T`. Default 100 (DPPO's pixel and RL-100's setting).
    pub train_steps: usize,
    /// Noise schedule. Default cosine.
    pub schedule: BetaSchedule,
    /// DDIM sampling steps `K` (≤ `T`, and `T` a multiple of `K`). Default 10 (RL-100's 10
    /// DDIM steps of `T = 100`; DPPO's pixel setting is 5, its state setting 20 DDPM steps).
    /// Measured on pick-cube (20 demonstrations, 8,000 gradient steps): 5 steps 0% success,
    /// 10 steps 6%.
    pub sampling_steps: usize,
    /// Clip of the predicted clean chunk `x̂0` to `±denoised_clip` (standardized action units)
    /// in every sampling step, with `ε̂` recomputed from the clipped `x̂0` (DPPO
    /// `denoised_clip_value`, Diffusion Policy's `clip_sample`); 0 disables it. Default 3.
    pub denoised_clip: f64,
    /// Which timesteps DDIM visits. Default leading, DPPO's (see [`TimestepSpacing`]).
    pub spacing: TimestepSpacing,
}

impl Default for DiffusionConfig {
    fn default() -> Self {
        Self {
            train_steps: 100,
            schedule: BetaSchedule::Cosine,
            sampling_steps: 10,
            denoised_clip: 3.0,
            spacing: TimestepSpacing::Leading,
        }
    }
}

impl DiffusionConfig {
    /// Checks the settings; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let bad = |field: &str, value: String, allowed: &str| {
            Err(InvalidConfig { field: field.into(), value, allowed: allowed.into() })
        };
        if self.train_steps < 1 {
            return bad("train_steps", self.train_steps.to_string(), "≥ 1");
        }
        if self.sampling_steps == 0
            || self.sampling_steps > self.train_steps
            || !self.train_steps.is_multiple_of(self.sampling_steps)
        {
            return bad(
                "sampling_steps",
                self.sampling_steps.to_string(),
                &format!("1 ≤ sampling_steps ≤ train_steps ({}) and a divisor of it", self.train_steps),
            );
        }
        if !(self.denoised_clip >= 0.0 && self.denoised_clip.is_finite()) {
            return bad("denoised_clip", self.denoised_clip.to_string(), "≥ 0 (0: no clip)");
        }
        Ok(())
    }

    /// `β_t`, `t = 0..T−1`, `[T]`.
    pub fn betas(&self) -> Vec<f64> {
        let t = self.train_steps;
        match self.schedule {
            BetaSchedule::Cosine => {
                let s = 0.008;
                let f = |i: usize| ((i as f64 / t as f64 + s) / (1.0 + s) * std::f64::consts::FRAC_PI_2).cos().powi(2);
                (0..t).map(|i| (1.0 - f(i + 1) / f(i)).clamp(0.0, 0.999)).collect()
            }
            BetaSchedule::Linear => {
                let scale = 1000.0 / t as f64;
                let (lo, hi) = (1e-4 * scale, 0.02 * scale);
                (0..t)
                    .map(|i| if t == 1 { lo } else { lo + (hi - lo) * i as f64 / (t - 1) as f64 })
                    .map(|b| b.min(0.999))
                    .collect()
            }
        }
    }

    /// `ᾱ_t = Π_{s≤t}(1 − β_s)`, `[T]`.
    pub fn alphas_cumprod(&self) -> Vec<f64> {
        let mut product = 1.0;
        self.betas()
            .into_iter()
            .map(|b| {
                product *= 1.0 - b;
                product
            })
            .collect()
    }

    /// DDIM timesteps `τ_k`, `k = 0..K`, noisiest first (see [`TimestepSpacing`]), `[K]`.
    pub fn sampling_timesteps(&self) -> Vec<usize> {
        let (t, k) = (self.train_steps, self.sampling_steps);
        match self.spacing {
            TimestepSpacing::Trailing => (0..k).map(|i| t - 1 - i * (t / k)).collect(),
            TimestepSpacing::Leading => (0..k).map(|i| (k - 1 - i) * (t / k)).collect(),
        }
    }
}

/// Coefficients of DDIM step `k` from `x_k` to `x_{k+1}` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DdimCoefficients {
    /// Training timestep `τ_k` the network is queried at.
    pub timestep: usize,
    /// `ᾱ_{τ_k}`.
    pub alpha_bar: f64,
    /// `ᾱ_{τ_{k+1}}`, 1 after the last step.
    pub alpha_bar_prev: f64,
    /// `σ_k` before the floor `σ_min`.
    pub sigma: f64,
}

impl DdimCoefficients {
    /// `μ = c_x·x + c_ε·ε̂`: the DDIM mean as a combination of `x_k` and the predicted noise.
    /// Returns `(c_x, c_ε)` = `(√(ᾱ_prev/ᾱ), √(1 − ᾱ_prev − σ²) − √(ᾱ_prev/ᾱ)·√(1 − ᾱ))`.
    pub fn mean_weights(&self) -> (f64, f64) {
        let ratio = (self.alpha_bar_prev / self.alpha_bar).sqrt();
        let direction = (1.0 - self.alpha_bar_prev - self.sigma * self.sigma).max(0.0).sqrt();
        (ratio, direction - ratio * (1.0 - self.alpha_bar).sqrt())
    }
}

/// One denoising step `x_{k+1} ~ N(mean, std²)` of the DDIM sampler.
#[derive(Debug, Clone)]
pub struct DenoiseStep {
    /// `μ_k`, `[batch, H·D]`.
    pub mean: Tensor<2>,
    /// `max(σ_k, σ_min)`: one std for every element of the step (0: deterministic).
    pub std: f64,
}

/// A sampled chunk with what DPPO stores per environment step.
#[derive(Debug, Clone)]
pub struct DiffusionSample {
    /// The final chunk `x_K`, `[batch, H·D]`, normalized action units.
    pub actions: Tensor<2>,
    /// `x_0 … x_K`, `[K + 1, batch, H·D]`.
    pub chains: Tensor<3>,
    /// Log-probabilities of the last `K′` (fine-tuned) steps, `[batch, K′]`: per step the mean
    /// over the executed slice `[C·D]` of `clamp(log N(x_{k+1}; μ_k, σ_k), lo, hi)` (see
    /// [`DiffusionPolicy::step_log_prob`]); `[batch, 0]` when `K′ = 0`.
    pub log_prob: Tensor<2>,
}

/// How the denoising steps of one sample are drawn and scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenoiseSettings {
    /// DDIM `η` (0: deterministic DDIM; 1 with `K = T`: DDPM).
    pub eta: f64,
    /// Floor `σ_min` of every step's std (DPPO `min_sampling_denoising_std`; 0: none).
    pub min_std: f64,
    /// Floor of the std in the log-probabilities (DPPO `min_logprob_denoising_std`).
    pub min_log_prob_std: f64,
    /// Per-element clamp of the log-densities, `(lo, hi)` (DPPO: (−5, 2)).
    pub log_prob_clamp: (f64, f64),
    /// Fine-tuned steps `K′`: the last `K′` of the `K` steps carry log-probabilities.
    pub ft_steps: usize,
}

impl DenoiseSettings {
    /// Deterministic DDIM (`η = 0`, no floor, no log-probabilities): evaluation sampling.
    pub fn deterministic() -> Self {
        Self { eta: 0.0, min_std: 0.0, min_log_prob_std: 0.0, log_prob_clamp: (-5.0, 2.0), ft_steps: 0 }
    }
}

/// Noise-prediction network `ε_θ(x_t, t | s)` over flattened action chunks, with the
/// diffusion schedule it was trained with.
#[derive(Module, Debug)]
pub struct DiffusionPolicy {
    obs_encoder: Mlp,
    action_in: Linear,
    trunk: Mlp,
    noise_out: Linear,
    #[module(skip)]
    time_scaling: Vec<f32>,
    #[module(skip)]
    activation: Activation,
    #[module(skip)]
    chunk: usize,
    #[module(skip)]
    action_dim: usize,
    #[module(skip)]
    train_steps: usize,
    #[module(skip)]
    alphas_cumprod: Vec<f64>,
    #[module(skip)]
    sampling_timesteps: Vec<usize>,
    #[module(skip)]
    denoised_clip: f64,
}

impl DiffusionPolicy {
    /// Builds the network on `device` with the chunk layout of `layout` (`obs_dim`,
    /// `action_dim`, `horizon`, `chunk`, `width`, `hidden`, `activation`; its flow-only fields
    /// are unused) and the process of `diffusion`. Both must be valid.
    pub fn new(layout: &FlowPolicyConfig, diffusion: &DiffusionConfig, device: &Device) -> Self {
        let feat = *layout.hidden.last().expect("validated: hidden is non-empty");
        let hd = layout.chunk_width();
        let trunk_hidden = &layout.hidden[..layout.hidden.len() - 1];
        let width = layout.width;
        Self {
            obs_encoder: MlpConfig::new(layout.obs_dim, &[width], width, layout.activation).init(device),
            action_in: LinearConfig::new(hd, width).init(device),
            trunk: MlpConfig::new(3 * width, trunk_hidden, feat, layout.activation).init(device),
            noise_out: LinearConfig::new(feat, hd).init(device),
            time_scaling: crate::flow::time_scaling(width),
            activation: layout.activation,
            chunk: layout.chunk,
            action_dim: layout.action_dim,
            train_steps: diffusion.train_steps,
            alphas_cumprod: diffusion.alphas_cumprod(),
            sampling_timesteps: diffusion.sampling_timesteps(),
            denoised_clip: diffusion.denoised_clip,
        }
    }

    /// DDIM sampling steps `K`.
    pub fn sampling_steps(&self) -> usize {
        self.sampling_timesteps.len()
    }

    /// Observation features, computed once per environment step: `[batch, obs_dim] → [batch, width]`.
    pub fn encode(&self, obs: Tensor<2>) -> Tensor<2> {
        self.activation.apply(self.obs_encoder.forward(obs))
    }

    /// Predicted noise `ε̂`, `[batch, H·D]`, at `x` (`[batch, H·D]`) and training timesteps
    /// given as `t/T` per row (`[batch, 1]`).
    pub fn predict_noise(&self, obs_features: Tensor<2>, x: Tensor<2>, t: Tensor<2>) -> Tensor<2> {
        let omega =
            Tensor::<1>::from_data(TensorData::new(self.time_scaling.clone(), [self.time_scaling.len()]), &t.device())
                .unsqueeze_dim::<2>(0);
        let phase = t * omega;
        let time = Tensor::cat(vec![phase.clone().sin(), phase.cos()], 1);
        let input = Tensor::cat(vec![obs_features, self.action_in.forward(x), time], 1);
        self.noise_out.forward(self.activation.apply(self.trunk.forward(input)))
    }

    /// DDPM ε-prediction loss `mean((ε_θ(√ᾱ_t·a + √(1 − ᾱ_t)·ε, t | s) − ε)²)` over batch,
    /// horizon and dimensions. `obs`: `[batch, obs_dim]` (standardized); `actions`, `noise`:
    /// `[batch, H·D]`; `timesteps`: one `t ∈ 0..T` per row (out-of-range values are clamped to
    /// `T − 1`); returns `[1]`.
    pub fn loss(&self, obs: Tensor<2>, actions: Tensor<2>, noise: Tensor<2>, timesteps: &[usize]) -> Tensor<1> {
        let device = actions.device();
        let b = timesteps.len();
        let column = |f: &dyn Fn(usize) -> f32| {
            let v: Vec<f32> = timesteps.iter().map(|&t| f(t.min(self.train_steps - 1))).collect();
            Tensor::<2>::from_data(TensorData::new(v, [b, 1]), &device)
        };
        let signal = column(&|t| self.alphas_cumprod[t].sqrt() as f32);
        let sigma = column(&|t| (1.0 - self.alphas_cumprod[t]).sqrt() as f32);
        let t = column(&|t| t as f32 / self.train_steps as f32);
        let x_t = actions * signal + noise.clone() * sigma;
        (self.predict_noise(self.encode(obs), x_t, t) - noise).square().mean()
    }

    /// DDIM coefficients of step `k < K` with noise `η`.
    pub fn coefficients(&self, k: usize, eta: f64) -> DdimCoefficients {
        let k = k.min(self.sampling_steps() - 1);
        let timestep = self.sampling_timesteps[k];
        let alpha_bar = self.alphas_cumprod[timestep];
        let alpha_bar_prev = match self.sampling_timesteps.get(k + 1) {
            Some(&prev) => self.alphas_cumprod[prev],
            None => 1.0,
        };
        let sigma = eta
            * ((1.0 - alpha_bar_prev) / (1.0 - alpha_bar)).sqrt()
            * (1.0 - alpha_bar / alpha_bar_prev).max(0.0).sqrt();
        DdimCoefficients { timestep, alpha_bar, alpha_bar_prev, sigma }
    }

    /// DDIM step `k` from `x` (`[batch, H·D]`): mean `μ_k` and std `max(σ_k, settings.min_std)`.
    /// With `denoised_clip > 0`, `x̂0` is clipped and `ε̂` recomputed from it first.
    pub fn step(&self, obs_features: Tensor<2>, x: Tensor<2>, k: usize, settings: &DenoiseSettings) -> DenoiseStep {
        let c = self.coefficients(k, settings.eta);
        let batch = x.dims()[0];
        let t = Tensor::<2>::full([batch, 1], c.timestep as f64 / self.train_steps as f64, &x.device());
        let eps = self.predict_noise(obs_features, x.clone(), t);
        let std = c.sigma.max(settings.min_std);
        if self.denoised_clip > 0.0 {
            let (signal, noise) = (c.alpha_bar.sqrt(), (1.0 - c.alpha_bar).sqrt());
            let x0 =
                (x.clone() - eps.mul_scalar(noise)).div_scalar(signal).clamp(-self.denoised_clip, self.denoised_clip);
            let eps = (x - x0.clone().mul_scalar(signal)).div_scalar(noise);
            let direction = (1.0 - c.alpha_bar_prev - c.sigma * c.sigma).max(0.0).sqrt();
            return DenoiseStep { mean: x0.mul_scalar(c.alpha_bar_prev.sqrt()) + eps.mul_scalar(direction), std };
        }
        let (cx, ce) = c.mean_weights();
        DenoiseStep { mean: x.mul_scalar(cx) + eps.mul_scalar(ce), std }
    }

    /// Per-row log-probability of step `k` taking `x_{k+1} = next` from `mean`: the mean over
    /// the executed slice `[C·D]` of `clamp(log N(next; mean, max(σ_k, min_log_prob_std)), lo, hi)`
    /// (DPPO `get_logprobs`), `[batch, 1]`. A step with std 0 scores 0.
    pub fn step_log_prob(&self, next: Tensor<2>, mean: Tensor<2>, k: usize, settings: &DenoiseSettings) -> Tensor<2> {
        let cd = self.chunk * self.action_dim;
        let std = self.coefficients(k, settings.eta).sigma.max(settings.min_std).max(settings.min_log_prob_std);
        let batch = next.dims()[0];
        if std == 0.0 {
            return Tensor::zeros([batch, 1], &next.device());
        }
        let z = (next.narrow(1, 0, cd) - mean.narrow(1, 0, cd)).div_scalar(std);
        let (lo, hi) = settings.log_prob_clamp;
        z.square().mul_scalar(-0.5).sub_scalar(std.ln() + LOG_SQRT_2PI).clamp(lo, hi).mean_dim(1)
    }

    /// Draws a chunk: `x_0 = noise[0]`, then `x_{k+1} = μ_k + std_k·noise[k + 1]` (the caller
    /// clips the noise, DPPO: ±3). Steps `k < K − K′` use `base` when given (DPPO's frozen
    /// pre-trained network), the last `K′` use `self` and carry log-probabilities.
    /// `obs`: `[batch, obs_dim]` standardized; `noise`: `[K + 1, batch, H·D]`.
    pub fn sample(
        &self,
        obs: Tensor<2>,
        noise: Tensor<3>,
        settings: &DenoiseSettings,
        base: Option<&DiffusionPolicy>,
    ) -> DiffusionSample {
        let [k1, batch, width] = noise.dims();
        let k = k1 - 1;
        let ft = settings.ft_steps.min(k);
        let features = self.encode(obs.clone());
        let base_features = base.map(|b| b.encode(obs));
        let noise_at = |i: usize| noise.clone().narrow(0, i, 1).reshape([batch, width]);
        let mut x = noise_at(0);
        let mut chain = Vec::with_capacity(k1);
        chain.push(x.clone());
        let mut log_probs = Vec::with_capacity(ft);
        for i in 0..k {
            let fine_tuned = i >= k - ft;
            let step = match (&base, &base_features) {
                (Some(b), Some(f)) if !fine_tuned => b.step(f.clone(), x, i, settings),
                _ => self.step(features.clone(), x, i, settings),
            };
            x = if step.std > 0.0 {
                step.mean.clone() + noise_at(i + 1).mul_scalar(step.std)
            } else {
                step.mean.clone()
            };
            if fine_tuned {
                log_probs.push(self.step_log_prob(x.clone(), step.mean, i, settings));
            }
            chain.push(x.clone());
        }
        let log_prob = match log_probs.is_empty() {
            true => Tensor::zeros([batch, 0], &x.device()),
            false => Tensor::cat(log_probs, 1),
        };
        DiffusionSample { actions: x, chains: Tensor::stack(chain, 0), log_prob }
    }

    /// Recomputes the log-probabilities of the last `K′` steps from stored `chains`
    /// (`[K + 1, batch, H·D]`) under the current parameters, `[batch, K′]`: the same
    /// computations as [`DiffusionPolicy::sample`], so unchanged parameters give the rollout's
    /// values exactly. Never resamples. The `K′` steps are evaluated in one batched pass.
    pub fn evaluate_chain(&self, obs: Tensor<2>, chains: Tensor<3>, settings: &DenoiseSettings) -> Tensor<2> {
        let [k1, batch, width] = chains.dims();
        let k = k1 - 1;
        let ft = settings.ft_steps.min(k);
        let device = chains.device();
        if ft == 0 {
            return Tensor::zeros([batch, 0], &device);
        }
        let first = k - ft;
        let features = self.encode(obs);
        let mut log_probs = Vec::with_capacity(ft);
        for i in first..k {
            let x = chains.clone().narrow(0, i, 1).reshape([batch, width]);
            let next = chains.clone().narrow(0, i + 1, 1).reshape([batch, width]);
            let step = self.step(features.clone(), x, i, settings);
            log_probs.push(self.step_log_prob(next, step.mean, i, settings));
        }
        Tensor::cat(log_probs, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> FlowPolicyConfig {
        FlowPolicyConfig {
            obs_dim: 3,
            action_dim: 2,
            horizon: 4,
            chunk: 2,
            width: 16,
            hidden: vec![32, 16],
            ..FlowPolicyConfig::default()
        }
    }

    fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    fn inputs(batch: usize, steps: usize, device: &Device) -> (Tensor<2>, Tensor<3>) {
        let obs = Tensor::<2>::from_data(
            TensorData::new((0..batch * 3).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<_>>(), [batch, 3]),
            device,
        );
        let n = (steps + 1) * batch * 8;
        let noise = Tensor::<3>::from_data(
            TensorData::new(
                (0..n).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 3.0).collect::<Vec<_>>(),
                [steps + 1, batch, 8],
            ),
            device,
        );
        (obs, noise)
    }

    #[test]
    fn schedules_are_monotone_and_end_near_pure_noise() {
        for schedule in [BetaSchedule::Cosine, BetaSchedule::Linear] {
            let c = DiffusionConfig {
                train_steps: 100,
                schedule,
                sampling_steps: 5,
                denoised_clip: 0.0,
                ..Default::default()
            };
            let ab = c.alphas_cumprod();
            assert!(ab.windows(2).all(|w| w[1] < w[0]), "{schedule:?}");
            assert!(ab[0] > 0.99 && ab[99] < 0.01, "{schedule:?}: {} … {}", ab[0], ab[99]);
        }
        let c = DiffusionConfig { sampling_steps: 5, ..DiffusionConfig::default() };
        assert_eq!(c.sampling_timesteps(), vec![80, 60, 40, 20, 0]);
        let trailing = DiffusionConfig { spacing: TimestepSpacing::Trailing, ..c.clone() };
        assert_eq!(trailing.sampling_timesteps(), vec![99, 79, 59, 39, 19]);
        assert!(DiffusionConfig { sampling_steps: 7, ..c.clone() }.validate().is_err());
        let e = DiffusionConfig { train_steps: 0, ..c }.validate().unwrap_err();
        assert_eq!(e.field, "train_steps");
    }

    /// DDIM with η = 1 and K = T is DDPM's ancestral step: mean
    /// `β_t√ᾱ_{t−1}/(1−ᾱ_t)·x̂0 + (1−ᾱ_{t−1})√α_t/(1−ᾱ_t)·x_t` and variance
    /// `β̃_t = β_t(1−ᾱ_{t−1})/(1−ᾱ_t)`, computed here from the schedule independently.
    #[test]
    fn ddim_with_eta_one_and_all_steps_is_the_ddpm_posterior() {
        let device = Device::flex();
        let config = DiffusionConfig {
            train_steps: 10,
            schedule: BetaSchedule::Cosine,
            sampling_steps: 10,
            denoised_clip: 0.0,
            ..Default::default()
        };
        let policy = crate::seeded_init(&device, 4, |device| DiffusionPolicy::new(&layout(), &config, device));
        let (obs, noise) = inputs(3, 10, &device);
        let features = policy.encode(obs);
        let betas = config.betas();
        let ab = config.alphas_cumprod();
        let settings = DenoiseSettings { eta: 1.0, ..DenoiseSettings::deterministic() };
        let mut x = noise.narrow(0, 0, 1).reshape([3, 8]);
        for k in 0..10 {
            let t = 9 - k;
            let tt = Tensor::<2>::full([3, 1], t as f64 / 10.0, &device);
            let eps = policy.predict_noise(features.clone(), x.clone(), tt);
            let x0 = (x.clone() - eps.mul_scalar((1.0 - ab[t]).sqrt())).div_scalar(ab[t].sqrt());
            let ab_prev = if t == 0 { 1.0 } else { ab[t - 1] };
            let mean = x0.mul_scalar(betas[t] * ab_prev.sqrt() / (1.0 - ab[t]))
                + x.clone().mul_scalar((1.0 - ab_prev) * (1.0 - betas[t]).sqrt() / (1.0 - ab[t]));
            let var = betas[t] * (1.0 - ab_prev) / (1.0 - ab[t]);
            let step = policy.step(features.clone(), x.clone(), k, &settings);
            assert!((step.std - var.sqrt()).abs() < 1e-9, "k={k}: std {} vs {}", step.std, var.sqrt());
            for (a, b) in host(step.mean.clone()).iter().zip(host(mean.clone())) {
                assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "k={k}: ddim {a} vs ddpm {b}");
            }
            x = mean;
        }
    }

    #[test]
    fn deterministic_ddim_ignores_all_but_the_initial_noise() {
        let device = Device::flex();
        let config = DiffusionConfig { sampling_steps: 5, ..DiffusionConfig::default() };
        let policy = crate::seeded_init(&device, 4, |device| DiffusionPolicy::new(&layout(), &config, device));
        let (obs, noise) = inputs(3, 5, &device);
        let settings = DenoiseSettings::deterministic();
        let a = policy.sample(obs.clone(), noise.clone(), &settings, None);
        let other = Tensor::cat(vec![noise.clone().narrow(0, 0, 1), noise.narrow(0, 1, 5).mul_scalar(-2.0)], 0);
        let b = policy.sample(obs, other, &settings, None);
        assert_eq!(host(a.actions.clone()), host(b.actions));
        assert_eq!(a.log_prob.dims(), [3, 0]);
        // The last step of η = 0 DDIM lands on x̂0.
        assert_eq!(policy.coefficients(4, 0.0).alpha_bar_prev, 1.0);
        assert_eq!(policy.coefficients(4, 0.0).sigma, 0.0);
    }

    #[test]
    fn recomputed_log_probs_from_stored_chains_equal_the_rollout_ones() {
        let device = Device::flex();
        let config = DiffusionConfig { sampling_steps: 5, ..DiffusionConfig::default() };
        let policy = crate::seeded_init(&device, 4, |device| DiffusionPolicy::new(&layout(), &config, device));
        let base = crate::seeded_init(&device, 5, |device| DiffusionPolicy::new(&layout(), &config, device));
        let (obs, noise) = inputs(5, 5, &device);
        for (eta, ft) in [(1.0, 5), (0.0, 3), (0.5, 1)] {
            let settings =
                DenoiseSettings { eta, min_std: 0.1, min_log_prob_std: 0.1, log_prob_clamp: (-5.0, 2.0), ft_steps: ft };
            let sample = policy.sample(obs.clone(), noise.clone(), &settings, Some(&base));
            assert_eq!(sample.log_prob.dims(), [5, ft]);
            let eval = policy.evaluate_chain(obs.clone(), sample.chains.clone(), &settings);
            let ratio = host((eval - sample.log_prob.clone()).exp());
            assert!(ratio.iter().all(|&r| r == 1.0), "η={eta}, K′={ft}: ratio {ratio:?}");
            let lp = host(sample.log_prob);
            assert!(lp.iter().all(|v| v.is_finite() && (-5.0..=2.0).contains(v)), "{lp:?}");
            let last = host(sample.chains.clone().narrow(0, 5, 1).reshape([5, 8]));
            assert_eq!(last, host(sample.actions));
            // Another network on the fine-tuned steps scores the chain differently.
            let other = base.evaluate_chain(obs.clone(), sample.chains, &settings);
            assert_ne!(host(other), lp);
        }
    }

    /// Clipping x̂0 at a bound it never reaches changes nothing; a tight bound puts the last
    /// step (ᾱ_prev = 1, so μ = x̂0 exactly) inside it.
    #[test]
    fn denoised_clip_bounds_the_predicted_clean_chunk() {
        let device = Device::flex();
        let (obs, noise) = inputs(3, 5, &device);
        let settings = DenoiseSettings::deterministic();
        let mut results = Vec::new();
        for clip in [0.0, 1e6, 0.05] {
            let config = DiffusionConfig { denoised_clip: clip, sampling_steps: 5, ..DiffusionConfig::default() };
            let policy = crate::seeded_init(&device, 4, |device| DiffusionPolicy::new(&layout(), &config, device));
            results.push(host(policy.sample(obs.clone(), noise.clone(), &settings, None).actions));
        }
        for (a, b) in results[0].iter().zip(&results[1]) {
            assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
        }
        assert!(results[0].iter().any(|a| a.abs() > 0.05), "{:?}", results[0]);
        assert!(results[2].iter().all(|a| a.abs() <= 0.05 + 1e-6), "{:?}", results[2]);
    }
}
