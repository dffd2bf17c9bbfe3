//! A small software renderer for pictures of episodes without a viewer: frames of one episode
//! drawn from the poses the simulator's [`SceneView`] reports (the same poses an episode
//! recording logs), as flat-shaded polygons in perspective, painter's order, side by side in
//! one PNG (`embodia eval … --render FILE.png`).

use std::path::Path;

use embodia_sim::VecEnv;
use embodia_sim::view::{Geometry, Marker, SceneView, Shape, ViewPose, VisualBody};
use plotters::prelude::*;

use crate::plot::PlotError;

/// Pixel size of one frame.
pub const FRAME_SIZE: (u32, u32) = (480, 400);

/// The state of a scene at one step.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Environment step.
    pub step: u32,
    /// Simulated time, s.
    pub time: f32,
    /// World pose of each body.
    pub poses: Vec<ViewPose>,
    /// Targets and goals.
    pub markers: Vec<Marker>,
}

impl Frame {
    /// Captures environment `env` of `view` at `step`.
    pub fn capture(view: &dyn SceneView, env: usize, step: u32) -> Self {
        let mut poses = Vec::new();
        let mut markers = Vec::new();
        view.poses(env, &mut poses);
        view.markers(env, &mut markers);
        Self { step, time: step as f32 * view.step_seconds(), poses, markers }
    }
}

