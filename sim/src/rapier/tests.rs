//! Physics sanity of articulations against closed forms.

use super::*;
use embodia_robots::{
    ActuatorConfig, Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, Pose as UrdfPose,
    RobotModel, Shape,
};
use rapier3d::prelude::*;

/// Runs every check below for both joint models, as `reduced::<check>` and `impulse::<check>`.
macro_rules! for_both_joint_models {
    ($($check:ident),* $(,)?) => {
        mod reduced {
            $(#[test]
            fn $check() {
                super::$check(super::JointModel::Reduced)
            })*
        }
        mod impulse {
            $(#[test]
            fn $check() {
                super::$check(super::JointModel::Impulse)
            })*
        }
    };
}

for_both_joint_models!(
    free_fall_matches_the_closed_form,
    passive_pendulum_conserves_energy_over_10_seconds,
    small_oscillation_period_matches_closed_form,
    pd_held_joint_settles_where_gravity_balances_the_spring,
    joint_limits_hold_against_a_large_torque,
    torque_command_gives_the_closed_form_acceleration,
    armature_adds_to_the_joint_inertia,
    prismatic_joint_follows_newton,
    floating_base_state_round_trip,
    set_state_then_read_back,
);

const G: f32 = 9.81;
const DT: f32 = 1.0 / 240.0;

fn world() -> PhysicsWorld {
    let mut w = PhysicsWorld::new();
    w.gravity = Vector::new(0.0, 0.0, -G);
    w.integration_parameters.dt = DT;
    w
}

/// A uniform rod of `mass` and `length` hanging along -z from its link origin.
fn rod(name: &str, mass: f64, length: f64) -> Link {
    let i = mass * length * length / 12.0;
    Link {
        name: name.into(),
        inertial: Some(Inertial {
            origin: UrdfPose::translation(0.0, 0.0, -length / 2.0),
            mass,
            inertia: [i, 0.0, 0.0, i, 0.0, 1e-6],
        }),
        visuals: vec![],
        collisions: vec![Shape {
            name: None,
            origin: UrdfPose::translation(0.0, 0.0, -length / 2.0),
            geometry: Geometry::Capsule { radius: 0.02, length },
            rgba: None,
        }],
    }
}

fn base() -> Link {
    Link { name: "base".into(), inertial: None, visuals: vec![], collisions: vec![] }
}

/// A rod on a revolute joint about y at height 2 m.
fn pendulum(limit: Option<(f64, f64)>) -> RobotModel {
    let (lower, upper) = limit.unwrap_or((-10.0, 10.0));
    RobotModel {
        name: "pendulum".into(),
        links: vec![base(), rod("rod", 1.0, 1.0)],
        joints: vec![Joint {
            name: "hinge".into(),
            kind: if limit.is_some() { JointKind::Revolute } else { JointKind::Continuous },
            parent: 0,
            child: 1,
            origin: UrdfPose::translation(0.0, 0.0, 2.0),
            axis: [0.0, 1.0, 0.0],
            limit: Some(JointLimit { lower, upper, effort: 1000.0, velocity: 100.0 }),
            dynamics: JointDynamics::default(),
            mimic: None,
        }],
        root: 0,
    }
}

fn spawn(
    world: &mut PhysicsWorld,
    model: &RobotModel,
    actuator: ActuatorConfig,
    joint_model: JointModel,
) -> Articulation {
    Articulation::spawn(world, model, actuator, &SpawnOptions { joint_model, ..SpawnOptions::default() }).unwrap()
}

fn passive() -> ActuatorConfig {
    ActuatorConfig::torque()
}

fn angle(world: &PhysicsWorld, robot: &Articulation) -> (f32, f32) {
    let (mut q, mut qd) = ([0.0], [0.0]);
    robot.joint_state(world, &mut q, &mut qd);
    (q[0], qd[0])
}

