//! One module per command (or family of commands) of the `embodia` binary: `main.rs` parses the
//! command line and dispatches here.

pub(crate) mod act;
pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod deploy;
pub(crate) mod distill;
pub(crate) mod eval;
pub(crate) mod plot;
pub(crate) mod record;
pub(crate) mod train;

/// Parses a count flag that must lie in `1 ..= max`, naming the range when it does not (a huge
/// count is refused before anything is allocated for it).
fn count(text: &str, max: usize) -> Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=max as u64).contains(&n) => Ok(n as usize),
        _ => Err(format!("`{text}` is not a count in 1 ..= {max}")),
    }
}

/// `--episodes`: 1 ..= [`embodia::config::MAX_EPISODES`].
pub(crate) fn episodes(text: &str) -> Result<usize, String> {
    count(text, embodia::config::MAX_EPISODES)
}

/// `--envs`: 1 ..= [`embodia::sim::MAX_ENVS`].
pub(crate) fn envs(text: &str) -> Result<usize, String> {
    count(text, embodia::sim::MAX_ENVS)
}
