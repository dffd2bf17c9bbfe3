//! Tanh-squashed Gaussian actor (SAC's actor).

use burn::module::Module;
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::distributions::{LOG_SQRT_2PI, log_one_minus_tanh_sq};
use crate::mlp::{Activation, Mlp, MlpConfig};

/// Layout of a [`SquashedGaussianActor`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SquashedGaussianActorConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions.
    pub action_dim: usize,
    /// Hidden widths of the trunk.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
    /// Lower bound of the pre-squash log standard deviation.
    pub log_std_min: f64,
    /// Upper bound of the pre-squash log standard deviation.
    pub log_std_max: f64,
    /// Gain of the output layer's initial weights: 1 for the usual initialization; a small gain
    /// starts every state's mean near 0 and its log std near the middle of its bounds.
    pub output_gain: f64,
}

impl SquashedGaussianActorConfig {
    /// Builds the actor on `device`.
    pub fn init(&self, device: &Device) -> SquashedGaussianActor {
        let net = MlpConfig::new(self.obs_dim, &self.hidden, 2 * self.action_dim, self.activation)
            .with_output_gain(self.output_gain)
            .init(device);
        SquashedGaussianActor {
            net,
            action_dim: self.action_dim,
            log_std_min: self.log_std_min,
            log_std_max: self.log_std_max,
        }
    }
}

/// `a = tanh(u)`, `u ~ N(μ(s), diag(σ(s)²))`: actions in `[-1, 1]`, with the exact
/// change-of-variables correction in the log-density.
#[derive(Module, Debug)]
pub struct SquashedGaussianActor {
    net: Mlp,
    #[module(skip)]
    action_dim: usize,
    #[module(skip)]
    log_std_min: f64,
    #[module(skip)]
    log_std_max: f64,
}

impl SquashedGaussianActor {
    /// Pre-squash mean and log standard deviation, both `[batch, action_dim]`. The log std is
    /// mapped smoothly into `[log_std_min, log_std_max]` by a tanh, which keeps gradients alive
    /// at the bounds.
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let out = self.net.forward(obs);
        let [mean, raw] = out.chunk(2, 1).try_into().expect("trunk output has 2·action_dim columns");
        let half_range = 0.5 * (self.log_std_max - self.log_std_min);
        let log_std = tanh(raw).add_scalar(1.0).mul_scalar(half_range).add_scalar(self.log_std_min);
        (mean, log_std)
    }

    /// Reparameterized sample from standard-normal `noise` (`[batch, action_dim]`): the squashed
    /// action `[batch, action_dim]` in `[-1, 1]` and its log-density `[batch, 1]`.
    pub fn sample(&self, obs: Tensor<2>, noise: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let (mean, log_std) = self.forward(obs);
        let u = mean + log_std.clone().exp() * noise.clone();
        // log N(u; μ, σ) with (u − μ)/σ = noise, minus the tanh Jacobian.
        let log_prob = (noise.square().mul_scalar(-0.5) - log_std - log_one_minus_tanh_sq(u.clone()))
            .sum_dim(1)
            .sub_scalar(LOG_SQRT_2PI * self.action_dim as f64);
        (tanh(u), log_prob)
    }

    /// The deterministic action `tanh(μ(s))`, `[batch, action_dim]`.
    pub fn deterministic(&self, obs: Tensor<2>) -> Tensor<2> {
        tanh(self.forward(obs).0)
    }
}
