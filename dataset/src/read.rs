//! Reading a LeRobot v3 dataset (ours or LeRobot's) into [`Demonstrations`].

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};

use crate::columns::{self, Problem};
use crate::info::{EPISODES_DIR, INFO_PATH, Info, LEGACY_TASKS_PATH, TASKS_PATH, column};
use crate::{DatasetError, Demonstrations, Episode, NormStats, io_err, pq_err, thrift_bounds};

/// A dataset read from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Its `meta/info.json`.
    pub info: Info,
    /// Its episodes, in the order of the episode table. `success` and `terminated` come from
    /// the last frame's `next.success` and `next.done` (false where the dataset has no such
    /// column); rewards are 0 where it has no `next.reward`.
    pub demonstrations: Demonstrations,
    /// Normalization statistics of `observation.state` and `action`: from `meta/stats.json`,
    /// or computed from the episodes where the dataset has none.
    pub stats: NormStats,
}

impl Dataset {
    /// Whether the frames carry `next.success` (else every episode reads as unsuccessful).
    pub fn has_success(&self) -> bool {
        self.info.features.contains_key(column::SUCCESS)
    }
}

/// One row of the episode table.
struct EpisodeMeta {
    index: i64,
    length: i64,
    data_file: (i64, i64),
    from: i64,
    to: i64,
}

/// An episode being assembled from frame rows.
#[derive(Default)]
struct Partial {
    episode: Episode,
    frames: i64,
}

/// Reads the dataset at `root` (LeRobot codebase version v3.x, low-dimensional features).
///
/// Requires the features `observation.state` and `action` (1-D float vectors),
/// `episode_index` and `frame_index`; uses `next.reward`, `next.done`, `next.success` and
/// `index` where declared. Every feature `info.json` declares (other than video and image
/// features) must be a column of every data file.
///
/// Errors name the file, and the column and episode where they apply: a missing column, a
/// row whose vector has the wrong length, NaN or infinite values, null values, frames out
/// of order, an episode whose frame count differs from its `length`, totals in `info.json`
/// that disagree with the episode table, a codebase version other than v3, more than one
/// task.
pub fn read(root: &Path) -> Result<Dataset, DatasetError> {
    let info = Info::load(root)?;
    let info_path = root.join(INFO_PATH);
    let meta = |field: &str, problem: String| DatasetError::Meta {
        path: info_path.clone(),
        field: field.to_string(),
        problem,
    };
    if !info.codebase_version.starts_with("v3.") {
        return Err(meta(
            "codebase_version",
            format!(
                "is {}; embodia reads v3.x datasets (convert v2.1 with LeRobot's convert_dataset_v21_to_v30)",
                info.codebase_version
            ),
        ));
    }
    if !(info.fps.is_finite() && info.fps > 0.0) {
        return Err(meta("fps", format!("is {}; expected a positive number", info.fps)));
    }
    let vector_width = |name: &str| -> Result<usize, DatasetError> {
        let f = info.features.get(name).ok_or_else(|| meta(&format!("features.{name}"), "missing".into()))?;
        if !matches!(f.dtype.as_str(), "float32" | "float64") || f.shape.len() != 1 {
            return Err(meta(
                &format!("features.{name}"),
                format!("is {} of shape {:?}; expected a 1-D float32 or float64 vector", f.dtype, f.shape),
            ));
        }
        Ok(f.shape[0])
    };
    let (obs_dim, action_dim) = (vector_width(column::STATE)?, vector_width(column::ACTION)?);
    let state_dim = if info.features.contains_key(column::ENV_STATE) { vector_width(column::ENV_STATE)? } else { 0 };
    for name in [column::EPISODE_INDEX, column::FRAME_INDEX] {
        if !info.features.contains_key(name) {
            return Err(meta(&format!("features.{name}"), "missing".into()));
        }
    }

    let tasks = read_tasks(root)?;
    // Per-episode instructions: datasets of several tasks, or ours that name the family.
    let family = info.extra.get(crate::info::EMBODIA_TASK).and_then(|v| v.as_str()).map(str::to_string);
    let per_episode = family.is_some() || tasks.len() > 1;
    let task = match (&family, tasks.as_slice()) {
        (Some(f), _) => f.clone(),
        (None, [(_, t), ..]) => t.clone(),
        (None, []) => unreachable!("read_tasks returns at least one task"),
    };
    let cameras = image_features(&info).map_err(|(field, problem)| meta(&field, problem))?;
    let episodes = read_episode_table(root)?;
    if episodes.len() != info.total_episodes {
        return Err(meta(
            "total_episodes",
            format!("is {}; the episode table has {}", info.total_episodes, episodes.len()),
        ));
    }
    let frames: i64 = episodes.iter().map(|e| e.length).sum();
    if frames != info.total_frames as i64 {
        return Err(meta("total_frames", format!("is {}; the episode lengths sum to {frames}", info.total_frames)));
    }

    // Episodes by index, and the data files in first-use order.
    let by_index: HashMap<i64, &EpisodeMeta> = episodes.iter().map(|e| (e.index, e)).collect();
    let mut files: Vec<(i64, i64)> = Vec::new();
    for e in &episodes {
        if !files.contains(&e.data_file) {
            files.push(e.data_file);
        }
    }
    let mut partial: BTreeMap<i64, Partial> = BTreeMap::new();
    for &(chunk, file) in &files {
        let path = info.data_file(root, chunk, file);
        let ctx = FrameContext { info: &info, tasks: per_episode.then_some(tasks.as_slice()), cameras: &cameras };
        read_frames(&path, &ctx, (chunk, file), &by_index, &mut partial)?;
    }

    let mut out = Vec::with_capacity(episodes.len());
    for e in &episodes {
        let p = partial.remove(&e.index).unwrap_or_default();
        if p.frames != e.length {
            return Err(DatasetError::Column {
                path: info.data_file(root, e.data_file.0, e.data_file.1),
                column: column::EPISODE_INDEX.into(),
                episode: Some(e.index),
                problem: format!("{} frames in the data file; the episode table says length {}", p.frames, e.length),
            });
        }
        out.push(p.episode);
    }
    let demonstrations =
        Demonstrations { task, fps: info.fps as f32, obs_dim, action_dim, episodes: out, cameras, state_dim };
    let stats = match crate::stats::load_norm_stats(root, obs_dim, action_dim)? {
        Some(s) => s,
        None => demonstrations.norm_stats(),
    };
    Ok(Dataset { info, demonstrations, stats })
}

