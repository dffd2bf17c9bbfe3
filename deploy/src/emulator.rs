//! An emulated chain of servos: STS3215 (Feetech protocol 0) or Dynamixel XL330/XL430
//! (protocol 2.0): register memory, motion toward the goal, status replies, and injected
//! faults.
//!
//! [`ServoChain`] answers packets the way a bus of these servos does. Feetech: PING and READ
//! always get a status reply, WRITE/REG_WRITE only when the servo's status return level is 1
//! (the factory setting), nothing answers the broadcast id except SYNC_READ (each listed servo
//! in turn). Dynamixel: PING replies with the model number and firmware version, READ and
//! WRITE are acknowledged at status return level 2 (the factory setting), SYNC_READ is
//! answered by each listed servo in turn, a write to the EEPROM area (below 64) while torque is
//! on is refused with the access error, like the servo's firmware does. With torque on, each
//! servo moves its present position toward the goal with a trapezoidal speed profile limited
//! by its goal-speed and acceleration registers (Feetech goal speed and acceleration,
//! Dynamixel profile velocity and acceleration; 0 = the fastest: the STS3215 firmware's
//! 25 400 ticks/s², an X series' no-load speed reached in 50 ms) and, near the goal, by its P
//! gain (speed ≤ P × error for the STS3215, ≤ P / 12.5 × error for the X series, so both
//! factory gains give a time constant of about 31 ms: a modelling choice, the firmwares'
//! loops are not published); with torque off it stays where it is, or where a hand puts it
//! ([`ServoChain::move_by_hand`]). The fault bits report voltage outside the limits, a
//! temperature above the limit and overload, from the present registers: in a Feetech
//! reply's error byte; in a Dynamixel reply as the alert bit with the details in the
//! hardware-error-status register. Unlike a real X-series servo, whose shutdown errors
//! (overheat, overload, electrical shock by default) turn torque off until it is rebooted, the
//! emulated errors clear when their cause ends and torque stays as it was.
//!
//! A [`ShaftDynamics`] can take the motion over from the servos' own model: a physics twin
//! (`embodia servo-emulator --physics`) whose simulated arm the goals drive, so that reads
//! return the simulated joints (gravity, inertia, effort limits included).
//!
//! [`Responder`] turns request bytes into reply bytes with their due times and applies the
//! [`Fault`]s queued with [`ServoChain::inject`]; [`crate::pty`] serves it on a
//! pseudo-terminal and [`crate::transport::EmulatedPort`] in memory.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::control_table::{self as ct, Register};
use crate::dynamixel::control_table::{self as dxl, Model};
use crate::dynamixel::protocol as dp;
use crate::protocol::{BROADCAST_ID, Decoded, Decoder, Instruction, Packet, StatusFlags, encode};

/// A fault the emulator injects into the next reply of one servo, or into its state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// The reply is never sent.
    Drop,
    /// The reply is sent this late.
    Delay(Duration),
    /// One byte after the header of the reply is flipped (checksum no longer matches).
    Corrupt,
    /// Only the first bytes of the reply are sent.
    Truncate,
    /// The servo answers nothing at all for this long.
    Silence(Duration),
    /// The input voltage drops below the minimum limit for this long (voltage error bit).
    Undervoltage(Duration),
    /// The temperature rises above the maximum limit for this long (overheat error bit).
    Overheat(Duration),
    /// The servo reports an overload for this long (overload error bit).
    Overload(Duration),
}

impl Fault {
    /// Short name of the kind, e.g. `"drop"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Drop => "drop",
            Fault::Delay(_) => "delay",
            Fault::Corrupt => "corrupt",
            Fault::Truncate => "truncate",
            Fault::Silence(_) => "silence",
            Fault::Undervoltage(_) => "undervoltage",
            Fault::Overheat(_) => "overheat",
            Fault::Overload(_) => "overload",
        }
    }

    /// Faults that change the servo's state rather than one reply.
    fn is_state_fault(&self) -> bool {
        matches!(self, Fault::Silence(_) | Fault::Undervoltage(_) | Fault::Overheat(_) | Fault::Overload(_))
    }
}

/// A fault as it took effect: which servo, what, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InjectedFault {
    /// Servo id.
    pub id: u8,
    /// The fault.
    pub fault: Fault,
    /// When it took effect (a reply fault: when the affected reply was due).
    pub at: Instant,
}

/// Which servo a [`Servo`] emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Feetech STS3215 (protocol 0).
    Sts3215,
    /// A Dynamixel X-series model (protocol 2.0).
    Dynamixel(Model),
}

/// The registers the emulation uses, per family.
#[derive(Debug)]
struct Regs {
    id: Register,
    torque_enable: Register,
    goal_position: Register,
    goal_speed: Register,
    acceleration: Register,
    p_gain: Register,
    min_position: Register,
    max_position: Register,
    present_position: Register,
    present_speed: Register,
    present_load: Register,
    present_voltage: Register,
    present_temperature: Register,
    min_voltage: Register,
    max_voltage: Register,
    max_temperature: Register,
    moving: Register,
    status_level: Register,
    /// Status level from which writes are acknowledged.
    acknowledge_writes_from: u32,
    /// Register holding the fault bits (Feetech status, Dynamixel hardware error status).
    error_bits: Register,
    /// Read-only address ranges (inclusive).
    read_only: &'static [(usize, usize)],
    memory: usize,
}

