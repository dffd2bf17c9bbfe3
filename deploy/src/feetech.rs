//! Feetech STS3215 servos behind the [`Protocol`] seam: protocol-0 packets
//! ([`crate::protocol`]) and the STS3215 control table ([`crate::control_table`]).

use crate::control_table::{self as ct, Register, from_sign_magnitude};
use crate::protocol::{BROADCAST_ID, Decoded, Decoder, EncodeError, Instruction, StatusFlags, encode};
use crate::servo_protocol::{Protocol, RawState, Reply, Request, ServoTable, le_value};

/// The Feetech protocol-0 decoder state.
#[derive(Debug, Clone, Default)]
pub struct Feetech {
    decoder: Decoder,
}

impl Feetech {
    /// A protocol with an empty decoder.
    pub fn new() -> Self {
        Self { decoder: Decoder::new() }
    }
}

fn byte(v: u16) -> Result<u8, EncodeError> {
    u8::try_from(v).map_err(|_| EncodeError::TooLong(usize::from(v)))
}

impl Protocol for Feetech {
    const NAME: &'static str = "Feetech protocol 0";
    const TABLE: ServoTable = ServoTable {
        model_number: ct::MODEL_NUMBER,
        torque_enable: ct::TORQUE_ENABLE,
        goal_position: ct::GOAL_POSITION,
        present_position: ct::PRESENT_POSITION,
        homing_offset: ct::HOMING_OFFSET,
        state_block: ct::STATE_BLOCK,
        hardware_error: None,
        position_gains: Some(Register { addr: ct::P_COEFFICIENT.addr, size: 3 }),
        position_mode: None,
        max_tick: ct::TICKS_PER_REV - 1,
    };
    const PING_DATA: usize = 0;

    fn encode(&self, id: u8, req: &Request<'_>, out: &mut [u8]) -> Result<usize, EncodeError> {
        // Small fixed parameters on the stack; the sync instructions interleave ids and data.
        let mut p = [0u8; crate::protocol::MAX_PACKET];
        let (instr, n) = match *req {
            Request::Ping => (Instruction::Ping, 0),
            Request::Read { addr, len } => {
                p[..2].copy_from_slice(&[byte(addr)?, byte(len)?]);
                (Instruction::Read, 2)
            }
            Request::Write { addr, data } => {
                if data.len() > 252 {
                    return Err(EncodeError::TooLong(data.len() + 1));
                }
                p[0] = byte(addr)?;
                p[1..1 + data.len()].copy_from_slice(data);
                (Instruction::Write, 1 + data.len())
            }
            Request::SyncRead { addr, len, ids } => {
                if ids.len() > 251 {
                    return Err(EncodeError::TooLong(ids.len() + 2));
                }
                p[..2].copy_from_slice(&[byte(addr)?, byte(len)?]);
                p[2..2 + ids.len()].copy_from_slice(ids);
                (Instruction::SyncRead, 2 + ids.len())
            }
            Request::SyncWrite { addr, len, ids, data } => {
                let n = 2 + ids.len() * (1 + usize::from(len));
                if n > 253 || data.len() != ids.len() * usize::from(len) {
                    return Err(EncodeError::TooLong(n));
                }
                p[..2].copy_from_slice(&[byte(addr)?, byte(len)?]);
                let mut at = 2;
                for (id, chunk) in ids.iter().zip(data.chunks_exact(usize::from(len).max(1))) {
                    p[at] = *id;
                    p[at + 1..at + 1 + chunk.len()].copy_from_slice(chunk);
                    at += 1 + chunk.len();
                }
                (Instruction::SyncWrite, n)
            }
        };
        encode(id, instr as u8, &p[..n], out)
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
        match self.decoder.next_packet() {
            Decoded::Packet(p) => Reply::Status { id: p.id, flags: StatusFlags(p.x), data: p.params },
            Decoded::BadChecksum { id } => Reply::BadChecksum { id },
            Decoded::Incomplete => Reply::Incomplete,
        }
    }

    fn decode_state(_model: u16, b: &[u8]) -> RawState {
        // Block at 56: position (2), speed (2), load (2), voltage (1), temperature (1).
        let word = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        RawState {
            position: f64::from(word(0)),
            speed: f64::from(from_sign_magnitude(word(2), 15)),
            load: f64::from(from_sign_magnitude(word(4), 10)) / 1000.0,
            voltage: f64::from(b[6]) / 10.0,
            temperature: f64::from(b[7]),
        }
    }

    fn decode_position(bytes: &[u8]) -> i64 {
        i64::from(le_value(bytes))
    }

    fn decode_homing_offset(bytes: &[u8]) -> i32 {
        from_sign_magnitude(le_value(bytes) as u16, 11)
    }

    fn hardware_flags(raw: u8) -> StatusFlags {
        StatusFlags(raw)
    }

    fn model_name(model: u16) -> Option<&'static str> {
        (model == ct::STS3215_MODEL).then_some("sts3215")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(id: u8, req: Request<'_>) -> Vec<u8> {
        let mut out = [0u8; crate::protocol::MAX_PACKET];
        let n = Feetech::new().encode(id, &req, &mut out).unwrap();
        out[..n].to_vec()
    }

    // The same bytes as the hand-checked packets of `protocol.rs`.
    #[test]
    fn requests_encode_to_the_protocol_0_packets() {
        assert_eq!(enc(1, Request::Ping), [0xFF, 0xFF, 0x01, 0x02, 0x01, 0xFB]);
        assert_eq!(enc(1, Request::Read { addr: 0x38, len: 2 }), [0xFF, 0xFF, 0x01, 0x04, 0x02, 0x38, 0x02, 0xBE]);
        assert_eq!(
            enc(1, Request::Write { addr: 0x2A, data: &[0x00, 0x08] }),
            [0xFF, 0xFF, 0x01, 0x05, 0x03, 0x2A, 0x00, 0x08, 0xC4]
        );
        assert_eq!(
            enc(BROADCAST_ID, Request::SyncRead { addr: 0x38, len: 2, ids: &[1, 2] }),
            [0xFF, 0xFF, 0xFE, 0x06, 0x82, 0x38, 0x02, 0x01, 0x02, 0x3C]
        );
        assert_eq!(
            enc(BROADCAST_ID, Request::SyncWrite { addr: 0x2A, len: 2, ids: &[1, 2], data: &[0x00, 0x08, 0x00, 0x04] }),
            [0xFF, 0xFF, 0xFE, 0x0A, 0x83, 0x2A, 0x02, 0x01, 0x00, 0x08, 0x02, 0x00, 0x04, 0x39]
        );
    }

    #[test]
    fn addresses_beyond_one_byte_and_mismatched_sync_data_are_refused() {
        let mut out = [0u8; 64];
        let p = Feetech::new();
        assert_eq!(p.encode(1, &Request::Read { addr: 300, len: 2 }, &mut out), Err(EncodeError::TooLong(300)));
        let bad = Request::SyncWrite { addr: 42, len: 2, ids: &[1, 2], data: &[0; 3] };
        assert!(p.encode(BROADCAST_ID, &bad, &mut out).is_err());
    }
}
