//! Dynamixel protocol 2.0 packets: framing, CRC-16 and byte stuffing.
//!
//! An instruction packet is `FF FF FD 00 ID LEN_L LEN_H INST PARAMS… CRC_L CRC_H`, a status
//! packet `FF FF FD 00 ID LEN_L LEN_H 55 ERR PARAMS… CRC_L CRC_H`. `LEN` counts the bytes after
//! itself (instruction, error byte, parameters and CRC). The CRC is CRC-16 with polynomial
//! 0x8005, initial value 0, no reflection, over every byte before it, header included. Inside
//! the instruction and parameters a sender inserts `FD` after every `FF FF FD` ("byte
//! stuffing"), so that a header never occurs inside a packet; `LEN` and the CRC count the
//! stuffed bytes, and a receiver removes them after checking the CRC. Multi-byte values and
//! addresses are little-endian. This is the framing of Robotis' Dynamixel SDK
//! (`protocol2_packet_handler.py`) and of LeRobot's `DynamixelMotorsBus`.
//!
//! [`encode`] writes a packet into a caller buffer (no allocation); [`Decoder`] finds, checks
//! and unstuffs packets in a byte stream, skipping noise before a header.

pub use crate::protocol::EncodeError;

/// Packet header: three bytes and a reserved zero.
pub const HEADER: [u8; 4] = [0xFF, 0xFF, 0xFD, 0x00];
/// The broadcast id.
pub const BROADCAST_ID: u8 = 0xFE;
/// The instruction byte of a status packet.
pub const STATUS: u8 = 0x55;
/// Largest packet this crate sends or accepts, bytes (the SDK's `RXPACKET_MAX_LEN` is 1024).
pub const MAX_PACKET: usize = 1024;

/// Instruction codes of protocol 2.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Instruction {
    /// Ask a servo for its model number and firmware version.
    Ping = 0x01,
    /// Read `len` bytes at `addr`: parameters `[addr (2), len (2)]`.
    Read = 0x02,
    /// Write bytes at `addr`: `[addr (2), data…]`.
    Write = 0x03,
    /// Read the same registers of several servos: `[addr (2), len (2), id…]` to the broadcast
    /// id; each listed servo replies in list order.
    SyncRead = 0x82,
    /// Write the same registers of several servos: `[addr (2), len (2), (id, data[len])…]`
    /// to the broadcast id; no replies.
    SyncWrite = 0x83,
}

impl Instruction {
    /// The instruction with code `b`, if this crate knows it.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            0x01 => Self::Ping,
            0x02 => Self::Read,
            0x03 => Self::Write,
            0x82 => Self::SyncRead,
            0x83 => Self::SyncWrite,
            _ => return None,
        })
    }
}

/// The alert bit of a status packet's error byte: the servo has a hardware error (details in
/// its hardware-error-status register); the instruction was still executed.
pub const ALERT: u8 = 0x80;

/// Name of a status packet's error number (the error byte without [`ALERT`]): why the servo
/// did not execute an instruction.
pub fn error_name(code: u8) -> &'static str {
    match code {
        1 => "result fail",
        2 => "instruction error",
        3 => "CRC error",
        4 => "data range error",
        5 => "data length error",
        6 => "data limit error",
        7 => "access error",
        _ => "unknown error",
    }
}

/// CRC-16 (polynomial 0x8005, initial 0, unreflected) of `bytes`, as the SDK's `updateCRC`.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x8005 } else { crc << 1 };
        }
    }
    crc
}

/// Writes one packet into `out`: `id`, instruction `instr` (or [`STATUS`]), then the bytes of
/// `parts` in order as parameters, stuffed. Returns the packet's length.
pub fn encode(id: u8, instr: u8, parts: &[&[u8]], out: &mut [u8]) -> Result<usize, EncodeError> {
    let unstuffed: usize = parts.iter().map(|p| p.len()).sum();
    let have = out.len();
    let too_small = |need| EncodeError::BufferTooSmall { need, have };
    if out.len() < 10 + unstuffed {
        return Err(too_small(10 + unstuffed));
    }
    out[..4].copy_from_slice(&HEADER);
    out[4] = id;
    out[7] = instr;
    let mut n = 8;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        if n + 3 > out.len() {
            return Err(too_small(n + 3));
        }
        out[n] = b;
        n += 1;
        // The stuffing region starts at the instruction byte.
        if b == 0xFD && n >= 10 && out[n - 2] == 0xFF && out[n - 3] == 0xFF {
            out[n] = 0xFD;
            n += 1;
        }
    }
    let len = (n + 2 - 7) as u16;
    out[5..7].copy_from_slice(&len.to_le_bytes());
    let crc = crc16(&out[..n]);
    out[n..n + 2].copy_from_slice(&crc.to_le_bytes());
    Ok(n + 2)
}

/// One checked, unstuffed packet borrowed from a [`Decoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Servo id (or [`BROADCAST_ID`]).
    pub id: u8,
    /// Instruction code, [`STATUS`] for a status packet.
    pub instruction: u8,
    /// Parameters after unstuffing (a status packet's start with its error byte).
    pub params: &'a [u8],
}

