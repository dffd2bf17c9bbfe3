//! The compute device of this process (`--device cpu|gpu`): selecting it, probing a GPU in a
//! child process before anything runs on it, and naming the adapter.

use std::path::Path;

use burn::tensor::Device;

use crate::error::RunError;

/// The device `--device` selected for this process (first selection wins); unset means CPU.
static SELECTED_DEVICE: std::sync::OnceLock<Device> = std::sync::OnceLock::new();

/// The names `--device` accepts.
pub const DEVICES: [&str; 2] = ["cpu", "gpu"];

/// The plain (non-autodiff) device called `name`: `cpu` is burn's flex backend, `gpu` the
/// default GPU adapter through burn's wgpu backend (needs the `gpu` cargo feature and a Vulkan,
/// Metal or DX12 driver; kernels are compiled from WGSL by naga). A GPU that cannot run the
/// probe kernels of [`gpu_probe`] is refused with an error, never a crash later.
pub fn named_device(name: &str) -> Result<Device, RunError> {
    match name {
        "cpu" => Ok(Device::flex()),
        #[cfg(feature = "gpu")]
        "gpu" => usable_gpu(),
        #[cfg(not(feature = "gpu"))]
        "gpu" => Err(RunError::Device(
            "this embodia was built without the `gpu` feature; rebuild with `cargo build --release --features gpu`"
                .into(),
        )),
        other => Err(RunError::Device(format!("unknown device `{other}`; valid devices: {}", DEVICES.join(", ")))),
    }
}

/// The default wgpu adapter, initialized once per process and accepted only if [`gpu_probe`]
/// passes on it. wgpu panics deep inside burn when there is no adapter or a kernel cannot be
/// compiled; the probe runs under `catch_unwind` so that becomes this error at selection time.
#[cfg(feature = "gpu")]
fn usable_gpu() -> Result<Device, RunError> {
    let chosen = GPU.get_or_init(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let probed = std::panic::catch_unwind(|| {
            let device = Device::wgpu_options().init().map_err(|e| format!("no usable GPU: {e}"))?;
            gpu_probe(&device)?;
            let name =
                device.identity().map_or("unnamed adapter".into(), |i| format!("{} ({})", i.name, i.fingerprint));
            Ok((device, name))
        });
        std::panic::set_hook(hook);
        probed.unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the GPU runtime panicked");
            Err(format!("no usable GPU: {why}"))
        })
    });
    chosen.clone().map(|(device, _)| device).map_err(|why| {
        RunError::Device(format!(
            "{why} (is the Vulkan loader `libvulkan1` installed with a GPU driver, or Mesa's lavapipe `mesa-vulkan-drivers` for a CPU Vulkan device?)"
        ))
    })
}

/// The GPU [`usable_gpu`] accepted (with its adapter's name and kernel target), or why it was
/// refused; initialized once per process.
#[cfg(feature = "gpu")]
static GPU: std::sync::OnceLock<Result<(Device, String), String>> = std::sync::OnceLock::new();

/// The adapter behind `--device gpu` as the GPU runtime names it (`NVIDIA H100 PCIe (…)`,
/// `llvmpipe (…)`), once it has been selected; `None` before, or on the CPU.
pub fn gpu_name() -> Option<String> {
    #[cfg(feature = "gpu")]
    if let Some(Ok((_, name))) = GPU.get() {
        return Some(name.clone());
    }
    None
}

/// Environment variable under which the `embodia` binary only selects the GPU (running
/// [`gpu_probe`]) and exits: 0 if it is usable, 1 with the reason on stderr.
pub const GPU_PROBE_ONLY_ENV: &str = "EMBODIA_GPU_PROBE_ONLY";

