//! Parameters as named host arrays: the bridge between burn modules and checkpoint files.

use std::collections::BTreeMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorData};

/// Parameters of a module by dotted path (`"net.layers.0.weight"`): shape and row-major values.
pub type NamedParams = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// A parameter set that does not fit the module it is loaded into.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParamError {
    /// The module has a parameter the set lacks.
    #[error("parameter `{0}` is missing")]
    Missing(String),
    /// Shapes disagree.
    #[error("parameter `{name}` has shape {found:?}, the model expects {expected:?}")]
    Shape {
        /// Dotted path.
        name: String,
        /// Shape in the set.
        found: Vec<usize>,
        /// Shape in the module.
        expected: Vec<usize>,
    },
    /// A value is NaN or infinite.
    #[error("parameter `{0}` contains a non-finite value")]
    NonFinite(String),
}

/// Copies every float parameter of `module` to the host.
pub fn named_params<M: Module>(module: &M) -> NamedParams {
    let mut visitor = Collect { path: Vec::new(), out: NamedParams::new() };
    module.visit(&mut visitor);
    visitor.out
}

/// Replaces every float parameter of `module` by the same-named entry of `params`, keeping
/// parameter ids (so optimizer state stays attached). Fails without partial effects visible to
/// the caller: on error the module is dropped and the error names the first bad parameter.
pub fn load_params<M: Module>(module: M, params: &NamedParams) -> Result<M, ParamError> {
    let mut mapper = Replace { path: Vec::new(), params, error: None };
    let module = module.map(&mut mapper);
    match mapper.error {
        Some(e) => Err(e),
        None => Ok(module),
    }
}

struct Collect {
    path: Vec<String>,
    out: NamedParams,
}

impl ModuleVisitor for Collect {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().into_data();
        let shape = data.shape().to_vec();
        let values = data.try_to_vec::<f32>().unwrap_or_default();
        self.out.insert(self.path.join("."), (shape, values));
    }
}

struct Replace<'a> {
    path: Vec<String>,
    params: &'a NamedParams,
    error: Option<ParamError>,
}

impl ModuleMapper for Replace<'_> {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if self.error.is_some() {
            return param;
        }
        let name = self.path.join(".");
        // The shape and device of a lazy parameter are read without initializing it: that would
        // draw from the backend's global generator and disturb a concurrent `seeded_init`.
        let expected = param.lazy_shape().to_vec();
        let Some((shape, values)) = self.params.get(&name) else {
            self.error = Some(ParamError::Missing(name));
            return param;
        };
        if *shape != expected {
            self.error = Some(ParamError::Shape { name, found: shape.clone(), expected });
            return param;
        }
        if values.iter().any(|v| !v.is_finite()) {
            self.error = Some(ParamError::NonFinite(name));
            return param;
        }
        let tensor = Tensor::from_data(TensorData::new(values.clone(), shape.clone()), &param.lazy_device());
        let id = param.id;
        param.transform_for_load(tensor, id)
    }
}

/// Polyak averaging, `target ← (1 − τ)·target + τ·online`, parameter by parameter (matched by
/// path). Runs as tensor operations on the parameters' device; the result does not track
/// gradients.
pub fn polyak_update<M: Module>(target: M, online: &M, tau: f64) -> M {
    let mut collect = CollectTensors { path: Vec::new(), out: BTreeMap::new() };
    online.visit(&mut collect);
    let mut mix = Mix { path: Vec::new(), online: collect.out, tau };
    target.map(&mut mix)
}

/// Online parameters flattened to `[numel]`, by path.
struct CollectTensors {
    path: Vec<String>,
    out: BTreeMap<String, Tensor<1>>,
}

impl ModuleVisitor for CollectTensors {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.out.insert(self.path.join("."), param.val().inner().reshape([-1]));
    }
}

struct Mix {
    path: Vec<String>,
    online: BTreeMap<String, Tensor<1>>,
    tau: f64,
}

impl ModuleMapper for Mix {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(online) = self.online.remove(&self.path.join(".")) else {
            return param;
        };
        let (id, value, mapper) = param.consume();
        let shape = value.shape();
        let mixed = value.inner().mul_scalar(1.0 - self.tau) + online.reshape(shape).mul_scalar(self.tau);
        Param::from_mapped_value(id, mixed, mapper)
    }
}

/// Builds a module with `build` and initializes its parameters from burn's CPU (flex)
/// generator seeded by `seed`, then moves it to `device`: the same seed gives the same initial
/// parameters on every device, so a GPU run starts where the CPU run of its seed starts.
/// `build` receives the device to build on (the CPU twin of `device`, with its autodiff).
/// A process-wide lock keeps concurrent builders from interleaving draws; burn initializes
/// parameters lazily on first use, so they are forced here, inside the lock.
pub fn seeded_init<M: Module>(
    device: &burn::tensor::Device,
    seed: u64,
    build: impl FnOnce(&burn::tensor::Device) -> M,
) -> M {
    struct Touch;
    impl ModuleVisitor for Touch {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let _ = param.val();
        }
    }
    let home = burn::tensor::Device::flex().with_autodiff_context_from(device);
    let module = with_generator_lock(|| {
        home.seed(seed);
        let module = build(&home);
        module.visit(&mut Touch);
        module
    });
    if home == *device { module } else { module.fork(device) }
}

/// Runs `f` holding [`seeded_init`]'s lock, so that what `f` draws from the backend's
/// process-wide generator cannot interleave with a seeded initialization on another thread.
/// For modules built eagerly only to be overwritten by loaded parameters.
pub fn with_generator_lock<T>(f: impl FnOnce() -> T) -> T {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    f()
}
