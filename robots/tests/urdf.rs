//! URDF import: a valid arm with meshes and a mimic gripper (`fixtures/arm/`), and one test per
//! kind of malformed input, each checking the error kind, the element it names and its line.

use std::f64::consts::FRAC_1_SQRT_2;
use std::fs;
use std::path::{Path, PathBuf};

use embodia_robots::{
    Geometry, JointKind, JointLimit, MeshCollision, MeshData, RobotModel, UrdfError, UrdfErrorKind, load_urdf,
    parse_urdf,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn arm_path() -> PathBuf {
    fixtures().join("arm/urdf/arm.urdf")
}

fn load_arm() -> RobotModel {
    load_urdf(&arm_path()).unwrap_or_else(|e| panic!("{e}"))
}

/// A valid robot that the malformed cases below break one edit at a time.
const VALID: &str = r#"<robot name="r">
  <material name="red">
    <color rgba="1 0 0 1"/>
  </material>
  <link name="base">
    <inertial>
      <mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>
    </inertial>
    <visual>
      <geometry>
        <box size="0.1 0.2 0.3"/>
      </geometry>
      <material name="red"/>
    </visual>
  </link>
  <link name="upper_arm"/>
  <link name="finger"/>
  <joint name="elbow" type="revolute">
    <parent link="base"/>
    <child link="upper_arm"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="5" velocity="2"/>
    <dynamics damping="0.1" friction="0"/>
  </joint>
  <joint name="grip" type="prismatic">
    <parent link="upper_arm"/>
    <child link="finger"/>
    <limit lower="0" upper="0.1" effort="1" velocity="1"/>
    <mimic joint="elbow" multiplier="0.5"/>
  </joint>
</robot>
"#;

/// `VALID` with the first `from` replaced by `to`.
fn broken(from: &str, to: &str) -> String {
    assert!(VALID.contains(from), "VALID lacks {from:?}");
    VALID.replacen(from, to, 1)
}

/// 1-based line of the first occurrence of `needle` in `xml`.
fn line_of(xml: &str, needle: &str) -> u32 {
    let at = xml.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the XML"));
    xml[..at].matches('\n').count() as u32 + 1
}

/// Parses `xml`, expecting an error on the line holding `at`, and checks that the message
/// starts with that line and contains every part of `parts`.
fn error(xml: &str, at: &str, parts: &[&str]) -> UrdfError {
    let e = match parse_urdf(xml, None) {
        Ok(_) => panic!("parsed, expected an error at {at:?}:\n{xml}"),
        Err(e) => e,
    };
    let line = line_of(xml, at);
    let message = e.to_string();
    assert_eq!(e.line(), Some(line), "{message}");
    assert!(message.starts_with(&format!("line {line}: ")), "{message}");
    for part in parts {
        assert!(message.contains(part), "message lacks {part:?}: {message}");
    }
    e
}

/// Asserts that `e`'s kind matches the pattern.
macro_rules! assert_kind {
    ($e:expr, $pattern:pat) => {
        assert!(matches!($e.kind(), $pattern), "unexpected kind {:?} of {}", $e.kind(), $e)
    };
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("embodia-urdf-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn assert_close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

/// Every triangle of a convex mesh faces away from the vertex centroid.
fn assert_outward(mesh: &MeshData) {
    let n = mesh.vertices.len() as f32;
    let centroid = mesh.vertices.iter().fold([0.0; 3], |c, v| [c[0] + v[0] / n, c[1] + v[1] / n, c[2] + v[2] / n]);
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|i| mesh.vertices[i as usize]);
        let (u, v) = ([b[0] - a[0], b[1] - a[1], b[2] - a[2]], [c[0] - a[0], c[1] - a[1], c[2] - a[2]]);
        let normal = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
        let out = [a[0] - centroid[0], a[1] - centroid[1], a[2] - centroid[2]];
        assert!(normal.iter().zip(out).map(|(n, o)| n * o).sum::<f32>() > 0.0, "triangle {t:?} faces inwards");
    }
}

fn mesh(geometry: &Geometry) -> (&str, [f64; 3], &MeshData, MeshCollision) {
    match geometry {
        Geometry::Mesh { filename, scale, data, collision } => (filename, *scale, data, *collision),
        other => panic!("expected a mesh, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// the valid arm

#[test]
fn arm_links_and_inertias() {
    let arm = load_arm();
    assert_eq!(arm.name, "test_arm");
    let names: Vec<&str> = arm.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["base_link", "upper_arm", "forearm", "hand", "finger_left", "finger_right", "tool_frame"]);
    assert_eq!(arm.root, 0);

    let base = arm.links[0].inertial.unwrap();
    assert_eq!(base.origin.xyz, [0.0, 0.0, 0.05]);
    assert_eq!(base.mass, 2.0);
    assert_eq!(base.inertia, [0.01, 0.0, 0.0, 0.01, 0.0, 0.015]);
    assert_eq!(arm.links[1].inertial.unwrap().inertia, [0.02, 0.001, 0.0, 0.02, 0.0, 0.001]);
    assert!(arm.links[6].inertial.is_none(), "tool_frame is massless");
    assert_close(arm.total_mass(), 3.85);
}

#[test]
fn arm_joints_limits_axes_and_mimic() {
    let arm = load_arm();
    let names: Vec<&str> = arm.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["shoulder", "elbow", "wrist", "finger_left", "finger_right", "tool"]);
    let kinds: Vec<JointKind> = arm.joints.iter().map(|j| j.kind).collect();
    use JointKind::*;
    assert_eq!(kinds, [Revolute, Revolute, Continuous, Prismatic, Prismatic, Fixed]);

    let shoulder = &arm.joints[0];
    assert_eq!((shoulder.parent, shoulder.child), (0, 1));
    assert_eq!(shoulder.origin.xyz, [0.0, 0.0, 0.1]);
    assert_eq!(shoulder.axis, [0.0, 0.0, 1.0], "0 0 2 normalized");
    assert_eq!(shoulder.limit, Some(JointLimit { lower: -2.5, upper: 2.5, effort: 20.0, velocity: 2.0 }));
    assert_eq!((shoulder.dynamics.damping, shoulder.dynamics.friction), (0.1, 0.05));

    let elbow = &arm.joints[1];
    assert_eq!(elbow.origin.rpy, [0.0, 0.5, 0.0]);
    for (a, b) in elbow.axis.iter().zip([0.0, FRAC_1_SQRT_2, FRAC_1_SQRT_2]) {
        assert_close(*a, b);
    }
    assert_eq!(elbow.dynamics.damping, 0.0, "no <dynamics>: zero");

    let wrist = arm.joints[2].limit.unwrap();
    assert_eq!((wrist.lower, wrist.upper), (f64::NEG_INFINITY, f64::INFINITY));
    assert_eq!((wrist.effort, wrist.velocity), (2.0, 6.0));

    assert_eq!(arm.joints[3].limit.unwrap().lower, 0.0, "lower defaults to 0");
    assert_eq!(arm.joints[4].axis, [0.0, -1.0, 0.0]);
    let mimic = arm.joints[4].mimic.unwrap();
    assert_eq!((mimic.joint, mimic.multiplier, mimic.offset), (3, 1.0, 0.001));
    assert!(arm.joints[3].mimic.is_none());

    let tool = &arm.joints[5];
    assert_eq!(tool.axis, [1.0, 0.0, 0.0], "a fixed joint's zero axis falls back to the default");
    assert!(tool.limit.is_none());

    assert_eq!(arm.actuated_joints(), [0, 1, 2, 3], "the mimic and the fixed joint are not actuated");
}

#[test]
fn arm_shapes_colours_and_meshes() {
    let arm = load_arm();
    let base = &arm.links[0];
    let visual = &base.visuals[0];
    assert_eq!(visual.name.as_deref(), Some("base_shell"));
    assert_eq!(visual.rgba, Some([0.5, 0.5, 0.5, 1.0]), "named top-level material");
    let (filename, scale, cube, collision) = mesh(&visual.geometry);
    assert_eq!(filename, "package://arm/meshes/cube.stl");
    assert_eq!(scale, [0.2, 0.2, 0.1]);
    assert_eq!(collision, MeshCollision::ConvexHull);
    assert_eq!((cube.vertices.len(), cube.triangles.len()), (8, 12), "binary STL with a `solid` header");
    for v in &cube.vertices {
        assert_eq!(v.map(f32::abs), [0.1, 0.1, 0.05], "scale applied");
    }
    assert_outward(cube);
    assert_eq!(base.collisions[0].geometry, Geometry::Box { size: [0.2, 0.2, 0.1] });
    assert_eq!(base.collisions[0].origin.rpy, [0.0, 0.0, 1.2]);
    assert_eq!(base.collisions[0].rgba, None);

    let upper = &arm.links[1];
    assert_eq!(upper.visuals[0].rgba, Some([1.0, 0.5, 0.0, 1.0]), "inline colour");
    assert_eq!(upper.visuals[0].geometry, Geometry::Cylinder { radius: 0.03, length: 0.3 });
    assert_eq!(upper.visuals[0].origin.xyz, [0.0, 0.0, 0.15]);
    assert_eq!(upper.collisions[0].geometry, Geometry::Capsule { radius: 0.03, length: 0.24 });

    let forearm = &arm.links[2];
    assert_eq!(forearm.visuals[0].rgba, None, "texture-only material");
    let (_, _, pyramid, _) = mesh(&forearm.visuals[0].geometry);
    assert_eq!((pyramid.vertices.len(), pyramid.triangles.len()), (5, 6), "OBJ quad triangulated");
    assert_outward(pyramid);
    let (_, _, small, collision) = mesh(&forearm.collisions[0].geometry);
    assert_eq!(collision, MeshCollision::Trimesh, "embodia:collision=\"trimesh\"");
    assert!(small.vertices.contains(&[0.0, 0.0, 0.2]), "apex scaled by 0.1");

    let (_, _, tetra, _) = mesh(&arm.links[3].visuals[0].geometry);
    assert_eq!((tetra.vertices.len(), tetra.triangles.len()), (4, 4), "ASCII STL");
    assert!(tetra.vertices.contains(&[0.0, 0.0, -0.05]));
    assert_outward(tetra);
    assert_eq!(arm.links[3].collisions[0].geometry, Geometry::Sphere { radius: 0.04 });

    // The cube again, with another scale: meshes are shared unscaled.
    let (_, _, finger, _) = mesh(&arm.links[4].collisions[0].geometry);
    assert_eq!(finger.vertices[0].map(f32::abs), [0.005, 0.01, 0.02]);
}

#[test]
fn arm_summary() {
    let summary = load_arm().summary();
    assert!(summary.starts_with("robot \"test_arm\": 7 links, 6 joints, 4 actuated DoF, total mass 3.85 kg\nlinks:\n"));
    let (links, joints) = summary.split_once("joints:\n").expect("a joints section");
    let row = |section: &str, start: &str| {
        let row = section.lines().find(|l| l.trim_start().starts_with(start));
        row.unwrap_or_else(|| panic!("no {start}:\n{summary}")).to_string()
    };
    assert!(row(links, "base_link").ends_with(" 2 kg"), "{summary}");
    assert!(row(links, "tool_frame").ends_with(" massless"), "{summary}");
    let line = |start: &str| row(joints, start);
    let shoulder = line("shoulder");
    let shoulder: Vec<&str> = shoulder.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        shoulder,
        ["shoulder", "revolute", "base_link -> upper_arm", "[-2.5, 2.5] rad", "effort 20 N·m", "velocity 2 rad/s"]
    );
    assert!(line("wrist").contains("unbounded"), "{summary}");
    assert!(line("finger_left").contains("[0, 0.04] m"), "{summary}");
    assert!(line("finger_left").contains("effort 5 N "), "{summary}");
    assert!(line("finger_right").ends_with("mimics finger_left (multiplier 1, offset 0.001 m)"), "{summary}");
    assert!(line("tool ").contains("hand -> tool_frame"), "{summary}");
}

#[test]
fn joints_topological_orders_parents_first() {
    // Joints listed leaf first, links in no particular order.
    let xml = r#"<robot name="t">
      <link name="c"/><link name="a"/><link name="d"/><link name="b"/><link name="root"/>
      <joint name="b_c" type="fixed"><parent link="b"/><child link="c"/></joint>
      <joint name="a_d" type="fixed"><parent link="a"/><child link="d"/></joint>
      <joint name="a_b" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="root_a" type="fixed"><parent link="root"/><child link="a"/></joint>
    </robot>"#;
    let model = parse_urdf(xml, None).unwrap();
    assert_eq!(model.links[model.root].name, "root");
    let order = model.joints_topological();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, [0, 1, 2, 3], "every joint once");
    for (k, &j) in order.iter().enumerate() {
        let parent = model.joints[j].parent;
        assert!(
            parent == model.root || order[..k].iter().any(|&p| model.joints[p].child == parent),
            "joint {} comes before the joint attaching its parent link",
            model.joints[j].name
        );
    }
    assert_eq!(model.joints[order[0]].name, "root_a");
}

