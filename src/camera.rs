//! Camera images of rapier tasks for people and benchmarks: `embodia render-camera` (a PNG
//! of what every camera sees, colour and depth, in a few environments) and `embodia bench
//! render` (images per second).

use std::path::Path;
use std::time::Instant;

use embodia_sim::VecEnv;
use embodia_sim::camera::{CameraEnv, CameraImages, Randomization, RenderConfig};
use serde::Serialize;

use crate::run::RunError;

/// The default cameras of rapier task `task` at `res × res` pixels, with the visual
/// randomization used when `randomize` is set (colours, light, camera jitter, 3 distractors).
pub fn task_cameras(task: &str, res: usize, randomize: bool) -> Result<RenderConfig, RunError> {
    let Some(config) = embodia_sim::task_config(task) else {
        let valid: Vec<String> = embodia_sim::rapier::rapier_tasks().iter().map(|t| t.info.name.to_string()).collect();
        return Err(RunError::Io {
            path: format!("--task {task}"),
            message: format!("cameras need a rapier task; rapier tasks: {}", valid.join(", ")),
        });
    };
    let mut cameras = RenderConfig::for_task(&config, res, res);
    if randomize {
        cameras.randomization = Randomization {
            color_jitter: 0.08,
            random_object_colors: true,
            light_cone_deg: 35.0,
            light_intensity: Some([0.45, 0.9]),
            camera_position: 0.02,
            camera_rotation_deg: 2.0,
            distractors: 3,
            ..cameras.randomization
        };
    }
    Ok(cameras)
}

/// Depth mapped to grey, near bright: `near` → 255, `far` and beyond → 0.
fn depth_to_grey(d: f32, near: f32, far: f32) -> u8 {
    (255.0 * (1.0 - ((d - near) / (far - near)).clamp(0.0, 1.0))) as u8
}

/// Writes a PNG of `images` for the first `envs` environments: one row per environment, and
/// for each camera its colour image and its depth (grey, near bright over `[0, depth_range]` m).
pub fn write_png(images: &[CameraImages], envs: usize, depth_range: f32, out: &Path) -> Result<(), RunError> {
    let err = |e: &dyn std::fmt::Display| RunError::Io { path: out.display().to_string(), message: e.to_string() };
    const GAP: usize = 4;
    let width: usize = images.iter().map(|c| 2 * c.width + 2 * GAP).sum();
    let height: usize = envs * (images.iter().map(|c| c.height).max().unwrap_or(0) + GAP);
    let row_height = height / envs.max(1);
    let mut pixels = vec![255u8; width * height * 3];
    for env in 0..envs {
        let mut x0 = 0;
        for c in images {
            let (rgb, depth) = (c.rgb_of(env), c.depth_of(env));
            for y in 0..c.height {
                for x in 0..c.width {
                    let i = y * c.width + x;
                    let o = ((env * row_height + y) * width + x0 + x) * 3;
                    pixels[o..o + 3].copy_from_slice(&rgb[3 * i..3 * i + 3]);
                    let g = depth_to_grey(depth[i], 0.0, depth_range);
                    let o = o + (c.width + GAP) * 3;
                    pixels[o..o + 3].copy_from_slice(&[g, g, g]);
                }
            }
            x0 += 2 * c.width + 2 * GAP;
        }
    }
    let file = std::fs::File::create(out).map_err(|e| err(&e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width as u32, height as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| err(&e))?;
    writer.write_image_data(&pixels).map_err(|e| err(&e))?;
    writer.finish().map_err(|e| err(&e))
}

/// Makes `envs` environments of `task` with cameras, resets them with `seed`, takes `steps`
/// steps of zero action, and writes what the cameras see into the PNG `out`. Returns the camera
/// names.
pub fn render_task(
    task: &str,
    envs: usize,
    res: usize,
    randomize: bool,
    seed: u64,
    steps: usize,
    out: &Path,
) -> Result<Vec<String>, RunError> {
    let cameras = task_cameras(task, res, randomize)?;
    let mut env = CameraEnv::new(embodia_sim::make(task, envs)?, cameras)?;
    env.reset(seed);
    let actions = vec![0.0f32; envs * env.action_spec().bounds.dim()];
    for _ in 0..steps {
        env.step(&actions)?;
    }
    write_png(env.images(), envs, 2.0, out)?;
    Ok(env.images().iter().map(|c| c.name.clone()).collect())
}

/// Rendering throughput of one batch.
#[derive(Debug, Clone, Serialize)]
pub struct RenderThroughput {
    /// Task.
    pub task: String,
    /// Environments in the batch.
    pub envs: usize,
    /// Image side, pixels.
    pub res: usize,
    /// Cameras per environment.
    pub cameras: usize,
    /// rayon worker threads.
    pub threads: usize,
    /// Batch renders timed.
    pub frames: usize,
    /// Images (one camera, one environment, colour and depth) per wall second of rendering.
    pub images_per_s: f64,
    /// Wall milliseconds to render every camera of every environment once.
    pub ms_per_batch: f64,
}

/// Times `frames` renders of all cameras of `envs` environments of `task` at `res × res` on
/// `threads` threads. Between renders the physics takes a step of random actions (untimed), so
/// robots, objects and episode resets change what is drawn; only rendering is timed.
pub fn render_throughput(
    task: &str,
    envs: usize,
    res: usize,
    only: Option<&str>,
    randomize: bool,
    threads: usize,
    frames: usize,
) -> Result<RenderThroughput, RunError> {
    use embodia_sim::camera::Cameras;
    use rand::{Rng, SeedableRng};
    let mut config = task_cameras(task, res, randomize)?;
    if let Some(name) = only {
        config.cameras.retain(|c| c.name == name);
        if config.cameras.is_empty() {
            return Err(RunError::Io { path: format!("--camera {name}"), message: "no camera of that name".into() });
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| RunError::Io { path: "rayon thread pool".into(), message: e.to_string() })?;
    pool.install(|| {
        let mut env = embodia_sim::make(task, envs)?;
        let view = env.scene_view().expect("rapier tasks have a view");
        let mut cameras = Cameras::new(&view.bodies(), config.clone(), envs)?;
        cameras.reset(1);
        let bounds = env.action_spec().bounds.clone();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut actions = vec![0.0f32; envs * bounds.dim()];
        let mut seconds = 0.0;
        for frame in 0..=frames {
            for (i, a) in actions.iter_mut().enumerate() {
                let k = i % bounds.dim();
                *a = rng.random_range(bounds.low[k].max(-1.0)..=bounds.high[k].min(1.0));
            }
            env.step(&actions)?;
            for i in 0..envs {
                if env.buffers().done(i) {
                    cameras.randomize(i);
                }
            }
            let start = Instant::now();
            cameras.render(env.scene_view().expect("rapier tasks have a view"))?;
            // The first render warms caches and the pool; it is not counted.
            if frame > 0 {
                seconds += start.elapsed().as_secs_f64();
            }
        }
        let n = config.cameras.len();
        Ok(RenderThroughput {
            task: task.to_string(),
            envs,
            res,
            cameras: n,
            threads,
            frames,
            images_per_s: (frames * envs * n) as f64 / seconds,
            ms_per_batch: 1e3 * seconds / frames as f64,
        })
    })
}