static FEETECH_REGS: Regs = Regs {
    id: ct::ID,
    torque_enable: ct::TORQUE_ENABLE,
    goal_position: ct::GOAL_POSITION,
    goal_speed: ct::GOAL_SPEED,
    acceleration: ct::ACCELERATION,
    p_gain: ct::P_COEFFICIENT,
    min_position: ct::MIN_POSITION_LIMIT,
    max_position: ct::MAX_POSITION_LIMIT,
    present_position: ct::PRESENT_POSITION,
    present_speed: ct::PRESENT_SPEED,
    present_load: ct::PRESENT_LOAD,
    present_voltage: ct::PRESENT_VOLTAGE,
    present_temperature: ct::PRESENT_TEMPERATURE,
    min_voltage: ct::MIN_VOLTAGE,
    max_voltage: ct::MAX_VOLTAGE,
    max_temperature: ct::MAX_TEMPERATURE,
    moving: ct::MOVING,
    status_level: ct::RESPONSE_STATUS_LEVEL,
    acknowledge_writes_from: 1,
    error_bits: ct::STATUS,
    read_only: &[(0, 4), (56, 70)],
    memory: ct::MEMORY_SIZE,
};

static DYNAMIXEL_REGS: Regs = Regs {
    id: dxl::ID,
    torque_enable: dxl::TORQUE_ENABLE,
    goal_position: dxl::GOAL_POSITION,
    goal_speed: dxl::PROFILE_VELOCITY,
    acceleration: dxl::PROFILE_ACCELERATION,
    p_gain: dxl::POSITION_P_GAIN,
    min_position: dxl::MIN_POSITION_LIMIT,
    max_position: dxl::MAX_POSITION_LIMIT,
    present_position: dxl::PRESENT_POSITION,
    present_speed: dxl::PRESENT_VELOCITY,
    present_load: dxl::PRESENT_LOAD,
    present_voltage: dxl::PRESENT_INPUT_VOLTAGE,
    present_temperature: dxl::PRESENT_TEMPERATURE,
    min_voltage: dxl::MIN_VOLTAGE_LIMIT,
    max_voltage: dxl::MAX_VOLTAGE_LIMIT,
    max_temperature: dxl::TEMPERATURE_LIMIT,
    moving: dxl::MOVING,
    status_level: dxl::STATUS_RETURN_LEVEL,
    acknowledge_writes_from: 2,
    error_bits: dxl::HARDWARE_ERROR_STATUS,
    read_only: &[(0, 6), (70, 70), (120, 147)],
    memory: dxl::MEMORY_SIZE,
};

/// Size of the emulated register memory (the larger of the two families').
const MEMORY: usize = 160;

/// One emulated servo.
#[derive(Debug, Clone)]
pub struct Servo {
    kind: Kind,
    mem: [u8; MEMORY],
    /// Position, ticks (fractional; the register holds it rounded).
    position: f64,
    /// Speed, ticks/s.
    speed: f64,
    /// A REG_WRITE waiting for ACTION: address and data.
    pending: Option<(u8, Vec<u8>)>,
    silent_until: Option<Instant>,
    undervoltage_until: Option<Instant>,
    overheat_until: Option<Instant>,
    overload_until: Option<Instant>,
    /// Faults for the next replies.
    reply_faults: VecDeque<Fault>,
}

impl Servo {
    /// A factory-default STS3215 with `id`.
    pub fn new(id: u8) -> Self {
        let mut mem = [0u8; MEMORY];
        mem[..ct::MEMORY_SIZE].copy_from_slice(&ct::sts3215_defaults(id));
        Self::with_memory(Kind::Sts3215, mem)
    }

    /// A Dynamixel `model` with `id`, as LeRobot's motor setup leaves it (1 Mbaud, return
    /// delay 0, position control).
    pub fn dynamixel(model: Model, id: u8) -> Self {
        let mut mem = [0u8; MEMORY];
        mem[..dxl::MEMORY_SIZE].copy_from_slice(&dxl::defaults(model, id));
        Self::with_memory(Kind::Dynamixel(model), mem)
    }

    fn with_memory(kind: Kind, mem: [u8; MEMORY]) -> Self {
        Self {
            kind,
            mem,
            position: 2048.0,
            speed: 0.0,
            pending: None,
            silent_until: None,
            undervoltage_until: None,
            overheat_until: None,
            overload_until: None,
            reply_faults: VecDeque::new(),
        }
    }

