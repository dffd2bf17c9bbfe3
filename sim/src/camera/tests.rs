use super::affine::{Affine, V3, dot, normalize};
use super::*;
use crate::VecEnv;
use crate::view::{Geometry, Marker, SceneView, Shape, ViewPose, VisualBody};
use embodia_robots::Pose as UrdfPose;

/// A scene given as plain bodies and per-environment poses.
struct StaticView {
    bodies: Vec<VisualBody>,
    poses: Vec<Vec<ViewPose>>,
}

impl SceneView for StaticView {
    fn bodies(&self) -> Vec<VisualBody> {
        self.bodies.clone()
    }
    fn poses(&self, env: usize, out: &mut Vec<ViewPose>) {
        out.clear();
        out.extend_from_slice(&self.poses[env]);
    }
    fn markers(&self, _env: usize, out: &mut Vec<Marker>) {
        out.clear();
    }
    fn step_seconds(&self) -> f32 {
        0.02
    }
}

fn body(path: &str, geometry: Geometry, rgba: [f32; 4]) -> VisualBody {
    VisualBody {
        path: path.into(),
        shapes: vec![Shape { name: None, origin: UrdfPose::IDENTITY, geometry, rgba: Some(rgba) }],
        fixed: false,
    }
}

fn yaw(angle: f32, t: V3) -> ViewPose {
    let (s, c) = (angle / 2.0).sin_cos();
    ViewPose { translation: t, rotation: [0.0, 0.0, s, c] }
}

fn camera(width: usize, height: usize, mount: Mount) -> CameraConfig {
    CameraConfig {
        name: "cam".into(),
        width,
        height,
        lens: Lens::Fov { vertical_deg: 60.0 },
        mount,
        near: 0.05,
        far: 10.0,
    }
}

fn config(cameras: Vec<CameraConfig>, lighting: Lighting) -> RenderConfig {
    RenderConfig { cameras, lighting, randomization: Randomization::default(), translucent: false }
}

/// Light from the camera's side along world +x: faces whose normal is +x are lit fully.
const FRONT_LIGHT: Lighting =
    Lighting { to_light: [1.0, 0.0, 0.0], intensity: 0.5, ambient: 0.5, background: [0.0, 0.0, 1.0] };

#[test]
fn red_cube_in_front_of_a_fixed_camera_covers_its_projection() {
    // Camera at x = 1 looking at the origin along -x; a 10 cm red cube at the origin. Image x is
    // world +y, image y is world -z; the visible face is x = 0.05, 0.95 m away.
    let (w, h) = (64, 48);
    let view = StaticView {
        bodies: vec![body("objects/cube", Geometry::Box { size: [0.1; 3] }, [1.0, 0.0, 0.0, 1.0])],
        poses: vec![vec![ViewPose::IDENTITY]],
    };
    let cam = camera(w, h, Mount::LookAt { eye: [1.0, 0.0, 0.0], target: [0.0; 3] });
    let mut cameras = Cameras::new(&view.bodies(), config(vec![cam], FRONT_LIGHT), 1).unwrap();
    cameras.reset(0);
    cameras.render(&view).unwrap();
    let img = &cameras.images()[0];
    let f = h as f32 / 2.0 / 30f32.to_radians().tan();
    let half = f * 0.05 / 0.95;
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    let mut covered = 0;
    for v in 0..h {
        for u in 0..w {
            let inside = ((u as f32 + 0.5) - cx).abs() <= half && ((v as f32 + 0.5) - cy).abs() <= half;
            let i = v * w + u;
            let px = &img.rgb[3 * i..3 * i + 3];
            if inside {
                covered += 1;
                assert_eq!(px, [255, 0, 0], "pixel ({u}, {v})");
                assert!((img.depth[i] - 0.95).abs() < 1e-5, "depth {} at ({u}, {v})", img.depth[i]);
            } else {
                assert_eq!(px, [0, 0, 255], "pixel ({u}, {v})");
                assert_eq!(img.depth[i], 10.0);
            }
        }
    }
    assert!(covered >= 9, "{covered} pixels of cube");
}

