//! Task terms are bevy_ecs systems: a task's own reward term, written as a system over the
//! scene's resources, adds its weighted value to the configured reward.

use bevy_ecs::prelude::Res;
use embodia_robots::builtin;
use embodia_sim::VecEnv;
use embodia_sim::rapier::terms::{Joints, SceneRead};
use embodia_sim::rapier::{RapierEnv, rapier_tasks};

fn reach(n: usize) -> RapierEnv {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == "reach").unwrap();
    let config = (task.config)();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n).unwrap()
}

#[test]
fn a_reward_term_written_as_a_system_adds_its_weighted_value() {
    let (n, weight) = (4, -0.5);
    let (mut plain, mut extended) = (reach(n), reach(n));
    extended.add_reward_term(weight, |joints: Res<Joints>| joints.qd.iter().map(|v| v * v).sum::<f32>());
    // A second term through the whole-scene view: the end effector's height, m.
    extended.add_reward_term(2.0, |scene: SceneRead| scene.get().ee_position().z);
    plain.reset(7);
    extended.reset(7);
    let na = plain.action_spec().bounds.low.len();
    for step in 0..30 {
        let actions: Vec<f32> = (0..n * na).map(|i| ((step * 31 + i * 17) % 13) as f32 / 6.0 - 1.0).collect();
        plain.step(&actions).unwrap();
        extended.step(&actions).unwrap();
        for (env, scene) in extended.scenes().iter().enumerate() {
            let qd2: f32 = scene.joint_velocities().iter().map(|v| v * v).sum();
            let ee = scene.robot().link_pose(scene.world(), extended.spec().end_effector.unwrap()).translation;
            let base = scene.world().bodies[scene.robot().root()].position().inverse_transform_point(ee);
            let expected = plain.buffers().reward[env] + weight * qd2 + 2.0 * base.z;
            let got = extended.buffers().reward[env];
            assert!(
                (got - expected).abs() < 1e-4 * expected.abs().max(1.0),
                "step {step} env {env}: {got} vs {expected}"
            );
        }
        assert_eq!(plain.buffers().obs, extended.buffers().obs, "the added terms change rewards only");
    }
}