    fn regs(&self) -> &'static Regs {
        match self.kind {
            Kind::Sts3215 => &FEETECH_REGS,
            Kind::Dynamixel(_) => &DYNAMIXEL_REGS,
        }
    }

    /// What the servo emulates.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The servo's id register.
    pub fn id(&self) -> u8 {
        self.mem[self.regs().id.addr as usize]
    }

    /// A register's raw value (1 or 2 bytes, little-endian; the low half of a 4-byte one).
    pub fn get(&self, r: Register) -> u16 {
        self.value(r) as u16
    }

    /// A register's raw value (1, 2 or 4 bytes, little-endian).
    pub fn value(&self, r: Register) -> u32 {
        // Called many times per emulated step: plain loads, no iterator chains (debug builds).
        let (a, m) = (r.addr as usize, &self.mem);
        match r.size {
            1 => u32::from(m[a]),
            2 => u32::from(u16::from_le_bytes([m[a], m[a + 1]])),
            _ => u32::from_le_bytes([m[a], m[a + 1], m[a + 2], m[a + 3]]),
        }
    }

    fn set(&mut self, r: Register, v: u32) {
        let a = r.addr as usize;
        let b = v.to_le_bytes();
        match r.size {
            1 => self.mem[a] = b[0],
            2 => self.mem[a..a + 2].copy_from_slice(&b[..2]),
            _ => self.mem[a..a + 4].copy_from_slice(&b),
        }
    }

    /// Writes a signed value: sign-magnitude with the sign in `sign_bit` on Feetech servos,
    /// two's complement on Dynamixel ones.
    fn set_signed(&mut self, r: Register, v: i32, sign_bit: u8) {
        let raw = match self.kind {
            Kind::Sts3215 => u32::from(ct::to_sign_magnitude(v, sign_bit)),
            Kind::Dynamixel(_) => v as u32,
        };
        self.set(r, raw);
    }

    /// Present position, ticks (fractional).
    pub fn position(&self) -> f64 {
        self.position
    }

    /// The fault bits now (voltage 1, overheat 4, overload 32: the same bits in Feetech's error
    /// byte and in Dynamixel's hardware error status).
    fn fault_bits(&self) -> u8 {
        let r = self.regs();
        let mut bits = 0;
        let v = self.value(r.present_voltage);
        if v < self.value(r.min_voltage) || v > self.value(r.max_voltage) {
            bits |= StatusFlags::VOLTAGE;
        }
        if self.value(r.present_temperature) > self.value(r.max_temperature) {
            bits |= StatusFlags::OVERHEAT;
        }
        if self.overload_until.is_some() {
            bits |= StatusFlags::OVERLOAD;
        }
        bits
    }

    /// Error byte of a status reply now: the fault bits (Feetech), or the alert bit when any
    /// is set (Dynamixel).
    pub fn status(&self) -> StatusFlags {
        let bits = self.fault_bits();
        match self.kind {
            Kind::Sts3215 => StatusFlags(bits),
            Kind::Dynamixel(_) => StatusFlags(if bits != 0 { dp::ALERT } else { 0 }),
        }
    }

    fn write(&mut self, addr: u8, data: &[u8]) {
        let r = self.regs();
        for (i, &b) in data.iter().enumerate() {
            let a = addr as usize + i;
            // Read-only registers (model, firmware, present values) ignore writes.
            let read_only = r.read_only.iter().any(|&(lo, hi)| (lo..=hi).contains(&a));
            if a < r.memory && !read_only {
                self.mem[a] = b;
            }
        }
        let (lo, hi) = (self.value(r.min_position), self.value(r.max_position));
        if lo < hi {
            let goal = self.value(r.goal_position).clamp(lo, hi);
            self.set(r.goal_position, goal);
        }
    }

    fn read(&self, addr: u16, len: u16, out: &mut [u8]) {
        for (i, o) in out[..usize::from(len)].iter_mut().enumerate() {
            let a = usize::from(addr) + i;
            *o = if a < self.regs().memory { self.mem[a] } else { 0 };
        }
    }

    /// Fastest speed (ticks/s), acceleration (ticks/s²) and position gain (1/s) now.
    fn motion_limits(&self) -> (f64, f64, f64) {
        let r = self.regs();
        match self.kind {
            Kind::Sts3215 => {
                let v_max = match ct::from_sign_magnitude(self.get(r.goal_speed), 15).unsigned_abs() {
                    0 => ct::MAX_SPEED_TICKS,
                    v => f64::from(v).min(ct::MAX_SPEED_TICKS),
                };
                let a_max = match self.value(r.acceleration) {
                    0 => ct::MAX_ACCELERATION_TICKS,
                    a => f64::from(a) * 100.0,
                };
                // The position loop's proportional gain, read as 1/s (factory P = 32: ~31 ms).
                (v_max, a_max, f64::from(self.value(r.p_gain).max(1)))
            }
            Kind::Dynamixel(model) => {
                let top = model.max_speed_ticks();
                let v_max = match self.value(r.goal_speed) {
                    0 => top,
                    v => (f64::from(v) * dxl::VELOCITY_UNIT).min(top),
                };
                // Profile acceleration 0 is "no profile": the motor reaches its no-load speed in
                // about 50 ms (a modelling choice; the e-manual gives no figure).
                let a_max = match self.value(r.acceleration) {
                    0 => top / 0.05,
                    a => f64::from(a) * dxl::ACCELERATION_UNIT,
                };
                (v_max, a_max, (f64::from(self.value(r.p_gain)) / 12.5).max(1.0))
            }
        }
    }

    /// Advances the motion by `dt` seconds and ends state faults that are over at `now`.
    fn advance(&mut self, dt: f64, now: Instant) {
        self.end_faults(now);
        self.move_toward_goal(dt);
        self.publish(None);
    }

    /// The shaft as a [`ShaftDynamics`] sees it.
    fn shaft(&self) -> Shaft {
        let r = self.regs();
        Shaft {
            goal: f64::from(self.value(r.goal_position)),
            torque_on: self.value(r.torque_enable) != 0,
            max_speed: self.motion_limits().0,
            position: self.position,
            speed: self.speed,
            load: 0.0,
        }
    }

    /// Ends the state faults that are over at `now`.
    fn end_faults(&mut self, now: Instant) {
        let r = self.regs();
        let over = |t: &mut Option<Instant>| {
            if t.is_some_and(|t| now >= t) {
                *t = None;
            }
        };
        over(&mut self.silent_until);
        over(&mut self.overload_until);
        if self.undervoltage_until.is_some_and(|t| now >= t) {
            self.undervoltage_until = None;
            self.set(r.present_voltage, self.nominal_voltage());
        }
        if self.overheat_until.is_some_and(|t| now >= t) {
            self.overheat_until = None;
            self.set(r.present_temperature, 30);
        }
    }

    /// The servo's own motion model over `dt` seconds (see the module docs).
    fn move_toward_goal(&mut self, dt: f64) {
        let r = self.regs();
        if self.value(r.torque_enable) == 0 {
            self.speed = 0.0;
        } else {
            let goal = f64::from(self.value(r.goal_position));
            let (v_max, a_max, kp) = self.motion_limits();
            // Sub-steps of at most 1 ms keep the braking distance accurate.
            let steps = (dt / 1e-3).ceil().max(1.0) as usize;
            let h = dt / steps as f64;
            for _ in 0..steps {
                let err = goal - self.position;
                // Fastest speed from which the servo can still stop at the goal.
                let v_des = err.signum() * v_max.min((2.0 * a_max * err.abs()).sqrt()).min(kp * err.abs());
                self.speed += (v_des - self.speed).clamp(-a_max * h, a_max * h);
                let next = self.position + self.speed * h;
                if (goal - next).signum() != err.signum() || err == 0.0 {
                    self.position = goal;
                    self.speed = 0.0;
                } else {
                    self.position = next;
                }
            }
        }
    }

    /// Writes the present registers (position, speed, load, moving, error bits) from the
    /// shaft's state. `load` is the effort as a fraction of the stall torque, when a
    /// [`ShaftDynamics`] knows it; else the position loop's effort is taken as proportional to
    /// the error, saturating at 100 %.
    fn publish(&mut self, load: Option<f64>) {
        let r = self.regs();
        let pos = self.position.round().clamp(0.0, 4095.0) as u32;
        self.set(r.present_position, pos);
        let err = f64::from(self.value(r.goal_position)) - self.position;
        let on = self.value(r.torque_enable) != 0;
        // Load in ‰ of the stall torque, as both families report it.
        let load = match (on, load) {
            (false, _) => 0,
            (true, Some(fraction)) => (fraction * 1000.0).clamp(-1000.0, 1000.0) as i32,
            (true, None) => (err * 2.0).clamp(-1000.0, 1000.0) as i32,
        };
        match self.kind {
            Kind::Sts3215 => {
                self.set_signed(r.present_speed, self.speed.round() as i32, 15);
                self.set_signed(r.present_load, load, 10);
                self.set_signed(ct::PRESENT_CURRENT, load / 4, 15);
            }
            Kind::Dynamixel(model) => {
                self.set_signed(r.present_speed, (self.speed / dxl::VELOCITY_UNIT).round() as i32, 31);
                // The XL330 reports current (mA) where the XL430 reports load (0.1 %).
                let at_126 =
                    if model.reports_current() { load * i32::from(model.factory().current_limit) / 1000 } else { load };
                self.set_signed(r.present_load, at_126, 15);
            }
        }
        self.set(r.moving, u32::from(on && (err.abs() >= 1.0 || self.speed != 0.0)));
        let bits = self.fault_bits();
        self.set(r.error_bits, u32::from(bits));
    }

    fn nominal_voltage(&self) -> u32 {
        match self.kind {
            Kind::Sts3215 => 120,
            Kind::Dynamixel(m) => u32::from(m.factory().voltage),
        }
    }
}

