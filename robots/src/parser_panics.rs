//! Panics of third-party parsers, caught. The parquet and arrow crates (on corrupt dataset
//! files) and tract (on corrupt ONNX models) panic on some inputs that `embodia bench fuzz`
//! found. [`catch_parser_panic`] turns such a panic into an error message; while it runs,
//! [`panic_becomes_error`] is true on its thread, so that a program's panic hook (the `embodia`
//! binary's, the Python module's) can leave the caught panic unprinted: a corrupt file then
//! reads as one error line, not a panic message and a backtrace before it.
//!
//! It lives in this crate because it is the one every crate that reads user files builds on.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    /// Set while this thread runs a parser under [`catch_parser_panic`].
    static IN_CAUGHT_PARSER: Cell<bool> = const { Cell::new(false) };
}

/// Whether a panic on this thread now would happen inside [`catch_parser_panic`], where it
/// becomes an error.
pub fn panic_becomes_error() -> bool {
    IN_CAUGHT_PARSER.with(Cell::get)
}

/// Runs `parse`, returning its panic's message as `Err` instead of unwinding further. `parse`
/// must leave nothing of the caller's half-changed when it panics (it is asserted unwind-safe).
pub fn catch_parser_panic<T>(parse: impl FnOnce() -> T) -> Result<T, String> {
    let outer = IN_CAUGHT_PARSER.with(|flag| flag.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(parse));
    IN_CAUGHT_PARSER.with(|flag| flag.set(outer));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parser_panic_is_an_error_and_flagged_only_while_it_runs() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| assert!(panic_becomes_error(), "the flag must be set in the hook")));
        let caught = catch_parser_panic(|| -> u32 { panic!("corrupt {}", 7) });
        std::panic::set_hook(previous);
        assert_eq!(caught, Err("corrupt 7".to_string()));
        assert!(!panic_becomes_error());
        assert_eq!(catch_parser_panic(|| 3), Ok(3));
    }
}
