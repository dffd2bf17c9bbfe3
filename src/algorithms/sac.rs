//! `sac`: Soft Actor-Critic on a Gaussian policy squashed by `tanh`.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Checkpoint, Learner, Sac, SacConfig};
use embodia_deploy::export::ActionHead;
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;

/// The registry entry.
pub const SAC: Algorithm = Algorithm::of::<SacConfig>(
    "sac",
    Budget::EnvSteps,
    "Soft Actor-Critic: off-policy, twin Q, automatic entropy temperature; sample-efficient",
);

impl AlgoSettings for SacConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        SacConfig::validate(self)?;
        if self.batch_size > self.buffer_size {
            return Err(AlgoError::Config {
                field: "algo.batch_size".into(),
                value: self.batch_size.to_string(),
                allowed: format!("≤ algo.buffer_size ({})", self.buffer_size),
            });
        }
        Ok(())
    }

    fn warnings(&self, total_steps: u64) -> Vec<String> {
        if self.learning_starts < total_steps {
            return Vec::new();
        }
        vec![format!(
            "algo.learning_starts ({}) ≥ total_steps ({total_steps}): the run acts at random and never updates",
            self.learning_starts
        )]
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let mut sac = Sac::new(self.clone(), env, device.clone(), run.seed)?;
        let demos = match &self.dataset {
            Some(dir) => Some(embodia_dataset::read(std::path::Path::new(dir))?.demonstrations),
            None if self.demos > 0 => Some(super::record_demos(run.task, run.env, self.demos, run.seed, 0.0)?),
            None => None,
        };
        if let Some(demos) = demos {
            sac.add_demonstrations(&demos)?;
        }
        Ok(Box::new(sac))
    }

    /// Acting needs no demonstrations: they are not recorded again.
    fn for_evaluation(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        let mut sac = Sac::new(self.clone(), env, device.clone(), run.seed)?;
        sac.restore(ckpt)?;
        Ok(Box::new(sac))
    }

    fn export(&self, _algorithm: &str, _run_dir: &str) -> ExportForm {
        ExportForm::Mlp {
            layers: "actor.net.layers",
            activation: self.activation,
            head: ActionHead::SquashedAffine,
            normalized: false,
        }
    }
}
