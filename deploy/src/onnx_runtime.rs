//! Running an exported `model.onnx` policy from Rust, through one of two runtimes, each behind
//! its cargo feature so that a default build pulls in neither:
//! - `tract`: the pure-Rust runtime tract-onnx (no native library);
//! - `ort`: Microsoft's onnxruntime through the `ort` crate, its shared library loaded at run
//!   time from a path the caller gives (e.g. `ORT_DYLIB_PATH`, pointing into the PyPI
//!   `onnxruntime` wheel's `onnxruntime/capi/`), never downloaded.
//!
//! Either way the model is expected to map `[batch, obs_dim]` float observations to
//! `[batch, output_dim]` float actions, as [`crate::export::onnx`] writes it.

use std::path::{Path, PathBuf};

/// Errors of loading or running an ONNX policy, naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The model file could not be read or is not a policy model.
    #[error("{path}: {message}")]
    Model {
        /// The model file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The runtime was not compiled into this binary.
    #[error("the {0} ONNX runtime is not compiled in; rebuild embodia with `--features {0}`")]
    NotCompiled(&'static str),
    /// onnxruntime's shared library could not be loaded.
    #[error("onnxruntime library: {0}")]
    Library(String),
    /// The observations do not fit the model.
    #[error("{0}")]
    Input(String),
    /// The runtime failed while running the model.
    #[error("{path}: inference failed: {message}")]
    Run {
        /// The model file.
        path: String,
        /// The runtime's message.
        message: String,
    },
}

/// Which ONNX runtime runs the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runtime {
    /// tract-onnx (feature `tract`).
    Tract,
    /// onnxruntime via `ort` (feature `ort`), loading the shared library at this path.
    Ort {
        /// `libonnxruntime.so*`.
        library: PathBuf,
    },
}

impl Runtime {
    /// The runtime's name as the CLI spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Tract => "tract",
            Self::Ort { .. } => "ort",
        }
    }
}

/// A loaded ONNX policy.
pub trait OnnxPolicy {
    /// Observation features the model takes.
    fn obs_dim(&self) -> usize;
    /// Floats per output row: `chunk · action_dim` of the exported policy.
    fn output_dim(&self) -> usize;
    /// Runs `obs` (`[batch, obs_dim]`, row-major, raw units) into `action`
    /// (`[batch, output_dim]`, an action chunk per row); `batch` is `obs.len() / obs_dim`.
    fn run(&mut self, obs: &[f32], action: &mut [f32]) -> Result<(), OnnxError>;
}

/// Loads the policy model at `path` into `runtime`.
pub fn load(path: &Path, runtime: &Runtime) -> Result<Box<dyn OnnxPolicy>, OnnxError> {
    if !path.is_file() {
        return Err(model_error(path, "no such file"));
    }
    match runtime {
        #[cfg(feature = "tract")]
        Runtime::Tract => Ok(Box::new(tract::TractPolicy::load(path)?)),
        #[cfg(feature = "ort")]
        Runtime::Ort { library } => Ok(Box::new(ort_runtime::OrtPolicy::load(path, library)?)),
        #[allow(unreachable_patterns)]
        other => Err(OnnxError::NotCompiled(other.name())),
    }
}

fn model_error(path: &Path, message: impl std::fmt::Display) -> OnnxError {
    OnnxError::Model { path: path.display().to_string(), message: message.to_string() }
}

/// `[batch, features]` with `features` known: the feature count, or why the model does not fit.
#[cfg_attr(not(any(feature = "tract", feature = "ort")), allow(dead_code))]
fn feature_dim(what: &str, dims: &[Option<usize>]) -> Result<usize, String> {
    match dims {
        [_, Some(f)] => Ok(*f),
        _ => Err(format!("{what} has shape {dims:?}; an exported policy has [batch, features] with features fixed")),
    }
}

/// Checks that `obs` and `action` hold the same whole number of rows.
#[cfg_attr(not(any(feature = "tract", feature = "ort")), allow(dead_code))]
fn batch_of(obs: &[f32], action: &[f32], obs_dim: usize, output_dim: usize) -> Result<usize, OnnxError> {
    let batch = obs.len() / obs_dim;
    if !obs.len().is_multiple_of(obs_dim) || action.len() != batch * output_dim {
        return Err(OnnxError::Input(format!(
            "{} observation values and {} action slots do not make whole rows of {obs_dim} and {output_dim}",
            obs.len(),
            action.len()
        )));
    }
    Ok(batch)
}

#[cfg(feature = "tract")]
mod tract {
    use std::path::Path;

    use embodia_robots::parser_panics::catch_parser_panic;
    use tract_onnx::prelude::*;
    use tract_onnx::tract_hir::internal::DimLike;

    use super::{OnnxError, OnnxPolicy, batch_of, feature_dim, model_error};

    /// An optimized tract plan with its state kept between calls (batch symbolic).
    pub struct TractPolicy {
        path: String,
        /// `None` once a run panicked inside tract: the state may be half-updated.
        state: Option<TypedSimpleState>,
        obs_dim: usize,
        output_dim: usize,
    }

    impl TractPolicy {
        /// Loads and optimizes the model. tract panics on some corrupt models (a fuzzing
        /// campaign found 324 in 10^6 mutated exports, "no entry found for key"): such a panic
        /// is an error naming the file.
        pub fn load(path: &Path) -> Result<Self, OnnxError> {
            catch_parser_panic(|| Self::load_unguarded(path))
                .unwrap_or_else(|message| Err(model_error(path, format!("corrupt model: tract failed ({message})"))))
        }

