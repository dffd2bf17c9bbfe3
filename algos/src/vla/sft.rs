//! Supervised fine-tuning (behaviour cloning) of the VLA on demonstrations with camera images
//! and language instructions, π0 style: the first half of πRL's recipe.
//!
//! Samples are as [`Sft`](crate::Sft)'s: every step `t` of every episode gives
//! `(views_t, instruction, s_t, a_{t..t+H})`, the chunk padded past the episode's end with its
//! last action and taken relative to the joint positions in `s_t` (openpi's `DeltaActions`),
//! proprioception (the task's policy observation vector) and actions standardized with
//! statistics of these samples; recorded demonstrations are perturbed (DART, `demo_noise`).
//! The images are those the demonstrations were recorded with (the cameras of `cameras`,
//! rendered at the model's `vision.image_size`); the instruction is the episode's.
//!
//! Per gradient step: draw a mini-batch, `ε ~ N(0, I)` and `t = 0.999·Beta(1.5, 1) + 0.001`,
//! minimize `mean((v_θ(x_t, t | images, instruction, s) − (ε − a))²)` with AdamW (global grad
//! clip) under a warmup-cosine learning rate, then update the EMA weights. Every iteration ends
//! with a closed-loop evaluation of the EMA model (one deterministic episode per environment,
//! every environment drawing its own instruction) whose success rate goes into the metrics.
//!
//! With `dagger_episodes` (DAgger, Ross et al. 2011), each iteration then runs that many
//! episodes of the EMA model in the evaluation environments, labels every step with the task's
//! scripted expert's action for the state the model reached (`VecEnv::expert_actions`), and
//! adds the episodes to the training samples: the model learns to recover from its own
//! mistakes, which demonstrations of the expert's own path never show. With
//! `dagger_labels = "grounding"` the episodes train the grounding head alone, on the true
//! states the model's own actions reach (the perception's covariate shift), and the action
//! expert still learns from demonstrations only.
//!
//! With a grounding head (`grounding_weight`) read by the action expert
//! (`model.grounding_to_expert`), `grounding_teacher_forcing` trains the expert on the true
//! state (plus noise) while the head learns to predict it; acting uses the prediction.
//!
//! The runner's step counter counts gradient steps, as for `sft`.

use std::cell::RefCell;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::vla::{VlaConfig, VlaContext, VlaInput, VlaModel};
use embodia_policies::{FlowPolicyConfig, load_params, named_params, polyak_update, sample_flow_time, seeded_init};
use embodia_sim::VecEnv;
use embodia_sim::demonstrations::Demonstrations;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::check_finite;
use crate::flow::chunk_samples::{check_demonstrations, chunk_samples, fitted_actor};
use crate::flow::recording::{RolloutLabels, RolloutRecording, learner_rollouts};
use crate::optim::{check_warmup_cosine, warmup_cosine};
use crate::rng::{fill_normal, rng_from_state, rng_state};
use crate::transfer::to_host;
use crate::vla::{Grounding, VLA_ACTOR_KEY, VlaActor, needs_images, vla_error};
use crate::{
    Adam, AlgoError, Checkpoint, EvalMode, InitialNoise, Learner, MetricRow, Standardizer, check_num_envs, check_range,
    evaluate,
};

/// VLA SFT hyperparameters. Optimizer defaults are openpi's (AdamW β = (0.9, 0.95), weight
/// decay 1e-10, grad clip 1.0, EMA 0.99); the learning rate suits a ~1M-parameter model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VlaSftConfig {
    /// Environments of the periodic evaluation (one episode each). Default 32.
    pub num_envs: usize,
    /// Scripted-expert demonstrations to record when no dataset is given (successful episodes
    /// only; each draws its instruction, so about `demos / variants` per variant). Default 230
    /// (~10 per lang-cubes training variant).
    pub demos: usize,
    /// LeRobot dataset directory (recorded with `--camera` at the model's image size) to train
    /// on instead of recorded demonstrations. Default none.
    pub dataset: Option<String>,
    /// LeRobot datasets of a trained policy's own episodes (`embodia record --run R
    /// --only-success`), trained on beside the demonstrations: what RL taught a steered or
    /// fine-tuned policy is distilled into this model's weights (PLD's "probe, learn,
    /// distill"), where every instruction shares it. Same observation, actions and cameras as
    /// the demonstrations; they go before them, so `validation_episodes` stay demonstrations.
    /// Default none.
    pub policy_datasets: Vec<String>,
    /// A `vla-sft` run to fine-tune instead of starting from random weights: its EMA weights,
    /// model layout, cameras and action/proprioception statistics are adopted (`model` and
    /// `cameras` are replaced by the checkpoint's), with a fresh optimizer and learning-rate
    /// schedule. With `policy_datasets` this distills RL into the policy RL started from, as
    /// PLD does. Default none (empty).
    pub init: String,
    /// Cameras the model sees, one view each. Default `["front"]`.
    pub cameras: Vec<String>,
    /// Mini-batch size. Default 64.
    pub batch_size: usize,
    /// Gradient steps per iteration; each iteration ends with an evaluation. Default 250.
    pub updates_per_iteration: usize,
    /// Peak learning rate. Default 5e-4.
    pub learning_rate: f64,
    /// Learning rate at the end of the cosine decay. Default 5e-5.
    pub final_learning_rate: f64,
    /// Linear warmup, gradient steps. Default 100.
    pub warmup_steps: u64,
    /// Gradient step at which the cosine decay reaches `final_learning_rate`. Default 3000.
    pub decay_steps: u64,
    /// AdamW β₁. Default 0.9.
    pub beta1: f64,
    /// AdamW β₂. Default 0.95.
    pub beta2: f64,
    /// AdamW decoupled weight decay. Default 1e-10.
    pub weight_decay: f64,
    /// Global gradient-norm limit. Default 1.0.
    pub max_grad_norm: f64,
    /// Decay of the exponential moving average of the weights (evaluated and saved). Default 0.99.
    pub ema_decay: f64,
    /// Floor of the standardization std of proprioception and actions. Default 0.01.
    pub min_std: f32,
    /// Predict joint-position actions relative to the present joint positions. Default true.
    pub relative_actions: bool,
    /// DART perturbation of the expert's executed actions while recording, a fraction of the
    /// action clip. Default 0.05.
    pub demo_noise: f32,
    /// Weight of the grounding loss: the mean squared error of the model's grounding head
    /// predicting the standardized environment state of each sample (the task's
    /// `[[env.observations.critic]]` terms, e.g. the instructed cube relative to the hand and
    /// the instruction's target) from the prefix, beside the flow-matching loss. It teaches the
    /// prefix where the instruction points, the part of the task the VLA failed to learn from
    /// actions alone (an embodied chain-of-thought target, as ECoT's object boxes). Needs
    /// demonstrations with environment states; sets `model.grounding_dim`. 0: off. Default 0.
    pub grounding_weight: f32,
    /// Teacher forcing of the grounding input (needs `model.grounding_to_expert`): the action
    /// expert trains on the sample's true standardized state plus Gaussian noise of std
    /// `grounding_input_noise` instead of the head's prediction, so that it learns to act on
    /// that input rather than on what else the prefix memorized of the training scenes (with
    /// the true state as an input the VLA succeeds in 47–81% of episodes, README). Acting,
    /// evaluation, validation losses and RL use the head's prediction: perception, then
    /// control, as in modular and chain-of-thought policies. Default false.
    pub grounding_teacher_forcing: bool,
    /// Std of the noise added to the true state under `grounding_teacher_forcing`, standardized
    /// units: about the head's error on unseen scenes, so that the expert tolerates it.
    /// Default 0.3.
    pub grounding_input_noise: f32,
    /// Diagnostic: evaluations (in training and `embodia eval` of the run) act with the
    /// environment's true state, standardized as in training, as the grounding input instead
    /// of the head's prediction ([`Grounding::TrueState`]): how well the action expert acts
    /// when perception is perfect. Needs `model.grounding_to_expert`. Default false.
    pub evaluate_with_true_grounding: bool,
    /// Demonstration episodes (the last ones) kept out of training: every iteration reports
    /// the EMA model's flow-matching and grounding losses on up to 256 of their samples
    /// (`val_loss`, `val_aux_loss` in the metrics), to tell fitting from generalizing to unseen
    /// scenes. Normalization statistics still cover them. Default 0.
    pub validation_episodes: usize,
    /// Random-shift augmentation (DrQ): every training image is shifted by up to this many
    /// pixels along each axis, uniform and independent per sample and view, edges replicated,
    /// so the vision encoder cannot key on exact pixel positions of the few scenes it was
    /// shown. Validation and evaluation images are not shifted. 0: off. Default 0.
    pub image_shift: usize,
    /// DAgger (module docs): episodes of the EMA model (deterministic, chunks executed as in
    /// evaluation) run after every iteration's evaluation, every step labelled with the
    /// task's scripted expert's action, and added to the training samples (before the
    /// validation episodes; normalization statistics stay the demonstrations'). Needs a task
    /// with a scripted expert. The added episodes are not checkpointed: a resumed run trains on
    /// the demonstrations alone until its next round. 0: off. Default 0.
    pub dagger_episodes: usize,
    /// DAgger's mixture β: at every chunk decision of a DAgger episode, each environment
    /// executes the expert's actions for the chunk instead of the model's with this
    /// probability, so the rollouts stay nearer the states the expert visits (every step is
    /// labelled with the expert's action either way). In [0, 1]. Default 0.5.
    pub dagger_expert_share: f64,
    /// What the DAgger episodes train. Default `actions`.
    pub dagger_labels: DaggerLabels,
    /// The model; `proprio_dim` and `action_dim` are set from the task. Default: 48×48 images
    /// (patch 8, 36 tokens per view), ViT 64×2, text 64×1 over 48 byte tokens, backbone 96×2,
    /// expert 64×2, `H = 8`, `C = 4`, `K = 4` (0.47M parameters for lang-cubes).
    pub model: VlaConfig,
}

