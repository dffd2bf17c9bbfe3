//! The control table of the Dynamixel X-series servos of the Koch v1.1 arms: XL330-M288,
//! XL330-M077 and XL430-W250 (protocol 2.0).
//!
//! Addresses and sizes are those of the Robotis e-manual's XL330 and XL430 pages and of
//! LeRobot's `lerobot/motors/dynamixel/tables.py` (`X_SERIES_CONTROL_TABLE`). Addresses 0–63
//! are EEPROM (writable only with torque off), 64 onwards RAM. Values are little-endian two's
//! complement. Address 126 is the present load (0.1 %) on the XL430 and the present current
//! (mA) on the XL330.

use crate::control_table::Register;

const fn reg(addr: u8, size: u8) -> Register {
    Register { addr, size }
}

/// Model number (read-only).
pub const MODEL_NUMBER: Register = reg(0, 2);
/// Firmware version (read-only).
pub const FIRMWARE_VERSION: Register = reg(6, 1);
/// Servo id, 0–252.
pub const ID: Register = reg(7, 1);
/// Baud rate code: 0 = 9600, 1 = 57600 (factory), 2 = 115200, 3 = 1 Mbaud, 4 = 2 Mbaud.
pub const BAUD_RATE: Register = reg(8, 1);
/// Return delay, units of 2 µs (factory 250).
pub const RETURN_DELAY: Register = reg(9, 1);
/// Drive mode (bit 0: reverse direction).
pub const DRIVE_MODE: Register = reg(10, 1);
/// Operating mode: 3 = position control (factory), 4 = extended position, 5 = current-based
/// position (XL330).
pub const OPERATING_MODE: Register = reg(11, 1);
/// Homing offset, ticks (added to the present position).
pub const HOMING_OFFSET: Register = reg(20, 4);
/// Temperature limit, °C.
pub const TEMPERATURE_LIMIT: Register = reg(31, 1);
/// Maximum input voltage, 0.1 V.
pub const MAX_VOLTAGE_LIMIT: Register = reg(32, 2);
/// Minimum input voltage, 0.1 V.
pub const MIN_VOLTAGE_LIMIT: Register = reg(34, 2);
/// Current limit, mA (XL330 only).
pub const CURRENT_LIMIT: Register = reg(38, 2);
/// Velocity limit, 0.229 rpm.
pub const VELOCITY_LIMIT: Register = reg(44, 4);
/// Maximum position limit, ticks.
pub const MAX_POSITION_LIMIT: Register = reg(48, 4);
/// Minimum position limit, ticks.
pub const MIN_POSITION_LIMIT: Register = reg(52, 4);
/// Shutdown: which hardware errors turn torque off.
pub const SHUTDOWN: Register = reg(63, 1);
/// Torque enable.
pub const TORQUE_ENABLE: Register = reg(64, 1);
/// Status return level: 0 = ping only, 1 = ping and read, 2 = every instruction (factory).
pub const STATUS_RETURN_LEVEL: Register = reg(68, 1);
/// Hardware error status (read-only): see [`HW_VOLTAGE`] and the other `HW_*` bits.
pub const HARDWARE_ERROR_STATUS: Register = reg(70, 1);
/// Position D gain.
pub const POSITION_D_GAIN: Register = reg(80, 2);
/// Position I gain.
pub const POSITION_I_GAIN: Register = reg(82, 2);
/// Position P gain (KPP = value / 128).
pub const POSITION_P_GAIN: Register = reg(84, 2);
/// Profile acceleration, 214.577 rev/min² (0: none, the fastest).
pub const PROFILE_ACCELERATION: Register = reg(108, 4);
/// Profile velocity, 0.229 rpm (0: none, the fastest).
pub const PROFILE_VELOCITY: Register = reg(112, 4);
/// Goal position, ticks.
pub const GOAL_POSITION: Register = reg(116, 4);
/// 1 while moving (read-only).
pub const MOVING: Register = reg(122, 1);
/// Present load, 0.1 % (XL430), or present current, mA (XL330) (read-only).
pub const PRESENT_LOAD: Register = reg(126, 2);
/// Present velocity, 0.229 rpm (read-only).
pub const PRESENT_VELOCITY: Register = reg(128, 4);
/// Present position, ticks (read-only).
pub const PRESENT_POSITION: Register = reg(132, 4);
/// Present input voltage, 0.1 V (read-only).
pub const PRESENT_INPUT_VOLTAGE: Register = reg(144, 2);
/// Present temperature, °C (read-only).
pub const PRESENT_TEMPERATURE: Register = reg(146, 1);

