//! Multi-layer perceptron with configurable widths and activation.

use burn::module::Module;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::activation::{relu, tanh};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

/// Hidden-layer nonlinearity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `tanh(x)`.
    Tanh,
    /// `max(x, 0)`.
    #[default]
    Relu,
    /// `x` for `x > 0`, `exp(x) - 1` otherwise (RSL-RL's default).
    Elu,
}

impl Activation {
    pub(crate) fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Self::Tanh => tanh(x),
            Self::Relu => relu(x),
            // relu(x) + exp(min(x, 0)) − 1: burn's fused elu backward evaluates exp(x) on the
            // positive side too, which overflows to inf·0 = NaN for pre-activations above ~88.
            Self::Elu => relu(x.clone()) + relu(x.neg()).neg().exp().sub_scalar(1.0),
        }
    }
}

/// Layout of an [`Mlp`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpConfig {
    /// Input features.
    pub input: usize,
    /// Widths of the hidden layers, in order.
    pub hidden: Vec<usize>,
    /// Output features.
    pub output: usize,
    /// Nonlinearity after every hidden layer (none after the output layer).
    pub activation: Activation,
    /// Scale of the output layer's initial weights relative to the default initializer; small
    /// values (e.g. 0.01 for a policy mean) start the output near zero.
    pub output_gain: f64,
}

impl MlpConfig {
    /// An MLP `input → hidden… → output` with unit output gain.
    pub fn new(input: usize, hidden: &[usize], output: usize, activation: Activation) -> Self {
        Self { input, hidden: hidden.to_vec(), output, activation, output_gain: 1.0 }
    }

    /// Same layout with the given output-layer gain.
    pub fn with_output_gain(mut self, gain: f64) -> Self {
        self.output_gain = gain;
        self
    }

    /// Builds the network on `device` with burn's default (Kaiming-uniform) initialization.
    pub fn init(&self, device: &Device) -> Mlp {
        let mut widths = vec![self.input];
        widths.extend(&self.hidden);
        widths.push(self.output);
        let last = widths.len() - 2;
        let layers = widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let mut config = LinearConfig::new(w[0], w[1]);
                if i == last && self.output_gain != 1.0 {
                    config = config.with_initializer(Initializer::KaimingUniform {
                        gain: self.output_gain / 3f64.sqrt(),
                        fan_out_only: false,
                    });
                }
                config.init(device)
            })
            .collect();
        Mlp { layers, activation: self.activation }
    }
}

/// A stack of linear layers with an activation between them.
#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
    #[module(skip)]
    activation: Activation,
}

impl Mlp {
    /// `[.., input] → [.., output]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let last = self.layers.len() - 1;
        self.layers.iter().enumerate().fold(x, |h, (i, layer)| {
            let h = layer.forward(h);
            if i < last { self.activation.apply(h) } else { h }
        })
    }
}
