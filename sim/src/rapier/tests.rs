//! Physics sanity of articulations against closed forms.

use super::*;
use embodia_robots::{
    ActuatorConfig, Geometry, Inertial, Joint, JointDynamics, JointKind, JointLimit, Link, Pose as UrdfPose,
    RobotModel, Shape,
};
use rapier3d::prelude::*;

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

fn spawn(world: &mut PhysicsWorld, model: &RobotModel, actuator: ActuatorConfig) -> Articulation {
    Articulation::spawn(world, model, actuator, &SpawnOptions::default()).unwrap()
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

#[test]
fn free_fall_matches_the_closed_form() {
    let mut w = world();
    let mut model = pendulum(None);
    model.joints.clear();
    model.links.remove(0);
    let options = SpawnOptions {
        fixed_base: false,
        base_pose: Pose::from_translation(Vector::new(0.0, 0.0, 10.0)),
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

#[test]
fn passive_pendulum_conserves_energy_over_10_seconds() {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive());
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

#[test]
fn small_oscillation_period_matches_closed_form() {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive());
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

#[test]
fn pd_held_joint_settles_where_gravity_balances_the_spring() {
    let mut w = world();
    let (kp, kd) = (200.0, 20.0);
    let mut robot = spawn(&mut w, &pendulum(None), ActuatorConfig::position(kp, kd));
    robot.command(&mut w, &[0.5], 1.0);
    for _ in 0..(3.0 / DT) as usize {
        w.step();
    }
    let (q, qd) = angle(&w, &robot);
    // Equilibrium: kp·(q* − q) = m·g·d·sin q.
    let residual = kp as f32 * (0.5 - q) - G * 0.5 * q.sin();
    assert!(residual.abs() < 0.05, "q = {q}, torque residual {residual} N·m");
    assert!(qd.abs() < 1e-3);
    assert!(q < 0.5 && q > 0.45, "gravity must pull the rod below its target: q = {q}");
}

#[test]
fn joint_limits_hold_against_a_large_torque() {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(Some((-0.5, 0.5))), passive());
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

#[test]
fn torque_command_gives_the_closed_form_acceleration() {
    let mut w = world();
    w.gravity = Vector::ZERO;
    let mut robot = spawn(&mut w, &pendulum(None), passive());
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

#[test]
fn set_state_then_read_back() {
    let mut w = world();
    let mut robot = spawn(&mut w, &pendulum(None), passive());
    robot.set_state(&mut w, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[0.7], &[-1.25]);
    let (q, qd) = angle(&w, &robot);
    assert!((q - 0.7).abs() < 1e-6 && (qd + 1.25).abs() < 1e-6);
    // The rod's body moved with the joint: a positive rotation about +y swings its tip to -x.
    let tip = robot.link_pose(&w, 1).transform_point(Vector::new(0.0, 0.0, -1.0));
    assert!((tip.x + 0.7f32.sin()).abs() < 1e-5 && (tip.z - (2.0 - 0.7f32.cos())).abs() < 1e-5, "{tip:?}");
}
