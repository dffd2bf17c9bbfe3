//! A small π0-style vision-language-action model (VLA).
//!
//! Structure (openpi `pi0.py` at small scale):
//! - a vision encoder ([`VisionEncoder`]: a ViT, or a CNN stem + transformer) over 1 to
//!   `max_views` camera views of u8 RGB images;
//! - an instruction encoder: the byte-level [`ByteTokenizer`] shipped with the model, a token
//!   embedding and a small transformer;
//! - a shared transformer (the "VLM" backbone) over image tokens, language tokens (padding
//!   masked out of attention) and one proprioception token; its output is the prefix, computed
//!   once per environment step ([`VlaContext`]);
//! - a flow-matching action expert: a transformer over `H` action tokens
//!   (`MLP_swish([action_in(x_t) ‖ sincos(t)])` plus a position embedding) that
//!   cross-attends to the prefix and outputs the velocity of the action chunk. It implements
//!   [`FlowExpert`](crate::FlowExpert), so sampling (ODE, SDE, Flow-Noise, CPS), stored chains
//!   and log-probabilities are exactly those of [`crate::FlowPolicy`];
//! - a value head on pooled features, detached by default: the prefix
//!   averaged over its valid tokens (π0.5's `value_after_vlm`, default) or the expert's output
//!   averaged over action tokens (π0), and a per-token Flow-Noise head on the expert's output.
//!
//! Conventions as in [`crate::FlowPolicy`]: `t = 1` is noise, `t = 0` data, `x_t = t·ε + (1 −
//! t)·a`, target `u = ε − a`. Chunks are `[batch, H, D]` at the model's surface and flattened
//! row-major to `[batch, H·D]` inside the samplers and chains (`[K + 1, batch, H·D]`).
//!
//! Deliberate differences from π0: the action expert cross-attends to the backbone's final
//! output (each expert block has its own key/value projections of it, cached once per
//! observation in [`PrefixCache`]) instead of attending to every backbone layer's keys and
//! values; the prefix
//! attention is fully bidirectional including the proprioception token (π0 puts the state in
//! the suffix); the tokenizer is byte-level, not SentencePiece; actions are not padded to 32.

mod action_expert;
mod model;
mod tokenizer;
mod vision;

use burn::config::Config;
use serde::{Deserialize, Serialize};

pub use action_expert::{ActionExpert, PrefixCache};
pub use model::{VlaBatch, VlaContext, VlaFeatures, VlaModel};
pub use tokenizer::{
    BOS_TOKEN, BYTE_TOKENS, ByteTokenizer, EOS_TOKEN, PAD_TOKEN, TOKENIZER_NAME, TokenBatch, TokenizerError, VOCAB_SIZE,
};
pub use vision::{VisionConfig, VisionEncoder, VisionStem, spatial_softmax};

use crate::flow::InvalidConfig;
use crate::tensor_file::TensorFileError;

/// What the value head reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueInput {
    /// The prefix (backbone output) averaged over its valid tokens, once per environment step
    /// (π0.5, `value_after_vlm = true`).
    Prefix,
    /// The action expert's output averaged over the `H` action tokens at every denoising step,
    /// averaged over steps by the sampler (π0, `value_after_vlm = false`).
    Expert,
}

/// Layout of the instruction encoder.
#[derive(Config, Debug, PartialEq)]
pub struct TextConfig {
    /// Tokens per instruction (BOS and EOS included; longer instructions are rejected by the
    /// tokenizer). Default 32.
    #[config(default = 32)]
    pub max_len: usize,
    /// Token width. Default 64.
    #[config(default = 64)]
    pub width: usize,
    /// Transformer blocks. Default 1.
    #[config(default = 1)]
    pub depth: usize,
    /// Attention heads. Default 4.
    #[config(default = 4)]
    pub heads: usize,
    /// Feed-forward width as a multiple of `width`. Default 4.
    #[config(default = 4)]
    pub mlp_ratio: usize,
}

