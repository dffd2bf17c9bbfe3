//! safetensors files of named parameters, and loading of pretrained weights under other names.
//!
//! A safetensors file is an 8-byte little-endian header length, a JSON header (name → dtype,
//! shape, byte range; plus a `__metadata__` string map) and the raw little-endian data. Files
//! written here hold f32 tensors; files read may hold F32, F64, F16 or BF16 tensors (converted to
//! f32), as pretrained encoders are often exported in half precision.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Tensor, TensorData};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::params::NamedParams;

/// Errors of reading, writing and mapping tensor files.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TensorFileError {
    /// The file could not be read or written.
    #[error("cannot {action} {path}: {message}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The file is not a valid safetensors file.
    #[error("{path} is not a valid safetensors file: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor's dtype cannot be converted to f32.
    #[error("tensor `{name}` in {path} has dtype {dtype}; supported: F32, F64, F16, BF16")]
    Dtype {
        /// The tensor's name in the file.
        name: String,
        /// The file.
        path: String,
        /// Its dtype.
        dtype: String,
    },
    /// A parameter of the model has no tensor in the file.
    #[error("parameter `{model_name}` is missing (looked for tensor `{file_name}` in the file)")]
    Missing {
        /// The parameter's name in the model.
        model_name: String,
        /// The name it was looked up under in the file (after the name map).
        file_name: String,
    },
    /// A tensor's shape differs from the parameter's.
    #[error("tensor `{file_name}` (parameter `{model_name}`) has shape {found:?}, the model expects {expected:?}")]
    Shape {
        /// The tensor's name in the file.
        file_name: String,
        /// The parameter's name in the model.
        model_name: String,
        /// Shape in the file.
        found: Vec<usize>,
        /// Shape of the parameter.
        expected: Vec<usize>,
    },
    /// A tensor holds NaN or infinite values.
    #[error("tensor `{0}` contains a non-finite value")]
    NonFinite(String),
    /// A tensor the name map selects has no parameter in the model (a typo in the map, or
    /// weights of another architecture).
    #[error("tensor `{file_name}` maps to `{model_name}`, which the model does not have")]
    Unexpected {
        /// The tensor's name in the file.
        file_name: String,
        /// The name it maps to.
        model_name: String,
    },
}

/// Writes `tensors` (f32, row-major) and string `metadata` to a safetensors file at `path`.
pub fn write_safetensors(
    path: &Path,
    tensors: &NamedParams,
    metadata: &BTreeMap<String, String>,
) -> Result<(), TensorFileError> {
    let display = path.display().to_string();
    let bytes: Vec<(&String, Vec<u8>, &Vec<usize>)> = tensors
        .iter()
        .map(|(k, (shape, values))| (k, values.iter().flat_map(|v| v.to_le_bytes()).collect(), shape))
        .collect();
    let views = bytes
        .iter()
        .map(|(k, b, shape)| {
            TensorView::new(Dtype::F32, (*shape).clone(), b).map(|v| (k.as_str(), v)).map_err(|e| {
                TensorFileError::Corrupt { path: display.clone(), message: format!("tensor `{k}` ({shape:?}): {e}") }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let info: HashMap<String, String> = metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let data = safetensors::serialize(views, if info.is_empty() { None } else { Some(info) })
        .map_err(|e| TensorFileError::Corrupt { path: display.clone(), message: e.to_string() })?;
    std::fs::write(path, data).map_err(|e| TensorFileError::Io {
        action: "write",
        path: display,
        message: e.to_string(),
    })
}

/// Reads every tensor of a safetensors file as f32 (F32, F64, F16, BF16 accepted), with the
/// file's metadata.
pub fn read_safetensors(path: &Path) -> Result<(NamedParams, BTreeMap<String, String>), TensorFileError> {
    let display = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| TensorFileError::Io {
        action: "read",
        path: display.clone(),
        message: e.to_string(),
    })?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| TensorFileError::Corrupt { path: display.clone(), message: e.to_string() })?;
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| TensorFileError::Corrupt { path: display.clone(), message: e.to_string() })?;
    let metadata = header.metadata().clone().unwrap_or_default().into_iter().collect();
    let mut out = NamedParams::new();
    for (name, view) in st.tensors() {
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            Dtype::F64 => data
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32)
                .collect(),
            Dtype::BF16 => {
                data.chunks_exact(2).map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16)).collect()
            }
            Dtype::F16 => data.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect(),
            other => {
                return Err(TensorFileError::Dtype { name, path: display, dtype: format!("{other:?}") });
            }
        };
        out.insert(name, (view.shape().to_vec(), values));
    }
    Ok((out, metadata))
}