#[test]
fn valid_base_parses() {
    let model = parse_urdf(VALID, None).unwrap();
    assert_eq!(model.links[0].visuals[0].rgba, Some([1.0, 0.0, 0.0, 1.0]));
    assert_eq!(model.joints[1].mimic.map(|m| (m.joint, m.multiplier, m.offset)), Some((0, 0.5, 0.0)));
}

#[test]
fn truncated_or_corrupted_input_is_an_error_not_a_panic() {
    let text = fs::read_to_string(arm_path()).unwrap();
    let base_dir = arm_path().parent().unwrap().to_path_buf();
    let closed = text.rfind("</robot>").unwrap() + "</robot>".len();
    for end in (0..closed).filter(|&i| text.is_char_boundary(i)) {
        assert!(parse_urdf(&text[..end], Some(&base_dir)).is_err(), "prefix of {end} bytes parsed");
    }
    for (i, _) in text.char_indices().filter(|(_, c)| c.is_ascii_digit()) {
        let mut mutated = text.clone();
        mutated.replace_range(i..i + 1, "-");
        let _ = parse_urdf(&mutated, Some(&base_dir));
    }
}

// ---------------------------------------------------------------------------------------------
// document-level errors

#[test]
fn xml_syntax_error_has_its_position() {
    let xml = broken("  </joint>\n  <joint name=\"grip\"", "  </joit>\n  <joint name=\"grip\"");
    let e = error(&xml, "</joit>", &["XML syntax error", "joit"]);
    assert_kind!(e, UrdfErrorKind::Xml(_));

    // The mesh extension's prefix must be declared, as XML requires; the message says how.
    let xml = broken("<box size=\"0.1 0.2 0.3\"/>", "<mesh filename=\"m.stl\" embodia:collision=\"trimesh\"/>");
    let e = error(&xml, "<mesh", &["unknown namespace prefix 'embodia'", "xmlns:embodia=\""]);
    assert_kind!(e, UrdfErrorKind::Xml(_));
}