/// Layout of a [`VlaModel`]. Defaults are the `tiny` preset (1.16M parameters for 7-D proprio
/// and actions); [`VlaConfig::small`] is 10.8M and [`VlaConfig::base`] 105M.
#[derive(Config, Debug, PartialEq)]
pub struct VlaConfig {
    /// Proprioceptive features (joint positions, gripper, …), one token. Set from the task.
    pub proprio_dim: usize,
    /// Action dimensions `D`. Set from the task.
    pub action_dim: usize,
    /// Vision encoder. Default: ViT, 64×64 images, patch 8, width 96, depth 2, 4 heads, ≤ 2 views.
    #[config(default = "VisionConfig::new().with_width(96)")]
    pub vision: VisionConfig,
    /// Instruction encoder. Default: 32 tokens, width 64, depth 1, 4 heads.
    #[config(default = "TextConfig::new()")]
    pub text: TextConfig,
    /// Width of the shared transformer (the prefix). Default 128.
    #[config(default = 128)]
    pub backbone_width: usize,
    /// Blocks of the shared transformer. Default 2.
    #[config(default = 2)]
    pub backbone_depth: usize,
    /// Attention heads of the shared transformer. Default 4.
    #[config(default = 4)]
    pub backbone_heads: usize,
    /// Width of the action expert (also of its sinusoidal time embedding). Default 96.
    #[config(default = 96)]
    pub expert_width: usize,
    /// Blocks of the action expert (self-attention over action tokens, cross-attention to the
    /// prefix, feed-forward). Default 2.
    #[config(default = 2)]
    pub expert_depth: usize,
    /// Attention heads of the action expert. Default 4.
    #[config(default = 4)]
    pub expert_heads: usize,
    /// Feed-forward width of backbone and expert as a multiple of their width. Default 4.
    #[config(default = 4)]
    pub mlp_ratio: usize,
    /// Model action horizon `H`, actions per predicted chunk. Default 8.
    #[config(default = 8)]
    pub horizon: usize,
    /// Executed chunk length `C ≤ H` (log-probabilities cover these). Default 4.
    #[config(default = 4)]
    pub chunk: usize,
    /// Denoising (Euler) steps `K`. Default 4.
    #[config(default = 4)]
    pub denoise_steps: usize,
    /// What the value head reads. Default `prefix`.
    #[config(default = "ValueInput::Prefix")]
    pub value_input: ValueInput,
    /// Hidden widths of the value head (ReLU). Default [256, 128].
    #[config(default = "vec![256, 128]")]
    pub value_hidden: Vec<usize>,
    /// Smallest std of the Flow-Noise head. Default 0.08.
    #[config(default = 0.08)]
    pub noise_std_min: f64,
    /// Largest std of the Flow-Noise head. Default 0.16.
    #[config(default = 0.16)]
    pub noise_std_max: f64,
    /// Stop gradients from the value head into the features it reads. Default true.
    #[config(default = true)]
    pub detach_critic_input: bool,
    /// Outputs of the grounding head, an auxiliary target of SFT: privileged environment state
    /// (e.g. the instructed object relative to the hand) predicted from the prefix's
    /// proprioception token, which attends to image and language, so that the token the action
    /// expert reads says where the instruction points. 0: no head. Default 0.
    #[config(default = 0)]
    pub grounding_dim: usize,
    /// Also condition the action expert on the grounding head's prediction (mapped to the
    /// expert width and added to every action token), so the estimate of where the
    /// instruction points reaches the actions directly instead of only through
    /// cross-attention. Needs `grounding_dim > 0`. Default false.
    #[config(default = false)]
    pub grounding_to_expert: bool,
}

impl VlaConfig {
    /// 1.16M parameters (7-D proprio and actions): the defaults.
    pub fn tiny(proprio_dim: usize, action_dim: usize) -> Self {
        Self::new(proprio_dim, action_dim)
    }

