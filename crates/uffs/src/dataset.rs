//! Parquet datasets for a fleet or a lab (docs/parquet.md, "Datasets"): one file per volume in hive-style
//! folders, `DIR/host=HOST/volume=VOLUME/uffs.parquet`, that Spark, Trino and DuckDB read as one table with `host`
//! and `volume` as partition columns. A volume's file is replaced whole (written beside it under a hidden
//! temporary name, then renamed over it), so a reader sees the old volume or the new one, never half of one, and
//! a re-export replaces rows instead of adding them.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use uffs_results::export::{self, Filter};
use uffs_results::parquet::{Layout, ParquetWriter};

use crate::common::Part;

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

/// This machine's name, the default `host`.
pub fn machine_name() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            if end > 0 {
                return String::from_utf8_lossy(&buf[..end]).into_owned();
            }
        }
    }
    #[cfg(windows)]
    if let Ok(n) = std::env::var("COMPUTERNAME") {
        if !n.is_empty() {
            return n;
        }
    }
    "localhost".to_string()
}

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

/// Where volume `volume` of host `host` goes in dataset `dir`.
pub fn volume_file(dir: &Path, host: &str, volume: &str) -> PathBuf {
    dir.join(format!("host={host}"))
        .join(format!("volume={volume}"))
        .join(FILE_NAME)
}

/// What writing one volume gave.
pub struct Written {
    pub file: PathBuf,
    pub rows: u64,
    pub bytes: u64,
}

/// Writes `vol` as `dir/host=HOST/volume=NAME/uffs.parquet`, replacing what was there at once when complete;
/// `progress` is told how many of its entries are done.
pub fn write_volume(
    dir: &Path,
    host: &str,
    vol: &DatasetVolume<'_>,
    deleted: bool,
    streams: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Written> {
    let file = volume_file(dir, host, &vol.name);
    let folder = file.parent().expect("a volume file has a folder");
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let writing = || format!("writing {}", file.display());
    let (f, temp) = uffs_results::create_output(&file)?;
    let mut out = BufWriter::with_capacity(1 << 20, f);
    let mut pq = ParquetWriter::new(Layout::Dataset)?;
    let mut base = 0u64;
    let mut rows = 0u64;
    for part in &vol.parts {
        let filter = Filter {
            deleted,
            streams,
            hidden: part.hidden.as_deref(),
        };
        let at = |n: u64| progress(base + n);
        rows += export::write_parquet(&part.index, &part.prefix, filter, &mut pq, &mut out, &at)
            .with_context(writing)?;
        base += part.index.len() as u64;
    }
    let rest = pq.finish().with_context(writing)?;
    out.write_all(&rest).with_context(writing)?;
    out.flush().with_context(writing)?;
    drop(out);
    if let Some(t) = temp {
        t.commit()?;
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    Ok(Written { file, rows, bytes })
}

/// Refuses a dataset folder name that the engines would read wrongly or two volumes of one run with one name.
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
