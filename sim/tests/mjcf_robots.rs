//! A task runs the same whether `scene.robot` names a built-in robot (its URDF) or the MJCF
//! file generated from the same numbers (`assets/robots/*.xml`).
//!
//! The two files describe the same robot to about 1e-8, but not always to the last `f32` bit:
//! the URDFs print π/2 as 1.5707963, one `f32` step from π/2, while the MJCF files give rotations
//! as quaternions, which come back as exact right angles. Arms reaching in free space do not
//! amplify that; legged robots in contact do (their dynamics are chaotic), so for them the MJCF
//! robot is held to the URDF robot with its right angles made exact, and to the URDF as written
//! only until the first contacts.
//!
//! With `scene.actuators_from = "robot_file"` an MJCF robot's own actuators and armature drive
//! its joints, and its collision bitmasks and excluded pairs decide what touches: the tests at
//! the end check each against what MuJoCo would do.

use embodia_robots::{RobotModel, SceneRobot, builtin};
use embodia_sim::rapier::contact_filter::SCENE_GROUPS;
use embodia_sim::rapier::drives::resolve_drives;
use embodia_sim::rapier::task_config::ActuatorSource;
use embodia_sim::rapier::{Articulation, RapierEnv, SpawnOptions, rapier_tasks};
use embodia_sim::{VecEnv, make_with, task_config};
use rapier3d::prelude::*;

