//! The byte stream under the bus driver: a serial port, or an emulator in memory.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serialport::{ClearBuffer, SerialPort, TTYPort};

use crate::emulator::Responder;

/// A half-duplex byte stream to a servo bus.
pub trait Port {
    /// Sends all of `bytes`.
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Reads what has arrived into `buf`, waiting at most `timeout` for the first byte;
    /// returns 0 when nothing came.
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize>;
    /// Discards bytes received and not yet read (stale replies).
    fn clear_input(&mut self) -> io::Result<()>;
}

/// A serial port (a USB adapter such as the SO-101's, or a pseudo-terminal).
pub struct SerialBusPort {
    port: TTYPort,
    timeout: Duration,
}

impl SerialBusPort {
    /// Opens `path` at `baud` (1 000 000 for STS3215 servos as shipped), 8N1, no flow control.
    pub fn open(path: &str, baud: u32) -> Result<Self, serialport::Error> {
        let timeout = Duration::from_millis(10);
        let port = serialport::new(path, baud).timeout(timeout).open_native().map_err(|e| not_a_tty(path, e))?;
        Ok(Self { port, timeout })
    }
}

/// A path that opens but is no terminal (a regular file, `/dev/null`) fails with the OS's
/// "Not a typewriter": say what is wrong with it instead.
fn not_a_tty(path: &str, e: serialport::Error) -> serialport::Error {
    use std::io::IsTerminal;
    match std::fs::File::open(path) {
        Ok(file) if !file.is_terminal() => serialport::Error::new(
            serialport::ErrorKind::InvalidInput,
            "not a serial device (it opens, but is no terminal): give the servo bus's port, e.g. /dev/ttyUSB0 or /dev/ttyACM0",
        ),
        _ => e,
    }
}

impl Port for SerialBusPort {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.port.write_all(bytes)?;
        self.port.flush()
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        if timeout != self.timeout {
            self.port.set_timeout(timeout).map_err(io::Error::other)?;
            self.timeout = timeout;
        }
        match self.port.read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn clear_input(&mut self) -> io::Result<()> {
        self.port.clear(ClearBuffer::Input).map_err(io::Error::other)
    }
}

/// An emulated bus in memory: requests go straight to a [`Responder`], replies come back at
/// their due times (delayed-reply faults really wait).
#[derive(Clone)]
pub struct EmulatedPort {
    responder: Arc<Mutex<Responder>>,
    rx: Vec<u8>,
}

impl EmulatedPort {
    /// A port onto `responder` (shared, so a test can move servos or inject faults).
    pub fn new(responder: Arc<Mutex<Responder>>) -> Self {
        Self { responder, rx: Vec::new() }
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, Responder>> {
        self.responder.lock().map_err(|_| io::Error::other("emulator state poisoned"))
    }
}

impl Port for EmulatedPort {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.lock()?.receive(bytes, Instant::now());
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            let mut rx = std::mem::take(&mut self.rx);
            let next = {
                let mut r = self.lock()?;
                r.advance(now);
                r.transmit(now, &mut rx);
                r.next_due()
            };
            self.rx = rx;
            if !self.rx.is_empty() {
                let n = self.rx.len().min(buf.len());
                buf[..n].copy_from_slice(&self.rx[..n]);
                self.rx.drain(..n);
                return Ok(n);
            }
            if now >= deadline {
                return Ok(0);
            }
            let wake = next.map_or(deadline, |t| t.min(deadline));
            std::thread::sleep(wake.saturating_duration_since(now).max(Duration::from_micros(50)));
        }
    }

    fn clear_input(&mut self) -> io::Result<()> {
        let mut rx = std::mem::take(&mut self.rx);
        self.lock()?.transmit(Instant::now(), &mut rx);
        rx.clear();
        self.rx = rx;
        Ok(())
    }
}
