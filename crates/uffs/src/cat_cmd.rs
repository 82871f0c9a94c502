//! `uffs cat`: a file's data, read from the volume without mounting it ([`uffs_mft::content`] does the reading).
//!
//! The file is a record number or a path (resolved through an index of the volume built in memory, deleted
//! entries included with `--deleted`), optionally with `:STREAM` for a named data stream.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use uffs_index::{EntryId, EntryKind, Index};
use uffs_mft::content::{self, StreamReader, READ_SIZE};
use uffs_mft::{ScanOptions, Volume};

use crate::common::{build, only_volume, progress_bar};

/// What to read: a record or a path, and a stream name (empty: the unnamed stream).
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Record(u64),
    Path(Vec<String>),
}

/// Splits `PATH|RECORD[:STREAM]`. NTFS names hold no `:`, so the last one starts the stream; `\` separates like
/// `/`; a trailing `:$DATA` (Windows' full stream syntax, `file::$DATA`, `file:s:$DATA`) names the type only.
fn parse_target(s: &str) -> Result<(Target, String)> {
    let mut t = s.replace('\\', "/");
    if t.len() >= 6
        && t.is_char_boundary(t.len() - 6)
        && t[t.len() - 6..].eq_ignore_ascii_case(":$DATA")
    {
        t.truncate(t.len() - 6);
        if t.ends_with(':') {
            t.pop();
        }
    }
    let (file, stream) = match t.rsplit_once(':') {
        Some((f, s)) => (f.to_string(), s.to_string()),
        None => (t, String::new()),
    };
    if !file.is_empty() && file.bytes().all(|b| b.is_ascii_digit()) {
        let n = file
            .parse()
            .with_context(|| format!("record number {file} is too large"))?;
        return Ok((Target::Record(n), stream));
    }
    let parts: Vec<String> = file
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_string)
        .collect();
    if parts.iter().any(|p| p == "..") {
        bail!("{s}: a path holds no `..`: give it from the root of the volume");
    }
    Ok((Target::Path(parts), stream))
}

/// A path as uffs prints it, its volume named before a `:` and a separator (`C:\x`, `@vss1:/x`, `@2:/x`,
/// `@2@vss1:/x`, a daemon's `NAME@vss1:/x`): the path from the volume's root, and the partition and shadow copy
/// the name gives. (A stream name holds no `/` or `\`, so `FILE:stream` is never taken for one.)
fn split_volume(s: &str) -> (&str, Option<u32>, Option<u32>) {
    // The name as queries take it (`uffs_query::parse::volume_named`); `\` and `/` are one byte each, so the
    // name's length holds in `s` as given.
    let Some(mut name) = uffs_query::parse::volume_named(&s.replace('\\', "/"))
        .map(str::len)
        .map(|n| &s[..n])
    else {
        return (s, None, None);
    };
    let path = &s[name.len() + 1..];
    let number = |t: &str| t.parse::<u32>().ok();
    let mut store = None;
    if let Some((rest, n)) = name.rsplit_once("@vss") {
        if let Some(n) = number(n) {
            store = Some(n);
            name = rest;
        }
    }
    let partition = name.rsplit_once('@').and_then(|(_, n)| number(n));
    (path, partition, store)
}

/// `uffs cat PATH` alone: `PATH` names a volume registered with the daemon (`C:\x`, `NAME:/x`, as the daemon
/// prints paths), and the file is read from that volume's source.
pub fn run_registered(path: &str, deleted: bool, output: Option<&Path>) -> Result<()> {
    let Some(name) =
        uffs_query::parse::volume_named(&path.replace('\\', "/")).map(|n| &path[..n.len()])
    else {
        bail!(
            "uffs cat needs a source and a path (uffs cat SOURCE PATH), or a path that names a volume of the \
             daemon's (uffs cat 'C:\\dir\\file')"
        );
    };
    let cache = uffs_daemon::dirs::cache_dir()?;
    let registry = uffs_daemon::registry::Registry::load(&cache)?;
    let Some(e) = registry.volumes.iter().find(|e| e.name == name) else {
        let names: Vec<&str> = registry.volumes.iter().map(|e| e.name.as_str()).collect();
        bail!(
            "no volume named {name} is registered (the daemon's: {}); give the source too: uffs cat SOURCE PATH",
            if names.is_empty() { "none".into() } else { names.join(", ") }
        );
    };
    run(
        &e.source,
        &path[name.len() + 1..],
        e.partition,
        deleted,
        output,
    )
}

/// The source to read a path from when the path names its volume ([`split_volume`]): `source` with that
/// partition and shadow copy, or an error when the source names another.
fn with_volume(
    source: &str,
    partition: Option<u32>,
    named_partition: Option<u32>,
    named_store: Option<u32>,
) -> Result<(String, Option<u32>)> {
    let (_, at, store) = uffs_source::split_suffixes(source);
    let given = partition.or(at);
    let partition = match (given, named_partition) {
        (Some(a), Some(b)) if a != b => {
            bail!("the path is on partition {b}, and the source names partition {a}")
        }
        (Some(_), _) => partition,
        (None, b) => b,
    };
    let source = match (store, named_store) {
        (Some(a), Some(b)) if a != b => {
            bail!("the path is in shadow copy {b}, and the source names shadow copy {a}")
        }
        (None, Some(b)) => format!("{source}@vss{b}"),
        _ => source.to_string(),
    };
    Ok((source, partition))
}