        fn load_unguarded(path: &Path) -> Result<Self, OnnxError> {
            let bad = |e: TractError| model_error(path, format!("{e:#}"));
            let model = tract_onnx::onnx().model_for_path(path).map_err(bad)?.into_optimized().map_err(bad)?;
            let dims = |fact: &TypedFact| fact.shape.iter().map(|d| d.as_usize()).collect::<Vec<_>>();
            let (inputs, outputs) =
                (model.input_outlets().map_err(bad)?.len(), model.output_outlets().map_err(bad)?.len());
            if inputs != 1 || outputs != 1 {
                return Err(model_error(
                    path,
                    format!("has {inputs} inputs and {outputs} outputs; a policy has one of each"),
                ));
            }
            let obs_dim =
                feature_dim("the input", &dims(model.input_fact(0).map_err(bad)?)).map_err(|m| model_error(path, m))?;
            let output_dim = feature_dim("the output", &dims(model.output_fact(0).map_err(bad)?))
                .map_err(|m| model_error(path, m))?;
            let state = model.into_runnable().map_err(bad)?.spawn().map_err(bad)?;
            Ok(Self { path: path.display().to_string(), state: Some(state), obs_dim, output_dim })
        }
    }

    impl OnnxPolicy for TractPolicy {
        fn obs_dim(&self) -> usize {
            self.obs_dim
        }

        fn output_dim(&self) -> usize {
            self.output_dim
        }

        fn run(&mut self, obs: &[f32], action: &mut [f32]) -> Result<(), OnnxError> {
            let batch = batch_of(obs, action, self.obs_dim, self.output_dim)?;
            let failed = |e: TractError| OnnxError::Run { path: self.path.clone(), message: format!("{e:#}") };
            let input = Tensor::from_shape(&[batch, self.obs_dim], obs).map_err(failed)?;
            let Some(mut state) = self.state.take() else {
                return Err(OnnxError::Run {
                    path: self.path.clone(),
                    message: "an earlier run panicked inside tract".into(),
                });
            };
            let out = catch_parser_panic(|| state.run(tvec!(input.into_tvalue())))
                .map_err(|message| OnnxError::Run {
                    path: self.path.clone(),
                    message: format!("tract panicked: {message}"),
                })?
                .map_err(failed)?;
            self.state = Some(state);
            action.copy_from_slice(out[0].try_as_plain_ram().and_then(|v| v.as_slice::<f32>()).map_err(failed)?);
            Ok(())
        }
    }
}

#[cfg(feature = "ort")]
mod ort_runtime {
    use std::path::Path;
    use std::sync::{Mutex, PoisonError};

    use ort::environment::Environment;
    use ort::session::Session;
    use ort::value::{TensorRef, ValueType};

    use super::{OnnxError, OnnxPolicy, batch_of, feature_dim, model_error};

    /// An onnxruntime session, one intra-op thread (the batch-1 control-loop setting).
    pub struct OrtPolicy {
        path: String,
        session: Session,
        input: String,
        obs_dim: usize,
        output_dim: usize,
    }

    impl OrtPolicy {
        pub fn load(path: &Path, library: &Path) -> Result<Self, OnnxError> {
            if !library.is_file() {
                return Err(OnnxError::Library(format!("{}: no such file", library.display())));
            }
            let environment = environment(library)?;
            let session = (|| -> ort::Result<Session> {
                Session::builder(&environment)?.with_intra_threads(1)?.with_inter_threads(1)?.commit_from_file(path)
            })()
            .map_err(|e| model_error(path, e))?;
            let dims = |t: &ValueType| match t {
                ValueType::Tensor { shape, .. } => shape.iter().map(|&d| usize::try_from(d).ok()).collect(),
                _ => Vec::new(),
            };
            let (inputs, outputs) = (session.inputs(), session.outputs());
            if inputs.len() != 1 || outputs.len() != 1 {
                return Err(model_error(
                    path,
                    format!("has {} inputs and {} outputs; a policy has one of each", inputs.len(), outputs.len()),
                ));
            }
            let obs_dim = feature_dim("the input", &dims(inputs[0].dtype())).map_err(|m| model_error(path, m))?;
            let output_dim = feature_dim("the output", &dims(outputs[0].dtype())).map_err(|m| model_error(path, m))?;
            let input = inputs[0].name().to_string();
            Ok(Self { path: path.display().to_string(), session, input, obs_dim, output_dim })
        }
    }

    /// The process's one onnxruntime environment, created with the library first asked for
    /// (onnxruntime allows one environment, and ort one library, per process).
    fn environment(library: &Path) -> Result<Environment, OnnxError> {
        static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
        let mut env = ENVIRONMENT.lock().unwrap_or_else(PoisonError::into_inner);
        if env.is_none() {
            let library_error = |e: &dyn std::fmt::Display| OnnxError::Library(format!("{}: {e}", library.display()));
            let built = ort::init_from(library).map_err(|e| library_error(&e))?.with_name("embodia").build();
            *env = Some(built.map_err(|e| library_error(&e))?);
        }
        Ok(env.clone().expect("set just above"))
    }

    impl OnnxPolicy for OrtPolicy {
        fn obs_dim(&self) -> usize {
            self.obs_dim
        }

        fn output_dim(&self) -> usize {
            self.output_dim
        }

        fn run(&mut self, obs: &[f32], action: &mut [f32]) -> Result<(), OnnxError> {
            let batch = batch_of(obs, action, self.obs_dim, self.output_dim)?;
            let failed = |e: ort::Error| OnnxError::Run { path: self.path.clone(), message: e.to_string() };
            let input = TensorRef::from_array_view(([batch, self.obs_dim], obs)).map_err(&failed)?;
            let outputs = self.session.run(ort::inputs![self.input.as_str() => input]).map_err(&failed)?;
            let (_, values) = outputs[0].try_extract_tensor::<f32>().map_err(&failed)?;
            action.copy_from_slice(values);
            Ok(())
        }
    }
}
