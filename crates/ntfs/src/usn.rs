//! The USN change journal: records of the `$Extend\$UsnJrnl:$J` stream and its `$Max` header.
//!
//! `$J` is a sparse stream whose logical size is the next update sequence number (USN); a record's USN is its byte
//! offset in the stream. Windows writes records 8-byte aligned in 4096-byte pages and never lets one cross a page
//! boundary: the rest of a page that cannot hold the next record is left zero (so are the deallocated, sparse,
//! leading part of the stream and never-written space). The [`UsnScanner`] walks such bytes: it skips zero words,
//! yields each record, skips version 4 range-tracking records, and steps over damaged bytes eight at a time until
//! a plausible record starts again, counting what it skipped.

use crate::le::{bytes, u16_at, u32_at, u64_at};
use crate::{Error, Result};

/// Fixed part of a `USN_RECORD_V2` (the name follows).
pub const V2_HEADER: usize = 60;
/// Fixed part of a `USN_RECORD_V3` (128-bit file ids).
pub const V3_HEADER: usize = 76;
/// Fixed part of a `USN_RECORD_V4` (range tracking; `USN_RECORD_EXTENT`s follow).
pub const V4_HEADER: usize = 64;
/// Records are written in pages of this size and never cross one.
pub const PAGE_SIZE: usize = 4096;
/// The largest record length the scanner believes. A V2/V3 record with a 255-character name is under 600 bytes;
/// 64 KiB leaves room for long V4 extent lists without letting garbage swallow a whole region.
pub const MAX_RECORD: usize = 64 * 1024;

/// `Reason` bits (`USN_REASON_*`).
pub mod reason {
    pub const DATA_OVERWRITE: u32 = 0x0000_0001;
    pub const DATA_EXTEND: u32 = 0x0000_0002;
    pub const DATA_TRUNCATION: u32 = 0x0000_0004;
    pub const NAMED_DATA_OVERWRITE: u32 = 0x0000_0010;
    pub const NAMED_DATA_EXTEND: u32 = 0x0000_0020;
    pub const NAMED_DATA_TRUNCATION: u32 = 0x0000_0040;
    pub const FILE_CREATE: u32 = 0x0000_0100;
    pub const FILE_DELETE: u32 = 0x0000_0200;
    pub const EA_CHANGE: u32 = 0x0000_0400;
    pub const SECURITY_CHANGE: u32 = 0x0000_0800;
    pub const RENAME_OLD_NAME: u32 = 0x0000_1000;
    pub const RENAME_NEW_NAME: u32 = 0x0000_2000;
    pub const INDEXABLE_CHANGE: u32 = 0x0000_4000;
    pub const BASIC_INFO_CHANGE: u32 = 0x0000_8000;
    pub const HARD_LINK_CHANGE: u32 = 0x0001_0000;
    pub const COMPRESSION_CHANGE: u32 = 0x0002_0000;
    pub const ENCRYPTION_CHANGE: u32 = 0x0004_0000;
    pub const OBJECT_ID_CHANGE: u32 = 0x0008_0000;
    pub const REPARSE_POINT_CHANGE: u32 = 0x0010_0000;
    pub const STREAM_CHANGE: u32 = 0x0020_0000;
    pub const TRANSACTED_CHANGE: u32 = 0x0040_0000;
    pub const INTEGRITY_CHANGE: u32 = 0x0080_0000;
    pub const DESIRED_STORAGE_CLASS_CHANGE: u32 = 0x0100_0000;
    pub const CLOSE: u32 = 0x8000_0000;
}

