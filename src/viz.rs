//! The rerun viewer: training metrics as scalars (`train --viz`, `--viz-save`), recorded
//! evaluation episodes (`eval --record-episodes`) and `embodia view`.
//!
//! Logging needs the cargo feature `rerun` (off by default: the SDK's clean build costs about as
//! much as the rest of embodia together). Without it, [`MetricsRecorder::new`] and
//! [`record_episodes`] fail with [`VizError::NotBuilt`]; [`view`] works either way, since it
//! only starts the viewer.
//!
//! The SDK is pinned (`rerun = "=0.36.3"`) and `.rrd` files are versioned: open them with the
//! same viewer version, `pip install rerun-sdk==0.36.3` ([`VIEWER_INSTALL`]).
//!
//! An episode recording (`episodes.rrd`) has one entity tree per episode:
//!
//! ```text
//! /episode_<k>/world/<body>               Transform3D per step (robot/<link>, objects/<name>, goal),
//!                                        static for fixed bodies (table, ground)
//! /episode_<k>/world/<body>/visual_<j>    the body's visual shapes, static: Boxes3D, Ellipsoids3D,
//!                                        Cylinders3D, Capsules3D or Mesh3D, placed by Transform3D
//! /episode_<k>/world/<marker>             Points3D per step (target)
//! /episode_<k>/observation/<i>            Scalars per step, the observation acted on
//! /episode_<k>/action/<i>                 Scalars per step, the action taken
//! /episode_<k>/reward, return, success    Scalars per step, after the step
//! ```
//!
//! on two timelines, `env_step` (sequence, 0 at reset) and `sim_time` (seconds of simulated
//! time). Poses are logged for steps `0..length`: the state after the last step is not
//! observable, because environments reset automatically when an episode ends.

use std::path::{Path, PathBuf};

/// The command that installs the matching viewer.
pub const VIEWER_INSTALL: &str = "pip install rerun-sdk==0.36.3";

/// Environment variable naming the `rerun` executable (default: `rerun` from `PATH`).
pub const RERUN_BIN_VAR: &str = "EMBODIA_RERUN";

/// File name of episode recordings inside a run directory.
pub const EPISODES_FILE: &str = "episodes.rrd";

/// Fails with [`VizError::NotBuilt`] naming `what` unless this binary records with rerun: what
/// a command checks before the work it would record.
pub fn check_built(what: &'static str) -> Result<(), VizError> {
    if cfg!(feature = "rerun") { Ok(()) } else { Err(VizError::NotBuilt(what)) }
}

/// Errors of recording and viewing.
#[derive(Debug, thiserror::Error)]
pub enum VizError {
    /// The binary was built without the `rerun` feature.
    #[error(
        "{0} needs rerun logging, but this embodia binary was built without the `rerun` feature; rebuild with `cargo build --release --features rerun` (and install the viewer: {VIEWER_INSTALL})"
    )]
    NotBuilt(&'static str),
    /// The viewer executable is not installed.
    #[error(
        "the rerun viewer (`{0}`) was not found; install it with `{VIEWER_INSTALL}` (or `bash bench/rerun_venv.sh`), or point {RERUN_BIN_VAR} at it"
    )]
    NoViewer(String),
    /// The rerun SDK failed (file, connection, viewer).
    #[error("rerun: {0}")]
    Rerun(String),
    /// A run could not be loaded or stepped.
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Where training metrics go.
#[derive(Debug, Clone, PartialEq)]
pub enum VizTarget {
    /// A viewer: connect to a running one, or spawn one.
    Viewer,
    /// An `.rrd` file.
    File(PathBuf),
}

/// The `rerun` executable: `$EMBODIA_RERUN` or `rerun`.
pub fn rerun_executable() -> String {
    std::env::var(RERUN_BIN_VAR).ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "rerun".into())
}

