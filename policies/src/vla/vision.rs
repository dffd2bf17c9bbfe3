//! Vision encoder of the VLA: a small ViT (patch embedding + pre-norm transformer blocks) over
//! one or more camera views, or a hybrid with a strided CNN stem in place of the patch embedding.
//!
//! The CNN stem can be conditioned on the instruction (FiLM, as RT-1's image tokenizer) and can
//! add a spatial-softmax keypoint token per view (robomimic's `SpatialSoftmax`): both give the
//! encoder a way to say *where the named object is* that does not have to be learned per scene.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use serde::{Deserialize, Serialize};

/// How images become tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VisionStem {
    /// ViT patch embedding: non-overlapping `patch × patch` patches, flattened in (row, column,
    /// channel) order, through one linear layer (equivalent to a stride-`patch` convolution).
    Patch,
    /// CNN stem: `log2(patch)` convolutions of kernel 4, stride 2, padding 1 with GELU, giving
    /// the same token grid as the patch stem (`patch` must be a power of two).
    Cnn,
}

/// Layout of the [`VisionEncoder`].
#[derive(Config, Debug, PartialEq)]
pub struct VisionConfig {
    /// Token stem. Default `patch` (a ViT).
    #[config(default = "VisionStem::Patch")]
    pub stem: VisionStem,
    /// Image height and width, pixels (square images). Default 64.
    #[config(default = 64)]
    pub image_size: usize,
    /// Patch side, pixels; `image_size` must be a multiple. Default 8 (64 tokens per 64×64 view).
    #[config(default = 8)]
    pub patch_size: usize,
    /// Most camera views an input may have (each view has a learned view embedding). Default 2.
    #[config(default = 2)]
    pub max_views: usize,
    /// Token width. Default 128.
    #[config(default = 128)]
    pub width: usize,
    /// Transformer blocks. Default 2.
    #[config(default = 2)]
    pub depth: usize,
    /// Attention heads (`width` must be a multiple). Default 4.
    #[config(default = 4)]
    pub heads: usize,
    /// Feed-forward width as a multiple of `width`. Default 4.
    #[config(default = 4)]
    pub mlp_ratio: usize,
    /// Condition every CNN stem convolution on the instruction (FiLM): its output is scaled by
    /// `1 + γ` and shifted by `β`, both linear in the instruction encoder's features averaged
    /// over valid tokens, so early features can respond to the object the instruction names
    /// (a colour filter for "the red cube") rather than to every object. Needs the `cnn` stem.
    /// Default false.
    #[config(default = false)]
    pub film: bool,
    /// Spatial-softmax keypoints per view (0: none): a 1×1 convolution of the first stem
    /// layer's map (`image_size / 2` square, the finest the stem has) gives `keypoints`
    /// channels; each channel's softmax over positions gives its expected image coordinates
    /// in `[-1, 1]`, and the `2·keypoints` coordinates become one extra token per view. With
    /// `film` a keypoint can track the instructed object across scenes. Needs the `cnn` stem.
    /// Default 0.
    #[config(default = 0)]
    pub keypoints: usize,
}

impl VisionConfig {
    /// Tokens per view: `(image_size / patch_size)²` patch tokens, plus one keypoint token
    /// when `keypoints > 0`.
    pub fn tokens_per_view(&self) -> usize {
        let g = self.image_size / self.patch_size.max(1);
        g * g + usize::from(self.keypoints > 0)
    }

    /// `(in, out)` channels of each CNN stem convolution (empty for the patch stem).
    pub(crate) fn stem_channels(&self) -> Vec<(usize, usize)> {
        if self.stem == VisionStem::Patch {
            return Vec::new();
        }
        let layers = self.patch_size.trailing_zeros() as usize;
        let hidden = (self.width / 2).max(16);
        (0..layers)
            .map(|i| (if i == 0 { 3 } else { hidden }, if i + 1 == layers { self.width } else { hidden }))
            .collect()
    }

