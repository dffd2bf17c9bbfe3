//! The Feetech SCS/STS serial-bus protocol ("protocol 0"): instruction and status packets.
//!
//! Every packet is `0xFF 0xFF ID LEN X PARAMS… CHECKSUM` where `LEN` counts the bytes after
//! itself (`X`, the parameters and the checksum: `params + 2`), `X` is the instruction in a
//! request and the servo's error byte in a status reply, and `CHECKSUM = !(ID + LEN + X + Σ
//! PARAMS) & 0xFF`. Multi-byte register values are little-endian (low byte first). This is the
//! framing of Feetech's SCServo SDK (`scservo_sdk/protocol_packet_handler.py`) and of LeRobot's
//! `FeetechMotorsBus`, which drives STS3215 servos with it.
//!
//! [`encode`] writes a request into a caller buffer (no allocation); [`Decoder`] finds, checks
//! and returns packets in a byte stream, skipping noise before a header.

/// Packet header, two bytes.
pub const HEADER: [u8; 2] = [0xFF, 0xFF];
/// The broadcast id: every servo executes the instruction and none replies.
pub const BROADCAST_ID: u8 = 0xFE;
/// Largest id a servo can have (0–253; 254 is broadcast).
pub const MAX_ID: u8 = 0xFD;
/// Largest packet on the wire: header, id, length byte and a length of at most 255.
pub const MAX_PACKET: usize = 4 + 255;

/// Instruction codes of protocol 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Instruction {
    /// Ask a servo for a status packet (no parameters).
    Ping = 0x01,
    /// Read `len` bytes from `addr`: parameters `[addr, len]`.
    Read = 0x02,
    /// Write bytes at `addr`: parameters `[addr, data…]`.
    Write = 0x03,
    /// Write that takes effect at the next [`Instruction::Action`]: `[addr, data…]`.
    RegWrite = 0x04,
    /// Execute pending register writes (usually broadcast).
    Action = 0x05,
    /// Read the same registers of several servos: `[addr, len, id…]`, to the broadcast id;
    /// each listed servo replies with its own status packet, in list order.
    SyncRead = 0x82,
    /// Write the same registers of several servos: `[addr, len, (id, data[len])…]`, to the
    /// broadcast id; no replies.
    SyncWrite = 0x83,
}

impl Instruction {
    /// The instruction with code `b`, if any.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            0x01 => Self::Ping,
            0x02 => Self::Read,
            0x03 => Self::Write,
            0x04 => Self::RegWrite,
            0x05 => Self::Action,
            0x82 => Self::SyncRead,
            0x83 => Self::SyncWrite,
            _ => return None,
        })
    }
}

/// The error byte of a status packet (bit values of the SCServo SDK's `ERRBIT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct StatusFlags(pub u8);

impl StatusFlags {
    /// Input voltage outside the servo's min/max voltage limits.
    pub const VOLTAGE: u8 = 1;
    /// Magnetic angle sensor error.
    pub const ANGLE: u8 = 2;
    /// Temperature above the max temperature limit.
    pub const OVERHEAT: u8 = 4;
    /// Over-current ("OverEle").
    pub const OVERCURRENT: u8 = 8;
    /// Load above the overload torque for the protection time.
    pub const OVERLOAD: u8 = 32;
    /// Electrical shock: a short or insufficient power (Dynamixel hardware error; no Feetech
    /// servo sets this bit).
    pub const ELECTRICAL_SHOCK: u8 = 16;
    /// A hardware error the servo has not detailed (the Dynamixel status packet's alert bit;
    /// no Feetech servo sets this bit).
    pub const ALERT: u8 = 128;

