//! `meta/info.json`: the dataset's schema, rate, totals and file layout, and the names and
//! path templates of the LeRobot v3 layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::DatasetError;

/// The LeRobot codebase version written into `info.json`; [`crate::read`] accepts `v3.x`.
pub const CODEBASE_VERSION: &str = "v3.0";
/// Metadata file, relative to the dataset root.
pub const INFO_PATH: &str = "meta/info.json";
/// Statistics file, relative to the dataset root.
pub const STATS_PATH: &str = "meta/stats.json";
/// Task table (LeRobot v3), relative to the dataset root.
pub const TASKS_PATH: &str = "meta/tasks.parquet";
/// Task list of LeRobot v2.1, read when [`TASKS_PATH`] is absent.
pub const LEGACY_TASKS_PATH: &str = "meta/tasks.jsonl";
/// Directory of the episode table files, relative to the dataset root.
pub const EPISODES_DIR: &str = "meta/episodes";
/// Template of the episode table files.
pub const EPISODES_PATH: &str = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
/// Template of the frame data files (LeRobot's default `data_path`).
pub const DATA_PATH: &str = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
/// Template of video files (LeRobot's default `video_path`; embodia writes no video yet).
pub const VIDEO_PATH: &str = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";

/// Frame columns (feature names).
pub mod column {
    /// Observation acted on, `[obs_dim]` f32.
    pub const STATE: &str = "observation.state";
    /// Privileged environment state at the observation (LeRobot's name; embodia's task critic
    /// observation), `[state_dim]` f32; optional.
    pub const ENV_STATE: &str = "observation.environment_state";
    /// Action taken, `[action_dim]` f32.
    pub const ACTION: &str = "action";
    /// Reward received after the action, f32.
    pub const REWARD: &str = "next.reward";
    /// The action ended the episode in a terminal state, bool.
    pub const DONE: &str = "next.done";
    /// The action ended the episode in the task's success state, bool.
    pub const SUCCESS: &str = "next.success";
    /// Time since the episode started, s, f32.
    pub const TIMESTAMP: &str = "timestamp";
    /// Step within the episode, int64.
    pub const FRAME_INDEX: &str = "frame_index";
    /// Episode, int64.
    pub const EPISODE_INDEX: &str = "episode_index";
    /// Frame within the whole dataset, int64.
    pub const INDEX: &str = "index";
    /// Task (row of the task table), int64.
    pub const TASK_INDEX: &str = "task_index";
    /// Prefix of image features: `observation.images.<camera>`, `[height, width, channels]`
    /// `u8`, stored per frame as a struct of PNG `bytes` and a null `path` (LeRobot's `image`
    /// dtype).
    pub const IMAGE_PREFIX: &str = "observation.images.";
}

/// `info.json` field (among [`Info::extra`]) naming the embodia task (family) of a dataset
/// whose episodes carry their own instructions as LeRobot tasks.
pub const EMBODIA_TASK: &str = "embodia_task";

/// One feature (column) of the frame table as `info.json` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    /// numpy dtype name (`float32`, `int64`, `bool`, …) or `video`/`image`/`string`.
    pub dtype: String,
    /// Shape of one frame's value; `[1]` for scalars.
    pub shape: Vec<usize>,
    /// Names of the dimensions: a list, a map of lists, or null (LeRobot allows all three).
    #[serde(default)]
    pub names: serde_json::Value,
}

impl Feature {
    pub(crate) fn new(dtype: &str, shape: usize, names: serde_json::Value) -> Self {
        Self { dtype: dtype.to_string(), shape: vec![shape], names }
    }

    /// Number of values per frame (product of the shape).
    pub fn width(&self) -> usize {
        self.shape.iter().product()
    }
}

/// `meta/info.json`, as LeRobot v3.0 writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Info {
    /// LeRobot dataset format version, `v3.0`.
    pub codebase_version: String,
    /// Robot the data was recorded with (embodia: the task's robot).
    #[serde(default)]
    pub robot_type: Option<String>,
    /// Number of episodes.
    pub total_episodes: usize,
    /// Number of frames over all episodes.
    pub total_frames: usize,
    /// Number of distinct tasks.
    #[serde(default)]
    pub total_tasks: usize,
    /// Most files per `chunk-NNN` directory.
    #[serde(default = "default_chunks_size")]
    pub chunks_size: usize,
    /// Size at which a data file is closed and the next one started, MB.
    #[serde(default = "default_data_files_size_in_mb")]
    pub data_files_size_in_mb: u64,
    /// Same for video files, MB.
    #[serde(default = "default_video_files_size_in_mb")]
    pub video_files_size_in_mb: u64,
    /// Frames per second (the control rate). Written as an integer where it is one, as
    /// LeRobot does.
    #[serde(serialize_with = "fps_as_written")]
    pub fps: f64,
    /// Episode ranges per split, e.g. `{"train": "0:50"}`.
    #[serde(default)]
    pub splits: BTreeMap<String, String>,
    /// Template of the data files, with `{chunk_index:03d}` and `{file_index:03d}`.
    pub data_path: String,
    /// Template of the video files; `null` when the dataset has none.
    #[serde(default)]
    pub video_path: Option<String>,
    /// The frame table's features, by name.
    pub features: BTreeMap<String, Feature>,
    /// Fields embodia does not model (newer LeRobot versions add some), kept as read.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

