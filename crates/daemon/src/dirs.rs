//! Where the daemon keeps things.
//!
//! * The cache directory (`$UFFS_CACHE_DIR`, else `$XDG_CACHE_HOME/uffs`, else `~/.cache/uffs`; on Windows
//!   `%LOCALAPPDATA%\uffs`): the volume registry, one index file per volume, and the daemon's log.
//! * The runtime directory (`$UFFS_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/uffs`, else `/tmp/uffs-UID`; on
//!   Windows `%LOCALAPPDATA%\uffs\run`): the socket and the lock that makes the daemon one per user. On Unix
//!   it is created with mode 0700 and refused when another user owns it or others can enter it. On Windows
//!   both live in the user's profile, closed to others by its inherited ACL, and the daemon's pipe carries a
//!   security descriptor of its own (see [`crate::ipc`]).

use std::fs;
use std::path::{Path, PathBuf};

use crate::{msg, Result};

pub fn cache_dir() -> Result<PathBuf> {
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
