//! Fault injection for the end-to-end fault tests (`crates/uffs/tests/faults.rs`): a worker thread of the
//! build that panics, on request, so that the tests can check the build then ends in a clear error and never
//! hangs.
//!
//! `UFFS_FAULT_INJECT=parse-panic@R` makes the parser thread that gets the chunk holding MFT record `R` panic;
//! `read-panic@R` the reader thread that reads it (several, comma-separated). The variable is read once per
//! build, before any thread starts, and checked once per chunk, never per record; unset, it costs nothing. It is
//! honoured in release builds too, because the tests run those: a cargo feature would need a second build of
//! the workspace in CI. Nothing else in uffs reads it.

use crate::plan::Chunk;

/// The environment variable the tests set.
pub const VAR: &str = "UFFS_FAULT_INJECT";

/// The faults asked for, read from [`VAR`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Faults {
    parse_panic: Option<u64>,
    read_panic: Option<u64>,
}

impl Faults {
    /// The faults `UFFS_FAULT_INJECT` asks for (none when it is unset; unknown items are ignored).
    pub(crate) fn from_env() -> Faults {
        let Some(v) = std::env::var_os(VAR) else {
            return Faults::default();
        };
        let mut f = Faults::default();
        for item in v.to_string_lossy().split(',') {
            let Some((what, at)) = item.trim().split_once('@') else {
                continue;
            };
            let Ok(at) = at.parse::<u64>() else { continue };
            match what {
                "parse-panic" => f.parse_panic = Some(at),
                "read-panic" => f.read_panic = Some(at),
                _ => {}
            }
        }
        f
    }

    /// Panics if a parser thread was asked to panic on a record of `c`.
    pub(crate) fn before_parse(&self, c: Chunk) {
        if let Some(r) = self.parse_panic.filter(|&r| holds(c, r)) {
            panic!("injected fault ({VAR}=parse-panic@{r})");
        }
    }

    /// Panics if a reader thread was asked to panic on a record of `c`.
    pub(crate) fn before_read(&self, c: Chunk) {
        if let Some(r) = self.read_panic.filter(|&r| holds(c, r)) {
            panic!("injected fault ({VAR}=read-panic@{r})");
        }
    }
}

fn holds(c: Chunk, r: u64) -> bool {
    (c.first..c.first.saturating_add(c.records)).contains(&r)
}

/// The message of a panic's payload (a `&str` or a `String`, as `panic!` makes them).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}
