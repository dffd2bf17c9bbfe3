//! Round trips through the LeRobot v3 layout, and malformed datasets rejected with errors that
//! name the file, column and episode.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, ListArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use embodia_dataset::{DatasetError, Demonstrations, Episode, WriteOptions, read, save, write};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A fresh empty directory under the target dir (tests run in parallel: one per test).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dataset-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `n` synthetic episodes of lengths 3, 4, 5, … with distinct values.
fn synthetic(n: usize) -> Demonstrations {
    let (od, ad) = (3, 2);
    let episodes = (0..n)
        .map(|e| {
            let len = 3 + e;
            let v = |k: usize, i: usize| (e * 1000 + k * 10 + i) as f32 * 0.25 - 3.0;
            Episode {
                observations: (0..len * od).map(|i| v(1, i)).collect(),
                actions: (0..len * ad).map(|i| v(2, i)).collect(),
                rewards: (0..len).map(|i| v(3, i)).collect(),
                success: e % 2 == 0,
                terminated: e % 3 != 1,
                ..Episode::default()
            }
        })
        .collect();
    Demonstrations {
        task: "synthetic".into(),
        fps: 20.0,
        obs_dim: od,
        action_dim: ad,
        episodes,
        cameras: Vec::new(),
        state_dim: 0,
    }
}

fn written(name: &str, demos: &Demonstrations) -> PathBuf {
    let dir = scratch(name).join("ds");
    save(demos, &dir, &WriteOptions::default(), false).unwrap();
    dir
}

fn data_file(dir: &Path) -> PathBuf {
    dir.join("data/chunk-000/file-000.parquet")
}

fn read_batch(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1, "test files are small: one batch");
    batches[0].clone()
}

