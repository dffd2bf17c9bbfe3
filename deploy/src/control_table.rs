//! The STS3215 control table: register addresses, sizes, encodings and factory defaults.
//!
//! Addresses and sizes are those of Feetech's STS/SMS memory table as used by LeRobot
//! (`lerobot/motors/feetech/tables.py`, `STS_SMS_SERIES_CONTROL_TABLE`) and the SCServo SDK
//! (`SMS_STS.h`). Addresses 0–39 are EEPROM (kept across power cycles, writable only with
//! `LOCK` = 0), 40 onwards RAM. Two-byte values are little-endian. Speeds and currents are
//! sign-magnitude with the sign in bit 15, the load with the sign in bit 10 and the homing
//! offset with the sign in bit 11 (SDK `ReadSpeed`/`ReadLoad`, LeRobot's encoding table).

/// One register: address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Register {
    /// First byte's address.
    pub addr: u8,
    /// 1 or 2 bytes.
    pub size: u8,
}

const fn reg(addr: u8, size: u8) -> Register {
    Register { addr, size }
}

/// Firmware major version (read-only).
pub const FIRMWARE_MAJOR: Register = reg(0, 1);
/// Firmware minor version (read-only).
pub const FIRMWARE_MINOR: Register = reg(1, 1);
/// Model number (read-only); 777 for the STS3215.
pub const MODEL_NUMBER: Register = reg(3, 2);
/// Servo id, 0–253.
pub const ID: Register = reg(5, 1);
/// Baud rate code: 0 = 1 Mbaud, 1 = 500k, 2 = 250k, 3 = 128k, 4 = 115200, 5 = 76800, 6 = 57600, 7 = 38400.
pub const BAUD_RATE: Register = reg(6, 1);
/// Return delay, units of 2 µs.
pub const RETURN_DELAY: Register = reg(7, 1);
/// Status return level: 0 = reply to READ and PING only, 1 = reply to every instruction.
pub const RESPONSE_STATUS_LEVEL: Register = reg(8, 1);
/// Minimum position limit, ticks.
pub const MIN_POSITION_LIMIT: Register = reg(9, 2);
/// Maximum position limit, ticks.
pub const MAX_POSITION_LIMIT: Register = reg(11, 2);
/// Maximum temperature, °C.
pub const MAX_TEMPERATURE: Register = reg(13, 1);
/// Maximum input voltage, 0.1 V.
pub const MAX_VOLTAGE: Register = reg(14, 1);
/// Minimum input voltage, 0.1 V.
pub const MIN_VOLTAGE: Register = reg(15, 1);
/// Maximum torque, 0.1 % of stall torque.
pub const MAX_TORQUE: Register = reg(16, 2);
/// Position loop P gain.
pub const P_COEFFICIENT: Register = reg(21, 1);
/// Position loop D gain.
pub const D_COEFFICIENT: Register = reg(22, 1);
/// Position loop I gain.
pub const I_COEFFICIENT: Register = reg(23, 1);
/// Homing offset, ticks, sign-magnitude with the sign in bit 11.
pub const HOMING_OFFSET: Register = reg(31, 2);
/// Operating mode: 0 = position servo, 1 = wheel (speed), 2 = PWM, 3 = step.
pub const OPERATING_MODE: Register = reg(33, 1);
/// Torque enable: 0 = free, 1 = holding/driving (RAM).
pub const TORQUE_ENABLE: Register = reg(40, 1);
/// Acceleration, 100 ticks/s²; 0 = the firmware's maximum.
pub const ACCELERATION: Register = reg(41, 1);
/// Goal position, ticks.
pub const GOAL_POSITION: Register = reg(42, 2);
/// Goal time, ms (0 = use the goal speed).
pub const GOAL_TIME: Register = reg(44, 2);
/// Goal speed, ticks/s, sign-magnitude bit 15; 0 = maximum speed.
pub const GOAL_SPEED: Register = reg(46, 2);
/// Torque limit, 0.1 % of stall torque (RAM copy of `MAX_TORQUE`).
pub const TORQUE_LIMIT: Register = reg(48, 2);
/// EEPROM lock: 1 = locked, 0 = EEPROM writable.
pub const LOCK: Register = reg(55, 1);
/// Present position, ticks (read-only).
pub const PRESENT_POSITION: Register = reg(56, 2);
/// Present speed, ticks/s, sign-magnitude bit 15 (read-only).
pub const PRESENT_SPEED: Register = reg(58, 2);
/// Present load, 0.1 % of stall torque, sign-magnitude bit 10 (read-only).
pub const PRESENT_LOAD: Register = reg(60, 2);
/// Present input voltage, 0.1 V (read-only).
pub const PRESENT_VOLTAGE: Register = reg(62, 1);
/// Present temperature, °C (read-only).
pub const PRESENT_TEMPERATURE: Register = reg(63, 1);
/// Status: the error bits of the last status packet (read-only).
pub const STATUS: Register = reg(65, 1);
/// 1 while moving toward the goal (read-only).
pub const MOVING: Register = reg(66, 1);
/// Present current, 6.5 mA, sign-magnitude bit 15 (read-only).
pub const PRESENT_CURRENT: Register = reg(69, 2);

