//! Partition tables of whole disks: the MBR (with its chain of extended boot records) and GPT.
//!
//! Only the tables are parsed here; the caller reads the sectors and decides which partitions hold NTFS by
//! looking at their first sector (type codes are hints, content decides).

use crate::le::{bytes, u32_at, u64_at};
use crate::{utf16, Error, Result};

/// One slot of an MBR or EBR partition table. LBAs are relative to what the table is relative to (the disk for
/// the MBR; see [`parse_ebr`] for extended boot records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MbrSlot {
    pub kind: u8,
    pub start_lba: u32,
    pub sectors: u32,
}

impl MbrSlot {
    /// Extended partitions (CHS, LBA and Linux flavours) hold a chain of EBRs instead of a file system.
    pub fn is_extended(&self) -> bool {
        matches!(self.kind, 0x05 | 0x0F | 0x85)
    }
}

/// MBR partition type of a GPT protective MBR.
pub const GPT_PROTECTIVE: u8 = 0xEE;

/// Parses the four primary slots of a master boot record (sector 0). Empty slots (type 0 or no sectors) are `None`.
pub fn parse_mbr(sector: &[u8]) -> Result<[Option<MbrSlot>; 4]> {
    const WHAT: &str = "MBR";
    let sig = bytes(sector, 510, 2, WHAT)?;
    if sig != [0x55, 0xAA] {
        return Err(Error::BadSignature { what: WHAT });
    }
    let mut slots = [None; 4];
    for (i, slot) in slots.iter_mut().enumerate() {
        let e = bytes(sector, 0x1BE + 16 * i, 16, WHAT)?;
        if e[0] & 0x7F != 0 {
            // The boot indicator is 0x00 or 0x80; anything else means this is not a partition table.
            return Err(Error::Invalid {
                what: WHAT,
                why: "boot indicator is neither 0x00 nor 0x80",
            });
        }
        let s = MbrSlot {
            kind: e[4],
            start_lba: u32_at(e, 8, WHAT)?,
            sectors: u32_at(e, 12, WHAT)?,
        };
        if s.kind != 0 && s.sectors != 0 {
            *slot = Some(s);
        }
    }
    Ok(slots)
}

/// Parses an extended boot record. Returns the logical partition it describes (start relative to this EBR) and
/// the link to the next EBR (start relative to the beginning of the outermost extended partition), if any.
pub fn parse_ebr(sector: &[u8]) -> Result<(Option<MbrSlot>, Option<MbrSlot>)> {
    let [a, b, _, _] = parse_mbr(sector)?;
    Ok((
        a.filter(|s| !s.is_extended()),
        b.filter(|s| s.is_extended()),
    ))
}

/// The GPT header (at LBA 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GptHeader {
    pub entries_lba: u64,
    pub entry_count: u32,
    pub entry_size: u32,
}

/// Most entries a GPT may declare before we treat it as corrupt (the standard minimum array is 128).
pub const MAX_GPT_ENTRIES: u32 = 4096;

/// Parses the GPT header at the start of `b` (the bytes of LBA 1).
pub fn parse_gpt_header(b: &[u8]) -> Result<GptHeader> {
    const WHAT: &str = "GPT header";
    if bytes(b, 0, 8, WHAT)? != b"EFI PART" {
        return Err(Error::BadSignature { what: WHAT });
    }
    let h = GptHeader {
        entries_lba: u64_at(b, 0x48, WHAT)?,
        entry_count: u32_at(b, 0x50, WHAT)?,
        entry_size: u32_at(b, 0x54, WHAT)?,
    };
    if h.entry_size < 128 || h.entry_size > 4096 || !h.entry_size.is_multiple_of(8) {
        return Err(Error::Invalid {
            what: WHAT,
            why: "partition entry size is not a multiple of 8 in 128..=4096",
        });
    }
    if h.entry_count > MAX_GPT_ENTRIES {
        return Err(Error::Invalid {
            what: WHAT,
            why: "too many partition entries",
        });
    }
    Ok(h)
}

/// One used GPT partition entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptEntry {
    pub type_guid: [u8; 16],
    pub first_lba: u64,
    pub last_lba: u64,
    pub name: String,
}

/// Microsoft basic data partition (where Windows puts NTFS): EBD0A0A2-B9E5-4433-87C0-68B6B72699C7, in on-disk order.
pub const BASIC_DATA_GUID: [u8; 16] = [
    0xA2, 0xA0, 0xD0, 0xEB, 0xE5, 0xB9, 0x33, 0x44, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26, 0x99, 0xC7,
];

/// Parses one entry of the GPT partition array; `None` for an unused slot (all-zero type GUID).
pub fn parse_gpt_entry(b: &[u8]) -> Result<Option<GptEntry>> {
    const WHAT: &str = "GPT partition entry";
    let head = bytes(b, 0, 128, WHAT)?;
    let mut type_guid = [0u8; 16];
    type_guid.copy_from_slice(&head[..16]);
    if type_guid == [0; 16] {
        return Ok(None);
    }
    let first_lba = u64_at(head, 0x20, WHAT)?;
    let last_lba = u64_at(head, 0x28, WHAT)?;
    if last_lba < first_lba {
        return Err(Error::Invalid {
            what: WHAT,
            why: "last LBA is before first LBA",
        });
    }
    let name_raw = &head[0x38..0x80];
    let end = name_raw
        .chunks_exact(2)
        .position(|c| c == [0, 0])
        .map_or(name_raw.len(), |i| i * 2);
    Ok(Some(GptEntry {
        type_guid,
        first_lba,
        last_lba,
        name: utf16::decode(&name_raw[..end]),
    }))
}

/// Formats a GUID from its mixed-endian on-disk form as text (e.g. `EBD0A0A2-B9E5-4433-87C0-68B6B72699C7`).
pub fn guid_to_string(g: &[u8; 16]) -> String {
    format!(
        "{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}",
        u32::from_le_bytes([g[0], g[1], g[2], g[3]]),
        u16::from_le_bytes([g[4], g[5]]),
        u16::from_le_bytes([g[6], g[7]]),
        g[8],
        g[9],
        g[10],
        g[11],
        g[12],
        g[13],
        g[14],
        g[15]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbr_slots_and_extended() {
        let mut s = vec![0u8; 512];
        s[510] = 0x55;
        s[511] = 0xAA;
        s[0x1BE + 4] = 7;
        s[0x1BE + 8..0x1BE + 12].copy_from_slice(&2048u32.to_le_bytes());
        s[0x1BE + 12..0x1BE + 16].copy_from_slice(&4096u32.to_le_bytes());
        s[0x1CE + 4] = 0x0F;
        s[0x1CE + 8..0x1CE + 12].copy_from_slice(&8192u32.to_le_bytes());
        s[0x1CE + 12..0x1CE + 16].copy_from_slice(&100u32.to_le_bytes());
        let slots = parse_mbr(&s).unwrap();
        assert_eq!(
            slots[0],
            Some(MbrSlot {
                kind: 7,
                start_lba: 2048,
                sectors: 4096
            })
        );
        assert!(slots[1].unwrap().is_extended());
        assert_eq!(slots[2], None);
        s[0x1BE] = 0x12;
        assert!(parse_mbr(&s).is_err());
    }

    #[test]
    fn guid_text() {
        assert_eq!(
            guid_to_string(&BASIC_DATA_GUID),
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"
        );
    }
}
