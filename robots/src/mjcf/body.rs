//! The body tree: `<worldbody>` and nested `<body>` elements become links and joints, with
//! their inertia, geoms, sites and cameras.

use std::f64::consts::PI;
use std::path::Path;

use roxmltree::Node;

use super::frame::{self, Frame};
use super::{Camera, CollisionFilter, InertiaFromGeom, MjcfErrorKind, Parser, Result, Site};
use crate::model::{Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, MeshCollision, Shape};
use crate::urdf::{MeshFormat, UrdfErrorKind, load_mesh, scaled};

/// Relative tolerance of the inertia triangle inequalities, as for URDF.
const INERTIA_TOLERANCE: f64 = 1e-3;

/// Body children that are refused, with the reason.
const REFUSED_IN_BODY: [(&str, &str); 8] = [
    ("frame", "write the frame's pose into its children"),
    ("replicate", "write the copies out"),
    ("composite", "composite objects are not simulated"),
    ("flexcomp", "flexible bodies are not simulated"),
    ("plugin", "MuJoCo plugins cannot run in embodia"),
    ("attach", "inline the attached model"),
    ("include", "inline the included file: embodia reads one file so that every error has its line"),
    ("skin", "skins belong to flexible bodies, which are not simulated"),
];

/// A joint as read from MJCF, before it is attached.
struct JointSpec<'a, 'i> {
    node: Node<'a, 'i>,
    name: String,
    kind: JointKind,
    /// Anchor in the body frame, m.
    pos: [f64; 3],
    axis: [f64; 3],
    limit: Option<JointLimit>,
    dynamics: JointDynamics,
    armature: f64,
    force_limit: f64,
}

/// Mass properties of one geom, in the link frame.
struct GeomMass {
    mass: f64,
    com: [f64; 3],
    /// Inertia tensor about `com`, kg·m² (rows).
    inertia: [[f64; 3]; 3],
}

impl<'a, 'i> Parser<'a, 'i> {
    pub(super) fn worldbody(&mut self, root: Node<'a, 'i>, worldbodies: &[Node<'a, 'i>]) -> Result<()> {
        let mut bodies = Vec::new();
        for wb in worldbodies {
            for child in wb.children().filter(Node::is_element) {
                match child.tag_name().name() {
                    "body" => bodies.push(child),
                    "geom" => self.skip(child, "world geoms are the scene (a floor is the task's scene.ground)"),
                    "site" | "camera" => self.skip(child, "fixed to the world, not to the robot"),
                    "light" => self.skip(child, "lights are the scene"),
                    _ => return Err(self.refuse_body_child(child)),
                }
            }
        }
        if bodies.is_empty() {
            let kind = MjcfErrorKind::Structure("<worldbody> has no <body>: there is no robot".into());
            return Err(self.error(worldbodies.first().copied().unwrap_or(root), kind));
        }
        let joint_tags = |b: Node<'a, 'i>| -> Vec<Node<'a, 'i>> {
            b.children().filter(|c| c.has_tag_name("joint") || c.has_tag_name("freejoint")).collect()
        };
        let single_root = bodies.len() == 1 && {
            let joints = joint_tags(bodies[0]);
            joints.is_empty() || (joints.len() == 1 && self.is_free(joints[0])?)
        };
        if single_root {
            self.body(bodies[0], None)
        } else {
            // Several top-level bodies, or one that moves on a hinge or slide: hang them from a
            // massless world link, so that the links still form one tree.
            self.links.push(Link { name: "world".into(), inertial: None, visuals: vec![], collisions: vec![] });
            self.link_nodes.push(None);
            self.link_offset.push([0.0; 3]);
            self.body_link.insert("world".into(), 0);
            for b in bodies {
                self.body(b, Some(0))?;
            }
            Ok(())
        }
    }

    fn is_free(&self, joint: Node<'a, 'i>) -> Result<bool> {
        Ok(joint.has_tag_name("freejoint") || self.get(joint, "type")?.is_some_and(|v| v.text == "free"))
    }

