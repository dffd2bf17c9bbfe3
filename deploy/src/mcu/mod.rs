//! An exported policy as Cortex-M4F firmware, run under QEMU.
//!
//! [`build`] writes the C export of a [`PolicySpec`] next to the bare-metal firmware in
//! `deploy/firmware/cortex-m4f/` (start-up code, an mps2-an386 linker script cut to an
//! STM32F405's 1 MiB flash / 128 KiB RAM, semihosting output) and a table of fixed raw
//! observations, and compiles it with Debian's `arm-none-eabi-gcc` for a Cortex-M4 with its
//! single-precision FPU (`-mfpu=fpv4-sp-d16 -mfloat-abi=hard`, newlib-nano's `expf`/`tanhf`).
//! [`run`] boots it on `qemu-system-arm -M mps2-an386` and reads the actions back as exact
//! float bits; [`pass_costs`] counts the instructions of each forward pass from QEMU's
//! one-instruction-per-block execution trace and estimates their cycles from the Cortex-M4's
//! instruction timings ([`cycles`]; QEMU models no cycle timing, and its DWT cycle counter does
//! not count). [`Implementation::Rust`] links the `no_std` Rust export, built for
//! `thumbv7em-none-eabihf`, into the same firmware instead of the C one;
//! [`Implementation::RlTools`] links a C++ policy whose dense layers are RLtools' ARM code
//! ([`rltools`]), to compare the two libraries' inference on the same chip, weights and inputs.
//!
//! Equivalent shell build of the C firmware, from a directory holding the files [`build`]
//! writes:
//! `arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard -O2
//! -funroll-loops -std=c99 --specs=nano.specs -nostartfiles -T mps2_an386.ld -Wl,--gc-sections -o firmware.elf
//! startup.c main.c embodia_policy.c -lm`, then `qemu-system-arm -M mps2-an386 -display none
//! -monitor none -serial none -chardev stdio,id=sh -semihosting-config
//! enable=on,target=native,chardev=sh -kernel firmware.elf`.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::export::{self, ExportError, Format, PolicySpec, float_list};

pub mod cycles;
pub mod rltools;

/// The firmware sources, as (file name, contents).
const FIRMWARE: [(&str, &str); 4] = [
    ("startup.c", include_str!("../../firmware/cortex-m4f/startup.c")),
    ("semihosting.h", include_str!("../../firmware/cortex-m4f/semihosting.h")),
    ("main.c", include_str!("../../firmware/cortex-m4f/main.c")),
    ("mps2_an386.ld", include_str!("../../firmware/cortex-m4f/mps2_an386.ld")),
];

/// Code generation for a Cortex-M4 with the FPv4-SP FPU, floats passed in FPU registers.
const CPU_FLAGS: [&str; 4] = ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"];
/// Unrolling the dot-product loops saves ~20% of the instructions of a pass for ~2 KB of code.
pub const OPT_FLAGS: [&str; 2] = ["-O2", "-funroll-loops"];
/// Warnings are errors: `-Wdouble-promotion` proves the policy does no double arithmetic,
/// which the FPU cannot do in hardware.
const C_FLAGS: [&str; 8] =
    ["-std=c99", "-Wall", "-Wextra", "-Wdouble-promotion", "-Werror", "-ffunction-sections", "-fdata-sections", "-g"];
/// newlib-nano (smaller reentrancy data), no C start-up files (startup.c is the start-up).
const LINK_FLAGS: [&str; 5] = ["--specs=nano.specs", "-nostartfiles", "-T", "mps2_an386.ld", "-Wl,--gc-sections"];
/// A firmware that has not exited after this long is stuck.
const QEMU_TIMEOUT: Duration = Duration::from_secs(120);

