//! `sft`: behaviour cloning of an action-chunk policy (flow matching, or DDPM with
//! `algo.model = "diffusion"`) from demonstrations.

use std::path::Path;

use burn::tensor::Device;
use embodia_algos::{AlgoError, ChunkModel, DiffusionSft, Learner, Sft, SftConfig};
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext, multi_step_refusal, record_demos};
use crate::error::RunError;

/// The registry entry.
pub const SFT: Algorithm = Algorithm::of::<SftConfig>(
    "sft",
    Budget::GradientSteps,
    "flow-matching (or, with --set algo.model=diffusion, DDPM) behaviour cloning of an action-chunk policy from demonstrations (--demos N)",
);

impl AlgoSettings for SftConfig {
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

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let demos = match &self.dataset {
            Some(dir) => embodia_dataset::read(Path::new(dir))?.demonstrations,
            None => record_demos(run.task, run.env, self.demos, run.seed, self.demo_noise)?,
        };
        Ok(match self.model {
            ChunkModel::Flow => Box::new(Sft::new(self.clone(), env, &demos, device.clone(), run.seed)?),
            ChunkModel::Diffusion => Box::new(DiffusionSft::new(self.clone(), env, &demos, device.clone(), run.seed)?),
        })
    }

    fn export(&self, algorithm: &str, run_dir: &str) -> ExportForm {
        multi_step_refusal(algorithm, run_dir)
    }
}