impl Default for VlaSftConfig {
    fn default() -> Self {
        use embodia_policies::vla::{TextConfig, VisionConfig};
        Self {
            num_envs: 32,
            demos: 230,
            dataset: None,
            policy_datasets: Vec::new(),
            init: String::new(),
            cameras: vec!["front".into()],
            batch_size: 64,
            updates_per_iteration: 250,
            learning_rate: 5e-4,
            final_learning_rate: 5e-5,
            warmup_steps: 100,
            decay_steps: 3000,
            beta1: 0.9,
            beta2: 0.95,
            weight_decay: 1e-10,
            max_grad_norm: 1.0,
            ema_decay: 0.99,
            min_std: 0.01,
            relative_actions: true,
            demo_noise: 0.05,
            grounding_weight: 0.0,
            grounding_teacher_forcing: false,
            grounding_input_noise: 0.3,
            evaluate_with_true_grounding: false,
            validation_episodes: 0,
            image_shift: 0,
            dagger_episodes: 0,
            dagger_expert_share: 0.5,
            dagger_labels: DaggerLabels::Actions,
            model: VlaConfig::new(0, 0)
                .with_vision(VisionConfig::new().with_image_size(48).with_width(64).with_heads(4).with_max_views(2))
                .with_text(TextConfig::new().with_max_len(48).with_width(64))
                .with_backbone_width(96)
                .with_expert_width(64)
                .with_value_hidden(vec![128, 64]),
        }
    }
}

impl VlaSftConfig {
    /// Checks every value's range except the model's task widths; errors name the field.
    pub fn validate_fields(&self) -> Result<(), AlgoError> {
        check_num_envs(self.num_envs)?;
        check_range("demos", self.demos, self.demos > 0, "≥ 1")?;
        let views = self.cameras.len();
        let max = self.model.vision.max_views;
        check_range(
            "cameras",
            format!("{:?}", self.cameras),
            (1..=max).contains(&views),
            &format!("1 to {max} names"),
        )?;
        check_range("batch_size", self.batch_size, self.batch_size > 0, "≥ 1")?;
        check_range("updates_per_iteration", self.updates_per_iteration, self.updates_per_iteration > 0, "≥ 1")?;
        check_warmup_cosine(self.learning_rate, self.final_learning_rate, self.warmup_steps, self.decay_steps)?;
        check_range("beta1", self.beta1, (0.0..1.0).contains(&self.beta1), "0 ≤ beta1 < 1")?;
        check_range("beta2", self.beta2, (0.0..1.0).contains(&self.beta2), "0 ≤ beta2 < 1")?;
        check_range("weight_decay", self.weight_decay, self.weight_decay >= 0.0, "≥ 0")?;
        check_range("max_grad_norm", self.max_grad_norm, self.max_grad_norm > 0.0, "> 0")?;
        check_range("ema_decay", self.ema_decay, (0.0..1.0).contains(&self.ema_decay), "0 ≤ ema_decay < 1")?;
        check_range("min_std", self.min_std, self.min_std > 0.0, "> 0")?;
        check_range("demo_noise", self.demo_noise, (0.0..=1.0).contains(&self.demo_noise), "0 ≤ demo_noise ≤ 1")?;
        check_range("grounding_weight", self.grounding_weight, self.grounding_weight >= 0.0, "≥ 0")?;
        check_range("grounding_input_noise", self.grounding_input_noise, self.grounding_input_noise >= 0.0, "≥ 0")?;
        let expert_reads_grounding = self.model.grounding_to_expert && self.grounding_weight > 0.0;
        for (field, on) in [
            ("grounding_teacher_forcing", self.grounding_teacher_forcing),
            ("evaluate_with_true_grounding", self.evaluate_with_true_grounding),
        ] {
            if on && !expert_reads_grounding {
                return Err(AlgoError::Config {
                    field: field.into(),
                    value: "true".into(),
                    allowed: "false unless grounding_weight > 0 and model.grounding_to_expert = true (the expert \
                              must read the grounding head)"
                        .into(),
                });
            }
        }
        if self.dagger_labels == DaggerLabels::Grounding && self.grounding_weight <= 0.0 {
            return Err(AlgoError::Config {
                field: "dagger_labels".into(),
                value: "grounding".into(),
                allowed: "actions unless grounding_weight > 0 (there is no grounding head to train)".into(),
            });
        }
        let share = self.dagger_expert_share;
        check_range("dagger_expert_share", share, (0.0..=1.0).contains(&share), "0 ≤ dagger_expert_share ≤ 1")?;
        let size = self.model.vision.image_size;
        check_range("image_shift", self.image_shift, self.image_shift < size, &format!("< the image size {size}"))?;
        // The task widths (and the grounding head's) are placeholders here; every other field
        // of the layout is checked.
        let grounding_dim = usize::from(self.grounding_weight > 0.0);
        let model = VlaConfig { proprio_dim: 1, action_dim: 1, grounding_dim, ..self.model.clone() };
        model.validate().map_err(|e| vla_error(e.into()))
    }
}

/// What the episodes of a DAgger round (`VlaSftConfig::dagger_episodes`) are trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DaggerLabels {
    /// The scripted expert's action chunks in the states the model reached (flow-matching
    /// loss) and, with a grounding head, their true states (grounding loss).
    Actions,
    /// The true states alone (grounding loss): the head learns to perceive where the model's
    /// own mistakes take it, which demonstrations never show it (its closed-loop error fell
    /// from 6.1 to 0.68 on lang-cubes-ee, README); the action expert trains on demonstrations
    /// only. Needs `grounding_weight > 0`.
    Grounding,
}

