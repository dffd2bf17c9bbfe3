//! End-effector delta actions (`end_effector_delta`, the `pick-cube-ee` task).

use embodia_robots::builtin;
use embodia_sim::rapier::{RapierEnv, TaskConfig, rapier_tasks};
use embodia_sim::{SimError, VecEnv, task_config};
use rapier3d::prelude::*;

fn env(name: &str, config: TaskConfig, n: usize) -> Result<RapierEnv, SimError> {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == name).unwrap();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n)
}

fn ee(e: &RapierEnv) -> Pose {
    let s = &e.scenes()[0];
    s.robot().link_pose(s.world(), e.spec().end_effector.unwrap())
}

#[test]
fn probe() {
    let mut e = env("pick-cube-ee", task_config("pick-cube-ee").unwrap(), 1).unwrap();
    e.reset(3);
    let start = ee(&e);
    println!("start {:?} target {:?}", start.translation, e.scenes()[0].ee_target());
    for dir in [Vector::X, Vector::Y, Vector::Z, -Vector::Z] {
        for k in 0..60 {
            let a = if k < 10 { dir * 0.5 } else { Vector::ZERO };
            e.step(&[a.x, a.y, a.z, 1.0]).unwrap();
            if k % 10 == 9 {
                let p = ee(&e);
                println!("{dir:?} k {k} ee {:?} target {:?} rot {:?}", p.translation, e.scenes()[0].ee_target(), p.rotation);
            }
        }
    }
}
