//! [`VecEnvCore`]: a batch of embodia environments, stepped with the GIL released.

use std::sync::{Mutex, MutexGuard};

use embodia::config::{ConfigSources, resolve};
use embodia_sim::camera::{CameraEnv, RenderConfig};
use embodia_sim::{SimError, TaskConfig, VecEnv};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::value_error;

/// `(low, high)` bounds of one box space, `float32 [dim]` each.
type Bounds<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>);

/// The largest camera image side `camera_size` may ask for, pixels.
const MAX_CAMERA_SIZE: usize = 1024;

/// Names of every task `VecEnvCore` makes: the registry (`embodia list`), then the tasks that
/// exist only as tensor environments (run here on the CPU).
#[pyfunction]
pub fn task_names() -> Vec<String> {
    let mut names: Vec<String> = embodia_sim::tasks().iter().map(|t| t.name.to_string()).collect();
    for name in embodia_sim::tensor::TENSOR_TASKS {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// A batch of `num_envs` environments of one task, with embodia's autoreset: after a step in
/// which environment `i` ended, row `i` of the observation is already the first observation
/// of its next episode and the last one of the ended episode is in `final_obs` (gymnasium's
/// same-step autoreset).
#[pyclass(module = "embodia._embodia", frozen)]
pub struct VecEnvCore {
    /// The environments; locked for every call, so that two Python threads never step one
    /// batch at once.
    env: Mutex<Box<dyn VecEnv>>,
    #[pyo3(get)]
    task: String,
    #[pyo3(get)]
    num_envs: usize,
    #[pyo3(get)]
    obs_dim: usize,
    #[pyo3(get)]
    action_dim: usize,
}

impl VecEnvCore {
    fn lock(&self) -> PyResult<MutexGuard<'_, Box<dyn VecEnv>>> {
        self.env.lock().map_err(poisoned)
    }
}

#[pymethods]
impl VecEnvCore {
    /// Makes `num_envs` environments of `task`, with `overrides` (`--set` strings, every key
    /// under `env.`) applied to the task's configuration and, for `camera_size`, the task's
    /// cameras rendering `camera_size × camera_size` RGB images; reset with `seed`.
    #[new]
    #[pyo3(signature = (task, num_envs, seed, overrides = Vec::new(), camera_size = None))]
    fn new(
        task: &str,
        num_envs: usize,
        seed: u64,
        overrides: Vec<String>,
        camera_size: Option<usize>,
    ) -> PyResult<Self> {
        let config = task_config(task, &overrides)?;
        let mut env = make(task, num_envs, config.as_ref())?;
        if let Some(size) = camera_size {
            if !(8..=MAX_CAMERA_SIZE).contains(&size) {
                return Err(value_error(format!(
                    "camera_size {size} is out of range (allowed: 8 ..= {MAX_CAMERA_SIZE})"
                )));
            }
            let Some(config) = config.or_else(|| embodia_sim::task_config(task)) else {
                return Err(value_error(format!(
                    "task `{task}` has no scene for cameras to see (only rapier tasks do)"
                )));
            };
            env = Box::new(CameraEnv::new(env, RenderConfig::for_task(&config, size, size)).map_err(value_error)?);
        }
        env.reset(seed);
        let (obs_dim, action_dim) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim());
        Ok(Self { task: task.to_string(), num_envs, obs_dim, action_dim, env: Mutex::new(env) })
    }

    /// One-line description of the task (`embodia list`).
    #[getter]
    fn description(&self) -> PyResult<String> {
        Ok(self.lock()?.info().description.to_string())
    }

    /// Time limit, control steps.
    #[getter]
    fn max_episode_steps(&self) -> PyResult<u32> {
        Ok(self.lock()?.info().max_episode_steps)
    }

    /// Whether the task reports success.
    #[getter]
    fn has_success(&self) -> PyResult<bool> {
        Ok(self.lock()?.info().has_success)
    }

    /// `(low, high)` of one observation, `float32 [obs_dim]` each.
    fn obs_bounds<'py>(&self, py: Python<'py>) -> PyResult<Bounds<'py>> {
        let env = self.lock()?;
        let b = &env.obs_spec().vector;
        Ok((PyArray1::from_slice(py, &b.low), PyArray1::from_slice(py, &b.high)))
    }

    /// `(low, high)` of one action, `float32 [action_dim]` each.
    fn action_bounds<'py>(&self, py: Python<'py>) -> PyResult<Bounds<'py>> {
        let env = self.lock()?;
        let b = &env.action_spec().bounds;
        Ok((PyArray1::from_slice(py, &b.low), PyArray1::from_slice(py, &b.high)))
    }

    /// The cameras, `[(name, height, width, channels)]`, in image order; empty without cameras.
    fn cameras(&self) -> PyResult<Vec<(String, usize, usize, usize)>> {
        let env = self.lock()?;
        Ok(env.obs_spec().images.iter().map(|c| (c.name.clone(), c.height, c.width, c.channels)).collect())
    }

    /// Resets every environment with generators derived from `seed` (environment `i` from
    /// `(seed, i)`); returns the observation, `float32 [num_envs, obs_dim]`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let env = &self.env;
        // A poisoned lock's error holds its guard, which may not leave the detached thread.
        py.detach(|| env.lock().map(|mut e| e.reset(seed)).map_err(|_| ())).map_err(poisoned)?;
        self.obs(py)
    }

    /// The observation to act on, `float32 [num_envs, obs_dim]`.
    fn obs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let env = self.lock()?;
        rows(py, &env.buffers().obs, self.obs_dim)
    }

    /// Steps every environment with `actions` (`float32 [num_envs, action_dim]`, C-contiguous),
    /// with the GIL released; returns `(obs, reward, terminated, truncated, success, final_obs,
    /// episode_return, episode_length)`, each `[num_envs]` (`obs`, `final_obs`: `[num_envs,
    /// obs_dim]`). A wrong shape or a non-finite value raises `ValueError` and changes nothing.
    fn step<'py>(&self, py: Python<'py>, actions: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let expected = [self.num_envs, self.action_dim];
        let array = actions.cast::<PyArray2<f32>>().map_err(|_| {
            PyTypeError::new_err(format!(
                "actions must be a float32 numpy array of shape {expected:?}; got {}",
                describe(actions)
            ))
        })?;
        if array.shape() != expected {
            return Err(value_error(format!("actions have shape {:?}; expected {expected:?}", array.shape())));
        }
        let readonly = array.try_readonly()?;
        let values = readonly
            .as_slice()
            .map_err(|_| value_error("actions must be C-contiguous (numpy.ascontiguousarray makes a copy that is)"))?;
        let env = &self.env;
        let stepped = py.detach(|| env.lock().map(|mut e| e.step(values)).map_err(|_| ()));
        stepped.map_err(poisoned)?.map_err(|e| value_error(step_error(e)))?;
        let env = self.lock()?;
        let b = env.buffers();
        let flags = |v: &[f32]| PyArray1::from_iter(py, v.iter().map(|&x| x > 0.0));
        PyTuple::new(
            py,
            [
                rows(py, &b.obs, self.obs_dim)?.into_any(),
                PyArray1::from_slice(py, &b.reward).into_any(),
                flags(&b.terminated).into_any(),
                flags(&b.truncated).into_any(),
                flags(&b.success).into_any(),
                rows(py, &b.final_obs, self.obs_dim)?.into_any(),
                PyArray1::from_slice(py, &b.episode_return).into_any(),
                PyArray1::from_slice(py, &b.episode_length).into_any(),
            ],
        )
    }

    /// Images of every camera after the last reset or step, each `uint8 [num_envs, height,
    /// width, channels]`, in camera order (empty without cameras).
    fn images<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let env = self.lock()?;
        let n = self.num_envs;
        (0..env.obs_spec().images.len())
            .map(|i| {
                let spec = &env.obs_spec().images[i];
                let pixels = env.image(i).ok_or_else(|| PyRuntimeError::new_err(format!("camera {i} has no image")))?;
                Ok(PyArray1::from_slice(py, pixels).reshape([n, spec.height, spec.width, spec.channels])?.into_any())
            })
            .collect()
    }

    /// The language instruction of every environment's present episode (`None` for tasks
    /// without instructions), `[num_envs]`.
    fn instructions(&self) -> PyResult<Vec<Option<String>>> {
        let env = self.lock()?;
        Ok((0..self.num_envs).map(|i| env.instruction(i).map(str::to_string)).collect())
    }

    /// The task's scripted expert's action for every environment's present state, `float32
    /// [num_envs, action_dim]`. Call it once per step, before stepping (the experts keep their
    /// phase between calls). Raises `ValueError` for a task without an expert.
    fn expert_actions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let mut actions = vec![0.0; self.num_envs * self.action_dim];
        self.lock()?.expert_actions(&mut actions).map_err(|e| value_error(expert_error(&self.task, e)))?;
        rows(py, &actions, self.action_dim)
    }
}