/// Where a training sample's images and instruction are: episode and step.
#[derive(Debug, Clone, Copy)]
struct SampleSource {
    episode: u32,
    step: u32,
}

/// Behaviour cloning of the VLA from demonstrations with images and instructions.
pub struct VlaSft {
    config: VlaSftConfig,
    device: Device,
    actor: VlaActor,
    model: VlaModel,
    /// EMA weights (plain device): what is evaluated, acts and seeds RL.
    ema: VlaModel,
    optim: Adam,
    rng: ChaCha8Rng,
    steps: u64,
    eval_seed: u64,
    demos: Demonstrations,
    /// Demonstration camera of each view.
    demo_cameras: Vec<usize>,
    /// Token ids and mask of each episode's instruction, `[episodes, max_len]`.
    episode_tokens: Vec<(Vec<u32>, Vec<bool>)>,
    sources: Vec<SampleSource>,
    /// Standardized proprioception, `[samples, proprio_dim]`.
    sample_proprio: Vec<f32>,
    /// Standardized action chunks, `[samples, H·D]`.
    sample_chunks: Vec<f32>,
    /// Standardized environment states, `[samples, grounding_dim]`; empty without grounding.
    sample_states: Vec<f32>,
    /// The grounding head's closed-loop errors while acting ([`Learner::eval_diagnostics`]).
    grounding_errors: RefCell<GroundingErrors>,
    /// Samples `0..train_samples` are trained on; the rest belong to validation episodes.
    train_samples: usize,
    /// The validation samples evaluated every iteration (offsets from `train_samples`), with
    /// their fixed noise (`[n, H·D]`) and flow times (`[n]`).
    validation: (Vec<usize>, Vec<f32>, Vec<f32>),
    /// Seed of the next DAgger round's reset.
    dagger_seed: u64,
    /// Episodes `demo_episodes..` before the validation episodes are DAgger rounds'.
    demo_episodes: usize,
}

