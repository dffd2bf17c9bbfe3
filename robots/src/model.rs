//! `RobotModel`: a validated kinematic tree of links and joints, as described by a URDF.
//!
//! Units are SI throughout (metres, kilograms, radians, seconds, newtons, newton-metres).
//! Indices (`parent`, `child`, `Mimic::joint`) point into [`RobotModel::links`] and
//! [`RobotModel::joints`]; a model returned by the parser is a tree rooted at
//! [`RobotModel::root`] with every index valid, every number finite and every mass positive.

/// A rigid transform: translation then rotation given as URDF roll-pitch-yaw.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    /// Translation, m.
    pub xyz: [f64; 3],
    /// Rotation as fixed-axis roll (x), pitch (y), yaw (z), rad; applied in that order
    /// (R = Rz(yaw)·Ry(pitch)·Rx(roll)), as URDF specifies.
    pub rpy: [f64; 3],
}

impl Pose {
    /// The identity transform.
    pub const IDENTITY: Self = Self { xyz: [0.0; 3], rpy: [0.0; 3] };

    /// A pure translation.
    pub const fn translation(x: f64, y: f64, z: f64) -> Self {
        Self { xyz: [x, y, z], rpy: [0.0; 3] }
    }

    /// The rotation as a unit quaternion `[x, y, z, w]`.
    pub fn quaternion(&self) -> [f64; 4] {
        let [r, p, y] = self.rpy;
        let (sr, cr) = (r * 0.5).sin_cos();
        let (sp, cp) = (p * 0.5).sin_cos();
        let (sy, cy) = (y * 0.5).sin_cos();
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ]
    }
}

/// The largest mass a link may have, kg: a thousand tonnes, far above any robot, far below
/// where sums and the simulator's arithmetic lose meaning.
pub const MAX_MASS: f64 = 1e6;

/// The largest magnitude of an inertia tensor entry, kg·m².
pub const MAX_INERTIA: f64 = 1e6;

impl Inertial {
    /// The first quantity above [`MAX_MASS`] or [`MAX_INERTIA`]: (name, value, bound).
    pub fn too_large(&self) -> Option<(&'static str, f64, f64)> {
        if self.mass > MAX_MASS {
            return Some(("mass", self.mass, MAX_MASS));
        }
        let names = ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"];
        names.iter().zip(self.inertia).find(|(_, v)| v.abs() > MAX_INERTIA).map(|(n, v)| (*n, v, MAX_INERTIA))
    }
}

/// Mass properties of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inertial {
    /// Centre of mass and principal-axes frame, relative to the link frame.
    pub origin: Pose,
    /// Mass, kg (> 0).
    pub mass: f64,
    /// Inertia tensor about the centre of mass in the `origin` frame, kg·m²:
    /// `[ixx, ixy, ixz, iyy, iyz, izz]`.
    pub inertia: [f64; 6],
}

/// A triangle mesh loaded from an STL or OBJ file.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshData {
    /// Vertex positions, m (already multiplied by the URDF `scale`).
    pub vertices: Vec<[f32; 3]>,
    /// Triangles as vertex-index triples.
    pub triangles: Vec<[u32; 3]>,
}

/// How a mesh is turned into a collision shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MeshCollision {
    /// The convex hull of the vertices (fast, the default for dynamic links).
    #[default]
    ConvexHull,
    /// The triangles themselves (exact, for static or slow geometry).
    Trimesh,
}

/// A geometric primitive or mesh.
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    /// Axis-aligned box with full side lengths `[x, y, z]`, m.
    Box {
        /// Full side lengths, m.
        size: [f64; 3],
    },
    /// Sphere centred on the origin.
    Sphere {
        /// Radius, m.
        radius: f64,
    },
    /// Cylinder along the local z axis, centred on the origin (URDF convention).
    Cylinder {
        /// Radius, m.
        radius: f64,
        /// Full length along z, m.
        length: f64,
    },
    /// Capsule along the local z axis: a cylinder of `length` with hemispherical caps
    /// (total extent `length + 2·radius`), centred on the origin.
    Capsule {
        /// Radius, m.
        radius: f64,
        /// Length of the cylindrical part along z, m.
        length: f64,
    },
    /// A mesh file resolved relative to the URDF's directory (`package://` prefixes stripped).
    Mesh {
        /// Path as written in the URDF.
        filename: String,
        /// Per-axis scale applied to the vertices.
        scale: [f64; 3],
        /// The loaded triangles.
        data: MeshData,
        /// Collision treatment.
        collision: MeshCollision,
    },
}

/// A visual or collision element of a link.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Optional element name.
    pub name: Option<String>,
    /// Placement relative to the link frame.
    pub origin: Pose,
    /// The geometry.
    pub geometry: Geometry,
    /// RGBA colour in `[0, 1]` (visuals only; collision shapes leave it `None`).
    pub rgba: Option<[f32; 4]>,
}

