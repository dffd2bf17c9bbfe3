//! End-effector delta actions (`end_effector_delta`) and the `pick-cube-ee` task: the hand
//! moves by the commanded step and keeps its top-down orientation, the target cannot wind up
//! far from the hand, gravity compensation holds the arm still, the config is checked, and the
//! scripted experts solve `pick-cube-ee` and `lang-cubes-ee` through these actions.

use embodia_robots::{ActuatorConfig, builtin};
use embodia_sim::rapier::ee_action::MAX_LEAD;
use embodia_sim::rapier::expert_runs::{evaluate_expert, evaluate_task_expert};
use embodia_sim::rapier::kinematics::top_down;
use embodia_sim::rapier::language::Split;
use embodia_sim::rapier::task_config::{ActionKind, ObsKind, ObsTerm};
use embodia_sim::rapier::{RapierEnv, TaskConfig, rapier_tasks};
use embodia_sim::{SimError, VecEnv, task_config};
use rapier3d::prelude::*;

fn env(config: TaskConfig, n: usize) -> Result<RapierEnv, SimError> {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == "pick-cube-ee").unwrap();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n)
}

/// World pose of environment 0's end effector.
fn hand(e: &RapierEnv) -> Pose {
    let s = &e.scenes()[0];
    s.robot().link_pose(s.world(), e.spec().end_effector.unwrap())
}

/// Steps every environment `n` times with arm action `a` and the gripper open.
fn run(e: &mut RapierEnv, a: [f32; 3], n: usize) {
    let actions: Vec<f32> = (0..e.num_envs()).flat_map(|_| [a[0], a[1], a[2], 1.0]).collect();
    for _ in 0..n {
        e.step(&actions).unwrap();
    }
}

#[test]
fn pick_cube_ee_has_three_arm_actions_and_a_gripper() {
    let e = env(task_config("pick-cube-ee").unwrap(), 1).unwrap();
    assert_eq!(e.spec().config.action.kind, ActionKind::EndEffectorDelta);
    assert_eq!(e.spec().driven.len(), 7);
    assert_eq!(e.spec().arm_actions(), 3);
    assert_eq!(e.action_spec().bounds.dim(), 4);
    // pick-cube keeps its joint-position actions.
    let pick = task_config("pick-cube").unwrap();
    assert_eq!(pick.action.kind, ActionKind::JointPosition);
    assert!(!pick.scene.gravity_compensation);
}

#[test]
fn hand_moves_by_the_commanded_step_and_keeps_pointing_down() {
    let mut e = env(task_config("pick-cube-ee").unwrap(), 1).unwrap();
    let scale = e.spec().config.action.scale;
    for seed in [1, 2, 3] {
        e.reset(seed);
        // Settle: the joint noise of the reset leaves the hand slightly off the held orientation.
        run(&mut e, [0.0; 3], 25);
        let before = hand(&e);
        let target_before = e.scenes()[0].ee_target().unwrap();
        assert!((before.translation - target_before).length() < 0.002, "settled on the target");
        // 10 steps of (0.2, -0.1, 0.24) × 5 cm (0.25 m/s at 20 Hz), then time to arrive.
        let a = [0.2, -0.1, 0.24];
        run(&mut e, a, 10);
        run(&mut e, [0.0; 3], 40);
        let after = hand(&e);
        let commanded = Vector::new(a[0], a[1], a[2]) * (10.0 * scale);
        let target_moved = e.scenes()[0].ee_target().unwrap() - target_before;
        assert!((target_moved - commanded).length() < 1e-5, "target moved {target_moved:?}, commanded {commanded:?}");
        let moved = after.translation - before.translation;
        assert!((moved - commanded).length() < 0.003, "seed {seed}: hand moved {moved:?}, commanded {commanded:?}");
        // Orientation held: unchanged by the move and pointing straight down.
        let turned = before.rotation.angle_between(after.rotation);
        assert!(turned < 0.01, "seed {seed}: the hand turned {turned} rad");
        let off_down = after.rotation.angle_between(top_down(after.rotation));
        assert!(off_down < 0.01, "seed {seed}: the hand is {off_down} rad off pointing down");
    }
}

#[test]
fn target_stays_within_reach_of_the_hand_when_pushed_into_the_table() {
    let mut e = env(task_config("pick-cube-ee").unwrap(), 1).unwrap();
    e.reset(4);
    // 60 full steps down (1.2 m commanded): the table stops the hand, the target stops too.
    run(&mut e, [0.0, 0.0, -1.0], 60);
    let s = &e.scenes()[0];
    let base = s.robot().link_pose(s.world(), e.spec().model.root);
    let at = base.inverse_transform_point(hand(&e).translation);
    let lead = (s.ee_target().unwrap() - at).length();
    assert!(lead <= MAX_LEAD + 1e-4, "target {lead} m from the hand");
    assert!(at.z > -0.01, "the hand went through the table: z {}", at.z);
    // Coming back up takes 20 steps, not the 60 it took to push the target down (the hand
    // trails a moving target by the PD drives' lag, about 0.1 s).
    run(&mut e, [0.0, 0.0, 1.0], 20);
    let up = base.inverse_transform_point(hand(&e).translation).z;
    assert!(up > at.z + 0.12, "hand rose from {} to {up}", at.z);
}

