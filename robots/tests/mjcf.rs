//! MJCF import: the shipped MJCF robots against their URDFs, gymnasium's Ant against embodia's
//! ant, a Menagerie-style model (classes, meshes, actuators), and errors for what is refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use embodia_robots::mjcf::{MjcfErrorKind, MjcfRobot};
use embodia_robots::{ControlMode, Geometry, JointKind, Pose, RobotModel, builtin, load_mjcf, parse_mjcf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mjcf")
}

// ---- rigid transforms for comparing models frame-independently ------------------------------

type Mat = [[f64; 3]; 3];

#[derive(Clone, Copy, Debug)]
struct Iso {
    r: Mat,
    p: [f64; 3],
}

fn mat_of(pose: &Pose) -> Mat {
    let [x, y, z, w] = pose.quaternion();
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

fn mul(a: &Mat, b: &Mat) -> Mat {
    let mut m = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    m
}

fn transpose(a: &Mat) -> Mat {
    let mut m = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = a[j][i];
        }
    }
    m
}

fn apply(a: &Mat, v: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|i| (0..3).map(|k| a[i][k] * v[k]).sum())
}

fn axis_angle(axis: [f64; 3], angle: f64) -> Mat {
    let (s, c) = angle.sin_cos();
    let [x, y, z] = axis;
    let t = 1.0 - c;
    [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]
}

impl Iso {
    const ID: Iso = Iso { r: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], p: [0.0; 3] };

    fn of(pose: &Pose) -> Iso {
        Iso { r: mat_of(pose), p: pose.xyz }
    }

    fn then(&self, o: &Iso) -> Iso {
        let q = apply(&self.r, o.p);
        Iso { r: mul(&self.r, &o.r), p: [self.p[0] + q[0], self.p[1] + q[1], self.p[2] + q[2]] }
    }

    fn point(&self, v: [f64; 3]) -> [f64; 3] {
        let q = apply(&self.r, v);
        [self.p[0] + q[0], self.p[1] + q[1], self.p[2] + q[2]]
    }
}

/// World frames of all links for joint positions `q` by joint name (missing joints at 0).
fn forward(model: &RobotModel, q: &HashMap<&str, f64>) -> Vec<Iso> {
    let mut frames = vec![Iso::ID; model.links.len()];
    for j in model.joints_topological() {
        let joint = &model.joints[j];
        let v = q.get(joint.name.as_str()).copied().unwrap_or(0.0);
        let mut f = frames[joint.parent].then(&Iso::of(&joint.origin));
        match joint.kind {
            JointKind::Revolute | JointKind::Continuous => {
                f = f.then(&Iso { r: axis_angle(joint.axis, v), p: [0.0; 3] })
            }
            JointKind::Prismatic => f = f.then(&Iso { r: Iso::ID.r, p: joint.axis.map(|a| a * v) }),
            _ => {}
        }
        frames[joint.child] = f;
    }
    frames
}

/// Total mass, centre of mass and the inertia tensor about it, in the world frame at `q`.
fn mass_properties(model: &RobotModel, q: &HashMap<&str, f64>) -> (f64, [f64; 3], Mat) {
    let frames = forward(model, q);
    let bodies: Vec<(f64, [f64; 3], Mat)> = model
        .links
        .iter()
        .zip(&frames)
        .filter_map(|(l, f)| {
            let i = l.inertial?;
            let frame = f.then(&Iso::of(&i.origin));
            let [xx, xy, xz, yy, yz, zz] = i.inertia;
            let local = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]];
            Some((i.mass, frame.p, mul(&mul(&frame.r, &local), &transpose(&frame.r))))
        })
        .collect();
    let mass: f64 = bodies.iter().map(|b| b.0).sum();
    let com = [0, 1, 2].map(|k| bodies.iter().map(|b| b.0 * b.1[k]).sum::<f64>() / mass);
    let mut t = [[0.0; 3]; 3];
    for (m, c, i) in &bodies {
        let d = [c[0] - com[0], c[1] - com[1], c[2] - com[2]];
        let dd = d.iter().map(|x| x * x).sum::<f64>();
        for a in 0..3 {
            for b in 0..3 {
                t[a][b] += i[a][b] + m * (if a == b { dd } else { 0.0 } - d[a] * d[b]);
            }
        }
    }
    (mass, com, t)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_vec_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!(close(*x, *y, tol), "{what}: {a:?} vs {b:?}");
    }
}

fn flat(m: &Mat) -> Vec<f64> {
    m.iter().flatten().copied().collect()
}

fn same_geometry(a: &Geometry, b: &Geometry, tol: f64) -> bool {
    match (a, b) {
        (Geometry::Box { size: x }, Geometry::Box { size: y }) => x.iter().zip(y).all(|(p, q)| close(*p, *q, tol)),
        (Geometry::Sphere { radius: x }, Geometry::Sphere { radius: y }) => close(*x, *y, tol),
        (Geometry::Cylinder { radius: r1, length: l1 }, Geometry::Cylinder { radius: r2, length: l2 })
        | (Geometry::Capsule { radius: r1, length: l1 }, Geometry::Capsule { radius: r2, length: l2 }) => {
            close(*r1, *r2, tol) && close(*l1, *l2, tol)
        }
        _ => false,
    }
}

