//! MJCF (MuJoCo XML) import: [`load_mjcf`] and [`parse_mjcf`] turn a MuJoCo model into a
//! validated [`RobotModel`] plus what MJCF says beyond it ([`MjcfRobot`]: actuators, armature,
//! sites, cameras, collision filters).
//!
//! # Why a parser of our own
//!
//! rapier's `rapier3d-mjcf` 0.36.1 (with its parser `mjcf-rs` 0.36.1) builds rapier bodies,
//! colliders and joints; embodia needs a [`RobotModel`], its own engine-independent
//! description that the simulator, the renderer, kinematics and `robot check` all read, so its
//! output would have to be converted back. Its parser also cannot meet embodia's error
//! standard: `mjcf-rs` keeps no source positions (its `ParseError` has no line), skips
//! elements and attributes it does not know without a word (its element loops end in
//! `_ => {}`, and `<tendon><spatial>` is dropped with a debug log), and it depends on
//! roxmltree 0.20 next to the 0.21 this crate uses. So this module reads MJCF with roxmltree
//! directly, like [`urdf`](crate::urdf), and refuses what it cannot represent.
//!
//! # What is read
//!
//! - `<compiler>`: `angle` (`degree`, the MJCF default, or `radian`: converts joint ranges of
//!   hinges, `euler` and `axisangle`), `eulerseq`, `meshdir`/`assetdir`, `autolimits`,
//!   `inertiafromgeom` (`auto`, `true`, `false`), `coordinate="local"`.
//! - `<default>` classes, nested, with `class` and `childclass` (see [`defaults`]).
//! - `<asset>`: `<mesh name file scale>` (STL or OBJ, loaded as for URDF) and
//!   `<material name rgba>`; `<texture>` is ignored (embodia draws flat colours).
//! - `<worldbody>`: nested `<body name pos quat|axisangle|euler|xyaxes|zaxis childclass>`
//!   with `<inertial pos … mass diaginertia|fullinertia>`, at most one `<joint>` (`hinge`,
//!   `slide`; `free` or `<freejoint>` only on the one top-level body) with `pos axis range
//!   limited damping frictionloss armature actuatorfrcrange actuatorfrclimited`,
//!   `<geom>` (`sphere`, `capsule`, `cylinder`, `box`, `mesh`; `size`, `fromto`, pose,
//!   `rgba`, `material`, `contype`, `conaffinity`, `group`, `mass`, `density`), `<site>`
//!   and `<camera>`.
//! - `<contact><exclude body1 body2>`, `<equality><joint joint1 joint2 polycoef>` with a
//!   linear polynomial (becomes a [`Mimic`]).
//! - `<actuator>`: `<motor>`, `<position kp kv>`, `<velocity kv>` and `<general>` with a fixed
//!   gain and no or an affine (PD) bias, each on a `joint`, with `gear`, `ctrlrange`,
//!   `forcerange` and their `*limited` flags:
//!
//!   | MJCF | embodia [`ActuatorConfig`] |
//!   |---|---|
//!   | `<motor gear>` | torque; effort limit `gear` times the larger `ctrlrange` bound, and `forcerange` |
//!   | `<position kp kv>` | position, stiffness `kp`, damping `kv` |
//!   | `<velocity kv>` | velocity, damping `kv` |
//!   | `<general gainprm="g">` (no bias) | torque, `g · gear` per unit of control |
//!   | `<general gainprm="kp" biastype="affine" biasprm="0 -kp -kv">` | position, `kp`, `kv` |
//!
//!   Position and velocity actuators need `gear` 1 (embodia's drives have no gear, and a gear
//!   would scale MuJoCo's gains by its square), `forcerange` must be symmetric, and activation
//!   dynamics (`dyntype`, `timeconst`) are refused.
//!
//! # How MJCF maps onto a `RobotModel`
//!
//! Every body is a link named after the body (unnamed bodies are `body<N>`, N counting bodies
//! in document order from 1, as MuJoCo numbers them). A body without a joint is attached by a
//! fixed joint named after the body. A joint's `pos` moves the link frame onto the joint
//! anchor: the link frame is the body frame translated by `pos`, and the body's geoms,
//! inertia, sites and cameras are expressed in it. Joint velocity limits do not exist in MJCF
//! and are infinite; a joint's effort limit is the tightest of its `actuatorfrcrange`, its
//! actuators' `forcerange` and, for motors, `gear · ctrlrange` (infinite without any).
//! A geom is a visual when its `group` is 0, 1 or 2 (MuJoCo's visible groups) and a collision
//! shape when its `contype` or `conaffinity` is non-zero; meshes collide as convex hulls, as in
//! MuJoCo. When a body has no `<inertial>` its mass and inertia are computed from its geoms
//! (`mass`, else `density`, default 1000 kg/m³), as MuJoCo does.
//!
//! If the model has one top-level body with no joint or a free joint, that body is the root
//! (a free joint sets [`MjcfRobot::floating_base`]). Otherwise a massless root link `world` is
//! added and the top-level bodies hang from it.
//!
//! # What is refused or skipped
//!
//! Elements that change the dynamics and have no counterpart in embodia are errors naming the
//! element and its line: `<tendon>`, `<equality>` other than linear joint couplings,
//! `<plugin>`/`<extension>`, `<flex>`/`<flexcomp>`/`<deformable>`/`<composite>`/`<skin>`,
//! `<include>`, `<frame>`, `<replicate>`, `<attach>`, `<contact><pair>`, ball joints, bodies
//! with more than one joint, joint springs (`stiffness`) and `ref`, ellipsoid, plane (inside
//! a body), hfield and sdf geoms, and actuators other than the ones above or on transmissions
//! other than a joint. Elements that describe the scene or the simulation rather than the
//! robot — `<option>`, `<size>`, `<visual>`, `<statistic>`, `<custom>`, `<keyframe>`,
//! `<sensor>`, `<light>`, and geoms, sites and cameras directly in `<worldbody>` (a floor is
//! the task's `scene.ground`) — are not used; each is listed in [`MjcfRobot::skipped`] with its
//! line, and `embodia robot check` prints that list. Attributes not named above (contact
//! parameters such as `condim`, `friction`, `solref`, `margin`) are not read.
//!
//! Units are MuJoCo's: metres, radians (or degrees where `angle="degree"`), kilograms, kg·m²,
//! seconds, N and N·m. Parsing never panics and never prints.