/// Deterministic pseudo-random actions in [-1, 1].
fn actions(step: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let x = ((step * 7919 + i * 104_729) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Per step: observations and rewards, and done flags, of `task` with `scene.robot = robot`;
/// `model` replaces the robot's model when given, else `make_with` loads it by name or path.
fn rollout(task: &str, robot: &str, model: Option<RobotModel>, envs: usize, steps: usize) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut config = task_config(task).unwrap();
    config.scene.robot = robot.to_string();
    let mut env: Box<dyn VecEnv> = match model {
        Some(model) => {
            let info = rapier_tasks().into_iter().find(|t| t.info.name == task).unwrap().info;
            Box::new(RapierEnv::new(info, config, model, envs).unwrap())
        }
        None => make_with(task, envs, Some(&config)).unwrap_or_else(|e| panic!("{task} with {robot}: {e}")),
    };
    env.reset(7);
    let dim = env.action_spec().bounds.dim();
    let mut out = vec![(env.buffers().obs.clone(), vec![0.0; envs])];
    for step in 0..steps {
        env.step(&actions(step, envs * dim)).unwrap();
        let b = env.buffers();
        let values = b.obs.iter().chain(&b.reward).copied().collect();
        let done = b.terminated.iter().zip(&b.truncated).map(|(t, u)| t + 2.0 * u).collect();
        out.push((values, done));
    }
    out
}

/// Largest relative difference of observations and rewards up to each step, and the first
/// step where the done flags differ (`None`: never).
fn divergence(a: &[(Vec<f32>, Vec<f32>)], b: &[(Vec<f32>, Vec<f32>)]) -> (Vec<f32>, Option<usize>) {
    let mut worst = 0.0f32;
    let mut curve = Vec::new();
    let mut done_differs = None;
    for (step, (x, y)) in a.iter().zip(b).enumerate() {
        for (p, q) in x.0.iter().zip(&y.0) {
            worst = worst.max((p - q).abs() / (1.0 + p.abs()));
        }
        if x.1 != y.1 && done_differs.is_none() {
            done_differs = Some(step);
        }
        curve.push(worst);
    }
    (curve, done_differs)
}

#[test]
fn tasks_give_the_same_trajectories_with_the_urdf_and_the_mjcf_robot() {
    let assets = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/robots");
    let (envs, steps) = (4, 200);
    for (task, robot) in [("reach", "so101"), ("reach-arm7", "arm7")] {
        let xml = format!("{assets}/{robot}.xml");
        // Both by name and path through make_with, as a task config would.
        let urdf = rollout(task, robot, None, envs, steps);
        let mjcf = rollout(task, &xml, None, envs, steps);
        let (curve, done_differs) = divergence(&urdf, &mjcf);
        println!("{task}: largest relative difference over {steps} steps {:.3e}", curve[steps]);
        assert_eq!(done_differs, None, "{task}");
        assert!(curve[steps] <= 1e-5, "{task}: differs by {:.3e}", curve[steps]);
    }
}

/// `model` with every roll, pitch and yaw within 1e-6 of a multiple of π/2 set to that multiple
/// exactly: the same robot, its angles written with more digits than the URDF's 8 (which round
/// π/2 to 1.5707963, one `f32` step away from π/2).
fn exact_right_angles(model: &RobotModel) -> RobotModel {
    let snap = |rpy: &mut [f64; 3]| {
        for a in rpy {
            let k = (*a / std::f64::consts::FRAC_PI_2).round();
            if (*a - k * std::f64::consts::FRAC_PI_2).abs() < 1e-6 {
                *a = k * std::f64::consts::FRAC_PI_2;
            }
        }
    };
    let mut m = model.clone();
    for link in &mut m.links {
        if let Some(i) = link.inertial.as_mut() {
            snap(&mut i.origin.rpy);
        }
        for shape in link.visuals.iter_mut().chain(&mut link.collisions) {
            snap(&mut shape.origin.rpy);
        }
    }
    for joint in &mut m.joints {
        snap(&mut joint.origin.rpy);
    }
    m
}

#[test]
fn legged_tasks_match_the_urdf_robot_with_exact_right_angles() {
    let assets = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/robots");
    let (envs, steps) = (4, 200);
    for (task, robot) in [("ant-run", "ant"), ("quadruped-velocity", "quadruped12")] {
        let xml = format!("{assets}/{robot}.xml");
        let urdf_model = builtin(robot).unwrap();
        let exact = exact_right_angles(&urdf_model);
        let urdf = rollout(task, robot, Some(urdf_model), envs, steps);
        let mjcf = rollout(task, &xml, None, envs, steps);
        let control = rollout(task, robot, Some(exact), envs, steps);
        let (to_urdf, urdf_done) = divergence(&urdf, &mjcf);
        let (to_exact, exact_done) = divergence(&control, &mjcf);
        let first_nonzero = to_urdf.iter().position(|&d| d > 0.0);
        println!(
            "{task}: MJCF vs URDF: first differs at step {first_nonzero:?}, up to {:.3e} by step {steps}, done flags first differ at {urdf_done:?}",
            to_urdf[steps]
        );
        println!(
            "{task}: MJCF vs URDF with exact right angles: largest difference {:.3e} over {steps} steps",
            to_exact[steps]
        );
        // The MJCF robot runs as the URDF robot does once the URDF's π/2 is exact...
        assert_eq!(exact_done, None, "{task}");
        assert!(to_exact[steps] <= 1e-5, "{task}: differs from the exact-angle URDF by {:.3e}", to_exact[steps]);
        // ...and identically to the URDF as written until contacts amplify that last-bit
        // difference (measured: first differences at step 66 of ant-run, 121 of quadruped-velocity).
        assert!(to_urdf[40] == 0.0, "{task}: differs from the URDF robot by {:.3e} within 40 steps", to_urdf[40]);
    }
}

/// Per step: observations and rewards of `task` on `robot` as given (an MJCF robot parsed
/// here), with `scene.actuators_from` set to `from`.
fn rollout_robot(task: &str, robot: SceneRobot, from: ActuatorSource, envs: usize, steps: usize) -> Vec<Vec<f32>> {
    let mut config = task_config(task).unwrap();
    config.scene.actuators_from = from;
    let info = rapier_tasks().into_iter().find(|t| t.info.name == task).unwrap().info;
    let mut env = RapierEnv::new(info, config, robot, envs).unwrap();
    env.reset(7);
    let dim = env.action_spec().bounds.dim();
    let mut out = vec![env.buffers().obs.clone()];
    for step in 0..steps {
        env.step(&actions(step, envs * dim)).unwrap();
        out.push(env.buffers().obs.iter().chain(&env.buffers().reward).copied().collect());
    }
    out
}

fn so101_xml() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/robots/so101.xml")).unwrap()
}

