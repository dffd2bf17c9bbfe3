//! The exported `model.onnx` run in Rust ONNX runtimes reproduces [`PolicySpec::forward`] on
//! 1,000 random raw observations within 1e-5 (relative to max(1, |action|)), as one batch and
//! at batch 1 (the batch dimension is dynamic), for each activation and both action heads:
//! tract always (this file needs the `tract` feature), onnxruntime through ort where the `ort`
//! feature is on and `ORT_DYLIB_PATH` names its library. Corrupt model files are reported with
//! their path. Python onnxruntime checks the same export in bench/onnx_check.sh.
//!
//! Run with `cargo test --release -p embodia-deploy --features tract,ort --test onnx_runtime`.

use std::fs;
use std::path::{Path, PathBuf};

use embodia_deploy::export::{ActionHead, Activation, Format, PolicySpec, StateOffset, write_export};
use embodia_deploy::onnx_runtime::{OnnxError, Runtime, load};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SAMPLES: usize = 1000;
const TOLERANCE: f32 = 1e-5;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-onnx-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The policies under test: every activation, both heads, a normalizer whose clip bites, an
/// action chunk.
fn policies() -> Vec<PolicySpec> {
    vec![
        PolicySpec::random(&[5, 32, 24, 3], Activation::Elu, ActionHead::Clip, 1),
        PolicySpec::random(&[7, 16, 2], Activation::Tanh, ActionHead::Clip, 2),
        PolicySpec::random(&[4, 32, 32, 2 * 3], Activation::Relu, ActionHead::SquashedAffine, 3),
        PolicySpec { normalizer: None, ..PolicySpec::random(&[3, 8, 1], Activation::Elu, ActionHead::Clip, 4) },
        // A distilled student's layout: a chunk of 3 actions of 2 per call, bounds per action,
        // the second action dimension relative to observation 4.
        PolicySpec {
            action_dim: 2,
            chunk: 3,
            action_low: vec![-1.0, -0.25],
            action_high: vec![0.5, 1.0],
            state_offsets: vec![None, Some(StateOffset { column: 4, scale: 0.5 })],
            ..PolicySpec::random(&[6, 16, 3 * 2], Activation::Elu, ActionHead::Clip, 5)
        },
    ]
}

/// Reports a test skipped because `tool` is missing. Under CI (`EMBODIA_CI` set) that is a
/// failure, unless `.ci/run` listed the tool in `EMBODIA_NOT_RUN` (it then prints NOT RUN).
fn skipped(tool: &str, message: &str) {
    let ci = std::env::var_os("EMBODIA_CI").is_some();
    let declared = std::env::var("EMBODIA_NOT_RUN").is_ok_and(|v| v.split(',').any(|t| t == tool));
    assert!(!ci || declared, "{message}: CI expects `{tool}` (.ci/run installs it, or lists it in EMBODIA_NOT_RUN)");
    eprintln!("SKIPPED {message}");
}

/// The runtimes compiled in and usable here.
fn runtimes() -> Vec<Runtime> {
    let mut r = vec![Runtime::Tract];
    if cfg!(feature = "ort") {
        match std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
            Some(library) => r.push(Runtime::Ort { library: library.into() }),
            None => skipped("onnxruntime", "ort: ORT_DYLIB_PATH is not set (bench/.venv-onnx has libonnxruntime)"),
        }
    }
    r
}

fn reference(spec: &PolicySpec, obs: &[f32]) -> Vec<f32> {
    let mut scratch = vec![0.0; 2 * spec.max_width()];
    let mut out = vec![0.0; obs.len() / spec.obs_dim * spec.output_dim()];
    for (o, a) in obs.chunks(spec.obs_dim).zip(out.chunks_mut(spec.output_dim())) {
        spec.forward(o, a, &mut scratch);
    }
    out
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    let spread = want.iter().fold(0f32, |m, a| m.max(a.abs()));
    assert!(spread > 1e-3, "{what}: the reference actions are all ~0, the comparison would be weak");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= TOLERANCE * w.abs().max(1.0), "{what}: action {i}: {g} vs embodia's {w}");
    }
}

fn export(dir: &Path, name: &str, spec: &PolicySpec) -> PathBuf {
    write_export(spec, Format::Onnx, &dir.join(name)).unwrap().remove(0)
}

