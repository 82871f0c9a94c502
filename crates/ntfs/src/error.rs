use thiserror::Error;

/// Why a structure could not be parsed. Static strings keep the error path allocation-free: corrupt records are
/// counted by the millions on damaged volumes and must not cost more than good ones.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The structure claims bytes beyond the end of the buffer.
    #[error("{what} is truncated: needs {need} bytes at offset {offset}, only {have} available")]
    Truncated {
        what: &'static str,
        offset: usize,
        need: usize,
        have: usize,
    },
    /// A magic number or signature is not what the structure requires.
    #[error("{what} has a bad signature")]
    BadSignature { what: &'static str },
    /// A field holds a value the format does not allow.
    #[error("{what}: {why}")]
    Invalid {
        what: &'static str,
        why: &'static str,
    },
    /// An update-sequence check failed: the sector at `stride` was not written together with the rest of the
    /// record (a torn write), so the record's contents cannot be trusted.
    #[error("MFT record is torn: update sequence mismatch in 512-byte stride {stride}")]
    TornRecord { stride: usize },
}

pub type Result<T> = std::result::Result<T, Error>;
