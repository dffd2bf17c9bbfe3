//! What a flow policy needs around it to act in a task: observation and action normalization
//! (fitted to the demonstrations), the action bounds, and the conversion of a sampled,
//! normalized chunk into the `C` environment actions that are executed.

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{FlowPolicy, FlowPolicyConfig, NoiseMethod, StochasticSteps};
use embodia_sim::ActionState;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::normalizer::Standardizer;
use crate::rng::fill_normal;
use crate::transfer::{to_host, to_tensor};
use crate::{AlgoError, Checkpoint};

/// The policy layout and the normalization a flow policy acts with; saved in checkpoints so
/// an RL run can start from an SFT run (`--init`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkActor {
    /// Layout of the policy network.
    pub policy: FlowPolicyConfig,
    /// Observation standardization, `[obs_dim]`.
    pub obs_norm: Standardizer,
    /// Action standardization, `[action_dim]` (the policy predicts standardized actions).
    pub action_norm: Standardizer,
    /// Lower action bounds of the task, `[action_dim]`.
    pub action_low: Vec<f32>,
    /// Upper action bounds of the task, `[action_dim]`.
    pub action_high: Vec<f32>,
    /// Action dimensions predicted relative to the present state (openpi's `DeltaActions`):
    /// where entry `j` is set, the policy's chunk holds `a_{t+i,j} − obs_t[column]·scale` for
    /// every step `i` of the chunk, and the executed action adds the state back. Empty: every
    /// action is absolute. `[action_dim]` or empty.
    #[serde(default)]
    pub relative: Vec<Option<ActionState>>,
    /// Where deterministic actions start the denoising chain: zero for new policies;
    /// checkpoints written before the setting existed read as the fixed draw they acted with.
    #[serde(default = "InitialNoise::before_setting")]
    pub initial_noise: InitialNoise,
}

/// The initial noise (`x_1` of a flow, `x_0` of a diffusion chain) of deterministic actions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitialNoise {
    /// One fixed draw from `N(0, I)`, the same for every row and call.
    FixedDraw,
    /// Zero, the mean of the prior: no single draw decides every decision.
    #[default]
    Zero,
}

impl InitialNoise {
    /// What actors saved before [`ChunkActor::initial_noise`] existed acted with.
    fn before_setting() -> Self {
        InitialNoise::FixedDraw
    }
}

/// Seed of the initial noise of deterministic actions.
const DETERMINISTIC_NOISE_SEED: u64 = 0x0DE7;

/// Metadata key of the [`ChunkActor`] in checkpoints.
pub const CHUNK_ACTOR_KEY: &str = "chunk_actor";

impl ChunkActor {
    /// Standardized copy of raw observations `[n, obs_dim]`.
    pub fn normalized_obs(&self, raw: &[f32]) -> Vec<f32> {
        let mut x = raw.to_vec();
        self.obs_norm.normalize(&mut x);
        x
    }

    /// The executed actions of standardized chunks `[n, H·D]` sampled for raw observations
    /// `raw_obs` (`[n, obs_dim]`): `[n, C, D]` in the task's units (see [`Self::to_env_units`]).
    pub fn env_actions(&self, raw_obs: &[f32], chunks: &[f32], out: &mut [f32]) {
        let (h, c, d) = (self.policy.horizon, self.policy.chunk, self.policy.action_dim);
        for (chunk, dst) in chunks.chunks_exact(h * d).zip(out.chunks_exact_mut(c * d)) {
            dst.copy_from_slice(&chunk[..c * d]);
        }
        self.to_env_units(raw_obs, out);
    }

    /// Standardized executed actions `[n, C, D]` chosen at raw observations `raw_obs`
    /// (`[n, obs_dim]`), in place, into the task's units: de-standardized, relative dimensions
    /// made absolute from the present state, clamped to the bounds.
    pub fn to_env_units(&self, raw_obs: &[f32], actions: &mut [f32]) {
        let (c, d, od) = (self.policy.chunk, self.policy.action_dim, self.policy.obs_dim);
        self.action_norm.denormalize(actions);
        for (chunk, obs) in actions.chunks_exact_mut(c * d).zip(raw_obs.chunks_exact(od)) {
            for action in chunk.chunks_exact_mut(d) {
                self.add_state(obs, action, 1.0);
            }
        }
        for (j, a) in actions.iter_mut().enumerate() {
            *a = a.clamp(self.action_low[j % d], self.action_high[j % d]);
        }
    }

    /// The initial noise deterministic actions start from, `[H·D]` (see [`InitialNoise`]).
    pub fn deterministic_noise(&self) -> Vec<f32> {
        let mut noise = vec![0.0f32; self.policy.chunk_width()];
        if self.initial_noise == InitialNoise::FixedDraw {
            fill_normal(&mut ChaCha8Rng::seed_from_u64(DETERMINISTIC_NOISE_SEED), &mut noise);
        }
        noise
    }

    /// Adds `sign ×` the present state (from raw `obs`, `[obs_dim]`) to the relative dimensions
    /// of one action (`[action_dim]`): `sign = −1` makes an absolute action relative.
    pub fn add_state(&self, obs: &[f32], action: &mut [f32], sign: f32) {
        for (a, state) in action.iter_mut().zip(&self.relative) {
            if let Some(s) = state {
                *a += sign * obs[s.column] * s.scale;
            }
        }
    }

