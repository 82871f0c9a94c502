//! Parquet datasets for a fleet or a lab (docs/parquet.md, "Datasets"): one file per volume in hive-style
//! folders, `DIR/host=HOST/volume=VOLUME/uffs.parquet`, that Spark, Trino and DuckDB read as one table with `host`
//! and `volume` as partition columns. A volume's file is replaced whole (written beside it under a hidden
//! temporary name, then renamed over it), so a reader sees the old volume or the new one, never half of one, and
//! a re-export replaces rows instead of adding them. Written by `uffs export --dataset` and by the daemon.

pub mod read;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use uffs_index::Index;

use crate::export::{self, Filter};
use crate::parquet::{Layout, ParquetWriter};
use crate::{io_err, Result};

/// The file each volume folder holds.
pub const FILE_NAME: &str = "uffs.parquet";

/// `name` made safe as a partition value for every engine: characters other than ASCII letters, digits, `.`,
/// `_`, `-` and `@` become `_` (no `:`, `/`, `=`, spaces or `%`, which engines escape differently), and a name that
/// does not start with a letter, or that reads as a number (`NaN`, `Infinity`), gets a `v` in front, so no engine
/// infers a number or a date from it and no engine skips it as hidden (`_x`, `.x`).
pub fn safe_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) || s.parse::<f64>().is_ok() {
        s.insert(0, 'v');
    }
    s
}

/// This machine's name, the default `host`: the kernel's host name on Linux, `COMPUTERNAME` on Windows.
pub fn machine_name() -> String {
    let from_kernel = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string());
    from_kernel
        .into_iter()
        .chain(
            ["COMPUTERNAME", "HOSTNAME"]
                .iter()
                .filter_map(|v| std::env::var(v).ok()),
        )
        .find(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The folder of volume `volume` of host `host` in dataset (or change folder) `dir`.
fn volume_folder(dir: &Path, host: &str, volume: &str) -> PathBuf {
    dir.join(format!("host={host}"))
        .join(format!("volume={volume}"))
}

/// Where volume `volume` of host `host` goes in dataset `dir`.
pub fn volume_file(dir: &Path, host: &str, volume: &str) -> PathBuf {
    volume_folder(dir, host, volume).join(FILE_NAME)
}

/// One index a volume's rows come from: a volume is its index, or its index less the entries a delta replaces
/// (`hidden`) and then the delta.
pub struct Part<'a> {
    pub index: &'a Index,
    /// What its paths start with (`C:`, `@2:`, or nothing).
    pub prefix: &'a str,
    pub hidden: Option<&'a [u64]>,
}

/// What writing one volume gave.
pub struct Written {
    pub file: PathBuf,
    pub rows: u64,
    pub bytes: u64,
}

