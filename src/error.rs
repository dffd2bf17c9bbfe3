//! The errors of the `embodia` crate: a configuration that cannot be resolved
//! ([`ConfigError`]) and a run that cannot be built, trained, read or written ([`RunError`]).
//! Each names the file, line, flag or field at fault.

use std::path::Path;

/// A configuration problem, in words that name the file, line or field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unknown algorithm name.
    #[error("unknown algorithm `{name}`; valid algorithms: {valid}")]
    UnknownAlgorithm {
        /// The name given.
        name: String,
        /// The registered names, comma-separated.
        valid: String,
    },
    /// The TOML file could not be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// A `--set key=value` override is malformed or names an unknown key.
    #[error("--set {arg}: {message}")]
    Override {
        /// The override as given.
        arg: String,
        /// What is wrong.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("invalid value for `{field}`: {value} (allowed: {allowed})")]
    OutOfRange {
        /// Dotted key, e.g. `algo.learning_rate`.
        field: String,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A key that is not a setting (dotted, e.g. `algo.model.vision.flim`).
    #[error("unknown key `{0}`")]
    UnknownKey(String),
    /// A value is of the wrong type, or the task is unknown.
    #[error("{0}")]
    Invalid(String),
}

/// Errors of runs, with the path or field at fault.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The learner or environment failed.
    #[error(transparent)]
    Algo(#[from] embodia_algos::AlgoError),
    /// Bad task name or environment setup.
    #[error(transparent)]
    Sim(#[from] embodia_sim::SimError),
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A demonstration dataset could not be read.
    #[error(transparent)]
    Dataset(#[from] embodia_dataset::DatasetError),
    /// Metrics could not be read or curves drawn.
    #[error(transparent)]
    Plot(#[from] crate::plot::PlotError),
    /// Another process writes the run directory.
    #[error(transparent)]
    Lock(#[from] crate::run_lock::LockError),
    /// The compute device asked for is unknown or not compiled in.
    #[error("--device: {0}")]
    Device(String),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Maps an I/O error on `path` to a [`RunError::Io`] that names the path.
pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |e| RunError::Io { path: path.display().to_string(), message: e.to_string() }
}
