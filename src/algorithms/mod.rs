//! The algorithms `embodia train` runs, one file each, and [`ALGORITHMS`], the registry that
//! config resolution, run construction, export and the benchmarks ask.
//!
//! # How it works
//! 1. Each algorithm's `[algo]` settings type (its config from `embodia-algos`) implements
//!    [`AlgoSettings`] in its file here: how many environments it trains on, how it builds and
//!    restores its learner, what cameras it reads, how `embodia export` writes its policy.
//! 2. Each file also holds the algorithm's registry entry ([`Algorithm`]): the name `--algo`
//!    takes, its one-line summary, its budget's unit, its defaults and how its `[algo]` table
//!    is read (strictly, so that an unknown key names its line).
//! 3. A run's settings are an [`AlgoConfig`]: the resolved settings behind the trait, so the
//!    rest of the crate never matches on algorithm names. Code that needs one algorithm's own
//!    fields asks for them by type ([`AlgoConfig::get`]).
//!
//! # Adding an algorithm
//! Its learner in `embodia-algos`, then a file here implementing [`AlgoSettings`] for its
//! config with a `pub const` [`Algorithm`] entry, its `mod` line, and one line in
//! [`ALGORITHMS`]. Presets per task go in `assets/configs/` (see `crate::config`).

mod demonstrations;
mod distill;
mod dppo;
mod dsrl;
mod ppo;
mod ppo_flow;
mod sac;
mod sac_rlpd;
mod sft;
mod vla_dsrl;
mod vla_ppo;
mod vla_sft;

use std::any::Any;
use std::fmt;

use burn::tensor::Device;
use embodia_algos::{AlgoError, Checkpoint, Learner};
use embodia_deploy::export::ActionHead;
use embodia_policies::Activation;
use embodia_sim::{TaskConfig, VecEnv};
use serde::de::DeserializeOwned;

pub use demonstrations::{DEMO_SEED_OFFSET, record_demos};
pub use vla_ppo::VlaPpoConfig;

use crate::error::{ConfigError, RunError};

/// The registry of algorithms, in the order `embodia list` prints them.
pub const ALGORITHMS: [&Algorithm; 13] = [
    &sac::SAC,
    &ppo::PPO,
    &sac_rlpd::SAC_RLPD,
    &sft::SFT,
    &ppo_flow::PPO_FLOW_SDE,
    &ppo_flow::PPO_FLOW_NOISE,
    &dppo::DPPO,
    &dsrl::DSRL,
    &distill::DISTILL,
    &vla_sft::VLA_SFT,
    &vla_ppo::VLA_PPO_FLOW_SDE,
    &vla_ppo::VLA_PPO_FLOW_NOISE,
    &vla_dsrl::VLA_DSRL,
];

/// The registered algorithm called `name`.
pub fn algorithm(name: &str) -> Result<&'static Algorithm, ConfigError> {
    ALGORITHMS.iter().copied().find(|a| a.name == name).ok_or_else(|| unknown_algorithm(name))
}

/// The error for an algorithm name that is not registered, listing the valid ones.
pub fn unknown_algorithm(name: &str) -> ConfigError {
    let valid = ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ");
    ConfigError::UnknownAlgorithm { name: name.to_string(), valid }
}

/// What a run's step budget (`total_steps`) counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Environment steps, summed over environments (the RL algorithms).
    EnvSteps,
    /// Gradient steps (behaviour cloning and distillation).
    GradientSteps,
}

impl Budget {
    /// The unit in words, as `train` prints it.
    pub fn unit(self) -> &'static str {
        match self {
            Budget::EnvSteps => "env steps",
            Budget::GradientSteps => "gradient steps",
        }
    }
}

