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

/// Fails unless a file can be written at `path` (given with `flag`): its directory exists and
/// accepts a new file, and `path` is not a directory. Commands check their outputs with it
/// before the work whose result would otherwise be lost.
pub(crate) fn check_writable(path: &std::path::Path, flag: &str) -> anyhow::Result<()> {
    let shown = path.display();
    anyhow::ensure!(!path.is_dir(), "{flag} {shown}: is a directory; give a file path");
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    anyhow::ensure!(dir.is_dir(), "{flag} {shown}: the directory {} does not exist", dir.display());
    let probe = dir.join(format!(".embodia-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| anyhow::anyhow!("{flag} {shown}: cannot write in {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The longest duration a seconds flag accepts: 30 days.
const MAX_SECONDS: f64 = 30.0 * 24.0 * 3600.0;

/// `--seconds`, `--rl-seconds`: a finite duration in `(0, 30 days]`.
pub(crate) fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= MAX_SECONDS => Ok(s),
        _ => Err(format!("`{text}` is not a duration in seconds in (0, {MAX_SECONDS}] (30 days)")),
    }
}

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
