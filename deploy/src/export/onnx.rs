//! ONNX export: `model.onnx`, one graph with input `obs` `[batch, obs_dim]` and output
//! `action` `[batch, chunk · action_dim]` (batch dynamic; the chunk's actions row-major, in the
//! order to execute them), computing what [`PolicySpec::forward`] does:
//! `Sub`/`Div`/`Clip` for the observation normalizer, one `Gemm` and activation per layer,
//! then `Max`/`Min` (clip head) or `Tanh` and the affine map into the bounds (squashed head).
//!
//! The protobuf is written by hand (a few dozen lines, no dependency): ONNX IR version 8,
//! default-domain opset 17, which onnxruntime and tract both load.

use super::{ActionHead, Activation, PolicySpec};

/// Model file name.
pub const MODEL: &str = "model.onnx";
/// Name of the graph input, `[batch, obs_dim]`, raw observation units.
pub const INPUT: &str = "obs";
/// Name of the graph output, `[batch, chunk · action_dim]`, raw command units.
pub const OUTPUT: &str = "action";

const IR_VERSION: i64 = 8;
const OPSET: i64 = 17;
/// `TensorProto.DataType`.
const FLOAT: i64 = 1;
const INT64: i64 = 7;
/// `AttributeProto.AttributeType.FLOAT`.
const ATTRIBUTE_FLOAT: i64 = 1;

/// The model file, as (file name, bytes).
pub fn render(spec: &PolicySpec) -> Vec<(String, Vec<u8>)> {
    let mut g = Graph::default();
    let mut x = INPUT.to_string();
    if let Some(n) = &spec.normalizer {
        let mean = g.constant("obs_mean", &[n.mean.len()], &n.mean);
        let std = g.constant("obs_std", &[n.std.len()], &n.std);
        let (lo, hi) = (g.constant("obs_clip_low", &[], &[-n.clip]), g.constant("obs_clip_high", &[], &[n.clip]));
        x = g.node("Sub", &[&x, &mean], "obs_centered");
        x = g.node("Div", &[&x, &std], "obs_standardized");
        x = g.node("Clip", &[&x, &lo, &hi], "obs_normalized");
    }
    let last = spec.layers.len() - 1;
    for (i, l) in spec.layers.iter().enumerate() {
        let w = g.constant(&format!("layer{i}.weight"), &[l.input, l.output], &l.weight);
        let b = g.constant(&format!("layer{i}.bias"), &[l.output], &l.bias);
        x = g.node("Gemm", &[&x, &w, &b], &format!("layer{i}"));
        if i < last {
            let out = format!("hidden{i}");
            x = match spec.activation {
                Activation::Tanh => g.node("Tanh", &[&x], &out),
                Activation::Relu => g.node("Relu", &[&x], &out),
                Activation::Elu => g.node_with(
                    "Elu",
                    &[&x],
                    &out,
                    Message::default().string(1, "alpha").float(2, 1.0).int(20, ATTRIBUTE_FLOAT),
                ),
            };
        }
    }
    let out = spec.output_dim();
    if spec.layers[last].output > out {
        // The squashed head's network also outputs log standard deviations: keep the means.
        let int64 = |g: &mut Graph, name: &str, v: i64| {
            g.initializer(name, tensor(name, &[1], INT64).bytes(9, &v.to_le_bytes()))
        };
        let (starts, ends, axes) = (
            int64(&mut g, "mean_start", 0),
            int64(&mut g, "mean_end", spec.action_dim as i64),
            int64(&mut g, "mean_axis", 1),
        );
        x = g.node("Slice", &[&x, &starts, &ends, &axes], "action_mean");
    }
    if !spec.state_offsets.is_empty() {
        // Relative dimensions: + obs · M, M [obs_dim, out] holding each offset's scale.
        let mut m = vec![0.0f32; spec.obs_dim * out];
        for j in 0..out {
            if let Some(s) = spec.state_offset(j) {
                m[s.column * out + j] = s.scale;
            }
        }
        let m = g.constant("state_offset_matrix", &[spec.obs_dim, out], &m);
        let offset = g.node("MatMul", &[INPUT, &m], "state_offset");
        x = g.node("Add", &[&x, &offset], "action_absolute");
    }
    // Bounds repeated for every action of the chunk.
    let tiled = |bound: &[f32]| -> Vec<f32> { bound.iter().copied().cycle().take(out).collect() };
    let low = g.constant("action_low", &[out], &tiled(&spec.action_low));
    match spec.head {
        ActionHead::Clip => {
            let high = g.constant("action_high", &[out], &tiled(&spec.action_high));
            x = g.node("Max", &[&x, &low], "action_above_low");
            g.node("Min", &[&x, &high], OUTPUT);
        }
        ActionHead::SquashedAffine => {
            // low + 0.5·(tanh(u) + 1)·(high − low), in the order PolicySpec::forward rounds.
            let range: Vec<f32> =
                tiled(&spec.action_low).iter().zip(tiled(&spec.action_high)).map(|(l, h)| h - l).collect();
            let range = g.constant("action_range", &[out], &range);
            let (one, half) = (g.constant("one", &[], &[1.0]), g.constant("half", &[], &[0.5]));
            x = g.node("Tanh", &[&x], "action_squashed");
            x = g.node("Add", &[&x, &one], "action_shifted");
            x = g.node("Mul", &[&x, &half], "action_unit");
            x = g.node("Mul", &[&x, &range], "action_scaled");
            g.node("Add", &[&low, &x], OUTPUT);
        }
    }

    let graph = g
        .message
        .string(2, "embodia_policy")
        .string(10, &format!("Deterministic policy from {}: raw observation -> raw action chunk of {} (row-major [chunk, action_dim]).", spec.source, spec.chunk))
        .message(11, value_info(INPUT, spec.obs_dim))
        .message(12, value_info(OUTPUT, out));
    let metadata = |key: &str, value: &str| Message::default().string(1, key).string(2, value);
    let model = Message::default()
        .int(1, IR_VERSION)
        .string(2, "embodia")
        .string(3, env!("CARGO_PKG_VERSION"))
        .message(7, graph)
        .message(8, Message::default().string(1, "").int(2, OPSET))
        .message(14, metadata("source", &spec.source))
        .message(14, metadata("action_chunk", &spec.chunk.to_string()))
        .message(14, metadata("action_dim", &spec.action_dim.to_string()));
    vec![(MODEL.into(), model.0)]
}

