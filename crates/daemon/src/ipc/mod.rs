//! The local channel between `uffs` and its daemon, one per user, closed to everyone else.
//!
//! * Unix ([`unix`](self)): a socket (`daemon.sock`) in the private runtime directory (mode 0700, ours), and
//!   each peer's uid checked with `SO_PEERCRED` / `getpeereid`.
//! * Windows: a named pipe `\\.\pipe\uffs-<user SID>-<hash of the runtime directory>` whose security
//!   descriptor grants the user alone (a protected DACL with one ACE); the first instance is created with
//!   `FILE_FLAG_FIRST_PIPE_INSTANCE` so a pipe squatted by another process is refused, remote clients are
//!   refused, and each side checks that the process at the other end runs as the same user.
//!
//! The system daemon's socket (Unix, `--system`) is open to every user: a peer of another uid is a guest, known by
//! its uid and groups, answered only what those may see.
//!
//! Both give the same three things: a [`Listener`] whose `accept` yields connections from our own user (or
//! says who was refused), a [`Conn`] that reads and writes with time limits, and [`connect`] for the client.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{connect, wake, Conn, Listener};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{connect, wake, Conn, Listener};

/// What `Listener::accept` hands over.
pub enum Accepted {
    /// A connection from a process of our own user.
    Ours(Conn),
    /// A connection from someone else (who), to be answered "refused" and closed.
    Stranger(Conn, String),
    /// A connection to the system daemon from another user, answered only what they may see.
    #[cfg_attr(windows, allow(dead_code))]
    Guest(Conn, uffs_index::reach::Caller),
}
