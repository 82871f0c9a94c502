//! A dataset's volume file read back into an index, so that `uffs --dataset DIR QUERY` answers from the files
//! alone, with no engine and no source: every column the index holds is in the file (docs/parquet.md), so the
//! rebuilt index answers as the one the file was written from.
//!
//! Reads schema version 2 (times from the `<time>_filetime` columns, whole) and version 1 (nanosecond times;
//! unsigned integers); a null time, one the volume does not keep, is [`UNKNOWN`] again. Rows become the index
//! builder's record batches as an MFT's records do: the rows of one record (its names, hard links, then its
//! streams) make one record; the `$Orphan` folder uffs made is made again by the build, and an orphan (no
//! `parent_record`) stays one.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch as ArrowBatch};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;
use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamInfo, StreamSizes};
use uffs_index::time::UNKNOWN;
use uffs_index::{flags, BuildOptions, Builder, FileSystem, Index, Posix, VolumeMeta};

use crate::{Error, Result};

/// The record number uffs gives the `$Orphan` folder it makes (no volume has it).
const ORPHAN_RECORD: u64 = u32::MAX as u64;
/// A parent reference no record has: an entry without `parent_record` is an orphan again.
const NO_PARENT: u64 = 0xFFFF_FFFF_FFFF;
/// The `$FILE_NAME` namespace of a long name.
const WIN32: u8 = 1;
/// Records per batch handed to the builder.
const BATCH_RECORDS: usize = 4096;
/// The four times of `$STANDARD_INFORMATION`, then the four of `$FILE_NAME`, as the schema names them.
const TIMES: [&str; 8] = [
    "created",
    "modified",
    "mft_changed",
    "accessed",
    "fn_created",
    "fn_modified",
    "fn_mft_changed",
    "fn_accessed",
];

/// The kinds of rows, from the `kind` column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowKind {
    File,
    Folder,
    Stream,
}

/// One volume file's rows, column by column, as the index needs them.
#[derive(Default)]
struct Rows {
    serial: Option<u64>,
    source: Option<String>,
    text: Vec<u8>,
    name: Vec<(u32, u32)>,
    link: Vec<(u32, u32)>,
    kind: Vec<RowKind>,
    size: Vec<u64>,
    allocated: Vec<u64>,
    record: Vec<u64>,
    sequence: Vec<u16>,
    parent: Vec<Option<u64>>,
    deleted: Vec<bool>,
    /// Names from index slack (`from_index_slack`, absent before uffs wrote it: none).
    slack: Vec<bool>,
    reparse: Vec<u32>,
    mask: Vec<u32>,
    posix: Vec<Option<Posix>>,
    times: [Vec<u64>; 8],
}

impl Rows {
    fn len(&self) -> usize {
        self.record.len()
    }

    fn append(&mut self, mut o: Rows) {
        let base = self.text.len() as u32;
        self.text.append(&mut o.text);
        let shift = |v: &mut Vec<(u32, u32)>, o: Vec<(u32, u32)>| {
            v.extend(o.into_iter().map(|(a, b)| (a + base, b + base)))
        };
        shift(&mut self.name, o.name);
        shift(&mut self.link, o.link);
        self.serial = self.serial.or(o.serial);
        if self.source.is_none() {
            self.source = o.source;
        }
        self.kind.append(&mut o.kind);
        self.size.append(&mut o.size);
        self.allocated.append(&mut o.allocated);
        self.record.append(&mut o.record);
        self.sequence.append(&mut o.sequence);
        self.parent.append(&mut o.parent);
        self.deleted.append(&mut o.deleted);
        self.slack.append(&mut o.slack);
        self.reparse.append(&mut o.reparse);
        self.mask.append(&mut o.mask);
        self.posix.append(&mut o.posix);
        for (t, mut ot) in self.times.iter_mut().zip(o.times) {
            t.append(&mut ot);
        }
    }

    fn text(&self, (a, b): (u32, u32)) -> &[u8] {
        &self.text[a as usize..b as usize]
    }
}

fn bad(file: &Path, what: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("{}: {what}", file.display()))
}

