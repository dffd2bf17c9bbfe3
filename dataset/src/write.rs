//! Writing [`Demonstrations`] as a LeRobot v3 dataset.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray,
    StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::info::{self, CODEBASE_VERSION, DATA_PATH, EPISODES_PATH, INFO_PATH, Info, STATS_PATH, TASKS_PATH, column};
use crate::{DatasetError, Demonstrations, FeatureStats, io_err, pq_err};

/// Layout choices of [`write`]; the defaults are LeRobot's.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// A data file is closed and the next one started before it would exceed this many
    /// bytes of uncompressed frame data (LeRobot: 100 MB). A file holds whole episodes.
    pub data_file_bytes: u64,
    /// Most files per `chunk-NNN` directory (LeRobot: 1000).
    pub chunks_size: usize,
    /// `robot_type` of `info.json` (embodia: the task's robot), or none.
    pub robot_type: Option<String>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self { data_file_bytes: 100 << 20, chunks_size: 1000, robot_type: None }
    }
}

/// Writes `demos` as a LeRobot v3 dataset into the directory `dir` (created if missing;
/// files already there are overwritten, others left alone), and returns its `info.json`.
/// Prefer [`save`], which never leaves a half-written dataset behind.
///
/// Errors: [`DatasetError::InvalidDemonstrations`] for no episodes, an empty episode, a step
/// count that does not match the widths, or a non-finite value (naming episode and column);
/// I/O and Parquet errors naming the file.
pub fn write(demos: &Demonstrations, dir: &Path, options: &WriteOptions) -> Result<Info, DatasetError> {
    validate(demos)?;
    let (od, ad) = (demos.obs_dim, demos.action_dim);
    let fps = info_fps(demos.fps);
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let (tasks, episode_task) = task_table(demos);

    // Whole episodes per data file; chunk-NNN rolls over every `chunks_size` files. Images
    // count at their raw size (PNG is smaller: a bound, not an estimate).
    let image_bytes: usize = demos.cameras.iter().map(|c| c.len()).sum();
    let frame_bytes = (4 * (od + demos.state_dim + ad) + 4 + 2 + 4 + 4 * 8 + image_bytes) as u64;
    let mut files: Vec<Range<usize>> = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (e, ep) in demos.episodes.iter().enumerate() {
        let b = ep.len() as u64 * frame_bytes;
        if e > start && bytes + b > options.data_file_bytes {
            files.push(start..e);
            (start, bytes) = (e, 0);
        }
        bytes += b;
    }
    files.push(start..demos.episodes.len());

    let chunks = options.chunks_size.max(1);
    let mut episode_rows = EpisodeRows::default();
    let mut index = 0i64;
    for (f, range) in files.iter().enumerate() {
        let (chunk, file) = ((f / chunks) as i64, (f % chunks) as i64);
        let path = dir.join(info::format_path(DATA_PATH, chunk, file));
        let batch = frame_batch(demos, range.clone(), index, fps, &episode_task)?;
        write_parquet(&path, &batch, &props)?;
        for e in range.clone() {
            let len = demos.episodes[e].len() as i64;
            episode_rows.push(e as i64, len, (chunk, file), index);
            index += len;
        }
    }
    let names: Vec<&str> = episode_task.iter().map(|&t| tasks[t as usize].as_str()).collect();
    write_parquet(&dir.join(info::format_path(EPISODES_PATH, 0, 0)), &episode_rows.batch(&names)?, &props)?;
    write_parquet(&dir.join(TASKS_PATH), &tasks_batch(&tasks)?, &props)?;

    let stats_path = dir.join(STATS_PATH);
    let mut stats = crate::stats::to_json(&frame_stats(demos, fps, &episode_task));
    if let serde_json::Value::Object(map) = &mut stats {
        map.extend(image_stats(demos));
    }
    write_json(&stats_path, &stats)?;
    let mut features = Info::embodia_features(od, ad);
    if demos.state_dim > 0 {
        let names = (0..demos.state_dim).map(|i| format!("state_{i}")).collect::<Vec<_>>();
        features.insert(
            column::ENV_STATE.into(),
            crate::Feature::new("float32", demos.state_dim, serde_json::json!(names)),
        );
    }
    for c in &demos.cameras {
        features.insert(
            format!("{}{}", column::IMAGE_PREFIX, c.name),
            crate::Feature {
                dtype: "image".into(),
                shape: vec![c.height, c.width, c.channels],
                names: serde_json::json!(["height", "width", "channels"]),
            },
        );
    }
    let mut extra = BTreeMap::new();
    if demos.episodes.iter().any(|e| e.instruction.is_some()) {
        extra.insert(info::EMBODIA_TASK.to_string(), serde_json::Value::String(demos.task.clone()));
    }
    let total_episodes = demos.episodes.len();
    let info = Info {
        codebase_version: CODEBASE_VERSION.to_string(),
        robot_type: options.robot_type.clone(),
        total_episodes,
        total_frames: demos.num_steps(),
        total_tasks: tasks.len(),
        chunks_size: chunks,
        data_files_size_in_mb: options.data_file_bytes.div_ceil(1 << 20),
        video_files_size_in_mb: 200,
        fps,
        splits: BTreeMap::from([("train".to_string(), format!("0:{total_episodes}"))]),
        data_path: DATA_PATH.to_string(),
        video_path: None,
        features,
        extra,
    };
    let value = serde_json::to_value(&info).map_err(|cause| DatasetError::Json { path: dir.join(INFO_PATH), cause })?;
    write_json(&dir.join(INFO_PATH), &value)?;
    Ok(info)
}