/// Errors of building or running the firmware, naming the tool or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum McuError {
    /// A tool is not installed.
    #[error("`{tool}` not found: {hint}")]
    ToolMissing {
        /// The program.
        tool: String,
        /// How to install it.
        hint: String,
    },
    /// A tool ran and failed.
    #[error("`{command}` failed: {output}")]
    ToolFailed {
        /// The command line.
        command: String,
        /// Its diagnostics.
        output: String,
    },
    /// The firmware printed something other than the expected actions.
    #[error("firmware output: {0}")]
    Output(String),
    /// The implementation cannot run this policy.
    #[error("{0}")]
    Unsupported(String),
    /// Exporting the policy failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The host tools: `arm-none-eabi-gcc` (with `-size`, `-nm`) and `qemu-system-arm`.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// QEMU's version, `(major, minor)`: it decides the one-instruction-per-block flag.
    pub qemu_version: (u32, u32),
    /// `arm-none-eabi-gcc --version`'s first line.
    pub gcc_version: String,
}

impl Toolchain {
    /// Finds the tools on `PATH`; the error says which package to install.
    pub fn find() -> Result<Self, McuError> {
        let gcc =
            first_line("arm-none-eabi-gcc", "install Debian's gcc-arm-none-eabi (apt-get install gcc-arm-none-eabi)")?;
        let qemu = first_line("qemu-system-arm", "install Debian's qemu-system-arm (apt-get install qemu-system-arm)")?;
        let version = qemu.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
        let mut parts = version.unwrap_or("0.0").split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let qemu_version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        Ok(Self { qemu_version, gcc_version: gcc })
    }

    /// QEMU flags that make every translation block one instruction, so an execution trace
    /// logs each instruction: `-singlestep` before QEMU 8.1, the TCG property since.
    fn one_instruction_per_block(&self) -> Vec<&'static str> {
        if self.qemu_version >= (8, 1) { vec!["-accel", "tcg,one-insn-per-tb=on"] } else { vec!["-singlestep"] }
    }
}

fn first_line(tool: &str, hint: &str) -> Result<String, McuError> {
    let missing = || McuError::ToolMissing { tool: tool.into(), hint: hint.into() };
    let out = Command::new(tool).arg("--version").output().map_err(|_| missing())?;
    if !out.status.success() {
        return Err(missing());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string())
}

/// Which export of the policy the firmware links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// `embodia_policy.c`, compiled with `arm-none-eabi-gcc`.
    C,
    /// `embodia_policy.rs` (`no_std`), compiled with `rustc --target thumbv7em-none-eabihf` as
    /// a static library behind the C header's function.
    Rust,
    /// `embodia_policy_rltools.cpp`: the C export's normalization and action head around
    /// RLtools' ARM OPT dense layers, compiled with `arm-none-eabi-g++ -std=c++17` against the
    /// headers in `RLTOOLS_INCLUDE` ([`rltools`]). ReLU and tanh policies only.
    RlTools,
}

/// Sizes from `arm-none-eabi-size`, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Code and read-only data (weights live here).
    pub text: u64,
    /// Initialized data (in flash, copied to RAM).
    pub data: u64,
    /// Zero-initialized data.
    pub bss: u64,
}

impl Footprint {
    /// Flash bytes: `text + data`.
    pub fn flash(&self) -> u64 {
        self.text + self.data
    }
    /// Static RAM bytes: `data + bss` (the stack comes on top).
    pub fn ram(&self) -> u64 {
        self.data + self.bss
    }
    fn minus(&self, o: &Footprint) -> Footprint {
        Footprint {
            text: self.text.saturating_sub(o.text),
            data: self.data.saturating_sub(o.data),
            bss: self.bss.saturating_sub(o.bss),
        }
    }
}

