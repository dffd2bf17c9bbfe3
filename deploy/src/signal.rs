//! Ctrl-C and SIGTERM as a stop request the control loop polls (a safe stop, not an exit).

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to the flag [`stop_requested`] reads, instead of killing the
/// process mid-command. Returns an error if the handlers could not be installed.
pub fn install_stop_handler() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only stores to an atomic.
        let previous = unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        if previous == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived since the handlers were installed (or the last
/// [`clear_stop_request`]).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Forgets an earlier stop request.
pub fn clear_stop_request() {
    STOP.store(false, Ordering::SeqCst);
}
