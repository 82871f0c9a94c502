//! The registered volumes: `volumes.json` in the cache directory, one entry per volume with its name, source and
//! index options. Changes are written to a temporary file and renamed, under a lock, so concurrent
//! `uffs volumes` commands never lose an entry.
//!
//! The index of volume `NAME` is `NAME.uffs` or `NAME.2.uffs` beside it, whichever was built last: a rebuild
//! writes the slot the daemon is not using, so a mapped index file is never replaced or deleted (Windows
//! refuses that), and the previous index stays behind as a fallback should the new one be damaged.

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
    /// Seconds between checks for changes (`None`: [`DEFAULT_REFRESH_SECS`]; `Some(0)`: never, only when
    /// asked with `uffs volumes refresh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_secs: Option<u64>,
    /// The zone of a FAT or exFAT volume's local times, in seconds east of UTC (`--fat-timezone`); `None`: UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_timezone: Option<i64>,
    /// The DOS code page of a FAT volume's 8.3 names (`--fat-codepage`); `None`: 437.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_codepage: Option<u16>,
    /// Sources that keep its shadow copies' stores when they are on another volume (`--shadow-storage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadow_storage: Vec<String>,
    /// A mounted folder's walk options as it was added with them (`--walk`, `--cross-mounts`, `--prune-*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk: Option<WalkSettings>,
}

/// A folder's walk options as the registry keeps them (`uffs_walk::Options`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkSettings {
    pub raw: bool,
    pub cross_mounts: bool,
    pub prune_paths: Vec<String>,
    pub prune_fs: Vec<String>,
    pub prune_names: Vec<String>,
}

impl WalkSettings {
    pub fn of(o: &uffs_walk::Options) -> WalkSettings {
        WalkSettings {
            raw: o.raw,
            cross_mounts: o.cross_mounts,
            prune_paths: o.prune.paths.clone(),
            prune_fs: o.prune.filesystems.clone(),
            prune_names: o.prune.names.clone(),
        }
    }

    pub fn options(&self) -> uffs_walk::Options {
        uffs_walk::Options {
            raw: self.raw,
            cross_mounts: self.cross_mounts,
            prune: uffs_walk::Prune {
                paths: self.prune_paths.clone(),
                filesystems: self.prune_fs.clone(),
                names: self.prune_names.clone(),
            },
            threads: 0,
        }
    }
}

/// How often a volume is checked for changes unless its entry says otherwise: a check of an unchanged image or
/// device costs one `stat`, so a few seconds is cheap.
pub const DEFAULT_REFRESH_SECS: u64 = 5;

/// `5s`, `2m`, `1h`, `30` (seconds) or `never` (0).
pub fn parse_interval(s: &str) -> Result<u64> {
    let s = s.trim();
    if s == "never" {
        return Ok(0);
    }
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| msg(format!("bad interval {s:?}: use e.g. 5s, 2m, 1h or never")))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => {
            return Err(msg(format!(
                "bad interval {s:?}: use e.g. 5s, 2m, 1h or never"
            )))
        }
    };
    if secs == 0 {
        return Err(msg("an interval of 0 is `never`"));
    }
    Ok(secs)
}

impl VolumeEntry {
    /// Time between checks for changes; `None` for never.
    pub fn refresh_interval(&self) -> Option<std::time::Duration> {
        match self.refresh_secs.unwrap_or(DEFAULT_REFRESH_SECS) {
            0 => None,
            s => Some(std::time::Duration::from_secs(s)),
        }
    }

    /// What this volume's paths start with: `NAME:`, or a mounted folder's path.
    pub fn prefix(&self) -> String {
        // A mounted folder's entries print as the real paths below it (its source is kept as `/path/`).
        match uffs_index::folder_root(&self.source) {
            Some(root) => root.to_string(),
            None => format!("{}:", self.name),
        }
    }

