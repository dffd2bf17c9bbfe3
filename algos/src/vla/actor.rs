//! What a VLA needs around it to act in a task: the cameras it sees (by name, in view order),
//! the instruction each environment follows, its proprioception (the task's policy observation
//! vector, standardized), and the conversion of sampled chunks into executed actions, which it
//! shares with flow policies through [`ChunkActor`].

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::vla::{ByteTokenizer, VlaConfig, VlaInput, VlaModel};
use embodia_policies::{NoiseMethod, StochasticSteps, load_params, with_generator_lock};
use embodia_sim::VecEnv;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::rng::fill_normal;
use crate::transfer::to_host;
use crate::{AlgoError, Checkpoint, ChunkActor, Standardizer};

/// Metadata key of the [`VlaActor`] in checkpoints.
pub const VLA_ACTOR_KEY: &str = "vla_actor";

/// The model layout, its cameras and the normalization a VLA acts with; saved in checkpoints
/// so that RL can start from an SFT run (`--init`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VlaActor {
    /// Layout of the model (`proprio_dim` is the task's policy observation width).
    pub model: VlaConfig,
    /// Cameras the model sees, one view each, in view order (names of
    /// [`ObsSpec::images`](embodia_sim::ObsSpec)).
    pub cameras: Vec<String>,
    /// Proprioception standardization (`obs_norm`), action standardization, bounds and relative
    /// actions. Its `policy` mirrors the model's chunk layout: `obs_dim = proprio_dim`,
    /// `action_dim`, `horizon`, `chunk`, `denoise_steps`; its network fields are unused.
    pub chunk: ChunkActor,
    /// Standardization of the environment state the grounding head predicts
    /// (`model.grounding_dim` features, the task's critic observation); `None` without a head.
    #[serde(default)]
    pub state_norm: Option<Standardizer>,
}

/// What the action expert reads as the grounding input (`model.grounding_to_expert`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounding {
    /// The grounding head's prediction from the prefix: how the model acts.
    Predicted,
    /// The environments' true state (their critic observation), standardized with
    /// [`VlaActor::state_norm`]: a diagnostic of the action expert under perfect perception.
    TrueState,
}

impl VlaActor {
    /// Indices into `env`'s cameras of [`Self::cameras`], checking that each exists with the
    /// model's image size.
    pub fn camera_indices(&self, env: &dyn VecEnv) -> Result<Vec<usize>, AlgoError> {
        let images = &env.obs_spec().images;
        let size = self.model.vision.image_size;
        self.cameras
            .iter()
            .map(|name| {
                let found = images.iter().position(|i| &i.name == name);
                match found.map(|k| (k, &images[k])) {
                    Some((k, spec)) if spec.width == size && spec.height == size && spec.channels == 3 => Ok(k),
                    Some((_, spec)) => Err(AlgoError::Config {
                        field: "algo.cameras".into(),
                        value: format!("`{name}` renders {}x{}x{}", spec.width, spec.height, spec.channels),
                        allowed: format!("{size}x{size}x3 RGB, the model's vision.image_size"),
                    }),
                    None => Err(AlgoError::Config {
                        field: "algo.cameras".into(),
                        value: format!("`{name}`"),
                        allowed: format!(
                            "a camera of task `{}`: {}",
                            env.info().name,
                            images.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    }),
                }
            })
            .collect()
    }

    /// Fills `input` with what the environments of `env` observe now: the images of `cameras`
    /// (indices from [`Self::camera_indices`]) as views, the instructions (an empty string for
    /// environments without one), and the standardized observation vector as proprioception.
    /// Reuses `input`'s buffers.
    pub fn observe(
        &self,
        env: &dyn VecEnv,
        cameras: &[usize],
        tokenizer: &ByteTokenizer,
        input: &mut VlaInput,
    ) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let size = self.model.vision.image_size;
        let view = size * size * 3;
        input.batch = n;
        input.views = cameras.len();
        input.height = size;
        input.width = size;
        input.images.resize(n * cameras.len() * view, 0);
        for (v, &camera) in cameras.iter().enumerate() {
            let images = env.image(camera).ok_or_else(|| {
                AlgoError::Sim(embodia_sim::SimError::Unsupported(format!("camera {camera} has no images")))
            })?;
            for i in 0..n {
                let dst = (i * cameras.len() + v) * view;
                input.images[dst..dst + view].copy_from_slice(&images[i * view..(i + 1) * view]);
            }
        }
        input.tokens.clear();
        input.token_mask.clear();
        for i in 0..n {
            let (ids, mask) = tokenizer.encode(env.instruction(i).unwrap_or("")).map_err(|e| AlgoError::Config {
                field: "instruction".into(),
                value: format!("{:?} of environment {i}", env.instruction(i).unwrap_or("")),
                allowed: e.to_string(),
            })?;
            input.tokens.extend(ids);
            input.token_mask.extend(mask);
        }
        input.proprio.clear();
        input.proprio.extend_from_slice(&env.buffers().obs);
        self.chunk.obs_norm.normalize(&mut input.proprio);
        Ok(())
    }