/// A built firmware image.
#[derive(Debug, Clone)]
pub struct Firmware {
    /// The ELF image for `qemu-system-arm -kernel`.
    pub elf: PathBuf,
    /// The same firmware with an empty policy function, the baseline of the footprints.
    pub baseline_elf: PathBuf,
    /// Observations it runs the policy on.
    pub inputs: usize,
    /// Floats of one forward pass's output, `chunk · action_dim`.
    pub output_dim: usize,
    /// The whole image: start-up, harness, the input table, the policy and its libm functions.
    pub image: Footprint,
    /// What the policy adds to the image: its code, weights and the libm functions it pulls
    /// in (the image minus the same harness with an empty policy).
    pub policy: Footprint,
}

/// What a firmware run printed.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Raw actions, `[inputs, chunk, action_dim]`.
    pub actions: Vec<f32>,
    /// Stack bytes the forward pass used beyond the harness (high-water marks of this image
    /// minus the empty-policy baseline).
    pub policy_stack_bytes: u64,
}

/// Writes the firmware for `spec` into `dir` (created; must be empty or absent) with the fixed
/// raw observations `inputs` (`[n, obs_dim]`), and builds it with `implementation`. The checks
/// that need no tool (the policy, the inputs, [`Implementation::RlTools`]'s activation and
/// include directory) come before anything is written.
pub fn build(
    spec: &PolicySpec,
    inputs: &[f32],
    implementation: Implementation,
    dir: &Path,
) -> Result<Firmware, McuError> {
    spec.validate()?;
    if spec.obs_dim == 0 || inputs.is_empty() || !inputs.len().is_multiple_of(spec.obs_dim) {
        return Err(ExportError::Invalid(format!(
            "{} input values are not a whole number of {}-feature observations",
            inputs.len(),
            spec.obs_dim
        ))
        .into());
    }
    if let Some(i) = inputs.iter().position(|x| !x.is_finite()) {
        return Err(ExportError::Invalid(format!("input value {i} is {}, not a finite number", inputs[i])).into());
    }
    let rltools_include = match implementation {
        Implementation::RlTools => {
            rltools::check(spec)?;
            Some(rltools::include_dir()?)
        }
        _ => None,
    };
    export::write_export(spec, Format::C, dir)?;
    for (name, text) in FIRMWARE {
        write(&dir.join(name), text)?;
    }
    let n = inputs.len() / spec.obs_dim;
    let table = inputs
        .chunks(spec.obs_dim)
        .map(|o| format!("    {{\n{}\n    }},", float_list(o, "f", "        ")))
        .collect::<Vec<_>>();
    write(
        &dir.join("inputs.h"),
        &format!(
            "/* Fixed raw observations the firmware runs the policy on. Generated. */\n\
             #define N_INPUTS {n}\n\
             static const float INPUTS[N_INPUTS][EMBODIA_POLICY_OBS_DIM] = {{\n{}\n}};\n",
            table.join("\n")
        ),
    )?;
    write(
        &dir.join("empty_policy.c"),
        "/* The baseline: the harness with a policy that does nothing. */\n\
         #include \"embodia_policy.h\"\n\
         void embodia_policy_forward(const float obs[EMBODIA_POLICY_OBS_DIM], float action[EMBODIA_POLICY_CHUNK * EMBODIA_POLICY_ACTION_DIM]) {\n\
         \x20   (void)obs; (void)action;\n}\n",
    )?;
    let policy_src = match implementation {
        Implementation::C => "embodia_policy.c".to_string(),
        Implementation::Rust => build_rust_policy(spec, dir)?,
        Implementation::RlTools => match &rltools_include {
            Some(include) => rltools::build_policy(spec, include, dir)?,
            None => return Err(McuError::Unsupported("RLtools' include directory was not found".into())),
        },
    };
    let link = |out: &str, policy: &str| -> Result<PathBuf, McuError> {
        let mut cmd = Command::new("arm-none-eabi-gcc");
        cmd.current_dir(dir).args(CPU_FLAGS).args(OPT_FLAGS).args(C_FLAGS).args(LINK_FLAGS);
        cmd.args(["-o", out, "startup.c", "main.c", policy, "-lm"]);
        run_tool(&mut cmd)?;
        Ok(dir.join(out))
    };
    let elf = link("firmware.elf", &policy_src)?;
    let baseline_elf = link("baseline.elf", "empty_policy.c")?;
    let image = size(&elf)?;
    let policy = image.minus(&size(&baseline_elf)?);
    Ok(Firmware { elf, baseline_elf, inputs: n, output_dim: spec.output_dim(), image, policy })
}

