//! `ppo-flow-sde` and `ppo-flow-noise`: PPO on a flow policy cloned by `sft` (πRL's Flow-SDE
//! and Flow-Noise), optionally with a one-step student distilled alongside.

use std::path::Path;

use burn::tensor::Device;
use embodia_algos::{AdvantageEstimator, AlgoError, DistillAlongside, FlowRlMethod, Learner, PpoFlow, PpoFlowConfig};
use embodia_sim::VecEnv;

use super::{AlgoConfig, AlgoSettings, Algorithm, Budget, ExportForm, RunContext, multi_step_refusal, read_as};
use crate::error::RunError;
use crate::run_dir::{STUDENT_DIR, init_checkpoint};

/// The registry entry of Flow-SDE.
pub const PPO_FLOW_SDE: Algorithm = Algorithm {
    defaults: || AlgoConfig::new(PpoFlowConfig { method: FlowRlMethod::Sde, ..PpoFlowConfig::default() }),
    read: |t| Ok(AlgoConfig::new(PpoFlowConfig { method: FlowRlMethod::Sde, ..read_as(t)? })),
    ..Algorithm::of::<PpoFlowConfig>(
        "ppo-flow-sde",
        Budget::EnvSteps,
        "πRL Flow-SDE: PPO on a flow policy with one stochastic denoising step (--init runs/<sft-run>; --distill-during-rl adds a one-step student)",
    )
};

/// The registry entry of Flow-Noise.
pub const PPO_FLOW_NOISE: Algorithm = Algorithm {
    defaults: || AlgoConfig::new(PpoFlowConfig { method: FlowRlMethod::Noise, ..PpoFlowConfig::default() }),
    read: |t| Ok(AlgoConfig::new(PpoFlowConfig { method: FlowRlMethod::Noise, ..read_as(t)? })),
    ..Algorithm::of::<PpoFlowConfig>(
        "ppo-flow-noise",
        Budget::EnvSteps,
        "πRL Flow-Noise: PPO on a flow policy with a learned noise head (--init runs/<sft-run>; --distill-during-rl adds a one-step student)",
    )
};

impl AlgoSettings for PpoFlowConfig {
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        PpoFlowConfig::validate(self)?;
        self.distill_during_rl.as_ref().map_or(Ok(()), |d| d.validate())
    }

    /// With GAE advantages and neither self-imitation nor a student trained alongside: every row
    /// of every rank enters one update ([`embodia_algos::data_parallel`]).
    fn data_parallel(&self) -> bool {
        self.advantage == AdvantageEstimator::Gae && self.self_imitation_coef == 0.0 && self.distill_during_rl.is_none()
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        let missing = format!("{} starts from an SFT run: pass --init runs/<sft-run>", run.algorithm);
        let ckpt = init_checkpoint(&self.init, &missing)?;
        let rl = PpoFlow::new(self.clone(), env, &ckpt, device.clone(), run.seed)?;
        Ok(match &self.distill_during_rl {
            Some(d) => Box::new(DistillAlongside::new(rl, d, env, device.clone(), run.seed)?),
            None => Box::new(rl),
        })
    }

    fn student(&self, teacher_dir: &str) -> Option<AlgoConfig> {
        let d = self.distill_during_rl.as_ref()?;
        Some(AlgoConfig::new(d.distill_config(teacher_dir.to_string(), self.num_envs)))
    }

    fn export(&self, algorithm: &str, run_dir: &str) -> ExportForm {
        if self.distill_during_rl.is_none() {
            return multi_step_refusal(algorithm, run_dir);
        }
        ExportForm::Refused(format!(
            "a `{algorithm}` run has a multi-step flow policy, which cannot be exported as one forward pass; \
             this run trained a one-step student alongside: export {}",
            Path::new(run_dir).join(STUDENT_DIR).display()
        ))
    }
}
