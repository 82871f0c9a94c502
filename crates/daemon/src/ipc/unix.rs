//! The Unix side of [`crate::ipc`]: a socket in the private runtime directory, peers checked by uid. The system
//! daemon's socket is open to every user instead, each peer known by its uid and groups.

use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use uffs_index::reach::Caller;

use super::Accepted;
use crate::dirs::uid;
use crate::{msg, Result};

pub struct Listener {
    listener: UnixListener,
    path: PathBuf,
    /// The system daemon's: every user may connect, and is answered as who they are.
    open: bool,
}

pub struct Conn(UnixStream);

fn socket_path(runtime: &Path) -> PathBuf {
    runtime.join("daemon.sock")
}

impl Listener {
    /// Listens in `runtime`. The caller holds the daemon lock, so a socket left there is from a daemon that
    /// died and is replaced.
    pub fn bind(runtime: &Path) -> Result<Listener> {
        let path = socket_path(runtime);
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .map_err(|e| msg(format!("binding {}: {e}", path.display())))?;
        let open = crate::dirs::system();
        let mode = if open { 0o666 } else { 0o600 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
        Ok(Listener {
            listener,
            path,
            open,
        })
    }

    /// Where clients connect, for the log.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    pub fn accept(&mut self) -> io::Result<Accepted> {
        let (stream, _) = self.listener.accept()?;
        Ok(match peer(&stream) {
            Ok(c) if c.uid == uid() => Accepted::Ours(Conn(stream)),
            Ok(c) if self.open => Accepted::Guest(Conn(stream), c),
            Ok(c) => Accepted::Stranger(Conn(stream), format!("uid {}", c.uid)),
            Err(e) => Accepted::Stranger(Conn(stream), format!("an unknown uid ({e})")),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Conn {
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_read_timeout(t)
    }
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_write_timeout(t)
    }

    /// Whether the other end has closed its side, waiting at most `wait` to learn it: a read that sees the end
    /// of the stream. Only once nothing more is expected (after a request): it sets the read timeout, and a byte
    /// sent after all is read and dropped (`None`: the caller waits before asking again).
    pub fn peer_closed_within(&self, wait: Duration) -> Option<bool> {
        let _ = self.0.set_read_timeout(Some(wait));
        match (&self.0).read(&mut [0u8; 1]) {
            Ok(0) => Some(true),
            Ok(_) => None,
            Err(e) => Some(!matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            )),
        }
    }

    /// Ends reading only (a read blocked in another thread returns the end of the stream); writes go on.
    pub fn shut_down_reading(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Read);
    }
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.0).read(buf)
    }
}

impl Write for &Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&self.0).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        (&self.0).flush()
    }
}

/// Connects to the daemon of this user; `Ok(None)` when none is listening.
pub fn connect(runtime: &Path) -> Result<Option<Conn>> {
    // The runtime directory is ours and closed to others (checked by `dirs`), so whatever listens there is ours.
    Ok(UnixStream::connect(socket_path(runtime)).ok().map(Conn))
}

/// Wakes a listener blocked in `accept` (after a stop request).
pub fn wake(runtime: &Path) {
    let _ = UnixStream::connect(socket_path(runtime));
}

/// The uid and groups of the process at the other end of a Unix socket, as they were when it connected.
fn peer(s: &UnixStream) -> io::Result<Caller> {
    use std::os::fd::AsRawFd;
    #[cfg(target_os = "linux")]
    {
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: SO_PEERCRED fills a ucred of the given length.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut gids = peer_groups(s.as_raw_fd()).unwrap_or_default();
        if !gids.contains(&cred.gid) {
            gids.insert(0, cred.gid);
        }
        Ok(Caller {
            uid: cred.uid,
            gids,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (mut uid, mut gid) = (0, 0);
        // SAFETY: getpeereid writes two ids.
        if unsafe { libc::getpeereid(s.as_raw_fd(), &mut uid, &mut gid) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // Its supplementary groups are not known here: its primary group only.
        Ok(Caller {
            uid,
            gids: vec![gid],
        })
    }
}

/// The supplementary groups of a socket's peer (`SO_PEERGROUPS`, Linux 4.13), as they were when it connected.
#[cfg(target_os = "linux")]
fn peer_groups(fd: std::os::fd::RawFd) -> io::Result<Vec<u32>> {
    // asm-generic's value (x86, Arm, RISC-V); libc does not export it.
    const SO_PEERGROUPS: libc::c_int = 59;
    let mut gids = vec![0u32; 64];
    loop {
        let mut len = (gids.len() * 4) as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes of gid_t into the buffer.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                SO_PEERGROUPS,
                gids.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if r == 0 {
            gids.truncate(len as usize / 4);
            return Ok(gids);
        }
        let e = io::Error::last_os_error();
        // Too small: `len` says how much is needed.
        if e.raw_os_error() == Some(libc::ERANGE) && (len as usize / 4) > gids.len() {
            gids.resize(len as usize / 4, 0);
            continue;
        }
        return Err(e);
    }
}
