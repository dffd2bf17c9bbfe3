//! `distill`: a one-step student of a flow policy's K-step sampler (`embodia distill`).

use std::path::Path;

use burn::tensor::Device;
use embodia_algos::{AlgoError, Checkpoint, Distill, DistillConfig, Learner};
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;
use crate::run_dir::{CHECKPOINT_DIR, check_run_dir};

/// The registry entry.
pub const DISTILL: Algorithm = Algorithm::of::<DistillConfig>(
    "distill",
    Budget::GradientSteps,
    "one-step student of a flow policy's K-step sampler (`embodia distill --run runs/<flow-run>`)",
);

impl AlgoSettings for DistillConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        DistillConfig::validate(self)
    }

    /// Distillation trains to the end of its learning-rate schedule.
    fn default_total_steps(&self) -> u64 {
        self.decay_steps
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        if self.teacher.is_empty() {
            return Err(RunError::Io {
                path: "algo.teacher".into(),
                message: "distillation needs a teacher: `embodia distill --run runs/<flow-run>`".into(),
            });
        }
        let teacher = Path::new(&self.teacher);
        check_run_dir(teacher)?;
        let ckpt = Checkpoint::load(&teacher.join(CHECKPOINT_DIR))?;
        Ok(Box::new(Distill::new(self.clone(), env, &ckpt, device.clone(), run.seed)?))
    }

    /// A distill checkpoint holds its teacher, so the teacher's run directory is not needed again.
    fn restore(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        let mut learner = Distill::new(self.clone(), env, ckpt, device.clone(), run.seed)?;
        learner.restore(ckpt)?;
        Ok(Box::new(learner))
    }

    fn export(&self, _algorithm: &str, _run_dir: &str) -> ExportForm {
        ExportForm::OneStepStudent
    }
}
