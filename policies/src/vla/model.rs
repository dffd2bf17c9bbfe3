//! The VLA module: encoders, shared transformer, flow-matching action expert, heads; inputs,
//! checkpoints.

use std::collections::BTreeMap;
use std::path::Path;

use burn::module::{Module, Param};
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderInput};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::silu;
use burn::tensor::{Bool, Device, Distribution, Int, Tensor, TensorData};

use super::action_expert::{ActionExpert, PrefixCache};
use super::tokenizer::{ByteTokenizer, TOKENIZER_NAME, VOCAB_SIZE};
use super::vision::{VisionEncoder, encoder_blocks};
use super::{ValueInput, VlaConfig, VlaError, VlaInput};
use crate::flow::{
    ChainEval, FlowExpert, FlowLayout, FlowSample, NoiseMethod, StochasticSteps, bounded_std, flow_evaluate_chain,
    flow_sample, sincos_embedding, time_scaling,
};
use crate::mlp::{Activation, Mlp, MlpConfig};
use crate::params::named_params;
use crate::tensor_file::{NameMap, load_mapped, read_safetensors, write_safetensors};

/// Metadata key of the JSON [`VlaConfig`] in a VLA checkpoint.
const CONFIG_KEY: &str = "embodia.vla.config";
/// Metadata key of the tokenizer name.
const TOKENIZER_KEY: &str = "embodia.vla.tokenizer";

/// A [`VlaInput`] on the device.
#[derive(Debug, Clone)]
pub struct VlaBatch {
    /// Pixel values 0–255 as floats, `[B, V, H, W, 3]`.
    pub images: Tensor<5>,
    /// Token ids, `[B, L]`.
    pub tokens: Tensor<2, Int>,
    /// `[B, L]`, `true` at padding (burn's attention-mask convention).
    pub padding: Tensor<2, Bool>,
    /// Proprioception, `[B, proprio_dim]`.
    pub proprio: Tensor<2>,
}

/// The prefix of one observation batch, computed once per environment step and reused by every
/// denoising step (π0's prefix KV cache).
#[derive(Debug, Clone)]
pub struct VlaContext {
    /// Cross-attention keys and values of the prefix (projected to the expert width) for
    /// every expert block, `[B, heads, P, expert_width / heads]` each, `P = V·N + L + 1`, and
    /// the prefix padding `[B, P]` (`true` at language padding).
    pub cache: PrefixCache,
    /// The prefix averaged over its valid tokens, `[B, backbone_width]`.
    pub pooled: Tensor<2>,
    /// The prefix's instruction tokens averaged over the valid ones, `[B, backbone_width]`: the
    /// instruction as the shared transformer read it, undiluted by the image tokens it shares
    /// `pooled` with.
    pub pooled_instruction: Tensor<2>,
    /// The prefix's proprioception token (its last), `[B, backbone_width]`: what the grounding
    /// head reads.
    pub proprio_token: Tensor<2>,
    /// The grounding head's prediction, `[B, grounding_dim]`; `None` without a head.
    pub grounding: Option<Tensor<2>>,
}

/// The action expert's output at one velocity evaluation (π0's `suffix_out`),
/// `[B, H, expert_width]`.
pub type VlaFeatures = Tensor<3>;

/// Instruction encoder: token embedding, learned positions, pre-norm transformer.
#[derive(Module, Debug)]
struct TextEncoder {
    embed: Embedding,
    /// `[max_len, width]`.
    pos_embed: Param<Tensor<2>>,
    blocks: TransformerEncoder,
    norm: LayerNorm,
}

impl TextEncoder {
    /// `[B, L]` ids (padding mask `[B, L]`, true at padding) → `[B, L, width]`.
    fn forward(&self, tokens: Tensor<2, Int>, padding: Tensor<2, Bool>) -> Tensor<3> {
        let [_, len] = tokens.dims();
        let x = self.embed.forward(tokens) + self.pos_embed.val().narrow(0, 0, len).unsqueeze_dim::<3>(0);
        self.norm.forward(self.blocks.forward(TransformerEncoderInput::new(x).mask_pad(padding)))
    }
}

