//! The learners' one error type, and the checks that produce its common cases.

/// Errors of the learners.
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    /// A loss, observation or parameter became NaN or infinite.
    #[error("non-finite value in {what} at env step {env_steps}; training stopped")]
    NonFinite {
        /// Where it appeared (e.g. "critic loss", "observations").
        what: String,
        /// Environment steps at the time.
        env_steps: u64,
    },
    /// A configuration value is out of its allowed range.
    #[error("invalid value for `{field}`: {value} (allowed: {allowed})")]
    Config {
        /// Config field name (`algo.<name>`).
        field: String,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A checkpoint is missing, corrupt, or from another configuration.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The environment rejected a step.
    #[error(transparent)]
    Sim(#[from] embodia_sim::SimError),
    /// A parameter set does not fit the networks.
    #[error(transparent)]
    Params(#[from] embodia_policies::ParamError),
    /// The tensor backend failed.
    #[error("tensor backend: {0}")]
    Backend(String),
}

/// Fails with [`AlgoError::Config`] naming `algo.<field>` unless `ok`.
pub(crate) fn check_range(
    field: &str,
    value: impl std::fmt::Display,
    ok: bool,
    allowed: &str,
) -> Result<(), AlgoError> {
    if ok {
        Ok(())
    } else {
        Err(AlgoError::Config { field: format!("algo.{field}"), value: value.to_string(), allowed: allowed.into() })
    }
}

/// Fails with [`AlgoError::NonFinite`] if `value` is NaN or infinite.
pub(crate) fn check_finite(what: &str, value: f64, env_steps: u64) -> Result<f64, AlgoError> {
    if value.is_finite() { Ok(value) } else { Err(AlgoError::NonFinite { what: what.to_string(), env_steps }) }
}

/// Fails with [`AlgoError::Config`] naming `algo.num_envs` unless `1 ≤ n ≤`
/// [`embodia_sim::MAX_ENVS`].
pub(crate) fn check_num_envs(n: usize) -> Result<(), AlgoError> {
    let allowed = format!("1 ..= {}", embodia_sim::MAX_ENVS);
    check_range("num_envs", n, (1..=embodia_sim::MAX_ENVS).contains(&n), &allowed)
}