/// Distance along the optical axis to the first hit of the ray through pixel `(u, v)` with the
/// plane z = 0 and a cube of side `side` at `cube` (yaw only), or `None`.
fn analytic_depth(cam: &Affine, k: [f32; 4], u: usize, v: usize, side: f32, cube: &ViewPose) -> Option<(f32, bool)> {
    let [fx, fy, cx, cy] = k;
    // Ray direction with unit z in the camera frame: the hit parameter is the z-depth.
    let d = cam.rotate([(u as f32 + 0.5 - cx) / fx, (v as f32 + 0.5 - cy) / fy, 1.0]);
    let o = cam.t;
    let ground = (d[2] < 0.0).then(|| -o[2] / d[2]);
    // Slab test in the cube's frame.
    let inv = Affine::from_pose(cube).rigid_inverse();
    let (o_c, d_c) = (inv.apply(o), inv.rotate(d));
    let (mut t0, mut t1) = (0.0f32, f32::INFINITY);
    for a in 0..3 {
        let (lo, hi) = ((-side / 2.0 - o_c[a]) / d_c[a], (side / 2.0 - o_c[a]) / d_c[a]);
        t0 = t0.max(lo.min(hi));
        t1 = t1.min(lo.max(hi));
    }
    let hit_cube = (t0 <= t1).then_some(t0);
    match (ground, hit_cube) {
        (Some(g), Some(c)) if c < g => Some((c, true)),
        (_, Some(c)) if ground.is_none() => Some((c, true)),
        (Some(g), _) => Some((g, false)),
        _ => None,
    }
}

#[test]
fn depth_equals_analytic_ray_distances_on_a_ground_plane_and_a_turned_cube() {
    // An oblique camera over a 20 m ground slab (reaching behind the camera: near-plane
    // clipping) and a yawed 20 cm cube standing on it.
    let (w, h) = (96, 72);
    let cube = yaw(0.4, [0.1, -0.05, 0.1]);
    let view = StaticView {
        bodies: vec![
            body("ground", Geometry::Box { size: [20.0, 20.0, 0.02] }, [0.5, 0.5, 0.5, 1.0]),
            body("objects/cube", Geometry::Box { size: [0.2; 3] }, [0.9, 0.1, 0.1, 1.0]),
        ],
        poses: vec![vec![ViewPose { translation: [0.0, 0.0, -0.01], ..ViewPose::IDENTITY }, cube]],
    };
    // Looking down 20°, the top rows see above the horizon.
    let (eye, target) = ([0.9, -0.6, 0.7], [0.0, 0.0, 0.3]);
    let mut cam = camera(w, h, Mount::LookAt { eye, target });
    cam.lens = Lens::Pinhole { fx: 70.0, fy: 66.0, cx: 50.0, cy: 34.0 };
    let mut cameras = Cameras::new(&view.bodies(), config(vec![cam.clone()], Lighting::default()), 1).unwrap();
    cameras.reset(0);
    cameras.render(&view).unwrap();
    let img = &cameras.images()[0];
    // The camera's frame as the renderer's convention defines it, rebuilt here independently.
    let z = normalize([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
    let x = normalize([z[1], -z[0], 0.0]);
    let y = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]];
    let pose = Affine::from_axes(x, y, z, eye);
    assert!(dot(x, y).abs() < 1e-6 && y[2] < 0.0, "image y points down");
    let k = cam.lens.intrinsics(w, h);
    let (mut cube_pixels, mut ground_pixels, mut sky_pixels, mut mismatches) = (0, 0, 0, 0);
    for v in 0..h {
        for u in 0..w {
            let depth = img.depth[v * w + u];
            let red = img.rgb[3 * (v * w + u)] > 2 * img.rgb[3 * (v * w + u) + 1];
            match analytic_depth(&pose, k, u, v, 0.2, &cube) {
                Some((t, on_cube)) if t < cam.far => {
                    if on_cube {
                        cube_pixels += 1
                    } else {
                        ground_pixels += 1
                    }
                    if (depth - t).abs() > 1e-4 * t || red != on_cube {
                        mismatches += 1;
                    }
                }
                _ => {
                    sky_pixels += 1;
                    if depth != cam.far {
                        mismatches += 1;
                    }
                }
            }
        }
    }
    assert!(
        cube_pixels > 150 && ground_pixels > 1000 && sky_pixels > 100,
        "{cube_pixels} {ground_pixels} {sky_pixels}"
    );
    // Pixel centres within float error of an edge may go either way.
    assert!(mismatches <= 3, "{mismatches} pixels disagree with the analytic depth");
}