pub fn run(
    source: &str,
    target: &str,
    partition: Option<u32>,
    deleted: bool,
    output: Option<&Path>,
) -> Result<()> {
    let (target, named_partition, named_store) = split_volume(target);
    let (target, stream) = parse_target(target)?;
    let (source, partition) = with_volume(source, partition, named_partition, named_store)?;
    let source = source.as_str();
    let src = crate::common::open_source(source, partition, false)?;
    let vol = only_volume(
        &src,
        source,
        "a file lives on one: name it, e.g. uffs cat",
        "PATH",
    )?;
    let (record, shown) = match &target {
        Target::Record(n) => (*n, format!("record {n}")),
        Target::Path(parts) => resolve(vol, parts, deleted)?,
    };
    let mut reader = content::open_stream(vol, record, &stream)
        .with_context(|| format!("{} of {}", shown_stream(&shown, &stream), vol.name))?;
    let info = reader.info().clone();
    if !info.in_use {
        let label = match target {
            Target::Record(_) => shown,
            Target::Path(_) => format!("{shown} (record {record})"),
        };
        eprintln!(
            "uffs: warning: {label} is deleted: its clusters are free and may have been reused by another file \
             since"
        );
        // ext3 and ext4 clear a deleted file's size and block map (or extents) when they free its inode; ext2
        // keeps them.
        if info.size == 0
            && matches!(
                vol.filesystem(),
                uffs_index::FileSystem::Ext3 | uffs_index::FileSystem::Ext4
            )
        {
            eprintln!(
                "uffs: warning: {} cleared its size and {} when it was deleted: its inode no longer says \
                 where its data was, so nothing is written",
                vol.filesystem().name(),
                if vol.filesystem() == uffs_index::FileSystem::Ext4 {
                    "extents"
                } else {
                    "block map"
                }
            );
            crate::common::mark_partial();
        }
        if info.mapped_size < info.size {
            eprintln!(
                "uffs: warning: its runlist maps only the first {} of its {} bytes (the rest was in extension \
                 records freed with it): the rest is written as zeros",
                info.mapped_size, info.size
            );
        }
    }
    match output {
        Some(path) => write_file(&mut reader, path),
        None => match copy(&mut reader, &mut io::stdout().lock()) {
            Err(e) if broken_pipe(&e) => Ok(()),
            r => r,
        },
    }
}

fn shown_stream(shown: &str, stream: &str) -> String {
    if stream.is_empty() {
        shown.to_string()
    } else {
        format!("{shown}:{stream}")
    }
}

fn broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// The record a path names, through an index of the volume built in memory: the path as given, else ignoring
/// case when that names one file; a live file before a deleted one.
fn resolve(vol: &Volume, parts: &[String], deleted: bool) -> Result<(u64, String)> {
    let want = format!("/{}", parts.join("/"));
    let opts = ScanOptions {
        include_deleted: deleted,
        ..ScanOptions::default()
    };
    let pb = progress_bar(&vol.name);
    let (idx, _) = build(vol, &opts, &pb)?;
    pb.finish_and_clear();
    let last = parts.last().map_or("", String::as_str);
    let folded_last = uffs_index::paths::fold(last);
    let folded_want = uffs_index::paths::fold(&want);
    let mut exact: Vec<EntryId> = Vec::new();
    let mut folded: Vec<EntryId> = Vec::new();
    for id in 0..idx.len() as EntryId {
        if idx.kind(id) == EntryKind::Stream {
            continue;
        }
        let name = idx.name(id);
        if parts.is_empty() {
            if id == idx.root() {
                exact.push(id);
            }
            continue;
        }
        if name != last && idx.folded_name(id) != folded_last.as_bytes() {
            continue;
        }
        let path = idx.path(id);
        if path == want {
            exact.push(id);
        } else if uffs_index::paths::fold(&path) == folded_want {
            folded.push(id);
        }
    }
    let pick = |ids: &[EntryId]| -> Result<Option<EntryId>> {
        // Live entries first; names of one record (hard links) are one file.
        for live in [true, false] {
            let mut records: Vec<EntryId> = ids
                .iter()
                .copied()
                .filter(|&id| idx.is_deleted(id) != live)
                .collect();
            records.sort_by_key(|&id| (idx.record(id), id));
            records.dedup_by_key(|id| idx.record(*id));
            match records[..] {
                [] => continue,
                [one] => return Ok(Some(one)),
                _ => bail!(
                    "{want} names {} files: {}; give a record number instead",
                    records.len(),
                    describe_all(&idx, &records)
                ),
            }
        }
        Ok(None)
    };
    let id = match pick(&exact)? {
        Some(id) => id,
        None => match pick(&folded)? {
            Some(id) => id,
            None if deleted => bail!("{want}: no such file or folder on {}", vol.name),
            None => bail!(
                "{want}: no such file or folder on {} (add --deleted to look among deleted files too)",
                vol.name
            ),
        },
    };
    let path = idx.path(id);
    if idx.kind(id) == EntryKind::Directory && idx.flags(id) & uffs_index::flags::SYNTHETIC != 0 {
        bail!("{path} is a folder uffs made up (it is not on the volume)");
    }
    if idx.is_from_index_slack(id) {
        bail!("{path}: {}", crate::contents::NOT_READ_FROM_SLACK);
    }
    Ok((u64::from(idx.record(id)), path))
}