/// The index of the volume whose dataset file is `file` (schema version 1 or 2); `built_at` is when the file
/// was written (FILETIME).
pub fn read_volume(file: &Path, built_at: u64) -> Result<Index> {
    // Read whole, once: row groups decoded from one file that an export may rename another over meanwhile would
    // mix two versions of the volume.
    let data = bytes::Bytes::from(
        std::fs::read(file).map_err(crate::io_err(format!("reading {}", file.display())))?,
    );
    let first = ParquetRecordBatchReaderBuilder::try_new(data.clone()).map_err(|e| bad(file, e))?;
    let groups = first.metadata().num_row_groups();
    let schema = first.schema().clone();
    let has = |n: &str| schema.index_of(n).is_ok();
    for need in [
        "name",
        "kind",
        "size",
        "record",
        "sequence",
        "parent_record",
    ] {
        if !has(need) {
            return Err(bad(
                file,
                format!("no column {need:?}: not a Parquet file written by uffs"),
            ));
        }
    }
    drop(first);
    // Each row group on a core of its own, then joined in order.
    let parts: Vec<Result<Rows>> = (0..groups)
        .into_par_iter()
        .map(|g| {
            let b =
                ParquetRecordBatchReaderBuilder::try_new(data.clone()).map_err(|e| bad(file, e))?;
            let wanted = wanted_columns(b.schema());
            let mask = ProjectionMask::roots(b.parquet_schema(), wanted);
            let reader = b
                .with_row_groups(vec![g])
                .with_projection(mask)
                .with_batch_size(64 * 1024)
                .build()
                .map_err(|e| bad(file, e))?;
            let mut rows = Rows::default();
            for batch in reader {
                let batch = batch.map_err(|e| bad(file, e))?;
                add_batch(&mut rows, &batch).map_err(|e| bad(file, e))?;
            }
            Ok(rows)
        })
        .collect();
    let mut rows = Rows::default();
    for p in parts {
        rows.append(p?);
    }
    Ok(build(rows, built_at))
}

/// The root columns of `schema` the index is made from.
fn wanted_columns(schema: &arrow_schema::Schema) -> Vec<usize> {
    let mut names = vec![
        "volume_serial",
        "source",
        "name",
        "kind",
        "size",
        "allocated",
        "record",
        "sequence",
        "parent_record",
        "deleted",
        "from_index_slack",
        "reparse_tag",
        "attributes_mask",
        "mode",
        "uid",
        "gid",
        "link_target",
    ];
    let raw: Vec<String> = TIMES.iter().map(|t| format!("{t}_filetime")).collect();
    for (t, r) in TIMES.iter().zip(&raw) {
        // Version 2 keeps each FILETIME whole beside its microseconds.
        names.push(if schema.index_of(r).is_ok() { r } else { t });
    }
    names
        .iter()
        .filter_map(|n| schema.index_of(n).ok())
        .collect()
}

/// The integers of column `a` (any integer type; unsigned ones keep their bits), nulls as `None`.
fn ints(a: &ArrayRef) -> std::result::Result<Vec<Option<i64>>, String> {
    macro_rules! each {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .iter()
                .map(|v| v.map(|v| v as i64))
                .collect()
        };
    }
    Ok(match a.data_type() {
        DataType::Int64 => each!(Int64Type),
        DataType::Int32 => each!(Int32Type),
        DataType::Int16 => each!(Int16Type),
        DataType::Int8 => each!(Int8Type),
        DataType::UInt64 => each!(UInt64Type),
        DataType::UInt32 => each!(UInt32Type),
        DataType::UInt16 => each!(UInt16Type),
        DataType::UInt8 => each!(UInt8Type),
        other => return Err(format!("an integer column is {other}")),
    })
}