#[test]
fn a_mounted_camera_moves_with_its_body() {
    // A "hand" body with a camera looking along its z at a cube: moving hand and cube together
    // leaves the image as it was; moving the hand alone changes it.
    let bodies = vec![
        body("robot/hand", Geometry::Box { size: [0.02, 0.02, 0.02] }, [0.9, 0.9, 0.9, 1.0]),
        body("objects/cube", Geometry::Box { size: [0.05; 3] }, [0.1, 0.8, 0.2, 1.0]),
        body("ground", Geometry::Box { size: [4.0, 4.0, 0.01] }, [0.5, 0.5, 0.5, 1.0]),
    ];
    let hand = ViewPose { translation: [0.3, 0.0, 0.4], rotation: [1.0, 0.0, 0.0, 0.0] }; // z down
    let cube = ViewPose { translation: [0.31, 0.02, 0.1], ..ViewPose::IDENTITY };
    let ground = ViewPose { translation: [0.0, 0.0, -0.005], ..ViewPose::IDENTITY };
    let shift = yaw(0.3, [0.05, -0.04, 0.0]);
    let moved = |p: &ViewPose| shift.compose(p);
    let view = StaticView {
        bodies: bodies.clone(),
        poses: vec![
            vec![hand, cube, ground],
            vec![moved(&hand), moved(&cube), ground],
            vec![moved(&hand), cube, ground],
        ],
    };
    let mount = Mount::Body { body: "robot/hand".into(), xyz: [0.0, 0.0, 0.02], rpy: [0.0; 3] };
    let mut cameras = Cameras::new(&bodies, config(vec![camera(48, 48, mount)], Lighting::default()), 3).unwrap();
    cameras.reset(0);
    cameras.render(&view).unwrap();
    let img = &cameras.images()[0];
    let differing = |a: usize, b: usize| img.rgb_of(a).iter().zip(img.rgb_of(b)).filter(|(x, y)| x != y).count();
    let green = img.rgb_of(0).chunks(3).filter(|p| p[1] > 150 && p[0] < 80).count();
    assert!(green > 30, "the cube is in view ({green} green pixels)");
    // The ground turns with the yaw (uniform grey under a light that turned relative to it:
    // shading differs only through the light, which is fixed in the world), so compare depth.
    let depth_diff = img.depth_of(0).iter().zip(img.depth_of(1)).filter(|(a, b)| (*a - *b).abs() > 1e-4).count();
    assert!(depth_diff <= 2, "{depth_diff} depth pixels changed when hand and cube moved together");
    assert!(differing(0, 2) > 50, "moving the hand alone changes the view");
    let other_scene = StaticView { bodies: bodies[..1].to_vec(), poses: vec![vec![hand]; 3] };
    let err = cameras.render(&other_scene).unwrap_err();
    assert!(err.to_string().contains("the scene has 1 bodies; the cameras were made for 3"), "{err}");
    let missing = Mount::Body { body: "robot/wrist".into(), xyz: [0.0; 3], rpy: [0.0; 3] };
    let err = Cameras::new(&bodies, config(vec![camera(8, 8, missing)], Lighting::default()), 1).err().unwrap();
    assert!(err.to_string().contains("`cameras[0].mount.body`: no body `robot/wrist`"), "{err}");
}

#[test]
fn invalid_configurations_name_the_field() {
    let bodies = vec![body("a", Geometry::Sphere { radius: 0.1 }, [1.0; 4])];
    let look = Mount::LookAt { eye: [1.0, 0.0, 0.0], target: [0.0; 3] };
    type Edit = Box<dyn Fn(&mut RenderConfig)>;
    let cases: [(Edit, &str); 5] = [
        (Box::new(|c| c.cameras[0].width = 0), "cameras[0].width/height"),
        (Box::new(|c| c.cameras[0].lens = Lens::Fov { vertical_deg: 180.0 }), "cameras[0].lens.vertical_deg"),
        (Box::new(|c| c.cameras[0].far = 0.01), "cameras[0].near/far"),
        (
            Box::new(|c| c.cameras[0].mount = Mount::LookAt { eye: [0.0, 0.0, 1.0], target: [0.0; 3] }),
            "cameras[0].mount",
        ),
        (Box::new(|c| c.randomization.light_intensity = Some([1.0, 0.5])), "randomization.light_intensity"),
    ];
    for (edit, field) in cases {
        let mut c = config(vec![camera(8, 8, look.clone())], Lighting::default());
        edit(&mut c);
        let err = Cameras::new(&bodies, c, 1).err().expect("invalid");
        assert!(err.to_string().contains(&format!("`{field}`")), "{err}");
    }
}

