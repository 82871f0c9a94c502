//! Entries as Apache Parquet, with one versioned schema for every source (docs/parquet.md; version
//! [`SCHEMA_VERSION`], in the footer's key-value metadata under [`SCHEMA_VERSION_KEY`]): the volume's name, serial
//! and source on every row (so the files of many machines union), then the columns of [`PARQUET_COLUMNS`] typed by
//! their [`ColumnType`], the Windows attribute bits as `attributes_mask`, and each time's raw FILETIME.
//!
//! Types are the ones every engine reads with its default settings (Spark 4 refuses nanosecond timestamps and
//! reads unsigned 64-bit integers as decimals): times as TIMESTAMP(MICROS, isAdjustedToUTC=true), every integer
//! signed (a 64-bit value past `i64::MAX`, as a forged size or a random serial, keeps its bits and reads
//! negative). Microseconds drop NTFS's last digit (100 ns), so each time's FILETIME is kept whole beside it in an
//! INT64 column `<time>_filetime`; a time the volume does not keep (FILETIME 0) is null in both. zstd
//! compression, row groups of [`ROW_GROUP_ROWS`] rows.
//!
//! The writer holds a row group's rows, then encodes its columns in parallel into memory; [`ParquetWriter::drain_into`]
//! hands over what is complete so far, so a
//! printer streams it to a file, a pipe or the daemon's client as it goes.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use uffs_index::timeline::EntryTimeline;
use uffs_index::{flags, EntryId, Index};

use crate::column::{Column, ColumnType};
use crate::export::{attributes, cell, Cell};
use crate::Result;

/// The schema's version, written in every file's key-value metadata under [`SCHEMA_VERSION_KEY`]. Version 1
/// (uffs before 2026-11-28, no key) had nanosecond timestamps without a time zone and unsigned integers; version
/// 2 (until 2026-12-03) had the volume's prefix in `path` (`@2:/Users/...`, `C:\Windows\...`); docs/parquet.md
/// says what changed.
pub const SCHEMA_VERSION: u32 = 3;
/// The key-value metadata key of [`SCHEMA_VERSION`].
pub const SCHEMA_VERSION_KEY: &str = "uffs.schema_version";

/// The entry columns of the Parquet schema, in order, after `volume`, `volume_serial` and `source`, with
/// `attributes_mask` after the first [`MASK_AT`] and the raw FILETIME of each time column after them all.
pub const PARQUET_COLUMNS: [Column; 24] = [
    Column::Path,
    Column::Name,
    Column::Ext,
    Column::Kind,
    Column::Size,
    Column::Allocated,
    Column::Created,
    Column::Modified,
    Column::MftChanged,
    Column::Accessed,
    Column::Attributes,
    Column::Record,
    Column::Sequence,
    Column::ParentRecord,
    Column::Deleted,
    Column::ReparseTag,
    Column::FnCreated,
    Column::FnModified,
    Column::FnMftChanged,
    Column::FnAccessed,
    Column::Mode,
    Column::Uid,
    Column::Gid,
    Column::LinkTarget,
];

/// How many of [`PARQUET_COLUMNS`] come before `attributes_mask`.
pub const MASK_AT: usize = 20;

/// Rows per row group: large enough for fast scans, small enough that a reader spreads a volume over cores.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;
/// The columns whose values repeat, dictionary-encoded.
const DICTIONARY_COLUMNS: [&str; 10] = [
    "volume",
    "source",
    "ext",
    "kind",
    "attributes",
    "reparse_tag",
    "attributes_mask",
    "mode",
    "uid",
    "gid",
];

/// Rows per record batch handed to the encoder.
const BATCH_ROWS: usize = 32 * 1024;
/// zstd's level: its fast end, as the files are written as fast as CSV.
const ZSTD_LEVEL: i32 = 1;

/// FILETIME ticks (100 ns since 1601) from 1601 to 1970.
const UNIX_EPOCH_TICKS: i128 = uffs_index::time::UNIX_EPOCH as i128;

/// A FILETIME as microseconds since 1970, rounded down (toward the past, as a clock shows it): every FILETIME
/// fits. (The writers never hand it 0, a time not kept: that is null.)
pub fn filetime_to_unix_micros(ft: u64) -> i64 {
    // |i128| of any u64 FILETIME over 10 is below 2^61.
    ((i128::from(ft) - UNIX_EPOCH_TICKS).div_euclid(10)) as i64
}

/// The name of the column holding time column `c`'s raw FILETIME.
pub fn filetime_column(c: Column) -> String {
    format!("{}_filetime", c.name())
}

