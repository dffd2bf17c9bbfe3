//! GAE's collection for chunk policies, shared by Flow PPO and DPPO: `chunk_steps` chunk steps
//! from every environment, each executing a sampled chunk's `C` actions; its reward is theirs
//! summed up to the first end of episode, a truncation bootstraps `γ·V(s_trunc)`
//! ([`chunk_rewards`]); then GAE(γ, λ) over the chunk steps (γ per chunk, not γ^C), advantages
//! standardized. Environments auto-reset, so every row enters the update.

use std::time::Instant;

use embodia_sim::VecEnv;

use super::chunk_rewards::{chunk_column, chunk_rewards, step_rewards};
use super::ppo_flow_config::RewardSource;
use crate::data_parallel::standardize;
use crate::metrics::TimeSplit;
use crate::{AlgoError, EpisodeStats, compute_gae};

/// What a GAE collection reads from a learner's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GaeSettings {
    /// Chunk steps per environment.
    pub chunk_steps: usize,
    /// Discount per chunk step.
    pub gamma: f64,
    /// GAE's λ.
    pub lambda: f64,
    /// Which buffer is the reward.
    pub reward: RewardSource,
    /// Added to the reward where the task's success criterion holds.
    pub success_bonus: f32,
    /// Factor on every reward.
    pub reward_scale: f64,
}

/// The learner's side of a collection.
pub(crate) trait ChunkSampler {
    /// Samples one chunk for every environment from raw observations `obs` (`[n, obs_dim]`),
    /// stores what the learner's update needs (its value estimates `V(s)`, `[n]`, among them),
    /// and writes the chunk in environment units to `env_actions` (`[n, C, D]`).
    fn sample_chunk(&mut self, obs: &[f32], env_actions: &mut [f32]) -> Result<(), AlgoError>;
    /// `V` of raw observations `[m, obs_dim]`, `[m]`.
    fn values(&mut self, obs: &[f32]) -> Result<Vec<f32>, AlgoError>;
    /// Where ended episodes are counted.
    fn episodes(&mut self) -> &mut EpisodeStats;
}

/// What a collection gathered: per row `step·n + env` (`[steps·n]`), the chunk reward and
/// whether the chunk ended its episode; `V` of the last observation (`[n]`); the environment
/// steps taken and the time split.
pub(crate) struct GaeSteps {
    pub rewards: Vec<f32>,
    pub dones: Vec<f32>,
    pub last_values: Vec<f32>,
    pub env_steps: u64,
    pub split: TimeSplit,
}

impl GaeSteps {
    /// GAE over the rows with `values` (`[steps·n]`, the sampler's `V(s)` of each row):
    /// (advantages standardized over all rows, returns), each `[steps·n]`.
    pub fn advantages(&self, values: &[f32], n: usize, settings: &GaeSettings) -> (Vec<f32>, Vec<f32>) {
        let len = self.rewards.len();
        let (mut advantages, mut returns) = (vec![0.0f32; len], vec![0.0f32; len]);
        let (gamma, lambda) = (settings.gamma as f32, settings.lambda as f32);
        compute_gae(
            &self.rewards,
            values,
            &self.dones,
            &self.last_values,
            n,
            gamma,
            lambda,
            &mut advantages,
            &mut returns,
        );
        standardize(&mut advantages);
        (advantages, returns)
    }
}

/// Runs `settings.chunk_steps` chunk steps of `sampler`'s chunks in `env` (its observation
/// width `od`, chunks of `c` actions of `ad` values).
pub(crate) fn collect_chunk_steps(
    env: &mut dyn VecEnv,
    settings: &GaeSettings,
    (od, ad, c): (usize, usize, usize),
    sampler: &mut dyn ChunkSampler,
) -> Result<GaeSteps, AlgoError> {
    let n = env.num_envs();
    let gamma = settings.gamma as f32;
    let scale = settings.reward_scale as f32;
    let mut split = TimeSplit::default();
    let mut env_actions = vec![0.0f32; n * c * ad];
    let mut step_actions = vec![0.0f32; n * ad];
    let (mut rewards, mut dones) = (vec![0.0f32; n], vec![0.0f32; n]);
    // The primitive steps of one chunk step, `[C, n]`.
    let (mut step_reward, mut terminated, mut truncated, mut trunc_values) = (vec![], vec![], vec![], vec![]);
    let mut out = GaeSteps { rewards: Vec::new(), dones: Vec::new(), last_values: Vec::new(), env_steps: 0, split };
    for _ in 0..settings.chunk_steps {
        let start = Instant::now();
        let obs = env.buffers().obs.clone();
        sampler.sample_chunk(&obs, &mut env_actions)?;
        split.inference += start.elapsed().as_secs_f64();
        for buf in [&mut step_reward, &mut terminated, &mut truncated, &mut trunc_values] {
            buf.clear();
        }
        for j in 0..c {
            chunk_column(&env_actions, j, c, ad, &mut step_actions);
            let start = Instant::now();
            env.step(&step_actions)?;
            split.sim += start.elapsed().as_secs_f64();
            out.env_steps += n as u64;
            let b = env.buffers();
            sampler.episodes().push_ended(b);
            step_reward.extend(step_rewards(b, settings.reward, settings.success_bonus).map(|r| r * scale));
            terminated.extend_from_slice(&b.terminated);
            truncated.extend_from_slice(&b.truncated);
            let base = trunc_values.len();
            trunc_values.resize(base + n, 0.0);
            // Truncated, not terminated: bootstrap from V(final_obs) (empty, so allocation-free,
            // on the steps where no episode was cut).
            let cut: Vec<usize> = (0..n).filter(|&i| b.truncated[i] > 0.0 && b.terminated[i] == 0.0).collect();
            if !cut.is_empty() {
                let start = Instant::now();
                let final_obs: Vec<f32> =
                    cut.iter().flat_map(|&i| b.final_obs[i * od..(i + 1) * od].iter().copied()).collect();
                let v = sampler.values(&final_obs)?;
                for (&i, v) in cut.iter().zip(v) {
                    trunc_values[base + i] = v;
                }
                split.inference += start.elapsed().as_secs_f64();
            }
        }
        chunk_rewards(&step_reward, &terminated, &truncated, &trunc_values, gamma, &mut rewards, &mut dones);
        out.rewards.extend_from_slice(&rewards);
        out.dones.extend_from_slice(&dones);
    }
    let start = Instant::now();
    let obs = env.buffers().obs.clone();
    out.last_values = sampler.values(&obs)?;
    split.inference += start.elapsed().as_secs_f64();
    out.split = split;
    Ok(out)
}

impl super::PpoFlowConfig {
    /// The GAE fields, for [`collect_chunk_steps`].
    pub(crate) fn gae_settings(&self) -> GaeSettings {
        GaeSettings {
            chunk_steps: self.chunk_steps,
            gamma: self.gamma,
            lambda: self.lambda,
            reward: self.reward,
            success_bonus: self.success_bonus as f32,
            reward_scale: self.reward_scale,
        }
    }
}

impl super::DppoConfig {
    /// The GAE fields, for [`collect_chunk_steps`].
    pub(crate) fn gae_settings(&self) -> GaeSettings {
        GaeSettings {
            chunk_steps: self.chunk_steps,
            gamma: self.gamma,
            lambda: self.lambda,
            reward: self.reward,
            success_bonus: 0.0,
            reward_scale: self.reward_scale,
        }
    }
}