    /// 10.8M parameters: ViT 256×4 (8 heads), text 256×2, backbone 256×4, expert 192×4.
    pub fn small(proprio_dim: usize, action_dim: usize) -> Self {
        Self::new(proprio_dim, action_dim)
            .with_vision(VisionConfig::new().with_width(256).with_depth(4).with_heads(8))
            .with_text(TextConfig::new().with_width(256).with_depth(2).with_heads(8))
            .with_backbone_width(256)
            .with_backbone_depth(4)
            .with_backbone_heads(8)
            .with_expert_width(192)
            .with_expert_depth(4)
            .with_expert_heads(8)
    }

    /// 105M parameters: 224×224 images with patch 16, ViT 512×8, text 512×4, backbone
    /// 640×8, expert 512×6, horizon 16.
    pub fn base(proprio_dim: usize, action_dim: usize) -> Self {
        Self::new(proprio_dim, action_dim)
            .with_vision(
                VisionConfig::new()
                    .with_image_size(224)
                    .with_patch_size(16)
                    .with_width(512)
                    .with_depth(8)
                    .with_heads(8),
            )
            .with_text(TextConfig::new().with_max_len(48).with_width(512).with_depth(4).with_heads(8))
            .with_backbone_width(640)
            .with_backbone_depth(8)
            .with_backbone_heads(10)
            .with_expert_width(512)
            .with_expert_depth(6)
            .with_expert_heads(8)
            .with_horizon(16)
            .with_chunk(8)
            .with_value_hidden(vec![512, 256])
    }

