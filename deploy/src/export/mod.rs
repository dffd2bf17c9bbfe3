//! Exporting a one-step MLP policy (PPO's mean, SAC's squashed mean, a distilled one-step
//! action-chunk student) as a self-contained artifact that maps raw observations to raw
//! commands.
//!
//! A [`PolicySpec`] holds everything the deterministic action needs: the observation
//! normalizer, the MLP weights and activation, and the action head with the raw action bounds.
//! [`PolicySpec::forward`] is the reference forward pass in plain f32 Rust; the generators
//! ([`c`], [`rust`], [`onnx`]) emit the same computation. [`write_export`] writes one format into a
//! directory through a temporary sibling and a rename, so nothing half-written is left behind.

pub mod c;
pub mod onnx;
pub mod rust;

use std::fs;
use std::path::{Path, PathBuf};

/// Errors of exporting a policy, naming the field or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The policy description is inconsistent.
    #[error("invalid policy: {0}")]
    Invalid(String),
    /// A file or directory could not be written.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Hidden-layer nonlinearity of the exported MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `tanh(x)`.
    Tanh,
    /// `max(x, 0)`.
    Relu,
    /// `x` for `x > 0`, `exp(x) − 1` otherwise.
    Elu,
}

impl Activation {
    /// Applies the nonlinearity to one value.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Self::Tanh => x.tanh(),
            Self::Relu => x.max(0.0),
            Self::Elu => {
                if x > 0.0 {
                    x
                } else {
                    x.exp() - 1.0
                }
            }
        }
    }
}

/// Per-feature observation standardization `clip((x − mean)/std, ±clip)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ObsNormalizer {
    /// Per-feature mean, `[obs_dim]`, raw observation units.
    pub mean: Vec<f32>,
    /// Per-feature standard deviation `√(var + ε)`, `[obs_dim]`, raw observation units.
    pub std: Vec<f32>,
    /// Normalized values are clipped to `±clip`.
    pub clip: f32,
}

/// One affine layer `y = x·W + b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    /// Input features.
    pub input: usize,
    /// Output features.
    pub output: usize,
    /// `[input, output]`, row-major (burn's `Linear` layout).
    pub weight: Vec<f32>,
    /// `[output]`.
    pub bias: Vec<f32>,
}

impl Dense {
    /// `y = x·W + b`: `x` `[input]`, `y` `[output]`.
    ///
    /// Each `y[o]` sums `b[o]`, `x[0]·W[0, o]`, `x[1]·W[1, o]`, … in that order, as the generated
    /// C and Rust do, so all agree to the last bit (no fused multiply-add). For speed the
    /// outputs go in blocks of [`OUTPUT_BLOCK`] whose partial sums stay in vector registers while
    /// `k` runs down contiguous row segments of `W`; with AVX the same loop runs 8 lanes wide.
    pub fn apply(&self, x: &[f32], y: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU supports AVX, checked just above.
            return unsafe { self.apply_avx(x, y) };
        }
        self.apply_portable(x, y);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn apply_avx(&self, x: &[f32], y: &mut [f32]) {
        self.apply_portable(x, y);
    }

    #[inline(always)]
    fn apply_portable(&self, x: &[f32], y: &mut [f32]) {
        let n = self.output;
        let blocked = n - n % OUTPUT_BLOCK;
        for j in (0..blocked).step_by(OUTPUT_BLOCK) {
            let mut acc: [f32; OUTPUT_BLOCK] = self.bias[j..j + OUTPUT_BLOCK].try_into().expect("block");
            for (xk, row) in x.iter().zip(self.weight.chunks_exact(n)) {
                let w: &[f32; OUTPUT_BLOCK] = row[j..j + OUTPUT_BLOCK].try_into().expect("block");
                for t in 0..OUTPUT_BLOCK {
                    acc[t] += xk * w[t];
                }
            }
            y[j..j + OUTPUT_BLOCK].copy_from_slice(&acc);
        }
        for o in blocked..n {
            let mut s = self.bias[o];
            for (xk, row) in x.iter().zip(self.weight.chunks_exact(n)) {
                s += xk * row[o];
            }
            y[o] = s;
        }
    }

