//! Dynamixel servos (protocol 2.0) behind the [`Protocol`] seam: [`protocol`] frames packets,
//! [`control_table`] holds the XL330/XL430 registers.
//!
//! Written here rather than taken from a crate. The two maintained Rust crates were read
//! (crates.io sources, December 2026) against what the control loop needs:
//! - `rustypot` 1.13.1 (Pollen Robotics, Dynamixel v1/v2 and Feetech): every transaction
//!   allocates (`Vec` packets, `Box<dyn StatusPacket>`, one `Vec` per sync-read reply); replies
//!   are read with `read_exact` under the port's timeout, so a sync-read of n servos can wait
//!   n timeouts and bytes of noise before a header fail the read rather than being skipped;
//!   before each request it may sleep 3 × 5 ms to flush; it takes a `dyn
//!   serialport::SerialPort`, so the in-memory emulator port cannot drive it.
//! - `dynamixel2` 0.9.1: preallocated buffers and a deadline per reply, but each reply of a
//!   sync-read gets its own deadline (n × (transfer time + 34 ms)); its bus owns a
//!   `serial2::SerialPort` (another serial library, again no in-memory port); the alert bit
//!   is dropped by its error check; no Feetech.
//!
//! Both would leave two bus drivers with different timing, errors and retries under one
//! control loop. Here the protocol plugs into the one [`crate::driver::Bus`]: one deadline per
//! transaction, the same typed errors and bounded retries as Feetech, no allocation per
//! cycle, and the emulator's fault tests run unchanged over it.
//!
//! Status replies: the error byte's alert bit ([`protocol::ALERT`]) means a hardware error;
//! the robot layer then reads [`control_table::HARDWARE_ERROR_STATUS`] and maps its bits onto
//! [`StatusFlags`] (voltage, overheat, encoder as "angle sensor", electrical shock, overload).
//! A non-zero error number (result fail, CRC, data range, …, access error) means the servo did
//! not execute the request: [`crate::driver::BusError::Refused`].

pub mod control_table;
pub mod protocol;

use crate::control_table::Register;
use crate::protocol::{EncodeError, StatusFlags};
use crate::servo_protocol::{Protocol, RawState, Reply, Request, ServoTable, le_value};
use control_table::{self as ct, Model};
#[cfg(test)]
use protocol::STATUS;
use protocol::{ALERT, BROADCAST_ID, Decoded, Decoder, Instruction, encode};

/// The Dynamixel protocol-2.0 decoder state.
#[derive(Debug, Clone, Default)]
pub struct Dynamixel {
    decoder: Decoder,
}

impl Dynamixel {
    /// A protocol with an empty decoder.
    pub fn new() -> Self {
        Self { decoder: Decoder::new() }
    }
}

/// Status flags for an X-series hardware-error-status value (with [`StatusFlags::ALERT`]).
pub fn hardware_flags(raw: u8) -> StatusFlags {
    let map = [
        (ct::HW_VOLTAGE, StatusFlags::VOLTAGE),
        (ct::HW_OVERHEAT, StatusFlags::OVERHEAT),
        (ct::HW_ENCODER, StatusFlags::ANGLE),
        (ct::HW_ELECTRICAL_SHOCK, StatusFlags::ELECTRICAL_SHOCK),
        (ct::HW_OVERLOAD, StatusFlags::OVERLOAD),
    ];
    StatusFlags(map.iter().filter(|(hw, _)| raw & hw != 0).fold(StatusFlags::ALERT, |f, (_, s)| f | s))
}

impl Protocol for Dynamixel {
    const NAME: &'static str = "Dynamixel protocol 2.0";
    const TABLE: ServoTable = ServoTable {
        model_number: ct::MODEL_NUMBER,
        torque_enable: ct::TORQUE_ENABLE,
        goal_position: ct::GOAL_POSITION,
        present_position: ct::PRESENT_POSITION,
        homing_offset: ct::HOMING_OFFSET,
        state_block: ct::STATE_BLOCK,
        hardware_error: Some(ct::HARDWARE_ERROR_STATUS),
        position_gains: None,
        position_mode: Some((ct::OPERATING_MODE, 3)),
        max_tick: ct::TICKS_PER_REV - 1,
    };
    const PING_DATA: usize = 3;