/// The error of an environment whose lock a panicking call left poisoned (embodia's library
/// code does not panic on input; this guards against what should not happen).
fn poisoned<E>(_: E) -> PyErr {
    PyRuntimeError::new_err("the environment was poisoned by an earlier failure")
}

/// `values` (`[rows, width]`, row-major) as a 2-D numpy array: one copy of the buffer.
fn rows<'py>(py: Python<'py>, values: &[f32], width: usize) -> PyResult<Bound<'py, PyArray2<f32>>> {
    PyArray1::from_slice(py, values).reshape([values.len() / width.max(1), width])
}

/// What `value` is, for an error message: a numpy array's dtype and shape, else its type.
fn describe(value: &Bound<'_, PyAny>) -> String {
    let attr = |name: &str| value.getattr(name).and_then(|a| a.str().map(|s| s.to_string())).ok();
    match (attr("dtype"), attr("shape")) {
        (Some(dtype), Some(shape)) => format!("an array of dtype {dtype} and shape {shape}"),
        _ => format!("a `{}`", value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())),
    }
}

/// The message of a refused step, in the words of the Python API (rows and columns).
fn step_error(e: SimError) -> String {
    match e {
        SimError::NonFiniteAction { env, index } => {
            format!("actions[{env}, {index}] is not finite (NaN or infinite); nothing was stepped")
        }
        other => other.to_string(),
    }
}