mod actuator;
mod attributes;
mod body;
pub mod defaults;
mod error;
mod frame;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use roxmltree::{Document, Node};

use crate::actuator::ActuatorConfig;
use crate::model::{Joint, Link, MeshData, Mimic, Pose, RobotModel};
use defaults::Defaults;
pub use error::{MjcfError, MjcfErrorKind};

/// Reads the MJCF file at `path` and parses it with [`parse_mjcf`], resolving meshes relative
/// to the file's directory. Errors name `path` as given.
pub fn load_mjcf(path: &Path) -> Result<MjcfRobot, MjcfError> {
    let xml = std::fs::read_to_string(path).map_err(|e| MjcfError::new(None, MjcfErrorKind::Read(e)).in_file(path))?;
    parse_mjcf(&xml, Some(path.parent().unwrap_or(Path::new("")))).map_err(|e| e.in_file(path))
}

/// Parses the MJCF text `xml` (see the [module docs](self)). Mesh files are resolved
/// relative to `base_dir` (and the compiler's `meshdir`); without one, a mesh is an error.
pub fn parse_mjcf(xml: &str, base_dir: Option<&Path>) -> Result<MjcfRobot, MjcfError> {
    let doc = Document::parse(xml).map_err(|e| MjcfError::new(Some(e.pos().row), MjcfErrorKind::Xml(e)))?;
    Parser::new(&doc, base_dir).run()
}

/// A robot read from MJCF: the [`RobotModel`] and what MJCF adds to it.
#[derive(Debug, Clone, PartialEq)]
pub struct MjcfRobot {
    /// Links, joints and shapes.
    pub model: RobotModel,
    /// Per joint of [`model`](Self::model) (same indices): the `armature`, kg·m² or kg
    /// (reflected rotor inertia; 0 for fixed joints).
    pub armature: Vec<f64>,
    /// The `<actuator>` elements, in document order (the order of MuJoCo's `ctrl` vector,
    /// which need not be the joint order).
    pub actuators: Vec<MjcfActuator>,
    /// `<site>` frames (end effectors, markers).
    pub sites: Vec<Site>,
    /// `<camera>` elements attached to bodies.
    pub cameras: Vec<Camera>,
    /// Collision bitmasks of every collision shape.
    pub collision_filters: Vec<CollisionFilter>,
    /// `<contact><exclude>` pairs, as link indices.
    pub excluded_pairs: Vec<(usize, usize)>,
    /// Whether the root body has a free joint (MuJoCo lets it fly; embodia's task decides
    /// with `scene.fixed_base`).
    pub floating_base: bool,
    /// Elements that were read but describe the scene or the simulation, not the robot, in
    /// line order.
    pub skipped: Vec<Skipped>,
}