/// A reply the chain produced: which servo, its bytes.
#[derive(Debug, Clone)]
struct Reply {
    id: u8,
    bytes: Vec<u8>,
}

/// One servo's shaft as a [`ShaftDynamics`] sees it, in the servo's units (ticks, ticks/s).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shaft {
    /// Goal position register, ticks.
    pub goal: f64,
    /// Whether torque is on (the servo drives toward the goal; off, the shaft turns freely).
    pub torque_on: bool,
    /// The fastest the servo may turn now, ticks/s (its goal-speed or profile-velocity
    /// register; 0 there means its no-load speed).
    pub max_speed: f64,
    /// Present position, ticks: the servo's last one on the way in, the new one on the way out.
    pub position: f64,
    /// Present speed, ticks/s (written by the dynamics).
    pub speed: f64,
    /// Effort as a fraction of the stall torque, −1 … 1 (written by the dynamics).
    pub load: f64,
}

/// What moves the servos' shafts instead of each servo's own motion model: a physics twin
/// whose simulated arm the goals drive (`embodia servo-emulator --physics`).
pub trait ShaftDynamics: Send + std::fmt::Debug {
    /// Advances `dt` seconds: reads every shaft's goal, torque state and speed limit, writes
    /// its position, speed and load. `shafts` is in bus order.
    fn advance(&mut self, dt: f64, shafts: &mut [Shaft]);
}

/// A bus of emulated servos, all of one family.
#[derive(Debug)]
pub struct ServoChain {
    servos: Vec<Servo>,
    log: Vec<InjectedFault>,
    /// Goal positions written, in bus order, when recording (id, ticks).
    goal_writes: Option<Vec<(u8, u16)>>,
    /// What moves the shafts when not the servos' own model, and its scratch `[servos]`.
    dynamics: Option<(Box<dyn ShaftDynamics>, Vec<Shaft>)>,
}

impl ServoChain {
    /// Factory-default STS3215 servos with these ids, in bus order.
    pub fn new(ids: &[u8]) -> Self {
        Self::of(ids.iter().map(|&id| Servo::new(id)).collect())
    }

    /// Dynamixel servos with these ids and models, in bus order.
    pub fn dynamixel(servos: &[(u8, Model)]) -> Self {
        Self::of(servos.iter().map(|&(id, model)| Servo::dynamixel(model, id)).collect())
    }

    /// The servos of a robot's hardware map, factory-default, in joint order; `None` when a
    /// model is one the emulator does not know.
    pub fn for_map(map: &embodia_robots::HardwareMap) -> Option<Self> {
        match map.bus() {
            embodia_robots::ServoBus::Feetech => {
                map.joints.iter().all(|j| j.model == "sts3215").then(|| Self::new(&map.ids()))
            }
            embodia_robots::ServoBus::Dynamixel => {
                let servos: Option<Vec<(u8, Model)>> =
                    map.joints.iter().map(|j| Model::from_name(j.model).map(|m| (j.id, m))).collect();
                servos.map(|s| Self::dynamixel(&s))
            }
        }
    }

    fn of(servos: Vec<Servo>) -> Self {
        Self { servos, log: Vec::new(), goal_writes: None, dynamics: None }
    }