    /// `weight` as the generated C and Rust forward passes read it: for each block of
    /// [`EXPORT_OUTPUT_BLOCK`] outputs, `[input, EXPORT_OUTPUT_BLOCK]` (one input's weights
    /// together, so the block's accumulators share each load of the input and the weights
    /// stream in order), then the remaining `output % EXPORT_OUTPUT_BLOCK` outputs as
    /// `[output, input]` rows.
    pub fn blocked_weights(&self) -> Vec<f32> {
        let (b, n) = (EXPORT_OUTPUT_BLOCK, self.output);
        let blocked = n - n % b;
        let blocks =
            (0..blocked).step_by(b).flat_map(|o0| (0..self.input).flat_map(move |k| (o0..o0 + b).map(move |o| (k, o))));
        let rows = (blocked..n).flat_map(|o| (0..self.input).map(move |k| (k, o)));
        blocks.chain(rows).map(|(k, o)| self.weight[k * n + o]).collect()
    }
}

/// Outputs per block of the generated C and Rust forward passes: 8 accumulators, the input
/// and the weight being multiplied fit the Cortex-M4F's 32 single-precision registers. On it
/// blocks of 4 / 8 / 16 take 3.96 / 3.64 / 3.63 instructions per multiply-add (one output at a
/// time: 5.1), because each input is loaded once per block instead of once per output.
pub const EXPORT_OUTPUT_BLOCK: usize = 8;

/// Outputs per register block of [`Dense::apply`]: 32 floats are 8 SSE or 4 AVX registers.
pub const OUTPUT_BLOCK: usize = 32;

/// How the MLP's output becomes the raw action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionHead {
    /// The first `action_dim` outputs are the action, clipped to `[low, high]` (PPO).
    Clip,
    /// `a = tanh(u)` of the first `action_dim` outputs, then `low + (a + 1)/2 · (high − low)`
    /// (SAC; the remaining outputs are the unused log standard deviations).
    SquashedAffine,
}

/// A one-step deterministic policy: raw observation `[obs_dim]` → raw action chunk
/// `[chunk, action_dim]` (row-major: `chunk` actions to execute in order; 1 for per-step
/// policies).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    /// Where the policy came from (run directory, algorithm), written into the artifacts.
    pub source: String,
    /// Observation features.
    pub obs_dim: usize,
    /// Action dimensions of one action.
    pub action_dim: usize,
    /// Actions per forward pass (the executed chunk length `C`); the MLP's output is
    /// `[chunk, action_dim]`.
    pub chunk: usize,
    /// Observation normalization, if the policy was trained with one.
    pub normalizer: Option<ObsNormalizer>,
    /// The MLP layers in order; the activation follows every layer but the last.
    pub layers: Vec<Dense>,
    /// Hidden activation.
    pub activation: Activation,
    /// Action head.
    pub head: ActionHead,
    /// Lower action bounds, `[action_dim]`, raw command units.
    pub action_low: Vec<f32>,
    /// Upper action bounds, `[action_dim]`, raw command units.
    pub action_high: Vec<f32>,
    /// Action dimensions the network predicts relative to the present state, `[action_dim]`
    /// or empty (every action absolute). Clip head only.
    pub state_offsets: Vec<Option<StateOffset>>,
}

/// An action dimension predicted relative to the present state (a delta action, as openpi's
/// `DeltaActions`): `obs[column] · scale` of the raw observation is added to the network's
/// output before clipping, for every action of the chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StateOffset {
    /// Column of the raw observation, `[0, obs_dim)`.
    pub column: usize,
    /// Factor from observation units to action units.
    pub scale: f32,
}