/// Rewrites a Parquet file with `edit` applied to its single batch's columns.
fn rewrite(path: &Path, edit: impl FnOnce(&mut Vec<(Field, ArrayRef)>)) {
    let batch = read_batch(path);
    let mut cols: Vec<(Field, ArrayRef)> =
        batch.schema().fields().iter().map(|f| f.as_ref().clone()).zip(batch.columns().iter().cloned()).collect();
    edit(&mut cols);
    let schema = Arc::new(Schema::new(cols.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>()));
    let batch = RecordBatch::try_new(schema.clone(), cols.into_iter().map(|(_, a)| a).collect()).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `[rows, width]` f32 values as a variable-length list column with `lens[row]` values per row.
fn list_column(values: &[f32], lens: &[usize]) -> (Field, ArrayRef) {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let offsets = arrow_buffer::OffsetBuffer::from_lengths(lens.iter().copied());
    let array = ListArray::new(item.clone(), offsets, Arc::new(Float32Array::from(values.to_vec())), None);
    (Field::new("x", DataType::List(item), false), Arc::new(array))
}

fn column_err(err: DatasetError) -> (PathBuf, String, Option<i64>, String) {
    match err {
        DatasetError::Column { path, column, episode, problem } => (path, column, episode, problem),
        other => panic!("expected a column error, got {other:?}"),
    }
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn recorded_expert_episodes_round_trip_exactly() {
    let demos = embodia_sim::rapier::expert_runs::record_task_expert("pick-cube", None, 2, 2, 5).unwrap();
    assert_eq!(demos.episodes.len(), 2);
    let dir = written("recorded", &demos);
    let ds = read(&dir).unwrap();
    assert_eq!(ds.demonstrations, demos);
    assert_eq!(ds.stats, demos.norm_stats(), "stats.json holds the statistics of the data, exactly");
    assert_eq!(ds.info.codebase_version, "v3.0");
    assert_eq!(ds.info.total_episodes, 2);
    assert_eq!(ds.info.total_frames, demos.num_steps());
    assert_eq!(ds.info.fps as f32, demos.fps);
    assert!(ds.has_success());
    for f in ["meta/info.json", "meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
}

#[test]
fn environment_states_round_trip_and_nan_in_them_is_named() {
    use embodia_sim::rapier::task_config::{ObsKind, ObsTerm};
    let mut task = embodia_sim::task_config("pick-cube").unwrap();
    task.observations.critic = Some(vec![ObsTerm::of(ObsKind::ObjectPos), ObsTerm::of(ObsKind::EeToObject)]);
    let demos = embodia_sim::rapier::expert_runs::record_task_expert("pick-cube", Some(&task), 2, 2, 5).unwrap();
    assert_eq!(demos.state_dim, 6);
    assert!(demos.episodes.iter().all(|e| e.states.len() == 6 * e.len()));
    // The object's position differs from the hand-relative offset: two distinct terms recorded.
    assert_ne!(demos.episodes[0].states[0..3], demos.episodes[0].states[3..6]);
    let dir = written("env-state", &demos);
    let ds = read(&dir).unwrap();
    assert_eq!(ds.demonstrations, demos);
    assert_eq!(ds.info.features["observation.environment_state"].shape, vec![6]);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta/stats.json")).unwrap()).unwrap();
    assert_eq!(stats["observation.environment_state"]["mean"].as_array().map(Vec::len), Some(6));

    rewrite(&data_file(&dir), |cols| {
        let i = cols.iter().position(|(f, _)| f.name() == "observation.environment_state").unwrap();
        let list = cols[i].1.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        let mut v = list.values().as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec();
        let frame = demos.episodes[0].len() + 1; // episode 1, frame 1
        v[frame * 6 + 4] = f32::INFINITY;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        cols[i].1 = Arc::new(FixedSizeListArray::new(item, 6, Arc::new(Float32Array::from(v)), None));
    });
    let (_, column, episode, problem) = column_err(read(&dir).unwrap_err());
    assert_eq!(
        (column.as_str(), episode, problem.as_str()),
        ("observation.environment_state", Some(1), "frame 1: value 4 is inf")
    );
}

#[test]
fn episodes_split_over_files_and_chunks_round_trip() {
    let demos = synthetic(7);
    let dir = scratch("split").join("ds");
    // ~100 bytes a frame: a few episodes a file, two files a chunk.
    let options = WriteOptions { data_file_bytes: 600, chunks_size: 2, robot_type: Some("none".into()) };
    save(&demos, &dir, &options, false).unwrap();
    assert!(dir.join("data/chunk-001/file-000.parquet").is_file(), "a second chunk was started");
    let ds = read(&dir).unwrap();
    assert_eq!(ds.demonstrations, demos);
    assert_eq!(ds.info.robot_type.as_deref(), Some("none"));
    assert_eq!(ds.info.chunks_size, 2);
}

#[test]
fn frame_columns_follow_lerobot_conventions() {
    let demos = synthetic(3);
    let dir = written("conventions", &demos);
    let batch = read_batch(&data_file(&dir));
    let schema = batch.schema();
    let dtype = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    assert!(matches!(dtype("observation.state"), DataType::FixedSizeList(_, 3)));
    assert!(matches!(dtype("action"), DataType::FixedSizeList(_, 2)));
    assert_eq!(dtype("next.done"), DataType::Boolean);
    assert_eq!(dtype("timestamp"), DataType::Float32);
    assert_eq!(dtype("index"), DataType::Int64);
    let ints = |name: &str| {
        batch
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .values()
            .to_vec()
    };
    assert_eq!(ints("frame_index"), [0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4]);
    assert_eq!(ints("index"), (0..12).collect::<Vec<i64>>());
    let bools = |name: &str| {
        let a =
            batch.column_by_name(name).unwrap().as_any().downcast_ref::<arrow_array::BooleanArray>().unwrap().clone();
        (0..a.len()).filter(|&i| a.value(i)).collect::<Vec<_>>()
    };
    // Episode 0 succeeds and terminates; 1 neither; 2 both (see `synthetic`).
    assert_eq!(bools("next.success"), [2, 11]);
    assert_eq!(bools("next.done"), [2, 11]);
    let ts = batch.column_by_name("timestamp").unwrap().as_any().downcast_ref::<Float32Array>().unwrap().clone();
    assert_eq!(ts.value(4), 1.0 / 20.0);

    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta/info.json")).unwrap()).unwrap();
    assert_eq!(info["fps"], serde_json::json!(20));
    assert_eq!(info["data_path"], "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet");
    assert_eq!(info["features"]["observation.state"]["shape"], serde_json::json!([3]));
    assert_eq!(info["features"]["action"]["names"], serde_json::json!(["action_0", "action_1"]));
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta/stats.json")).unwrap()).unwrap();
    assert_eq!(stats["frame_index"]["max"], serde_json::json!([4.0]));
    assert_eq!(stats["action"]["count"], serde_json::json!([12]));

    let episodes = read_batch(&dir.join("meta/episodes/chunk-000/file-000.parquet"));
    for c in [
        "episode_index",
        "tasks",
        "length",
        "data/chunk_index",
        "data/file_index",
        "dataset_from_index",
        "dataset_to_index",
    ] {
        assert!(episodes.column_by_name(c).is_some(), "episode table column {c}");
    }
    let tasks = ParquetRecordBatchReaderBuilder::try_new(File::open(dir.join("meta/tasks.parquet")).unwrap()).unwrap();
    let pandas = tasks.schema().metadata().get("pandas").expect("pandas metadata: `task` is the frame's index");
    assert!(pandas.contains("\"index_columns\":[\"task\"]"), "{pandas}");
}

#[test]
fn a_rate_just_off_an_integer_is_written_as_that_integer() {
    // push-t's control rate, 1 / (0.01 s × 10) in f32, as the recorder computes it; LeRobot's
    // fps is an integer.
    let mut demos = synthetic(2);
    demos.fps = 1.0 / (std::hint::black_box(0.01f32) * 10.0);
    assert_ne!(demos.fps, 10.0);
    let dir = written("fps", &demos);
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta/info.json")).unwrap()).unwrap();
    assert_eq!(info["fps"], serde_json::json!(10));
    let ds = read(&dir).unwrap();
    assert_eq!(ds.demonstrations.fps, 10.0);
    assert_eq!(ds.demonstrations.episodes, demos.episodes);

    // A rate that is not an integer is kept.
    demos.fps = 12.5;
    let dir = written("fps-fraction", &demos);
    assert_eq!(read(&dir).unwrap().demonstrations.fps, 12.5);
}

#[test]
fn save_refuses_a_non_empty_directory_unless_told_to_replace_it() {
    let root = scratch("overwrite");
    let dir = root.join("ds");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let err = save(&synthetic(2), &dir, &WriteOptions::default(), false).unwrap_err();
    assert!(matches!(err, DatasetError::NotEmpty { .. }), "{err}");
    assert!(err.to_string().contains("--force"), "{err}");
    assert!(dir.join("notes.txt").is_file(), "left alone");

    // Told to replace it, it still refuses what is not a dataset: a directory of other files, a
    // file. Both are left as they were.
    let err = save(&synthetic(2), &dir, &WriteOptions::default(), true).unwrap_err();
    assert!(err.to_string().contains("a directory of 1 entries, not a dataset"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    let file = root.join("file");
    std::fs::write(&file, "mine").unwrap();
    let err = save(&synthetic(2), &file, &WriteOptions::default(), true).unwrap_err();
    assert!(matches!(err, DatasetError::NotADataset { .. }) && err.to_string().contains("is a file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    std::fs::remove_file(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    // A dataset is replaced whole.
    save(&synthetic(3), &dir, &WriteOptions::default(), false).unwrap();
    save(&synthetic(2), &dir, &WriteOptions::default(), true).unwrap();
    assert_eq!(read(&dir).unwrap().demonstrations, synthetic(2));
    let leftovers: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["ds"], "no temporary directory left behind");

    // A failed write leaves the existing dataset as it was.
    let mut bad = synthetic(3);
    bad.episodes[1].actions[0] = f32::NAN;
    let err = save(&bad, &dir, &WriteOptions::default(), true).unwrap_err();
    assert!(err.to_string().contains("episode 1: `action` value 0 is NaN"), "{err}");
    assert_eq!(read(&dir).unwrap().demonstrations, synthetic(2));
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1);
}

#[test]
fn missing_column_is_named_with_its_file() {
    let dir = written("missing-column", &synthetic(3));
    rewrite(&data_file(&dir), |cols| cols.retain(|(f, _)| f.name() != "action"));
    let (path, column, episode, problem) = column_err(read(&dir).unwrap_err());
    assert_eq!((path, column.as_str(), episode, problem.as_str()), (data_file(&dir), "action", None, "missing"));
}

#[test]
fn vector_of_the_wrong_length_in_one_episode_is_named() {
    let demos = synthetic(3);
    let dir = written("shape", &demos);
    // observation.state as a plain list (as some converted LeRobot datasets store it), with
    // one value missing from every row of episode 1 (rows 3..7).
    let lens: Vec<usize> = (0..12).map(|r| if (3..7).contains(&r) { 2 } else { 3 }).collect();
    let values: Vec<f32> = lens.iter().flat_map(|&n| vec![0.5; n]).collect();
    rewrite(&data_file(&dir), |cols| {
        let (field, array) = list_column(&values, &lens);
        cols[0] = (field.with_name("observation.state"), array);
    });
    let (_, column, episode, problem) = column_err(read(&dir).unwrap_err());
    assert_eq!((column.as_str(), episode), ("observation.state", Some(1)));
    assert_eq!(problem, "row has 2 values; info.json declares shape [3]");

    // The same list layout with the right lengths reads fine.
    let lens = vec![3; 12];
    rewrite(&data_file(&dir), |cols| {
        let (field, array) = list_column(&[0.5; 36], &lens);
        cols[0] = (field.with_name("observation.state"), array);
    });
    let ds = read(&dir).unwrap();
    assert_eq!(ds.demonstrations.episodes[2].observations, vec![0.5; 15]);
    assert_eq!(ds.demonstrations.episodes[2].actions, demos.episodes[2].actions);
}

#[test]
fn shape_declared_in_info_json_must_match_the_data() {
    let dir = written("declared-shape", &synthetic(2));
    edit_json(&dir.join("meta/info.json"), |v| v["features"]["action"]["shape"] = serde_json::json!([4]));
    let (_, column, episode, problem) = column_err(read(&dir).unwrap_err());
    assert_eq!((column.as_str(), episode), ("action", Some(0)));
    assert_eq!(problem, "rows have 2 values; info.json declares shape [4]");
}

#[test]
fn nan_is_named_with_column_episode_and_frame() {
    let dir = written("nan", &synthetic(3));
    rewrite(&data_file(&dir), |cols| {
        let i = cols.iter().position(|(f, _)| f.name() == "next.reward").unwrap();
        let mut r: Vec<f32> = cols[i].1.as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec();
        r[9] = f32::NAN; // episode 2, frame 2
        cols[i].1 = Arc::new(Float32Array::from(r));
    });
    let err = read(&dir).unwrap_err();
    let msg = err.to_string();
    let (_, column, episode, problem) = column_err(err);
    assert_eq!((column.as_str(), episode, problem.as_str()), ("next.reward", Some(2), "frame 2: value 0 is NaN"));
    assert!(
        msg.ends_with("data/chunk-000/file-000.parquet: column `next.reward`, episode 2: frame 2: value 0 is NaN"),
        "{msg}"
    );
}

#[test]
fn inconsistent_metadata_is_rejected() {
    let demos = synthetic(3);
    // Totals in info.json.
    let dir = written("meta-total", &demos);
    edit_json(&dir.join("meta/info.json"), |v| v["total_frames"] = serde_json::json!(13));
    let err = read(&dir).unwrap_err();
    assert!(matches!(&err, DatasetError::Meta { field, .. } if field == "total_frames"), "{err}");
    assert!(err.to_string().contains("is 13; the episode lengths sum to 12"), "{err}");

    // Another format version.
    let dir = written("meta-version", &demos);
    edit_json(&dir.join("meta/info.json"), |v| v["codebase_version"] = serde_json::json!("v2.1"));
    let err = read(&dir).unwrap_err();
    assert!(matches!(&err, DatasetError::Meta { field, .. } if field == "codebase_version"), "{err}");

    // A field info.json must have.
    let dir = written("meta-field", &demos);
    edit_json(&dir.join("meta/info.json"), |v| {
        v.as_object_mut().unwrap().remove("fps");
    });
    let err = read(&dir).unwrap_err();
    assert!(matches!(&err, DatasetError::Json { .. }) && err.to_string().contains("missing field `fps`"), "{err}");

    // An episode whose frames disagree with its length in the episode table.
    let dir = written("meta-length", &demos);
    rewrite(&dir.join("meta/episodes/chunk-000/file-000.parquet"), |cols| {
        for name in ["length", "dataset_to_index"] {
            let i = cols.iter().position(|(f, _)| f.name() == name).unwrap();
            let mut v = cols[i].1.as_any().downcast_ref::<arrow_array::Int64Array>().unwrap().values().to_vec();
            v[1] += 1;
            cols[i].1 = Arc::new(arrow_array::Int64Array::from(v));
        }
    });
    edit_json(&dir.join("meta/info.json"), |v| v["total_frames"] = serde_json::json!(13));
    let (_, column, episode, problem) = column_err(read(&dir).unwrap_err());
    assert_eq!((column.as_str(), episode), ("episode_index", Some(1)));
    assert_eq!(problem, "4 frames in the data file; the episode table says length 5");

    // Statistics of the wrong width.
    let dir = written("meta-stats", &demos);
    edit_json(&dir.join("meta/stats.json"), |v| v["action"]["std"] = serde_json::json!([1.0]));
    let err = read(&dir).unwrap_err();
    assert!(matches!(&err, DatasetError::Meta { field, .. } if field == "action.std"), "{err}");
}

#[test]
fn demonstrations_that_cannot_be_stored_are_refused() {
    let dir = scratch("refused");
    let mut demos = synthetic(2);
    demos.episodes[1].observations.pop();
    let err = write(&demos, &dir, &WriteOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot write demonstrations: episode 1: `observation.state` has 11 values; expected 4 steps × 3"
    );
    let empty = Demonstrations { episodes: vec![], ..synthetic(0) };
    assert!(write(&empty, &dir, &WriteOptions::default()).unwrap_err().to_string().contains("no episodes"));
}

#[test]
fn instructions_and_images_round_trip() {
    let mut d = synthetic(4);
    let cam = embodia_sim::ImageSpec { name: "front".into(), height: 3, width: 5, channels: 3 };
    d.cameras = vec![cam.clone()];
    for (e, ep) in d.episodes.iter_mut().enumerate() {
        ep.instruction = Some(["pick up the red cube", "push the blue cube to the left"][e % 2].to_string());
        ep.images = vec![(0..ep.len() * cam.len()).map(|i| (i * 7 + e * 31) as u8).collect()];
    }
    let dir = std::env::temp_dir().join(format!("embodia-ds-lang-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let info = save(&d, &dir, &WriteOptions::default(), false).unwrap();
    assert_eq!(info.total_tasks, 2);
    assert_eq!(info.features["observation.images.front"].shape, [3, 5, 3]);
    let back = read(&dir).unwrap();
    assert_eq!(back.demonstrations, d);
    // Image statistics as LeRobot has them: per channel, [3, 1, 1], in [0, 1].
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta/stats.json")).unwrap()).unwrap();
    let front = &stats["observation.images.front"];
    assert_eq!(front["mean"].as_array().unwrap().len(), 3);
    assert_eq!(front["count"], serde_json::json!([d.num_steps()]));
    let m = front["mean"][0][0][0].as_f64().unwrap();
    assert!(m > 0.0 && m < 1.0, "{front}");
    // Episodes without an instruction take the dataset's task; mismatched image sizes are named.
    let mut bad = d.clone();
    bad.episodes[1].images[0].pop();
    let e = save(&bad, &dir, &WriteOptions::default(), true).unwrap_err().to_string();
    assert!(e.contains("episode 1") && e.contains("front"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Parquet footer that declares more metadata than the file holds is refused by name before
/// the reader allocates what it declares; a file without the `PAR1` trailer likewise.
#[test]
fn a_footer_declaring_more_than_the_file_holds_is_refused() {
    let dir = written("footer", &synthetic(2));
    let path = data_file(&dir);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = embodia_dataset::read(&dir).unwrap_err().to_string();
    assert!(
        e.contains(&path.display().to_string()) && e.contains("corrupt footer: 4294967295 bytes of metadata"),
        "{e}"
    );
    std::fs::write(&path, &bytes[..n - 2]).unwrap();
    let e = embodia_dataset::read(&dir).unwrap_err().to_string();
    assert!(e.contains("does not end with PAR1"), "{e}");
}

/// Parquet files (found by `embodia bench fuzz`, shipped under `tests/data/`) whose Thrift
/// structures declare a list of billions of elements: in a page header, past the end of the file (the parquet crate's header
/// parser read at the end once per element, 65–99 s for 58 kB), or of booleans, which the parser
/// skips without reading a byte (in the footer; 0.34 s of CPU, and a list of such lists would take
/// hours). Both are refused by name before the reader parses them.
#[test]
fn a_page_header_declaring_more_elements_than_bytes_is_refused() {
    for (name, file) in [
        ("past-the-end", "tests/data/page-header-past-the-end.parquet"),
        ("bool-list", "tests/data/page-header-bool-list.parquet"),
    ] {
        let dir = written(&format!("page-header-{name}"), &synthetic(2));
        let path = data_file(&dir);
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(file), &path).unwrap();
        let e = embodia_dataset::read(&dir).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("more list elements and fields than"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A Parquet file (found by mutation, shipped under `tests/data/`) whose embedded Arrow schema
/// makes the arrow crate panic ("Int type with bit width of 6291520 … not supported"): the
/// panic is an error naming the file, and a panic hook can tell it will be one.
#[test]
fn a_panic_of_the_parquet_reader_is_an_error_naming_the_file() {
    let dir = written("arrow-panic", &synthetic(2));
    let path = data_file(&dir);
    let corrupt = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/arrow-schema-panic.parquet");
    std::fs::copy(&corrupt, &path).unwrap();
    let flagged = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = flagged.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |_| {
        if embodia_robots::parser_panics::panic_becomes_error() {
            seen.store(true, Ordering::SeqCst);
        }
    }));
    let e = embodia_dataset::read(&dir).unwrap_err().to_string();
    std::panic::set_hook(previous);
    assert!(e.contains(&path.display().to_string()) && e.contains("the Parquet reader failed"), "{e}");
    assert!(flagged.load(Ordering::SeqCst), "the hook must see the panic as one that becomes an error");
    assert!(!embodia_robots::parser_panics::panic_becomes_error(), "the flag must be cleared after the read");
    let _ = std::fs::remove_dir_all(&dir);
}