    /// This chain with its shafts moved by `dynamics` (bus order) instead of the servos' own
    /// motion model. Their fault registers, replies and injected faults work as before;
    /// [`ServoChain::move_by_hand`] no longer moves anything (the dynamics own the shafts).
    pub fn with_dynamics(mut self, dynamics: Box<dyn ShaftDynamics>) -> Self {
        let shafts = vec![Shaft::default(); self.servos.len()];
        self.dynamics = Some((dynamics, shafts));
        self
    }

    /// Whether the chain speaks Dynamixel protocol 2.0 (else Feetech protocol 0).
    pub fn is_dynamixel(&self) -> bool {
        matches!(self.servos.first().map(|s| s.kind), Some(Kind::Dynamixel(_)))
    }

    /// Starts recording every goal position written (for checking what reached the servos).
    pub fn record_goal_writes(&mut self) {
        self.goal_writes.get_or_insert_with(Vec::new);
    }

    /// Moves the goal writes recorded so far, in the order the servos received them, to `out`.
    pub fn take_goal_writes(&mut self, out: &mut Vec<(u8, u16)>) {
        if let Some(w) = &mut self.goal_writes {
            out.append(w);
        }
    }

    /// Writes `data` at `addr` of the servo at `index`, recording a goal change.
    fn write_at(&mut self, index: usize, addr: u8, data: &[u8]) {
        let s = &mut self.servos[index];
        s.write(addr, data);
        let goal = s.regs().goal_position;
        let end = addr as usize + data.len();
        if let Some(w) = &mut self.goal_writes
            && addr <= goal.addr
            && end >= goal.addr as usize + usize::from(goal.size)
        {
            w.push((s.id(), s.get(goal)));
        }
    }

    fn index_of(&self, id: u8) -> Option<usize> {
        self.servos.iter().position(|s| s.id() == id)
    }

    /// The servo with `id`.
    pub fn servo(&self, id: u8) -> Option<&Servo> {
        self.servos.iter().find(|s| s.id() == id)
    }

    fn servo_mut(&mut self, id: u8) -> Option<&mut Servo> {
        self.servos.iter_mut().find(|s| s.id() == id)
    }

    /// Writes `data` into servo `id`'s register memory at `addr` as a setup tool would
    /// (read-only registers excepted); returns whether the servo exists.
    pub fn write_register(&mut self, id: u8, addr: u8, data: &[u8]) -> bool {
        let Some(i) = self.index_of(id) else { return false };
        self.write_at(i, addr, data);
        true
    }

    /// Puts the servo's shaft at `ticks` as a hand would (only moves it while torque is off,
    /// like a real servo that holds its goal). Returns whether it moved.
    pub fn move_by_hand(&mut self, id: u8, ticks: f64) -> bool {
        if self.dynamics.is_some() {
            return false;
        }
        match self.servo_mut(id) {
            Some(s) if s.value(s.regs().torque_enable) == 0 => {
                s.position = ticks.clamp(0.0, 4095.0);
                s.advance(0.0, Instant::now());
                true
            }
            _ => false,
        }
    }

    /// Queues `fault` for servo `id` at `now`: reply faults hit its next reply, state faults
    /// start now. Unknown ids are ignored (returns false).
    pub fn inject(&mut self, id: u8, fault: Fault, now: Instant) -> bool {
        let Some(s) = self.servo_mut(id) else { return false };
        let r = s.regs();
        match fault {
            Fault::Silence(d) => s.silent_until = Some(now + d),
            Fault::Undervoltage(d) => {
                s.undervoltage_until = Some(now + d);
                let v = s.value(r.min_voltage).saturating_sub(5);
                s.set(r.present_voltage, v);
            }
            Fault::Overheat(d) => {
                s.overheat_until = Some(now + d);
                let t = s.value(r.max_temperature) + 5;
                s.set(r.present_temperature, t);
            }
            Fault::Overload(d) => s.overload_until = Some(now + d),
            _ => {
                s.reply_faults.push_back(fault);
                return true;
            }
        }
        s.advance(0.0, now);
        self.log.push(InjectedFault { id, fault, at: now });
        true
    }

    /// Every fault that took effect so far, in order.
    pub fn fault_log(&self) -> &[InjectedFault] {
        &self.log
    }

    /// Advances every servo by `dt` seconds of motion, ending at `now`.
    pub fn advance(&mut self, dt: f64, now: Instant) {
        let Some((dynamics, shafts)) = &mut self.dynamics else {
            for s in &mut self.servos {
                s.advance(dt, now);
            }
            return;
        };
        for (s, shaft) in self.servos.iter_mut().zip(shafts.iter_mut()) {
            s.end_faults(now);
            *shaft = s.shaft();
        }
        dynamics.advance(dt, shafts);
        for (s, shaft) in self.servos.iter_mut().zip(shafts.iter()) {
            s.position = shaft.position.clamp(0.0, 4095.0);
            s.speed = shaft.speed;
            s.publish(Some(shaft.load));
        }
    }

