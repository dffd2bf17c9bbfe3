//! `vla-dsrl`: SAC on the initial noise of a frozen VLA cloned by `vla-sft`, every
//! instruction at once.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Learner, VlaDsrl, VlaDsrlConfig};
use embodia_sim::VecEnv;

use super::vla_sft::{init_cameras, vla_init_checkpoint, vla_refusal};
use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;

/// The registry entry.
pub const VLA_DSRL: Algorithm = Algorithm::of::<VlaDsrlConfig>(
    "vla-dsrl",
    Budget::EnvSteps,
    "DSRL: SAC on the initial noise of a frozen VLA, every instruction at once (--init runs/<vla-sft-run>)",
);

impl AlgoSettings for VlaDsrlConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        VlaDsrlConfig::validate(self)
    }

    fn cameras(&self, run: &RunContext) -> Result<Option<(Vec<String>, usize)>, RunError> {
        init_cameras(run, &self.init)
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let ckpt = vla_init_checkpoint(run, &self.init)?;
        Ok(Box::new(VlaDsrl::new(self.clone(), env, &ckpt, device.clone(), run.seed)?))
    }

    fn export(&self, algorithm: &str, _run_dir: &str) -> ExportForm {
        vla_refusal(algorithm)
    }
}
