//! Manipulation tasks: objects on a table, their terms, forward kinematics, and the scripted
//! experts that solve reach, pick-cube and push-t.

use embodia_robots::builtin;
use embodia_sim::rapier::expert_runs::{ExpertEval, evaluate_expert};
use embodia_sim::rapier::kinematics::Kinematics;
use embodia_sim::rapier::objects::{COVERAGE_CELL, ObjectShape, coverage, planar};
use embodia_sim::rapier::task_config::{ObsKind, ObsTerm, SuccessTerm};
use embodia_sim::rapier::{RapierEnv, TaskConfig, rapier_tasks};
use embodia_sim::{SimError, VecEnv, task_config};
use rapier3d::prelude::*;

fn env(name: &str, config: TaskConfig, n: usize) -> Result<RapierEnv, SimError> {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == name).unwrap();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n)
}

fn expert(name: &str, config: TaskConfig, envs: usize, episodes: usize) -> ExpertEval {
    let mut e = env(name, config, envs).unwrap();
    let eval = evaluate_expert(&mut e, episodes, 7).unwrap();
    eprintln!("{name}: {eval:?}");
    eval
}

const TEE: ObjectShape = ObjectShape::TBlock { bar: [0.2, 0.05], stem: [0.05, 0.15], height: 0.03 };

#[test]
fn coverage_is_one_at_the_goal_and_drops_when_the_t_moves_or_turns() {
    let grid = TEE.grid(COVERAGE_CELL);
    // 0.2 × 0.05 + 0.05 × 0.15 m² in 5 mm cells.
    assert_eq!(grid.len(), 40 * 10 + 10 * 30);
    let goal = [0.1, -0.05, std::f32::consts::FRAC_PI_4];
    assert_eq!(coverage(&TEE, &grid, goal, goal), 1.0);
    // Sliding 1 cm along the T's own x uncovers a 1 cm strip of the bar (5 cm tall) and of the
    // stem (15 cm tall): 0.2 × 0.01 of 0.0175 m².
    let (s, c) = goal[2].sin_cos();
    let shifted = [goal[0] + 0.01 * c, goal[1] + 0.01 * s, goal[2]];
    let expected = 1.0 - 0.2 * 0.01 / 0.0175;
    let got = coverage(&TEE, &grid, goal, shifted);
    assert!((got - expected).abs() < 0.01, "shift: {got} vs {expected}");
    // A 5° turn about the bar's centre already fails the 95% criterion; half a turn covers
    // the bar only (0.01 of 0.0175 m²).
    let turned = coverage(&TEE, &grid, goal, [goal[0], goal[1], goal[2] + 5f32.to_radians()]);
    assert!((0.8..0.95).contains(&turned), "turned 5°: {turned}");
    let flipped = coverage(&TEE, &grid, goal, [goal[0], goal[1], goal[2] + std::f32::consts::PI]);
    assert!((flipped - 0.01 / 0.0175).abs() < 1e-3, "flipped: {flipped}");
    assert_eq!(coverage(&TEE, &grid, goal, [goal[0] + 1.0, goal[1], goal[2]]), 0.0);
}

#[test]
fn push_t_scene_reports_full_coverage_only_when_the_t_sits_on_its_goal() {
    let e = env("push-t", task_config("push-t").unwrap(), 8).unwrap();
    for s in e.scenes() {
        let goal = [s.target().x, s.target().y, s.target_yaw()];
        let at = planar(&s.object_pose(0));
        let grid = TEE.grid(COVERAGE_CELL);
        assert_eq!(s.coverage(), coverage(&TEE, &grid, goal, at));
        assert!(s.coverage() < 0.95, "a reset T starts off its goal");
    }
}

