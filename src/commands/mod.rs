//! One module per command (or family of commands) of the `embodia` binary: `main.rs` parses the
//! command line and dispatches here.

pub(crate) mod act;
pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod deploy;
pub(crate) mod distill;
pub(crate) mod eval;
pub(crate) mod plot;
pub(crate) mod record;
pub(crate) mod train;