/// A small π0-style vision-language-action model (see the module docs).
///
/// Parameter names (for [`VlaModel::load_pretrained`]): `vision.*` (image encoder),
/// `text.*` (instruction encoder), `vision_proj`, `text_proj`, `proprio_proj`, `backbone.*`,
/// `backbone_norm`, `memory_proj`, `action_in`, `time_mlp_in`, `time_mlp_out`, `action_pos`,
/// `expert.*`, `expert_norm`, `action_out`, `noise_head.*`, `value_head.*`, `grounding_head.*`,
/// `grounding_in`. Linear weights are `[in, out]` (burn), the transpose of PyTorch's.
#[derive(Module, Debug)]
pub struct VlaModel {
    vision: VisionEncoder,
    text: TextEncoder,
    vision_proj: Linear,
    text_proj: Linear,
    proprio_proj: Linear,
    backbone: TransformerEncoder,
    backbone_norm: LayerNorm,
    memory_proj: Linear,
    action_in: Linear,
    time_mlp_in: Linear,
    time_mlp_out: Linear,
    /// `[H, expert_width]`.
    action_pos: Param<Tensor<2>>,
    expert: ActionExpert,
    expert_norm: LayerNorm,
    action_out: Linear,
    noise_head: Mlp,
    value_head: Mlp,
    grounding_head: Option<Mlp>,
    grounding_in: Option<Linear>,
    #[module(skip)]
    config: VlaConfig,
    #[module(skip)]
    time_scaling: Vec<f32>,
}

impl VlaConfig {
    /// Validates the layout and builds the model on `device` (burn's default initialization;
    /// position embeddings N(0, 0.02); value and noise heads with a 0.1 output gain). Wrap in
    /// [`crate::seeded_init`] for reproducible weights.
    pub fn init(&self, device: &Device) -> Result<VlaModel, VlaError> {
        self.validate()?;
        let v = &self.vision;
        let t = &self.text;
        let (d, e) = (self.backbone_width, self.expert_width);
        let value_in = match self.value_input {
            ValueInput::Prefix => d,
            ValueInput::Expert => e,
        };
        let normal =
            |shape: [usize; 2]| Param::from_tensor(Tensor::random(shape, Distribution::Normal(0.0, 0.02), device));
        Ok(VlaModel {
            vision: v.init(t.width, device),
            text: TextEncoder {
                embed: EmbeddingConfig::new(VOCAB_SIZE, t.width).init(device),
                pos_embed: normal([t.max_len, t.width]),
                blocks: encoder_blocks(t.width, t.depth, t.heads, t.mlp_ratio, device),
                norm: LayerNormConfig::new(t.width).init(device),
            },
            vision_proj: LinearConfig::new(v.width, d).init(device),
            text_proj: LinearConfig::new(t.width, d).init(device),
            proprio_proj: LinearConfig::new(self.proprio_dim, d).init(device),
            backbone: encoder_blocks(d, self.backbone_depth, self.backbone_heads, self.mlp_ratio, device),
            backbone_norm: LayerNormConfig::new(d).init(device),
            memory_proj: LinearConfig::new(d, e).init(device),
            action_in: LinearConfig::new(self.action_dim, e).init(device),
            time_mlp_in: LinearConfig::new(2 * e, e).init(device),
            time_mlp_out: LinearConfig::new(e, e).init(device),
            action_pos: normal([self.horizon, e]),
            expert: ActionExpert::new(e, self.expert_depth, self.expert_heads, self.mlp_ratio, device),
            expert_norm: LayerNormConfig::new(e).init(device),
            action_out: LinearConfig::new(e, self.action_dim).init(device),
            noise_head: MlpConfig::new(e, &[128, 64], self.action_dim, Activation::Tanh)
                .with_output_gain(0.1)
                .init(device),
            value_head: MlpConfig::new(value_in, &self.value_hidden, 1, Activation::Relu)
                .with_output_gain(0.1)
                .init(device),
            grounding_head: (self.grounding_dim > 0)
                .then(|| MlpConfig::new(d, &[d], self.grounding_dim, Activation::Relu).init(device)),
            grounding_in: self.grounding_to_expert.then(|| LinearConfig::new(self.grounding_dim, e).init(device)),
            config: self.clone(),
            time_scaling: time_scaling(e),
        })
    }
}

impl VlaModel {
    /// The layout this model was built from.
    pub fn config(&self) -> &VlaConfig {
        &self.config
    }

