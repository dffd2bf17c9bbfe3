//! `embodia bench mcu`: exported policies on an emulated Cortex-M4F (QEMU mps2-an386).
//!
//! Each case is a policy exported the way `embodia export` does it (a trained run, or a
//! learner freshly initialized from a task's preset configuration: instruction counts do not
//! depend on the weights' values beyond the libm calls), fed with the task's own observations.
//! Per case: the worst deviation of the firmware's actions from [`PolicySpec::forward`],
//! instructions per forward pass from QEMU's trace, and the flash, RAM and stack footprint.

use std::path::Path;

use embodia_deploy::export::{Activation, PolicySpec};
use embodia_deploy::mcu::{self, Implementation, McuError, Toolchain};
use serde::Serialize;

use crate::config::{ConfigSources, TrainConfig, resolve};
use crate::device::default_device;
use crate::export::{ExportRunError, policy_of_checkpoint, policy_of_run};
use crate::run::{RunError, build_learner};

/// Observations whose actions are compared with the reference forward pass.
pub const CHECKED_INPUTS: usize = 64;
/// Forward passes whose instructions are counted (the trace grows ~70 bytes per instruction).
pub const COUNTED_INPUTS: usize = 8;
/// Crazyflie 2.1's STM32F405 clock, MHz: the time bound is reported at this rate.
pub const CRAZYFLIE_MHZ: f64 = 168.0;