    /// Executes one Feetech request packet and appends the replies (in bus order).
    fn handle_feetech(&mut self, p: Packet<'_>, replies: &mut Vec<Reply>) {
        let Some(instr) = Instruction::from_byte(p.x) else { return };
        if p.id == BROADCAST_ID {
            match instr {
                Instruction::SyncRead if p.params.len() >= 2 => {
                    let (addr, len) = (p.params[0], p.params[1]);
                    for &id in &p.params[2..] {
                        if let Some(s) = self.servo(id) {
                            let mut data = [0u8; 255];
                            s.read(addr.into(), len.into(), &mut data);
                            feetech_reply(replies, s, &data[..len as usize]);
                        }
                    }
                }
                Instruction::SyncWrite if p.params.len() >= 2 => {
                    let (addr, len) = (p.params[0], p.params[1] as usize);
                    for item in p.params[2..].chunks_exact(len + 1) {
                        if let Some(i) = self.index_of(item[0]) {
                            self.write_at(i, addr, &item[1..]);
                        }
                    }
                }
                Instruction::Write | Instruction::RegWrite if !p.params.is_empty() => {
                    for i in 0..self.servos.len() {
                        match instr {
                            Instruction::Write => self.write_at(i, p.params[0], &p.params[1..]),
                            _ => self.servos[i].pending = Some((p.params[0], p.params[1..].to_vec())),
                        }
                    }
                }
                Instruction::Action => {
                    for i in 0..self.servos.len() {
                        if let Some((addr, data)) = self.servos[i].pending.take() {
                            self.write_at(i, addr, &data);
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        let Some(i) = self.index_of(p.id) else { return };
        let s = &self.servos[i];
        let replies_to_all = s.value(s.regs().status_level) >= s.regs().acknowledge_writes_from;
        match instr {
            Instruction::Ping => feetech_reply(replies, &self.servos[i], &[]),
            Instruction::Read if p.params.len() == 2 => {
                let mut data = [0u8; 255];
                self.servos[i].read(p.params[0].into(), p.params[1].into(), &mut data);
                feetech_reply(replies, &self.servos[i], &data[..p.params[1] as usize]);
            }
            Instruction::Write | Instruction::RegWrite | Instruction::Action => {
                match instr {
                    Instruction::Write if !p.params.is_empty() => self.write_at(i, p.params[0], &p.params[1..]),
                    Instruction::RegWrite if !p.params.is_empty() => {
                        self.servos[i].pending = Some((p.params[0], p.params[1..].to_vec()))
                    }
                    Instruction::Action => {
                        if let Some((addr, data)) = self.servos[i].pending.take() {
                            self.write_at(i, addr, &data);
                        }
                    }
                    _ => return,
                }
                if replies_to_all {
                    feetech_reply(replies, &self.servos[i], &[]);
                }
            }
            _ => {}
        }
    }

    /// Executes one Dynamixel protocol-2.0 instruction packet and appends the replies.
    fn handle_dynamixel(&mut self, p: dp::Packet<'_>, replies: &mut Vec<Reply>) {
        let Some(instr) = dp::Instruction::from_byte(p.instruction) else { return };
        let word = |i: usize| u16::from_le_bytes([p.params[i], p.params[i + 1]]);
        if p.id == dp::BROADCAST_ID {
            match instr {
                dp::Instruction::SyncRead if p.params.len() >= 4 => {
                    let (addr, len) = (word(0), word(2));
                    for &id in &p.params[4..] {
                        if let Some(s) = self.servo(id) {
                            let mut data = vec![0u8; usize::from(len)];
                            s.read(addr, len, &mut data);
                            dynamixel_reply(replies, s, 0, &data);
                        }
                    }
                }
                dp::Instruction::SyncWrite if p.params.len() >= 4 => {
                    let (addr, len) = (word(0), usize::from(word(2)));
                    let Ok(addr) = u8::try_from(addr) else { return };
                    for item in p.params[4..].chunks_exact(len + 1) {
                        if let Some(i) = self.index_of(item[0])
                            && !self.refuses_write(i, addr)
                        {
                            self.write_at(i, addr, &item[1..]);
                        }
                    }
                }
                dp::Instruction::Write if p.params.len() >= 2 => {
                    let Ok(addr) = u8::try_from(word(0)) else { return };
                    for i in 0..self.servos.len() {
                        if !self.refuses_write(i, addr) {
                            self.write_at(i, addr, &p.params[2..]);
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        let Some(i) = self.index_of(p.id) else { return };
        let s = &self.servos[i];
        let level = s.value(s.regs().status_level);
        match instr {
            dp::Instruction::Ping => {
                let model = s.value(dxl::MODEL_NUMBER) as u16;
                let [lo, hi] = model.to_le_bytes();
                dynamixel_reply(replies, s, 0, &[lo, hi, s.value(dxl::FIRMWARE_VERSION) as u8]);
            }
            dp::Instruction::Read if p.params.len() == 4 => {
                let (addr, len) = (word(0), word(2));
                let mut data = vec![0u8; usize::from(len)];
                s.read(addr, len, &mut data);
                if level >= 1 {
                    dynamixel_reply(replies, s, 0, &data);
                }
            }
            dp::Instruction::Write if p.params.len() >= 2 => {
                let Ok(addr) = u8::try_from(word(0)) else {
                    dynamixel_reply(replies, s, 4, &[]);
                    return;
                };
                let code = if self.refuses_write(i, addr) {
                    7
                } else {
                    self.write_at(i, addr, &p.params[2..]);
                    0
                };
                if level >= 2 {
                    dynamixel_reply(replies, &self.servos[i], code, &[]);
                }
            }
            _ => {}
        }
    }

    /// Whether a Dynamixel servo refuses a write at `addr`: the EEPROM area (below the torque
    /// enable register) is writable only with torque off.
    fn refuses_write(&self, index: usize, addr: u8) -> bool {
        let s = &self.servos[index];
        addr < dxl::TORQUE_ENABLE.addr && s.value(dxl::TORQUE_ENABLE) != 0
    }
}

fn feetech_reply(replies: &mut Vec<Reply>, s: &Servo, data: &[u8]) {
    let mut bytes = vec![0u8; crate::protocol::MAX_PACKET];
    // A status reply has at most 253 data bytes (the request's length byte bounds it).
    let n = encode(s.id(), s.status().0, &data[..data.len().min(253)], &mut bytes).unwrap_or(0);
    bytes.truncate(n);
    replies.push(Reply { id: s.id(), bytes });
}

/// A Dynamixel status reply: error number `code` (0 = executed) with the alert bit when the
/// servo has a fault.
fn dynamixel_reply(replies: &mut Vec<Reply>, s: &Servo, code: u8, data: &[u8]) {
    let mut bytes = vec![0u8; dp::MAX_PACKET];
    let error = code | s.status().0;
    let n = dp::encode(s.id(), dp::STATUS, &[&[error], data], &mut bytes).unwrap_or(0);
    bytes.truncate(n);
    replies.push(Reply { id: s.id(), bytes });
}

/// The decoder for the chain's protocol.
#[derive(Debug)]
enum Wire {
    Feetech(Decoder),
    Dynamixel(dp::Decoder),
}

/// Turns request bytes into timed reply bytes for a [`ServoChain`], applying its faults.
#[derive(Debug)]
pub struct Responder {
    /// The servos.
    pub chain: ServoChain,
    wire: Wire,
    replies: Vec<Reply>,
    /// Replies waiting for their due time, in due order.
    outbox: VecDeque<(Instant, Reply)>,
    last: Instant,
    /// Replies corrupted so far (chooses which byte the next corruption flips).
    corrupted: usize,
}

impl Responder {
    /// A responder for `chain`, its clock starting at `now`.
    pub fn new(chain: ServoChain, now: Instant) -> Self {
        let wire =
            if chain.is_dynamixel() { Wire::Dynamixel(dp::Decoder::new()) } else { Wire::Feetech(Decoder::new()) };
        Self { chain, wire, replies: Vec::new(), outbox: VecDeque::new(), last: now, corrupted: 0 }
    }

    /// Advances the servos' motion to `now`.
    pub fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.chain.advance(dt, now);
    }

    /// Takes received bytes at `now` and queues the replies they call for.
    pub fn receive(&mut self, bytes: &[u8], now: Instant) {
        self.advance(now);
        // Bytes after the header that a corruption may flip (the error byte onwards).
        let first = match &mut self.wire {
            Wire::Feetech(d) => {
                d.push(bytes);
                loop {
                    match d.next_packet() {
                        Decoded::Packet(p) => self.chain.handle_feetech(p, &mut self.replies),
                        Decoded::BadChecksum { .. } => continue,
                        Decoded::Incomplete => break,
                    }
                }
                4
            }
            Wire::Dynamixel(d) => {
                d.push(bytes);
                loop {
                    match d.next_packet() {
                        dp::Decoded::Packet(p) => self.chain.handle_dynamixel(p, &mut self.replies),
                        dp::Decoded::BadChecksum { .. } => continue,
                        dp::Decoded::Incomplete => break,
                    }
                }
                7
            }
        };
        for mut r in self.replies.drain(..) {
            let Some(s) = self.chain.servos.iter_mut().find(|s| s.id() == r.id) else { continue };
            if s.silent_until.is_some() {
                continue;
            }
            let mut due = now;
            if let Some(fault) = s.reply_faults.pop_front() {
                debug_assert!(!fault.is_state_fault());
                let len = r.bytes.len();
                match fault {
                    Fault::Drop => r.bytes.clear(),
                    Fault::Delay(d) => due = now + d,
                    // Flip the error byte, a data byte or the checksum, in turn.
                    Fault::Corrupt if len > first => {
                        self.corrupted += 1;
                        r.bytes[first + self.corrupted % (len - first)] ^= 0x5A;
                    }
                    Fault::Truncate => r.bytes.truncate((len / 2).max(1)),
                    _ => {}
                }
                self.chain.log.push(InjectedFault { id: r.id, fault, at: now });
            }
            if !r.bytes.is_empty() {
                let at = self.outbox.iter().position(|(t, _)| *t > due).unwrap_or(self.outbox.len());
                self.outbox.insert(at, (due, r));
            }
        }
    }

    /// Appends the bytes of every reply due by `now` to `out`.
    pub fn transmit(&mut self, now: Instant, out: &mut Vec<u8>) {
        while self.outbox.front().is_some_and(|(t, _)| *t <= now) {
            let (_, r) = self.outbox.pop_front().expect("checked non-empty");
            out.extend_from_slice(&r.bytes);
        }
    }

    /// When the next queued reply is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.outbox.front().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Instruction as I;
    use crate::protocol::MAX_PACKET;

    fn request(r: &mut Responder, id: u8, instr: I, params: &[u8], now: Instant) -> Vec<Packet<'static>> {
        let mut buf = [0u8; MAX_PACKET];
        let n = encode(id, instr as u8, params, &mut buf).unwrap();
        r.receive(&buf[..n], now);
        let mut out = Vec::new();
        r.transmit(now, &mut out);
        let mut d = Decoder::new();
        d.push(&out);
        let mut packets = Vec::new();
        while let Decoded::Packet(p) = d.next_packet() {
            packets.push(Packet { id: p.id, x: p.x, params: Vec::leak(p.params.to_vec()) });
        }
        packets
    }

    #[test]
    fn ping_read_write_and_broadcast_follow_the_protocol() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1, 2]), t0);
        let p = request(&mut r, 1, I::Ping, &[], t0);
        assert_eq!((p.len(), p[0].id, p[0].x, p[0].params.len()), (1, 1, 0, 0));
        let p = request(&mut r, 2, I::Read, &[ct::MODEL_NUMBER.addr, 2], t0);
        assert_eq!(p[0].params, &777u16.to_le_bytes());
        // Unknown ids and broadcast writes get no reply.
        assert!(request(&mut r, 9, I::Ping, &[], t0).is_empty());
        assert!(request(&mut r, BROADCAST_ID, I::Write, &[ct::TORQUE_ENABLE.addr, 1], t0).is_empty());
        assert_eq!(r.chain.servo(2).unwrap().get(ct::TORQUE_ENABLE), 1);
        // Write gets an empty status reply at the factory status level.
        let p = request(&mut r, 1, I::Write, &[ct::GOAL_POSITION.addr, 0x00, 0x0C], t0);
        assert_eq!((p.len(), p[0].params.len()), (1, 0));
        assert_eq!(r.chain.servo(1).unwrap().get(ct::GOAL_POSITION), 0x0C00);
    }

    #[test]
    fn sync_read_replies_in_list_order_and_sync_write_is_silent() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1, 2, 3]), t0);
        let p = request(&mut r, BROADCAST_ID, I::SyncWrite, &[42, 2, 3, 0x00, 0x04, 1, 0x00, 0x0C], t0);
        assert!(p.is_empty());
        let p = request(&mut r, BROADCAST_ID, I::SyncRead, &[42, 2, 3, 1, 2], t0);
        let got: Vec<_> = p.iter().map(|p| (p.id, u16::from_le_bytes([p.params[0], p.params[1]]))).collect();
        assert_eq!(got, [(3, 0x0400), (1, 0x0C00), (2, 2048)]);
    }

