//! [`PolicyCore`]: the deterministic policy of a trained run, as `embodia export` writes it.

use std::path::PathBuf;

use embodia::deploy::export::PolicySpec;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use crate::value_error;

/// A run's exported forward pass (PPO, SAC and distilled one-step students): observation
/// `[obs_dim]` → action chunk `[chunk, action_dim]`, the same computation as the C, Rust and
/// ONNX exports, which `embodia act` is checked against.
#[pyclass(module = "embodia._embodia", frozen)]
pub struct PolicyCore {
    spec: PolicySpec,
}

#[pymethods]
impl PolicyCore {
    /// Loads the policy of the run directory `run`. Raises `ValueError` for a run whose policy
    /// cannot be exported as one forward pass (multi-step flow, diffusion and VLA policies),
    /// with the reason and what to do instead; `OSError` for a directory that is not a run.
    #[new]
    fn new(run: PathBuf) -> PyResult<Self> {
        use embodia::export::ExportRunError;
        use embodia::run::RunError;
        match embodia::export::policy_of_run(&run) {
            Ok(spec) => Ok(Self { spec }),
            Err(e @ ExportRunError::Run(RunError::Io { .. })) => Err(PyOSError::new_err(e.to_string())),
            Err(e) => Err(value_error(e)),
        }
    }

    /// Observation width.
    #[getter]
    fn obs_dim(&self) -> usize {
        self.spec.obs_dim
    }

    /// Width of one action.
    #[getter]
    fn action_dim(&self) -> usize {
        self.spec.action_dim
    }

    /// Actions per forward pass (1 but for distilled chunk students).
    #[getter]
    fn chunk(&self) -> usize {
        self.spec.chunk
    }

    /// `(low, high)` action bounds, `float32 [action_dim]` each.
    fn action_bounds<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>) {
        (PyArray1::from_slice(py, &self.spec.action_low), PyArray1::from_slice(py, &self.spec.action_high))
    }

    /// The actions for `obs` (`float32 [batch, obs_dim]`, C-contiguous, finite), `float32
    /// [batch, chunk · action_dim]`; computed with the GIL released.
    fn act<'py>(&self, py: Python<'py>, obs: PyReadonlyArray2<'py, f32>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let [rows, width] = [obs.shape()[0], obs.shape()[1]];
        if width != self.spec.obs_dim {
            return Err(value_error(format!(
                "observations have shape {:?}; this policy takes {} values per observation",
                obs.shape(),
                self.spec.obs_dim
            )));
        }
        let values = obs.as_slice().map_err(|_| value_error("observations must be C-contiguous"))?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(value_error(format!("obs[{}, {}] is not finite (NaN or infinite)", i / width, i % width)));
        }
        let out_dim = self.spec.output_dim();
        let spec = &self.spec;
        let actions = py.detach(|| {
            let mut actions = vec![0.0; rows * out_dim];
            let mut scratch = vec![0.0; 2 * spec.max_width()];
            for (o, a) in values.chunks_exact(width).zip(actions.chunks_exact_mut(out_dim)) {
                spec.forward(o, a, &mut scratch);
            }
            actions
        });
        PyArray1::from_vec(py, actions).reshape([rows, out_dim])
    }
}
