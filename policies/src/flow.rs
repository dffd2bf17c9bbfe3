//! Flow-matching action-chunk policy (a π0-style action expert at small scale) and its
//! denoising samplers: ODE, SDE, Flow-Noise and CPS.
//!
//! Conventions (openpi/RLinf): `t = 1` is pure noise, `t = 0` is data,
//! `x_t = t·ε + (1 − t)·a`, target velocity `u = ε − a`; sampling integrates from `t = 1` down to
//! 0 on the grid `t_k = 1 − k/K`, `δ = 1/K`, with `x ← x − δ·v` for the ODE.
//!
//! Shapes: an action chunk is flattened row-major, `[batch, horizon·action_dim]` (normalized
//! action units), so its first `chunk·action_dim` columns are the `C` executed actions. Chains
//! are stored time-major, `[K + 1, batch, horizon·action_dim]`.
//!
//! Where we deliberately differ from the reference (RLinf/openpi):
//! - the action expert is an MLP over the flattened chunk, conditioned on an MLP encoding of
//!   the (normalized) state observation, not a Gemma transformer over action tokens with a VLM
//!   prefix; its last hidden layer plays the part of `suffix_out` pooled over tokens (value and
//!   noise heads read it), so `chunk_critic_input` has no counterpart;
//! - actions are not padded to 32 dimensions: `D = D_env`;
//! - one denoising index `k` is shared by the whole batch in every call (RLinf allows one per
//!   row but uses the same one for the batch in Flow-SDE);
//! - the value and noise heads use burn's default initialization with a small output gain
//!   instead of Kaiming-normal (fan-out) and N(0, 0.02).

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::distributions::LOG_SQRT_2PI;
use crate::mlp::{Activation, Mlp, MlpConfig};

/// A [`FlowPolicyConfig`] field out of its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid value for `{field}`: {value} (allowed: {allowed})")]
pub struct InvalidConfig {
    /// The field's name.
    pub field: String,
    /// The value given.
    pub value: String,
    /// The allowed range, in words.
    pub allowed: String,
}

/// Layout of a [`FlowPolicy`] and its sampler settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowPolicyConfig {
    /// Observation features (the task's policy observation). Set from the task.
    pub obs_dim: usize,
    /// Action dimensions `D` (= `D_env`). Set from the task.
    pub action_dim: usize,
    /// Model action horizon `H`, actions per predicted chunk. Default 8.
    pub horizon: usize,
    /// Executed chunk length `C ≤ H`: actions run in the environment per policy query. Default 4.
    pub chunk: usize,
    /// Denoising (integration) steps `K`. Default 4 (RLinf's π0 LIBERO setting).
    pub denoise_steps: usize,
    /// Width of the observation encoding and of the expert's features (`suffix_out`). Default 256.
    pub width: usize,
    /// Hidden widths of the expert trunk (its last width is the feature width). Default [256, 256].
    pub hidden: Vec<usize>,
    /// Hidden activation of encoder and trunk. Default elu.
    pub activation: Activation,
    /// Hidden widths of the value head (ReLU). Default [128, 64].
    pub value_hidden: Vec<usize>,
    /// Smallest standard deviation of the Flow-Noise head (`noise_logvar_range[0]`, a std
    /// despite the reference's name). Default 0.08.
    pub noise_std_min: f64,
    /// Largest standard deviation of the Flow-Noise head. Default 0.16.
    pub noise_std_max: f64,
    /// Stop gradients from the value head into the expert (`detach_critic_input`). Default true.
    pub detach_critic_input: bool,
    /// Stop gradients from the Flow-Noise head into the expert, so that learning the noise std
    /// leaves the velocity field alone (not in RLinf, whose noise head reads `suffix_out`
    /// undetached). Default false.
    pub detach_noise_input: bool,
}

impl Default for FlowPolicyConfig {
    fn default() -> Self {
        Self {
            obs_dim: 0,
            action_dim: 0,
            horizon: 8,
            chunk: 4,
            denoise_steps: 4,
            width: 256,
            hidden: vec![256, 256],
            activation: Activation::Elu,
            value_hidden: vec![128, 64],
            noise_std_min: 0.08,
            noise_std_max: 0.16,
            detach_critic_input: true,
            detach_noise_input: false,
        }
    }
}

