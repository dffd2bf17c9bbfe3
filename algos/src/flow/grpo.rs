//! GRPO's collection and advantages (group relative policy optimization, as RLinf applies it to
//! flow policies): groups of `group_size` consecutive environments start from one shared
//! initial state, every episode runs to its end, and each episode's chunk steps get its
//! return normalized within its group as their advantage. Flow PPO, DPPO, the VLA's PPO and
//! DSRL all collect through [`grpo_episodes`].

use std::time::Instant;

use embodia_sim::VecEnv;

use super::chunk_rewards::{chunk_column, step_rewards};
use super::ppo_flow_config::{PpoFlowConfig, RewardSource};
use crate::gae::standardize;
use crate::metrics::TimeSplit;
use crate::storage::FailedStateReplay;
use crate::{AlgoError, EpisodeStats, compute_gae};

/// Makes every environment of a group of `group_size` consecutive environments start from its
/// group leader's state: copies the leader's per-environment rows (physical state, episode
/// counters, generator, observation) of `snapshot` to the other members. Restoring the result
/// gives each group one initial state (rapier scenes re-reset from the copied generator).
pub fn share_initial_states(snapshot: &mut embodia_sim::EnvSnapshot, group_size: usize) {
    let n = snapshot.rng.len();
    let copy_rows = |v: &mut Vec<f64>| copy_leader_rows(v, n, group_size);
    copy_rows(&mut snapshot.state);
    copy_rows(&mut snapshot.running_return);
    copy_leader_rows(&mut snapshot.elapsed, n, group_size);
    copy_leader_rows(&mut snapshot.rng, n, group_size);
    copy_leader_rows(&mut snapshot.obs, n, group_size);
}

/// Copies row `i / group · group` of `v` (`[n, row]`, any row width, possibly empty) to row `i`.
fn copy_leader_rows<T: Clone>(v: &mut [T], n: usize, group: usize) {
    let width = v.len() / n.max(1);
    if width == 0 {
        return;
    }
    for i in 0..n {
        let leader = i / group * group;
        if leader != i {
            let (head, tail) = v.split_at_mut(i * width);
            tail[..width].clone_from_slice(&head[leader * width..(leader + 1) * width]);
        }
    }
}

/// GRPO advantages of episode `returns` (`[n]`) in groups of `group_size` consecutive
/// environments: `(R − mean) / (std + 1e-6)` with the population std of the group, or `R − mean`
/// without `divide_by_std`; `None` for every member of a group whose returns are all equal when
/// `filter_uniform` (no signal).
pub fn group_advantages(
    returns: &[f32],
    group_size: usize,
    filter_uniform: bool,
    divide_by_std: bool,
) -> Vec<Option<f32>> {
    returns
        .chunks(group_size)
        .flat_map(|group| {
            let len = group.len() as f64;
            let mean = group.iter().map(|&r| r as f64).sum::<f64>() / len;
            let std = (group.iter().map(|&r| (r as f64 - mean).powi(2)).sum::<f64>() / len).sqrt();
            let scale = if divide_by_std { std + 1e-6 } else { 1.0 };
            let uniform = group.iter().all(|&r| r == group[0]);
            group.iter().map(move |&r| (!(filter_uniform && uniform)).then(|| ((r as f64 - mean) / scale) as f32))
        })
        .collect()
}

/// What one GRPO collection ([`grpo_episodes`]) gathered besides the learner's own storage.
pub(crate) struct GrpoEpisodes {
    /// Chunk steps taken: the longest episode's.
    pub steps: usize,
    /// Rows (`step·n + env`) that enter the update: those sampled while the environment's
    /// episode ran, in groups not filtered out.
    pub used: Vec<usize>,
    /// The advantage of every chunk step of each environment's episode, `[n]`.
    pub advantages: Vec<f32>,
    /// (return, length, success) of each episode, in the order they ended.
    pub ended: Vec<(f32, u32, bool)>,
    /// The reward (`config.reward`, scaled) summed over each row's chunk while its episode ran,
    /// `[steps·n]`: what GAE over these episodes reads.
    pub chunk_rewards: Vec<f32>,
    /// 1 on the row whose chunk ended its environment's episode, else 0, `[steps·n]`.
    pub chunk_dones: Vec<f32>,
    /// Environment steps taken.
    pub env_steps: u64,
    /// Share of the groups whose returns differ.
    pub mixed_groups: f64,
    /// Rows sampled while a successful episode ran, whatever its group (`step·n + env`).
    pub successful_rows: Vec<usize>,
    /// Time spent: stepping, sampling (`sample`), computing advantages.
    pub split: TimeSplit,
}

