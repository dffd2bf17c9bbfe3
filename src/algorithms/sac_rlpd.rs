//! `sac-rlpd`: SAC as RLPD runs it (Ball et al. 2023; SERL's learner): demonstrations beside
//! the online data, half of every batch from each, an ensemble of ten layer-normalized critics
//! whose target is the minimum of two drawn at random, several updates per environment step
//! and no entropy bonus in the critics' target. The same learner as `sac` (its settings, with
//! these defaults); on a rapier task the demonstrations are the scripted expert's.

use burn::tensor::Device;
use embodia_algos::{AlgoError, Checkpoint, Learner, SacConfig};
use embodia_sim::VecEnv;
use serde::{Deserialize, Serialize};

use super::{AlgoSettings, Algorithm, Budget, ExportForm, RunContext};
use crate::error::RunError;

/// SAC's settings with RLPD's defaults, as their own type so that the registry gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SacRlpdConfig(pub SacConfig);

impl Default for SacRlpdConfig {
    /// RLPD's choices, scaled to two CPU cores: 10 critics, a target from 2, layer norm, half
    /// of each batch from 20 scripted-expert demonstrations, 4 updates per step (RLPD: 20),
    /// learning from 1,000 steps, no entropy bonus in the target.
    fn default() -> Self {
        Self(SacConfig {
            critics: 10,
            critic_subset: 2,
            layer_norm: true,
            demo_ratio: 0.5,
            demos: 20,
            updates_per_step: 4,
            learning_starts: 1_000,
            backup_entropy: false,
            ..SacConfig::default()
        })
    }
}

/// The registry entry.
pub const SAC_RLPD: Algorithm = Algorithm::of::<SacRlpdConfig>(
    "sac-rlpd",
    Budget::EnvSteps,
    "SAC as RLPD: demonstrations and online data half and half, 10 layer-normalized critics, high update ratio",
);

impl AlgoSettings for SacRlpdConfig {
    fn num_envs(&self) -> usize {
        self.0.num_envs
    }

    fn validate(&self) -> Result<(), AlgoError> {
        AlgoSettings::validate(&self.0)
    }

    fn warnings(&self, total_steps: u64) -> Vec<String> {
        self.0.warnings(total_steps)
    }

    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError> {
        self.0.build(run, env, device)
    }

    fn for_evaluation(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        self.0.for_evaluation(run, env, ckpt, device)
    }

    fn export(&self, algorithm: &str, run_dir: &str) -> ExportForm {
        self.0.export(algorithm, run_dir)
    }
}
