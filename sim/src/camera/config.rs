//! What to render: cameras (resolution, lens, mount), lighting and visual domain
//! randomization, as plain serializable values.

use serde::{Deserialize, Serialize};

use crate::SimError;

/// Projection of a pinhole camera.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lens {
    /// Square pixels from a vertical field of view, principal point at the image centre.
    Fov {
        /// Vertical field of view, degrees, in (0, 180).
        vertical_deg: f32,
    },
    /// Explicit intrinsics in pixels (OpenCV convention: pixel `(u, v)` has its centre at
    /// `(u + 0.5, v + 0.5)`; x right, y down).
    Pinhole {
        /// Focal length along x, pixels.
        fx: f32,
        /// Focal length along y, pixels.
        fy: f32,
        /// Principal point x, pixels.
        cx: f32,
        /// Principal point y, pixels.
        cy: f32,
    },
}

impl Lens {
    /// `[fx, fy, cx, cy]` in pixels for a `width × height` image.
    pub fn intrinsics(&self, width: usize, height: usize) -> [f32; 4] {
        match *self {
            Lens::Fov { vertical_deg } => {
                let f = height as f32 / 2.0 / (vertical_deg.to_radians() / 2.0).tan();
                [f, f, width as f32 / 2.0, height as f32 / 2.0]
            }
            Lens::Pinhole { fx, fy, cx, cy } => [fx, fy, cx, cy],
        }
    }
}

/// Where a camera is. The camera frame is OpenCV's: z along the optical axis (forward), x
/// right and y down in the image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mount {
    /// Fixed in the world at `eye`, looking at `target`, with world z up in the image.
    LookAt {
        /// Camera position, m (world).
        eye: [f32; 3],
        /// Point on the optical axis, m (world).
        target: [f32; 3],
    },
    /// Carried by a body of the scene (a robot link such as `robot/hand`, see
    /// [`VisualBody::path`](crate::view::VisualBody::path)), at a fixed offset in its frame.
    Body {
        /// Entity path of the body.
        body: String,
        /// Camera position in the body's frame, m.
        xyz: [f32; 3],
        /// Camera orientation in the body's frame as URDF roll, pitch, yaw, rad; zero puts the
        /// optical axis along the body's z, image x along its x.
        rpy: [f32; 3],
    },
}

/// One camera: what every environment of a batch renders from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    /// Name, e.g. `front` or `wrist`.
    pub name: String,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Projection.
    pub lens: Lens,
    /// Placement.
    pub mount: Mount,
    /// Nearest depth drawn, m.
    pub near: f32,
    /// Farthest depth drawn, m; the depth of background pixels.
    pub far: f32,
}

/// A directional light plus ambient light.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lighting {
    /// Direction towards the light, world frame (normalized when used).
    pub to_light: [f32; 3],
    /// Diffuse (Lambert) intensity of the directional light.
    pub intensity: f32,
    /// Ambient intensity added to every lit surface.
    pub ambient: f32,
    /// Colour of pixels where nothing is drawn, RGB in `[0, 1]`.
    pub background: [f32; 3],
}

impl Default for Lighting {
    fn default() -> Self {
        Self { to_light: [0.4, -0.3, 1.0], intensity: 0.7, ambient: 0.35, background: [0.55, 0.62, 0.7] }
    }
}

/// Visual domain randomization, drawn per environment at every reset of its episode. Every
/// default leaves the scene as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Randomization {
    /// Half-width of a uniform perturbation of every RGB channel of every body's colour.
    pub color_jitter: f32,
    /// Whether objects (bodies under `objects/`) get a uniformly random colour instead of theirs
    /// (leave off for language tasks, whose instructions name the objects' colours).
    pub random_object_colors: bool,
    /// Largest angle, degrees, between the drawn and the configured light direction.
    pub light_cone_deg: f32,
    /// Range the light intensity is drawn from; `None`: [`Lighting::intensity`].
    pub light_intensity: Option<[f32; 2]>,
    /// Half-width of a uniform offset of each camera's position along each of its axes, m.
    pub camera_position: f32,
    /// Largest rotation of each camera about a random axis, degrees.
    pub camera_rotation_deg: f32,
    /// Visual-only distractors (boxes, spheres, cylinders of random colours) per environment.
    /// They are drawn, not simulated: the robot and objects pass through them.
    pub distractors: usize,
    /// Where distractors stand: `[[x_min, x_max], [y_min, y_max]]`, m (world).
    pub distractor_area: [[f32; 2]; 2],
    /// Height of the surface distractors stand on, m (world z).
    pub distractor_surface: f32,
    /// Range of distractor sizes (edge or diameter), m.
    pub distractor_size: [f32; 2],
}