/// Writes `demos` as a dataset at `dir` so that a reader never sees a half-written one: into
/// a temporary sibling directory first, which then replaces `dir`. An existing `dir` that is
/// not an empty directory is an error ([`DatasetError::NotEmpty`]) unless `overwrite`, in which
/// case a dataset there is replaced whole (removed only after the new dataset is complete);
/// anything else there (a file, a directory without `meta/info.json`) is never replaced
/// ([`DatasetError::NotADataset`]).
pub fn save(demos: &Demonstrations, dir: &Path, options: &WriteOptions, overwrite: bool) -> Result<Info, DatasetError> {
    check_output(dir, overwrite)?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "dataset".into());
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let pid = std::process::id();
    let tmp = parent.join(format!(".{name}.tmp-{pid}"));
    let old = parent.join(format!(".{name}.old-{pid}"));
    remove_any(&tmp)?;
    let info = match write(demos, &tmp, options) {
        Ok(info) => info,
        Err(e) => {
            // Best effort: the write error is the one to report.
            let _ = remove_any(&tmp);
            return Err(e);
        }
    };
    if dir.exists() {
        std::fs::rename(dir, &old).map_err(io_err(dir))?;
    }
    std::fs::rename(&tmp, dir).map_err(io_err(dir))?;
    remove_any(&old)?;
    Ok(info)
}

/// Fails unless [`save`] may write `dir`: it does not exist, is an empty directory, or (with
/// `overwrite`) holds a dataset. Commands call it before they record, so that nothing is
/// recorded for an output that would be refused.
pub fn check_output(dir: &Path, overwrite: bool) -> Result<(), DatasetError> {
    let not_a_dataset = |found: String| Err(DatasetError::NotADataset { path: dir.to_path_buf(), found });
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let entries = entries.count();
            if entries > 0 && !overwrite {
                return Err(DatasetError::NotEmpty { path: dir.to_path_buf() });
            }
            if entries > 0 && !dir.join(crate::info::INFO_PATH).is_file() {
                return not_a_dataset(format!("a directory of {entries} entries"));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) if dir.is_dir() => return not_a_dataset("a directory that cannot be listed".into()),
        Err(_) => return not_a_dataset("a file".into()),
    }
    Ok(())
}