#[test]
fn document_element_must_be_robot() {
    let e = error("<?xml version=\"1.0\"?>\n<robt name=\"r\"/>", "<robt", &["<robt>", "expected <robot>"]);
    assert_kind!(e, UrdfErrorKind::NotRobot(_));
}

#[test]
fn robot_without_links() {
    let e = error("<robot name=\"empty\">\n</robot>", "<robot", &["no links"]);
    assert_kind!(e, UrdfErrorKind::NoLinks);
}

#[test]
fn load_urdf_names_the_file() {
    let dir = TempDir::new("file");
    let path = dir.0.join("robot.urdf");
    fs::write(&path, broken("<parent link=\"base\"/>", "<parent link=\"upper_arm_\"/>")).unwrap();
    let e = load_urdf(&path).unwrap_err();
    let line = line_of(VALID, "<parent link=\"base\"/>");
    assert_eq!(e.file(), Some(path.as_path()));
    assert_eq!(
        e.to_string(),
        format!("{}:{line}: joint \"elbow\": parent link \"upper_arm_\" does not exist", path.display())
    );

    let missing = dir.0.join("missing.urdf");
    let e = load_urdf(&missing).unwrap_err();
    assert_kind!(e, UrdfErrorKind::Read(_));
    assert!(e.to_string().starts_with(&format!("{}: cannot read the file", missing.display())), "{e}");
}

