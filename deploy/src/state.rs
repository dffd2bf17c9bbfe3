//! What the control loop reads from a robot and how it talks to one.

use crate::protocol::StatusFlags;

/// Measured joint state, one entry per joint in hardware-map order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JointState {
    /// Joint positions, rad `[num_joints]`.
    pub position: Vec<f64>,
    /// Joint velocities, rad/s `[num_joints]`.
    pub velocity: Vec<f64>,
    /// Servo load as a signed fraction of stall torque `[num_joints]` (−1..1).
    pub load: Vec<f64>,
    /// Servo input voltage, V `[num_joints]`.
    pub voltage: Vec<f64>,
    /// Servo temperature, °C `[num_joints]`.
    pub temperature: Vec<f64>,
    /// Error bytes of the servos' status replies `[num_joints]`.
    pub flags: Vec<StatusFlags>,
}

impl JointState {
    /// A state of `n` joints at zero, nominal 12 V and 25 °C, no error bits.
    pub fn new(n: usize) -> Self {
        Self {
            position: vec![0.0; n],
            velocity: vec![0.0; n],
            load: vec![0.0; n],
            voltage: vec![12.0; n],
            temperature: vec![25.0; n],
            flags: vec![StatusFlags(0); n],
        }
    }

    /// Number of joints.
    pub fn len(&self) -> usize {
        self.position.len()
    }

    /// Whether there are no joints.
    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }
}

/// Error of a robot's I/O (the bus, or a simulator), as text for the safety log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct IoError(pub String);

impl From<crate::BusError> for IoError {
    fn from(e: crate::BusError) -> Self {
        IoError(e.to_string())
    }
}

/// The robot under the control loop: servos on a bus, an emulator, or a simulator.
pub trait RobotIo {
    /// Number of joints.
    fn num_joints(&self) -> usize;
    /// Reads every joint's state into `state`.
    fn read_state(&mut self, state: &mut JointState) -> Result<(), IoError>;
    /// Sends joint position goals, rad `[num_joints]`.
    fn write_goals(&mut self, goals: &[f64]) -> Result<(), IoError>;
    /// Turns every joint's torque on (holding its present position) or off.
    fn set_torque(&mut self, on: bool) -> Result<(), IoError>;
}