/// A T drawn beyond the table's edge falls: the episode ends as failed (terminated, no
/// success) within a few steps, before its observations leave the range of a resting scene.
#[test]
fn push_t_ends_the_episode_when_the_block_leaves_the_table() {
    let mut config = task_config("push-t").unwrap();
    let tee = &mut config.scene.objects[0];
    (tee.x, tee.y, tee.min_ee_distance) = ([0.6, 0.6], [0.0, 0.0], 0.0);
    let mut e = env("push-t", config, 1).unwrap();
    e.reset(1);
    let action = vec![0.0; e.action_spec().bounds.dim()];
    let mut steps = 0;
    loop {
        e.step(&action).unwrap();
        steps += 1;
        let b = e.buffers();
        assert!(b.obs.iter().all(|x| x.abs() < 10.0), "step {steps}: {:?}", b.obs);
        if b.terminated[0] == 1.0 {
            assert_eq!(b.success[0], 0.0);
            break;
        }
        assert!(steps < 10, "the falling block did not end the episode");
    }
    // On the table, nothing ends the episode early.
    let mut e = env("push-t", task_config("push-t").unwrap(), 4).unwrap();
    e.reset(1);
    let action = vec![0.0; 4 * e.action_spec().bounds.dim()];
    for _ in 0..20 {
        e.step(&action).unwrap();
        assert!(e.buffers().terminated.iter().all(|&t| t == 0.0));
    }
}

#[test]
fn objects_reset_resting_on_the_table_within_their_ranges() {
    for name in ["pick-cube", "pick-cube-so101", "push-t"] {
        let config = task_config(name).unwrap();
        let object = config.scene.objects[0].clone();
        let top = config.scene.table.as_ref().unwrap().height;
        let ee = config.scene.end_effector.clone().unwrap();
        let model = builtin(&config.scene.robot).unwrap();
        let ee = model.link_index(&ee).unwrap();
        let mut e = env(name, config, 16).unwrap();
        let (mut xs, mut close) = (Vec::new(), 0);
        for seed in 0..4 {
            e.reset(seed);
            for s in e.scenes() {
                let p = s.object_pose(0);
                let [x, y, yaw] = planar(&p);
                let eps = 1e-4;
                assert!((object.x[0] - eps..=object.x[1] + eps).contains(&x), "{name}: x {x}");
                assert!((object.y[0] - eps..=object.y[1] + eps).contains(&y), "{name}: y {y}");
                let yaw_ok = (object.yaw[0] - eps..=object.yaw[1] + eps).contains(&yaw)
                    || object.yaw[1] - object.yaw[0] >= std::f32::consts::TAU - eps;
                assert!(yaw_ok, "{name}: yaw {yaw}");
                let rest = top + object.shape.half_height();
                assert!((p.translation.z - rest).abs() < 1e-3, "{name}: z {} vs {rest}", p.translation.z);
                assert!((p.rotation * Vector::Z).z > 0.9999, "{name}: upright");
                if object.min_ee_distance > 0.0 {
                    // Redrawn up to 16 times; the T (0.2 m from its frame at most) never
                    // overlaps the puck (r 0.025 m).
                    let tip = s.robot().link_pose(s.world(), ee).translation;
                    let d = (x - tip.x).hypot(y - tip.y);
                    assert!(d >= 0.23, "{name}: T {d} m from the puck");
                    close += usize::from(d < object.min_ee_distance);
                }
                xs.push(x);
            }
        }
        assert!(xs.iter().any(|&x| (x - xs[0]).abs() > 0.01), "{name}: positions vary");
        assert!(close <= 2, "{name}: {close} of 64 resets closer than min_ee_distance");
        // Left alone, the object stays put on the table.
        let zero = vec![0.0; e.num_envs() * e.action_spec().bounds.dim()];
        let before: Vec<Vec3> = e.scenes().iter().map(|s| s.object_pose(0).translation).collect();
        for _ in 0..10 {
            e.step(&zero).unwrap();
        }
        for (s, b) in e.scenes().iter().zip(&before) {
            let moved = (s.object_pose(0).translation - *b).length();
            assert!(moved < 0.02, "{name}: a resting object moved {moved} m");
        }
    }
}

