//! The index file: one per volume, loaded by memory-mapping it, without parsing or copying.
//!
//! Layout, little-endian:
//! * a 128-byte header: magic `UFFSIDX\0`, format version, section count, flags (bit 0: deleted entries were
//!   read), MFT record size, volume serial, MFT record count, entry count, root entry, change-journal position,
//!   source change stamp, build time, change-journal id, the file's length, where the data starts; its last 8
//!   bytes are an xxh3 checksum of the header, the section table and the chunk table;
//! * the section table: per section its id, element size, offset, length and 8 reserved bytes (zero; format 2
//!   kept a checksum there);
//! * the chunk table: the checksum of each [`crate::check::CHUNK`] bytes of the data after it (see
//!   [`crate::check`]);
//! * the sections, each starting on a 64-byte boundary, each a raw little-endian array: the source text, the
//!   index columns, optional ones that older readers ignore (the record hashes and the timeline, see
//!   [`crate::timeline`]), then the search aids (see [`crate::aids`]). Readers find sections by id, in any order.
//!
//! A file is written to a temporary name in the same directory, synced, renamed over the real name, and the
//! directory synced: a crash leaves either the old file or the new one, never a half-written one under the real
//! name. A build writes the columns while it builds the aids ([`write_with_aids`]): the header, which holds the
//! tables of all of them, goes last, into room reserved for the most the aids can take.
//!
//! Two ways in: [`read`] checks every chunk and every invariant the accessors rely on before the index is used
//! (a daemon, which keeps the index for long); [`open`] costs O(1): it checks the header and the tables and
//! leaves the chunks to be checked as they are read (a one-shot query, see [`crate::check`]). Either way a
//! damaged file is refused before anything from it is shown.

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::aids::{ExtIds, SearchAids};
use crate::apart::Apart;
use crate::check::FileCheck;
use crate::column::{Col, Plain};
use crate::index::{Index, VolumeMeta};
use crate::layer::Delta;
use crate::names::Names;
use crate::packed::Packed;
use crate::posix::PosixColumn;
use crate::sparse::{Allocated, Sizes, Sparse};
use crate::timecol::Times;
use crate::timeline::Timeline;
use memmap2::Mmap;
use thiserror::Error;

pub const MAGIC: &[u8; 8] = b"UFFSIDX\0";
/// The format written. Format 4 dropped the stored folder totals (sections 15 and 16), which the query layer
/// now derives when first asked; a format 3 file is still read, its totals sections ignored. Format 5 stores the
/// names once, folded, with the bits that give them back as written (see [`crate::names`]), and the allocated
/// sizes and reparse tags as what does not follow from the rest (see [`crate::sparse`]); the names and these
/// columns of a format 3 or 4 file are converted as it is opened. Format 6 stores the sorted orders and ranks
/// in as few bits as the entry count needs (see [`crate::packed`]); those of an older file are packed as it is
/// opened.
pub const VERSION: u32 = 6;
/// The oldest format read.
pub const OLDEST_VERSION: u32 = 3;
const HEADER_LEN: usize = 128;
const SECTION_ENTRY_LEN: usize = 32;
const ALIGN: usize = 64;
/// More sections than any version writes: a bound before the table is read.
const MAX_SECTIONS: usize = 96;

#[derive(Debug, Error)]
pub enum FileError {
    // Transparent: the io error is the whole message, and is not repeated as its own source.
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("not a uffs index file (bad magic)")]
    BadMagic,
    #[error("index format version {found} is not supported (this uffs reads versions {OLDEST_VERSION} to {VERSION}); rebuild the index")]
    Version { found: u32 },
    #[error("index file is damaged: {0}; rebuild the index")]
    Corrupt(&'static str),
    /// A delta whose index was written again since (a crash between writing a merged index and removing the
    /// delta leaves one): it describes nothing current and is ignored.
    #[error("the delta was made over an earlier version of its index")]
    StaleDelta,
    /// A delta file ([`write_delta`]) opened as an index: it holds only what changed over another index, and
    /// is read through it ([`read_delta`]).
    #[error("a delta file (what changed over the index beside it), not an index on its own")]
    IsDelta,
}