impl VlaSft {
    /// A learner for `env`'s spaces, fitted to `demos`, whose episodes carry the images of
    /// `config.cameras` at the model's image size and their instructions; `device` must have
    /// autodiff enabled. The model starts from random weights, or from the `vla-sft`
    /// checkpoint `init` of run `config.init` (whose layout, cameras and statistics replace
    /// the config's).
    pub fn new(
        mut config: VlaSftConfig,
        env: &dyn VecEnv,
        demos: Demonstrations,
        init: Option<&Checkpoint>,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let (od, ad) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim());
        config.model.proprio_dim = od;
        config.model.action_dim = ad;
        config.validate_fields()?;
        let episodes = demos.episodes.len();
        check_range(
            "validation_episodes",
            config.validation_episodes,
            config.validation_episodes < episodes,
            &format!("fewer than the {episodes} demonstration episodes"),
        )?;
        if config.grounding_weight > 0.0 && demos.state_dim == 0 {
            return Err(AlgoError::Config {
                field: "grounding_weight".into(),
                value: config.grounding_weight.to_string(),
                allowed: "0 for demonstrations without environment states (give the task \
                          [[env.observations.critic]] terms and record them)"
                    .into(),
            });
        }
        let grounding_dim = if config.grounding_weight > 0.0 { demos.state_dim } else { 0 };
        let actor = match init {
            Some(ckpt) => {
                let actor = VlaActor::of_sft_checkpoint(ckpt, &config.init, env)?;
                check_demonstrations(&demos, od, ad)?;
                if actor.model.grounding_dim != grounding_dim {
                    return Err(AlgoError::Config {
                        field: "grounding_weight".into(),
                        value: config.grounding_weight.to_string(),
                        allowed: format!(
                            "{} for `algo.init` {}, whose grounding head predicts {} state features (these \
                             demonstrations record {})",
                            if actor.model.grounding_dim > 0 { "> 0" } else { "0" },
                            config.init,
                            actor.model.grounding_dim,
                            demos.state_dim
                        ),
                    });
                }
                config.model = actor.model.clone();
                config.cameras = actor.cameras.clone();
                actor
            }
            None => {
                config.model.grounding_dim = grounding_dim;
                let m = &config.model;
                let policy = FlowPolicyConfig {
                    obs_dim: od,
                    action_dim: ad,
                    horizon: m.horizon,
                    chunk: m.chunk,
                    denoise_steps: m.denoise_steps,
                    ..FlowPolicyConfig::default()
                };
                let (chunk, _, _) = fitted_actor(&policy, config.relative_actions, config.min_std, env, &demos)?;
                let actor = VlaActor { model: m.clone(), cameras: config.cameras.clone(), chunk, state_norm: None };
                actor.camera_indices(env)?;
                actor
            }
        };
        let m = &config.model;
        let size = m.vision.image_size;
        let demo_cameras = config
            .cameras
            .iter()
            .map(|name| {
                let found = demos.cameras.iter().position(|c| &c.name == name);
                match found.map(|k| (k, &demos.cameras[k])) {
                    Some((k, c)) if c.width == size && c.height == size && c.channels == 3 => Ok(k),
                    _ => Err(AlgoError::Config {
                        field: "demonstrations".into(),
                        value: format!(
                            "cameras [{}]",
                            demos
                                .cameras
                                .iter()
                                .map(|c| format!("{} {}x{}x{}", c.name, c.width, c.height, c.channels))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        allowed: format!("camera `{name}` at {size}x{size}x3 (record with --camera {size})"),
                    }),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        config.model.validate().map_err(|e| vla_error(e.into()))?;
        let mut sft = Self::assemble(config, actor, demos, demo_cameras, device, seed);
        if let Some(ckpt) = init {
            sft.model = load_params(sft.model.clone(), &ckpt.params("ema"))?;
            sft.ema = sft.model.valid();
        }
        sft.index_samples()?;
        Ok(sft)
    }

    /// A learner that acts with the EMA model, normalization and cameras of the `vla-sft`
    /// checkpoint `ckpt` (restore it next), without demonstrations: what evaluation needs,
    /// since recording them again would only rebuild statistics the checkpoint holds. It
    /// cannot train: [`Self::update`] refuses. `config` is the run's; the model layout is the
    /// checkpoint's.
    pub fn for_evaluation(
        mut config: VlaSftConfig,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: Device,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let actor = VlaActor::from_checkpoint(ckpt, env.obs_spec().vector.dim(), env.action_spec().bounds.dim())?;
        actor.camera_indices(env)?;
        config.model = actor.model.clone();
        config.model.validate().map_err(|e| vla_error(e.into()))?;
        config.validation_episodes = 0;
        let demos = Demonstrations {
            task: env.info().name.to_string(),
            fps: 0.0,
            obs_dim: actor.model.proprio_dim,
            action_dim: actor.model.action_dim,
            episodes: Vec::new(),
            cameras: Vec::new(),
            state_dim: actor.model.grounding_dim,
        };
        Ok(Self::assemble(config, actor, demos, Vec::new(), device, seed))
    }

    /// The learner around `actor` with a freshly initialized model (`config.model`, validated)
    /// and nothing indexed yet; `demo_cameras` are the demonstration cameras of the views.
    fn assemble(
        config: VlaSftConfig,
        actor: VlaActor,
        demos: Demonstrations,
        demo_cameras: Vec<usize>,
        device: Device,
        seed: u64,
    ) -> Self {
        let m = &config.model;
        let model = seeded_init(&device, seed, |device| m.init(device).expect("validated layout"));
        let held =
            demos.episodes[demos.episodes.len() - config.validation_episodes..].iter().map(|e| e.len()).sum::<usize>();
        let picked: Vec<usize> = (0..held.min(256)).map(|k| k * held / held.min(256)).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7A1_1DA7E);
        let mut noise = vec![0.0f32; picked.len() * m.horizon * m.action_dim];
        fill_normal(&mut rng, &mut noise);
        let t = picked.iter().map(|_| sample_flow_time(rng.random::<f32>())).collect();
        Self {
            demo_episodes: demos.episodes.len() - config.validation_episodes,
            train_samples: 0,
            validation: (picked, noise, t),
            dagger_seed: seed.wrapping_add(0x00DA_66E5),
            ema: model.valid(),
            model,
            optim: Adam::new(config.beta1, config.beta2, 1e-8).with_weight_decay(config.weight_decay),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x71A_5F7),
            steps: 0,
            eval_seed: seed.wrapping_add(0x5EED),
            demos,
            demo_cameras,
            episode_tokens: Vec::new(),
            sources: Vec::new(),
            sample_proprio: Vec::new(),
            sample_chunks: Vec::new(),
            sample_states: Vec::new(),
            grounding_errors: RefCell::default(),
            actor,
            device,
            config,
        }
    }

    /// Rebuilds the samples of every step of every demonstration episode (module docs):
    /// standardized proprioception and chunks (with the actor's statistics), environment
    /// states, instruction tokens and sources; the last `validation_episodes` are held out.
    fn index_samples(&mut self) -> Result<(), AlgoError> {
        let (mut proprio, mut chunks) = chunk_samples(&self.demos, &self.actor.chunk);
        self.actor.chunk.obs_norm.normalize(&mut proprio);
        self.actor.chunk.action_norm.normalize(&mut chunks);
        (self.sample_proprio, self.sample_chunks) = (proprio, chunks);
        // Fitted once, to the demonstrations: DAgger episodes do not move the head's units.
        let fitted = self.actor.state_norm.as_ref();
        (self.actor.state_norm, self.sample_states) =
            standardized_states(&self.demos, self.actor.model.grounding_dim, fitted, self.config.min_std)?;
        let tokenizer = self.model.tokenizer();
        self.episode_tokens.clear();
        self.sources.clear();
        for (e, ep) in self.demos.episodes.iter().enumerate() {
            let text = ep.instruction.as_deref().unwrap_or("");
            let tokens = tokenizer.encode(text).map_err(|err| AlgoError::Config {
                field: "demonstrations".into(),
                value: format!("instruction {text:?} of episode {e}"),
                allowed: err.to_string(),
            })?;
            self.episode_tokens.push(tokens);
            // The samples of `chunk_samples` are every step of every non-empty episode, in order.
            if !ep.is_empty() {
                self.sources.extend((0..ep.len()).map(|t| SampleSource { episode: e as u32, step: t as u32 }));
            }
        }
        let first_validation = (self.demos.episodes.len() - self.config.validation_episodes) as u32;
        self.train_samples = self.sources.iter().take_while(|s| s.episode < first_validation).count();
        Ok(())
    }

    /// One DAgger round (module docs): `dagger_episodes` episodes of the EMA model in `env`
    /// from a fresh reset, labelled with the expert's actions, added to the training samples.
    fn dagger_round(&mut self, env: &mut dyn VecEnv) -> Result<(), AlgoError> {
        let n = env.num_envs();
        let sd = self.demos.state_dim;
        // The environment's camera of each demonstration camera; the model reads only those of
        // `cameras`, which the environment renders, so any other is stored black.
        let cameras: Vec<(Option<usize>, usize)> = self
            .demos
            .cameras
            .iter()
            .map(|c| {
                let same = |i: &embodia_sim::ImageSpec| i.name == c.name && i.height == c.height && i.width == c.width;
                (env.obs_spec().images.iter().position(same), c.height * c.width * c.channels)
            })
            .collect();
        if env.buffers().critic_obs.len() != n * sd {
            return Err(AlgoError::Config {
                field: "dagger_episodes".into(),
                value: self.config.dagger_episodes.to_string(),
                allowed: format!(
                    "0: the demonstrations carry {sd} environment-state values per step, the environment {}",
                    env.buffers().critic_obs.len() / n
                ),
            });
        }
        let keep = RolloutRecording { state_dim: sd, cameras: &cameras };
        let (episodes, share) = (self.config.dagger_episodes, self.config.dagger_expert_share);
        let labels = RolloutLabels::Expert { share };
        let added = learner_rollouts(self, env, episodes, labels, self.dagger_seed, &keep)?;
        self.dagger_seed = self.dagger_seed.wrapping_add(1);
        let at = self.demos.episodes.len() - self.config.validation_episodes;
        self.demos.episodes.splice(at..at, added);
        self.index_samples()
    }

    /// Number of training samples (validation episodes' excluded).
    pub fn num_samples(&self) -> usize {
        self.train_samples
    }

    /// The learning rate of the next gradient step.
    pub fn learning_rate(&self) -> f64 {
        let c = &self.config;
        warmup_cosine(self.steps, c.warmup_steps, c.decay_steps, c.learning_rate, c.final_learning_rate)
    }

    /// The model input of training samples `indices`; each view shifted by its entry of
    /// `shifts` (`[indices.len() · views]` pixel offsets (dx, dy)) unless `shifts` is empty.
    fn input(&self, indices: &[usize], shifts: &[(i32, i32)]) -> VlaInput {
        let (pd, size) = (self.actor.model.proprio_dim, self.actor.model.vision.image_size);
        let view = size * size * 3;
        let mut input = VlaInput::default();
        (input.batch, input.views, input.height, input.width) = (indices.len(), self.demo_cameras.len(), size, size);
        for &i in indices {
            let SampleSource { episode, step } = self.sources[i];
            let ep = &self.demos.episodes[episode as usize];
            for &camera in &self.demo_cameras {
                let at = step as usize * view;
                let image = &ep.images[camera][at..at + view];
                match shifts.get(input.images.len() / view) {
                    Some(&shift) => extend_shifted(&mut input.images, image, size, shift),
                    None => input.images.extend_from_slice(image),
                }
            }
            let (ids, mask) = &self.episode_tokens[episode as usize];
            input.tokens.extend_from_slice(ids);
            input.token_mask.extend_from_slice(mask);
            input.proprio.extend_from_slice(&self.sample_proprio[i * pd..(i + 1) * pd]);
        }
        input
    }

    /// Whether sample `i` trains the action expert: all but those of DAgger episodes under
    /// [`DaggerLabels::Grounding`].
    fn has_action_label(&self, i: usize) -> bool {
        let episode = self.sources[i].episode as usize;
        let dagger = self.demo_episodes..self.demos.episodes.len() - self.config.validation_episodes;
        self.config.dagger_labels == DaggerLabels::Actions || !dagger.contains(&episode)
    }

    /// The flow-matching loss of `model` on samples `indices` with `noise` (`[n, H·D]`) and
    /// times `t` (`[n]`), and with a grounding head its grounding loss; each `[1]`. With
    /// `teacher_noise` (`[n, grounding_dim]`), the action expert reads the true state plus that
    /// noise instead of the head's prediction (`grounding_teacher_forcing`).
    #[allow(clippy::too_many_arguments, reason = "the batch's parts, each with its own shape")]
    fn losses(
        &self,
        model: &VlaModel,
        device: &Device,
        indices: &[usize],
        shifts: &[(i32, i32)],
        noise: Vec<f32>,
        t: Vec<f32>,
        teacher_noise: Option<Vec<f32>>,
    ) -> Result<(Tensor<1>, Option<Tensor<1>>), AlgoError> {
        let m = &self.actor.model;
        let (h, ad, n, gd) = (m.horizon, m.action_dim, indices.len(), m.grounding_dim);
        let chunks: Vec<f32> =
            indices.iter().flat_map(|&i| &self.sample_chunks[i * h * ad..(i + 1) * h * ad]).copied().collect();
        let batch = model.prepare(&self.input(indices, shifts), device).map_err(vla_error)?;
        let context = model.encode(&batch);
        let states: Vec<f32> =
            indices.iter().flat_map(|&i| &self.sample_states[i * gd..(i + 1) * gd]).copied().collect();
        let states = (gd > 0).then(|| Tensor::<2>::from_data(TensorData::new(states, [n, gd]), device));
        let grounding =
            model.grounding(&context).zip(states.clone()).map(|(predicted, s)| (predicted - s).square().mean());
        let expert_context = match (teacher_noise, states) {
            (Some(teacher_noise), Some(s)) => VlaContext {
                grounding: Some(s + Tensor::from_data(TensorData::new(teacher_noise, [n, gd]), device)),
                ..context
            },
            _ => context,
        };
        let flow = model.flow_matching_sample_losses_at(
            &expert_context,
            Tensor::from_data(TensorData::new(chunks, [n, h, ad]), device),
            Tensor::from_data(TensorData::new(noise, [n, h, ad]), device),
            Tensor::from_data(TensorData::new(t, [n, 1]), device),
        );
        // Samples of grounding-only DAgger episodes carry no action labels the expert learns.
        let action_labelled: Vec<f32> = indices.iter().map(|&i| f32::from(self.has_action_label(i))).collect();
        let labelled = action_labelled.iter().sum::<f32>();
        let flow = if labelled == n as f32 {
            flow.mean()
        } else {
            (flow * Tensor::from_data(TensorData::new(action_labelled, [n]), device))
                .sum()
                .div_scalar(labelled.max(1.0))
        };
        Ok((flow, grounding))
    }

    /// One gradient step; returns the flow-matching loss of the mini-batch and, with
    /// grounding, its grounding loss.
    pub fn update(&mut self) -> Result<(f64, Option<f64>), AlgoError> {
        let m = &self.actor.model;
        let (hd, bs) = (m.horizon * m.action_dim, self.config.batch_size);
        let n = self.num_samples();
        if n == 0 {
            return Err(AlgoError::Config {
                field: "demonstrations".into(),
                value: "none".into(),
                allowed: "training samples (a learner built for evaluation cannot train)".into(),
            });
        }
        let indices: Vec<usize> = (0..bs).map(|_| self.rng.random_range(0..n)).collect();
        let mut noise = vec![0.0f32; bs * hd];
        fill_normal(&mut self.rng, &mut noise);
        let t: Vec<f32> = (0..bs).map(|_| sample_flow_time(self.rng.random::<f32>())).collect();
        let s = self.config.image_shift as i32;
        let shifts: Vec<(i32, i32)> = if s > 0 {
            (0..bs * self.demo_cameras.len())
                .map(|_| (self.rng.random_range(-s..=s), self.rng.random_range(-s..=s)))
                .collect()
        } else {
            Vec::new()
        };
        let teacher_noise = self.config.grounding_teacher_forcing.then(|| {
            let mut z = vec![0.0f32; bs * self.actor.model.grounding_dim];
            fill_normal(&mut self.rng, &mut z);
            z.iter().map(|v| v * self.config.grounding_input_noise).collect()
        });
        let (mut loss, grounding) =
            self.losses(&self.model, &self.device, &indices, &shifts, noise, t, teacher_noise)?;
        let value = check_finite("VLA SFT loss", to_host(loss.clone().inner())?[0] as f64, self.steps)?;
        let mut grounding_value = None;
        if let Some(grounding) = grounding {
            let g = check_finite("VLA SFT grounding loss", to_host(grounding.clone().inner())?[0] as f64, self.steps)?;
            grounding_value = Some(g);
            loss = loss + grounding.mul_scalar(self.config.grounding_weight);
        }
        let grads = GradientsParams::from_grads(loss.backward(), &self.model);
        let lr = self.learning_rate();
        let (model, norm) = self.optim.step(lr, self.model.clone(), &grads, Some(self.config.max_grad_norm));
        check_finite("VLA SFT gradients", norm.unwrap_or(0.0), self.steps)?;
        self.model = model;
        self.ema = polyak_update(self.ema.clone(), &self.model, 1.0 - self.config.ema_decay);
        self.steps += 1;
        Ok((value, grounding_value))
    }

    /// The EMA model's flow-matching and grounding losses on the validation samples (the same
    /// samples, noise and times every call); `None` without validation episodes.
    pub fn validation_losses(&self) -> Result<Option<(f64, Option<f64>)>, AlgoError> {
        let (offsets, noise, t) = &self.validation;
        if offsets.is_empty() {
            return Ok(None);
        }
        let indices: Vec<usize> = offsets.iter().map(|k| self.train_samples + k).collect();
        let plain = self.device.clone().inner();
        let (flow, grounding) = self.losses(&self.ema, &plain, &indices, &[], noise.clone(), t.clone(), None)?;
        let grounding = grounding.map(|g| to_host(g).map(|v| v[0] as f64)).transpose()?;
        Ok(Some((to_host(flow)?[0] as f64, grounding)))
    }

    /// The EMA model (plain device) and the actor around it.
    pub fn policy(&self) -> (&VlaModel, &VlaActor) {
        (&self.ema, &self.actor)
    }
}

impl Learner for VlaSft {
    fn default_eval_mode(&self) -> EvalMode {
        EvalMode::Sampled
    }