/// One algorithm `embodia train` can run: its name, what `embodia list` says about it, and how
/// its `[algo]` table is defaulted and read.
pub struct Algorithm {
    /// The name `--algo` takes.
    pub name: &'static str,
    /// One line for `embodia list`.
    pub summary: &'static str,
    /// What its step budget counts.
    pub budget: Budget,
    /// The `[algo]` settings every run starts from, before presets, files and `--set`.
    pub defaults: fn() -> AlgoConfig,
    /// Reads a merged `[algo]` table; the error is the deserializer's message.
    pub read: fn(toml::Value) -> Result<AlgoConfig, String>,
    /// Reads a user's `[algo]` table strictly, so that unknown keys and wrong types are
    /// reported with their line.
    pub check_file: fn(&str) -> Result<(), toml::de::Error>,
}

impl Algorithm {
    /// The entry of the settings type `A`: its defaults, read and checked with its schema.
    pub const fn of<A: AlgoSettings + Default + DeserializeOwned>(
        name: &'static str,
        budget: Budget,
        summary: &'static str,
    ) -> Self {
        Self { name, summary, budget, defaults: default_of::<A>, read: read_into::<A>, check_file: check_file_as::<A> }
    }
}

/// The default settings `A`.
fn default_of<A: AlgoSettings + Default>() -> AlgoConfig {
    AlgoConfig::new(A::default())
}

/// Reads a merged `[algo]` table as the settings `A`, behind the trait.
fn read_into<A: AlgoSettings + DeserializeOwned>(table: toml::Value) -> Result<AlgoConfig, String> {
    read_as::<A>(table).map(AlgoConfig::new)
}

/// Deserializes a merged `[algo]` table as `A` (for entries that adjust what they read).
pub(crate) fn read_as<A: DeserializeOwned>(table: toml::Value) -> Result<A, String> {
    table.try_into::<A>().map_err(|e| e.message().trim_end().to_string())
}

/// Reads a user's whole file strictly with the `[algo]` schema `A`.
pub(crate) fn check_file_as<A: DeserializeOwned>(text: &str) -> Result<(), toml::de::Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // Read only to check the file.
    struct File<A> {
        task: Option<String>,
        algorithm: Option<String>,
        seed: Option<u64>,
        total_steps: Option<u64>,
        eval_episodes: Option<usize>,
        checkpoint_every: Option<u64>,
        algo: Option<A>,
        // Partial [env] tables are merged over the task's defaults and checked whole afterwards.
        env: Option<toml::Table>,
    }
    toml::from_str::<File<A>>(text).map(|_| ())
}

/// What a learner is built for: the run's task, its `[env]` table, seed and algorithm name.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// Task name.
    pub task: &'a str,
    /// The run's `[env]` table (rapier tasks; `None` for classic tasks).
    pub env: Option<&'a TaskConfig>,
    /// Seed of networks, environments and sampling.
    pub seed: u64,
    /// The registered algorithm name (`ppo-flow-sde` and `ppo-flow-noise` share settings).
    pub algorithm: &'a str,
}

impl RunContext<'_> {
    /// The run's `[env]` table, or the task's default one; `None` for classic tasks.
    pub fn task_config(&self) -> Option<TaskConfig> {
        self.env.cloned().or_else(|| embodia_sim::task_config(self.task))
    }
}

/// How `embodia export` writes a run's deterministic policy.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportForm {
    /// An MLP actor whose deterministic action is its last layer through `head`.
    Mlp {
        /// Tensor-name prefix of the actor's layers in the checkpoint.
        layers: &'static str,
        /// Hidden-layer activation.
        activation: Activation,
        /// How the last layer's output becomes the action.
        head: ActionHead,
        /// Whether the checkpoint's observation normalizer (`normalizer`) applies first.
        normalized: bool,
    },
    /// The one-step student of a distill checkpoint, folded into a plain MLP.
    OneStepStudent,
    /// Not exportable as one forward pass: why, and what to do instead.
    Refused(String),
}