    #[test]
    fn servo_moves_to_goal_within_speed_and_acceleration_limits() {
        let t0 = Instant::now();
        let mut c = ServoChain::new(&[1]);
        let s = &mut c.servos[0];
        s.write(ct::TORQUE_ENABLE.addr, &[1]);
        s.write(ct::ACCELERATION.addr, &[50]);
        s.write(ct::GOAL_POSITION.addr, &3048u16.to_le_bytes());
        let mut last = 2048.0;
        let mut top = 0.0f64;
        for i in 1..=200 {
            s.advance(0.01, t0 + Duration::from_millis(10 * i));
            let v = (s.position - last) / 0.01;
            assert!(v <= ct::MAX_SPEED_TICKS + 1e-6, "speed {v}");
            top = top.max(v);
            last = s.position;
        }
        assert_eq!(s.get(ct::PRESENT_POSITION), 3048);
        assert_eq!(s.get(ct::MOVING), 0);
        // 1000 ticks at 5000 ticks/s² cannot reach 3072 ticks/s: peak is √(a·d) ≈ 2236.
        assert!((2000.0..2300.0).contains(&top), "peak speed {top}");
    }

    #[test]
    fn a_lower_p_gain_approaches_the_goal_more_slowly() {
        let t0 = Instant::now();
        let settle = |p: u8| {
            let mut s = Servo::new(1);
            s.write(ct::P_COEFFICIENT.addr, &[p]);
            s.write(ct::TORQUE_ENABLE.addr, &[1]);
            s.write(ct::GOAL_POSITION.addr, &2248u16.to_le_bytes());
            (1..).find(|&ms| {
                s.advance(0.001, t0 + Duration::from_millis(ms));
                (2248.0 - s.position) < 200.0 * (-1.0f64).exp()
            })
        };
        // From rest the acceleration limit dominates; then speed ≤ P × error slows the approach.
        let (fast, slow) = (settle(32).unwrap(), settle(8).unwrap());
        assert!(slow > fast + 30 && fast < 120, "{fast} ms, {slow} ms");
    }