/// Removes a file or directory tree if it exists.
fn remove_any(path: &Path) -> Result<(), DatasetError> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    result.map_err(io_err(path))
}

fn validate(demos: &Demonstrations) -> Result<(), DatasetError> {
    let bad = |msg: String| Err(DatasetError::InvalidDemonstrations(msg));
    if demos.episodes.is_empty() {
        return bad("no episodes".into());
    }
    if !(demos.fps.is_finite() && demos.fps > 0.0) {
        return bad(format!("fps is {}; expected a positive number", demos.fps));
    }
    for (e, ep) in demos.episodes.iter().enumerate() {
        let n = ep.len();
        if n == 0 {
            return bad(format!("episode {e} has no steps"));
        }
        for (col, values, width) in [
            (column::STATE, &ep.observations, demos.obs_dim),
            (column::ENV_STATE, &ep.states, demos.state_dim),
            (column::ACTION, &ep.actions, demos.action_dim),
        ] {
            if values.len() != n * width {
                return bad(format!("episode {e}: `{col}` has {} values; expected {n} steps × {width}", values.len()));
            }
        }
        for (col, values) in [
            (column::STATE, &ep.observations),
            (column::ENV_STATE, &ep.states),
            (column::ACTION, &ep.actions),
            (column::REWARD, &ep.rewards),
        ] {
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return bad(format!("episode {e}: `{col}` value {i} is {}", values[i]));
            }
        }
        if ep.images.len() != demos.cameras.len() && !(demos.cameras.is_empty() && ep.images.iter().all(Vec::is_empty))
        {
            return bad(format!(
                "episode {e} has images of {} cameras; `cameras` lists {}",
                ep.images.len(),
                demos.cameras.len()
            ));
        }
        for (c, (images, cam)) in ep.images.iter().zip(&demos.cameras).enumerate() {
            if images.len() != n * cam.len() {
                return bad(format!(
                    "episode {e}: camera {c} (`{}`) has {} bytes; expected {n} steps × {}×{}×{}",
                    cam.name,
                    images.len(),
                    cam.height,
                    cam.width,
                    cam.channels
                ));
            }
        }
    }
    for (c, cam) in demos.cameras.iter().enumerate() {
        if cam.is_empty() || !matches!(cam.channels, 1 | 3 | 4) || cam.name.is_empty() {
            return bad(format!("cameras[{c}]: `{}` must be non-empty with 1, 3 or 4 channels", cam.name));
        }
    }
    Ok(())
}

/// The task table (LeRobot tasks: instructions in the order they first appear, episodes
/// without one under the dataset's task; the dataset's task alone when no episode has one) and
/// each episode's row in it.
fn task_table(demos: &Demonstrations) -> (Vec<String>, Vec<i64>) {
    let mut tasks: Vec<String> = Vec::new();
    let mut of_episode = Vec::with_capacity(demos.episodes.len());
    for ep in &demos.episodes {
        let task = ep.instruction.as_deref().unwrap_or(&demos.task);
        let k = match tasks.iter().position(|t| t == task) {
            Some(k) => k,
            None => {
                tasks.push(task.to_string());
                tasks.len() - 1
            }
        };
        of_episode.push(k as i64);
    }
    if tasks.is_empty() {
        tasks.push(demos.task.clone());
    }
    (tasks, of_episode)
}