/// The FILETIMEs of a time column: a `_filetime` INT64 as it is, a timestamp of any unit converted, null (a time
/// not kept) as [`UNKNOWN`].
fn filetimes(a: &ArrayRef) -> std::result::Result<Vec<u64>, String> {
    let per_tick = |ticks_per_unit: i128, divisor: i128| {
        move |v: Option<i64>| {
            v.map_or(UNKNOWN, |v| {
                (i128::from(v) * ticks_per_unit / divisor
                    + i128::from(uffs_index::time::UNIX_EPOCH))
                .max(0) as u64
            })
        }
    };
    macro_rules! each {
        ($t:ty, $mul:expr, $div:expr) => {{
            let f = per_tick($mul, $div);
            a.as_primitive::<$t>().iter().map(f).collect()
        }};
    }
    Ok(match a.data_type() {
        DataType::Timestamp(TimeUnit::Microsecond, _) => each!(TimestampMicrosecondType, 10, 1),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => each!(TimestampNanosecondType, 1, 100),
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            each!(TimestampMillisecondType, 10_000, 1)
        }
        DataType::Timestamp(TimeUnit::Second, _) => each!(TimestampSecondType, 10_000_000, 1),
        _ => ints(a)?
            .into_iter()
            .map(|v| v.map_or(UNKNOWN, |v| v as u64))
            .collect(),
    })
}

/// The strings of column `a`, each handed to `f` (nulls as empty).
fn strings(a: &ArrayRef, mut f: impl FnMut(&str)) -> std::result::Result<(), String> {
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().iter().for_each(|s| f(s.unwrap_or(""))),
        DataType::LargeUtf8 => a.as_string::<i64>().iter().for_each(|s| f(s.unwrap_or(""))),
        DataType::Utf8View => a.as_string_view().iter().for_each(|s| f(s.unwrap_or(""))),
        other => return Err(format!("a text column is {other}")),
    }
    Ok(())
}

/// Appends the rows of `b` to `rows`.
fn add_batch(rows: &mut Rows, b: &ArrowBatch) -> std::result::Result<(), String> {
    let n = b.num_rows();
    let col = |name: &str| b.column_by_name(name);
    let need = |name: &str| col(name).ok_or_else(|| format!("no column {name:?}"));
    let int_or = |name: &str, default: i64| -> std::result::Result<Vec<i64>, String> {
        Ok(match col(name) {
            Some(a) => ints(a)?.into_iter().map(|v| v.unwrap_or(default)).collect(),
            None => vec![default; n],
        })
    };
    if rows.serial.is_none() && n > 0 {
        rows.serial = int_or("volume_serial", 0)?.first().map(|&v| v as u64);
        if let Some(a) = col("source") {
            strings(a, |s| {
                rows.source.get_or_insert_with(|| s.to_string());
            })?;
        }
    }
    strings(need("name")?, |s| {
        let start = rows.text.len() as u32;
        rows.text.extend_from_slice(s.as_bytes());
        rows.name.push((start, rows.text.len() as u32));
    })?;
    match col("link_target") {
        Some(a) => strings(a, |s| {
            let start = rows.text.len() as u32;
            rows.text.extend_from_slice(s.as_bytes());
            rows.link.push((start, rows.text.len() as u32));
        })?,
        None => rows.link.extend(std::iter::repeat_n((0, 0), n)),
    }
    strings(need("kind")?, |s| {
        rows.kind.push(match s {
            "folder" => RowKind::Folder,
            "stream" => RowKind::Stream,
            _ => RowKind::File,
        })
    })?;
    rows.size
        .extend(int_or("size", 0)?.into_iter().map(|v| v as u64));
    rows.allocated
        .extend(int_or("allocated", 0)?.into_iter().map(|v| v as u64));
    rows.record
        .extend(int_or("record", 0)?.into_iter().map(|v| v as u64));
    rows.sequence
        .extend(int_or("sequence", 0)?.into_iter().map(|v| v as u16));
    rows.parent.extend(
        ints(need("parent_record")?)?
            .into_iter()
            .map(|v| v.map(|v| v as u64)),
    );
    match col("deleted") {
        Some(a) => rows
            .deleted
            .extend(a.as_boolean().iter().map(|v| v.unwrap_or(false))),
        None => rows.deleted.extend(std::iter::repeat_n(false, n)),
    }
    match col("from_index_slack") {
        Some(a) => rows
            .slack
            .extend(a.as_boolean().iter().map(|v| v.unwrap_or(false))),
        None => rows.slack.extend(std::iter::repeat_n(false, n)),
    }
    rows.reparse
        .extend(int_or("reparse_tag", 0)?.into_iter().map(|v| v as u32));
    rows.mask
        .extend(int_or("attributes_mask", 0)?.into_iter().map(|v| v as u32));
    let uid = col("uid").map(ints).transpose()?;
    let gid = col("gid").map(ints).transpose()?;
    let at = rows.posix.len();
    match col("mode") {
        Some(a) => strings(a, |s| {
            rows.posix
                .push(Posix::mode_from_symbolic(s).map(|mode| Posix {
                    mode,
                    ..Posix::default()
                }))
        })?,
        None => rows.posix.extend(std::iter::repeat_n(None, n)),
    }
    for (i, p) in rows.posix[at..].iter_mut().enumerate() {
        if let Some(p) = p {
            p.uid = uid.as_ref().and_then(|u| u[i]).unwrap_or(0) as u32;
            p.gid = gid.as_ref().and_then(|g| g[i]).unwrap_or(0) as u32;
        }
    }
    for (k, t) in TIMES.iter().enumerate() {
        let raw = format!("{t}_filetime");
        match col(&raw).or_else(|| col(t)) {
            Some(a) => rows.times[k].extend(filetimes(a)?),
            None => rows.times[k].extend(std::iter::repeat_n(UNKNOWN, n)),
        }
    }
    Ok(())
}

