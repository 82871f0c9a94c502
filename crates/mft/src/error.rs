use std::io;

use thiserror::Error;

/// Errors opening or reading a source. Messages name the source and say what was wrong with it.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{what}: {source}")]
    Format {
        what: String,
        #[source]
        source: uffs_ntfs::Error,
    },
    #[error("{0}")]
    Source(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
    pub(crate) fn format(what: impl Into<String>, source: uffs_ntfs::Error) -> Error {
        Error::Format {
            what: what.into(),
            source,
        }
    }
}