#[test]
fn forward_kinematics_matches_the_simulated_links() {
    for name in ["pick-cube", "pick-cube-so101", "push-t"] {
        let mut config = task_config(name).unwrap();
        config.events.joint_position_noise = [-0.8, 0.8];
        let model = builtin(&config.scene.robot).unwrap();
        let kin = Kinematics::new(&model);
        let mut e = env(name, config, 4).unwrap();
        e.reset(3);
        let mut poses = vec![Pose::IDENTITY; kin.num_links()];
        for s in e.scenes() {
            let base = s.robot().link_pose(s.world(), model.root);
            kin.link_poses(base, s.joint_positions(), &mut poses);
            for (l, fk) in poses.iter().enumerate() {
                let sim = s.robot().link_pose(s.world(), l);
                let r = sim.rotation * fk.rotation.inverse();
                let angle = 2.0 * Vec3::new(r.x, r.y, r.z).length();
                assert!((sim.translation - fk.translation).length() < 1e-5 && angle < 1e-4, "{name}: link {l}");
            }
        }
    }
}

#[test]
fn object_terms_have_their_sizes_and_need_objects() {
    let e = env("pick-cube", task_config("pick-cube").unwrap(), 2).unwrap();
    // 8 joints (7 + finger) pos and vel, opening, object, target, ee→object, object→goal, 8
    // actions (7 arm + gripper).
    assert_eq!(e.spec().obs_dim, 8 + 8 + 1 + 3 + 3 + 3 + 3 + 8);
    assert_eq!(e.action_spec().bounds.dim(), 8);
    let e = env("push-t", task_config("push-t").unwrap(), 2).unwrap();
    assert_eq!(e.spec().obs_dim, 2 + 2 + 3 + 2 + 3 + 2);

    let mut c = task_config("reach").unwrap();
    c.observations.policy.push(ObsTerm::of(ObsKind::ObjectQuat));
    let err = env("reach", c, 1).err().unwrap().to_string();
    assert!(err.contains("env.scene.objects"), "{err}");
    let mut c = task_config("reach").unwrap();
    c.success = SuccessTerm::TCoverage { threshold: 0.9 };
    assert!(env("reach", c, 1).is_err());
    let mut c = task_config("pick-cube").unwrap();
    c.scene.objects[0].mass = 0.0;
    let err = env("pick-cube", c, 1).err().unwrap().to_string();
    assert!(err.contains("env.scene.objects[0].mass"), "{err}");
}

#[test]
fn manipulation_configs_round_trip_through_serde() {
    for name in ["pick-cube", "pick-cube-so101", "push-t"] {
        let c = task_config(name).unwrap();
        let json = serde_json::to_string(&c).unwrap();
        let back: TaskConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c, "{name}");
    }
}

#[test]
fn reach_expert_reaches_the_target() {
    // Targets in boxes that ±1 rad of action range around the default pose reaches everywhere
    // (the tasks' own boxes and ±0.5 rad may leave some targets out of reach).
    for (name, target) in
        [("reach", [[0.2, 0.3], [-0.1, 0.1], [0.15, 0.3]]), ("reach-arm7", [[0.3, 0.5], [-0.15, 0.15], [0.3, 0.55]])]
    {
        let mut c = task_config(name).unwrap();
        c.action.scale = 1.0;
        c.command.target = Some(target);
        assert!(expert(name, c, 10, 20).success_rate >= 0.95, "{name}");
    }
}

#[test]
fn pick_cube_expert_grasps_lifts_and_holds_the_cube() {
    // Success = the cube within 2.5 cm of a target 0.25-0.5 m above the table with the arm
    // still: the fingers must hold it up against gravity.
    let eval = expert("pick-cube", task_config("pick-cube").unwrap(), 10, 10);
    assert!(eval.success_rate >= 0.9, "{eval:?}");
}

#[test]
fn pick_cube_so101_expert_picks_with_the_jaw() {
    let eval = expert("pick-cube-so101", task_config("pick-cube-so101").unwrap(), 10, 10);
    assert!(eval.success_rate >= 0.5, "{eval:?}");
}