/// Every reason bit with its Windows name (without the `USN_REASON_` prefix), in bit order.
pub const REASONS: [(u32, &str); 24] = [
    (reason::DATA_OVERWRITE, "DATA_OVERWRITE"),
    (reason::DATA_EXTEND, "DATA_EXTEND"),
    (reason::DATA_TRUNCATION, "DATA_TRUNCATION"),
    (reason::NAMED_DATA_OVERWRITE, "NAMED_DATA_OVERWRITE"),
    (reason::NAMED_DATA_EXTEND, "NAMED_DATA_EXTEND"),
    (reason::NAMED_DATA_TRUNCATION, "NAMED_DATA_TRUNCATION"),
    (reason::FILE_CREATE, "FILE_CREATE"),
    (reason::FILE_DELETE, "FILE_DELETE"),
    (reason::EA_CHANGE, "EA_CHANGE"),
    (reason::SECURITY_CHANGE, "SECURITY_CHANGE"),
    (reason::RENAME_OLD_NAME, "RENAME_OLD_NAME"),
    (reason::RENAME_NEW_NAME, "RENAME_NEW_NAME"),
    (reason::INDEXABLE_CHANGE, "INDEXABLE_CHANGE"),
    (reason::BASIC_INFO_CHANGE, "BASIC_INFO_CHANGE"),
    (reason::HARD_LINK_CHANGE, "HARD_LINK_CHANGE"),
    (reason::COMPRESSION_CHANGE, "COMPRESSION_CHANGE"),
    (reason::ENCRYPTION_CHANGE, "ENCRYPTION_CHANGE"),
    (reason::OBJECT_ID_CHANGE, "OBJECT_ID_CHANGE"),
    (reason::REPARSE_POINT_CHANGE, "REPARSE_POINT_CHANGE"),
    (reason::STREAM_CHANGE, "STREAM_CHANGE"),
    (reason::TRANSACTED_CHANGE, "TRANSACTED_CHANGE"),
    (reason::INTEGRITY_CHANGE, "INTEGRITY_CHANGE"),
    (
        reason::DESIRED_STORAGE_CLASS_CHANGE,
        "DESIRED_STORAGE_CLASS_CHANGE",
    ),
    (reason::CLOSE, "CLOSE"),
];

/// The names of the bits of `mask` joined by `|` in bit order; bits without a name as one hex number
/// (`FILE_CREATE|CLOSE`, `DATA_EXTEND|0x6000000`). Empty for 0.
pub fn reason_names(mask: u32) -> String {
    let mut s = String::new();
    let mut known = 0;
    for (bit, name) in REASONS {
        if mask & bit != 0 {
            if !s.is_empty() {
                s.push('|');
            }
            s.push_str(name);
            known |= bit;
        }
    }
    let unknown = mask & !known;
    if unknown != 0 {
        if !s.is_empty() {
            s.push('|');
        }
        s.push_str(&format!("0x{unknown:X}"));
    }
    s
}

/// The first eight bytes of every record version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsnHeader {
    /// `RecordLength`: the whole record, 8-byte aligned.
    pub len: u32,
    pub major: u16,
    pub minor: u16,
}

/// The header at the start of `b` if it could begin a record there: a length that is a multiple of 8, at least
/// the fixed part of its version, at most [`MAX_RECORD`] and within `b`; major version 2, 3 or 4; for V2/V3 the
/// name inside the record, for V4 the extents inside the record. `None` otherwise (also for zero bytes).
pub fn plausible_header(b: &[u8]) -> Option<UsnHeader> {
    let h = header_shape(b)?;
    let len = h.len as usize;
    if len > b.len() {
        return None;
    }
    body_fits(&b[..len], h).then_some(h)
}

/// The header's own checks (length bounds and version), without looking at the rest of the record.
fn header_shape(b: &[u8]) -> Option<UsnHeader> {
    let h = UsnHeader {
        len: u32_at(b, 0, "USN record header").ok()?,
        major: u16_at(b, 4, "USN record header").ok()?,
        minor: u16_at(b, 6, "USN record header").ok()?,
    };
    let len = h.len as usize;
    let min = match h.major {
        2 => V2_HEADER,
        3 => V3_HEADER,
        4 => V4_HEADER,
        _ => return None,
    };
    (len >= min && len <= MAX_RECORD && len.is_multiple_of(8)).then_some(h)
}

/// Whether the variable part of the record `r` (exactly `h.len` bytes) lies inside it.
fn body_fits(r: &[u8], h: UsnHeader) -> bool {
    let (len_at, fixed) = match h.major {
        2 => (56, V2_HEADER),
        3 => (72, V3_HEADER),
        _ => {
            // V4: NumberOfExtents × ExtentSize bytes of extents after the fixed part.
            let (Ok(n), Ok(size)) = (u16_at(r, 60, "V4"), u16_at(r, 62, "V4")) else {
                return false;
            };
            return V4_HEADER + usize::from(n) * usize::from(size) <= r.len();
        }
    };
    let (Ok(name_len), Ok(name_off)) = (u16_at(r, len_at, "name"), u16_at(r, len_at + 2, "name"))
    else {
        return false;
    };
    let (name_len, name_off) = (usize::from(name_len), usize::from(name_off));
    name_off >= fixed && name_len.is_multiple_of(2) && name_off + name_len <= r.len()
}

