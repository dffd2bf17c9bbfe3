//! `vla-sft`: flow-matching behaviour cloning of the vision-language-action model from
//! demonstrations with camera images and instructions; what the other `vla-*` algorithms
//! share about the run they start from.

use std::path::Path;

use burn::tensor::Device;
use embodia_algos::{AlgoError, Checkpoint, Learner, VLA_ACTOR_KEY, VlaActor, VlaSft, VlaSftConfig};
use embodia_sim::VecEnv;
use embodia_sim::demonstrations::Demonstrations;

use super::demonstrations::successful_demos;
use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;
use crate::run_dir::init_checkpoint;

/// The registry entry.
pub const VLA_SFT: Algorithm = Algorithm::of::<VlaSftConfig>(
    "vla-sft",
    Budget::GradientSteps,
    "flow-matching behaviour cloning of the vision-language-action model from demonstrations with camera images and instructions (language tasks: lang-cubes)",
);

impl AlgoSettings for VlaSftConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        self.validate_fields()
    }

    /// Behaviour cloning trains to the end of its learning-rate schedule.
    fn default_total_steps(&self) -> u64 {
        self.decay_steps
    }

    fn cameras(&self, _run: &RunContext) -> Result<Option<(Vec<String>, usize)>, RunError> {
        Ok(Some((self.cameras.clone(), self.model.vision.image_size)))
    }

    /// Fine-tuning `algo.init` takes that run's model layout and cameras, so that its
    /// environments render them and its `config.toml` says what it trains.
    fn adopt_init(&mut self, run: &RunContext) -> Result<(), RunError> {
        if self.init.is_empty() {
            return Ok(());
        }
        let actor: VlaActor = vla_init_checkpoint(run, &self.init)?.get(VLA_ACTOR_KEY)?;
        self.model = actor.model;
        self.cameras = actor.cameras;
        Ok(())
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let mut demos = match &self.dataset {
            Some(dir) => {
                let demos = embodia_dataset::read(Path::new(dir))?.demonstrations;
                refuse_held_out(run, &demos, &format!("algo.dataset: {dir}"))?;
                demos
            }
            None => record_vla_demos(run, self)?,
        };
        for dir in &self.policy_datasets {
            let episodes = embodia_dataset::read(Path::new(dir))?.demonstrations;
            refuse_held_out(run, &episodes, &format!("algo.policy_datasets: {dir}"))?;
            demos.insert_episodes(0, episodes).map_err(|message| RunError::Io {
                path: format!("algo.policy_datasets: {dir}"),
                message: format!("its episodes have {message}"),
            })?;
        }
        let init = if self.init.is_empty() { None } else { Some(vla_init_checkpoint(run, &self.init)?) };
        Ok(Box::new(VlaSft::new(self.clone(), env, demos, init.as_ref(), device.clone(), run.seed)?))
    }

    /// Without recording its demonstrations again: the checkpoint holds what acting needs.
    fn for_evaluation(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        let mut learner = VlaSft::for_evaluation(self.clone(), env, ckpt, device.clone(), run.seed)?;
        learner.restore(ckpt)?;
        Ok(Box::new(learner))
    }

    fn export(&self, algorithm: &str, _run_dir: &str) -> ExportForm {
        vla_refusal(algorithm)
    }
}

/// Why a VLA run is not exported.
pub(super) fn vla_refusal(algorithm: &str) -> ExportForm {
    ExportForm::Refused(format!(
        "a `{algorithm}` run has a vision-language-action model, which reads images and instructions; \
         exporting it as a one-step policy of the observation vector is not implemented"
    ))
}

/// The checkpoint of the `vla-sft` run `init` a VLA run starts from.
pub(super) fn vla_init_checkpoint(run: &RunContext, init: &str) -> Result<Checkpoint, RunError> {
    init_checkpoint(init, &format!("{} starts from a vla-sft run: pass --init runs/<vla-sft-run>", run.algorithm))
}

/// The cameras, and their resolution in pixels, of the VLA in the `vla-sft` run `init`.
pub(super) fn init_cameras(run: &RunContext, init: &str) -> Result<Option<(Vec<String>, usize)>, RunError> {
    let actor: VlaActor = vla_init_checkpoint(run, init)?.get(VLA_ACTOR_KEY)?;
    Ok(Some((actor.cameras, actor.model.vision.image_size)))
}

/// `c.demos` successful scripted-expert episodes of the run's task with the images of the
/// cameras the VLA reads, recorded in memory from seed `seed + DEMO_SEED_OFFSET` (DART noise
/// `c.demo_noise`).
fn record_vla_demos(run: &RunContext, c: &VlaSftConfig) -> Result<Demonstrations, RunError> {
    let size = c.model.vision.image_size;
    let task = run.task_config().ok_or_else(|| RunError::Io {
        path: format!("--task {}", run.task),
        message: "vla-sft records demonstrations with cameras; only rapier tasks have them".into(),
    })?;
    let mut render = embodia_sim::camera::RenderConfig::for_task(&task, size, size);
    render.cameras.retain(|cam| c.cameras.contains(&cam.name));
    let record = |count: usize, seed: u64| {
        embodia_sim::rapier::expert_runs::record_task_expert_rendered(
            run.task,
            Some(&task),
            16,
            count,
            seed,
            c.demo_noise,
            Some(render.clone()),
        )
    };
    successful_demos(run.task, c.demos, run.seed, record)
}

/// Fails when `demos` (read from `source`) hold episodes of an instruction the run's task holds
/// out of training: training on them would void every held-out evaluation.
fn refuse_held_out(run: &RunContext, demos: &Demonstrations, source: &str) -> Result<(), RunError> {
    let task = run.task_config();
    let held_out = task.and_then(|t| t.command.language).map(|l| l.held_out).unwrap_or_default();
    let mut found: Vec<&str> = demos
        .episodes
        .iter()
        .filter_map(|e| e.instruction.as_deref())
        .filter(|i| held_out.iter().any(|h| h == i))
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    let episodes = found.len();
    found.sort_unstable();
    found.dedup();
    Err(RunError::Io {
        path: source.into(),
        message: format!(
            "{episodes} episodes are of instructions task `{}` holds out of training ({}): training on them voids the held-out evaluation; remove them from the dataset, or train a task without them held out (env.command.language.held_out)",
            run.task,
            found.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>().join(", ")
        ),
    })
}