/// Errors of the benchmark.
#[derive(Debug, thiserror::Error)]
pub enum McuBenchError {
    /// Building or running the firmware failed, or a tool is missing.
    #[error(transparent)]
    Mcu(#[from] McuError),
    /// The policy could not be exported.
    #[error(transparent)]
    Export(#[from] ExportRunError),
    /// The configuration or environment could not be built.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A preset configuration did not resolve.
    #[error(transparent)]
    Config(#[from] crate::error::ConfigError),
}

/// A policy to put on the microcontroller.
pub struct McuCase {
    /// Short name, e.g. `quadrotor-hover-sac`.
    pub name: String,
    /// The policy.
    pub spec: PolicySpec,
    /// Raw observations from its task, `[CHECKED_INPUTS, obs_dim]`.
    pub observations: Vec<f32>,
}

/// The figures of one case.
#[derive(Debug, Clone, Serialize)]
pub struct McuFigures {
    /// Case name.
    pub name: String,
    /// `C`, `Rust` or `RlTools`.
    pub implementation: String,
    /// Layer widths, e.g. `26-64-64-8 relu`.
    pub shape: String,
    /// Multiply-adds per forward pass.
    pub macs: usize,
    /// Instructions per forward pass: min, median, max over [`COUNTED_INPUTS`] observations.
    pub instructions: [u64; 3],
    /// Median instructions per multiply-add.
    pub instructions_per_mac: f64,
    /// Median estimated cycles per forward pass (Cortex-M4 timings, memory without wait states:
    /// [`embodia_deploy::mcu::cycles`]).
    pub cycles: u64,
    /// Median estimated cycles per multiply-add.
    pub cycles_per_mac: f64,
    /// Median estimated cycles / 168 MHz, µs: the Crazyflie's clock; flash wait states would
    /// add to it.
    pub us_at_168mhz: f64,
    /// Worst |firmware − reference| / max(1, |reference|) over [`CHECKED_INPUTS`] actions.
    pub max_relative_error: f32,
    /// Flash the policy adds (code, weights, its libm functions), bytes.
    pub policy_flash: u64,
    /// Static RAM the policy adds (newlib-nano's errno data for expf/tanhf), bytes.
    pub policy_ram: u64,
    /// Stack of one forward pass, bytes.
    pub policy_stack: u64,
    /// The whole test image's flash (start-up, harness, input table included), bytes.
    pub image_flash: u64,
}

/// A policy from `config` exactly as `embodia export` would write it for a run whose learner
/// was just initialized, with `CHECKED_INPUTS` observations of its task after reset.
pub fn preset_case(name: &str, config: &TrainConfig) -> Result<McuCase, McuBenchError> {
    let env = embodia_sim::make_with(&config.task, 1, config.env.as_ref()).map_err(RunError::from)?;
    let learner = build_learner(config, env.as_ref(), &default_device())?;
    let ckpt = learner.checkpoint().map_err(RunError::from)?;
    let spec = policy_of_checkpoint(config, &ckpt, &format!("a freshly initialized {name} learner"))?;
    Ok(McuCase { name: name.into(), observations: task_observations(config)?, spec })
}

/// The policy of the trained run in `dir`.
pub fn run_case(dir: &Path) -> Result<McuCase, McuBenchError> {
    let spec = policy_of_run(dir)?;
    let config = TrainConfig::from_file(&dir.join(crate::run::CONFIG_FILE))?;
    Ok(McuCase { name: dir.display().to_string(), observations: task_observations(&config)?, spec })
}

/// The default cases: a [64, 64] MLP (PPO's default network on pendulum: ELU, observation
/// normalization, clipped action), the same with ReLU (which RLtools can run too), and the
/// quadrotor-hover SAC policy of its preset.
pub fn default_cases() -> Result<Vec<McuCase>, McuBenchError> {
    // A small replay buffer: only the actor is exported; the preset's 1M transitions take ~250 MB.
    let overrides = ["algo.buffer_size=1000".to_string()];
    let preset = |task: &str, algorithm: &str, overrides: &[String]| {
        resolve(&ConfigSources { task: Some(task), algorithm: Some(algorithm), overrides, ..Default::default() })
    };
    Ok(vec![
        preset_case("mlp-64x64 (pendulum ppo)", &preset("pendulum", "ppo", &[])?)?,
        preset_case("mlp-64x64 relu (pendulum ppo)", &preset("pendulum", "ppo", &["algo.activation=relu".into()])?)?,
        preset_case("quadrotor-hover-sac", &preset("quadrotor-hover", "sac", &overrides)?)?,
    ])
}

/// Observations after resetting `CHECKED_INPUTS` environments of the config's task.
fn task_observations(config: &TrainConfig) -> Result<Vec<f32>, McuBenchError> {
    let mut env = embodia_sim::make_with(&config.task, CHECKED_INPUTS, config.env.as_ref()).map_err(RunError::from)?;
    env.reset(config.seed);
    Ok(env.buffers().obs.clone())
}

/// Builds, runs and counts `case` with `implementation` in scratch directories under `work`.
pub fn measure(
    toolchain: &Toolchain,
    case: &McuCase,
    implementation: Implementation,
    work: &Path,
) -> Result<McuFigures, McuBenchError> {
    let spec = &case.spec;
    let tag = format!("{}-{implementation:?}", sanitize(&case.name));
    let checked = mcu::build(spec, &case.observations, implementation, &work.join(format!("{tag}-check")))?;
    let out = mcu::run(&checked)?;
    let mut scratch = vec![0.0; 2 * spec.max_width()];
    let mut want = vec![0.0; spec.output_dim()];
    let mut max_relative_error = 0f32;
    for (o, got) in case.observations.chunks(spec.obs_dim).zip(out.actions.chunks(spec.output_dim())) {
        spec.forward(o, &mut want, &mut scratch);
        for (g, w) in got.iter().zip(&want) {
            max_relative_error = max_relative_error.max((g - w).abs() / w.abs().max(1.0));
        }
    }
    let counted_obs = &case.observations[..COUNTED_INPUTS * spec.obs_dim];
    let counted = mcu::build(spec, counted_obs, implementation, &work.join(format!("{tag}-count")))?;
    let costs = mcu::pass_costs(toolchain, &counted)?;
    let median_of = |f: fn(&mcu::PassCost) -> u64| {
        let mut v: Vec<u64> = costs.iter().map(f).collect();
        v.sort_unstable();
        v
    };
    let counts = median_of(|c| c.instructions);
    let median = counts[counts.len() / 2];
    let cycles = median_of(|c| c.cycles)[costs.len() / 2];
    let macs: usize = spec.layers.iter().map(|l| l.input * l.output).sum();
    let widths: Vec<String> =
        [spec.obs_dim].into_iter().chain(spec.layers.iter().map(|l| l.output)).map(|w| w.to_string()).collect();
    let activation = match spec.activation {
        Activation::Tanh => "tanh",
        Activation::Relu => "relu",
        Activation::Elu => "elu",
    };
    Ok(McuFigures {
        name: case.name.clone(),
        implementation: format!("{implementation:?}"),
        shape: format!("{} {activation}", widths.join("-")),
        macs,
        instructions: [counts[0], median, counts[counts.len() - 1]],
        instructions_per_mac: median as f64 / macs as f64,
        cycles,
        cycles_per_mac: cycles as f64 / macs as f64,
        us_at_168mhz: cycles as f64 / CRAZYFLIE_MHZ,
        max_relative_error,
        policy_flash: checked.policy.flash(),
        policy_ram: checked.policy.ram(),
        policy_stack: out.policy_stack_bytes,
        image_flash: checked.image.flash(),
    })
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// The figures as a table, one line per case and implementation; `×C` is the estimated cycles
/// relative to the C export of the same case.
pub fn describe(figures: &[McuFigures]) -> String {
    let mut s = format!(
        "{:<30} {:<7} {:<16} {:>6} {:>19} {:>9} {:>8} {:>9} {:>9} {:>5} {:>8} {:>6} {:>7} {:>8}\n",
        "policy",
        "impl",
        "shape",
        "MACs",
        "instr min/med/max",
        "instr/MAC",
        "cycles",
        "cyc/MAC",
        "µs@168MHz",
        "×C",
        "flash B",
        "RAM B",
        "stack B",
        "max err"
    );
    for f in figures {
        let [lo, med, hi] = f.instructions;
        let c = figures.iter().find(|c| c.name == f.name && c.implementation == "C");
        let ratio = c.map_or("-".to_string(), |c| format!("{:.2}", f.cycles as f64 / c.cycles as f64));
        s.push_str(&format!(
            "{:<30} {:<7} {:<16} {:>6} {:>19} {:>9.2} {:>8} {:>9.2} {:>9.0} {:>5} {:>8} {:>6} {:>7} {:>8.1e}\n",
            f.name,
            f.implementation,
            f.shape,
            f.macs,
            format!("{lo}/{med}/{hi}"),
            f.instructions_per_mac,
            f.cycles,
            f.cycles_per_mac,
            f.us_at_168mhz,
            ratio,
            f.policy_flash,
            f.policy_ram,
            f.policy_stack,
            f.max_relative_error
        ));
    }
    s
}