/// The stream attribute flags (compressed, encrypted, sparse) behind a stream row's attribute bits that its file
/// does not have.
fn stream_attr_flags(stream_mask: u32, file_mask: u32) -> u16 {
    let own = stream_mask & !file_mask;
    let mut f = 0;
    if own & flags::COMPRESSED != 0 {
        f |= 0x0001;
    }
    if own & flags::ENCRYPTED != 0 {
        f |= 0x4000;
    }
    if own & flags::SPARSE != 0 {
        f |= 0x8000;
    }
    f
}

/// The index of `rows`.
fn build(rows: Rows, built_at: u64) -> Index {
    let n = rows.len();
    // The rows of each record together (a dataset holds a volume's rows in the order its index had them, which a
    // delta may have made unsorted), the $Orphan folder uffs made left out.
    let mut order: Vec<u32> = (0..n as u32)
        .filter(|&i| rows.record[i as usize] != ORPHAN_RECORD && !rows.slack[i as usize])
        .collect();
    order.sort_by_key(|&i| (rows.record[i as usize], i));
    let is_root =
        |i: usize| rows.kind[i] == RowKind::Folder && rows.parent[i] == Some(rows.record[i]);
    let root = order.iter().map(|&i| i as usize).find(|&i| is_root(i));
    let filesystem = match root.map(|i| rows.record[i]) {
        Some(5) => FileSystem::Ntfs,
        _ if rows.posix.iter().any(Option::is_some) => FileSystem::Ext4,
        Some(_) => FileSystem::Fat32,
        None => FileSystem::Ntfs,
    };
    // Without a root of its own (uffs made one), an entry without a parent hung below that root.
    let no_parent = match root {
        Some(_) => NO_PARENT,
        None => 5,
    };
    let meta = VolumeMeta {
        source: rows.source.clone().unwrap_or_default(),
        serial: rows.serial.unwrap_or(0),
        records_total: order.last().map_or(0, |&i| rows.record[i as usize] + 1),
        // Whether the file was written with deleted entries is not recorded: `--deleted` shows those it holds.
        has_deleted: true,
        built_at,
        filesystem,
        ..VolumeMeta::default()
    };
    // Each record's rows: a run of `order` with one record number (and sequence).
    let mut groups: Vec<(u32, u32)> = Vec::new();
    let mut start = 0;
    for k in 1..=order.len() {
        let split = k == order.len() || {
            let (a, b) = (order[k - 1] as usize, order[k] as usize);
            (rows.record[a], rows.sequence[a]) != (rows.record[b], rows.sequence[b])
        };
        if split {
            groups.push((start as u32, k as u32));
            start = k;
        }
    }
    let mut builder = Builder::new(
        meta,
        BuildOptions {
            include_deleted: true,
        },
        n,
    );
    let preparer = builder.preparer();
    for wave in groups.chunks(BATCH_RECORDS * 8) {
        let made: Vec<_> = wave
            .par_chunks(BATCH_RECORDS)
            .map(|chunk| preparer.prepare(&batch_of(&rows, &order, chunk, no_parent)))
            .collect();
        for p in made {
            builder.append(p);
        }
    }
    // Names from index slack: each its own record, standing for no record of the volume.
    let slack: Vec<u32> = (0..n as u32).filter(|&i| rows.slack[i as usize]).collect();
    let each: Vec<(u32, u32)> = (0..slack.len() as u32).map(|k| (k, k + 1)).collect();
    builder.add_from_index_slack(&batch_of(&rows, &slack, &each, no_parent));
    builder.finish().0
}