#[test]
fn gravity_compensation_holds_the_arm_where_the_target_is() {
    let drift = |compensate: bool| {
        let mut c = task_config("pick-cube-ee").unwrap();
        c.scene.gravity_compensation = compensate;
        let mut e = env(c, 1).unwrap();
        e.reset(5);
        let target = e.scenes()[0].ee_target().unwrap();
        run(&mut e, [0.0; 3], 50);
        let s = &e.scenes()[0];
        let base = s.robot().link_pose(s.world(), e.spec().model.root);
        (base.inverse_transform_point(hand(&e).translation) - target).length()
    };
    let (with, without) = (drift(true), drift(false));
    assert!(with < 0.002, "compensated arm {with} m off its target");
    assert!(without > 0.02, "uncompensated arm sags only {without} m");
}

#[test]
fn end_effector_delta_config_errors_name_the_field() {
    let message = |c: TaskConfig| match env(c, 1) {
        Err(SimError::InvalidTask(m)) => m,
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("accepted an invalid config"),
    };
    let mut c = task_config("pick-cube-ee").unwrap();
    c.scene.end_effector = None;
    let m = message(c);
    assert!(m.contains("env.action.kind") && m.contains("env.scene.end_effector"), "{m}");

    let mut c = task_config("pick-cube-ee").unwrap();
    c.scene.actuator = ActuatorConfig::torque();
    c.action.gripper = None;
    c.observations.policy.retain(|t| t.term != ObsKind::GripperOpening);
    let m = message(c);
    assert!(m.contains("env.action.kind") && m.contains("env.scene.actuator.mode"), "{m}");

    for scale in [0.0, -0.02, f32::NAN] {
        let mut c = task_config("pick-cube-ee").unwrap();
        c.action.scale = scale;
        let m = message(c);
        assert!(m.contains("env.action.scale"), "{m}");
    }
}

#[test]
fn scripted_expert_solves_pick_cube_ee_through_end_effector_steps() {
    let mut e = env(task_config("pick-cube-ee").unwrap(), 10).unwrap();
    let eval = evaluate_expert(&mut e, 20, 7).unwrap();
    assert!(eval.success_rate >= 0.85, "{eval:?}");
}

#[test]
fn scripted_expert_solves_every_lang_cubes_ee_verb_through_end_effector_steps() {
    let mut c = task_config("lang-cubes-ee").unwrap();
    assert_eq!(c.action.kind, ActionKind::EndEffectorDelta);
    assert_eq!(task_config("lang-cubes").unwrap().action.kind, ActionKind::JointPosition);
    c.command.language.as_mut().unwrap().split = Split::All;
    let eval = evaluate_task_expert("lang-cubes-ee", Some(&c), 10, 40, 5).unwrap();
    assert!(eval.success_rate >= 0.9, "{eval:?}");
    // 5 cm steps at 20 Hz: the same motions in fewer, larger steps than lang-cubes' 50 Hz
    // joint targets (about 145 steps per episode there).
    assert!(eval.mean_length < 90.0, "{eval:?}");
}

#[test]
fn end_effector_steps_grasp_and_lift_the_cube_and_only_a_squeeze_counts_as_grasped() {
    use embodia_sim::rapier::task_config::{RewardKind, RewardTerm};
    let mut c = task_config("pick-cube-ee").unwrap();
    c.rewards = [("grasped".to_string(), RewardTerm::new(RewardKind::ObjectGrasped, 1.0))].into_iter().collect();
    let scale = c.action.scale;
    let mut e = env(c, 1).unwrap();
    e.reset(11);
    let cube = |e: &RapierEnv| {
        let s = &e.scenes()[0];
        let base = s.robot().link_pose(s.world(), e.spec().model.root);
        base.inverse_transform_point(s.object_pose(0).translation)
    };
    let start = cube(&e);
    // Steps towards `goal` (base frame) with the gripper at `grip`; returns the last reward.
    let go = |e: &mut RapierEnv, goal: Vector, grip: f32, n: usize| {
        for _ in 0..n {
            let d = (goal - e.scenes()[0].ee_target().unwrap()) / scale;
            // At most 1.5 cm per step: a hand that dives at full speed knocks the cube away.
            let a = d.clamp(Vector::splat(-0.3), Vector::splat(0.3));
            e.step(&[a.x, a.y, a.z, grip]).unwrap();
        }
        e.buffers().reward[0]
    };
    // 25 + 25 + 20 + 20 steps: within one 100-step episode.
    go(&mut e, start + Vector::Z * 0.1, 1.0, 25);
    // Open fingers around the cube: near, but not a grasp.
    assert_eq!(go(&mut e, start, 1.0, 25), 0.0, "an open gripper around the cube counts as a grasp");
    assert_eq!(go(&mut e, start, -1.0, 20), 1.0, "the closed gripper does not hold the cube");
    go(&mut e, start + Vector::Z * 0.1, -1.0, 20);
    let lifted = cube(&e).z - start.z;
    assert!(lifted > 0.07, "the cube rose {lifted} m");
    assert_eq!(e.buffers().reward[0], 1.0, "lifted but not grasped");
}