/// The block the control loop reads: load/current, velocity, position, … voltage and
/// temperature (addresses 126–146, 21 bytes).
pub const STATE_BLOCK: Register = reg(126, 21);

/// Hardware error bit: input voltage outside the limits.
pub const HW_VOLTAGE: u8 = 1;
/// Hardware error bit: temperature above the limit.
pub const HW_OVERHEAT: u8 = 4;
/// Hardware error bit: motor encoder fault.
pub const HW_ENCODER: u8 = 8;
/// Hardware error bit: electrical shock (a short or insufficient power).
pub const HW_ELECTRICAL_SHOCK: u8 = 16;
/// Hardware error bit: persistent load above the maximum.
pub const HW_OVERLOAD: u8 = 32;

/// Ticks per revolution of the X series' 12-bit encoder.
pub const TICKS_PER_REV: u16 = 4096;
/// Ticks/s per unit of velocity (0.229 rpm).
pub const VELOCITY_UNIT: f64 = 0.229 / 60.0 * TICKS_PER_REV as f64;
/// Ticks/s² per unit of profile acceleration (214.577 rev/min²).
pub const ACCELERATION_UNIT: f64 = 214.577 / 3600.0 * TICKS_PER_REV as f64;

/// A Dynamixel model of the Koch arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    /// XL330-M288-T (Koch follower's elbow, wrist and gripper).
    Xl330M288,
    /// XL330-M077-T (Koch leader).
    Xl330M077,
    /// XL430-W250-T (Koch follower's shoulder).
    Xl430W250,
}

impl Model {
    /// Every model, in a stable order.
    pub const ALL: [Model; 3] = [Model::Xl330M288, Model::Xl330M077, Model::Xl430W250];

    /// Model number (LeRobot's `MODEL_NUMBER_TABLE`).
    pub fn number(self) -> u16 {
        match self {
            Model::Xl330M288 => 1200,
            Model::Xl330M077 => 1190,
            Model::Xl430W250 => 1060,
        }
    }

    /// LeRobot's name, e.g. `"xl330-m288"`.
    pub fn name(self) -> &'static str {
        match self {
            Model::Xl330M288 => "xl330-m288",
            Model::Xl330M077 => "xl330-m077",
            Model::Xl430W250 => "xl430-w250",
        }
    }

    /// The model named `name` (LeRobot's spelling).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The model with this model number.
    pub fn from_number(number: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.number() == number)
    }

    /// Whether address 126 is the present current (XL330) rather than the present load.
    pub fn reports_current(self) -> bool {
        matches!(self, Model::Xl330M288 | Model::Xl330M077)
    }

    /// No-load speed at the nominal voltage, ticks/s (e-manual: XL330-M288 103 rpm at 5 V,
    /// XL330-M077 383 rpm at 5 V, XL430-W250 57 rpm at 11.1 V).
    pub fn max_speed_ticks(self) -> f64 {
        let rpm = match self {
            Model::Xl330M288 => 103.0,
            Model::Xl330M077 => 383.0,
            Model::Xl430W250 => 57.0,
        };
        rpm / 60.0 * f64::from(TICKS_PER_REV)
    }

    /// Factory (current limit, min voltage, max voltage, present voltage, temperature limit,
    /// position P gain): XL330 1750 mA, 3.5–7.0 V at 5.0 V, 70 °C, P 400; XL430 6.0–14.0 V at
    /// 12.0 V, 72 °C, P 640.
    pub fn factory(self) -> Factory {
        match self {
            Model::Xl330M288 | Model::Xl330M077 => Factory {
                current_limit: 1750,
                min_voltage: 35,
                max_voltage: 70,
                voltage: 50,
                temperature_limit: 70,
                p_gain: 400,
                velocity_limit: 445,
            },
            Model::Xl430W250 => Factory {
                current_limit: 0,
                min_voltage: 60,
                max_voltage: 140,
                voltage: 120,
                temperature_limit: 72,
                p_gain: 640,
                velocity_limit: 265,
            },
        }
    }
}

