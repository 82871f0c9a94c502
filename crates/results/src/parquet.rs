//! Entries as Apache Parquet, with one fixed schema for every source and uffs version (docs/parquet.md): the
//! volume's name, serial and source on every row (so the files of many machines union), then the columns of
//! [`PARQUET_COLUMNS`] typed by their [`ColumnType`] (times as TIMESTAMP(NANOS) holding UTC, integers as UINT64),
//! and the Windows attribute bits as `attributes_mask`. zstd compression, row groups of [`ROW_GROUP_ROWS`].
//!
//! A FILETIME outside the range of a signed 64-bit count of nanoseconds since 1970 (before
//! 1677-09-21T00:12:43.145224192Z or after 2262-04-11T23:47:16.854775807Z; 0, "no time", is 1601-01-01) is
//! written as null.
//!
//! The writer encodes into memory; [`ParquetWriter::take_bytes`] hands over what is complete so far, so a
//! printer streams it to a file, a pipe or the daemon's client as it goes.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, StringBuilder, TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use uffs_index::timeline::EntryTimeline;
use uffs_index::{flags, EntryId, Index};

use crate::column::{Column, ColumnType};
use crate::export::{attributes, cell, Cell};
use crate::Result;

/// The entry columns of the Parquet schema, in order, after `volume`, `volume_serial` and `source`; then
/// `attributes_mask`.
pub const PARQUET_COLUMNS: [Column; 20] = [
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
];

/// Rows per row group: large enough for fast scans, small enough that a reader spreads a volume over cores.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;
/// Rows per record batch handed to the encoder.
const BATCH_ROWS: usize = 32 * 1024;
/// zstd's level: its fast end, as the files are written as fast as CSV.
const ZSTD_LEVEL: i32 = 1;

/// FILETIME ticks (100 ns since 1601) from 1601 to 1970.
const UNIX_EPOCH_TICKS: i128 = 116_444_736_000_000_000;

/// A FILETIME as nanoseconds since 1970; `None` outside the range of an `i64`.
pub fn filetime_to_unix_nanos(ft: u64) -> Option<i64> {
    i64::try_from((i128::from(ft) - UNIX_EPOCH_TICKS) * 100).ok()
}

/// The schema (documented in docs/parquet.md).
pub fn schema() -> SchemaRef {
    let mut fields = vec![
        Field::new("volume", DataType::Utf8, false),
        Field::new("volume_serial", DataType::UInt64, false),
        Field::new("source", DataType::Utf8, false),
    ];
    for c in PARQUET_COLUMNS {
        let (ty, nullable) = match c.ty() {
            ColumnType::Text => (DataType::Utf8, false),
            ColumnType::Integer => (DataType::UInt64, c == Column::ParentRecord),
            // Without a time zone (isAdjustedToUTC false) though the values are UTC: DuckDB reads a UTC-adjusted
            // timestamp as microseconds, dropping NTFS's 100 ns; this way it keeps TIMESTAMP_NS.
            ColumnType::Time => (DataType::Timestamp(TimeUnit::Nanosecond, None), true),
            ColumnType::Bool => (DataType::Boolean, false),
        };
        fields.push(Field::new(c.name(), ty, nullable));
    }
    fields.push(Field::new("attributes_mask", DataType::UInt32, false));
    Arc::new(Schema::new(fields))
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
    Int(UInt64Builder),
    Time(TimestampNanosecondBuilder),
    Bool(BooleanBuilder),
}

/// Writes entries as Parquet into memory.
pub struct ParquetWriter {
    writer: ArrowWriter<Vec<u8>>,
    schema: SchemaRef,
    volume: StringBuilder,
    serial: UInt64Builder,
    source: StringBuilder,
    columns: Vec<Builder>,
    mask: UInt32Builder,
    rows: usize,
    letters: Vec<u8>,
}