/// IEEE 754 half precision to f32 (subnormals, infinities and NaN included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalize the mantissa.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Prefix rules from the names of a file's tensors to a model's parameter names, e.g.
/// `encoder.` → `vision.` to load a pretrained image encoder into the VLA's vision tower.
/// Rules are tried in order; the first whose `from` prefix matches renames the tensor; tensors
/// no rule matches are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    rules: Vec<(String, String)>,
    transpose_2d: bool,
}

impl NameMap {
    /// An empty map (selects nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// The identity map: every tensor keeps its name.
    pub fn identity() -> Self {
        Self::new().rule("", "")
    }

    /// Adds the rule `from…` → `to…` (prefixes; `""` matches every name).
    pub fn rule(mut self, from: &str, to: &str) -> Self {
        self.rules.push((from.to_string(), to.to_string()));
        self
    }

    /// Transposes every selected 2-D tensor before loading: PyTorch stores linear weights as
    /// `[out, in]`, burn as `[in, out]`. It applies to all 2-D tensors the map selects,
    /// embeddings and position tables included (those need no transpose): load them with a
    /// second map without this flag.
    pub fn transpose_2d(mut self, on: bool) -> Self {
        self.transpose_2d = on;
        self
    }

    /// The model name of the file tensor `name`, if a rule selects it.
    pub fn map(&self, name: &str) -> Option<String> {
        self.rules.iter().find_map(|(from, to)| name.strip_prefix(from.as_str()).map(|rest| format!("{to}{rest}")))
    }

    /// The model-side prefixes this map loads (the rules' `to` parts).
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|(_, to)| to.as_str())
    }
}

/// Loads the tensors of `file` that `map` selects into `module`, by mapped name. Every module
/// parameter under one of the map's target prefixes must be present (else
/// [`TensorFileError::Missing`]), shapes must agree ([`TensorFileError::Shape`] names both
/// names and shapes), and every selected tensor must land on a parameter
/// ([`TensorFileError::Unexpected`]). Parameters outside the targets keep their values;
/// parameter ids are kept. Returns the module and the number of tensors loaded.
pub fn load_mapped<M: Module>(module: M, file: &NamedParams, map: &NameMap) -> Result<(M, usize), TensorFileError> {
    // model name → file name
    let mut selected: BTreeMap<String, String> = BTreeMap::new();
    for name in file.keys() {
        if let Some(model_name) = map.map(name) {
            selected.insert(model_name, name.clone());
        }
    }
    let targets: Vec<String> = map.targets().map(str::to_string).collect();
    let mut mapper = MapLoad {
        path: Vec::new(),
        file,
        selected: &selected,
        targets: &targets,
        rules: &map.rules,
        transpose: map.transpose_2d,
        loaded: Vec::new(),
        error: None,
    };
    let module = module.map(&mut mapper);
    if let Some(e) = mapper.error {
        return Err(e);
    }
    let loaded = mapper.loaded;
    if let Some((model_name, file_name)) = selected.iter().find(|(m, _)| !loaded.contains(m)) {
        return Err(TensorFileError::Unexpected { file_name: file_name.clone(), model_name: model_name.clone() });
    }
    Ok((module, loaded.len()))
}

struct MapLoad<'a> {
    path: Vec<String>,
    file: &'a NamedParams,
    selected: &'a BTreeMap<String, String>,
    targets: &'a [String],
    rules: &'a [(String, String)],
    transpose: bool,
    loaded: Vec<String>,
    error: Option<TensorFileError>,
}

