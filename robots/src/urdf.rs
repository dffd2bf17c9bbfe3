//! URDF import: [`load_urdf`] and [`parse_urdf`] turn a URDF document into a validated
//! [`RobotModel`].
//!
//! # What is read
//!
//! - `<robot name>` and, below it, `<link>`, `<joint>` and named `<material>` elements; other
//!   elements (`<transmission>`, `<gazebo>`, …) are ignored.
//! - `<link>`: `<inertial>` (`<origin>`, `<mass value>`, `<inertia ixx ixy ixz iyy iyz izz>`),
//!   any number of `<visual>` and `<collision>` elements (`name`, `<origin>`, `<geometry>` with
//!   one of `<box size>`, `<sphere radius>`, `<cylinder radius length>`,
//!   `<capsule radius length>`, `<mesh filename scale>`), and for visuals
//!   `<material>` with a `<color rgba>` or the name of a top-level material.
//! - `<joint name type>` of type `revolute`, `continuous`, `prismatic`, `fixed` or `floating`
//!   (`planar` is refused as unsupported) with `<parent link>`, `<child link>`,
//!   `<origin xyz rpy>` (default identity), `<axis xyz>` (default `1 0 0`, normalized),
//!   `<limit lower upper effort velocity>` (required for revolute and prismatic joints;
//!   `lower`/`upper` default to 0), `<dynamics damping friction>` (default 0) and
//!   `<mimic joint multiplier offset>` (default multiplier 1, offset 0).
//!
//! Units are those of URDF: metres, radians, kilograms, kg·m², seconds, N and N·m.
//!
//! # Meshes
//!
//! STL (binary or ASCII) and OBJ files are loaded, chosen by the file extension; OBJ polygons
//! are triangulated and all objects of a file merged. `scale` multiplies the vertices (a
//! mirroring scale also flips the triangles, keeping them outward-facing). Files are found
//! relative to the directory of the URDF (`base_dir`):
//!
//! - `package://pkg/rest`: the first existing file among `D/rest` and `D/pkg/rest`, for `D` =
//!   `base_dir`, `base_dir/..` and `base_dir/../..` (in that order). This covers the ROS layout
//!   `pkg/urdf/robot.urdf` + `pkg/meshes/…` and a package folder next to the URDF, without a
//!   ROS workspace.
//! - `file:///abs/path`: that path.
//! - anything else: relative to `base_dir` (or absolute).
//!
//! A mesh becomes a convex hull for collision unless its `<mesh>` carries an attribute whose
//! name ends with `collision` set to `trimesh` (the embodia extension
//! `<mesh filename="…" embodia:collision="trimesh"/>`, with
//! `xmlns:embodia="https://embodia.dev/urdf"` — any URI — declared on `<robot>` as XML requires
//! for a prefix); `convex` selects the default explicitly.
//!
//! # Errors
//!
//! Anything that does not make a valid tree of finite, physical quantities is a [`UrdfError`]
//! naming the file, the line and the top-level element, e.g.
//! `robot.urdf:42: joint "elbow": parent link "upper_arm" does not exist`. The line is the
//! 1-based line where the offending attribute, or else the offending element, starts.
//! Parsing never panics and never prints.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use roxmltree::{Document, Node};

use crate::model::{
    Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, MeshCollision, MeshData, Mimic, Pose,
    RobotModel, Shape,
};

/// Relative tolerance of the inertia triangle inequalities (`ixx + iyy ≥ izz` …), as a fraction
/// of the trace: it accepts values rounded to 3–4 significant digits, as many URDFs print them.
const INERTIA_TOLERANCE: f64 = 1e-3;

/// Reads the URDF file at `path` and parses it with [`parse_urdf`], resolving meshes relative
/// to the file's directory. Errors name `path` as given.
pub fn load_urdf(path: &Path) -> Result<RobotModel, UrdfError> {
    let xml = std::fs::read_to_string(path).map_err(|e| UrdfError::new(None, UrdfErrorKind::Read(e)).in_file(path))?;
    parse_urdf(&xml, Some(path.parent().unwrap_or(Path::new("")))).map_err(|e| e.in_file(path))
}

/// Parses the URDF text `xml` into a validated [`RobotModel`] (see the [module docs](self) for
/// what is read and checked). Mesh files are resolved relative to `base_dir`; without one, a
/// `<mesh>` is an error.
pub fn parse_urdf(xml: &str, base_dir: Option<&Path>) -> Result<RobotModel, UrdfError> {
    let doc = Document::parse(xml).map_err(|e| UrdfError::new(Some(e.pos().row), UrdfErrorKind::Xml(e)))?;
    Parser { doc: &doc, base_dir, materials: HashMap::new(), meshes: HashMap::new() }.robot()
}

/// An invalid or unreadable URDF: what is wrong ([`kind`](Self::kind)) and where.
///
/// Displays as `FILE:LINE: ELEMENT: MESSAGE`, e.g.
/// `robot.urdf:42: joint "elbow": parent link "upper_arm" does not exist`, leaving out what is
/// not known; without a file (from [`parse_urdf`]) the location reads `line 42:`.
#[derive(Debug)]
pub struct UrdfError(Box<ErrorInner>);

#[derive(Debug)]
struct ErrorInner {
    file: Option<PathBuf>,
    line: Option<u32>,
    element: Option<String>,
    kind: UrdfErrorKind,
}

impl UrdfError {
    fn new(line: Option<u32>, kind: UrdfErrorKind) -> Self {
        Self(Box::new(ErrorInner { file: None, line, element: None, kind }))
    }

