//! `uffs export`'s fast formatter: one row per entry as CSV or JSON lines, or The Sleuth Kit's body file (see
//! [`crate::bodyfile`]), with the columns of [`Column::EXPORT`]; and Parquet (see [`crate::parquet`]).
//!
//! Rows are formatted in blocks by all cores and written in entry order. Directory paths are built once and
//! shared, so an entry's path costs one copy of its folder's path plus its name.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use uffs_index::paths::FolderPaths;
use uffs_index::time::known;
use uffs_index::timeline::EntryTimeline;
use uffs_index::{flags, EntryId, Index};

use crate::column::{Column, ColumnType};
use arrow_array::RecordBatch;

use crate::parquet::{self, ParquetWriter, Rows, VolumeInfo};
use crate::{io_err, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
    /// The Sleuth Kit's body file (mactime's input): the `$STANDARD_INFORMATION` and `$FILE_NAME` times as rows.
    Bodyfile,
    /// Apache Parquet with uffs's fixed schema (docs/parquet.md); to -o FILE or a pipe, never a terminal.
    Parquet,
}

/// The CSV header of `uffs export`.
pub fn csv_header() -> String {
    let names: Vec<&str> = Column::EXPORT.iter().map(|c| c.name()).collect();
    names.join(",") + "\n"
}

/// Which entries are exported.
#[derive(Clone, Copy)]
pub struct Filter<'a> {
    pub deleted: bool,
    pub streams: bool,
    /// Entries a delta replaces (a bit per entry).
    pub hidden: Option<&'a [u64]>,
}

impl Filter<'_> {
    pub fn keep(&self, idx: &Index, id: EntryId) -> bool {
        let f = idx.flags(id);
        let i = id as usize;
        f & flags::SYNTHETIC == 0
            && self.hidden.is_none_or(|h| h[i / 64] >> (i % 64) & 1 == 0)
            && (self.deleted || f & flags::DELETED == 0)
            && (self.streams || f & flags::STREAM == 0)
    }
}

/// Entries per formatting block.
const BLOCK: usize = 16 * 1024;

/// Writes the rows of the entries of `idx` that `filter` keeps, as `format` (CSV, JSON lines or a body file; the
/// CSV header is the caller's), in entry order; `progress` is told how many entries are done after each block.
pub fn write_rows(
    idx: &Index,
    prefix: &str,
    format: Format,
    filter: Filter<'_>,
    out: &mut dyn Write,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    let paths = DirPaths::build(idx, prefix);
    let blocks = idx.len().div_ceil(BLOCK);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(blocks.max(1));
    // Written buffers come back for reuse, so formatting does not keep faulting in fresh memory.
    let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
    let back_rx = std::sync::Mutex::new(back_rx);
    std::thread::scope(|s| -> Result<()> {
        let (tx, rx) = mpsc::sync_channel::<(usize, Vec<u8>)>(threads * 2);
        for _ in 0..threads {
            let (tx, next, paths, back_rx) = (tx.clone(), &next, &paths, &back_rx);
            s.spawn(move || {
                let mut row = Row::new(idx, paths);
                loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    if b >= blocks {
                        break;
                    }
                    let mut buf = back_rx
                        .lock()
                        .ok()
                        .and_then(|r| r.try_recv().ok())
                        .unwrap_or_default();
                    buf.clear();
                    let lo = b * BLOCK;
                    let hi = (lo + BLOCK).min(idx.len());
                    // Timelines are decoded one after the other, kept rows or not.
                    let mut timelines = idx.timelines(lo as EntryId..hi as EntryId);
                    for id in lo as EntryId..hi as EntryId {
                        let tl = timelines.next().flatten();
                        if filter.keep(idx, id) {
                            match format {
                                Format::Csv => row.csv(id, tl, &mut buf),
                                Format::Jsonl => row.json(id, tl, &mut buf),
                                Format::Bodyfile => row.body(id, tl, &mut buf),
                                Format::Parquet => unreachable!("see write_parquet"),
                            }
                        }
                    }
                    if tx.send((b, buf)).is_err() {
                        break;
                    }
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
                    r => r.map_err(io_err("writing export"))?,
                }
                let _ = back_tx.send(buf);
                want += 1;
                progress(((want * BLOCK).min(idx.len())) as u64);
            }
        }
        Ok(())
    })
}

