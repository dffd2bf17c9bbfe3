//! A chunk step's reward from its primitive steps: the learners that act in action chunks
//! (Flow PPO, DPPO, the VLA's) see one decision per chunk, and read the environment's
//! per-step buffers through here.

use super::ppo_flow_config::RewardSource;

/// Chunk-level rewards and dones of one chunk step from its `C` primitive steps: the reward is
/// the sum of the rewards up to and including the first end of episode, a truncation (not also
/// a termination) adds `γ·V(s_trunc)`, and the step is done if any primitive step ended.
/// `rewards`, `terminated`, `truncated`, `trunc_values`: `[C, n]`; writes `[n]`.
pub fn chunk_rewards(
    rewards: &[f32],
    terminated: &[f32],
    truncated: &[f32],
    trunc_values: &[f32],
    gamma: f32,
    out_rewards: &mut [f32],
    out_dones: &mut [f32],
) {
    let n = out_rewards.len();
    out_rewards.fill(0.0);
    out_dones.fill(0.0);
    for c in 0..rewards.len() / n {
        for i in 0..n {
            if out_dones[i] > 0.0 {
                continue;
            }
            let k = c * n + i;
            out_rewards[i] += rewards[k];
            if terminated[k] > 0.0 {
                out_dones[i] = 1.0;
            } else if truncated[k] > 0.0 {
                out_rewards[i] += gamma * trunc_values[k];
                out_dones[i] = 1.0;
            }
        }
    }
}

/// Rewards `[n]` of the last step from `source`, plus `success_bonus` where the task's success
/// criterion holds.
pub(crate) fn step_rewards(
    b: &embodia_sim::StepBuffers,
    source: RewardSource,
    success_bonus: f32,
) -> impl Iterator<Item = f32> + '_ {
    let rewards = match source {
        RewardSource::Task => &b.reward,
        RewardSource::Success => &b.success,
    };
    rewards.iter().zip(&b.success).map(move |(&r, &s)| r + success_bonus * s)
}

/// Copies chunk step `j` of `chunks` (`[n, C, D]`) into `out` (`[n, D]`).
pub(crate) fn chunk_column(chunks: &[f32], j: usize, c: usize, d: usize, out: &mut [f32]) {
    for (i, row) in out.chunks_mut(d).enumerate() {
        row.copy_from_slice(&chunks[(i * c + j) * d..(i * c + j + 1) * d]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute_gae;

    #[test]
    fn the_success_bonus_is_paid_exactly_where_success_holds() {
        let mut b = embodia_sim::StepBuffers::new(3, 1);
        b.reward.copy_from_slice(&[1.0, 2.0, 3.0]);
        b.success.copy_from_slice(&[0.0, 1.0, 0.0]);
        let task: Vec<f32> = step_rewards(&b, RewardSource::Task, 10.0).collect();
        assert_eq!(task, [1.0, 12.0, 3.0]);
        let success: Vec<f32> = step_rewards(&b, RewardSource::Success, 0.0).collect();
        assert_eq!(success, [0.0, 1.0, 0.0]);
    }

    /// Two environments, chunks of C = 2, three chunk steps. Env 0 terminates in the first
    /// primitive step of chunk 1 (the chunk's remaining reward is dropped); env 1 is truncated
    /// at the end of chunk 0 (bootstrapped with γ·V(s_trunc) = 0.9·5).
    #[test]
    fn chunk_rewards_and_gae_match_a_hand_computed_example() {
        let gamma = 0.9f32;
        let lambda = 0.5f32;
        // [step][c][env]
        let rewards = [[[1.0, 0.5], [1.0, 0.5]], [[2.0, 1.0], [3.0, 1.0]], [[0.0, 0.0], [1.0, 2.0]]];
        let terminated = [[[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]];
        let truncated = [[[0.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]];
        let trunc_values = [[[0.0, 0.0], [0.0, 5.0]], [[0.0; 2]; 2], [[0.0; 2]; 2]];
        let flat = |x: &[[f32; 2]; 2]| x.iter().flatten().copied().collect::<Vec<f32>>();
        let (mut r, mut d) = (Vec::new(), Vec::new());
        for s in 0..3 {
            let (mut rs, mut ds) = ([0.0; 2], [0.0; 2]);
            chunk_rewards(
                &flat(&rewards[s]),
                &flat(&terminated[s]),
                &flat(&truncated[s]),
                &flat(&trunc_values[s]),
                gamma,
                &mut rs,
                &mut ds,
            );
            r.extend(rs);
            d.extend(ds);
        }
        assert_eq!(r, vec![2.0, 1.0 + 0.9 * 5.0, 2.0, 2.0, 1.0, 2.0]);
        assert_eq!(d, vec![0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);

        let values = [0.5, 1.0, 1.5, 0.2, 0.4, 0.3];
        let last = [10.0, 4.0];
        let (mut adv, mut ret) = ([0.0; 6], [0.0; 6]);
        compute_gae(&r, &values, &d, &last, 2, gamma, lambda, &mut adv, &mut ret);
        // env 0: step 1 terminal; step 2 starts a new episode and bootstraps from 10.
        let a02 = 1.0 + 0.9 * 10.0 - 0.4;
        let a01 = 2.0 - 1.5;
        let a00 = (2.0 + 0.9 * 1.5 - 0.5) + 0.9 * 0.5 * a01;
        // env 1: step 0 truncated (bootstrap already in the reward); steps 1, 2 continue.
        let a12 = 2.0 + 0.9 * 4.0 - 0.3;
        let a11 = (2.0 + 0.9 * 0.3 - 0.2) + 0.45 * a12;
        let a10 = 5.5 - 1.0;
        for (got, want) in adv.iter().zip([a00, a10, a01, a11, a02, a12]) {
            assert!((got - want).abs() < 1e-5, "{adv:?}");
        }
    }
}