/// True when the bytes start with the index file magic.
pub fn is_index_file(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Section ids. Columns of the index are 2..=7, 10..=13, 17..=31 (formats 3 and 4 had the sizes, allocated
/// sizes and reparse tags as plain columns 8, 9 and 14; format 3 also had 15 and 16, the folder totals), search
/// aids 34..=50 (formats 3 and 4 also had 32, the folded names).
mod id {
    pub const SOURCE: u32 = 1;
    /// The names, folded (format 5), or as written (formats 3 and 4).
    pub const NAMES: u32 = 2;
    pub const NAME_STARTS: u32 = 3;
    /// The names' upper-case bits, and the names kept whole apart (see [`crate::names`]).
    pub const NAME_UPPER: u32 = 20;
    pub const NAMES_APART_IDS: u32 = 21;
    pub const NAMES_APART_STARTS: u32 = 22;
    pub const NAMES_APART_TEXT: u32 = 23;
    /// The allocated sizes (see [`crate::sparse::Allocated`]) and the reparse tags.
    pub const ALLOC_CODES: u32 = 24;
    pub const ALLOC_UNIT: u32 = 25;
    pub const ALLOC_APART_IDS: u32 = 26;
    pub const ALLOC_APART_VALUES: u32 = 27;
    pub const REPARSE_IDS: u32 = 28;
    pub const REPARSE_TAGS: u32 = 29;
    /// The sizes (see [`crate::sparse::Sizes`]).
    pub const SIZE_LOW: u32 = 17;
    pub const SIZE_BIG: u32 = 18;
    pub const SIZE_HIGH_IDS: u32 = 19;
    pub const SIZE_HIGH_VALUES: u32 = 30;
    /// Each time column (created, modified, MFT changed, accessed): its codes (before format 6: the plain
    /// column), and the ids and values of the times kept apart.
    pub const TIMES: [[u32; 3]; 4] = [[10, 74, 78], [11, 75, 79], [12, 76, 80], [13, 77, 81]];
    /// The four time columns' frames (`[base, unit]` each), written beside the source so that opening a file
    /// reads them from the chunk it checks anyway.
    pub const TIME_FRAMES: u32 = 70;
    /// Formats 3 and 4: the plain columns.
    pub const SIZE_V4: u32 = 8;
    pub const ALLOCATED_V4: u32 = 9;
    pub const REPARSE_TAG_V4: u32 = 14;
    /// The first section of the search aids, there when they are.
    pub const AIDS: u32 = 34;
    /// Optional: a hash per MFT record, of its used bytes, for re-scans (older files lack it; older readers
    /// ignore it). Files of uffs before it had 60, hashes of whole records, which this uffs ignores in turn: it
    /// would find every record changed, so such an index is rebuilt at its first re-scan, as one without hashes.
    pub const RECORD_HASHES: u32 = 68;
    /// A delta file's own sections (see [`super::write_delta`]).
    pub const DELTA_BASE: u32 = 61;
    pub const DELTA_HIDDEN: u32 = 62;
    pub const DELTA_HASHES: u32 = 64;
    /// Optional, in a shadow copy's delta: which store it gives (see [`crate::layer::StoreIdentity`]; deltas
    /// written before uffs kept it lack it, and older readers ignore it).
    pub const DELTA_STORE: u32 = 90;
    /// Optional, in a shadow copy's delta whose store is kept on another volume found through a source the user
    /// gave: that source, as UTF-8 (see [`crate::layer::StoreIdentity::storage`]).
    pub const DELTA_STORAGE: u32 = 91;
    /// Optional, together: the timeline's records and their block offsets (see [`crate::timeline`]; files
    /// written before uffs kept them lack both, and older readers ignore them).
    pub const TIMELINE: u32 = 66;
    pub const TIMELINE_BLOCKS: u32 = 67;
    /// Optional, together: the entries with an 8.3 alias, where each alias starts, and their text (see
    /// [`crate::apart`]; files written before uffs kept them lack them, and older readers ignore them).
    pub const ALIAS_IDS: u32 = 82;
    pub const ALIAS_STARTS: u32 = 83;
    pub const ALIAS_TEXT: u32 = 84;
    /// Optional, together: owners and permissions (see [`crate::posix`]), on volumes that keep them (ext; older
    /// readers ignore them).
    pub const POSIX_TABLE: u32 = 85;
    pub const POSIX_CODES: u32 = 86;
    /// Optional, together: symbolic links' targets, as the aliases are kept.
    pub const LINK_IDS: u32 = 87;
    pub const LINK_STARTS: u32 = 88;
    pub const LINK_TEXT: u32 = 89;
    /// Optional, together: the entries whose exclusive bytes are not their allocated size, and those bytes (see
    /// [`crate::Index::exclusive`]), on volumes whose files share data (Btrfs, XFS with reflink; older readers ignore them).
    pub const EXCLUSIVE_IDS: u32 = 92;
    pub const EXCLUSIVE_VALUES: u32 = 93;
}

mod write;
use write::write_with;
pub use write::{write, write_format_4, write_timed, write_with_aids, WriteTimes};

/// The checksum of the header (without its last 8 bytes, where the checksum goes) and the section table.
fn header_checksum(head_and_table: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = twox_hash::XxHash3_64::new();
    h.write(&head_and_table[..HEADER_LEN - 8]);
    h.write(&head_and_table[HEADER_LEN..]);
    h.finish()
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// Rewrites the header's checksum of the index file in `bytes` to match its header and tables, when it has the
/// magic and they fit: for fuzzing, so that mutated data gets past the O(1) checks of [`open`] and reaches the
/// engine (which must hold its bounds on it).
pub fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN || !is_index_file(bytes) {
        return;
    }
    let d = le_u64(bytes, 96) as usize;
    if (HEADER_LEN..=bytes.len()).contains(&d) {
        let sum = header_checksum(&bytes[..d]);
        bytes[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
    }
}

/// What the header says, read without loading the sections (for `uffs daemon status`, staleness checks).
pub fn read_meta(path: &Path) -> Result<(VolumeMeta, u64), FileError> {
    let mut f = File::open(path)?;
    let mut head = vec![0u8; HEADER_LEN];
    io::Read::read_exact(&mut f, &mut head).map_err(|_| FileError::BadMagic)?;
    let h = parse_header(&head)?;
    Ok((h.meta, h.entries))
}

/// The header's fields.
struct Header {
    version: u32,
    meta: VolumeMeta,
    entries: u64,
    sections: usize,
    root: u32,
    file_len: u64,
    data_start: u64,
}

fn parse_header(b: &[u8]) -> Result<Header, FileError> {
    if b.len() < HEADER_LEN || !is_index_file(b) {
        return Err(FileError::BadMagic);
    }
    let version = le_u32(b, 8);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(FileError::Version { found: version });
    }
    let sections = le_u32(b, 12) as usize;
    if sections == 0 || sections > MAX_SECTIONS {
        return Err(FileError::Corrupt("the section count is out of range"));
    }
    let meta = VolumeMeta {
        source: String::new(),
        has_deleted: le_u32(b, 16) & 1 != 0,
        record_size: le_u32(b, 20),
        serial: le_u64(b, 24),
        records_total: le_u64(b, 32),
        journal_usn: le_u64(b, 56),
        change_stamp: le_u64(b, 64),
        built_at: le_u64(b, 72),
        journal_id: le_u64(b, 80),
        bytes_in_use: le_u64(b, 104),
        bytes_total: le_u64(b, 112),
        filesystem: crate::FileSystem::from_code(le_u32(b, 52))
            .ok_or(FileError::Corrupt("the file system number is unknown"))?,
    };
    Ok(Header {
        version,
        meta,
        entries: le_u64(b, 40),
        sections,
        root: le_u32(b, 48),
        file_len: le_u64(b, 88),
        data_start: le_u64(b, 96),
    })
}

/// Maps, checks wholly and returns an index file: every chunk's checksum and every invariant the index relies
/// on. Any damage is an error; nothing is half-loaded. For a process that keeps the index (the daemon).
pub fn read(path: &Path) -> Result<Index, FileError> {
    let idx = open(path)?;
    verify_all(&idx)?;
    if let Some(a) = &idx.aids {
        a.fences(&idx);
    }
    // Checking touched every page. Release them from this process: they stay in the page cache, and each query
    // maps back only what it reads, so unused columns cost no process memory.
    release_pages(&idx);
    Ok(idx)
}

/// Maps an index file and checks, in O(1), its header, its tables and that every section lies inside it with
/// the size the index needs; the data is checked as it is read ([`Index::verify_touched`] before anything
/// read is shown, or [`verify_all`]). Every accessor holds its bounds whatever the unchecked bytes are.
pub fn open(path: &Path) -> Result<Index, FileError> {
    let file = File::open(path)?;
    // SAFETY: the map is read-only. Index files are replaced by rename, never rewritten in place, so the mapped
    // file does not change while it is mapped (a user truncating it by hand could make a read fault).
    let map = unsafe { Mmap::map(&file)? };
    // Pages one at a time (with the kernel's fault-around), not whole huge folios: a query maps, and so checks,
    // only the chunks it reads.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::NoHugePage);
    let map = Arc::new(map);
    let (index, table) = from_map_sections(&map, map.len(), true)?;
    if table.iter().any(|(i, ..)| *i == id::DELTA_BASE) {
        return Err(FileError::IsDelta);
    }
    Ok(index)
}

/// Checks every chunk of `idx`'s file and every invariant its accessors' answers rely on (parents reach the
/// root, orders are permutations...); nothing for an index built in memory.
pub fn verify_all(idx: &Index) -> Result<(), FileError> {
    if let Some(check) = &idx.check {
        check.verify_all()?;
        validate(idx, idx.len())?;
        if let Some(a) = &idx.aids {
            a.validate(idx.len()).map_err(FileError::Corrupt)?;
        }
    }
    Ok(())
}

/// Checks wholly and returns an index held in `bytes` (for tests and fuzzing): the bytes are copied once into
/// an anonymous map, which the columns then share as they share a file's.
pub fn from_bytes(bytes: &[u8]) -> Result<Index, FileError> {
    let idx = open_bytes(bytes)?;
    verify_all(&idx)?;
    Ok(idx)
}

/// Opens an index held in `bytes` as [`open`] does: its data not checked yet.
pub fn open_bytes(bytes: &[u8]) -> Result<Index, FileError> {
    let mut anon = memmap2::MmapMut::map_anon(bytes.len().max(1))?;
    anon[..bytes.len()].copy_from_slice(bytes);
    let map = Arc::new(anon.make_read_only()?);
    Ok(from_map_sections(&map, bytes.len(), false)?.0)
}

/// A section as the table gives it: id, element size, byte range.
type Section = (u32, usize, std::ops::Range<usize>);

/// The index in `map[..len]` and the file's section table, after the O(1) checks of [`open`].
fn from_map_sections(
    map: &Arc<Mmap>,
    len: usize,
    file_backed: bool,
) -> Result<(Index, Vec<Section>), FileError> {
    let b = &map[..len];
    let h = parse_header(b)?;
    if h.file_len != len as u64 {
        return Err(FileError::Corrupt(
            "the file is not as long as its header says (truncated?)",
        ));
    }
    let data_start = usize::try_from(h.data_start)
        .ok()
        .filter(|&d| d <= len)
        .ok_or(FileError::Corrupt("the data lies outside the file"))?;
    let table_end = HEADER_LEN + h.sections * SECTION_ENTRY_LEN;
    let chunks = FileCheck::chunks(data_start, len);
    if table_end + chunks * 8 > data_start {
        return Err(FileError::Corrupt("the chunk table does not fit"));
    }
    if header_checksum(&b[..data_start]) != le_u64(b, HEADER_LEN - 8) {
        return Err(FileError::Corrupt("the header's checksum does not match"));
    }
    let sums = (0..chunks).map(|i| le_u64(b, table_end + i * 8)).collect();
    let check = Arc::new(FileCheck::new(
        Arc::clone(map),
        len,
        data_start,
        sums,
        file_backed,
    ));
    let mut meta = h.meta;
    let mut table = Vec::with_capacity(h.sections);
    for i in 0..h.sections {
        let e = HEADER_LEN + i * SECTION_ENTRY_LEN;
        let (sid, size) = (le_u32(b, e), le_u32(b, e + 4) as usize);
        let (off, slen) = (le_u64(b, e + 8), le_u64(b, e + 16));
        let range = usize::try_from(off)
            .ok()
            .zip(usize::try_from(slen).ok())
            .and_then(|(o, l)| Some(o..o.checked_add(l)?))
            .filter(|r| r.start >= data_start && r.end <= len)
            .ok_or(FileError::Corrupt("a section lies outside the file"))?;
        table.push((sid, size, range));
    }
    let find = |want: u32| table.iter().find(|(sid, ..)| *sid == want);
    fn col<T: Plain>(map: &Arc<Mmap>, s: Option<&Section>) -> Result<Col<T>, FileError> {
        let (_, size, r) = s.ok_or(FileError::Corrupt("a section is missing"))?;
        if *size != std::mem::size_of::<T>() {
            return Err(FileError::Corrupt("a section has the wrong element size"));
        }
        Col::mapped(map, r.start, r.len()).ok_or(FileError::Corrupt(
            "a section is misaligned or not whole elements",
        ))
    }
    fn sparse<T: Plain>(
        map: &Arc<Mmap>,
        ids: Option<&Section>,
        values: Option<&Section>,
    ) -> Result<Sparse<T>, FileError> {
        Ok(Sparse {
            ids: col(map, ids)?,
            values: col(map, values)?,
        })
    }
    // The source is small and shown as it is: checked now.
    let source = find(id::SOURCE).ok_or(FileError::Corrupt("a section is missing"))?;
    check.verify_range(source.2.clone())?;
    meta.source = String::from_utf8_lossy(&b[source.2.clone()]).into_owned();
    let c = |sid: u32| find(sid);
    let n = usize::try_from(h.entries)
        .map_err(|_| FileError::Corrupt("entry count is out of range"))?;
    // Orders and ranks: packed from format 6; plain 32-bit columns before, packed now.
    let packed = |sid: u32| -> Result<Packed, FileError> {
        if h.version >= 6 {
            Packed::from_bytes(col(map, c(sid))?, n)
                .ok_or(FileError::Corrupt("a search aid has the wrong length"))
        } else {
            Ok(Packed::from_values(&col::<u32>(map, c(sid))?))
        }
    };
    let aids = if find(id::AIDS).is_some() {
        Some(SearchAids {
            name_order: packed(34)?,
            name_rank: packed(35)?,
            path_order: packed(36)?,
            path_rank: packed(37)?,
            size_order: packed(38)?,
            created_order: packed(39)?,
            modified_order: packed(40)?,
            accessed_order: packed(41)?,
            ext_id: match c(42) {
                Some((_, 2, _)) => ExtIds::Narrow(col(map, c(42))?),
                s => ExtIds::Wide(col(map, s)?),
            },
            ext_text: col(map, c(43))?,
            ext_starts: col(map, c(44))?,
            trigrams: col(map, c(45))?,
            ext_order: packed(50)?,
            // Stored since after format 6 came out: read when present.
            name_fences: c(51).map_or(Ok(Col::default()), |s| col(map, Some(s)))?,
            name_fence_starts: c(52).map_or(Ok(Col::default()), |s| col(map, Some(s)))?,
            fences: Default::default(),
        })
    } else {
        None
    };
    let name_start: Col<u32> = col(map, c(id::NAME_STARTS))?;
    let (names, size, allocated, reparse_tag) = if h.version >= 5 {
        let names = Names {
            folded: col(map, c(id::NAMES))?,
            upper: col(map, c(id::NAME_UPPER))?,
            apart_ids: col(map, c(id::NAMES_APART_IDS))?,
            apart_starts: col(map, c(id::NAMES_APART_STARTS))?,
            apart_text: col(map, c(id::NAMES_APART_TEXT))?,
        };
        let allocated = Allocated {
            codes: col(map, c(id::ALLOC_CODES))?,
            unit: col(map, c(id::ALLOC_UNIT))?,
            apart: sparse(map, c(id::ALLOC_APART_IDS), c(id::ALLOC_APART_VALUES))?,
        };
        let tags = sparse(map, c(id::REPARSE_IDS), c(id::REPARSE_TAGS))?;
        let size = Sizes {
            low: col(map, c(id::SIZE_LOW))?,
            big: col(map, c(id::SIZE_BIG))?,
            high: sparse(map, c(id::SIZE_HIGH_IDS), c(id::SIZE_HIGH_VALUES))?,
        };
        (names, size, allocated, tags)
    } else {
        // The names as written, and plain columns: converted now (a pass over them, once per open of an older
        // file; a daemon builds such a file again).
        let raw: Col<u8> = col(map, c(id::NAMES))?;
        let size: Col<u64> = col(map, c(id::SIZE_V4))?;
        let allocated: Col<u64> = col(map, c(id::ALLOCATED_V4))?;
        let tags: Col<u32> = col(map, c(id::REPARSE_TAG_V4))?;
        if allocated.len() != size.len() {
            return Err(FileError::Corrupt("column lengths disagree"));
        }
        (
            Names::from_raw(&raw, &name_start),
            Sizes::from_values(&size),
            Allocated::from_values(&allocated, &size),
            Sparse::from_values(tags.iter().copied(), 0),
        )
    };
    // The times: packed from format 6; plain 64-bit columns before, packed now.
    let frames: Vec<u64> = if h.version >= 6 {
        let s = find(id::TIME_FRAMES).ok_or(FileError::Corrupt("a section is missing"))?;
        check.verify_range(s.2.clone())?;
        let frames: Col<u64> = col(map, Some(s))?;
        if frames.len() != 8 {
            return Err(FileError::Corrupt("the time frames are damaged"));
        }
        frames.to_vec()
    } else {
        Vec::new()
    };
    let times = |k: usize| -> Result<Times, FileError> {
        let [codes, ids, values] = id::TIMES[k];
        if h.version >= 6 {
            let codes = Packed::from_bytes(col(map, c(codes))?, n)
                .ok_or(FileError::Corrupt("a time column has the wrong size"))?;
            let frame = [frames[2 * k], frames[2 * k + 1]];
            Ok(Times::from_parts(
                frame,
                codes,
                sparse(map, c(ids), c(values))?,
            ))
        } else {
            Ok(Times::from_values(&col::<u64>(map, c(codes))?))
        }
    };
    let (created, modified, mft_changed, accessed) = (times(0)?, times(1)?, times(2)?, times(3)?);
    let idx = Index {
        meta,
        names,
        name_start,
        parent: col(map, c(4))?,
        record: col(map, c(5))?,
        sequence: col(map, c(6))?,
        flags: col(map, c(7))?,
        size,
        allocated,
        created,
        modified,
        mft_changed,
        accessed,
        reparse_tag,
        aliases: match (
            find(id::ALIAS_IDS),
            find(id::ALIAS_STARTS),
            find(id::ALIAS_TEXT),
        ) {
            (None, None, None) => Apart::default(),
            (ids, starts, text) => Apart {
                ids: col(map, ids)?,
                starts: col(map, starts)?,
                text: col(map, text)?,
            },
        },
        posix: match (find(id::POSIX_TABLE), find(id::POSIX_CODES)) {
            (None, None) => PosixColumn::default(),
            (table, codes) => PosixColumn::from_parts(col(map, table)?, col(map, codes)?).ok_or(
                FileError::Corrupt("the owners and permissions column has the wrong size"),
            )?,
        },
        link_targets: match (
            find(id::LINK_IDS),
            find(id::LINK_STARTS),
            find(id::LINK_TEXT),
        ) {
            (None, None, None) => Apart::default(),
            (ids, starts, text) => Apart {
                ids: col(map, ids)?,
                starts: col(map, starts)?,
                text: col(map, text)?,
            },
        },
        exclusive: match (find(id::EXCLUSIVE_IDS), find(id::EXCLUSIVE_VALUES)) {
            (None, None) => None,
            (ids, values) => Some(sparse(map, ids, values)?),
        },
        root: h.root,
        aids,
        record_hashes: match find(id::RECORD_HASHES) {
            Some(s) => col(map, Some(s))?,
            None => Col::default(),
        },
        timeline: match (find(id::TIMELINE), find(id::TIMELINE_BLOCKS)) {
            (None, None) => None,
            (data, blocks) => Some(Timeline {
                data: col(map, data)?,
                blocks: col(map, blocks)?,
            }),
        },
        check: Some(check),
        format: h.version,
        grafts: None,
    };
    check_shape(&idx, n)?;
    Ok((idx, table))
}

/// The index is served from a mapped file, whose pages the process may drop and read back, and every chunk of it
/// has been checked: a one-shot query finds the chunks it must check from its page table, so pages it read must
/// stay there until it has checked them.
fn releasable(idx: &Index) -> bool {
    idx.check
        .as_ref()
        .is_some_and(|c| c.file_backed() && c.all_good())
}

/// Releases from the process the pages of `idx`'s file that it has touched (they stay in the page cache; the next
/// read maps them back), as loading does: for a daemon after an update, which reads columns of its index that
/// queries do not.
pub fn release_pages(idx: &Index) {
    #[cfg(unix)]
    if let Some(map) = idx
        .check
        .as_ref()
        .filter(|_| releasable(idx))
        .map(|c| c.map())
    {
        // SAFETY: as in `read`: the map is private and read-only, so dropping its page table entries only makes
        // the next access read the same file bytes again.
        let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    }
    #[cfg(not(unix))]
    let _ = idx;
}

/// Releases from the process the pages of the columns that only updates read (record numbers and record
/// hashes, a check for changes reads them whole), leaving those queries read: for a daemon after every check.
pub fn release_update_pages(idx: &Index) {
    if releasable(idx) {
        idx.record.release_pages();
        idx.record_hashes.release_pages();
    }
}

/// Releases from the process the pages of `order`, one of `idx`'s search aids, when they are a checked file's:
/// for a query that has just read it whole, once (a sort of everything), which a daemon need not keep.
pub fn release_order_pages(idx: &Index, order: &Packed) {
    if releasable(idx) {
        order.release_pages();
    }
}

/// Where the delta over index file `path` is kept: beside it, `FILE.delta`.
pub fn delta_path(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".delta");
    p.into()
}

/// What ties a delta to its base: the base's build time, entry count and name bytes.
fn base_identity(base: &Index) -> [u64; 3] {
    [
        base.meta.built_at,
        base.len() as u64,
        base.names.len() as u64,
    ]
}

/// Writes the delta over `base` to `path` (see [`crate::layer`]), atomically like an index: an index file with
/// the delta's entries and three more sections (the base's identity, the hidden bits and the record hashes
/// changed).
pub fn write_delta(delta: &Delta, base: &Index, path: &Path) -> Result<(), FileError> {
    fn bytes<T: Plain>(v: Vec<T>) -> Cow<'static, [u8]> {
        Col::from(v).le_bytes().into_owned().into()
    }
    let hashes: Vec<u64> = delta
        .hashes
        .iter()
        .map(|&(r, h)| u64::from(r) << 32 | u64::from(h))
        .collect();
    let mut extra = vec![
        (id::DELTA_BASE, 8, bytes(base_identity(base).to_vec())),
        (id::DELTA_HIDDEN, 8, bytes(delta.hidden.clone())),
        (id::DELTA_HASHES, 8, bytes(hashes)),
    ];
    if let Some(st) = &delta.store {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let id = |g: &[u8; 16]| [word(&g[..8]), word(&g[8..])];
        let mut words = id(&st.shadow_copy_id).to_vec();
        words.extend(id(&st.store_id));
        words.push(st.created);
        extra.push((id::DELTA_STORE, 8, bytes(words)));
        if let Some(storage) = &st.storage {
            extra.push((id::DELTA_STORAGE, 1, storage.as_bytes().to_vec().into()));
        }
    }
    write_with(&delta.index, extra, path).map(|_| ())
}