    /// Builds the encoder on `device`; `condition_dim` is the width of the instruction features
    /// FiLM reads (unused without `film`). The configuration must have been validated by
    /// [`crate::vla::VlaConfig::validate`].
    pub fn init(&self, condition_dim: usize, device: &Device) -> VisionEncoder {
        let channels = self.stem_channels();
        let stem = channels
            .iter()
            .map(|&(c_in, c_out)| {
                Conv2dConfig::new([c_in, c_out], [4, 4])
                    .with_stride([2, 2])
                    .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                    .init(device)
            })
            .collect();
        let film = if self.film {
            channels.iter().map(|&(_, c_out)| LinearConfig::new(condition_dim, 2 * c_out).init(device)).collect()
        } else {
            Vec::new()
        };
        let (keypoint_conv, keypoint_proj) = match channels.first() {
            Some(&(_, c_first)) if self.keypoints > 0 => (
                Some(Conv2dConfig::new([c_first, self.keypoints], [1, 1]).init(device)),
                Some(LinearConfig::new(2 * self.keypoints, self.width).init(device)),
            ),
            _ => (None, None),
        };
        VisionEncoder {
            patch_embed: (self.stem == VisionStem::Patch)
                .then(|| LinearConfig::new(self.patch_size * self.patch_size * 3, self.width).init(device)),
            stem,
            film,
            keypoint_conv,
            keypoint_proj,
            pos_embed: Param::from_tensor(Tensor::random(
                [self.tokens_per_view(), self.width],
                Distribution::Normal(0.0, 0.02),
                device,
            )),
            view_embed: Param::from_tensor(Tensor::random(
                [self.max_views, self.width],
                Distribution::Normal(0.0, 0.02),
                device,
            )),
            blocks: encoder_blocks(self.width, self.depth, self.heads, self.mlp_ratio, device),
            norm: LayerNormConfig::new(self.width).init(device),
            patch_size: self.patch_size,
            width: self.width,
        }
    }
}

/// A pre-norm transformer encoder without dropout (`depth` blocks of width `width`).
pub(crate) fn encoder_blocks(
    width: usize,
    depth: usize,
    heads: usize,
    mlp_ratio: usize,
    device: &Device,
) -> TransformerEncoder {
    TransformerEncoderConfig::new(width, width * mlp_ratio, heads, depth)
        .with_dropout(0.0)
        .with_norm_first(true)
        .init(device)
}

/// Images `[batch, views, H, W, 3]` (raw pixel values 0–255 as floats) → tokens
/// `[batch, views·N, width]`, `N` = [`VisionConfig::tokens_per_view`], view-major.
#[derive(Module, Debug)]
pub struct VisionEncoder {
    /// Patch stem (ViT): `[patch·patch·3, width]`.
    patch_embed: Option<Linear>,
    /// CNN stem convolutions (empty for the patch stem).
    stem: Vec<Conv2d>,
    /// FiLM generators, one per stem convolution: instruction features → `[γ ‖ β]`, 2 × its
    /// output channels (empty without `film`).
    film: Vec<Linear>,
    /// 1×1 convolution of the first stem layer's map to the keypoint channels.
    keypoint_conv: Option<Conv2d>,
    /// Keypoint coordinates `[2·keypoints]` → one token `[width]`.
    keypoint_proj: Option<Linear>,
    /// Learned position embedding, `[N, width]`.
    pos_embed: Param<Tensor<2>>,
    /// Learned view embedding, `[max_views, width]`.
    view_embed: Param<Tensor<2>>,
    blocks: TransformerEncoder,
    norm: LayerNorm,
    #[module(skip)]
    patch_size: usize,
    #[module(skip)]
    width: usize,
}