fn mjcf(xml: &str) -> SceneRobot {
    let robot = embodia_robots::parse_mjcf(xml, None).unwrap();
    SceneRobot::from_mjcf(&robot, std::path::Path::new("test.xml")).unwrap()
}

#[test]
fn file_actuators_equal_to_the_task_actuator_give_its_trajectories() {
    // reach drives so101 with position kp 40, kd 2, armature 0.01: the same as MJCF actuators.
    let mut xml = so101_xml().replace("armature=\"0.028\"", "armature=\"0.01\"");
    for joint in ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"] {
        let motor = format!("<motor name=\"{joint}\" joint=\"{joint}\" ctrlrange=\"-2.94 2.94\"/>");
        assert!(xml.contains(&motor), "{motor}");
        xml = xml.replace(&motor, &format!("<position name=\"{joint}\" joint=\"{joint}\" kp=\"40\" kv=\"2\"/>"));
    }
    let (envs, steps) = (2, 150);
    let task_drives = rollout_robot("reach", builtin("so101").unwrap().into(), ActuatorSource::Task, envs, steps);
    let file_drives = rollout_robot("reach", mjcf(&xml), ActuatorSource::RobotFile, envs, steps);
    assert_eq!(task_drives, file_drives, "file actuators identical to the task's give identical trajectories");
    // A stiffer elbow in the file changes the trajectory: the file's gains are the ones used.
    let stiff = xml.replace(
        "<position name=\"elbow_flex\" joint=\"elbow_flex\" kp=\"40\" kv=\"2\"/>",
        "<position name=\"elbow_flex\" joint=\"elbow_flex\" kp=\"200\" kv=\"10\"/>",
    );
    assert_ne!(rollout_robot("reach", mjcf(&stiff), ActuatorSource::RobotFile, envs, steps), file_drives);
}

#[test]
fn actions_that_do_not_match_a_file_actuators_mode_are_refused_naming_it() {
    let config = |from| {
        let mut c = task_config("reach").unwrap();
        c.scene.actuators_from = from;
        c
    };
    let info = rapier_tasks().into_iter().find(|t| t.info.name == "reach").unwrap().info;
    // so101.xml's actuators are motors; reach commands joint positions.
    let err = RapierEnv::new(info.clone(), config(ActuatorSource::RobotFile), mjcf(&so101_xml()), 1).err().unwrap();
    let message = err.to_string();
    assert!(
        message.contains("`env.action.kind = \"joint_position\"` needs position control")
            && message.contains(
                "joint \"shoulder_pan\" is driven in torque mode by <motor> actuator \"shoulder_pan\" of test.xml"
            ),
        "{message}"
    );
    // The same file under the task's actuator is accepted.
    assert!(RapierEnv::new(info, config(ActuatorSource::Task), mjcf(&so101_xml()), 1).is_ok());
}

/// Three arms on a fixed base, each on its own vertical hinge (no gravity torque), each driven
/// by a different MJCF actuator.
const THREE_DRIVES: &str = r#"<mujoco model="three-drives">
  <compiler angle="radian"/>
  <worldbody>
    <body name="base">
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
      <body name="servo_arm" pos="0 0 0.1">
        <joint name="servo" type="hinge" axis="0 0 1" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5"/>
      </body>
      <body name="wheel_arm" pos="0 0 0.3">
        <joint name="wheel" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5"/>
      </body>
      <body name="motor_arm" pos="0 0 0.5">
        <joint name="motor" type="hinge" axis="0 0 1" damping="0.5" armature="ARMATURE"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="servo" kp="50" kv="5" ctrlrange="-0.5 0.5"/>
    <velocity joint="wheel" kv="2"/>
    <motor joint="motor" gear="2" ctrlrange="-1 1"/>
  </actuator>