/// Paths of one index's entries, each prefixed (`@2:` for partition 2 of a disk with several volumes).
pub(crate) struct DirPaths<'a> {
    idx: &'a Index,
    prefix: &'a str,
    folders: FolderPaths,
}

impl<'a> DirPaths<'a> {
    fn build(idx: &'a Index, prefix: &'a str) -> DirPaths<'a> {
        DirPaths {
            idx,
            prefix,
            folders: FolderPaths::build(idx),
        }
    }

    /// Appends the full path of `id`. The root is `/`.
    fn path_into(&self, id: EntryId, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix.as_bytes());
        self.folders.path_into(self.idx, id, out);
    }
}

/// One cell of an entry, read without allocating (for the fast formatters: export and Parquet).
#[derive(Debug, Clone)]
pub enum Cell<'a> {
    Text(Cow<'a, [u8]>),
    /// Entry flags, written as attribute letters.
    Letters(u32),
    Int(Option<u64>),
    /// A FILETIME; `None` when not kept (as [`crate::Value::Time`]).
    Time(Option<u64>),
    Bool(bool),
}

/// Column `c` of entry `id` of `idx`, whose full path is `path` and timeline `tl`. A folder's totals (which
/// need a searcher) are unknown here.
pub fn cell<'a>(
    idx: &'a Index,
    id: EntryId,
    path: &'a [u8],
    tl: Option<EntryTimeline>,
    c: Column,
) -> Cell<'a> {
    match c {
        Column::Path => Cell::Text(Cow::Borrowed(path)),
        Column::Name => Cell::Text(idx.name_bytes(id)),
        Column::Kind => Cell::Text(Cow::Borrowed(idx.kind(id).as_str().as_bytes())),
        Column::Ext => Cell::Text(match crate::column::ext(idx, id) {
            Cow::Borrowed(e) => Cow::Borrowed(e.as_bytes()),
            Cow::Owned(e) => Cow::Owned(e.into_bytes()),
        }),
        Column::Size => Cell::Int(Some(idx.size(id))),
        Column::Allocated => Cell::Int(Some(idx.allocated(id))),
        Column::Created => Cell::Time(known(idx.created(id))),
        Column::Modified => Cell::Time(known(idx.modified(id))),
        Column::MftChanged => Cell::Time(known(idx.mft_changed(id))),
        Column::Accessed => Cell::Time(known(idx.accessed(id))),
        Column::FnCreated | Column::FnModified | Column::FnMftChanged | Column::FnAccessed => {
            Cell::Time(tl.and_then(|t| known(t.fn_times[c.fn_index().unwrap_or(0)])))
        }
        Column::Attributes => Cell::Letters(idx.flags(id)),
        Column::Record => Cell::Int(crate::column::known_record(idx, id).map(u64::from)),
        Column::Sequence => {
            Cell::Int(crate::column::known_record(idx, id).map(|_| u64::from(idx.sequence(id))))
        }
        Column::ParentRecord => Cell::Int(idx.parent_record(id).map(u64::from)),
        Column::Deleted => Cell::Bool(idx.is_deleted(id)),
        Column::FromIndexSlack => Cell::Bool(idx.is_from_index_slack(id)),
        Column::ReparseTag => Cell::Int(Some(u64::from(idx.reparse_tag(id)))),
        Column::Mode => Cell::Text(Cow::Owned(
            idx.posix(id)
                .map(|p| p.symbolic().into_bytes())
                .unwrap_or_default(),
        )),
        Column::Uid => Cell::Int(idx.posix(id).map(|p| u64::from(p.uid))),
        Column::Gid => Cell::Int(idx.posix(id).map(|p| u64::from(p.gid))),
        Column::LinkTarget => Cell::Text(Cow::Borrowed(idx.link_target(id).unwrap_or_default())),
        Column::Alias => Cell::Text(Cow::Borrowed(idx.alias(id).unwrap_or_default())),
        Column::TreeSize | Column::TreeAllocated | Column::Descendants | Column::Children => {
            debug_assert_eq!(c.ty(), ColumnType::Integer);
            Cell::Int(None)
        }
        // Read from the files by a query's front end, not from the index.
        Column::Type => Cell::Text(Cow::Borrowed(b"")),
    }
}

/// Appends the attribute letters of entry flags `f`.
pub fn attributes(f: u32, out: &mut Vec<u8>) {
    for (c, bit) in flags::LETTERS {
        if f & bit != 0 {
            out.push(c as u8);
        }
    }
}

