//! The exported C policy as Cortex-M4F firmware under QEMU (issue 7, microcontroller): its
//! actions on fixed raw observations equal [`PolicySpec::forward`]'s, and its instruction
//! count and footprint are measured. Needs Debian's `gcc-arm-none-eabi` and `qemu-system-arm`
//! (`.ci/run` installs them); without them each test says SKIPPED and passes, except under CI
//! (`EMBODIA_CI`), where a tool `.ci/run` did not declare missing fails the test. The RLtools
//! comparison also needs `libstdc++-arm-none-eabi-newlib` and RLtools' headers in
//! `RLTOOLS_INCLUDE` (see `embodia_deploy::mcu::rltools`), else it says SKIPPED.
//!
//! Run with `cargo test --release -p embodia-deploy --test mcu`.

use std::path::PathBuf;

use embodia_deploy::export::{ActionHead, Activation, Dense, ObsNormalizer, PolicySpec, StateOffset};
use embodia_deploy::mcu::{self, Implementation, McuError, PassCost, Toolchain};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Firmware vs host: both compute in IEEE binary32 in the same order (`-std=c99` keeps GCC
/// from fusing `s += x * w` into `vfma`), so only the math library differs: newlib's
/// `tanhf`/`expf` (and the Rust export's own polynomial `exp`) are within ~1 ulp of the host's
/// glibc. That stays far below 1e-5 relative to max(1, |action|) (each test prints its worst
/// case: 0 to ~5e-7 here); a wrong weight, layout or activation is off by orders more.
/// RLtools' dense layer adds the bias after the sum, and g++ in C++ mode fuses `acc += w * x`
/// into `vfma`, so its actions differ in the last bits too (within the same bound).
const TOLERANCE: f32 = 1e-5;
const INPUTS: usize = 32;

/// Reports a test skipped because `tool` is missing. Under CI (`EMBODIA_CI` set) that is a
/// failure, unless `.ci/run` listed the tool in `EMBODIA_NOT_RUN` (it then prints NOT RUN).
fn skipped(tool: &str, message: &str) {
    let ci = std::env::var_os("EMBODIA_CI").is_some();
    let declared = std::env::var("EMBODIA_NOT_RUN").is_ok_and(|v| v.split(',').any(|t| t == tool));
    assert!(!ci || declared, "{message}: CI expects `{tool}` (.ci/run installs it, or lists it in EMBODIA_NOT_RUN)");
    eprintln!("SKIPPED {message}");
}

fn toolchain(test: &str) -> Option<Toolchain> {
    match Toolchain::find() {
        Ok(t) => Some(t),
        Err(e) => {
            skipped("cortex-m", &format!("{test}: {e}"));
            None
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("embodia-mcu-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An MLP `obs_dim → hidden… → outputs` with weights uniform in ±2/√fan_in (large enough that
/// tanh and ELU leave their linear range), and its raw observations.
fn policy(
    obs_dim: usize,
    hidden: &[usize],
    action_dim: usize,
    activation: Activation,
    head: ActionHead,
    normalize: bool,
) -> PolicySpec {
    let mut rng = ChaCha8Rng::seed_from_u64(obs_dim as u64 * 31 + hidden.len() as u64);
    let outputs = if head == ActionHead::SquashedAffine { 2 * action_dim } else { action_dim };
    let widths: Vec<usize> = [obs_dim].iter().chain(hidden).chain([&outputs]).copied().collect();
    let layers = widths
        .windows(2)
        .map(|w| {
            let bound = 2.0 / (w[0] as f32).sqrt();
            let mut u = |n| (0..n).map(|_| rng.random_range(-bound..bound)).collect::<Vec<f32>>();
            Dense { input: w[0], output: w[1], weight: u(w[0] * w[1]), bias: u(w[1]) }
        })
        .collect();
    PolicySpec {
        source: "tests/mcu.rs".into(),
        obs_dim,
        action_dim,
        chunk: 1,
        normalizer: normalize.then(|| ObsNormalizer {
            mean: (0..obs_dim).map(|j| j as f32 * 0.1 - 0.5).collect(),
            std: (0..obs_dim).map(|j| 0.5 + j as f32 * 0.05).collect(),
            clip: 5.0,
        }),
        layers,
        activation,
        head,
        action_low: (0..action_dim).map(|j| -1.0 - j as f32).collect(),
        action_high: (0..action_dim).map(|j| 1.0 + 0.5 * j as f32).collect(),
        state_offsets: Vec::new(),
    }
}

/// The quadrotor-hover SAC policy's shape: 26 observations, [64, 64] ReLU, 4 rotor commands
/// through the squashed head (8 outputs: means and log-stds).
fn quadrotor_sac() -> PolicySpec {
    policy(26, &[64, 64], 4, Activation::Relu, ActionHead::SquashedAffine, false)
}

/// A distilled student's layout: `chunk` actions of `action_dim` per pass (clip head), all but
/// the last action dimension relative to an observed state.
fn chunked(obs_dim: usize, hidden: &[usize], action_dim: usize, chunk: usize) -> PolicySpec {
    let mut spec = policy(obs_dim, hidden, action_dim * chunk, Activation::Elu, ActionHead::Clip, true);
    spec.action_dim = action_dim;
    spec.chunk = chunk;
    spec.action_low.truncate(action_dim);
    spec.action_high.truncate(action_dim);
    spec.state_offsets = (0..action_dim)
        .map(|j| (j + 1 < action_dim).then_some(StateOffset { column: 2 * j, scale: 0.5 + j as f32 }))
        .collect();
    spec
}

fn observations(spec: &PolicySpec, scale: f32) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    (0..INPUTS * spec.obs_dim).map(|_| rng.random_range(-scale..scale)).collect()
}

/// Builds and runs `spec` on the emulated Cortex-M4F; asserts every action matches the host
/// reference forward. Returns the worst relative error.
fn check_on_mcu(name: &str, spec: &PolicySpec, implementation: Implementation) -> Result<f32, McuError> {
    let obs = observations(spec, 4.0);
    let dir = scratch(name);
    let fw = mcu::build(spec, &obs, implementation, &dir)?;
    let out = mcu::run(&fw)?;
    let mut scratch = vec![0.0; 2 * spec.max_width()];
    let mut want = vec![0.0; spec.output_dim()];
    let mut worst = 0f32;
    let mut spread = 0f32;
    for (i, (o, got)) in obs.chunks(spec.obs_dim).zip(out.actions.chunks(spec.output_dim())).enumerate() {
        spec.forward(o, &mut want, &mut scratch);
        for (g, w) in got.iter().zip(&want) {
            let err = (g - w).abs() / w.abs().max(1.0);
            assert!(err <= TOLERANCE, "{name}: input {i}: firmware {g} vs reference {w}");
            worst = worst.max(err);
            spread = spread.max(w.abs());
        }
    }
    assert!(spread > 0.1, "{name}: reference actions are all ~0, the comparison would be weak");
    // Weights are const arrays in flash and the scratch buffers live on the stack: the only
    // static RAM is newlib-nano's errno/reentrancy data (~100 B) that expf/tanhf pull in.
    let weights: usize = spec.layers.iter().map(|l| l.weight.len() + l.bias.len()).sum();
    assert!(fw.policy.text >= 4 * weights as u64, "{name}: policy text {} < its weights", fw.policy.text);
    assert!(fw.policy.ram() <= 128, "{name}: the policy uses {} B of static RAM", fw.policy.ram());
    let buffers = 8 * spec.max_width() as u64;
    // g++ unrolls RLtools' fixed-size dot products completely and spills part of the layer input
    // it holds in registers: up to one more buffer's worth of stack.
    let slack = if implementation == Implementation::RlTools { 256 + buffers / 2 } else { 256 };
    assert!(
        (buffers..buffers + slack).contains(&out.policy_stack_bytes),
        "{name}: stack {} B, the two scratch buffers are {buffers} B",
        out.policy_stack_bytes
    );
    eprintln!(
        "{name}: {INPUTS} actions match, worst relative error {worst:.2e}; policy flash {} B, stack {} B",
        fw.policy.flash(),
        out.policy_stack_bytes
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(worst)
}

#[test]
fn c_firmware_reproduces_the_reference_forward_on_a_cortex_m4f() {
    if toolchain("c_firmware_reproduces_the_reference_forward_on_a_cortex_m4f").is_none() {
        return;
    }
    let cases = [
        ("quadrotor-sac", quadrotor_sac()),
        ("ppo-tanh-normalized", policy(3, &[64, 64], 1, Activation::Tanh, ActionHead::Clip, true)),
        ("ppo-elu", policy(11, &[32, 24], 3, Activation::Elu, ActionHead::Clip, false)),
        ("student-chunk-4", chunked(9, &[32, 32], 3, 4)),
    ];
    for (name, spec) in cases {
        check_on_mcu(name, &spec, Implementation::C).unwrap();
    }
}

#[test]
fn instructions_per_forward_pass_scale_with_the_multiply_adds() {
    let Some(tc) = toolchain("instructions_per_forward_pass_scale_with_the_multiply_adds") else { return };
    let quad = quadrotor_sac();
    let macs: usize = quad.layers.iter().map(|l| l.input * l.output).sum();
    let costs = count(&tc, "count-quad", &quad, Implementation::C).unwrap();
    let counts: Vec<u64> = costs.iter().map(|c| c.instructions).collect();
    assert_eq!(counts.len(), 4);
    // ReLU layers are data-independent; only the 4 output tanhf calls vary with the input.
    let (lo, hi) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    assert!(hi - lo < 200, "{counts:?}");
    // Each multiply-add is a weight load, a vmul and a vadd, plus an eighth of the input's load
    // (blocks of 8 outputs share it) and of the loop (~3.6 with the activations); one output
    // at a time took 5.1, soft-float would take dozens.
    let per_mac = lo as f64 / macs as f64;
    assert!((3.0..4.2).contains(&per_mac), "{per_mac:.2} instructions per multiply-add ({counts:?})");
    // Estimated cycles: a weight load pipelined behind the previous load (1), vmul (1), vadd (1),
    // plus the loop's share and the branches' refills.
    let cycles_per_mac = costs[0].cycles as f64 / macs as f64;
    assert!(
        (per_mac..per_mac * 1.5).contains(&cycles_per_mac),
        "{cycles_per_mac:.2} cycles per multiply-add ({costs:?})"
    );
    // Half the hidden width: about a quarter of the 64x64 layer's work goes away.
    let small = policy(26, &[32, 32], 4, Activation::Relu, ActionHead::SquashedAffine, false);
    let small = count(&tc, "count-small", &small, Implementation::C).unwrap();
    assert!(small[0].instructions * 2 < counts[0], "{small:?} vs {counts:?}");
    eprintln!(
        "quadrotor SAC policy: {costs:?} per pass ({per_mac:.2} instructions, {cycles_per_mac:.2} cycles per multiply-add)"
    );
}

#[test]
fn rust_no_std_export_runs_on_the_same_firmware() {
    if toolchain("rust_no_std_export_runs_on_the_same_firmware").is_none() {
        return;
    }
    // Best effort: the thumbv7em-none-eabihf standard library comes from rustup.
    match check_on_mcu("rust-quadrotor-sac", &quadrotor_sac(), Implementation::Rust) {
        Ok(_) => {}
        Err(e @ McuError::ToolMissing { .. }) => {
            skipped("thumbv7em", &format!("rust_no_std_export_runs_on_the_same_firmware: {e}"))
        }
        Err(e) => panic!("{e}"),
    }
}

/// The cost of each forward pass of `spec` built with `implementation` (4 inputs).
fn count(
    tc: &Toolchain,
    name: &str,
    spec: &PolicySpec,
    implementation: Implementation,
) -> Result<Vec<PassCost>, McuError> {
    let dir = scratch(name);
    let fw = mcu::build(spec, &observations(spec, 4.0)[..4 * spec.obs_dim], implementation, &dir)?;
    let costs = mcu::pass_costs(tc, &fw)?;
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(costs)
}

/// Median instructions per pass.
fn median(costs: &[PassCost]) -> u64 {
    let mut c: Vec<u64> = costs.iter().map(|c| c.instructions).collect();
    c.sort_unstable();
    c[c.len() / 2]
}

#[test]
fn rltools_dense_layers_reproduce_the_reference_forward_on_the_same_firmware() {
    let test = "rltools_dense_layers_reproduce_the_reference_forward_on_the_same_firmware";
    let Some(tc) = toolchain(test) else { return };
    let cases = [
        ("quadrotor-sac", quadrotor_sac()),
        ("ppo-tanh-normalized", policy(3, &[64, 64], 1, Activation::Tanh, ActionHead::Clip, true)),
    ];
    for (name, spec) in cases {
        match check_on_mcu(&format!("rltools-{name}"), &spec, Implementation::RlTools) {
            Ok(_) => {}
            Err(e @ McuError::ToolMissing { .. }) => {
                skipped("rltools", &format!("{test}: {e}"));
                return;
            }
            Err(e) => panic!("{name}: {e}"),
        }
        let macs: usize = spec.layers.iter().map(|l| l.input * l.output).sum();
        let ours = median(&count(&tc, &format!("count-c-{name}"), &spec, Implementation::C).unwrap());
        let theirs = median(&count(&tc, &format!("count-rltools-{name}"), &spec, Implementation::RlTools).unwrap());
        eprintln!(
            "{name}: instructions per pass (median of 4): C {ours} ({:.2}/MAC), RLtools {theirs} ({:.2}/MAC), \
             RLtools/C {:.2}",
            ours as f64 / macs as f64,
            theirs as f64 / macs as f64,
            theirs as f64 / ours as f64
        );
    }
}