    #[test]
    fn goals_are_clamped_to_the_position_limits_and_torque_off_does_not_move() {
        let t0 = Instant::now();
        let mut c = ServoChain::new(&[1]);
        let s = &mut c.servos[0];
        s.write(ct::MAX_POSITION_LIMIT.addr, &3000u16.to_le_bytes());
        s.write(ct::GOAL_POSITION.addr, &4000u16.to_le_bytes());
        assert_eq!(s.get(ct::GOAL_POSITION), 3000);
        s.advance(1.0, t0);
        assert_eq!(s.get(ct::PRESENT_POSITION), 2048);
        assert!(c.move_by_hand(1, 1000.0));
        assert_eq!(c.servo(1).unwrap().get(ct::PRESENT_POSITION), 1000);
    }

    #[test]
    fn reply_faults_and_state_faults_change_what_the_bus_sees() {
        let t0 = Instant::now();
        let mut r = Responder::new(ServoChain::new(&[1]), t0);
        r.chain.inject(1, Fault::Drop, t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty());
        r.chain.inject(1, Fault::Corrupt, t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty(), "a corrupted reply must not decode");
        r.chain.inject(1, Fault::Delay(Duration::from_millis(50)), t0);
        assert!(request(&mut r, 1, I::Ping, &[], t0).is_empty());
        let mut late = Vec::new();
        r.transmit(t0 + Duration::from_millis(60), &mut late);
        assert_eq!(late.len(), 6);
        r.chain.inject(1, Fault::Truncate, t0);
        assert!(request(&mut r, 1, I::Read, &[56, 2], t0).is_empty());
        r.chain.inject(1, Fault::Overheat(Duration::from_millis(100)), t0);
        let p = request(&mut r, 1, I::Ping, &[], t0);
        assert_eq!(p[0].x, StatusFlags::OVERHEAT);
        let p = request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(150));
        assert_eq!(p[0].x, 0, "the overheat ends after its duration");
        r.chain.inject(1, Fault::Silence(Duration::from_millis(100)), t0 + Duration::from_millis(150));
        assert!(request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(200)).is_empty());
        assert_eq!(request(&mut r, 1, I::Ping, &[], t0 + Duration::from_millis(260)).len(), 1);
        let kinds: Vec<_> = r.chain.fault_log().iter().map(|f| f.fault.kind()).collect();
        assert_eq!(kinds, ["drop", "corrupt", "delay", "truncate", "overheat", "silence"]);
    }
}
