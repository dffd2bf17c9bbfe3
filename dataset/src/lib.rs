//! Demonstration datasets on disk, in the LeRobot dataset layout (codebase version v3.0), so
//! that datasets recorded by LeRobot users can be trained on and ours can be read by their
//! tools.
//!
//! ```text
//! DIR/
//! ├── meta/info.json                              codebase_version, fps, features, path templates, totals
//! ├── meta/stats.json                             mean/std/min/max/count per numeric feature
//! ├── meta/tasks.parquet                          task (pandas index) → task_index
//! ├── meta/episodes/chunk-000/file-000.parquet    one row per episode: length, tasks, frame range, data file
//! └── data/chunk-000/file-000.parquet             one row per frame (step)
//! ```
//!
//! A frame row holds `observation.state` (fixed-size list of f32, the observation acted on),
//! `action` (fixed-size list of f32), `next.reward` (f32), `next.done` (true on the last frame
//! of an episode that ended in a terminal state), `next.success` (true on the last frame of a
//! successful episode), `timestamp` (s, `frame_index / fps`), `frame_index`, `episode_index`,
//! `index` (over the whole dataset) and `task_index`.
//!
//! [`save`] writes [`Demonstrations`] atomically (into a temporary sibling directory, then
//! renamed); [`read`] reads a dataset back into [`Demonstrations`] with its normalization
//! statistics and rejects malformed ones with an error naming the file, column and episode.

#![warn(missing_docs)]

mod columns;
pub mod info;
mod read;
pub mod stats;
mod thrift_bounds;
mod write;

use std::path::{Path, PathBuf};

pub use embodia_sim::demonstrations::{Demonstrations, Episode, FeatureStats, NormStats};
pub use info::{Feature, Info};
pub use read::{Dataset, read};
pub use write::{WriteOptions, check_output, save, write};

/// Errors of reading or writing a dataset; each names the file at fault, and where it applies
/// the column (feature) and episode.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file system refused (missing file, permission, full disk).
    #[error("{}: {cause}", path.display())]
    Io {
        /// File or directory.
        path: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
    },
    /// A Parquet file could not be read or written (corrupt file, unsupported codec).
    #[error("{}: {cause}", path.display())]
    Parquet {
        /// The Parquet file.
        path: PathBuf,
        /// The underlying error.
        cause: parquet::errors::ParquetError,
    },
    /// A JSON metadata file is not valid JSON or misses a field.
    #[error("{}: {cause}", path.display())]
    Json {
        /// The JSON file.
        path: PathBuf,
        /// The underlying error.
        cause: serde_json::Error,
    },
    /// A column's values are wrong: missing column, wrong type or shape, NaN, or rows that
    /// disagree with the episode index.
    #[error("{}: column `{column}`{}: {problem}", path.display(), episode.map(|e| format!(", episode {e}")).unwrap_or_default())]
    Column {
        /// The file holding the column.
        path: PathBuf,
        /// Column (feature) name, e.g. `observation.state`.
        column: String,
        /// Episode index the problem was found in, where it is about one episode.
        episode: Option<i64>,
        /// What is wrong.
        problem: String,
    },
    /// A metadata field disagrees with itself or with the data (version, totals, shapes).
    #[error("{}: `{field}`: {problem}", path.display())]
    Meta {
        /// The metadata file.
        path: PathBuf,
        /// The field at fault, e.g. `total_frames` or `features.action.shape`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The demonstrations given to [`write`] are inconsistent (episode with the wrong number
    /// of values, non-finite value, no episodes).
    #[error("cannot write demonstrations: {0}")]
    InvalidDemonstrations(String),
    /// [`save`] was asked to write into a non-empty directory without `overwrite`.
    #[error("{} exists and is not empty (pass --force to replace it)", path.display())]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// [`save`] was asked to replace something that is not a dataset: only a dataset (a
    /// directory with `meta/info.json`) is ever replaced, so nothing else can be lost.
    #[error("{} is {found}, not a dataset (no meta/info.json): refusing to replace it; choose another output", path.display())]
    NotADataset {
        /// The path.
        path: PathBuf,
        /// What is there, in words ("a file", "a directory of 3 entries").
        found: String,
    },
}

/// Shorthand for an [`DatasetError::Io`] at `path`.
fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |cause| DatasetError::Io { path: path.to_path_buf(), cause }
}

/// Shorthand for an [`DatasetError::Parquet`] at `path`.
fn pq_err(path: &Path) -> impl FnOnce(parquet::errors::ParquetError) -> DatasetError + '_ {
    move |cause| DatasetError::Parquet { path: path.to_path_buf(), cause }
}
