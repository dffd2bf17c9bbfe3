//! `vla-ppo-flow-sde` and `vla-ppo-flow-noise`: PPO with GRPO or GAE advantages on the VLA
//! cloned by `vla-sft`, every instruction at once.

use burn::tensor::Device;
use embodia_algos::{AdvantageEstimator, AlgoError, FlowRlMethod, Learner, PpoFlowConfig, VlaPpo};
use embodia_sim::VecEnv;
use serde::{Deserialize, Serialize};

use super::vla_sft::{init_cameras, vla_init_checkpoint, vla_refusal};
use super::{AlgoConfig, AlgoSettings, Algorithm, Budget, ExportForm, RunContext, read_as};
use crate::error::RunError;

/// The settings of PPO on the VLA: flow-policy PPO's, as their own type so that a VLA run
/// is told apart from a state-policy one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VlaPpoConfig(pub PpoFlowConfig);

/// A VLA run starts from GRPO advantages.
impl Default for VlaPpoConfig {
    fn default() -> Self {
        Self(PpoFlowConfig { advantage: AdvantageEstimator::Grpo, ..PpoFlowConfig::default() })
    }
}

/// The registry entry of Flow-SDE on the VLA.
pub const VLA_PPO_FLOW_SDE: Algorithm = Algorithm {
    defaults: || {
        AlgoConfig::new(VlaPpoConfig(PpoFlowConfig { method: FlowRlMethod::Sde, ..VlaPpoConfig::default().0 }))
    },
    read: |t| Ok(AlgoConfig::new(VlaPpoConfig(PpoFlowConfig { method: FlowRlMethod::Sde, ..read_as(t)? }))),
    ..Algorithm::of::<VlaPpoConfig>(
        "vla-ppo-flow-sde",
        Budget::EnvSteps,
        "πRL Flow-SDE on the VLA (GRPO, or GAE with its value head), every instruction at once (--init runs/<vla-sft-run>)",
    )
};

/// The registry entry of Flow-Noise on the VLA.
pub const VLA_PPO_FLOW_NOISE: Algorithm = Algorithm {
    defaults: || {
        AlgoConfig::new(VlaPpoConfig(PpoFlowConfig { method: FlowRlMethod::Noise, ..VlaPpoConfig::default().0 }))
    },
    read: |t| Ok(AlgoConfig::new(VlaPpoConfig(PpoFlowConfig { method: FlowRlMethod::Noise, ..read_as(t)? }))),
    ..Algorithm::of::<VlaPpoConfig>(
        "vla-ppo-flow-noise",
        Budget::EnvSteps,
        "πRL Flow-Noise on the VLA (GRPO, or GAE with its value head) (--init runs/<vla-sft-run>)",
    )
};

impl AlgoSettings for VlaPpoConfig {
    fn num_envs(&self) -> usize {
        self.0.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        self.0.validate()
    }

    fn cameras(&self, run: &RunContext) -> Result<Option<(Vec<String>, usize)>, RunError> {
        init_cameras(run, &self.0.init)
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let ckpt = vla_init_checkpoint(run, &self.0.init)?;
        Ok(Box::new(VlaPpo::new(self.0.clone(), env, &ckpt, device.clone(), run.seed)?))
    }

    fn export(&self, algorithm: &str, _run_dir: &str) -> ExportForm {
        vla_refusal(algorithm)
    }
}
