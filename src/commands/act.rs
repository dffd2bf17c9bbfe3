//! `embodia act` and `embodia run-onnx`: a policy's actions for observations given as text.

use std::path::{Path, PathBuf};

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