// ---------------------------------------------------------------------------------------------
// missing and malformed attributes and elements

#[test]
fn missing_attributes() {
    let xml = broken("<joint name=\"elbow\" type=\"revolute\">", "<joint type=\"revolute\">");
    let e = error(&xml, "<joint type=", &["<joint> has no `name` attribute"]);
    assert_kind!(e, UrdfErrorKind::MissingAttribute { .. });
    assert_eq!(e.element(), None);

    let xml = broken("effort=\"5\" ", "");
    let e = error(&xml, "<limit lower=\"-1\"", &["joint \"elbow\"", "<limit> has no `effort` attribute"]);
    assert_kind!(e, UrdfErrorKind::MissingAttribute { .. });

    let xml = broken("<parent link=\"base\"/>", "<parent/>");
    error(&xml, "<parent/>", &["joint \"elbow\"", "<parent> has no `link` attribute"]);

    let xml = broken("<mass value=\"1\"/>", "<mass/>");
    error(&xml, "<mass/>", &["link \"base\"", "<mass> has no `value` attribute"]);
}

#[test]
fn missing_elements() {
    let xml = broken("    <limit lower=\"-1\" upper=\"1\" effort=\"5\" velocity=\"2\"/>\n", "");
    let e = error(&xml, "<joint name=\"elbow\"", &["joint \"elbow\"", "<joint> has no <limit> element"]);
    assert_kind!(e, UrdfErrorKind::MissingElement { .. });

    let xml = broken("    <child link=\"finger\"/>\n", "");
    error(&xml, "<joint name=\"grip\"", &["joint \"grip\"", "<joint> has no <child> element"]);

    let xml = broken("      <mass value=\"1\"/>\n", "");
    error(&xml, "<inertial>", &["link \"base\"", "<inertial> has no <mass> element"]);

    let xml = broken("<geometry>\n        <box size=\"0.1 0.2 0.3\"/>\n      </geometry>", "");
    error(&xml, "<visual>", &["link \"base\"", "<visual> has no <geometry> element"]);

    let xml = broken("<box size=\"0.1 0.2 0.3\"/>", "");
    error(&xml, "<geometry>", &["link \"base\"", "<geometry> has no <box|sphere|cylinder|capsule|mesh>"]);
}