    /// Checks every field; the error names the first one at fault.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let bad = |field: &str, value: String, allowed: &str| {
            Err(InvalidConfig { field: field.into(), value, allowed: allowed.into() })
        };
        let v = &self.vision;
        if self.proprio_dim == 0 {
            return bad("proprio_dim", "0".into(), "≥ 1");
        }
        if self.action_dim == 0 {
            return bad("action_dim", "0".into(), "≥ 1");
        }
        if v.patch_size == 0 || v.image_size < v.patch_size || !v.image_size.is_multiple_of(v.patch_size) {
            return bad(
                "vision.image_size",
                format!("{} (patch {})", v.image_size, v.patch_size),
                "a positive multiple of vision.patch_size",
            );
        }
        if v.stem == VisionStem::Cnn && (!v.patch_size.is_power_of_two() || v.patch_size < 2) {
            return bad("vision.patch_size", v.patch_size.to_string(), "a power of two ≥ 2 for the cnn stem");
        }
        if v.stem != VisionStem::Cnn && v.film {
            return bad("vision.film", "true".into(), "false unless vision.stem = \"cnn\"");
        }
        if v.stem != VisionStem::Cnn && v.keypoints > 0 {
            return bad("vision.keypoints", v.keypoints.to_string(), "0 unless vision.stem = \"cnn\"");
        }
        if v.max_views == 0 {
            return bad("vision.max_views", "0".into(), "≥ 1");
        }
        // (width, depth, heads, mlp_ratio) fields of each transformer, by their config paths.
        for (names, width, depth, heads, ratio) in [
            (["vision.width", "vision.depth", "vision.mlp_ratio"], v.width, v.depth, v.heads, v.mlp_ratio),
            (
                ["text.width", "text.depth", "text.mlp_ratio"],
                self.text.width,
                self.text.depth,
                self.text.heads,
                self.text.mlp_ratio,
            ),
            (
                ["backbone_width", "backbone_depth", "mlp_ratio"],
                self.backbone_width,
                self.backbone_depth,
                self.backbone_heads,
                self.mlp_ratio,
            ),
            (
                ["expert_width", "expert_depth", "mlp_ratio"],
                self.expert_width,
                self.expert_depth,
                self.expert_heads,
                self.mlp_ratio,
            ),
        ] {
            if depth == 0 {
                return bad(names[1], "0".into(), "≥ 1");
            }
            if heads == 0 || width == 0 || !width.is_multiple_of(heads) {
                return bad(names[0], format!("{width} ({heads} heads)"), "a positive multiple of the number of heads");
            }
            if ratio == 0 {
                return bad(names[2], "0".into(), "≥ 1");
            }
        }
        if !self.expert_width.is_multiple_of(2) {
            return bad("expert_width", self.expert_width.to_string(), "even (sin/cos time embedding)");
        }
        if self.text.max_len < 2 {
            return bad("text.max_len", self.text.max_len.to_string(), "≥ 2 (BOS and EOS)");
        }
        if self.horizon == 0 {
            return bad("horizon", "0".into(), "≥ 1");
        }
        if self.chunk == 0 || self.chunk > self.horizon {
            return bad("chunk", self.chunk.to_string(), "1 ≤ chunk ≤ horizon");
        }
        if self.denoise_steps == 0 {
            return bad("denoise_steps", "0".into(), "≥ 1");
        }
        if self.value_hidden.contains(&0) {
            return bad("value_hidden", format!("{:?}", self.value_hidden), "positive widths");
        }
        if self.grounding_to_expert && self.grounding_dim == 0 {
            return bad("grounding_to_expert", "true".into(), "false without a grounding head (grounding_dim 0)");
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

    /// Prefix tokens for `views` camera views: `views·N + max_len + 1`.
    pub fn prefix_tokens(&self, views: usize) -> usize {
        views * self.vision.tokens_per_view() + self.text.max_len + 1
    }

    /// Parameter count computed from the layout alone (no allocation); equals
    /// [`VlaModel::num_params`] of the built model.
    pub fn param_count(&self) -> usize {
        let linear = |i: usize, o: usize| i * o + o;
        let norm = |d: usize| 2 * d;
        let mha = |d: usize| 4 * linear(d, d);
        let ff = |d: usize, r: usize| linear(d, d * r) + linear(d * r, d);
        let encoder = |d: usize, depth: usize, r: usize| depth * (mha(d) + ff(d, r) + 2 * norm(d));
        let decoder = |d: usize, depth: usize, r: usize| depth * (2 * mha(d) + ff(d, r) + 3 * norm(d));
        let mlp = |i: usize, hidden: &[usize], o: usize| {
            let mut widths = vec![i];
            widths.extend(hidden);
            widths.push(o);
            widths.windows(2).map(|w| linear(w[0], w[1])).sum::<usize>()
        };
        let v = &self.vision;
        let t = &self.text;
        let channels = v.stem_channels();
        let stem = match v.stem {
            VisionStem::Patch => linear(v.patch_size * v.patch_size * 3, v.width),
            VisionStem::Cnn => channels.iter().map(|&(c_in, c_out)| c_in * c_out * 16 + c_out).sum(),
        };
        let film = if v.film { channels.iter().map(|&(_, c_out)| linear(t.width, 2 * c_out)).sum() } else { 0 };
        let keypoints = match channels.first() {
            Some(&(_, c_first)) if v.keypoints > 0 => linear(c_first, v.keypoints) + linear(2 * v.keypoints, v.width),
            _ => 0,
        };
        let vision = stem
            + film
            + keypoints
            + (v.tokens_per_view() + v.max_views) * v.width
            + encoder(v.width, v.depth, v.mlp_ratio)
            + norm(v.width);
        let text = (VOCAB_SIZE + t.max_len) * t.width + encoder(t.width, t.depth, t.mlp_ratio) + norm(t.width);
        let (d, e) = (self.backbone_width, self.expert_width);
        let backbone = linear(v.width, d)
            + linear(t.width, d)
            + linear(self.proprio_dim, d)
            + encoder(d, self.backbone_depth, self.mlp_ratio)
            + norm(d);
        let expert = linear(d, e)
            + linear(self.action_dim, e)
            + linear(2 * e, e)
            + linear(e, e)
            + self.horizon * e
            + decoder(e, self.expert_depth, self.mlp_ratio)
            + norm(e)
            + linear(e, self.action_dim);
        let value_in = match self.value_input {
            ValueInput::Prefix => d,
            ValueInput::Expert => e,
        };
        let grounding = if self.grounding_dim > 0 { mlp(d, &[d], self.grounding_dim) } else { 0 }
            + if self.grounding_to_expert { linear(self.grounding_dim, e) } else { 0 };
        let heads = mlp(e, &[128, 64], self.action_dim) + mlp(value_in, &self.value_hidden, 1) + grounding;
        vision + text + backbone + expert + heads
    }
}

