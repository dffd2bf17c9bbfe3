//! `embodia bench export-latency`: host inference latency at batch 1 of an exported MLP policy
//! (by default the issue's [17, 256, 256, 6]; ELU, an observation normalizer and a clip head,
//! as PPO exports, with seeded random weights: [`PolicySpec::random`]): embodia's own forward
//! pass ([`PolicySpec::forward`]) and the exported `model.onnx` in each ONNX runtime compiled in
//! (tract, onnxruntime through ort). Each call is timed on its own; median and p99 over `calls`
//! calls after `warmup` calls, cycling through 1,000 random observations.
//! bench/export_latency.sh adds PyTorch and Python onnxruntime on the same `model.onnx` in the
//! same run.

use std::path::Path;
use std::time::Instant;

use embodia_deploy::export::{self, ActionHead, Activation, Format, PolicySpec};
use embodia_deploy::onnx_runtime::{self, OnnxError, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// What to measure.
#[derive(Debug, Clone)]
pub struct LatencyConfig {
    /// Observation features. Default 17.
    pub obs_dim: usize,
    /// Hidden layer widths. Default [256, 256].
    pub hidden: Vec<usize>,
    /// Action dimensions. Default 6.
    pub action_dim: usize,
    /// Timed calls per implementation. Default 10,000.
    pub calls: usize,
    /// Untimed calls first. Default 1,000.
    pub warmup: usize,
    /// Seed of the weights and observations. Default 0.
    pub seed: u64,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        Self { obs_dim: 17, hidden: vec![256, 256], action_dim: 6, calls: 10_000, warmup: 1_000, seed: 0 }
    }
}

/// Latency of one implementation, microseconds per call at batch 1.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Implementation, e.g. `embodia forward`, `tract`, `ort`.
    pub name: String,
    /// Median, µs.
    pub median_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

/// Random raw observations `[rows, obs_dim]`, wide enough that the normalizer clips some.
pub fn random_observations(obs_dim: usize, rows: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..rows * obs_dim).map(|_| rng.random_range(-10.0..10.0)).collect()
}

/// Times `call(i)` for `warmup + calls` calls, each on its own.
fn time(name: &str, config: &LatencyConfig, mut call: impl FnMut(usize)) -> Latency {
    for i in 0..config.warmup {
        call(i);
    }
    let mut us: Vec<f64> = (0..config.calls)
        .map(|i| {
            let t = Instant::now();
            call(i);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
    Latency { name: name.into(), median_us: at(0.5), p99_us: at(0.99) }
}

/// Writes the policy of `config` as `model.onnx` into the new directory `out`, then measures
/// embodia's forward pass and the model in each of `runtimes`. A runtime that is not compiled
/// in is skipped with its reason in the second list.
pub fn export_latency(
    config: &LatencyConfig,
    out: &Path,
    runtimes: &[Runtime],
) -> Result<(Vec<Latency>, Vec<String>), anyhow::Error> {
    let widths: Vec<usize> =
        [config.obs_dim].into_iter().chain(config.hidden.iter().copied()).chain([config.action_dim]).collect();
    let spec = PolicySpec::random(&widths, Activation::Elu, ActionHead::Clip, config.seed);
    let model = export::write_export(&spec, Format::Onnx, out)?.remove(0);
    const ROWS: usize = 1000;
    let obs = random_observations(config.obs_dim, ROWS, config.seed + 1);
    let row = |i: usize| &obs[(i % ROWS) * config.obs_dim..][..config.obs_dim];
    let mut action = vec![0.0f32; config.action_dim];
    let mut scratch = vec![0.0f32; 2 * spec.max_width()];
    let mut results = vec![time("embodia forward", config, |i| {
        spec.forward(std::hint::black_box(row(i)), &mut action, &mut scratch);
        std::hint::black_box(&action);
    })];
    let mut skipped = Vec::new();
    for runtime in runtimes {
        let mut policy = match onnx_runtime::load(&model, runtime) {
            Ok(p) => p,
            Err(e @ OnnxError::NotCompiled(_)) => {
                skipped.push(e.to_string());
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut failure = None;
        let latency = time(runtime.name(), config, |i| {
            if let Err(e) = policy.run(row(i), &mut action) {
                failure.get_or_insert(e);
            }
        });
        if let Some(e) = failure {
            return Err(e.into());
        }
        results.push(latency);
    }
    Ok((results, skipped))
}