impl FlowPolicyConfig {
    /// Checks the layout; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let bad = |field: &str, value: String, allowed: &str| {
            Err(InvalidConfig { field: field.into(), value, allowed: allowed.into() })
        };
        if self.horizon == 0 {
            return bad("horizon", self.horizon.to_string(), "≥ 1");
        }
        if self.chunk == 0 || self.chunk > self.horizon {
            return bad("chunk", self.chunk.to_string(), "1 ≤ chunk ≤ horizon");
        }
        if self.denoise_steps == 0 {
            return bad("denoise_steps", self.denoise_steps.to_string(), "≥ 1");
        }
        if self.width < 2 || !self.width.is_multiple_of(2) {
            return bad("width", self.width.to_string(), "an even number ≥ 2");
        }
        if self.hidden.is_empty() || self.hidden.contains(&0) {
            return bad("hidden", format!("{:?}", self.hidden), "at least one positive width");
        }
        if self.value_hidden.contains(&0) {
            return bad("value_hidden", format!("{:?}", self.value_hidden), "positive widths");
        }
        if !(self.noise_std_min > 0.0 && self.noise_std_min <= self.noise_std_max) {
            return bad(
                "noise_std_min",
                format!("{} (max {})", self.noise_std_min, self.noise_std_max),
                "0 < noise_std_min ≤ noise_std_max",
            );
        }
        Ok(())
    }

    /// Columns of a flattened chunk, `H·D`.
    pub fn chunk_width(&self) -> usize {
        self.horizon * self.action_dim
    }

    /// The sinusoidal time embedding at `t` on the host, `[width]`: `[sin(ωt) ‖ cos(ωt)]` (what
    /// the velocity network sees; export folds it into a bias).
    pub fn time_embedding(&self, t: f32) -> Vec<f32> {
        let scaling = time_scaling(self.width);
        let sin = scaling.iter().map(|w| (w * t).sin());
        sin.chain(scaling.iter().map(|w| (w * t).cos())).collect()
    }

    /// Builds the policy on `device`.
    pub fn init(&self, device: &Device) -> FlowPolicy {
        let feat = *self.hidden.last().expect("validated: hidden is non-empty");
        let hd = self.chunk_width();
        let trunk_hidden = &self.hidden[..self.hidden.len() - 1];
        FlowPolicy {
            obs_encoder: MlpConfig::new(self.obs_dim, &[self.width], self.width, self.activation).init(device),
            action_in: LinearConfig::new(hd, self.width).init(device),
            trunk: MlpConfig::new(3 * self.width, trunk_hidden, feat, self.activation).init(device),
            action_out: LinearConfig::new(feat, hd).init(device),
            noise_head: MlpConfig::new(feat, &[128, 64], hd, Activation::Tanh).with_output_gain(0.1).init(device),
            value_head: MlpConfig::new(feat, &self.value_hidden, 1, Activation::Relu)
                .with_output_gain(0.1)
                .init(device),
            time_scaling: time_scaling(self.width),
            activation: self.activation,
            horizon: self.horizon,
            chunk: self.chunk,
            action_dim: self.action_dim,
            denoise_steps: self.denoise_steps,
            log_var_min: 2.0 * self.noise_std_min.ln(),
            log_var_max: 2.0 * self.noise_std_max.ln(),
            detach_critic_input: self.detach_critic_input,
            detach_noise_input: self.detach_noise_input,
        }
    }
}

/// Angular frequencies `2π / period` of the sinusoidal time embedding, `[width / 2]`, periods
/// log-spaced from 4e-3 to 4 (openpi `posemb_sincos`).
pub(crate) fn time_scaling(width: usize) -> Vec<f32> {
    let half = width / 2;
    let (min, max) = (4e-3f64, 4.0f64);
    (0..half)
        .map(|i| {
            let fraction = if half > 1 { i as f64 / (half - 1) as f64 } else { 0.0 };
            (std::f64::consts::TAU / (min * (max / min).powf(fraction))) as f32
        })
        .collect()
}

/// How one denoising transition turns the velocity into a Gaussian.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NoiseMethod {
    /// Deterministic Euler step `x − δv`, σ = 0.
    Ode,
    /// Flow-GRPO SDE with noise level `a` and `σ_k = a·√(t_k / (1 − t'_k))`.
    Sde {
        /// Noise level `a`.
        level: f64,
    },
    /// ODE mean with the learned, bounded std of the noise head.
    Noise,
    /// Coefficient-preserving sampling with noise level `a`.
    Cps {
        /// Noise level `a`.
        level: f64,
    },
}

/// Which denoising steps of one sample are stochastic and enter the log-probability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StochasticSteps {
    /// All steps are ODE steps (evaluation); no log-probability.
    None,
    /// Every step is stochastic and the log-probability is the mean over the `K + 1` terms,
    /// `log N(x_1; 0, I)` included (Flow-Noise, `joint_logprob`).
    Joint,
    /// Only step `k*` is stochastic and only its term counts (Flow-SDE's hybrid ODE-SDE).
    One(usize),
}

impl StochasticSteps {
    fn is_stochastic(self, k: usize) -> bool {
        match self {
            Self::None => false,
            Self::Joint => true,
            Self::One(s) => s == k,
        }
    }
}

/// Denoising grid `t_k = 1 − k/K`, `k = 0..K` (so `t_K = 0`), `[K + 1]`.
pub fn timesteps(steps: usize) -> Vec<f64> {
    (0..=steps).map(|k| 1.0 - k as f64 / steps as f64).collect()
}

