//! What the AFL++ harnesses in `src/bin/` share. Each harness reads one input per iteration of
//! AFL's persistent loop and hands it to one parser; AFL counts a panic or an abort as a crash
//! and an input over its time limit as a hang (`bench/fuzz_afl.sh` runs them).

use std::path::PathBuf;

/// A scratch file for parsers that read from a path, unique to this process.
pub fn scratch_file(name: &str) -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    dir.join(format!("embodia-afl-{}-{name}", std::process::id()))
}