    /// Names the top-level element the error is in, unless it already names one.
    fn within(mut self, tag: &str, name: &str) -> Self {
        self.0.element.get_or_insert_with(|| format!("{tag} \"{name}\""));
        self
    }

    /// The URDF file, when read with [`load_urdf`] or named with [`in_file`](Self::in_file).
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    /// The same error, attributed to `path` (for descriptions parsed from text that came from
    /// a file, e.g. an embedded asset).
    pub fn in_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.0.file = Some(path.into());
        self
    }

    /// The 1-based line of the offending attribute or element (`None` when the file could not
    /// be read).
    pub fn line(&self) -> Option<u32> {
        self.0.line
    }

    /// The top-level element the problem is in, as `joint "elbow"`, `link "base"` or
    /// `material "red"` (`None` for problems with the document as a whole).
    pub fn element(&self) -> Option<&str> {
        self.0.element.as_deref()
    }

    /// What is wrong.
    pub fn kind(&self) -> &UrdfErrorKind {
        &self.0.kind
    }
}

impl fmt::Display for UrdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ErrorInner { file, line, element, kind } = &*self.0;
        match (file, line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        if let Some(element) = element {
            write!(f, "{element}: ")?;
        }
        write!(f, "{kind}")
    }
}

impl std::error::Error for UrdfError {}

/// A number as an error message shows it: plainly, or in scientific notation when its plain
/// form would be long (a fuzzed `1e300` printed in full is 301 digits).
pub(crate) fn readable_number(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() > 16 { format!("{value:e}") } else { plain }
}