/// One camera's images, `[rows, h, w, c]`, as LeRobot's image column: a struct of the PNG
/// `bytes` and a null `path` per frame (HF datasets' `Image` feature).
fn image_column<'a>(
    images: impl Iterator<Item = &'a [u8]>,
    cam: &embodia_sim::ImageSpec,
) -> Result<ArrayRef, DatasetError> {
    let color = match cam.channels {
        1 => png::ColorType::Grayscale,
        4 => png::ColorType::Rgba,
        _ => png::ColorType::Rgb,
    };
    let mut encoded: Vec<Vec<u8>> = Vec::new();
    for frame in images.flat_map(|episode| episode.chunks_exact(cam.len().max(1))) {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, cam.width as u32, cam.height as u32);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let fail =
            |e: png::EncodingError| DatasetError::InvalidDemonstrations(format!("camera `{}`: PNG: {e}", cam.name));
        let mut writer = encoder.write_header().map_err(fail)?;
        writer.write_image_data(frame).map_err(fail)?;
        writer.finish().map_err(fail)?;
        encoded.push(out);
    }
    let n = encoded.len();
    let bytes: ArrayRef = Arc::new(BinaryArray::from_iter_values(encoded.iter()));
    let path: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; n]));
    let fields =
        Fields::from(vec![Field::new("bytes", DataType::Binary, true), Field::new("path", DataType::Utf8, true)]);
    Ok(Arc::new(StructArray::new(fields, vec![bytes, path], None)))
}

/// The rate written into `info.json`: LeRobot's `fps` is an integer, and a control rate
/// computed in f32 is often not quite one (1 / 0.1 s is 10.000001), so a rate within 1e-4
/// (relative) of an integer is written as that integer.
fn info_fps(fps: f32) -> f64 {
    let fps = f64::from(fps);
    if (fps - fps.round()).abs() <= 1e-4 * fps.abs().max(1.0) { fps.round() } else { fps }
}

/// The frame rows of `episodes`, the first with dataset index `index`; timestamps at `fps`.
fn frame_batch(
    demos: &Demonstrations,
    episodes: Range<usize>,
    mut index: i64,
    fps: f64,
    episode_task: &[i64],
) -> Result<RecordBatch, DatasetError> {
    let eps = &demos.episodes[episodes.clone()];
    let n: usize = eps.iter().map(|e| e.len()).sum();
    let mut state = Vec::with_capacity(n * demos.obs_dim);
    let mut env_state = Vec::with_capacity(n * demos.state_dim);
    let mut action = Vec::with_capacity(n * demos.action_dim);
    let (mut reward, mut done, mut success, mut timestamp) = (vec![], vec![], vec![], vec![]);
    let (mut frame_index, mut episode_index, mut global_index, mut task_index) = (vec![], vec![], vec![], vec![]);
    for (e, ep) in episodes.zip(eps) {
        state.extend_from_slice(&ep.observations);
        env_state.extend_from_slice(&ep.states);
        action.extend_from_slice(&ep.actions);
        reward.extend_from_slice(&ep.rewards);
        let last = ep.len() - 1;
        for t in 0..ep.len() {
            done.push(t == last && ep.terminated);
            success.push(t == last && ep.success);
            timestamp.push((t as f64 / fps) as f32);
            frame_index.push(t as i64);
            episode_index.push(e as i64);
            global_index.push(index);
            task_index.push(episode_task[e]);
            index += 1;
        }
    }
    let image_names: Vec<String> =
        demos.cameras.iter().map(|c| format!("{}{}", column::IMAGE_PREFIX, c.name)).collect();
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        (column::STATE, fixed_size_list(state, demos.obs_dim)),
        (column::ACTION, fixed_size_list(action, demos.action_dim)),
        (column::REWARD, Arc::new(Float32Array::from(reward))),
        (column::DONE, Arc::new(BooleanArray::from(done))),
        (column::SUCCESS, Arc::new(BooleanArray::from(success))),
        (column::TIMESTAMP, Arc::new(Float32Array::from(timestamp))),
        (column::FRAME_INDEX, Arc::new(Int64Array::from(frame_index))),
        (column::EPISODE_INDEX, Arc::new(Int64Array::from(episode_index))),
        (column::INDEX, Arc::new(Int64Array::from(global_index))),
        (column::TASK_INDEX, Arc::new(Int64Array::from(task_index))),
    ];
    if demos.state_dim > 0 {
        columns.insert(1, (column::ENV_STATE, fixed_size_list(env_state, demos.state_dim)));
    }
    for (k, (name, cam)) in image_names.iter().zip(&demos.cameras).enumerate() {
        let frames = eps.iter().map(|ep| ep.images.get(k).map_or(&[][..], Vec::as_slice));
        columns.push((name.as_str(), image_column(frames, cam)?));
    }
    batch(columns, HashMap::new())
}