#[test]
fn push_t_expert_pushes_the_t_onto_its_goal_sometimes() {
    // A greedy pushing planner: about 65% over many episodes within the 30 s limit.
    let eval = expert("push-t", task_config("push-t").unwrap(), 10, 20);
    assert!(eval.success_rate >= 0.35, "{eval:?}");
    assert!(eval.mean_length < 300.0, "successful episodes end early: {eval:?}");
}

#[test]
fn recorded_expert_episodes_replay_to_the_same_rewards_and_outcomes() {
    use embodia_sim::rapier::expert_runs::record_expert;
    let (envs, episodes) = (4, 6);
    let demos = record_expert(&mut env("reach", task_config("reach").unwrap(), envs).unwrap(), episodes, 3).unwrap();
    assert_eq!(demos.task, "reach");
    assert_eq!(demos.episodes.len(), episodes);
    let eval = evaluate_expert(&mut env("reach", task_config("reach").unwrap(), envs).unwrap(), episodes, 3).unwrap();
    assert_eq!(demos.success_rate(), eval.success_rate);
    assert_eq!(demos.num_steps() as f64 / episodes as f64, eval.mean_length);
    for ep in &demos.episodes {
        assert_eq!(ep.observations.len(), ep.len() * demos.obs_dim);
        assert_eq!(ep.actions.len(), ep.len() * demos.action_dim);
    }
    // Open-loop replay of environment 0's first episode (environments are independent and
    // seeded from the batch seed, so a fresh batch reproduces it).
    let mut e = env("reach", task_config("reach").unwrap(), envs).unwrap();
    e.reset(3);
    let first =
        &demos.episodes.iter().find(|ep| ep.observations[..demos.obs_dim] == e.buffers().obs[..demos.obs_dim]).unwrap();
    let ad = demos.action_dim;
    let mut actions = vec![0.0; envs * ad];
    for t in 0..first.len() {
        assert_eq!(e.buffers().obs[..demos.obs_dim], first.observations[t * demos.obs_dim..(t + 1) * demos.obs_dim]);
        actions[..ad].copy_from_slice(&first.actions[t * ad..(t + 1) * ad]);
        e.step(&actions).unwrap();
        assert_eq!(e.buffers().reward[0], first.rewards[t], "step {t}");
    }
    assert!(e.buffers().done(0));
    assert_eq!(e.buffers().success[0] > 0.0, first.success);
}

#[test]
fn success_reward_pays_while_the_success_criterion_holds_and_needs_one() {
    use embodia_sim::rapier::expert_runs::record_expert;
    use embodia_sim::rapier::task_config::{RewardKind, RewardTerm};
    let mut config = task_config("pick-cube").unwrap();
    config.rewards = [("success".to_string(), RewardTerm::new(RewardKind::Success, 2.0))].into_iter().collect();
    let demos = record_expert(&mut env("pick-cube", config, 2).unwrap(), 2, 1).unwrap();
    for ep in &demos.episodes {
        assert!(ep.success);
        assert!(ep.rewards.iter().all(|&r| r == 0.0 || r == 2.0), "{:?}", ep.rewards);
        // Not at the goal at first; at the goal and still at the end (the episode's success).
        assert_eq!(ep.rewards[0], 0.0);
        assert_eq!(*ep.rewards.last().unwrap(), 2.0);
    }
    let mut config = task_config("pick-cube").unwrap();
    config.success = SuccessTerm::None;
    config.rewards.insert("success".into(), RewardTerm::new(RewardKind::Success, 1.0));
    let err = env("pick-cube", config, 1).err().unwrap().to_string();
    assert!(err.contains("`success` reward") && err.contains("env.success"), "{err}");
}