/// What the command line needs of one algorithm's `[algo]` settings. Implemented in this
/// module's files, one per algorithm, on the settings types of `embodia-algos`.
pub trait AlgoSettings: SettingsValue + fmt::Debug + Send + Sync + 'static {
    /// Number of parallel training environments.
    fn num_envs(&self) -> usize;

    /// Checks each field's range and the rules between fields.
    fn validate(&self) -> Result<(), AlgoError>;

    /// Settings that are allowed but probably not meant, given the run's budget.
    fn warnings(&self, _total_steps: u64) -> Vec<String> {
        Vec::new()
    }

    /// The step budget of a run that does not set `total_steps`.
    fn default_total_steps(&self) -> u64 {
        100_000
    }

    /// Groups the training batch is split into, so that one group is simulated while the
    /// policy acts for another (1: one batch).
    fn env_groups(&self) -> usize {
        1
    }

    /// Whether it trains on the task's tensor version with the rollout kept on the compute
    /// device ([`Learner::iterate_tensor`]).
    fn device_rollouts(&self) -> bool {
        false
    }

    /// Whether its learner trains data-parallel (`embodia train --dist ddp`): its ranks
    /// together compute what one process with all their environments would
    /// ([`embodia_algos::data_parallel`]). Default false: such a run is refused.
    fn data_parallel(&self) -> bool {
        false
    }

    /// The cameras the policy reads, by name, and their square resolution, pixels; `None` for
    /// policies of the observation vector alone.
    fn cameras(&self, _run: &RunContext) -> Result<Option<(Vec<String>, usize)>, RunError> {
        Ok(None)
    }

    /// Takes from the run it starts from what its own settings must say before the run is
    /// written (a fine-tuning `vla-sft` takes its model layout and cameras).
    fn adopt_init(&mut self, _run: &RunContext) -> Result<(), RunError> {
        Ok(())
    }

    /// A new learner for `env`.
    fn build(&self, run: &RunContext, env: &dyn VecEnv, device: &Device) -> Result<Box<dyn Learner>, RunError>;

    /// The learner restored from its own checkpoint `ckpt`.
    fn restore(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        let mut learner = self.build(run, env, device)?;
        learner.restore(ckpt)?;
        Ok(learner)
    }

    /// The learner restored from `ckpt` to act only (evaluation, export checks): what it
    /// needs to train (demonstrations) is not rebuilt where the checkpoint holds what acting needs.
    fn for_evaluation(
        &self,
        run: &RunContext,
        env: &dyn VecEnv,
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<Box<dyn Learner>, RunError> {
        self.restore(run, env, ckpt, device)
    }

    /// The `distill` settings of the one-step student trained alongside, whose teacher is the
    /// run in `teacher_dir`; `None` when none is.
    fn student(&self, _teacher_dir: &str) -> Option<AlgoConfig> {
        None
    }

    /// How `embodia export` writes the policy of a run of `algorithm` in `run_dir`.
    fn export(&self, algorithm: &str, run_dir: &str) -> ExportForm;
}

