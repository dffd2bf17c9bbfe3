//! The seam between the bus driver and a servo protocol: what a request is, what a reply
//! holds, and the registers the robot layer needs.
//!
//! [`crate::driver::Bus`] sends [`Request`]s and waits for [`Reply`]s through a [`Protocol`];
//! [`crate::servo_io::ServoRobot`] and [`crate::calibrate`] find torque, goal, position and
//! state registers in its [`ServoTable`] and decode them with its functions. Two protocols
//! implement it: [`crate::feetech::Feetech`] (protocol 0, STS3215) and
//! [`crate::dynamixel::Dynamixel`] (protocol 2.0, XL330 and XL430). The safety layer and the
//! control loop see neither: they work on [`crate::state::JointState`].

use crate::control_table::Register;
use crate::protocol::{EncodeError, StatusFlags};

/// A request to one servo or, for the sync instructions, to several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    /// Ask for a status reply.
    Ping,
    /// Read `len` bytes at `addr`.
    Read {
        /// First address.
        addr: u16,
        /// Bytes.
        len: u16,
    },
    /// Write `data` at `addr`.
    Write {
        /// First address.
        addr: u16,
        /// Bytes to write.
        data: &'a [u8],
    },
    /// Read `len` bytes at `addr` of every servo in `ids` (one reply each, in list order).
    SyncRead {
        /// First address.
        addr: u16,
        /// Bytes per servo.
        len: u16,
        /// Servos, in reply order.
        ids: &'a [u8],
    },
    /// Write `len` bytes at `addr` of every servo in `ids`; `data` = `[ids.len() × len]`.
    SyncWrite {
        /// First address.
        addr: u16,
        /// Bytes per servo.
        len: u16,
        /// Servos.
        ids: &'a [u8],
        /// Their data, in `ids` order.
        data: &'a [u8],
    },
}

/// What a protocol's decoder found in the received bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// A status reply that carries data: the servo executed the request.
    Status {
        /// Servo id.
        id: u8,
        /// Hardware fault bits the reply reports.
        flags: StatusFlags,
        /// Data bytes.
        data: &'a [u8],
    },
    /// A status reply saying the servo did not execute the request (Dynamixel error numbers).
    Refused {
        /// Servo id.
        id: u8,
        /// The error number, see [`crate::dynamixel::protocol::error_name`].
        code: u8,
    },
    /// A complete frame with a wrong checksum or CRC.
    BadChecksum {
        /// The id byte of the frame.
        id: u8,
    },
    /// No complete reply yet.
    Incomplete,
}

/// One servo's state block, decoded into physical units but still in servo ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RawState {
    /// Present position, ticks.
    pub position: f64,
    /// Present speed, ticks/s.
    pub speed: f64,
    /// Load as a signed fraction of the servo's maximum (−1..1).
    pub load: f64,
    /// Input voltage, V.
    pub voltage: f64,
    /// Temperature, °C.
    pub temperature: f64,
}

/// The registers the robot layer reads and writes, at the same addresses on every servo model
/// of one protocol family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServoTable {
    /// Model number (read-only).
    pub model_number: Register,
    /// Torque enable: 1 on, 0 off.
    pub torque_enable: Register,
    /// Goal position, ticks.
    pub goal_position: Register,
    /// Present position, ticks.
    pub present_position: Register,
    /// Homing offset, ticks (included in the present position).
    pub homing_offset: Register,
    /// The block the control loop reads each cycle (position, speed, load, voltage,
    /// temperature), decoded by [`Protocol::decode_state`].
    pub state_block: Register,
    /// Register with the hardware-error bits, read when a reply raises
    /// [`StatusFlags::ALERT`]; `None` where every reply carries the bits itself.
    pub hardware_error: Option<Register>,
    /// The position-loop P, D and I gain registers (one byte each, in that order) that
    /// [`crate::servo_io::ServoGains`] sets; `None` where the servos keep their own gains.
    pub position_gains: Option<Register>,
    /// Operating-mode register and the value for position control, written (torque off) when
    /// a robot is configured; `None` where the factory mode is already position control.
    pub position_mode: Option<(Register, u8)>,
    /// Highest goal position, ticks (lowest is 0).
    pub max_tick: u16,
}

/// A servo protocol: packet framing and decoding, and its family's control table.
pub trait Protocol {
    /// Name for messages, e.g. `"Dynamixel protocol 2.0"`.
    const NAME: &'static str;
    /// The registers the robot layer uses.
    const TABLE: ServoTable;
    /// Data bytes in a ping reply (Dynamixel: model number and firmware version).
    const PING_DATA: usize;
    /// Writes the packet of `req` to servo `id` (or the broadcast id, which
    /// [`Protocol::broadcast_id`] gives, for the sync instructions) into `out`; returns its
    /// length.
    fn encode(&self, id: u8, req: &Request<'_>, out: &mut [u8]) -> Result<usize, EncodeError>;
    /// The broadcast id.
    fn broadcast_id(&self) -> u8;
    /// Appends received bytes to the decoder.
    fn push(&mut self, bytes: &[u8]);
    /// Forgets every received byte.
    fn clear(&mut self);
    /// The next reply in the received bytes. Packets that are not replies are skipped.
    fn next_reply(&mut self) -> Reply<'_>;
    /// Decodes one servo's [`ServoTable::state_block`]; `model` is its model number.
    fn decode_state(model: u16, block: &[u8]) -> RawState;
    /// Decodes a present- or goal-position register, ticks.
    fn decode_position(bytes: &[u8]) -> i64;
    /// Decodes the homing-offset register, ticks.
    fn decode_homing_offset(bytes: &[u8]) -> i32;
    /// The status flags for a hardware-error register value.
    fn hardware_flags(raw: u8) -> StatusFlags;
    /// The name of a servo model of this family (e.g. `"xl330-m288"`), `None` if unknown.
    fn model_name(model: u16) -> Option<&'static str>;
}

/// Little-endian bytes as an unsigned value (at most 4 bytes are used).
pub fn le_value(bytes: &[u8]) -> u32 {
    bytes.iter().take(4).rev().fold(0u32, |v, &b| (v << 8) | u32::from(b))
}