/// Probes the GPU in a child process (`exe` with [`GPU_PROBE_ONLY_ENV`] set) before this
/// process touches it. A driver that crashes compiling or running the probe kernels (a
/// segmentation fault inside its shader compiler, which no `catch_unwind` can stop) then ends
/// the child, and this process reports it as an error instead of dying.
pub fn gpu_probe_in_child(exe: &Path) -> Result<(), RunError> {
    let out = std::process::Command::new(exe)
        .env(GPU_PROBE_ONLY_ENV, "1")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| RunError::Device(format!("cannot start the GPU probe ({}): {e}", exe.display())))?;
    if out.status.success() {
        return Ok(());
    }
    Err(RunError::Device(probe_failure(out.status, &String::from_utf8_lossy(&out.stderr))))
}

/// Why the probe child ended with `status`, given what it wrote to stderr.
fn probe_failure(status: std::process::ExitStatus, stderr: &str) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!(
            "no usable GPU: the GPU driver crashed (signal {signal}) while compiling or running the probe \
             kernels; use --device cpu, or another driver"
        );
    }
    let reason = stderr.trim().trim_start_matches("--device: ");
    if reason.is_empty() { format!("no usable GPU: the GPU probe failed ({status})") } else { reason.to_string() }
}

/// Launches real kernels on `device` (a matmul, `tanh`, a reduction) and checks their result
/// against the same arithmetic on the host: a device that can allocate but not compile or run
/// a compute pipeline fails here with the reason, not later inside training.
pub fn gpu_probe(device: &Device) -> Result<(), String> {
    use burn::tensor::{Tensor, TensorData};
    // a [2, 3] · b [3, 2]; tanh; sum of all four entries.
    let a = [0.5f32, -1.0, 0.25, 2.0, 0.0, -0.5];
    let b = [1.0f32, 0.5, -0.25, 1.5, 2.0, -1.0];
    let mut expected = 0.0f32;
    for i in 0..2 {
        for j in 0..2 {
            let dot: f32 = (0..3).map(|k| a[i * 3 + k] * b[k * 2 + j]).sum();
            expected += dot.tanh();
        }
    }
    let ta = Tensor::<2>::from_data(TensorData::new(a.to_vec(), [2, 3]), device);
    let tb = Tensor::<2>::from_data(TensorData::new(b.to_vec(), [3, 2]), device);
    let sum = ta.matmul(tb).tanh().sum().into_data().convert::<f32>();
    let got = sum.as_slice::<f32>().map_err(|e| format!("probe kernels returned unreadable data: {e:?}"))?[0];
    if (got - expected).abs() > 1e-4 {
        return Err(format!("probe kernels computed {got}, expected {expected}: the device miscomputes"));
    }
    Ok(())
}

/// Makes `name` (see [`named_device`]) the device [`default_device`] returns for the rest of
/// the process. Errors on an unknown or unavailable device, or a second, different selection.
pub fn select_device(name: &str) -> Result<(), RunError> {
    let device = named_device(name)?;
    let chosen = SELECTED_DEVICE.get_or_init(|| device.clone());
    if *chosen != device {
        return Err(RunError::Device(format!("a different device was already selected; cannot switch to `{name}`")));
    }
    Ok(())
}

/// The compute device for training: the selected one ([`select_device`]; burn's CPU backend
/// by default), with autodiff.
pub fn default_device() -> Device {
    plain_device().autodiff()
}

/// The selected device without autodiff (where environments and inference run).
pub fn plain_device() -> Device {
    SELECTED_DEVICE.get().cloned().unwrap_or_else(Device::flex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_crashed_gpu_probe_is_reported_as_a_driver_crash() {
        use std::os::unix::process::ExitStatusExt;
        let crashed = probe_failure(std::process::ExitStatus::from_raw(11), "");
        assert!(crashed.contains("GPU driver crashed (signal 11)"), "{crashed}");
        assert!(crashed.contains("--device cpu"), "{crashed}");
        let refused =
            probe_failure(std::process::ExitStatus::from_raw(1 << 8), "--device: no usable GPU: no adapter\n");
        assert_eq!(refused, "no usable GPU: no adapter");
    }

    #[test]
    fn the_gpu_probe_kernels_pass_on_the_cpu() {
        gpu_probe(&Device::flex()).unwrap();
    }
}