    /// The tokenizer shipped with the model (byte-level, `text.max_len` tokens).
    pub fn tokenizer(&self) -> ByteTokenizer {
        ByteTokenizer::new(self.config.text.max_len).expect("validated: max_len ≥ 2")
    }

    /// Number of scalar parameters (equals [`VlaConfig::param_count`]).
    pub fn num_params(&self) -> usize {
        Module::num_params(self)
    }

    /// The vision encoder (`vision.*` parameters).
    pub fn vision(&self) -> &VisionEncoder {
        &self.vision
    }

    /// The value head (its parameters form PPO's value parameter group).
    pub fn value_head(&self) -> &Mlp {
        &self.value_head
    }

    /// Checks `input` against the model's layout and moves it to `device`; the error names the
    /// field at fault.
    pub fn prepare(&self, input: &VlaInput, device: &Device) -> Result<VlaBatch, VlaError> {
        let c = &self.config;
        let err = |field: &'static str, message: String| Err(VlaError::Input { field, message });
        let b = input.batch;
        if b == 0 {
            return err("batch", "must be ≥ 1".into());
        }
        if input.views == 0 || input.views > c.vision.max_views {
            return err("views", format!("{} (allowed 1..={})", input.views, c.vision.max_views));
        }
        if input.height != c.vision.image_size {
            return err("height", format!("{} pixels, the model takes {}", input.height, c.vision.image_size));
        }
        if input.width != c.vision.image_size {
            return err("width", format!("{} pixels, the model takes {}", input.width, c.vision.image_size));
        }
        let pixels = b * input.views * input.height * input.width * 3;
        if input.images.len() != pixels {
            return err(
                "images",
                format!(
                    "{} bytes, expected {pixels} = [{b}, {}, {}, {}, 3]",
                    input.images.len(),
                    input.views,
                    input.height,
                    input.width
                ),
            );
        }
        if input.tokens.is_empty() || !input.tokens.len().is_multiple_of(b) {
            return err("tokens", format!("{} ids do not form [{b}, L] with L ≥ 1", input.tokens.len()));
        }
        let len = input.tokens.len() / b;
        if len > c.text.max_len {
            return err("tokens", format!("{len} tokens per instruction, at most text.max_len = {}", c.text.max_len));
        }
        if let Some(id) = input.tokens.iter().find(|&&id| id as usize >= VOCAB_SIZE) {
            return err("tokens", format!("id {id} is outside the vocabulary (< {VOCAB_SIZE})"));
        }
        if input.token_mask.len() != input.tokens.len() {
            return err("token_mask", format!("{} entries, tokens has {}", input.token_mask.len(), input.tokens.len()));
        }
        if input.proprio.len() != b * c.proprio_dim {
            return err("proprio", format!("{} values, expected [{b}, {}]", input.proprio.len(), c.proprio_dim));
        }
        if input.proprio.iter().any(|v| !v.is_finite()) {
            return err("proprio", "contains a non-finite value".into());
        }
        let images = input.images.iter().map(|&p| p as f32).collect::<Vec<_>>();
        let tokens = input.tokens.iter().map(|&id| id as i64).collect::<Vec<_>>();
        let padding = input.token_mask.iter().map(|&m| !m).collect::<Vec<_>>();
        Ok(VlaBatch {
            images: Tensor::from_data(TensorData::new(images, [b, input.views, input.height, input.width, 3]), device),
            tokens: Tensor::from_data(TensorData::new(tokens, [b, len]), device),
            padding: Tensor::from_data(TensorData::new(padding, [b, len]), device),
            proprio: Tensor::from_data(TensorData::new(input.proprio.clone(), [b, c.proprio_dim]), device),
        })
    }

