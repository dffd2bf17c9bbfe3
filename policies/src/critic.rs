//! State-value and action-value critics.

use burn::module::{Module, Param};
use burn::tensor::{Device, Distribution, Tensor};
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

/// Layout of a [`TwinQ`] (each of its two networks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwinQConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions.
    pub action_dim: usize,
    /// Hidden widths.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
}

impl TwinQConfig {
    /// Builds two independently initialized Q networks on `device`, stored as one ensemble so
    /// both are evaluated by the same batched matrix products.
    pub fn init(&self, device: &Device) -> TwinQ {
        let mut widths = vec![self.obs_dim + self.action_dim];
        widths.extend(&self.hidden);
        widths.push(1);
        let layers = widths.windows(2).map(|w| EnsembleLinear::new(2, w[0], w[1], device)).collect();
        TwinQ { layers, activation: self.activation }
    }
}

/// `members` independent linear layers applied to `[members, batch, in]` at once.
#[derive(Module, Debug)]
struct EnsembleLinear {
    /// `[members, in, out]`.
    weight: Param<Tensor<3>>,
    /// `[members, 1, out]`.
    bias: Param<Tensor<3>>,
}

impl EnsembleLinear {
    /// burn's `Linear` initialization per member: U(±1/√in) for weights and biases.
    fn new(members: usize, d_in: usize, d_out: usize, device: &Device) -> Self {
        let bound = 1.0 / (d_in as f64).sqrt();
        let uniform = Distribution::Uniform(-bound, bound);
        Self {
            weight: Param::from_tensor(Tensor::random([members, d_in, d_out], uniform, device)),
            bias: Param::from_tensor(Tensor::random([members, 1, d_out], uniform, device)),
        }
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        x.matmul(self.weight.val()) + self.bias.val()
    }
}

/// Two Q networks trained on the same targets; the minimum counters overestimation (TD3/SAC).
/// Both live in one ensemble (`[2, …]` weights), so each layer is one batched matrix product.
#[derive(Module, Debug)]
pub struct TwinQ {
    layers: Vec<EnsembleLinear>,
    #[module(skip)]
    activation: Activation,
}

impl TwinQ {
    /// Both critics' values of `[s, a]`, `[2, batch, 1]`.
    fn values(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<3> {
        let x = Tensor::cat(vec![obs, actions], 1);
        let [batch, width] = x.dims();
        let x = x.unsqueeze_dim::<3>(0).expand([2, batch, width]);
        let last = self.layers.len() - 1;
        self.layers.iter().enumerate().fold(x, |h, (i, layer)| {
            let h = layer.forward(h);
            if i < last { self.activation.apply(h) } else { h }
        })
    }

    /// Both critics' values of `[s, a]`, each `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>, actions: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        let [q1, q2] = q.chunk(2, 0).try_into().expect("two members");
        (q1.reshape([batch, 1]), q2.reshape([batch, 1]))
    }

    /// Elementwise minimum of the two critics, `[batch, 1]`.
    pub fn min(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<2> {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        q.min_dim(0).reshape([batch, 1])
    }
}
