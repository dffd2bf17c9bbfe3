//! [`TensorEnv`]: a [`VecEnv`] whose state is a set of device tensors.
//!
//! Random draws (initial states, randomization, observation noise) come from the device's
//! generator, which `reset(seed)` seeds: the same seed gives the same rollout only while no
//! other user of that device draws random numbers in between (tests serialize on a lock).

use super::batch::{BatchTask, Col};
use crate::{ActionSpec, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};
use burn::tensor::{Bool, Device, Tensor, TensorData};

/// Results of [`TensorVecEnv::step_tensor`], on the device. Same meaning as the fields of
/// [`StepBuffers`]; flags are 0.0/1.0.
#[derive(Debug, Clone)]
pub struct TensorStep {
    /// Observation to act on next, `[num_envs, obs_dim]`.
    pub obs: Tensor<2>,
    /// Observation before any auto-reset, `[num_envs, obs_dim]`.
    pub final_obs: Tensor<2>,
    /// Reward, `[num_envs]`.
    pub reward: Tensor<1>,
    /// Terminal state reached, `[num_envs]`.
    pub terminated: Tensor<1>,
    /// Time limit reached, `[num_envs]`.
    pub truncated: Tensor<1>,
    /// Success criterion held, `[num_envs]`.
    pub success: Tensor<1>,
    /// Return of the episode that ended here, else 0, `[num_envs]`.
    pub episode_return: Tensor<1>,
    /// Length of the episode that ended here, else 0, `[num_envs]`.
    pub episode_length: Tensor<1>,
}

/// A [`VecEnv`] that also steps with device tensors, never touching the host.
pub trait TensorVecEnv: VecEnv {
    /// The device the state lives on.
    fn device(&self) -> &Device;
    /// The observation to act on, `[num_envs, obs_dim]`, on the device.
    fn obs_tensor(&self) -> Tensor<2>;
    /// Steps with `actions`, `[num_envs, action_dim]` on the device, and auto-resets ended
    /// episodes. [`VecEnv::buffers`] is not updated (it still holds the last host step).
    /// Errors with [`SimError::ActionLength`] on a wrong shape; actions are not checked for
    /// finiteness (that would need a device sync).
    fn step_tensor(&mut self, actions: Tensor<2>) -> Result<TensorStep, SimError>;
}

/// A batch of `num_envs` environments of the batched task `T` on one device.
pub struct TensorEnv<T: BatchTask> {
    task: T,
    device: Device,
    num_envs: usize,
    obs_spec: ObsSpec,
    action_spec: ActionSpec,
    state: Vec<Col>,
    /// Steps taken in the current episode (float for arithmetic with the state), `[num_envs]`.
    elapsed: Col,
    running_return: Col,
    obs: Tensor<2>,
    buffers: StepBuffers,
}

impl<T: BatchTask> std::fmt::Debug for TensorEnv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorEnv").field("task", &self.task.info().name).field("num_envs", &self.num_envs).finish()
    }
}

impl<T: BatchTask> TensorEnv<T> {
    /// `num_envs` environments of `task` on `device`, reset with seed 0. Errors with
    /// [`SimError::ZeroEnvs`].
    pub fn new(task: T, num_envs: usize, device: &Device) -> Result<Self, SimError> {
        if num_envs == 0 {
            return Err(SimError::ZeroEnvs);
        }
        let od = task.obs_spec().vector.dim();
        let zeros = Tensor::<1>::zeros([num_envs], device);
        let mut env = Self {
            obs_spec: task.obs_spec(),
            action_spec: task.action_spec(),
            state: Vec::new(),
            elapsed: zeros.clone(),
            running_return: zeros,
            obs: Tensor::zeros([num_envs, od], device),
            buffers: StepBuffers::new(num_envs, od),
            device: device.clone(),
            num_envs,
            task,
        };
        env.reset(0);
        Ok(env)
    }

    fn stack(columns: Vec<Col>) -> Tensor<2> {
        Tensor::stack(columns, 1)
    }

    fn obs_dim(&self) -> usize {
        self.obs_spec.vector.dim()
    }

    /// `mask` `[num_envs]` broadcast over `cols` columns.
    fn rows(&self, mask: &Tensor<1, Bool>, cols: usize) -> Tensor<2, Bool> {
        mask.clone().reshape([self.num_envs, 1]).expand([self.num_envs, cols])
    }
}

impl<T: BatchTask> TensorVecEnv for TensorEnv<T> {
    fn device(&self) -> &Device {
        &self.device
    }

    fn obs_tensor(&self) -> Tensor<2> {
        self.obs.clone()
    }

