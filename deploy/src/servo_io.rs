//! A robot of servos on one bus (Feetech or Dynamixel), as the control loop's [`RobotIo`].

use embodia_robots::{Calibration, HardwareMap, ServoBus};

use crate::driver::{Bus, BusConfig, BusError};
use crate::dynamixel::Dynamixel;
use crate::feetech::Feetech;
use crate::protocol::StatusFlags;
use crate::servo_protocol::Protocol;
use crate::state::{IoError, JointState, RobotIo};
use crate::transport::Port;

/// Reads tried (10 ms apart) before turning torque on fails.
pub const TORQUE_ON_ATTEMPTS: u32 = 10;

/// Position-loop gains of STS3215 servos (registers 21–23). Dynamixel servos keep their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServoGains {
    /// Proportional gain (factory 32).
    pub p: u8,
    /// Derivative gain (factory 32).
    pub d: u8,
    /// Integral gain (factory 0).
    pub i: u8,
}

impl Default for ServoGains {
    /// LeRobot's SO-101 follower settings: P 16 (its "lower value to avoid shakiness"), D 32,
    /// I 0.
    fn default() -> Self {
        Self { p: 16, d: 32, i: 0 }
    }
}

/// The joints of a [`HardwareMap`] driven through one bus speaking `Pr`.
pub struct ServoRobot<P: Port, Pr: Protocol = Feetech> {
    bus: Bus<P, Pr>,
    map: HardwareMap,
    ids: Vec<u8>,
    /// Model number per joint, read by [`ServoRobot::configure`] (0 before).
    models: Vec<u16>,
    raw: Vec<u8>,
    flags: Vec<StatusFlags>,
    ticks: Vec<u8>,
    zeros: Vec<u8>,
}

impl<P: Port, Pr: Protocol> ServoRobot<P, Pr> {
    /// The robot `map` describes, on `bus`.
    pub fn new(bus: Bus<P, Pr>, map: HardwareMap) -> Self {
        let ids = map.ids();
        let n = ids.len();
        let t = Pr::TABLE;
        Self {
            bus,
            map,
            ids,
            models: vec![0; n],
            raw: vec![0; n * usize::from(t.state_block.size)],
            flags: vec![StatusFlags(0); n],
            ticks: vec![0; n * usize::from(t.goal_position.size)],
            zeros: vec![0; n],
        }
    }

    /// The bus.
    pub fn bus(&mut self) -> &mut Bus<P, Pr> {
        &mut self.bus
    }

    /// The hardware map.
    pub fn map(&self) -> &HardwareMap {
        &self.map
    }

    /// Model numbers per joint, as [`ServoRobot::configure`] read them.
    pub fn models(&self) -> &[u16] {
        &self.models
    }

    /// Reads every servo's model number and refuses a model this protocol does not know or
    /// that differs from the map's; turns torque off; puts servos that have an operating mode
    /// into position control; and, on Feetech servos, writes the position-loop gains (as
    /// LeRobot does on every connect; the values are not made permanent). Dynamixel servos
    /// keep their own gains.
    pub fn configure(&mut self, gains: ServoGains) -> Result<(), IoError> {
        self.patiently(|robot| robot.configure_now(gains))
    }

    /// Runs `f` with a bus timeout of at least 50 ms and at least 2 retries: setup is not
    /// time-critical, and a busy host must not fail it where the control loop's tight timeout
    /// would.
    fn patiently<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, IoError>) -> Result<T, IoError> {
        let config = self.bus.config();
        let timeout = config.timeout.max(std::time::Duration::from_millis(50));
        self.bus.set_config(BusConfig { timeout, retries: config.retries.max(2) });
        let result = f(self);
        self.bus.set_config(config);
        result
    }

    fn configure_now(&mut self, gains: ServoGains) -> Result<(), IoError> {
        let t = Pr::TABLE;
        for (j, joint) in self.map.joints.iter().enumerate() {
            let model = self.bus.read_value(joint.id, t.model_number)? as u16;
            match Pr::model_name(model) {
                Some(name) if name == joint.model => self.models[j] = model,
                found => {
                    let expected = format!("the {} of joint {} ({})", joint.model, joint.joint, Pr::NAME);
                    let e = BusError::WrongModel { id: joint.id, model, expected };
                    return Err(match found {
                        Some(name) => IoError(format!("{e}: it is a {name}")),
                        None => e.into(),
                    });
                }
            }
        }
        self.bus.sync_write(t.torque_enable.addr, 1, &self.ids, &self.zeros)?;
        if let Some((reg, mode)) = t.position_mode {
            let modes = vec![mode; self.ids.len()];
            self.bus.sync_write(reg.addr, reg.size, &self.ids, &modes)?;
        }
        if let Some(reg) = t.position_gains {
            let block: Vec<u8> = self.ids.iter().flat_map(|_| [gains.p, gains.d, gains.i]).collect();
            self.bus.sync_write(reg.addr, reg.size, &self.ids, &block)?;
        }
        Ok(())
    }

    /// Each servo's homing offset register, ticks, in joint order.
    pub fn homing_offsets(&mut self) -> Result<Vec<i32>, IoError> {
        let reg = Pr::TABLE.homing_offset;
        self.patiently(|robot| {
            let mut out = Vec::with_capacity(robot.ids.len());
            for &id in &robot.ids {
                let raw = robot.bus.read_value(id, reg)?;
                out.push(Pr::decode_homing_offset(&raw.to_le_bytes()[..usize::from(reg.size)]));
            }
            Ok(out)
        })
    }

    /// Refuses to drive servos whose homing offsets differ from those `cal` was recorded with:
    /// the calibrated ranges are present positions, which include the offset (LeRobot writes
    /// its offsets into the servos; a servo reset or swapped since would move every target).
    pub fn check_homing_offsets(&mut self, cal: &Calibration) -> Result<(), IoError> {
        let offsets = self.homing_offsets()?;
        for (joint, have) in self.map.joints.iter().zip(offsets) {
            if let Some(c) = cal.joints.get(&joint.joint)
                && c.homing_offset != have
            {
                return Err(IoError(format!(
                    "servo {} ({}): homing offset {have} differs from the calibration's {}: write the \
                     calibration's offset into the servo (as LeRobot does) or calibrate again",
                    joint.id, joint.joint, c.homing_offset
                )));
            }
        }
        Ok(())
    }

    fn send_goal_ticks(&mut self, goals: &[f64]) -> Result<(), IoError> {
        let t = Pr::TABLE;
        let size = usize::from(t.goal_position.size);
        for ((j, g), out) in self.map.joints.iter().zip(goals).zip(self.ticks.chunks_exact_mut(size)) {
            let tick = j.to_ticks(*g).round().clamp(0.0, f64::from(t.max_tick)) as u32;
            out.copy_from_slice(&tick.to_le_bytes()[..size]);
        }
        Ok(self.bus.sync_write(t.goal_position.addr, t.goal_position.size, &self.ids, &self.ticks)?)
    }
}

