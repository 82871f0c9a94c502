//! File contents: a record's data stream located and read, for `uffs cat` and for hashing contents.
//!
//! [`open_stream`] reads a file record (and, through its `$ATTRIBUTE_LIST`, the extension records that hold
//! later pieces of a large runlist) and gives a [`StreamReader`] over one `$DATA` stream, unnamed or named:
//!
//! ```no_run
//! use std::io::Read;
//! // `uffs_source::open("disk.img", None)?.volumes` for any source; an NTFS volume image directly:
//! let device = uffs_mft::device::Device::open(std::path::Path::new("disk.img"))?;
//! let vol = &uffs_mft::Volume::open_ntfs("disk.img", device, None)?;
//! let mut s = uffs_mft::content::open_stream(vol, 120, "")?;
//! println!("{} bytes, compressed: {}", s.info().size, s.info().compressed);
//! let mut head = vec![0u8; 64 << 10];
//! let n = s.read_at(0, &mut head)?;                          // the first 64 KiB
//! let tail_at = s.len().saturating_sub(64 << 10);
//! let m = s.read_at(tail_at, &mut head)?;                    // the last 64 KiB: one seek, no reading between
//! let mut all = Vec::new();
//! s.read_to_end(&mut all)?;                                  // or io::Read (and io::Seek) from the start
//! # let _ = (n, m);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What a stream reads as: resident data as stored; non-resident data through its runs (sparse runs as zeros);
//! compressed streams unit by unit (a unit of 2^n clusters stored in fewer clusters is LZNT1, one with all its
//! clusters is stored as is, one with none is zeros); bytes from the initialized (valid data) size up to the
//! data size as zeros; exactly the data size in all. Reads are positional and as large as the caller's buffer:
//! adjacent runs are merged, so a contiguous file is one device read per buffer (pass a few MiB, see
//! [`READ_SIZE`]); a compressed unit is decoded once and kept for the next read.
//!
//! Hostile records: every size, run and offset is checked when the stream is opened. A run past the end of the
//! volume, pieces of a runlist that overlap, a runlist that does not map the data of a file in use, a compression
//! unit larger than [`MAX_UNIT_BYTES`] or more runs than [`MAX_RUNS`] are a typed [`ContentError`]; attribute
//! lists are read once each (no loops) and bounded ([`MAX_ATTRIBUTE_LIST`], [`MAX_EXTENSION_RECORDS`]). Memory
//! is bounded by the records read, never by a size the volume states. A deleted file's data (record not in use)
//! is read all the same: what its runlist no longer maps (its extension records were freed) reads as zeros, and
//! its clusters may since belong to another file, which [`StreamInfo::in_use`] lets the caller say.

use std::io;

use uffs_fs::Packed;
use uffs_ntfs::attr::{flags as attr_flags, kind, AttributeBody, AttributeList};
use uffs_ntfs::lznt1;
use uffs_ntfs::record::{apply_fixups, Record};
use uffs_ntfs::runlist::{Run, Runlist};
use uffs_ntfs::utf16;

use crate::device::Device;
use crate::volume::Volume;

pub mod many;

/// A good buffer size for reading a stream through: large enough that a contiguous file costs few device reads.
pub const READ_SIZE: usize = 4 << 20;
/// Largest `$ATTRIBUTE_LIST` value read (NTFS itself stops at 256 KiB).
pub const MAX_ATTRIBUTE_LIST: u64 = 1 << 20;
/// Most extension records one file's attributes are looked for in.
pub const MAX_EXTENSION_RECORDS: usize = 1 << 14;
/// Most runs one stream may have (each came from at least two bytes of the records read).
pub const MAX_RUNS: usize = 1 << 23;
/// Largest compression unit decoded (Windows writes 16 clusters of at most 4 KiB: 64 KiB).
pub const MAX_UNIT_BYTES: u64 = 8 << 20;

