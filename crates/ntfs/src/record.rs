//! MFT file records: the `FILE` header, update-sequence fixups and the walk over a record's attributes.

use crate::attr::{Attribute, NonResident};
use crate::le::{bytes, u16_at, u32_at, u64_at, u8_at};
use crate::{Error, Result};

/// Update sequences protect every 512 bytes of a record, whatever the sector size.
pub const FIXUP_STRIDE: usize = 512;

/// A file reference: 48-bit record number and 16-bit sequence number, as stored in parent links and
/// attribute lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FileRef(pub u64);

impl FileRef {
    pub fn new(record: u64, sequence: u16) -> FileRef {
        FileRef((record & 0xFFFF_FFFF_FFFF) | (u64::from(sequence) << 48))
    }
    pub fn record(self) -> u64 {
        self.0 & 0xFFFF_FFFF_FFFF
    }
    pub fn sequence(self) -> u16 {
        (self.0 >> 48) as u16
    }
}

/// Record header flags.
pub mod flags {
    pub const IN_USE: u16 = 0x0001;
    pub const DIRECTORY: u16 = 0x0002;
    /// Set on records in `$Extend` (`$Quota`, `$ObjId`, `$Reparse`, `$UsnJrnl`).
    pub const EXTEND: u16 = 0x0004;
    /// Set on records that hold a view index other than `$I30` (`$Secure`, `$Quota`, …).
    pub const VIEW_INDEX: u16 = 0x0008;
}

/// Checks and undoes the update-sequence protection of a record in place.
///
/// The last two bytes of each 512-byte stride were replaced on disk by the update sequence number; the original
/// bytes are kept in the update sequence array. A stride whose last bytes differ from the number was not written
/// with the rest (a torn write): that is [`Error::TornRecord`], and the buffer is left untouched.
pub fn apply_fixups(rec: &mut [u8]) -> Result<()> {
    const WHAT: &str = "update sequence array";
    let usa_offset = usize::from(u16_at(rec, 4, WHAT)?);
    let usa_count = usize::from(u16_at(rec, 6, WHAT)?);
    if usa_count < 2 {
        return Err(Error::Invalid {
            what: WHAT,
            why: "update sequence array has no entries",
        });
    }
    let strides = usa_count - 1;
    // Every 512 bytes of the record are protected: an array that covers fewer would leave strides unchecked.
    if strides * FIXUP_STRIDE != rec.len() {
        return Err(Error::Invalid {
            what: WHAT,
            why: "update sequence array does not cover the record exactly",
        });
    }
    let usa = bytes(rec, usa_offset, usa_count * 2, WHAT)?;
    // The array must lie in the first stride, before the bytes it protects.
    if usa_offset + usa_count * 2 > FIXUP_STRIDE - 2 {
        return Err(Error::Invalid {
            what: WHAT,
            why: "update sequence array overlaps the first fixup",
        });
    }
    let usn = [usa[0], usa[1]];
    for i in 1..=strides {
        let end = i * FIXUP_STRIDE;
        if rec[end - 2..end] != usn {
            return Err(Error::TornRecord { stride: i - 1 });
        }
    }
    for i in 1..=strides {
        let end = i * FIXUP_STRIDE;
        let (a, b) = (rec[usa_offset + 2 * i], rec[usa_offset + 2 * i + 1]);
        rec[end - 2] = a;
        rec[end - 1] = b;
    }
    Ok(())
}

/// Puts the update-sequence protection back on a record whose fixups were already applied, so that it reads as
/// on disk and [`apply_fixups`] takes it. The file system hands records over that way (Windows'
/// FSCTL_GET_NTFS_FILE_RECORD copies them from its cache, where the fixups are undone): each stride's last two
/// bytes are the record's own, so they go into the update sequence array (whose copies may be older) and the
/// update sequence number takes their place. A record whose strides all end in the number already (as read
/// raw), or that is not a well-formed record, is left alone.
pub fn protect(rec: &mut [u8]) {
    let (Ok(usa_offset), Ok(usa_count)) = (u16_at(rec, 4, ""), u16_at(rec, 6, "")) else {
        return;
    };
    let (usa_offset, usa_count) = (usize::from(usa_offset), usize::from(usa_count));
    if usa_count < 2
        || (usa_count - 1) * FIXUP_STRIDE != rec.len()
        || usa_offset + usa_count * 2 > FIXUP_STRIDE - 2
    {
        return;
    }
    let strides = usa_count - 1;
    let usn = [rec[usa_offset], rec[usa_offset + 1]];
    let tail = |i: usize| i * FIXUP_STRIDE - 2..i * FIXUP_STRIDE;
    if (1..=strides).all(|i| rec[tail(i)] == usn) {
        return;
    }
    for i in 1..=strides {
        let own = [rec[tail(i).start], rec[tail(i).start + 1]];
        rec[usa_offset + 2 * i..usa_offset + 2 * i + 2].copy_from_slice(&own);
        rec[tail(i)].copy_from_slice(&usn);
    }
}