/// Builds the `no_std` Rust export as `libembodia_policy.a` exposing the C header's function;
/// returns the archive's file name.
fn build_rust_policy(spec: &PolicySpec, dir: &Path) -> Result<String, McuError> {
    let rust = dir.join("rust");
    export::write_export(spec, Format::Rust, &rust)?;
    write(
        &rust.join("lib.rs"),
        "//! The `no_std` export behind `embodia_policy_forward` of `embodia_policy.h`.\n\
         #![no_std]\n\
         mod embodia_policy;\n\
         use embodia_policy::{forward, ACTION_DIM, CHUNK, OBS_DIM};\n\
         extern \"C\" { fn semihost_exit(success: i32) -> !; }\n\
         /// # Safety\n/// `obs` points at OBS_DIM floats, `action` at CHUNK * ACTION_DIM writable floats.\n\
         #[no_mangle]\n\
         pub unsafe extern \"C\" fn embodia_policy_forward(obs: *const f32, action: *mut f32) {\n\
         \x20   forward(&*(obs as *const [f32; OBS_DIM]), &mut *(action as *mut [f32; CHUNK * ACTION_DIM]));\n}\n\
         #[panic_handler]\n\
         fn panic(_: &core::panic::PanicInfo) -> ! { unsafe { semihost_exit(0) } }\n",
    )?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = Command::new(&rustc);
    cmd.current_dir(dir).args([
        "--edition=2021",
        "--crate-type=staticlib",
        "--crate-name=embodia_policy",
        "--target=thumbv7em-none-eabihf",
        "-Copt-level=3",
        "-Cpanic=abort",
        "-Ctarget-cpu=cortex-m4",
        "-o",
        "libembodia_policy.a",
        "rust/lib.rs",
    ]);
    run_tool(&mut cmd).map_err(|e| match e {
        McuError::ToolFailed { output, .. } if output.contains("can't find crate for `core`") => {
            McuError::ToolMissing {
                tool: "thumbv7em-none-eabihf standard library".into(),
                hint: "rustup target add thumbv7em-none-eabihf".into(),
            }
        }
        e => e,
    })?;
    Ok("libembodia_policy.a".into())
}

/// Boots the firmware on QEMU's mps2-an386 and reads back its actions and stack use.
pub fn run(firmware: &Firmware) -> Result<RunOutput, McuError> {
    let main = parse_output(&qemu(&firmware.elf, &[])?, firmware.inputs, firmware.output_dim)?;
    let baseline = parse_output(&qemu(&firmware.baseline_elf, &[])?, firmware.inputs, firmware.output_dim)?;
    Ok(RunOutput { actions: main.0, policy_stack_bytes: main.1.saturating_sub(baseline.1) })
}

/// The cost of one forward pass on the emulated Cortex-M4F.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassCost {
    /// Instructions executed, counted from QEMU's trace.
    pub instructions: u64,
    /// Estimated cycles of those instructions ([`cycles::CycleModel`]: the manual's timings,
    /// memory without wait states).
    pub cycles: u64,
}