/// Energy of the rod pendulum: the rod's centre of mass is 0.5 m from the hinge; θ = 0 hangs down.
fn energy(theta: f32, omega: f32) -> f32 {
    let (m, d, i_hinge) = (1.0, 0.5, 1.0 / 3.0);
    0.5 * i_hinge * omega * omega - m * G * d * theta.cos()
}

fn free_fall_matches_the_closed_form(joint_model: JointModel) {
    let mut w = world();
    let mut model = pendulum(None);
    model.joints.clear();
    model.links.remove(0);
    let options = SpawnOptions {
        fixed_base: false,
        base_pose: Pose::from_translation(Vector::new(0.0, 0.0, 10.0)),
        joint_model,
        ..SpawnOptions::default()
    };
    let robot = Articulation::spawn(&mut w, &model, passive(), &options).unwrap();
    let n = 240;
    for _ in 0..n {
        w.step();
    }
    let body = &w.bodies[robot.root()];
    let t = n as f32 * DT;
    let (z, vz) = (body.translation().z, body.linvel().z);
    assert!((vz + G * t).abs() < 1e-3, "v = {vz}, closed form {}", -G * t);
    // Within one step's worth of the integrator's O(dt) error: g·t·dt/2 = 0.02 m.
    let expected = 10.0 - G * t * t / 2.0;
    assert!((z - expected).abs() < 0.01, "z = {z}, closed form {expected}");
}

fn passive_pendulum_conserves_energy_over_10_seconds(joint_model: JointModel) {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive(), joint_model);
    robot.set_state(&mut w, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[1.5], &[0.0]);
    let e0 = energy(1.5, 0.0);
    let (mut e_max, mut e_min) = (e0, e0);
    for _ in 0..(10.0 / DT) as usize {
        w.step();
        let (q, qd) = angle(&w, &robot);
        let e = energy(q, qd);
        e_max = e_max.max(e);
        e_min = e_min.min(e);
    }
    let swing = -e0 + 0.5 * G; // energy above the bottom: m·g·d·(1 - cos θ0) with the rest level
    assert!(e_max - e0 < 0.01 * swing, "energy grew by {} J", e_max - e0);
    assert!(e0 - e_min < 0.1 * swing, "energy fell by {} J", e0 - e_min);
}

fn small_oscillation_period_matches_closed_form(joint_model: JointModel) {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive(), joint_model);
    robot.set_state(&mut w, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[0.05], &[0.0]);
    // T = 2π·sqrt(I / (m·g·d)) for the rod about its end.
    let period = 2.0 * std::f32::consts::PI * ((1.0 / 3.0) / (G * 0.5)).sqrt();
    let mut crossings = Vec::new();
    let mut last = 0.05;
    for k in 1..=(5.0 / DT) as usize {
        w.step();
        let (q, _) = angle(&w, &robot);
        if last > 0.0 && q <= 0.0 {
            crossings.push(k as f32 * DT);
        }
        last = q;
    }
    let measured = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f32;
    assert!((measured - period).abs() < 0.01 * period, "period {measured} s, closed form {period} s");
}

fn pd_held_joint_settles_where_gravity_balances_the_spring(joint_model: JointModel) {
    let mut w = world();
    let (kp, kd) = (200.0, 20.0);
    let mut robot = spawn(&mut w, &pendulum(None), ActuatorConfig::position(kp, kd), joint_model);
    robot.command(&mut w, &[0.5], 1.0);
    for _ in 0..(3.0 / DT) as usize {
        w.step();
    }
    let (q, qd) = angle(&w, &robot);
    // Equilibrium: kp·(q* − q) = m·g·d·sin q. Impulse joints: rapier's 4 solver iterations do
    // not converge on the stiff damping row of the motor coupled with the joint's locked rows,
    // so the rod is still creeping (~1 mrad/s) within ~1 mrad of the equilibrium after 3 s (it
    // closes in with more iterations: 0.008 N·m residual at 16).
    let (tolerance, creep) = match joint_model {
        JointModel::Reduced => (0.05, 1e-3),
        JointModel::Impulse => (0.25, 5e-3),
    };
    let residual = kp as f32 * (0.5 - q) - G * 0.5 * q.sin();
    assert!(residual.abs() < tolerance, "q = {q}, torque residual {residual} N·m");
    assert!(qd.abs() < creep, "q̇ = {qd}");
    assert!(q < 0.5 && q > 0.45, "gravity must pull the rod below its target: q = {q}");
}

