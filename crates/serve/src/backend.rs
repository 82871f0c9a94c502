//! What the servers answer from. The `uffs` binary provides two: the user's daemon (every registered volume)
//! and indexes opened by the serving process (`--index FILE` or `--source SOURCE`).

use std::io::Write;

use uffs_search::SearchRequest;

/// Why a request could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong (a bad query, an unknown column or sort key): the message says where, and
    /// a client can correct it.
    #[error("{0}")]
    BadRequest(String),
    /// Nothing to answer from now (no daemon running, no volume ready): retrying later may work.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

impl From<uffs_search::Error> for Error {
    fn from(e: uffs_search::Error) -> Error {
        match e {
            uffs_search::Error::BadRequest(m) => Error::BadRequest(m),
            uffs_search::Error::Failed(m) => Error::Failed(m),
        }
    }
}

/// A searchable set of volumes.
pub trait Backend: Send + Sync + 'static {
    /// Runs one search, as the command line runs the same request (`uffs_search::run`). What it prints is
    /// written to `out`; the answer is the number of matches (all of them, not only those printed).
    fn query(&self, req: &SearchRequest, out: &mut dyn Write) -> Result<u64, Error>;

    /// The volumes and their state, as the daemon's `status` answer (`pid`, `rss_bytes`, `uptime_ms`,
    /// `queries`, `volumes: [{name, source, state, entries, index_bytes, built_at, follow, …}]`).
    fn status(&self) -> Result<serde_json::Value, Error>;

    /// The query language, as `uffs --help` explains it.
    fn syntax_help(&self) -> String;
}
