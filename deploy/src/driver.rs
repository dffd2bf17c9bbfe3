//! The servo-bus driver: ping, read, write, sync-read and sync-write over a [`Port`], with
//! typed errors and bounded retries.

use std::time::{Duration, Instant};

use crate::protocol::{BROADCAST_ID, Decoded, Decoder, EncodeError, Instruction, MAX_PACKET, StatusFlags, encode};
use crate::transport::Port;

/// Errors of one bus transaction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BusError {
    /// No (complete) reply from the servo in time.
    #[error("servo {id}: no reply within {timeout:?}")]
    Timeout {
        /// Servo id.
        id: u8,
        /// The reply timeout.
        timeout: Duration,
    },
    /// A reply arrived with a wrong checksum.
    #[error("servo {id}: reply with a bad checksum")]
    Checksum {
        /// Servo id the request went to.
        id: u8,
    },
    /// A reply came from another servo than the one asked (and the right one never came).
    #[error("expected a reply from servo {expected}, got one from servo {got}")]
    WrongId {
        /// Servo asked.
        expected: u8,
        /// Id in the reply.
        got: u8,
    },
    /// A reply carried a different number of data bytes than asked for.
    #[error("servo {id}: reply with {got} data bytes, expected {expected}")]
    WrongLength {
        /// Servo id.
        id: u8,
        /// Bytes asked for.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// The servo executed the request but reports a fault in its error byte.
    #[error("servo {id} reports {}", .flags.describe())]
    Status {
        /// Servo id.
        id: u8,
        /// The error byte.
        flags: StatusFlags,
    },
    /// A request could not be encoded (too many parameters).
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The port failed.
    #[error("serial port: {0}")]
    Io(String),
}

impl BusError {
    /// Errors a repeated request may not hit again (lost or damaged replies).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            BusError::Timeout { .. }
                | BusError::Checksum { .. }
                | BusError::WrongId { .. }
                | BusError::WrongLength { .. }
        )
    }
}

impl From<std::io::Error> for BusError {
    fn from(e: std::io::Error) -> Self {
        BusError::Io(e.to_string())
    }
}

/// Timing of the driver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusConfig {
    /// How long to wait for each status reply. Default 10 ms (a 1 Mbaud reply takes ~0.1 ms;
    /// USB adapters add ~1 ms latency).
    pub timeout: Duration,
    /// Extra attempts after a transient error ([`BusError::is_transient`]). Default 2.
    pub retries: u32,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self { timeout: Duration::from_millis(10), retries: 2 }
    }
}

/// A Feetech protocol-0 bus.
pub struct Bus<P: Port> {
    port: P,
    config: BusConfig,
    decoder: Decoder,
    tx: [u8; MAX_PACKET],
    rx: [u8; 512],
    params: Vec<u8>,
}

impl<P: Port> Bus<P> {
    /// A driver on `port`.
    pub fn new(port: P, config: BusConfig) -> Self {
        Self {
            port,
            config,
            decoder: Decoder::new(),
            tx: [0; MAX_PACKET],
            rx: [0; 512],
            params: Vec::with_capacity(256),
        }
    }

    /// The timing in use.
    pub fn config(&self) -> BusConfig {
        self.config
    }

    /// Changes the timing.
    pub fn set_config(&mut self, config: BusConfig) {
        self.config = config;
    }

    /// The port underneath.
    pub fn port_mut(&mut self) -> &mut P {
        &mut self.port
    }

    fn send(&mut self, id: u8, instr: Instruction, params_from_self: bool, params: &[u8]) -> Result<(), BusError> {
        let n = if params_from_self {
            encode(id, instr as u8, &self.params, &mut self.tx)?
        } else {
            encode(id, instr as u8, params, &mut self.tx)?
        };
        self.port.clear_input()?;
        self.decoder.clear();
        self.port.send(&self.tx[..n])?;
        Ok(())
    }

    /// The time by which every reply to a request sent now must have arrived.
    fn deadline(&self) -> Instant {
        Instant::now() + self.config.timeout
    }

