//! `embodia act` and `embodia run-onnx`: a policy's actions for observations given as text.

use clap::Args;
use std::path::{Path, PathBuf};

/// The arguments of `embodia export`.
#[derive(Args)]
pub(crate) struct ExportArgs {
    /// Run directory.
    #[arg(long)]
    pub(crate) run: PathBuf,
    /// Output format.
    #[arg(long, value_parser = ["c", "rust", "onnx"])]
    pub(crate) format: String,
    /// Output directory (created; must not exist or be empty).
    #[arg(long)]
    pub(crate) out: PathBuf,
}

/// The arguments of `embodia act`.
#[derive(Args)]
pub(crate) struct ActArgs {
    /// Run directory.
    #[arg(long)]
    pub(crate) run: PathBuf,
    /// Observations file (default: stdin).
    #[arg(long)]
    pub(crate) obs: Option<PathBuf>,
}

/// The arguments of `embodia run-onnx`.
#[derive(Args)]
pub(crate) struct RunOnnxArgs {
    /// The ONNX model (`embodia export --format onnx`).
    #[arg(long, value_name = "FILE.onnx")]
    pub(crate) model: PathBuf,
    /// Observations file (default: stdin).
    #[arg(long)]
    pub(crate) obs: Option<PathBuf>,
    /// ONNX runtime: tract (feature `tract`) or ort (onnxruntime, feature `ort`).
    #[arg(long, default_value = "tract", value_parser = ["tract", "ort"])]
    pub(crate) runtime: String,
    /// onnxruntime shared library for `--runtime ort` (default: $ORT_DYLIB_PATH).
    #[arg(long, value_name = "libonnxruntime.so")]
    pub(crate) ort_lib: Option<PathBuf>,
}

/// The observation text of `--obs FILE` or stdin, and its name for errors.
pub(crate) fn read_observations(file: Option<&Path>) -> anyhow::Result<(String, String)> {
    Ok(match file {
        Some(f) => {
            (std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?, f.display().to_string())
        }
        None => (std::io::read_to_string(std::io::stdin())?, "stdin".into()),
    })
}

/// `$ORT_DYLIB_PATH`, where onnxruntime's shared library is by convention.
pub(crate) fn ort_dylib_path() -> Option<PathBuf> {
    std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()).map(PathBuf::from)
}
