//! Vision encoder of the VLA: a small ViT (patch embedding + pre-norm transformer blocks) over
//! one or more camera views, or a hybrid with a strided CNN stem in place of the patch embedding.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::gelu;
use burn::tensor::{Device, Distribution, Tensor};
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
}

impl VisionConfig {
    /// Tokens per view, `(image_size / patch_size)²`.
    pub fn tokens_per_view(&self) -> usize {
        let g = self.image_size / self.patch_size.max(1);
        g * g
    }

    /// Builds the encoder on `device` (the configuration must have been validated by
    /// [`crate::vla::VlaConfig::validate`]).
    pub fn init(&self, device: &Device) -> VisionEncoder {
        let (patch_embed, stem) = match self.stem {
            VisionStem::Patch => {
                (Some(LinearConfig::new(self.patch_size * self.patch_size * 3, self.width).init(device)), Vec::new())
            }
            VisionStem::Cnn => {
                let layers = self.patch_size.trailing_zeros() as usize;
                let hidden = (self.width / 2).max(16);
                let convs = (0..layers)
                    .map(|i| {
                        let c_in = if i == 0 { 3 } else { hidden };
                        let c_out = if i + 1 == layers { self.width } else { hidden };
                        Conv2dConfig::new([c_in, c_out], [4, 4])
                            .with_stride([2, 2])
                            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                            .init(device)
                    })
                    .collect();
                (None, convs)
            }
        };
        VisionEncoder {
            patch_embed,
            stem,
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
pub(crate) fn encoder_blocks(width: usize, depth: usize, heads: usize, mlp_ratio: usize, device: &Device) -> TransformerEncoder {
    TransformerEncoderConfig::new(width, width * mlp_ratio, heads, depth)
        .with_dropout(0.0)
        .with_norm_first(true)
        .init(device)
}

/// Images `[batch, views, H, W, 3]` (raw pixel values 0–255 as floats) → tokens
/// `[batch, views·N, width]`, `N = (H / patch)²`, view-major.
#[derive(Module, Debug)]
pub struct VisionEncoder {
    /// Patch stem (ViT): `[patch·patch·3, width]`.
    patch_embed: Option<Linear>,
    /// CNN stem convolutions (empty for the patch stem).
    stem: Vec<Conv2d>,
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
    /// here to `[-1, 1]`) into tokens `[batch, views·N, width]`. Shapes must match the
    /// configuration (checked by the VLA's input validation).
    pub fn forward(&self, images: Tensor<5>) -> Tensor<3> {
        let [batch, views, h, w, c] = images.dims();
        let x = images.reshape([batch * views, h, w, c]).div_scalar(127.5).sub_scalar(1.0);
        let p = self.patch_size;
        let tokens = match &self.patch_embed {
            Some(embed) => {
                let (gh, gw) = (h / p, w / p);
                let patches = x
                    .reshape([batch * views, gh, p, gw, p, c])
                    .permute([0, 1, 3, 2, 4, 5])
                    .reshape([batch * views, gh * gw, p * p * c]);
                embed.forward(patches)
            }
            None => {
                let mut y = x.permute([0, 3, 1, 2]);
                for conv in &self.stem {
                    y = gelu(conv.forward(y));
                }
                let [bv, ch, gh, gw] = y.dims();
                y.reshape([bv, ch, gh * gw]).swap_dims(1, 2)
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
}