/// What is wrong with a URDF (the message of a [`UrdfError`], which adds the location).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UrdfErrorKind {
    /// The URDF file could not be read.
    #[error("cannot read the file: {0}")]
    Read(io::Error),
    /// The text is not well-formed XML (an undeclared prefix such as `embodia:` included).
    #[error("XML syntax error: {0}{hint}", hint = namespace_hint(.0))]
    Xml(roxmltree::Error),
    /// The document element is not `<robot>`.
    #[error("the document element is <{0}>, expected <robot>")]
    NotRobot(String),
    /// A required attribute is absent.
    #[error("<{tag}> has no `{attribute}` attribute")]
    MissingAttribute {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
    },
    /// A required child element is absent.
    #[error("<{parent}> has no <{child}> element")]
    MissingElement {
        /// The element that lacks the child.
        parent: String,
        /// The missing child (alternatives separated by `|`).
        child: String,
    },
    /// An attribute is not the expected count of numbers.
    #[error("<{tag} {attribute}=\"{value}\">: expected {}", count_of_numbers(*.count))]
    InvalidNumber {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The attribute's text.
        value: String,
        /// How many numbers it must hold.
        count: usize,
    },
    /// A number is NaN or infinite.
    #[error("<{tag} {attribute}=\"{value}\">: numbers must be finite")]
    NonFinite {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The attribute's text.
        value: String,
    },
    /// A quantity that must be positive is not: a mass, a diagonal inertia entry, a joint's
    /// effort or velocity limit.
    #[error("<{tag} {attribute}>: must be > 0, got {}", readable_number(*.value))]
    NotPositive {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The value found.
        value: f64,
    },
    /// A mass or inertia entry above its bound ([`crate::model::MAX_MASS`],
    /// [`crate::model::MAX_INERTIA`]).
    #[error("<{tag} {attribute}>: at most {max:e} allowed, got {value:e}")]
    TooLarge {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The value found.
        value: f64,
        /// The bound.
        max: f64,
    },
    /// A quantity that must not be negative is: a geometry size, damping or friction.
    #[error("<{tag} {attribute}>: must be ≥ 0, got {}", readable_number(*.value))]
    Negative {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The value found.
        value: f64,
    },
    /// The inertia breaks a triangle inequality, e.g. `ixx + iyy < izz`: no rigid body has it.
    #[error(
        "<inertia>: {} + {} < {} ({} + {} < {}), which no rigid body has",
        .names[0], .names[1], .names[2], .values[0], .values[1], .values[2]
    )]
    InertiaTriangle {
        /// The two entries whose sum is too small, then the third.
        names: [&'static str; 3],
        /// Their values, kg·m².
        values: [f64; 3],
    },
    /// A colour component outside `[0, 1]`.
    #[error("<color rgba=\"{0}\">: components must lie in [0, 1]")]
    ColorOutOfRange(String),
    /// A link, joint or material name used twice.
    #[error("name already used by the {what} on line {first_line}")]
    DuplicateName {
        /// `"link"`, `"joint"` or `"material"`.
        what: &'static str,
        /// Line of the first element with the name.
        first_line: u32,
    },
    /// A joint `type` that URDF does not define.
    #[error("unknown joint type `{0}` (expected revolute, continuous, prismatic, fixed or floating)")]
    UnknownJointType(String),
    /// A URDF joint type that embodia does not simulate (`planar`).
    #[error("joint type `{0}` is not supported (supported: revolute, continuous, prismatic, fixed, floating)")]
    UnsupportedJointType(String),
    /// A zero `<axis>` on a joint that moves along it.
    #[error("<axis xyz=\"{value}\">: the axis of a {joint_type} joint must be non-zero")]
    ZeroAxis {
        /// The attribute's text.
        value: String,
        /// The joint's type.
        joint_type: &'static str,
    },
    /// `<limit>` with `lower > upper`.
    #[error("<limit>: lower {lower} > upper {upper}")]
    LimitOrder {
        /// Lower limit, rad or m.
        lower: f64,
        /// Upper limit, rad or m.
        upper: f64,
    },
    /// A joint's parent or child link does not exist.
    #[error("{role} link \"{link}\" does not exist")]
    MissingLink {
        /// `"parent"` or `"child"`.
        role: &'static str,
        /// The link name.
        link: String,
    },
    /// A link is the child of two joints.
    #[error("link \"{link}\" already has a parent: joint \"{joint}\" on line {line}")]
    SecondParent {
        /// The child link.
        link: String,
        /// The joint that attached it first.
        joint: String,
        /// That joint's line.
        line: u32,
    },
    /// Joints that connect links in a loop (reported on the last joint of the loop).
    #[error("closes a cycle of links: {}", .links.join(" -> "))]
    Cycle {
        /// The links around the cycle, parent to child, the first repeated at the end.
        links: Vec<String>,
    },
    /// More than one link is no joint's child (reported on the second such link).
    #[error("a second root besides link \"{first}\": no joint has either as child, but the links must form one tree")]
    SecondRoot {
        /// The first root link.
        first: String,
    },
    /// The robot has no links.
    #[error("the robot has no links")]
    NoLinks,
    /// `<mimic joint>` names no joint.
    #[error("mimicked joint \"{0}\" does not exist")]
    MimicMissing(String),
    /// A joint mimics itself.
    #[error("a joint cannot mimic itself")]
    MimicSelf,
    /// A joint mimics a joint that mimics another (chains are not supported).
    #[error("mimicked joint \"{joint}\" itself mimics joint \"{its_source}\"; mimic that one directly")]
    MimicChain {
        /// The mimicked joint.
        joint: String,
        /// The joint it mimics.
        its_source: String,
    },
    /// A mimic joint, or the joint it mimics, has no single degree of freedom.
    #[error(
        "joint \"{joint}\" is {joint_type}: mimic joints and the joints they mimic must be revolute, continuous or prismatic"
    )]
    MimicDof {
        /// The offending joint.
        joint: String,
        /// Its type.
        joint_type: &'static str,
    },
    /// A `<geometry>` child that is not a known shape.
    #[error("unknown geometry <{0}> (expected box, sphere, cylinder, capsule or mesh)")]
    UnknownGeometry(String),
    /// A visual's `<material name>` without colour or texture that no top-level material defines.
    #[error("material \"{0}\" has no <color> and is not defined at the top level")]
    UndefinedMaterial(String),
    /// The mesh collision extension attribute has a value other than `convex` or `trimesh`.
    #[error("<mesh {attribute}=\"{value}\">: expected convex or trimesh")]
    InvalidMeshCollision {
        /// The attribute (local name).
        attribute: String,
        /// Its value.
        value: String,
    },
    /// A mesh in a URDF parsed without a base directory.
    #[error("mesh \"{0}\": mesh files need a base directory (use load_urdf, or pass base_dir to parse_urdf)")]
    NoBaseDir(String),
    /// A mesh file extension other than `.stl` or `.obj`.
    #[error("mesh \"{0}\": unsupported format (supported: .stl, .obj)")]
    UnsupportedMesh(String),
    /// No candidate path of a mesh exists.
    #[error("mesh \"{filename}\" not found (tried {})", display_paths(.tried))]
    MeshNotFound {
        /// The `filename` attribute.
        filename: String,
        /// The paths tried, in order.
        tried: Vec<PathBuf>,
    },
    /// A mesh file exists but could not be read.
    #[error("cannot read mesh {}: {error}", .path.display())]
    MeshRead {
        /// The resolved path.
        path: PathBuf,
        /// The I/O error.
        error: io::Error,
    },
    /// A mesh file that is not a valid, non-empty, finite STL or OBJ mesh.
    #[error("mesh {}: {reason}", .path.display())]
    InvalidMesh {
        /// The resolved path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

fn namespace_hint(error: &roxmltree::Error) -> String {
    match error {
        roxmltree::Error::UnknownNamespace(prefix, _) => {
            format!(" (declare it on <robot>, e.g. xmlns:{prefix}=\"https://embodia.dev/urdf\")")
        }
        _ => String::new(),
    }
}

fn count_of_numbers(count: usize) -> String {
    if count == 1 { "a number".to_string() } else { format!("{count} numbers") }
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

type Result<T, E = UrdfError> = std::result::Result<T, E>;

/// One pass over a parsed document.
struct Parser<'a, 'input> {
    doc: &'a Document<'input>,
    base_dir: Option<&'a Path>,
    /// The top-level materials by name, with their colour (`None`: defined without one).
    materials: HashMap<&'a str, (Node<'a, 'input>, Option<[f32; 4]>)>,
    /// Meshes loaded so far, unscaled, by resolved path: a file used by several shapes is read
    /// once.
    meshes: HashMap<PathBuf, MeshData>,
}

/// A `<mimic>` read before all joints are known.
struct MimicRef<'a, 'input> {
    node: Node<'a, 'input>,
    source: &'a str,
    multiplier: f64,
    offset: f64,
}

impl<'a, 'input> Parser<'a, 'input> {
    fn robot(mut self) -> Result<RobotModel> {
        let robot = self.doc.root_element();
        if !robot.has_tag_name("robot") {
            return Err(self.error(robot, UrdfErrorKind::NotRobot(robot.tag_name().name().to_string())));
        }
        let name = self.attr(robot, "name")?;

        for node in children(robot, "material") {
            let name = self.attr(node, "name")?;
            self.material(node, name).map_err(|e| e.within("material", name))?;
        }

        let mut links = Vec::new();
        let mut link_nodes: Vec<Node> = Vec::new();
        let mut link_index: HashMap<&str, usize> = HashMap::new();
        for node in children(robot, "link") {
            let name = self.attr(node, "name")?;
            let link =
                self.unique(&mut link_index, &link_nodes, name, node, "link").and_then(|()| self.link(node, name));
            links.push(link.map_err(|e| e.within("link", name))?);
            link_nodes.push(node);
        }

        let mut joints: Vec<Joint> = Vec::new();
        let mut joint_nodes: Vec<Node> = Vec::new();
        let mut joint_index: HashMap<&str, usize> = HashMap::new();
        let mut mimics = Vec::new();
        // The joint attaching each link to its parent.
        let mut parent_joint: Vec<Option<usize>> = vec![None; links.len()];
        for node in children(robot, "joint") {
            let name = self.attr(node, "name")?;
            let joint = self.unique(&mut joint_index, &joint_nodes, name, node, "joint").and_then(|()| {
                let (joint, mimic) = self.joint(node, name, &link_index)?;
                if let Some(first) = parent_joint[joint.child] {
                    let link = links[joint.child].name.clone();
                    let line = self.line(joint_nodes[first]);
                    let kind = UrdfErrorKind::SecondParent { link, joint: joints[first].name.clone(), line };
                    return Err(self.error(child(node, "child").unwrap_or(node), kind));
                }
                Ok((joint, mimic))
            });
            let (joint, mimic) = joint.map_err(|e| e.within("joint", name))?;
            parent_joint[joint.child] = Some(joints.len());
            mimics.push(mimic);
            joints.push(joint);
            joint_nodes.push(node);
        }

        for (j, mimic) in mimics.iter().enumerate() {
            if let Some(m) = mimic {
                let resolved = self.resolve_mimic(j, m, &joints, &joint_index, &mimics);
                joints[j].mimic = Some(resolved.map_err(|e| e.within("joint", &joints[j].name))?);
            }
        }

        let root = self.root(robot, &links, &link_nodes, &joints, &joint_nodes, &parent_joint)?;
        Ok(RobotModel { name: name.to_string(), links, joints, root })
    }

    /// Records `name` in `index` as the next element, or reports it as a duplicate.
    fn unique(
        &self,
        index: &mut HashMap<&'a str, usize>,
        nodes: &[Node],
        name: &'a str,
        node: Node,
        what: &'static str,
    ) -> Result<()> {
        match index.entry(name) {
            Entry::Occupied(first) => {
                let first_line = self.line(nodes[*first.get()]);
                Err(self.error(node, UrdfErrorKind::DuplicateName { what, first_line }))
            }
            Entry::Vacant(slot) => {
                slot.insert(nodes.len());
                Ok(())
            }
        }
    }

    fn material(&mut self, node: Node<'a, 'input>, name: &'a str) -> Result<()> {
        if let Some(&(first, _)) = self.materials.get(name) {
            let first_line = self.line(first);
            return Err(self.error(node, UrdfErrorKind::DuplicateName { what: "material", first_line }));
        }
        let rgba = child(node, "color").map(|c| self.rgba(c)).transpose()?;
        self.materials.insert(name, (node, rgba));
        Ok(())
    }

    fn link(&mut self, node: Node<'a, 'input>, name: &str) -> Result<Link> {
        let inertial = child(node, "inertial").map(|n| self.inertial(n)).transpose()?;
        let mut visuals = Vec::new();
        for n in children(node, "visual") {
            visuals.push(self.shape(n, true)?);
        }
        let mut collisions = Vec::new();
        for n in children(node, "collision") {
            collisions.push(self.shape(n, false)?);
        }
        Ok(Link { name: name.to_string(), inertial, visuals, collisions })
    }

    fn inertial(&self, node: Node) -> Result<Inertial> {
        let origin = self.origin(node)?;
        let mass_node = self.required_child(node, "mass")?;
        let mass = self.positive(mass_node, "value")?;
        let i = self.required_child(node, "inertia")?;
        let [ixx, iyy, izz] = [self.positive(i, "ixx")?, self.positive(i, "iyy")?, self.positive(i, "izz")?];
        let [ixy, ixz, iyz] =
            [self.required_number(i, "ixy")?, self.required_number(i, "ixz")?, self.required_number(i, "iyz")?];
        let tolerance = INERTIA_TOLERANCE * (ixx + iyy + izz);
        for (names, values) in [
            (["ixx", "iyy", "izz"], [ixx, iyy, izz]),
            (["iyy", "izz", "ixx"], [iyy, izz, ixx]),
            (["izz", "ixx", "iyy"], [izz, ixx, iyy]),
        ] {
            if values[0] + values[1] + tolerance < values[2] {
                return Err(self.error(i, UrdfErrorKind::InertiaTriangle { names, values }));
            }
        }
        let inertial = Inertial { origin, mass, inertia: [ixx, ixy, ixz, iyy, iyz, izz] };
        if let Some((name, value, max)) = inertial.too_large() {
            let (at, tag, attribute) = if name == "mass" { (mass_node, "mass", "value") } else { (i, "inertia", name) };
            let kind = UrdfErrorKind::TooLarge { tag: tag.into(), attribute: attribute.into(), value, max };
            return Err(self.error_at_attr(at, attribute, kind));
        }
        Ok(inertial)
    }

    fn shape(&mut self, node: Node<'a, 'input>, visual: bool) -> Result<Shape> {
        let origin = self.origin(node)?;
        let geometry = self.required_child(node, "geometry")?;
        let Some(g) = geometry.children().find(Node::is_element) else {
            let kind = UrdfErrorKind::MissingElement {
                parent: "geometry".into(),
                child: "box|sphere|cylinder|capsule|mesh".into(),
            };
            return Err(self.error(geometry, kind));
        };
        let geometry = match g.tag_name().name() {
            "box" => {
                let size = self.required_numbers::<3>(g, "size")?;
                if let Some(&value) = size.iter().find(|&&x| x < 0.0) {
                    return Err(self.error_at_attr(g, "size", negative(g, "size", value)));
                }
                Geometry::Box { size }
            }
            "sphere" => Geometry::Sphere { radius: self.non_negative(g, "radius")? },
            "cylinder" => {
                Geometry::Cylinder { radius: self.non_negative(g, "radius")?, length: self.non_negative(g, "length")? }
            }
            "capsule" => {
                Geometry::Capsule { radius: self.non_negative(g, "radius")?, length: self.non_negative(g, "length")? }
            }
            "mesh" => self.mesh(g)?,
            other => return Err(self.error(g, UrdfErrorKind::UnknownGeometry(other.to_string()))),
        };
        let rgba = match child(node, "material") {
            Some(m) if visual => self.visual_rgba(m)?,
            _ => None,
        };
        Ok(Shape { name: node.attribute("name").map(String::from), origin, geometry, rgba })
    }

    /// The colour of a visual's `<material>`: its own `<color>`, else the top-level material of
    /// its name.
    fn visual_rgba(&self, node: Node) -> Result<Option<[f32; 4]>> {
        if let Some(c) = child(node, "color") {
            return Ok(Some(self.rgba(c)?));
        }
        match node.attribute("name") {
            Some(name) => match self.materials.get(name) {
                Some(&(_, rgba)) => Ok(rgba),
                None if child(node, "texture").is_some() => Ok(None),
                None => Err(self.error(node, UrdfErrorKind::UndefinedMaterial(name.to_string()))),
            },
            None => Ok(None),
        }
    }

    fn rgba(&self, node: Node) -> Result<[f32; 4]> {
        let rgba = self.required_numbers::<4>(node, "rgba")?;
        if rgba.iter().any(|c| !(0.0..=1.0).contains(c)) {
            let value = node.attribute("rgba").unwrap_or_default().to_string();
            return Err(self.error_at_attr(node, "rgba", UrdfErrorKind::ColorOutOfRange(value)));
        }
        Ok(rgba.map(|c| c as f32))
    }

    fn mesh(&mut self, node: Node) -> Result<Geometry> {
        let filename = self.attr(node, "filename")?;
        let scale = self.numbers::<3>(node, "scale")?.unwrap_or([1.0; 3]);
        let collision = match node.attributes().find(|a| a.name().ends_with("collision")) {
            None => MeshCollision::ConvexHull,
            Some(a) => match a.value() {
                "convex" => MeshCollision::ConvexHull,
                "trimesh" => MeshCollision::Trimesh,
                value => {
                    let kind = UrdfErrorKind::InvalidMeshCollision { attribute: a.name().into(), value: value.into() };
                    return Err(self.error_at(a.range().start, kind));
                }
            },
        };
        let format = match Path::new(filename).extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase) {
            Some(e) if e == "stl" => MeshFormat::Stl,
            Some(e) if e == "obj" => MeshFormat::Obj,
            _ => return Err(self.error(node, UrdfErrorKind::UnsupportedMesh(filename.to_string()))),
        };
        let base_dir = self.base_dir.ok_or_else(|| self.error(node, UrdfErrorKind::NoBaseDir(filename.to_string())))?;
        let tried = mesh_candidates(base_dir, filename);
        let Some(path) = tried.iter().find(|p| p.is_file()) else {
            return Err(self.error(node, UrdfErrorKind::MeshNotFound { filename: filename.to_string(), tried }));
        };
        let mesh = match self.meshes.get(path) {
            Some(mesh) => mesh,
            None => {
                let mesh = load_mesh(path, format).map_err(|kind| self.error(node, kind))?;
                self.meshes.entry(path.clone()).or_insert(mesh)
            }
        };
        let data = scaled(mesh, scale).map_err(|reason| {
            self.error(node, UrdfErrorKind::InvalidMesh { path: path.clone(), reason: reason.to_string() })
        })?;
        Ok(Geometry::Mesh { filename: filename.to_string(), scale, data, collision })
    }

    /// Parses a joint; its mimic is resolved once all joints are known.
    fn joint(
        &self,
        node: Node<'a, 'input>,
        name: &str,
        link_index: &HashMap<&str, usize>,
    ) -> Result<(Joint, Option<MimicRef<'a, 'input>>)> {
        let kind = match self.attr(node, "type")? {
            "revolute" => JointKind::Revolute,
            "continuous" => JointKind::Continuous,
            "prismatic" => JointKind::Prismatic,
            "fixed" => JointKind::Fixed,
            "floating" => JointKind::Floating,
            other => {
                let kind = match other {
                    "planar" => UrdfErrorKind::UnsupportedJointType(other.to_string()),
                    _ => UrdfErrorKind::UnknownJointType(other.to_string()),
                };
                return Err(self.error_at_attr(node, "type", kind));
            }
        };
        let link = |role: &'static str| -> Result<usize> {
            let n = self.required_child(node, role)?;
            let link = self.attr(n, "link")?;
            let missing = || self.error(n, UrdfErrorKind::MissingLink { role, link: link.to_string() });
            link_index.get(link).copied().ok_or_else(missing)
        };
        let (parent, child_link) = (link("parent")?, link("child")?);
        let origin = self.origin(node)?;
        let axis = self.axis(node, kind)?;
        let limit = match (kind, child(node, "limit")) {
            (JointKind::Revolute | JointKind::Prismatic, l) => {
                Some(self.limit(l.ok_or_else(|| self.missing_child(node, "limit"))?, true)?)
            }
            (JointKind::Continuous, Some(l)) => Some(self.limit(l, false)?),
            (JointKind::Continuous, None) => Some(JointLimit {
                lower: f64::NEG_INFINITY,
                upper: f64::INFINITY,
                effort: f64::INFINITY,
                velocity: f64::INFINITY,
            }),
            (JointKind::Fixed | JointKind::Floating, _) => None,
        };
        let dynamics = match child(node, "dynamics") {
            Some(d) => JointDynamics {
                damping: self.optional_non_negative(d, "damping")?,
                friction: self.optional_non_negative(d, "friction")?,
            },
            None => JointDynamics::default(),
        };
        let mimic = match child(node, "mimic") {
            Some(m) => Some(MimicRef {
                node: m,
                source: self.attr(m, "joint")?,
                multiplier: self.number(m, "multiplier")?.unwrap_or(1.0),
                offset: self.number(m, "offset")?.unwrap_or(0.0),
            }),
            None => None,
        };
        let joint = Joint {
            name: name.to_string(),
            kind,
            parent,
            child: child_link,
            origin,
            axis,
            limit,
            dynamics,
            mimic: None,
        };
        Ok((joint, mimic))
    }

    /// The unit `<axis>` of a joint: `1 0 0` when absent, and for fixed and floating joints
    /// (which have no axis) when zero.
    fn axis(&self, node: Node, kind: JointKind) -> Result<[f64; 3]> {
        const DEFAULT: [f64; 3] = [1.0, 0.0, 0.0];
        let Some(a) = child(node, "axis") else { return Ok(DEFAULT) };
        let Some(xyz) = self.numbers::<3>(a, "xyz")? else { return Ok(DEFAULT) };
        let norm = xyz[0].hypot(xyz[1]).hypot(xyz[2]);
        if norm > 0.0 {
            Ok(xyz.map(|x| x / norm))
        } else if kind.dof() == 1 {
            let value = a.attribute("xyz").unwrap_or_default().to_string();
            Err(self.error_at_attr(a, "xyz", UrdfErrorKind::ZeroAxis { value, joint_type: kind.urdf_name() }))
        } else {
            Ok(DEFAULT)
        }
    }

    /// A `<limit>`; `bounded`: read `lower`/`upper` (default 0), else leave them infinite.
    fn limit(&self, node: Node, bounded: bool) -> Result<JointLimit> {
        let (lower, upper) = if bounded {
            let lower = self.number(node, "lower")?.unwrap_or(0.0);
            let upper = self.number(node, "upper")?.unwrap_or(0.0);
            if lower > upper {
                return Err(self.error(node, UrdfErrorKind::LimitOrder { lower, upper }));
            }
            (lower, upper)
        } else {
            (f64::NEG_INFINITY, f64::INFINITY)
        };
        Ok(JointLimit {
            lower,
            upper,
            effort: self.positive(node, "effort")?,
            velocity: self.positive(node, "velocity")?,
        })
    }

    fn resolve_mimic(
        &self,
        j: usize,
        m: &MimicRef,
        joints: &[Joint],
        joint_index: &HashMap<&str, usize>,
        mimics: &[Option<MimicRef>],
    ) -> Result<Mimic> {
        let error = |kind| self.error(m.node, kind);
        let source = *joint_index.get(m.source).ok_or_else(|| error(UrdfErrorKind::MimicMissing(m.source.into())))?;
        if source == j {
            return Err(error(UrdfErrorKind::MimicSelf));
        }
        for joint in [&joints[j], &joints[source]] {
            if joint.kind.dof() != 1 {
                let kind = UrdfErrorKind::MimicDof { joint: joint.name.clone(), joint_type: joint.kind.urdf_name() };
                return Err(error(kind));
            }
        }
        if let Some(Some(chained)) = mimics.get(source) {
            return Err(error(UrdfErrorKind::MimicChain {
                joint: m.source.to_string(),
                its_source: chained.source.to_string(),
            }));
        }
        Ok(Mimic { joint: source, multiplier: m.multiplier, offset: m.offset })
    }

    /// Checks that the links form one tree and returns its root.
    fn root(
        &self,
        robot: Node,
        links: &[Link],
        link_nodes: &[Node],
        joints: &[Joint],
        joint_nodes: &[Node],
        parent_joint: &[Option<usize>],
    ) -> Result<usize> {
        // Walk from every link towards its root; a walk that meets itself is a cycle.
        let mut walk_of = vec![usize::MAX; links.len()];
        let mut reaches_root = vec![false; links.len()];
        for start in 0..links.len() {
            // (link, the joint attaching it to its parent), child to parent.
            let mut chain = Vec::new();
            let mut link = start;
            while !reaches_root[link] {
                walk_of[link] = start;
                let Some(j) = parent_joint[link] else { break };
                chain.push((link, j));
                link = joints[j].parent;
                if walk_of[link] == start {
                    // The cycle is the part of the chain from `link` on; name it parent to
                    // child and report it on its last joint in document order.
                    let cycle: Vec<_> = chain.iter().skip_while(|&&(l, _)| l != link).collect();
                    let mut names: Vec<String> = cycle.iter().rev().map(|&&(l, _)| links[l].name.clone()).collect();
                    names.push(names[0].clone());
                    let last = cycle.iter().map(|&&(_, j)| j).fold(j, usize::max);
                    let error = self.error(joint_nodes[last], UrdfErrorKind::Cycle { links: names });
                    return Err(error.within("joint", &joints[last].name));
                }
            }
            reaches_root[link] = true;
            for (l, _) in chain {
                reaches_root[l] = true;
            }
        }
        let mut roots = (0..links.len()).filter(|&l| parent_joint[l].is_none());
        let root = roots.next().ok_or_else(|| self.error(robot, UrdfErrorKind::NoLinks))?;
        if let Some(second) = roots.next() {
            let kind = UrdfErrorKind::SecondRoot { first: links[root].name.clone() };
            return Err(self.error(link_nodes[second], kind).within("link", &links[second].name));
        }
        Ok(root)
    }

    fn origin(&self, node: Node) -> Result<Pose> {
        match child(node, "origin") {
            Some(o) => Ok(Pose {
                xyz: self.numbers(o, "xyz")?.unwrap_or([0.0; 3]),
                rpy: self.numbers(o, "rpy")?.unwrap_or([0.0; 3]),
            }),
            None => Ok(Pose::IDENTITY),
        }
    }

    fn required_child(&self, node: Node<'a, 'input>, tag: &str) -> Result<Node<'a, 'input>> {
        child(node, tag).ok_or_else(|| self.missing_child(node, tag))
    }

    fn missing_child(&self, node: Node, tag: &str) -> UrdfError {
        let kind = UrdfErrorKind::MissingElement { parent: node.tag_name().name().into(), child: tag.into() };
        self.error(node, kind)
    }

    fn attr(&self, node: Node<'a, 'input>, name: &str) -> Result<&'a str> {
        node.attribute(name).ok_or_else(|| {
            let kind = UrdfErrorKind::MissingAttribute { tag: node.tag_name().name().into(), attribute: name.into() };
            self.error(node, kind)
        })
    }

    /// Attribute `name` as `N` whitespace-separated finite numbers, `None` when absent.
    fn numbers<const N: usize>(&self, node: Node, name: &str) -> Result<Option<[f64; N]>> {
        let Some(a) = node.attribute_node(name) else { return Ok(None) };
        let strings = || (node.tag_name().name().to_string(), name.to_string(), a.value().to_string());
        let mut out = [0.0_f64; N];
        let mut tokens = a.value().split_whitespace();
        let parsed = out.iter_mut().all(|x| tokens.next().and_then(|t| t.parse().ok()).map(|v| *x = v).is_some());
        if !parsed || tokens.next().is_some() {
            let (tag, attribute, value) = strings();
            return Err(
                self.error_at(a.range().start, UrdfErrorKind::InvalidNumber { tag, attribute, value, count: N })
            );
        }
        if !out.iter().all(|x| x.is_finite()) {
            let (tag, attribute, value) = strings();
            return Err(self.error_at(a.range().start, UrdfErrorKind::NonFinite { tag, attribute, value }));
        }
        Ok(Some(out))
    }

    fn required_numbers<const N: usize>(&self, node: Node, name: &str) -> Result<[f64; N]> {
        self.numbers(node, name)?.ok_or_else(|| {
            let kind = UrdfErrorKind::MissingAttribute { tag: node.tag_name().name().into(), attribute: name.into() };
            self.error(node, kind)
        })
    }

    fn number(&self, node: Node, name: &str) -> Result<Option<f64>> {
        Ok(self.numbers::<1>(node, name)?.map(|[x]| x))
    }

    fn required_number(&self, node: Node, name: &str) -> Result<f64> {
        Ok(self.required_numbers::<1>(node, name)?[0])
    }

    /// Required attribute `name` as a number > 0.
    fn positive(&self, node: Node, name: &str) -> Result<f64> {
        let value = self.required_number(node, name)?;
        if value > 0.0 {
            Ok(value)
        } else {
            let kind = UrdfErrorKind::NotPositive { tag: node.tag_name().name().into(), attribute: name.into(), value };
            Err(self.error_at_attr(node, name, kind))
        }
    }

    /// Required attribute `name` as a number ≥ 0.
    fn non_negative(&self, node: Node, name: &str) -> Result<f64> {
        let value = self.required_number(node, name)?;
        if value < 0.0 { Err(self.error_at_attr(node, name, negative(node, name, value))) } else { Ok(value) }
    }

    /// Optional attribute `name` as a number ≥ 0, default 0.
    fn optional_non_negative(&self, node: Node, name: &str) -> Result<f64> {
        match node.attribute(name) {
            Some(_) => self.non_negative(node, name),
            None => Ok(0.0),
        }
    }

    fn line(&self, node: Node) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    fn error(&self, node: Node, kind: UrdfErrorKind) -> UrdfError {
        UrdfError::new(Some(self.line(node)), kind)
    }

    fn error_at(&self, pos: usize, kind: UrdfErrorKind) -> UrdfError {
        UrdfError::new(Some(self.doc.text_pos_at(pos).row), kind)
    }

    /// An error located at attribute `name` of `node` (at `node` if it has no such attribute).
    fn error_at_attr(&self, node: Node, name: &str, kind: UrdfErrorKind) -> UrdfError {
        self.error_at(node.attribute_node(name).map_or(node.range().start, |a| a.range().start), kind)
    }
}