impl GrpoEpisodes {
    /// The advantage of every row `step·n + env`, `[steps·n]`: each episode's, repeated over
    /// the chunk steps (rows outside `used` are never read).
    pub fn row_advantages(&self) -> Vec<f32> {
        self.advantages.repeat(self.steps)
    }

    /// GAE(γ, λ) over the episodes' chunk steps with `values` (`[steps·n]`, V of each row's
    /// observation): (advantages, returns), each `[steps·n]`, the advantages standardized over
    /// the `used` rows. Every episode ran to its end, so nothing is bootstrapped past it: an
    /// episode cut by the time limit counts as terminated (its final observation is gone once
    /// the environment auto-resets; with a success reward, nothing more would have come).
    pub fn gae(&self, values: &[f32], n: usize, gamma: f64, lambda: f64) -> (Vec<f32>, Vec<f32>) {
        let rows = self.chunk_rewards.len();
        let (mut advantages, mut returns) = (vec![0.0f32; rows], vec![0.0f32; rows]);
        let last_values = vec![0.0f32; n];
        compute_gae(
            &self.chunk_rewards,
            values,
            &self.chunk_dones,
            &last_values,
            n,
            gamma as f32,
            lambda as f32,
            &mut advantages,
            &mut returns,
        );
        let mut used: Vec<f32> = self.used.iter().map(|&i| advantages[i]).collect();
        standardize(&mut used);
        for (&i, a) in self.used.iter().zip(used) {
            advantages[i] = a;
        }
        (advantages, returns)
    }

    /// Adds the ended episodes to `stats`.
    pub fn push_ended(&self, stats: &mut EpisodeStats) {
        for &(ret, len, success) in &self.ended {
            stats.push(ret, len, success);
        }
    }
}

/// What a GRPO collection ([`grpo_episodes`]) reads from a learner's configuration (the
/// fields of the same names in [`crate::PpoFlowConfig`] and [`crate::DppoConfig`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GrpoSettings {
    pub group_size: usize,
    pub filter_uniform_groups: bool,
    pub equal_episode_weights: bool,
    pub replay_failed_states: f64,
    pub reward: RewardSource,
    /// [`PpoFlowConfig::success_bonus`].
    pub success_bonus: f32,
    pub reward_scale: f64,
    /// [`PpoFlowConfig::failure_progress_coef`].
    pub failure_progress: f32,
    /// [`PpoFlowConfig::divide_by_group_std`].
    pub divide_by_group_std: bool,
}

