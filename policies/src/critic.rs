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

/// Layout of a [`QEnsemble`] (each of its networks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QEnsembleConfig {
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions.
    pub action_dim: usize,
    /// Hidden widths.
    pub hidden: Vec<usize>,
    /// Hidden activation.
    pub activation: Activation,
    /// Independently initialized Q networks: 2 is SAC's twin critic, 10 RLPD's ensemble.
    pub members: usize,
    /// Layer normalization after every hidden layer, before the activation, without a learned
    /// scale and shift (RLPD's critics: it keeps Q from extrapolating far beyond the data on
    /// actions the data never shows).
    pub layer_norm: bool,
}

impl QEnsembleConfig {
    /// Builds `members` independently initialized Q networks on `device`, stored as one
    /// ensemble so all are evaluated by the same batched matrix products.
    pub fn init(&self, device: &Device) -> QEnsemble {
        let mut widths = vec![self.obs_dim + self.action_dim];
        widths.extend(&self.hidden);
        widths.push(1);
        let layers = widths.windows(2).map(|w| EnsembleLinear::new(self.members, w[0], w[1], device)).collect();
        QEnsemble { layers, activation: self.activation, members: self.members, layer_norm: self.layer_norm }
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

/// Q networks trained on the same targets. Two with their minimum as the target counter
/// overestimation (TD3/SAC); more, with the minimum of a random few as the target and their
/// mean for the actor, are REDQ's and RLPD's ensemble, which allows many updates per
/// environment step. All live in one ensemble (`[members, …]` weights), so each layer is one
/// batched matrix product.
#[derive(Module, Debug)]
pub struct QEnsemble {
    layers: Vec<EnsembleLinear>,
    #[module(skip)]
    activation: Activation,
    #[module(skip)]
    members: usize,
    #[module(skip)]
    layer_norm: bool,
}

impl QEnsemble {
    /// Number of Q networks.
    pub fn members(&self) -> usize {
        self.members
    }

    /// Every member's values of `[s, a]`, `[members, batch, 1]`.
    pub fn values(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<3> {
        let x = Tensor::cat(vec![obs, actions], 1);
        let [batch, width] = x.dims();
        let x = x.unsqueeze_dim::<3>(0).expand([self.members, batch, width]);
        let last = self.layers.len() - 1;
        self.layers.iter().enumerate().fold(x, |h, (i, layer)| {
            let h = layer.forward(h);
            match (i < last, self.layer_norm) {
                (false, _) => h,
                (true, false) => self.activation.apply(h),
                (true, true) => self.activation.apply(layer_norm(h)),
            }
        })
    }

    /// Every member's values of `[s, a]`, each `[batch, 1]`, in member order.
    pub fn forward(&self, obs: Tensor<2>, actions: Tensor<2>) -> Vec<Tensor<2>> {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        q.chunk(self.members, 0).into_iter().map(|q| q.reshape([batch, 1])).collect()
    }

    /// Elementwise minimum over the members, `[batch, 1]`.
    pub fn min(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<2> {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        q.min_dim(0).reshape([batch, 1])
    }

    /// Elementwise minimum over the members listed in `subset` (indices), `[batch, 1]`.
    pub fn min_of(&self, obs: Tensor<2>, actions: Tensor<2>, subset: &[usize]) -> Tensor<2> {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        let device = q.device();
        let rows: Vec<i64> = subset.iter().map(|&i| i as i64).collect();
        let index =
            Tensor::<1, burn::tensor::Int>::from_data(burn::tensor::TensorData::new(rows, [subset.len()]), &device);
        q.select(0, index).min_dim(0).reshape([batch, 1])
    }

    /// Elementwise mean over the members, `[batch, 1]`.
    pub fn mean(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<2> {
        let q = self.values(obs, actions);
        let [_, batch, _] = q.dims();
        q.mean_dim(0).reshape([batch, 1])
    }
}

/// Normalizes the last axis of `[members, batch, width]` to zero mean and unit variance.
fn layer_norm(h: Tensor<3>) -> Tensor<3> {
    let centred = h.clone() - h.mean_dim(2);
    let var = centred.clone().square().mean_dim(2);
    centred / var.add_scalar(1e-5).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ensemble(members: usize, layer_norm: bool) -> QEnsemble {
        let config = QEnsembleConfig {
            obs_dim: 3,
            action_dim: 2,
            hidden: vec![16, 16],
            activation: Activation::Relu,
            members,
            layer_norm,
        };
        crate::seeded_init(&Device::flex(), 7, |d| config.init(d))
    }

    fn inputs() -> (Tensor<2>, Tensor<2>) {
        let device = Device::flex();
        (
            Tensor::random([5, 3], Distribution::Normal(0.0, 1.0), &device),
            Tensor::random([5, 2], Distribution::Normal(0.0, 1.0), &device),
        )
    }

    fn host(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn the_ensemble_minimum_mean_and_subset_minimum_agree_with_the_members() {
        let q = ensemble(5, true);
        let (obs, actions) = inputs();
        let members: Vec<Vec<f32>> = q.forward(obs.clone(), actions.clone()).into_iter().map(host).collect();
        assert_eq!(members.len(), 5);
        let over = |rows: &[usize], f: fn(f32, f32) -> f32| -> Vec<f32> {
            (0..5).map(|b| rows[1..].iter().fold(members[rows[0]][b], |m, &r| f(m, members[r][b]))).collect()
        };
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
        assert!(close(&host(q.min(obs.clone(), actions.clone())), &over(&[0, 1, 2, 3, 4], f32::min)));
        assert!(close(&host(q.min_of(obs.clone(), actions.clone(), &[3, 1])), &over(&[3, 1], f32::min)));
        let mean: Vec<f32> = over(&[0, 1, 2, 3, 4], |a, b| a + b).iter().map(|s| s / 5.0).collect();
        assert!(close(&host(q.mean(obs, actions)), &mean));
    }

    #[test]
    fn layer_norm_gives_each_row_zero_mean_and_unit_variance() {
        let h = Tensor::<3>::random([2, 4, 16], Distribution::Normal(3.0, 5.0), &Device::flex());
        let n: Vec<f32> = layer_norm(h).into_data().try_to_vec::<f32>().unwrap();
        for row in n.chunks(16) {
            let mean = row.iter().sum::<f32>() / 16.0;
            let var = row.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / 16.0;
            assert!(mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3, "mean {mean} var {var}");
        }
        // With layer norm the members differ from the same weights without it.
        let (obs, actions) = inputs();
        assert_ne!(
            host(ensemble(2, true).min(obs.clone(), actions.clone())),
            host(ensemble(2, false).min(obs, actions))
        );
    }
}