    fn initial_noise(&self) -> Option<InitialNoise> {
        Some(self.actor.chunk.initial_noise)
    }

    fn name(&self) -> &'static str {
        "vla-sft"
    }

    /// Gradient steps taken.
    fn env_steps(&self) -> u64 {
        self.steps
    }

    fn iterate(&mut self, env: &mut dyn VecEnv) -> Result<MetricRow, AlgoError> {
        let (mut loss, mut grounding) = (0.0, None);
        for _ in 0..self.config.updates_per_iteration {
            let (l, g) = self.update()?;
            loss += l;
            grounding = g.map(|g| grounding.unwrap_or(0.0) + g);
        }
        let eval = evaluate(self, env, self.eval_seed, self.default_eval_mode())?;
        if self.config.dagger_episodes > 0 {
            self.dagger_round(env)?;
        }
        let n = self.config.updates_per_iteration as f64;
        let row = MetricRow::supervised(self.steps, loss / n, self.learning_rate(), &eval);
        let validation = self.validation_losses()?;
        Ok(MetricRow {
            aux_loss: grounding.map(|g| g / n),
            val_loss: validation.map(|v| v.0),
            val_aux_loss: validation.and_then(|v| v.1),
            ..row
        })
    }

    fn act(&self, _obs: &[f32], _actions: &mut [f32], _sampling: Option<&mut ChaCha8Rng>) -> Result<(), AlgoError> {
        Err(needs_images())
    }

    fn act_env(
        &self,
        env: &dyn VecEnv,
        actions: &mut [f32],
        sampling: Option<&mut ChaCha8Rng>,
    ) -> Result<(), AlgoError> {
        let grounding =
            if self.config.evaluate_with_true_grounding { Grounding::TrueState } else { Grounding::Predicted };
        let predicted = self.actor.act(&self.ema, env, actions, sampling, grounding, &self.device.clone().inner())?;
        // A task without the critic terms the head was trained on has nothing to compare with.
        if let (Some(predicted), Ok(truth)) = (predicted, self.actor.true_grounding(env)) {
            self.grounding_errors.borrow_mut().add(self.actor.model.grounding_dim, &predicted, &truth);
        }
        Ok(())
    }