    /// Runs the encoders and the shared transformer once: the prefix the action expert reads.
    pub fn encode(&self, batch: &VlaBatch) -> VlaContext {
        let [b, _, _, _, _] = batch.images.dims();
        let device = batch.images.device();
        let text = self.text.forward(batch.tokens.clone(), batch.padding.clone());
        let condition = self.config.vision.film.then(|| {
            let valid = batch.padding.clone().bool_not().float().unsqueeze_dim::<3>(2); // [B, L, 1]
            let [_, _, width] = text.dims();
            (text.clone() * valid.clone()).sum_dim(1).div(valid.sum_dim(1)).reshape([b, width])
        });
        let image_tokens = self.vision_proj.forward(self.vision.forward(batch.images.clone(), condition));
        let text_tokens = self.text_proj.forward(text);
        let proprio_token = self.proprio_proj.forward(batch.proprio.clone()).unsqueeze_dim::<3>(1);
        let n_img = image_tokens.dims()[1];
        let tokens = Tensor::cat(vec![image_tokens, text_tokens, proprio_token], 1);
        let padding = Tensor::cat(
            vec![
                Tensor::<2, Bool>::from_data(TensorData::new(vec![false; b * n_img], [b, n_img]), &device),
                batch.padding.clone(),
                Tensor::<2, Bool>::from_data(TensorData::new(vec![false; b], [b, 1]), &device),
            ],
            1,
        );
        let prefix = self
            .backbone_norm
            .forward(self.backbone.forward(TransformerEncoderInput::new(tokens).mask_pad(padding.clone())));
        let valid = padding.clone().bool_not().float().unsqueeze_dim::<3>(2); // [B, P, 1]
        let pooled = (prefix.clone() * valid.clone()).sum_dim(1).div(valid.clone().sum_dim(1)); // [B, 1, d]
        let d = self.config.backbone_width;
        let p = prefix.dims()[1];
        let words = p - n_img - 1;
        let valid_words = valid.narrow(1, n_img, words);
        let pooled_instruction =
            (prefix.clone().narrow(1, n_img, words) * valid_words.clone()).sum_dim(1).div(valid_words.sum_dim(1));
        let proprio_token = prefix.clone().narrow(1, p - 1, 1).reshape([b, d]);
        let cache = self.expert.prefix_cache(self.memory_proj.forward(prefix), padding);
        let grounding = self.grounding_head.as_ref().map(|head| head.forward(proprio_token.clone()));
        let pooled_instruction = pooled_instruction.reshape([b, d]);
        VlaContext { cache, pooled: pooled.reshape([b, d]), pooled_instruction, proprio_token, grounding }
    }

    /// The grounding head's prediction of the environment state, `[B, grounding_dim]`
    /// (standardized units, as trained); `None` when the model has no head
    /// (`grounding_dim = 0`).
    pub fn grounding(&self, context: &VlaContext) -> Option<Tensor<2>> {
        context.grounding.clone()
    }

    /// Action-expert output `[B, H, expert_width]` at noisy chunk `x` (`[B, H·D]`) and times `t`
    /// (`[B, 1]`).
    fn expert_features(&self, context: &VlaContext, x: Tensor<2>, t: Tensor<2>) -> Tensor<3> {
        let c = &self.config;
        let [b, _] = x.dims();
        let (h, e) = (c.horizon, c.expert_width);
        let actions = self.action_in.forward(x.reshape([b, h, c.action_dim]));
        let time = sincos_embedding(t, &self.time_scaling).unsqueeze_dim::<3>(1).expand([b, h, e]);
        let mut tokens = self.time_mlp_out.forward(silu(self.time_mlp_in.forward(Tensor::cat(vec![actions, time], 2))))
            + self.action_pos.val().unsqueeze_dim::<3>(0);
        if let (Some(grounding_in), Some(g)) = (&self.grounding_in, &context.grounding) {
            tokens = tokens + grounding_in.forward(g.clone()).unsqueeze_dim::<3>(1);
        }
        self.expert_norm.forward(self.expert.forward(tokens, &context.cache))
    }

    /// Velocity `[B, H, D]` at the noisy chunk `x` (`[B, H, D]`) and times `t` (`[B, 1]`).
    pub fn velocity(&self, context: &VlaContext, x: Tensor<3>, t: Tensor<2>) -> Tensor<3> {
        let [b, h, d] = x.dims();
        let (v, _) = self.expert_velocity(context, x.reshape([b, h * d]), t);
        v.reshape([b, h, d])
    }

    /// π0 flow-matching loss `mean((v_θ(x_t, t) − (ε − a))²)` over batch, horizon and action
    /// dimensions, `x_t = t·ε + (1 − t)·a`. `actions`, `noise`: `[B, H, D]` (normalized action
    /// units); `t`: `[B, 1]` from [`crate::sample_flow_time`]. Returns `[1]`.
    pub fn flow_matching_loss(
        &self,
        batch: &VlaBatch,
        actions: Tensor<3>,
        noise: Tensor<3>,
        t: Tensor<2>,
    ) -> Tensor<1> {
        self.flow_matching_loss_at(&self.encode(batch), actions, noise, t)
    }

