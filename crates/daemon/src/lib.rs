//! The uffs daemon: one per user, and root's system daemon that answers every user what they may see. It owns the indexes of the registered volumes (memory-mapped from their
//! files), answers queries over a channel that only its user can reach (a Unix socket, or a named pipe on
//! Windows), and keeps each index current as its source changes (applying only what changed, or rebuilding
//! in the background when it cannot follow), swapping each new snapshot in atomically.
//!
//! * [`dirs`]: where things live: the cache directory (registry, index files, log) and the private runtime
//!   directory (socket, lock).
//! * `guests`: the system daemon's other users: what each may ask, and the volumes as each sees them.
//! * [`ipc`]: the channel itself: listener, connections, time limits and the checks of who is at the other end.
//! * [`os`]: allocator settings, resident memory, and builds that end with the daemon.
//! * [`registry`]: the registered volumes (`uffs volumes add|list|remove`).
//! * [`protocol`]: the JSON-lines requests and responses, and the limits on them.
//! * [`server`]: the server, snapshots, staleness checks and rebuilds.
//! * [`refresh`]: keeping volumes current: periodic checks, applying changes, `uffs volumes refresh`.
//! * [`client`]: connecting to the daemon and reading its answers.
//!
//! Query execution and formatting belong to the caller (the `uffs` binary), which hands the server a function
//! from a snapshot and a request to printed output.

pub mod client;
pub mod dataset;
pub mod dirs;
#[cfg(any(target_os = "linux", windows))]
mod follow;
mod guests;
pub mod ipc;
pub mod os;
pub mod protocol;
pub mod refresh;
pub mod registry;
pub mod server;
#[cfg(windows)]
mod watch;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Transparent: the io error is the whole message, and is not repeated as its own source.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Msg(String),
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn msg(s: impl Into<String>) -> Error {
    Error::Msg(s.into())
}