    fn refuse_body_child(&self, node: Node<'a, 'i>) -> super::MjcfError {
        let tag = node.tag_name().name();
        match REFUSED_IN_BODY.iter().find(|(t, _)| *t == tag) {
            Some((_, reason)) => self.unsupported(node, reason),
            None => self.unsupported(node, "not an MJCF body element embodia knows"),
        }
    }

    /// Reads `node` and its descendants; `parent` is the parent link (`None` for the root).
    fn body(&mut self, node: Node<'a, 'i>, parent: Option<usize>) -> Result<()> {
        self.body_count += 1;
        let name = node.attribute("name").map_or_else(|| format!("body{}", self.body_count), String::from);
        self.body_inner(node, parent, &name).map_err(|e| e.within("body", &name))
    }

    fn body_inner(&mut self, node: Node<'a, 'i>, parent: Option<usize>, name: &str) -> Result<()> {
        if let Some(&first) = self.body_link.get(name) {
            let first = self.link_nodes[first].unwrap_or(node);
            return Err(self.duplicate(node, "body", name, first));
        }
        if self.boolean(node, "mocap")? == Some(true) {
            return Err(self.unsupported(node, "mocap bodies are moved by the program, not simulated"));
        }
        if self.number(node, "gravcomp")?.is_some_and(|g| g != 0.0) {
            let kind = MjcfErrorKind::UnsupportedValue {
                tag: "body".into(),
                attribute: "gravcomp".into(),
                value: node.attribute("gravcomp").unwrap_or_default().into(),
                allowed: "gravity compensation is not simulated (only 0)".into(),
            };
            return Err(self.error_at_attr(node, "gravcomp", kind));
        }
        let body_frame = self.frame(node)?;

        let joint_nodes: Vec<Node> =
            node.children().filter(|c| c.has_tag_name("joint") || c.has_tag_name("freejoint")).collect();
        if joint_nodes.len() > 1 {
            return Err(self.unsupported(
                joint_nodes[1],
                &format!(
                    "body \"{name}\" has {} joints; embodia's links move on one joint each: \
                     nest one body per joint",
                    joint_nodes.len()
                ),
            ));
        }
        let mut spec = None;
        if let Some(&j) = joint_nodes.first() {
            if self.is_free(j)? {
                if parent.is_some() {
                    return Err(self.unsupported(
                        j,
                        "a free joint is only supported on the single top-level body (the floating base)",
                    ));
                }
                self.floating_base = true;
            } else {
                let js = self.joint(j, name)?;
                spec = Some(js);
            }
        }

        let link = self.links.len();
        let offset = spec.as_ref().map_or([0.0; 3], |s| s.pos);
        self.links.push(Link { name: name.to_string(), inertial: None, visuals: vec![], collisions: vec![] });
        self.link_nodes.push(Some(node));
        self.link_offset.push(offset);
        self.body_link.insert(name.to_string(), link);
        // From the body frame to the link frame (the joint anchor).
        let to_link = Frame::translation(offset.map(|x| -x));

        match parent {
            Some(parent) => {
                let parent_offset = self.link_offset[parent];
                let origin =
                    Frame::translation(parent_offset.map(|x| -x)).then(&body_frame).then(&Frame::translation(offset));
                let (joint, armature, force_limit, joint_node) = match spec {
                    Some(s) => {
                        let joint = Joint {
                            name: s.name,
                            kind: s.kind,
                            parent,
                            child: link,
                            origin: origin.to_pose(),
                            axis: s.axis,
                            limit: s.limit,
                            dynamics: s.dynamics,
                            mimic: None,
                        };
                        (joint, s.armature, s.force_limit, s.node)
                    }
                    None => {
                        let joint = Joint {
                            name: name.to_string(),
                            kind: JointKind::Fixed,
                            parent,
                            child: link,
                            origin: origin.to_pose(),
                            axis: [1.0, 0.0, 0.0],
                            limit: None,
                            dynamics: JointDynamics::default(),
                            mimic: None,
                        };
                        (joint, 0.0, f64::INFINITY, node)
                    }
                };
                if let Some(&first) = self.joint_index.get(&joint.name) {
                    return Err(self.duplicate(joint_node, "joint", &joint.name, self.joint_nodes[first]));
                }
                self.joint_index.insert(joint.name.clone(), self.joints.len());
                self.joints.push(joint);
                self.joint_nodes.push(joint_node);
                self.armature.push(armature);
                self.joint_force_limit.push(force_limit);
            }
            None => {
                if body_frame != Frame::IDENTITY {
                    self.skipped.push(super::Skipped {
                        element: format!("<body name=\"{name}\"> pos/orientation"),
                        line: self.line(node),
                        reason: "the root's placement comes from the task (scene.base_position)",
                    });
                }
            }
        }

        let mut inertial_node = None;
        let mut masses = Vec::new();
        let mut mesh_mass = None;
        for child in node.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "inertial" => inertial_node = Some(child),
                "joint" | "freejoint" => {}
                "geom" => match self.geom(child, link, &to_link)? {
                    Some(m) => masses.push(m),
                    None => mesh_mass = mesh_mass.or(Some(child)),
                },
                "site" => self.site(child, link, &to_link)?,
                "camera" => self.camera(child, link, &to_link)?,
                "light" => self.skip(child, "lights are the scene"),
                "body" => self.body(child, Some(link))?,
                _ => return Err(self.refuse_body_child(child)),
            }
        }

        let from_geoms = match (self.compiler.inertia_from_geom, inertial_node) {
            (InertiaFromGeom::Always, _) | (InertiaFromGeom::Auto, None) => true,
            (InertiaFromGeom::Never, _) | (InertiaFromGeom::Auto, Some(_)) => false,
        };
        self.links[link].inertial = if from_geoms {
            if let Some(g) = mesh_mass {
                return Err(self.unsupported(
                    g,
                    "computing a body's inertia from a mesh geom is not supported: give the body an <inertial>",
                ));
            }
            combine(&masses)
        } else {
            match inertial_node {
                Some(n) => self.inertial(n, &to_link)?,
                None => None,
            }
        };
        if let Some((name, value, _)) = self.links[link].inertial.as_ref().and_then(Inertial::too_large) {
            let (tag, attribute) = match inertial_node {
                Some(_) if !from_geoms => ("inertial", name.to_string()),
                _ => ("body", format!("{name} from its geoms")),
            };
            let kind = MjcfErrorKind::OutOfRange {
                tag: tag.into(),
                attribute,
                value,
                message: "must be at most 1e6 (kg or kg·m²)",
            };
            return Err(self.error(inertial_node.filter(|_| !from_geoms).unwrap_or(node), kind));
        }
        Ok(())
    }

    fn joint(&self, node: Node<'a, 'i>, body: &str) -> Result<JointSpec<'a, 'i>> {
        let name = node.attribute("name").map_or_else(|| format!("{body}_joint"), String::from);
        self.joint_inner(node, name.clone()).map_err(|e| e.within("joint", &name))
    }

    fn joint_inner(&self, node: Node<'a, 'i>, name: String) -> Result<JointSpec<'a, 'i>> {
        #[derive(Clone, Copy, PartialEq)]
        enum T {
            Hinge,
            Slide,
            Ball,
            Free,
        }
        let t = self
            .keyword(node, "type", &[("hinge", T::Hinge), ("slide", T::Slide), ("ball", T::Ball), ("free", T::Free)])?
            .unwrap_or(T::Hinge);
        let value_error = |attribute: &str, allowed: &str| {
            let v = self.get(node, attribute).ok().flatten();
            let kind = MjcfErrorKind::UnsupportedValue {
                tag: "joint".into(),
                attribute: attribute.into(),
                value: v.map_or(String::new(), |v| v.text.to_string()),
                allowed: allowed.into(),
            };
            self.error_at(v.map_or(node.range().start, |v| v.pos), kind)
        };
        if t == T::Ball {
            return Err(value_error("type", "ball joints are not supported (supported: hinge, slide, free)"));
        }
        for attribute in ["stiffness", "ref", "springref"] {
            if self.number(node, attribute)?.is_some_and(|x| x != 0.0) {
                return Err(value_error(
                    attribute,
                    "joint springs and reference positions are not supported (only 0 is accepted)",
                ));
            }
        }
        let pos = self.numbers::<3>(node, "pos")?.unwrap_or([0.0; 3]);
        let axis = self.numbers::<3>(node, "axis")?.unwrap_or([0.0, 0.0, 1.0]);
        let n = frame::norm(axis);
        if n == 0.0 {
            return Err(value_error("axis", "the axis must be non-zero"));
        }
        let axis = axis.map(|x| x / n);
        let limited = self.limited(node, "limited", "range")?;
        let range = if limited {
            let Some([lo, hi]) = self.numbers::<2>(node, "range")? else {
                return Err(self.missing(node, "range"));
            };
            if lo > hi {
                return Err(value_error("range", "the lower limit must not exceed the upper limit"));
            }
            Some([lo, hi])
        } else {
            None
        };
        let force_limit = if self.limited(node, "actuatorfrclimited", "actuatorfrcrange")? {
            match self.numbers::<2>(node, "actuatorfrcrange")? {
                Some([lo, hi]) if lo == -hi && hi > 0.0 => hi,
                Some(_) => {
                    return Err(value_error(
                        "actuatorfrcrange",
                        "embodia's effort limits are symmetric and non-zero: write `-f f` with f > 0",
                    ));
                }
                None => return Err(self.missing(node, "actuatorfrcrange")),
            }
        } else {
            f64::INFINITY
        };
        let (kind, limit) = match (t, range) {
            (T::Hinge, Some([lo, hi])) => {
                let s = self.compiler.angle_scale;
                (JointKind::Revolute, Some([lo * s, hi * s]))
            }
            (T::Hinge, None) => (JointKind::Continuous, None),
            (T::Slide, Some(r)) => (JointKind::Prismatic, Some(r)),
            (T::Slide, None) => {
                return Err(value_error(
                    "range",
                    "a slide joint needs a range (and limited=\"true\" or autolimits): embodia's prismatic joints are bounded",
                ));
            }
            (T::Ball | T::Free, _) => unreachable!("handled above and by the caller"),
        };
        let limit = Some(match limit {
            Some([lower, upper]) => JointLimit { lower, upper, effort: force_limit, velocity: f64::INFINITY },
            None => JointLimit {
                lower: f64::NEG_INFINITY,
                upper: f64::INFINITY,
                effort: force_limit,
                velocity: f64::INFINITY,
            },
        });
        Ok(JointSpec {
            node,
            name,
            kind,
            pos,
            axis,
            limit,
            dynamics: JointDynamics {
                damping: self.non_negative(node, "damping", 0.0)?,
                friction: self.non_negative(node, "frictionloss", 0.0)?,
            },
            armature: self.non_negative(node, "armature", 0.0)?,
            force_limit,
        })
    }

    /// `pos` and one orientation attribute of `node`, as a frame relative to its parent.
    pub(super) fn frame(&self, node: Node<'a, 'i>) -> Result<Frame> {
        let pos = self.numbers::<3>(node, "pos")?.unwrap_or([0.0; 3]);
        let given: Vec<&str> = ["quat", "axisangle", "euler", "xyaxes", "zaxis"]
            .into_iter()
            .filter(|a| node.attribute(*a).is_some())
            .collect();
        if given.len() > 1 {
            let kind = MjcfErrorKind::Structure(format!(
                "<{}> has both `{}` and `{}`: give one orientation",
                node.tag_name().name(),
                given[0],
                given[1]
            ));
            return Err(self.error_at_attr(node, given[1], kind));
        }
        let degenerate = |attribute: &str| {
            let kind = MjcfErrorKind::UnsupportedValue {
                tag: node.tag_name().name().into(),
                attribute: attribute.into(),
                value: node.attribute(attribute).unwrap_or_default().into(),
                allowed: "does not describe a rotation (zero or parallel vectors)".into(),
            };
            self.error_at_attr(node, attribute, kind)
        };
        let s = self.compiler.angle_scale;
        let quat = match given.first().copied() {
            None => Frame::IDENTITY.quat,
            Some("quat") => {
                let q = self.numbers::<4>(node, "quat")?.unwrap_or([1.0, 0.0, 0.0, 0.0]);
                frame::unit_quat(q).ok_or_else(|| degenerate("quat"))?
            }
            Some("axisangle") => {
                let [x, y, z, a] = self.numbers::<4>(node, "axisangle")?.unwrap_or([0.0, 0.0, 1.0, 0.0]);
                frame::axis_angle([x, y, z], a * s).ok_or_else(|| degenerate("axisangle"))?
            }
            Some("euler") => {
                let e = self.numbers::<3>(node, "euler")?.unwrap_or([0.0; 3]);
                frame::euler(e.map(|x| x * s), &self.compiler.eulerseq)
            }
            Some("xyaxes") => {
                let v = self.numbers::<6>(node, "xyaxes")?.unwrap_or([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
                frame::xy_axes([v[0], v[1], v[2]], [v[3], v[4], v[5]]).ok_or_else(|| degenerate("xyaxes"))?
            }
            Some(_) => {
                let z = self.numbers::<3>(node, "zaxis")?.unwrap_or([0.0, 0.0, 1.0]);
                frame::z_axis(z).ok_or_else(|| degenerate("zaxis"))?
            }
        };
        Ok(Frame { pos, quat })
    }

    fn inertial(&self, node: Node<'a, 'i>, to_link: &Frame) -> Result<Option<Inertial>> {
        let Some(pos) = self.numbers::<3>(node, "pos")? else { return Err(self.missing(node, "pos")) };
        let frame = Frame { pos, ..self.frame(node)? };
        let mass = self.non_negative(node, "mass", f64::NAN).or_else(|e| match self.get(node, "mass")? {
            None => Err(self.missing(node, "mass")),
            Some(_) => Err(e),
        })?;
        let inertia = match (self.numbers::<3>(node, "diaginertia")?, self.numbers::<6>(node, "fullinertia")?) {
            (Some(d), None) => {
                for (i, name) in ["ixx", "iyy", "izz"].iter().enumerate() {
                    if d[i] < 0.0 || (mass > 0.0 && d[i] == 0.0) {
                        let kind = MjcfErrorKind::OutOfRange {
                            tag: "inertial".into(),
                            attribute: format!("diaginertia ({name})"),
                            value: d[i],
                            message: "must be > 0 for a body with mass",
                        };
                        return Err(self.error_at_attr(node, "diaginertia", kind));
                    }
                }
                let tolerance = INERTIA_TOLERANCE * (d[0] + d[1] + d[2]);
                for (a, b, c) in [(0, 1, 2), (1, 2, 0), (2, 0, 1)] {
                    if d[a] + d[b] + tolerance < d[c] {
                        let kind = MjcfErrorKind::Structure(format!(
                            "<inertial diaginertia>: {} + {} < {}, which no rigid body has",
                            d[a], d[b], d[c]
                        ));
                        return Err(self.error_at_attr(node, "diaginertia", kind));
                    }
                }
                [d[0], 0.0, 0.0, d[1], 0.0, d[2]]
            }
            (None, Some(f)) => [f[0], f[3], f[4], f[1], f[5], f[2]],
            (None, None) => return Err(self.missing(node, "diaginertia")),
            (Some(_), Some(_)) => {
                let kind = MjcfErrorKind::Structure("<inertial> has both diaginertia and fullinertia".into());
                return Err(self.error(node, kind));
            }
        };
        if mass == 0.0 {
            return Ok(None);
        }
        Ok(Some(Inertial { origin: to_link.then(&frame).to_pose(), mass, inertia }))
    }

    /// Adds a geom's shapes to `link`; returns its mass properties (`None` for a mesh without
    /// `mass="0"`, whose volume is not computed).
    fn geom(&mut self, node: Node<'a, 'i>, link: usize, to_link: &Frame) -> Result<Option<GeomMass>> {
        #[derive(Clone, Copy, PartialEq)]
        enum T {
            Sphere,
            Capsule,
            Cylinder,
            Box,
            Mesh,
            Other,
        }
        let types = [
            ("sphere", T::Sphere),
            ("capsule", T::Capsule),
            ("cylinder", T::Cylinder),
            ("box", T::Box),
            ("mesh", T::Mesh),
            ("plane", T::Other),
            ("ellipsoid", T::Other),
            ("hfield", T::Other),
            ("sdf", T::Other),
        ];
        let has_mesh = self.get(node, "mesh")?.is_some();
        let t = self.keyword(node, "type", &types)?.unwrap_or(if has_mesh { T::Mesh } else { T::Sphere });
        if t == T::Other {
            let v = self.get(node, "type")?.expect("a non-default type is written");
            let kind = MjcfErrorKind::UnsupportedValue {
                tag: "geom".into(),
                attribute: "type".into(),
                value: v.text.into(),
                allowed: "not supported on a robot body (supported: sphere, capsule, cylinder, box, mesh)".into(),
            };
            return Err(self.error_at(v.pos, kind));
        }
        let size = self.number_list(node, "size")?.unwrap_or_default();
        let size_at = |i: usize, what: &str| -> Result<f64> {
            match size.get(i) {
                Some(&x) if x > 0.0 => Ok(x),
                _ => {
                    let v = self.get(node, "size")?;
                    let kind = MjcfErrorKind::InvalidNumber {
                        tag: "geom".into(),
                        attribute: "size".into(),
                        value: v.map_or(String::new(), |v| v.text.to_string()),
                        expected: format!("a positive {what} as number {} of size", i + 1),
                    };
                    Err(self.error_at(v.map_or(node.range().start, |v| v.pos), kind))
                }
            }
        };
        let fromto = self.numbers::<6>(node, "fromto")?;
        let mut placement = self.frame(node)?;
        let geometry = match t {
            T::Sphere => Geometry::Sphere { radius: size_at(0, "radius")? },
            T::Capsule | T::Cylinder => {
                let radius = size_at(0, "radius")?;
                let length = match fromto {
                    Some(f) => {
                        let (a, b) = ([f[0], f[1], f[2]], [f[3], f[4], f[5]]);
                        let d = frame::sub(b, a);
                        let quat = frame::z_axis(d).ok_or_else(|| {
                            let kind = MjcfErrorKind::Structure("<geom fromto>: the two points coincide".into());
                            self.error_at_attr(node, "fromto", kind)
                        })?;
                        placement = Frame { pos: frame::add(a, b).map(|x| x / 2.0), quat };
                        frame::norm(d)
                    }
                    None => 2.0 * size_at(1, "half-length")?,
                };
                if t == T::Capsule {
                    Geometry::Capsule { radius, length }
                } else {
                    Geometry::Cylinder { radius, length }
                }
            }
            T::Box => {
                if fromto.is_some() {
                    return Err(self.unsupported(node, "fromto on a box: give size and a pose"));
                }
                Geometry::Box {
                    size: [
                        size_at(0, "half-size")? * 2.0,
                        size_at(1, "half-size")? * 2.0,
                        size_at(2, "half-size")? * 2.0,
                    ],
                }
            }
            T::Mesh => self.mesh_geometry(node)?,
            T::Other => unreachable!("refused above"),
        };
        let origin = to_link.then(&placement);

        let contype = self.bitmask(node, "contype")?;
        let conaffinity = self.bitmask(node, "conaffinity")?;
        let group = self.number(node, "group")?.unwrap_or(0.0);
        let rgba = self.geom_rgba(node)?;
        let name = node.attribute("name").map(String::from);
        let shape = Shape { name, origin: origin.to_pose(), geometry: geometry.clone(), rgba: None };
        if (0.0..=2.0).contains(&group) {
            self.links[link].visuals.push(Shape { rgba: Some(rgba), ..shape.clone() });
        }
        if contype != 0 || conaffinity != 0 {
            let shape_index = self.links[link].collisions.len();
            self.links[link].collisions.push(shape);
            self.collision_filters.push(CollisionFilter { link, shape: shape_index, contype, conaffinity });
        }

        let volume_and_inertia = match geometry {
            Geometry::Sphere { radius: r } => {
                let v = 4.0 / 3.0 * PI * r.powi(3);
                Some((v, [0.4 * r * r; 3]))
            }
            Geometry::Box { size: [x, y, z] } => {
                Some((x * y * z, [(y * y + z * z) / 12.0, (x * x + z * z) / 12.0, (x * x + y * y) / 12.0]))
            }
            Geometry::Cylinder { radius: r, length: h } => {
                let t = (3.0 * r * r + h * h) / 12.0;
                Some((PI * r * r * h, [t, t, r * r / 2.0]))
            }
            Geometry::Capsule { radius: r, length: h } => {
                // Per unit mass: the cylinder and two hemispheres shifted along the axis.
                let (vc, vs) = (PI * r * r * h, 4.0 / 3.0 * PI * r.powi(3));
                let (mc, ms) = (vc / (vc + vs), vs / (vc + vs));
                let t = mc * (h * h / 12.0 + r * r / 4.0) + ms * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0);
                Some((vc + vs, [t, t, mc * r * r / 2.0 + ms * 0.4 * r * r]))
            }
            Geometry::Mesh { .. } => None,
        };
        let Some((volume, unit_inertia)) = volume_and_inertia else {
            // A mesh whose mass is set to 0 (as visual classes often do) adds nothing; any
            // other mesh would need its volume, which is not computed.
            let massless = self.get(node, "mass")?.is_some() && self.non_negative(node, "mass", 0.0)? == 0.0;
            return Ok(massless.then_some(GeomMass { mass: 0.0, com: origin.pos, inertia: [[0.0; 3]; 3] }));
        };
        let mass = match self.get(node, "mass")? {
            Some(_) => self.non_negative(node, "mass", 0.0)?,
            None => self.non_negative(node, "density", 1000.0)? * volume,
        };
        let r = origin.matrix();
        let mut inertia = [[0.0; 3]; 3];
        for (i, row) in inertia.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = (0..3).map(|k| r[i][k] * mass * unit_inertia[k] * r[j][k]).sum();
            }
        }
        Ok(Some(GeomMass { mass, com: origin.pos, inertia }))
    }

    fn bitmask(&self, node: Node<'a, 'i>, name: &str) -> Result<u32> {
        let value = self.number(node, name)?.unwrap_or(1.0);
        if value >= 0.0 && value.fract() == 0.0 && value <= f64::from(u32::MAX) {
            Ok(value as u32)
        } else {
            let v = self.get(node, name)?.expect("a number was read");
            Err(self.invalid_number(node, name, v, "a non-negative 32-bit integer".into()))
        }
    }

    /// A geom's colour: its own `rgba` when it differs from MuJoCo's default grey, else its
    /// material's, else the grey (MuJoCo's rule).
    fn geom_rgba(&self, node: Node<'a, 'i>) -> Result<[f32; 4]> {
        const GREY: [f32; 4] = [0.5, 0.5, 0.5, 1.0];
        let own = self.rgba(node)?;
        if let Some(rgba) = own.filter(|c| *c != GREY) {
            return Ok(rgba);
        }
        match self.get(node, "material")? {
            Some(m) => match self.materials.get(m.text) {
                Some(&(_, rgba)) => Ok(rgba),
                None => Err(self.error_at(m.pos, MjcfErrorKind::Undefined { what: "material", name: m.text.into() })),
            },
            None => Ok(own.unwrap_or(GREY)),
        }
    }

    fn mesh_geometry(&mut self, node: Node<'a, 'i>) -> Result<Geometry> {
        let Some(m) = self.get(node, "mesh")? else { return Err(self.missing(node, "mesh")) };
        let Some(asset) = self.mesh_assets.get(m.text) else {
            return Err(self.error_at(m.pos, MjcfErrorKind::Undefined { what: "mesh", name: m.text.into() }));
        };
        let (asset_node, file, scale) = (asset.node, asset.file, asset.scale);
        let line = self.line(asset_node);
        let mesh_error = move |kind: UrdfErrorKind| super::MjcfError::new(Some(line), MjcfErrorKind::Mesh(kind));
        let format = match Path::new(file).extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase) {
            Some(e) if e == "stl" => MeshFormat::Stl,
            Some(e) if e == "obj" => MeshFormat::Obj,
            _ => return Err(mesh_error(UrdfErrorKind::UnsupportedMesh(file.into()))),
        };
        let Some(base_dir) = self.base_dir else {
            return Err(mesh_error(UrdfErrorKind::NoBaseDir(file.into())));
        };
        let dir = match &self.compiler.meshdir {
            Some(d) => base_dir.join(d),
            None => base_dir.to_path_buf(),
        };
        let path = dir.join(file);
        if !path.is_file() {
            return Err(mesh_error(UrdfErrorKind::MeshNotFound { filename: file.into(), tried: vec![path] }));
        }
        if !self.mesh_cache.contains_key(&path) {
            let data = load_mesh(&path, format).map_err(mesh_error)?;
            self.mesh_cache.insert(path.clone(), data);
        }
        let data = scaled(&self.mesh_cache[&path], scale).map_err(|reason| {
            mesh_error(UrdfErrorKind::InvalidMesh { path: path.clone(), reason: reason.to_string() })
        })?;
        Ok(Geometry::Mesh { filename: file.to_string(), scale, data, collision: MeshCollision::ConvexHull })
    }

    fn site(&mut self, node: Node<'a, 'i>, link: usize, to_link: &Frame) -> Result<()> {
        let name = node.attribute("name").map_or_else(|| format!("site{}", self.sites.len()), String::from);
        if let Some(first) = self.sites.iter().position(|s| s.name == name) {
            let kind = MjcfErrorKind::DuplicateName { what: "site", name, first_line: self.site_lines[first] };
            return Err(self.error(node, kind));
        }
        let origin = to_link.then(&self.frame(node)?).to_pose();
        self.site_lines.push(self.line(node));
        self.sites.push(Site { name, link, origin });
        Ok(())
    }

    fn camera(&mut self, node: Node<'a, 'i>, link: usize, to_link: &Frame) -> Result<()> {
        let name = node.attribute("name").map_or_else(|| format!("camera{}", self.cameras.len()), String::from);
        let origin = to_link.then(&self.frame(node)?).to_pose();
        let fovy_deg = self.checked(node, "fovy", 45.0, |x| x > 0.0 && x < 180.0, "must lie in (0, 180) degrees")?;
        let mode = self.get(node, "mode")?.map_or("fixed", |v| v.text).to_string();
        self.cameras.push(Camera { name, link, origin, fovy_deg, mode });
        Ok(())
    }
}

/// The mass properties of a body from its geoms (`None` when they have no mass): total mass,
/// centre of mass, and the tensor about it (parallel-axis theorem), in the link frame.
fn combine(geoms: &[GeomMass]) -> Option<Inertial> {
    let mass: f64 = geoms.iter().map(|g| g.mass).sum();
    if mass <= 0.0 {
        return None;
    }
    let mut com = [0.0; 3];
    for g in geoms {
        for (c, x) in com.iter_mut().zip(g.com) {
            *c += g.mass * x / mass;
        }
    }
    let mut t = [[0.0; 3]; 3];
    for g in geoms {
        let d = frame::sub(g.com, com);
        let dd = frame::dot(d, d);
        for i in 0..3 {
            for j in 0..3 {
                let shift = if i == j { dd } else { 0.0 } - d[i] * d[j];
                t[i][j] += g.inertia[i][j] + g.mass * shift;
            }
        }
    }
    let clean = |x: f64| if x.abs() < 1e-15 { 0.0 } else { x };
    Some(Inertial {
        origin: crate::model::Pose { xyz: com.map(clean), rpy: [0.0; 3] },
        mass,
        inertia: [t[0][0], t[0][1], t[0][2], t[1][1], t[1][2], t[2][2]].map(clean),
    })
}
