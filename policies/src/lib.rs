//! Policy networks for embodia, as burn modules.
//!
//! Every module here runs on any burn [`Device`](burn::tensor::Device): the CPU backend by
//! default, a GPU backend when the root crate enables one. Shapes are documented as
//! `[batch, dim]`; actions of the squashed actor are in `[-1, 1]` and scaled to the task's
//! bounds by the caller.
#![warn(missing_docs)]

mod critic;
mod diffusion;
mod distributions;
mod flow;
mod gaussian;
mod mlp;
mod one_step;
mod params;
mod squashed;
mod tensor_file;
pub mod vla;

pub use critic::{QEnsemble, QEnsembleConfig, ValueCritic, ValueCriticConfig};
pub use diffusion::{
    BetaSchedule, DdimCoefficients, DenoiseSettings, DenoiseStep, DiffusionConfig, DiffusionPolicy, DiffusionSample,
    TimestepSpacing,
};
pub use distributions::{LOG_SQRT_2PI, gaussian_entropy, gaussian_kl, gaussian_log_prob, log_one_minus_tanh_sq};
pub use flow::{
    ChainEval, FlowExpert, FlowLayout, FlowPolicy, FlowPolicyConfig, FlowSample, InvalidConfig, NoiseMethod,
    StochasticSteps, Transition, flow_evaluate_chain, flow_sample, flow_transition, sample_flow_time, sde_sigma,
    timesteps,
};
pub use gaussian::{GaussianActor, GaussianActorConfig};
pub use mlp::{Activation, Mlp, MlpConfig};
pub use one_step::{OneStepHead, OneStepPolicy, OneStepPolicyConfig};
pub use params::{NamedParams, ParamError, load_params, named_params, polyak_update, seeded_init, with_generator_lock};
pub use squashed::{SquashedGaussianActor, SquashedGaussianActorConfig};
pub use tensor_file::{NameMap, TensorFileError, load_mapped, read_safetensors, write_safetensors};
