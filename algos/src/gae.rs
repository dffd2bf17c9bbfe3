//! Generalized advantage estimation with the terminated/truncated distinction, and the
//! standardization of advantages.

/// Computes GAE(γ, λ) advantages and returns (advantage + value) in place.
///
/// All buffers are `[steps, num_envs]`, time-major. `values[t]` is V(s_t). A truncated step was
/// already bootstrapped by the caller: its reward includes `γ·V(final_obs)`, and the episode
/// boundary is cut by `dones`. `dones[t]` is 1.0 when step `t` ended an episode for any reason,
/// so no advantage flows across it; `last_values` is V of the observation after the last step.
#[allow(clippy::too_many_arguments, reason = "the buffers of GAE, each `[steps, num_envs]`")]
pub fn compute_gae(
    rewards: &[f32],
    values: &[f32],
    dones: &[f32],
    last_values: &[f32],
    num_envs: usize,
    gamma: f32,
    lambda: f32,
    advantages: &mut [f32],
    returns: &mut [f32],
) {
    let steps = rewards.len() / num_envs;
    for (e, &last_value) in last_values.iter().enumerate().take(num_envs) {
        let mut next_value = last_value;
        let mut next_advantage = 0.0f32;
        for t in (0..steps).rev() {
            let i = t * num_envs + e;
            let not_done = 1.0 - dones[i];
            let delta = rewards[i] + gamma * next_value * not_done - values[i];
            next_advantage = delta + gamma * lambda * not_done * next_advantage;
            advantages[i] = next_advantage;
            returns[i] = next_advantage + values[i];
            next_value = values[i];
        }
    }
}

/// Standardizes `xs` in place to zero mean and unit variance (population std + 1e-5).
pub(crate) fn standardize(xs: &mut [f32]) {
    let len = xs.len().max(1) as f64;
    let mean = xs.iter().map(|&a| a as f64).sum::<f64>() / len;
    let std = (xs.iter().map(|&a| (a as f64 - mean).powi(2)).sum::<f64>() / len).sqrt();
    for a in xs {
        *a = ((*a as f64 - mean) / (std + 1e-5)) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two environments, three steps. Env 0 terminates at t=1; env 1 is truncated at t=0 (its
    /// reward already carries γ·V(final_obs) = 0.9·2.0) and then runs on.
    #[test]
    fn hand_computed_example() {
        let (gamma, lambda) = (0.9f32, 0.5f32);
        let rewards = [1.0, 1.0 + 0.9 * 2.0, 2.0, 0.5, 3.0, 1.0];
        let values = [0.5, 1.0, 1.5, 0.2, 0.4, 0.3];
        let dones = [0.0, 1.0, 1.0, 0.0, 0.0, 0.0];
        let last = [10.0, 4.0];
        let mut adv = [0.0; 6];
        let mut ret = [0.0; 6];
        compute_gae(&rewards, &values, &dones, &last, 2, gamma, lambda, &mut adv, &mut ret);

        // env 0: t=2 is a fresh episode bootstrapped from last=10; t=1 terminal; t=0 flows into t=1.
        let d02 = 3.0 + 0.9 * 10.0 - 0.4;
        let d01 = 2.0 - 1.5;
        let d00 = 1.0 + 0.9 * 1.5 - 0.5;
        let a02 = d02;
        let a01 = d01;
        let a00 = d00 + 0.9 * 0.5 * a01;
        // env 1: t=0 ended (truncated), t=1 and t=2 continue and bootstrap from last=4.
        let d12 = 1.0 + 0.9 * 4.0 - 0.3;
        let d11 = 0.5 + 0.9 * 0.3 - 0.2;
        let d10 = 2.8 - 1.0;
        let a12 = d12;
        let a11 = d11 + 0.45 * a12;
        let a10 = d10;
        let expected = [a00, a10, a01, a11, a02, a12];
        for i in 0..6 {
            assert!((adv[i] - expected[i]).abs() < 1e-5, "adv[{i}] {} vs {}", adv[i], expected[i]);
            assert!((ret[i] - (expected[i] + values[i])).abs() < 1e-5);
        }
    }
}