</mujoco>"#;

/// Joint positions and velocities of [`THREE_DRIVES`] with `armature` on the motor joint after
/// `seconds` of the command `[0.8 rad, 3 rad/s, 10 N·m]` without gravity.
fn three_drives(armature: f64, seconds: f32) -> ([f32; 3], [f32; 3]) {
    let robot = mjcf(&THREE_DRIVES.replace("ARMATURE", &armature.to_string()));
    let mut scene = task_config("reach").unwrap().scene;
    scene.actuators_from = ActuatorSource::RobotFile;
    let drives = resolve_drives(&scene, &robot).unwrap();
    let mut world = PhysicsWorld::new();
    world.gravity = Vector::ZERO;
    world.integration_parameters.dt = 0.005;
    let mut arm = Articulation::spawn_driven(&mut world, &robot.model, &drives, &SpawnOptions::default()).unwrap();
    arm.command(&mut world, &[0.8, 3.0, 10.0], 1.0);
    for _ in 0..(seconds / 0.005).round() as usize {
        arm.apply_efforts(&mut world);
        world.step_with_events(arm.contact_hooks(), &());
    }
    let (mut q, mut qd) = ([0.0; 3], [0.0; 3]);
    arm.joint_state(&world, &mut q, &mut qd);
    (q, qd)
}

#[test]
fn each_joint_follows_its_own_mjcf_actuator_and_armature() {
    let (q, qd) = three_drives(0.0, 2.0);
    // Position servo: the 0.8 rad target is clipped to its ctrlrange.
    assert!((q[0] - 0.5).abs() < 0.01, "servo at {} rad, wanted the ctrlrange's 0.5", q[0]);
    // Velocity servo: the commanded speed.
    assert!((qd[1] - 3.0).abs() < 0.05, "wheel at {} rad/s, wanted 3", qd[1]);
    // Motor: 10 N·m clipped to gear × ctrlrange = 2 N·m against damping 0.5: 4 rad/s.
    assert!((qd[2] - 4.0).abs() < 0.1, "motor arm at {} rad/s, wanted 2 / 0.5 = 4", qd[2]);
    // Armature of 1 kg·m² against the arm's ~0.007 slows the motor arm's start ~150-fold.
    let (_, light) = three_drives(0.0, 0.05);
    let (_, heavy) = three_drives(1.0, 0.05);
    println!("motor arm after 0.05 s: {} rad/s without armature, {} with 1 kg·m²", light[2], heavy[2]);
    assert!(light[2] > 3.0 && heavy[2] < 0.15, "light {} heavy {}", light[2], heavy[2]);
}

/// A free box of 0.1 m with the given MuJoCo bitmasks, dropped from 0.5 m onto the scene's
/// ground for 1 s: its final height, m.
fn dropped_box_height(contype: u32, conaffinity: u32) -> f32 {
    let xml = format!(
        r#"<mujoco><worldbody><body name="box"><freejoint/>
           <geom type="box" size="0.05 0.05 0.05" mass="1" contype="{contype}" conaffinity="{conaffinity}"/>
           </body></worldbody></mujoco>"#
    );
    let robot = mjcf(&xml);
    let mut world = PhysicsWorld::new();
    world.gravity = Vector::new(0.0, 0.0, -9.81);
    let ground = world.insert_body(RigidBodyBuilder::fixed());
    world.insert_collider(
        ColliderBuilder::cuboid(10.0, 10.0, 0.5)
            .translation(Vector::new(0.0, 0.0, -0.5))
            .collision_groups(SCENE_GROUPS),
        Some(ground),
    );
    let options = SpawnOptions {
        base_pose: Pose::from_translation(Vector::new(0.0, 0.0, 0.5)),
        fixed_base: false,
        collision_filters: robot.collision_filters.clone(),
        ..SpawnOptions::default()
    };
    let arm = Articulation::spawn(&mut world, &robot.model, Default::default(), &options).unwrap();
    for _ in 0..60 {
        world.step_with_events(arm.contact_hooks(), &());
    }
    world.bodies[arm.root()].translation().z
}