/// Shapes are equal up to `tol` (poses compared as transforms, since one rotation has several
/// roll-pitch-yaw spellings).
fn assert_same_pose(a: &Pose, b: &Pose, tol: f64, what: &str) {
    assert_vec_close(&a.xyz, &b.xyz, tol, what);
    assert_vec_close(&flat(&mat_of(a)), &flat(&mat_of(b)), tol, what);
}

/// Everything the simulator reads from a `RobotModel` agrees: links (mass, centre of mass,
/// inertia tensor in the link frame, shapes and colours), joints (kind, parent, child, origin,
/// axis, position and effort limits, damping, friction, mimic). Joint velocity limits are
/// infinite on the MJCF side (MuJoCo has none) and fixed joints are named after their child
/// body there.
fn assert_same_model(mjcf: &RobotModel, urdf: &RobotModel, tol: f64) {
    assert_eq!(mjcf.name, urdf.name);
    let names = |m: &RobotModel| m.links.iter().map(|l| l.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(mjcf), names(urdf), "links in the same order");
    assert_eq!(mjcf.root, urdf.root);
    for (a, b) in mjcf.links.iter().zip(&urdf.links) {
        let what = format!("link {}", a.name);
        let (ia, ib) = (a.inertial.unwrap(), b.inertial.unwrap());
        assert!(close(ia.mass, ib.mass, tol), "{what} mass {} vs {}", ia.mass, ib.mass);
        assert_vec_close(&ia.origin.xyz, &ib.origin.xyz, tol, &format!("{what} centre of mass"));
        let tensor = |i: &embodia_robots::Inertial| {
            let [xx, xy, xz, yy, yz, zz] = i.inertia;
            let r = mat_of(&i.origin);
            mul(&mul(&r, &[[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]), &transpose(&r))
        };
        assert_vec_close(&flat(&tensor(&ia)), &flat(&tensor(&ib)), tol, &format!("{what} inertia"));
        for (sa, sb, kind) in [(&a.visuals, &b.visuals, "visual"), (&a.collisions, &b.collisions, "collision")] {
            assert_eq!(sa.len(), sb.len(), "{what} {kind}s");
            for (x, y) in sa.iter().zip(sb) {
                assert!(same_geometry(&x.geometry, &y.geometry, tol), "{what}: {:?} vs {:?}", x.geometry, y.geometry);
                assert_same_pose(&x.origin, &y.origin, tol, &format!("{what} {kind} origin"));
                assert_eq!(x.rgba, y.rgba, "{what} {kind} colour");
            }
        }
    }
    assert_eq!(mjcf.joints.len(), urdf.joints.len());
    for (a, b) in mjcf.joints.iter().zip(&urdf.joints) {
        let what = format!("joint {}", b.name);
        if b.kind != JointKind::Fixed {
            assert_eq!(a.name, b.name);
        }
        assert_eq!((a.kind, a.parent, a.child), (b.kind, b.parent, b.child), "{what}");
        assert_same_pose(&a.origin, &b.origin, tol, &format!("{what} origin"));
        if b.kind.dof() == 1 {
            assert_vec_close(&a.axis, &b.axis, tol, &format!("{what} axis"));
            let (la, lb) = (a.limit.unwrap(), b.limit.unwrap());
            assert_vec_close(&[la.lower, la.upper, la.effort], &[lb.lower, lb.upper, lb.effort], tol, &what);
            assert_eq!(la.velocity, f64::INFINITY, "{what}: MJCF has no velocity limit");
            assert_eq!(a.dynamics, b.dynamics, "{what}");
            assert_eq!(a.mimic, b.mimic, "{what}");
        }
    }
}

fn shipped(name: &str) -> MjcfRobot {
    let path = repo().join(format!("assets/robots/{name}.xml"));
    load_mjcf(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn shipped_mjcf_robots_give_the_same_model_as_their_urdf() {
    // The MJCF files print numbers with 8 significant digits, like the URDFs; rotations go
    // through quaternions, so agreement is to ~1e-8.
    for name in ["so101", "arm7", "quadruped12", "ant"] {
        let mjcf = shipped(name);
        assert_same_model(&mjcf.model, &builtin(name).unwrap(), 1e-7);
        assert!(mjcf.skipped.is_empty(), "{name}: {:?}", mjcf.skipped);
    }
}

#[test]
fn shipped_mjcf_robots_carry_actuators_armature_and_the_floating_base() {
    let so101 = shipped("so101");
    assert!(!so101.floating_base);
    let actuated = so101.model.actuated_joints();
    assert_eq!(so101.actuators.iter().map(|a| a.joint).collect::<Vec<_>>(), actuated);
    for a in &so101.actuators {
        assert_eq!(a.config.mode, ControlMode::Torque);
        assert_eq!(a.config.effort_limit, Some(2.94), "{}: ctrlrange ±2.94 at gear 1", a.name);
        assert_eq!(a.config.armature, 0.028);
    }

    let ant = shipped("ant");
    assert!(ant.floating_base, "<freejoint> on the torso");
    assert!(shipped("quadruped12").floating_base);
    for a in &ant.actuators {
        assert_eq!((a.gear, a.ctrl_range, a.config.effort_limit), (150.0, Some([-1.0, 1.0]), Some(150.0)));
    }
    let arm7 = shipped("arm7");
    let finger2 = arm7.model.joint_index("finger_joint2").unwrap();
    assert!(arm7.actuator_of(finger2).is_none(), "the mimic finger follows through <equality>");
    assert_eq!(arm7.actuators.len(), 8);
}

// ---- gymnasium's Ant -------------------------------------------------------------------------

#[test]
fn gymnasium_ant_matches_embodias_ant() {
    let gym = load_mjcf(&fixtures().join("gymnasium_ant.xml")).unwrap_or_else(|e| panic!("{e}"));
    let ours = builtin("ant").unwrap();
    let m = &gym.model;

    // ant.xml keeps the torso-to-hip capsules in joint-less bodies (welded here by fixed
    // joints) and leaves the lower legs unnamed (body4, …): 13 links where ant.urdf has 9.
    assert_eq!(m.links.len(), 13);
    assert_eq!(m.links[3].name, "body4", "unnamed lower leg of leg 1, named by MuJoCo's body id");
    assert_eq!(m.joints.iter().filter(|j| j.kind == JointKind::Fixed).count(), 4);
    assert!(gym.floating_base);

    // Joints: same names, ranges (degrees converted), damping; the world-frame axes and
    // anchors agree at random in-range poses, and so do the foot tips.
    let hinge_names: Vec<&str> = m.actuated_joints().iter().map(|&j| m.joints[j].name.as_str()).collect();
    let our_names: Vec<&str> = ours.actuated_joints().iter().map(|&j| ours.joints[j].name.as_str()).collect();
    assert_eq!(hinge_names, our_names);
    let mut seed = 12345_u64;
    let mut uniform = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for _ in 0..20 {
        let mut q = HashMap::new();
        for &j in &ours.actuated_joints() {
            let l = ours.joints[j].limit.unwrap();
            q.insert(ours.joints[j].name.as_str(), l.lower + (l.upper - l.lower) * uniform());
        }
        // ant.urdf prints lengths and rotations with 8 significant digits: agreement to 5e-8 (half a unit in the 8th digit).
        let (fa, fb) = (forward(m, &q), forward(&ours, &q));
        for name in &our_names {
            let (ja, jb) = (&m.joints[m.joint_index(name).unwrap()], &ours.joints[ours.joint_index(name).unwrap()]);
            let (a, b) = (fa[ja.parent].then(&Iso::of(&ja.origin)), fb[jb.parent].then(&Iso::of(&jb.origin)));
            assert_vec_close(&a.p, &b.p, 5e-8, &format!("{name} anchor"));
            assert_vec_close(&apply(&a.r, ja.axis), &apply(&b.r, jb.axis), 5e-8, &format!("{name} axis"));
            let (la, lb) = (ja.limit.unwrap(), jb.limit.unwrap());
            // ant.urdf prints radians with 8 significant digits.
            assert_vec_close(&[la.lower, la.upper], &[lb.lower, lb.upper], 5e-8, name);
            assert_eq!(ja.dynamics, jb.dynamics, "{name}");
        }
        for leg in 1..=4 {
            // The tip of the lower leg: 0.4·√2 m along the lower-leg capsule from the ankle.
            let ours_tip = fb[ours.link_index(&format!("foot_{leg}")).unwrap()].point([0.4 * 2f64.sqrt(), 0.0, 0.0]);
            let ankle = m.joint_index(&format!("ankle_{leg}")).unwrap();
            let lower = &m.links[m.joints[ankle].child];
            let capsule = &lower.collisions[0];
            let Geometry::Capsule { length, .. } = capsule.geometry else { panic!("{capsule:?}") };
            let gym_tip = fa[m.joints[ankle].child].then(&Iso::of(&capsule.origin)).point([0.0, 0.0, length / 2.0]);
            assert_vec_close(&gym_tip, &ours_tip, 1e-8, &format!("foot tip {leg}"));
        }
        // Mass properties computed from ant.xml's geoms at density 5 equal the URDF's.
        let (ma, ca, ia) = mass_properties(m, &q);
        let (mb, cb, ib) = mass_properties(&ours, &q);
        assert!(close(ma, mb, 1e-7), "mass {ma} vs {mb}");
        assert_vec_close(&ca, &cb, 1e-7, "centre of mass");
        assert_vec_close(&flat(&ia), &flat(&ib), 1e-6, "inertia about the centre of mass");
    }

    // What URDF cannot say: armature 1 on the hinges (0 on the free joint), motors of gear 150
    // in Ant-v5's action order, and collision bitmasks (robot geoms: contype 1, conaffinity 0).
    for &j in &m.actuated_joints() {
        assert_eq!(gym.armature[j], 1.0);
    }
    let order: Vec<&str> = gym.actuators.iter().map(|a| m.joints[a.joint].name.as_str()).collect();
    assert_eq!(order, ["hip_4", "ankle_4", "hip_1", "ankle_1", "hip_2", "ankle_2", "hip_3", "ankle_3"]);
    for a in &gym.actuators {
        assert_eq!((a.config.mode, a.gear, a.config.effort_limit), (ControlMode::Torque, 150.0, Some(150.0)));
        assert_eq!(a.config.armature, 1.0);
    }
    assert_eq!(m.joints[m.joint_index("hip_1").unwrap()].limit.unwrap().effort, 150.0);
    assert!(gym.collision_filters.iter().all(|f| (f.contype, f.conaffinity) == (1, 0)));
    assert_eq!(gym.collision_filters.len(), 13);
    assert_eq!(gym.cameras.len(), 1);
    assert_eq!((gym.cameras[0].name.as_str(), gym.cameras[0].mode.as_str()), ("track", "trackcom"));

    // The scene parts are listed, with their lines, not silently dropped.
    let skipped: Vec<(&str, u32)> = gym.skipped.iter().map(|s| (s.element.as_str(), s.line)).collect();
    assert_eq!(
        skipped,
        [
            ("<option>", 12),
            ("<custom>", 13),
            ("<texture name=\"sky\">", 21),
            ("<texture name=\"ground\">", 22),
            ("<light>", 26),
            ("<geom name=\"floor\">", 27),
            ("<body name=\"torso\"> pos/orientation", 28),
        ]
    );
}

// ---- a Menagerie-style model -----------------------------------------------------------------

fn menagerie() -> MjcfRobot {
    load_mjcf(&fixtures().join("menagerie_arm/arm.xml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn menagerie_style_classes_give_joint_dynamics_and_ranges() {
    let arm = menagerie();
    let m = &arm.model;
    let names: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["base", "upper", "fore", "body4", "right_finger"]);
    let joint = |name: &str| &m.joints[m.joint_index(name).unwrap()];
    let shoulder = joint("shoulder");
    assert_eq!(shoulder.kind, JointKind::Revolute);
    assert_eq!((shoulder.dynamics.damping, shoulder.dynamics.friction), (0.5, 0.1), "class arm via childclass");
    let wrist = joint("wrist");
    assert_eq!(wrist.dynamics.damping, 0.2, "class wrist overrides arm");
    assert_eq!(wrist.dynamics.friction, 0.1, "inherited from arm");
    assert_eq!((wrist.limit.unwrap().lower, wrist.limit.unwrap().upper), (-1.5, 1.5), "range from the class");
    let finger = joint("finger_left");
    assert_eq!(finger.kind, JointKind::Prismatic, "type slide from class finger");
    assert_eq!((finger.limit.unwrap().upper, finger.dynamics.damping), (0.04, 3.0));
    assert_eq!(arm.armature[m.joint_index("finger_left").unwrap()], 0.01, "armature inherited from arm");
    let right = joint("finger_right");
    let mimic = right.mimic.expect("<equality><joint>");
    assert_eq!((m.joints[mimic.joint].name.as_str(), mimic.multiplier, mimic.offset), ("finger_left", 1.0, 0.0));
    assert_eq!(m.actuated_joints().len(), 3);
}

#[test]
fn joint_anchor_away_from_the_body_origin_moves_the_link_frame() {
    let arm = menagerie();
    let m = &arm.model;
    let ee = arm.site("ee").unwrap();
    assert_eq!(m.links[ee.link].name, "fore");
    let site_at = |wrist: f64| {
        let q = HashMap::from([("wrist", wrist)]);
        forward(m, &q)[ee.link].then(&Iso::of(&ee.origin)).p
    };
    // Base at the origin, upper 0.1 m up and turned 90° about z, fore 0.3 m above it: the site
    // 0.2 m along fore's x is at (0, 0.2, 0.4).
    assert_vec_close(&site_at(0.0), &[0.0, 0.2, 0.4], 1e-9, "site at wrist 0");
    // The wrist turns about fore's x axis through (0, 0, 0.05) in fore's frame, so a quarter
    // turn lifts the site by 0.05 m and moves it 0.05 m along fore's y (world −x).
    assert_vec_close(&site_at(std::f64::consts::FRAC_PI_2), &[-0.05, 0.2, 0.45], 1e-9, "site at wrist π/2");
    // As a link (for scene.end_effector), the site sits at the same place.
    let with_sites = arm.model_with_sites();
    let ee_link = with_sites.link_index("ee").unwrap();
    assert_eq!(with_sites.links.len(), m.links.len() + 1);
    assert_eq!(with_sites.actuated_joints(), m.actuated_joints(), "a fixed joint adds no degree of freedom");
    let q = HashMap::from([("wrist", std::f64::consts::FRAC_PI_2)]);
    assert_vec_close(&forward(&with_sites, &q)[ee_link].p, &[-0.05, 0.2, 0.45], 1e-9, "site link");
    assert_eq!(
        embodia_robots::scene_robot(fixtures().join("menagerie_arm/arm.xml").to_str().unwrap()).unwrap().model,
        with_sites
    );
    let cam = &arm.cameras[0];
    assert_eq!((cam.name.as_str(), cam.fovy_deg, m.links[cam.link].name.as_str()), ("wrist_cam", 60.0, "fore"));
    assert_vec_close(&cam.origin.xyz, &[0.1, 0.0, 0.0], 1e-12, "camera in the link frame");
}

#[test]
fn menagerie_style_geoms_meshes_materials_and_collision_filters() {
    let arm = menagerie();
    let m = &arm.model;
    let base = &m.links[0];
    assert_eq!(base.visuals.len(), 1, "the collision class is group 3: not drawn");
    assert_eq!(base.collisions.len(), 1, "the visual class has contype = conaffinity = 0");
    assert_eq!(base.visuals[0].rgba, Some([0.1, 0.1, 0.1, 1.0]), "material black");
    let Geometry::Mesh { filename, data, .. } = &base.visuals[0].geometry else { panic!() };
    assert_eq!(filename, "cube.stl");
    assert!(data.vertices.iter().all(|v| v.map(f32::abs) == [0.1, 0.1, 0.1]), "scale 0.2 from the asset");
    assert_eq!(base.collisions[0].geometry, Geometry::Box { size: [0.2, 0.2, 0.1] }, "half sizes doubled");

    let upper = &m.links[1];
    assert!(
        matches!(upper.collisions[0].geometry, Geometry::Capsule { radius, length } if radius == 0.03 && (length - 0.3).abs() < 1e-12)
    );
    assert_vec_close(&upper.collisions[0].origin.xyz, &[0.0, 0.0, 0.15], 1e-12, "fromto midpoint");
    // fore's collision capsule is 0.05 m lower in the link frame, which sits at the wrist anchor.
    assert_vec_close(&m.links[2].collisions[0].origin.xyz, &[0.1, 0.0, -0.05], 1e-12, "shifted by the joint pos");
    let tip = &m.links[3];
    let Geometry::Mesh { data, .. } = &tip.visuals[0].geometry else { panic!() };
    assert!(data.vertices.contains(&[0.0, 0.0, 0.02]), "OBJ apex scaled by 0.01");
    assert_eq!(tip.visuals[1].rgba, Some([1.0, 0.0, 0.0, 1.0]));

    let filters: Vec<(usize, u32, u32)> =
        arm.collision_filters.iter().map(|f| (f.link, f.contype, f.conaffinity)).collect();
    assert_eq!(filters, [(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 2, 1), (4, 1, 1)]);
    assert_eq!(arm.excluded_pairs, [(0, 1)]);
    let skipped: Vec<&str> = arm.skipped.iter().map(|s| s.element.as_str()).collect();
    assert_eq!(skipped, ["<option>", "<light name=\"top\">", "<sensor>", "<keyframe>"], "in line order");
}

#[test]
fn menagerie_style_actuators_map_onto_embodia_drives() {
    let arm = menagerie();
    let m = &arm.model;
    let by_name = |n: &str| arm.actuators.iter().find(|a| a.name == n).unwrap();
    let shoulder = by_name("shoulder");
    assert_eq!(
        (shoulder.config.mode, shoulder.config.stiffness, shoulder.config.damping),
        (ControlMode::Position, 50.0, 5.0)
    );
    assert_eq!((shoulder.config.effort_limit, shoulder.ctrl_range), (Some(20.0), Some([-2.0, 2.0])));
    assert_eq!(shoulder.config.armature, 0.01);
    let wrist = by_name("wrist");
    assert_eq!((wrist.config.stiffness, wrist.config.damping, wrist.config.effort_limit), (10.0, 1.0, Some(5.0)));
    let gripper = by_name("gripper");
    assert_eq!(gripper.element, "general");
    assert_eq!(
        (gripper.config.mode, gripper.config.stiffness, gripper.config.damping),
        (ControlMode::Position, 100.0, 10.0)
    );
    // Joint effort limits come from the actuators' force ranges; the follower finger has none.
    let effort = |n: &str| m.joints[m.joint_index(n).unwrap()].limit.unwrap().effort;
    assert_eq!((effort("shoulder"), effort("wrist"), effort("finger_left")), (20.0, 5.0, 30.0));
    assert_eq!(effort("finger_right"), f64::INFINITY);
    let summary = arm.summary();
    for line in [
        "  gripper  <general> -> finger_left  position kp 100 kv 10  ctrl [0, 0.04]  effort 30",
        "  ee  on fore",
        "  base - upper",
        "line 11: <option>",
    ] {
        assert!(summary.contains(line), "{line:?} in\n{summary}");
    }
}

// ---- errors ----------------------------------------------------------------------------------

const SMALL: &str = r#"<mujoco model="m">
  <compiler angle="radian"/>
  <worldbody>
    <body name="a">
      <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>
      <geom type="sphere" size="0.1"/>
      <body name="b" pos="0 0 0.5">
        <joint name="j" axis="0 1 0" range="-1 1"/>
        <geom type="capsule" size="0.05 0.2"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m" joint="j" ctrlrange="-3 3"/>
  </actuator>
</mujoco>
"#;

/// `SMALL` with `from` replaced by `to`: the parse error's line and message.
fn error(from: &str, to: &str) -> (u32, String) {
    assert!(SMALL.contains(from), "{from}");
    let xml = SMALL.replacen(from, to, 1);
    let e = parse_mjcf(&xml, None).err().unwrap_or_else(|| panic!("{to} must be refused"));
    (e.line().expect("every parse error has a line"), e.to_string())
}

#[test]
fn small_model_parses() {
    let r = parse_mjcf(SMALL, None).unwrap();
    assert_eq!(r.model.joints[0].limit.unwrap().effort, 3.0, "motor ctrlrange at gear 1");
    assert_eq!(
        r.model.links[1].inertial.unwrap().mass,
        1000.0 * (std::f64::consts::PI * 0.05 * 0.05 * 0.4 + 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3)),
        "density 1000 by default"
    );
}

#[test]
fn unsupported_elements_are_refused_with_their_line() {
    let cases = [
        (
            "</worldbody>",
            "</worldbody>\n  <tendon><fixed name=\"t\"><joint joint=\"j\" coef=\"1\"/></fixed></tendon>",
            13,
            "<tendon> is not supported",
        ),
        (
            "</worldbody>",
            "</worldbody>\n  <equality><connect body1=\"a\" body2=\"b\" anchor=\"0 0 0\"/></equality>",
            13,
            "<connect> is not supported",
        ),
        (
            "</worldbody>",
            "</worldbody>\n  <extension><plugin plugin=\"mujoco.elasticity.cable\"/></extension>",
            13,
            "<extension> is not supported",
        ),
        (
            "</worldbody>",
            "</worldbody>\n  <deformable><flex name=\"f\"/></deformable>",
            13,
            "<deformable> is not supported",
        ),
        ("<worldbody>", "<include file=\"other.xml\"/>\n  <worldbody>", 3, "<include> is not supported"),
        (
            "<body name=\"b\" pos=\"0 0 0.5\">",
            "<body name=\"b\" pos=\"0 0 0.5\">\n        <flexcomp name=\"x\"/>",
            8,
            "<flexcomp> is not supported",
        ),
        (
            "<body name=\"b\" pos=\"0 0 0.5\">",
            "<body name=\"b\" pos=\"0 0 0.5\">\n        <plugin instance=\"p\"/>",
            8,
            "<plugin> is not supported",
        ),
        (
            "<joint name=\"j\" axis=\"0 1 0\" range=\"-1 1\"/>",
            "<joint name=\"j\" axis=\"0 1 0\" range=\"-1 1\"/>\n        <joint name=\"k\"/>",
            9,
            "body \"b\": line",
        ),
        ("<motor name=\"m\"", "<muscle name=\"m\"", 14, "<muscle> is not supported"),
        (
            "</worldbody>",
            "</worldbody>\n  <contact><pair geom1=\"x\" geom2=\"y\"/></contact>",
            13,
            "<pair> is not supported",
        ),
        (
            "<body name=\"b\" pos=\"0 0 0.5\">",
            "<body name=\"b\" pos=\"0 0 0.5\" mocap=\"true\">",
            7,
            "<body> is not supported: mocap",
        ),
    ];
    for (from, to, line, message) in cases {
        let (l, text) = error(from, to);
        assert_eq!(l, line, "{text}");
        if message.starts_with("body") {
            assert!(text.contains("has 2 joints"), "{text}");
        } else {
            assert!(text.contains(message), "{text}");
        }
    }
}

#[test]
fn unsupported_values_name_the_attribute_and_what_is_allowed() {
    let cases = [
        (
            "axis=\"0 1 0\"",
            "type=\"ball\" axis=\"0 1 0\"",
            8,
            "line 8: joint \"j\": <joint type=\"ball\">: ball joints are not supported",
        ),
        ("type=\"capsule\"", "type=\"ellipsoid\"", 9, "<geom type=\"ellipsoid\">: not supported on a robot body"),
        ("range=\"-1 1\"", "range=\"-1 1\" stiffness=\"10\"", 8, "<joint stiffness=\"10\">: joint springs"),
        (
            "<compiler angle=\"radian\"/>",
            "<compiler angle=\"radian\" coordinate=\"global\"/>",
            2,
            "<compiler coordinate=\"global\">",
        ),
        (
            "<body name=\"b\" pos=\"0 0 0.5\">",
            "<body name=\"b\" pos=\"0 0 0.5\" gravcomp=\"1\">",
            7,
            "gravity compensation is not simulated",
        ),
        ("ctrlrange=\"-3 3\"", "tendon=\"t\" ctrlrange=\"-3 3\"", 14, "only joint transmissions"),
        (
            "<motor name=\"m\" joint=\"j\"",
            "<position name=\"m\" joint=\"j\" gear=\"2\"",
            14,
            "position actuators need gear 1",
        ),
        (
            "<motor name=\"m\" joint=\"j\" ctrlrange=\"-3 3\"",
            "<general name=\"m\" joint=\"j\" biastype=\"affine\" gainprm=\"5\" biasprm=\"1 -5 -1\"",
            14,
            "must be a PD servo",
        ),
    ];
    for (from, to, line, message) in cases {
        let (l, text) = error(from, to);
        assert_eq!(l, line, "{text}");
        assert!(text.contains(message), "{message:?} in {text}");
    }
}

#[test]
fn bad_references_numbers_and_classes_are_errors() {
    let cases = [
        ("joint=\"j\" ctrlrange", "joint=\"nope\" ctrlrange", 14, "actuator \"m\": joint \"nope\" is not defined"),
        (
            "<geom type=\"sphere\" size=\"0.1\"/>",
            "<geom type=\"sphere\" size=\"0.1\" class=\"nope\"/>",
            6,
            "default class \"nope\" is not defined",
        ),
        (
            "<geom type=\"sphere\" size=\"0.1\"/>",
            "<geom type=\"mesh\" mesh=\"nope\"/>",
            6,
            "mesh \"nope\" is not defined",
        ),
        ("size=\"0.05 0.2\"", "size=\"0.05\"", 9, "expected a positive half-length as number 2 of size"),
        ("pos=\"0 0 0.5\"", "pos=\"0 0 x\"", 7, "<body pos=\"0 0 x\">: expected 3 finite numbers"),
        ("mass=\"1\"", "mass=\"-1\"", 5, "<inertial mass>: must be ≥ 0, got -1"),
        // A long number reads in scientific notation, not as its 301 digits.
        ("mass=\"1\"", "mass=\"-1e300\"", 5, "<inertial mass>: must be ≥ 0, got -1e300"),
        ("diaginertia=\"0.1 0.1 0.1\"", "diaginertia=\"0.1 0.1 0.5\"", 5, "0.1 + 0.1 < 0.5, which no rigid body has"),
        ("<body name=\"b\"", "<body name=\"a\"", 7, "body name \"a\" is already used on line 4"),
        ("range=\"-1 1\"", "range=\"1 -1\"", 8, "the lower limit must not exceed the upper limit"),
    ];
    for (from, to, line, message) in cases {
        let (l, text) = error(from, to);
        assert_eq!(l, line, "{text}");
        assert!(text.contains(message), "{message:?} in {text}");
    }
}

#[test]
fn load_mjcf_names_the_file_and_xml_errors_their_line() {
    let e = load_mjcf(Path::new("/nonexistent/robot.xml")).unwrap_err();
    assert_eq!(e.to_string().split(':').next(), Some("/nonexistent/robot.xml"));
    assert!(matches!(e.kind(), MjcfErrorKind::Read(_)));
    let e = parse_mjcf(&SMALL.replace("</body>\n    </body>", "</body>\n    </bod>"), None).unwrap_err();
    assert!(matches!(e.kind(), MjcfErrorKind::Xml(_)), "{e}");
    let e = parse_mjcf("<robot name=\"r\"/>", None).unwrap_err();
    assert_eq!(e.to_string(), "line 1: the document element is <robot>, expected <mujoco>");
    // Truncations of a valid model are errors, never panics.
    for cut in (0..SMALL.len()).step_by(7) {
        let _ = parse_mjcf(&SMALL[..cut], None);
    }
}

#[test]
fn several_top_level_bodies_hang_from_a_world_link_and_degrees_are_converted() {
    let xml = r#"<mujoco model="two">
  <worldbody>
    <body name="slider" euler="0 0 90">
      <joint name="rail" type="slide" axis="1 0 0" range="-0.5 0.5"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
    </body>
    <body name="post" pos="1 0 0">
      <geom type="cylinder" size="0.05 0.5" density="500"/>
    </body>
  </worldbody>
</mujoco>
"#;
    let r = parse_mjcf(xml, None).unwrap();
    let m = &r.model;
    let names: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["world", "slider", "post"]);
    assert!(m.links[0].inertial.is_none(), "the added world link is massless");
    assert!(!r.floating_base);
    let rail = &m.joints[0];
    assert_eq!((rail.kind, rail.parent, rail.child), (JointKind::Prismatic, 0, 1));
    // euler="0 0 90" in the default degrees: a quarter turn about z.
    assert_vec_close(&rail.origin.rpy, &[0.0, 0.0, std::f64::consts::FRAC_PI_2], 1e-12, "euler in degrees");
    assert_eq!((rail.limit.unwrap().lower, rail.limit.unwrap().upper), (-0.5, 0.5), "slide ranges stay in metres");
    let slider = m.links[1].inertial.unwrap();
    assert_eq!(slider.mass, 2.0, "geom mass overrides density");
    let i = 2.0 * 0.08 / 12.0;
    assert_vec_close(&slider.inertia, &[i, 0.0, 0.0, i, 0.0, i], 1e-12, "box inertia");
    let post = m.links[2].inertial.unwrap();
    assert!(close(post.mass, 500.0 * std::f64::consts::PI * 0.05 * 0.05 * 1.0, 1e-12));
    assert_eq!(m.joints[1].kind, JointKind::Fixed);
    assert_eq!(m.joints[1].name, "post", "fixed joints are named after their body");
}

#[test]
fn masses_above_their_bound_are_refused_with_the_body_line() {
    let xml = |body: &str| {
        format!(
            "<mujoco model=\"m\">\n  <worldbody>\n    <body name=\"a\">\n      {body}\n    </body>\n  </worldbody>\n</mujoco>\n"
        )
    };
    let e = parse_mjcf(&xml(r#"<inertial pos="0 0 0" mass="1e308" diaginertia="1 1 1"/>"#), None).unwrap_err();
    assert_eq!(e.line(), Some(4));
    assert!(e.to_string().contains("<inertial mass>: must be at most 1e6"), "{e}");
    let e = parse_mjcf(&xml(r#"<geom type="sphere" size="0.1" density="1e300"/>"#), None).unwrap_err();
    assert_eq!(e.line(), Some(3));
    assert!(e.to_string().contains("<body mass from its geoms>"), "{e}");
}

#[test]
fn inertia_from_geoms_skips_massless_meshes_and_refuses_others() {
    let xml = |mesh_mass: &str| {
        format!(
            r#"<mujoco model="m">
  <compiler meshdir="assets"/>
  <asset><mesh file="cube.stl"/></asset>
  <worldbody>
    <body name="a">
      <geom type="mesh" mesh="cube" contype="0" conaffinity="0" {mesh_mass}/>
      <geom type="sphere" size="0.1" mass="3"/>
    </body>
  </worldbody>
</mujoco>
"#
        )
    };
    let dir = fixtures().join("menagerie_arm");
    let r = parse_mjcf(&xml("mass=\"0\""), Some(&dir)).unwrap();
    let i = r.model.links[0].inertial.unwrap();
    assert_eq!(i.mass, 3.0, "the massless visual mesh adds nothing");
    assert_eq!(r.model.links[0].visuals.len(), 2);
    let e = parse_mjcf(&xml(""), Some(&dir)).unwrap_err();
    assert_eq!(e.line(), Some(6));
    assert!(e.to_string().contains("give the body an <inertial>"), "{e}");
    let e = parse_mjcf(&xml("mass=\"0\""), None).unwrap_err();
    assert!(e.to_string().contains("mesh files need a base directory"), "{e}");
}

#[test]
fn nested_classes_inherit_values_written_after_them() {
    let xml = |extra: &str| {
        format!(
            r#"<mujoco model="m">
  <default>
    <default class="inner">
      <geom size="0.2"/>
    </default>
    <joint damping="2"/>
    {extra}
  </default>
  <worldbody>
    <body name="a">
      <geom size="0.1"/>
      <body name="b">
        <joint name="j" class="inner" range="-90 90"/>
        <geom class="inner"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"#
        )
    };
    let r = parse_mjcf(&xml(""), None).unwrap();
    let j = &r.model.joints[0];
    assert_eq!(j.dynamics.damping, 2.0, "class inner inherits main's joint damping");
    assert!(close(j.limit.unwrap().upper, std::f64::consts::FRAC_PI_2, 1e-15), "degrees by default");
    assert_eq!(r.model.links[1].collisions[0].geometry, Geometry::Sphere { radius: 0.2 });
    let e = parse_mjcf(&xml("<default class=\"inner\"/>"), None).unwrap_err();
    assert_eq!(e.to_string(), "line 7: default class \"inner\" is defined twice");
}

#[test]
fn corrupted_menagerie_models_are_errors_or_models_never_panics() {
    let dir = fixtures().join("menagerie_arm");
    let xml = std::fs::read_to_string(dir.join("arm.xml")).unwrap();
    let mut errors = 0;
    for (i, c) in xml.char_indices().step_by(5) {
        // Drop one character, or turn a digit negative or into a letter.
        let mut variants = vec![format!("{}{}", &xml[..i], &xml[i + c.len_utf8()..])];
        if c.is_ascii_digit() {
            variants.push(format!("{}-{}", &xml[..i], &xml[i..]));
            variants.push(format!("{}q{}", &xml[..i], &xml[i + 1..]));
        }
        for v in variants {
            if let Err(e) = parse_mjcf(&v, Some(&dir)) {
                errors += 1;
                assert!(e.line().is_some(), "an error without a line: {e}");
            }
        }
    }
    assert!(errors > 100, "most corruptions are errors ({errors})");
}
