//! Rapier tasks: the cart-pole against its closed form, determinism across thread counts,
//! reset distributions and domain randomization.

use embodia_robots::{ActuatorConfig, builtin};
use embodia_sim::rapier::{Articulation, RapierEnv, SpawnOptions, TaskConfig, rapier_tasks};
use embodia_sim::{VecEnv, task_config};
use rapier3d::prelude::*;

fn env(name: &str, config: TaskConfig, n: usize) -> RapierEnv {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == name).unwrap();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n).unwrap()
}

/// Deterministic pseudo-random actions in [-1, 1].
fn actions(step: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let x = ((step * 7919 + i * 104_729) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Cart-pole equations of motion from the Lagrangian, for a cart of mass `mc` and a uniform
/// pole of mass `mp` and half-length `l` hinged at the cart, θ = 0 upright, positive about +y
/// (which tips the pole towards +x): returns (ẍ, θ̈) with no applied force.
fn cartpole_accel(mc: f64, mp: f64, l: f64, theta: f64, omega: f64) -> (f64, f64) {
    let g = 9.81;
    let i_c = mp * (2.0 * l) * (2.0 * l) / 12.0;
    let (s, c) = theta.sin_cos();
    // [[mc+mp, mp l c], [mp l c, I_c + mp l²]] [ẍ, θ̈] = [mp l s ω², mp g l s]
    let (a, b, d) = (mc + mp, mp * l * c, i_c + mp * l * l);
    let (r1, r2) = (mp * l * s * omega * omega, mp * g * l * s);
    let det = a * d - b * b;
    ((r1 * d - b * r2) / det, (a * r2 - b * r1) / det)
}

#[test]
fn rapier_cartpole_matches_the_analytic_cartpole() {
    let dt = 1.0 / 240.0;
    let mut world = PhysicsWorld::new();
    world.gravity = Vector::new(0.0, 0.0, -9.81);
    world.integration_parameters.dt = dt as f32;
    let model = builtin::cartpole();
    let mut robot =
        Articulation::spawn(&mut world, &model, ActuatorConfig::torque(), &SpawnOptions::default()).unwrap();
    let theta0 = 0.2;
    robot.set_state(&mut world, Pose::IDENTITY, Vector::ZERO, Vector::ZERO, &[0.0, theta0 as f32], &[0.0, 0.0]);
    // Reference: RK4 on the closed-form equations, 10 substeps per physics step.
    let (mut x, mut v, mut th, mut w) = (0.0f64, 0.0f64, theta0, 0.0f64);
    let h = dt / 10.0;
    let (mut q, mut qd) = ([0.0f32; 2], [0.0f32; 2]);
    for step in 1..=240 {
        for _ in 0..10 {
            let f = |_x: f64, v: f64, th: f64, w: f64| {
                let (xa, tha) = cartpole_accel(1.0, 0.1, 0.5, th, w);
                (v, xa, w, tha)
            };
            let k1 = f(x, v, th, w);
            let k2 = f(x + h / 2.0 * k1.0, v + h / 2.0 * k1.1, th + h / 2.0 * k1.2, w + h / 2.0 * k1.3);
            let k3 = f(x + h / 2.0 * k2.0, v + h / 2.0 * k2.1, th + h / 2.0 * k2.2, w + h / 2.0 * k2.3);
            let k4 = f(x + h * k3.0, v + h * k3.1, th + h * k3.2, w + h * k3.3);
            x += h / 6.0 * (k1.0 + 2.0 * k2.0 + 2.0 * k3.0 + k4.0);
            v += h / 6.0 * (k1.1 + 2.0 * k2.1 + 2.0 * k3.1 + k4.1);
            th += h / 6.0 * (k1.2 + 2.0 * k2.2 + 2.0 * k3.2 + k4.2);
            w += h / 6.0 * (k1.3 + 2.0 * k2.3 + 2.0 * k3.3 + k4.3);
        }
        robot.apply_efforts(&mut world);
        world.step();
        robot.joint_state(&world, &mut q, &mut qd);
        if step % 60 == 0 {
            // The pole falls from 0.2 rad to about 1.5 rad in this second; first-order
            // integration in rapier stays within a few percent of the closed form.
            let tol = 0.02 + 0.03 * th.abs();
            assert!((q[1] as f64 - th).abs() < tol, "t={:.2}s: θ {} vs closed form {th}", step as f64 * dt, q[1]);
            assert!((q[0] as f64 - x).abs() < 0.02 + 0.03 * x.abs(), "t={:.2}s: x {} vs {x}", step as f64 * dt, q[0]);
        }
    }
    assert!(th > 1.0, "the reference pole must have fallen far: {th}");
}

#[test]
fn same_rollout_with_one_and_two_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut e = env("quadruped-velocity", task_config("quadruped-velocity").unwrap(), 4);
            e.reset(7);
            let ad = e.action_spec().bounds.dim();
            let mut trace = Vec::new();
            for step in 0..30 {
                e.step(&actions(step, 4 * ad)).unwrap();
                let b = e.buffers();
                trace.extend_from_slice(&b.obs);
                trace.extend_from_slice(&b.reward);
                trace.extend_from_slice(&b.terminated);
            }
            trace
        })
    };
    let (one, two) = (run(1), run(2));
    assert!(one.iter().all(|x| x.is_finite()));
    assert_eq!(
        one.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        two.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn reset_draws_joints_and_targets_within_their_ranges() {
    let config = task_config("reach").unwrap();
    let noise = config.events.joint_position_noise;
    let box_ = config.command.target.unwrap();
    let mut e = env("reach", config, 32);
    e.reset(3);
    let mut spread = 0.0f32;
    for scene in e.scenes() {
        for (j, &q) in scene.joint_positions().iter().enumerate() {
            let q0 = e.spec().default_q[j];
            assert!(q >= q0 + noise[0] - 1e-5 && q <= q0 + noise[1] + 1e-5, "joint {j}: {q}");
            spread = spread.max((q - q0).abs());
        }
        let t = scene.target();
        for (k, v) in t.to_array().into_iter().enumerate() {
            assert!((box_[k][0]..=box_[k][1]).contains(&v), "target {t:?} outside {box_:?}");
        }
    }
    assert!(spread > 0.5 * noise[1], "joint noise is actually drawn: largest offset {spread}");
    let first: Vec<_> = e.scenes().iter().map(|s| s.target()).collect();
    e.reset(4);
    assert!(e.scenes().iter().zip(&first).any(|(s, t)| s.target() != *t), "another seed, other targets");
}

#[test]
fn domain_randomization_changes_what_it_says_and_only_that() {
    let mut nominal = task_config("quadruped-velocity").unwrap();
    nominal.events.friction_scale = [1.0, 1.0];
    nominal.events.added_base_mass = [0.0, 0.0];
    nominal.events.actuator_gain_scale = [1.0, 1.0];
    let base = env("quadruped-velocity", nominal.clone(), 1);
    let (mass0, friction0) = (base.scenes()[0].base_mass(), base.scenes()[0].robot_friction());

    // Only friction randomized: mass and gains stay nominal.
    let mut friction_only = nominal.clone();
    friction_only.events.friction_scale = [0.5, 1.25];
    let mut e = env("quadruped-velocity", friction_only, 16);
    e.reset(1);
    let frictions: Vec<f32> = e.scenes().iter().map(|s| s.robot_friction()).collect();
    for s in e.scenes() {
        assert!((0.5 * friction0..=1.25 * friction0).contains(&s.robot_friction()));
        assert_eq!(s.base_mass(), mass0);
        assert_eq!(s.gain_scale(), 1.0);
    }
    assert!(frictions.iter().any(|&f| (f - frictions[0]).abs() > 0.05), "frictions vary: {frictions:?}");

    // Only mass and gains randomized: friction stays nominal.
    let mut mass_gain = nominal;
    mass_gain.events.added_base_mass = [-1.0, 3.0];
    mass_gain.events.actuator_gain_scale = [0.8, 1.2];
    let mut e = env("quadruped-velocity", mass_gain, 16);
    e.reset(2);
    for s in e.scenes() {
        assert_eq!(s.robot_friction(), friction0);
        assert!((mass0 - 1.0 - 1e-4..=mass0 + 3.0 + 1e-4).contains(&s.base_mass()), "{}", s.base_mass());
        assert!((0.8..=1.2).contains(&s.gain_scale()));
    }
    let masses: Vec<f32> = e.scenes().iter().map(|s| s.base_mass()).collect();
    assert!(masses.iter().any(|&m| (m - masses[0]).abs() > 0.2), "masses vary: {masses:?}");
}

#[test]
fn every_rapier_task_steps_with_random_actions_and_stays_finite() {
    for task in rapier_tasks() {
        let mut e = env(task.info.name, (task.config)(), 2);
        let ad = e.action_spec().bounds.dim();
        for step in 0..20 {
            e.step(&actions(step, 2 * ad)).unwrap();
            let b = e.buffers();
            assert!(
                b.obs.iter().chain(&b.reward).all(|x| x.is_finite()),
                "{}: non-finite at step {step}",
                task.info.name
            );
        }
    }
}

/// `ant-run` uses 2 solver iterations for speed: where the ant comes to rest under zero torque,
/// and the joint angles after a second of a 30 N·m trot, must match 16 iterations (1 iteration
/// misses by 0.12 rad, 2 and 4 by 0.015).
#[test]
fn ant_run_solver_iterations_do_not_move_the_ant() {
    let run = |iterations: u32, amplitude: f32, steps: usize| {
        let mut config = task_config("ant-run").unwrap();
        config.scene.solver_iterations = iterations;
        config.events = Default::default();
        let mut e = env("ant-run", config, 1);
        e.reset(0);
        for k in 0..steps {
            let a: Vec<f32> =
                (0..8).map(|j| amplitude * (std::f32::consts::TAU * 0.05 * k as f32 + j as f32).sin()).collect();
            e.step(&a).unwrap();
        }
        let s = &e.scenes()[0];
        (s.world().bodies[s.robot().root()].translation().z, s.joint_positions().to_vec())
    };
    let default = task_config("ant-run").unwrap().scene.solver_iterations;
    let (z, _) = run(default, 0.0, 60);
    let (z16, _) = run(16, 0.0, 60);
    assert!((z - z16).abs() < 0.005, "rest height {z} m with {default} iterations, {z16} m with 16");
    let (_, q) = run(default, 0.2, 20);
    let (_, q16) = run(16, 0.2, 20);
    let worst = q.iter().zip(&q16).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(worst < 0.05, "joint angles differ by {worst} rad after 1 s: {q:?} vs {q16:?}");
}

#[test]
fn config_errors_name_the_field() {
    let mut c = task_config("reach").unwrap();
    c.action.joints = vec!["elbow_flexx".into()];
    let model = builtin("so101").unwrap();
    let info = rapier_tasks()[1].info.clone();
    let err = RapierEnv::new(info.clone(), c, model.clone(), 1).err().unwrap().to_string();
    assert!(err.contains("env.action.joints") && err.contains("elbow_flexx"), "{err}");
    let mut c = task_config("reach").unwrap();
    c.scene.decimation = 0;
    let err = RapierEnv::new(info, c, model, 1).err().unwrap().to_string();
    assert!(err.contains("env.scene.decimation"), "{err}");
}