#[test]
fn unparsable_numbers_name_the_attribute() {
    let xml = broken("lower=\"-1\"", "lower=\"minus one\"");
    let e = error(&xml, "lower=\"minus one\"", &["joint \"elbow\"", "<limit lower=\"minus one\">: expected a number"]);
    assert_kind!(e, UrdfErrorKind::InvalidNumber { count: 1, .. });

    let xml = broken("xyz=\"0 0 0.1\"", "xyz=\"0 0.1\"");
    let e = error(&xml, "xyz=\"0 0.1\"", &["joint \"elbow\"", "<origin xyz=\"0 0.1\">: expected 3 numbers"]);
    assert_kind!(e, UrdfErrorKind::InvalidNumber { count: 3, .. });

    let xml = broken("size=\"0.1 0.2 0.3\"", "size=\"0.1 0.2 0.3 0.4\"");
    error(&xml, "size=", &["link \"base\"", "<box size=\"0.1 0.2 0.3 0.4\">: expected 3 numbers"]);

    // An attribute on its own line is reported on that line.
    let xml = broken("ixx=\"0.1\" ixy=\"0\"", "ixx=\"0.1\"\n        ixy=\"zero\"");
    error(&xml, "ixy=\"zero\"", &["link \"base\"", "<inertia ixy=\"zero\">"]);
}

#[test]
fn non_finite_numbers() {
    let xml = broken("effort=\"5\"", "effort=\"inf\"");
    let e = error(&xml, "effort=\"inf\"", &["joint \"elbow\"", "<limit effort=\"inf\">: numbers must be finite"]);
    assert_kind!(e, UrdfErrorKind::NonFinite { .. });

    let xml = broken("rpy=\"0 0 0\"", "rpy=\"0 NaN 0\"");
    let e = error(&xml, "rpy=", &["joint \"elbow\"", "<origin rpy=\"0 NaN 0\">: numbers must be finite"]);
    assert_kind!(e, UrdfErrorKind::NonFinite { .. });
}

// ---------------------------------------------------------------------------------------------
// physical values

#[test]
fn mass_must_be_positive() {
    for mass in ["0", "-2"] {
        let xml = broken("<mass value=\"1\"/>", &format!("<mass value=\"{mass}\"/>"));
        let e = error(&xml, "<mass", &["link \"base\"", &format!("<mass value>: must be > 0, got {mass}")]);
        assert_kind!(e, UrdfErrorKind::NotPositive { .. });
    }
}

#[test]
fn masses_and_inertias_above_their_bound_are_refused() {
    let xml = broken("<mass value=\"1\"/>", "<mass value=\"1e308\"/>");
    let e = error(&xml, "<mass", &["link \"base\"", "<mass value>: at most 1e6 allowed, got 1e308"]);
    assert_kind!(e, UrdfErrorKind::TooLarge { .. });
    let xml = broken("izz=\"0.1\"", "izz=\"2e6\"");
    let xml = xml.replace("ixx=\"0.1\"", "ixx=\"2e6\"").replace("iyy=\"0.1\"", "iyy=\"2e6\"");
    let e = error(&xml, "<inertia ", &["link \"base\"", "<inertia ixx>: at most 1e6 allowed, got 2e6"]);
    assert_kind!(e, UrdfErrorKind::TooLarge { .. });
}

#[test]
fn inertia_must_be_physical() {
    let xml = broken("izz=\"0.1\"", "izz=\"0\"");
    let e = error(&xml, "<inertia ", &["link \"base\"", "<inertia izz>: must be > 0, got 0"]);
    assert_kind!(e, UrdfErrorKind::NotPositive { .. });

    let xml = broken("izz=\"0.1\"", "izz=\"0.3\"");
    let e = error(&xml, "<inertia ", &["link \"base\"", "ixx + iyy < izz (0.1 + 0.1 < 0.3)"]);
    assert_kind!(e, UrdfErrorKind::InertiaTriangle { names: ["ixx", "iyy", "izz"], .. });

    // Rounding to a few digits is tolerated: 0.0833 + 0.0833 vs 0.1667.
    let xml = broken(
        "ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"",
        "ixx=\"0.0833\" ixy=\"0\" ixz=\"0\" iyy=\"0.0833\" iyz=\"0\" izz=\"0.1667\"",
    );
    parse_urdf(&xml, None).unwrap();
}