fn joint_limits_hold_against_a_large_torque(joint_model: JointModel) {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(Some((-0.5, 0.5))), passive(), joint_model);
    robot.command(&mut w, &[50.0], 1.0);
    let mut q_max = f32::MIN;
    for _ in 0..480 {
        robot.apply_efforts(&mut w);
        w.step();
        q_max = q_max.max(angle(&w, &robot).0);
    }
    assert!(q_max < 0.5 + 0.02, "limit 0.5 rad exceeded: {q_max}");
    assert!(q_max > 0.45, "the torque must drive the joint to its limit: {q_max}");
}

fn torque_command_gives_the_closed_form_acceleration(joint_model: JointModel) {
    let mut w = world();
    w.gravity = Vector::ZERO;
    let mut robot = spawn(&mut w, &pendulum(None), passive(), joint_model);
    let tau = 2.0;
    robot.command(&mut w, &[tau], 1.0);
    let steps = 120;
    for _ in 0..steps {
        robot.apply_efforts(&mut w);
        w.step();
    }
    let (_, qd) = angle(&w, &robot);
    let expected = tau / (1.0 / 3.0) * steps as f32 * DT;
    assert!((qd - expected).abs() < 0.01 * expected, "ω = {qd}, closed form {expected}");
}

fn armature_adds_to_the_joint_inertia(joint_model: JointModel) {
    let mut w = world();
    w.gravity = Vector::ZERO;
    // Ten times the rod's inertia about the hinge (the regime where armature matters: the ant's
    // legs have 1 kg·m² of armature against 0.01–0.03 kg·m² of their own).
    let armature = 10.0 / 3.0;
    let actuator = ActuatorConfig { armature, ..passive() };
    let mut robot = spawn(&mut w, &pendulum(None), actuator, joint_model);
    let tau = 2.0;
    robot.command(&mut w, &[tau], 1.0);
    let steps = 120;
    for _ in 0..steps {
        robot.apply_efforts(&mut w);
        w.step();
    }
    let (_, qd) = angle(&w, &robot);
    let expected = tau / (1.0 / 3.0 + armature as f32) * steps as f32 * DT;
    // Impulse joints: the rotor's momentum is refreshed once per physics step but rapier
    // integrates it over 4 substeps, so the joint speeds up by ~I/J too fast (see `Dof::motor`).
    let tolerance = match joint_model {
        JointModel::Reduced => 0.01,
        JointModel::Impulse => 0.1,
    };
    assert!((qd - expected).abs() < tolerance * expected, "ω = {qd}, closed form {expected}");
}

fn set_state_then_read_back(joint_model: JointModel) {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive(), joint_model);
    robot.set_state(&mut w, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[0.7], &[-1.25]);
    let (q, qd) = angle(&w, &robot);
    assert!((q - 0.7).abs() < 1e-6 && (qd + 1.25).abs() < 1e-6);
    // The rod's body moved with the joint: a positive rotation about +y swings its tip to -x.
    let tip = robot.link_pose(&w, 1).transform_point(Vector::new(0.0, 0.0, -1.0));
    assert!((tip.x + 0.7f32.sin()).abs() < 1e-5 && (tip.z - (2.0 - 0.7f32.cos())).abs() < 1e-5, "{tip:?}");
}

/// A 2 kg block on a prismatic joint along x at height 1 m.
fn slider() -> RobotModel {
    let mut model = pendulum(None);
    model.joints[0].kind = JointKind::Prismatic;
    model.joints[0].axis = [1.0, 0.0, 0.0];
    model.joints[0].origin = UrdfPose::translation(0.0, 0.0, 1.0);
    model.links[1] = rod("block", 2.0, 0.2);
    model
}