/// `σ_k = a·√(t_k / (1 − t'_k))` of the SDE schedule, where `t'_k = t_1` when `t_k = 1`
/// ( avoids the division by zero at the first step).
pub fn sde_sigma(k: usize, steps: usize, level: f64) -> f64 {
    let t = timesteps(steps);
    let denominator_t = if k == 0 { t[1.min(steps)] } else { t[k] };
    level * (t[k] / (1.0 - denominator_t)).sqrt()
}

/// One denoising transition `x_{k+1} ~ N(mean, std²)` and the value estimate at step `k`.
#[derive(Debug, Clone)]
pub struct Transition {
    /// `[batch, H·D]`.
    pub mean: Tensor<2>,
    /// `[batch, H·D]`; `None` for a deterministic (σ = 0) step.
    pub std: Option<Tensor<2>>,
    /// `V` from the pooled expert features at this step, `[batch, 1]`, when asked for.
    pub value: Option<Tensor<2>>,
}

/// A sampled action chunk with everything PPO stores per environment step.
#[derive(Debug, Clone)]
pub struct FlowSample {
    /// The final chunk `x_{t=0}`, `[batch, H·D]`, normalized action units.
    pub actions: Tensor<2>,
    /// `x_{t_0} … x_{t_K}`, `[K + 1, batch, H·D]`.
    pub chains: Tensor<3>,
    /// Per-element log-probabilities of the executed slice, reduced over denoising steps,
    /// `[batch, C·D]`; zeros when no step was stochastic.
    pub log_prob: Tensor<2>,
    /// Value estimate averaged over the `K` steps, `[batch, 1]`.
    pub value: Tensor<2>,
}

/// Log-probabilities, values and entropies recomputed from stored chains.
#[derive(Debug, Clone)]
pub struct ChainEval {
    /// `[batch, C·D]`, reduced over the stochastic steps exactly as at rollout time.
    pub log_prob: Tensor<2>,
    /// Mean value over the re-evaluated steps, `[batch, 1]`, when asked for (zeros when no step
    /// is stochastic).
    pub value: Option<Tensor<2>>,
    /// Mean Gaussian entropy per element over (steps, C, D) including the N(0, 1) term, for
    /// [`StochasticSteps::Joint`] (Flow-Noise), `[batch, 1]`; zeros otherwise (Flow-SDE: 0).
    pub entropy: Tensor<2>,
}

/// Velocity field `v_θ(x_t, t | s)` over flattened action chunks, with a bounded noise head
/// (Flow-Noise) and a value head on the pooled expert features.
#[derive(Module, Debug)]
pub struct FlowPolicy {
    obs_encoder: Mlp,
    action_in: Linear,
    trunk: Mlp,
    action_out: Linear,
    noise_head: Mlp,
    value_head: Mlp,
    #[module(skip)]
    time_scaling: Vec<f32>,
    #[module(skip)]
    activation: Activation,
    #[module(skip)]
    horizon: usize,
    #[module(skip)]
    chunk: usize,
    #[module(skip)]
    action_dim: usize,
    #[module(skip)]
    denoise_steps: usize,
    #[module(skip)]
    log_var_min: f64,
    #[module(skip)]
    log_var_max: f64,
    #[module(skip)]
    detach_critic_input: bool,
    #[module(skip)]
    detach_noise_input: bool,
}

impl FlowPolicy {
    /// Executed actions per query, `C`.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Predicted actions per query, `H`.
    pub fn horizon(&self) -> usize {
        self.horizon
    }

    /// Denoising steps `K`.
    pub fn denoise_steps(&self) -> usize {
        self.denoise_steps
    }

    /// The value head (its parameters form PPO's value parameter group).
    pub fn value_head(&self) -> &Mlp {
        &self.value_head
    }

    /// Observation features (the counterpart of π0's prefix cache), computed once per
    /// environment step: `[batch, obs_dim] → [batch, width]`.
    pub fn encode(&self, obs: Tensor<2>) -> Tensor<2> {
        self.activation.apply(self.obs_encoder.forward(obs))
    }

    /// Sinusoidal embedding of `t` (`[batch, 1]`), `[batch, width]`: `[sin(ωt) ‖ cos(ωt)]`.
    fn time_embedding(&self, t: Tensor<2>) -> Tensor<2> {
        sincos_embedding(t, &self.time_scaling)
    }

    /// Velocity `[batch, H·D]` and pooled expert features `[batch, feat]` at `x` (`[batch, H·D]`)
    /// and times `t` (`[batch, 1]`), given observation features from [`FlowPolicy::encode`].
    pub fn velocity(&self, obs_features: Tensor<2>, x: Tensor<2>, t: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let input = Tensor::cat(vec![obs_features, self.action_in.forward(x), self.time_embedding(t)], 1);
        let features = self.activation.apply(self.trunk.forward(input));
        (self.action_out.forward(features.clone()), features)
    }