#[test]
fn geometry_sizes_must_not_be_negative() {
    let xml = broken("size=\"0.1 0.2 0.3\"", "size=\"0.1 -0.2 0.3\"");
    let e = error(&xml, "size=", &["link \"base\"", "<box size>: must be ≥ 0, got -0.2"]);
    assert_kind!(e, UrdfErrorKind::Negative { .. });

    let xml = broken("<box size=\"0.1 0.2 0.3\"/>", "<cylinder radius=\"0.1\" length=\"-1\"/>");
    error(&xml, "<cylinder", &["link \"base\"", "<cylinder length>: must be ≥ 0, got -1"]);

    let xml = broken("damping=\"0.1\"", "damping=\"-0.1\"");
    error(&xml, "damping=", &["joint \"elbow\"", "<dynamics damping>: must be ≥ 0, got -0.1"]);

    // A long number reads in scientific notation, not as its 301 digits.
    let xml = broken("damping=\"0.1\"", "damping=\"-1e300\"");
    error(&xml, "damping=", &["joint \"elbow\"", "<dynamics damping>: must be ≥ 0, got -1e300"]);
}

#[test]
fn joint_limits() {
    let xml = broken("lower=\"-1\" upper=\"1\"", "lower=\"1\" upper=\"-1\"");
    let e = error(&xml, "<limit lower=\"1\"", &["joint \"elbow\"", "<limit>: lower 1 > upper -1"]);
    assert_kind!(e, UrdfErrorKind::LimitOrder { .. });

    let xml = broken("effort=\"5\"", "effort=\"0\"");
    let e = error(&xml, "effort=\"0\"", &["joint \"elbow\"", "<limit effort>: must be > 0, got 0"]);
    assert_kind!(e, UrdfErrorKind::NotPositive { .. });

    let xml = broken("velocity=\"2\"", "velocity=\"-2\"");
    error(&xml, "velocity=\"-2\"", &["joint \"elbow\"", "<limit velocity>: must be > 0, got -2"]);
}

#[test]
fn zero_axis() {
    let xml = broken("<axis xyz=\"0 1 0\"/>", "<axis xyz=\"0 0 0\"/>");
    let e = error(&xml, "<axis", &["joint \"elbow\"", "the axis of a revolute joint must be non-zero"]);
    assert_kind!(e, UrdfErrorKind::ZeroAxis { .. });
}

#[test]
fn colours_and_materials() {
    let xml = broken("<color rgba=\"1 0 0 1\"/>", "<color rgba=\"255 0 0 1\"/>");
    let e = error(&xml, "<color", &["material \"red\"", "<color rgba=\"255 0 0 1\">: components must lie in [0, 1]"]);
    assert_kind!(e, UrdfErrorKind::ColorOutOfRange(_));

    let xml = broken("<material name=\"red\"/>", "<material name=\"blue\"/>");
    let e = error(&xml, "<material name=\"blue\"", &["link \"base\"", "material \"blue\" has no <color>"]);
    assert_kind!(e, UrdfErrorKind::UndefinedMaterial(_));
}

#[test]
fn unknown_geometry() {
    let xml = broken("<box size=\"0.1 0.2 0.3\"/>", "<cone radius=\"1\"/>");
    let e = error(&xml, "<cone", &["link \"base\"", "unknown geometry <cone>"]);
    assert_kind!(e, UrdfErrorKind::UnknownGeometry(_));
}

// ---------------------------------------------------------------------------------------------
// names and tree structure

#[test]
fn duplicate_names() {
    let xml = broken("<link name=\"finger\"/>", "<link name=\"upper_arm\" />");
    let first = line_of(&xml, "<link name=\"upper_arm\"/>");
    let e = error(
        &xml,
        "<link name=\"upper_arm\" />",
        &["link \"upper_arm\"", &format!("name already used by the link on line {first}")],
    );
    assert_kind!(e, UrdfErrorKind::DuplicateName { what: "link", .. });

    let xml = broken("<joint name=\"grip\"", "<joint name=\"elbow\"");
    let first = line_of(&xml, "<joint name=\"elbow\"");
    let e = error(
        &xml,
        "<joint name=\"elbow\" type=\"prismatic\"",
        &["joint \"elbow\"", &format!("name already used by the joint on line {first}")],
    );
    assert_kind!(e, UrdfErrorKind::DuplicateName { what: "joint", .. });

    let xml = broken("<link name=\"base\">", "<material name=\"red\"/>\n  <link name=\"base\">");
    let e =
        error(&xml, "<material name=\"red\"/>", &["material \"red\"", "name already used by the material on line 2"]);
    assert_kind!(e, UrdfErrorKind::DuplicateName { what: "material", .. });
}