/// Positional reads of a volume's bytes: a [`Device`], or bytes in memory (tests, fuzzing).
pub trait ReadAt {
    /// Bytes the volume has.
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`; reading past the end is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl ReadAt for Device {
    fn size(&self) -> u64 {
        self.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Device::read_exact_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

/// What a folder's error adds: its named streams, which can be read, or how to list what it holds.
fn folder_streams(streams: &str) -> String {
    if streams.is_empty() || streams == "none" {
        " (to list what it holds: `uffs du FOLDER` or a query `parent:FOLDER`)".into()
    } else {
        format!(" (its named streams can be: {streams})")
    }
}

/// Why a stream cannot be opened or read. Messages name the record.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error("record {record} does not exist: the MFT has {total} records")]
    NoRecord { record: u64, total: u64 },
    #[error("record {record} cannot be read: {cause}")]
    Record {
        record: u64,
        cause: uffs_ntfs::Error,
    },
    #[error("record {record} is an extension record of record {base} (ask for record {base})")]
    Extension { record: u64, base: u64 },
    #[error("record {record} is a folder: it has no data of its own to read{}", folder_streams(.streams))]
    Directory { record: u64, streams: String },
    #[error("record {record} has no {wanted} (its data streams: {streams})")]
    NoStream {
        record: u64,
        wanted: String,
        streams: String,
    },
    #[error("record {record}: {stream} is encrypted (EFS): its clusters hold only ciphertext, which uffs does not decrypt")]
    Encrypted { record: u64, stream: String },
    #[error("record {record}: {why}")]
    Corrupt { record: u64, why: String },
    #[error("record {record}: {why}")]
    Unsupported { record: u64, why: String },
    #[error("record {record}: its data lies past the end of the image, which is truncated: it ends at byte {image}, the volume needs {volume}")]
    Truncated {
        record: u64,
        image: u64,
        volume: u64,
    },
    #[error("record {record}: {stream} is stored on the volume, which a raw $MFT capture does not hold (only data resident in the record is)")]
    NotInSource { record: u64, stream: String },
    #[error("record {record}: byte {offset} of {stream} is not mapped by its runlist")]
    Unmapped {
        record: u64,
        stream: String,
        offset: u64,
    },
    #[error("record {record}: {what}: {cause}")]
    Io {
        record: u64,
        what: String,
        cause: io::Error,
    },
}

impl From<ContentError> for io::Error {
    fn from(e: ContentError) -> io::Error {
        let kind = match &e {
            ContentError::Io { cause, .. } => cause.kind(),
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

pub type Result<T> = std::result::Result<T, ContentError>;

/// What a stream is: sizes, how it is stored, whether its record is in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    pub record: u64,
    /// The record's sequence number (of the file reference).
    pub sequence: u16,
    /// The stream's name; empty for the unnamed (default) stream.
    pub name: String,
    /// The data size: what reading the stream gives.
    pub size: u64,
    /// Bytes up to this size are as written; the rest reads as zeros.
    pub initialized_size: u64,
    /// Bytes the stream takes on the volume: allocated clusters (the compressed size for compressed and sparse
    /// streams), 0 for resident data.
    pub allocated_size: u64,
    pub resident: bool,
    pub compressed: bool,
    pub sparse: bool,
    pub encrypted: bool,
    /// The record is in use. A record not in use is a deleted file: its clusters are free and may have been
    /// given to another file since.
    pub in_use: bool,
    /// The record is a directory's (which may have named streams).
    pub directory: bool,
    /// Bytes from the start that the runlist maps (the data size for a stream whose runlist is whole); less for
    /// a deleted file whose runlist lost the pieces that lived in freed extension records: the rest reads as
    /// zeros.
    pub mapped_size: u64,
    /// Runs of clusters after merging adjacent ones (0 for resident data).
    pub fragments: usize,
}

impl StreamInfo {
    /// `the unnamed stream` or `stream 'NAME'`, for messages.
    pub fn describe(&self) -> String {
        describe(&self.name)
    }
}

fn describe(name: &str) -> String {
    if name.is_empty() {
        "the unnamed data stream".into()
    } else {
        format!("stream '{name}'")
    }
}

/// Where a run of virtual clusters is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Clusters(u64),
    Sparse,
    /// No piece of the runlist maps it.
    Unmapped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    vcn: u64,
    len: u64,
    loc: Loc,
}

impl Extent {
    fn end(&self) -> u64 {
        self.vcn + self.len
    }
}

/// How a stream's bytes are found.
#[derive(Debug)]
enum Body {
    Resident(Vec<u8>),
    NonResident {
        cluster_size: u64,
        /// Sorted by VCN, contiguous from 0, adjacent runs merged; byte offsets fit in u64.
        extents: Vec<Extent>,
        /// Clusters per compression unit, for a compressed stream.
        unit: Option<u64>,
        /// The stretches kept compressed by another file system (Btrfs), sorted and apart: read from these
        /// rather than from the extents.
        packed: Vec<Packed>,
    },
}

/// A stream opened for reading: [`StreamReader::read_at`] anywhere, or `io::Read` and `io::Seek` from a
/// position. Not shared between threads (it keeps the last compression unit it decoded); open one per thread.
#[derive(Debug)]
pub struct StreamReader<B: ReadAt = Device> {
    info: StreamInfo,
    body: Body,
    volume: B,
    pos: u64,
    /// The last compression unit decoded: its number and bytes; or the last compressed piece's (by where its
    /// compressed bytes are).
    unit_cache: Option<(u64, Vec<u8>)>,
    /// Compressed bytes of a unit or piece, kept between them.
    encoded: Vec<u8>,
}

/// One `$DATA` attribute's pieces as found in the records.
#[derive(Debug, Default)]
struct Found {
    /// The attribute's type (`$DATA` for a stream).
    type_code: u32,
    raw_name: Vec<u8>,
    flags: u16,
    resident: Option<Vec<u8>>,
    /// (start VCN, runs) of each non-resident piece.
    pieces: Vec<(u64, Vec<Run>)>,
    /// From the piece at VCN 0: data, initialized, allocated (or compressed) size and the compression unit.
    sizes: Option<(u64, u64, u64, u8)>,
    runs: usize,
}

/// A record's `$DATA` attributes, gathered from it and its extension records.
struct Gathered {
    sequence: u16,
    in_use: bool,
    directory: bool,
    streams: Vec<Found>,
}

/// Opens the data stream `name` (empty: the unnamed stream) of file record `record` of `vol`. A name is matched
/// exactly, else ignoring case when that names a single stream (Windows' stream names ignore case).
pub fn open_stream(vol: &Volume, record: u64, name: &str) -> Result<StreamReader> {
    if let Some(fs) = &vol.fs {
        let (info, body) = neutral_stream(vol, fs, record, name)?;
        return Ok(StreamReader::new(info, body, vol.device.clone()));
    }
    let g = gather(vol, record, &[kind::DATA])?;
    let wanted: Vec<u16> = name.encode_utf16().collect();
    let raw: Vec<u8> = wanted.iter().flat_map(|u| u.to_le_bytes()).collect();
    let exact = g.streams.iter().position(|f| f.raw_name == raw);
    let folded = || {
        let lower = name.to_lowercase();
        let hits: Vec<usize> = (0..g.streams.len())
            .filter(|&i| utf16::decode(&g.streams[i].raw_name).to_lowercase() == lower)
            .collect();
        (hits.len() == 1).then(|| hits[0])
    };
    let Some(i) = exact.or_else(folded) else {
        let streams = list_names(&g.streams);
        if name.is_empty() && g.directory {
            return Err(ContentError::Directory { record, streams });
        }
        return Err(ContentError::NoStream {
            record,
            wanted: if name.is_empty() {
                "unnamed data stream".into()
            } else {
                describe(name)
            },
            streams,
        });
    };
    let span = Span::of(vol);
    let mut g = g;
    let found = g.streams.swap_remove(i);
    let (info, body) = stream_of(record, g.sequence, g.in_use, g.directory, found, span)?;
    if span.volume == 0 && !info.resident && info.size > 0 {
        return Err(ContentError::NotInSource {
            record,
            stream: info.describe(),
        });
    }
    if info.encrypted {
        return Err(ContentError::Encrypted {
            record,
            stream: info.describe(),
        });
    }
    Ok(StreamReader::new(info, body, vol.device.clone()))
}

/// The most bytes of a folder's index blocks' `$BITMAP` read (a bit per block: 8 GiB of 4 KiB blocks).
const MAX_INDEX_BITMAP: u64 = 256 << 10;

/// A folder's `$I30` index as its records give it.
#[derive(Debug)]
pub struct FolderIndex {
    /// The folder record's sequence number, and whether the record is in use.
    pub sequence: u16,
    pub in_use: bool,
    /// The `$INDEX_ROOT` value (empty when the record has none).
    pub root: Vec<u8>,
    /// The index blocks (`$INDEX_ALLOCATION`), when the folder has outgrown its root.
    pub blocks: Option<StreamReader>,
    /// Which blocks are in use (`$BITMAP`, bit n for block n), when the folder has blocks.
    pub bitmap: Option<Vec<u8>>,
}

/// Opens the `$I30` index of folder record `record` of `vol` (an NTFS volume).
pub fn folder_index(vol: &Volume, record: u64) -> Result<FolderIndex> {
    let types = [kind::INDEX_ROOT, kind::INDEX_ALLOCATION, kind::BITMAP];
    let g = gather(vol, record, &types)?;
    let i30: Vec<u8> = "$I30".encode_utf16().flat_map(u16::to_le_bytes).collect();
    let span = Span::of(vol);
    let mut out = FolderIndex {
        sequence: g.sequence,
        in_use: g.in_use,
        root: Vec::new(),
        blocks: None,
        bitmap: None,
    };
    for f in g.streams.into_iter().filter(|f| f.raw_name == i30) {
        let type_code = f.type_code;
        if type_code == kind::INDEX_ROOT {
            out.root = f.resident.unwrap_or_default();
            continue;
        }
        let (info, body) = stream_of(record, g.sequence, g.in_use, g.directory, f, span)?;
        let mut r = StreamReader::new(info, body, vol.device.clone());
        if type_code == kind::INDEX_ALLOCATION {
            out.blocks = Some(r);
        } else {
            let mut v = vec![0u8; r.len().min(MAX_INDEX_BITMAP) as usize];
            r.read_exact_at(0, &mut v)?;
            out.bitmap = Some(v);
        }
    }
    Ok(out)
}

/// Every data stream of file record `record` (encrypted ones included), unnamed first, without opening them.
pub fn streams(vol: &Volume, record: u64) -> Result<Vec<StreamInfo>> {
    if let Some(fs) = &vol.fs {
        return match neutral_stream(vol, fs, record, "") {
            Ok((info, _)) => Ok(vec![info]),
            Err(ContentError::Directory { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        };
    }
    let g = gather(vol, record, &[kind::DATA])?;
    let span = Span::of(vol);
    let mut out = Vec::new();
    for f in g.streams {
        let (info, _) = stream_of(record, g.sequence, g.in_use, g.directory, f, span)?;
        out.push(info);
    }
    out.sort_by(|a, b| (!a.name.is_empty(), &a.name).cmp(&(!b.name.is_empty(), &b.name)));
    Ok(out)
}

/// The data of entry `record` of a volume of another file system (see [`crate::neutral`]). Such file systems
/// have no named streams.
fn neutral_stream(
    vol: &Volume,
    fs: &crate::neutral::Neutral,
    record: u64,
    name: &str,
) -> Result<(StreamInfo, Body)> {
    if fs.filesystem == uffs_index::FileSystem::Folder {
        // A walked folder has no bytes of its own to read a file's data from.
        return Err(ContentError::Unsupported {
            record,
            why: format!(
                "{} is a walked folder: uffs does not read the data of its files yet (open the file itself)",
                vol.name
            ),
        });
    }
    let data = fs.data(&vol.name).map_err(|e| ContentError::Io {
        record,
        what: "reading the volume's folders".into(),
        cause: io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
    })?;
    let Some(f) = data.get(record) else {
        return Err(ContentError::NoRecord {
            record,
            total: data.len() as u64,
        });
    };
    if f.directory {
        return Err(ContentError::Directory {
            record,
            streams: "none".into(),
        });
    }
    if name.is_empty() {
        return neutral_body(record, f);
    }
    // A fork (HFS+'s resource fork) is read as a named stream is.
    let Some(fork) = f.forks.iter().find(|k| k.name.eq_ignore_ascii_case(name)) else {
        let mut streams = "the unnamed stream".to_string();
        for k in &f.forks {
            streams.push_str(&format!(", {}", describe(&k.name)));
        }
        return Err(ContentError::NoStream {
            record,
            wanted: describe(name),
            streams,
        });
    };
    let data = crate::neutral::FileData {
        size: fork.size,
        allocated: fork.allocated,
        runs: fork.runs.clone(),
        inline: fork.inline.clone(),
        packed: Vec::new(),
        forks: Vec::new(),
        deleted: f.deleted,
        directory: false,
    };
    let (mut info, body) = neutral_body(record, &data)?;
    info.name = fork.name.clone();
    Ok((info, body))
}

/// Where the data `f` of entry `record` is: its runs in units of 512 bytes (what every FAT and exFAT run is a
/// multiple of), and its compressed pieces, checked.
fn neutral_body(record: u64, f: &crate::neutral::FileData) -> Result<(StreamInfo, Body)> {
    const UNIT: u64 = 512;
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    let packed = checked_pieces(record, &f.packed)?;
    // Each piece stands in `runs` as a hole of its length: holes beyond those are sparse.
    let holes = f
        .runs
        .iter()
        .filter(|r| r.is_hole())
        .fold(0u64, |n, r| n.saturating_add(r.len));
    let mut info = StreamInfo {
        record,
        sequence: 0,
        name: String::new(),
        size: f.size,
        initialized_size: f.size,
        allocated_size: f.allocated,
        resident: false,
        compressed: !packed.is_empty(),
        sparse: holes > packed.iter().map(|p| p.len).sum(),
        encrypted: false,
        in_use: !f.deleted,
        directory: false,
        mapped_size: 0,
        fragments: f.runs.len(),
    };
    if let Some(data) = &f.inline {
        info.resident = true;
        info.mapped_size = f.size;
        let mut data = data.clone();
        data.resize(f.size.min(data.len() as u64) as usize, 0);
        return Ok((info, Body::Resident(data)));
    }
    let mut extents = Vec::with_capacity(f.runs.len());
    let mut vcn = 0u64;
    for r in &f.runs {
        let past = vcn
            .checked_add(r.len.div_ceil(UNIT))
            .and_then(|end| end.checked_mul(UNIT))
            .is_none()
            || (!r.is_hole() && r.offset.checked_add(r.len).is_none());
        if past {
            return Err(corrupt(format!(
                "a run of {} bytes at file byte {} ends past 2^64",
                r.len,
                vcn * UNIT
            )));
        }
        if r.is_hole() {
            let len = r.len.div_ceil(UNIT);
            match extents.last_mut() {
                Some(Extent {
                    len: l,
                    loc: Loc::Sparse,
                    ..
                }) => *l += len,
                _ => extents.push(Extent {
                    vcn,
                    len,
                    loc: Loc::Sparse,
                }),
            }
            vcn += len;
            continue;
        }
        if r.offset % UNIT != 0 || r.len % UNIT != 0 {
            return Err(corrupt(format!(
                "a run of {} bytes at byte {} is not in 512-byte units",
                r.len, r.offset
            )));
        }
        let len = r.len / UNIT;
        match extents.last_mut() {
            Some(Extent {
                len: l,
                loc: Loc::Clusters(c),
                ..
            }) if *c + *l == r.offset / UNIT => *l += len,
            _ => extents.push(Extent {
                vcn,
                len,
                loc: Loc::Clusters(r.offset / UNIT),
            }),
        }
        vcn += len;
    }
    let mapped = vcn.saturating_mul(UNIT);
    if mapped < f.size {
        // A deleted file's chain may be gone past its first run: what is not mapped reads as nothing.
        extents.push(Extent {
            vcn,
            len: (f.size - mapped).div_ceil(UNIT),
            loc: Loc::Unmapped,
        });
    }
    info.mapped_size = mapped.min(f.size);
    let body = Body::NonResident {
        cluster_size: UNIT,
        extents,
        unit: None,
        packed,
    };
    Ok((info, body))
}

/// `pieces` sorted by file offset, each checked (within u64, within what it decodes to, no larger than uffs
/// decodes, no two overlapping); empty ones left out.
fn checked_pieces(record: u64, pieces: &[Packed]) -> Result<Vec<Packed>> {
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    let mut out: Vec<Packed> = pieces.iter().filter(|p| p.len > 0).copied().collect();
    out.sort_by_key(|p| p.file_offset);
    let max = uffs_fs::packed::MAX_DECODED as u64;
    let mut end = 0u64;
    for p in &out {
        if p.decoded_len > max || p.disk.len > max {
            return Err(ContentError::Unsupported {
                record,
                why: format!(
                    "a compressed piece of {} bytes ({} decoded) is larger than the {max} uffs decodes",
                    p.disk.len, p.decoded_len
                ),
            });
        }
        if p.skip.checked_add(p.len).is_none_or(|e| e > p.decoded_len)
            || p.disk.offset.checked_add(p.disk.len).is_none()
        {
            return Err(corrupt(format!(
                "a compressed piece at byte {} takes {} bytes from {} of the {} it decodes to",
                p.file_offset, p.len, p.skip, p.decoded_len
            )));
        }
        if p.file_offset < end {
            return Err(corrupt(format!(
                "compressed pieces overlap at byte {}",
                p.file_offset
            )));
        }
        end = p.file_offset.checked_add(p.len).ok_or_else(|| {
            corrupt(format!(
                "a compressed piece at byte {} is too long",
                p.file_offset
            ))
        })?;
    }
    Ok(out)
}

fn list_names(streams: &[Found]) -> String {
    if streams.is_empty() {
        return "none".into();
    }
    let mut names: Vec<String> = streams
        .iter()
        .map(|f| match utf16::decode(&f.raw_name) {
            n if n.is_empty() => "the unnamed stream".to_string(),
            n => format!("'{n}'"),
        })
        .collect();
    names.sort();
    names.join(", ")
}

/// Reads record `number` (fixups applied) into `buf`.
fn read_record<'a>(vol: &Volume, number: u64, buf: &'a mut [u8]) -> Result<Record<'a>> {
    let io = |cause| ContentError::Io {
        record: number,
        what: "reading the record".into(),
        cause,
    };
    vol.read_records_now(number, buf).map_err(io)?;
    // A live volume's file system hands a record not in use back zeroed; the raw MFT still has a deleted file's.
    if !uffs_ntfs::record::has_file_signature(buf) {
        vol.read_records(number, buf).map_err(io)?;
    }
    apply_fixups(buf).map_err(|cause| ContentError::Record {
        record: number,
        cause,
    })?;
    Record::parse(buf).map_err(|cause| ContentError::Record {
        record: number,
        cause,
    })
}

/// The `$DATA` attributes of a base record and of the extension records its attribute list names.
fn gather(vol: &Volume, record: u64, types: &[u32]) -> Result<Gathered> {
    if record >= vol.records_total {
        return Err(ContentError::NoRecord {
            record,
            total: vol.records_total,
        });
    }
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    let rs = vol.record_size as usize;
    let mut buf = vec![0u8; rs];
    let rec = read_record(vol, record, &mut buf)?;
    let h = rec.header;
    if !h.is_base() {
        return Err(ContentError::Extension {
            record,
            base: h.base.record(),
        });
    }
    let mut g = Gathered {
        sequence: h.sequence,
        in_use: h.in_use(),
        directory: h.is_directory(),
        streams: Vec::new(),
    };
    let mut list: Option<Vec<u8>> = None;
    for a in rec.attributes() {
        let a = a.map_err(|e| corrupt(format!("attribute: {e}")))?;
        if a.type_code == kind::ATTRIBUTE_LIST && list.is_none() {
            list = match read_attribute_list(vol, record, &a) {
                Ok(l) => Some(l),
                // A deleted file's list may lie in clusters reused since: its base record is still read.
                Err(_) if !g.in_use => None,
                Err(e) => return Err(e),
            };
        }
    }
    take(&rec, types, &mut g.streams, record)?;
    let Some(list) = list else {
        return Ok(g);
    };
    // Each extension record once, whatever the list says (it may name one many times, or the base itself).
    let mut wanted: Vec<(u64, u16)> = Vec::new();
    for e in AttributeList::new(&list) {
        let e = match e {
            Ok(e) => e,
            Err(_) if !g.in_use => break,
            Err(e) => return Err(corrupt(format!("attribute list: {e}"))),
        };
        if types.contains(&e.type_code) && e.record.record() != record {
            wanted.push((e.record.record(), e.record.sequence()));
        }
    }
    wanted.sort_unstable();
    wanted.dedup_by_key(|w| w.0);
    if wanted.len() > MAX_EXTENSION_RECORDS {
        return Err(corrupt(format!(
            "the attribute list names {} extension records, more than the {MAX_EXTENSION_RECORDS} read",
            wanted.len()
        )));
    }
    for (number, sequence) in wanted {
        if number >= vol.records_total {
            if g.in_use {
                return Err(corrupt(format!(
                    "the attribute list names record {number}, past the end of the MFT"
                )));
            }
            continue;
        }
        let ext = match read_record(vol, number, &mut buf) {
            Ok(r) => r,
            // A deleted file's extension records may be gone or reused: what they held is unmapped.
            Err(_) if !g.in_use => continue,
            Err(e) => return Err(e),
        };
        let eh = ext.header;
        let ours = eh.base.record() == record
            && (!g.in_use || (eh.in_use() && (sequence == 0 || eh.sequence == sequence)));
        if !ours {
            if g.in_use {
                return Err(corrupt(format!(
                    "the attribute list names record {number}, which belongs to another file"
                )));
            }
            continue;
        }
        take(&ext, types, &mut g.streams, record)?;
    }
    Ok(g)
}

/// The value of an `$ATTRIBUTE_LIST` attribute (resident, or read through its runs, bounded).
fn read_attribute_list(
    vol: &Volume,
    record: u64,
    a: &uffs_ntfs::attr::Attribute<'_>,
) -> Result<Vec<u8>> {
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    match a
        .body()
        .map_err(|e| corrupt(format!("attribute list: {e}")))?
    {
        AttributeBody::Resident(v) => Ok(v.to_vec()),
        AttributeBody::NonResident(nr) => {
            let Some(boot) = vol.boot else {
                return Err(ContentError::NotInSource {
                    record,
                    stream: "its attribute list".into(),
                });
            };
            if nr.data_size > MAX_ATTRIBUTE_LIST {
                return Err(corrupt(format!(
                    "the attribute list claims {} bytes, more than the {MAX_ATTRIBUTE_LIST} it may have",
                    nr.data_size
                )));
            }
            let runs = nr
                .runs()
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| corrupt(format!("attribute list runlist: {e}")))?;
            let cs = boot.cluster_size;
            let size = nr.data_size.min(nr.initialized_size);
            let extents = build_extents(record, &mut [(0, runs)], Span::of(vol))?;
            let info = StreamInfo {
                record,
                sequence: 0,
                name: "$ATTRIBUTE_LIST".into(),
                size,
                initialized_size: size,
                allocated_size: nr.allocated_size,
                resident: false,
                compressed: false,
                sparse: false,
                encrypted: false,
                in_use: true,
                directory: false,
                mapped_size: mapped_size(&extents, cs, size),
                fragments: 0,
            };
            // A list its runs do not cover is an error (unmapped) when read.
            let body = Body::NonResident {
                cluster_size: cs,
                extents,
                unit: None,
                packed: Vec::new(),
            };
            let mut r = StreamReader::new(info, body, vol.device.clone());
            let mut v = vec![0u8; size as usize];
            r.read_at(0, &mut v)?;
            Ok(v)
        }
    }
}

/// Adds the attributes of `rec` of the types `types` (`$DATA`: the streams) to `out`, by type and name.
fn take(rec: &Record<'_>, types: &[u32], out: &mut Vec<Found>, record: u64) -> Result<()> {
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    for a in rec.attributes() {
        let a = a.map_err(|e| corrupt(format!("attribute: {e}")))?;
        if !types.contains(&a.type_code) {
            continue;
        }
        let what = kind::name(a.type_code);
        let name = a.name().map_err(|e| corrupt(format!("{what} name: {e}")))?;
        let body = a
            .body()
            .map_err(|e| corrupt(format!("{what} attribute: {e}")))?;
        let i = match out
            .iter()
            .position(|f| f.type_code == a.type_code && f.raw_name == name)
        {
            Some(i) => i,
            None => {
                out.push(Found {
                    type_code: a.type_code,
                    raw_name: name.to_vec(),
                    ..Found::default()
                });
                out.len() - 1
            }
        };
        let f = &mut out[i];
        match body {
            AttributeBody::Resident(v) => {
                if f.resident.is_none() && f.pieces.is_empty() {
                    f.resident = Some(v.to_vec());
                    f.flags = a.flags();
                }
            }
            AttributeBody::NonResident(nr) => {
                // The same piece found twice (named twice by a damaged list): the first one counts.
                if f.pieces.iter().any(|p| p.0 == nr.start_vcn) {
                    continue;
                }
                let runs = nr
                    .runs()
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| {
                        corrupt(format!("runlist of the piece at VCN {}: {e}", nr.start_vcn))
                    })?;
                f.runs += runs.len();
                if f.runs > MAX_RUNS {
                    return Err(corrupt(format!("a stream has more than {MAX_RUNS} runs")));
                }
                if nr.start_vcn == 0 {
                    f.flags = a.flags();
                    f.sizes = Some((
                        nr.data_size,
                        nr.initialized_size,
                        nr.compressed_size.unwrap_or(nr.allocated_size),
                        nr.compression_unit,
                    ));
                }
                f.pieces.push((nr.start_vcn, runs));
            }
        }
    }
    Ok(())
}

/// Where a volume's clusters can be: its cluster size, the bytes it has by its boot sector and those its source
/// holds (fewer when the image is truncated). All 0 for a raw `$MFT` capture (no clusters).
#[derive(Debug, Clone, Copy)]
struct Span {
    cs: u64,
    volume: u64,
    image: u64,
}

impl Span {
    fn of(vol: &Volume) -> Span {
        match vol.boot {
            Some(b) => Span {
                cs: b.cluster_size,
                volume: b.volume_size(),
                image: vol.device.len(),
            },
            None => Span {
                cs: 0,
                volume: 0,
                image: 0,
            },
        }
    }
}

/// A found attribute as a stream: its description and where its bytes are.
fn stream_of(
    record: u64,
    sequence: u16,
    in_use: bool,
    directory: bool,
    mut f: Found,
    span: Span,
) -> Result<(StreamInfo, Body)> {
    let cs = span.cs;
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    let name = utf16::decode(&f.raw_name);
    let mut info = StreamInfo {
        record,
        sequence,
        name,
        size: 0,
        initialized_size: 0,
        allocated_size: 0,
        resident: false,
        compressed: f.flags & attr_flags::COMPRESSED != 0,
        sparse: f.flags & attr_flags::SPARSE != 0,
        encrypted: f.flags & attr_flags::ENCRYPTED != 0,
        in_use,
        directory,
        mapped_size: 0,
        fragments: 0,
    };
    if let Some(v) = f.resident.take() {
        if !f.pieces.is_empty() {
            return Err(corrupt(format!(
                "{} is both resident and not",
                info.describe()
            )));
        }
        info.resident = true;
        info.compressed = false;
        info.size = v.len() as u64;
        info.initialized_size = info.size;
        info.mapped_size = info.size;
        return Ok((info, Body::Resident(v)));
    }
    let Some((size, initialized, allocated, cu)) = f.sizes else {
        return Err(corrupt(format!(
            "{} has no first piece (at VCN 0) to give its size",
            info.describe()
        )));
    };
    info.size = size;
    info.initialized_size = initialized.min(size);
    info.allocated_size = allocated;
    if span.volume == 0 {
        // A raw $MFT capture: described, but only an empty stream can be read ([`open_stream`] says why).
        return Ok((info, Body::Resident(Vec::new())));
    }
    let extents = build_extents(record, &mut f.pieces, span)?;
    let unit = if info.compressed && cu != 0 {
        let unit = 1u64.checked_shl(u32::from(cu)).unwrap_or(0);
        if unit == 0 || unit.saturating_mul(cs) > MAX_UNIT_BYTES {
            return Err(ContentError::Unsupported {
                record,
                why: format!(
                    "compression units of 2^{cu} clusters of {cs} bytes are larger than the {MAX_UNIT_BYTES} bytes uffs decodes"
                ),
            });
        }
        Some(unit)
    } else {
        info.compressed = false;
        None
    };
    info.mapped_size = mapped_size(&extents, cs, size);
    info.fragments = extents
        .iter()
        .filter(|e| matches!(e.loc, Loc::Clusters(_)))
        .count();
    // A file in use must map what it holds; only a deleted one may have lost pieces.
    if in_use && info.mapped_size < info.initialized_size {
        return Err(corrupt(format!(
            "the runlist of {} maps {} of its {} bytes",
            info.describe(),
            info.mapped_size,
            info.initialized_size
        )));
    }
    Ok((
        info,
        Body::NonResident {
            cluster_size: cs,
            extents,
            unit,
            packed: Vec::new(),
        },
    ))
}

/// Bytes from the start (up to `size`) that the extents map.
fn mapped_size(extents: &[Extent], cs: u64, size: u64) -> u64 {
    let end = match extents.iter().find(|e| e.loc == Loc::Unmapped) {
        Some(gap) => gap.vcn,
        None => extents.last().map_or(0, Extent::end),
    };
    end.saturating_mul(cs).min(size)
}

/// The pieces' runs as sorted, merged extents with their offsets checked: contiguous from VCN 0 (gaps between
/// pieces are [`Loc::Unmapped`]), every byte offset within u64, every cluster within the volume.
fn build_extents(record: u64, pieces: &mut [(u64, Vec<Run>)], span: Span) -> Result<Vec<Extent>> {
    let corrupt = |why: String| ContentError::Corrupt { record, why };
    pieces.sort_by_key(|p| p.0);
    let cs = span.cs;
    let clusters = span.volume / cs;
    let held = span.image.min(span.volume) / cs;
    let mut out: Vec<Extent> = Vec::new();
    let mut next = 0u64;
    for (start, runs) in pieces.iter() {
        if *start < next {
            return Err(corrupt(format!("runlist pieces overlap at VCN {start}")));
        }
        if *start > next {
            push(
                &mut out,
                Extent {
                    vcn: next,
                    len: start - next,
                    loc: Loc::Unmapped,
                },
            );
        }
        for r in runs {
            let end = r
                .vcn
                .checked_add(r.length)
                .filter(|e| e.checked_mul(cs).is_some());
            let Some(end) = end else {
                return Err(corrupt(format!("a run at VCN {} is too long", r.vcn)));
            };
            let loc = match r.lcn {
                None => Loc::Sparse,
                Some(lcn) => {
                    if lcn.checked_add(r.length).is_none_or(|e| e > clusters) {
                        return Err(corrupt(format!(
                            "a run at clusters {lcn}..{} lies past the end of the volume ({clusters} clusters)",
                            lcn.saturating_add(r.length)
                        )));
                    }
                    if lcn + r.length > held {
                        return Err(ContentError::Truncated {
                            record,
                            image: span.image,
                            volume: span.volume,
                        });
                    }
                    Loc::Clusters(lcn)
                }
            };
            push(
                &mut out,
                Extent {
                    vcn: r.vcn,
                    len: r.length,
                    loc,
                },
            );
            next = end;
        }
        next = next.max(*start);
    }
    Ok(out)
}

/// Appends `e`, merged with the last extent when it continues it.
fn push(out: &mut Vec<Extent>, e: Extent) {
    if let Some(last) = out.last_mut() {
        let continues = match (last.loc, e.loc) {
            (Loc::Clusters(a), Loc::Clusters(b)) => a + last.len == b,
            (a, b) => a == b,
        };
        if continues && last.end() == e.vcn {
            last.len += e.len;
            return;
        }
    }
    out.push(e);
}

/// What a compression unit holds.
enum UnitKind {
    /// All its clusters are stored: read as is.
    Stored,
    /// None are: zeros.
    Sparse,
    /// Some are: LZNT1 data.
    Compressed,
    /// No piece of the runlist maps it.
    Unmapped,
}

impl<B: ReadAt> StreamReader<B> {
    fn new(info: StreamInfo, body: Body, volume: B) -> StreamReader<B> {
        StreamReader {
            info,
            body,
            volume,
            pos: 0,
            unit_cache: None,
            encoded: Vec::new(),
        }
    }

    /// A reader over runs given directly (a stream of a volume in memory, or fuzzing): `pieces` are (start VCN,
    /// runlist bytes) as a record stores them, checked as [`open_stream`] checks a record's. `compression_unit`
    /// is the attribute's (0: not compressed).
    pub fn from_runlists(
        volume: B,
        cluster_size: u64,
        pieces: &[(u64, &[u8])],
        size: u64,
        initialized_size: u64,
        compression_unit: u8,
    ) -> Result<StreamReader<B>> {
        let corrupt = |why: String| ContentError::Corrupt { record: 0, why };
        if !cluster_size.is_power_of_two() || cluster_size > uffs_ntfs::boot::MAX_CLUSTER_SIZE {
            return Err(corrupt(format!("cluster size {cluster_size}")));
        }
        let mut found = Found {
            flags: if compression_unit != 0 {
                attr_flags::COMPRESSED
            } else {
                0
            },
            sizes: Some((size, initialized_size, 0, compression_unit)),
            ..Found::default()
        };
        for &(start, bytes) in pieces {
            let runs = Runlist::new(bytes, start)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| corrupt(format!("runlist: {e}")))?;
            found.runs += runs.len();
            if found.runs > MAX_RUNS {
                return Err(corrupt("too many runs".into()));
            }
            found.pieces.push((start, runs));
        }
        let len = volume.size().max(1);
        let span = Span {
            cs: cluster_size,
            volume: len,
            image: len,
        };
        let (info, body) = stream_of(0, 0, true, false, found, span)?;
        Ok(StreamReader::new(info, body, volume))
    }

    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    /// The bytes of resident data (the stream itself, held in its record); `None` for non-resident data.
    pub fn resident(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Resident(v) => Some(v),
            Body::NonResident { .. } => None,
        }
    }

    /// Where the stream's first `limit` bytes lie on the volume: (byte offset, bytes) of each run of clusters,
    /// in stream order (sparse and unmapped runs have none; a compressed stream's first units whole, and the
    /// compressed bytes of each piece another file system keeps compressed). Empty for resident data. What
    /// [`many`] plans its reads with.
    pub fn volume_extents(&self, limit: u64) -> Vec<(u64, u64)> {
        let Body::NonResident {
            cluster_size: cs,
            extents,
            unit,
            packed,
        } = &self.body
        else {
            return Vec::new();
        };
        let cs = *cs;
        let want = limit.min(self.info.size).min(self.info.initialized_size);
        let mut vcns = want.div_ceil(cs);
        if let Some(u) = unit {
            vcns = vcns.div_ceil(*u) * *u;
        }
        // (stream byte, volume byte, bytes), to put the pieces among the runs.
        let mut out = Vec::new();
        for e in extents.iter().take_while(|e| e.vcn < vcns) {
            if let Loc::Clusters(lcn) = e.loc {
                let len = e.len.min(vcns - e.vcn);
                out.push((e.vcn * cs, lcn * cs, len * cs));
            }
        }
        if !packed.is_empty() {
            let pieces = packed.iter().take_while(|p| p.file_offset < want);
            out.extend(pieces.map(|p| (p.file_offset, p.disk.offset, p.disk.len)));
            out.sort_by_key(|r| r.0);
        }
        out.into_iter().map(|(_, at, len)| (at, len)).collect()
    }

    /// What the stream reads from.
    pub fn volume(&self) -> &B {
        &self.volume
    }

    /// The same stream read from `volume` instead: [`many`] hands a stream a window of the volume already read.
    pub fn reading_from<C: ReadAt>(self, volume: C) -> StreamReader<C> {
        StreamReader {
            info: self.info,
            body: self.body,
            volume,
            pos: self.pos,
            unit_cache: self.unit_cache,
            encoded: self.encoded,
        }
    }

    /// The data size: bytes the stream reads as.
    pub fn len(&self) -> u64 {
        self.info.size
    }

    pub fn is_empty(&self) -> bool {
        self.info.size == 0
    }

    /// Reads from byte `offset` of the stream into `buf`: `buf.len()` bytes, fewer only at the end of the stream
    /// (0 at or past it). Positional: the reader's own position (for `io::Read`) is left alone. A large buffer
    /// reads in few large device reads.
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let size = self.info.size;
        if offset >= size {
            return Ok(0);
        }
        let n = usize::try_from(size - offset).map_or(buf.len(), |left| left.min(buf.len()));
        let buf = &mut buf[..n];
        // Past the initialized size the stream reads as zeros, whatever its clusters hold.
        let valid = usize::try_from(self.info.initialized_size.saturating_sub(offset))
            .map_or(n, |v| v.min(n));
        let (data, zeros) = buf.split_at_mut(valid);
        zeros.fill(0);
        if data.is_empty() {
            return Ok(n);
        }
        match &self.body {
            Body::Resident(v) => {
                // Resident data is the stream (its size is the value's length); checked all the same.
                let src = usize::try_from(offset)
                    .ok()
                    .and_then(|at| v.get(at..at.checked_add(data.len())?))
                    .ok_or_else(|| self.unmapped(offset))?;
                data.copy_from_slice(src);
            }
            Body::NonResident {
                unit: None, packed, ..
            } if !packed.is_empty() => self.read_packed(offset, data)?,
            Body::NonResident { unit: None, .. } => self.read_runs(offset, data)?,
            Body::NonResident { unit: Some(_), .. } => self.read_units(offset, data)?,
        }
        Ok(n)
    }

    /// Fills `buf` from `offset`; reading past the end of the stream is an error.
    pub fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let n = self.read_at(offset, buf)?;
        if n < buf.len() {
            return Err(ContentError::Io {
                record: self.info.record,
                what: format!("reading {} bytes at {offset}", buf.len()),
                cause: io::ErrorKind::UnexpectedEof.into(),
            });
        }
        Ok(())
    }

    fn unmapped(&self, offset: u64) -> ContentError {
        ContentError::Unmapped {
            record: self.info.record,
            stream: self.info.describe(),
            offset,
        }
    }

    fn io_error(&self, at: u64, len: usize, cause: io::Error) -> ContentError {
        ContentError::Io {
            record: self.info.record,
            what: format!(
                "reading {} of {} at volume byte {at}",
                bytes(len),
                self.info.describe()
            ),
            cause,
        }
    }

    /// Reads `out` from stream byte `offset` through the runs (no compression).
    fn read_runs(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let Body::NonResident {
            cluster_size: cs,
            extents,
            ..
        } = &self.body
        else {
            return Ok(());
        };
        let cs = *cs;
        let mut done = 0usize;
        let mut i = extents.partition_point(|e| e.end() <= offset / cs);
        while done < out.len() {
            let p = offset + done as u64;
            let Some(e) = extents.get(i).filter(|e| e.vcn * cs <= p) else {
                // Past the last extent: unmapped.
                if self.info.in_use {
                    return Err(self.unmapped(p));
                }
                out[done..].fill(0);
                return Ok(());
            };
            let take = usize::try_from(e.end() * cs - p)
                .map_or(out.len() - done, |t| t.min(out.len() - done));
            let dst = &mut out[done..done + take];
            match e.loc {
                Loc::Clusters(lcn) => {
                    let at = lcn * cs + (p - e.vcn * cs);
                    self.volume
                        .read_exact_at(dst, at)
                        .map_err(|c| self.io_error(at, take, c))?;
                }
                Loc::Sparse => dst.fill(0),
                Loc::Unmapped if self.info.in_use => return Err(self.unmapped(p)),
                Loc::Unmapped => dst.fill(0),
            }
            done += take;
            i += 1;
        }
        Ok(())
    }

    /// Reads `out` from stream byte `offset`: from the compressed pieces where they are, through the runs
    /// elsewhere.
    fn read_packed(&mut self, offset: u64, out: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < out.len() {
            let Body::NonResident { packed, .. } = &self.body else {
                return Ok(());
            };
            let p = offset + done as u64;
            let left = out.len() - done;
            let i = packed.partition_point(|x| x.file_offset + x.len <= p);
            // The piece at `p`, or the bytes up to the next one.
            let (piece, until) = match packed.get(i) {
                Some(x) if x.file_offset <= p => (
                    Some((i, x.skip + (p - x.file_offset))),
                    x.file_offset + x.len,
                ),
                Some(x) => (None, x.file_offset),
                None => (None, u64::MAX),
            };
            let take = usize::try_from(until - p).map_or(left, |t| t.min(left));
            let dst = &mut out[done..done + take];
            match piece {
                Some((i, from)) => {
                    self.decode_piece(i)?;
                    let (_, bytes) = self.unit_cache.as_ref().expect("decoded just now");
                    // A piece lies within what it decodes to (checked when opened).
                    dst.copy_from_slice(&bytes[from as usize..from as usize + take]);
                }
                None => self.read_runs(p, dst)?,
            }
            done += take;
        }
        Ok(())
    }

    /// Decodes compressed piece `i` into the cache, keyed by where its compressed bytes are (unless they are
    /// there already: the pieces of a partly rewritten extent share them).
    fn decode_piece(&mut self, i: usize) -> Result<()> {
        let Body::NonResident { packed, .. } = &self.body else {
            return Ok(());
        };
        let x = packed[i];
        // Decoded bytes are `decoded_len` long: a piece takes only what its own length allows (checked when opened).
        if self
            .unit_cache
            .as_ref()
            .is_some_and(|c| c.0 == x.disk.offset && c.1.len() as u64 == x.decoded_len)
        {
            return Ok(());
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        // At most `MAX_DECODED` (checked when opened).
        encoded.resize(x.disk.len as usize, 0);
        let read = self.volume.read_exact_at(&mut encoded, x.disk.offset);
        let decoded = read
            .map_err(|c| self.io_error(x.disk.offset, encoded.len(), c))
            .and_then(|()| {
                uffs_fs::packed::decode(x.codec, &encoded, x.decoded_len as usize).map_err(|e| {
                    ContentError::Corrupt {
                        record: self.info.record,
                        why: format!(
                            "{}: the compressed piece at stream bytes {}..{}: {e}",
                            self.info.describe(),
                            x.file_offset,
                            x.file_offset + x.len
                        ),
                    }
                })
            });
        self.encoded = encoded;
        self.unit_cache = Some((x.disk.offset, decoded?));
        Ok(())
    }

    /// Reads `out` from stream byte `offset` unit by unit (a compressed stream).
    fn read_units(&mut self, offset: u64, out: &mut [u8]) -> Result<()> {
        let Body::NonResident {
            cluster_size: cs,
            unit: Some(unit),
            ..
        } = &self.body
        else {
            return Ok(());
        };
        let unit_bytes = unit * cs;
        let mut done = 0usize;
        while done < out.len() {
            let p = offset + done as u64;
            let u = p / unit_bytes;
            let within = p - u * unit_bytes;
            let take = usize::try_from(unit_bytes - within)
                .map_or(out.len() - done, |t| t.min(out.len() - done));
            let dst = &mut out[done..done + take];
            match self.unit_kind(u) {
                UnitKind::Stored => self.read_runs(p, dst)?,
                UnitKind::Sparse => dst.fill(0),
                UnitKind::Unmapped if self.info.in_use => return Err(self.unmapped(p)),
                UnitKind::Unmapped => dst.fill(0),
                UnitKind::Compressed => {
                    self.decode_unit(u)?;
                    let (_, bytes) = self.unit_cache.as_ref().expect("decoded just now");
                    dst.copy_from_slice(&bytes[within as usize..within as usize + take]);
                }
            }
            done += take;
        }
        Ok(())
    }

    /// The extents overlapping compression unit `u`, as (VCN range start, clusters, location) pieces cut to it.
    fn unit_parts(&self, u: u64) -> Vec<(u64, u64, Loc)> {
        let Body::NonResident {
            extents,
            unit: Some(unit),
            ..
        } = &self.body
        else {
            return Vec::new();
        };
        let (lo, hi) = (u * unit, u * unit + unit);
        let mut parts = Vec::new();
        let mut i = extents.partition_point(|e| e.end() <= lo);
        let mut at = lo;
        while at < hi {
            match extents.get(i).filter(|e| e.vcn < hi) {
                Some(e) => {
                    let (s, t) = (e.vcn.max(lo), e.end().min(hi));
                    let loc = match e.loc {
                        Loc::Clusters(l) => Loc::Clusters(l + (s - e.vcn)),
                        other => other,
                    };
                    parts.push((s, t - s, loc));
                    at = t;
                    i += 1;
                }
                None => {
                    parts.push((at, hi - at, Loc::Unmapped));
                    at = hi;
                }
            }
        }
        parts
    }

    fn unit_kind(&self, u: u64) -> UnitKind {
        let parts = self.unit_parts(u);
        let total: u64 = parts.iter().map(|p| p.1).sum();
        let stored: u64 = parts
            .iter()
            .filter(|p| matches!(p.2, Loc::Clusters(_)))
            .map(|p| p.1)
            .sum();
        let unmapped: u64 = parts
            .iter()
            .filter(|p| p.2 == Loc::Unmapped)
            .map(|p| p.1)
            .sum();
        if unmapped == total {
            UnitKind::Unmapped
        } else if stored == total {
            UnitKind::Stored
        } else if stored == 0 {
            UnitKind::Sparse
        } else {
            UnitKind::Compressed
        }
    }

    /// Decodes compression unit `u` into the cache (unless it is there already).
    fn decode_unit(&mut self, u: u64) -> Result<()> {
        if self.unit_cache.as_ref().is_some_and(|c| c.0 == u) {
            return Ok(());
        }
        let Body::NonResident {
            cluster_size: cs,
            unit: Some(unit),
            ..
        } = &self.body
        else {
            return Ok(());
        };
        let (cs, unit_bytes) = (*cs, (*unit * *cs) as usize);
        let parts = self.unit_parts(u);
        let mut packed = std::mem::take(&mut self.encoded);
        packed.clear();
        for &(_, len, loc) in &parts {
            if let Loc::Clusters(lcn) = loc {
                let n = (len * cs) as usize;
                let start = packed.len();
                packed.resize(start + n, 0);
                let at = lcn * cs;
                self.volume
                    .read_exact_at(&mut packed[start..], at)
                    .map_err(|c| self.io_error(at, n, c))?;
            }
        }
        let mut bytes = match self.unit_cache.take() {
            Some((_, b)) if b.len() == unit_bytes => b,
            _ => vec![0u8; unit_bytes],
        };
        let r = lznt1::decompress(&packed, &mut bytes);
        self.encoded = packed;
        r.map_err(|e| ContentError::Corrupt {
            record: self.info.record,
            why: format!(
                "{}: compression unit {u} (stream bytes {}..): {e}",
                self.info.describe(),
                u * unit_bytes as u64
            ),
        })?;
        self.unit_cache = Some((u, bytes));
        Ok(())
    }
}

fn bytes(n: usize) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

impl<B: ReadAt> io::Read for StreamReader<B> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<B: ReadAt> io::Seek for StreamReader<B> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let (base, delta) = match to {
            io::SeekFrom::Start(n) => (0, n as i128),
            io::SeekFrom::End(d) => (self.info.size, i128::from(d)),
            io::SeekFrom::Current(d) => (self.pos, i128::from(d)),
        };
        let p = i128::from(base) + delta;
        if p < 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the stream",
            ));
        }
        self.pos = u64::try_from(p).unwrap_or(u64::MAX);
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    const CS: u64 = 512;

    /// A volume of `clusters` clusters whose every byte says where it is.
    fn volume(clusters: u64) -> Vec<u8> {
        (0..clusters * CS)
            .map(|i| (i / CS * 7 + i % 251) as u8)
            .collect()
    }

    /// Encodes runs of (clusters, LCN or sparse) as a runlist.
    fn runlist(runs: &[(u64, Option<u64>)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut prev = 0i64;
        for &(len, lcn) in runs {
            let lb: Vec<u8> = len.to_le_bytes().into_iter().take(8).collect();
            let ln = 8 - lb.iter().rev().take_while(|&&b| b == 0).count();
            let ln = ln.max(1);
            match lcn {
                None => {
                    out.push(ln as u8);
                    out.extend_from_slice(&lb[..ln]);
                }
                Some(l) => {
                    let d = l as i64 - prev;
                    prev = l as i64;
                    let db = d.to_le_bytes();
                    let mut on = 8;
                    while on > 1 {
                        let top = db[on - 1];
                        let below = db[on - 2] & 0x80 != 0;
                        if (top == 0 && !below) || (top == 0xFF && below) {
                            on -= 1;
                        } else {
                            break;
                        }
                    }
                    out.push((on << 4 | ln) as u8);
                    out.extend_from_slice(&lb[..ln]);
                    out.extend_from_slice(&db[..on]);
                }
            }
        }
        out.push(0);
        out
    }

    /// What the runs read as, cluster by cluster (the model the reader must agree with).
    fn model(vol: &[u8], runs: &[(u64, Option<u64>)], size: u64, init: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for &(len, lcn) in runs {
            for c in 0..len {
                match lcn {
                    Some(l) => v.extend_from_slice(
                        &vol[((l + c) * CS) as usize..((l + c + 1) * CS) as usize],
                    ),
                    None => v.extend(std::iter::repeat_n(0, CS as usize)),
                }
            }
        }
        v.truncate(size as usize);
        for b in v.iter_mut().skip(init as usize) {
            *b = 0;
        }
        v
    }

    fn reader(
        vol: &[u8],
        pieces: &[(u64, Vec<u8>)],
        size: u64,
        init: u64,
        cu: u8,
    ) -> Result<StreamReader<Vec<u8>>> {
        let p: Vec<(u64, &[u8])> = pieces.iter().map(|(s, b)| (*s, b.as_slice())).collect();
        StreamReader::from_runlists(vol.to_vec(), CS, &p, size, init, cu)
    }

    #[test]
    fn runs_holes_and_the_initialized_size() {
        let vol = volume(64);
        let runs = [
            (3, Some(10)),
            (2, None),
            (4, Some(40)),
            (1, Some(5)),
            (5, Some(6)),
        ];
        let (size, init) = (15 * CS - 100, 12 * CS + 3);
        let want = model(&vol, &runs, size, init);
        let mut r = reader(&vol, &[(0, runlist(&runs))], size, init, 0).unwrap();
        // Clusters 5 and 6.. are adjacent on the volume: merged into one extent.
        assert_eq!(r.info().fragments, 3);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, want);
        // Positional reads of every size at every offset agree.
        for off in (0..size + 10).step_by(37) {
            for len in [1usize, 100, 512, 513, 5000] {
                let mut b = vec![0xEE; len];
                let n = r.read_at(off, &mut b).unwrap();
                let end = (off + len as u64).min(size);
                assert_eq!(n as u64, end.saturating_sub(off));
                assert_eq!(
                    &b[..n],
                    &want[off.min(size) as usize..end.max(off).min(size) as usize]
                );
            }
        }
        r.seek(SeekFrom::End(-10)).unwrap();
        let mut tail = Vec::new();
        r.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, &want[want.len() - 10..]);
    }

    #[test]
    fn pieces_in_order_and_their_faults() {
        let vol = volume(64);
        let a = [(4, Some(1)), (2, None)];
        let b = [(3, Some(20))];
        let size = 9 * CS;
        let want = model(&vol, &[a[0], a[1], b[0]], size, size);
        // Given out of order (as an attribute list may list them), read in VCN order.
        let mut r = reader(&vol, &[(6, runlist(&b)), (0, runlist(&a))], size, size, 0).unwrap();
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, want);
        // Overlapping pieces.
        let e = reader(&vol, &[(0, runlist(&a)), (5, runlist(&b))], size, size, 0).unwrap_err();
        assert!(matches!(e, ContentError::Corrupt { .. }), "{e}");
        // A gap between pieces of a file in use: what it holds is not mapped.
        let e = reader(
            &vol,
            &[(0, runlist(&a)), (7, runlist(&b))],
            10 * CS,
            10 * CS,
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("maps"), "{e}");
        // A run past the end of the volume; a run whose byte offsets overflow.
        let e = reader(&vol, &[(0, runlist(&[(10, Some(60))]))], CS, CS, 0).unwrap_err();
        assert!(e.to_string().contains("past the end of the volume"), "{e}");
        let e = reader(&vol, &[(0, runlist(&[(1 << 60, None)]))], CS, CS, 0).unwrap_err();
        assert!(e.to_string().contains("too long"), "{e}");
        // A first piece that does not start at VCN 0 leaves the start unmapped.
        let e = reader(&vol, &[(2, runlist(&b))], 5 * CS, 5 * CS, 0).unwrap_err();
        assert!(e.to_string().contains("maps 0"), "{e}");
    }

    #[test]
    fn a_huge_hole_reads_as_zeros_without_allocating() {
        let vol = volume(8);
        let runs = [(1, Some(2)), (1 << 40, None), (1, Some(3))];
        let size = ((1u64 << 40) + 2) * CS;
        let mut r = reader(&vol, &[(0, runlist(&runs))], size, size, 0).unwrap();
        let mut b = vec![1u8; 2 * CS as usize];
        r.read_exact_at(size - 3 * CS, &mut b[..CS as usize])
            .unwrap();
        assert!(b[..CS as usize].iter().all(|&x| x == 0));
        r.read_exact_at(size - CS, &mut b[..CS as usize]).unwrap();
        assert_eq!(
            &b[..CS as usize],
            &vol[(3 * CS) as usize..(4 * CS) as usize]
        );
        assert_eq!(r.read_at(size, &mut b).unwrap(), 0);
        assert_eq!(r.read_at(u64::MAX, &mut b).unwrap(), 0);
    }

    /// A file of another file system (Btrfs) made of a run, a zlib piece taken from inside what it decodes to,
    /// a hole, and a zstd piece the file ends inside.
    #[test]
    fn compressed_pieces_among_runs_and_holes() {
        use std::io::Write as _;
        use uffs_fs::{Codec, Run};
        let mut vol = volume(128);
        let a: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 253) as u8).collect();
        let b: Vec<u8> = (0..8192u32).map(|i| (i / 100) as u8 ^ 0x5A).collect();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&a).unwrap();
        let za = z.finish().unwrap();
        let zb = zstd::bulk::compress(&b, 3).unwrap();
        // Each in whole sectors, padded with zeros.
        let (at_a, at_b, at_run) = (8192u64, 20480u64, 40960u64);
        let (len_a, len_b) = (
            za.len().next_multiple_of(512),
            zb.len().next_multiple_of(512),
        );
        vol[at_a as usize..at_a as usize + len_a].fill(0);
        vol[at_a as usize..][..za.len()].copy_from_slice(&za);
        vol[at_b as usize..at_b as usize + len_b].fill(0);
        vol[at_b as usize..][..zb.len()].copy_from_slice(&zb);
        let piece = |file_offset, len, at, disk_len: usize, codec, skip| Packed {
            file_offset,
            len,
            disk: Run {
                offset: at,
                len: disk_len as u64,
            },
            codec,
            decoded_len: 8192,
            skip,
        };
        let size = 4096 + 4096 + 2048 + 6144 - 100;
        let mut f = crate::neutral::FileData {
            size,
            allocated: 4096 + (len_a + len_b) as u64,
            runs: vec![
                Run {
                    offset: at_run,
                    len: 4096,
                },
                Run::hole(4096),
                Run::hole(2048),
                Run::hole(6144),
            ],
            inline: None,
            // Out of order: sorted when opened.
            packed: vec![
                piece(10240, 6144, at_b, len_b, Codec::Zstd, 0),
                piece(4096, 4096, at_a, len_a, Codec::Zlib, 1024),
            ],
            forks: Vec::new(),
            deleted: false,
            directory: false,
        };
        let mut want = vol[at_run as usize..][..4096].to_vec();
        want.extend_from_slice(&a[1024..5120]);
        want.extend_from_slice(&[0; 2048]);
        want.extend_from_slice(&b[..6144]);
        want.truncate(size as usize);
        let open = |f: &crate::neutral::FileData, vol: &Vec<u8>| {
            neutral_body(7, f).map(|(info, body)| StreamReader::new(info, body, vol.clone()))
        };
        let mut r = open(&f, &vol).unwrap();
        assert!(r.info().compressed && r.info().sparse);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, want);
        for off in (0..size + 10).step_by(37) {
            for len in [1usize, 100, 513, 5000] {
                let mut b = vec![0xEE; len];
                let n = r.read_at(off, &mut b).unwrap();
                let end = (off + len as u64).min(size);
                assert_eq!(n as u64, end.saturating_sub(off));
                assert_eq!(
                    &b[..n],
                    &want[off.min(size) as usize..end.max(off).min(size) as usize]
                );
            }
        }
        // What `many` reads at once: the pieces' compressed bytes among the runs, in stream order.
        let (a_disk, b_disk) = ((at_a, len_a as u64), (at_b, len_b as u64));
        assert_eq!(r.volume_extents(u64::MAX), [(at_run, 4096), a_disk, b_disk]);
        assert_eq!(r.volume_extents(4096), [(at_run, 4096)]);
        assert_eq!(r.volume_extents(4097), [(at_run, 4096), a_disk]);
        // Without its hole the file is not sparse.
        f.runs.remove(2);
        f.packed[0].file_offset -= 2048;
        f.size -= 2048;
        let mut r = open(&f, &vol).unwrap();
        assert!(!r.info().sparse);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, [&want[..8192], &want[10240..]].concat());
        // A damaged piece is an error when read, the rest reads on.
        let mut bad = vol.clone();
        bad[at_a as usize + 20] ^= 0xFF;
        let mut r = open(&f, &bad).unwrap();
        let mut buf = vec![0u8; 100];
        let e = r.read_exact_at(5000, &mut buf).unwrap_err();
        assert!(e.to_string().contains("compressed piece"), "{e}");
        r.read_exact_at(100, &mut buf).unwrap();
        assert_eq!(buf, want[100..200]);
        // Pieces that overlap, take more than they decode to, or decode to more than uffs decodes.
        let mut g = f.clone();
        g.packed[1].len = 4097;
        assert!(matches!(open(&g, &vol), Err(ContentError::Corrupt { .. })));
        let mut g = f.clone();
        g.packed[1].skip = 4097;
        assert!(matches!(open(&g, &vol), Err(ContentError::Corrupt { .. })));
        let mut g = f.clone();
        g.packed[0].decoded_len = u64::MAX;
        assert!(matches!(
            open(&g, &vol),
            Err(ContentError::Unsupported { .. })
        ));
    }

    /// LZNT1 chunks of 4,096 repeats of `c`: a literal and one back-reference.
    fn repeat_chunk(c: u8) -> Vec<u8> {
        vec![0x03, 0xB0, 0b10, c, 0xFC, 0x0F]
    }

    #[test]
    fn compression_units_stored_sparse_and_compressed() {
        // Units of 16 clusters of 512 bytes (8 KiB). Unit 0: compressed into 9 clusters split over two runs (a
        // chunk of 'a' repeated, then a stored chunk). Unit 1: stored whole. Unit 2: sparse. Unit 3: compressed
        // in one cluster, the stream ending inside it.
        let mut vol = volume(64);
        let stored: Vec<u8> = (0..4096u32).map(|i| (i * 13 % 256) as u8).collect();
        let mut u0 = repeat_chunk(b'a');
        u0.extend_from_slice(&[0xFF, 0x3F]);
        u0.extend_from_slice(&stored);
        let (lcn_a, lcn_b) = (2u64, 30u64);
        vol[(lcn_a * CS) as usize..(lcn_a * CS) as usize + 5 * CS as usize]
            .copy_from_slice(&u0[..5 * CS as usize]);
        let rest = &u0[5 * CS as usize..];
        vol[(lcn_b * CS) as usize..(lcn_b * CS) as usize + rest.len()].copy_from_slice(rest);
        let mut u3 = repeat_chunk(b'z');
        u3.extend_from_slice(&[0, 0]);
        vol[(50 * CS) as usize..(50 * CS) as usize + u3.len()].copy_from_slice(&u3);
        let runs = [
            (5, Some(lcn_a)),
            (4, Some(lcn_b)),
            (7, None),
            (16, Some(8)), // clusters 8..24: stored as is
            (16, None),
            (1, Some(50)),
            (15, None),
        ];
        let size = 3 * 8192 + 5000;
        let mut r = reader(&vol, &[(0, runlist(&runs))], size, size, 4).unwrap();
        assert!(r.info().compressed);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all.len() as u64, size);
        assert!(all[..4096].iter().all(|&b| b == b'a'));
        assert_eq!(&all[4096..8192], &stored[..]);
        assert_eq!(
            &all[8192..16384],
            &vol[(8 * CS) as usize..(24 * CS) as usize]
        );
        assert!(all[16384..24576].iter().all(|&b| b == 0));
        assert!(all[24576..24576 + 4096].iter().all(|&b| b == b'z'));
        assert!(all[24576 + 4096..].iter().all(|&b| b == 0));
        // Reads inside a unit, across units.
        let mut b = vec![0u8; 300];
        r.read_exact_at(4000, &mut b).unwrap();
        assert_eq!(&b[..], &all[4000..4300]);
        r.read_exact_at(16300, &mut b).unwrap();
        assert_eq!(&b[..], &all[16300..16600]);
        // A damaged unit is an error, never a fault.
        vol[(50 * CS) as usize] = 0xFF;
        vol[(50 * CS) as usize + 1] = 0xBF;
        let mut r = reader(&vol, &[(0, runlist(&runs))], size, size, 4).unwrap();
        let e = r.read_exact_at(24576, &mut b).unwrap_err();
        assert!(e.to_string().contains("compression unit 3"), "{e}");
        // A unit larger than uffs decodes.
        let e = reader(&vol, &[(0, runlist(&runs))], size, size, 30).unwrap_err();
        assert!(matches!(e, ContentError::Unsupported { .. }), "{e}");
    }

    /// A real volume (made by mkntfs and ntfs-3g): its files, and `$MFT` read as a stream agrees with the records
    /// the volume reads through its own map.
    #[test]
    fn a_real_volume() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/linux-made/testfs1"
        );
        let device = crate::device::Device::open(std::path::Path::new(path)).unwrap();
        let vol = &crate::Volume::open_ntfs(path, device, None).unwrap();
        let mut r = open_stream(vol, 65, "").unwrap();
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        assert_eq!(v, b"12345");
        assert!(r.info().resident && r.info().in_use);
        let mut r = open_stream(vol, 66, "").unwrap();
        assert_eq!(
            (r.len(), r.info().resident, r.info().fragments),
            (1000, false, 1)
        );
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        assert!(v.iter().enumerate().all(|(i, &b)| b == b"12345"[i % 5]));
        let mut mft = open_stream(vol, 0, "").unwrap();
        assert_eq!(mft.len(), vol.mft_size);
        let mut a = vec![0u8; 16 * vol.record_size as usize];
        let mut b = a.clone();
        mft.read_exact_at(0, &mut a).unwrap();
        vol.read_records(0, &mut b).unwrap();
        assert_eq!(a, b);
        let all = streams(vol, 8).unwrap();
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["", "$Bad"]);
        // $BadClus:$Bad spans the volume in one hole.
        assert!(all[1].fragments == 0 && all[1].size + 4096 > vol.boot.unwrap().volume_size());
        // Errors name what is wrong.
        assert!(matches!(
            open_stream(vol, 5, ""),
            Err(ContentError::Directory { .. })
        ));
        assert!(matches!(
            open_stream(vol, 66, "nope"),
            Err(ContentError::NoStream { .. })
        ));
        assert!(matches!(
            open_stream(vol, 1 << 40, ""),
            Err(ContentError::NoRecord { .. })
        ));
        assert!(
            open_stream(vol, 8, "$bad").is_ok(),
            "stream names ignore case"
        );
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    /// Random runlists (hostile bytes, and plausible runs with random holes), sizes and compression units over a
    /// random little volume: opening and reading never panics, and a plain stream reads as its model says.
    #[test]
    fn random_runlists_and_units_never_fault() {
        let mut rng = Rng(0xC0FF_EE00_1234_5678);
        for case in 0..3000 {
            let clusters = 1 + rng.below(80);
            let vol: Vec<u8> = (0..clusters * CS).map(|_| rng.next() as u8).collect();
            let cu = match rng.below(4) {
                0 => 4,
                1 => rng.below(8) as u8,
                _ => 0,
            };
            let (pieces, runs) = if case % 2 == 0 {
                let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
                (vec![(rng.below(4), bytes)], None)
            } else {
                let runs: Vec<(u64, Option<u64>)> = (0..1 + rng.below(12))
                    .map(|_| {
                        let len = 1 + rng.below(20);
                        let lcn = (rng.below(5) > 0).then(|| rng.below(clusters + 4));
                        (len, lcn)
                    })
                    .collect();
                (vec![(0, runlist(&runs))], Some(runs))
            };
            let total: u64 = runs.iter().flatten().map(|r| r.0).sum();
            let size = match rng.below(3) {
                0 => rng.next() >> rng.below(64),
                _ => rng.below(total * CS + 2),
            };
            let init = if rng.below(2) == 0 {
                size
            } else {
                rng.below(size + 1)
            };
            let Ok(mut r) = reader(&vol, &pieces, size, init, cu) else {
                continue;
            };
            let mut b = vec![0u8; 1 + rng.below(20_000) as usize];
            for _ in 0..4 {
                let off = rng.below(size.saturating_add(100));
                let _ = r.read_at(off, &mut b);
            }
            if let (Some(runs), 0) = (runs, cu) {
                if size <= total * CS {
                    let mut all = Vec::new();
                    r.seek(SeekFrom::Start(0)).unwrap();
                    r.read_to_end(&mut all).unwrap();
                    assert_eq!(all, model(&vol, &runs, size, init), "case {case}");
                }
            }
        }
    }
}