    /// The grounding head's closed-loop error over the decisions since the last call:
    /// `grounding_mse` (standardized, comparable with the `aux_loss` and `val_aux_loss`
    /// columns) and `grounding_rmse[j]` per state feature in the task's units (metres for
    /// positions).
    fn eval_diagnostics(&self) -> Vec<(String, f64)> {
        let errors = self.grounding_errors.take();
        let Some(norm) = self.actor.state_norm.as_ref().filter(|_| errors.count > 0) else { return Vec::new() };
        let mse: Vec<f64> = errors.sum_sq.iter().map(|s| s / errors.count as f64).collect();
        let mut out = vec![("grounding_mse".to_string(), mse.iter().sum::<f64>() / mse.len() as f64)];
        out.extend(
            mse.iter()
                .zip(&norm.std)
                .enumerate()
                .map(|(j, (m, &std))| (format!("grounding_rmse[{j}]"), m.sqrt() * f64::from(std))),
        );
        out
    }

    fn chunk_len(&self) -> usize {
        self.actor.model.chunk
    }

    fn checkpoint(&self) -> Result<Checkpoint, AlgoError> {
        let mut ckpt = Checkpoint::default();
        ckpt.insert_params("model", named_params(&self.model));
        ckpt.insert_params("ema", named_params(&self.ema));
        ckpt.put_optim("model", &self.optim)?;
        ckpt.put("algo", &"vla-sft")?;
        ckpt.put(VLA_ACTOR_KEY, &self.actor)?;
        ckpt.put("steps", &self.steps)?;
        ckpt.put("rng", &rng_state(&self.rng))?;
        Ok(ckpt)
    }

    fn restore(&mut self, ckpt: &Checkpoint) -> Result<(), AlgoError> {
        ckpt.expect_algo("vla-sft")?;
        let mut actor = VlaActor::from_checkpoint(ckpt, self.actor.model.proprio_dim, self.actor.model.action_dim)?;
        // The grounding head predicts in its checkpoint's state units (checkpoints written
        // before the actor kept them have none: this run's). Those of runs whose DAgger rounds
        // refitted them (before 2026-12-03) differ from the demonstrations' own, so they are
        // adopted rather than compared, and the samples restandardized.
        let state_norm = actor.state_norm.take().or_else(|| self.actor.state_norm.clone());
        actor.state_norm.clone_from(&self.actor.state_norm);
        // The samples were standardized with statistics of the same demonstrations.
        if actor != self.actor {
            return Err(AlgoError::Checkpoint(
                "the checkpoint's model, cameras or normalization differ from this run's config and demonstrations"
                    .into(),
            ));
        }
        if state_norm != self.actor.state_norm {
            self.actor.state_norm = state_norm;
            self.index_samples()?;
        }
        self.model = load_params(self.model.clone(), &ckpt.params("model"))?;
        self.ema = load_params(self.ema.clone(), &ckpt.params("ema"))?;
        let plain = self.device.clone().inner();
        ckpt.restore_optim("model", &mut self.optim, &self.model, &plain)?;
        self.steps = ckpt.get("steps")?;
        self.rng = rng_from_state(&ckpt.get("rng")?);
        Ok(())
    }
}

/// Squared errors of the grounding head's predictions against the true states (standardized),
/// summed per feature over environments and decisions.
#[derive(Debug, Default)]
struct GroundingErrors {
    /// `[grounding_dim]`.
    sum_sq: Vec<f64>,
    /// Environment decisions summed.
    count: usize,
}

impl GroundingErrors {
    /// Adds one decision of every environment: `predicted` and `truth` `[n, dim]`.
    fn add(&mut self, dim: usize, predicted: &[f32], truth: &[f32]) {
        self.sum_sq.resize(dim, 0.0);
        for (p, t) in predicted.chunks_exact(dim).zip(truth.chunks_exact(dim)) {
            for ((sum, &p), &t) in self.sum_sq.iter_mut().zip(p).zip(t) {
                *sum += f64::from(p - t).powi(2);
            }
            self.count += 1;
        }
    }
}

/// Appends `image` (`[size, size, 3]` u8, row-major) shifted by `(dx, dy)` pixels to `out`:
/// output pixel (x, y) is input pixel (x − dx, y − dy), clamped to the border (DrQ's
/// replicate-pad and crop).
fn extend_shifted(out: &mut Vec<u8>, image: &[u8], size: usize, (dx, dy): (i32, i32)) {
    let source = |i: usize, d: i32| (i as i64 - d as i64).clamp(0, size as i64 - 1) as usize;
    for y in 0..size {
        let row = source(y, dy) * size;
        for x in 0..size {
            let at = (row + source(x, dx)) * 3;
            out.extend_from_slice(&image[at..at + 3]);
        }
    }
}

/// Every step's environment state of every non-empty episode (the order of the samples),
/// standardized per dimension (std floored at `min_std`), `[samples, dim]`, and the
/// standardization; `None` and empty for `dim` 0. Errors name the first episode whose states do
/// not cover its steps.
fn standardized_states(
    demos: &Demonstrations,
    dim: usize,
    fitted: Option<&Standardizer>,
    min_std: f32,
) -> Result<(Option<Standardizer>, Vec<f32>), AlgoError> {
    if dim == 0 {
        return Ok((None, Vec::new()));
    }
    if let Some((e, ep)) = demos.episodes.iter().enumerate().find(|(_, ep)| ep.states.len() != ep.len() * dim) {
        return Err(AlgoError::Config {
            field: "demonstrations".into(),
            value: format!("episode {e}: {} environment-state values for {} steps", ep.states.len(), ep.len()),
            allowed: format!("{dim} per step"),
        });
    }
    let mut states: Vec<f32> = demos.episodes.iter().flat_map(|e| e.states.iter().copied()).collect();
    let norm = fitted.cloned().unwrap_or_else(|| Standardizer::fit(&states, dim, min_std));
    norm.normalize(&mut states);
    Ok((Some(norm), states))
}

#[cfg(test)]
mod tests {
    use super::*;
    use embodia_sim::camera::{CameraEnv, RenderConfig};
    use embodia_sim::demonstrations::Episode;
    use embodia_sim::rapier::TaskConfig;

    /// Two lang-cubes-ee environments with the front camera at 32×32, and three rendered
    /// expert demonstrations of `task`.
    fn lang_cubes_ee(task: TaskConfig) -> (CameraEnv, Demonstrations) {
        let mut render = RenderConfig::for_task(&task, 32, 32);
        render.cameras.retain(|c| c.name == "front");
        let demos = embodia_sim::rapier::expert_runs::record_task_expert_rendered(
            "lang-cubes-ee",
            Some(&task),
            3,
            3,
            7,
            0.0,
            Some(render.clone()),
        )
        .unwrap();
        let inner = embodia_sim::make_with("lang-cubes-ee", 2, Some(&task)).unwrap();
        (CameraEnv::new(inner, render).unwrap(), demos)
    }

    /// A VLA small enough for unit tests, 32×32 images.
    fn tiny_model() -> VlaConfig {
        use embodia_policies::vla::{TextConfig, VisionConfig};
        VlaConfig::new(0, 0)
            .with_vision(VisionConfig::new().with_image_size(32).with_width(32).with_depth(1).with_heads(2))
            .with_text(TextConfig::new().with_max_len(48).with_width(32).with_heads(2))
            .with_backbone_width(32)
            .with_backbone_depth(1)
            .with_expert_width(32)
            .with_expert_depth(1)
            .with_value_hidden(vec![16])
    }

