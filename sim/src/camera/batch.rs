//! [`Cameras`]: the cameras of a batch of scenes, their visual randomization and the image
//! buffers they render into, in parallel over environments.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use super::affine::{Affine, V3, axis_angle, cross, normalize, sub};
use super::config::{CameraConfig, Mount, RenderConfig};
use super::mesh::Mesh;
use super::raster::{Light, Target};
use crate::SimError;
use crate::view::{SceneView, ViewPose, VisualBody};

/// The images of one camera for every environment.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraImages {
    /// Camera name.
    pub name: String,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Colour, `[num_envs, height, width, 3]`, RGB.
    pub rgb: Vec<u8>,
    /// Depth along the optical axis, `[num_envs, height, width]`, m; the camera's `far` where
    /// nothing is drawn.
    pub depth: Vec<f32>,
}

impl CameraImages {
    /// Environment `env`'s colour image, `[height, width, 3]`.
    pub fn rgb_of(&self, env: usize) -> &[u8] {
        let n = self.width * self.height * 3;
        &self.rgb[env * n..(env + 1) * n]
    }

    /// Environment `env`'s depth image, `[height, width]`, m.
    pub fn depth_of(&self, env: usize) -> &[f32] {
        let n = self.width * self.height;
        &self.depth[env * n..(env + 1) * n]
    }
}

/// One shape of one body: what is drawn.
#[derive(Debug, Clone)]
struct Part {
    body: usize,
    mesh: Mesh,
    color: V3,
    alpha: f32,
}

/// A visual-only distractor: one of the unit meshes, scaled and placed.
#[derive(Debug, Clone, Copy)]
struct Distractor {
    kind: usize,
    placement: Affine,
    max_scale: f32,
    color: V3,
}

/// What randomization drew for one environment.
#[derive(Debug, Clone)]
struct EnvVisuals {
    /// Colour of each part, RGB in `[0, 1]`.
    colors: Vec<V3>,
    /// Towards the light, world frame, unit.
    to_light: V3,
    intensity: f32,
    /// Offset of each camera in its own frame.
    jitter: Vec<Affine>,
    distractors: Vec<Distractor>,
}

/// The cameras of a batch of `num_envs` scenes that share one body list (a
/// [`SceneView`]'s), with visual randomization drawn per environment and image buffers reused
/// from render to render.
///
/// ```
/// use embodia_sim::camera::{Cameras, RenderConfig};
/// let env = embodia_sim::make("pick-cube", 2)?;
/// let view = env.scene_view().expect("rapier tasks have a view");
/// let config = RenderConfig::for_task(&embodia_sim::task_config("pick-cube").unwrap(), 64, 64);
/// let mut cameras = Cameras::new(&view.bodies(), config, 2)?;
/// cameras.reset(7);
/// cameras.render(view)?;
/// let front = &cameras.images()[0];
/// assert_eq!(front.rgb.len(), 2 * 64 * 64 * 3);
/// # Ok::<(), embodia_sim::SimError>(())
/// ```
pub struct Cameras {
    config: RenderConfig,
    parts: Vec<Part>,
    /// Whether body `i` is an object (`objects/…`), for random object colours.
    objects: Vec<bool>,
    num_bodies: usize,
    /// Body index each camera rides on, `None` when fixed.
    mounts: Vec<Option<usize>>,
    /// Camera-to-world (fixed) or camera-to-body (mounted), before jitter.
    bases: Vec<Affine>,
    /// Unit cube, unit-diameter sphere, unit cylinder.
    unit_meshes: [Mesh; 3],
    envs: Vec<EnvVisuals>,
    rngs: Vec<ChaCha8Rng>,
    /// World poses of every body, `[num_envs, num_bodies]`.
    poses: Vec<ViewPose>,
    pose_buffer: Vec<ViewPose>,
    /// Per-environment vertices in the camera's frame, reused by every mesh.
    scratch: Vec<Vec<V3>>,
    images: Vec<CameraImages>,
}