/// Errors of the VLA: bad configuration, bad input, bad checkpoint.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VlaError {
    /// A configuration field is out of range.
    #[error(transparent)]
    Config(#[from] InvalidConfig),
    /// An input field has the wrong size or values.
    #[error("VLA input `{field}`: {message}")]
    Input {
        /// The field at fault (`images`, `tokens`, `token_mask`, `proprio`, …).
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Instruction tokenization failed.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// A checkpoint or weight file could not be used.
    #[error(transparent)]
    TensorFile(#[from] TensorFileError),
    /// A checkpoint's metadata is missing or malformed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// One batch of observations for the VLA in host memory: the plain struct environments fill.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VlaInput {
    /// Batch size `B` (≥ 1).
    pub batch: usize,
    /// Camera views `V` per sample, `1 ≤ V ≤ vision.max_views`.
    pub views: usize,
    /// Image height, pixels (must equal `vision.image_size`).
    pub height: usize,
    /// Image width, pixels (must equal `vision.image_size`).
    pub width: usize,
    /// RGB pixels, row-major `[B, V, height, width, 3]`, 0–255 (normalized inside the model).
    pub images: Vec<u8>,
    /// Token ids from [`ByteTokenizer`], `[B, L]` with `1 ≤ L ≤ text.max_len`, each `< VOCAB_SIZE`.
    pub tokens: Vec<u32>,
    /// `[B, L]`: `true` for a real token, `false` for padding (excluded from attention and
    /// pooling).
    pub token_mask: Vec<bool>,
    /// Proprioception, `[B, proprio_dim]`, f32 (normalized by the caller).
    pub proprio: Vec<f32>,
}

impl VlaInput {
    /// Builds an input from images, instructions (tokenized with `tokenizer`) and proprio.
    /// `images`: `[batch, views, height, width, 3]` u8; `proprio`: `[batch, proprio_dim]`.
    #[allow(clippy::too_many_arguments, reason = "the input's parts, each with its own shape")]
    pub fn new(
        tokenizer: &ByteTokenizer,
        batch: usize,
        views: usize,
        height: usize,
        width: usize,
        images: Vec<u8>,
        instructions: &[&str],
        proprio: Vec<f32>,
    ) -> Result<Self, VlaError> {
        if instructions.len() != batch {
            return Err(VlaError::Input {
                field: "instructions",
                message: format!("{} instructions for a batch of {batch}", instructions.len()),
            });
        }
        let tokens = tokenizer.encode_batch(instructions)?;
        Ok(Self { batch, views, height, width, images, tokens: tokens.ids, token_mask: tokens.mask, proprio })
    }

    /// The samples `rows` (indices `< batch`, in that order) as a batch of `rows.len()`.
    pub fn select(&self, rows: &[usize]) -> Self {
        let b = self.batch.max(1);
        let (image, len, pd) = (self.images.len() / b, self.tokens.len() / b, self.proprio.len() / b);
        let mut out =
            Self { batch: rows.len(), views: self.views, height: self.height, width: self.width, ..Default::default() };
        for &i in rows {
            out.images.extend_from_slice(&self.images[i * image..(i + 1) * image]);
            out.tokens.extend_from_slice(&self.tokens[i * len..(i + 1) * len]);
            out.token_mask.extend_from_slice(&self.token_mask[i * len..(i + 1) * len]);
            out.proprio.extend_from_slice(&self.proprio[i * pd..(i + 1) * pd]);
        }
        out
    }
}
