//! State-value and action-value critics.

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::mlp::{Activation, Mlp, MlpConfig};

/// Layout of a [`ValueCritic`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueCriticConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Hidden widths.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
}

impl ValueCriticConfig {
    /// Builds the critic on `device`.
    pub fn init(&self, device: &Device) -> ValueCritic {
        ValueCritic { net: MlpConfig::new(self.obs_dim, &self.hidden, 1, self.activation).init(device) }
    }
}

/// `V(s)`: `[batch, obs_dim] → [batch, 1]`.
#[derive(Module, Debug)]
pub struct ValueCritic {
    net: Mlp,
}

impl ValueCritic {
    /// State values, `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs)
    }
}

/// Layout of a [`QCritic`] (and of each half of a [`TwinQ`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QCriticConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions.
    pub action_dim: usize,
    /// Hidden widths.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
}

impl QCriticConfig {
    /// Builds one Q network on `device`.
    pub fn init(&self, device: &Device) -> QCritic {
        let net = MlpConfig::new(self.obs_dim + self.action_dim, &self.hidden, 1, self.activation).init(device);
        QCritic { net }
    }

    /// Builds two independently initialized Q networks on `device`.
    pub fn init_twin(&self, device: &Device) -> TwinQ {
        TwinQ { q1: self.init(device), q2: self.init(device) }
    }
}

/// `Q(s, a)`: `([batch, obs_dim], [batch, action_dim]) → [batch, 1]`.
#[derive(Module, Debug)]
pub struct QCritic {
    net: Mlp,
}

impl QCritic {
    /// Action values of `obs_action = [s, a]`, `[batch, obs_dim + action_dim] → [batch, 1]`.
    pub fn forward(&self, obs_action: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs_action)
    }
}

/// Two Q networks trained on the same targets; the minimum counters overestimation (TD3/SAC).
#[derive(Module, Debug)]
pub struct TwinQ {
    /// First critic.
    pub q1: QCritic,
    /// Second critic.
    pub q2: QCritic,
}

impl TwinQ {
    /// Both critics' values of `[s, a]`, each `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>, actions: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let x = Tensor::cat(vec![obs, actions], 1);
        (self.q1.forward(x.clone()), self.q2.forward(x))
    }

    /// Elementwise minimum of the two critics, `[batch, 1]`.
    pub fn min(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<2> {
        let (q1, q2) = self.forward(obs, actions);
        q1.min_pair(q2)
    }
}