/// Factory settings of one model (units of the control table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Factory {
    /// Current limit, mA (0 where the model has none).
    pub current_limit: u16,
    /// Minimum input voltage, 0.1 V.
    pub min_voltage: u16,
    /// Maximum input voltage, 0.1 V.
    pub max_voltage: u16,
    /// Nominal supply, 0.1 V.
    pub voltage: u16,
    /// Temperature limit, °C.
    pub temperature_limit: u8,
    /// Position P gain.
    pub p_gain: u16,
    /// Velocity limit, 0.229 rpm.
    pub velocity_limit: u32,
}

/// Size of the register memory the emulator keeps (covers the table up to 147).
pub const MEMORY_SIZE: usize = 148;

/// Factory register memory of one servo of `model` with id `id`, as LeRobot's motor setup
/// leaves it: 1 Mbaud, return delay 0, position control, torque off, centred.
pub fn defaults(model: Model, id: u8) -> [u8; MEMORY_SIZE] {
    let mut m = [0u8; MEMORY_SIZE];
    let mut put = |r: Register, v: u32| {
        let a = usize::from(r.addr);
        m[a..a + usize::from(r.size)].copy_from_slice(&v.to_le_bytes()[..usize::from(r.size)]);
    };
    let f = model.factory();
    put(MODEL_NUMBER, u32::from(model.number()));
    put(FIRMWARE_VERSION, 46);
    put(ID, u32::from(id));
    put(BAUD_RATE, 3);
    put(RETURN_DELAY, 0);
    put(OPERATING_MODE, 3);
    put(TEMPERATURE_LIMIT, u32::from(f.temperature_limit));
    put(MAX_VOLTAGE_LIMIT, u32::from(f.max_voltage));
    put(MIN_VOLTAGE_LIMIT, u32::from(f.min_voltage));
    put(CURRENT_LIMIT, u32::from(f.current_limit));
    put(VELOCITY_LIMIT, f.velocity_limit);
    put(MAX_POSITION_LIMIT, 4095);
    put(MIN_POSITION_LIMIT, 0);
    put(SHUTDOWN, 52);
    put(STATUS_RETURN_LEVEL, 2);
    put(POSITION_P_GAIN, u32::from(f.p_gain));
    put(GOAL_POSITION, 2048);
    put(PRESENT_POSITION, 2048);
    put(PRESENT_INPUT_VOLTAGE, u32::from(f.voltage));
    put(PRESENT_TEMPERATURE, 30);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_numbers_and_names_round_trip() {
        for m in Model::ALL {
            assert_eq!(Model::from_number(m.number()), Some(m));
            assert_eq!(Model::from_name(m.name()), Some(m));
        }
        assert_eq!(Model::from_number(777), None);
    }

    #[test]
    fn defaults_hold_four_byte_registers_little_endian() {
        let m = defaults(Model::Xl430W250, 2);
        assert_eq!(u16::from_le_bytes([m[0], m[1]]), 1060);
        assert_eq!(m[7], 2);
        assert_eq!(u32::from_le_bytes([m[48], m[49], m[50], m[51]]), 4095);
        assert_eq!(u32::from_le_bytes([m[132], m[133], m[134], m[135]]), 2048);
        // The state block ends at the temperature, inside the memory.
        assert_eq!(usize::from(STATE_BLOCK.addr + STATE_BLOCK.size), PRESENT_TEMPERATURE.addr as usize + 1);
    }
}