    /// No bit set.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Names of the set bits, e.g. `"voltage, overheat"`; unknown bits as `bit N`.
    pub fn describe(self) -> String {
        let names = [
            (0, "voltage"),
            (1, "angle sensor"),
            (2, "overheat"),
            (3, "over-current"),
            (4, "electrical shock"),
            (5, "overload"),
            (7, "hardware alert"),
        ];
        (0..8)
            .filter(|b| self.0 & (1 << b) != 0)
            .map(|b| names.iter().find(|(n, _)| *n == b).map_or(format!("bit {b}"), |(_, s)| s.to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Checksum of the bytes after the header (id, length, instruction or error, parameters).
pub fn checksum(body: &[u8]) -> u8 {
    !body.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Errors of [`encode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// More parameters than a length byte can describe.
    #[error("{0} parameter bytes do not fit in one packet (at most 253)")]
    TooLong(usize),
    /// The output buffer is smaller than the packet.
    #[error("output buffer of {have} bytes is too small for a {need}-byte packet")]
    BufferTooSmall {
        /// Bytes the packet needs.
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
}

/// Writes one packet (`id`, instruction or error byte `x`, `params`) into `out` and returns its
/// length in bytes (`params.len() + 6`).
pub fn encode(id: u8, x: u8, params: &[u8], out: &mut [u8]) -> Result<usize, EncodeError> {
    if params.len() > 253 {
        return Err(EncodeError::TooLong(params.len()));
    }
    let need = params.len() + 6;
    if out.len() < need {
        return Err(EncodeError::BufferTooSmall { need, have: out.len() });
    }
    out[..2].copy_from_slice(&HEADER);
    out[2] = id;
    out[3] = (params.len() + 2) as u8;
    out[4] = x;
    out[5..5 + params.len()].copy_from_slice(params);
    out[need - 1] = checksum(&out[2..need - 1]);
    Ok(need)
}

/// One checked packet borrowed from a [`Decoder`]'s buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Servo id (or [`BROADCAST_ID`]).
    pub id: u8,
    /// Instruction code (request) or error byte (status reply).
    pub x: u8,
    /// Parameter bytes.
    pub params: &'a [u8],
}

/// What [`Decoder::next_packet`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A complete packet with a correct checksum.
    Packet(Packet<'a>),
    /// A complete frame whose checksum is wrong (it has been dropped from the buffer).
    BadChecksum {
        /// The id byte of the dropped frame.
        id: u8,
    },
    /// Not enough bytes yet for a complete packet.
    Incomplete,
}

/// Incremental packet decoder over a byte stream.
///
/// Bytes are pushed as they arrive; [`Decoder::next_packet`] skips anything before a header,
/// rejects frames with a length byte below 2 or a bad checksum, and never panics on any input.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed (compacted lazily to avoid shifting on every packet).
    start: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// An empty decoder with room for a few packets.
    pub fn new() -> Self {
        Self { buf: Vec::with_capacity(4 * MAX_PACKET), start: 0 }
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
        loop {
            let data = &self.buf[self.start..];
            // Skip to the first header; keep a trailing 0xFF that may start one.
            let Some(h) = data.windows(2).position(|w| w == HEADER) else {
                let keep = usize::from(data.last() == Some(&0xFF));
                self.start = self.buf.len() - keep;
                return Decoded::Incomplete;
            };
            self.start += h;
            let data = &self.buf[self.start..];
            // 0xFF 0xFF 0xFF …: the header is the last two of the run (ids never are 0xFF).
            if data.len() >= 3 && data[2] == 0xFF {
                self.start += 1;
                continue;
            }
            if data.len() < 4 {
                return Decoded::Incomplete;
            }
            let len = data[3] as usize;
            if len < 2 {
                self.start += 2;
                continue;
            }
            let total = 4 + len;
            if data.len() < total {
                return Decoded::Incomplete;
            }
            let id = data[2];
            if checksum(&data[2..total - 1]) != data[total - 1] {
                // Resynchronize just after this header: the real packet may start inside.
                self.start += 2;
                return Decoded::BadChecksum { id };
            }
            let begin = self.start;
            self.start += total;
            let frame = &self.buf[begin..begin + total];
            return Decoded::Packet(Packet { id, x: frame[4], params: &frame[5..total - 1] });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(id: u8, x: u8, params: &[u8]) -> Vec<u8> {
        let mut out = [0u8; MAX_PACKET];
        let n = encode(id, x, params, &mut out).unwrap();
        out[..n].to_vec()
    }

    // Byte sequences worked out by hand from the protocol description:
    // checksum = !(id + len + instr + params) & 0xFF.
    #[test]
    fn ping_packet_bytes() {
        // id 1, len 2, instr 1: sum 4 -> !4 = 0xFB.
        assert_eq!(enc(1, Instruction::Ping as u8, &[]), [0xFF, 0xFF, 0x01, 0x02, 0x01, 0xFB]);
    }

    #[test]
    fn read_present_position_bytes() {
        // Read 2 bytes at 56 (0x38) from id 1: 1 + 4 + 2 + 0x38 + 2 = 0x41 -> 0xBE.
        assert_eq!(enc(1, Instruction::Read as u8, &[0x38, 0x02]), [0xFF, 0xFF, 0x01, 0x04, 0x02, 0x38, 0x02, 0xBE]);
    }

    #[test]
    fn write_goal_position_bytes() {
        // Goal position 2048 = 0x0800 at 42 (0x2A), id 1: 1 + 5 + 3 + 0x2A + 0x00 + 0x08 = 0x3B -> 0xC4.
        assert_eq!(
            enc(1, Instruction::Write as u8, &[0x2A, 0x00, 0x08]),
            [0xFF, 0xFF, 0x01, 0x05, 0x03, 0x2A, 0x00, 0x08, 0xC4]
        );
    }

    #[test]
    fn sync_read_bytes() {
        // Present position (56, 2 bytes) of ids 1 and 2: 0xFE + 6 + 0x82 + 0x38 + 2 + 1 + 2 = 0x1C3 -> 0xC3 -> 0x3C.
        assert_eq!(
            enc(BROADCAST_ID, Instruction::SyncRead as u8, &[0x38, 0x02, 0x01, 0x02]),
            [0xFF, 0xFF, 0xFE, 0x06, 0x82, 0x38, 0x02, 0x01, 0x02, 0x3C]
        );
    }

    #[test]
    fn sync_write_bytes() {
        // Goal position of id 1 = 0x0800 and id 2 = 0x0400:
        // 0xFE + 10 + 0x83 + 0x2A + 2 + 1 + 0 + 8 + 2 + 0 + 4 = 0x1C6 -> 0xC6 -> 0x39.
        assert_eq!(
            enc(BROADCAST_ID, Instruction::SyncWrite as u8, &[0x2A, 0x02, 0x01, 0x00, 0x08, 0x02, 0x00, 0x04]),
            [0xFF, 0xFF, 0xFE, 0x0A, 0x83, 0x2A, 0x02, 0x01, 0x00, 0x08, 0x02, 0x00, 0x04, 0x39]
        );
    }

    #[test]
    fn status_with_error_bits_decodes() {
        // Status of id 3, error = overheat | voltage (5), data 0x0800:
        // 3 + 4 + 5 + 0 + 8 = 0x14 -> 0xEB.
        let bytes = [0xFF, 0xFF, 0x03, 0x04, 0x05, 0x00, 0x08, 0xEB];
        let mut d = Decoder::new();
        d.push(&bytes);
        let Decoded::Packet(p) = d.next_packet() else { panic!("no packet") };
        assert_eq!((p.id, p.x, p.params), (3, 5, &[0x00, 0x08][..]));
        let flags = StatusFlags(p.x);
        assert_eq!(flags.describe(), "voltage, overheat");
        assert!(!flags.is_ok());
    }

    #[test]
    fn decoder_skips_noise_split_input_and_bad_checksums() {
        let good = enc(1, 0, &[7, 8]);
        let mut bad = enc(2, 0, &[9]);
        *bad.last_mut().unwrap() ^= 0x55;
        let mut stream = vec![0x00, 0xFF, 0x13];
        stream.extend(&bad);
        stream.extend(&good);
        let mut d = Decoder::new();
        let (a, b) = stream.split_at(7);
        d.push(a);
        assert_eq!(d.next_packet(), Decoded::Incomplete);
        d.push(b);
        assert_eq!(d.next_packet(), Decoded::BadChecksum { id: 2 });
        let Decoded::Packet(p) = d.next_packet() else { panic!("no packet") };
        assert_eq!((p.id, p.params), (1, &[7, 8][..]));
        assert_eq!(d.next_packet(), Decoded::Incomplete);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn encode_refuses_oversized_packets() {
        let mut out = [0u8; 8];
        assert_eq!(encode(1, 3, &[0; 254], &mut [0; 300]), Err(EncodeError::TooLong(254)));
        assert_eq!(encode(1, 3, &[0; 4], &mut out), Err(EncodeError::BufferTooSmall { need: 10, have: 8 }));
    }

    /// Random byte streams (seeded): the decoder never panics, and every packet it accepts
    /// occurs in the stream with its correct checksum; a frame with any single corrupted
    /// instruction, parameter or checksum byte is always rejected.
    #[test]
    fn decoder_never_accepts_a_bad_checksum_on_random_bytes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut d = Decoder::new();
        let mut recent: Vec<u8> = Vec::new();
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..20_000 {
            let n = rng.random_range(0..64);
            // Bias towards 0xFF and small values so headers and plausible lengths occur often.
            let chunk: Vec<u8> =
                (0..n).map(|_| if rng.random_bool(0.2) { 0xFF } else { rng.random_range(0..16) }).collect();
            d.push(&chunk);
            recent.extend(&chunk);
            let keep = recent.len().saturating_sub(2 * MAX_PACKET);
            recent.drain(..keep);
            loop {
                match d.next_packet() {
                    Decoded::Packet(p) => {
                        let frame = enc(p.id, p.x, p.params);
                        assert!(recent.windows(frame.len()).any(|w| w == frame), "accepted a frame not in the stream");
                        accepted += 1;
                    }
                    Decoded::BadChecksum { .. } => rejected += 1,
                    Decoded::Incomplete => break,
                }
            }
        }
        assert!(rejected > 1000, "the stream exercised few complete frames ({rejected})");
        let _ = accepted;
        for _ in 0..5_000 {
            let params: Vec<u8> = (0..rng.random_range(0..8)).map(|_| rng.random()).collect();
            let mut frame = enc(rng.random_range(0..=MAX_ID), rng.random(), &params);
            let i = rng.random_range(4..frame.len());
            frame[i] ^= rng.random_range(1..=255u8);
            let mut d = Decoder::new();
            d.push(&frame);
            assert_eq!(d.next_packet(), Decoded::BadChecksum { id: frame[2] }, "corrupted byte {i} of {frame:?}");
        }
    }
}