/// Image features of `info` as cameras (`observation.images.<name>`, shape `[h, w, c]`), in
/// name order; errors as `(field, problem)`.
fn image_features(info: &Info) -> Result<Vec<embodia_sim::ImageSpec>, (String, String)> {
    let mut out = Vec::new();
    for (key, f) in info.features.iter().filter(|(_, f)| f.dtype == "image") {
        let name = key.strip_prefix(column::IMAGE_PREFIX).unwrap_or(key);
        match f.shape.as_slice() {
            &[height, width, channels] if height > 0 && width > 0 && matches!(channels, 1 | 3 | 4) => {
                out.push(embodia_sim::ImageSpec { name: name.to_string(), height, width, channels })
            }
            other => {
                return Err((
                    format!("features.{key}.shape"),
                    format!("is {other:?}; expected [height, width, 1|3|4]"),
                ));
            }
        }
    }
    Ok(out)
}

/// The task table: `(task_index, task)` rows, at least one, from `meta/tasks.parquet` (or
/// v2.1's `meta/tasks.jsonl`).
fn read_tasks(root: &Path) -> Result<Vec<(i64, String)>, DatasetError> {
    let parquet_path = root.join(TASKS_PATH);
    let (path, tasks) = if parquet_path.exists() {
        let batches = read_parquet(&parquet_path, None)?;
        let mut tasks = Vec::new();
        for b in &batches {
            // pandas stores the `task` index as a column of that name (or `__index_level_0__`).
            let col = b
                .column_by_name("task")
                .or_else(|| b.column_by_name("__index_level_0__"))
                .ok_or_else(|| missing_column(&parquet_path, "task"))?;
            let values = columns::string_lists(col).map_err(|p| column_error(&parquet_path, "task", p, |_| None))?;
            let names: Vec<String> = values.into_iter().flatten().collect();
            let index = match b.column_by_name("task_index") {
                Some(c) => columns::ints(c).map_err(|p| column_error(&parquet_path, "task_index", p, |_| None))?,
                None => (tasks.len() as i64..(tasks.len() + names.len()) as i64).collect(),
            };
            tasks.extend(index.into_iter().zip(names));
        }
        (parquet_path, tasks)
    } else {
        let path = root.join(LEGACY_TASKS_PATH);
        let text =
            std::fs::read_to_string(&path).map_err(|cause| DatasetError::Io { path: parquet_path.clone(), cause })?;
        let mut tasks = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|cause| DatasetError::Json { path: path.clone(), cause })?;
            let task = v.get("task").and_then(|t| t.as_str()).ok_or_else(|| DatasetError::Meta {
                path: path.clone(),
                field: format!("line {}: task", i + 1),
                problem: "missing or not a string".into(),
            })?;
            let index = v.get("task_index").and_then(|t| t.as_i64()).unwrap_or(tasks.len() as i64);
            tasks.push((index, task.to_string()));
        }
        (path, tasks)
    };
    if tasks.is_empty() {
        return Err(DatasetError::Meta { path, field: "task".into(), problem: "no task".into() });
    }
    Ok(tasks)
}