/// Formats rows; one per thread, holding its scratch path and the last date it formatted.
struct Row<'a> {
    idx: &'a Index,
    paths: &'a DirPaths<'a>,
    path: Vec<u8>,
    /// `YYYY-MM-DD` of recently formatted days (days since 1601), direct-mapped: a volume's times cluster in a
    /// few years, so nearly every lookup hits.
    dates: Vec<(u64, [u8; 10])>,
}

const DATE_SLOTS: usize = 4096;

impl<'a> Row<'a> {
    fn new(idx: &'a Index, paths: &'a DirPaths<'a>) -> Row<'a> {
        Row {
            idx,
            paths,
            path: Vec::with_capacity(256),
            dates: vec![(u64::MAX, [0; 10]); DATE_SLOTS],
        }
    }

    fn csv(&mut self, id: EntryId, tl: Option<EntryTimeline>, b: &mut Vec<u8>) {
        self.path.clear();
        self.paths.path_into(id, &mut self.path);
        self.cells::<false>(id, tl, b);
        b.push(b'\n');
    }

    fn body(&mut self, id: EntryId, tl: Option<EntryTimeline>, b: &mut Vec<u8>) {
        self.path.clear();
        self.paths.path_into(id, &mut self.path);
        crate::bodyfile::rows(self.idx, id, &self.path, tl, b);
    }

    fn json(&mut self, id: EntryId, tl: Option<EntryTimeline>, b: &mut Vec<u8>) {
        self.path.clear();
        self.paths.path_into(id, &mut self.path);
        b.push(b'{');
        self.cells::<true>(id, tl, b);
        b.extend_from_slice(b"}\n");
    }

    /// The cells of [`Column::EXPORT`] as CSV fields or (`JSON`) JSON members. A constant, so each format's
    /// loop has no branches for the other. As CSV, a reparse tag is hexadecimal (`0xA000000C`, empty for none).
    fn cells<const JSON: bool>(&mut self, id: EntryId, tl: Option<EntryTimeline>, b: &mut Vec<u8>) {
        let idx = self.idx;
        for (i, &c) in Column::EXPORT.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            if JSON {
                b.push(b'"');
                b.extend_from_slice(c.name().as_bytes());
                b.extend_from_slice(b"\":");
            }
            match cell(idx, id, &self.path, tl, c) {
                Cell::Text(s) if JSON => json_str(&s, b),
                Cell::Text(s) => csv_field(&s, b),
                Cell::Letters(f) => {
                    if JSON {
                        b.push(b'"');
                    }
                    attributes(f, b);
                    if JSON {
                        b.push(b'"');
                    }
                }
                Cell::Int(Some(n)) if !JSON && c == Column::ReparseTag => {
                    if n != 0 {
                        b.extend_from_slice(format!("0x{n:08X}").as_bytes());
                    }
                }
                Cell::Int(Some(n)) => itoa(n, b),
                Cell::Time(Some(t)) => {
                    if JSON {
                        b.push(b'"');
                    }
                    self.iso_time(t, b);
                    if JSON {
                        b.push(b'"');
                    }
                }
                Cell::Int(None) | Cell::Time(None) => {
                    if JSON {
                        b.extend_from_slice(b"null");
                    }
                }
                Cell::Bool(v) => b.extend_from_slice(if v { b"true" } else { b"false" }),
            }
        }
    }

    /// ISO 8601 UTC with 100 ns precision. This runs four times per row, so the date is cached per day and the
    /// digits come from a table of pairs.
    fn iso_time(&mut self, ft: u64, b: &mut Vec<u8>) {
        const TICKS_PER_DAY: u64 = 86_400 * uffs_index::time::TICKS_PER_SECOND;
        let day = ft / TICKS_PER_DAY;
        let slot = &mut self.dates[day as usize % DATE_SLOTS];
        if slot.0 != day {
            let c = uffs_index::time::to_civil(day * TICKS_PER_DAY);
            if !(0..=9999).contains(&c.year) {
                // Past year 9999 (only corrupt times get there): not cached, printed in full.
                b.extend_from_slice(format!("{}-{:02}-{:02}", c.year, c.month, c.day).as_bytes());
                return self.time_of_day(ft % TICKS_PER_DAY, b);
            }
            let mut d = Vec::with_capacity(10);
            pair((c.year / 100) as u32, &mut d);
            pair((c.year % 100) as u32, &mut d);
            d.push(b'-');
            pair(c.month, &mut d);
            d.push(b'-');
            pair(c.day, &mut d);
            slot.0 = day;
            slot.1.copy_from_slice(&d);
        }
        b.extend_from_slice(&slot.1);
        self.time_of_day(ft % TICKS_PER_DAY, b);
    }