    /// [`VlaModel::flow_matching_loss`] on an encoded prefix (when the prefix also feeds
    /// another loss, such as the grounding head's).
    pub fn flow_matching_loss_at(
        &self,
        context: &VlaContext,
        actions: Tensor<3>,
        noise: Tensor<3>,
        t: Tensor<2>,
    ) -> Tensor<1> {
        self.flow_matching_sample_losses_at(context, actions, noise, t).mean()
    }

    /// Every sample's flow-matching loss (the mean over its horizon and action dimensions),
    /// `[B]`, so that a caller can weight or mask samples. Arguments as
    /// [`VlaModel::flow_matching_loss`].
    pub fn flow_matching_sample_losses_at(
        &self,
        context: &VlaContext,
        actions: Tensor<3>,
        noise: Tensor<3>,
        t: Tensor<2>,
    ) -> Tensor<1> {
        let [b, h, d] = actions.dims();
        let t3 = t.clone().reshape([b, 1, 1]);
        let x_t = noise.clone() * t3.clone() + actions.clone() * t3.neg().add_scalar(1.0);
        let v = self.velocity(context, x_t, t);
        (v - (noise - actions)).reshape([b, h * d]).square().mean_dim(1).reshape([b])
    }

    /// Draws action chunks with `method`; `noise`: standard normal
    /// `[K + 1, B, H·D]`. Actions in the result are flattened `[B, H·D]` (reshape to `[B, H, D]`
    /// with [`VlaModel::unflatten`]); chains `[K + 1, B, H·D]`; log-probs `[B, C·D]`; value `[B, 1]`.
    pub fn sample(
        &self,
        context: &VlaContext,
        noise: Tensor<3>,
        method: NoiseMethod,
        steps: StochasticSteps,
    ) -> FlowSample {
        flow_sample(self, context, noise, method, steps)
    }

    /// Recomputes log-probs, entropies and (`with_value`) values from stored `chains`
    /// (`[K + 1, B, H·D]`) without resampling; unchanged parameters reproduce the
    /// rollout exactly. Ask for values only where the loss uses them (see `flow_transition`).
    pub fn evaluate_chain(
        &self,
        context: &VlaContext,
        chains: Tensor<3>,
        method: NoiseMethod,
        steps: StochasticSteps,
        with_value: bool,
    ) -> ChainEval {
        flow_evaluate_chain(self, context, chains, method, steps, with_value)
    }

    /// Deterministic action chunks `[B, H, D]`: `K` Euler steps from `noise` (`[B, H, D]`,
    /// standard normal; zeros give the mode-seeking "mean" chunk).
    pub fn predict(&self, batch: &VlaBatch, noise: Tensor<3>) -> Tensor<3> {
        let [b, h, d] = noise.dims();
        let context = self.encode(batch);
        let mut x = noise.reshape([b, h * d]);
        let k = self.config.denoise_steps;
        for step in 0..k {
            let t = 1.0 - step as f64 / k as f64;
            let (v, _) = self.expert_velocity(&context, x.clone(), Tensor::full([b, 1], t, &x.device()));
            x = x - v.mul_scalar(1.0 / k as f64);
        }
        x.reshape([b, h, d])
    }

    /// `[B, H·D]` → `[B, H, D]`.
    pub fn unflatten(&self, actions: Tensor<2>) -> Tensor<3> {
        let [b, _] = actions.dims();
        actions.reshape([b, self.config.horizon, self.config.action_dim])
    }

    /// The value estimate `[B, 1]` of one observation batch: with [`ValueInput::Prefix`] the
    /// value head on the pooled prefix (what the sampler reports at every step); with
    /// [`ValueInput::Expert`] the value head on the expert's output at `t = 1` from zero noise
    /// (the sampler's per-step average is the one PPO stores).
    pub fn value(&self, context: &VlaContext) -> Tensor<2> {
        let [b, _] = context.pooled.dims();
        let device = context.pooled.device();
        let x = Tensor::zeros([b, self.config.horizon * self.config.action_dim], &device);
        let features = match self.config.value_input {
            // The prefix value does not read the expert: skip its forward pass.
            ValueInput::Prefix => Tensor::zeros([b, 1, 1], &device),
            ValueInput::Expert => self.expert_velocity(context, x, Tensor::ones([b, 1], &device)).1,
        };
        self.expert_value(context, &features)
    }

