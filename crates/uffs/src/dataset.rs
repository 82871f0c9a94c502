//! Datasets on the command line: how `uffs export SOURCE... --dataset DIR` names and groups the volumes of its
//! sources, and how `uffs --dataset DIR QUERY` opens a dataset's volumes as indexes (each file read back once
//! into an index file kept in the cache, opened in O(1) afterwards). The dataset itself (folders, safe names,
//! writing a volume whole, reading one back) is `uffs_results::dataset`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use uffs_results::dataset::{self, safe_name};

use crate::common::Part;

/// The volume name a source or index file gives in a dataset: its file name (`disk.img`, `sdb1`, `C` for
/// `C.uffs` or `\\.\C:`), then the part's own (`disk.img@2`, `C@vss1`).
pub fn volume_name(spec: &str, prefix: &str) -> String {
    let base = spec
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(spec);
    let base = base.strip_suffix(".uffs").unwrap_or(base);
    let base = base.trim_end_matches(':');
    let own = prefix.strip_suffix(':').unwrap_or(prefix);
    if own.starts_with('@') && !base.ends_with(own) {
        format!("{base}{own}")
    } else if own.is_empty() {
        base.to_string()
    } else {
        own.to_string()
    }
}

/// One volume to write: its folder's name and the parts that make it (a shadow copy is the volume's index with
/// the entries its delta replaces hidden, then the delta).
pub struct DatasetVolume<'a> {
    pub name: String,
    pub parts: Vec<&'a Part>,
}

impl DatasetVolume<'_> {
    /// Its parts as the dataset writer takes them.
    pub fn parts(&self) -> Vec<dataset::Part<'_>> {
        self.parts
            .iter()
            .map(|p| dataset::Part {
                index: &p.index,
                prefix: &p.prefix,
                hidden: p.hidden.as_deref(),
            })
            .collect()
    }

    pub fn entries(&self) -> u64 {
        self.parts.iter().map(|p| p.index.len() as u64).sum()
    }
}

/// The parts of one source or index file grouped into volumes (consecutive parts with one prefix are one volume).
pub fn volumes<'a>(spec: &str, parts: &'a [Part]) -> Vec<DatasetVolume<'a>> {
    let mut out: Vec<DatasetVolume<'a>> = Vec::new();
    let mut last_prefix: Option<&str> = None;
    for p in parts {
        match out.last_mut() {
            Some(v) if last_prefix == Some(p.prefix.as_str()) => v.parts.push(p),
            _ => out.push(DatasetVolume {
                name: safe_name(&volume_name(spec, &p.prefix)),
                parts: vec![p],
            }),
        }
        last_prefix = Some(p.prefix.as_str());
    }
    out
}

/// Refuses two volumes of one run with one folder name.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n) {
            bail!(
                "two volumes would both be written as volume={n}: export them in two runs to two hosts, or \
                 give their files different names"
            );
        }
    }
    Ok(())
}

/// One volume file of a dataset: its host and volume as its folders name them.
struct VolumeFile {
    host: String,
    volume: String,
    file: PathBuf,
}

/// Every `host=H/volume=V/uffs.parquet` under `dir`, by host then volume.
fn volume_files(dir: &Path) -> Result<Vec<VolumeFile>> {
    let folders = |d: &Path, key: &str| -> Result<Vec<(String, PathBuf)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).with_context(|| format!("reading {}", d.display()))? {
            let e = e.with_context(|| format!("reading {}", d.display()))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(v) = name.strip_prefix(key) {
                if e.path().is_dir() {
                    out.push((v.to_string(), e.path()));
                }
            }
        }
        out.sort();
        Ok(out)
    };
    let mut out = Vec::new();
    for (host, h) in folders(dir, "host=")? {
        for (volume, v) in folders(&h, "volume=")? {
            let file = v.join(dataset::FILE_NAME);
            if file.is_file() {
                out.push(VolumeFile {
                    host: host.clone(),
                    volume,
                    file,
                });
            }
        }
    }
    if out.is_empty() {
        bail!(
            "{} is no dataset: it has no host=NAME/volume=NAME/{} (`uffs export SOURCE --dataset {}` writes one)",
            dir.display(),
            dataset::FILE_NAME,
            dir.display()
        );
    }
    Ok(out)
}