fn default_chunks_size() -> usize {
    1000
}

fn default_data_files_size_in_mb() -> u64 {
    100
}

fn default_video_files_size_in_mb() -> u64 {
    200
}

fn fps_as_written<S: serde::Serializer>(fps: &f64, s: S) -> Result<S::Ok, S::Error> {
    if fps.fract() == 0.0 && fps.abs() < 1e15 { s.serialize_i64(*fps as i64) } else { s.serialize_f64(*fps) }
}

impl Info {
    /// The features embodia writes for observations of width `obs_dim` and actions of width
    /// `action_dim` (names `obs_0…`, `action_0…`: the task's specs carry no names).
    pub fn embodia_features(obs_dim: usize, action_dim: usize) -> BTreeMap<String, Feature> {
        let names =
            |prefix: &str, n: usize| serde_json::json!((0..n).map(|i| format!("{prefix}_{i}")).collect::<Vec<_>>());
        let null = serde_json::Value::Null;
        [
            (column::STATE, Feature::new("float32", obs_dim, names("obs", obs_dim))),
            (column::ACTION, Feature::new("float32", action_dim, names("action", action_dim))),
            (column::REWARD, Feature::new("float32", 1, null.clone())),
            (column::DONE, Feature::new("bool", 1, null.clone())),
            (column::SUCCESS, Feature::new("bool", 1, null.clone())),
            (column::TIMESTAMP, Feature::new("float32", 1, null.clone())),
            (column::FRAME_INDEX, Feature::new("int64", 1, null.clone())),
            (column::EPISODE_INDEX, Feature::new("int64", 1, null.clone())),
            (column::INDEX, Feature::new("int64", 1, null.clone())),
            (column::TASK_INDEX, Feature::new("int64", 1, null)),
        ]
        .into_iter()
        .map(|(k, f)| (k.to_string(), f))
        .collect()
    }

    /// Reads and parses `meta/info.json` under `root`.
    pub fn load(root: &Path) -> Result<Self, DatasetError> {
        let path = root.join(INFO_PATH);
        let text = std::fs::read_to_string(&path).map_err(crate::io_err(&path))?;
        serde_json::from_str(&text).map_err(|cause| DatasetError::Json { path, cause })
    }

    /// The data file of `(chunk, file)`, from the `data_path` template.
    pub fn data_file(&self, root: &Path, chunk: i64, file: i64) -> PathBuf {
        root.join(format_path(&self.data_path, chunk, file))
    }
}

/// Widest zero padding of an index in a path template, digits.
const MAX_INDEX_WIDTH: usize = 32;

/// Fills a LeRobot path template's `{chunk_index…}` and `{file_index…}` fields (Python format
/// syntax; `:0Nd` pads to N digits).
pub fn format_path(template: &str, chunk: i64, file: i64) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else { break };
        let field = &rest[start + 1..start + len];
        let (name, spec) = field.split_once(':').unwrap_or((field, ""));
        let value = match name {
            "chunk_index" => Some(chunk),
            "file_index" => Some(file),
            _ => None,
        };
        match value {
            Some(v) => {
                // Wider than any index needs: a hostile template's width (up to 2^64) would
                // overflow the formatter, so it is capped (the file then is not found, by name).
                let width = spec
                    .trim_start_matches('0')
                    .trim_end_matches('d')
                    .parse::<usize>()
                    .unwrap_or(0)
                    .min(MAX_INDEX_WIDTH);
                out.push_str(&format!("{v:0width$}"));
            }
            None => out.push_str(&rest[start..start + len + 1]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_templates_are_filled_like_python_format() {
        assert_eq!(format_path(DATA_PATH, 0, 7), "data/chunk-000/file-007.parquet");
        assert_eq!(format_path(DATA_PATH, 12, 1234), "data/chunk-012/file-1234.parquet");
        assert_eq!(format_path("d/{chunk_index}/{file_index:05d}.p", 3, 4), "d/3/00004.p");
        // A width past what any index needs is capped instead of overflowing the formatter.
        assert_eq!(format_path("{file_index:4294967296d}", 0, 7).len(), MAX_INDEX_WIDTH);
        // Fields it does not know are left as they are.
        assert_eq!(format_path(VIDEO_PATH, 1, 2), "videos/{video_key}/chunk-001/file-002.mp4");
    }

    #[test]
    fn fps_is_written_as_an_integer_where_it_is_one() {
        let mut info = Info {
            codebase_version: CODEBASE_VERSION.into(),
            robot_type: None,
            total_episodes: 0,
            total_frames: 0,
            total_tasks: 0,
            chunks_size: 1000,
            data_files_size_in_mb: 100,
            video_files_size_in_mb: 200,
            fps: 20.0,
            splits: BTreeMap::new(),
            data_path: DATA_PATH.into(),
            video_path: None,
            features: Info::embodia_features(2, 1),
            extra: BTreeMap::new(),
        };
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["fps"], serde_json::json!(20));
        assert_eq!(json["features"]["action"]["shape"], serde_json::json!([1]));
        info.fps = 12.5;
        assert_eq!(serde_json::to_value(&info).unwrap()["fps"], serde_json::json!(12.5));
    }
}
