//! Checkpoint files: every tensor in one safetensors file, everything else in one JSON file.
//!
//! Layout of a checkpoint directory:
//! - `tensors.safetensors`: f32 tensors by dotted name. Prefixes: `actor.`, `critic.`,
//!   `critic_target.` (network parameters, burn parameter paths), `optim.<net>.m.`/`.v.`
//!   (Adam moments, flattened), `replay.` (SAC replay buffer columns, `[len, dim]`).
//! - `state.json`: the [`Checkpoint::meta`] object: step counters, generator states, the
//!   observation normalizer, the environment snapshot, and whatever else the learner needs to
//!   continue exactly.
//! - `checksums.json`: a 64-bit FNV-1a hash of every tensor's bytes and of `state.json`,
//!   verified on load, so that a file changed or damaged after it was saved is refused with the
//!   tensor it hits instead of training or acting on silently wrong weights. Checkpoints written
//!   before checksums existed have none and load unchecked.
//!
//! Directories are replaced atomically: written beside the target, then renamed into place, so
//! an interrupted save never destroys the previous checkpoint.

use std::fs;
use std::path::{Path, PathBuf};

use embodia_policies::NamedParams;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::{Adam, AlgoError};

/// Tensor file name inside a checkpoint directory.
pub const TENSORS_FILE: &str = "tensors.safetensors";
/// Metadata file name inside a checkpoint directory.
pub const STATE_FILE: &str = "state.json";
/// Checksum file name inside a checkpoint directory.
pub const CHECKSUMS_FILE: &str = "checksums.json";

/// The whole state of a learner in host memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpoint {
    /// Named f32 tensors.
    pub tensors: NamedParams,
    /// JSON metadata (counters, generator states, normalizer, environment snapshot).
    pub meta: serde_json::Map<String, serde_json::Value>,
}

impl Checkpoint {
    /// Moves the tensors of `params` under `prefix.` into this checkpoint.
    pub fn insert_params(&mut self, prefix: &str, params: NamedParams) {
        for (name, value) in params {
            self.tensors.insert(format!("{prefix}.{name}"), value);
        }
    }

    /// The tensors under `prefix.`, with the prefix stripped.
    pub fn params(&self, prefix: &str) -> NamedParams {
        let p = format!("{prefix}.");
        self.tensors.iter().filter_map(|(k, v)| k.strip_prefix(&p).map(|name| (name.to_string(), v.clone()))).collect()
    }

    /// Stores a serializable value under `key` in the metadata.
    pub fn put<T: serde::Serialize>(&mut self, key: &str, value: &T) -> Result<(), AlgoError> {
        let v = serde_json::to_value(value).map_err(|e| AlgoError::Checkpoint(format!("{key}: {e}")))?;
        self.meta.insert(key.to_string(), v);
        Ok(())
    }

    /// Reads the metadata value under `key`.
    pub fn get<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<T, AlgoError> {
        let v = self.meta.get(key).ok_or_else(|| AlgoError::Checkpoint(format!("{STATE_FILE} lacks `{key}`")))?;
        serde_json::from_value(v.clone()).map_err(|e| AlgoError::Checkpoint(format!("{STATE_FILE}: `{key}`: {e}")))
    }

    /// Stores optimizer `optim` as `name`: its moments as `optim.<name>.*` tensors and its step
    /// count as `optim_<name>_steps`.
    pub fn put_optim(&mut self, name: &str, optim: &Adam) -> Result<(), AlgoError> {
        let (steps, state) = optim.state();
        self.insert_params(&format!("optim.{name}"), state);
        self.put(&format!("optim_{name}_steps"), &steps)
    }

    /// Restores optimizer `optim` of `module`'s parameters from what [`Self::put_optim`] stored
    /// as `name`, on `device`.
    pub fn restore_optim<M: burn::module::Module>(
        &self,
        name: &str,
        optim: &mut Adam,
        module: &M,
        device: &burn::tensor::Device,
    ) -> Result<(), AlgoError> {
        let steps = self.get(&format!("optim_{name}_steps"))?;
        optim.load_state(steps, &self.params(&format!("optim.{name}")), module, device)
    }

    /// Fails unless the checkpoint was written by algorithm `algo` (its `algo` entry).
    pub fn expect_algo(&self, algo: &str) -> Result<(), AlgoError> {
        let found: String = self.get("algo")?;
        if found == algo {
            Ok(())
        } else {
            Err(AlgoError::Checkpoint(format!("checkpoint is from `{found}`, not `{algo}`")))
        }
    }