/// GRPO collection (module docs): resets `env` from `seed` so that each group of
/// `config.group_size` environments shares an initial state, then runs chunk steps until every
/// environment's episode has ended. `sample` samples one chunk for every environment from what
/// `env` observes now, stores what its learner needs (the rows of chunk step `s` are
/// `s·n + env`), and writes the chunk in environment units (`[n, C, D]`, layout `(C, D)`); its
/// second argument says which environments' episodes still run (`[n]`: the chunks of the
/// others are not used, so a sampler may skip them).
/// Each episode's chunk steps get its group-normalized return as advantage
/// ([`episode_advantages`]); chunk steps after an episode's end (the environment auto-resets and
/// runs on) and, with `filter_uniform_groups`, groups whose returns are all equal are left out.
pub(crate) fn grpo_episodes(
    env: &mut dyn VecEnv,
    config: &GrpoSettings,
    replay: &mut FailedStateReplay,
    seed: u64,
    (c, ad): (usize, usize),
    mut sample: impl FnMut(&dyn VecEnv, &[bool], &mut [f32]) -> Result<(), AlgoError>,
) -> Result<GrpoEpisodes, AlgoError> {
    let n = env.num_envs();
    let mut split = TimeSplit::default();
    let start = Instant::now();
    env.reset(seed);
    let mut snapshot = env.snapshot();
    share_initial_states(&mut snapshot, config.group_size);
    let groups = n / config.group_size;
    replay.restart_groups(
        &mut snapshot,
        config.group_size,
        (config.replay_failed_states * groups as f64).round() as usize,
    );
    env.restore(&snapshot)?;
    split.sim += start.elapsed().as_secs_f64();

    let mut env_actions = vec![0.0f32; n * c * ad];
    let mut step_actions = vec![0.0f32; n * ad];
    let mut returns = vec![0.0f32; n];
    let mut success = vec![false; n];
    let mut running = vec![true; n];
    let mut best_task_reward = vec![f32::NEG_INFINITY; n];
    let (mut used, mut ended, mut env_steps, mut step) = (Vec::new(), Vec::new(), 0u64, 0);
    let (mut chunk_rewards, mut chunk_dones) = (Vec::new(), Vec::new());
    while running.iter().any(|&r| r) {
        let start = Instant::now();
        sample(&*env, &running, &mut env_actions)?;
        used.extend((0..n).filter(|&i| running[i]).map(|i| step * n + i));
        split.inference += start.elapsed().as_secs_f64();
        let row = chunk_rewards.len();
        chunk_rewards.resize(row + n, 0.0);
        chunk_dones.resize(row + n, 0.0);
        for j in 0..c {
            chunk_column(&env_actions, j, c, ad, &mut step_actions);
            let start = Instant::now();
            env.step(&step_actions)?;
            split.sim += start.elapsed().as_secs_f64();
            env_steps += n as u64;
            let b = env.buffers();
            let scale = config.reward_scale as f32;
            for (i, reward) in step_rewards(b, config.reward, config.success_bonus).enumerate() {
                if !running[i] {
                    continue;
                }
                best_task_reward[i] = best_task_reward[i].max(b.reward[i]);
                returns[i] += reward * scale;
                chunk_rewards[row + i] += reward * scale;
                if b.done(i) {
                    running[i] = false;
                    chunk_dones[row + i] = 1.0;
                    success[i] = b.success[i] > 0.0;
                    ended.push((b.episode_return[i], b.episode_length[i], success[i]));
                }
            }
        }
        step += 1;
    }
    let start = Instant::now();
    if config.replay_failed_states > 0.0 {
        replay.record(&snapshot, config.group_size, &success);
    }
    if config.failure_progress > 0.0 {
        for i in (0..n).filter(|&i| !success[i]) {
            returns[i] += config.failure_progress * best_task_reward[i] * config.reward_scale as f32;
        }
    }
    let group_advantages =
        group_advantages(&returns, config.group_size, config.filter_uniform_groups, config.divide_by_group_std);
    let mixed = returns.chunks(config.group_size).filter(|g| g.iter().any(|&r| r != g[0])).count();
    let mixed_groups = mixed as f64 / groups.max(1) as f64;
    let advantages = episode_advantages(&group_advantages, &used, n, config.equal_episode_weights);
    let successful_rows = used.iter().copied().filter(|&idx| success[idx % n]).collect();
    used.retain(|&idx| group_advantages[idx % n].is_some());
    split.update += start.elapsed().as_secs_f64();
    Ok(GrpoEpisodes {
        steps: step,
        used,
        advantages,
        ended,
        chunk_rewards,
        chunk_dones,
        env_steps,
        mixed_groups,
        successful_rows,
        split,
    })
}

/// The advantage of every chunk step of each environment's episode, `[n]`: its group advantage
/// (0 when filtered), scaled by `L̄ / L` with `equal_weights` (`L`: the episode's chunk steps
/// among `used` rows, `L̄`: their mean over the episodes kept). Scaling the advantage scales the
/// clipped surrogate of the row by the same positive factor.
pub(crate) fn episode_advantages(
    group_advantages: &[Option<f32>],
    used: &[usize],
    n: usize,
    equal_weights: bool,
) -> Vec<f32> {
    let mut advantages: Vec<f32> = group_advantages.iter().map(|a| a.unwrap_or(0.0)).collect();
    if !equal_weights {
        return advantages;
    }
    let mut lengths = vec![0usize; n];
    for &idx in used {
        lengths[idx % n] += 1;
    }
    let kept: Vec<usize> = (0..n).filter(|&i| group_advantages[i].is_some() && lengths[i] > 0).collect();
    let mean = kept.iter().map(|&i| lengths[i] as f64).sum::<f64>() / kept.len().max(1) as f64;
    for &i in &kept {
        advantages[i] *= (mean / lengths[i] as f64) as f32;
    }
    advantages
}

