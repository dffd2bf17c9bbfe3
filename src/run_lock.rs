//! One writer per run directory. A command that writes a run holds an exclusive advisory lock
//! on `<run>/.lock` for as long as it writes; a second writer is refused with the process that
//! holds it. The operating system releases the lock when its process ends, however it ends, so
//! a killed run never leaves a lock behind that blocks the next one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Why a run directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process writes the run.
    #[error(
        "{dir}: is being written by {holder} (another `embodia train`, `distill` or `bench`); wait for it to \
         finish or choose another run directory"
    )]
    Busy {
        /// The run directory.
        dir: String,
        /// `process <pid>`, or `another process` when it has not written its id yet.
        holder: String,
    },
    /// The lock file could not be opened or written.
    #[error("{path}: {cause}")]
    Io {
        /// The lock file.
        path: String,
        /// What failed.
        cause: std::io::Error,
    },
}

/// The lock file's name inside a run directory (it holds the writer's process id).
pub const LOCK_FILE: &str = ".lock";

/// The lock on a run directory; released when dropped or when the process ends.
#[derive(Debug)]
pub struct RunLock {
    /// Holds the lock while open.
    _file: File,
}

impl RunLock {
    /// Locks `dir` (which must exist) for this process, or fails naming the process that holds
    /// it.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let path = dir.join(LOCK_FILE);
        let io = |cause: std::io::Error| LockError::Io { path: path.display().to_string(), cause };
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {
                file.set_len(0).map_err(io)?;
                file.seek(SeekFrom::Start(0)).map_err(io)?;
                write!(file, "{}", std::process::id()).map_err(io)?;
                Ok(Self { _file: file })
            }
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // The holder may be between truncating and writing its id: then it is unknown.
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "another process".to_string(),
                    pid => format!("process {pid}"),
                };
                Err(LockError::Busy { dir: dir.display().to_string(), holder })
            }
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}