impl MapLoad<'_> {
    /// The file name the map would load `model_name` from (the first rule targeting it).
    fn unmap(&self, model_name: &str) -> String {
        self.rules
            .iter()
            .find_map(|(from, to)| model_name.strip_prefix(to.as_str()).map(|rest| format!("{from}{rest}")))
            .unwrap_or_else(|| model_name.to_string())
    }
}

impl ModuleMapper for MapLoad<'_> {
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
        let model_name = self.path.join(".");
        let Some(file_name) = self.selected.get(&model_name) else {
            if self.targets.iter().any(|t| model_name.starts_with(t.as_str())) {
                let file_name = self.unmap(&model_name);
                self.error = Some(TensorFileError::Missing { file_name, model_name });
            }
            return param;
        };
        let Some((shape, values)) = self.file.get(file_name) else {
            return param;
        };
        let (mut shape, mut values) = (shape.clone(), values.clone());
        if self.transpose && shape.len() == 2 {
            let (r, c) = (shape[0], shape[1]);
            values = (0..r * c).map(|i| values[(i % r) * c + i / r]).collect();
            shape = vec![c, r];
        }
        // Read without initializing a lazy parameter (see `load_params`).
        let expected = param.lazy_shape().to_vec();
        if shape != expected {
            self.error =
                Some(TensorFileError::Shape { file_name: file_name.clone(), model_name, found: shape, expected });
            return param;
        }
        if values.iter().any(|v| !v.is_finite()) {
            self.error = Some(TensorFileError::NonFinite(file_name.clone()));
            return param;
        }
        let tensor = Tensor::from_data(TensorData::new(values, shape), &param.lazy_device());
        self.loaded.push(model_name);
        let id = param.id;
        param.transform_for_load(tensor, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_converts_exactly() {
        for (bits, value) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x7bff, 65504.0),
            (0x0001, 5.960_464_5e-8),
            (0x0200, 3.051_757_8e-5),
            (0x3555, 0.333_251_95),
            (0x8000, -0.0),
        ] {
            assert_eq!(f16_to_f32(bits), value, "{bits:#06x}");
        }
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn name_maps_rename_by_first_matching_prefix_and_transpose() {
        let map = NameMap::new().rule("encoder.blocks.", "vision.blocks.").rule("encoder.", "vision.");
        assert_eq!(map.map("encoder.blocks.0.w").as_deref(), Some("vision.blocks.0.w"));
        assert_eq!(map.map("encoder.norm.gamma").as_deref(), Some("vision.norm.gamma"));
        assert_eq!(map.map("head.weight"), None);
        assert_eq!(NameMap::identity().map("a.b").as_deref(), Some("a.b"));

        // A PyTorch-layout [out, in] linear weight loads transposed into burn's [in, out].
        let device = burn::tensor::Device::flex();
        let linear = burn::nn::LinearConfig::new(3, 2).init(&device);
        let mut file = NamedParams::new();
        file.insert("fc.weight".into(), (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        file.insert("fc.bias".into(), (vec![2], vec![0.5, -0.5]));
        let map = NameMap::new().rule("fc.", "").transpose_2d(true);
        let (linear, n) = load_mapped(linear, &file, &map).unwrap();
        assert_eq!(n, 2);
        let w = linear.weight.val().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(w, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }

    #[test]
    fn files_round_trip_with_metadata_and_reject_garbage() {
        let dir = std::env::temp_dir().join(format!("embodia-st-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.safetensors");
        let mut tensors = NamedParams::new();
        tensors.insert("a".into(), (vec![2, 2], vec![1.0, -2.0, 3.5, f32::MIN_POSITIVE]));
        tensors.insert("b.c".into(), (vec![3], vec![0.0, 1e-30, -7.0]));
        let meta: BTreeMap<String, String> = [("k".to_string(), "v".to_string())].into();
        write_safetensors(&path, &tensors, &meta).unwrap();
        let (back, back_meta) = read_safetensors(&path).unwrap();
        assert_eq!((back, back_meta), (tensors, meta));
        std::fs::write(&path, b"garbage").unwrap();
        assert!(matches!(read_safetensors(&path), Err(TensorFileError::Corrupt { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