/// Reads the delta file `path` over `base`; refused (as damaged) when it was made over another base.
pub fn read_delta(path: &Path, base: &Index) -> Result<Delta, FileError> {
    let (map, index, table) = map_delta(path)?;
    verify_all(&index)?;
    let words = |want: u32| section_words(&map, &table, want);
    if words(id::DELTA_BASE)? != base_identity(base) {
        return Err(FileError::StaleDelta);
    }
    let hidden = words(id::DELTA_HIDDEN)?;
    if hidden.len() != base.len().div_ceil(64) {
        return Err(FileError::Corrupt(
            "the delta's hidden entries do not fit its base",
        ));
    }
    let hashes = words(id::DELTA_HASHES)?
        .into_iter()
        .map(|w| ((w >> 32) as u32, w as u32))
        .collect();
    let store = store_identity(&map, &table)?;
    // As for an index: the verified pages go back to the page cache until a query reads them.
    #[cfg(unix)]
    // SAFETY: as in `read`.
    let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    Ok(Delta {
        index: Arc::new(index),
        store,
        hidden,
        hashes,
    })
}

/// Which shadow copy the delta file `path` gives, without reading the rest of it (its base is not needed);
/// `None` for a delta of no shadow copy, or one written before uffs recorded it.
pub fn read_delta_store(path: &Path) -> Result<Option<crate::layer::StoreIdentity>, FileError> {
    let (map, index, table) = map_delta(path)?;
    if let Some(check) = &index.check {
        for (_, _, r) in table
            .iter()
            .filter(|(i, ..)| [id::DELTA_STORE, id::DELTA_STORAGE].contains(i))
        {
            check.verify_range(r.clone())?;
        }
    }
    store_identity(&map, &table)
}

