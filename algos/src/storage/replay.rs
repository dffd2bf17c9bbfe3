//! Uniform replay buffer of transitions for off-policy learners.

use rand::Rng;

use crate::{AlgoError, Checkpoint};

/// A ring buffer of `(obs, action, reward, next_obs, terminated)` transitions. Columns are
/// contiguous `[capacity, dim]` f32 arrays; sampling fills caller-owned batch buffers.
#[derive(Debug, Clone)]
pub struct ReplayBuffer {
    obs_dim: usize,
    action_dim: usize,
    capacity: usize,
    len: usize,
    next: usize,
    obs: Vec<f32>,
    actions: Vec<f32>,
    rewards: Vec<f32>,
    next_obs: Vec<f32>,
    terminated: Vec<f32>,
}

/// One sampled mini-batch, `[batch, dim]` per column. Reused across samples.
#[derive(Debug, Clone, Default)]
pub struct TransitionBatch {
    /// Observations, `[batch, obs_dim]`.
    pub obs: Vec<f32>,
    /// Actions as stored, `[batch, action_dim]`.
    pub actions: Vec<f32>,
    /// Rewards, `[batch]`.
    pub rewards: Vec<f32>,
    /// Next observations (the final observation for truncated episodes), `[batch, obs_dim]`.
    pub next_obs: Vec<f32>,
    /// 1.0 where the transition entered a terminal state, `[batch]`.
    pub terminated: Vec<f32>,
}

impl ReplayBuffer {
    /// An empty buffer holding at most `capacity` transitions. Memory grows as it fills.
    pub fn new(obs_dim: usize, action_dim: usize, capacity: usize) -> Self {
        Self {
            obs_dim,
            action_dim,
            capacity,
            len: 0,
            next: 0,
            obs: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            next_obs: Vec::new(),
            terminated: Vec::new(),
        }
    }

    /// Transitions stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one transition, overwriting the oldest when full.
    pub fn push(&mut self, obs: &[f32], action: &[f32], reward: f32, next_obs: &[f32], terminated: f32) {
        let (od, ad, i) = (self.obs_dim, self.action_dim, self.next);
        if self.len < self.capacity && i == self.rewards.len() {
            self.obs.extend_from_slice(obs);
            self.actions.extend_from_slice(action);
            self.rewards.push(reward);
            self.next_obs.extend_from_slice(next_obs);
            self.terminated.push(terminated);
        } else {
            self.obs[i * od..(i + 1) * od].copy_from_slice(obs);
            self.actions[i * ad..(i + 1) * ad].copy_from_slice(action);
            self.rewards[i] = reward;
            self.next_obs[i * od..(i + 1) * od].copy_from_slice(next_obs);
            self.terminated[i] = terminated;
        }
        self.next = (i + 1) % self.capacity;
        self.len = (self.len + 1).min(self.capacity);
    }

    /// Fills `batch` with `size` transitions drawn uniformly with replacement.
    pub fn sample(&self, rng: &mut impl Rng, size: usize, batch: &mut TransitionBatch) {
        let (od, ad) = (self.obs_dim, self.action_dim);
        batch.obs.resize(size * od, 0.0);
        batch.actions.resize(size * ad, 0.0);
        batch.rewards.resize(size, 0.0);
        batch.next_obs.resize(size * od, 0.0);
        batch.terminated.resize(size, 0.0);
        self.sample_rows(rng, 0..size, batch);
    }

    /// Overwrites rows `rows` of `batch` (already that large) with transitions drawn uniformly
    /// with replacement: how a batch mixes two buffers.
    pub fn sample_rows(&self, rng: &mut impl Rng, rows: std::ops::Range<usize>, batch: &mut TransitionBatch) {
        let (od, ad) = (self.obs_dim, self.action_dim);
        for b in rows {
            let i = rng.random_range(0..self.len);
            batch.obs[b * od..(b + 1) * od].copy_from_slice(&self.obs[i * od..(i + 1) * od]);
            batch.actions[b * ad..(b + 1) * ad].copy_from_slice(&self.actions[i * ad..(i + 1) * ad]);
            batch.rewards[b] = self.rewards[i];
            batch.next_obs[b * od..(b + 1) * od].copy_from_slice(&self.next_obs[i * od..(i + 1) * od]);
            batch.terminated[b] = self.terminated[i];
        }
    }

    /// Stores the buffer's contents under `replay.` in `ckpt`.
    pub fn save(&self, ckpt: &mut Checkpoint) -> Result<(), AlgoError> {
        let (n, od, ad) = (self.rewards.len(), self.obs_dim, self.action_dim);
        for (name, data, dim) in [
            ("obs", &self.obs, od),
            ("actions", &self.actions, ad),
            ("rewards", &self.rewards, 1),
            ("next_obs", &self.next_obs, od),
            ("terminated", &self.terminated, 1),
        ] {
            ckpt.tensors.insert(format!("replay.{name}"), (vec![n, dim], data.clone()));
        }
        ckpt.put("replay_cursor", &(self.len, self.next))
    }

    /// Restores contents saved by [`ReplayBuffer::save`].
    pub fn load(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        let (len, next): (usize, usize) = ckpt.get("replay_cursor")?;
        let take = |name: &str, dim: usize| -> Result<Vec<f32>, AlgoError> {
            let key = format!("replay.{name}");
            let (shape, data) =
                ckpt.tensors.get(&key).ok_or_else(|| AlgoError::Checkpoint(format!("missing `{key}`")))?;
            if shape.len() != 2 || shape[1] != dim || data.len() != shape[0] * dim || shape[0] > self.capacity {
                return Err(AlgoError::Checkpoint(format!(
                    "`{key}` has shape {shape:?}, expected [≤{}, {dim}]",
                    self.capacity
                )));
            }
            Ok(data.clone())
        };
        let (od, ad) = (self.obs_dim, self.action_dim);
        let (obs, actions, rewards, next_obs, terminated) = (
            take("obs", od)?,
            take("actions", ad)?,
            take("rewards", 1)?,
            take("next_obs", od)?,
            take("terminated", 1)?,
        );
        if len != rewards.len() || next >= self.capacity.max(1) || obs.len() != len * od {
            return Err(AlgoError::Checkpoint("replay buffer cursor does not match its contents".into()));
        }
        *self = Self { obs, actions, rewards, next_obs, terminated, len, next, ..self.clone() };
        Ok(())
    }
}