/// An `<actuator>` child, mapped onto embodia's [`ActuatorConfig`].
#[derive(Debug, Clone, PartialEq)]
pub struct MjcfActuator {
    /// The `name` (or `actuator<N>`, N counting actuators from 0).
    pub name: String,
    /// The MJCF element: `motor`, `position`, `velocity` or `general`.
    pub element: String,
    /// Index of the driven joint in [`RobotModel::joints`].
    pub joint: usize,
    /// Control mode, gains and effort limit (`effort_limit`: from `forcerange`, and for
    /// torque actuators also `gear · ctrlrange`; `None` when unlimited). `armature` is the
    /// joint's.
    pub config: ActuatorConfig,
    /// `ctrlrange` when limited, in the control's units (N·m per `gear` for motors, rad or m
    /// for position actuators, rad/s or m/s for velocity actuators).
    pub ctrl_range: Option<[f64; 2]>,
    /// Effort per unit of control for torque actuators (`gear`, times the gain of a
    /// `<general>`); 1 for position and velocity actuators.
    pub gear: f64,
}

/// A named frame on a link (MJCF `<site>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// The `name` (or `site<N>`, N counting sites from 0).
    pub name: String,
    /// Index of the link in [`RobotModel::links`].
    pub link: usize,
    /// Placement relative to the link frame.
    pub origin: Pose,
}

/// A camera on a link (MJCF `<camera>`: it looks along its frame's −z axis, +y up).
#[derive(Debug, Clone, PartialEq)]
pub struct Camera {
    /// The `name` (or `camera<N>`).
    pub name: String,
    /// Index of the link in [`RobotModel::links`].
    pub link: usize,
    /// Placement relative to the link frame.
    pub origin: Pose,
    /// Vertical field of view, degrees (`fovy`, default 45).
    pub fovy_deg: f64,
    /// `mode` (`fixed` unless the model says `track`, `trackcom`, …).
    pub mode: String,
}

/// The MuJoCo collision bitmasks of one collision shape: two shapes may touch when
/// `contype` of one and `conaffinity` of the other share a bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollisionFilter {
    /// Index of the link in [`RobotModel::links`].
    pub link: usize,
    /// Index of the shape in that link's [`Link::collisions`].
    pub shape: usize,
    /// `contype` (default 1).
    pub contype: u32,
    /// `conaffinity` (default 1).
    pub conaffinity: u32,
}

/// An element that was read but not used (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The element, e.g. `<sensor>` or `<geom name="floor">`.
    pub element: String,
    /// Its 1-based line.
    pub line: u32,
    /// Why it is not part of the robot.
    pub reason: &'static str,
}

impl MjcfRobot {
    /// The actuator driving joint `joint` (index into [`RobotModel::joints`]), if any.
    pub fn actuator_of(&self, joint: usize) -> Option<&MjcfActuator> {
        self.actuators.iter().find(|a| a.joint == joint)
    }

    /// [`model`](Self::model) with every site added as a massless link, fixed to the site's
    /// link and named after the site, so that a task can name a site as its end effector
    /// (`scene.end_effector`). A site whose name is already a link or joint name is not added
    /// (the name keeps meaning the link).
    pub fn model_with_sites(&self) -> RobotModel {
        let mut m = self.model.clone();
        for site in &self.sites {
            if m.link_index(&site.name).is_some() || m.joint_index(&site.name).is_some() {
                continue;
            }
            let child = m.links.len();
            m.links.push(Link { name: site.name.clone(), inertial: None, visuals: vec![], collisions: vec![] });
            m.joints.push(Joint {
                name: site.name.clone(),
                kind: crate::JointKind::Fixed,
                parent: site.link,
                child,
                origin: site.origin,
                axis: [1.0, 0.0, 0.0],
                limit: None,
                dynamics: crate::JointDynamics::default(),
                mimic: None,
            });
        }
        m
    }