#[test]
fn onnx_runtimes_reproduce_the_reference_forward() {
    let dir = scratch_dir("equal");
    for (n, spec) in policies().iter().enumerate() {
        let model = export(&dir, &format!("policy{n}"), spec);
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let obs: Vec<f32> = (0..SAMPLES * spec.obs_dim).map(|_| rng.random_range(-10.0..10.0)).collect();
        let want = reference(spec, &obs);
        for runtime in runtimes() {
            let what = format!("{} on policy {n} ({:?}, {:?})", runtime.name(), spec.activation, spec.head);
            let mut policy = load(&model, &runtime).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!((policy.obs_dim(), policy.output_dim()), (spec.obs_dim, spec.output_dim()), "{what}");
            let mut batched = vec![0.0; want.len()];
            policy.run(&obs, &mut batched).unwrap();
            assert_close(&format!("{what}, batch {SAMPLES}"), &batched, &want);
            let mut single = vec![0.0; want.len()];
            for (o, a) in obs.chunks(spec.obs_dim).zip(single.chunks_mut(spec.output_dim())) {
                policy.run(o, a).unwrap();
            }
            assert_close(&format!("{what}, batch 1"), &single, &want);
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_or_missing_models_and_ragged_inputs_are_reported() {
    let dir = scratch_dir("bad");
    let spec = &policies()[0];
    let model = export(&dir, "good", spec);
    let bytes = fs::read(&model).unwrap();
    let truncated = dir.join("truncated.onnx");
    fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let garbage = dir.join("garbage.onnx");
    fs::write(&garbage, b"this is not a protobuf \xff\xff\xff\xff").unwrap();
    let missing = dir.join("missing.onnx");
    for runtime in runtimes() {
        for file in [&truncated, &garbage, &missing] {
            let err =
                load(file, &runtime).err().unwrap_or_else(|| panic!("{}: {} loaded", runtime.name(), file.display()));
            assert!(matches!(err, OnnxError::Model { .. }), "{}: {err}", runtime.name());
            assert!(err.to_string().contains(&file.display().to_string()), "{}: {err}", runtime.name());
        }
        let mut policy = load(&model, &runtime).unwrap();
        let err = policy.run(&[0.0; 7], &mut [0.0; 3]).unwrap_err();
        assert!(err.to_string().contains("whole rows"), "{err}");
    }
    if cfg!(feature = "ort") {
        let err = load(&model, &Runtime::Ort { library: dir.join("libnothing.so") }).err().unwrap();
        assert!(matches!(err, OnnxError::Library(_)) && err.to_string().contains("libnothing.so"), "{err}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// Every runtime on mutated `model.onnx` files (bit flips, random bytes, cut and duplicated
/// ranges): every one is refused or runs, none panics (tract's own panics are caught by the
/// runtime and refused as corrupt models). 2,000 inputs per runtime; `EMBODIA_FUZZ_INPUTS` asks
/// for more (the campaign's figures are in docs/results/robustness.md), and
/// `EMBODIA_FUZZ_KEEP=DIR` keeps the models whose tract panic was caught.
#[test]
fn mutated_models_never_panic() {
    let dir = scratch_dir("fuzz");
    let model = export(&dir, "seed", &policies()[0]);
    let seed = fs::read(&model).unwrap();
    let inputs: usize = std::env::var("EMBODIA_FUZZ_INPUTS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    for runtime in runtimes() {
        let name = runtime.name();
        let fuzzed = fuzz_models(&runtime, &seed, inputs, &dir.join("mutated.onnx"));
        eprintln!(
            "{name}: {inputs} mutated models: {} loaded, {} panics ({} caught and refused as corrupt), slowest {:.3} s",
            fuzzed.loaded, fuzzed.panics, fuzzed.caught, fuzzed.slowest
        );
        assert_eq!(
            fuzzed.panics, 0,
            "{name} panicked on {} of {inputs} mutated models; first: {:?}",
            fuzzed.panics, fuzzed.first
        );
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// What one runtime did on the mutated models of [`fuzz_models`].
struct FuzzedModels {
    loaded: usize,
    panics: usize,
    /// Models refused because the runtime caught tract's own panic.
    caught: usize,
    first: Option<String>,
    /// Seconds, the slowest model (reported, not asserted: it depends on the machine's load).
    slowest: f64,
}

/// Loads (and, where it loads, runs) `inputs` mutations of `seed` (mutation seed 11) written to
/// `path`, each under `catch_unwind`.
fn fuzz_models(runtime: &Runtime, seed: &[u8], inputs: usize, path: &Path) -> FuzzedModels {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut out = FuzzedModels { loaded: 0, panics: 0, caught: 0, first: None, slowest: 0.0 };
    for _ in 0..inputs {
        let mut bytes = seed.to_vec();
        for _ in 0..rng.random_range(1..=8) {
            let at = rng.random_range(0..bytes.len());
            match rng.random_range(0..4) {
                0 => bytes[at] ^= 1 << rng.random_range(0..8),
                1 => bytes[at] = rng.random(),
                2 => {
                    let end = (at + rng.random_range(1..=64)).min(bytes.len() - 1);
                    bytes.drain(at..end);
                }
                _ => {
                    let end = (at + rng.random_range(1..=64)).min(bytes.len());
                    let copy = bytes[at..end].to_vec();
                    bytes.splice(at..at, copy);
                }
            }
        }
        fs::write(path, &bytes).unwrap();
        let start = std::time::Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match load(path, runtime) {
            Ok(mut policy) => {
                let _ = policy.run(&[0.1; 5], &mut [0.0; 3]);
                true
            }
            Err(e) => {
                if e.to_string().contains("tract failed") {
                    out.caught += 1;
                    if let Some(dir) = std::env::var_os("EMBODIA_FUZZ_KEEP") {
                        let _ = fs::write(Path::new(&dir).join(format!("tract-caught-{}.onnx", out.caught)), &bytes);
                    }
                }
                false
            }
        }));
        out.slowest = out.slowest.max(start.elapsed().as_secs_f64());
        match outcome {
            Ok(ok) => out.loaded += usize::from(ok),
            Err(payload) => {
                out.panics += 1;
                out.first = out.first.take().or_else(|| payload.downcast_ref::<String>().cloned());
            }
        }
    }
    std::panic::set_hook(hook);
    out
}

/// A mutated export on which tract itself panics (kept by the fuzz test above, shipped under
/// `tests/data/`): loading it is an error naming the file as a corrupt model, not a panic.
#[test]
fn a_model_that_panics_tract_is_refused_as_corrupt() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tract-panic.onnx");
    let e = load(&path, &Runtime::Tract).err().expect("the model must be refused").to_string();
    assert!(e.contains(&path.display().to_string()) && e.contains("corrupt model: tract failed"), "{e}");
}