/// The fixed header of a `FILE` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// `$LogFile` sequence number of the last change.
    pub lsn: u64,
    pub sequence: u16,
    pub link_count: u16,
    pub first_attribute: u16,
    pub flags: u16,
    pub used_size: u32,
    pub allocated_size: u32,
    /// Zero for a base record; for an extension record, the base record it belongs to.
    pub base: FileRef,
    /// The record's own number when the header stores it (NTFS 3.1, Windows XP and later).
    pub record_number: Option<u32>,
}

impl RecordHeader {
    pub fn in_use(&self) -> bool {
        self.flags & flags::IN_USE != 0
    }
    pub fn is_directory(&self) -> bool {
        self.flags & flags::DIRECTORY != 0
    }
    pub fn is_base(&self) -> bool {
        self.base.0 == 0
    }
}

/// True when the buffer starts with the `FILE` signature (a record that was ever initialised).
pub fn has_file_signature(rec: &[u8]) -> bool {
    rec.get(..4) == Some(b"FILE")
}

/// A file record whose fixups have been applied.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub header: RecordHeader,
    bytes: &'a [u8],
}

impl<'a> Record<'a> {
    /// Parses the header of a record. Call [`apply_fixups`] on the buffer first.
    pub fn parse(rec: &'a [u8]) -> Result<Record<'a>> {
        const WHAT: &str = "MFT record header";
        if rec.get(..4) != Some(b"FILE") {
            return Err(Error::BadSignature { what: WHAT });
        }
        let first_attribute = u16_at(rec, 0x14, WHAT)?;
        let used_size = u32_at(rec, 0x18, WHAT)?;
        let header = RecordHeader {
            lsn: u64_at(rec, 0x08, WHAT)?,
            sequence: u16_at(rec, 0x10, WHAT)?,
            link_count: u16_at(rec, 0x12, WHAT)?,
            first_attribute,
            flags: u16_at(rec, 0x16, WHAT)?,
            used_size,
            allocated_size: u32_at(rec, 0x1C, WHAT)?,
            base: FileRef(u64_at(rec, 0x20, WHAT)?),
            // Pre-XP records put the update sequence array at 0x2A, where the number would be.
            record_number: if first_attribute >= 0x30 && u16_at(rec, 4, WHAT)? >= 0x30 {
                Some(u32_at(rec, 0x2C, WHAT)?)
            } else {
                None
            },
        };
        if used_size as usize > rec.len() || usize::from(first_attribute) >= used_size as usize {
            return Err(Error::Invalid {
                what: WHAT,
                why: "first attribute or used size lies outside the record",
            });
        }
        Ok(Record {
            header,
            bytes: &rec[..used_size as usize],
        })
    }

    /// Walks the attributes in record order. The iterator ends at the end marker, or after yielding one error.
    pub fn attributes(&self) -> Attributes<'a> {
        Attributes {
            rec: self.bytes,
            pos: usize::from(self.header.first_attribute),
            done: false,
        }
    }
}

/// Iterator over the attributes of a [`Record`].
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    rec: &'a [u8],
    pos: usize,
    done: bool,
}

/// The type code that ends a record's attribute list.
pub const END_MARKER: u32 = 0xFFFF_FFFF;

impl<'a> Iterator for Attributes<'a> {
    type Item = Result<Attribute<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = parse_attribute(self.rec, self.pos).map(|found| {
            found.map(|(attr, len)| {
                self.pos += len;
                attr
            })
        });
        crate::end_after_error(&mut self.done, step)
    }
}

/// Parses the attribute header at `pos`; `None` at the end marker. Returns the attribute and its length.
/// Only the common header is decoded here; the body is decoded when asked for, so attributes a caller skips
/// cost a few bounds checks.
fn parse_attribute(rec: &[u8], pos: usize) -> Result<Option<(Attribute<'_>, usize)>> {
    const WHAT: &str = "attribute header";
    let type_code = u32_at(rec, pos, WHAT)?;
    if type_code == END_MARKER {
        return Ok(None);
    }
    let len = u32_at(rec, pos + 4, WHAT)? as usize;
    if len < 0x18 || !len.is_multiple_of(8) {
        return Err(Error::Invalid {
            what: WHAT,
            why: "attribute length is not a multiple of 8 of at least 24",
        });
    }
    let bytes = crate::le::bytes(rec, pos, len, WHAT)?;
    Ok(Some((Attribute::from_bytes(type_code, bytes), len)))
}