    /// Writes the checkpoint to `dir`, replacing any previous one atomically.
    pub fn save(&self, dir: &Path) -> Result<(), AlgoError> {
        let io = |what: &str, path: &Path, e: std::io::Error| {
            AlgoError::Checkpoint(format!("cannot {what} {}: {e}", path.display()))
        };
        let tmp = sibling(dir, "tmp");
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| io("remove", &tmp, e))?;
        }
        fs::create_dir_all(&tmp).map_err(|e| io("create", &tmp, e))?;

        let bytes: Vec<(String, Vec<u8>, Vec<usize>)> = self
            .tensors
            .iter()
            .map(|(k, (shape, values))| {
                (k.clone(), values.iter().flat_map(|v| v.to_le_bytes()).collect(), shape.clone())
            })
            .collect();
        let views = bytes
            .iter()
            .map(|(k, b, shape)| {
                let view = TensorView::new(Dtype::F32, shape.clone(), b)
                    .map_err(|e| AlgoError::Checkpoint(format!("tensor `{k}` has shape {shape:?}: {e}")))?;
                Ok((k.as_str(), view))
            })
            .collect::<Result<Vec<_>, AlgoError>>()?;
        let mut checksums: serde_json::Map<String, serde_json::Value> =
            bytes.iter().map(|(k, b, _)| (k.clone(), fnv1a64(b).into())).collect();
        let data = safetensors::serialize(views, None)
            .map_err(|e| AlgoError::Checkpoint(format!("cannot encode tensors: {e}")))?;
        fs::write(tmp.join(TENSORS_FILE), data).map_err(|e| io("write", &tmp.join(TENSORS_FILE), e))?;
        let json = serde_json::to_vec_pretty(&self.meta).map_err(|e| AlgoError::Checkpoint(e.to_string()))?;
        checksums.insert(STATE_FILE.into(), fnv1a64(&json).into());
        fs::write(tmp.join(STATE_FILE), json).map_err(|e| io("write", &tmp.join(STATE_FILE), e))?;
        let checksums = serde_json::to_vec_pretty(&checksums).map_err(|e| AlgoError::Checkpoint(e.to_string()))?;
        fs::write(tmp.join(CHECKSUMS_FILE), checksums).map_err(|e| io("write", &tmp.join(CHECKSUMS_FILE), e))?;

        let old = sibling(dir, "old");
        if dir.exists() {
            if old.exists() {
                fs::remove_dir_all(&old).map_err(|e| io("remove", &old, e))?;
            }
            fs::rename(dir, &old).map_err(|e| io("move", dir, e))?;
        }
        fs::rename(&tmp, dir).map_err(|e| io("move", &tmp, e))?;
        if old.exists() {
            fs::remove_dir_all(&old).map_err(|e| io("remove", &old, e))?;
        }
        Ok(())
    }

    /// Reads a checkpoint from `dir`, verifying its checksums (when it has them) and that every
    /// tensor is finite. If a save was interrupted between its two renames, the previous
    /// checkpoint (`<dir>.old`) is read instead.
    pub fn load(dir: &Path) -> Result<Self, AlgoError> {
        let old = sibling(dir, "old");
        let dir = if !dir.exists() && old.exists() { old.as_path() } else { dir };
        let tensors_path = dir.join(TENSORS_FILE);
        let state_path = dir.join(STATE_FILE);
        let checksums = read_checksums(&dir.join(CHECKSUMS_FILE))?;
        let bytes = fs::read(&tensors_path)
            .map_err(|e| AlgoError::Checkpoint(format!("cannot read {}: {e}", tensors_path.display())))?;
        let corrupt = |e: String| AlgoError::Checkpoint(format!("{} is corrupt: {e}", tensors_path.display()));
        let st = SafeTensors::deserialize(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let mut tensors = NamedParams::new();
        for (name, view) in st.tensors() {
            if view.dtype() != Dtype::F32 {
                return Err(corrupt(format!("tensor `{name}` is {:?}, expected F32", view.dtype())));
            }
            if let Some(sums) = &checksums {
                let want = sums.get(&name).and_then(|v| v.as_str());
                if want != Some(fnv1a64(view.data()).as_str()) {
                    return Err(corrupt(format!(
                        "tensor `{name}` does not match its checksum in {CHECKSUMS_FILE}: the file was changed or damaged after it was saved"
                    )));
                }
            }
            let values: Vec<f32> =
                view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(corrupt(format!("tensor `{name}` holds {} at index {i}", values[i])));
            }
            tensors.insert(name, (view.shape().to_vec(), values));
        }
        if let Some(sums) = &checksums
            && let Some(missing) = sums.keys().find(|k| *k != STATE_FILE && !tensors.contains_key(*k))
        {
            return Err(corrupt(format!("tensor `{missing}` listed in {CHECKSUMS_FILE} is missing")));
        }
        let text = fs::read_to_string(&state_path)
            .map_err(|e| AlgoError::Checkpoint(format!("cannot read {}: {e}", state_path.display())))?;
        if let Some(sums) = &checksums
            && sums.get(STATE_FILE).and_then(|v| v.as_str()) != Some(fnv1a64(text.as_bytes()).as_str())
        {
            return Err(AlgoError::Checkpoint(format!(
                "{} is corrupt: it does not match its checksum in {CHECKSUMS_FILE} (changed or damaged after it was saved)",
                state_path.display()
            )));
        }
        let meta = serde_json::from_str(&text)
            .map_err(|e| AlgoError::Checkpoint(format!("{} is corrupt: {e}", state_path.display())))?;
        Ok(Self { tensors, meta })
    }
}