impl PolicySpec {
    /// Checks that shapes chain and every number is finite.
    pub fn validate(&self) -> Result<(), ExportError> {
        let bad = |m: String| Err(ExportError::Invalid(m));
        if self.layers.is_empty() {
            return bad("no layers".into());
        }
        if let Some(n) = &self.normalizer {
            if n.mean.len() != self.obs_dim || n.std.len() != self.obs_dim {
                return bad(format!(
                    "normalizer has {}/{} features, obs_dim is {}",
                    n.mean.len(),
                    n.std.len(),
                    self.obs_dim
                ));
            }
            if n.std.iter().any(|&s| !(s > 0.0 && s.is_finite())) || n.mean.iter().any(|m| !m.is_finite()) {
                return bad("normalizer has a non-finite mean or a non-positive std".into());
            }
        }
        let mut width = self.obs_dim;
        for (i, l) in self.layers.iter().enumerate() {
            if l.input != width || l.weight.len() != l.input * l.output || l.bias.len() != l.output {
                return bad(format!("layer {i}: shape [{}, {}] does not chain from width {width}", l.input, l.output));
            }
            if l.weight.iter().chain(&l.bias).any(|x| !x.is_finite()) {
                return bad(format!("layer {i} has a non-finite weight"));
            }
            width = l.output;
        }
        if self.chunk == 0 || (self.head == ActionHead::SquashedAffine && self.chunk != 1) {
            return bad(format!("chunk {} is not allowed with the {:?} head", self.chunk, self.head));
        }
        let needed = match self.head {
            ActionHead::Clip => self.chunk * self.action_dim,
            ActionHead::SquashedAffine => 2 * self.action_dim,
        };
        if width != needed {
            return bad(format!("the last layer has {width} outputs, the {:?} head needs {needed}", self.head));
        }
        if self.action_low.len() != self.action_dim || self.action_high.len() != self.action_dim {
            return bad("action bounds do not have action_dim entries".into());
        }
        if self.action_low.iter().zip(&self.action_high).any(|(l, h)| !(l <= h && l.is_finite() && h.is_finite())) {
            return bad("action bounds must be finite with low ≤ high".into());
        }
        if !self.state_offsets.is_empty() {
            if self.head != ActionHead::Clip || self.state_offsets.len() != self.action_dim {
                return bad(format!(
                    "{} state offsets: they need the clip head and one entry per action dimension ({})",
                    self.state_offsets.len(),
                    self.action_dim
                ));
            }
            for (j, s) in self.state_offsets.iter().enumerate() {
                if let Some(s) = s.filter(|s| s.column >= self.obs_dim || !s.scale.is_finite()) {
                    return bad(format!(
                        "state offset of action {j}: column {} of {} observations, scale {}",
                        s.column, self.obs_dim, s.scale
                    ));
                }
            }
        }
        Ok(())
    }

    /// A seeded random policy with layer widths `widths` (`[obs_dim, hidden…, out]`, where
    /// `out` is `action_dim`, or `2 · action_dim` for the squashed head), an observation
    /// normalizer whose clip (±5) bites for observations beyond a few units, and action bounds
    /// ±1 (clip) or [−2, 1] (squashed). Weights are `U(±1/√fan_in)`, as burn's and PyTorch's
    /// `Linear` initialize them. For tests and benchmarks of the export formats.
    pub fn random(widths: &[usize], activation: Activation, head: ActionHead, seed: u64) -> Self {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut uniform = |n: usize, r: f32| -> Vec<f32> { (0..n).map(|_| rng.random_range(-r..r)).collect() };
        let obs_dim = widths[0];
        let normalizer = ObsNormalizer {
            mean: uniform(obs_dim, 1.0),
            std: uniform(obs_dim, 1.0).iter().map(|u| 1.5 + u).collect(),
            clip: 5.0,
        };
        let layers = widths
            .windows(2)
            .map(|w| {
                let r = 1.0 / (w[0] as f32).sqrt();
                Dense { input: w[0], output: w[1], weight: uniform(w[0] * w[1], r), bias: uniform(w[1], r) }
            })
            .collect();
        let out = widths[widths.len() - 1];
        let (action_dim, low, high) = match head {
            ActionHead::Clip => (out, -1.0, 1.0),
            ActionHead::SquashedAffine => (out / 2, -2.0, 1.0),
        };
        Self {
            source: format!("random policy {widths:?}, seed {seed}"),
            obs_dim,
            action_dim,
            chunk: 1,
            normalizer: Some(normalizer),
            layers,
            activation,
            head,
            action_low: vec![low; action_dim],
            action_high: vec![high; action_dim],
            state_offsets: Vec::new(),
        }
    }

    /// The state offset of output `j` of the chunk (`[chunk, action_dim]` flattened), if its
    /// action dimension is relative.
    pub fn state_offset(&self, j: usize) -> Option<StateOffset> {
        self.state_offsets.get(j % self.action_dim).copied().flatten()
    }

    /// The widest layer, the size of each of the two scratch buffers a forward pass needs.
    pub fn max_width(&self) -> usize {
        self.layers.iter().map(|l| l.output).chain([self.obs_dim]).max().unwrap_or(0)
    }

    /// Floats of one forward pass's output, `chunk · action_dim`.
    pub fn output_dim(&self) -> usize {
        self.chunk * self.action_dim
    }