impl<P: Port, Pr: Protocol> RobotIo for ServoRobot<P, Pr> {
    fn num_joints(&self) -> usize {
        self.ids.len()
    }

    fn read_state(&mut self, s: &mut JointState) -> Result<(), IoError> {
        let block = Pr::TABLE.state_block;
        self.bus.sync_read(block.addr, block.size, &self.ids, &mut self.raw, &mut self.flags)?;
        for (j, (joint, b)) in self.map.joints.iter().zip(self.raw.chunks_exact(usize::from(block.size))).enumerate() {
            let r = Pr::decode_state(self.models[j], b);
            s.position[j] = joint.to_radians(r.position);
            s.velocity[j] = joint.speed_to_radians(r.speed);
            s.load[j] = r.load;
            s.voltage[j] = r.voltage;
            s.temperature[j] = r.temperature;
            s.flags[j] = self.flags[j];
        }
        // A Dynamixel reply only says that something is wrong: ask the servo what (one more
        // transaction, on faults only).
        if let Some(reg) = Pr::TABLE.hardware_error {
            for j in 0..self.ids.len() {
                if self.flags[j].0 & StatusFlags::ALERT != 0 {
                    let mut raw = [0u8; 1];
                    self.bus.read(self.ids[j], reg.addr, &mut raw)?;
                    s.flags[j] = Pr::hardware_flags(raw[0]);
                }
            }
        }
        Ok(())
    }

    fn write_goals(&mut self, goals: &[f64]) -> Result<(), IoError> {
        self.send_goal_ticks(goals)
    }

    fn set_torque(&mut self, on: bool) -> Result<(), IoError> {
        let n = self.ids.len();
        if on {
            // Goal = present position first, so enabling torque does not jump to a stale goal.
            // Not time-critical: a few attempts ride over a busy host or a noisy bus.
            let mut s = JointState::new(n);
            let mut attempt = 0;
            while let Err(e) = self.read_state(&mut s) {
                attempt += 1;
                if attempt >= TORQUE_ON_ATTEMPTS {
                    return Err(e);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            self.send_goal_ticks(&s.position)?;
        }
        let value = vec![u8::from(on); n];
        Ok(self.bus.sync_write(Pr::TABLE.torque_enable.addr, 1, &self.ids, &value)?)
    }
}

/// The robot `map` describes on `port`, speaking its servos' protocol, configured (models
/// checked, torque off, position control, `gains` on Feetech servos) and, given the
/// calibration it will be driven with, with its homing offsets checked against it.
pub fn connect<P: Port + 'static>(
    port: P,
    config: BusConfig,
    map: &HardwareMap,
    gains: ServoGains,
    calibration: Option<&Calibration>,
) -> Result<Box<dyn RobotIo>, IoError> {
    fn finish<P: Port + 'static, Pr: Protocol + 'static>(
        mut robot: ServoRobot<P, Pr>,
        gains: ServoGains,
        calibration: Option<&Calibration>,
    ) -> Result<Box<dyn RobotIo>, IoError> {
        robot.configure(gains)?;
        if let Some(cal) = calibration {
            robot.check_homing_offsets(cal)?;
        }
        Ok(Box::new(robot))
    }
    match map.bus() {
        ServoBus::Feetech => finish(ServoRobot::new(Bus::new(port, config), map.clone()), gains, calibration),
        ServoBus::Dynamixel => {
            finish(ServoRobot::new(Bus::with_protocol(port, config, Dynamixel::new()), map.clone()), gains, calibration)
        }
    }
}