/// The volumes of dataset `dir` as parts to search, each named `HOST/VOLUME:` (`pc1/C:/Windows/…`). A volume
/// file is read into an index once and that index kept in the cache (`datasets/`), keyed by the file's path,
/// size and time, so later queries open it in O(1); without a usable cache the index is kept in memory only.
pub fn open(dir: &Path) -> Result<Vec<Part>> {
    let files = volume_files(dir)?;
    let cache = uffs_daemon::dirs::cache_dir()
        .ok()
        .map(|d| d.join("datasets"))
        .filter(|d| std::fs::create_dir_all(d).is_ok());
    let keys: Vec<Option<CacheKey>> = files
        .iter()
        .map(|f| cache.as_deref().and_then(|c| cache_key(c, &f.file)))
        .collect();
    let missing = keys
        .iter()
        .filter(|k| !k.as_ref().is_some_and(|k| k.cached))
        .count();
    let pb = if missing > 0 {
        let pb = crate::common::styled_bar(
            "reading the dataset",
            "{prefix} {bar:30} {pos}/{len} volumes [{elapsed}]",
        );
        pb.set_length(missing as u64);
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };
    // One volume at a time: each read and build is parallel within, and the index file's writer waits on threads
    // of its own that use the thread pool (from a pool thread, waiting on those could leave it none).
    let mut parts = Vec::with_capacity(files.len());
    for (f, key) in files.iter().zip(&keys) {
        let index = match key {
            Some(k) if k.cached => match uffs_index::file::open(&k.path) {
                Ok(idx) => idx,
                Err(_) => read_into_cache(f, key.as_ref(), &pb)?,
            },
            _ => read_into_cache(f, key.as_ref(), &pb)?,
        };
        parts.push(Part {
            prefix: format!("{}/{}:", f.host, f.volume),
            index: Arc::new(index),
            hidden: None,
        });
    }
    pb.finish_and_clear();
    Ok(parts)
}

/// Where the index of a volume file is kept in the cache.
struct CacheKey {
    /// `HASH-SIZE-TIME.uffs`, HASH of the volume file's path.
    path: PathBuf,
    /// `HASH-`: the names of the versions of before start with it.
    stem: String,
    /// The volume file's modification time (FILETIME).
    written: u64,
    /// The index is in the cache already.
    cached: bool,
}

/// Where the index of volume file `file` is kept in cache folder `cache`.
fn cache_key(cache: &Path, file: &Path) -> Option<CacheKey> {
    use std::hash::Hasher as _;
    let m = std::fs::metadata(file).ok()?;
    let written = uffs_index::time::of(m.modified().ok()?);
    let full = std::fs::canonicalize(file).ok()?;
    let mut h = twox_hash::XxHash3_64::new();
    h.write(full.as_os_str().as_encoded_bytes());
    let stem = format!("{:016x}-", h.finish());
    let path = cache.join(format!("{stem}{}-{written}.uffs", m.len()));
    Some(CacheKey {
        cached: path.exists(),
        path,
        stem,
        written,
    })
}

/// Reads volume file `f` into an index, and keeps it at `key` (its older versions removed) when there is one.
fn read_into_cache(
    f: &VolumeFile,
    key: Option<&CacheKey>,
    pb: &indicatif::ProgressBar,
) -> Result<uffs_index::Index> {
    let written = match key {
        Some(k) => k.written,
        None => std::fs::metadata(&f.file)
            .and_then(|m| m.modified())
            .map(uffs_index::time::of)
            .unwrap_or(0),
    };
    let mut idx =
        uffs_results::dataset::read::read_volume(&f.file, written).map_err(|e| anyhow!("{e}"))?;
    pb.inc(1);
    if let Some(k) = key {
        if uffs_index::file::write_with_aids(&mut idx, &k.path).is_ok() {
            remove_older(&k.path, &k.stem);
            // Mapped from the file rather than held: a dataset of many volumes would not fit in memory.
            if let Ok(mapped) = uffs_index::file::open(&k.path) {
                return Ok(mapped);
            }
        }
    }
    Ok(idx)
}

/// Removes the cached indexes named `STEM…` other than `keep`.
fn remove_older(keep: &Path, stem: &str) {
    let Some(dir) = keep.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with(stem) && e.path() != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// What a change set written after volume `name` of `host` was exported again says to the user (`old_at`: when
/// the dataset held the volume before).
pub fn changes_said(host: &str, name: &str, old_at: u64, w: Option<dataset::Written>) -> String {
    match w {
        Some(w) => format!(
            "{}: {} changes, {} bytes",
            w.file.display(),
            w.rows,
            w.bytes
        ),
        None => format!(
            "{host}/{name}: no changes since {}",
            uffs_results::column::iso(old_at, false)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_names_come_from_the_file_and_the_part() {
        assert_eq!(volume_name("/images/disk.img", ""), "disk.img");
        assert_eq!(volume_name("/images/disk.img", "@2:"), "disk.img@2");
        assert_eq!(volume_name("/images/disk.img@2", ""), "disk.img@2");
        assert_eq!(volume_name("/dev/sdb1", ""), "sdb1");
        assert_eq!(volume_name(r"\\.\C:", ""), "C");
        assert_eq!(volume_name("idx/C.uffs", ""), "C");
        assert_eq!(volume_name("idx/C.uffs", "@vss1:"), "C@vss1");
        assert_eq!(volume_name("idx/C.uffs", "C:"), "C");
    }
}