/// What every settings type gets from its derives: cloning, comparison, serialization and
/// downcasting behind `dyn AlgoSettings`. Implemented for every `Clone + PartialEq +
/// Serialize` settings type.
pub trait SettingsValue {
    /// A boxed copy.
    fn clone_settings(&self) -> Box<dyn AlgoSettings>;
    /// Whether `other` is the same type with equal fields.
    fn same_settings(&self, other: &dyn AlgoSettings) -> bool;
    /// The settings for serde, type-erased.
    fn as_serialize(&self) -> &dyn erased_serde::Serialize;
    /// For [`AlgoConfig::get`].
    fn as_any(&self) -> &dyn Any;
    /// For [`AlgoConfig::get_mut`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: AlgoSettings + Clone + PartialEq + serde::Serialize> SettingsValue for T {
    fn clone_settings(&self) -> Box<dyn AlgoSettings> {
        Box::new(self.clone())
    }
    fn same_settings(&self, other: &dyn AlgoSettings) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn as_serialize(&self) -> &dyn erased_serde::Serialize {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The hyperparameters of one run's algorithm (the `[algo]` table), whichever it is.
/// Dereferences to [`AlgoSettings`]; serializes as the settings' own table.
pub struct AlgoConfig(Box<dyn AlgoSettings>);

impl AlgoConfig {
    /// Wraps one algorithm's settings.
    pub fn new<A: AlgoSettings>(settings: A) -> Self {
        Self(Box::new(settings))
    }

    /// The settings, if they are of type `A`.
    pub fn get<A: AlgoSettings>(&self) -> Option<&A> {
        self.0.as_any().downcast_ref()
    }

    /// The settings, mutably, if they are of type `A`.
    pub fn get_mut<A: AlgoSettings>(&mut self) -> Option<&mut A> {
        self.0.as_any_mut().downcast_mut()
    }
}

impl std::ops::Deref for AlgoConfig {
    type Target = dyn AlgoSettings;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}

impl std::ops::DerefMut for AlgoConfig {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut()
    }
}

impl Clone for AlgoConfig {
    fn clone(&self) -> Self {
        Self(self.0.clone_settings())
    }
}

impl PartialEq for AlgoConfig {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_settings(other.0.as_ref())
    }
}

impl fmt::Debug for AlgoConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl serde::Serialize for AlgoConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        erased_serde::serialize(self.0.as_serialize(), serializer)
    }
}

/// Why a multi-step flow or diffusion policy is not exported, and what to do instead.
fn multi_step_refusal(algorithm: &str, run_dir: &str) -> ExportForm {
    ExportForm::Refused(format!(
        "a `{algorithm}` run has a multi-step flow policy, which cannot be exported as one forward pass; \
         distill it into a one-step policy first: `embodia distill --run {run_dir} --method consistency`, \
         then export the distilled run. PPO, SAC and distill runs export directly"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_algorithm_reads_back_its_own_defaults() {
        let mut names: Vec<&str> = ALGORITHMS.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALGORITHMS.len(), "a name is registered twice");
        for entry in ALGORITHMS {
            let defaults = (entry.defaults)();
            let table = toml::Value::try_from(&defaults).unwrap();
            let read = (entry.read)(table.clone()).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
            assert_eq!(read, defaults, "{}", entry.name);
            let mut file = toml::Table::new();
            file.insert("algorithm".into(), entry.name.into());
            file.insert("algo".into(), table);
            (entry.check_file)(&toml::to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
            file["algo"].as_table_mut().unwrap().insert("not_a_setting".into(), 1.into());
            let unknown = toml::to_string(&file).unwrap();
            assert!((entry.check_file)(&unknown).is_err(), "{} accepts an unknown key", entry.name);
            assert!(defaults.num_envs() >= 1, "{}", entry.name);
        }
    }

    #[test]
    fn settings_of_different_algorithms_are_never_equal() {
        // The VLA's PPO settings hold the same fields as flow-policy PPO's; they are still told apart.
        let flow = AlgoConfig::new(embodia_algos::PpoFlowConfig::default());
        let vla = AlgoConfig::new(VlaPpoConfig(embodia_algos::PpoFlowConfig::default()));
        assert_ne!(flow, vla);
        assert!(vla.get::<embodia_algos::PpoFlowConfig>().is_none());
        assert_eq!(vla.get::<VlaPpoConfig>().map(|c| c.0.num_envs), Some(flow.num_envs()));
        assert_eq!(flow.clone(), flow);
    }

    #[test]
    fn an_unknown_algorithm_is_refused_with_the_registered_names() {
        let e = algorithm("ppo-flow").err().expect("not registered").to_string();
        assert!(e.contains("`ppo-flow`") && e.contains("ppo-flow-sde") && e.contains("vla-dsrl"), "{e}");
    }
}