    /// ODE actions of `model` (plain device) for raw `obs` (`[n, obs_dim]`) into `out`
    /// (`[n, C, D]`), from `x_1 ~ N(0, I)` (RLinf's evaluation mode: every step ODE). The noise
    /// is drawn with `sampling`; deterministic actions start from [`ChunkActor::deterministic_noise`]
    /// (the same `x_1` for every row and call), so they are a function of the observation alone.
    pub fn act(
        &self,
        model: &FlowPolicy,
        obs: &[f32],
        out: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
        device: &Device,
    ) -> Result<(), AlgoError> {
        let (od, hd, k) = (self.policy.obs_dim, self.policy.chunk_width(), self.policy.denoise_steps);
        let n = obs.len() / od;
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        match sampling {
            Some(rng) => fill_normal(rng, &mut noise[..n * hd]),
            None => {
                let first = self.deterministic_noise();
                for row in noise[..n * hd].chunks_exact_mut(hd) {
                    row.copy_from_slice(&first);
                }
            }
        }
        let normalized = to_tensor(&self.normalized_obs(obs), n, od, device);
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), device);
        let sample = model.sample(normalized, noise, NoiseMethod::Ode, StochasticSteps::None);
        self.env_actions(obs, &to_host(sample.actions)?, out);
        Ok(())
    }

    /// Reads the actor of a checkpoint and checks it against the task's observation and action
    /// widths.
    pub fn from_checkpoint(ckpt: &Checkpoint, obs_dim: usize, action_dim: usize) -> Result<Self, AlgoError> {
        let actor: Self = ckpt.get(CHUNK_ACTOR_KEY)?;
        actor.check_widths(obs_dim, action_dim)?;
        Ok(actor)
    }

    /// Fails unless the actor observes `obs_dim` features and acts in `action_dim` dimensions
    /// (its relative actions included).
    pub fn check_widths(&self, obs_dim: usize, action_dim: usize) -> Result<(), AlgoError> {
        let relative_ok = self.relative.is_empty()
            || (self.relative.len() == action_dim && self.relative.iter().flatten().all(|s| s.column < obs_dim));
        if self.policy.obs_dim != obs_dim || self.policy.action_dim != action_dim || !relative_ok {
            return Err(AlgoError::Checkpoint(format!(
                "the checkpoint's policy observes {} features and acts in {} dimensions, the task has {obs_dim} and {action_dim}",
                self.policy.obs_dim, self.policy.action_dim
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_actions_become_absolute_again_when_executed() {
        let policy =
            FlowPolicyConfig { obs_dim: 3, action_dim: 2, horizon: 3, chunk: 2, ..FlowPolicyConfig::default() };
        let actor = ChunkActor {
            policy,
            obs_norm: Standardizer::fit(&[-1.0, -1.0, -1.0, 1.0, 1.0, 1.0], 3, 0.01),
            // Mean 0.5, std 2: the chunk is standardized as the policy predicts it.
            action_norm: Standardizer::fit(&[-1.5, -1.5, 2.5, 2.5], 2, 0.01),
            action_low: vec![-1.0, -1.0],
            action_high: vec![1.0, 1.0],
            relative: vec![Some(ActionState { column: 1, scale: 2.0 }), None],
            initial_noise: InitialNoise::FixedDraw,
        };
        let obs = [0.7, 0.2, -0.4];
        let absolute = [0.5, -0.3, 0.6, 0.1, 0.9, 2.0];
        let mut chunk = absolute;
        for action in chunk.chunks_exact_mut(2) {
            actor.add_state(&obs, action, -1.0);
        }
        // Dimension 0 is relative to 2 × obs[1] = 0.4, dimension 1 is absolute.
        assert!((chunk[0] - 0.1).abs() < 1e-6 && chunk[1] == -0.3 && (chunk[2] - 0.2).abs() < 1e-6);

        // Deterministic actions start from zero unless told to start from one fixed draw;
        // actors saved before the setting existed read as the fixed draw they acted with.
        assert_eq!(InitialNoise::default(), InitialNoise::Zero);
        let draw = actor.deterministic_noise();
        assert!(draw.len() == 6 && draw.iter().all(|v| *v != 0.0) && draw == actor.deterministic_noise());
        let zero = ChunkActor { initial_noise: InitialNoise::Zero, ..actor.clone() };
        assert_eq!(zero.deterministic_noise(), vec![0.0; 6]);
        let mut saved = serde_json::to_value(&actor).unwrap();
        saved.as_object_mut().unwrap().remove("initial_noise");
        assert_eq!(serde_json::from_value::<ChunkActor>(saved).unwrap(), actor);
        actor.action_norm.normalize(&mut chunk);
        let mut out = [0.0f32; 4];
        actor.env_actions(&obs, &chunk, &mut out);
        for (o, a) in out.iter().zip(&absolute[..4]) {
            assert!((o - a).abs() < 1e-6, "{out:?} vs {absolute:?}");
        }
    }
}