#[test]
fn object_grasped_reward_fires_while_the_expert_holds_the_cube() {
    use embodia_sim::rapier::expert_runs::record_expert;
    use embodia_sim::rapier::task_config::{RewardKind, RewardTerm};
    let mut config = task_config("pick-cube").unwrap();
    config.rewards = [("grasped".to_string(), RewardTerm::new(RewardKind::ObjectGrasped, 1.0))].into_iter().collect();
    let demos = record_expert(&mut env("pick-cube", config, 2).unwrap(), 2, 1).unwrap();
    for ep in &demos.episodes {
        assert!(ep.success);
        // Open gripper far from the cube at first; closed on it (carried, held) at the end.
        assert_eq!(ep.rewards[0], 0.0);
        assert_eq!(*ep.rewards.last().unwrap(), 1.0);
        let held = ep.rewards.iter().filter(|&&r| r == 1.0).count();
        assert!(held > ep.len() / 4 && held < ep.len(), "held {held} of {} steps", ep.len());
    }
    // Closed on nothing: the gripper shut with the cube elsewhere is not a grasp.
    let mut config = task_config("pick-cube").unwrap();
    config.rewards = [("grasped".to_string(), RewardTerm::new(RewardKind::ObjectGrasped, 1.0))].into_iter().collect();
    let mut e = env("pick-cube", config, 1).unwrap();
    e.reset(0);
    let ad = e.spec().num_actions();
    let mut close = vec![0.0; ad];
    close[ad - 1] = -1.0;
    for _ in 0..50 {
        e.step(&close).unwrap();
        assert_eq!(e.buffers().reward[0], 0.0);
    }
}

/// ManiSkill's place reward pays from the grasp on, the lift-gated one only once the cube is up.
#[test]
fn grasp_gated_goal_reward_pays_from_the_grasp_and_equals_the_lift_gated_one_in_the_air() {
    use embodia_sim::rapier::expert_runs::record_expert;
    use embodia_sim::rapier::task_config::{RewardKind, RewardTerm};
    let rewards_of = |kind: RewardKind| {
        let mut config = task_config("pick-cube-ee").unwrap();
        config.rewards =
            [("r".to_string(), RewardTerm::new(kind, 1.0).std(0.3).min_height(0.01))].into_iter().collect();
        record_expert(&mut env("pick-cube-ee", config, 1).unwrap(), 1, 3).unwrap().episodes.remove(0)
    };
    let grasped = rewards_of(RewardKind::ObjectGrasped);
    let by_grasp = rewards_of(RewardKind::GraspedObjectGoalDistanceTanh);
    let by_lift = rewards_of(RewardKind::ObjectGoalDistanceTanh);
    assert!(by_grasp.success && by_lift.success);
    assert_eq!(by_grasp.len(), by_lift.len(), "the expert's episode does not depend on the reward");
    let (mut before_lift, mut both) = (0, 0);
    for t in 0..by_grasp.len() {
        let (g, l) = (by_grasp.rewards[t], by_lift.rewards[t]);
        if l > 0.0 {
            assert_eq!(g, l, "step {t}: lifted, the two must agree");
            both += 1;
        } else if grasped.rewards[t] > 0.0 {
            assert!(g > 0.0, "step {t}: grasped on the table but unpaid");
            before_lift += 1;
        } else {
            assert_eq!(g, 0.0, "step {t}: neither grasped nor lifted but paid {g}");
        }
    }
    assert!(before_lift > 0 && both > 10, "grasped before the lift {before_lift} steps, lifted {both}");
    let mut config = task_config("pick-cube-ee").unwrap();
    config.action.gripper = None;
    config.observations.policy.retain(|t| t.term != ObsKind::GripperOpening);
    config.rewards =
        [("r".into(), RewardTerm::new(RewardKind::GraspedObjectGoalDistanceTanh, 1.0))].into_iter().collect();
    let err = env("pick-cube-ee", config, 1).err().expect("needs a gripper").to_string();
    assert!(err.contains("grasped_object_goal_distance_tanh") && err.contains("env.action.gripper"), "{err}");
}