    fn encode(&self, id: u8, req: &Request<'_>, out: &mut [u8]) -> Result<usize, EncodeError> {
        match *req {
            Request::Ping => encode(id, Instruction::Ping as u8, &[], out),
            Request::Read { addr, len } => {
                encode(id, Instruction::Read as u8, &[&addr.to_le_bytes(), &len.to_le_bytes()], out)
            }
            Request::Write { addr, data } => encode(id, Instruction::Write as u8, &[&addr.to_le_bytes(), data], out),
            Request::SyncRead { addr, len, ids } => {
                encode(id, Instruction::SyncRead as u8, &[&addr.to_le_bytes(), &len.to_le_bytes(), ids], out)
            }
            Request::SyncWrite { addr, len, ids, data } => {
                let n = usize::from(len);
                if data.len() != ids.len() * n {
                    return Err(EncodeError::TooLong(data.len()));
                }
                // The parameters interleave ids and data: encode the head, then append each
                // servo's part through the same stuffing encoder (a packet of parts).
                let mut parts: [&[u8]; 2 + 2 * 32] = [&[]; 66];
                if ids.len() > 32 {
                    return Err(EncodeError::TooLong(ids.len()));
                }
                let (a, l) = (addr.to_le_bytes(), len.to_le_bytes());
                parts[0] = &a;
                parts[1] = &l;
                for (i, id) in ids.iter().enumerate() {
                    parts[2 + 2 * i] = std::slice::from_ref(id);
                    parts[3 + 2 * i] = &data[i * n..(i + 1) * n];
                }
                encode(id, Instruction::SyncWrite as u8, &parts[..2 + 2 * ids.len()], out)
            }
        }
    }

    fn broadcast_id(&self) -> u8 {
        BROADCAST_ID
    }

    fn push(&mut self, bytes: &[u8]) {
        self.decoder.push(bytes);
    }

    fn clear(&mut self) {
        self.decoder.clear();
    }

    fn next_reply(&mut self) -> Reply<'_> {
        // Instruction packets (our own request echoed on a half-duplex line) are skipped.
        match self.decoder.next_status() {
            Decoded::Packet(p) => {
                // A status without its error byte is malformed: as good as a bad checksum.
                let Some((&error, data)) = p.params.split_first() else {
                    return Reply::BadChecksum { id: p.id };
                };
                let code = error & !ALERT;
                if code != 0 {
                    return Reply::Refused { id: p.id, code };
                }
                let flags = StatusFlags(if error & ALERT != 0 { StatusFlags::ALERT } else { 0 });
                Reply::Status { id: p.id, flags, data }
            }
            Decoded::BadChecksum { id } => Reply::BadChecksum { id },
            Decoded::Incomplete => Reply::Incomplete,
        }
    }

    fn decode_state(model: u16, b: &[u8]) -> RawState {
        // Block at 126: load or current (2), velocity (4), position (4), the velocity and
        // position trajectories (8, unused), input voltage (2), temperature (1).
        let i16_at = |i: usize| f64::from(i16::from_le_bytes([b[i], b[i + 1]]));
        let i32_at = |i: usize| f64::from(i32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
        let load = match Model::from_number(model) {
            // Present current, mA, as a fraction of the factory current limit.
            Some(m) if m.reports_current() => i16_at(0) / f64::from(m.factory().current_limit),
            _ => i16_at(0) / 1000.0,
        };
        RawState {
            load,
            speed: i32_at(2) * ct::VELOCITY_UNIT,
            position: i32_at(6),
            voltage: f64::from(u16::from_le_bytes([b[18], b[19]])) / 10.0,
            temperature: f64::from(b[20]),
        }
    }

    fn decode_position(bytes: &[u8]) -> i64 {
        i64::from(le_value(bytes) as i32)
    }

    fn decode_homing_offset(bytes: &[u8]) -> i32 {
        le_value(bytes) as i32
    }

    fn hardware_flags(raw: u8) -> StatusFlags {
        hardware_flags(raw)
    }

    fn model_name(model: u16) -> Option<&'static str> {
        Model::from_number(model).map(Model::name)
    }
}