/// What the files hold beside the entries' own columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A file of its own: every row names its volume in the `volume` column.
    File,
    /// A file of a dataset's `volume=NAME` folder: the folder names the volume, so the files leave the `volume`
    /// column out (an engine would otherwise see it twice).
    Dataset,
}

/// The Arrow type and nullability of column `c`.
fn arrow_type(c: Column) -> (DataType, bool) {
    match c.ty() {
        ColumnType::Text => (DataType::Utf8, false),
        ColumnType::Integer => (
            DataType::Int64,
            matches!(c, Column::ParentRecord | Column::Uid | Column::Gid),
        ),
        ColumnType::Time => (time_type(), true),
        ColumnType::Bool => (DataType::Boolean, false),
    }
}

/// TIMESTAMP(MICROS, isAdjustedToUTC=true).
fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// The schema (documented in docs/parquet.md).
pub fn schema(layout: Layout) -> SchemaRef {
    let mut fields = Vec::with_capacity(40);
    if layout == Layout::File {
        fields.push(Field::new("volume", DataType::Utf8, false));
    }
    fields.push(Field::new("volume_serial", DataType::Int64, false));
    fields.push(Field::new("source", DataType::Utf8, false));
    for (i, c) in PARQUET_COLUMNS.into_iter().enumerate() {
        if i == MASK_AT {
            fields.push(Field::new("attributes_mask", DataType::Int32, false));
        }
        let (ty, nullable) = arrow_type(c);
        fields.push(Field::new(c.name(), ty, nullable));
    }
    for c in PARQUET_COLUMNS {
        if c.ty() == ColumnType::Time {
            fields.push(Field::new(filetime_column(c), DataType::Int64, true));
        }
    }
    // Added after version 2's first columns, at the end as a version allows.
    fields.push(Field::new(
        Column::FromIndexSlack.name(),
        DataType::Boolean,
        false,
    ));
    // Added in version 3.
    fields.push(Field::new(Column::Alias.name(), DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// The writer properties every uffs Parquet file shares: zstd, row groups, who wrote it, the schema version.
fn properties() -> Result<WriterPropertiesBuilder> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("uffs {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            SCHEMA_VERSION_KEY.to_string(),
            SCHEMA_VERSION.to_string(),
        )])))
}

/// What the `path` column starts with for a volume whose printed paths start with `prefix`: nothing for a volume
/// (`C:`, `@2:`, `@vss1:`, or none), whose name is the `volume` column's, so that every volume's paths have one
/// form, `/`-separated from its root (`path LIKE '/Users/%'` finds them on every partition); a mounted folder's
/// path (`/home/ana`), whose entries are real paths.
pub fn path_prefix(prefix: &str) -> &str {
    if prefix.ends_with(':') {
        ""
    } else {
        prefix
    }
}

/// What every row of one volume says about it.
#[derive(Debug, Clone)]
pub struct VolumeInfo {
    /// The name its paths carry: a daemon's volume name (`C`, `backup`), `@2` for partition 2 of a disk, else
    /// empty.
    pub name: String,
    pub serial: u64,
    /// The source as given when it was indexed.
    pub source: String,
}

impl VolumeInfo {
    /// The volume of `idx`, whose paths start with `prefix` (`C:`, `@2:`, or nothing).
    pub fn of(idx: &Index, prefix: &str) -> VolumeInfo {
        VolumeInfo {
            name: prefix.strip_suffix(':').unwrap_or(prefix).to_string(),
            serial: idx.meta.serial,
            source: idx.meta.source.clone(),
        }
    }
}

enum Builder {
    Text(StringBuilder),
    Int(Int64Builder),
    /// A time, and its raw FILETIME.
    Time(TimestampMicrosecondBuilder, Int64Builder),
    Bool(BooleanBuilder),
}

/// Rows being gathered into a record batch (one per formatting thread).
pub struct Rows {
    schema: SchemaRef,
    /// `None` in a dataset's layout.
    volume: Option<StringBuilder>,
    serial: Int64Builder,
    source: StringBuilder,
    columns: Vec<Builder>,
    mask: Int32Builder,
    from_index_slack: BooleanBuilder,
    alias: StringBuilder,
    rows: usize,
    letters: Vec<u8>,
}

/// Appends bytes that are UTF-8 (as names and paths are) without the cost of a lossy conversion.
fn append_text(b: &mut StringBuilder, s: &[u8]) {
    match std::str::from_utf8(s) {
        Ok(s) => b.append_value(s),
        Err(_) => b.append_value(String::from_utf8_lossy(s)),
    }
}