impl VisionEncoder {
    /// Token width.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Encodes `images` `[batch, views, H, W, 3]` with pixel values in `[0, 255]` (normalized
    /// here to `[-1, 1]`) into tokens `[batch, views·N, width]`. `condition` `[batch,
    /// condition_dim]` (the instruction features) drives FiLM; an encoder without `film`
    /// ignores it, and without it the stem runs unconditioned. Shapes must match the configuration (checked by
    /// the VLA's input validation).
    pub fn forward(&self, images: Tensor<5>, condition: Option<Tensor<2>>) -> Tensor<3> {
        let [batch, views, h, w, c] = images.dims();
        let bv = batch * views;
        let x = images.reshape([bv, h, w, c]).div_scalar(127.5).sub_scalar(1.0);
        let p = self.patch_size;
        let tokens = match &self.patch_embed {
            Some(embed) => {
                let (gh, gw) = (h / p, w / p);
                let patches =
                    x.reshape([bv, gh, p, gw, p, c]).permute([0, 1, 3, 2, 4, 5]).reshape([bv, gh * gw, p * p * c]);
                embed.forward(patches)
            }
            None => {
                // One condition row per view (the views of a sample share its instruction).
                let condition = condition.filter(|_| !self.film.is_empty()).map(|cond| {
                    let dim = cond.dims()[1];
                    cond.unsqueeze_dim::<3>(1).expand([batch, views, dim]).reshape([bv, dim])
                });
                let mut y = x.permute([0, 3, 1, 2]);
                let mut keypoint_token = None;
                for (i, conv) in self.stem.iter().enumerate() {
                    y = conv.forward(y);
                    if let (Some(film), Some(cond)) = (self.film.get(i), &condition) {
                        let ch = y.dims()[1];
                        let gamma_beta = film.forward(cond.clone()).reshape([bv, 2 * ch, 1, 1]);
                        y = y * (gamma_beta.clone().narrow(1, 0, ch) + 1.0) + gamma_beta.narrow(1, ch, ch);
                    }
                    y = gelu(y);
                    if i == 0 {
                        keypoint_token = self.keypoint_token(y.clone());
                    }
                }
                let [_, ch, gh, gw] = y.dims();
                let patches = y.reshape([bv, ch, gh * gw]).swap_dims(1, 2);
                match keypoint_token {
                    Some(token) => Tensor::cat(vec![patches, token], 1),
                    None => patches,
                }
            }
        };
        let n = tokens.dims()[1];
        // Each view is encoded on its own (as a pretrained single-image encoder would); the view
        // embedding is added afterwards so the shared transformer can tell the views apart.
        let tokens = tokens + self.pos_embed.val().unsqueeze_dim::<3>(0);
        let tokens = self.norm.forward(self.blocks.forward(TransformerEncoderInput::new(tokens)));
        let tokens = tokens.reshape([batch, views, n, self.width])
            + self.view_embed.val().narrow(0, 0, views).reshape([1, views, 1, self.width]);
        tokens.reshape([batch, views * n, self.width])
    }

    /// The keypoint token `[bv, 1, width]` of the first stem layer's `map` `[bv, C, h, w]`:
    /// [`spatial_softmax`] of its keypoint channels, projected. `None` without keypoints.
    fn keypoint_token(&self, map: Tensor<4>) -> Option<Tensor<3>> {
        let (conv, proj) = (self.keypoint_conv.as_ref()?, self.keypoint_proj.as_ref()?);
        let expected = spatial_softmax(conv.forward(map));
        let [bv, k, _] = expected.dims();
        Some(proj.forward(expected.reshape([bv, 2 * k])).unsqueeze_dim::<3>(1))
    }
}

/// Expected image coordinates of each channel of `logits` `[B, C, h, w]` under the softmax over
/// its `h·w` positions: `[B, C, 2]` as (x, y), each in `[-1, 1]` (−1 at the left column / top
/// row, +1 at the right / bottom; 0 along an axis of length 1).
pub fn spatial_softmax(logits: Tensor<4>) -> Tensor<3> {
    let [b, c, h, w] = logits.dims();
    let coord = |i: usize, n: usize| if n > 1 { 2.0 * i as f32 / (n - 1) as f32 - 1.0 } else { 0.0 };
    let grid: Vec<f32> = (0..h * w).flat_map(|pos| [coord(pos % w, w), coord(pos / w, h)]).collect();
    let grid = Tensor::<2>::from_data(TensorData::new(grid, [h * w, 2]), &logits.device());
    let attention = softmax(logits.reshape([b, c, h * w]), 2);
    attention.matmul(grid.unsqueeze_dim::<3>(0).expand([b, h * w, 2]))
}
