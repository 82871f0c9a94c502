//! Parsed MFT records as the reader hands them to the builder: one batch per chunk of consecutive records,
//! columns in plain vectors, names and stream names decoded to UTF-8 in one text buffer per batch.

use std::ops::Range;

/// `$STANDARD_INFORMATION` times (FILETIME) and Windows attribute bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StdInfo {
    pub created: u64,
    pub modified: u64,
    pub mft_changed: u64,
    pub accessed: u64,
    pub attributes: u32,
}

/// Everything the index needs from one file record (base or extension).
#[derive(Debug, Clone, Default)]
pub struct RecordInfo {
    pub number: u64,
    pub sequence: u16,
    /// The record header flags (in use, directory, …).
    pub header_flags: u16,
    /// For an extension record: the base record's reference (record number | sequence << 48); 0 for a base record.
    pub base: u64,
    /// `$STANDARD_INFORMATION`, when the record has one (base records do).
    pub std_info: Option<StdInfo>,
    /// The record has an `$ATTRIBUTE_LIST`: some of its attributes may live in extension records.
    pub has_attribute_list: bool,
    pub reparse_tag: u32,
    /// Sizes of the unnamed `$DATA` stream when this record holds its first extent.
    pub data: Option<StreamSizes>,
    /// Bytes of clusters held by this record's non-resident attributes that no stream accounts for: a folder's
    /// `$INDEX_ALLOCATION` and `$BITMAP`, a non-resident `$ATTRIBUTE_LIST`, `$EA`, `$REPARSE_POINT`,
    /// `$LOGGED_UTILITY_STREAM`, and the later extents of the unnamed `$DATA`. They count in the file's (or
    /// folder's) own entry, beside its unnamed data.
    pub other_allocated: u64,
    /// The folder's `$I30` `$INDEX_ROOT`, when this record holds it (for timelines, which name it).
    pub index_root: Option<IndexRoot>,
    pub names: Range<u32>,
    pub streams: Range<u32>,
    /// Owner and permissions, on file systems that keep them (ext; never NTFS).
    pub posix: Option<crate::posix::Posix>,
    /// A symbolic link's target (ext), UTF-8, in the batch's text.
    pub link_target: Option<Range<u32>>,
    /// The bytes of its data no other file or snapshot shares (Btrfs, XFS with reflink; see [`crate::Index::exclusive`]).
    pub exclusive: Option<u64>,
}

impl RecordInfo {
    pub fn in_use(&self) -> bool {
        self.header_flags & 1 != 0
    }
    pub fn is_directory(&self) -> bool {
        self.header_flags & 2 != 0
    }
}

/// Logical and allocated size of a data stream, its attribute header flags (compressed, encrypted, sparse) and
/// the attribute's id in its record (the stream's first extent's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamSizes {
    pub size: u64,
    pub allocated: u64,
    pub attr_flags: u16,
    pub attr_id: u16,
}

/// A folder's `$I30` `$INDEX_ROOT` attribute: its id and the length of its value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexRoot {
    pub attr_id: u16,
    pub size: u32,
}

/// One `$FILE_NAME` of a record.
#[derive(Debug, Clone, Default)]
pub struct NameInfo {
    /// Parent directory reference (record number | sequence << 48).
    pub parent: u64,
    pub namespace: u8,
    /// The `$FILE_NAME` attribute's id in its record.
    pub attr_id: u16,
    /// Times of the `$FILE_NAME` attribute (FILETIME): each name of a file keeps its own, which timelines show
    /// beside the `$STANDARD_INFORMATION` times (and which stand in for them when a record has none).
    pub created: u64,
    pub modified: u64,
    pub mft_changed: u64,
    pub accessed: u64,
    pub text: Range<u32>,
}

/// One named `$DATA` stream (alternate data stream) of a record.
#[derive(Debug, Clone)]
pub struct StreamInfo {
    pub sizes: StreamSizes,
    pub text: Range<u32>,
    /// A later extent of the stream (in an extension record): only `sizes.allocated` means anything, and it is
    /// added to the stream of the same name when the file's records are merged.
    pub tail: bool,
}

/// Counts of records that were read but could not be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Records parsed (used or not).
    pub parsed: u64,
    /// Slots with no `FILE` signature (never used, or zeroed).
    pub empty: u64,
    /// Records that failed the update-sequence check (torn writes) or whose header is unusable.
    pub corrupt: u64,
    /// Records whose attributes stopped parsing part-way; what parsed before the damage is kept.
    pub damaged: u64,
}

impl std::ops::AddAssign for RecordCounts {
    fn add_assign(&mut self, o: RecordCounts) {
        self.parsed += o.parsed;
        self.empty += o.empty;
        self.corrupt += o.corrupt;
        self.damaged += o.damaged;
    }
}

/// A chunk of parsed records, in ascending record number order.
#[derive(Debug, Clone, Default)]
pub struct RecordBatch {
    pub records: Vec<RecordInfo>,
    pub names: Vec<NameInfo>,
    pub streams: Vec<StreamInfo>,
    pub text: Vec<u8>,
    pub counts: RecordCounts,
}

impl RecordBatch {
    /// An empty batch sized for `records` records with typical names, so filling it does not reallocate.
    pub fn with_capacity(records: usize) -> RecordBatch {
        RecordBatch {
            records: Vec::with_capacity(records),
            names: Vec::with_capacity(records + records / 4),
            streams: Vec::new(),
            text: Vec::with_capacity(records * 24),
            counts: RecordCounts::default(),
        }
    }

    pub fn text(&self, r: &Range<u32>) -> &[u8] {
        &self.text[r.start as usize..r.end as usize]
    }
}