impl Rows {
    pub fn new(layout: Layout) -> Rows {
        let columns = PARQUET_COLUMNS
            .iter()
            .map(|c| match c.ty() {
                ColumnType::Text => Builder::Text(StringBuilder::new()),
                ColumnType::Integer => Builder::Int(Int64Builder::new()),
                ColumnType::Time => Builder::Time(
                    TimestampMicrosecondBuilder::new().with_timezone("UTC"),
                    Int64Builder::new(),
                ),
                ColumnType::Bool => Builder::Bool(BooleanBuilder::new()),
            })
            .collect();
        Rows {
            schema: schema(layout),
            volume: (layout == Layout::File).then(StringBuilder::new),
            serial: Int64Builder::new(),
            source: StringBuilder::new(),
            columns,
            mask: Int32Builder::new(),
            from_index_slack: BooleanBuilder::new(),
            alias: StringBuilder::new(),
            rows: 0,
            letters: Vec::with_capacity(16),
        }
    }

    /// Rows gathered since the last batch.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Adds the row of entry `id` of `idx` (on volume `vol`), whose full path is `path` and timeline `tl`.
    pub fn push(
        &mut self,
        vol: &VolumeInfo,
        idx: &Index,
        id: EntryId,
        path: &[u8],
        tl: Option<EntryTimeline>,
    ) {
        if let Some(v) = &mut self.volume {
            v.append_value(&vol.name);
        }
        // Signed columns keep an unsigned value's bits (see the module's docs).
        self.serial.append_value(vol.serial as i64);
        self.source.append_value(&vol.source);
        for (b, &c) in self.columns.iter_mut().zip(PARQUET_COLUMNS.iter()) {
            // Record and sequence are never null here: a name from index slack whose record is unknown keeps
            // `uffs_index::NO_RECORD` (CSV leaves it empty).
            let value = match c {
                Column::Record => Cell::Int(Some(u64::from(idx.record(id)))),
                Column::Sequence => Cell::Int(Some(u64::from(idx.sequence(id)))),
                _ => cell(idx, id, path, tl, c),
            };
            match (b, value) {
                (Builder::Text(b), Cell::Text(s)) => append_text(b, &s),
                (Builder::Text(b), Cell::Letters(f)) => {
                    self.letters.clear();
                    attributes(f, &mut self.letters);
                    append_text(b, &self.letters);
                }
                (Builder::Int(b), Cell::Int(n)) => b.append_option(n.map(|n| n as i64)),
                (Builder::Time(b, raw), Cell::Time(t)) => {
                    b.append_option(t.map(filetime_to_unix_micros));
                    raw.append_option(t.map(|t| t as i64));
                }
                (Builder::Bool(b), Cell::Bool(v)) => b.append_value(v),
                // A cell whose kind is not its column's type: a bug, caught by the tests.
                (Builder::Text(b), _) => b.append_value(""),
                (Builder::Int(b), _) => b.append_null(),
                (Builder::Time(b, raw), _) => {
                    b.append_null();
                    raw.append_null();
                }
                (Builder::Bool(b), _) => b.append_value(false),
            }
        }
        self.mask
            .append_value((idx.flags(id) & flags::WINDOWS_MASK) as i32);
        self.from_index_slack
            .append_value(idx.is_from_index_slack(id));
        append_text(&mut self.alias, idx.alias(id).unwrap_or_default());
        self.rows += 1;
    }