    fn step_tensor(&mut self, actions: Tensor<2>) -> Result<TensorStep, SimError> {
        let (n, ad) = (self.num_envs, self.action_spec.bounds.dim());
        let [rows, cols] = actions.dims();
        if rows != n || cols != ad {
            return Err(SimError::ActionLength { expected: n * ad, got: rows * cols });
        }
        let columns = (0..ad).map(|j| actions.clone().narrow(1, j, 1).reshape([n])).collect();
        let out = self.task.step(std::mem::take(&mut self.state), columns, &self.elapsed);
        let after = self.elapsed.clone() + 1.0;
        let truncated = after.clone().greater_equal_elem(self.task.info().max_episode_steps as f32);
        let done = out.terminated.clone().bool_or(truncated.clone());
        let total = self.running_return.clone() + out.reward.clone();
        let final_obs = Self::stack(self.task.observe(&out.state, &after));

        let fresh = self.task.sample_initial(n, &self.device);
        let zero = after.zeros_like();
        let fresh_obs = Self::stack(self.task.observe(&fresh, &zero));
        self.state = out.state.into_iter().zip(fresh).map(|(s, f)| s.mask_where(done.clone(), f)).collect();
        let done_f = done.clone().float();
        let episode_return = total.clone() * done_f.clone();
        let episode_length = after.clone() * done_f;
        self.running_return = total.mask_fill(done.clone(), 0.0);
        self.elapsed = after.mask_fill(done.clone(), 0.0);
        self.obs = final_obs.clone().mask_where(self.rows(&done, self.obs_dim()), fresh_obs);
        Ok(TensorStep {
            obs: self.obs.clone(),
            final_obs,
            reward: out.reward,
            terminated: out.terminated.float(),
            truncated: truncated.float(),
            success: out.success.float(),
            episode_return,
            episode_length,
        })
    }
}

impl<T: BatchTask> VecEnv for TensorEnv<T> {
    fn info(&self) -> &TaskInfo {
        self.task.info()
    }

    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn obs_spec(&self) -> &ObsSpec {
        &self.obs_spec
    }

    fn action_spec(&self) -> &ActionSpec {
        &self.action_spec
    }

    fn reset(&mut self, seed: u64) {
        self.device.seed(seed);
        self.state = self.task.sample_initial(self.num_envs, &self.device);
        self.elapsed = Tensor::zeros([self.num_envs], &self.device);
        self.running_return = self.elapsed.clone();
        self.obs = Self::stack(self.task.observe(&self.state, &self.elapsed));
        let obs: Vec<f32> = self.obs.to_data().convert::<f32>().try_into_vec::<f32>().expect("f32 observations");
        let od = self.obs_dim();
        self.buffers = StepBuffers::new(self.num_envs, od);
        self.buffers.obs.copy_from_slice(&obs);
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        let (n, ad, od) = (self.num_envs, self.action_spec.bounds.dim(), self.obs_dim());
        if actions.len() != n * ad {
            return Err(SimError::ActionLength { expected: n * ad, got: actions.len() });
        }
        if let Some(k) = actions.iter().position(|a| !a.is_finite()) {
            return Err(SimError::NonFiniteAction { env: k / ad, index: k % ad });
        }
        let actions = Tensor::from_data(TensorData::new(actions.to_vec(), [n, ad]), &self.device);
        let s = self.step_tensor(actions)?;
        // One transfer: [obs | final_obs | reward, terminated, truncated, success, return, length].
        let columns = [s.reward, s.terminated, s.truncated, s.success, s.episode_return, s.episode_length];
        let mut parts = vec![s.obs, s.final_obs];
        parts.extend(columns.into_iter().map(|c| c.reshape([n, 1])));
        let host: Vec<f32> =
            Tensor::cat(parts, 1).into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 results");
        let width = 2 * od + 6;
        let b = &mut self.buffers;
        for (i, row) in host.chunks_exact(width).enumerate() {
            b.obs[i * od..(i + 1) * od].copy_from_slice(&row[..od]);
            b.final_obs[i * od..(i + 1) * od].copy_from_slice(&row[od..2 * od]);
            let r = &row[2 * od..];
            b.reward[i] = r[0];
            b.terminated[i] = r[1];
            b.truncated[i] = r[2];
            b.success[i] = r[3];
            b.episode_return[i] = r[4];
            b.episode_length[i] = r[5] as u32;
        }
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }

    fn snapshot(&self) -> EnvSnapshot {
        let n = self.num_envs;
        let host =
            |t: Tensor<2>| -> Vec<f32> { t.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 state") };
        let state = host(Tensor::stack(self.state.clone(), 1));
        let counters = host(Tensor::stack(vec![self.elapsed.clone(), self.running_return.clone()], 1));
        EnvSnapshot {
            task: self.task.info().name.to_string(),
            state: state.iter().map(|&v| f64::from(v)).collect(),
            elapsed: (0..n).map(|i| counters[2 * i] as u32).collect(),
            running_return: (0..n).map(|i| f64::from(counters[2 * i + 1])).collect(),
            rng: Vec::new(),
            obs: self.buffers.obs.clone(),
        }
    }

    fn restore(&mut self, _snapshot: &EnvSnapshot) -> Result<(), SimError> {
        Err(SimError::Unsupported(
            "restoring a tensor environment: its randomness comes from the device generator, whose state a snapshot \
             cannot hold; use the CPU environment of the task to resume exactly"
                .into(),
        ))
    }
}