/// `[rows, width]` f32 values as Arrow's fixed-size list (HF datasets' `Sequence(length=width)`).
fn fixed_size_list(values: Vec<f32>, width: usize) -> ArrayRef {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Arc::new(FixedSizeListArray::new(item, width as i32, Arc::new(Float32Array::from(values)), None))
}

/// One row per episode, in LeRobot's episode table columns.
#[derive(Default)]
struct EpisodeRows {
    episode_index: Vec<i64>,
    length: Vec<i64>,
    chunk: Vec<i64>,
    file: Vec<i64>,
    from: Vec<i64>,
    to: Vec<i64>,
}

impl EpisodeRows {
    fn push(&mut self, episode: i64, length: i64, (chunk, file): (i64, i64), from: i64) {
        self.episode_index.push(episode);
        self.length.push(length);
        self.chunk.push(chunk);
        self.file.push(file);
        self.from.push(from);
        self.to.push(from + length);
    }

    /// The table, `task[i]` being the task of the `i`-th episode written.
    fn batch(self, task: &[&str]) -> Result<RecordBatch, DatasetError> {
        let n = self.episode_index.len();
        let mut tasks = ListBuilder::new(StringBuilder::new());
        for t in task.iter().take(n) {
            tasks.values().append_value(t);
            tasks.append(true);
        }
        let ints = |v: Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("episode_index", ints(self.episode_index)),
            ("tasks", Arc::new(tasks.finish())),
            ("length", ints(self.length)),
            ("data/chunk_index", ints(self.chunk)),
            ("data/file_index", ints(self.file)),
            ("dataset_from_index", ints(self.from)),
            ("dataset_to_index", ints(self.to)),
            ("meta/episodes/chunk_index", ints(vec![0; n])),
            ("meta/episodes/file_index", ints(vec![0; n])),
        ];
        batch(columns, HashMap::new())
    }
}

/// The task table as pandas writes LeRobot's `DataFrame({"task_index": ..}, index=Index(tasks,
/// name="task"))`: the pandas metadata makes `task` the frame's index again on reading.
fn tasks_batch(tasks: &[String]) -> Result<RecordBatch, DatasetError> {
    let pandas = serde_json::json!({
        "index_columns": ["task"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": null},
        ],
        "creator": {"library": "embodia", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.3",
    });
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("task_index", Arc::new(Int64Array::from((0..tasks.len() as i64).collect::<Vec<_>>()))),
        ("task", Arc::new(StringArray::from(tasks.to_vec()))),
    ];
    batch(columns, HashMap::from([("pandas".to_string(), pandas.to_string())]))
}

fn batch(columns: Vec<(&str, ArrayRef)>, metadata: HashMap<String, String>) -> Result<RecordBatch, DatasetError> {
    let fields: Vec<Field> = columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), false)).collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| DatasetError::InvalidDemonstrations(e.to_string()))
}

fn write_parquet(path: &Path, batch: &RecordBatch, props: &WriterProperties) -> Result<(), DatasetError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    let file = File::create(path).map_err(io_err(path))?;
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props.clone())).map_err(pq_err(path))?;
    writer.write(batch).map_err(pq_err(path))?;
    writer.close().map_err(pq_err(path))?;
    Ok(())
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), DatasetError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    let text =
        serde_json::to_string_pretty(value).map_err(|cause| DatasetError::Json { path: path.to_path_buf(), cause })?;
    std::fs::write(path, text + "\n").map_err(io_err(path))
}