/// Registers of the state block, for checking its layout.
pub const STATE_REGISTERS: [Register; 5] =
    [ct::PRESENT_LOAD, ct::PRESENT_VELOCITY, ct::PRESENT_POSITION, ct::PRESENT_INPUT_VOLTAGE, ct::PRESENT_TEMPERATURE];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_block_offsets_match_the_control_table() {
        let offsets: Vec<u8> = STATE_REGISTERS.iter().map(|r| r.addr - ct::STATE_BLOCK.addr).collect();
        assert_eq!(offsets, [0, 2, 6, 18, 20]);
        let mut b = [0u8; 21];
        b[0..2].copy_from_slice(&(-500i16).to_le_bytes());
        b[2..6].copy_from_slice(&(-10i32).to_le_bytes());
        b[6..10].copy_from_slice(&3000i32.to_le_bytes());
        b[18..20].copy_from_slice(&121u16.to_le_bytes());
        b[20] = 41;
        let s = Dynamixel::decode_state(Model::Xl430W250.number(), &b);
        assert_eq!((s.position, s.load, s.voltage, s.temperature), (3000.0, -0.5, 12.1, 41.0));
        assert!((s.speed + 10.0 * ct::VELOCITY_UNIT).abs() < 1e-9);
        // The XL330 reports current, mA: 875 of its 1750 mA limit is half.
        b[0..2].copy_from_slice(&875i16.to_le_bytes());
        assert_eq!(Dynamixel::decode_state(Model::Xl330M288.number(), &b).load, 0.5);
    }

    #[test]
    fn hardware_error_bits_map_onto_status_flags() {
        let f = hardware_flags(ct::HW_OVERLOAD | ct::HW_VOLTAGE);
        assert_eq!(f.0, StatusFlags::ALERT | StatusFlags::OVERLOAD | StatusFlags::VOLTAGE);
        assert_eq!(f.describe(), "voltage, overload, hardware alert");
        assert_eq!(hardware_flags(ct::HW_ELECTRICAL_SHOCK).describe(), "electrical shock, hardware alert");
    }

    #[test]
    fn sync_write_interleaves_ids_and_data_like_the_sdk() {
        let mut out = [0u8; 64];
        let data = [0x96, 0, 0, 0, 0xAA, 0, 0, 0];
        let n = Dynamixel::new()
            .encode(BROADCAST_ID, &Request::SyncWrite { addr: 116, len: 4, ids: &[1, 2], data: &data }, &mut out)
            .unwrap();
        // The SDK's GroupSyncWrite bytes (see protocol.rs).
        assert_eq!(&out[n - 2..n], &[0x82, 0x87]);
    }

    #[test]
    fn an_error_number_is_a_refusal_and_the_alert_bit_a_flag() {
        let mut d = Dynamixel::new();
        let mut out = [0u8; 32];
        let n = encode(3, STATUS, &[&[ALERT | 7]], &mut out).unwrap();
        d.push(&out[..n]);
        assert_eq!(d.next_reply(), Reply::Refused { id: 3, code: 7 });
        let n = encode(3, STATUS, &[&[ALERT, 1, 2]], &mut out).unwrap();
        d.push(&out[..n]);
        assert_eq!(d.next_reply(), Reply::Status { id: 3, flags: StatusFlags(StatusFlags::ALERT), data: &[1, 2] });
        // Our own request echoed back is skipped.
        let n = encode(3, Instruction::Ping as u8, &[], &mut out).unwrap();
        d.push(&out[..n]);
        assert_eq!(d.next_reply(), Reply::Incomplete);
    }
}
