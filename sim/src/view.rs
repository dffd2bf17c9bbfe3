//! A read-only view of simulated scenes, for viewers and recorders (the rerun recorder and the
//! frame renderer of the root crate). Nothing here knows about any viewer.
//!
//! A scene is a fixed list of [`VisualBody`]s (entity path and visual shapes in the body's
//! frame, the same for every environment of a batch and for the whole run), whose world poses
//! change every step ([`SceneView::poses`]), plus point [`Marker`]s (targets, goals). Robot
//! links carry the visual shapes of their [`RobotModel`](embodia_robots::RobotModel) links.
//!
//! ```
//! let env = embodia_sim::make("reach", 2)?;
//! let view = env.scene_view().expect("rapier tasks have a view");
//! let bodies = view.bodies();
//! let mut poses = Vec::new();
//! view.poses(0, &mut poses);
//! assert_eq!(poses.len(), bodies.len());
//! assert!(bodies.iter().any(|b| b.path.starts_with("robot/")));
//! # Ok::<(), embodia_sim::SimError>(())
//! ```

pub use embodia_robots::{Geometry, Shape};

/// A rigid pose in the world frame (z up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewPose {
    /// Translation, m.
    pub translation: [f32; 3],
    /// Rotation as a unit quaternion `[x, y, z, w]`.
    pub rotation: [f32; 4],
}

impl ViewPose {
    /// The identity.
    pub const IDENTITY: Self = Self { translation: [0.0; 3], rotation: [0.0, 0.0, 0.0, 1.0] };

    /// Applies the pose to a point given in its frame.
    pub fn transform_point(&self, p: [f32; 3]) -> [f32; 3] {
        let r = self.rotate(p);
        [r[0] + self.translation[0], r[1] + self.translation[1], r[2] + self.translation[2]]
    }

    /// Rotates a vector given in the pose's frame.
    pub fn rotate(&self, v: [f32; 3]) -> [f32; 3] {
        let [x, y, z, w] = self.rotation;
        // v' = v + 2w (q × v) + 2 q × (q × v)
        let q = [x, y, z];
        let cross = |a: [f32; 3], b: [f32; 3]| {
            [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
        };
        let t = cross(q, v).map(|c| 2.0 * c);
        let u = cross(q, t);
        [v[0] + w * t[0] + u[0], v[1] + w * t[1] + u[1], v[2] + w * t[2] + u[2]]
    }

    /// The composition `self * other` (other's frame expressed in self's parent frame).
    pub fn compose(&self, other: &ViewPose) -> ViewPose {
        let [ax, ay, az, aw] = self.rotation;
        let [bx, by, bz, bw] = other.rotation;
        ViewPose {
            translation: self.transform_point(other.translation),
            rotation: [
                aw * bx + ax * bw + ay * bz - az * by,
                aw * by - ax * bz + ay * bw + az * bx,
                aw * bz + ax * by - ay * bx + az * bw,
                aw * bw - ax * bx - ay * by - az * bz,
            ],
        }
    }

    /// A URDF pose (translation and roll-pitch-yaw) as a view pose.
    pub fn from_urdf(p: &embodia_robots::Pose) -> Self {
        let [x, y, z, w] = p.quaternion();
        Self { translation: p.xyz.map(|v| v as f32), rotation: [x as f32, y as f32, z as f32, w as f32] }
    }
}

/// Something a viewer draws: a named rigid body and its visual shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct VisualBody {
    /// Entity path within the scene: `robot/<link>`, `objects/<name>`, `table`, `ground`.
    pub path: String,
    /// Visual shapes, each placed by its `origin` in the body's frame.
    pub shapes: Vec<Shape>,
    /// Whether the body never moves (its pose at any step is its pose at every step).
    pub fixed: bool,
}

/// A point a viewer marks: a target or goal position.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Entity path within the scene, e.g. `target`.
    pub path: String,
    /// World position, m.
    pub position: [f32; 3],
    /// Display radius, m.
    pub radius: f32,
    /// RGBA colour in `[0, 1]`.
    pub rgba: [f32; 4],
}

/// Read-only access to what a viewer needs of a batch of environments.
pub trait SceneView {
    /// The bodies of every environment of the batch, in a fixed order.
    fn bodies(&self) -> Vec<VisualBody>;
    /// World poses of [`SceneView::bodies`] in environment `env`, in the same order, into `out`
    /// (cleared first).
    fn poses(&self, env: usize, out: &mut Vec<ViewPose>);
    /// Targets and goals of environment `env`, into `out` (cleared first).
    fn markers(&self, env: usize, out: &mut Vec<Marker>);
    /// Simulated seconds per environment step.
    fn step_seconds(&self) -> f32;
}