    /// The site called `name`.
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.sites.iter().find(|s| s.name == name)
    }

    /// [`RobotModel::summary`], then the actuators, sites, cameras, excluded pairs and the
    /// skipped elements, one per line.
    pub fn summary(&self) -> String {
        let m = &self.model;
        let mut out = m.summary();
        if self.floating_base {
            out.push_str("root: free joint (floating base)\n");
        }
        if self.armature.iter().any(|&a| a > 0.0) {
            out.push_str("armature:\n");
            for (j, a) in self.armature.iter().enumerate().filter(|(_, a)| **a > 0.0) {
                out.push_str(&format!("  {}  {a}\n", m.joints[j].name));
            }
        }
        if !self.actuators.is_empty() {
            out.push_str("actuators:\n");
            for a in &self.actuators {
                let mode = match a.config.mode {
                    crate::ControlMode::Position => {
                        format!("position kp {} kv {}", a.config.stiffness, a.config.damping)
                    }
                    crate::ControlMode::Velocity => format!("velocity kv {}", a.config.damping),
                    crate::ControlMode::Torque => format!("torque gear {}", a.gear),
                };
                let effort = a.config.effort_limit.map_or("unlimited".to_string(), |e| e.to_string());
                let ctrl = a.ctrl_range.map_or("unlimited".to_string(), |[lo, hi]| format!("[{lo}, {hi}]"));
                out.push_str(&format!(
                    "  {}  <{}> -> {}  {mode}  ctrl {ctrl}  effort {effort}\n",
                    a.name, a.element, m.joints[a.joint].name
                ));
            }
        }
        for (title, frames) in [
            ("sites", self.sites.iter().map(|s| (&s.name, s.link)).collect::<Vec<_>>()),
            ("cameras", self.cameras.iter().map(|c| (&c.name, c.link)).collect()),
        ] {
            if !frames.is_empty() {
                out.push_str(&format!("{title}:\n"));
                for (name, link) in frames {
                    out.push_str(&format!("  {name}  on {}\n", m.links[link].name));
                }
            }
        }
        if !self.excluded_pairs.is_empty() {
            out.push_str("excluded contacts:\n");
            for &(a, b) in &self.excluded_pairs {
                out.push_str(&format!("  {} - {}\n", m.links[a].name, m.links[b].name));
            }
        }
        if !self.skipped.is_empty() {
            out.push_str("not used (scene or simulation settings, not the robot):\n");
            for s in &self.skipped {
                out.push_str(&format!("  line {}: {}: {}\n", s.line, s.element, s.reason));
            }
        }
        out
    }
}

type Result<T, E = MjcfError> = std::result::Result<T, E>;

/// Angle unit and frame conventions of `<compiler>`.
#[derive(Debug, Clone)]
struct Compiler {
    /// Multiplies angles written in the file to get radians.
    angle_scale: f64,
    eulerseq: [u8; 3],
    meshdir: Option<String>,
    autolimits: bool,
    inertia_from_geom: InertiaFromGeom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InertiaFromGeom {
    /// Only for bodies without `<inertial>`.
    Auto,
    /// Always (ignore `<inertial>`).
    Always,
    /// Never (bodies without `<inertial>` are massless).
    Never,
}

impl Default for Compiler {
    fn default() -> Self {
        Self {
            angle_scale: std::f64::consts::PI / 180.0,
            eulerseq: *b"xyz",
            meshdir: None,
            autolimits: true,
            inertia_from_geom: InertiaFromGeom::Auto,
        }
    }
}

/// A `<mesh>` asset: its element, file and scale.
struct MeshAsset<'a, 'i> {
    node: Node<'a, 'i>,
    file: &'a str,
    scale: [f64; 3],
}

/// One pass over a parsed document; the output is built up in the fields below `defaults`.
struct Parser<'a, 'i> {
    doc: &'a Document<'i>,
    base_dir: Option<&'a Path>,
    compiler: Compiler,
    defaults: Defaults<'a>,
    mesh_assets: HashMap<&'a str, MeshAsset<'a, 'i>>,
    materials: HashMap<&'a str, (Node<'a, 'i>, [f32; 4])>,
    mesh_cache: HashMap<PathBuf, MeshData>,