#[test]
fn binary_gripper_closes_fully_on_any_negative_action() {
    let position_target = |binary: bool, grip: f32| {
        let mut c = task_config("pick-cube-ee").unwrap();
        c.action.gripper.as_mut().unwrap().binary = binary;
        let mut e = env(c, 1).unwrap();
        e.reset(1);
        e.step(&[0.0, 0.0, 0.0, grip]).unwrap();
        e.scenes()[0].commands()[e.spec().gripper.unwrap()]
    };
    let g = task_config("pick-cube-ee").unwrap().action.gripper.unwrap();
    let between = g.closed + 0.5 * (1.0 - 0.4) * (g.open - g.closed);
    assert!((position_target(false, -0.4) - between).abs() < 1e-6, "the continuous gripper interpolates");
    for grip in [-0.4, -0.01, -1.0, 0.0] {
        assert_eq!(position_target(true, grip), g.closed, "binary gripper at action {grip}");
    }
    for grip in [0.01, 0.4, 1.0] {
        assert_eq!(position_target(true, grip), g.open, "binary gripper at action {grip}");
    }
}

#[test]
fn ee_target_offset_shows_where_the_steps_put_the_target() {
    let mut c = task_config("pick-cube-ee").unwrap();
    c.observations.policy = vec![ObsTerm::of(ObsKind::EeTargetOffset)];
    let mut e = env(c, 1).unwrap();
    e.reset(3);
    let observed = |e: &RapierEnv| Vector::from_slice(&e.buffers().obs[..3]);
    let truth = |e: &RapierEnv| {
        let s = &e.scenes()[0];
        let base = s.robot().link_pose(s.world(), e.spec().model.root);
        s.ee_target().unwrap() - base.inverse_transform_point(hand(e).translation)
    };
    // Full steps up: the target runs ahead of the hand.
    run(&mut e, [0.0, 0.0, 1.0], 3);
    assert!((observed(&e) - truth(&e)).length() < 1e-5, "observed {:?}, target − hand {:?}", observed(&e), truth(&e));
    assert!(observed(&e).z > 0.02, "the target leads a rising hand: {:?}", observed(&e));
    // At rest the hand catches up.
    run(&mut e, [0.0; 3], 40);
    assert!(observed(&e).length() < 0.01, "{:?}", observed(&e));

    let mut joint = task_config("pick-cube").unwrap();
    joint.observations.policy.push(ObsTerm::of(ObsKind::EeTargetOffset));
    let Err(SimError::InvalidTask(message)) = env(joint, 1) else { panic!("accepted the offset without EE actions") };
    assert!(message.contains("ee_target_offset") && message.contains("end_effector_delta"), "{message}");
}

/// pick-cube-ee with absolute end-effector targets: `home + 0.3 m × action`.
fn absolute_config() -> TaskConfig {
    let mut c = task_config("pick-cube-ee").unwrap();
    c.action.kind = ActionKind::EndEffectorPosition;
    c.action.scale = 0.3;
    c
}

#[test]
fn end_effector_position_actions_put_the_hand_at_home_plus_scale_times_action() {
    let mut e = env(absolute_config(), 1).unwrap();
    let in_base = |e: &RapierEnv| {
        let s = &e.scenes()[0];
        s.robot().link_pose(s.world(), e.spec().model.root).inverse_transform_point(hand(e).translation)
    };
    for a in [[-0.4, 0.5, -0.3], [0.1, -0.6, 0.4]] {
        // Within one 100-step episode.
        e.reset(2);
        run(&mut e, [0.0; 3], 20);
        let home = in_base(&e);
        run(&mut e, a, 45);
        let wanted = home + Vector::from(a) * 0.3;
        assert!((in_base(&e) - wanted).length() < 0.01, "action {a:?}: hand at {:?}, wanted {wanted:?}", in_base(&e));
        // Holding still is repeating the action: the target does not move on.
        let target = e.scenes()[0].ee_target().unwrap();
        run(&mut e, a, 10);
        assert!((e.scenes()[0].ee_target().unwrap() - target).length() < 1e-5);
    }
}

#[test]
fn scripted_expert_solves_pick_cube_ee_through_absolute_end_effector_targets() {
    let mut e = env(absolute_config(), 10).unwrap();
    let eval = evaluate_expert(&mut e, 20, 7).unwrap();
    assert!(eval.success_rate >= 0.85, "{eval:?}");
}