/// The cost of each forward pass, one per input, from QEMU's execution trace with one
/// instruction per translation block: the instructions executed between entering
/// `bench_begin` and entering `bench_end` (the call, the pass and the return; about five of
/// them are the markers' own), and their estimated cycles. Writes the trace to
/// `firmware.elf`'s directory and removes it.
pub fn pass_costs(toolchain: &Toolchain, firmware: &Firmware) -> Result<Vec<PassCost>, McuError> {
    let symbols = symbol_addresses(&firmware.elf)?;
    let address = |name: &str| {
        symbols
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| *a)
            .ok_or_else(|| McuError::Output(format!("no symbol `{name}`")))
    };
    let (begin, end) = (address("bench_begin")?, address("bench_end")?);
    let model = cycles::CycleModel::of_elf(&firmware.elf)?;
    let log = firmware.elf.with_extension("trace");
    let log_arg = log.display().to_string();
    let mut args = toolchain.one_instruction_per_block();
    args.extend(["-d", "exec,nochain", "-D", &log_arg]);
    qemu(&firmware.elf, &args)?;
    let file = fs::File::open(&log).map_err(io(&log))?;
    let mut costs = Vec::new();
    let mut pass: Option<Vec<u64>> = None;
    for line in BufReader::new(file).lines() {
        let line = line.map_err(io(&log))?;
        let Some(pc) = traced_pc(&line) else { continue };
        if pc == begin {
            pass = Some(Vec::new());
        } else if pc == end {
            if let Some(pcs) = pass.take() {
                costs.push(PassCost { instructions: pcs.len() as u64, cycles: model.cycles(&pcs, end) });
            }
        } else if let Some(pcs) = pass.as_mut() {
            pcs.push(pc);
        }
    }
    let _ = fs::remove_file(&log);
    if costs.len() != firmware.inputs {
        return Err(McuError::Output(format!(
            "the trace shows {} forward passes, expected {}",
            costs.len(),
            firmware.inputs
        )));
    }
    Ok(costs)
}

/// The guest PC of a `-d exec` line: `Trace 0: 0x7f.. [cs_base/pc/flags/cflags] symbol`.
fn traced_pc(line: &str) -> Option<u64> {
    let fields = line.strip_prefix("Trace ")?.split_once('[')?.1;
    u64::from_str_radix(fields.split('/').nth(1)?, 16).ok()
}

fn symbol_addresses(elf: &Path) -> Result<Vec<(String, u64)>, McuError> {
    let out = run_tool(Command::new("arm-none-eabi-nm").arg(elf))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let name = f.nth(1)?;
            // Thumb function symbols carry bit 0; the traced PC does not.
            Some((name.to_string(), addr & !1))
        })
        .collect())
}

fn size(elf: &Path) -> Result<Footprint, McuError> {
    let out = run_tool(Command::new("arm-none-eabi-size").arg(elf))?;
    let nums: Vec<u64> =
        out.lines().nth(1).unwrap_or("").split_whitespace().take(3).filter_map(|w| w.parse().ok()).collect();
    match nums[..] {
        [text, data, bss] => Ok(Footprint { text, data, bss }),
        _ => Err(McuError::Output(format!("unexpected arm-none-eabi-size output: {out}"))),
    }
}