fn prismatic_joint_follows_newton(joint_model: JointModel) {
    let mut w = world();
    w.gravity = Vector::ZERO;
    let mut robot = spawn(&mut w, &slider(), passive(), joint_model);
    robot.set_state(&mut w, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[0.3], &[0.7]);
    assert_eq!(angle(&w, &robot), (0.3, 0.7));
    let force = 4.0;
    robot.command(&mut w, &[force], 1.0);
    let steps = 120;
    for _ in 0..steps {
        robot.apply_efforts(&mut w);
        w.step();
    }
    let (x, v) = angle(&w, &robot);
    let t = steps as f32 * DT;
    let a = force / 2.0;
    assert!((v - (0.7 + a * t)).abs() < 1e-3, "v = {v}, closed form {}", 0.7 + a * t);
    // Semi-implicit Euler: within one step's worth of a·t·dt.
    let expected = 0.3 + 0.7 * t + a * t * t / 2.0;
    assert!((x - expected).abs() < a * t * DT, "x = {x}, closed form {expected}");
    let block = robot.link_pose(&w, 1).translation;
    assert!((block.x - x).abs() < 1e-4 && (block.z - 1.0).abs() < 1e-4, "{block:?}");
}

/// A free rod (the base) with a second rod hinged to it, teleported into motion.
fn floating_base_state_round_trip(joint_model: JointModel) {
    let mut w = world();
    w.gravity = Vector::ZERO;
    let mut model = pendulum(None);
    model.links[0] = rod("base", 1.0, 0.5);
    let options = SpawnOptions { fixed_base: false, joint_model, ..SpawnOptions::default() };
    let mut robot = Articulation::spawn(&mut w, &model, passive(), &options).unwrap();
    let pose = Pose::from_parts(Vector::new(1.0, -2.0, 3.0), Rotation::from_rotation_z(0.8));
    let (linvel, angvel) = (Vector::new(0.5, 0.0, -1.0), Vector::new(0.0, 0.0, 0.3));
    robot.set_state(&mut w, pose, linvel, angvel, &[0.4], &[-0.9]);
    let (q, qd) = angle(&w, &robot);
    assert!((q - 0.4).abs() < 1e-5 && (qd + 0.9).abs() < 1e-5, "q = {q}, q̇ = {qd}");
    let root = &w.bodies[robot.root()];
    assert!((root.linvel() - linvel).length() < 1e-5 && (root.angvel() - angvel).length() < 1e-5);
    // One free step keeps the state (no external force; the joint velocity is constant up to
    // the centrifugal coupling of a spinning base, small over one step).
    w.step();
    let (q1, qd1) = angle(&w, &robot);
    assert!((q1 - (0.4 - 0.9 * DT)).abs() < 1e-3 && (qd1 + 0.9).abs() < 0.05, "q = {q1}, q̇ = {qd1}");
}

#[test]
fn impulse_joints_refuse_mimic_joints() {
    let mut model = pendulum(None);
    let mut second = model.joints[0].clone();
    second.name = "follower".into();
    second.child = 2;
    second.mimic = Some(embodia_robots::Mimic { joint: 0, multiplier: 1.0, offset: 0.0 });
    model.links.push(rod("rod2", 1.0, 1.0));
    model.joints.push(second);
    let mut w = world();
    let options = SpawnOptions { joint_model: JointModel::Impulse, ..SpawnOptions::default() };
    let err = Articulation::spawn(&mut w, &model, passive(), &options).unwrap_err().to_string();
    assert!(err.contains("mimic joint \"follower\"") && err.contains("reduced"), "{err}");
    let mut w = world();
    Articulation::spawn(&mut w, &model, passive(), &SpawnOptions::default()).expect("reduced joints couple mimics");
}