fn negative(node: Node, name: &str, value: f64) -> UrdfErrorKind {
    UrdfErrorKind::Negative { tag: node.tag_name().name().into(), attribute: name.into(), value }
}

/// The first child element of `node` called `tag`.
fn child<'a, 'input>(node: Node<'a, 'input>, tag: &str) -> Option<Node<'a, 'input>> {
    node.children().find(|c| c.has_tag_name(tag))
}

/// The child elements of `node` called `tag`.
fn children<'a, 'input>(node: Node<'a, 'input>, tag: &str) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children().filter(move |c| c.has_tag_name(tag))
}

/// The paths tried for a mesh `filename`, in order (see the module docs).
fn mesh_candidates(base_dir: &Path, filename: &str) -> Vec<PathBuf> {
    if let Some(package_path) = filename.strip_prefix("package://") {
        let (package, rest) = package_path.split_once('/').unwrap_or((package_path, ""));
        let mut dir = base_dir.to_path_buf();
        let mut tried = Vec::new();
        for _ in 0..3 {
            tried.push(dir.join(rest));
            tried.push(dir.join(package).join(rest));
            dir.push("..");
        }
        tried
    } else if let Some(path) = filename.strip_prefix("file://") {
        vec![PathBuf::from(path)]
    } else {
        vec![base_dir.join(filename)]
    }
}