    #[test]
    fn shifted_images_move_content_and_replicate_the_border() {
        // 3×3 image whose pixel (x, y) has channels (x, y, 9).
        let image: Vec<u8> = (0..9).flat_map(|i| [(i % 3) as u8, (i / 3) as u8, 9]).collect();
        let pixel = |out: &[u8], x: usize, y: usize| [out[(y * 3 + x) * 3], out[(y * 3 + x) * 3 + 1]];
        let mut out = Vec::new();
        extend_shifted(&mut out, &image, 3, (1, -1));
        assert_eq!(out.len(), 27);
        // Content moves right by one and up by one; the left column and bottom row replicate.
        assert_eq!(pixel(&out, 2, 0), [1, 1]);
        assert_eq!(pixel(&out, 1, 1), [0, 2]);
        assert_eq!(pixel(&out, 0, 0), [0, 1]);
        assert_eq!(pixel(&out, 0, 2), [0, 2]);
        assert!(out.chunks(3).all(|p| p[2] == 9));
        let mut same = Vec::new();
        extend_shifted(&mut same, &image, 3, (0, 0));
        assert_eq!(same, image);
        let bad = VlaSftConfig { image_shift: 48, ..VlaSftConfig::default() };
        assert!(bad.validate_fields().unwrap_err().to_string().contains("image_shift"));
    }

    /// A DAgger round adds `dagger_episodes` whole episodes of the model's own rollouts, with
    /// their images, instructions and states, before the held-out episodes (whose losses stay
    /// the same), and trains on their samples.
    #[test]
    fn dagger_adds_labelled_rollouts_before_the_validation_episodes() {
        let (mut env, demos) = lang_cubes_ee(embodia_sim::task_config("lang-cubes-ee").unwrap());
        let config = VlaSftConfig {
            model: tiny_model(),
            num_envs: 2,
            batch_size: 4,
            validation_episodes: 1,
            dagger_episodes: 3,
            ..VlaSftConfig::default()
        };
        let mut sft = VlaSft::new(config, &env, demos.clone(), None, Device::flex().autodiff(), 1).unwrap();
        let (samples, validation) = (sft.num_samples(), sft.validation_losses().unwrap());
        sft.dagger_round(&mut env).unwrap();
        let episodes = &sft.demos.episodes;
        assert_eq!(episodes.len(), 6);
        assert_eq!(episodes[..2], demos.episodes[..2]);
        assert_eq!(episodes[5], demos.episodes[2], "the held-out episode stays last");
        assert_eq!(sft.validation_losses().unwrap(), validation);
        let added = &episodes[2..5];
        assert_eq!(sft.num_samples(), samples + added.iter().map(Episode::len).sum::<usize>());
        let (od, ad, sd) = (demos.obs_dim, demos.action_dim, demos.state_dim);
        let clip = env.action_spec().bounds.high[0];
        for ep in added {
            assert!(!ep.is_empty() && ep.instruction.is_some());
            assert_eq!(
                (ep.observations.len(), ep.actions.len(), ep.states.len()),
                (ep.len() * od, ep.len() * ad, ep.len() * sd)
            );
            assert_eq!(ep.images[0].len(), ep.len() * 32 * 32 * 3);
            assert!(ep.actions.iter().all(|a| a.abs() <= clip) && ep.actions.iter().any(|&a| a != 0.0));
        }
        // Training reads the new samples.
        sft.update().unwrap();
        let bad = VlaSftConfig { dagger_expert_share: 1.5, ..VlaSftConfig::default() };
        assert!(bad.validate_fields().unwrap_err().to_string().contains("algo.dagger_expert_share"));
    }

    /// [`lang_cubes_ee`] with `critic` as the environment state, and a tiny model with a
    /// grounding head that predicts it.
    fn with_grounding(
        critic: Vec<embodia_sim::rapier::task_config::ObsKind>,
    ) -> (CameraEnv, Demonstrations, VlaSftConfig) {
        let mut task = embodia_sim::task_config("lang-cubes-ee").unwrap();
        task.observations.critic =
            Some(critic.into_iter().map(embodia_sim::rapier::task_config::ObsTerm::of).collect());
        let (env, demos) = lang_cubes_ee(task);
        let config = VlaSftConfig {
            model: tiny_model(),
            num_envs: 2,
            batch_size: 4,
            grounding_weight: 1.0,
            ..VlaSftConfig::default()
        };
        (env, demos, config)
    }

    /// The deterministic action chunks `learner` takes in `env`'s two environments.
    fn act(learner: &VlaSft, env: &CameraEnv) -> Vec<f32> {
        let mut actions = vec![0.0f32; 2 * 4 * learner.actor.model.action_dim];
        learner.act_env(env, &mut actions, None).unwrap();
        actions
    }

    #[test]
    fn a_learner_for_evaluation_acts_as_the_trained_one_without_demonstrations() {
        use embodia_sim::rapier::task_config::ObsKind;
        let (mut env, demos, config) = with_grounding(vec![ObsKind::ObjectPos]);
        let mut sft = VlaSft::new(config.clone(), &env, demos, None, Device::flex().autodiff(), 1).unwrap();
        for _ in 0..3 {
            sft.update().unwrap();
        }
        let ckpt = sft.checkpoint().unwrap();
        // Another seed: everything it acts with must come from the checkpoint.
        let mut eval = VlaSft::for_evaluation(config, &env, &ckpt, Device::flex().autodiff(), 9).unwrap();
        eval.restore(&ckpt).unwrap();
        env.reset(5);
        assert_eq!(act(&eval, &env), act(&sft, &env));
        let (diagnostics, trained) = (eval.eval_diagnostics(), sft.eval_diagnostics());
        assert!(diagnostics.iter().any(|(name, _)| name == "grounding_mse"), "{diagnostics:?}");
        assert_eq!(diagnostics, trained, "the same grounding errors, in the same state units");
        let err = eval.update().unwrap_err();
        assert!(err.to_string().contains("evaluation"), "{err}");
    }

    /// Fine-tuning (`init`) starts from the checkpoint's EMA weights, layout, statistics and
    /// grounding units, whatever the config's model says, with a fresh step count, and then
    /// trains; a checkpoint of another algorithm or grounding width is refused.
    #[test]
    fn fine_tuning_starts_from_the_init_runs_weights_and_statistics() {
        use embodia_sim::rapier::task_config::ObsKind;
        let (mut env, demos, config) = with_grounding(vec![ObsKind::ObjectPos]);
        let device = || Device::flex().autodiff();
        let mut sft = VlaSft::new(config.clone(), &env, demos.clone(), None, device(), 1).unwrap();
        for _ in 0..3 {
            sft.update().unwrap();
        }
        let ckpt = sft.checkpoint().unwrap();
        // Another seed and another layout in the config: what acts must come from the checkpoint.
        let tuning =
            VlaSftConfig { model: tiny_model().with_backbone_width(48), init: "runs/trained".into(), ..config };
        let mut tuned = VlaSft::new(tuning.clone(), &env, demos.clone(), Some(&ckpt), device(), 9).unwrap();
        assert_eq!(tuned.actor, sft.actor);
        assert_eq!((tuned.steps, tuned.config.model.backbone_width), (0, 32));
        env.reset(5);
        assert_eq!(act(&tuned, &env), act(&sft, &env));
        tuned.update().unwrap();
        assert_ne!(act(&tuned, &env), act(&sft, &env), "fine-tuning trains the adopted weights");

        let without_head = VlaSftConfig { grounding_weight: 0.0, ..tuning.clone() };
        let err = VlaSft::new(without_head, &env, demos.clone(), Some(&ckpt), device(), 9).err().unwrap().to_string();
        assert!(err.contains("grounding_weight") && err.contains("runs/trained"), "{err}");
        let mut dsrl = ckpt.clone();
        dsrl.put("algo", &"vla-dsrl").unwrap();
        let err = VlaSft::new(tuning, &env, demos, Some(&dsrl), device(), 9).err().unwrap().to_string();
        assert!(err.contains("must be a vla-sft run; runs/trained is from `vla-dsrl`"), "{err}");
    }