/// One `USN_RECORD_V2` or `USN_RECORD_V3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsnRecord<'a> {
    /// Major version: 2 or 3.
    pub version: u16,
    pub minor_version: u16,
    /// `RecordLength`.
    pub len: u32,
    /// The file's NTFS reference: record number in the low 48 bits, sequence number in the high 16 (for V3, the
    /// low 64 bits of the 128-bit id).
    pub file_ref: u64,
    pub parent_ref: u64,
    /// The full file id (V3: 128 bits; V2: the reference, zero-extended).
    pub file_id: u128,
    pub parent_id: u128,
    pub usn: u64,
    /// FILETIME (100 ns ticks since 1601-01-01 UTC).
    pub timestamp: u64,
    pub reason: u32,
    pub source_info: u32,
    pub security_id: u32,
    /// Windows file attributes.
    pub attributes: u32,
    /// The file's name (no path) in raw UTF-16LE.
    pub name: &'a [u8],
}

impl<'a> UsnRecord<'a> {
    /// Parses the record at the start of `b` (which may hold more after it). A V4 range-tracking record or any
    /// other version is an error, as is a length or name that does not fit.
    pub fn parse(b: &'a [u8]) -> Result<UsnRecord<'a>> {
        const WHAT: &str = "USN record";
        let len = u32_at(b, 0, WHAT)?;
        let version = u16_at(b, 4, WHAT)?;
        let minor_version = u16_at(b, 6, WHAT)?;
        let min = match version {
            2 => V2_HEADER,
            3 => V3_HEADER,
            4 => {
                return Err(Error::Invalid {
                    what: WHAT,
                    why: "version 4 is a range-tracking record, not a file change",
                })
            }
            _ => {
                return Err(Error::Invalid {
                    what: WHAT,
                    why: "major version is not 2, 3 or 4",
                })
            }
        };
        let ulen = len as usize;
        if ulen < min || !ulen.is_multiple_of(8) {
            return Err(Error::Invalid {
                what: WHAT,
                why: "record length is below the fixed part or not a multiple of 8",
            });
        }
        let r = bytes(b, 0, ulen, WHAT)?;
        let (file_id, parent_id, rest) = if version == 2 {
            (
                u128::from(u64_at(r, 8, WHAT)?),
                u128::from(u64_at(r, 16, WHAT)?),
                24,
            )
        } else {
            (u128_at(r, 8)?, u128_at(r, 24)?, 40)
        };
        let name_len = usize::from(u16_at(r, rest + 32, WHAT)?);
        let name_off = usize::from(u16_at(r, rest + 34, WHAT)?);
        if name_off < min {
            return Err(Error::Invalid {
                what: WHAT,
                why: "file name offset lies inside the fixed part",
            });
        }
        Ok(UsnRecord {
            version,
            minor_version,
            len,
            file_ref: file_id as u64,
            parent_ref: parent_id as u64,
            file_id,
            parent_id,
            usn: u64_at(r, rest, WHAT)?,
            timestamp: u64_at(r, rest + 8, WHAT)?,
            reason: u32_at(r, rest + 16, WHAT)?,
            source_info: u32_at(r, rest + 20, WHAT)?,
            security_id: u32_at(r, rest + 24, WHAT)?,
            attributes: u32_at(r, rest + 28, WHAT)?,
            name: bytes(r, name_off, name_len & !1, "USN record file name")?,
        })
    }

    /// The name decoded to UTF-8 (lossy, see [`crate::utf16`]).
    pub fn name_string(&self) -> String {
        crate::utf16::decode(self.name)
    }

    /// The file's record number (low 48 bits of the reference).
    pub fn file_record(&self) -> u64 {
        self.file_ref & 0xFFFF_FFFF_FFFF
    }
    pub fn file_sequence(&self) -> u16 {
        (self.file_ref >> 48) as u16
    }
    pub fn parent_record(&self) -> u64 {
        self.parent_ref & 0xFFFF_FFFF_FFFF
    }
    pub fn parent_sequence(&self) -> u16 {
        (self.parent_ref >> 48) as u16
    }
}

fn u128_at(b: &[u8], offset: usize) -> Result<u128> {
    let s = bytes(b, offset, 16, "USN record file id")?;
    let mut a = [0u8; 16];
    a.copy_from_slice(s);
    Ok(u128::from_le_bytes(a))
}

/// The `$Max` stream of `$UsnJrnl` (`USN_JOURNAL_DATA`'s on-disk part).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsnJournalMax {
    /// The size the journal is trimmed back to.
    pub max_size: u64,
    /// How much is trimmed at a time once it is exceeded.
    pub allocation_delta: u64,
    /// Changes whenever the journal is deleted and recreated: USNs of different ids are unrelated.
    pub journal_id: u64,
    /// Records below this USN have been trimmed away.
    pub lowest_valid_usn: u64,
}

