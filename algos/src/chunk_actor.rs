//! What a flow policy needs around it to act in a task: observation and action normalization
//! (fitted to the demonstrations), the action bounds, and the conversion of a sampled,
//! normalized chunk into the `C` environment actions that are executed.

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{FlowPolicy, FlowPolicyConfig, NoiseMethod, StochasticSteps};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::learner::{fill_normal, to_host, to_tensor};
use crate::normalizer::Standardizer;
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

    /// The executed actions of standardized chunks `[n, H·D]`: `[n, C, D]` in the task's units,
    /// clamped to its bounds.
    pub fn env_actions(&self, chunks: &[f32], out: &mut [f32]) {
        let (h, c, d) = (self.policy.horizon, self.policy.chunk, self.policy.action_dim);
        for (chunk, dst) in chunks.chunks_exact(h * d).zip(out.chunks_exact_mut(c * d)) {
            dst.copy_from_slice(&chunk[..c * d]);
        }
        self.to_env_units(out);
    }

    /// Standardized executed actions `[n, C, D]`, in place, into the task's units, clamped to
    /// its bounds.
    pub fn to_env_units(&self, actions: &mut [f32]) {
        let d = self.policy.action_dim;
        self.action_norm.denormalize(actions);
        for (j, a) in actions.iter_mut().enumerate() {
            *a = a.clamp(self.action_low[j % d], self.action_high[j % d]);
        }
    }

    /// The one draw `x_1 ~ N(0, I)`, `[H·D]`, that deterministic actions start from.
    pub fn deterministic_noise(&self) -> Vec<f32> {
        let mut noise = vec![0.0f32; self.policy.chunk_width()];
        fill_normal(&mut ChaCha8Rng::seed_from_u64(DETERMINISTIC_NOISE_SEED), &mut noise);
        noise
    }

    /// ODE actions of `model` (plain device) for raw `obs` (`[n, obs_dim]`) into `out`
    /// (`[n, C, D]`), from `x_1 ~ N(0, I)` (RLinf's evaluation mode: every step ODE). The noise
    /// is drawn with `sampling`; deterministic actions use one fixed draw (the same `x_1` for
    /// every row and call), so they are a function of the observation alone. Starting from
    /// `x_1 = 0` instead would query the velocity field far from where training and RL put
    /// `x_1` (norm ≈ √(H·D)).
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
        let obs = to_tensor(&self.normalized_obs(obs), n, od, device);
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), device);
        let sample = model.sample(obs, noise, NoiseMethod::Ode, StochasticSteps::None);
        self.env_actions(&to_host(sample.actions)?, out);
        Ok(())
    }

    /// Reads the actor of a checkpoint and checks it against the task's observation and action
    /// widths.
    pub fn from_checkpoint(ckpt: &Checkpoint, obs_dim: usize, action_dim: usize) -> Result<Self, AlgoError> {
        let actor: Self = ckpt.get(CHUNK_ACTOR_KEY)?;
        if actor.policy.obs_dim != obs_dim || actor.policy.action_dim != action_dim {
            return Err(AlgoError::Checkpoint(format!(
                "the checkpoint's policy observes {} features and acts in {} dimensions, the task has {obs_dim} and {action_dim}",
                actor.policy.obs_dim, actor.policy.action_dim
            )));
        }
        Ok(actor)
    }
}