    /// Reference forward pass: raw observation `obs` (`[obs_dim]`) → raw action chunk `action`
    /// (`[chunk, action_dim]`), using `scratch` (`2 · max_width()` floats) and no other memory.
    pub fn forward(&self, obs: &[f32], action: &mut [f32], scratch: &mut [f32]) {
        let w = self.max_width();
        let (mut a, mut b) = scratch[..2 * w].split_at_mut(w);
        for (j, x) in a[..self.obs_dim].iter_mut().enumerate() {
            *x = match &self.normalizer {
                Some(n) => ((obs[j] - n.mean[j]) / n.std[j]).clamp(-n.clip, n.clip),
                None => obs[j],
            };
        }
        let last = self.layers.len() - 1;
        for (i, l) in self.layers.iter().enumerate() {
            let y = &mut b[..l.output];
            l.apply(&a[..l.input], y);
            if i < last {
                y.iter_mut().for_each(|v| *v = self.activation.apply(*v));
            }
            std::mem::swap(&mut a, &mut b);
        }
        for (j, y) in action.iter_mut().enumerate().take(self.output_dim()) {
            let (lo, hi) = (self.action_low[j % self.action_dim], self.action_high[j % self.action_dim]);
            *y = match self.head {
                ActionHead::Clip => match self.state_offset(j) {
                    Some(s) => (a[j] + obs[s.column] * s.scale).clamp(lo, hi),
                    None => a[j].clamp(lo, hi),
                },
                ActionHead::SquashedAffine => lo + 0.5 * (a[j].tanh() + 1.0) * (hi - lo),
            };
        }
    }
}

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// C99 header + source ([`c`]).
    C,
    /// A `no_std` Rust module ([`rust`]).
    Rust,
    /// ONNX, `model.onnx` ([`onnx`]).
    Onnx,
}

impl Format {
    /// Parses `c`, `rust` or `onnx`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "c" => Some(Self::C),
            "rust" => Some(Self::Rust),
            "onnx" => Some(Self::Onnx),
            _ => None,
        }
    }
}

/// Files of `spec` in `format`: (file name, contents).
pub fn render(spec: &PolicySpec, format: Format) -> Result<Vec<(String, Vec<u8>)>, ExportError> {
    spec.validate()?;
    let text = |files: Vec<(String, String)>| files.into_iter().map(|(name, s)| (name, s.into_bytes())).collect();
    Ok(match format {
        Format::C => text(c::render(spec)),
        Format::Rust => text(rust::render(spec)),
        Format::Onnx => onnx::render(spec),
    })
}

/// Writes `spec` in `format` into the directory `out` (created; an existing `out` must be
/// empty or absent). Files are written into a temporary sibling directory first and renamed
/// into place, so an error leaves nothing behind. Returns the paths written.
pub fn write_export(spec: &PolicySpec, format: Format, out: &Path) -> Result<Vec<PathBuf>, ExportError> {
    let files = render(spec, format)?;
    if out.exists() {
        let empty = fs::read_dir(out).map_err(io(out))?.next().is_none();
        if !empty {
            return Err(ExportError::Io {
                path: out.display().to_string(),
                message: "exists and is not empty; choose another --out".into(),
            });
        }
        fs::remove_dir(out).map_err(io(out))?;
    }
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "export".into());
    let tmp = out.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        for (file, contents) in &files {
            let p = tmp.join(file);
            fs::write(&p, contents).map_err(io(&p))?;
        }
        fs::rename(&tmp, out).map_err(io(out))
    })();
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    Ok(files.iter().map(|(f, _)| out.join(f)).collect())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |e| ExportError::Io { path: path.display().to_string(), message: e.to_string() }
}

/// `x` as a Rust/C float literal that round-trips exactly (`{:?}` prints the shortest
/// representation that parses back to the same f32).
pub(crate) fn float_literal(x: f32) -> String {
    let s = format!("{x:?}");
    if s.contains('.') || s.contains('e') { s } else { format!("{s}.0") }
}

/// `values` as comma-separated literals with `suffix`, eight to a line.
pub(crate) fn float_list(values: &[f32], suffix: &str, indent: &str) -> String {
    values
        .chunks(8)
        .map(|row| {
            let items: Vec<String> = row.iter().map(|&x| format!("{}{suffix}", float_literal(x))).collect();
            format!("{indent}{},", items.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