impl Default for Randomization {
    fn default() -> Self {
        Self {
            color_jitter: 0.0,
            random_object_colors: false,
            light_cone_deg: 0.0,
            light_intensity: None,
            camera_position: 0.0,
            camera_rotation_deg: 0.0,
            distractors: 0,
            distractor_area: [[-0.2, 0.2], [-0.2, 0.2]],
            distractor_surface: 0.0,
            distractor_size: [0.02, 0.05],
        }
    }
}

/// Cameras, light and randomization of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderConfig {
    /// The cameras, rendered in this order.
    pub cameras: Vec<CameraConfig>,
    /// The light.
    #[serde(default)]
    pub lighting: Lighting,
    /// Visual domain randomization.
    #[serde(default)]
    pub randomization: Randomization,
    /// Whether translucent bodies (goal ghosts, alpha < 1) are drawn, blended over what is
    /// behind them; off, cameras see only the physical scene.
    #[serde(default)]
    pub translucent: bool,
}

impl RenderConfig {
    /// Checks sizes, lenses and ranges; errors name the field at fault.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |field: String, why: &str| Err(SimError::InvalidCamera(format!("`{field}`: {why}")));
        if self.cameras.is_empty() {
            return bad("cameras".into(), "at least one camera is needed");
        }
        for (i, c) in self.cameras.iter().enumerate() {
            let f = |name: &str| format!("cameras[{i}].{name}");
            if c.width == 0 || c.height == 0 || c.width > 4096 || c.height > 4096 {
                return bad(f("width/height"), &format!("{}x{} is not in 1..=4096", c.width, c.height));
            }
            match c.lens {
                Lens::Fov { vertical_deg } if !(vertical_deg > 0.0 && vertical_deg < 180.0) => {
                    return bad(f("lens.vertical_deg"), &format!("{vertical_deg} is not in (0, 180)"));
                }
                Lens::Pinhole { fx, fy, cx, cy } if !(fx > 0.0 && fy > 0.0 && cx.is_finite() && cy.is_finite()) => {
                    return bad(f("lens"), "fx and fy must be positive, cx and cy finite");
                }
                _ => {}
            }
            if !(c.near > 0.0 && c.far > c.near && c.far.is_finite()) {
                return bad(f("near/far"), &format!("need 0 < near < far < inf, got {} and {}", c.near, c.far));
            }
            if let Mount::LookAt { eye, target } = c.mount {
                let d = [target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]];
                let horizontal = (d[0] * d[0] + d[1] * d[1]).sqrt();
                if !(horizontal > 1e-4 * (horizontal + d[2].abs())) {
                    return bad(f("mount"), "eye and target must differ, and not along world z only");
                }
            }
            if self.cameras[..i].iter().any(|o| o.name == c.name) {
                return bad(f("name"), &format!("`{}` is used twice", c.name));
            }
        }
        let r = &self.randomization;
        let range = |v: [f32; 2]| v[0] <= v[1] && v[0].is_finite() && v[1].is_finite();
        if !(r.color_jitter >= 0.0
            && r.light_cone_deg >= 0.0
            && r.camera_position >= 0.0
            && r.camera_rotation_deg >= 0.0)
        {
            return bad("randomization".into(), "jitters, cones and offsets must be non-negative");
        }
        if r.light_intensity.is_some_and(|v| !range(v) || v[0] < 0.0) {
            return bad("randomization.light_intensity".into(), "need 0 <= min <= max");
        }
        if !range(r.distractor_area[0])
            || !range(r.distractor_area[1])
            || !range(r.distractor_size)
            || r.distractor_size[0] <= 0.0
        {
            return bad("randomization.distractor_*".into(), "ranges must be ordered and sizes positive");
        }
        if r.distractors > 64 {
            return bad("randomization.distractors".into(), "at most 64");
        }
        Ok(())
    }
}