/// Size of the register memory the emulator keeps (covers the factory area up to 86).
pub const MEMORY_SIZE: usize = 100;
/// First RAM address: writes below need `LOCK` = 0.
pub const FIRST_RAM_ADDR: u8 = 40;

/// Model number of the STS3215 (LeRobot's `MODEL_NUMBER_TABLE`).
pub const STS3215_MODEL: u16 = 777;
/// Encoder ticks per revolution of the STS3215 (12-bit magnetic encoder).
pub const TICKS_PER_REV: u16 = 4096;
/// No-load speed of the 12 V STS3215 (45 rpm), ticks/s.
pub const MAX_SPEED_TICKS: f64 = 45.0 / 60.0 * TICKS_PER_REV as f64;
/// Acceleration the firmware uses when `ACCELERATION` is 0 (254 × 100 ticks/s²).
pub const MAX_ACCELERATION_TICKS: f64 = 254.0 * 100.0;

/// The state block the control loop reads in one sync-read: present position, speed, load,
/// voltage and temperature (addresses 56–63, 8 bytes).
pub const STATE_BLOCK: Register = reg(56, 8);

/// Decodes a sign-magnitude value with the sign in bit `sign_bit`.
pub fn from_sign_magnitude(raw: u16, sign_bit: u8) -> i32 {
    let magnitude = i32::from(raw & !(1 << sign_bit));
    if raw & (1 << sign_bit) != 0 { -magnitude } else { magnitude }
}

/// Encodes `v` as sign-magnitude with the sign in bit `sign_bit` (the magnitude saturates at
/// the bits below the sign).
pub fn to_sign_magnitude(v: i32, sign_bit: u8) -> u16 {
    let max = (1u32 << sign_bit) - 1;
    let magnitude = v.unsigned_abs().min(max) as u16;
    if v < 0 { magnitude | (1 << sign_bit) } else { magnitude }
}

/// Factory register memory of one STS3215 with id `id` (12 V version, position mode, centred,
/// torque off). Values are those the servos ship with as LeRobot and the SDK read them; the
/// position limits span the full turn and the present position is the middle (2048).
pub fn sts3215_defaults(id: u8) -> [u8; MEMORY_SIZE] {
    let mut m = [0u8; MEMORY_SIZE];
    let mut put = |r: Register, v: u16| {
        m[r.addr as usize] = v as u8;
        if r.size == 2 {
            m[r.addr as usize + 1] = (v >> 8) as u8;
        }
    };
    put(FIRMWARE_MAJOR, 3);
    put(FIRMWARE_MINOR, 10);
    put(MODEL_NUMBER, STS3215_MODEL);
    put(ID, u16::from(id));
    put(BAUD_RATE, 0);
    put(RETURN_DELAY, 0);
    put(RESPONSE_STATUS_LEVEL, 1);
    put(MIN_POSITION_LIMIT, 0);
    put(MAX_POSITION_LIMIT, 4095);
    put(MAX_TEMPERATURE, 70);
    put(MAX_VOLTAGE, 140);
    put(MIN_VOLTAGE, 40);
    put(MAX_TORQUE, 1000);
    put(P_COEFFICIENT, 32);
    put(D_COEFFICIENT, 32);
    put(I_COEFFICIENT, 0);
    put(OPERATING_MODE, 0);
    put(TORQUE_LIMIT, 1000);
    put(LOCK, 1);
    put(GOAL_POSITION, 2048);
    put(PRESENT_POSITION, 2048);
    put(PRESENT_VOLTAGE, 120);
    put(PRESENT_TEMPERATURE, 30);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_magnitude_round_trips_and_matches_the_sdk() {
        // SDK: if (v & (1<<15)) v = -(v & ~(1<<15)).
        assert_eq!(from_sign_magnitude(0x8000 | 100, 15), -100);
        assert_eq!(from_sign_magnitude(100, 15), 100);
        assert_eq!(from_sign_magnitude(0x0400 | 5, 10), -5);
        assert_eq!(to_sign_magnitude(-100, 15), 0x8064);
        assert_eq!(to_sign_magnitude(40_000, 15), 0x7FFF);
        assert_eq!(from_sign_magnitude(to_sign_magnitude(-2000, 10), 10), -1023, "saturates");
        for v in [-1023, -1, 0, 1, 1023] {
            assert_eq!(from_sign_magnitude(to_sign_magnitude(v, 10), 10), v);
        }
    }

    #[test]
    fn defaults_hold_the_model_number_little_endian() {
        let m = sts3215_defaults(4);
        assert_eq!(u16::from_le_bytes([m[3], m[4]]), 777);
        assert_eq!(m[ID.addr as usize], 4);
        assert_eq!(u16::from_le_bytes([m[11], m[12]]), 4095);
    }
}
