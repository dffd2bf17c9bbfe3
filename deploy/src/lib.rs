//! Deploying embodia policies to real robots.
//!
//! - [`servo_protocol`]: the seam between the bus driver and a servo protocol; two implement
//!   it: [`feetech`] (protocol 0: [`protocol`] packets, [`control_table`] of the STS3215) and
//!   [`dynamixel`] (protocol 2.0 packets with CRC-16 and byte stuffing, the XL330/XL430
//!   control table).
//! - [`driver`]: the bus driver (ping, read, write, sync-read, sync-write) over a
//!   [`transport::Port`]: a serial port or an in-memory emulator.
//! - [`emulator`]: a chain of emulated STS3215 or Dynamixel X-series servos with fault
//!   injection; [`pty`] serves it on a pseudo-terminal.
//! - [`servo_io`]: a robot's servos as the control loop's [`RobotIo`]; [`calibrate`]: recording
//!   joint ranges into a calibration.
//! - [`control`]: the fixed-rate control loop with [`chunking`] (temporal ensembling) and the
//!   [`safety`] layer; [`signal`]: Ctrl-C / SIGTERM as a safe stop.
//! - [`mcu`]: the C export as Cortex-M4F firmware under QEMU (outputs, instructions per pass,
//!   footprint).
//! - [`export`]: one-step policies as C99, `no_std` Rust and ONNX artifacts; [`onnx_runtime`]:
//!   running an ONNX policy through tract or onnxruntime (features `tract`, `ort`).
#![warn(missing_docs)]

pub mod calibrate;
pub mod chunking;
pub mod control;
pub mod control_table;
pub mod driver;
pub mod dynamixel;
pub mod emulator;
pub mod export;
pub mod feetech;
pub mod mcu;
pub mod onnx_runtime;
pub mod protocol;
pub mod pty;
pub mod safety;
pub mod scripted_leader;
pub mod servo_io;
pub mod servo_protocol;
pub mod signal;
pub mod state;
pub mod transport;

pub use control::{ControlLoop, CycleKind, LoopConfig, Policy, Summary, summarize};
pub use driver::{Bus, BusConfig, BusError};
pub use dynamixel::Dynamixel;
pub use emulator::{Fault, InjectedFault, ServoChain, Shaft, ShaftDynamics};
pub use feetech::Feetech;
pub use protocol::StatusFlags;
pub use pty::PtyEmulator;
pub use safety::{Safety, SafetyConfig, SafetyEvent};
pub use servo_io::{ServoGains, ServoRobot};
pub use servo_protocol::Protocol;
pub use state::{IoError, JointState, RobotIo};
pub use transport::{EmulatedPort, Port, SerialBusPort};
