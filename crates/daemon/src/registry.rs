//! The registered volumes: `volumes.json` in the cache directory, one entry per volume with its name, source and
//! index options. The index of volume `NAME` is `NAME.uffs` beside it. Changes are written to a temporary file
//! and renamed, under a lock, so concurrent `uffs volumes` commands never lose an entry.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{msg, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeEntry {
    /// `C` (a drive letter: paths print as `C:\...`) or a name of letters, digits, `-` and `_` (`NAME:/...`).
    pub name: String,
    /// The source as given: a volume, partition or disk image, or a raw `$MFT` capture.
    pub source: String,
    #[serde(default)]
    pub partition: Option<u32>,
    /// Index deleted entries too.
    #[serde(default)]
    pub deleted: bool,
}

impl VolumeEntry {
    /// What this volume's paths start with.
    pub fn prefix(&self) -> String {
        format!("{}:", self.name)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    pub volumes: Vec<VolumeEntry>,
}

/// Names are file names and path prefixes: keep them short and plain.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(msg(format!(
            "bad volume name {name:?}: use 1 to 32 letters, digits, '-' or '_' (one letter for a drive: C)"
        )))
    }
}

/// A name for a source given without `--name`: its file name without extension (`/dev/sdb1` → `sdb1`,
/// `disk.img@2` → `disk-2`), made plain.
pub fn default_name(source: &str, partition: Option<u32>) -> String {
    let (path, part) = match source.rsplit_once('@') {
        Some((p, n)) if n.parse::<u32>().is_ok() => (p, Some(n.to_string())),
        _ => (source, partition.map(|p| p.to_string())),
    };
    let stem = Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(28)
        .collect();
    if name.is_empty() {
        name = "volume".into();
    }
    if let Some(p) = part {
        name = format!("{name}-{p}");
    }
    name
}

impl Registry {
    pub fn path(cache: &Path) -> PathBuf {
        cache.join("volumes.json")
    }

    pub fn index_path(cache: &Path, name: &str) -> PathBuf {
        cache.join(format!("{name}.uffs"))
    }

    pub fn load(cache: &Path) -> Result<Registry> {
        let p = Registry::path(cache);
        match fs::read(&p) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                msg(format!(
                    "{} is damaged ({e}); fix or delete it",
                    p.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
            Err(e) => Err(msg(format!("reading {}: {e}", p.display()))),
        }
    }

    /// Loads, changes and saves the registry under an exclusive lock.
    pub fn update<T>(cache: &Path, f: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
        let lock = File::create(cache.join("volumes.lock"))?;
        lock_exclusive(&lock)?;
        let mut r = Registry::load(cache)?;
        let out = f(&mut r)?;
        let p = Registry::path(cache);
        let tmp = cache.join(format!(".volumes.json.tmp{}", std::process::id()));
        let mut file = File::create(&tmp)?;
        file.write_all(&serde_json::to_vec_pretty(&r).map_err(|e| msg(e.to_string()))?)?;
        file.sync_all()?;
        fs::rename(&tmp, &p)?;
        Ok(out)
    }

    pub fn get(&self, name: &str) -> Option<&VolumeEntry> {
        self.volumes.iter().find(|v| v.name == name)
    }
}

#[cfg(unix)]
fn lock_exclusive(f: &File) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor we own; the lock is released when the file is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

#[cfg(not(unix))]
fn lock_exclusive(_f: &File) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(default_name("/dev/sdb1", None), "sdb1");
        assert_eq!(default_name("/x/disk.img@2", None), "disk-2");
        assert_eq!(default_name("/x/my disk.img", Some(3)), "my_disk-3");
        assert!(check_name("C").is_ok());
        assert!(check_name("a/b").is_err());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(33)).is_err());
    }
}
