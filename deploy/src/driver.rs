//! The servo-bus driver: ping, read, write, sync-read and sync-write over a [`Port`], with
//! typed errors and bounded retries, for any servo [`Protocol`] (Feetech protocol 0 by
//! default, [`crate::dynamixel::Dynamixel`] protocol 2.0).

use std::time::{Duration, Instant};

use crate::control_table::Register;
use crate::feetech::Feetech;
use crate::protocol::{EncodeError, StatusFlags};
use crate::servo_protocol::{Protocol, Reply, Request, le_value};
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
    /// The servo did not execute the request (a Dynamixel status with an error number).
    #[error("servo {id} refused the request: {}", crate::dynamixel::protocol::error_name(*.code))]
    Refused {
        /// Servo id.
        id: u8,
        /// The error number.
        code: u8,
    },
    /// A servo of another model than the robot expects, or one this crate does not know.
    #[error("servo {id}: model number {model} is not {expected}")]
    WrongModel {
        /// Servo id.
        id: u8,
        /// The model number it reports.
        model: u16,
        /// What was expected, e.g. `"a Dynamixel protocol 2.0 servo embodia knows"`.
        expected: String,
    },
    /// A request could not be encoded (too many parameters).
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The port failed.
    #[error("serial port: {0}")]
    Io(String),
}

impl BusError {
    /// Errors a repeated request may not hit again (lost or damaged replies, or a request the
    /// servo received damaged: Dynamixel error number 3).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            BusError::Timeout { .. }
                | BusError::Checksum { .. }
                | BusError::WrongId { .. }
                | BusError::WrongLength { .. }
                | BusError::Refused { code: 3, .. }
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
    /// How long to wait for each transaction's replies. Default 10 ms (a 1 Mbaud reply takes
    /// ~0.1 ms; USB adapters add ~1 ms latency).
    pub timeout: Duration,
    /// Extra attempts after a transient error ([`BusError::is_transient`]). Default 2.
    pub retries: u32,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self { timeout: Duration::from_millis(10), retries: 2 }
    }
}

/// Largest request the driver sends, bytes.
const TX_CAPACITY: usize = 1024;

/// A servo bus speaking protocol `Pr` (Feetech protocol 0 unless named).
pub struct Bus<P: Port, Pr: Protocol = Feetech> {
    port: P,
    config: BusConfig,
    proto: Pr,
    tx: Box<[u8; TX_CAPACITY]>,
    rx: [u8; 512],
}

impl<P: Port> Bus<P, Feetech> {
    /// A Feetech protocol-0 driver on `port`.
    pub fn new(port: P, config: BusConfig) -> Self {
        Self::with_protocol(port, config, Feetech::new())
    }
}