/// Writes the volume made of `parts` as `dir/host=HOST/volume=NAME/uffs.parquet` (`host` and `name` already
/// [safe](safe_name)), replacing what was there at once when complete; `progress` is told how many of its
/// entries are done.
pub fn write_volume(
    dir: &Path,
    host: &str,
    name: &str,
    parts: &[Part<'_>],
    deleted: bool,
    streams: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Written> {
    let file = volume_file(dir, host, name);
    let folder = file.parent().unwrap_or(dir);
    std::fs::create_dir_all(folder).map_err(io_err(format!("creating {}", folder.display())))?;
    let (f, temp) = crate::create_output(&file)?;
    let mut out = BufWriter::with_capacity(1 << 20, f);
    let mut pq = ParquetWriter::new(Layout::Dataset)?;
    let mut base = 0u64;
    let mut rows = 0u64;
    for part in parts {
        let filter = Filter {
            deleted,
            streams,
            hidden: part.hidden,
        };
        let at = |n: u64| progress(base + n);
        rows += export::write_parquet(part.index, part.prefix, filter, &mut pq, &mut out, &at)?;
        base += part.index.len() as u64;
    }
    let writing = || io_err(format!("writing {}", file.display()));
    let rest = pq.finish()?;
    out.write_all(&rest).map_err(writing())?;
    out.flush().map_err(writing())?;
    drop(out);
    if let Some(t) = temp {
        t.commit()?;
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    Ok(Written { file, rows, bytes })
}

/// Volume `name` of `host` as dataset `dir` holds it now, read back into an index, with the time its file was
/// written (FILETIME); `None` when the dataset does not hold it yet.
pub fn held(dir: &Path, host: &str, name: &str) -> Result<Option<(Index, u64)>> {
    let file = volume_file(dir, host, name);
    let Ok(m) = std::fs::metadata(&file) else {
        return Ok(None);
    };
    let at = m.modified().map(uffs_index::time::of).unwrap_or(0);
    Ok(Some((read::read_volume(&file, at)?, at)))
}

/// After volume `name` of `host` was written into dataset `dir` again: its change set against `old` (the volume
/// as [`held`] read it before) into change folder `cdir` (see [`write_changes`]).
pub fn write_changes_since(
    cdir: &Path,
    (dir, host, name): (&Path, &str, &str),
    old: &(Index, u64),
    prefix: &str,
    streams: bool,
) -> Result<Option<Written>> {
    let now = uffs_index::time::now();
    let new = read::read_volume(&volume_file(dir, host, name), now)?;
    write_changes(
        cdir,
        host,
        name,
        (&old.0, old.1),
        (&new, now),
        prefix,
        streams,
    )
}

/// Where a change set of volume `volume` of host `host` goes in change folder `dir`, named for when its new state
/// was written (`changes-20261128T161500.1234567Z.parquet`, so names sort by time).
pub fn changes_file(dir: &Path, host: &str, volume: &str, at: u64) -> PathBuf {
    let stamp: String = crate::column::iso(at, false)
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    volume_folder(dir, host, volume).join(format!("changes-{stamp}.parquet"))
}

/// Writes the change set of volume `name` of `host` into change folder `dir`: what differs between `old`, the
/// volume as the dataset held it (written at `old_at`), and `new`, as it holds it now (written at `new_at`), as
/// `uffs diff` compares them (access times ignored; streams with `streams`), one row per change with `uffs diff`'s
/// columns after `since` and `until` (the two states' times), paths starting with `prefix` as the dataset's do.
/// Nothing is written when nothing changed (`Ok(None)`).
pub fn write_changes(
    dir: &Path,
    host: &str,
    name: &str,
    old: (&Index, u64),
    new: (&Index, u64),
    prefix: &str,
    streams: bool,
) -> Result<Option<Written>> {
    use uffs_index::diff::{self, field};
    let ((old, old_at), (new, new_at)) = (old, new);
    let opts = diff::Options {
        streams,
        ignore: field::ACCESSED,
    };
    let changes = crate::changes::by_path(diff::diff(old, new, &opts), old, new, prefix);
    if changes.is_empty() {
        return Ok(None);
    }
    let (names, types) = crate::changes::columns();
    let names: Vec<&str> = ["since", "until"].into_iter().chain(names).collect();
    let types: Vec<crate::ColumnType> = [crate::ColumnType::Time; 2]
        .into_iter()
        .chain(types)
        .collect();
    let rows: Vec<Vec<crate::Value>> = changes
        .iter()
        .map(|(path, c)| {
            let mut r = vec![crate::Value::time(old_at), crate::Value::time(new_at)];
            r.extend(crate::changes::row(path, c, old, new, prefix));
            r
        })
        .collect();
    let bytes = crate::parquet::values_file(&names, &types, &rows)?;
    let file = changes_file(dir, host, name, new_at);
    let folder = file.parent().unwrap_or(dir);
    std::fs::create_dir_all(folder).map_err(io_err(format!("creating {}", folder.display())))?;
    let (mut f, temp) = crate::create_output(&file)?;
    f.write_all(&bytes)
        .and_then(|()| f.flush())
        .map_err(io_err(format!("writing {}", file.display())))?;
    drop(f);
    if let Some(t) = temp {
        t.commit()?;
    }
    Ok(Some(Written {
        file,
        rows: rows.len() as u64,
        bytes: bytes.len() as u64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_for_every_engine() {
        assert_eq!(safe_name("C"), "C");
        assert_eq!(safe_name("disk.img@2"), "disk.img@2");
        assert_eq!(safe_name("my disk:1/x=y%"), "my_disk_1_x_y_");
        assert_eq!(safe_name("2"), "v2");
        assert_eq!(safe_name("2024-01-01"), "v2024-01-01");
        assert_eq!(safe_name("NaN"), "vNaN");
        assert_eq!(safe_name("Infinity"), "vInfinity");
        assert_eq!(safe_name("_hidden"), "v_hidden");
        assert_eq!(safe_name(".x"), "v.x");
        assert_eq!(safe_name(""), "v");
        assert_eq!(safe_name("Été"), "v_t_");
    }
}