/// `stats.json` entries: observation and action per dimension, and the numeric scalar
/// columns (LeRobot computes them for every non-string feature).
fn frame_stats(demos: &Demonstrations, fps: f64, episode_task: &[i64]) -> BTreeMap<String, FeatureStats> {
    let norm = demos.norm_stats();
    let mut index = 0.0;
    let (mut reward, mut timestamp, mut frame, mut episode, mut global) = (vec![], vec![], vec![], vec![], vec![]);
    let mut task = Vec::new();
    for (e, ep) in demos.episodes.iter().enumerate() {
        for (t, &r) in ep.rewards.iter().enumerate() {
            task.push(episode_task[e] as f64);
            reward.push(f64::from(r));
            timestamp.push(f64::from((t as f64 / fps) as f32));
            frame.push(t as f64);
            episode.push(e as f64);
            global.push(index);
            index += 1.0;
        }
    }
    let mut stats =
        BTreeMap::from([(column::STATE.to_string(), norm.observation), (column::ACTION.to_string(), norm.action)]);
    if demos.state_dim > 0 {
        let rows = demos.episodes.iter().flat_map(|e| e.states.chunks_exact(demos.state_dim));
        stats.insert(column::ENV_STATE.to_string(), FeatureStats::from_rows(demos.state_dim, rows));
    }
    for (name, values) in [
        (column::REWARD, reward),
        (column::TIMESTAMP, timestamp),
        (column::FRAME_INDEX, frame),
        (column::EPISODE_INDEX, episode),
        (column::INDEX, global),
        (column::TASK_INDEX, task),
    ] {
        stats.insert(name.to_string(), scalar_stats(&values));
    }
    stats
}

/// `stats.json` entries of the image features as LeRobot computes them: per channel, over every
/// pixel of every frame, values scaled to `[0, 1]`, each statistic shaped `[channels, 1, 1]`.
fn image_stats(demos: &Demonstrations) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for (k, cam) in demos.cameras.iter().enumerate() {
        let c = cam.channels.max(1);
        let (mut sum, mut sq) = (vec![0.0f64; c], vec![0.0f64; c]);
        let (mut min, mut max) = (vec![255u8; c], vec![0u8; c]);
        let mut frames = 0usize;
        for ep in &demos.episodes {
            let Some(images) = ep.images.get(k) else { continue };
            frames += images.len() / cam.len().max(1);
            for px in images.chunks_exact(c) {
                for (ch, &v) in px.iter().enumerate() {
                    let x = f64::from(v) / 255.0;
                    sum[ch] += x;
                    sq[ch] += x * x;
                    min[ch] = min[ch].min(v);
                    max[ch] = max[ch].max(v);
                }
            }
        }
        let n = (frames * cam.height * cam.width).max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
        let std: Vec<f64> = sq.iter().zip(&mean).map(|(q, m)| (q / n - m * m).max(0.0).sqrt()).collect();
        let shaped = |v: Vec<f64>| serde_json::json!(v.into_iter().map(|x| vec![vec![x]]).collect::<Vec<_>>());
        let scaled = |v: Vec<u8>| v.into_iter().map(|x| f64::from(x) / 255.0).collect::<Vec<_>>();
        out.push((
            format!("{}{}", column::IMAGE_PREFIX, cam.name),
            serde_json::json!({
                "mean": shaped(mean),
                "std": shaped(std),
                "min": shaped(scaled(min)),
                "max": shaped(scaled(max)),
                "count": [frames],
            }),
        ));
    }
    out
}

/// [`FeatureStats`] of a scalar column, `[1]` each, in f64 (exact for frame indices).
fn scalar_stats(values: &[f64]) -> FeatureStats {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    FeatureStats {
        mean: vec![mean],
        std: vec![var.sqrt()],
        min: vec![values.iter().copied().fold(f64::INFINITY, f64::min)],
        max: vec![values.iter().copied().fold(f64::NEG_INFINITY, f64::max)],
        count: values.len(),
    }
}