/// Uniform in `[lo, hi)`.
fn uniform(rng: &mut ChaCha8Rng, lo: f32, hi: f32) -> f32 {
    let u = (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
    lo + (hi - lo) * u
}

/// A uniformly random unit vector.
fn unit_vector(rng: &mut ChaCha8Rng) -> V3 {
    let z = uniform(rng, -1.0, 1.0);
    let a = uniform(rng, 0.0, std::f32::consts::TAU);
    let r = (1.0 - z * z).max(0.0).sqrt();
    [r * a.cos(), r * a.sin(), z]
}

/// A rotation about a random axis by an angle uniform in `[0, max_rad]`.
fn random_rotation(rng: &mut ChaCha8Rng, max_rad: f32) -> Affine {
    let axis = unit_vector(rng);
    axis_angle(axis, uniform(rng, 0.0, max_rad))
}

fn look_at(eye: V3, target: V3) -> Affine {
    let z = normalize(sub(target, eye));
    let x = normalize(cross(z, [0.0, 0.0, 1.0]));
    let y = cross(z, x);
    Affine::from_axes(x, y, z, eye)
}

fn to_u8(c: [f32; 3]) -> [u8; 3] {
    c.map(|v| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8)
}

impl Cameras {
    /// Cameras of `config` over scenes made of `bodies` (every environment's), with buffers for
    /// `num_envs` environments and no randomization drawn yet (call [`Cameras::reset`]).
    /// Errors on an invalid configuration or a camera mounted on a body that is not there.
    pub fn new(bodies: &[VisualBody], config: RenderConfig, num_envs: usize) -> Result<Self, SimError> {
        config.validate()?;
        if num_envs == 0 {
            return Err(SimError::ZeroEnvs);
        }
        let mut parts = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            for s in &b.shapes {
                let [r, g, bl, a] = s.rgba.unwrap_or([0.6, 0.6, 0.65, 1.0]);
                if a < 1.0 && !config.translucent {
                    continue;
                }
                parts.push(Part { body: i, mesh: Mesh::of_shape(s), color: [r, g, bl], alpha: a.clamp(0.0, 1.0) });
            }
        }
        // Opaque first, so translucent parts blend over a finished depth buffer.
        parts.sort_by_key(|p| p.alpha < 1.0);
        let mut mounts = Vec::new();
        let mut bases = Vec::new();
        for (k, c) in config.cameras.iter().enumerate() {
            match &c.mount {
                Mount::LookAt { eye, target } => {
                    mounts.push(None);
                    bases.push(look_at(*eye, *target));
                }
                Mount::Body { body, xyz, rpy } => {
                    let Some(i) = bodies.iter().position(|b| &b.path == body) else {
                        let valid: Vec<&str> = bodies.iter().map(|b| b.path.as_str()).collect();
                        return Err(SimError::InvalidCamera(format!(
                            "`cameras[{k}].mount.body`: no body `{body}` in the scene; bodies: {}",
                            valid.join(", ")
                        )));
                    };
                    mounts.push(Some(i));
                    let urdf = embodia_robots::Pose { xyz: xyz.map(f64::from), rpy: rpy.map(f64::from) };
                    bases.push(Affine::from_pose(&ViewPose::from_urdf(&urdf)));
                }
            }
        }
        let unit_meshes = [Mesh::cuboid([1.0; 3]), Mesh::capsule(0.5, 0.0), Mesh::cylinder(0.5, 1.0)];
        let max_vertices =
            parts.iter().map(|p| &p.mesh).chain(&unit_meshes).map(|m| m.vertices.len()).max().unwrap_or(0);
        let visuals = EnvVisuals {
            colors: parts.iter().map(|p| p.color).collect(),
            to_light: normalize(config.lighting.to_light),
            intensity: config.lighting.intensity,
            jitter: vec![Affine::IDENTITY; config.cameras.len()],
            distractors: Vec::with_capacity(config.randomization.distractors),
        };
        let images = config
            .cameras
            .iter()
            .map(|c: &CameraConfig| CameraImages {
                name: c.name.clone(),
                width: c.width,
                height: c.height,
                rgb: vec![0; num_envs * c.width * c.height * 3],
                depth: vec![c.far; num_envs * c.width * c.height],
            })
            .collect();
        Ok(Self {
            objects: bodies.iter().map(|b| b.path.starts_with("objects/")).collect(),
            num_bodies: bodies.len(),
            mounts,
            bases,
            unit_meshes,
            envs: vec![visuals; num_envs],
            rngs: (0..num_envs).map(|_| ChaCha8Rng::seed_from_u64(0)).collect(),
            poses: vec![ViewPose::IDENTITY; num_envs * bodies.len()],
            pose_buffer: Vec::with_capacity(bodies.len()),
            scratch: (0..num_envs).map(|_| Vec::with_capacity(max_vertices)).collect(),
            images,
            parts,
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RenderConfig {
        &self.config
    }

    /// Number of environments.
    pub fn num_envs(&self) -> usize {
        self.envs.len()
    }

    /// The images of the last [`Cameras::render`], one entry per camera in configuration order.
    pub fn images(&self) -> &[CameraImages] {
        &self.images
    }

    /// The images of the camera called `name`.
    pub fn camera(&self, name: &str) -> Option<&CameraImages> {
        self.images.iter().find(|c| c.name == name)
    }

    /// Seeds every environment's generator from `(seed, env)` and draws its randomization:
    /// the same seed gives the same visuals whatever the thread count.
    pub fn reset(&mut self, seed: u64) {
        for (i, rng) in self.rngs.iter_mut().enumerate() {
            *rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(i as u64);
        }
        for env in 0..self.envs.len() {
            self.randomize(env);
        }
    }

    /// Draws environment `env`'s colours, light, camera offsets and distractors anew from its
    /// generator (what an episode reset does).
    pub fn randomize(&mut self, env: usize) {
        let r = &self.config.randomization;
        let rng = &mut self.rngs[env];
        let v = &mut self.envs[env];
        // Draw per body, then per part, so a body's shapes share its random colour.
        let mut body_color: Option<(usize, V3)> = None;
        for (part, color) in self.parts.iter().zip(&mut v.colors) {
            let mut c = part.color;
            if r.random_object_colors && self.objects[part.body] {
                c = match body_color {
                    Some((b, c)) if b == part.body => c,
                    _ => {
                        let c = [0; 3].map(|_| uniform(rng, 0.0, 1.0));
                        body_color = Some((part.body, c));
                        c
                    }
                };
            }
            if r.color_jitter > 0.0 {
                c = c.map(|ch| (ch + uniform(rng, -r.color_jitter, r.color_jitter)).clamp(0.0, 1.0));
            }
            *color = c;
        }
        let light = &self.config.lighting;
        v.to_light = normalize(light.to_light);
        if r.light_cone_deg > 0.0 {
            v.to_light = random_rotation(rng, r.light_cone_deg.to_radians()).rotate(v.to_light);
        }
        v.intensity = r.light_intensity.map_or(light.intensity, |[lo, hi]| uniform(rng, lo, hi));
        for j in &mut v.jitter {
            let p = r.camera_position;
            let mut a = if r.camera_rotation_deg > 0.0 {
                random_rotation(rng, r.camera_rotation_deg.to_radians())
            } else {
                Affine::IDENTITY
            };
            a.t = [0; 3].map(|_| uniform(rng, -p, p));
            *j = a;
        }
        v.distractors.clear();
        let [[x0, x1], [y0, y1]] = r.distractor_area;
        for _ in 0..r.distractors {
            let kind = (rng.next_u32() % 3) as usize;
            let s = uniform(rng, r.distractor_size[0], r.distractor_size[1]);
            let h = s * uniform(rng, 0.6, 1.6);
            let scale = [s, s, h];
            let (x, y) = (uniform(rng, x0, x1), uniform(rng, y0, y1));
            let mut placement = axis_angle([0.0, 0.0, 1.0], uniform(rng, 0.0, std::f32::consts::TAU));
            placement.t = [x, y, r.distractor_surface + h / 2.0];
            let color = [0; 3].map(|_| uniform(rng, 0.0, 1.0));
            v.distractors.push(Distractor { kind, placement: placement.scaled(scale), max_scale: s.max(h), color });
        }
    }

    /// Renders every camera of every environment from the current poses of `view`, in
    /// parallel over environments. Errors, drawing nothing, when `view` does not have the
    /// bodies these cameras were made with.
    pub fn render(&mut self, view: &dyn SceneView) -> Result<(), SimError> {
        let nb = self.num_bodies;
        for env in 0..self.envs.len() {
            view.poses(env, &mut self.pose_buffer);
            if self.pose_buffer.len() != nb {
                return Err(SimError::InvalidCamera(format!(
                    "the scene has {} bodies; the cameras were made for {nb}",
                    self.pose_buffer.len()
                )));
            }
            self.poses[env * nb..(env + 1) * nb].copy_from_slice(&self.pose_buffer);
        }
        for (k, images) in self.images.iter_mut().enumerate() {
            let camera = &self.config.cameras[k];
            let (w, h) = (camera.width, camera.height);
            let (parts, lighting, unit) = (&self.parts, &self.config.lighting, &self.unit_meshes);
            let (mount, base, poses) = (self.mounts[k], self.bases[k], &self.poses);
            let background = to_u8(lighting.background);
            images
                .rgb
                .par_chunks_mut(w * h * 3)
                .zip(images.depth.par_chunks_mut(w * h))
                .zip(self.envs.par_iter().zip(self.scratch.par_iter_mut()))
                .enumerate()
                .for_each(|(env, ((rgb, depth), (visuals, scratch)))| {
                    let poses = &poses[env * nb..(env + 1) * nb];
                    let mut camera_pose = base.then(&visuals.jitter[k]);
                    if let Some(b) = mount {
                        camera_pose = Affine::from_pose(&poses[b]).then(&camera_pose);
                    }
                    let world_to_camera = camera_pose.rigid_inverse();
                    let light = Light {
                        to_light: world_to_camera.rotate(visuals.to_light),
                        intensity: visuals.intensity,
                        ambient: lighting.ambient,
                    };
                    let mut target = Target {
                        rgb,
                        depth,
                        width: w,
                        height: h,
                        intrinsics: camera.lens.intrinsics(w, h),
                        near: camera.near,
                        far: camera.far,
                    };
                    target.clear(background);
                    let v = scratch;
                    for d in &visuals.distractors {
                        let to_camera = world_to_camera.then(&d.placement);
                        target.draw(&unit[d.kind], &to_camera, d.max_scale, d.color, 1.0, &light, v);
                    }
                    let mut body = usize::MAX;
                    let mut to_camera = Affine::IDENTITY;
                    for (part, &color) in parts.iter().zip(&visuals.colors) {
                        if part.body != body {
                            body = part.body;
                            to_camera = world_to_camera.then(&Affine::from_pose(&poses[body]));
                        }
                        target.draw(&part.mesh, &to_camera, 1.0, color, part.alpha, &light, v);
                    }
                });
        }
        Ok(())
    }
}
