//! `dppo`: PPO over the last denoising steps of a diffusion policy cloned by `sft` with
//! `algo.model = "diffusion"`.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Dppo, DppoConfig, Learner};
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext, multi_step_refusal};
use crate::error::RunError;
use crate::run_dir::init_checkpoint;

/// The registry entry.
pub const DPPO: Algorithm = Algorithm::of::<DppoConfig>(
    "dppo",
    Budget::EnvSteps,
    "DPPO: PPO over the last K′ denoising steps of a diffusion policy (--init runs/<diffusion-sft-run>)",
);

impl AlgoSettings for DppoConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        DppoConfig::validate(self)
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let ckpt = init_checkpoint(
            &self.init,
            "dppo starts from a diffusion SFT run: pass --init runs/<sft-run> (trained with --set algo.model=diffusion)",
        )?;
        Ok(Box::new(Dppo::new(self.clone(), env, &ckpt, device.clone(), run.seed)?))
    }

    fn export(&self, algorithm: &str, run_dir: &str) -> ExportForm {
        multi_step_refusal(algorithm, run_dir)
    }
}