/// The record batch of the records whose rows are `groups` (runs of `order`).
fn batch_of(rows: &Rows, order: &[u32], groups: &[(u32, u32)], no_parent: u64) -> RecordBatch {
    let mut b = RecordBatch::with_capacity(groups.len());
    for &(s, e) in groups {
        let members = &order[s as usize..e as usize];
        let Some(&head) = members
            .iter()
            .find(|&&i| rows.kind[i as usize] != RowKind::Stream)
        else {
            // Streams without their file: nothing to hang them on.
            continue;
        };
        let head = head as usize;
        let names_at = b.names.len() as u32;
        let streams_at = b.streams.len() as u32;
        let mut link_target = None;
        for &i in members {
            let i = i as usize;
            let text = rows.text(rows.name[i]);
            if rows.kind[i] == RowKind::Stream {
                // `file:stream`: the stream's own name after the file's (NTFS names have no `:`), each stream once
                // however many links show it.
                let own = text
                    .iter()
                    .position(|&c| c == b':')
                    .map_or(text, |p| &text[p + 1..]);
                let seen = b.streams[streams_at as usize..]
                    .iter()
                    .any(|s| b.text(&s.text) == own);
                if !seen {
                    let start = b.text.len() as u32;
                    b.text.extend_from_slice(own);
                    b.streams.push(StreamInfo {
                        sizes: StreamSizes {
                            size: rows.size[i],
                            allocated: rows.allocated[i],
                            attr_flags: stream_attr_flags(rows.mask[i], rows.mask[head]),
                            attr_id: 0,
                        },
                        text: start..b.text.len() as u32,
                        tail: false,
                    });
                }
                continue;
            }
            let start = b.text.len() as u32;
            b.text.extend_from_slice(text);
            let t = &rows.times;
            b.names.push(NameInfo {
                parent: rows.parent[i].unwrap_or(no_parent),
                namespace: WIN32,
                attr_id: 0,
                created: t[4][i],
                modified: t[5][i],
                mft_changed: t[6][i],
                accessed: t[7][i],
                text: start..b.text.len() as u32,
            });
            if link_target.is_none() && rows.link[i].0 != rows.link[i].1 {
                let start = b.text.len() as u32;
                b.text.extend_from_slice(rows.text(rows.link[i]));
                link_target = Some(start..b.text.len() as u32);
            }
        }
        let i = head;
        let dir = rows.kind[i] == RowKind::Folder;
        let t = &rows.times;
        b.records.push(RecordInfo {
            number: rows.record[i],
            sequence: rows.sequence[i],
            header_flags: u16::from(!rows.deleted[i]) | if dir { 2 } else { 0 },
            base: 0,
            std_info: Some(StdInfo {
                created: t[0][i],
                modified: t[1][i],
                mft_changed: t[2][i],
                accessed: t[3][i],
                attributes: rows.mask[i],
            }),
            has_attribute_list: false,
            reparse_tag: rows.reparse[i],
            data: Some(StreamSizes {
                size: if dir { 0 } else { rows.size[i] },
                allocated: rows.allocated[i],
                attr_flags: 0,
                attr_id: 0,
            }),
            other_allocated: 0,
            index_root: None,
            names: names_at..b.names.len() as u32,
            streams: streams_at..b.streams.len() as u32,
            posix: rows.posix[i],
            link_target,
            // A dataset has no exclusive column: `uffs du` over one shows none.
            exclusive: None,
        });
        b.counts.parsed += 1;
    }
    b
}
