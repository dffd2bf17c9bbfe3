//! An episode that starts with an auto-reset (inside `step`, after a time limit) must be the
//! same episode a fresh environment would start from the same generator state: same robot
//! state, motor targets, commands, objects and observation (previous-action terms included),
//! and the same rewards under the same open-loop actions. Anything the previous episode left
//! behind (motor targets, latency buffers, forces, object velocities, contact caches) would
//! show up as a difference here.

use embodia_robots::builtin;
use embodia_sim::VecEnv;
use embodia_sim::rapier::Scene;
use embodia_sim::rapier::{RapierEnv, rapier_tasks};

fn env(name: &str, n: usize) -> RapierEnv {
    let task = rapier_tasks().into_iter().find(|t| t.info.name == name).unwrap();
    let config = (task.config)();
    let model = builtin(&config.scene.robot).unwrap();
    RapierEnv::new(task.info, config, model, n).unwrap()
}

/// Deterministic pseudo-random actions in [-1, 1], `[len]`.
fn actions(step: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let x = ((step * 7919 + i * 104_729 + 13) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Everything about a scene a policy or a reward can depend on, flattened.
fn state(scene: &Scene) -> Vec<f32> {
    let mut s = Vec::new();
    s.extend_from_slice(scene.joint_positions());
    s.extend_from_slice(scene.joint_velocities());
    s.extend_from_slice(scene.commands());
    s.extend_from_slice(&scene.target().to_array());
    for pose in scene.object_poses() {
        s.extend_from_slice(&pose.translation.to_array());
        s.extend_from_slice(&pose.rotation.to_array());
    }
    for (_, body) in scene.world().bodies.iter() {
        s.extend_from_slice(&body.linvel().to_array());
        s.extend_from_slice(&body.angvel().to_array());
        s.extend_from_slice(&body.user_force().to_array());
        s.extend_from_slice(&body.user_torque().to_array());
    }
    s
}

fn assert_close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    let (k, err) = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .enumerate()
        .fold((0, 0.0f32), |m, (k, e)| if e > m.1 { (k, e) } else { m });
    assert!(err <= tol, "{what}: index {k} differs by {err} ({} vs {})", a[k], b[k]);
}

/// Runs a full episode of random actions in `a` so that every environment auto-resets on the
/// last step, restores a fresh environment `b` from the generators `a` had just before that
/// step (the tasks draw nothing from them while stepping), and checks that both then start and
/// play out the same episode under `steps` identical actions, within `tol` (the reset states
/// differ by float rounding, ~1e-7, which contact onsets amplify for a few steps).
fn auto_reset_matches_a_fresh_reset(name: &str, n: usize, steps: usize, tol: f32) {
    let mut a = env(name, n);
    let ad = a.action_spec().bounds.dim();
    let t = a.info().max_episode_steps as usize;
    a.reset(11);
    for k in 0..t - 1 {
        a.step(&actions(k, n * ad)).unwrap();
        assert!(a.buffers().truncated.iter().all(|&d| d == 0.0), "{name}: an episode ended early at step {k}");
    }
    let snap = a.snapshot();
    a.step(&actions(t - 1, n * ad)).unwrap();
    assert!(a.buffers().truncated.iter().all(|&d| d == 1.0), "{name}: every episode ends at the time limit");
    // The previous episode really moved the robot: the check below is not vacuous.
    assert!(a.buffers().final_obs != a.buffers().obs, "{name}: final and reset observations coincide");

    let mut b = env(name, n);
    b.restore(&snap).unwrap();
    assert_close(&format!("{name}: observation after auto-reset"), &a.buffers().obs, &b.buffers().obs, 1e-5);
    for (i, (sa, sb)) in a.scenes().iter().zip(b.scenes()).enumerate() {
        assert_close(&format!("{name}: env {i} state after auto-reset"), &state(sa), &state(sb), 1e-5);
    }
    for k in 0..steps {
        let act = actions(1000 + k, n * ad);
        a.step(&act).unwrap();
        b.step(&act).unwrap();
        let (ba, bb) = (a.buffers(), b.buffers());
        assert_close(&format!("{name}: reward at step {k} after reset"), &ba.reward, &bb.reward, tol);
        assert_close(&format!("{name}: observation at step {k} after reset"), &ba.obs, &bb.obs, tol);
        assert_eq!(ba.success, bb.success, "{name}: success at step {k} after reset");
    }
}

#[test]
fn reach_auto_reset_matches_a_fresh_reset() {
    auto_reset_matches_a_fresh_reset("reach", 4, 100, 1e-5);
}

#[test]
fn pick_cube_auto_reset_matches_a_fresh_reset() {
    // Contact onsets (fingers on the cube) amplify the ~1e-7 reset rounding to ~4e-4 for a
    // few steps, decaying after; a state left over from the previous episode (a motor target,
    // the last action, a force) shows as 1e-2 or more from the first step.
    auto_reset_matches_a_fresh_reset("pick-cube", 2, 100, 2e-3);
}

/// The observations and rewards of `steps` open-loop steps from `reset(seed)`.
fn rollout(env: &mut RapierEnv, seed: u64, steps: usize) -> Vec<f32> {
    let n = env.num_envs() * env.action_spec().bounds.dim();
    env.reset(seed);
    let mut out = env.buffers().obs.clone();
    for k in 0..steps {
        env.step(&actions(k, n)).unwrap();
        out.extend_from_slice(&env.buffers().obs);
        out.extend_from_slice(&env.buffers().reward);
    }
    out
}

#[test]
fn an_explicit_reset_replays_a_seed_bit_for_bit_whatever_came_before() {
    // gymnasium's determinism check: reset(seed) after other episodes must give exactly the
    // rollout of a new environment, contacts (fingers on the cube, feet on the ground) included.
    for name in ["pick-cube", "ant-run"] {
        let mut used = env(name, 2);
        let first = rollout(&mut used, 7, 60);
        rollout(&mut used, 8, 60);
        assert!(rollout(&mut used, 7, 60) == first, "{name}: reset(7) after other episodes replays differently");
        assert!(rollout(&mut env(name, 2), 7, 60) == first, "{name}: a new environment plays seed 7 differently");
    }
}