/// Summary of a recording of evaluation episodes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpisodeRecording {
    /// The `.rrd` file.
    pub path: PathBuf,
    /// Length of each episode, env steps.
    pub lengths: Vec<u32>,
    /// Return of each episode.
    pub returns: Vec<f32>,
    /// Whether each episode succeeded.
    pub successes: Vec<bool>,
    /// Whether the task had a scene to draw (bodies and transforms were logged).
    pub has_scene: bool,
}

/// Opens the viewer on every `.rrd` file in `dir` (or on `dir` itself if it is a file); waits
/// for the viewer to close.
pub fn view(dir: &Path) -> Result<(), VizError> {
    let io = |e: std::io::Error| VizError::Io { path: dir.display().to_string(), message: e.to_string() };
    let files: Vec<PathBuf> = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "rrd"))
            .collect();
        files.sort();
        files
    };
    if files.is_empty() {
        return Err(VizError::Io {
            path: dir.display().to_string(),
            message: format!(
                "has no recordings (.rrd files); make one with `embodia eval --run {0} --record-episodes 3` or `embodia train --viz-save {0}/train.rrd`",
                dir.display()
            ),
        });
    }
    let exe = rerun_executable();
    let status = std::process::Command::new(&exe).args(&files).status().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => VizError::NoViewer(exe.clone()),
        _ => VizError::Rerun(format!("starting `{exe}`: {e}")),
    })?;
    if !status.success() {
        return Err(VizError::Rerun(format!("`{exe}` exited with {status}")));
    }
    Ok(())
}

#[cfg(feature = "rerun")]
pub use imp::{MetricsRecorder, record_episodes};

#[cfg(not(feature = "rerun"))]
pub use stub::{MetricsRecorder, record_episodes};

#[cfg(not(feature = "rerun"))]
mod stub {
    use super::*;
    use embodia_algos::{Learner, MetricRow, MetricSink};

    /// Training metrics as rerun scalars (needs the `rerun` feature).
    pub struct MetricsRecorder(());

    impl MetricsRecorder {
        /// Fails: built without the `rerun` feature.
        pub fn new(_target: &VizTarget, _run_name: &str) -> Result<Self, VizError> {
            Err(VizError::NotBuilt("`--viz`/`--viz-save`"))
        }

        /// Nothing to flush.
        pub fn finish(self) -> Result<(), VizError> {
            Ok(())
        }
    }

    impl MetricSink for MetricsRecorder {
        fn record(&mut self, _row: &MetricRow) {}
    }

    /// Fails: built without the `rerun` feature.
    pub fn record_episodes(
        _learner: &dyn Learner,
        _config: &crate::config::TrainConfig,
        _episodes: usize,
        _out: &Path,
    ) -> Result<EpisodeRecording, VizError> {
        Err(VizError::NotBuilt("`--record-episodes`"))
    }
}

#[cfg(feature = "rerun")]
mod imp {
    use super::*;
    use embodia_algos::{Learner, MetricRow, MetricSink};
    use embodia_sim::view::{Geometry, Shape, ViewPose};
    use re_sdk::{RecordingStream, RecordingStreamBuilder, SpawnOptions};
    use re_sdk_types::archetypes::{
        Boxes3D, Capsules3D, Cylinders3D, Ellipsoids3D, Image, Mesh3D, Points3D, Scalars, Tensor, TextDocument,
        Transform3D, ViewCoordinates,
    };
    use re_sdk_types::components::{Color, FillMode};
    use re_sdk_types::datatypes::{Quaternion, TensorBuffer, TensorData};

    fn rr_err(e: impl std::fmt::Display) -> VizError {
        VizError::Rerun(e.to_string())
    }

