//! A robot of servos on a Feetech bus, as the control loop's [`RobotIo`].

use embodia_robots::HardwareMap;

use crate::control_table::{self as ct, STATE_BLOCK, from_sign_magnitude};
use crate::driver::Bus;
use crate::protocol::StatusFlags;
use crate::state::{IoError, JointState, RobotIo};
use crate::transport::Port;

/// Reads tried (10 ms apart) before turning torque on fails.
pub const TORQUE_ON_ATTEMPTS: u32 = 10;

/// Position-loop gains of STS3215 servos (registers 21–23).
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

/// The joints of a [`HardwareMap`] driven through one bus.
pub struct ServoRobot<P: Port> {
    bus: Bus<P>,
    map: HardwareMap,
    ids: Vec<u8>,
    raw: Vec<u8>,
    flags: Vec<StatusFlags>,
    ticks: Vec<u8>,
}

impl<P: Port> ServoRobot<P> {
    /// The robot `map` describes, on `bus`.
    pub fn new(bus: Bus<P>, map: HardwareMap) -> Self {
        let ids = map.ids();
        let n = ids.len();
        Self {
            bus,
            map,
            ids,
            raw: vec![0; n * STATE_BLOCK.size as usize],
            flags: vec![StatusFlags(0); n],
            ticks: vec![0; 2 * n],
        }
    }

    /// The bus.
    pub fn bus(&mut self) -> &mut Bus<P> {
        &mut self.bus
    }

    /// The hardware map.
    pub fn map(&self) -> &HardwareMap {
        &self.map
    }

    /// Turns torque off and writes the position-loop gains of every servo (as LeRobot does on
    /// every connect; the values are not made permanent).
    pub fn configure(&mut self, gains: ServoGains) -> Result<(), IoError> {
        let n = self.ids.len();
        self.bus.sync_write(ct::TORQUE_ENABLE.addr, 1, &self.ids, &vec![0; n])?;
        let block: Vec<u8> = (0..n).flat_map(|_| [gains.p, gains.d, gains.i]).collect();
        Ok(self.bus.sync_write(ct::P_COEFFICIENT.addr, 3, &self.ids, &block)?)
    }

    fn send_goal_ticks(&mut self, goals: &[f64]) -> Result<(), IoError> {
        for ((j, g), out) in self.map.joints.iter().zip(goals).zip(self.ticks.chunks_exact_mut(2)) {
            let t = j.to_ticks(*g).round().clamp(0.0, 4095.0) as u16;
            out.copy_from_slice(&t.to_le_bytes());
        }
        Ok(self.bus.sync_write(ct::GOAL_POSITION.addr, 2, &self.ids, &self.ticks)?)
    }
}

impl<P: Port> RobotIo for ServoRobot<P> {
    fn num_joints(&self) -> usize {
        self.ids.len()
    }

    fn read_state(&mut self, s: &mut JointState) -> Result<(), IoError> {
        self.bus.sync_read(STATE_BLOCK.addr, STATE_BLOCK.size, &self.ids, &mut self.raw, &mut self.flags)?;
        for (j, (joint, b)) in self.map.joints.iter().zip(self.raw.chunks_exact(STATE_BLOCK.size as usize)).enumerate()
        {
            // Block at 56: position (2), speed (2), load (2), voltage (1), temperature (1).
            let word = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
            s.position[j] = joint.to_radians(f64::from(word(0)));
            s.velocity[j] = joint.speed_to_radians(f64::from(from_sign_magnitude(word(2), 15)));
            s.load[j] = f64::from(from_sign_magnitude(word(4), 10)) / 1000.0;
            s.voltage[j] = f64::from(b[6]) / 10.0;
            s.temperature[j] = f64::from(b[7]);
            s.flags[j] = self.flags[j];
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
        Ok(self.bus.sync_write(ct::TORQUE_ENABLE.addr, 1, &self.ids, &value)?)
    }
}
