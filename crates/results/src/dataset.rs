//! Parquet datasets for a fleet or a lab (docs/parquet.md, "Datasets"): one file per volume in hive-style
//! folders, `DIR/host=HOST/volume=VOLUME/uffs.parquet`, that Spark, Trino and DuckDB read as one table with `host`
//! and `volume` as partition columns. A volume's file is replaced whole (written beside it under a hidden
//! temporary name, then renamed over it), so a reader sees the old volume or the new one, never half of one, and
//! a re-export replaces rows instead of adding them. Written by `uffs export --dataset` and by the daemon.

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

/// Where volume `volume` of host `host` goes in dataset `dir`.
pub fn volume_file(dir: &Path, host: &str, volume: &str) -> PathBuf {
    dir.join(format!("host={host}"))
        .join(format!("volume={volume}"))
        .join(FILE_NAME)
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