    links: Vec<Link>,
    link_nodes: Vec<Option<Node<'a, 'i>>>,
    /// Link index by body name.
    body_link: HashMap<String, usize>,
    /// Translation from each link's body frame to its link frame (the joint `pos`).
    link_offset: Vec<[f64; 3]>,
    joints: Vec<Joint>,
    joint_nodes: Vec<Node<'a, 'i>>,
    joint_index: HashMap<String, usize>,
    armature: Vec<f64>,
    /// The `actuatorfrcrange` limit of each joint (infinite when unlimited).
    joint_force_limit: Vec<f64>,
    sites: Vec<Site>,
    /// Line of each site, for duplicate-name errors.
    site_lines: Vec<u32>,
    cameras: Vec<Camera>,
    collision_filters: Vec<CollisionFilter>,
    skipped: Vec<Skipped>,
    floating_base: bool,
    /// Bodies seen so far (for `body<N>` names).
    body_count: usize,
}

/// Top-level elements that describe the simulation or the scene rather than the robot.
const SKIPPED_TOP_LEVEL: [(&str, &str); 7] = [
    ("option", "simulation options come from the task (scene.physics_dt, gravity)"),
    ("size", "memory sizes are MuJoCo's"),
    ("visual", "MuJoCo viewer settings"),
    ("statistic", "MuJoCo viewer settings"),
    ("custom", "custom numeric data is not part of the robot"),
    ("keyframe", "initial states come from the task (scene.default_joint_positions)"),
    ("sensor", "observations come from the task's terms"),
];

/// Top-level elements that are refused, with the reason.
const REFUSED_TOP_LEVEL: [(&str, &str); 7] = [
    ("tendon", "tendons have no counterpart in embodia's RobotModel"),
    ("include", "inline the included file: embodia reads one file so that every error has its line"),
    ("extension", "MuJoCo plugins cannot run in embodia"),
    ("plugin", "MuJoCo plugins cannot run in embodia"),
    ("deformable", "flexible bodies are not simulated"),
    ("flex", "flexible bodies are not simulated"),
    ("skin", "skins belong to flexible bodies, which are not simulated"),
];

impl<'a, 'i> Parser<'a, 'i> {
    fn new(doc: &'a Document<'i>, base_dir: Option<&'a Path>) -> Self {
        Self {
            doc,
            base_dir,
            compiler: Compiler::default(),
            defaults: Defaults::default(),
            mesh_assets: HashMap::new(),
            materials: HashMap::new(),
            mesh_cache: HashMap::new(),
            links: Vec::new(),
            link_nodes: Vec::new(),
            body_link: HashMap::new(),
            link_offset: Vec::new(),
            joints: Vec::new(),
            joint_nodes: Vec::new(),
            joint_index: HashMap::new(),
            armature: Vec::new(),
            joint_force_limit: Vec::new(),
            sites: Vec::new(),
            site_lines: Vec::new(),
            cameras: Vec::new(),
            collision_filters: Vec::new(),
            skipped: Vec::new(),
            floating_base: false,
            body_count: 0,
        }
    }

