//! `embodia._embodia`: the compiled half of the `embodia` Python package (`python/embodia/`
//! is the other half: gymnasium's `Env` and `VectorEnv` around these classes).
//!
//! How it works:
//! 1. [`env::VecEnvCore`] owns one batch of embodia environments (`embodia_sim::VecEnv`) behind
//!    a lock; `step` takes a `float32 [num_envs, action_dim]` numpy array, releases the GIL
//!    while rayon steps the worlds, and returns every result buffer as one numpy array each
//!    (one copy of a contiguous buffer, never a Python object per element).
//! 2. [`policy::PolicyCore`] is a trained run's exported forward pass (`embodia export`'s
//!    `PolicySpec`), so `act` gives what `embodia act` prints.
//! 3. [`dataset`] reads and writes the LeRobot v3 datasets embodia records.
//!
//! Errors become Python exceptions carrying embodia's own message (which names the field,
//! file or value at fault): `ValueError` for bad input, `OSError` for the file system,
//! `RuntimeError` for what should not happen.

use pyo3::prelude::*;

mod dataset;
mod env;
mod policy;

/// The module's contents; `embodia/__init__.py` re-exports what users call.
#[pymodule]
fn _embodia(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A third-party parser's panic that embodia catches and reports as an error naming the file
    // (a corrupt dataset or ONNX file) is not printed, as in the `embodia` binary; any other
    // panic prints as before.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !embodia_robots::parser_panics::panic_becomes_error() {
            default_hook(info);
        }
    }));
    m.add_class::<env::VecEnvCore>()?;
    m.add_class::<policy::PolicyCore>()?;
    m.add_function(wrap_pyfunction!(env::task_names, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::read_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::write_dataset, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// A `ValueError` with `message`: the caller passed something embodia refuses.
fn value_error(message: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(message.to_string())
}