    /// Waits until `deadline` for the status reply of `id` with `out.len()` data bytes, copied
    /// into `out`; returns its error byte. A reply decoded after the deadline counts as lost:
    /// one deadline per transaction (not per reply) keeps a delayed reply of a later servo in a
    /// sync-read from passing, and a host stall then errs on the safe side (a held cycle).
    fn receive(&mut self, id: u8, out: &mut [u8], deadline: Instant) -> Result<StatusFlags, BusError> {
        let timeout = self.config.timeout;
        let mut other = None;
        loop {
            match self.decoder.next_packet() {
                Decoded::Packet(_) if Instant::now() > deadline => return Err(BusError::Timeout { id, timeout }),
                Decoded::Packet(p) if p.id == id => {
                    if p.params.len() != out.len() {
                        return Err(BusError::WrongLength { id, expected: out.len(), got: p.params.len() });
                    }
                    out.copy_from_slice(p.params);
                    return Ok(StatusFlags(p.x));
                }
                // A late reply to an earlier request: skip it, but say so if ours never comes.
                Decoded::Packet(p) => other = Some(p.id),
                Decoded::BadChecksum { .. } => return Err(BusError::Checksum { id }),
                Decoded::Incomplete => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(match other {
                            Some(got) => BusError::WrongId { expected: id, got },
                            None => BusError::Timeout { id, timeout },
                        });
                    }
                    let n = self.port.recv(&mut self.rx, deadline - now)?;
                    self.decoder.push(&self.rx[..n]);
                }
            }
        }
    }

    fn with_retries<T>(&mut self, mut f: impl FnMut(&mut Self) -> Result<T, BusError>) -> Result<T, BusError> {
        let mut attempt = 0;
        loop {
            match f(self) {
                Err(e) if e.is_transient() && attempt < self.config.retries => attempt += 1,
                result => return result,
            }
        }
    }

    /// Pings servo `id`; returns its error byte.
    pub fn ping(&mut self, id: u8) -> Result<StatusFlags, BusError> {
        self.with_retries(|bus| {
            bus.send(id, Instruction::Ping, false, &[])?;
            bus.receive(id, &mut [], bus.deadline())
        })
    }

    /// Reads `out.len()` bytes at `addr` of servo `id`; returns its error byte (the data is
    /// valid whatever the error byte says).
    pub fn read(&mut self, id: u8, addr: u8, out: &mut [u8]) -> Result<StatusFlags, BusError> {
        let len = u8::try_from(out.len()).map_err(|_| EncodeError::TooLong(out.len()))?;
        self.with_retries(|bus| {
            bus.send(id, Instruction::Read, false, &[addr, len])?;
            bus.receive(id, out, bus.deadline())
        })
    }

    /// Reads a 1- or 2-byte register of servo `id` (little-endian).
    pub fn read_register(&mut self, id: u8, reg: crate::control_table::Register) -> Result<u16, BusError> {
        let mut b = [0u8; 2];
        let flags = self.read(id, reg.addr, &mut b[..reg.size as usize])?;
        check(id, flags)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Writes `data` at `addr` of servo `id` and waits for its acknowledgement (the factory
    /// status level replies to writes). The broadcast id gets no reply and is not waited for.
    /// A reply with error bits set is [`BusError::Status`].
    pub fn write(&mut self, id: u8, addr: u8, data: &[u8]) -> Result<(), BusError> {
        self.params.clear();
        self.params.push(addr);
        self.params.extend_from_slice(data);
        self.with_retries(|bus| {
            bus.send(id, Instruction::Write, true, &[])?;
            if id == BROADCAST_ID {
                return Ok(());
            }
            let flags = bus.receive(id, &mut [], bus.deadline())?;
            check(id, flags)
        })
    }

    /// Writes a 1- or 2-byte register of servo `id` (little-endian).
    pub fn write_register(&mut self, id: u8, reg: crate::control_table::Register, value: u16) -> Result<(), BusError> {
        self.write(id, reg.addr, &value.to_le_bytes()[..reg.size as usize])
    }

    /// Writes `len` bytes at `addr` of every servo in `ids`, `data` = `[ids.len() × len]`, in
    /// one packet (no replies, so no retries).
    pub fn sync_write(&mut self, addr: u8, len: u8, ids: &[u8], data: &[u8]) -> Result<(), BusError> {
        debug_assert_eq!(data.len(), ids.len() * len as usize);
        self.params.clear();
        self.params.extend_from_slice(&[addr, len]);
        for (id, chunk) in ids.iter().zip(data.chunks_exact(len as usize)) {
            self.params.push(*id);
            self.params.extend_from_slice(chunk);
        }
        self.send(BROADCAST_ID, Instruction::SyncWrite, true, &[])
    }

    /// Reads `len` bytes at `addr` of every servo in `ids` in one request; `out` =
    /// `[ids.len() × len]`, `flags` = `[ids.len()]` error bytes. The first failing servo's error
    /// fails the whole read (after retries).
    pub fn sync_read(
        &mut self,
        addr: u8,
        len: u8,
        ids: &[u8],
        out: &mut [u8],
        flags: &mut [StatusFlags],
    ) -> Result<(), BusError> {
        debug_assert_eq!(out.len(), ids.len() * len as usize);
        self.params.clear();
        self.params.extend_from_slice(&[addr, len]);
        self.params.extend_from_slice(ids);
        self.with_retries(|bus| {
            bus.send(BROADCAST_ID, Instruction::SyncRead, true, &[])?;
            let deadline = bus.deadline();
            for ((id, chunk), f) in ids.iter().zip(out.chunks_exact_mut(len as usize)).zip(flags.iter_mut()) {
                *f = bus.receive(*id, chunk, deadline)?;
            }
            Ok(())
        })
    }
}

/// `Ok` when the error byte is clear, else [`BusError::Status`].
pub fn check(id: u8, flags: StatusFlags) -> Result<(), BusError> {
    if flags.is_ok() { Ok(()) } else { Err(BusError::Status { id, flags }) }
}