    /// ODE actions `[n, C, D]` of `model` (plain device) for what `env` observes now, into
    /// `out`, from `x_1 ~ N(0, I)` drawn with `sampling`, or from one fixed draw
    /// ([`ChunkActor::deterministic_noise`]) without it; the expert reads `grounding`.
    /// Returns the grounding head's prediction, `[n, grounding_dim]` standardized, for a model
    /// with a head.
    pub fn act(
        &self,
        model: &VlaModel,
        env: &dyn VecEnv,
        out: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
        grounding: Grounding,
        device: &Device,
    ) -> Result<Option<Vec<f32>>, AlgoError> {
        let cameras = self.camera_indices(env)?;
        let mut input = VlaInput::default();
        self.observe(env, &cameras, &model.tokenizer(), &mut input)?;
        let (n, hd, k) = (env.num_envs(), self.chunk.policy.chunk_width(), self.model.denoise_steps);
        let mut noise = vec![0.0f32; (k + 1) * n * hd];
        match sampling {
            Some(rng) => fill_normal(rng, &mut noise[..n * hd]),
            None => {
                let first = self.chunk.deterministic_noise();
                for row in noise[..n * hd].chunks_exact_mut(hd) {
                    row.copy_from_slice(&first);
                }
            }
        }
        let batch = model.prepare(&input, device).map_err(vla_error)?;
        let noise = Tensor::<3>::from_data(TensorData::new(noise, [k + 1, n, hd]), device);
        let mut context = model.encode(&batch);
        let predicted = context.grounding.clone().map(to_host).transpose()?;
        if grounding == Grounding::TrueState {
            let states = self.true_grounding(env)?;
            context.grounding = Some(Tensor::from_data(TensorData::new(states, [n, self.model.grounding_dim]), device));
        }
        let sample = model.sample(&context, noise, NoiseMethod::Ode, StochasticSteps::None);
        self.chunk.env_actions(&env.buffers().obs, &to_host(sample.actions)?, out);
        Ok(predicted)
    }

    /// The environments' critic observation standardized with [`Self::state_norm`],
    /// `[n, grounding_dim]`.
    pub fn true_grounding(&self, env: &dyn VecEnv) -> Result<Vec<f32>, AlgoError> {
        let unavailable = |why: String| AlgoError::Config {
            field: "algo.evaluate_with_true_grounding".into(),
            value: "true".into(),
            allowed: format!("false: {why}"),
        };
        let norm = self.state_norm.as_ref().ok_or_else(|| unavailable("the model has no grounding head".into()))?;
        let n = env.num_envs();
        let mut states = env.buffers().critic_obs.clone();
        if states.len() != n * norm.dim() {
            return Err(unavailable(format!(
                "the task's critic observation has {} values per environment, the grounding head {}",
                states.len() / n.max(1),
                norm.dim()
            )));
        }
        norm.normalize(&mut states);
        Ok(states)
    }

    /// The actor and the model (its EMA weights, on `device`) of the `vla-sft` checkpoint
    /// `init` of run `init_dir` (named in errors), checked against `env`'s widths and cameras:
    /// where RL of the VLA starts.
    pub(crate) fn from_sft_checkpoint(
        init: &Checkpoint,
        init_dir: &str,
        env: &dyn VecEnv,
        device: &Device,
    ) -> Result<(Self, VlaModel), AlgoError> {
        let actor = Self::of_sft_checkpoint(init, init_dir, env)?;
        let model = with_generator_lock(|| actor.model.init(device)).map_err(vla_error)?;
        let model = load_params(model, &init.params("ema"))?;
        Ok((actor, model))
    }

    /// The actor of the `vla-sft` checkpoint `init` of run `init_dir` (named in errors),
    /// checked against `env`'s widths and cameras.
    pub(crate) fn of_sft_checkpoint(init: &Checkpoint, init_dir: &str, env: &dyn VecEnv) -> Result<Self, AlgoError> {
        let algo: String = init.get("algo")?;
        if algo != "vla-sft" {
            return Err(AlgoError::Checkpoint(format!(
                "`algo.init` must be a vla-sft run; {init_dir} is from `{algo}`"
            )));
        }
        let actor = Self::from_checkpoint(init, env.obs_spec().vector.dim(), env.action_spec().bounds.dim())?;
        actor.camera_indices(env)?;
        Ok(actor)
    }

    /// Reads the actor of a checkpoint and checks it against the task's observation and action
    /// widths.
    pub fn from_checkpoint(ckpt: &Checkpoint, obs_dim: usize, action_dim: usize) -> Result<Self, AlgoError> {
        let actor: Self = ckpt.get(VLA_ACTOR_KEY)?;
        actor.chunk.check_widths(obs_dim, action_dim)?;
        Ok(actor)
    }
}

/// A VLA error as a learner error: bad layouts are config errors of `algo.model`, the rest
/// checkpoint or input errors.
pub(crate) fn vla_error(e: embodia_policies::vla::VlaError) -> AlgoError {
    use embodia_policies::vla::VlaError;
    match e {
        VlaError::Config(c) => {
            AlgoError::Config { field: format!("algo.model.{}", c.field), value: c.value, allowed: c.allowed }
        }
        other => AlgoError::Checkpoint(other.to_string()),
    }
}

/// The error of acting on the observation vector alone.
pub(crate) fn needs_images() -> AlgoError {
    AlgoError::Config {
        field: "policy".into(),
        value: "a VLA".into(),
        allowed: "acting through `Learner::act_env`: a VLA reads camera images and the instruction, not only the observation vector".into(),
    }
}