impl UsnJournalMax {
    pub fn parse(v: &[u8]) -> Result<UsnJournalMax> {
        const WHAT: &str = "$UsnJrnl:$Max";
        Ok(UsnJournalMax {
            max_size: u64_at(v, 0, WHAT)?,
            allocation_delta: u64_at(v, 8, WHAT)?,
            journal_id: u64_at(v, 16, WHAT)?,
            lowest_valid_usn: u64_at(v, 24, WHAT)?,
        })
    }
}

/// What a scan skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanCounts {
    /// V2/V3 records yielded.
    pub records: u64,
    /// V4 range-tracking records skipped.
    pub v4_records: u64,
    /// Zero bytes skipped (sparse or unwritten space, page tails).
    pub zero_bytes: u64,
    /// Bytes of damaged regions skipped.
    pub skipped_bytes: u64,
    /// Damaged regions: runs of bytes that are neither zero nor a plausible record.
    pub damaged_regions: u64,
}

impl ScanCounts {
    pub fn add(&mut self, o: &ScanCounts) {
        self.records += o.records;
        self.v4_records += o.v4_records;
        self.zero_bytes += o.zero_bytes;
        self.skipped_bytes += o.skipped_bytes;
        self.damaged_regions += o.damaged_regions;
    }
}

/// What the scanner found at a stream offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A V2 or V3 record at this stream offset.
    Record(u64, UsnRecord<'a>),
    /// A V4 range-tracking record of this length, skipped.
    RangeTracking(u64, u32),
    /// Damaged bytes from this offset, this many, skipped.
    Damaged(u64, u64),
}

/// Iterator over the records of a region of `$J` bytes. Offsets are `base_offset` plus the position in the
/// region; `base_offset` should be 8-byte aligned, as records are.
#[derive(Debug, Clone)]
pub struct UsnScanner<'a> {
    bytes: &'a [u8],
    base: u64,
    pos: usize,
    counts: ScanCounts,
    stop_at_incomplete: bool,
    stopped: bool,
}

impl<'a> UsnScanner<'a> {
    pub fn new(bytes: &'a [u8], base_offset: u64) -> UsnScanner<'a> {
        UsnScanner {
            bytes,
            base: base_offset,
            pos: 0,
            counts: ScanCounts::default(),
            stop_at_incomplete: false,
            stopped: false,
        }
    }

    /// For a region that is one piece of a longer stream: a record whose header is plausible but that runs past
    /// the end of the region ends the iteration instead of counting as damage. [`UsnScanner::position`] then says
    /// where it starts, so the caller can prepend those bytes to the next piece.
    pub fn stop_at_incomplete(mut self) -> UsnScanner<'a> {
        self.stop_at_incomplete = true;
        self
    }

    /// What was skipped so far and how many records were yielded.
    pub fn counts(&self) -> ScanCounts {
        self.counts
    }

    /// The position in the region where scanning is (after the iteration ended: where it stopped, which is the
    /// region's length unless an incomplete record ended it).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether the iteration ended at an incomplete record (see [`UsnScanner::stop_at_incomplete`]).
    pub fn stopped_at_incomplete(&self) -> bool {
        self.stopped
    }

    fn word(&self, pos: usize) -> Option<u64> {
        let s = self.bytes.get(pos..pos.checked_add(8)?)?;
        Some(u64::from_le_bytes([
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
        ]))
    }