/// What [`Decoder::next_packet`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A complete packet with a correct CRC.
    Packet(Packet<'a>),
    /// A complete frame whose CRC is wrong (dropped from the buffer).
    BadChecksum {
        /// The id byte of the dropped frame.
        id: u8,
    },
    /// Not enough bytes yet for a complete packet.
    Incomplete,
}

/// Incremental protocol 2.0 decoder over a byte stream.
///
/// [`Decoder::next_packet`] skips bytes before a header, rejects frames with a length below 3
/// or above [`MAX_PACKET`], an id of 0xFF or a bad CRC, and never panics on any input. Its
/// buffers are allocated once.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Vec<u8>,
    start: usize,
    params: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// An empty decoder with room for a few packets.
    pub fn new() -> Self {
        Self { buf: Vec::with_capacity(4 * MAX_PACKET), start: 0, params: Vec::with_capacity(MAX_PACKET) }
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 2 * MAX_PACKET {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets every buffered byte.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }

    /// Bytes buffered and not yet consumed.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next packet in the buffered bytes, or why there is none.
    pub fn next_packet(&mut self) -> Decoded<'_> {
        self.next_frame(false)
    }

    /// The next status packet, skipping instruction packets (a request echoed on a
    /// half-duplex line, or another host's).
    pub fn next_status(&mut self) -> Decoded<'_> {
        self.next_frame(true)
    }

    fn next_frame(&mut self, status_only: bool) -> Decoded<'_> {
        loop {
            let data = &self.buf[self.start..];
            let Some(h) = data.windows(4).position(|w| w == HEADER) else {
                // Keep a tail that may be the start of a header.
                let keep = (1..=3.min(data.len())).rev().find(|&k| data[data.len() - k..] == HEADER[..k]).unwrap_or(0);
                self.start = self.buf.len() - keep;
                return Decoded::Incomplete;
            };
            self.start += h;
            let data = &self.buf[self.start..];
            if data.len() < 8 {
                return Decoded::Incomplete;
            }
            let len = usize::from(u16::from_le_bytes([data[5], data[6]]));
            if len < 3 || 7 + len > MAX_PACKET || data[4] == 0xFF {
                self.start += 1;
                continue;
            }
            let total = 7 + len;
            if data.len() < total {
                return Decoded::Incomplete;
            }
            let id = data[4];
            let crc = u16::from_le_bytes([data[total - 2], data[total - 1]]);
            if crc16(&data[..total - 2]) != crc {
                // Resynchronize just after this header: the real packet may start inside.
                self.start += 1;
                return Decoded::BadChecksum { id };
            }
            let begin = self.start;
            self.start += total;
            let frame = &self.buf[begin..begin + total];
            if status_only && frame[7] != STATUS {
                continue;
            }
            self.params.clear();
            // Unstuff: drop the FD after FF FF FD (the instruction byte counts for the pattern).
            for i in 8..total - 2 {
                let stuffed = frame[i] == 0xFD && frame[i - 1] == 0xFD && frame[i - 2] == 0xFF && frame[i - 3] == 0xFF;
                if !stuffed {
                    self.params.push(frame[i]);
                }
            }
            return Decoded::Packet(Packet { id, instruction: frame[7], params: &self.params });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(id: u8, instr: u8, parts: &[&[u8]]) -> Vec<u8> {
        let mut out = [0u8; MAX_PACKET];
        let n = encode(id, instr, parts, &mut out).unwrap();
        out[..n].to_vec()
    }

    // Byte sequences as Robotis' Python SDK 4.1.0 (`dynamixel_sdk.PacketHandler(2.0)`) sends them.
    #[test]
    fn packets_match_the_official_sdk_byte_for_byte() {
        assert_eq!(enc(1, Instruction::Ping as u8, &[]), [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01, 0x19, 0x4E]);
        assert_eq!(
            enc(1, Instruction::Read as u8, &[&132u16.to_le_bytes(), &4u16.to_le_bytes()]),
            [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x07, 0x00, 0x02, 0x84, 0x00, 0x04, 0x00, 0x1D, 0x15]
        );
        assert_eq!(
            enc(1, Instruction::Write as u8, &[&116u16.to_le_bytes(), &512u32.to_le_bytes()]),
            [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x09, 0x00, 0x03, 0x74, 0x00, 0x00, 0x02, 0x00, 0x00, 0xCA, 0x89]
        );
        assert_eq!(
            enc(
                BROADCAST_ID,
                Instruction::SyncWrite as u8,
                &[&[0x74, 0, 4, 0], &[1, 0x96, 0, 0, 0], &[2, 0xAA, 0, 0, 0]]
            ),
            [
                0xFF, 0xFF, 0xFD, 0x00, 0xFE, 0x11, 0x00, 0x83, 0x74, 0x00, 0x04, 0x00, 0x01, 0x96, 0x00, 0x00, 0x00,
                0x02, 0xAA, 0x00, 0x00, 0x00, 0x82, 0x87
            ]
        );
        assert_eq!(
            enc(BROADCAST_ID, Instruction::SyncRead as u8, &[&[0x84, 0, 4, 0, 1, 2]]),
            [0xFF, 0xFF, 0xFD, 0x00, 0xFE, 0x09, 0x00, 0x82, 0x84, 0x00, 0x04, 0x00, 0x01, 0x02, 0xCE, 0xFA]
        );
    }

    #[test]
    fn crc16_matches_the_sdk_on_a_ping_status() {
        // Status of a ping: model 1030, firmware 0x26 (the SDK's updateCRC gives 0x5D65).
        assert_eq!(crc16(&[0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x07, 0x00, 0x55, 0x00, 0x06, 0x04, 0x26]), 0x5D65);
    }

    #[test]
    fn parameters_containing_a_header_are_stuffed_and_unstuffed() {
        // CRC over the stuffed bytes, from the SDK's updateCRC.
        let bytes = enc(1, Instruction::Write as u8, &[&116u16.to_le_bytes(), &[0xFF, 0xFF, 0xFD, 0x00]]);
        assert_eq!(
            bytes,
            [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x0A, 0x00, 0x03, 0x74, 0x00, 0xFF, 0xFF, 0xFD, 0xFD, 0x00, 0x21, 0xE7]
        );
        let mut d = Decoder::new();
        d.push(&bytes);
        let Decoded::Packet(p) = d.next_packet() else { panic!("no packet") };
        assert_eq!((p.id, p.instruction, p.params), (1, 3, &[0x74, 0x00, 0xFF, 0xFF, 0xFD, 0x00][..]));
    }

    #[test]
    fn a_status_with_the_alert_bit_decodes() {
        // Read reply of id 1: error 0x80 (alert), present position 2048; CRC from the SDK.
        let bytes = [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x08, 0x00, 0x55, 0x80, 0x00, 0x08, 0x00, 0x00, 0x1F, 0x84];
        let mut d = Decoder::new();
        d.push(&bytes);
        let Decoded::Packet(p) = d.next_packet() else { panic!("no packet") };
        assert_eq!((p.id, p.instruction, p.params), (1, STATUS, &[ALERT, 0x00, 0x08, 0x00, 0x00][..]));
    }

    #[test]
    fn decoder_skips_noise_split_input_and_bad_crcs() {
        let good = enc(1, STATUS, &[&[0, 7, 8]]);
        let mut bad = enc(2, STATUS, &[&[0, 9]]);
        *bad.last_mut().unwrap() ^= 0x55;
        let mut stream = vec![0x00, 0xFF, 0xFF, 0x13, 0xFF, 0xFF, 0xFD];
        stream.extend(&bad);
        stream.extend(&good);
        let mut d = Decoder::new();
        let (a, b) = stream.split_at(9);
        d.push(a);
        assert_eq!(d.next_packet(), Decoded::Incomplete);
        d.push(b);
        assert_eq!(d.next_packet(), Decoded::BadChecksum { id: 2 });
        let Decoded::Packet(p) = d.next_packet() else { panic!("no packet") };
        assert_eq!((p.id, p.params), (1, &[0, 7, 8][..]));
        assert_eq!(d.next_packet(), Decoded::Incomplete);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn encode_refuses_a_buffer_too_small() {
        let mut out = [0u8; 12];
        assert_eq!(encode(1, 3, &[&[0; 4]], &mut out), Err(EncodeError::BufferTooSmall { need: 14, have: 12 }));
    }

    /// Random byte streams (seeded): the decoder never panics, every packet it accepts has a
    /// correct CRC, and a frame with any single corrupted byte after the header (but its length) is rejected.
    #[test]
    fn decoder_never_accepts_a_corrupted_frame() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut d = Decoder::new();
        for _ in 0..5_000 {
            let n = rng.random_range(0..64);
            let chunk: Vec<u8> = (0..n)
                .map(|_| match rng.random_range(0..4) {
                    0 => 0xFF,
                    1 => 0xFD,
                    2 => rng.random_range(0..16),
                    _ => rng.random(),
                })
                .collect();
            d.push(&chunk);
            while let Decoded::Packet(_) | Decoded::BadChecksum { .. } = d.next_packet() {}
        }
        for trial in 0..2_000 {
            let data: Vec<u8> = (0..rng.random_range(0..12)).map(|_| rng.random()).collect();
            let mut frame = enc(rng.random_range(0..0xFD), STATUS, &[&[0], &data]);
            // Any byte but the length (a shorter length makes a shorter frame, whose "CRC" is
            // data: a 1 in 65536 match, not a single-byte error).
            let i = match rng.random_range(4..frame.len() - 2) {
                i @ 5..=6 => i + 2,
                i => i,
            };
            frame[i] ^= rng.random_range(1..=255u8);
            let mut d = Decoder::new();
            d.push(&frame);
            assert!(!matches!(d.next_packet(), Decoded::Packet(_)), "trial {trial}: accepted a corrupted frame");
        }
    }
}
