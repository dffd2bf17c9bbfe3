//! `dsrl`: SAC on the initial noise of a frozen flow policy cloned by `sft`.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Dsrl, DsrlConfig, Learner};
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;
use crate::run_dir::init_checkpoint;

/// The registry entry.
pub const DSRL: Algorithm = Algorithm::of::<DsrlConfig>(
    "dsrl",
    Budget::EnvSteps,
    "DSRL: SAC on the initial noise of a frozen flow policy (--init runs/<sft-run>)",
);

impl AlgoSettings for DsrlConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        DsrlConfig::validate(self)
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let ckpt =
            init_checkpoint(&self.init, "dsrl starts from an SFT run of a flow policy: pass --init runs/<sft-run>")?;
        Ok(Box::new(Dsrl::new(self.clone(), env, &ckpt, device.clone(), run.seed)?))
    }

    fn export(&self, _algorithm: &str, _run_dir: &str) -> ExportForm {
        ExportForm::Refused(
            "a `dsrl` run acts with a noise policy feeding a frozen flow policy's ODE; exporting \
             or distilling that pair is not implemented (export the clone's one-step student instead)"
                .into(),
        )
    }
}
