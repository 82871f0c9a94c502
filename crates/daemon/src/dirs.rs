//! Where the daemon keeps things.
//!
//! * The cache directory (`$UFFS_CACHE_DIR`, else `$XDG_CACHE_HOME/uffs`, else `~/.cache/uffs`; on Windows
//!   `%LOCALAPPDATA%\uffs`): the volume registry, one index file per volume, and the daemon's log.
//! * The runtime directory (`$UFFS_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/uffs`, else `/tmp/uffs-UID`; on
//!   Windows `%LOCALAPPDATA%\uffs\run`): the socket and the lock that makes the daemon one per user. On Unix
//!   it is created with mode 0700 and refused when another user owns it or others can enter it. On Windows
//!   both live in the user's profile, closed to others by its inherited ACL, and the daemon's pipe carries a
//!   security descriptor of its own (see [`crate::ipc`]).
//! * The system daemon's (`--system`, root, Unix): its cache `$UFFS_SYSTEM_CACHE_DIR`, else `/var/cache/uffs`
//!   (mode 0700), and its runtime directory `$UFFS_SYSTEM_RUNTIME_DIR`, else `/run/uffs` (mode 0755, root's),
//!   whose socket every user may connect to: the daemon answers each only what they may see.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{msg, Result};

/// Whether this process is, or manages, the system daemon: `UFFS_SYSTEM=1`, set by `--system` and inherited by
/// the daemon it starts and the builds that daemon runs.
pub fn system() -> bool {
    std::env::var_os("UFFS_SYSTEM").is_some_and(|v| v == "1")
}

/// The system daemon's cache directory (registry, index files, log).
pub fn system_cache_dir() -> PathBuf {
    std::env::var_os("UFFS_SYSTEM_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/var/cache/uffs"), PathBuf::from)
}

/// The system daemon's runtime directory (its socket, open to every user, and its lock).
pub fn system_runtime_dir() -> PathBuf {
    std::env::var_os("UFFS_SYSTEM_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/run/uffs"), PathBuf::from)
}

pub fn cache_dir() -> Result<PathBuf> {
    if system() {
        let dir = system_cache_dir();
        private_dir(&dir)?;
        return Ok(dir);
    }
    let dir = if let Some(d) = std::env::var_os("UFFS_CACHE_DIR") {
        PathBuf::from(d)
    } else if let Some(d) = local_app_data() {
        d.join("uffs")
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("uffs")
    } else if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(h).join(".cache").join("uffs")
    } else {
        return Err(msg(
            "no cache directory: set HOME, XDG_CACHE_HOME or UFFS_CACHE_DIR (LOCALAPPDATA on Windows)",
        ));
    };
    private_dir(&dir)?;
    Ok(dir)
}

pub fn runtime_dir() -> Result<PathBuf> {
    if system() {
        let dir = system_runtime_dir();
        open_dir(&dir)?;
        return Ok(dir);
    }
    let dir = if let Some(d) = std::env::var_os("UFFS_RUNTIME_DIR") {
        PathBuf::from(d)
    } else if let Some(d) = local_app_data() {
        d.join("uffs").join("run")
    } else if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("uffs")
    } else {
        std::env::temp_dir().join(format!("uffs-{}", uid()))
    };
    private_dir(&dir)?;
    Ok(dir)
}

/// `%LOCALAPPDATA%`, the per-user, per-machine data folder: Windows only.
fn local_app_data() -> Option<PathBuf> {
    if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    } else {
        None
    }
}

#[cfg(unix)]
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
pub fn uid() -> u32 {
    0
}

/// Creates `dir` (mode 0755: others may enter, to reach the system daemon's socket) or checks that it is ours
/// and that no one else may write in it.
fn open_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(|e| msg(format!("creating {}: {e}", dir.display())))?;
        }
        owned_and_closed(dir, uid())?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755))
            .map_err(|e| msg(format!("setting the mode of {}: {e}", dir.display())))?;
        Ok(())
    }
    #[cfg(not(unix))]
    Err(msg(format!(
        "{}: the system daemon runs on Linux and Unix only",
        dir.display()
    )))
}

/// Checks that `dir` is a folder of `owner` that no one else may write in: where a client may trust a socket.
#[cfg(unix)]
pub fn owned_and_closed(dir: &Path, owner: u32) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = fs::symlink_metadata(dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
    if !m.is_dir() {
        return Err(msg(format!("{} is not a directory", dir.display())));
    }
    if m.uid() != owner || m.permissions().mode() & 0o022 != 0 {
        return Err(msg(format!(
            "{} is not a folder of uid {owner} closed to others' writes; refusing to use it",
            dir.display()
        )));
    }
    Ok(())
}

/// Creates `dir` (mode 0700) or checks that it is ours and closed to others.
fn private_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| msg(format!("creating {}: {e}", dir.display())))?;
        }
        let m = fs::symlink_metadata(dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
        if !m.is_dir() {
            return Err(msg(format!("{} is not a directory", dir.display())));
        }
        if m.uid() != uid() {
            return Err(msg(format!(
                "{} belongs to another user (uid {}); refusing to use it",
                dir.display(),
                m.uid()
            )));
        }
        if m.permissions().mode() & 0o077 != 0 {
            // Ours: close it rather than fail.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| msg(format!("making {} private: {e}", dir.display())))?;
        }
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir)?;
    Ok(())
}
