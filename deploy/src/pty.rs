//! Serving a [`ServoChain`] on a pseudo-terminal, so any program that opens `/dev/pts/N`
//! (embodia's driver, Feetech's SDK, LeRobot) talks to emulated servos.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serialport::{SerialPort, TTYPort};

use crate::emulator::{Responder, ServoChain};

/// An emulator serving on a new pseudo-terminal until dropped or [`PtyEmulator::stop`]ped.
pub struct PtyEmulator {
    path: String,
    responder: Arc<Mutex<Responder>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
    // Kept open so the terminal does not hang up between the clients' opens; not locked, so
    // other processes can open the path.
    _slave: TTYPort,
}

impl PtyEmulator {
    /// Opens a pseudo-terminal and serves `chain` on it from a background thread.
    pub fn start(chain: ServoChain) -> io::Result<Self> {
        let (mut master, mut slave) = TTYPort::pair().map_err(io::Error::other)?;
        slave.set_exclusive(false).map_err(io::Error::other)?;
        // set_exclusive(false) leaves a shared flock, which blocks serialport's exclusive open.
        // SAFETY: flock on a file descriptor this struct owns.
        if unsafe { libc::flock(slave.as_raw_fd(), libc::LOCK_UN) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let path = slave.name().ok_or_else(|| io::Error::other("pseudo-terminal without a name"))?;
        master.set_timeout(Duration::from_millis(1)).map_err(io::Error::other)?;
        let responder = Arc::new(Mutex::new(Responder::new(chain, Instant::now())));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (responder, stop) = (responder.clone(), stop.clone());
            std::thread::Builder::new().name("servo-emulator".into()).spawn(move || serve(master, &responder, &stop))?
        };
        Ok(Self { path, responder, stop, thread: Some(thread), _slave: slave })
    }

    /// The pseudo-terminal's path, e.g. `/dev/pts/3`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The emulator's state (to move servos by hand or inject faults while it serves).
    pub fn responder(&self) -> &Arc<Mutex<Responder>> {
        &self.responder
    }

    /// Stops serving and returns the serving thread's error, if it failed.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    /// Blocks until the serving thread ends (it runs until stopped or failed).
    pub fn wait(mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| io::Error::other("emulator thread panicked"))?,
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| io::Error::other("emulator thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for PtyEmulator {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn serve(mut master: TTYPort, responder: &Mutex<Responder>, stop: &AtomicBool) -> io::Result<()> {
    let mut buf = [0u8; 1024];
    let mut out = Vec::with_capacity(1024);
    while !stop.load(Ordering::Relaxed) {
        let n = match master.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock => 0,
            // EIO: no client has the terminal open right now (we keep the slave open, so rare).
            Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                std::thread::sleep(Duration::from_millis(1));
                0
            }
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        {
            let mut r = responder.lock().map_err(|_| io::Error::other("emulator state poisoned"))?;
            if n > 0 {
                r.receive(&buf[..n], now);
            } else {
                r.advance(now);
            }
            r.transmit(now, &mut out);
        }
        if !out.is_empty() {
            master.write_all(&out)?;
            out.clear();
        }
    }
    Ok(())
}