type V3 = [f32; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn norm(a: V3) -> V3 {
    let l = dot(a, a).sqrt().max(1e-12);
    a.map(|x| x / l)
}

/// Faces (polygons, in the shape's frame) of a primitive.
fn faces(g: &Geometry) -> Vec<Vec<V3>> {
    const N: usize = 16;
    let ring = |r: f32, z: f32| -> Vec<V3> {
        (0..N)
            .map(|i| {
                let a = i as f32 / N as f32 * std::f32::consts::TAU;
                [r * a.cos(), r * a.sin(), z]
            })
            .collect()
    };
    let band = |lo: &[V3], hi: &[V3], out: &mut Vec<Vec<V3>>| {
        for i in 0..lo.len() {
            let j = (i + 1) % lo.len();
            out.push(vec![lo[i], lo[j], hi[j], hi[i]]);
        }
    };
    // Rings of a sphere cap from latitude a0 to a1 (radians from the equator), centred at z0.
    let cap = |r: f32, z0: f32, up: bool, out: &mut Vec<Vec<V3>>| {
        let steps = 4;
        for k in 0..steps {
            let (a0, a1) = (k as f32 / steps as f32, (k + 1) as f32 / steps as f32);
            let (a0, a1) = (a0 * std::f32::consts::FRAC_PI_2, a1 * std::f32::consts::FRAC_PI_2);
            let s = if up { 1.0 } else { -1.0 };
            let lo = ring(r * a0.cos(), z0 + s * r * a0.sin());
            let hi = ring(r * a1.cos(), z0 + s * r * a1.sin());
            band(&lo, &hi, out);
        }
    };
    let mut out = Vec::new();
    match *g {
        Geometry::Box { size } => {
            let h = size.map(|v| v as f32 / 2.0);
            let c = |x: f32, y: f32, z: f32| [x * h[0], y * h[1], z * h[2]];
            for (a, b, cc, d) in [
                (c(-1., -1., -1.), c(1., -1., -1.), c(1., 1., -1.), c(-1., 1., -1.)),
                (c(-1., -1., 1.), c(1., -1., 1.), c(1., 1., 1.), c(-1., 1., 1.)),
                (c(-1., -1., -1.), c(1., -1., -1.), c(1., -1., 1.), c(-1., -1., 1.)),
                (c(-1., 1., -1.), c(1., 1., -1.), c(1., 1., 1.), c(-1., 1., 1.)),
                (c(-1., -1., -1.), c(-1., 1., -1.), c(-1., 1., 1.), c(-1., -1., 1.)),
                (c(1., -1., -1.), c(1., 1., -1.), c(1., 1., 1.), c(1., -1., 1.)),
            ] {
                out.push(vec![a, b, cc, d]);
            }
        }
        Geometry::Sphere { radius } => {
            cap(radius as f32, 0.0, true, &mut out);
            cap(radius as f32, 0.0, false, &mut out);
        }
        Geometry::Cylinder { radius, length } => {
            let (r, h) = (radius as f32, length as f32 / 2.0);
            let (lo, hi) = (ring(r, -h), ring(r, h));
            band(&lo, &hi, &mut out);
            out.push(lo);
            out.push(hi);
        }
        Geometry::Capsule { radius, length } => {
            let (r, h) = (radius as f32, length as f32 / 2.0);
            band(&ring(r, -h), &ring(r, h), &mut out);
            cap(r, h, true, &mut out);
            cap(r, -h, false, &mut out);
        }
        Geometry::Mesh { ref data, .. } => {
            out.extend(data.triangles.iter().map(|t| t.iter().map(|&i| data.vertices[i as usize]).collect()));
        }
    }
    out
}

/// Splits a large quad into tiles of at most ~4 cm, so that sorting by depth orders a table
/// top and the cube on it correctly; other faces are returned as they are.
fn subdivide(face: &[V3]) -> Vec<Vec<V3>> {
    const TILE: f32 = 0.04;
    if face.len() != 4 {
        return vec![face.to_vec()];
    }
    let len = |a: V3, b: V3| dot(sub(a, b), sub(a, b)).sqrt();
    let nu = ((len(face[0], face[1]).max(len(face[3], face[2])) / TILE).ceil() as usize).clamp(1, 40);
    let nv = ((len(face[0], face[3]).max(len(face[1], face[2])) / TILE).ceil() as usize).clamp(1, 40);
    if nu == 1 && nv == 1 {
        return vec![face.to_vec()];
    }
    let lerp = |a: V3, b: V3, t: f32| [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
    let at = |u: usize, v: usize| {
        let (u, v) = (u as f32 / nu as f32, v as f32 / nv as f32);
        lerp(lerp(face[0], face[1], u), lerp(face[3], face[2], u), v)
    };
    let mut out = Vec::with_capacity(nu * nv);
    for i in 0..nu {
        for j in 0..nv {
            out.push(vec![at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    out
}

/// A pinhole camera looking at `target` from `eye`, z up.
struct Camera {
    eye: V3,
    right: V3,
    up: V3,
    fwd: V3,
    focal: f32,
    center: (f32, f32),
}

impl Camera {
    fn new(eye: V3, target: V3, size: (u32, u32), fov_deg: f32) -> Self {
        let fwd = norm(sub(target, eye));
        let right = norm(cross(fwd, [0.0, 0.0, 1.0]));
        let up = cross(right, fwd);
        let focal = size.1 as f32 / 2.0 / (fov_deg.to_radians() / 2.0).tan();
        Self { eye, right, up, fwd, focal, center: (size.0 as f32 / 2.0, size.1 as f32 / 2.0) }
    }

    /// Pixel coordinates and depth.
    fn project(&self, p: V3) -> (i32, i32, f32) {
        let d = sub(p, self.eye);
        let z = dot(d, self.fwd).max(1e-3);
        let x = self.center.0 + self.focal * dot(d, self.right) / z;
        let y = self.center.1 - self.focal * dot(d, self.up) / z;
        (x.round() as i32, y.round() as i32, z)
    }
}

/// Where to look from: the bounding box of the moving bodies over all frames.
fn frame_camera(bodies: &[VisualBody], frames: &[Frame]) -> Camera {
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for f in frames {
        for (b, p) in bodies.iter().zip(&f.poses) {
            if b.fixed {
                continue;
            }
            for k in 0..3 {
                lo[k] = lo[k].min(p.translation[k]);
                hi[k] = hi[k].max(p.translation[k]);
            }
        }
        for m in &f.markers {
            for k in 0..3 {
                lo[k] = lo[k].min(m.position[k]);
                hi[k] = hi[k].max(m.position[k]);
            }
        }
    }
    if lo[0] > hi[0] {
        (lo, hi) = ([-0.5; 3], [0.5; 3]);
    }
    let target = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, (lo[2] + hi[2]) / 2.0];
    let extent = sub(hi, lo).into_iter().fold(0.0f32, f32::max).max(0.2) + 0.15;
    let dir = norm([1.0, -1.3, 0.75]);
    let dist = extent * 1.6;
    Camera::new(
        [target[0] + dir[0] * dist, target[1] + dir[1] * dist, target[2] + dir[2] * dist],
        target,
        FRAME_SIZE,
        40.0,
    )
}

fn rgb(rgba: Option<[f32; 4]>, shade: f32) -> RGBAColor {
    let [r, g, b, a] = rgba.unwrap_or([0.6, 0.6, 0.65, 1.0]);
    let c = |v: f32| ((v * shade).clamp(0.0, 1.0) * 255.0) as u8;
    RGBAColor(c(r), c(g), c(b), a as f64)
}

/// Draws `frames` side by side (one row up to 4 frames, else two rows of up to 4) into the PNG `out`; `title` goes above.
pub fn draw_frames(bodies: &[VisualBody], frames: &[Frame], title: &str, out: &Path) -> Result<(), PlotError> {
    crate::plot::register_font();
    let err = |e: &dyn std::fmt::Display| PlotError::Io { path: out.display().to_string(), message: e.to_string() };
    let cols = if frames.len() <= 4 { frames.len().max(1) } else { frames.len().div_ceil(2).min(4) };
    let rows = frames.len().div_ceil(cols).max(1);
    let header = 36;
    let size = (FRAME_SIZE.0 * cols as u32, FRAME_SIZE.1 * rows as u32 + header);
    let camera = frame_camera(bodies, frames);
    let light = norm([0.4, -0.3, 1.0]);
    // Faces of every shape in its body's frame, computed once.
    type Placed<'a> = (Vec<Vec<V3>>, ViewPose, &'a Shape);
    let shapes: Vec<Vec<Placed>> = bodies
        .iter()
        .map(|b| b.shapes.iter().map(|s| (faces(&s.geometry), ViewPose::from_urdf(&s.origin), s)).collect())
        .collect();
    let root = BitMapBackend::new(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    root.draw(&Text::new(title.to_string(), (10, 8), (crate::plot::FONT, 20).into_font())).map_err(|e| err(&e))?;
    let area = root.margin(header as i32, 0, 0, 0);
    let panels = area.split_evenly((rows, cols));
    for (panel, frame) in panels.iter().zip(frames) {
        panel.fill(&RGBColor(246, 247, 250)).map_err(|e| err(&e))?;
        // (depth, pixel polygon, colour), drawn far to near.
        type Poly = (f32, Vec<(i32, i32)>, RGBAColor);
        let mut polys: Vec<Poly> = Vec::new();
        for (pose, body_shapes) in frame.poses.iter().zip(&shapes) {
            for (faces, origin, shape) in body_shapes {
                let world = pose.compose(origin);
                for face in faces.iter().flat_map(|f| subdivide(f)) {
                    let pts: Vec<V3> = face.iter().map(|&p| world.transform_point(p)).collect();
                    if pts.len() < 3 {
                        continue;
                    }
                    let n = norm(cross(sub(pts[1], pts[0]), sub(pts[2], pts[0])));
                    let centroid = pts
                        .iter()
                        .fold([0.0; 3], |a, p| [a[0] + p[0], a[1] + p[1], a[2] + p[2]])
                        .map(|v| v / pts.len() as f32);
                    // Two-sided: face the camera.
                    let n = if dot(n, sub(camera.eye, centroid)) < 0.0 { n.map(|v| -v) } else { n };
                    let shade = 0.45 + 0.55 * dot(n, light).abs();
                    let projected: Vec<(i32, i32)> = pts
                        .iter()
                        .map(|&p| {
                            let (x, y, _) = camera.project(p);
                            (x, y)
                        })
                        .collect();
                    let depth = camera.project(centroid).2;
                    polys.push((depth, projected, rgb(shape.rgba, shade)));
                }
            }
        }
        for m in &frame.markers {
            let (x, y, z) = camera.project(m.position);
            let r = (camera.focal * m.radius / z).max(3.0) as i32;
            let pts: Vec<(i32, i32)> = (0..12)
                .map(|i| {
                    let a = i as f32 / 12.0 * std::f32::consts::TAU;
                    (x + (r as f32 * a.cos()) as i32, y + (r as f32 * a.sin()) as i32)
                })
                .collect();
            polys.push((z - 1e3, pts, rgb(Some(m.rgba), 1.0)));
        }
        polys.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, pts, color) in polys {
            panel.draw(&Polygon::new(pts, color.filled())).map_err(|e| err(&e))?;
        }
        let label = format!("step {}  t = {:.2} s", frame.step, frame.time);
        panel.draw(&Text::new(label, (8, 6), (crate::plot::FONT, 15).into_font())).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Indices of `count` frames spread evenly over `0..len` (first and last included).
pub fn frame_steps(len: u32, count: usize) -> Vec<u32> {
    let count = count.max(1);
    if count == 1 || len <= 1 {
        return vec![0];
    }
    let last = len - 1;
    let mut steps: Vec<u32> =
        (0..count).map(|i| (i as f64 * last as f64 / (count - 1) as f64).round() as u32).collect();
    steps.dedup();
    steps
}

/// Runs one episode in environment 0 of `env` from `reset(seed)`, acting with `act(env,
/// actions, first_step_of_episode)`, and captures `count` frames spread over it. Returns the
/// bodies, the frames and the episode's return and success. Errors when the task has no scene.
pub fn capture_episode<E: VecEnv + ?Sized>(
    env: &mut E,
    seed: u64,
    count: usize,
    mut act: impl FnMut(&E, &mut [f32]) -> Result<(), crate::run::RunError>,
) -> Result<(Vec<VisualBody>, Vec<Frame>, f32, bool), crate::run::RunError> {
    let task = env.info().name.to_string();
    let no_scene = || crate::run::RunError::Io {
        path: task.clone(),
        message: "this task has no scene to draw (only rapier tasks do)".into(),
    };
    env.reset(seed);
    let ad = env.action_spec().bounds.dim();
    let mut actions = vec![0.0f32; env.num_envs() * ad];
    // Every frame of the episode, then the chosen ones.
    let mut all = Vec::new();
    let (ret, success) = loop {
        let view = env.scene_view().ok_or_else(no_scene)?;
        all.push(Frame::capture(view, 0, all.len() as u32));
        act(&*env, &mut actions)?;
        env.step(&actions)?;
        let b = env.buffers();
        if b.done(0) {
            break (b.episode_return[0], b.success[0] > 0.0);
        }
    };
    let bodies = env.scene_view().ok_or_else(no_scene)?.bodies();
    let frames = frame_steps(all.len() as u32, count).into_iter().map(|s| all[s as usize].clone()).collect();
    Ok((bodies, frames, ret, success))
}

/// Renders `count` frames of the first deterministic evaluation episode of `learner` (the
/// episode `embodia eval` and `--record-episodes` run first) into `out`.
pub fn render_learner_episode(
    learner: &dyn embodia_algos::Learner,
    config: &crate::config::TrainConfig,
    count: usize,
    out: &Path,
) -> Result<(f32, bool), crate::run::RunError> {
    let mut env = crate::run::make_env(config, 1)?;
    let seed = config.seed + crate::run::EVAL_SEED_OFFSET;
    let mut queue = embodia_algos::ActionQueue::new(learner, 1, env.action_spec().bounds.dim());
    let (bodies, frames, ret, success) =
        capture_episode(env.as_mut(), seed, count, |env, actions| Ok(queue.step(learner, env, actions, None)?))?;
    let title =
        format!("{} on {}: return {ret:.1}{}", config.algorithm, config.task, if success { ", success" } else { "" });
    draw_frames(&bodies, &frames, &title, out)?;
    Ok((ret, success))
}

/// Renders `count` frames of one episode of the task's scripted expert, from `reset(seed)`.
pub fn render_expert_episode(
    task: &str,
    seed: u64,
    count: usize,
    out: &Path,
) -> Result<(f32, bool), crate::run::RunError> {
    use embodia_sim::rapier::{RapierEnv, rapier_tasks, scripted_expert::scripted_expert};
    let Some(t) = rapier_tasks().into_iter().find(|t| t.info.name == task) else {
        let valid = rapier_tasks().into_iter().map(|t| t.info.name.to_string()).collect();
        return Err(embodia_sim::SimError::UnknownTask { name: task.to_string(), valid }.into());
    };
    let config = (t.config)();
    let model = embodia_robots::scene_robot(&config.scene.robot)
        .map_err(|e| embodia_sim::SimError::InvalidTask(format!("`env.scene.robot`: {e}")))?;
    let mut env = RapierEnv::new(t.info, config, model, 1)?;
    let mut expert = scripted_expert(env.spec())?;
    let mut started = false;
    let (bodies, frames, ret, success) = capture_episode(&mut env, seed, count, |env, actions| {
        if !started {
            expert.reset(env.spec(), &env.scenes()[0]);
            started = true;
        }
        expert.act(env.spec(), &env.scenes()[0], actions);
        Ok(())
    })?;
    let title = format!("scripted expert on {task}: return {ret:.1}{}", if success { ", success" } else { "" });
    draw_frames(&bodies, &frames, &title, out)?;
    Ok((ret, success))
}