#[test]
fn joint_links_must_exist() {
    let xml = broken("<parent link=\"base\"/>", "<parent link=\"upper_arm_\"/>");
    let e = error(&xml, "<parent link=\"upper_arm_\"", &["joint \"elbow\": parent link \"upper_arm_\" does not exist"]);
    assert_kind!(e, UrdfErrorKind::MissingLink { role: "parent", .. });

    let xml = broken("<child link=\"finger\"/>", "<child link=\"thumb\"/>");
    let e = error(&xml, "<child link=\"thumb\"", &["joint \"grip\": child link \"thumb\" does not exist"]);
    assert_kind!(e, UrdfErrorKind::MissingLink { role: "child", .. });
}

#[test]
fn link_with_two_parents() {
    let xml = broken("<child link=\"finger\"/>", "<child link=\"upper_arm\"/>");
    let first = line_of(&xml, "<joint name=\"elbow\"");
    let e = error(
        &xml,
        "<child link=\"upper_arm\"/>\n    <limit lower=\"0\"",
        &["joint \"grip\"", &format!("link \"upper_arm\" already has a parent: joint \"elbow\" on line {first}")],
    );
    assert_kind!(e, UrdfErrorKind::SecondParent { .. });
}

#[test]
fn cycle() {
    // base -> upper_arm -> finger, and finger -> base closes the loop.
    let xml = broken(
        "</robot>",
        "<joint name=\"back\" type=\"fixed\">\n    <parent link=\"finger\"/>\n    <child link=\"base\"/>\n  </joint>\n</robot>",
    );
    let e = error(&xml, "<joint name=\"back\"", &["joint \"back\"", "closes a cycle of links: "]);
    let UrdfErrorKind::Cycle { links } = e.kind() else { panic!("{e}") };
    assert_eq!(links.len(), 4, "{e}");
    assert_eq!(links[0], links[3]);
    let mut around = links[..3].to_vec();
    around.sort();
    assert_eq!(around, ["base", "finger", "upper_arm"]);
    assert!(e.to_string().contains(&links.join(" -> ")));

    // A cycle away from the root.
    let xml = broken(
        "</robot>",
        "<link name=\"x\"/>\n  <joint name=\"loop\" type=\"fixed\">\n    <parent link=\"x\"/>\n    <child link=\"x\"/>\n  </joint>\n</robot>",
    );
    let e = error(&xml, "<joint name=\"loop\"", &["joint \"loop\": closes a cycle of links: x -> x"]);
    assert_kind!(e, UrdfErrorKind::Cycle { .. });
}

#[test]
fn disconnected_links() {
    let xml = broken("<link name=\"finger\"/>", "<link name=\"finger\"/>\n  <link name=\"stray\"/>");
    let e = error(&xml, "<link name=\"stray\"", &["link \"stray\": a second root besides link \"base\""]);
    assert_kind!(e, UrdfErrorKind::SecondRoot { .. });
}

#[test]
fn joint_types() {
    let xml = broken("type=\"revolute\"", "type=\"hinge\"");
    let e = error(&xml, "type=\"hinge\"", &["joint \"elbow\"", "unknown joint type `hinge`"]);
    assert_kind!(e, UrdfErrorKind::UnknownJointType(_));

    let xml = broken("type=\"revolute\"", "type=\"planar\"");
    let e = error(&xml, "type=\"planar\"", &["joint \"elbow\"", "joint type `planar` is not supported"]);
    assert_kind!(e, UrdfErrorKind::UnsupportedJointType(_));
}

#[test]
fn mimic_errors() {
    let xml = broken("<mimic joint=\"elbow\"", "<mimic joint=\"wrist\"");
    let e = error(&xml, "<mimic", &["joint \"grip\"", "mimicked joint \"wrist\" does not exist"]);
    assert_kind!(e, UrdfErrorKind::MimicMissing(_));

    let xml = broken("<mimic joint=\"elbow\"", "<mimic joint=\"grip\"");
    let e = error(&xml, "<mimic", &["joint \"grip\"", "a joint cannot mimic itself"]);
    assert_kind!(e, UrdfErrorKind::MimicSelf);

    let xml = broken("type=\"revolute\"", "type=\"fixed\"");
    let e = error(&xml, "<mimic", &["joint \"grip\"", "joint \"elbow\" is fixed"]);
    assert_kind!(e, UrdfErrorKind::MimicDof { .. });

    let xml = broken("<dynamics", "<mimic joint=\"grip\"/>\n    <dynamics");
    let e = error(
        &xml,
        "<mimic joint=\"grip\"",
        &["joint \"elbow\"", "mimicked joint \"grip\" itself mimics joint \"elbow\""],
    );
    assert_kind!(e, UrdfErrorKind::MimicChain { .. });
}