#[derive(Clone, Copy)]
pub(crate) enum MeshFormat {
    Stl,
    Obj,
}

/// Reads a mesh file, unscaled.
pub(crate) fn load_mesh(path: &Path, format: MeshFormat) -> Result<MeshData, UrdfErrorKind> {
    let bytes = std::fs::read(path).map_err(|error| UrdfErrorKind::MeshRead { path: path.to_path_buf(), error })?;
    let mesh = match format {
        MeshFormat::Stl => read_stl(bytes),
        MeshFormat::Obj => read_obj(&bytes),
    };
    let invalid = |reason: String| UrdfErrorKind::InvalidMesh { path: path.to_path_buf(), reason };
    let mesh = mesh.map_err(invalid)?;
    if mesh.triangles.is_empty() {
        return Err(invalid("no triangles".into()));
    }
    Ok(mesh)
}

fn read_stl(mut bytes: Vec<u8>) -> Result<MeshData, String> {
    // Many exporters begin binary STL headers with "solid", which stl_io takes for ASCII; a
    // file whose size matches its binary triangle count is binary, so blank that word.
    let binary_len =
        bytes.get(80..84).and_then(|c| c.try_into().ok()).map(|c| 84 + 50 * u64::from(u32::from_le_bytes(c)));
    if binary_len == Some(bytes.len() as u64) && bytes.starts_with(b"solid") {
        bytes[..5].fill(b' ');
    }
    let mesh = stl_io::read_stl(&mut io::Cursor::new(bytes)).map_err(|e| format!("invalid STL: {e}"))?;
    let vertices = mesh.vertices.iter().map(|v| v.0).collect();
    let triangles = mesh
        .faces
        .iter()
        .map(|f| {
            let [a, b, c] = f.vertices.map(u32::try_from);
            Some([a.ok()?, b.ok()?, c.ok()?])
        })
        .collect::<Option<_>>()
        .ok_or("more than 2³² vertices")?;
    Ok(MeshData { vertices, triangles })
}

