//! Partition tables of whole disks: the MBR (with its chain of extended boot records) and GPT.
//!
//! The parsing works on byte slices ([`parse_mbr`], [`parse_ebr`], [`parse_gpt_header`], [`parse_gpt_entry`]);
//! [`read_table`] reads a disk's table through [`ReadAt`] and gives its partitions. Which file system a
//! partition holds is not decided here: the caller looks at each one's first sector (type codes are hints,
//! content decides).

use std::io;

use crate::ReadAt;

/// Why a table could not be parsed. Static strings keep the error path allocation-free.
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The structure claims bytes beyond the end of the buffer.
    #[error("{what} is truncated: needs {need} bytes at offset {offset}, only {have} available")]
    Truncated {
        what: &'static str,
        offset: usize,
        need: usize,
        have: usize,
    },
    /// A magic number or signature is not what the structure requires.
    #[error("{what} has a bad signature")]
    BadSignature { what: &'static str },
    /// A field holds a value the format does not allow.
    #[error("{what}: {why}")]
    Invalid {
        what: &'static str,
        why: &'static str,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

/// `len` bytes of `b` at `offset`, or [`Error::Truncated`] naming `what`.
fn bytes<'a>(b: &'a [u8], offset: usize, len: usize, what: &'static str) -> Result<&'a [u8]> {
    offset
        .checked_add(len)
        .and_then(|end| b.get(offset..end))
        .ok_or(Error::Truncated {
            what,
            offset,
            need: len,
            have: b.len(),
        })
}

fn u32_at(b: &[u8], offset: usize, what: &'static str) -> Result<u32> {
    let s = bytes(b, offset, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], offset: usize, what: &'static str) -> Result<u64> {
    let mut a = [0u8; 8];
    a.copy_from_slice(bytes(b, offset, 8, what)?);
    Ok(u64::from_le_bytes(a))
}

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
        // UTF-16LE; an unpaired surrogate becomes U+FFFD.
        name: String::from_utf16_lossy(
            &name_raw[..end]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect::<Vec<_>>(),
        ),
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

/// One partition of a whole disk, as its table states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// 1-based: MBR primaries 1–4 by slot, logical partitions from 5; GPT by entry position.
    pub index: u32,
    /// Its first byte on the disk.
    pub start: u64,
    pub len: u64,
    /// Partition type as the table states it (`0x07`, a GPT type's name such as `efi-system`, or its GUID).
    pub kind: String,
    /// The name a GPT gives it (`EFI System Partition`); empty on MBR.
    pub name: String,
}

/// Names of the GPT partition types a disk commonly holds, by type GUID as [`guid_to_string`] writes it (the
/// UEFI specification's, Microsoft's, the Discoverable Partitions Specification's, Apple's).
const GPT_TYPES: [(&str, &str); 16] = [
    ("C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "efi-system"),
    ("21686148-6449-6E6F-744E-656564454649", "bios-boot"),
    ("E3C9E316-0B5C-4DB8-817D-F92DF00215AE", "microsoft-reserved"),
    ("EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "basic-data"),
    ("DE94BBA4-06D1-4D40-A16A-BFD50179D6AC", "windows-recovery"),
    (
        "5808C8AA-7E8F-42E0-85D2-E1E90434CFB3",
        "windows-ldm-metadata",
    ),
    ("AF9B60A0-1431-4F62-BC68-3311714A69AD", "windows-ldm-data"),
    ("0FC63DAF-8483-4772-8E79-3D69D8477DE4", "linux-data"),
    ("4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709", "linux-root-x86-64"),
    ("933AC7E1-2EB4-4F13-B844-0E14E2AEF915", "linux-home"),
    ("0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "linux-swap"),
    ("E6D6D379-F507-44C2-A23C-238F2A3DF928", "linux-lvm"),
    ("A19D880F-05FC-4D3B-A006-743F0F84911E", "linux-raid"),
    (
        "BC13C2FF-59E6-4262-A352-B275FD6F7172",
        "linux-extended-boot",
    ),
    ("7C3457EF-0000-11AA-AA11-00306543ECAC", "apple-apfs"),
    ("48465300-0000-11AA-AA11-00306543ECAC", "apple-hfs"),
];

/// The name of GPT partition type `guid`, or the GUID itself for a type without one here.
pub fn gpt_type_name(guid: &[u8; 16]) -> String {
    let text = guid_to_string(guid);
    GPT_TYPES
        .iter()
        .find(|(g, _)| *g == text)
        .map_or(text, |(_, name)| (*name).to_string())
}

/// A disk's partition table: which kind (`MBR`, `GPT`) and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub name: &'static str,
    pub partitions: Vec<Partition>,
}

/// Why a disk's partition table could not be read, though it has one.
#[derive(Debug)]
pub enum TableError {
    /// A protective MBR, and no GPT header after it (at 512 or at 4096 bytes).
    NoGptHeader,
    /// The GPT's partition entries could not be read.
    GptEntries(io::Error),
    /// GPT entry `index` (1-based) is damaged.
    GptEntry { index: usize, cause: Error },
}

/// Most logical partitions followed in an EBR chain (a loop in a damaged chain must not hang us).
const MAX_LOGICAL: u32 = 128;

/// The partition table of `disk`, whose first bytes (at least a sector's) are `head`: `None` when `head` is no
/// MBR (nor protective MBR), or when its table lists no partition. Logical partitions are followed along the
/// EBR chain until a link is missing or unreadable; a GPT is looked for at 512 and at 4096 bytes.
pub fn read_table(
    disk: &dyn ReadAt,
    head: &[u8],
) -> std::result::Result<Option<Table>, TableError> {
    if head.starts_with(APM_DRIVER_DESCRIPTOR) {
        if let Some(partitions) = read_apm(disk, head) {
            return Ok(Some(Table {
                name: "APM",
                partitions,
            }));
        }
    }
    let Ok(slots) = parse_mbr(head) else {
        return Ok(None);
    };
    if slots.iter().flatten().any(|s| s.kind == GPT_PROTECTIVE) {
        for sector in [512u64, 4096] {
            if let Some(partitions) = read_gpt(disk, sector)? {
                return Ok(Some(Table {
                    name: "GPT",
                    partitions,
                }));
            }
        }
        return Err(TableError::NoGptHeader);
    }
    let sector = 512u64;
    let mut parts = Vec::new();
    for (i, slot) in slots.iter().enumerate() {
        let Some(s) = slot else { continue };
        if s.is_extended() {
            read_ebr_chain(disk, s, sector, &mut parts);
        } else {
            parts.push(Partition {
                index: i as u32 + 1,
                start: u64::from(s.start_lba) * sector,
                len: u64::from(s.sectors) * sector,
                kind: format!("0x{:02X}", s.kind),
                name: String::new(),
            });
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    parts.sort_by_key(|p| p.index);
    Ok(Some(Table {
        name: "MBR",
        partitions: parts,
    }))
}

/// The driver descriptor record an Apple partition map starts with (`sbSig`, "ER").
const APM_DRIVER_DESCRIPTOR: &[u8] = b"ER";
/// A partition map entry's signature (`pmSig`, "PM").
const APM_ENTRY: &[u8] = b"PM";
/// Most entries a map is read for (a damaged count must not make us read the disk's every block).
const APM_MAX_ENTRIES: u32 = 256;

/// An Apple partition map (Inside Macintosh: Devices, "Partition map"): block 0 gives the block size
/// (`sbBlkSize`, big-endian at byte 2); blocks 1 to N each hold an entry (`PM`, the map's entry count, the
/// partition's first block and block count, its name and type). Every entry is listed, the map's own and
/// `Apple_Free` included, numbered from 1 as `mmls` and `parted` number them; `None` when the first entry is
/// no `PM` entry.
fn read_apm(disk: &dyn ReadAt, head: &[u8]) -> Option<Vec<Partition>> {
    let be32 = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let bs = match u16::from_be_bytes([*head.get(2)?, *head.get(3)?]) {
        0 => 512,
        n if n.is_power_of_two() && n >= 512 => u64::from(n),
        _ => return None,
    };
    let text = |b: &[u8]| {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let mut parts = Vec::new();
    let mut entry = vec![0u8; 512];
    let mut count = 1;
    let mut i = 1u32;
    while i <= count.min(APM_MAX_ENTRIES) {
        if disk.read_exact_at(&mut entry, u64::from(i) * bs).is_err()
            || !entry.starts_with(APM_ENTRY)
        {
            break;
        }
        if i == 1 {
            count = be32(&entry, 4);
        }
        parts.push(Partition {
            index: i,
            start: u64::from(be32(&entry, 8)) * bs,
            len: u64::from(be32(&entry, 12)) * bs,
            kind: text(&entry[48..80]),
            name: text(&entry[16..48]),
        });
        i += 1;
    }
    (!parts.is_empty()).then_some(parts)
}

fn read_ebr_chain(disk: &dyn ReadAt, ext: &MbrSlot, sector: u64, parts: &mut Vec<Partition>) {
    let ext_start = u64::from(ext.start_lba);
    let mut ebr = ext_start;
    let mut buf = vec![0u8; 512];
    for n in 0..MAX_LOGICAL {
        if disk.read_exact_at(&mut buf, ebr * sector).is_err() {
            break;
        }
        let Ok((logical, next)) = parse_ebr(&buf) else {
            break;
        };
        if let Some(l) = logical {
            parts.push(Partition {
                index: 5 + n,
                start: (ebr + u64::from(l.start_lba)) * sector,
                len: u64::from(l.sectors) * sector,
                kind: format!("0x{:02X}", l.kind),
                name: String::new(),
            });
        }
        match next {
            Some(nx) if nx.start_lba != 0 => ebr = ext_start + u64::from(nx.start_lba),
            _ => break,
        }
    }
}

fn read_gpt(
    disk: &dyn ReadAt,
    sector: u64,
) -> std::result::Result<Option<Vec<Partition>>, TableError> {
    let mut hdr = vec![0u8; sector as usize];
    if disk.read_exact_at(&mut hdr, sector).is_err() {
        return Ok(None);
    }
    let Ok(h) = parse_gpt_header(&hdr) else {
        return Ok(None);
    };
    let bytes = u64::from(h.entry_count) * u64::from(h.entry_size);
    let mut table = vec![0u8; bytes as usize];
    disk.read_exact_at(&mut table, h.entries_lba.saturating_mul(sector))
        .map_err(TableError::GptEntries)?;
    let mut parts = Vec::new();
    for (i, e) in table.chunks_exact(h.entry_size as usize).enumerate() {
        let entry = parse_gpt_entry(e).map_err(|cause| TableError::GptEntry {
            index: i + 1,
            cause,
        })?;
        let Some(entry) = entry else { continue };
        parts.push(Partition {
            index: i as u32 + 1,
            start: entry.first_lba.saturating_mul(sector),
            len: (entry.last_lba - entry.first_lba)
                .saturating_add(1)
                .saturating_mul(sector),
            kind: gpt_type_name(&entry.type_guid),
            name: entry.name,
        });
    }
    Ok(Some(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_types_by_name_and_others_by_guid() {
        // 0FC63DAF-8483-4772-8E79-3D69D8477DE4 as it lies on disk (the first three fields little-endian).
        let linux = [
            0xAF, 0x3D, 0xC6, 0x0F, 0x83, 0x84, 0x72, 0x47, 0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47,
            0x7D, 0xE4,
        ];
        assert_eq!(gpt_type_name(&linux), "linux-data");
        assert_eq!(gpt_type_name(&BASIC_DATA_GUID), "basic-data");
        let mut other = linux;
        other[15] ^= 1;
        assert_eq!(
            gpt_type_name(&other),
            "0FC63DAF-8483-4772-8E79-3D69D8477DE5"
        );
    }

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

    #[derive(Debug)]
    struct Disk(Vec<u8>);

    impl ReadAt for Disk {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            let src = self
                .0
                .get(offset as usize..offset as usize + buf.len())
                .ok_or(io::ErrorKind::UnexpectedEof)?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }

    /// Writes MBR slot `i` of the sector at `at`.
    fn slot(d: &mut [u8], at: usize, i: usize, kind: u8, start: u32, sectors: u32) {
        let e = at + 0x1BE + 16 * i;
        d[e + 4] = kind;
        d[e + 8..e + 12].copy_from_slice(&start.to_le_bytes());
        d[e + 12..e + 16].copy_from_slice(&sectors.to_le_bytes());
        d[at + 510] = 0x55;
        d[at + 511] = 0xAA;
    }

    #[test]
    fn mbr_primaries_and_logical_partitions_along_the_ebr_chain() {
        let mut d = vec![0u8; 64 * 512];
        slot(&mut d, 0, 0, 0x07, 2, 8);
        slot(&mut d, 0, 1, 0x0F, 16, 40);
        // First EBR (at sector 16): a logical partition 2 sectors in, and a link to the next EBR at 16 + 20.
        slot(&mut d, 16 * 512, 0, 0x0B, 2, 10);
        slot(&mut d, 16 * 512, 1, 0x05, 20, 20);
        slot(&mut d, 36 * 512, 0, 0x07, 2, 10);
        let t = read_table(&Disk(d.clone()), &d[..512]).unwrap().unwrap();
        assert_eq!(t.name, "MBR");
        let got: Vec<_> = t
            .partitions
            .iter()
            .map(|p| (p.index, p.start / 512, p.len / 512, p.kind.as_str()))
            .collect();
        assert_eq!(
            got,
            [(1, 2, 8, "0x07"), (5, 18, 10, "0x0B"), (6, 38, 10, "0x07")]
        );
        // No partition table at all.
        assert!(read_table(&Disk(vec![0; 1024]), &[0; 512])
            .unwrap()
            .is_none());
    }

    #[test]
    fn gpt_behind_a_protective_mbr() {
        let mut d = vec![0u8; 40 * 512];
        slot(&mut d, 0, 0, GPT_PROTECTIVE, 1, 39);
        let h = 512;
        d[h..h + 8].copy_from_slice(b"EFI PART");
        d[h + 0x48..h + 0x50].copy_from_slice(&2u64.to_le_bytes());
        d[h + 0x50..h + 0x54].copy_from_slice(&4u32.to_le_bytes());
        d[h + 0x54..h + 0x58].copy_from_slice(&128u32.to_le_bytes());
        let e = 2 * 512 + 128; // the second entry; the first is unused
        d[e..e + 16].copy_from_slice(&BASIC_DATA_GUID);
        d[e + 0x20..e + 0x28].copy_from_slice(&10u64.to_le_bytes());
        d[e + 0x28..e + 0x30].copy_from_slice(&29u64.to_le_bytes());
        for (i, c) in "data".encode_utf16().enumerate() {
            d[e + 0x38 + 2 * i..e + 0x3A + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        let t = read_table(&Disk(d.clone()), &d[..512]).unwrap().unwrap();
        assert_eq!(t.name, "GPT");
        assert_eq!(
            t.partitions,
            [Partition {
                index: 2,
                start: 10 * 512,
                len: 20 * 512,
                kind: "basic-data".into(),
                name: "data".into(),
            }]
        );
        // The same entry with its last LBA before its first is a damaged table.
        d[e + 0x28..e + 0x30].copy_from_slice(&5u64.to_le_bytes());
        assert!(matches!(
            read_table(&Disk(d.clone()), &d[..512]),
            Err(TableError::GptEntry { index: 2, .. })
        ));
        // A protective MBR with no GPT header.
        d[h..h + 8].fill(0);
        assert!(matches!(
            read_table(&Disk(d.clone()), &d[..512]),
            Err(TableError::NoGptHeader)
        ));
    }

    #[test]
    fn guid_text() {
        assert_eq!(
            guid_to_string(&BASIC_DATA_GUID),
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"
        );
    }
}
