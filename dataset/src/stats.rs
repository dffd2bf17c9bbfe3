//! `meta/stats.json`: per-feature statistics in LeRobot's format,
//! `{"action": {"mean": [..], "std": [..], "min": [..], "max": [..], "count": [n]}, ..}`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::info::{STATS_PATH, column};
use crate::{DatasetError, FeatureStats, NormStats};

/// The JSON object of `stats` (LeRobot writes `count` as a one-element list).
pub fn to_json(stats: &BTreeMap<String, FeatureStats>) -> Value {
    let entries = stats.iter().map(|(name, s)| {
        let v = json!({"mean": s.mean, "std": s.std, "min": s.min, "max": s.max, "count": [s.count]});
        (name.clone(), v)
    });
    Value::Object(entries.collect())
}

/// Reads the statistics of `observation.state` (width `obs_dim`) and `action` (width
/// `action_dim`) from `meta/stats.json` under `root`; `Ok(None)` when the file does not exist.
/// Other features and other statistics (LeRobot's quantiles) are ignored.
pub fn load_norm_stats(root: &Path, obs_dim: usize, action_dim: usize) -> Result<Option<NormStats>, DatasetError> {
    let path = root.join(STATS_PATH);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => return Err(DatasetError::Io { path, cause }),
    };
    let json: Value = serde_json::from_str(&text).map_err(|cause| DatasetError::Json { path: path.clone(), cause })?;
    let feature = |name: &str, dim: usize| parse_feature(&path, &json, name, dim);
    Ok(Some(NormStats { observation: feature(column::STATE, obs_dim)?, action: feature(column::ACTION, action_dim)? }))
}

fn parse_feature(path: &Path, json: &Value, name: &str, dim: usize) -> Result<FeatureStats, DatasetError> {
    let meta = |field: String, problem: String| DatasetError::Meta { path: path.to_path_buf(), field, problem };
    let entry = json.get(name).ok_or_else(|| meta(name.to_string(), "missing".into()))?;
    let vector = |stat: &str| -> Result<Vec<f64>, DatasetError> {
        let field = format!("{name}.{stat}");
        let values = entry
            .get(stat)
            .and_then(Value::as_array)
            .ok_or_else(|| meta(field.clone(), "missing or not a list".into()))?;
        let values: Vec<f64> = values
            .iter()
            .map(|v| v.as_f64().filter(|x| x.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| meta(field.clone(), "holds a value that is not a finite number".into()))?;
        if values.len() != dim {
            return Err(meta(field, format!("has {} values; the feature has {dim}", values.len())));
        }
        Ok(values)
    };
    let count = match entry.get("count") {
        Some(Value::Array(a)) if a.len() == 1 => a[0].as_u64(),
        Some(v) => v.as_u64(),
        None => None,
    }
    .ok_or_else(|| meta(format!("{name}.count"), "missing or not a count".into()))?;
    Ok(FeatureStats {
        mean: vector("mean")?,
        std: vector("std")?,
        min: vector("min")?,
        max: vector("max")?,
        count: count as usize,
    })
}