    /// The rows gathered as a record batch; the builders start again empty.
    pub fn batch(&mut self) -> Result<RecordBatch> {
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        if let Some(v) = &mut self.volume {
            arrays.push(Arc::new(v.finish()));
        }
        arrays.push(Arc::new(self.serial.finish()));
        arrays.push(Arc::new(self.source.finish()));
        let mut raw: Vec<ArrayRef> = Vec::new();
        for (i, b) in self.columns.iter_mut().enumerate() {
            if i == MASK_AT {
                arrays.push(Arc::new(self.mask.finish()));
            }
            arrays.push(match b {
                Builder::Text(b) => Arc::new(b.finish()),
                Builder::Int(b) => Arc::new(b.finish()),
                Builder::Time(b, r) => {
                    raw.push(Arc::new(r.finish()));
                    Arc::new(b.finish())
                }
                Builder::Bool(b) => Arc::new(b.finish()),
            });
        }
        arrays.extend(raw);
        arrays.push(Arc::new(self.from_index_slack.finish()));
        arrays.push(Arc::new(self.alias.finish()));
        self.rows = 0;
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// Writes entries as Parquet into memory. Rows are held until a row group is full; its columns are then encoded
/// and compressed in parallel (rayon), one column per task.
pub struct ParquetWriter {
    file: SerializedFileWriter<Vec<u8>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Batches of the row group being gathered, and their rows.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    row_groups: usize,
    rows: Rows,
    layout: Layout,
}

impl ParquetWriter {
    pub fn new(layout: Layout) -> Result<ParquetWriter> {
        let mut props = properties()?
            // A dictionary only where values repeat: for paths, names, times and sizes (nearly all different) it
            // is most of the writing time and saves nothing.
            .set_dictionary_enabled(false);
        for c in DICTIONARY_COLUMNS {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c), true);
        }
        // Text columns keep no min and max: comparing every string is a good part of the writing time, and a
        // volume's row groups all span much the same range of paths, names or extensions anyway.
        let text = PARQUET_COLUMNS
            .iter()
            .filter(|c| c.ty() == ColumnType::Text)
            .map(|c| c.name());
        for c in text.chain(["volume", "source"]) {
            props =
                props.set_column_statistics_enabled(ColumnPath::from(c), EnabledStatistics::None);
        }
        let schema = schema(layout);
        // Made through ArrowWriter, so the file carries the Arrow schema as ArrowWriter's files do.
        let (file, factory) = ArrowWriter::try_new(
            Vec::with_capacity(1 << 20),
            schema.clone(),
            Some(props.build()),
        )?
        .into_serialized_writer()?;
        Ok(ParquetWriter {
            file,
            factory,
            schema,
            pending: Vec::new(),
            pending_rows: 0,
            row_groups: 0,
            rows: Rows::new(layout),
            layout,
        })
    }

    /// What the file holds beside the entries' columns.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Adds the row of entry `id` of `idx` (on volume `vol`), whose full path is `path` and timeline `tl`.
    pub fn push(
        &mut self,
        vol: &VolumeInfo,
        idx: &Index,
        id: EntryId,
        path: &[u8],
        tl: Option<EntryTimeline>,
    ) -> Result<()> {
        self.rows.push(vol, idx, id, path, tl);
        if self.rows.len() >= BATCH_ROWS {
            self.flush_rows()?;
        }
        Ok(())
    }

    /// Adds a batch of rows gathered elsewhere (by [`Rows`]), after the rows pushed before.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.flush_rows()?;
        self.add(batch.clone())
    }

    fn flush_rows(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let batch = self.rows.batch()?;
        self.add(batch)
    }

    /// Holds `batch`, encoding each row group once it has [`ROW_GROUP_ROWS`] rows.
    fn add(&mut self, mut batch: RecordBatch) -> Result<()> {
        while batch.num_rows() > 0 {
            let room = ROW_GROUP_ROWS - self.pending_rows;
            let take = room.min(batch.num_rows());
            self.pending.push(batch.slice(0, take));
            self.pending_rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.pending_rows == ROW_GROUP_ROWS {
                self.flush_row_group()?;
            }
        }
        Ok(())
    }

    /// Encodes the held rows as one row group, its columns in parallel.
    fn flush_row_group(&mut self) -> Result<()> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        use rayon::prelude::*;
        let writers = self.factory.create_column_writers(self.row_groups)?;
        let (schema, pending) = (&self.schema, &self.pending);
        // Every column is flat: one leaf per field, in the fields' order.
        let chunks: Vec<Result<ArrowColumnChunk>> = writers
            .into_par_iter()
            .enumerate()
            .map(|(i, mut w)| {
                for b in pending {
                    for leaf in compute_leaves(schema.field(i), b.column(i))? {
                        w.write(&leaf)?;
                    }
                }
                Ok(w.close()?)
            })
            .collect();
        let mut rg = self.file.next_row_group()?;
        for c in chunks {
            c?.append_to_row_group(&mut rg)?;
        }
        rg.close()?;
        self.row_groups += 1;
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }

    /// Writes the bytes encoded so far and not written yet (the file's start, then whole row groups) to `out`;
    /// the buffer keeps its memory for the next row group.
    pub fn drain_into(&mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let buf = self.file.inner_mut();
        let r = out.write_all(buf);
        buf.clear();
        r
    }

    /// Writes the last rows and the footer; returns the bytes not taken yet.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush_rows()?;
        self.flush_row_group()?;
        Ok(self.file.into_inner()?)
    }
}