fn randomized_pick_cube(envs: usize) -> CameraEnv {
    let task = crate::task_config("pick-cube").unwrap();
    let mut c = RenderConfig::for_task(&task, 48, 40);
    c.randomization = Randomization {
        color_jitter: 0.1,
        random_object_colors: true,
        light_cone_deg: 30.0,
        light_intensity: Some([0.4, 0.9]),
        camera_position: 0.02,
        camera_rotation_deg: 3.0,
        distractors: 3,
        ..c.randomization
    };
    CameraEnv::new(crate::make("pick-cube", envs).unwrap(), c).unwrap()
}

#[test]
fn images_are_identical_across_thread_counts_and_follow_the_seed() {
    let run = |threads: usize, seed: u64| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut env = randomized_pick_cube(4);
            env.reset(seed);
            let actions = vec![0.5f32; 4 * env.action_spec().bounds.dim()];
            for _ in 0..3 {
                env.step(&actions).unwrap();
            }
            env.images().to_vec()
        })
    };
    let one = run(1, 5);
    assert_eq!(one, run(2, 5));
    assert_ne!(one, run(2, 6));
    // Environments differ from each other (object placement and visuals).
    let front = &one[0];
    assert_ne!(front.rgb_of(0), front.rgb_of(1));
}

#[test]
fn randomization_changes_what_the_cameras_see_and_only_when_enabled() {
    let task = crate::task_config("pick-cube").unwrap();
    let plain = RenderConfig::for_task(&task, 48, 40);
    let render = |c: RenderConfig, seed: u64| {
        let mut env = CameraEnv::new(crate::make("pick-cube", 2).unwrap(), c).unwrap();
        env.reset(seed);
        env.images()[0].clone()
    };
    // Without randomization the visual seed does not matter.
    let mut env = crate::make("pick-cube", 2).unwrap();
    env.reset(3);
    let view = env.scene_view().unwrap();
    let mut cameras = Cameras::new(&view.bodies(), plain.clone(), 2).unwrap();
    let mut seen = Vec::new();
    for seed in [1, 2] {
        cameras.reset(seed);
        cameras.render(view).unwrap();
        seen.push(cameras.images()[0].clone());
    }
    assert_eq!(seen[0], seen[1]);
    let a = render(plain.clone(), 3);
    let with = |edit: &dyn Fn(&mut Randomization)| {
        let mut c = plain.clone();
        edit(&mut c.randomization);
        let b = render(c, 3);
        a.rgb.iter().zip(&b.rgb).filter(|(x, y)| x != y).count()
    };
    assert!(with(&|r| r.random_object_colors = true) > 5, "object colours");
    assert!(with(&|r| r.light_cone_deg = 40.0) > 500, "light direction");
    assert!(with(&|r| r.light_intensity = Some([0.1, 0.2])) > 500, "light intensity");
    assert!(with(&|r| r.camera_position = 0.05) > 300, "camera position");
    assert!(with(&|r| r.distractors = 4) > 10, "distractors");
    // Depth is geometry only: colours and light leave it alone.
    let mut c = plain.clone();
    c.randomization.color_jitter = 0.2;
    c.randomization.light_cone_deg = 40.0;
    assert_eq!(render(c, 3).depth, a.depth);
}

#[test]
fn pick_cube_front_camera_sees_table_robot_and_cube() {
    let env = randomized_pick_cube(1);
    let front = env.cameras().camera("front").unwrap();
    let background = super::config::Lighting::default().background.map(|v| (v * 255.0 + 0.5) as u8);
    let drawn = front.rgb_of(0).chunks(3).filter(|p| *p != background).count();
    assert!(drawn > front.width * front.height / 3, "the table fills much of the view ({drawn} px)");
    // The cube is drawn: some pixels are nearer than the table surface behind them would be.
    let wrist = env.cameras().camera("wrist").unwrap();
    assert!(wrist.depth_of(0).iter().all(|d| *d > 0.0 && d.is_finite()));
    assert!(wrist.depth_of(0).iter().any(|d| *d < 3.0), "the wrist camera sees something");
    // Tasks without a scene are refused with a clear error.
    let c = RenderConfig::for_task(&crate::task_config("pick-cube").unwrap(), 8, 8);
    let err = CameraEnv::new(crate::make("pendulum", 1).unwrap(), c).err().unwrap();
    assert!(err.to_string().contains("no scene"), "{err}");
}