    /// `THH:MM:SS.fffffffZ` of the ticks since midnight.
    fn time_of_day(&self, in_day: u64, b: &mut Vec<u8>) {
        let secs = (in_day / uffs_index::time::TICKS_PER_SECOND) as u32;
        let ticks = (in_day % uffs_index::time::TICKS_PER_SECOND) as u32;
        b.push(b'T');
        pair(secs / 3600, b);
        b.push(b':');
        pair(secs / 60 % 60, b);
        b.push(b':');
        pair(secs % 60, b);
        b.push(b'.');
        b.push(b'0' + (ticks / 1_000_000) as u8);
        pair(ticks / 10_000 % 100, b);
        pair(ticks / 100 % 100, b);
        pair(ticks % 100, b);
        b.push(b'Z');
    }
}

/// "00" to "99".
const PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

fn pair(n: u32, b: &mut Vec<u8>) {
    let i = (n as usize % 100) * 2;
    b.extend_from_slice(&PAIRS[i..i + 2]);
}

fn csv_field(s: &[u8], b: &mut Vec<u8>) {
    if memchr::memchr3(b',', b'"', b'\n', s).is_none() && memchr::memchr(b'\r', s).is_none() {
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

pub fn itoa(mut n: u64, b: &mut Vec<u8>) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while n >= 100 {
        let p = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    if n >= 10 {
        let p = n as usize * 2;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    } else {
        i -= 1;
        tmp[i] = b'0' + n as u8;
    }
    b.extend_from_slice(&tmp[i..]);
}

/// Writes the entries of `idx` that `filter` keeps into `pq` (on volume `vol`), in entry order, handing the
/// encoded bytes to `out` as they complete; `progress` is told how many entries are done. Blocks of rows are
/// gathered into record batches by the other cores while this thread encodes them in order. Returns the rows
/// written.
pub fn write_parquet(
    idx: &Index,
    prefix: &str,
    filter: Filter<'_>,
    pq: &mut ParquetWriter,
    out: &mut dyn Write,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64> {
    let vol = VolumeInfo::of(idx, prefix);
    let paths = DirPaths::build(idx, parquet::path_prefix(prefix));
    let n = idx.len();
    let blocks = n.div_ceil(PARQUET_BLOCK);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(blocks.max(1));
    let layout = pq.layout();
    let mut rows_written = 0u64;
    std::thread::scope(|s| -> Result<u64> {
        // Room for a row group's batches and more, so gathering goes on while a row group is encoded.
        let room = parquet::ROW_GROUP_ROWS / PARQUET_BLOCK + threads;
        let (tx, rx) = mpsc::sync_channel::<(usize, Result<RecordBatch>)>(room);
        for _ in 0..threads {
            let (tx, next, paths, vol) = (tx.clone(), &next, &paths, &vol);
            s.spawn(move || {
                let mut rows = Rows::new(layout);
                let mut path = Vec::with_capacity(256);
                loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    if b >= blocks {
                        break;
                    }
                    let lo = b * PARQUET_BLOCK;
                    let hi = (lo + PARQUET_BLOCK).min(n);
                    let mut timelines = idx.timelines(lo as EntryId..hi as EntryId);
                    for id in lo as EntryId..hi as EntryId {
                        let tl = timelines.next().flatten();
                        if filter.keep(idx, id) {
                            path.clear();
                            paths.path_into(id, &mut path);
                            rows.push(vol, idx, id, &path, tl);
                        }
                    }
                    if tx.send((b, rows.batch())).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut want = 0;
        for (b, batch) in rx {
            pending.insert(b, batch);
            while let Some(batch) = pending.remove(&want) {
                let batch = batch?;
                if batch.num_rows() > 0 {
                    pq.write_batch(&batch)?;
                    rows_written += batch.num_rows() as u64;
                }
                match pq.drain_into(out) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(rows_written),
                    r => r.map_err(io_err("writing export"))?,
                }
                want += 1;
                progress(((want * PARQUET_BLOCK).min(n)) as u64);
            }
        }
        Ok(rows_written)
    })
}

/// Entries per Parquet record batch when exporting.
const PARQUET_BLOCK: usize = 32 * 1024;