// ---------------------------------------------------------------------------------------------
// meshes

/// `VALID` with the base's box replaced by `mesh`.
fn with_mesh(mesh: &str) -> String {
    broken("<box size=\"0.1 0.2 0.3\"/>", mesh)
}

#[test]
fn mesh_without_base_dir() {
    let xml = with_mesh("<mesh filename=\"cube.stl\"/>");
    let e = error(&xml, "<mesh", &["link \"base\"", "mesh \"cube.stl\": mesh files need a base directory"]);
    assert_kind!(e, UrdfErrorKind::NoBaseDir(_));
}

/// Parses `xml` from `dir`, expecting an error on the line holding `at`.
fn mesh_error(xml: &str, dir: &Path, at: &str, parts: &[&str]) -> UrdfError {
    let e = parse_urdf(xml, Some(dir)).expect_err("a mesh error");
    assert_eq!(e.line(), Some(line_of(xml, at)), "{e}");
    for part in parts {
        assert!(e.to_string().contains(part), "message lacks {part:?}: {e}");
    }
    e
}

#[test]
fn missing_or_unsupported_mesh_files() {
    let meshes = fixtures().join("arm/meshes");
    let xml = with_mesh("<mesh filename=\"package://arm/meshes/gone.stl\"/>");
    let e = mesh_error(&xml, &meshes, "<mesh", &["link \"base\"", "mesh \"package://arm/meshes/gone.stl\" not found"]);
    let UrdfErrorKind::MeshNotFound { tried, .. } = e.kind() else { panic!("{e}") };
    assert_eq!(tried.len(), 6);
    assert_eq!(tried[0], meshes.join("meshes/gone.stl"));
    assert_eq!(tried[2], meshes.join("../meshes/gone.stl"));

    let xml = with_mesh("<mesh filename=\"cube.dae\"/>");
    let e = mesh_error(&xml, &meshes, "<mesh", &["link \"base\"", "mesh \"cube.dae\": unsupported format"]);
    assert_kind!(e, UrdfErrorKind::UnsupportedMesh(_));

    let xml = with_mesh("<mesh filename=\"cube.stl\" embodia_collision=\"exact\"/>");
    let e = mesh_error(
        &xml,
        &meshes,
        "<mesh",
        &["link \"base\"", "embodia_collision=\"exact\">: expected convex or trimesh"],
    );
    assert_kind!(e, UrdfErrorKind::InvalidMeshCollision { .. });
}

#[test]
fn corrupt_meshes() {
    let dir = TempDir::new("meshes");
    fs::write(dir.0.join("empty.stl"), "solid empty\nendsolid empty\n").unwrap();
    fs::write(dir.0.join("garbage.stl"), "solid x\n facet normal 0 0 1\n  outer loop\n   vertex 1 2\n").unwrap();
    fs::write(dir.0.join("short.stl"), [0u8; 60]).unwrap();
    fs::write(dir.0.join("bad.obj"), "v 0 0 0\nv 1 0 0\nf 1 2 7\n").unwrap();
    fs::write(dir.0.join("inf.obj"), "v 0 0 0\nv 1 0 0\nv 0 1e39 0\nf 1 2 3\n").unwrap();
    for (file, reason) in [
        ("empty.stl", "no triangles"),
        ("garbage.stl", "invalid STL"),
        ("short.stl", "invalid STL"),
        ("bad.obj", "invalid OBJ"),
        ("inf.obj", "must be finite"),
    ] {
        let xml = with_mesh(&format!("<mesh filename=\"{file}\"/>"));
        let e = mesh_error(&xml, &dir.0, "<mesh", &["link \"base\"", file, reason]);
        assert_kind!(e, UrdfErrorKind::InvalidMesh { .. });
    }
    // A finite mesh scaled past f32.
    fs::copy(fixtures().join("arm/meshes/tetra.stl"), dir.0.join("tetra.stl")).unwrap();
    let xml = with_mesh("<mesh filename=\"tetra.stl\" scale=\"1e300 1 1\"/>");
    mesh_error(&xml, &dir.0, "<mesh", &["tetra.stl", "must be finite (after scaling)"]);
}