    fn skip_zeros(&mut self) {
        let start = self.pos;
        while self.word(self.pos) == Some(0) {
            self.pos += 8;
        }
        // A zero tail shorter than a word (in a piece of a stream, the word may go on in the next piece).
        if !self.stop_at_incomplete
            && self.bytes.len() - self.pos < 8
            && self.bytes[self.pos..].iter().all(|&b| b == 0)
        {
            self.pos = self.bytes.len();
        }
        self.counts.zero_bytes += (self.pos - start) as u64;
    }

    /// What starts at `pos` (which holds a non-zero word): a whole plausible record, a plausible header whose
    /// record runs past the region's end, or neither.
    fn classify(&self, pos: usize) -> Start {
        let rest = &self.bytes[pos..];
        if rest.len() < 8 {
            // Too short for a header: in a piece of a stream, it may go on in the next piece.
            return Start::Incomplete;
        }
        match header_shape(rest) {
            Some(h) if h.len as usize <= rest.len() => {
                if body_fits(&rest[..h.len as usize], h) {
                    Start::Record(h)
                } else {
                    Start::Garbage
                }
            }
            Some(_) => Start::Incomplete,
            None => Start::Garbage,
        }
    }
}

enum Start {
    Record(UsnHeader),
    Incomplete,
    Garbage,
}

impl<'a> Iterator for UsnScanner<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        if self.stopped {
            return None;
        }
        loop {
            self.skip_zeros();
            if self.pos >= self.bytes.len() {
                return None;
            }
            let at = self.pos;
            let offset = self.base + at as u64;
            match self.classify(at) {
                Start::Record(h) => {
                    self.pos += h.len as usize;
                    if h.major == 4 {
                        self.counts.v4_records += 1;
                        return Some(Item::RangeTracking(offset, h.len));
                    }
                    // plausible_header checked everything UsnRecord::parse does.
                    match UsnRecord::parse(&self.bytes[at..]) {
                        Ok(r) => {
                            self.counts.records += 1;
                            return Some(Item::Record(offset, r));
                        }
                        Err(_) => self.pos = at,
                    }
                }
                Start::Incomplete if self.stop_at_incomplete => {
                    self.stopped = true;
                    return None;
                }
                _ => {}
            }
            if self.pos != at {
                continue;
            }
            // Damage: step eight bytes at a time to a zero word or a plausible record (or, in a piece of a
            // stream, the plausible start of one that continues in the next piece).
            let mut p = at + 8;
            while p < self.bytes.len() {
                if self.word(p) == Some(0) {
                    break;
                }
                match self.classify(p) {
                    Start::Record(_) => break,
                    Start::Incomplete if self.stop_at_incomplete => break,
                    _ => p += 8,
                }
            }
            let end = p.min(self.bytes.len());
            self.pos = end;
            let n = (end - at) as u64;
            self.counts.skipped_bytes += n;
            self.counts.damaged_regions += 1;
            return Some(Item::Damaged(offset, n));
        }
    }
}