/// What [`read_frames`] needs besides the file.
struct FrameContext<'a> {
    info: &'a Info,
    /// The task table, when episodes get their instruction from `task_index`.
    tasks: Option<&'a [(i64, String)]>,
    /// Image features to decode.
    cameras: &'a [embodia_sim::ImageSpec],
}

/// Decodes one PNG frame of `cam`, checking its size and channels.
fn decode_png(bytes: &[u8], cam: &embodia_sim::ImageSpec) -> Result<Vec<u8>, String> {
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info().map_err(|e| format!("PNG: {e}"))?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).map_err(|e| format!("PNG: {e}"))?;
    let channels = frame.color_type.samples();
    if (frame.height as usize, frame.width as usize, channels) != (cam.height, cam.width, cam.channels)
        || frame.bit_depth != png::BitDepth::Eight
    {
        return Err(format!(
            "image is {}x{}x{channels} ({:?} bits); info.json declares [{}, {}, {}] u8",
            frame.height, frame.width, frame.bit_depth, cam.height, cam.width, cam.channels
        ));
    }
    buf.truncate(frame.buffer_size());
    Ok(buf)
}

/// All rows of `meta/episodes/chunk-*/file-*.parquet`, in file order.
fn read_episode_table(root: &Path) -> Result<Vec<EpisodeMeta>, DatasetError> {
    let dir = root.join(EPISODES_DIR);
    let mut paths = Vec::new();
    for chunk in sorted_entries(&dir)?.into_iter().filter(|p| p.is_dir()) {
        paths.extend(sorted_entries(&chunk)?.into_iter().filter(|p| p.extension().is_some_and(|e| e == "parquet")));
    }
    if paths.is_empty() {
        return Err(DatasetError::Meta {
            path: dir,
            field: "episodes".into(),
            problem: "no episode table file".into(),
        });
    }
    let mut out: Vec<EpisodeMeta> = Vec::new();
    for path in paths {
        for b in read_parquet(&path, None)? {
            let int = |name: &str| -> Result<Vec<i64>, DatasetError> {
                let col = b.column_by_name(name).ok_or_else(|| missing_column(&path, name))?;
                columns::ints(col).map_err(|p| column_error(&path, name, p, |_| None))
            };
            let (index, length) = (int("episode_index")?, int("length")?);
            let (chunk, file) = (int("data/chunk_index")?, int("data/file_index")?);
            let (from, to) = (int("dataset_from_index")?, int("dataset_to_index")?);
            for r in 0..b.num_rows() {
                let e = EpisodeMeta {
                    index: index[r],
                    length: length[r],
                    data_file: (chunk[r], file[r]),
                    from: from[r],
                    to: to[r],
                };
                let bad = |problem: String| DatasetError::Column {
                    path: path.clone(),
                    column: "length".into(),
                    episode: Some(e.index),
                    problem,
                };
                if e.length <= 0 {
                    return Err(bad(format!("is {}; expected at least one frame", e.length)));
                }
                if e.to - e.from != e.length {
                    return Err(bad(format!(
                        "is {} but dataset_from_index..dataset_to_index is {}..{}",
                        e.length, e.from, e.to
                    )));
                }
                if out.iter().any(|o| o.index == e.index) {
                    return Err(DatasetError::Column {
                        path: path.clone(),
                        column: "episode_index".into(),
                        episode: Some(e.index),
                        problem: "appears twice in the episode table".into(),
                    });
                }
                out.push(e);
            }
        }
    }
    Ok(out)
}

