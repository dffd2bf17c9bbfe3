//! Diagonal Gaussian actor with a state-independent log standard deviation (PPO's actor).

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::distributions::{gaussian_entropy, gaussian_log_prob};
use crate::mlp::{Activation, Mlp, MlpConfig};

/// Layout of a [`GaussianActor`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaussianActorConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions.
    pub action_dim: usize,
    /// Hidden widths of the mean network.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
    /// Initial standard deviation of every action dimension, in action units.
    pub init_std: f64,
}

impl GaussianActorConfig {
    /// Builds the actor on `device`; the mean's output layer starts small (gain 0.01) so the
    /// initial policy is centred.
    pub fn init(&self, device: &Device) -> GaussianActor {
        let mean = MlpConfig::new(self.obs_dim, &self.hidden, self.action_dim, self.activation)
            .with_output_gain(0.01)
            .init(device);
        let log_std = Tensor::full([self.action_dim], self.init_std.ln(), device);
        GaussianActor { mean, log_std: Param::from_tensor(log_std) }
    }
}

/// `π(a|s) = N(μ(s), diag(σ²))` with a learned, state-independent `log σ`.
#[derive(Module, Debug)]
pub struct GaussianActor {
    mean: Mlp,
    log_std: Param<Tensor<1>>,
}

impl GaussianActor {
    /// Mean and log standard deviation, both `[batch, action_dim]`.
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let mean = self.mean.forward(obs);
        let log_std = self.log_std.val().unsqueeze_dim::<2>(0).expand(mean.shape());
        (mean, log_std)
    }

    /// Log-probability of `actions` (`[batch, action_dim]`) under the policy at `obs`
    /// (`[batch, obs_dim]`), `[batch, 1]`, and the policy entropy, `[batch, 1]`.
    pub fn log_prob_entropy(&self, obs: Tensor<2>, actions: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let (mean, log_std) = self.forward(obs);
        let entropy = gaussian_entropy(log_std.clone());
        (gaussian_log_prob(actions, mean, log_std), entropy)
    }

    /// The log standard deviation, `[action_dim]`.
    pub fn log_std(&self) -> Tensor<1> {
        self.log_std.val()
    }
}