fn describe_all(idx: &Index, ids: &[EntryId]) -> String {
    ids.iter()
        .map(|&id| {
            format!(
                "{} (record {}{})",
                idx.path(id),
                idx.record(id),
                if idx.is_deleted(id) { ", deleted" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the stream to `path` through a temporary file beside it, renamed into place once complete: an error
/// or an interruption never leaves a partial FILE (see `uffs_results::create_output`: a FIFO or a device is
/// written directly).
fn write_file(reader: &mut StreamReader, path: &Path) -> Result<()> {
    let (mut f, temp) = uffs_results::create_output(path)?;
    copy(reader, &mut f).with_context(|| format!("writing {}", path.display()))?;
    drop(f);
    if let Some(t) = temp {
        t.commit()?;
    }
    Ok(())
}

/// Streams that take longer than a blink get a progress bar (on a terminal).
const PROGRESS_FROM: u64 = 64 << 20;

/// Copies the whole stream to `out` in reads of [`READ_SIZE`].
fn copy(reader: &mut StreamReader, out: &mut dyn Write) -> Result<()> {
    let size = reader.len();
    let pb = if size >= PROGRESS_FROM {
        crate::common::styled_bar(
            "cat",
            "{prefix} [{bar:30}] {bytes}/{total_bytes} ({percent}%), {bytes_per_sec}, eta {eta}",
        )
    } else {
        ProgressBar::hidden()
    };
    pb.set_length(size);
    let mut buf = vec![
        0u8;
        READ_SIZE
            .min(usize::try_from(size).unwrap_or(READ_SIZE))
            .max(1)
    ];
    let mut at = 0u64;
    while at < size {
        let n = reader.read_at(at, &mut buf)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        at += n as u64;
        pb.set_position(at);
    }
    out.flush()?;
    pb.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (Target, String) {
        parse_target(s).unwrap()
    }

    #[test]
    fn printed_paths_name_their_volume() {
        assert_eq!(split_volume("C:\\x\\y.txt"), ("\\x\\y.txt", None, None));
        assert_eq!(split_volume("D:/x"), ("/x", None, None));
        assert_eq!(split_volume("@vss1:/x"), ("/x", None, Some(1)));
        assert_eq!(split_volume("@2:/x"), ("/x", Some(2), None));
        assert_eq!(split_volume("@2@vss3:/x"), ("/x", Some(2), Some(3)));
        assert_eq!(split_volume("vt@vss2:/x"), ("/x", None, Some(2)));
        // Not a volume: a stream, a record's stream, a path alone.
        assert_eq!(split_volume("/a/b.txt:s"), ("/a/b.txt:s", None, None));
        assert_eq!(split_volume("41:big"), ("41:big", None, None));
        assert_eq!(split_volume("/a:/b"), ("/a:/b", None, None));
        assert_eq!(
            with_volume("v.img@vss2", None, None, Some(1))
                .unwrap_err()
                .to_string(),
            "the path is in shadow copy 1, and the source names shadow copy 2"
        );
        assert_eq!(
            with_volume("v.img", None, Some(2), Some(1)).unwrap(),
            ("v.img@vss1".to_string(), Some(2))
        );
    }

    #[test]
    fn targets() {
        assert_eq!(p("120"), (Target::Record(120), String::new()));
        assert_eq!(p("120:big"), (Target::Record(120), "big".into()));
        assert_eq!(
            p("/streams/multi.txt:big"),
            (
                Target::Path(vec!["streams".into(), "multi.txt".into()]),
                "big".into()
            )
        );
        assert_eq!(
            p("streams\\multi.txt"),
            (
                Target::Path(vec!["streams".into(), "multi.txt".into()]),
                String::new()
            )
        );
        assert_eq!(
            p("/a/b.txt::$DATA"),
            (
                Target::Path(vec!["a".into(), "b.txt".into()]),
                String::new()
            )
        );
        assert_eq!(
            p("/a/b.txt:s:$data"),
            (Target::Path(vec!["a".into(), "b.txt".into()]), "s".into())
        );
        assert_eq!(p("/123"), (Target::Path(vec!["123".into()]), String::new()));
        assert_eq!(p("/"), (Target::Path(vec![]), String::new()));
        assert!(parse_target("/a/../b").is_err());
        assert!(parse_target("99999999999999999999999").is_err());
    }
}
