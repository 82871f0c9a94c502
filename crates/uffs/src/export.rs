//! `uffs export`: one row per entry as CSV or JSON lines.
//!
//! Rows are formatted in blocks by all cores and written in entry order. Directory paths are built once and
//! shared, so an entry's path costs one copy of its folder's path plus its name.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use anyhow::{Context, Result};
use clap::ValueEnum;
use uffs_index::{flags, EntryId, Index};

use crate::common::load_indexes;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
}

pub const COLUMNS: [&str; 15] = [
    "path",
    "name",
    "kind",
    "size",
    "allocated",
    "created",
    "modified",
    "mft_changed",
    "accessed",
    "attributes",
    "record",
    "sequence",
    "parent_record",
    "deleted",
    "reparse_tag",
];

pub fn run(
    spec: &str,
    partition: Option<u32>,
    format: Format,
    output: Option<&Path>,
    deleted: bool,
    streams: bool,
) -> Result<()> {
    let indexes = load_indexes(spec, partition, deleted)?;
    let out: Box<dyn Write> = match output {
        Some(p) => Box::new(File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    if format == Format::Csv {
        writeln!(out, "{}", COLUMNS.join(","))?;
    }
    let filter = Filter { deleted, streams };
    for (prefix, idx) in &indexes {
        write_rows(idx, prefix, format, filter, &mut out)?;
    }
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing export"),
    }
}

#[derive(Clone, Copy)]
struct Filter {
    deleted: bool,
    streams: bool,
}

impl Filter {
    fn keep(&self, idx: &Index, id: EntryId) -> bool {
        let f = idx.flags(id);
        f & flags::SYNTHETIC == 0
            && (self.deleted || f & flags::DELETED == 0)
            && (self.streams || f & flags::STREAM == 0)
    }
}

/// Entries per formatting block.
const BLOCK: usize = 16 * 1024;

fn write_rows(
    idx: &Index,
    prefix: &str,
    format: Format,
    filter: Filter,
    out: &mut impl Write,
) -> Result<()> {
    let paths = DirPaths::build(idx, prefix);
    let blocks = idx.len().div_ceil(BLOCK);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(blocks.max(1));
    std::thread::scope(|s| -> Result<()> {
        let (tx, rx) = mpsc::sync_channel::<(usize, Vec<u8>)>(threads * 2);
        for _ in 0..threads {
            let (tx, next, paths) = (tx.clone(), &next, &paths);
            s.spawn(move || loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= blocks {
                    break;
                }
                let mut buf = Vec::with_capacity(BLOCK * 200);
                let lo = b * BLOCK;
                let hi = (lo + BLOCK).min(idx.len());
                for id in lo as EntryId..hi as EntryId {
                    if filter.keep(idx, id) {
                        match format {
                            Format::Csv => csv_row(idx, paths, id, &mut buf),
                            Format::Jsonl => json_row(idx, paths, id, &mut buf),
                        }
                    }
                }
                if tx.send((b, buf)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut want = 0;
        for (b, buf) in rx {
            pending.insert(b, buf);
            while let Some(buf) = pending.remove(&want) {
                match out.write_all(&buf) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                    r => r?,
                }
                want += 1;
            }
        }
        Ok(())
    })
}

/// The full path of every directory, in one string arena.
struct DirPaths<'a> {
    idx: &'a Index,
    text: String,
    span: Vec<(u32, u32)>,
}

const UNSET: (u32, u32) = (u32::MAX, 0);

impl<'a> DirPaths<'a> {
    fn build(idx: &'a Index, prefix: &str) -> DirPaths<'a> {
        let mut p = DirPaths {
            idx,
            text: String::new(),
            span: vec![UNSET; idx.len()],
        };
        let root = idx.root() as usize;
        p.text.push_str(prefix);
        p.span[root] = (0, p.text.len() as u32);
        let mut chain = Vec::new();
        for id in 0..idx.len() as EntryId {
            if idx.flags(id) & flags::DIRECTORY == 0 || p.span[id as usize] != UNSET {
                continue;
            }
            let mut cur = id;
            while p.span[cur as usize] == UNSET {
                chain.push(cur);
                cur = idx.parent(cur);
            }
            while let Some(d) = chain.pop() {
                let (s, e) = p.span[idx.parent(d) as usize];
                let start = p.text.len();
                p.text.extend_from_within(s as usize..e as usize);
                p.text.push('/');
                p.text.push_str(idx.name(d));
                p.span[d as usize] = (start as u32, p.text.len() as u32);
            }
        }
        p
    }

    fn dir(&self, id: EntryId) -> &str {
        let (s, e) = self.span[id as usize];
        &self.text[s as usize..e as usize]
    }

    /// Appends the full path of `id`: its folder's path, `/`, its name. The root is `/`.
    fn path_into(&self, id: EntryId, out: &mut Vec<u8>) {
        let idx = self.idx;
        if id == idx.root() {
            out.extend_from_slice(self.dir(id).as_bytes());
            out.push(b'/');
            return;
        }
        out.extend_from_slice(self.dir(idx.parent(id)).as_bytes());
        out.push(b'/');
        out.extend_from_slice(idx.name_bytes(id));
    }
}

fn attributes(f: u32, out: &mut Vec<u8>) {
    for (c, bit) in flags::LETTERS {
        if f & bit != 0 {
            out.push(c as u8);
        }
    }
}

fn csv_row(idx: &Index, paths: &DirPaths<'_>, id: EntryId, b: &mut Vec<u8>) {
    let mut path = Vec::with_capacity(128);
    paths.path_into(id, &mut path);
    csv_field(&path, b);
    b.push(b',');
    csv_field(idx.name_bytes(id), b);
    b.push(b',');
    b.extend_from_slice(idx.kind(id).as_str().as_bytes());
    b.push(b',');
    common_numbers(idx, id, b, false);
    b.push(b'\n');
}

fn json_row(idx: &Index, paths: &DirPaths<'_>, id: EntryId, b: &mut Vec<u8>) {
    let mut path = Vec::with_capacity(128);
    paths.path_into(id, &mut path);
    b.extend_from_slice(b"{\"path\":");
    json_str(&path, b);
    b.extend_from_slice(b",\"name\":");
    json_str(idx.name_bytes(id), b);
    b.extend_from_slice(b",\"kind\":\"");
    b.extend_from_slice(idx.kind(id).as_str().as_bytes());
    b.extend_from_slice(b"\",");
    common_numbers(idx, id, b, true);
    b.extend_from_slice(b"}\n");
}

/// The columns after `kind`, as CSV fields or JSON members.
fn common_numbers(idx: &Index, id: EntryId, b: &mut Vec<u8>, json: bool) {
    let key = |b: &mut Vec<u8>, k: &str| {
        if json {
            b.push(b'"');
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(b"\":");
        }
    };
    let sep = |b: &mut Vec<u8>| b.push(b',');
    key(b, "size");
    itoa(idx.size(id), b);
    sep(b);
    key(b, "allocated");
    itoa(idx.allocated(id), b);
    for (name, t) in [
        ("created", idx.created(id)),
        ("modified", idx.modified(id)),
        ("mft_changed", idx.mft_changed(id)),
        ("accessed", idx.accessed(id)),
    ] {
        sep(b);
        key(b, name);
        if json {
            b.push(b'"');
        }
        iso_time(t, b);
        if json {
            b.push(b'"');
        }
    }
    sep(b);
    key(b, "attributes");
    if json {
        b.push(b'"');
    }
    attributes(idx.flags(id), b);
    if json {
        b.push(b'"');
    }
    sep(b);
    key(b, "record");
    itoa(u64::from(idx.record(id)), b);
    sep(b);
    key(b, "sequence");
    itoa(u64::from(idx.sequence(id)), b);
    sep(b);
    key(b, "parent_record");
    match idx.parent_record(id) {
        Some(p) => itoa(u64::from(p), b),
        None if json => b.extend_from_slice(b"null"),
        None => {}
    }
    sep(b);
    key(b, "deleted");
    b.extend_from_slice(if idx.is_deleted(id) {
        b"true"
    } else {
        b"false"
    });
    sep(b);
    key(b, "reparse_tag");
    let tag = idx.reparse_tag(id);
    if json {
        itoa(u64::from(tag), b);
    } else if tag != 0 {
        b.extend_from_slice(format!("0x{tag:08X}").as_bytes());
    }
}

fn csv_field(s: &[u8], b: &mut Vec<u8>) {
    if !s.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r')) {
        b.extend_from_slice(s);
        return;
    }
    b.push(b'"');
    for &c in s {
        if c == b'"' {
            b.push(b'"');
        }
        b.push(c);
    }
    b.push(b'"');
}

fn json_str(s: &[u8], b: &mut Vec<u8>) {
    b.push(b'"');
    for &c in s {
        match c {
            b'"' => b.extend_from_slice(b"\\\""),
            b'\\' => b.extend_from_slice(b"\\\\"),
            0..=0x1F => b.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => b.push(c),
        }
    }
    b.push(b'"');
}

fn itoa(mut n: u64, b: &mut Vec<u8>) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    b.extend_from_slice(&tmp[i..]);
}

/// ISO 8601 UTC with 100 ns precision, formatted by hand (this runs for every time of every row).
fn iso_time(ft: u64, b: &mut Vec<u8>) {
    let c = uffs_index::time::to_civil(ft);
    let digits = |v: u64, n: usize, b: &mut Vec<u8>| {
        let mut tmp = [b'0'; 8];
        let mut v = v;
        for i in (0..n).rev() {
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        b.extend_from_slice(&tmp[..n]);
    };
    if (0..=9999).contains(&c.year) {
        digits(c.year as u64, 4, b);
    } else {
        b.extend_from_slice(c.year.to_string().as_bytes());
    }
    b.push(b'-');
    digits(u64::from(c.month), 2, b);
    b.push(b'-');
    digits(u64::from(c.day), 2, b);
    b.push(b'T');
    digits(u64::from(c.hour), 2, b);
    b.push(b':');
    digits(u64::from(c.minute), 2, b);
    b.push(b':');
    digits(u64::from(c.second), 2, b);
    b.push(b'.');
    digits(u64::from(c.ticks), 7, b);
    b.push(b'Z');
}