    fn run(mut self) -> Result<MjcfRobot> {
        let root = self.doc.root_element();
        if !root.has_tag_name("mujoco") {
            return Err(self.error(root, MjcfErrorKind::NotMujoco(root.tag_name().name().to_string())));
        }
        let name = root.attribute("model").unwrap_or("robot").to_string();
        let top: Vec<Node> = root.children().filter(Node::is_element).collect();

        // Refusals and skips first, so that an unsupported element is reported before
        // anything that depends on it fails.
        for &node in &top {
            let tag = node.tag_name().name();
            if let Some((_, reason)) = REFUSED_TOP_LEVEL.iter().find(|(t, _)| *t == tag) {
                // An empty <tendon/> or <extension/> changes nothing.
                if node.children().any(|c| c.is_element()) || tag == "include" {
                    return Err(self.unsupported(node, reason));
                }
            } else if let Some((_, reason)) = SKIPPED_TOP_LEVEL.iter().find(|(t, _)| *t == tag) {
                self.skip(node, reason);
            } else if !matches!(
                tag,
                "compiler" | "default" | "asset" | "worldbody" | "contact" | "equality" | "actuator"
            ) {
                return Err(self.unsupported(node, "not an MJCF element embodia knows"));
            }
        }
        for &node in top.iter().filter(|n| n.has_tag_name("compiler")) {
            self.compiler(node)?;
        }
        self.defaults = Defaults::read(top.iter().copied().filter(|n| n.has_tag_name("default")))
            .map_err(|(pos, message)| self.error_at(pos, MjcfErrorKind::Structure(message)))?;
        for &node in top.iter().filter(|n| n.has_tag_name("asset")) {
            self.assets(node)?;
        }
        let worldbodies: Vec<Node> = top.iter().copied().filter(|n| n.has_tag_name("worldbody")).collect();
        self.worldbody(root, &worldbodies)?;

        let mut excluded_pairs = Vec::new();
        for &node in top.iter().filter(|n| n.has_tag_name("contact")) {
            self.contact(node, &mut excluded_pairs)?;
        }
        for &node in top.iter().filter(|n| n.has_tag_name("equality")) {
            self.equality(node)?;
        }
        let mut actuators = Vec::new();
        for &node in top.iter().filter(|n| n.has_tag_name("actuator")) {
            self.actuators(node, &mut actuators)?;
        }
        self.apply_effort_limits(&actuators);

        self.skipped.sort_by_key(|s| s.line);
        let model = RobotModel { name, links: self.links, joints: self.joints, root: 0 };
        Ok(MjcfRobot {
            model,
            armature: self.armature,
            actuators,
            sites: self.sites,
            cameras: self.cameras,
            collision_filters: self.collision_filters,
            excluded_pairs,
            floating_base: self.floating_base,
            skipped: self.skipped,
        })
    }

