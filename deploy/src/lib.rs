//! Deploying embodia policies to real robots.
//!
//! - [`protocol`]: Feetech SCS/STS protocol-0 packets; [`control_table`]: the STS3215 registers.
//! - [`driver`]: the bus driver (ping, read, write, sync-read, sync-write) over a
//!   [`transport::Port`]: a serial port or an in-memory emulator.
//! - [`emulator`]: a chain of emulated STS3215 servos with fault injection; [`pty`] serves it
//!   on a pseudo-terminal.
//! - [`servo_io`]: a robot's servos as the control loop's [`RobotIo`]; [`calibrate`]: recording
//!   joint ranges into a calibration.
//! - [`control`]: the fixed-rate control loop with [`chunking`] (temporal ensembling) and the
//!   [`safety`] layer; [`signal`]: Ctrl-C / SIGTERM as a safe stop.
//! - [`export`]: one-step policies as C99, `no_std` Rust (and later ONNX) artifacts; [`mcu`]:
//!   the C export as Cortex-M4F firmware under QEMU (outputs, instructions per pass, footprint).
//! - [`export`]: one-step policies as C99, `no_std` Rust and ONNX artifacts; [`onnx_runtime`]:
//!   running an ONNX policy through tract or onnxruntime (features `tract`, `ort`).
#![warn(missing_docs)]

pub mod calibrate;
pub mod chunking;
pub mod control;
pub mod control_table;
pub mod driver;
pub mod emulator;
pub mod export;
pub mod mcu;
pub mod onnx_runtime;
pub mod protocol;
pub mod pty;
pub mod safety;
pub mod servo_io;
pub mod signal;
pub mod state;
pub mod transport;

pub use control::{ControlLoop, CycleKind, LoopConfig, Policy, Summary, summarize};
pub use driver::{Bus, BusConfig, BusError};
pub use emulator::{Fault, InjectedFault, ServoChain};
pub use protocol::StatusFlags;
pub use pty::PtyEmulator;
pub use safety::{Safety, SafetyConfig, SafetyEvent};
pub use servo_io::{ServoGains, ServoRobot};
pub use state::{IoError, JointState, RobotIo};
pub use transport::{EmulatedPort, Port, SerialBusPort};