impl ParquetWriter {
    pub fn new() -> Result<ParquetWriter> {
        let schema = schema();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("uffs {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer =
            ArrowWriter::try_new(Vec::with_capacity(1 << 20), schema.clone(), Some(props))?;
        let columns = PARQUET_COLUMNS
            .iter()
            .map(|c| match c.ty() {
                ColumnType::Text => Builder::Text(StringBuilder::new()),
                ColumnType::Integer => Builder::Int(UInt64Builder::new()),
                ColumnType::Time => Builder::Time(TimestampNanosecondBuilder::new()),
                ColumnType::Bool => Builder::Bool(BooleanBuilder::new()),
            })
            .collect();
        Ok(ParquetWriter {
            writer,
            schema,
            volume: StringBuilder::new(),
            serial: UInt64Builder::new(),
            source: StringBuilder::new(),
            columns,
            mask: UInt32Builder::new(),
            rows: 0,
            letters: Vec::with_capacity(16),
        })
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
        self.volume.append_value(&vol.name);
        self.serial.append_value(vol.serial);
        self.source.append_value(&vol.source);
        for (b, &c) in self.columns.iter_mut().zip(PARQUET_COLUMNS.iter()) {
            match (b, cell(idx, id, path, tl, c)) {
                (Builder::Text(b), Cell::Text(s)) => b.append_value(String::from_utf8_lossy(s)),
                (Builder::Text(b), Cell::Letters(f)) => {
                    self.letters.clear();
                    attributes(f, &mut self.letters);
                    b.append_value(String::from_utf8_lossy(&self.letters));
                }
                (Builder::Int(b), Cell::Int(n)) => b.append_option(n),
                (Builder::Time(b), Cell::Time(t)) => {
                    b.append_option(t.and_then(filetime_to_unix_nanos))
                }
                (Builder::Bool(b), Cell::Bool(v)) => b.append_value(v),
                // A cell whose kind is not its column's type: a bug, caught by the tests.
                (Builder::Text(b), _) => b.append_value(""),
                (Builder::Int(b), _) => b.append_null(),
                (Builder::Time(b), _) => b.append_null(),
                (Builder::Bool(b), _) => b.append_value(false),
            }
        }
        self.mask.append_value(idx.flags(id) & flags::WINDOWS_MASK);
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(self.volume.finish()),
            Arc::new(self.serial.finish()),
            Arc::new(self.source.finish()),
        ];
        for b in &mut self.columns {
            arrays.push(match b {
                Builder::Text(b) => Arc::new(b.finish()),
                Builder::Int(b) => Arc::new(b.finish()),
                Builder::Time(b) => Arc::new(b.finish()),
                Builder::Bool(b) => Arc::new(b.finish()),
            });
        }
        arrays.push(Arc::new(self.mask.finish()));
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)?;
        self.writer.write(&batch)?;
        self.rows = 0;
        Ok(())
    }

    /// The bytes encoded so far that have not been taken (the file's start, then whole row groups).
    pub fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.inner_mut())
    }

    /// Writes the last rows and the footer; returns the bytes not taken yet.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush_batch()?;
        Ok(self.writer.into_inner()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetimes_outside_nanoseconds_are_none() {
        assert_eq!(filetime_to_unix_nanos(116_444_736_000_000_000), Some(0));
        assert_eq!(filetime_to_unix_nanos(116_444_736_000_000_001), Some(100));
        // 0 ("no time") is 1601, before 1677.
        assert_eq!(filetime_to_unix_nanos(0), None);
        assert_eq!(filetime_to_unix_nanos(u64::MAX), None);
        // 2262-04-11T23:47:16.8547758Z is the last 100 ns tick that fits.
        let last = 116_444_736_000_000_000 + (i64::MAX / 100) as u64;
        assert_eq!(filetime_to_unix_nanos(last), Some(i64::MAX / 100 * 100));
        assert_eq!(filetime_to_unix_nanos(last + 1), None);
        assert_eq!(schema().fields().len(), 24);
    }
}