    /// Saves every parameter to a safetensors file at `path`, with the configuration (JSON)
    /// and the tokenizer's name in its metadata.
    pub fn save(&self, path: &Path) -> Result<(), VlaError> {
        let mut meta = BTreeMap::new();
        let config = serde_json::to_string(&self.config)
            .map_err(|e| VlaError::Checkpoint { path: path.display().to_string(), message: e.to_string() })?;
        meta.insert(CONFIG_KEY.to_string(), config);
        meta.insert(TOKENIZER_KEY.to_string(), TOKENIZER_NAME.to_string());
        write_safetensors(path, &named_params(self), &meta)?;
        Ok(())
    }

    /// Builds the model a checkpoint written by [`VlaModel::save`] describes and loads its
    /// weights.
    pub fn load(path: &Path, device: &Device) -> Result<Self, VlaError> {
        let (tensors, meta) = read_safetensors(path)?;
        let bad = |message: String| VlaError::Checkpoint { path: path.display().to_string(), message };
        let config = meta.get(CONFIG_KEY).ok_or_else(|| bad(format!("metadata lacks `{CONFIG_KEY}`")))?;
        let config: VlaConfig =
            serde_json::from_str(config).map_err(|e| bad(format!("metadata `{CONFIG_KEY}`: {e}")))?;
        match meta.get(TOKENIZER_KEY) {
            Some(name) if name == TOKENIZER_NAME => {}
            other => return Err(bad(format!("tokenizer {other:?}, this build ships {TOKENIZER_NAME:?}"))),
        }
        let model = crate::with_generator_lock(|| config.init(device))?;
        let (model, _) = load_mapped(model, &tensors, &NameMap::identity())?;
        Ok(model)
    }

    /// Replaces every parameter by the same-named tensor of a safetensors file (a checkpoint of
    /// the same layout); the error names the missing or mismatched tensor and its shape.
    pub fn load_weights(self, path: &Path) -> Result<Self, VlaError> {
        let (tensors, _) = read_safetensors(path)?;
        Ok(load_mapped(self, &tensors, &NameMap::identity())?.0)
    }

    /// Loads pretrained weights from a safetensors file under `map` (e.g.
    /// `NameMap::new().rule("encoder.", "vision.")` to fill the vision tower from an image
    /// encoder's file): every parameter under the map's targets must be in the file with the
    /// model's shape; other parameters keep their values. Returns the model and the number of
    /// tensors loaded.
    pub fn load_pretrained(self, path: &Path, map: &NameMap) -> Result<(Self, usize), VlaError> {
        let (tensors, _) = read_safetensors(path)?;
        Ok(load_mapped(self, &tensors, map)?)
    }
}

impl FlowExpert for VlaModel {
    type Context = VlaContext;
    type Features = VlaFeatures;

    fn flow_layout(&self) -> FlowLayout {
        FlowLayout {
            horizon: self.config.horizon,
            chunk: self.config.chunk,
            action_dim: self.config.action_dim,
            denoise_steps: self.config.denoise_steps,
        }
    }

    fn expert_velocity(&self, context: &VlaContext, x: Tensor<2>, t: Tensor<2>) -> (Tensor<2>, VlaFeatures) {
        let [b, hd] = x.dims();
        let features = self.expert_features(context, x, t);
        (self.action_out.forward(features.clone()).reshape([b, hd]), features)
    }

    fn expert_value(&self, context: &VlaContext, features: &VlaFeatures) -> Tensor<2> {
        let input = match self.config.value_input {
            ValueInput::Prefix => context.pooled.clone(),
            ValueInput::Expert => {
                let [b, _, e] = features.dims();
                features.clone().mean_dim(1).reshape([b, e])
            }
        };
        let input = if self.config.detach_critic_input { input.detach() } else { input };
        self.value_head.forward(input)
    }

    fn expert_noise_std(&self, features: VlaFeatures) -> Tensor<2> {
        let [b, h, _] = features.dims();
        let log_var = |s: f64| 2.0 * s.ln();
        let std = bounded_std(
            self.noise_head.forward(features),
            log_var(self.config.noise_std_min),
            log_var(self.config.noise_std_max),
        );
        std.reshape([b, h * self.config.action_dim])
    }
}