    /// Flow-matching loss `mean((v_θ(x_t, t) − (ε − a))²)` over batch, horizon and dimensions,
    /// with `x_t = t·ε + (1 − t)·a`. `actions`, `noise`: `[batch, H·D]`; `t`: `[batch, 1]`
    /// (drawn by the caller from [`sample_flow_time`]); returns `[1]`.
    pub fn flow_matching_loss(&self, obs: Tensor<2>, actions: Tensor<2>, noise: Tensor<2>, t: Tensor<2>) -> Tensor<1> {
        let x_t = noise.clone() * t.clone() + actions.clone() * t.clone().neg().add_scalar(1.0);
        let (v, _) = self.velocity(self.encode(obs), x_t, t);
        (v - (noise - actions)).square().mean()
    }

    /// Std of the Flow-Noise head on expert `features`, `[batch, H·D]`, in
    /// `[noise_std_min, noise_std_max]`: `exp(½·[log σ²_min + (log σ²_max − log σ²_min)·(tanh ℓ + 1)/2])`.
    pub fn noise_std(&self, features: Tensor<2>) -> Tensor<2> {
        let features = if self.detach_noise_input { features.detach() } else { features };
        self.bounded_std(self.noise_head.forward(features))
    }

    /// The noise head's output map from logits ℓ to a std in `[noise_std_min, noise_std_max]`.
    fn bounded_std(&self, logits: Tensor<2>) -> Tensor<2> {
        bounded_std(logits, self.log_var_min, self.log_var_max)
    }

    /// One denoising transition from `x` (`[batch, H·D]`) at step `k` (`t = t_k`), with the
    /// method's mean and std and the value; the std is `None` unless `stochastic`.
    pub fn transition(
        &self,
        obs_features: Tensor<2>,
        x: Tensor<2>,
        k: usize,
        method: NoiseMethod,
        stochastic: bool,
    ) -> Transition {
        flow_transition(self, &obs_features, x, k, method, stochastic, true)
    }

    /// Draws a chunk: `x_{t=1} = noise[0]`, then `x_{k+1} = μ_k + σ_k·noise[k + 1]` with σ = 0 on
    /// non-stochastic steps. `obs`: `[batch, obs_dim]`; `noise`: standard normal
    /// `[K + 1, batch, H·D]`.
    pub fn sample(&self, obs: Tensor<2>, noise: Tensor<3>, method: NoiseMethod, steps: StochasticSteps) -> FlowSample {
        flow_sample(self, &self.encode(obs), noise, method, steps)
    }

    /// Recomputes log-probabilities, entropies and (`with_value`) values from stored `chains`
    /// (`[K + 1, batch, H·D]`) under the current parameters, re-evaluating only the stochastic
    /// steps: the same computations as [`FlowPolicy::sample`], so unchanged
    /// parameters give the rollout's log-probabilities exactly. Never resamples.
    pub fn evaluate_chain(
        &self,
        obs: Tensor<2>,
        chains: Tensor<3>,
        method: NoiseMethod,
        steps: StochasticSteps,
        with_value: bool,
    ) -> ChainEval {
        flow_evaluate_chain(self, &self.encode(obs), chains, method, steps, with_value)
    }
}

impl FlowExpert for FlowPolicy {
    type Context = Tensor<2>;
    type Features = Tensor<2>;

    fn flow_layout(&self) -> FlowLayout {
        FlowLayout {
            horizon: self.horizon,
            chunk: self.chunk,
            action_dim: self.action_dim,
            denoise_steps: self.denoise_steps,
        }
    }

    fn expert_velocity(&self, context: &Tensor<2>, x: Tensor<2>, t: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        self.velocity(context.clone(), x, t)
    }

    fn expert_value(&self, _context: &Tensor<2>, features: &Tensor<2>) -> Tensor<2> {
        let critic_input = if self.detach_critic_input { features.clone().detach() } else { features.clone() };
        self.value_head.forward(critic_input)
    }

    fn expert_noise_std(&self, features: Tensor<2>) -> Tensor<2> {
        self.noise_std(features)
    }
}

/// Sizes of a flow expert's action chunks and denoising grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowLayout {
    /// Model action horizon `H`.
    pub horizon: usize,
    /// Executed chunk length `C ≤ H` (log-probabilities cover the first `C` actions).
    pub chunk: usize,
    /// Action dimensions `D`.
    pub action_dim: usize,
    /// Denoising steps `K`.
    pub denoise_steps: usize,
}

/// A velocity field `v_θ(x_t, t | context)` over flattened action chunks (`[batch, H·D]`) that
/// the shared samplers ([`flow_transition`], [`flow_sample`], [`flow_evaluate_chain`]) drive:
/// the MLP [`FlowPolicy`] and the transformer action expert of the VLA implement it.
pub trait FlowExpert {
    /// Conditioning computed once per environment step (π0's prefix cache).
    type Context: Clone;
    /// What one velocity evaluation exposes to the value and noise heads (π0's `suffix_out`).
    type Features: Clone;

    /// Chunk and grid sizes.
    fn flow_layout(&self) -> FlowLayout;