/// Appends the frames of one data file to the episodes they belong to, checking them.
fn read_frames(
    path: &Path,
    ctx: &FrameContext,
    data_file: (i64, i64),
    episodes: &HashMap<i64, &EpisodeMeta>,
    partial: &mut BTreeMap<i64, Partial>,
) -> Result<(), DatasetError> {
    let info = ctx.info;
    // Every declared low-dimensional feature must be there, and every image feature; embodia
    // reads the ones it uses (video features are not read).
    let declared: Vec<&str> =
        info.features.iter().filter(|(_, f)| f.dtype != "video").map(|(n, _)| n.as_str()).collect();
    let width = |name: &str| info.features[name].width();
    for batch in read_parquet(path, Some(&declared))? {
        let col = |name: &str| batch.column_by_name(name).ok_or_else(|| missing_column(path, name));
        let episode_of = columns::ints(col(column::EPISODE_INDEX)?)
            .map_err(|p| column_error(path, column::EPISODE_INDEX, p, |_| None))?;
        let ep_at = |row: usize| episode_of.get(row).copied();
        let err = |name: &str| {
            let name = name.to_string();
            move |p: Problem| column_error(path, &name, p, ep_at)
        };
        let frame = columns::ints(col(column::FRAME_INDEX)?).map_err(err(column::FRAME_INDEX))?;
        let state = columns::floats(col(column::STATE)?, width(column::STATE)).map_err(err(column::STATE))?;
        let action = columns::floats(col(column::ACTION)?, width(column::ACTION)).map_err(err(column::ACTION))?;
        let optional = |name: &str| info.features.contains_key(name).then(|| col(name)).transpose();
        let env_state = optional(column::ENV_STATE)?
            .map(|c| columns::floats(c, width(column::ENV_STATE)).map_err(err(column::ENV_STATE)))
            .transpose()?;
        let reward =
            optional(column::REWARD)?.map(|c| columns::floats(c, 1).map_err(err(column::REWARD))).transpose()?;
        let done = optional(column::DONE)?.map(|c| columns::bools(c).map_err(err(column::DONE))).transpose()?;
        let success =
            optional(column::SUCCESS)?.map(|c| columns::bools(c).map_err(err(column::SUCCESS))).transpose()?;
        let index = optional(column::INDEX)?.map(|c| columns::ints(c).map_err(err(column::INDEX))).transpose()?;
        let task_index = match ctx.tasks {
            Some(_) => Some(columns::ints(col(column::TASK_INDEX)?).map_err(err(column::TASK_INDEX))?),
            None => None,
        };
        let mut images = Vec::with_capacity(ctx.cameras.len());
        for cam in ctx.cameras {
            let name = format!("{}{}", column::IMAGE_PREFIX, cam.name);
            let c = col(&name)?;
            let bytes = columns::image_bytes(c).map_err(err(&name))?;
            images.push((name, bytes));
        }

        let (od, ad) = (width(column::STATE), width(column::ACTION));
        for row in 0..batch.num_rows() {
            let e = episode_of[row];
            let fail = |column: &str, problem: String| DatasetError::Column {
                path: path.to_path_buf(),
                column: column.to_string(),
                episode: Some(e),
                problem,
            };
            let Some(m) = episodes.get(&e) else {
                return Err(fail(column::EPISODE_INDEX, "is not in the episode table".into()));
            };
            if m.data_file != data_file {
                let problem = format!("the episode table places this episode in data file {:?}", m.data_file);
                return Err(fail(column::EPISODE_INDEX, problem));
            }
            let p = partial.entry(e).or_default();
            if frame[row] != p.frames {
                return Err(fail(
                    column::FRAME_INDEX,
                    format!("is {} where frame {} was expected", frame[row], p.frames),
                ));
            }
            if let Some(index) = &index
                && index[row] != m.from + p.frames
            {
                let problem = format!(
                    "is {} at frame {}; expected dataset_from_index + frame = {}",
                    index[row],
                    p.frames,
                    m.from + p.frames
                );
                return Err(fail(column::INDEX, problem));
            }
            let obs = &state[row * od..(row + 1) * od];
            let act = &action[row * ad..(row + 1) * ad];
            let r = reward.as_ref().map_or(0.0, |r| r[row]);
            let sd = env_state.as_ref().map_or(0, |_| width(column::ENV_STATE));
            let env = env_state.as_ref().map_or(&[][..], |s| &s[row * sd..(row + 1) * sd]);
            for (name, values) in [
                (column::STATE, obs),
                (column::ENV_STATE, env),
                (column::ACTION, act),
                (column::REWARD, std::slice::from_ref(&r)),
            ] {
                if let Some(k) = values.iter().position(|v| !v.is_finite()) {
                    return Err(fail(name, format!("frame {}: value {k} is {}", p.frames, values[k])));
                }
            }
            p.episode.observations.extend_from_slice(obs);
            p.episode.states.extend_from_slice(env);
            p.episode.actions.extend_from_slice(act);
            p.episode.rewards.push(r);
            if let (Some(tasks), Some(ti)) = (ctx.tasks, &task_index) {
                let Some((_, text)) = tasks.iter().find(|(k, _)| *k == ti[row]) else {
                    return Err(fail(column::TASK_INDEX, format!("is {}, not a row of the task table", ti[row])));
                };
                if p.frames == 0 {
                    p.episode.instruction = Some(text.clone());
                } else if p.episode.instruction.as_deref() != Some(text.as_str()) {
                    return Err(fail(column::TASK_INDEX, format!("changes within the episode at frame {}", p.frames)));
                }
            }
            if p.episode.images.len() != ctx.cameras.len() {
                p.episode.images = vec![Vec::new(); ctx.cameras.len()];
            }
            for ((store, (name, bytes)), cam) in p.episode.images.iter_mut().zip(&images).zip(ctx.cameras) {
                let pixels = decode_png(&bytes[row], cam)
                    .map_err(|problem| fail(name, format!("frame {}: {problem}", p.frames)))?;
                store.extend_from_slice(&pixels);
            }
            // The last frame's flags are the episode's outcome.
            p.episode.terminated = done.as_ref().is_some_and(|d| d[row]);
            p.episode.success = success.as_ref().is_some_and(|s| s[row]);
            p.frames += 1;
        }
    }
    Ok(())
}

