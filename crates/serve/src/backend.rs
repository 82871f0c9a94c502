//! What the servers answer from. The `uffs` binary provides two: the user's daemon (every registered volume)
//! and indexes opened by the serving process (`--index FILE` or `--source SOURCE`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

/// A `grep`: the lines that match `pattern` in the files `query` selects, read from the volume.
#[derive(Debug, Clone, Default)]
pub struct GrepRequest {
    /// A regular expression (the `regex` crate's syntax, as `rg`'s), or literal text with `fixed_strings`.
    pub pattern: String,
    /// The files to search, in the query language (empty: every file).
    pub query: String,
    /// `rg -i`.
    pub ignore_case: bool,
    /// `rg -w`.
    pub word: bool,
    /// `rg -F`.
    pub fixed_strings: bool,
    /// The most lines kept: the first in the query's order (files in index order, each file's lines in order).
    pub max_lines: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    /// The file's path, as a search prints it.
    pub path: String,
    /// 1 for the first line.
    pub line: u64,
    /// The line without its end (invalid UTF-8 replaced).
    pub text: String,
}

/// What a `grep` found.
#[derive(Debug, Clone, Default)]
pub struct GrepAnswer {
    /// Files the query selected (folders left out), each read once.
    pub files: u64,
    /// Files with a matching line.
    pub files_matched: u64,
    /// Matching lines in all the files, kept or not.
    pub lines_matched: u64,
    /// The first `max_lines` of them.
    pub lines: Vec<GrepLine>,
    /// What `rg` says of a binary file instead of (or after) its lines: `PATH: binary file matches (…)`.
    pub notes: Vec<String>,
    /// Files that could not be read (encrypted, damaged): `PATH: why`.
    pub unreadable: Vec<String>,
}

/// Set when whoever asked is gone (an HTTP client that hung up or timed out, an MCP call cancelled or its
/// client disconnected): a search reading files' data stops reading at once.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag the readers of files' data watch (`uffs_mft::content::many::Progress::stopped_by`).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.0
    }
}

/// Sets a [`Stop`] when dropped: held by a request's future, whose drop means its client is gone.
#[derive(Debug)]
pub struct StopOnDrop(pub Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// A searchable set of volumes.
pub trait Backend: Send + Sync + 'static {
    /// Runs one search, as the command line runs the same request (`uffs_search::run`). What it prints is
    /// written to `out`; the answer is the number of matches (all of them, not only those printed). Once `stop`
    /// is set, files' data (`content:`, `type:`, `hash:`) is no longer read.
    fn query(&self, req: &SearchRequest, out: &mut dyn Write, stop: &Stop) -> Result<u64, Error>;

    /// The volumes and their state, as the daemon's `status` answer (`pid`, `rss_bytes`, `uptime_ms`,
    /// `queries`, `volumes: [{name, source, state, entries, index_bytes, built_at, follow, …}]`).
    fn status(&self) -> Result<serde_json::Value, Error>;

    /// The query language, as `uffs --help` explains it.
    fn syntax_help(&self) -> String;

    /// The lines matching a pattern in the files a query selects, as `uffs grep` finds them (binary files
    /// skipped as `rg` skips them); at most `req.max_lines` of them kept, in the query's order.
    /// Once `stop` is set, no further file is read.
    fn grep(&self, req: &GrepRequest, stop: &Stop) -> Result<GrepAnswer, Error>;
}