/// A rigid link.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Unique link name.
    pub name: String,
    /// Mass properties; `None` for massless frames (merged into their parent by simulators).
    pub inertial: Option<Inertial>,
    /// What the link looks like.
    pub visuals: Vec<Shape>,
    /// What the link collides with.
    pub collisions: Vec<Shape>,
}

/// The kind of a joint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointKind {
    /// Rotation about `axis` within `[lower, upper]`.
    Revolute,
    /// Rotation about `axis` without position limits.
    Continuous,
    /// Translation along `axis` within `[lower, upper]`.
    Prismatic,
    /// Rigid attachment.
    Fixed,
    /// Six unconstrained degrees of freedom.
    Floating,
}

impl JointKind {
    /// Number of degrees of freedom the joint adds (`Floating` counts 6).
    pub fn dof(self) -> usize {
        match self {
            Self::Revolute | Self::Continuous | Self::Prismatic => 1,
            Self::Fixed => 0,
            Self::Floating => 6,
        }
    }

    /// The URDF `type` attribute.
    pub fn urdf_name(self) -> &'static str {
        match self {
            Self::Revolute => "revolute",
            Self::Continuous => "continuous",
            Self::Prismatic => "prismatic",
            Self::Fixed => "fixed",
            Self::Floating => "floating",
        }
    }
}

/// Limits of a joint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointLimit {
    /// Lower position limit, rad or m (`-inf` for continuous joints).
    pub lower: f64,
    /// Upper position limit, rad or m (`+inf` for continuous joints).
    pub upper: f64,
    /// Maximum effort, N·m or N (> 0).
    pub effort: f64,
    /// Maximum speed, rad/s or m/s (> 0).
    pub velocity: f64,
}

/// Passive joint dynamics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointDynamics {
    /// Viscous damping, N·m·s/rad or N·s/m.
    pub damping: f64,
    /// Coulomb friction, N·m or N.
    pub friction: f64,
}

/// A joint that copies another: `q = multiplier · q_source + offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mimic {
    /// Index of the source joint in [`RobotModel::joints`].
    pub joint: usize,
    /// Gain.
    pub multiplier: f64,
    /// Offset, rad or m.
    pub offset: f64,
}

/// A joint between two links.
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    /// Unique joint name.
    pub name: String,
    /// Kind.
    pub kind: JointKind,
    /// Index of the parent link.
    pub parent: usize,
    /// Index of the child link.
    pub child: usize,
    /// Child joint frame relative to the parent link frame (at zero joint position).
    pub origin: Pose,
    /// Unit axis in the joint frame (for revolute, continuous and prismatic joints).
    pub axis: [f64; 3],
    /// Position, effort and velocity limits. Always present for revolute and prismatic joints;
    /// continuous joints carry infinite position bounds and the effort/velocity of their
    /// `<limit>` element (or infinity without one).
    pub limit: Option<JointLimit>,
    /// Damping and friction.
    pub dynamics: JointDynamics,
    /// Set when this joint follows another.
    pub mimic: Option<Mimic>,
}

impl Joint {
    /// Whether a controller drives this joint: it has a degree of freedom and does not mimic
    /// another joint.
    pub fn is_actuated(&self) -> bool {
        self.kind.dof() == 1 && self.mimic.is_none()
    }
}

/// A robot: links connected by joints into a tree.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotModel {
    /// The `<robot name>`.
    pub name: String,
    /// Links, in document order.
    pub links: Vec<Link>,
    /// Joints, in document order.
    pub joints: Vec<Joint>,
    /// Index of the root link (the only link that is no joint's child).
    pub root: usize,
}

impl RobotModel {
    /// Index of the link called `name`.
    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    /// Index of the joint called `name`.
    pub fn joint_index(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    /// Indices of the actuated joints (see [`Joint::is_actuated`]), in document order: the
    /// order of action and joint-state vectors everywhere in embodia.
    pub fn actuated_joints(&self) -> Vec<usize> {
        (0..self.joints.len()).filter(|&j| self.joints[j].is_actuated()).collect()
    }

    /// Sum of link masses, kg.
    pub fn total_mass(&self) -> f64 {
        self.links.iter().filter_map(|l| l.inertial.map(|i| i.mass)).sum()
    }

    /// Joints in an order where every joint comes after the joint that attaches its parent
    /// link (parents before children), starting from the root.
    pub fn joints_topological(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.joints.len());
        let mut frontier = vec![self.root];
        while let Some(link) = frontier.pop() {
            for (j, joint) in self.joints.iter().enumerate() {
                if joint.parent == link {
                    order.push(j);
                    frontier.push(joint.child);
                }
            }
        }
        order
    }
}