    /// Velocity `[batch, H·D]` and features at `x` (`[batch, H·D]`) and times `t` (`[batch, 1]`).
    fn expert_velocity(&self, context: &Self::Context, x: Tensor<2>, t: Tensor<2>) -> (Tensor<2>, Self::Features);

    /// Value estimate `[batch, 1]` at one denoising step (detached from the expert when the
    /// model is so configured).
    fn expert_value(&self, context: &Self::Context, features: &Self::Features) -> Tensor<2>;

    /// Flow-Noise std `[batch, H·D]`, bounded.
    fn expert_noise_std(&self, features: Self::Features) -> Tensor<2>;
}

/// One denoising transition of `expert` from `x` (`[batch, H·D]`) at step `k` (`t = t_k`), with
/// the method's mean and std; the std is `None` unless `stochastic`, the value
/// `None` unless `with_value`.
///
/// Ask for the value only where it is used: with autodiff, burn 0.22 never frees a graph that
/// no backward pass reaches, and the value head on detached features is such a graph whenever
/// the loss does not use it (about 100 MB per PPO iteration on push-t).
pub fn flow_transition<E: FlowExpert + ?Sized>(
    expert: &E,
    context: &E::Context,
    x: Tensor<2>,
    k: usize,
    method: NoiseMethod,
    stochastic: bool,
    with_value: bool,
) -> Transition {
    let steps = expert.flow_layout().denoise_steps;
    let t = 1.0 - k as f64 / steps as f64;
    let delta = 1.0 / steps as f64;
    let batch = x.dims()[0];
    let t_col = Tensor::<2>::full([batch, 1], t, &x.device());
    let (v, features) = expert.expert_velocity(context, x.clone(), t_col);
    let value = with_value.then(|| expert.expert_value(context, &features));
    // Predicted endpoints: clean action x̂0 and noise x̂1.
    let x0 = x.clone() - v.clone().mul_scalar(t);
    let x1 = x + v.mul_scalar(1.0 - t);
    let ode = |x0: Tensor<2>, x1: Tensor<2>| x0.mul_scalar(1.0 - t + delta) + x1.mul_scalar(t - delta);
    let (mean, std) = match (method, stochastic) {
        (NoiseMethod::Ode, _) | (_, false) => (ode(x0, x1), None),
        (NoiseMethod::Sde { level }, true) => {
            let sigma = sde_sigma(k, steps, level);
            let mean = x0.mul_scalar(1.0 - t + delta) + x1.mul_scalar(t - delta - sigma * sigma * delta / (2.0 * t));
            let std = Tensor::full(mean.shape(), delta.sqrt() * sigma, &mean.device());
            (mean, Some(std))
        }
        (NoiseMethod::Noise, true) => (ode(x0, x1), Some(expert.expert_noise_std(features))),
        (NoiseMethod::Cps { level }, true) => {
            let angle = std::f64::consts::FRAC_PI_2 * level;
            let mean = x0.mul_scalar(1.0 - t + delta) + x1.mul_scalar((t - delta) * angle.cos());
            let std = Tensor::full(mean.shape(), (t - delta) * angle.sin(), &mean.device());
            (mean, Some(std))
        }
    };
    Transition { mean, std, value }
}

/// Draws a chunk from `expert`: `x_{t=1} = noise[0]`, then `x_{k+1} = μ_k + σ_k·noise[k + 1]`
/// with σ = 0 on non-stochastic steps. `noise`: standard normal `[K + 1, batch, H·D]`.
pub fn flow_sample<E: FlowExpert + ?Sized>(
    expert: &E,
    context: &E::Context,
    noise: Tensor<3>,
    method: NoiseMethod,
    steps: StochasticSteps,
) -> FlowSample {
    let layout = expert.flow_layout();
    let [k1, batch, width] = noise.dims();
    let noise_at = |k: usize| noise.clone().narrow(0, k, 1).reshape([batch, width]);
    let mut x = noise_at(0);
    let mut chain = vec![x.clone()];
    let mut terms = Vec::new();
    if steps == StochasticSteps::Joint {
        terms.push(standard_normal_log_prob(executed(layout, x.clone())));
    }
    let mut value_sum: Option<Tensor<2>> = None;
    for k in 0..k1 - 1 {
        let tr = flow_transition(expert, context, x, k, method, steps.is_stochastic(k), true);
        x = match &tr.std {
            Some(std) => {
                let next = tr.mean.clone() + std.clone() * noise_at(k + 1);
                terms.push(gaussian_elementwise(
                    executed(layout, next.clone()),
                    executed(layout, tr.mean.clone()),
                    executed(layout, std.clone()),
                ));
                next
            }
            None => tr.mean,
        };
        chain.push(x.clone());
        value_sum = match (value_sum, tr.value) {
            (Some(s), Some(v)) => Some(s + v),
            (s, v) => s.or(v),
        };
    }
    let device = x.device();
    let value = match value_sum {
        Some(s) => s.div_scalar((k1 - 1) as f64),
        None => Tensor::zeros([batch, 1], &device),
    };
    let log_prob = reduce_terms(layout, terms, batch, &device);
    FlowSample { actions: x, chains: Tensor::stack(chain, 0), log_prob, value }
}