impl<P: Port, Pr: Protocol> Bus<P, Pr> {
    /// A driver speaking `proto` on `port`.
    pub fn with_protocol(port: P, config: BusConfig, proto: Pr) -> Self {
        Self { port, config, proto, tx: Box::new([0; TX_CAPACITY]), rx: [0; 512] }
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

    fn send(&mut self, id: u8, req: &Request<'_>) -> Result<(), BusError> {
        let n = self.proto.encode(id, req, &mut self.tx[..])?;
        self.port.clear_input()?;
        self.proto.clear();
        self.port.send(&self.tx[..n])?;
        Ok(())
    }

    /// The time by which every reply to a request sent now must have arrived.
    fn deadline(&self) -> Instant {
        Instant::now() + self.config.timeout
    }

    /// Waits until `deadline` for the status reply of `id` with `out.len()` data bytes, copied
    /// into `out`; returns its fault bits. A reply decoded after the deadline counts as lost:
    /// one deadline per transaction (not per reply) keeps a delayed reply of a later servo in a
    /// sync-read from passing, and a host stall then errs on the safe side (a held cycle).
    fn receive(&mut self, id: u8, out: &mut [u8], deadline: Instant) -> Result<StatusFlags, BusError> {
        let timeout = self.config.timeout;
        let mut other = None;
        loop {
            let now = Instant::now();
            match self.proto.next_reply() {
                Reply::Status { .. } | Reply::Refused { .. } if now > deadline => {
                    return Err(BusError::Timeout { id, timeout });
                }
                Reply::Status { id: got, flags, data } if got == id => {
                    if data.len() != out.len() {
                        return Err(BusError::WrongLength { id, expected: out.len(), got: data.len() });
                    }
                    out.copy_from_slice(data);
                    return Ok(flags);
                }
                Reply::Refused { id: got, code } if got == id => return Err(BusError::Refused { id, code }),
                // A late reply to an earlier request: skip it, but say so if ours never comes.
                Reply::Status { id: got, .. } | Reply::Refused { id: got, .. } => other = Some(got),
                Reply::BadChecksum { .. } => return Err(BusError::Checksum { id }),
                Reply::Incomplete => {
                    if now >= deadline {
                        return Err(match other {
                            Some(got) => BusError::WrongId { expected: id, got },
                            None => BusError::Timeout { id, timeout },
                        });
                    }
                    let n = self.port.recv(&mut self.rx, deadline - now)?;
                    self.proto.push(&self.rx[..n]);
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

    /// Pings servo `id`; returns its fault bits.
    pub fn ping(&mut self, id: u8) -> Result<StatusFlags, BusError> {
        let mut data = [0u8; 8];
        self.with_retries(|bus| {
            bus.send(id, &Request::Ping)?;
            bus.receive(id, &mut data[..Pr::PING_DATA], bus.deadline())
        })
    }

    /// Reads `out.len()` bytes at `addr` of servo `id`; returns its fault bits (the data is
    /// valid whatever they say).
    pub fn read(&mut self, id: u8, addr: u8, out: &mut [u8]) -> Result<StatusFlags, BusError> {
        let len = u16::try_from(out.len()).map_err(|_| EncodeError::TooLong(out.len()))?;
        self.with_retries(|bus| {
            bus.send(id, &Request::Read { addr: addr.into(), len })?;
            bus.receive(id, out, bus.deadline())
        })
    }

    /// Reads a 1- or 2-byte register of servo `id` (little-endian).
    pub fn read_register(&mut self, id: u8, reg: Register) -> Result<u16, BusError> {
        Ok(self.read_value(id, reg)? as u16)
    }

    /// Reads a 1-, 2- or 4-byte register of servo `id` (little-endian, unsigned). A reply
    /// with fault bits set is [`BusError::Status`].
    pub fn read_value(&mut self, id: u8, reg: Register) -> Result<u32, BusError> {
        let mut b = [0u8; 4];
        let size = usize::from(reg.size).min(4);
        let flags = self.read(id, reg.addr, &mut b[..size])?;
        check(id, flags)?;
        Ok(le_value(&b[..size]))
    }

    /// Writes `data` at `addr` of servo `id` and waits for its acknowledgement (the factory
    /// status level replies to writes). The broadcast id gets no reply and is not waited for.
    /// A reply with fault bits set is [`BusError::Status`].
    pub fn write(&mut self, id: u8, addr: u8, data: &[u8]) -> Result<(), BusError> {
        let broadcast = self.proto.broadcast_id();
        self.with_retries(|bus| {
            bus.send(id, &Request::Write { addr: addr.into(), data })?;
            if id == broadcast {
                return Ok(());
            }
            let flags = bus.receive(id, &mut [], bus.deadline())?;
            check(id, flags)
        })
    }

    /// Writes a 1- or 2-byte register of servo `id` (little-endian).
    pub fn write_register(&mut self, id: u8, reg: Register, value: u16) -> Result<(), BusError> {
        self.write_value(id, reg, value.into())
    }

    /// Writes a 1-, 2- or 4-byte register of servo `id` (little-endian).
    pub fn write_value(&mut self, id: u8, reg: Register, value: u32) -> Result<(), BusError> {
        let size = usize::from(reg.size).min(4);
        self.write(id, reg.addr, &value.to_le_bytes()[..size])
    }

    /// Writes `len` bytes at `addr` of every servo in `ids`, `data` = `[ids.len() × len]`, in
    /// one packet (no replies, so no retries).
    pub fn sync_write(&mut self, addr: u8, len: u8, ids: &[u8], data: &[u8]) -> Result<(), BusError> {
        debug_assert_eq!(data.len(), ids.len() * len as usize);
        let broadcast = self.proto.broadcast_id();
        self.send(broadcast, &Request::SyncWrite { addr: addr.into(), len: len.into(), ids, data })
    }

    /// Reads `len` bytes at `addr` of every servo in `ids` in one request; `out` =
    /// `[ids.len() × len]`, `flags` = `[ids.len()]` fault bits. The first failing servo's error
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
        let broadcast = self.proto.broadcast_id();
        self.with_retries(|bus| {
            bus.send(broadcast, &Request::SyncRead { addr: addr.into(), len: len.into(), ids })?;
            let deadline = bus.deadline();
            for ((id, chunk), f) in ids.iter().zip(out.chunks_exact_mut(len as usize)).zip(flags.iter_mut()) {
                *f = bus.receive(*id, chunk, deadline)?;
            }
            Ok(())
        })
    }
}

/// `Ok` when no fault bit is set, else [`BusError::Status`].
pub fn check(id: u8, flags: StatusFlags) -> Result<(), BusError> {
    if flags.is_ok() { Ok(()) } else { Err(BusError::Status { id, flags }) }
}