#[test]
fn mjcf_collision_bitmasks_decide_what_touches_the_ground_as_in_mujoco() {
    // The ground is a default MuJoCo geom (contype 1, conaffinity 1).
    for (contype, conaffinity, rests) in [(1, 1, true), (0, 1, true), (1, 0, true), (2, 2, false), (2, 1, true)] {
        let z = dropped_box_height(contype, conaffinity);
        assert_eq!(z > 0.0, rests, "contype {contype} conaffinity {conaffinity}: box at z = {z}");
    }
}

/// Two arms on a fixed base whose boxes overlap at zero, with self-collisions: the number of
/// contact points between them after one step.
fn overlapping_arms_contacts(exclude: bool) -> usize {
    let xml = format!(
        r#"<mujoco><worldbody><body name="base"><geom type="box" size="0.02 0.02 0.02" mass="1"/>
           <body name="a" pos="0.1 0 0"><joint name="ja" type="hinge" axis="0 0 1"/>
             <geom type="box" size="0.05 0.05 0.05" mass="0.5"/></body>
           <body name="b" pos="0.15 0 0"><joint name="jb" type="hinge" axis="0 0 1"/>
             <geom type="box" size="0.05 0.05 0.05" mass="0.5"/></body>
           </body></worldbody>{}</mujoco>"#,
        if exclude { r#"<contact><exclude body1="a" body2="b"/></contact>"# } else { "" }
    );
    let robot = mjcf(&xml);
    let mut world = PhysicsWorld::new();
    let options =
        SpawnOptions { self_collisions: true, excluded_pairs: robot.excluded_pairs.clone(), ..SpawnOptions::default() };
    let arm = Articulation::spawn(&mut world, &robot.model, Default::default(), &options).unwrap();
    world.step_with_events(arm.contact_hooks(), &());
    world.narrow_phase.contact_pairs().map(|p| p.manifolds().iter().map(|m| m.points.len()).sum::<usize>()).sum()
}

#[test]
fn excluded_pairs_never_touch_under_self_collisions() {
    assert!(overlapping_arms_contacts(false) > 0, "the overlapping arms touch without <exclude>");
    assert_eq!(overlapping_arms_contacts(true), 0);
}

#[test]
fn a_menagerie_style_arm_runs_a_task_on_its_own_actuators() {
    // Default classes give the gains: shoulder kp 50, wrist kp 10, a PD <general> gripper whose
    // ctrlrange (0 … 0.04 m) clips its target, and a right finger coupled to the left one.
    let arm = concat!(env!("CARGO_MANIFEST_DIR"), "/../robots/tests/fixtures/mjcf/menagerie_arm/arm.xml");
    let mut config = task_config("reach").unwrap();
    config.scene.robot = arm.into();
    config.scene.end_effector = Some("ee".into());
    config.scene.actuators_from = ActuatorSource::RobotFile;
    config.scene.gravity_compensation = true;
    let mut env = make_with("reach", 1, Some(&config)).unwrap();
    env.reset(1);
    // reach: target = default (0) + 0.5 × action, per actuated joint (shoulder, wrist, finger).
    let action = [0.8, -0.6, 1.0];
    for _ in 0..100 {
        env.step(&action).unwrap();
    }
    let q = &env.buffers().obs[..3];
    println!("menagerie arm after 2 s: shoulder {} wrist {} finger {}", q[0], q[1], q[2]);
    assert!((q[0] - 0.4).abs() < 0.02 && (q[1] + 0.3).abs() < 0.02, "arm joints at {q:?}, wanted 0.4, -0.3");
    assert!((q[2] - 0.04).abs() < 0.002, "finger at {} m: the 0.5 m target is clipped to ctrlrange 0.04", q[2]);
}