impl PpoFlowConfig {
    /// The GRPO fields, for [`grpo_episodes`] (defined here so that the configuration does not
    /// depend on GRPO).
    pub(crate) fn grpo_settings(&self) -> GrpoSettings {
        GrpoSettings {
            group_size: self.group_size,
            filter_uniform_groups: self.filter_uniform_groups,
            equal_episode_weights: self.equal_episode_weights,
            replay_failed_states: self.replay_failed_states,
            reward: self.reward,
            success_bonus: self.success_bonus as f32,
            reward_scale: self.reward_scale,
            failure_progress: self.failure_progress_coef as f32,
            divide_by_group_std: self.divide_by_group_std,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_advantages_normalize_within_groups_and_filter_uniform_ones() {
        let returns = [1.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0];
        let adv = group_advantages(&returns, 4, true, true);
        let std = (0.25f64 * 0.75).sqrt();
        for (a, e) in adv[..4].iter().zip([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std]) {
            assert!((a.unwrap() as f64 - e).abs() < 1e-4, "{adv:?}");
        }
        assert!(adv[4..].iter().all(Option::is_none), "{adv:?}");
        let kept = group_advantages(&returns, 4, false, true);
        assert!(kept[4..].iter().all(|a| *a == Some(0.0)), "{kept:?}");
        let centered = group_advantages(&returns, 4, true, false);
        assert_eq!(centered[..4], [Some(0.75), Some(-0.25), Some(-0.25), Some(-0.25)]);
    }

    /// Two environments run to their episodes' ends: env 0 after two chunk steps (reward 1 on
    /// the second), env 1 after three (no reward); env 0's third row belongs to its next episode.
    #[test]
    fn gae_over_whole_episodes_stops_at_each_end_and_standardizes_the_used_rows() {
        let episodes = GrpoEpisodes {
            steps: 3,
            used: vec![0, 1, 2, 3, 5],
            advantages: vec![0.0; 2],
            ended: Vec::new(),
            chunk_rewards: vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            chunk_dones: vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
            env_steps: 0,
            mixed_groups: 1.0,
            successful_rows: vec![0, 2],
            split: TimeSplit::default(),
        };
        let values = [0.5f32; 6];
        let (advantages, returns) = episodes.gae(&values, 2, 0.9, 1.0);
        // By hand, γ 0.9, λ 1: env 0: A₁ = 1 − 0.5 = 0.5, A₀ = (0.9·0.5 − 0.5) + 0.9·0.5 = 0.4;
        // env 1: A₂ = −0.5, A₁ = (0.45 − 0.5) − 0.45 = −0.5, A₀ = −0.5. R = A + V.
        let expected = [(0, 0.9), (2, 1.0), (1, 0.0), (3, 0.0), (5, 0.0)];
        for (row, ret) in expected {
            assert!((returns[row] - ret).abs() < 1e-6, "row {row}: {} vs {ret}", returns[row]);
        }
        let raw = [0.4f64, 0.5, -0.5, -0.5, -0.5];
        let mean = raw.iter().sum::<f64>() / 5.0;
        let std = (raw.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
        for (&row, a) in [0usize, 2, 1, 3, 5].iter().zip(raw) {
            let standardized = (a - mean) / (std + 1e-5);
            assert!((f64::from(advantages[row]) - standardized).abs() < 1e-5, "row {row}");
        }
    }

    #[test]
    fn equal_episode_weights_make_each_kept_episode_count_the_same() {
        // 2 environments of one group kept, 1 filtered; env 0 ran 1 chunk step, env 1 ran 3.
        let group = [Some(1.0), Some(-1.0), None];
        let used = [0, 1, 2, 4, 5, 7, 8];
        assert_eq!(episode_advantages(&group, &used, 3, false), vec![1.0, -1.0, 0.0]);
        let weighted = episode_advantages(&group, &used, 3, true);
        // Mean length 2: env 0's single step weighs 2, env 1's three steps 2/3 each.
        assert_eq!(weighted, vec![2.0, -2.0 / 3.0, 0.0]);
        let per_episode = [weighted[0] * 1.0, weighted[1] * 3.0];
        assert!((per_episode[0] + per_episode[1]).abs() < 1e-6, "{per_episode:?}");
    }

    #[test]
    fn shared_initial_states_copy_each_group_leaders_rows() {
        let rng = |k: u8| embodia_sim::RngState { seed: [k; 32], stream: 0, word_pos: 0 };
        let mut snapshot = embodia_sim::EnvSnapshot {
            task: "t".into(),
            state: (0..8).map(f64::from).collect(),
            elapsed: vec![5, 6, 7, 8],
            running_return: Vec::new(),
            rng: (0..4).map(rng).collect(),
            obs: vec![0.0, 1.0, 2.0, 3.0],
        };
        share_initial_states(&mut snapshot, 2);
        assert_eq!(snapshot.state, [0.0, 1.0, 0.0, 1.0, 4.0, 5.0, 4.0, 5.0]);
        assert_eq!(snapshot.elapsed, [5, 5, 7, 7]);
        assert_eq!(snapshot.rng, [rng(0), rng(0), rng(2), rng(2)]);
        assert_eq!(snapshot.obs, [0.0, 0.0, 2.0, 2.0]);
    }
}