/// Reads a whole Parquet file; with `columns`, only those top-level columns (each must exist).
/// The parquet crate panics on some corrupt files (`not implemented: Type <UNKNOWN 131>`, found
/// by `embodia bench fuzz`): such a file is an error naming it, not a panic of the caller.
fn read_parquet(path: &Path, columns: Option<&[&str]>) -> Result<Vec<RecordBatch>, DatasetError> {
    embodia_robots::parser_panics::catch_parser_panic(|| read_parquet_unguarded(path, columns)).unwrap_or_else(
        |message| {
            let cause =
                parquet::errors::ParquetError::General(format!("corrupt file: the Parquet reader failed ({message})"));
            Err(DatasetError::Parquet { path: path.to_path_buf(), cause })
        },
    )
}

fn read_parquet_unguarded(path: &Path, columns: Option<&[&str]>) -> Result<Vec<RecordBatch>, DatasetError> {
    let file = Bytes::from(std::fs::read(path).map_err(io_err(path))?);
    check_footer_length(path, &file)?;
    let metadata_len = u32::from_le_bytes([0, 1, 2, 3].map(|i| file[file.len() - 8 + i])) as usize;
    let metadata = &file[file.len() - 8 - metadata_len..file.len() - 8];
    thrift_bounds::check_struct(metadata).map_err(|why| corrupt(path, &format!("its footer: {why}")))?;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(EndGuardedFile(file.clone())).map_err(pq_err(path))?;
    check_page_headers(path, &file, builder.metadata())?;
    if let Some(names) = columns {
        let schema = builder.schema().clone();
        let roots = names
            .iter()
            .map(|n| schema.index_of(n).map_err(|_| missing_column(path, n)))
            .collect::<Result<Vec<_>, _>>()?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    let reader = builder.build().map_err(pq_err(path))?;
    reader.map(|b| b.map_err(|e| DatasetError::Parquet { path: path.to_path_buf(), cause: e.into() })).collect()
}

/// Walks the page headers of every column chunk (as the reader will: a header, then its
/// compressed page) with [`thrift_bounds::check_page_header`], so that no header makes the
/// reader's work out of proportion to the file.
fn check_page_headers(path: &Path, file: &[u8], metadata: &ParquetMetaData) -> Result<(), DatasetError> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, column) in group.columns().iter().enumerate() {
            let (start, len) = column.byte_range();
            let end = start.checked_add(len).filter(|&e| e <= file.len() as u64);
            let chunk = end.map(|end| &file[start as usize..end as usize]).ok_or_else(|| {
                corrupt(path, &format!("row group {g}, column {c}: bytes {start}..+{len} lie past the end of the file"))
            })?;
            let mut pos = 0;
            while pos < chunk.len() {
                let (header, page) = thrift_bounds::check_page_header(&chunk[pos..]).map_err(|why| {
                    corrupt(
                        path,
                        &format!("row group {g}, column {c}, page header at byte {}: {why}", start as usize + pos),
                    )
                })?;
                let page = usize::try_from(page)
                    .map_err(|_| corrupt(path, &format!("row group {g}, column {c}: a page of {page} bytes")))?;
                pos = pos.saturating_add(header).saturating_add(page);
            }
        }
    }
    Ok(())
}