/// A float tensor value `[batch, features]` with a symbolic batch dimension.
fn value_info(name: &str, features: usize) -> Message {
    let shape = Message::default()
        .message(1, Message::default().string(2, "batch"))
        .message(1, Message::default().int(1, features as i64));
    let tensor_type = Message::default().int(1, FLOAT).message(2, shape);
    Message::default().string(1, name).message(2, Message::default().message(1, tensor_type))
}

/// A `TensorProto` header: name, dims and element type, without data.
fn tensor(name: &str, dims: &[usize], data_type: i64) -> Message {
    dims.iter().fold(Message::default(), |m, &d| m.int(1, d as i64)).int(2, data_type).string(8, name)
}

/// A `GraphProto` under construction: nodes and initializers in the order they are added.
#[derive(Default)]
struct Graph {
    message: Message,
}

impl Graph {
    /// Adds an f32 initializer `name` of shape `dims`; returns its name.
    fn constant(&mut self, name: &str, dims: &[usize], values: &[f32]) -> String {
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(name, tensor(name, dims, FLOAT).bytes(9, &raw))
    }

    /// Adds the `TensorProto` `t` named `name` as an initializer; returns `name`.
    fn initializer(&mut self, name: &str, t: Message) -> String {
        self.push(5, t);
        name.into()
    }

    /// Adds the node `op(inputs) → output`; returns `output`.
    fn node(&mut self, op: &str, inputs: &[&str], output: &str) -> String {
        self.node_with_attributes(op, inputs, output, None)
    }

    fn node_with(&mut self, op: &str, inputs: &[&str], output: &str, attribute: Message) -> String {
        self.node_with_attributes(op, inputs, output, Some(attribute))
    }

    fn node_with_attributes(&mut self, op: &str, inputs: &[&str], output: &str, attribute: Option<Message>) -> String {
        let mut n = inputs
            .iter()
            .fold(Message::default(), |m, i| m.string(1, i))
            .string(2, output)
            .string(3, output)
            .string(4, op);
        if let Some(a) = attribute {
            n = n.message(5, a);
        }
        self.push(1, n);
        output.into()
    }

    fn push(&mut self, field: u32, m: Message) {
        self.message = std::mem::take(&mut self.message).message(field, m);
    }
}

/// A protobuf message being encoded, fields appended in order (proto3 wire format: varints for
/// integers, little-endian fixed32 for floats, length-prefixed bytes for strings and messages).
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u64) {
        self.varint((u64::from(field) << 3) | wire_type);
    }

    fn int(mut self, field: u32, v: i64) -> Self {
        self.key(field, 0);
        self.varint(v as u64);
        self
    }

    fn float(mut self, field: u32, v: f32) -> Self {
        self.key(field, 5);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn bytes(mut self, field: u32, b: &[u8]) -> Self {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }

    fn string(self, field: u32, s: &str) -> Self {
        self.bytes(field, s.as_bytes())
    }

    fn message(self, field: u32, m: Message) -> Self {
        self.bytes(field, &m.0)
    }
}