/// A whole Parquet file of rows that are not entries (the changes of `uffs diff`, hashes): one column per name,
/// typed by its [`ColumnType`] as the entry schema types them (text as UTF-8, integers as INT64, times as
/// TIMESTAMP(MICROS) in UTC followed, after all the columns, by their raw FILETIMEs as `<name>_filetime`),
/// every column nullable: an unknown value, and empty text, are null.
pub fn values_file(
    names: &[&str],
    types: &[ColumnType],
    rows: &[Vec<crate::Value>],
) -> Result<Vec<u8>> {
    use crate::Value;
    let mut fields: Vec<Field> = Vec::with_capacity(names.len());
    let mut raw_fields = Vec::new();
    for (n, t) in names.iter().zip(types) {
        let ty = match t {
            ColumnType::Text => DataType::Utf8,
            ColumnType::Integer => DataType::Int64,
            ColumnType::Time => {
                raw_fields.push(Field::new(format!("{n}_filetime"), DataType::Int64, true));
                time_type()
            }
            ColumnType::Bool => DataType::Boolean,
        };
        fields.push(Field::new(*n, ty, true));
    }
    fields.extend(raw_fields);
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let mut raw_columns: Vec<ArrayRef> = Vec::new();
    for (i, t) in types.iter().enumerate() {
        let cell = |r: &Vec<Value>| r.get(i).cloned();
        columns.push(match t {
            ColumnType::Text => {
                let mut b = StringBuilder::new();
                for r in rows {
                    match cell(r) {
                        Some(Value::Text(s)) if !s.is_empty() => b.append_value(s),
                        _ => b.append_null(),
                    }
                }
                Arc::new(b.finish())
            }
            ColumnType::Integer => {
                let mut b = Int64Builder::new();
                for r in rows {
                    match cell(r) {
                        Some(Value::Int(Some(n))) => b.append_value(n as i64),
                        _ => b.append_null(),
                    }
                }
                Arc::new(b.finish())
            }
            ColumnType::Time => {
                let mut b = TimestampMicrosecondBuilder::new().with_timezone("UTC");
                let mut raw = Int64Builder::new();
                for r in rows {
                    match cell(r) {
                        Some(Value::Time(Some(t))) => {
                            b.append_value(filetime_to_unix_micros(t));
                            raw.append_value(t as i64);
                        }
                        _ => {
                            b.append_null();
                            raw.append_null();
                        }
                    }
                }
                raw_columns.push(Arc::new(raw.finish()));
                Arc::new(b.finish())
            }
            ColumnType::Bool => {
                let mut b = BooleanBuilder::new();
                for r in rows {
                    match cell(r) {
                        Some(Value::Bool(v)) => b.append_value(v),
                        _ => b.append_null(),
                    }
                }
                Arc::new(b.finish())
            }
        });
    }
    columns.extend(raw_columns);
    let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(properties()?.build()))?;
    let batch = RecordBatch::try_new(schema, columns)?;
    for start in (0..rows.len()).step_by(BATCH_ROWS) {
        let n = BATCH_ROWS.min(rows.len() - start);
        w.write(&batch.slice(start, n))?;
    }
    Ok(w.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filetime_is_microseconds_rounded_down() {
        assert_eq!(filetime_to_unix_micros(116_444_736_000_000_000), 0);
        assert_eq!(filetime_to_unix_micros(116_444_736_000_000_019), 1);
        // Before 1970, toward the past: 100 ns before the epoch is in the microsecond before it.
        assert_eq!(filetime_to_unix_micros(116_444_735_999_999_999), -1);
        // The first tick after 0 (which is written as null) is in 1601-01-01's first microsecond: 11,644,473,600 s
        // before 1970.
        assert_eq!(filetime_to_unix_micros(1), -11_644_473_600_000_000);
        assert_eq!(
            filetime_to_unix_micros(u64::MAX),
            ((u64::MAX as i128 - UNIX_EPOCH_TICKS) / 10) as i64
        );
        // The files' columns: 3 + 24 + the mask + 8 raw FILETIMEs + from_index_slack + alias; a dataset's leave
        // `volume` out.
        assert_eq!(schema(Layout::File).fields().len(), 38);
        assert_eq!(schema(Layout::Dataset).fields().len(), 37);
        assert_eq!(
            schema(Layout::File).field(38 - 10).name(),
            "created_filetime"
        );
        assert_eq!(schema(Layout::File).field(36).name(), "from_index_slack");
        assert_eq!(schema(Layout::File).field(37).name(), "alias");
    }
}