    /// Opens the entry's source (`check`: only to look for changes, [`uffs_source::open_for_check`]), with the
    /// volumes that keep its shadow copies' stores offered first.
    pub fn open(&self, check: bool) -> uffs_mft::Result<uffs_source::Source> {
        // A storage volume that cannot be opened now is said by the open that needs it.
        let _ = uffs_source::storage::offer(&self.shadow_storage);
        if let Some(w) = &self.walk {
            return uffs_source::folder::open_with(&self.source, !check, w.options());
        }
        if check {
            uffs_source::open_for_check(&self.source, self.partition)
        } else {
            uffs_source::open(&self.source, self.partition)
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    pub volumes: Vec<VolumeEntry>,
}

/// Names are file names and path prefixes: keep them short and plain. A volume's shadow copy is named as the
/// volume with `@vssN` after it (`vol@vss1`), as a source's is (`vol.img@vss1`); a Btrfs snapshot with `@snapN`.
pub fn check_name(name: &str) -> Result<()> {
    // A shadow copy's (`NAME@vss2`) or a snapshot's (`NAME@snap257`) name ends in its number.
    let numbered = |suffix: &str| match name.rsplit_once(suffix) {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(base),
        _ => None,
    };
    let plain = numbered("@vss")
        .or_else(|| numbered("@snap"))
        .unwrap_or(name);
    let ok = !plain.is_empty()
        && plain.len() <= 32
        && plain
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
    // A drive read live goes by its letter, so its paths print as `C:\...`.
    if let Some(letter) = uffs_mft::live::parse_spec(source).and_then(|l| l.letter) {
        return letter.to_string();
    }
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

    /// The first index slot of volume `name`, where `uffs volumes add` writes.
    pub fn index_path(cache: &Path, name: &str) -> PathBuf {
        Registry::index_slots(cache, name)[0].clone()
    }

    /// Both index slots of volume `name`.
    pub fn index_slots(cache: &Path, name: &str) -> [PathBuf; 2] {
        [
            cache.join(format!("{name}.uffs")),
            cache.join(format!("{name}.2.uffs")),
        ]
    }

    /// The slots holding an index file of volume `name`, newest first by the build time in their headers (a
    /// file whose header cannot be read comes last).
    pub fn index_files(cache: &Path, name: &str) -> Vec<PathBuf> {
        let mut found: Vec<(u64, PathBuf)> = Registry::index_slots(cache, name)
            .into_iter()
            .filter(|p| p.exists())
            .map(|p| {
                let built = uffs_index::file::read_meta(&p).map_or(0, |(m, _)| m.built_at);
                (built, p)
            })
            .collect();
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        found.into_iter().map(|(_, p)| p).collect()
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
        lock.lock()?;
        let mut r = Registry::load(cache)?;
        let out = f(&mut r)?;
        let p = Registry::path(cache);
        let tmp = cache.join(format!(".volumes.json.tmp{}", std::process::id()));
        let bytes = serde_json::to_vec_pretty(&r).map_err(|e| msg(e.to_string()))?;
        // Registered, so that a process ended by a signal removes it; removed on any error.
        let written = uffs_index::temp::create(&tmp).and_then(|mut file| {
            file.write_all(&bytes)?;
            file.sync_all()?;
            drop(file);
            uffs_index::temp::persist(&tmp, &p)
        });
        if written.is_err() {
            uffs_index::temp::discard(&tmp);
        }
        written?;
        Ok(out)
    }

    pub fn get(&self, name: &str) -> Option<&VolumeEntry> {
        self.volumes.iter().find(|v| v.name == name)
    }
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
        // A shadow copy's name: the volume's and its store.
        assert!(check_name("vt@vss2").is_ok());
        assert!(check_name("vt@vss").is_err());
        assert!(check_name("vt@snap257").is_ok());
        assert!(check_name("vt@snap").is_err());
        assert!(check_name("vt@2").is_err());
    }
}