    /// Under `dagger_labels = "grounding"` the DAgger episodes' samples train the grounding
    /// head only: the flow loss of a mixed batch is that of its demonstration samples alone.
    #[test]
    fn grounding_dagger_episodes_train_the_head_alone() {
        use embodia_sim::rapier::task_config::ObsKind;
        let (mut env, demos, config) = with_grounding(vec![ObsKind::ObjectPos, ObsKind::TargetPos]);
        let config = VlaSftConfig {
            validation_episodes: 1,
            dagger_episodes: 2,
            dagger_expert_share: 0.0,
            dagger_labels: DaggerLabels::Grounding,
            ..config
        };
        let mut sft = VlaSft::new(config.clone(), &env, demos.clone(), None, Device::flex().autodiff(), 1).unwrap();
        let (demo_samples, state_norm) = (sft.num_samples(), sft.actor.state_norm.clone());
        sft.dagger_round(&mut env).unwrap();
        assert!(sft.num_samples() > demo_samples);
        assert_eq!(sft.actor.state_norm, state_norm, "the head's units stay the demonstrations'");
        let (demo, dagger) = (0, demo_samples);
        assert!(sft.has_action_label(demo) && !sft.has_action_label(dagger));
        assert!(sft.has_action_label(sft.train_samples), "validation samples are demonstrations");

        let m = sft.actor.model.clone();
        let hd = m.horizon * m.action_dim;
        let losses = |sft: &VlaSft, indices: &[usize], noise: &[f32]| {
            let t = vec![0.5f32; indices.len()];
            let (flow, grounding) = sft.losses(&sft.model, &sft.device, indices, &[], noise.to_vec(), t, None).unwrap();
            (to_host(flow.inner()).unwrap()[0], to_host(grounding.unwrap().inner()).unwrap()[0])
        };
        let noise: Vec<f32> = (0..2 * hd).map(|k| (k as f32 * 0.37).sin()).collect();
        let (mixed, demo_only, dagger_only) = (
            losses(&sft, &[demo, dagger], &noise),
            losses(&sft, &[demo], &noise[..hd]),
            losses(&sft, &[dagger], &noise[hd..]),
        );
        assert!((mixed.0 - demo_only.0).abs() <= 1e-5 * demo_only.0.abs(), "{mixed:?} vs {demo_only:?}");
        assert_eq!(dagger_only.0, 0.0, "no action label");
        assert!(dagger_only.1 > 0.0 && (mixed.1 - 0.5 * (demo_only.1 + dagger_only.1)).abs() < 1e-4);
        // Under action labels the same DAgger sample trains the expert.
        sft.config.dagger_labels = DaggerLabels::Actions;
        assert!(losses(&sft, &[dagger], &noise[hd..]).0 > 0.0);
        sft.update().unwrap();

        // A checkpoint whose state units differ (DAgger rounds refitted them before 2026-12-03)
        // restores with its own units, the samples restandardized in them.
        let mut ckpt = sft.checkpoint().unwrap();
        let mut actor: VlaActor = ckpt.get(VLA_ACTOR_KEY).unwrap();
        actor.state_norm.as_mut().unwrap().mean[0] += 0.5;
        ckpt.put(VLA_ACTOR_KEY, &actor).unwrap();
        let mut restored = VlaSft::new(config.clone(), &env, demos, None, Device::flex().autodiff(), 1).unwrap();
        let before = restored.sample_states.clone();
        restored.restore(&ckpt).unwrap();
        assert_eq!(restored.actor.state_norm, actor.state_norm);
        assert_ne!(restored.sample_states, before);

        let bad = VlaSftConfig { grounding_weight: 0.0, ..config };
        assert!(bad.validate_fields().unwrap_err().to_string().contains("dagger_labels"));
    }

    /// Under teacher forcing the action expert reads the samples' true states (the flow loss
    /// moves when they change); without it, the head's prediction (it does not). Acting can
    /// read the environments' true state instead of the prediction.
    #[test]
    fn teacher_forcing_feeds_the_expert_the_true_state() {
        use embodia_sim::rapier::task_config::{ObsKind, ObsTerm};
        let mut task = embodia_sim::task_config("lang-cubes-ee").unwrap();
        task.observations.critic = Some(vec![ObsTerm::of(ObsKind::ObjectPos), ObsTerm::of(ObsKind::TargetPos)]);
        let (env, demos) = lang_cubes_ee(task);
        let model = VlaConfig { grounding_to_expert: true, ..tiny_model() };
        let config = VlaSftConfig {
            model,
            num_envs: 2,
            batch_size: 4,
            grounding_weight: 1.0,
            grounding_teacher_forcing: true,
            ..VlaSftConfig::default()
        };
        let mut sft = VlaSft::new(config.clone(), &env, demos.clone(), None, Device::flex().autodiff(), 1).unwrap();
        let m = sft.actor.model.clone();
        let gd = m.grounding_dim;
        assert_eq!(gd, 6);
        let indices = [0, 5, 10];
        let noise = vec![0.3f32; indices.len() * m.horizon * m.action_dim];
        let t = vec![0.5f32; indices.len()];
        let losses = |sft: &VlaSft, teacher: bool| {
            let teacher_noise = teacher.then(|| vec![0.0; indices.len() * gd]);
            let (flow, grounding) =
                sft.losses(&sft.model, &sft.device, &indices, &[], noise.clone(), t.clone(), teacher_noise).unwrap();
            (to_host(flow.inner()).unwrap()[0], to_host(grounding.unwrap().inner()).unwrap()[0])
        };
        let (forced, predicted) = (losses(&sft, true), losses(&sft, false));
        assert_eq!(forced.1, predicted.1, "the head's loss does not depend on what the expert reads");
        assert_ne!(forced.0, predicted.0);
        sft.sample_states.iter_mut().for_each(|s| *s += 1.0);
        let (forced_moved, predicted_moved) = (losses(&sft, true), losses(&sft, false));
        assert_ne!(forced_moved.0, forced.0, "the teacher-forced expert reads the states");
        assert_eq!(predicted_moved.0, predicted.0, "the plain expert reads the prediction only");
        assert_ne!(predicted_moved.1, predicted.1);
        sft.update().unwrap();

        // Acting with the true state as the grounding input (the diagnostic) changes the actions
        // of this untrained head.
        let mut predicted = vec![0.0f32; 2 * m.chunk * m.action_dim];
        let mut true_state = predicted.clone();
        sft.act_env(&env, &mut predicted, None).unwrap();
        sft.config.evaluate_with_true_grounding = true;
        sft.act_env(&env, &mut true_state, None).unwrap();
        assert_ne!(predicted, true_state);
        // Both decisions compared the head's prediction with the true state.
        let diagnostics = sft.eval_diagnostics();
        assert_eq!(diagnostics.len(), 1 + gd);
        assert_eq!(diagnostics[0].0, "grounding_mse");
        assert!(diagnostics.iter().all(|(_, v)| v.is_finite() && *v > 0.0), "{diagnostics:?}");
        assert!(sft.eval_diagnostics().is_empty(), "cleared by the call");

        let plain = VlaSftConfig { model: tiny_model(), ..config };
        for field in ["grounding_teacher_forcing", "evaluate_with_true_grounding"] {
            let mut bad = plain.clone();
            bad.grounding_teacher_forcing = field == "grounding_teacher_forcing";
            bad.evaluate_with_true_grounding = field == "evaluate_with_true_grounding";
            let err =
                VlaSft::new(bad, &env, demos.clone(), None, Device::flex().autodiff(), 1).err().unwrap().to_string();
            assert!(err.contains(field), "{err}");
        }
    }
}