    fn compiler(&mut self, node: Node<'a, 'i>) -> Result<()> {
        for a in node.attributes() {
            let value = a.value();
            let bad = |allowed: &str| {
                self.error_at(
                    a.range().start,
                    MjcfErrorKind::UnsupportedValue {
                        tag: "compiler".into(),
                        attribute: a.name().into(),
                        value: value.into(),
                        allowed: allowed.into(),
                    },
                )
            };
            match a.name() {
                "angle" => {
                    self.compiler.angle_scale = match value {
                        "degree" => std::f64::consts::PI / 180.0,
                        "radian" => 1.0,
                        _ => return Err(bad("expected degree or radian")),
                    }
                }
                "eulerseq" => {
                    let seq: [u8; 3] = value.as_bytes().try_into().map_err(|_| bad("expected 3 of x y z X Y Z"))?;
                    if !seq.iter().all(|c| b"xyzXYZ".contains(c)) {
                        return Err(bad("expected 3 of x y z X Y Z"));
                    }
                    self.compiler.eulerseq = seq;
                }
                // meshdir wins over assetdir for meshes, as in MuJoCo.
                "meshdir" => self.compiler.meshdir = Some(value.to_string()),
                "assetdir" => {
                    self.compiler.meshdir.get_or_insert_with(|| value.to_string());
                }
                "autolimits" => self.compiler.autolimits = self.boolean(node, "autolimits")?.unwrap_or(true),
                "inertiafromgeom" => {
                    self.compiler.inertia_from_geom = match value {
                        "auto" => InertiaFromGeom::Auto,
                        "true" => InertiaFromGeom::Always,
                        "false" => InertiaFromGeom::Never,
                        _ => return Err(bad("expected auto, true or false")),
                    }
                }
                "coordinate" if value != "local" => {
                    return Err(bad("only local coordinates are supported (MuJoCo itself dropped global)"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn assets(&mut self, node: Node<'a, 'i>) -> Result<()> {
        for child in node.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "mesh" => {
                    let file = self.attr(child, "file")?;
                    if ["vertex", "face", "normal"].iter().any(|a| child.attribute(*a).is_some()) {
                        return Err(self.unsupported(child, "inline mesh data: put the mesh in an STL or OBJ file"));
                    }
                    let name = child.attribute("name").unwrap_or_else(|| {
                        // MuJoCo names a mesh after its file without the extension.
                        let stem = file.rsplit(['/', '\\']).next().unwrap_or(file);
                        stem.rsplit_once('.').map_or(stem, |(s, _)| s)
                    });
                    let scale = self.numbers::<3>(child, "scale")?.unwrap_or([1.0; 3]);
                    if let Some(first) = self.mesh_assets.get(name) {
                        return Err(self.duplicate(child, "mesh", name, first.node));
                    }
                    self.mesh_assets.insert(name, MeshAsset { node: child, file, scale });
                }
                "material" => {
                    let name = self.attr(child, "name")?;
                    let rgba = self.rgba(child)?.unwrap_or([1.0; 4]);
                    if let Some(&(first, _)) = self.materials.get(name) {
                        return Err(self.duplicate(child, "material", name, first));
                    }
                    self.materials.insert(name, (child, rgba));
                }
                "texture" => self.skip(child, "textures are not drawn; embodia uses flat colours"),
                "hfield" | "skin" => return Err(self.unsupported(child, "height fields and skins are not simulated")),
                _ => return Err(self.unsupported(child, "not an MJCF asset embodia knows")),
            }
        }
        Ok(())
    }

    fn contact(&mut self, node: Node<'a, 'i>, pairs: &mut Vec<(usize, usize)>) -> Result<()> {
        for child in node.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "exclude" => {
                    let link = |attr: &str| -> Result<usize> {
                        let name = self.attr(child, attr)?;
                        self.body_link.get(name).copied().ok_or_else(|| {
                            self.error_at_attr(
                                child,
                                attr,
                                MjcfErrorKind::Undefined { what: "body", name: name.into() },
                            )
                        })
                    };
                    pairs.push((link("body1")?, link("body2")?));
                }
                "pair" => {
                    return Err(self.unsupported(
                        child,
                        "explicit contact pairs are not simulated; embodia's collisions follow contype/conaffinity",
                    ));
                }
                _ => return Err(self.unsupported(child, "expected <exclude>")),
            }
        }
        Ok(())
    }

    fn equality(&mut self, node: Node<'a, 'i>) -> Result<()> {
        for child in node.children().filter(Node::is_element) {
            if !child.has_tag_name("joint") {
                return Err(self.unsupported(
                    child,
                    "only <joint> equalities (one joint following another linearly) are supported",
                ));
            }
            let joint = |attr: &str| -> Result<usize> {
                let name = self.attr(child, attr)?;
                self.joint_index.get(name).copied().ok_or_else(|| {
                    self.error_at_attr(child, attr, MjcfErrorKind::Undefined { what: "joint", name: name.into() })
                })
            };
            let follower = joint("joint1")?;
            if child.attribute("joint2").is_none() {
                return Err(
                    self.unsupported(child, "a <joint> equality without joint2 locks the joint; embodia cannot")
                );
            }
            let source = joint("joint2")?;
            let coef = self.number_list(child, "polycoef")?.unwrap_or_else(|| vec![0.0, 1.0, 0.0, 0.0, 0.0]);
            if coef.len() != 5 || coef[2..].iter().any(|&c| c != 0.0) {
                let value = child.attribute("polycoef").unwrap_or_default().to_string();
                return Err(self.error_at_attr(
                    child,
                    "polycoef",
                    MjcfErrorKind::UnsupportedValue {
                        tag: "joint".into(),
                        attribute: "polycoef".into(),
                        value,
                        allowed: "only linear couplings `a0 a1 0 0 0` are supported (q1 = a0 + a1·q2)".into(),
                    },
                ));
            }
            let structure = |message: String| self.error(child, MjcfErrorKind::Structure(message));
            if follower == source {
                return Err(structure("a joint cannot follow itself".into()));
            }
            for j in [follower, source] {
                if self.joints[j].kind.dof() != 1 {
                    return Err(structure(format!(
                        "joint \"{}\" has no single degree of freedom",
                        self.joints[j].name
                    )));
                }
            }
            if let Some(m) = self.joints[source].mimic {
                return Err(structure(format!(
                    "joint \"{}\" itself follows joint \"{}\"; couple to that one directly",
                    self.joints[source].name, self.joints[m.joint].name
                )));
            }
            if self.joints[follower].mimic.is_some()
                || self.joints.iter().any(|j| j.mimic.is_some_and(|m| m.joint == follower))
            {
                return Err(structure(format!("joint \"{}\" is already coupled", self.joints[follower].name)));
            }
            self.joints[follower].mimic = Some(Mimic { joint: source, multiplier: coef[1], offset: coef[0] });
        }
        Ok(())
    }
}