/// The message of a refused expert request.
fn expert_error(task: &str, e: SimError) -> String {
    match e {
        SimError::Unsupported(_) => SimError::NoExpert {
            name: task.to_string(),
            with_expert: embodia_sim::rapier::expert_runs::tasks_with_expert(),
        }
        .to_string(),
        other => other.to_string(),
    }
}

/// The configuration of rapier task `task` with `overrides` applied (`None` without overrides:
/// the task's default), resolved and validated exactly as `embodia train --set` does.
fn task_config(task: &str, overrides: &[String]) -> PyResult<Option<TaskConfig>> {
    if overrides.is_empty() {
        return Ok(None);
    }
    if let Some(bad) = overrides.iter().find(|o| !o.trim_start().starts_with("env.")) {
        return Err(value_error(format!(
            "config key `{}` does not configure an environment: keys are the `--set` keys under `env.` \
             (e.g. `env.episode_steps`)",
            bad.split_once('=').map_or(bad.as_str(), |(k, _)| k.trim())
        )));
    }
    // `distill` has no preset that could change a task's environment.
    let sources = ConfigSources { task: Some(task), algorithm: Some("distill"), overrides, ..Default::default() };
    let config = resolve(&sources).map_err(value_error)?;
    Ok(config.env)
}

/// A batch of `task`: a registered task, or one of the tensor-only tasks on the CPU.
fn make(task: &str, num_envs: usize, config: Option<&TaskConfig>) -> PyResult<Box<dyn VecEnv>> {
    if embodia_sim::tasks().iter().any(|t| t.name == task) {
        return embodia_sim::make_with(task, num_envs, config).map_err(value_error);
    }
    if embodia_sim::tensor::TENSOR_TASKS.contains(&task) {
        // The device `embodia --device` would pick without a flag: burn's CPU backend.
        let device = embodia::device::plain_device();
        return Ok(embodia_sim::tensor::make_tensor(task, num_envs, &device).map_err(value_error)?);
    }
    Err(value_error(SimError::UnknownTask { name: task.to_string(), valid: task_names() }))
}
