//! Reading and writing the LeRobot v3 datasets embodia records (`embodia record`), as numpy.

use std::path::PathBuf;

use embodia_dataset::{DatasetError, Demonstrations, Episode, WriteOptions};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::value_error;

/// Reads the dataset at `path` into a dict: `task`, `fps`, `obs_dim`, `action_dim`,
/// `has_success`, `cameras` (`[(name, height, width, channels)]`) and `episodes`, a list of
/// dicts with `observations` (`float32 [T, obs_dim]`), `actions` (`float32 [T, action_dim]`),
/// `rewards` (`float32 [T]`), `success`, `terminated`, `instruction` (`str` or `None`),
/// `images` (one `uint8 [T, H, W, C]` per camera) and `states` (`float32 [T, state_dim]`).
/// Raises `OSError` for a missing file, `ValueError` for a malformed dataset (naming the file,
/// column and episode).
#[pyfunction]
pub fn read_dataset<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let dataset = py.detach(|| embodia_dataset::read(&path)).map_err(dataset_error)?;
    let has_success = dataset.has_success();
    let demos = dataset.demonstrations;
    let out = PyDict::new(py);
    out.set_item("task", &demos.task)?;
    out.set_item("fps", demos.fps)?;
    out.set_item("obs_dim", demos.obs_dim)?;
    out.set_item("action_dim", demos.action_dim)?;
    out.set_item("has_success", has_success)?;
    let cameras: Vec<_> = demos.cameras.iter().map(|c| (c.name.clone(), c.height, c.width, c.channels)).collect();
    out.set_item("cameras", cameras)?;
    let episodes = PyList::empty(py);
    for e in &demos.episodes {
        let len = e.len();
        let episode = PyDict::new(py);
        episode.set_item("observations", PyArray1::from_slice(py, &e.observations).reshape([len, demos.obs_dim])?)?;
        episode.set_item("actions", PyArray1::from_slice(py, &e.actions).reshape([len, demos.action_dim])?)?;
        episode.set_item("rewards", PyArray1::from_slice(py, &e.rewards))?;
        episode.set_item("success", e.success)?;
        episode.set_item("terminated", e.terminated)?;
        episode.set_item("instruction", e.instruction.as_deref())?;
        let images = PyList::empty(py);
        for (pixels, c) in e.images.iter().zip(&demos.cameras) {
            images.append(PyArray1::from_slice(py, pixels).reshape([len, c.height, c.width, c.channels])?)?;
        }
        episode.set_item("images", images)?;
        episode.set_item("states", PyArray1::from_slice(py, &e.states).reshape([len, demos.state_dim])?)?;
        episodes.append(episode)?;
    }
    out.set_item("episodes", episodes)?;
    Ok(out)
}

/// One episode handed to [`write_dataset`].
#[derive(FromPyObject)]
pub struct EpisodeIn<'py> {
    #[pyo3(item)]
    observations: PyReadonlyArray2<'py, f32>,
    #[pyo3(item)]
    actions: PyReadonlyArray2<'py, f32>,
    #[pyo3(item)]
    rewards: PyReadonlyArray1<'py, f32>,
    #[pyo3(item)]
    success: bool,
    #[pyo3(item)]
    terminated: bool,
    #[pyo3(item)]
    instruction: Option<String>,
}

/// Writes `episodes` (dicts with the keys [`read_dataset`] returns, less `images` and `states`)
/// as a LeRobot v3 dataset of task `task` at `fps` into `path`, atomically: a dataset already
/// there is replaced only with `overwrite`, and anything that is not a dataset never. Returns
/// the number of frames written.
#[pyfunction]
#[pyo3(signature = (path, task, fps, episodes, overwrite = false))]
pub fn write_dataset(
    py: Python<'_>,
    path: PathBuf,
    task: String,
    fps: f32,
    episodes: Vec<EpisodeIn<'_>>,
    overwrite: bool,
) -> PyResult<usize> {
    let Some(first) = episodes.first() else {
        return Err(value_error("episodes is empty; a dataset holds at least one episode"));
    };
    let (obs_dim, action_dim) = (first.observations.shape()[1], first.actions.shape()[1]);
    let mut demos =
        Demonstrations { task, fps, obs_dim, action_dim, episodes: Vec::new(), cameras: Vec::new(), state_dim: 0 };
    for (i, e) in episodes.iter().enumerate() {
        let len = e.observations.shape()[0];
        for (name, shape, width) in
            [("observations", e.observations.shape(), obs_dim), ("actions", e.actions.shape(), action_dim)]
        {
            if shape != [len, width] {
                return Err(value_error(format!(
                    "episodes[{i}][\"{name}\"] has shape {shape:?}; expected [{len}, {width}]"
                )));
            }
        }
        if e.rewards.shape() != [len] {
            return Err(value_error(format!(
                "episodes[{i}][\"rewards\"] has shape {:?}; expected [{len}]",
                e.rewards.shape()
            )));
        }
        demos.episodes.push(Episode {
            observations: e.observations.as_array().iter().copied().collect(),
            actions: e.actions.as_array().iter().copied().collect(),
            rewards: e.rewards.as_array().iter().copied().collect(),
            success: e.success,
            terminated: e.terminated,
            instruction: e.instruction.clone(),
            images: Vec::new(),
            states: Vec::new(),
        });
    }
    let frames = demos.num_steps();
    let options = WriteOptions::default();
    py.detach(|| embodia_dataset::save(&demos, &path, &options, overwrite)).map_err(dataset_error)?;
    Ok(frames)
}

/// A dataset error as a Python exception: `OSError` for the file system, else `ValueError`.
fn dataset_error(e: DatasetError) -> PyErr {
    match e {
        DatasetError::Io { .. } => PyOSError::new_err(e.to_string()),
        other => value_error(other),
    }
}