#[test]
fn perturbed_recording_labels_the_clean_expert_action_and_runs_the_perturbed_one() {
    use embodia_sim::rapier::expert_runs::{record_expert, record_expert_perturbed};
    let (envs, episodes, noise) = (4, 4, 0.1);
    let config = task_config("reach").unwrap();
    let clean = record_expert(&mut env("reach", config.clone(), envs).unwrap(), episodes, 3).unwrap();
    let noisy = record_expert_perturbed(&mut env("reach", config.clone(), envs).unwrap(), episodes, 3, noise).unwrap();
    let (od, ad) = (noisy.obs_dim, noisy.action_dim);
    // reach observes its last executed action in the last `ad` columns.
    let last_action =
        |ep: &embodia_sim::demonstrations::Episode, t: usize| ep.observations[(t + 1) * od - ad..(t + 1) * od].to_vec();
    for (demos, perturbed) in [(&clean, false), (&noisy, true)] {
        let (mut sum_sq, mut count) = (0.0f64, 0usize);
        for ep in &demos.episodes {
            // The first nine tenths of the 200-step limit are perturbed, the rest is not.
            for t in 1..ep.len() {
                let label = &ep.actions[(t - 1) * ad..t * ad];
                let executed = last_action(ep, t);
                let d2: f64 = label.iter().zip(&executed).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
                if t <= 180 {
                    sum_sq += d2;
                    count += ad;
                } else {
                    assert_eq!(d2, 0.0, "the last tenth must run the expert's action (t = {t})");
                }
            }
        }
        let rms = (sum_sq / count as f64).sqrt();
        if perturbed {
            // Clamping at ±clip only shrinks the noise.
            assert!(rms > 0.5 * noise as f64 && rms < 1.2 * noise as f64, "rms perturbation {rms}");
        } else {
            assert_eq!(rms, 0.0);
        }
    }
    // Small perturbations leave the expert able to finish the task.
    assert!(noisy.success_rate() >= 0.75, "{}", noisy.success_rate());
}

#[test]
fn joint_position_tasks_say_where_the_observation_holds_what_actions_command() {
    use embodia_sim::ActionState;
    let pick = env("pick-cube", task_config("pick-cube").unwrap(), 1).unwrap();
    let states = pick.action_states();
    assert_eq!(states.len(), 8);
    // Seven arm joints (joint_pos is the first term, scale 1, action scale 1); no gripper state.
    for (k, s) in states[..7].iter().enumerate() {
        assert_eq!(*s, Some(ActionState { column: k, scale: 1.0 }));
    }
    assert_eq!(states[7], None);
    // reach: action scale 0.5, so the holding action is 2 × (q − default).
    let mut reach = env("reach", task_config("reach").unwrap(), 1).unwrap();
    reach.reset(4);
    let states = reach.action_states();
    assert!(states.iter().all(|s| s.is_some_and(|s| s.scale == 2.0)));
    // Commanding the observed positions holds the arm near where it is.
    let obs0 = reach.buffers().obs.clone();
    let hold: Vec<f32> = states.iter().map(|s| obs0[s.unwrap().column] * s.unwrap().scale).collect();
    for _ in 0..20 {
        reach.step(&hold).unwrap();
    }
    for s in states.iter().flatten() {
        let moved = (reach.buffers().obs[s.column] - obs0[s.column]).abs();
        assert!(moved < 0.05, "joint at column {} moved {moved} rad while held", s.column);
    }
    // push-t's actions move the command by a delta: no absolute state to be relative to.
    assert!(env("push-t", task_config("push-t").unwrap(), 1).unwrap().action_states().is_empty());
}