/// True when `b` looks like the start of raw `$J` bytes: its first non-zero 8-byte word (after any leading
/// zeros) begins a whole, plausible V2 or V3 record. Empty or all-zero input is not a journal.
pub fn starts_with_record(b: &[u8]) -> bool {
    let mut pos = 0;
    while pos + 8 <= b.len() && b[pos..pos + 8] == [0; 8] {
        pos += 8;
    }
    let rest = &b[pos.min(b.len())..];
    matches!(plausible_header(rest), Some(h) if h.major == 2 || h.major == 3)
        && UsnRecord::parse(rest).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
    }

    /// A V2 record for `name` with the given fields, padded to 8 bytes.
    fn v2(file_ref: u64, parent_ref: u64, usn: u64, reason: u32, name: &str) -> Vec<u8> {
        let n = utf16(name);
        let len = (V2_HEADER + n.len()).next_multiple_of(8);
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&2u16.to_le_bytes());
        r[8..16].copy_from_slice(&file_ref.to_le_bytes());
        r[16..24].copy_from_slice(&parent_ref.to_le_bytes());
        r[24..32].copy_from_slice(&usn.to_le_bytes());
        r[32..40].copy_from_slice(&0x01D1_2BB4_3C0C_C012u64.to_le_bytes());
        r[40..44].copy_from_slice(&reason.to_le_bytes());
        r[44..48].copy_from_slice(&2u32.to_le_bytes());
        r[48..52].copy_from_slice(&260u32.to_le_bytes());
        r[52..56].copy_from_slice(&0x20u32.to_le_bytes());
        r[56..58].copy_from_slice(&(n.len() as u16).to_le_bytes());
        r[58..60].copy_from_slice(&60u16.to_le_bytes());
        r[60..60 + n.len()].copy_from_slice(&n);
        r
    }

    fn v3(file_id: u128, parent_id: u128, usn: u64, name: &str) -> Vec<u8> {
        let n = utf16(name);
        let len = (V3_HEADER + n.len()).next_multiple_of(8);
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&3u16.to_le_bytes());
        r[8..24].copy_from_slice(&file_id.to_le_bytes());
        r[24..40].copy_from_slice(&parent_id.to_le_bytes());
        r[40..48].copy_from_slice(&usn.to_le_bytes());
        r[48..56].copy_from_slice(&7u64.to_le_bytes());
        r[56..60].copy_from_slice(&reason::DATA_EXTEND.to_le_bytes());
        r[72..74].copy_from_slice(&(n.len() as u16).to_le_bytes());
        r[74..76].copy_from_slice(&76u16.to_le_bytes());
        r[76..76 + n.len()].copy_from_slice(&n);
        r
    }

    fn v4(usn: u64, extents: u16) -> Vec<u8> {
        let len = V4_HEADER + 16 * usize::from(extents);
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&4u16.to_le_bytes());
        r[40..48].copy_from_slice(&usn.to_le_bytes());
        r[60..62].copy_from_slice(&extents.to_le_bytes());
        r[62..64].copy_from_slice(&16u16.to_le_bytes());
        for e in 0..usize::from(extents) {
            r[64 + 16 * e..72 + 16 * e].copy_from_slice(&(4096u64 * e as u64).to_le_bytes());
            r[72 + 16 * e..80 + 16 * e].copy_from_slice(&4096u64.to_le_bytes());
        }
        r
    }

    fn names(b: &[u8], base: u64) -> (Vec<(u64, String)>, ScanCounts) {
        let mut s = UsnScanner::new(b, base);
        let v = s
            .by_ref()
            .filter_map(|i| match i {
                Item::Record(o, r) => Some((o, r.name_string())),
                _ => None,
            })
            .collect();
        (v, s.counts())
    }

    #[test]
    fn parses_v2_fields() {
        let b = v2(
            (1 << 48) | 30,
            (5 << 48) | 5,
            112,
            reason::FILE_CREATE | reason::CLOSE,
            "Nieuw - Tekstdocument.txt",
        );
        let r = UsnRecord::parse(&b).unwrap();
        assert_eq!((r.version, r.len as usize), (2, b.len()));
        assert_eq!((r.file_record(), r.file_sequence()), (30, 1));
        assert_eq!((r.parent_record(), r.parent_sequence()), (5, 5));
        assert_eq!(r.file_id, u128::from(r.file_ref));
        assert_eq!(r.usn, 112);
        assert_eq!(r.timestamp, 0x01D1_2BB4_3C0C_C012);
        assert_eq!((r.source_info, r.security_id, r.attributes), (2, 260, 0x20));
        assert_eq!(r.name_string(), "Nieuw - Tekstdocument.txt");
        assert_eq!(reason_names(r.reason), "FILE_CREATE|CLOSE");
    }

    #[test]
    fn parses_v3_with_128_bit_ids() {
        let id = (0xABCDu128 << 64) | (3u128 << 48) | 0x1234;
        let b = v3(id, 5, 4096, "ß.txt");
        let r = UsnRecord::parse(&b).unwrap();
        assert_eq!(r.version, 3);
        assert_eq!(r.file_id, id);
        assert_eq!(r.file_ref, (3 << 48) | 0x1234);
        assert_eq!((r.file_record(), r.file_sequence()), (0x1234, 3));
        assert_eq!((r.usn, r.timestamp), (4096, 7));
        assert_eq!(r.name_string(), "ß.txt");
    }

    #[test]
    fn reason_names_cover_unknown_bits() {
        assert_eq!(reason_names(0), "");
        assert_eq!(
            reason_names(reason::DATA_EXTEND | 0x0600_0000),
            "DATA_EXTEND|0x6000000"
        );
        assert_eq!(reason_names(0x0800_0000), "0x8000000");
        let all: u32 = REASONS.iter().map(|r| r.0).fold(0, |a, b| a | b);
        assert_eq!(all.count_ones() as usize, REASONS.len());
    }

    #[test]
    fn rejects_bad_records() {
        let good = v2(1, 5, 0, 1, "a.txt");
        let mut b = good.clone();
        b[0] = 59; // not a multiple of 8
        assert!(UsnRecord::parse(&b).is_err());
        let mut b = good.clone();
        b[4] = 9; // version
        assert!(UsnRecord::parse(&b).is_err());
        let mut b = good.clone();
        b[56] = 200; // name runs out of the record
        assert!(UsnRecord::parse(&b).is_err());
        assert!(plausible_header(&b).is_none());
        assert!(UsnRecord::parse(&good[..good.len() - 8]).is_err());
        assert!(UsnRecord::parse(&v4(0, 1)).is_err());
        for n in 0..good.len() {
            let _ = UsnRecord::parse(&good[..n]);
            let _ = plausible_header(&good[..n]);
        }
    }

    #[test]
    fn scanner_skips_zeros_page_tails_and_v4() {
        // A sparse-looking zero page, then a page with two records and a zero tail, then V3 and V4 records.
        let mut b = vec![0u8; PAGE_SIZE];
        b.extend(v2(30, 5, 4096, 0x100, "one"));
        b.extend(v2(31, 5, 4096 + 72, 0x100, "two"));
        b.resize(2 * PAGE_SIZE, 0);
        b.extend(v4(8192, 2));
        b.extend(v3(40, 5, 8192 + 96, "three"));
        let (n, c) = names(&b, 0);
        assert_eq!(
            n,
            vec![
                (4096, "one".to_string()),
                (4096 + 72, "two".to_string()),
                (8192 + 96, "three".to_string())
            ]
        );
        assert_eq!((c.records, c.v4_records), (3, 1));
        assert_eq!((c.skipped_bytes, c.damaged_regions), (0, 0));
        assert_eq!(c.zero_bytes, (2 * PAGE_SIZE - 2 * 72) as u64);
    }

    #[test]
    fn scanner_resyncs_after_damage() {
        let mut b = v2(30, 5, 0, 1, "first");
        let damage_at = b.len();
        b.extend([0xEEu8; 40]); // garbage, not a record
        b.extend(v2(31, 5, 0, 1, "second"));
        let mut broken = v2(32, 5, 0xFFFF_FFFF_FFFF, 1, "broken");
        broken[0] = 0xFF; // length > remaining and not a multiple of 8
        b.extend(&broken);
        b.extend(v2(33, 5, 0, 1, "third"));
        let (n, c) = names(&b, 1000);
        let n: Vec<String> = n.into_iter().map(|x| x.1).collect();
        assert_eq!(n, ["first", "second", "third"]);
        assert_eq!(c.damaged_regions, 2);
        assert_eq!(c.skipped_bytes, 40 + broken.len() as u64);
        let items: Vec<Item<'_>> = UsnScanner::new(&b, 1000).collect();
        assert_eq!(items[1], Item::Damaged(1000 + damage_at as u64, 40));
    }

    #[test]
    fn scanner_truncated_tail_is_damage_or_a_stop() {
        let mut b = v2(30, 5, 0, 1, "first");
        let second = v2(31, 5, 0x10_0000_0001, 1, "second");
        b.extend(&second[..40]);
        let (n, c) = names(&b, 0);
        assert_eq!(n.len(), 1);
        assert_eq!((c.damaged_regions, c.skipped_bytes), (1, 40));
        let mut s = UsnScanner::new(&b, 0).stop_at_incomplete();
        assert_eq!(s.by_ref().count(), 1);
        assert!(s.stopped_at_incomplete());
        assert_eq!(s.position(), b.len() - 40);
        assert_eq!(s.counts().damaged_regions, 0);
    }

    #[test]
    fn scanner_never_panics_on_odd_input() {
        let mut seed = 0x1234_5678u32;
        for len in 0..300 {
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed % 7) as u8
                })
                .collect();
            for _ in UsnScanner::new(&b, 0) {}
            for _ in UsnScanner::new(&b, 0).stop_at_incomplete() {}
            let _ = starts_with_record(&b);
        }
        // A zero tail shorter than a word.
        let mut b = v2(1, 5, 0, 1, "x");
        b.extend([0u8; 5]);
        let (n, c) = names(&b, 0);
        assert_eq!((n.len(), c.damaged_regions), (1, 0));
    }

    #[test]
    fn detects_raw_journal_heads() {
        let mut b = vec![0u8; 64];
        b.extend(v2(30, 5, 64, 1, "x.txt"));
        assert!(starts_with_record(&b));
        assert!(starts_with_record(&v3(1, 5, 0, "y")));
        assert!(!starts_with_record(&[0u8; 4096]));
        assert!(!starts_with_record(&v4(0, 1)));
        assert!(!starts_with_record(b"FILE0\x00\x03\x00"));
        let mut boot = vec![0u8; 512];
        boot[..11].copy_from_slice(b"\xEB\x52\x90NTFS    ");
        assert!(!starts_with_record(&boot));
    }

    #[test]
    fn parses_max() {
        let mut v = Vec::new();
        for x in [32u64 << 20, 8 << 20, 0x01D1_0000_0000_0001, 0x80_0000] {
            v.extend(x.to_le_bytes());
        }
        let m = UsnJournalMax::parse(&v).unwrap();
        assert_eq!(m.max_size, 32 << 20);
        assert_eq!(m.allocation_delta, 8 << 20);
        assert_eq!(m.journal_id, 0x01D1_0000_0000_0001);
        assert_eq!(m.lowest_valid_usn, 0x80_0000);
        assert!(UsnJournalMax::parse(&v[..31]).is_err());
    }

    // Real journals: fragments of `$UsnJrnl:$J` written by Windows (see tests/data/README.md).
    fn sample(name: &str) -> Vec<u8> {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/usn/");
        std::fs::read(format!("{p}{name}")).unwrap()
    }

    #[test]
    fn plaso_sample() {
        let b = sample("plaso-UsnJrnl.raw");
        assert!(starts_with_record(&b));
        let recs: Vec<(u64, UsnRecord<'_>)> = UsnScanner::new(&b, 0)
            .filter_map(|i| match i {
                Item::Record(o, r) => Some((o, r)),
                _ => None,
            })
            .collect();
        assert_eq!(recs.len(), 19);
        for (o, r) in &recs {
            assert_eq!(*o, r.usn, "a record's USN is its offset in $J");
            assert_eq!(r.version, 2);
        }
        let (_, first) = recs[0];
        assert_eq!(first.name_string(), "Nieuw - Tekstdocument.txt");
        assert_eq!((first.file_record(), first.file_sequence()), (30, 1));
        assert_eq!((first.parent_record(), first.parent_sequence()), (5, 5));
        assert_eq!(reason_names(first.reason), "FILE_CREATE");
        assert_eq!(reason_names(recs[1].1.reason), "FILE_CREATE|CLOSE");
        assert_eq!(recs[3].1.name_string(), "first.txt");
        assert_eq!(reason_names(recs[3].1.reason), "RENAME_NEW_NAME");
    }

    #[test]
    fn go_ntfs_sample_pages() {
        // 208 records from USN 312568880 on, with five zero-filled page tails (336 bytes) and 29 zero bytes at the end.
        let b = sample("go-ntfs-usn-sample.bin");
        let base = 312_568_880;
        let mut s = UsnScanner::new(&b, base);
        let mut n = 0;
        for i in s.by_ref() {
            if let Item::Record(o, r) = i {
                assert_eq!(o, r.usn);
                // No record crosses a 4096-byte page of the stream.
                assert_eq!(o / 4096, (o + u64::from(r.len) - 1) / 4096);
                n += 1;
            }
        }
        assert_eq!(n, 208);
        let c = s.counts();
        assert_eq!((c.damaged_regions, c.v4_records), (0, 0));
        assert_eq!(c.zero_bytes, 336 + 29);
    }

    #[test]
    fn usn_journal_parser_sample() {
        let b = sample("usn-journal-parser-usnjrnl.bin");
        let base = 8_388_608;
        let recs: Vec<String> = UsnScanner::new(&b, base)
            .filter_map(|i| match i {
                Item::Record(o, r) => {
                    assert_eq!(o, r.usn);
                    Some(r.name_string())
                }
                _ => None,
            })
            .collect();
        assert_eq!(recs.len(), 6);
        assert_eq!(
            recs[0],
            "79b3d4b1fa3e46bbfa009836e708599240d1422176402dcb063a54ee75204901.cat"
        );
    }
}