/// Runs `elf` on mps2-an386 with semihosting; returns what it printed. A firmware that faults
/// or panics exits non-zero, one that hangs is killed after [`QEMU_TIMEOUT`].
fn qemu(elf: &Path, extra: &[&str]) -> Result<String, McuError> {
    let mut cmd = Command::new("qemu-system-arm");
    cmd.args(["-M", "mps2-an386", "-display", "none", "-monitor", "none", "-serial", "none"])
        .args([
            "-chardev",
            "stdio,id=semihosting",
            "-semihosting-config",
            "enable=on,target=native,chardev=semihosting",
        ])
        .arg("-kernel")
        .arg(elf)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let command = format!("{cmd:?}");
    let mut child =
        cmd.spawn().map_err(|e| McuError::ToolFailed { command: command.clone(), output: e.to_string() })?;
    let start = Instant::now();
    while child
        .try_wait()
        .map_err(|e| McuError::ToolFailed { command: command.clone(), output: e.to_string() })?
        .is_none()
    {
        if start.elapsed() > QEMU_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(McuError::ToolFailed { command, output: format!("no exit after {QEMU_TIMEOUT:?}") });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| McuError::ToolFailed { command: command.clone(), output: e.to_string() })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(McuError::ToolFailed {
            command,
            output: format!("{} (firmware printed: {stdout}{})", out.status, String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(stdout)
}

/// Actions `[n, action_dim]` and the stack high-water mark from the firmware's output.
fn parse_output(text: &str, n: usize, action_dim: usize) -> Result<(Vec<f32>, u64), McuError> {
    let bad = |m: String| McuError::Output(m);
    let mut actions = Vec::with_capacity(n * action_dim);
    let mut stack = None;
    for line in text.lines() {
        if let Some(bytes) = line.strip_prefix("stack ") {
            stack = Some(bytes.trim().parse().map_err(|_| bad(format!("bad stack line `{line}`")))?);
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() != action_dim {
            return Err(bad(format!("line `{line}` does not hold {action_dim} actions")));
        }
        for w in words {
            actions.push(f32::from_bits(
                u32::from_str_radix(w, 16).map_err(|_| bad(format!("`{w}` is not hex float bits")))?,
            ));
        }
    }
    if actions.len() != n * action_dim {
        return Err(bad(format!("{} action values, expected {}", actions.len(), n * action_dim)));
    }
    Ok((actions, stack.ok_or_else(|| bad("no stack line".into()))?))
}

fn run_tool(cmd: &mut Command) -> Result<String, McuError> {
    let command = format!("{cmd:?}");
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => McuError::ToolMissing { tool: program, hint: "not on PATH".into() },
        _ => McuError::ToolFailed { command: command.clone(), output: e.to_string() },
    })?;
    if !out.status.success() {
        return Err(McuError::ToolFailed {
            command,
            output: format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn write(path: &Path, text: &str) -> Result<(), McuError> {
    fs::write(path, text).map_err(io(path))
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> McuError + '_ {
    move |e| McuError::Io { path: path.display().to_string(), message: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines_give_the_guest_pc() {
        let line = "Trace 0: 0x7f5f3000c9c0 [00800408/00000134/00000010/ff000201] bench_begin";
        assert_eq!(traced_pc(line), Some(0x134));
        assert_eq!(traced_pc("Linking TBs"), None);
    }

    #[test]
    fn bad_inputs_are_refused_before_anything_is_written() {
        use crate::export::{ActionHead, Activation, Dense};
        let spec = PolicySpec {
            source: "unit test".into(),
            obs_dim: 2,
            action_dim: 1,
            chunk: 1,
            normalizer: None,
            layers: vec![Dense { input: 2, output: 1, weight: vec![1.0, -1.0], bias: vec![0.0] }],
            activation: Activation::Relu,
            head: ActionHead::Clip,
            action_low: vec![-1.0],
            action_high: vec![1.0],
            state_offsets: Vec::new(),
        };
        let dir = std::env::temp_dir().join(format!("embodia-mcu-unit-{}", std::process::id()));
        let err = build(&spec, &[1.0, f32::NAN], Implementation::C, &dir).unwrap_err();
        assert!(err.to_string().contains("input value 1 is NaN"), "{err}");
        let err = build(&spec, &[1.0, 2.0, 3.0], Implementation::C, &dir).unwrap_err();
        assert!(err.to_string().contains("not a whole number of 2-feature observations"), "{err}");
        assert!(!dir.exists());
    }

    #[test]
    fn firmware_output_is_parsed_exactly_and_checked() {
        let (a, stack) = parse_output("3f800000 bf000000\nstack 312\n", 1, 2).unwrap();
        assert_eq!(a, vec![1.0, -0.5]);
        assert_eq!(stack, 312);
        assert!(parse_output("3f800000\nstack 1\n", 1, 2).is_err());
        assert!(parse_output("3f800000 00000000\n", 1, 2).is_err());
        assert!(parse_output("FAULT\n", 1, 1).is_err());
    }
}