/// Recomputes log-probabilities, entropies and (`with_value`) values of `expert` from stored
/// `chains` (`[K + 1, batch, H·D]`), re-evaluating only the stochastic steps: the
/// same computations as [`flow_sample`], so unchanged parameters give the rollout's
/// log-probabilities exactly. Never resamples. Ask for values only where the loss uses them
/// (see [`flow_transition`]).
pub fn flow_evaluate_chain<E: FlowExpert + ?Sized>(
    expert: &E,
    context: &E::Context,
    chains: Tensor<3>,
    method: NoiseMethod,
    steps: StochasticSteps,
    with_value: bool,
) -> ChainEval {
    let layout = expert.flow_layout();
    let [k1, batch, width] = chains.dims();
    let device = chains.device();
    let at = |k: usize| chains.clone().narrow(0, k, 1).reshape([batch, width]);
    let mut terms = Vec::new();
    let mut entropies = Vec::new();
    if steps == StochasticSteps::Joint {
        terms.push(standard_normal_log_prob(executed(layout, at(0))));
        entropies.push(Tensor::<2>::full([batch, 1], 0.5 + LOG_SQRT_2PI, &device));
    }
    let mut values = Vec::new();
    for k in (0..k1 - 1).filter(|&k| steps.is_stochastic(k)) {
        let tr = flow_transition(expert, context, at(k), k, method, true, with_value);
        if let Some(std) = tr.std {
            let std = executed(layout, std);
            // Only the joint (Flow-Noise) objective has an entropy; Flow-SDE's is 0 (§1.5).
            if steps == StochasticSteps::Joint {
                entropies.push(gaussian_entropy_elementwise(std.clone()).mean_dim(1));
            }
            terms.push(gaussian_elementwise(executed(layout, at(k + 1)), executed(layout, tr.mean), std));
        }
        values.extend(tr.value);
    }
    let value = with_value.then(|| match values.len() {
        0 => Tensor::zeros([batch, 1], &device),
        n => Tensor::cat(values, 1).sum_dim(1).div_scalar(n as f64),
    });
    let entropy = match entropies.len() {
        0 => Tensor::zeros([batch, 1], &device),
        n => Tensor::cat(entropies, 1).sum_dim(1).div_scalar(n as f64),
    };
    ChainEval { log_prob: reduce_terms(layout, terms, batch, &device), value, entropy }
}

/// The executed slice `[:C, :D]` of a flattened chunk, `[batch, C·D]`.
fn executed(layout: FlowLayout, x: Tensor<2>) -> Tensor<2> {
    x.narrow(1, 0, layout.chunk * layout.action_dim)
}

/// Mean over denoising-step terms (each `[batch, C·D]`), zeros when there are none.
fn reduce_terms(layout: FlowLayout, terms: Vec<Tensor<2>>, batch: usize, device: &Device) -> Tensor<2> {
    let n = terms.len();
    if n == 0 {
        return Tensor::zeros([batch, layout.chunk * layout.action_dim], device);
    }
    let sum = terms.into_iter().reduce(|a, b| a + b).expect("non-empty");
    sum.div_scalar(n as f64)
}

/// Sinusoidal embedding of `t` (`[batch, 1]`) with angular frequencies `scaling`
/// (from [`time_scaling`]), `[batch, 2·scaling.len()]`: `[sin(ωt) ‖ cos(ωt)]`.
pub(crate) fn sincos_embedding(t: Tensor<2>, scaling: &[f32]) -> Tensor<2> {
    let omega =
        Tensor::<1>::from_data(TensorData::new(scaling.to_vec(), [scaling.len()]), &t.device()).unsqueeze_dim::<2>(0);
    let phase = t * omega;
    Tensor::cat(vec![phase.clone().sin(), phase.cos()], 1)
}

/// Maps noise-head logits ℓ (any shape) to a std in `[exp(½·log_var_min), exp(½·log_var_max)]`:
/// `exp(½·[log σ²_min + (log σ²_max − log σ²_min)·(tanh ℓ + 1)/2])`.
pub(crate) fn bounded_std<const D: usize>(logits: Tensor<D>, log_var_min: f64, log_var_max: f64) -> Tensor<D> {
    let squashed = tanh(logits).add_scalar(1.0).mul_scalar(0.5);
    squashed.mul_scalar(log_var_max - log_var_min).add_scalar(log_var_min).mul_scalar(0.5).exp()
}

