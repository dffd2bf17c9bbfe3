//! Deploying embodia policies to real robots.
//!
//! - [`protocol`]: Feetech SCS/STS protocol-0 packets; [`control_table`]: the STS3215 registers.
//! - [`driver`]: the bus driver (ping, read, write, sync-read, sync-write) over a
//!   [`transport::Port`]: a serial port or an in-memory emulator.
//! - [`emulator`]: a chain of emulated STS3215 servos with fault injection; [`pty`] serves it
//!   on a pseudo-terminal.
#![warn(missing_docs)]

pub mod control_table;
pub mod driver;
pub mod emulator;
pub mod protocol;
pub mod pty;
pub mod transport;

pub use driver::{Bus, BusConfig, BusError};
pub use emulator::{Fault, InjectedFault, ServoChain};
pub use protocol::StatusFlags;
pub use pty::PtyEmulator;
pub use transport::{EmulatedPort, Port, SerialBusPort};