/// Decodes the body of a non-resident attribute (`a` is the whole attribute).
pub(crate) fn parse_non_resident(a: &[u8], flags: u16) -> Result<NonResident<'_>> {
    const NR: &str = "non-resident attribute header";
    let runlist_off = usize::from(u16_at(a, 0x20, NR)?);
    let compressed = flags & (crate::attr::flags::COMPRESSED | crate::attr::flags::SPARSE) != 0;
    Ok(NonResident {
        start_vcn: u64_at(a, 0x10, NR)?,
        last_vcn: u64_at(a, 0x18, NR)?,
        runlist: a.get(runlist_off..).ok_or(Error::Truncated {
            what: "runlist",
            offset: runlist_off,
            need: 1,
            have: a.len(),
        })?,
        compression_unit: u8_at(a, 0x22, NR)?,
        allocated_size: u64_at(a, 0x28, NR)?,
        data_size: u64_at(a, 0x30, NR)?,
        initialized_size: u64_at(a, 0x38, NR)?,
        // Only the first extent of a compressed or sparse attribute carries the compressed size.
        compressed_size: if compressed && a.len() >= 0x48 {
            Some(u64_at(a, 0x40, NR)?)
        } else {
            None
        },
    })
}

/// Decodes the value of a resident attribute (`a` is the whole attribute).
pub(crate) fn parse_resident(a: &[u8]) -> Result<&[u8]> {
    const R: &str = "resident attribute header";
    let value_len = u32_at(a, 0x10, R)? as usize;
    let value_off = usize::from(u16_at(a, 0x14, R)?);
    bytes(a, value_off, value_len, "resident attribute value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ref_parts() {
        let r = FileRef::new(0x1234_5678_9ABC, 7);
        assert_eq!(r.record(), 0x1234_5678_9ABC);
        assert_eq!(r.sequence(), 7);
    }

    fn record_with_usa() -> Vec<u8> {
        let mut r = vec![0u8; 1024];
        r[..4].copy_from_slice(b"FILE");
        r[4..6].copy_from_slice(&0x30u16.to_le_bytes());
        r[6..8].copy_from_slice(&3u16.to_le_bytes());
        r[0x30..0x32].copy_from_slice(&[0xAB, 0xCD]);
        r[0x32..0x34].copy_from_slice(&[1, 2]);
        r[0x34..0x36].copy_from_slice(&[3, 4]);
        r[510..512].copy_from_slice(&[0xAB, 0xCD]);
        r[1022..1024].copy_from_slice(&[0xAB, 0xCD]);
        r
    }

    #[test]
    fn fixups_restore_bytes() {
        let mut r = record_with_usa();
        apply_fixups(&mut r).unwrap();
        assert_eq!(&r[510..512], &[1, 2]);
        assert_eq!(&r[1022..1024], &[3, 4]);
    }

    #[test]
    fn protect_undoes_applied_fixups_and_leaves_raw_records_alone() {
        let raw = record_with_usa();
        let mut r = raw.clone();
        protect(&mut r);
        assert_eq!(r, raw, "a raw record stays as it is");
        apply_fixups(&mut r).unwrap();
        protect(&mut r);
        assert_eq!(
            r, raw,
            "a record with its fixups applied gets its protection back"
        );
        let mut short = raw[..100].to_vec();
        protect(&mut short);
        assert_eq!(short, &raw[..100]);
        // The file system's copy may have changed the bytes at a stride's end since the array was written:
        // those bytes are the record's, and survive.
        let mut changed = raw.clone();
        apply_fixups(&mut changed).unwrap();
        changed[1022..1024].copy_from_slice(&[7, 8]);
        protect(&mut changed);
        apply_fixups(&mut changed).unwrap();
        assert_eq!(&changed[510..512], &[1, 2]);
        assert_eq!(&changed[1022..1024], &[7, 8]);
    }

    #[test]
    fn torn_record_is_detected_and_left_alone() {
        let mut r = record_with_usa();
        r[1022] = 0;
        let before = r.clone();
        assert_eq!(apply_fixups(&mut r), Err(Error::TornRecord { stride: 1 }));
        assert_eq!(r, before);
    }
}