    fn open(target: &VizTarget, name: &str) -> Result<RecordingStream, VizError> {
        let builder = RecordingStreamBuilder::new("embodia").recording_name(name);
        match target {
            VizTarget::File(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| VizError::Io { path: parent.display().to_string(), message: e.to_string() })?;
                }
                builder
                    .save(path)
                    .map_err(|e| VizError::Io { path: path.display().to_string(), message: e.to_string() })
            }
            VizTarget::Viewer => {
                let exe = rerun_executable();
                let opts = SpawnOptions { executable_name: exe.clone(), ..Default::default() };
                builder.spawn_opts(&opts).map_err(|e| {
                    let text = e.to_string();
                    if text.contains("not found") || text.contains("No such file") {
                        VizError::NoViewer(exe)
                    } else {
                        rr_err(text)
                    }
                })
            }
        }
    }

    /// Training metrics as rerun scalars under `train/<metric>`, on the timelines `env_steps`
    /// and `wall_time`.
    pub struct MetricsRecorder {
        rec: RecordingStream,
        /// The first error, reported once by [`MetricsRecorder::finish`].
        error: Option<String>,
    }

    impl MetricsRecorder {
        /// Opens the viewer or the file.
        pub fn new(target: &VizTarget, run_name: &str) -> Result<Self, VizError> {
            Ok(Self { rec: open(target, run_name)?, error: None })
        }

        /// Flushes the recording; reports the first logging error, if any.
        pub fn finish(self) -> Result<(), VizError> {
            self.rec.flush_blocking().map_err(rr_err)?;
            match self.error {
                Some(e) => Err(VizError::Rerun(e)),
                None => Ok(()),
            }
        }
    }

    impl MetricSink for MetricsRecorder {
        fn record(&mut self, row: &MetricRow) {
            self.rec.set_time_sequence("env_steps", row.env_steps as i64);
            self.rec.set_duration_secs("wall_time", row.wall_seconds);
            let fields = [
                ("return_mean", row.return_mean),
                ("return_min", row.return_min),
                ("return_max", row.return_max),
                ("episode_length", row.episode_length),
                ("success_rate", row.success_rate),
                ("policy_loss", row.policy_loss),
                ("value_loss", row.value_loss),
                ("entropy", row.entropy),
                ("alpha", row.alpha),
                ("kl", row.kl),
                ("learning_rate", row.learning_rate),
                ("fps", row.fps),
                ("aux_loss", row.aux_loss),
                ("val_loss", row.val_loss),
                ("val_aux_loss", row.val_aux_loss),
                ("clip_fraction", row.clip_fraction),
                ("mixed_groups", row.mixed_groups),
            ];
            for (name, value) in fields {
                if let Some(v) = value.filter(|v| v.is_finite())
                    && let Err(e) = self.rec.log(format!("train/{name}"), &Scalars::single(v))
                {
                    self.error.get_or_insert(e.to_string());
                }
            }
        }
    }

    fn color(rgba: Option<[f32; 4]>) -> Color {
        let [r, g, b, a] = rgba.unwrap_or([0.6, 0.6, 0.65, 1.0]).map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
        Color::from_unmultiplied_rgba(r, g, b, a)
    }

    fn transform(p: &ViewPose) -> Transform3D {
        Transform3D::from_translation_rotation(p.translation, Quaternion::from_xyzw(p.rotation))
    }

    /// Logs one visual shape (static) at `path`: its placement and its primitive or mesh.
    fn log_shape(rec: &RecordingStream, path: &str, shape: &Shape) -> Result<(), VizError> {
        let origin = ViewPose::from_urdf(&shape.origin);
        rec.log_static(path, &transform(&origin)).map_err(rr_err)?;
        let c = color(shape.rgba);
        let solid = FillMode::Solid;
        let f = |v: f64| v as f32;
        let logged = match &shape.geometry {
            Geometry::Box { size } => rec.log_static(
                path,
                &Boxes3D::from_half_sizes([[f(size[0]) / 2.0, f(size[1]) / 2.0, f(size[2]) / 2.0]])
                    .with_colors([c])
                    .with_fill_mode(solid),
            ),
            Geometry::Sphere { radius } => {
                rec.log_static(path, &Ellipsoids3D::from_radii([f(*radius)]).with_colors([c]).with_fill_mode(solid))
            }
            Geometry::Cylinder { radius, length } => rec.log_static(
                path,
                &Cylinders3D::from_lengths_and_radii([f(*length)], [f(*radius)]).with_colors([c]).with_fill_mode(solid),
            ),
            // rerun's capsule runs from its origin along +z; URDF's is centred.
            Geometry::Capsule { radius, length } => rec.log_static(
                path,
                &Capsules3D::from_lengths_and_radii([f(*length)], [f(*radius)])
                    .with_translations([[0.0, 0.0, -f(*length) / 2.0]])
                    .with_colors([c])
                    .with_fill_mode(solid),
            ),
            Geometry::Mesh { data, .. } => rec.log_static(
                path,
                &Mesh3D::new(data.vertices.iter().copied())
                    .with_triangle_indices(data.triangles.iter().copied())
                    .with_vertex_colors(std::iter::repeat_n(c, data.vertices.len())),
            ),
        };
        logged.map_err(rr_err)
    }

    /// Entity paths of one episode, built once.
    struct EpisodePaths {
        bodies: Vec<String>,
        markers: Vec<String>,
        obs: Vec<String>,
        action: Vec<String>,
        /// One per camera of the environment (VLA runs render the cameras their model reads).
        cameras: Vec<String>,
        instruction: String,
        action_chunk: String,
        reward: String,
        ret: String,
        success: String,
    }

    /// Runs `episodes` deterministic evaluation episodes of `learner` (the episodes
    /// `embodia eval` runs first, same seed) and records them into `out`: the scene, the
    /// observation, the action, rewards and success, and where there are any the camera views,
    /// the instruction and each action chunk as the policy produced it (a `[C, D]` tensor).
    pub fn record_episodes(
        learner: &dyn Learner,
        config: &crate::config::TrainConfig,
        episodes: usize,
        out: &Path,
    ) -> Result<EpisodeRecording, VizError> {
        let mut env = crate::run::make_env(config, episodes)?;
        let name = out.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let rec = open(&VizTarget::File(out.to_path_buf()), &format!("{name} episodes"))?;
        rec.log_static("/", &ViewCoordinates::RIGHT_HAND_Z_UP()).map_err(rr_err)?;
        let od = env.obs_spec().vector.dim();
        let ad = env.action_spec().bounds.dim();
        env.reset(config.seed + crate::run::EVAL_SEED_OFFSET);
        let bodies = env.scene_view().map(|v| v.bodies()).unwrap_or_default();
        let dt = env.scene_view().map_or(1.0, |v| v.step_seconds()) as f64;
        let mut markers = Vec::new();
        let paths: Vec<EpisodePaths> = (0..episodes)
            .map(|k| {
                let e = format!("episode_{k}");
                if let Some(view) = env.scene_view() {
                    view.markers(k, &mut markers);
                }
                EpisodePaths {
                    bodies: bodies.iter().map(|b| format!("{e}/world/{}", b.path)).collect(),
                    markers: markers.iter().map(|m| format!("{e}/world/{}", m.path)).collect(),
                    obs: (0..od).map(|i| format!("{e}/observation/{i}")).collect(),
                    action: (0..ad).map(|i| format!("{e}/action/{i}")).collect(),
                    cameras: env.obs_spec().images.iter().map(|c| format!("{e}/camera/{}", c.name)).collect(),
                    instruction: format!("{e}/instruction"),
                    action_chunk: format!("{e}/action_chunk"),
                    reward: format!("{e}/reward"),
                    ret: format!("{e}/return"),
                    success: format!("{e}/success"),
                }
            })
            .collect();
        for p in &paths {
            for (body, path) in bodies.iter().zip(&p.bodies) {
                for (j, shape) in body.shapes.iter().enumerate() {
                    log_shape(&rec, &format!("{path}/visual_{j}"), shape)?;
                }
            }
        }
        let has_success = env.info().has_success;
        let mut actions = vec![0.0f32; episodes * ad];
        let mut finished = vec![false; episodes];
        let mut lengths = vec![0u32; episodes];
        let mut returns = vec![0.0f32; episodes];
        let mut successes = vec![false; episodes];
        let mut poses = Vec::new();
        let mut step: i64 = 0;
        let mut queue = embodia_algos::ActionQueue::new(learner, episodes, ad);
        while finished.iter().any(|f| !f) {
            queue.step(learner, env.as_ref(), &mut actions, None).map_err(crate::run::RunError::from)?;
            // The state acted on, the observation and the action, at `step`.
            rec.set_time_sequence("env_step", step);
            rec.set_duration_secs("sim_time", step as f64 * dt);
            for (k, p) in paths.iter().enumerate() {
                if finished[k] {
                    continue;
                }
                if let Some(view) = env.scene_view() {
                    view.poses(k, &mut poses);
                    for ((body, path), pose) in bodies.iter().zip(&p.bodies).zip(&poses) {
                        if !body.fixed || step == 0 {
                            let t = transform(pose);
                            let logged =
                                if body.fixed { rec.log_static(path.as_str(), &t) } else { rec.log(path.as_str(), &t) };
                            logged.map_err(rr_err)?;
                        }
                    }
                    view.markers(k, &mut markers);
                    for (m, path) in markers.iter().zip(&p.markers) {
                        rec.log(
                            path.as_str(),
                            &Points3D::new([m.position]).with_radii([m.radius]).with_colors([color(Some(m.rgba))]),
                        )
                        .map_err(rr_err)?;
                    }
                }
                let obs = &env.buffers().obs[k * od..(k + 1) * od];
                for (path, &v) in p.obs.iter().zip(obs) {
                    rec.log(path.as_str(), &Scalars::single(v as f64)).map_err(rr_err)?;
                }
                for (path, &v) in p.action.iter().zip(&actions[k * ad..(k + 1) * ad]) {
                    rec.log(path.as_str(), &Scalars::single(v as f64)).map_err(rr_err)?;
                }
                for (camera, (path, spec)) in p.cameras.iter().zip(&env.obs_spec().images).enumerate() {
                    let Some(images) = env.image(camera) else { continue };
                    let pixels = images[k * spec.len()..(k + 1) * spec.len()].to_vec();
                    let image = Image::from_rgb24(pixels, [spec.width as u32, spec.height as u32]);
                    rec.log(path.as_str(), &image).map_err(rr_err)?;
                }
                if step == 0
                    && let Some(text) = env.instruction(k)
                {
                    rec.log(p.instruction.as_str(), &TextDocument::new(text)).map_err(rr_err)?;
                }
                if queue.started_chunk() && queue.chunk_len() > 1 {
                    let chunk = queue.chunk_of(k).to_vec();
                    let data =
                        TensorData::new(vec![queue.chunk_len() as u64, ad as u64], TensorBuffer::F32(chunk.into()));
                    let tensor = Tensor::new(data).with_dim_names(["chunk_step", "action"]);
                    rec.log(p.action_chunk.as_str(), &tensor).map_err(rr_err)?;
                }
            }
            env.step(&actions).map_err(crate::run::RunError::from)?;
            step += 1;
            // What the step earned, at `step`.
            rec.set_time_sequence("env_step", step);
            rec.set_duration_secs("sim_time", step as f64 * dt);
            let b = env.buffers();
            for (k, p) in paths.iter().enumerate() {
                if finished[k] {
                    continue;
                }
                returns[k] += b.reward[k];
                rec.log(p.reward.as_str(), &Scalars::single(b.reward[k] as f64)).map_err(rr_err)?;
                rec.log(p.ret.as_str(), &Scalars::single(returns[k] as f64)).map_err(rr_err)?;
                if has_success {
                    rec.log(p.success.as_str(), &Scalars::single(b.success[k] as f64)).map_err(rr_err)?;
                }
                if b.done(k) {
                    finished[k] = true;
                    lengths[k] = b.episode_length[k];
                    returns[k] = b.episode_return[k];
                    successes[k] = b.success[k] > 0.0;
                }
            }
        }
        rec.flush_blocking().map_err(rr_err)?;
        drop(rec);
        Ok(EpisodeRecording { path: out.to_path_buf(), lengths, returns, successes, has_scene: !bodies.is_empty() })
    }
}
