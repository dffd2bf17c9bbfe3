//! Open-loop trajectories of `ant-run`'s ant for several rapier solver iteration counts, as
//! JSON, so `bench/ant_fidelity.sh` can compare them with MuJoCo's Ant-v5 from the same state.
//!
//! `cargo run -p embodia-sim --release --example ant_trajectory -- 1,2,3,4,8 > traj.json`
//!
//! One environment without reset noise (joints at zero clamped into their limits, torso at
//! 0.75 m). Three open-loop action sequences of 60 control steps (3 s): `zero` (the ant drops and
//! settles), `gentle` and `sine` (joint `j`, in URDF order, gets `A sin(2π t + j π / 4)` with
//! A = 0.2 and 0.6, i.e. 30 and 90 N·m at the 1 Hz gait of a trotting ant). Per control
//! step it records the torso position (m) and the joint positions (rad), URDF order.

use embodia_sim::VecEnv;
use embodia_sim::rapier::{RapierEnv, rapier_tasks};

const STEPS: usize = 60;

fn main() {
    let iterations: Vec<u32> = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "1,2,3,4,8".into())
        .split(',')
        .map(|s| s.parse().expect("solver iteration counts, comma-separated"))
        .collect();
    let entry = rapier_tasks().into_iter().find(|t| t.info.name == "ant-run").expect("ant-run");
    let mut runs = Vec::new();
    let mut control_dt = 0.0;
    for &iters in &iterations {
        let mut config = (entry.config)();
        config.scene.solver_iterations = iters;
        config.events = Default::default();
        let robot = embodia_robots::builtin::builtin(&config.scene.robot).expect("built-in ant");
        control_dt = config.scene.control_dt();
        for (sequence, amplitude) in [("zero", 0.0), ("gentle", 0.2), ("sine", 0.6)] {
            let mut env = RapierEnv::new(entry.info.clone(), config.clone(), robot.clone(), 1).expect("env");
            env.reset(0);
            let dim = env.action_spec().bounds.dim();
            let mut action = vec![0.0f32; dim];
            let (mut torso, mut joints) = (Vec::new(), Vec::new());
            for k in 0..STEPS {
                let t = k as f32 * control_dt;
                for (j, a) in action.iter_mut().enumerate() {
                    *a = amplitude * (std::f32::consts::TAU * t + j as f32 * std::f32::consts::FRAC_PI_4).sin();
                }
                env.step(&action).expect("step");
                let scene = &env.scenes()[0];
                let p = scene.world().bodies[scene.robot().root()].translation();
                torso.push(format!("[{:.5},{:.5},{:.5}]", p.x, p.y, p.z));
                joints.push(format!(
                    "[{}]",
                    scene.joint_positions().iter().map(|q| format!("{q:.5}")).collect::<Vec<_>>().join(",")
                ));
            }
            runs.push(format!(
                "{{\"solver_iterations\":{iters},\"sequence\":\"{sequence}\",\"torso\":[{}],\"joints\":[{}]}}",
                torso.join(","),
                joints.join(",")
            ));
        }
    }
    println!("{{\"control_dt\":{control_dt},\"steps\":{STEPS},\"runs\":[{}]}}", runs.join(","));
}