/// A [`DatasetError`] for a corrupt Parquet file, saying what is wrong.
fn corrupt(path: &Path, what: &str) -> DatasetError {
    let cause = parquet::errors::ParquetError::General(format!("corrupt file: {what}"));
    DatasetError::Parquet { path: path.to_path_buf(), cause }
}

/// Refuses a file whose footer (its last 8 bytes: the metadata's length, then `PAR1`) declares
/// more metadata than the file holds: the reader would allocate that much before finding out.
fn check_footer_length(path: &Path, file: &[u8]) -> Result<(), DatasetError> {
    let tail = file.len().checked_sub(8).map(|start| &file[start..]);
    let footer = tail.filter(|t| &t[4..] == b"PAR1");
    let declared = footer.map_or(0, |t| u64::from(u32::from_le_bytes([t[0], t[1], t[2], t[3]])));
    if footer.is_some() && declared + 8 <= file.len() as u64 {
        return Ok(());
    }
    let what = match footer {
        Some(_) => format!("{declared} bytes of metadata declared in a file of {} bytes", file.len()),
        None => "no Parquet footer (the file does not end with PAR1)".to_string(),
    };
    let cause = parquet::errors::ParquetError::General(format!("corrupt footer: {what}"));
    Err(DatasetError::Parquet { path: path.to_path_buf(), cause })
}

/// Reads at the end of the file one reader may make before it fails. A page header that
/// declares a list of billions of elements past the end of the file makes the parquet crate's
/// header parser read at the end once per element (found by `embodia bench fuzz`: a 58 kB file
/// took 65–99 s); a sound file's readers stop at the end at once.
const MAX_READS_AT_END: u32 = 64;

/// A Parquet file in memory whose readers fail after [`MAX_READS_AT_END`] reads at its end.
struct EndGuardedFile(Bytes);

impl Length for EndGuardedFile {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl ChunkReader for EndGuardedFile {
    type T = EndGuardedRead<bytes::buf::Reader<Bytes>>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(EndGuardedRead { inner: self.0.get_read(start)?, reads_at_end: 0 })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// A reader that counts its reads at the end and fails past [`MAX_READS_AT_END`].
struct EndGuardedRead<R> {
    inner: R,
    reads_at_end: u32,
}

impl<R: Read> Read for EndGuardedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        if read == 0 && !buf.is_empty() {
            self.reads_at_end += 1;
            if self.reads_at_end > MAX_READS_AT_END {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "corrupt file: a page header reads on past the end of the file",
                ));
            }
        }
        Ok(read)
    }
}

fn missing_column(path: &Path, name: &str) -> DatasetError {
    DatasetError::Column {
        path: path.to_path_buf(),
        column: name.to_string(),
        episode: None,
        problem: "missing".into(),
    }
}

fn column_error(path: &Path, name: &str, problem: Problem, episode_at: impl Fn(usize) -> Option<i64>) -> DatasetError {
    let (episode, problem) = match problem {
        Problem::Column(p) => (None, p),
        Problem::Row { row, problem } => (episode_at(row), problem),
    };
    DatasetError::Column { path: path.to_path_buf(), column: name.to_string(), episode, problem }
}

/// Entries of a directory, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, DatasetError> {
    let mut entries = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_err(dir))?;
    entries.sort();
    Ok(entries)
}
