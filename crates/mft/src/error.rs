use std::io;

use thiserror::Error;

/// Errors opening or reading a source. Messages name the source and say what was wrong with it, cause included
/// (so the cause is not also given as `source()`, which would print it twice in a chain).
#[derive(Debug, Error)]
pub enum Error {
    #[error("{what}: {cause}")]
    Io { what: String, cause: io::Error },
    #[error("{what}: {cause}")]
    Format {
        what: String,
        cause: uffs_ntfs::Error,
    },
    #[error("{0}")]
    Source(String),
    /// The process lacks the rights to open the source (an elevated process on Windows, root on Linux).
    #[error("{0}")]
    Privilege(String),
    /// A bug: a thread of the build panicked (the panic's message is given). The build is abandoned: nothing it
    /// made is kept.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            cause: source,
        }
    }
    pub(crate) fn format(what: impl Into<String>, source: uffs_ntfs::Error) -> Error {
        Error::Format {
            what: what.into(),
            cause: source,
        }
    }
}
