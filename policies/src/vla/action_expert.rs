//! The action expert's transformer: pre-norm blocks of self-attention over the action tokens,
//! cross-attention to the prefix, and a GELU feed-forward. The cross-attention keys and values
//! of the prefix are computed once per observation ([`ActionExpert::prefix_cache`]) and reused
//! by every denoising step, as π0 reuses its prefix KV cache.

use burn::module::Module;
use burn::nn::attention::{MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Bool, Device, Tensor};

/// Cross-attention keys and values of one prefix for every expert block, each
/// `[B, heads, P, width / heads]`, and the prefix padding `[B, P]` (true at padding).
#[derive(Debug, Clone)]
pub struct PrefixCache {
    /// `(keys, values)` per block.
    pub layers: Vec<(Tensor<4>, Tensor<4>)>,
    /// Padding of the prefix, `[B, P]`, true where a token is masked out.
    pub padding: Tensor<2, Bool>,
}

#[derive(Module, Debug)]
struct ExpertBlock {
    self_attn: MultiHeadAttention,
    cross_query: Linear,
    cross_key: Linear,
    cross_value: Linear,
    cross_output: Linear,
    ff_in: Linear,
    ff_out: Linear,
    norm_self: LayerNorm,
    norm_cross: LayerNorm,
    norm_ff: LayerNorm,
}

/// `depth` expert blocks of width `width` (see the module docs).
#[derive(Module, Debug)]
pub struct ActionExpert {
    blocks: Vec<ExpertBlock>,
    #[module(skip)]
    heads: usize,
}

impl ActionExpert {
    /// Builds the blocks on `device` (burn's default initialization, no dropout).
    pub fn new(width: usize, depth: usize, heads: usize, mlp_ratio: usize, device: &Device) -> Self {
        let linear = |i: usize, o: usize| LinearConfig::new(i, o).init(device);
        let blocks = (0..depth)
            .map(|_| ExpertBlock {
                self_attn: MultiHeadAttentionConfig::new(width, heads).with_dropout(0.0).init(device),
                cross_query: linear(width, width),
                cross_key: linear(width, width),
                cross_value: linear(width, width),
                cross_output: linear(width, width),
                ff_in: linear(width, width * mlp_ratio),
                ff_out: linear(width * mlp_ratio, width),
                norm_self: LayerNormConfig::new(width).init(device),
                norm_cross: LayerNormConfig::new(width).init(device),
                norm_ff: LayerNormConfig::new(width).init(device),
            })
            .collect();
        Self { blocks, heads }
    }

    /// `[B, T, width]` → `[B, heads, T, width / heads]`.
    fn split_heads(&self, x: Tensor<3>) -> Tensor<4> {
        let [b, t, w] = x.dims();
        x.reshape([b, t, self.heads, w / self.heads]).swap_dims(1, 2)
    }

    /// Keys and values of `memory` (`[B, P, width]`) for every block.
    pub fn prefix_cache(&self, memory: Tensor<3>, padding: Tensor<2, Bool>) -> PrefixCache {
        let layers = self
            .blocks
            .iter()
            .map(|block| {
                (
                    self.split_heads(block.cross_key.forward(memory.clone())),
                    self.split_heads(block.cross_value.forward(memory.clone())),
                )
            })
            .collect();
        PrefixCache { layers, padding }
    }

    /// Action tokens `[B, H, width]` → expert output `[B, H, width]` (before the final norm).
    pub fn forward(&self, tokens: Tensor<3>, cache: &PrefixCache) -> Tensor<3> {
        let [b, h, w] = tokens.dims();
        let p = cache.padding.dims()[1];
        let dk = w / self.heads;
        let mask = cache.padding.clone().reshape([b, 1, 1, p]);
        let mut x = tokens;
        for (block, (keys, values)) in self.blocks.iter().zip(&cache.layers) {
            let normed = block.norm_self.forward(x.clone());
            x = x + block.self_attn.forward(MhaInput::self_attn(normed)).context;
            let query = self.split_heads(block.cross_query.forward(block.norm_cross.forward(x.clone())));
            let scores = query.matmul(keys.clone().swap_dims(2, 3)).div_scalar((dk as f64).sqrt());
            let weights = softmax(scores.mask_fill(mask.clone(), -1.0e4), 3);
            let context = weights.matmul(values.clone()).swap_dims(1, 2).reshape([b, h, w]);
            x = x + block.cross_output.forward(context);
            x = x.clone() + block.ff_out.forward(gelu(block.ff_in.forward(block.norm_ff.forward(x))));
        }
        x
    }
}