/// The delta file `path` mapped, its index opened (not yet checked) and its section table.
fn map_delta(path: &Path) -> Result<(Arc<Mmap>, Index, Vec<Section>), FileError> {
    let mut file = File::open(path)?;
    let map = Arc::new(if cfg!(windows) {
        // Windows cannot replace a file while it is mapped, and the daemon writes the delta again after each
        // update: its bytes are copied into memory instead (a delta is small beside its index).
        use std::io::Read;
        let len = file.metadata()?.len() as usize;
        let mut copy = memmap2::MmapMut::map_anon(len.max(1))?;
        file.read_exact(&mut copy[..len])?;
        let copy = copy.make_read_only()?;
        if copy.len() != len {
            return Err(FileError::Corrupt("a delta file is empty"));
        }
        copy
    } else {
        // SAFETY: as in `read`: files are replaced by rename, never rewritten in place.
        unsafe { Mmap::map(&file)? }
    });
    let (index, table) = from_map_sections(&map, map.len(), true)?;
    Ok((map, index, table))
}

/// The 64-bit words of section `want` of a delta file.
fn section_words(map: &[u8], table: &[Section], want: u32) -> Result<Vec<u64>, FileError> {
    let (_, size, r) = table
        .iter()
        .find(|(i, ..)| *i == want)
        .ok_or(FileError::Corrupt("a delta section is missing"))?;
    if *size != 8 || r.len() % 8 != 0 {
        return Err(FileError::Corrupt(
            "a delta section has the wrong element size",
        ));
    }
    Ok(map[r.clone()]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// The store identity a delta file's section holds, when it has one.
fn store_identity(
    map: &[u8],
    table: &[Section],
) -> Result<Option<crate::layer::StoreIdentity>, FileError> {
    if !table.iter().any(|(i, ..)| *i == id::DELTA_STORE) {
        return Ok(None);
    }
    let w = section_words(map, table, id::DELTA_STORE)?;
    if w.len() != 5 {
        return Err(FileError::Corrupt(
            "a delta's store section has the wrong length",
        ));
    }
    let guid = |a: u64, b: u64| {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&a.to_le_bytes());
        g[8..].copy_from_slice(&b.to_le_bytes());
        g
    };
    let storage = table
        .iter()
        .find(|(i, ..)| *i == id::DELTA_STORAGE)
        .map(|(_, _, r)| String::from_utf8_lossy(&map[r.clone()]).into_owned());
    Ok(Some(crate::layer::StoreIdentity {
        shadow_copy_id: guid(w[0], w[1]),
        store_id: guid(w[2], w[3]),
        created: w[4],
        storage,
    }))
}

/// The O(1) checks of an opened file: every column has one element per entry (`name_start` one more), the
/// root is an entry, the aids have their sizes. Accessors rely on these for their bounds.
fn check_shape(idx: &Index, n: usize) -> Result<(), FileError> {
    let cols_ok = idx.parent.len() == n
        && idx.record.len() == n
        && idx.sequence.len() == n
        && idx.flags.len() == n
        && idx.name_start.len() == n + 1;
    if !cols_ok {
        return Err(FileError::Corrupt("column lengths disagree"));
    }
    // The builder always makes a root, so an index has at least one entry.
    if n == 0 || idx.root as usize >= n {
        return Err(FileError::Corrupt("root entry out of range"));
    }
    idx.names.check_shape().map_err(FileError::Corrupt)?;
    idx.allocated.check_shape(n).map_err(FileError::Corrupt)?;
    idx.size.check_shape(n).map_err(FileError::Corrupt)?;
    idx.reparse_tag.check_shape().map_err(FileError::Corrupt)?;
    idx.aliases.check_shape().map_err(FileError::Corrupt)?;
    idx.link_targets.check_shape().map_err(FileError::Corrupt)?;
    if let Some(x) = &idx.exclusive {
        x.check_shape().map_err(FileError::Corrupt)?;
    }
    idx.posix.check_shape(n).map_err(FileError::Corrupt)?;
    for t in idx.times() {
        t.check_shape(n).map_err(FileError::Corrupt)?;
    }
    if let Some(a) = &idx.aids {
        a.check_shape(n).map_err(FileError::Corrupt)?;
    }
    if let Some(t) = &idx.timeline {
        t.check_shape(n).map_err(FileError::Corrupt)?;
    }
    Ok(())
}

/// Checks what the answers rely on, beyond the bounds that hold by construction: names are UTF-8 at ordered
/// offsets, parent links reach the root without cycles, paths are no longer than NTFS allows.
fn validate(idx: &Index, entries: usize) -> Result<(), FileError> {
    let n = entries;
    if idx.name_start.first() != Some(&0)
        || idx.name_start.windows(2).any(|w| w[0] > w[1])
        || idx.name_start.last().map(|&e| e as usize) != Some(idx.names.len())
        || std::str::from_utf8(idx.names.folded()).is_err()
    {
        return Err(FileError::Corrupt("name table is inconsistent"));
    }
    idx.names.validate(n).map_err(FileError::Corrupt)?;
    idx.allocated.validate(n).map_err(FileError::Corrupt)?;
    idx.size.validate(n).map_err(FileError::Corrupt)?;
    idx.reparse_tag.validate(n).map_err(FileError::Corrupt)?;
    idx.aliases.validate(n).map_err(FileError::Corrupt)?;
    idx.link_targets.validate(n).map_err(FileError::Corrupt)?;
    if let Some(x) = &idx.exclusive {
        x.validate(n).map_err(FileError::Corrupt)?;
    }
    idx.posix.validate().map_err(FileError::Corrupt)?;
    for t in idx.times() {
        t.validate(n).map_err(FileError::Corrupt)?;
    }
    if idx.parent.iter().any(|&p| p as usize >= n) {
        return Err(FileError::Corrupt("a parent id is out of range"));
    }
    // Parent links must reach the root without cycles, and no path may be longer than the builder allows:
    // path building relies on both.
    const UNSEEN: u32 = u32::MAX;
    const WALKING: u32 = u32::MAX - 1;
    let mut path_len = vec![UNSEEN; n];
    path_len[idx.root as usize] = 0;
    let mut stack = Vec::new();
    for start in 0..n {
        let mut cur = start;
        while path_len[cur] == UNSEEN {
            path_len[cur] = WALKING;
            stack.push(cur);
            cur = idx.parent[cur] as usize;
        }
        if path_len[cur] == WALKING {
            return Err(FileError::Corrupt("parent links form a cycle"));
        }
        let mut len = path_len[cur];
        while let Some(e) = stack.pop() {
            len = len.saturating_add(1 + idx.name_start[e + 1] - idx.name_start[e]);
            if len > crate::build::MAX_PATH_BYTES + 64 {
                return Err(FileError::Corrupt("a path is longer than any NTFS path"));
            }
            path_len[e] = len;
        }
    }
    if let Some(t) = &idx.timeline {
        t.validate(n).map_err(FileError::Corrupt)?;
    }
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A flat index of `n` files under the root, with sizes spread over 2^20 values.
    fn flat_index(n: usize) -> Index {
        let mut raw = Vec::new();
        let mut starts = vec![0u32];
        for i in 0..n {
            raw.extend_from_slice(format!("f{i}").as_bytes());
            starts.push(raw.len() as u32);
        }
        let mut x = 0x9E37_79B9_u64;
        let sizes: Vec<u64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % (1 << 20)
            })
            .collect();
        let mut flags = vec![0u32; n];
        flags[0] = crate::index::flags::DIRECTORY;
        crate::index::test_index(&raw, &starts, &sizes, flags)
    }

    /// The columns written while the aids are built, then the aids and the header, make the very bytes a write
    /// in one go makes; the file passes the full check, and no temporary file is left.
    #[test]
    fn writing_the_columns_first_makes_the_same_file() {
        let whole = flat_index(300_000);
        let mut bare = whole.clone();
        bare.aids = None;
        let dir = std::env::temp_dir().join(format!("uffs-columns-first-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (at_once, columns_first) = (dir.join("at-once.uffs"), dir.join("columns-first.uffs"));
        write(&whole, &at_once).unwrap();
        let times = write_with_aids(&mut bare, &columns_first).unwrap();
        assert!(times.aids > std::time::Duration::ZERO);
        assert!(bare.aids.is_some());
        let bytes = std::fs::read(&columns_first).unwrap();
        assert!(
            bytes.len() > 8 * crate::check::CHUNK,
            "{} bytes",
            bytes.len()
        );
        assert!(bytes == std::fs::read(&at_once).unwrap());
        let read_back = read(&columns_first).unwrap();
        assert_eq!(read_back.len(), whole.len());
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["at-once.uffs", "columns-first.uffs"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A one-shot query finds the chunks it must check from its page table, so an order it walked whole is
    /// not let go as a daemon's is: damage in the middle of it (chunks of nothing else) is still refused.
    #[test]
    fn an_unchecked_index_keeps_the_pages_of_an_order_it_walked() {
        let idx = flat_index(300_000);
        let dir = std::env::temp_dir().join(format!("uffs-walked-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flat.uffs");
        write(&idx, &path).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        // The size order spans a dozen chunks: its middle one holds nothing else.
        let order = idx.aids.as_ref().unwrap().size_order.bytes().len();
        assert!(order > 4 * crate::check::CHUNK, "{order} bytes");
        let h = parse_header(&bytes).unwrap();
        let table_at = |i: usize| HEADER_LEN + i * SECTION_ENTRY_LEN;
        let at = (0..h.sections)
            .find(|&i| le_u32(&bytes, table_at(i)) == 38)
            .map(|i| le_u64(&bytes, table_at(i) + 8) as usize)
            .unwrap();
        bytes[at + order / 2] ^= 0x04;
        let bad = dir.join("bad.uffs");
        std::fs::write(&bad, &bytes).unwrap();
        for (file, damaged) in [(&path, false), (&bad, true)] {
            let opened = open(file).unwrap();
            let size_order = &opened.aids.as_ref().unwrap().size_order;
            // (The sum reads every value, as a sort's walk does.)
            let sum: u64 = size_order.iter().map(u64::from).sum();
            assert!(sum > 0);
            release_order_pages(&opened, size_order);
            assert_eq!(
                opened.verify_touched().is_err(),
                damaged,
                "{}",
                file.display()
            );
        }
        // A checked index lets them go.
        let checked = read(&path).unwrap();
        let c = checked.check.as_ref().unwrap();
        let size_order = &checked.aids.as_ref().unwrap().size_order;
        let middle = |c: &FileCheck| {
            let page = crate::check::page_size();
            let p = (at + order / 2) / page;
            c.touched_pages().unwrap().iter().any(|r| r.contains(&p))
        };
        let sum: u64 = size_order.iter().map(u64::from).sum();
        assert!(sum > 0 && middle(c), "the walk maps the order");
        release_order_pages(&checked, size_order);
        assert!(!middle(c), "a checked index lets the walked order go");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
