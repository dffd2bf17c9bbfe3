//! `ppo`: Proximal Policy Optimization on a Gaussian policy.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Learner, Ppo, PpoConfig};
use embodia_deploy::export::ActionHead;
use embodia_sim::VecEnv;

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;

/// The registry entry.
pub const PPO: Algorithm = Algorithm::of::<PpoConfig>(
    "ppo",
    Budget::EnvSteps,
    "Proximal Policy Optimization (RSL-RL style): clipped surrogate, GAE, KL-adaptive learning rate",
);

impl AlgoSettings for PpoConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        PpoConfig::validate(self)
    }

    fn env_groups(&self) -> usize {
        self.env_groups
    }

    fn device_rollouts(&self) -> bool {
        self.device_rollouts
    }

    /// On one batch on the host: each rank's environments are a slice of the run's batch.
    fn data_parallel(&self) -> bool {
        self.env_groups == 1 && !self.device_rollouts
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        Ok(Box::new(Ppo::new(self.clone(), env, device.clone(), run.seed)?))
    }

    fn export(&self, _algorithm: &str, _run_dir: &str) -> ExportForm {
        ExportForm::Mlp {
            layers: "model.actor.mean.layers",
            activation: self.activation,
            head: ActionHead::Clip,
            normalized: self.normalize_obs,
        }
    }
}