/// `log N(x; μ, σ)` per element: `−log σ − ½log 2π − ½((x − μ)/σ)²`; elements with σ = 0
/// contribute exactly 0 (RLinf `get_logprob_norm`). The σ = 0 entries are replaced by 1 before
/// dividing so no NaN reaches the backward pass.
fn gaussian_elementwise(x: Tensor<2>, mean: Tensor<2>, std: Tensor<2>) -> Tensor<2> {
    let zero = std.clone().equal_elem(0.0);
    let std = std.mask_fill(zero.clone(), 1.0);
    let z = (x - mean) / std.clone();
    (z.square().mul_scalar(-0.5) - std.log()).sub_scalar(LOG_SQRT_2PI).mask_fill(zero, 0.0)
}

/// Gaussian entropy `½·ln(2πe·σ²)` per element, 0 where σ = 0 (RLinf `gaussian_entropy`).
fn gaussian_entropy_elementwise(std: Tensor<2>) -> Tensor<2> {
    let zero = std.clone().equal_elem(0.0);
    std.mask_fill(zero.clone(), 1.0).log().add_scalar(0.5 + LOG_SQRT_2PI).mask_fill(zero, 0.0)
}

/// `log N(x; 0, 1)` per element.
fn standard_normal_log_prob(x: Tensor<2>) -> Tensor<2> {
    x.square().mul_scalar(-0.5).sub_scalar(LOG_SQRT_2PI)
}