/// The checksums of a checkpoint, `None` for one written before checksums existed.
fn read_checksums(path: &Path) -> Result<Option<serde_json::Map<String, serde_json::Value>>, AlgoError> {
    if !path.exists() {
        return Ok(None);
    }
    let text =
        fs::read_to_string(path).map_err(|e| AlgoError::Checkpoint(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| AlgoError::Checkpoint(format!("{} is corrupt: {e}", path.display())))
}

/// 64-bit FNV-1a hash of `bytes`, as 16 hexadecimal digits: a stable, dependency-free
/// checksum (it detects damage and edits, it is not a cryptographic signature).
fn fnv1a64(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    dir.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_corruption() {
        let dir = std::env::temp_dir().join(format!("embodia-ckpt-{}", std::process::id()));
        let target = dir.join("checkpoint");
        let mut ckpt = Checkpoint::default();
        ckpt.tensors.insert("actor.w".into(), (vec![2, 2], vec![1.0, -2.0, 3.5, f32::MIN_POSITIVE]));
        ckpt.put("steps", &42u64).unwrap();
        ckpt.save(&target).unwrap();
        ckpt.save(&target).unwrap(); // replacing works
        let back = Checkpoint::load(&target).unwrap();
        assert_eq!(back, ckpt);
        assert_eq!(back.get::<u64>("steps").unwrap(), 42);

        std::fs::write(target.join(TENSORS_FILE), b"garbage").unwrap();
        let err = Checkpoint::load(&target).unwrap_err().to_string();
        assert!(err.contains("tensors.safetensors is corrupt"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tensor_changed_after_saving_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("embodia-ckpt-sum-{}", std::process::id()));
        let target = dir.join("checkpoint");
        let mut ckpt = Checkpoint::default();
        ckpt.tensors.insert("actor.w".into(), (vec![2], vec![1.0, 2.0]));
        ckpt.tensors.insert("critic.b".into(), (vec![1], vec![0.5]));
        ckpt.put("steps", &7u64).unwrap();
        ckpt.save(&target).unwrap();
        // Rewrite the tensor file with one weight changed to a large but finite value.
        let mut edited = ckpt.clone();
        edited.tensors.insert("critic.b".into(), (vec![1], vec![1e30]));
        edited.save(&dir.join("other")).unwrap();
        std::fs::copy(dir.join("other").join(TENSORS_FILE), target.join(TENSORS_FILE)).unwrap();
        let err = Checkpoint::load(&target).unwrap_err().to_string();
        assert!(err.contains("`critic.b`") && err.contains("checksum"), "{err}");
        // An edited state.json is refused too.
        ckpt.save(&target).unwrap();
        let state = std::fs::read_to_string(target.join(STATE_FILE)).unwrap().replace("7", "8");
        std::fs::write(target.join(STATE_FILE), state).unwrap();
        let err = Checkpoint::load(&target).unwrap_err().to_string();
        assert!(err.contains("state.json") && err.contains("checksum"), "{err}");
        // Without a checksum file (a checkpoint from before checksums), a non-finite weight is
        // still refused by name.
        let mut bad = ckpt.clone();
        bad.tensors.insert("actor.w".into(), (vec![2], vec![1.0, f32::NAN]));
        bad.save(&target).unwrap();
        std::fs::remove_file(target.join(CHECKSUMS_FILE)).unwrap();
        let err = Checkpoint::load(&target).unwrap_err().to_string();
        assert!(err.contains("`actor.w` holds NaN at index 1"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