fn read_obj(bytes: &[u8]) -> Result<MeshData, String> {
    let options =
        tobj::LoadOptions { triangulate: true, ignore_points: true, ignore_lines: true, ..Default::default() };
    let (models, _) = tobj::load_obj_buf(&mut &bytes[..], &options, |_| Err(tobj::LoadError::OpenFileFailed))
        .map_err(|e| format!("invalid OBJ: {e}"))?;
    let mut mesh = MeshData { vertices: Vec::new(), triangles: Vec::new() };
    for model in models {
        let offset = u32::try_from(mesh.vertices.len()).map_err(|_| "more than 2³² vertices")?;
        mesh.vertices.extend(model.mesh.positions.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
        u32::try_from(mesh.vertices.len()).map_err(|_| "more than 2³² vertices")?;
        // tobj checks that indices lie within the model's positions, so these stay below the
        // vertex count just checked.
        mesh.triangles.extend(model.mesh.indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]].map(|i| i + offset)));
    }
    Ok(mesh)
}

/// `mesh` with its vertices multiplied by `scale`; a mirroring scale (odd number of negative
/// factors) reverses the triangles' winding so that they keep facing outwards.
pub(crate) fn scaled(mesh: &MeshData, scale: [f64; 3]) -> Result<MeshData, &'static str> {
    let s = scale.map(|x| x as f32);
    let vertices: Vec<[f32; 3]> = mesh.vertices.iter().map(|v| [v[0] * s[0], v[1] * s[1], v[2] * s[2]]).collect();
    if !vertices.iter().flatten().all(|x| x.is_finite()) {
        return Err("vertex coordinates must be finite (after scaling)");
    }
    let mirrored = scale.iter().filter(|&&x| x < 0.0).count() % 2 == 1;
    let triangles = mesh.triangles.iter().map(|&[a, b, c]| if mirrored { [a, c, b] } else { [a, b, c] }).collect();
    Ok(MeshData { vertices, triangles })
}