/// Flow-matching time `t = 0.999·Beta(1.5, 1) + 0.001` from a uniform draw `u ∈ [0, 1)`
/// (inverse CDF of Beta(α, 1): `u^{1/α}`); the density ∝ t^{0.5} favours noisier times.
pub fn sample_flow_time(u: f32) -> f32 {
    0.999 * u.powf(1.0 / 1.5) + 0.001
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> FlowPolicyConfig {
        FlowPolicyConfig {
            obs_dim: 3,
            action_dim: 2,
            horizon: 4,
            chunk: 2,
            denoise_steps: 4,
            width: 16,
            hidden: vec![32, 16],
            ..FlowPolicyConfig::default()
        }
    }

    fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    fn setup(batch: usize) -> (FlowPolicy, Tensor<2>, Tensor<3>, Device) {
        let device = Device::flex();
        let c = config();
        let policy = crate::seeded_init(&device, 3, |device| c.init(device));
        let obs = Tensor::<2>::from_data(
            TensorData::new((0..batch * 3).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<_>>(), [batch, 3]),
            &device,
        );
        let n = (c.denoise_steps + 1) * batch * c.chunk_width();
        let noise = Tensor::<3>::from_data(
            TensorData::new(
                (0..n).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 3.0).collect::<Vec<_>>(),
                [c.denoise_steps + 1, batch, c.chunk_width()],
            ),
            &device,
        );
        (policy, obs, noise, device)
    }

    #[test]
    fn sde_sigma_schedule_matches_the_spec_vector() {
        let sigma: Vec<f64> = (0..4).map(|k| sde_sigma(k, 4, 0.5)).collect();
        let expected = [1.0, 0.866, 0.5, 0.289];
        for (s, e) in sigma.iter().zip(expected) {
            assert!((s - e).abs() < 1e-3, "{sigma:?}");
        }
        let step_std: Vec<f64> = sigma.iter().map(|s| (0.25f64).sqrt() * s).collect();
        for (s, e) in step_std.iter().zip([0.5, 0.433, 0.25, 0.144]) {
            assert!((s - e).abs() < 1e-3, "{step_std:?}");
        }
    }

    #[test]
    fn ode_step_is_euler_and_sde_with_zero_level_equals_it() {
        let (policy, obs, noise, _) = setup(3);
        let features = policy.encode(obs);
        let x = noise.narrow(0, 0, 1).reshape([3, 8]);
        for k in 0..4 {
            let t = 1.0 - k as f64 / 4.0;
            let tc = Tensor::<2>::full([3, 1], t, &x.device());
            let (v, _) = policy.velocity(features.clone(), x.clone(), tc);
            let euler = host(x.clone() - v.mul_scalar(0.25));
            let ode = policy.transition(features.clone(), x.clone(), k, NoiseMethod::Ode, true);
            assert!(ode.std.is_none());
            let sde = policy.transition(features.clone(), x.clone(), k, NoiseMethod::Sde { level: 0.0 }, true);
            let sde_std = host(sde.std.unwrap());
            assert!(sde_std.iter().all(|&s| s == 0.0));
            for ((e, o), s) in euler.iter().zip(host(ode.mean)).zip(host(sde.mean)) {
                assert!((e - o).abs() < 1e-5, "k={k}: euler {e} vs ode {o}");
                assert!((o - s).abs() < 1e-5, "k={k}: ode {o} vs sde(a=0) {s}");
            }
        }
    }

    #[test]
    fn flow_noise_std_stays_in_its_bounds() {
        let (policy, obs, _, device) = setup(2);
        let (lo, hi) = (0.08 - 1e-6, 0.16 + 1e-6);
        // The bound map reaches both ends and is the geometric midpoint at ℓ = 0.
        let logits = Tensor::<2>::from_floats([[-1e4, -3.0, 0.0, 3.0, 1e4]], &device);
        let std = host(policy.bounded_std(logits));
        assert!(std.iter().all(|&s| (lo..=hi).contains(&(s as f64))), "{std:?}");
        assert!((std[0] - 0.08).abs() < 1e-6 && (std[4] - 0.16).abs() < 1e-6, "{std:?}");
        assert!((std[2] as f64 - (0.08f64 * 0.16).sqrt()).abs() < 1e-6, "{std:?}");
        // The head on real and on extreme features stays inside.
        let features =
            policy.velocity(policy.encode(obs), Tensor::ones([2, 8], &device), Tensor::ones([2, 1], &device)).1;
        for f in [features.clone(), features.mul_scalar(1e4)] {
            let std = host(policy.noise_std(f));
            assert!(std.iter().all(|&s| (lo..=hi).contains(&(s as f64))), "{std:?}");
        }
    }

    #[test]
    fn recomputed_log_probs_from_stored_chains_equal_the_rollout_ones() {
        let (policy, obs, noise, _) = setup(5);
        for (method, steps) in [
            (NoiseMethod::Noise, StochasticSteps::Joint),
            (NoiseMethod::Sde { level: 0.5 }, StochasticSteps::One(2)),
            (NoiseMethod::Cps { level: 0.5 }, StochasticSteps::One(0)),
        ] {
            let sample = policy.sample(obs.clone(), noise.clone(), method, steps);
            let eval = policy.evaluate_chain(obs.clone(), sample.chains.clone(), method, steps, false);
            assert!(eval.value.is_none(), "values only when asked for");
            let ratio = host((eval.log_prob - sample.log_prob.clone()).exp());
            assert!(ratio.iter().all(|&r| r == 1.0), "{method:?}: ratio {ratio:?}");
            let lp = host(sample.log_prob);
            assert!(lp.iter().all(|v| v.is_finite() && *v != 0.0), "{lp:?}");
            // The chain ends at the returned action.
            let last = host(sample.chains.narrow(0, 4, 1).reshape([5, 8]));
            assert_eq!(last, host(sample.actions));
        }
        // Deterministic sampling records no log-probability and follows the Euler chain.
        let det = policy.sample(obs, noise, NoiseMethod::Sde { level: 0.5 }, StochasticSteps::None);
        assert!(host(det.log_prob).iter().all(|&v| v == 0.0));
    }

    #[test]
    fn noise_head_gradients_stop_at_its_input_when_detached() {
        use burn::optim::GradientsParams;
        let device = Device::flex().autodiff();
        for detach in [true, false] {
            let c = FlowPolicyConfig { detach_noise_input: detach, ..config() };
            let policy = crate::seeded_init(&device, 3, |device| c.init(device));
            let obs = Tensor::<2>::ones([2, 3], &device);
            let features =
                policy.velocity(policy.encode(obs), Tensor::ones([2, 8], &device), Tensor::ones([2, 1], &device)).1;
            let grads = GradientsParams::from_grads(policy.noise_std(features).sum().backward(), &policy);
            // The noise head has 3 layers × (weight, bias).
            if detach {
                assert_eq!(grads.len(), 6, "only the noise head may get gradients");
            } else {
                assert!(grads.len() > 6, "{} parameters with gradients", grads.len());
            }
        }
    }

    #[test]
    fn flow_noise_entropy_includes_the_initial_term() {
        let (policy, obs, noise, _) = setup(2);
        let sample = policy.sample(obs.clone(), noise, NoiseMethod::Noise, StochasticSteps::Joint);
        let eval = policy.evaluate_chain(obs, sample.chains, NoiseMethod::Noise, StochasticSteps::Joint, false);
        // Between the entropies of N(0, 0.08²) and N(0, 1): the average of K terms in
        // [ln 0.08, ln 0.16] + ½ln 2πe and one term ½ln 2πe.
        let h0 = 0.5 + LOG_SQRT_2PI;
        let (lo, hi) = ((4.0 * 0.08f64.ln()) / 5.0 + h0, (4.0 * 0.16f64.ln()) / 5.0 + h0);
        for h in host(eval.entropy) {
            assert!((lo - 1e-5..=hi + 1e-5).contains(&(h as f64)), "{h} not in [{lo}, {hi}]");
        }
    }

    #[test]
    fn flow_time_is_beta_distributed_towards_noise() {
        assert!((sample_flow_time(0.0) - 0.001).abs() < 1e-7);
        assert!((sample_flow_time(1.0) - 1.0).abs() < 1e-6);
        // Median of Beta(1.5, 1) is 0.5^(2/3) ≈ 0.63.
        assert!((sample_flow_time(0.5) - (0.999 * 0.5f32.powf(2.0 / 3.0) + 0.001)).abs() < 1e-6);
        assert_eq!(timesteps(4), vec![1.0, 0.75, 0.5, 0.25, 0.0]);
    }
}