/// `VecEnv::expert_actions` labels whatever state the environments are in: stepping with its
/// labels reproduces the expert's own episodes (same successes and returns as
/// `evaluate_expert` from the same seed, over auto-resets, which restart the experts), and a
/// task without an expert says so.
#[test]
fn expert_labels_reproduce_the_expert_through_auto_resets() {
    let (envs, per_env) = (4, 2);
    let config = || task_config("pick-cube-ee").unwrap();
    let eval = evaluate_expert(&mut env("pick-cube-ee", config(), envs).unwrap(), envs * per_env, 5).unwrap();
    let mut e = env("pick-cube-ee", config(), envs).unwrap();
    e.reset(5);
    let ad = e.action_spec().bounds.dim();
    let mut labels = vec![0.0f32; envs * ad];
    let (mut ended, mut successes, mut returns) = (vec![0usize; envs], 0usize, 0.0f64);
    while ended.iter().any(|&k| k < per_env) {
        e.expert_actions(&mut labels).unwrap();
        e.step(&labels).unwrap();
        let b = e.buffers();
        for (i, ended) in ended.iter_mut().enumerate().filter(|(i, k)| **k < per_env && b.done(*i)) {
            *ended += 1;
            successes += usize::from(b.success[i] > 0.0);
            returns += f64::from(b.episode_return[i]);
        }
    }
    let episodes = (envs * per_env) as f64;
    assert!(eval.success_rate >= 0.5, "{eval:?}");
    assert_eq!(successes as f64 / episodes, eval.success_rate);
    assert!((returns / episodes - eval.mean_return).abs() < 1e-3 * eval.mean_return.abs(), "{returns} vs {eval:?}");

    let err = env("pick-cube-ee", config(), envs).unwrap().expert_actions(&mut [0.0; 3]).unwrap_err();
    assert!(matches!(err, SimError::ActionLength { .. }), "{err}");
    let mut pendulum = embodia_sim::make("pendulum", 2).unwrap();
    let err = pendulum.expert_actions(&mut [0.0; 2]).unwrap_err().to_string();
    assert!(err.contains("pendulum") && err.contains("no scripted expert"), "{err}");
}

/// An expert that starts labelling in the middle of an episode (DAgger: another policy drove
/// there) reads its phase off the scene: with the cube lifted in the hand it keeps the gripper
/// closed and carries the cube on, instead of opening to grasp anew. Pick-cube-ee's expert, and
/// the language family's on a stacking variant (carry, lower onto the other cube, let go).
#[test]
fn an_expert_taking_over_a_held_cube_finishes_the_task() {
    use embodia_sim::rapier::language::Split;
    use embodia_sim::rapier::scripted_expert::ExpertLabeler;
    let mut stack = task_config("lang-cubes-ee").unwrap();
    let language = stack.command.language.as_mut().unwrap();
    language.held_out = vec!["stack the red cube on the blue cube".into()];
    language.split = Split::HeldOut;
    for (name, config) in [("pick-cube-ee", task_config("pick-cube-ee").unwrap()), ("lang-cubes-ee", stack)] {
        let mut e = env(name, config, 1).unwrap();
        e.reset(11);
        let ad = e.action_spec().bounds.dim();
        let mut labels = vec![0.0f32; ad];
        let height = |e: &RapierEnv| {
            let scene = &e.scenes()[0];
            scene.object_pose(scene.focus()).translation.z
        };
        let rest = height(&e);
        let mut first = ExpertLabeler::new(e.spec(), e.num_envs()).unwrap();
        let mut steps = 0;
        while height(&e) < rest + 0.035 {
            first.label(e.spec(), e.scenes(), &mut labels).unwrap();
            e.step(&labels).unwrap();
            steps += 1;
            assert!(steps < 100, "{name}: the expert did not lift the cube 3.5 cm within 100 steps");
        }
        let mut second = ExpertLabeler::new(e.spec(), e.num_envs()).unwrap();
        second.label(e.spec(), e.scenes(), &mut labels).unwrap();
        assert_eq!(labels[ad - 1], -1.0, "{name}: a fresh expert over a held cube keeps the gripper closed");
        while !e.buffers().done(0) {
            e.step(&labels).unwrap();
            if !e.buffers().done(0) {
                second.label(e.spec(), e.scenes(), &mut labels).unwrap();
            }
        }
        assert!(e.buffers().success[0] > 0.0, "{name}: the expert that took over at step {steps} did not finish");
    }
}
