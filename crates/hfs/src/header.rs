//! The volume header (TN1150, "Volume Header"): at byte 1,024 of the volume, 512 bytes, big-endian; a copy at
//! 1,024 bytes before the volume's end. An HFS+ volume may sit inside an HFS ("wrapper") volume, whose master
//! directory block at the same place says where the HFS+ volume is embedded.

use crate::{be16, be32, be64, Error, Result};

/// Where the volume header starts.
pub const OFFSET: u64 = 1024;
/// Its length.
pub const LEN: usize = 512;
/// `H+`.
pub const SIG_HFSPLUS: u16 = 0x482B;
/// `HX`: HFSX, names compared case-sensitively when its catalog says so.
pub const SIG_HFSX: u16 = 0x4858;
/// `BD`: an HFS volume's master directory block.
pub const SIG_HFS: u16 = 0x4244;

/// Seconds from 1601-01-01 (FILETIME's start) to 1904-01-01 (HFS's).
const FROM_1601_TO_1904: u64 = 9_561_628_800;

/// An HFS date (seconds since 1904-01-01; the catalog's are UTC) as FILETIME; 0 (never set) stays 0.
pub fn filetime(seconds: u32) -> u64 {
    if seconds == 0 {
        0
    } else {
        (u64::from(seconds) + FROM_1601_TO_1904) * 10_000_000
    }
}

/// Volume attribute bits.
pub mod attributes {
    pub const UNMOUNTED: u32 = 1 << 8;
    pub const SPARED_BLOCKS: u32 = 1 << 9;
    pub const INCONSISTENT: u32 = 1 << 11;
    pub const CNIDS_REUSED: u32 = 1 << 12;
    pub const JOURNALED: u32 = 1 << 13;
    pub const SOFTWARE_LOCK: u32 = 1 << 15;
}

/// One extent: `count` allocation blocks from block `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extent {
    pub start: u32,
    pub count: u32,
}

/// A fork (a file's data or resource fork, or a special file) as a catalog record or the header keeps it: its
/// length and its first eight extents (the rest are in the extents overflow file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ForkData {
    pub logical_size: u64,
    pub total_blocks: u32,
    pub extents: [Extent; 8],
}

impl ForkData {
    /// The 80 bytes of an `HFSPlusForkData`.
    pub fn parse(b: &[u8]) -> ForkData {
        let mut extents = [Extent::default(); 8];
        for (i, e) in extents.iter_mut().enumerate() {
            e.start = be32(b, 16 + 8 * i);
            e.count = be32(b, 20 + 8 * i);
        }
        ForkData {
            logical_size: be64(b, 0),
            total_blocks: be32(b, 12),
            extents,
        }
    }

    /// Blocks its eight extents hold.
    pub fn record_blocks(&self) -> u64 {
        self.extents.iter().map(|e| u64::from(e.count)).sum()
    }
}

/// The fields of the volume header uffs uses.
#[derive(Debug, Clone)]
pub struct VolumeHeader {
    pub signature: u16,
    pub version: u16,
    pub attributes: u32,
    /// Who mounted it last (`10.0` macOS, `HFSJ` journaled macOS, `fsck`, `H+Lx` Linux).
    pub last_mounted_version: [u8; 4],
    pub journal_info_block: u32,
    /// Local time (the other dates are UTC).
    pub create_date: u32,
    pub modify_date: u32,
    pub checked_date: u32,
    pub file_count: u32,
    pub folder_count: u32,
    pub block_size: u32,
    pub total_blocks: u32,
    pub free_blocks: u32,
    pub next_catalog_id: u32,
    pub write_count: u32,
    /// The 64-bit volume identifier macOS keeps in the Finder information's last two words.
    pub volume_id: u64,
    pub allocation: ForkData,
    pub extents: ForkData,
    pub catalog: ForkData,
    pub attributes_file: ForkData,
    pub startup: ForkData,
}

impl VolumeHeader {
    /// The 512 bytes at [`OFFSET`].
    pub fn parse(b: &[u8]) -> Result<VolumeHeader> {
        if b.len() < LEN {
            return Err(Error::new("the HFS+ volume header is cut short"));
        }
        let signature = be16(b, 0);
        if signature != SIG_HFSPLUS && signature != SIG_HFSX {
            return Err(Error::new("no HFS+ volume header (H+ or HX at byte 1,024)"));
        }
        let h = VolumeHeader {
            signature,
            version: be16(b, 2),
            attributes: be32(b, 4),
            last_mounted_version: b[8..12].try_into().expect("4 bytes"),
            journal_info_block: be32(b, 12),
            create_date: be32(b, 16),
            modify_date: be32(b, 20),
            checked_date: be32(b, 28),
            file_count: be32(b, 32),
            folder_count: be32(b, 36),
            block_size: be32(b, 40),
            total_blocks: be32(b, 44),
            free_blocks: be32(b, 48),
            next_catalog_id: be32(b, 64),
            write_count: be32(b, 68),
            volume_id: be64(b, 104),
            allocation: ForkData::parse(&b[112..192]),
            extents: ForkData::parse(&b[192..272]),
            catalog: ForkData::parse(&b[272..352]),
            attributes_file: ForkData::parse(&b[352..432]),
            startup: ForkData::parse(&b[432..512]),
        };
        // TN1150: a power of two of at least 512 bytes.
        if h.block_size < 512 || !h.block_size.is_power_of_two() || h.block_size > 1 << 24 {
            return Err(Error::new(format!(
                "the HFS+ volume header gives an allocation block size of {} bytes",
                h.block_size
            )));
        }
        if h.volume_len() < 4096 || h.free_blocks > h.total_blocks {
            return Err(Error::new(format!(
                "the HFS+ volume header gives {} blocks, {} of them free",
                h.total_blocks, h.free_blocks
            )));
        }
        if h.catalog.extents[0].count == 0 {
            return Err(Error::new("the HFS+ volume header gives no catalog file"));
        }
        Ok(h)
    }

    pub fn is_hfsx(&self) -> bool {
        self.signature == SIG_HFSX
    }

    pub fn volume_len(&self) -> u64 {
        u64::from(self.total_blocks) * u64::from(self.block_size)
    }

    pub fn is_journaled(&self) -> bool {
        self.attributes & attributes::JOURNALED != 0
    }
}

/// Where the HFS+ volume starts in a volume whose first bytes are `head`: 0 when its header is at byte 1,024,
/// the embedded volume's offset when `head` is an HFS wrapper around one (its master directory block's
/// `drEmbedSigWord` is `H+`); `None` otherwise.
pub fn embedded_at(head: &[u8]) -> Option<u64> {
    let b = head.get(OFFSET as usize..OFFSET as usize + 0x82)?;
    match be16(b, 0) {
        SIG_HFSPLUS | SIG_HFSX => Some(0),
        SIG_HFS if be16(b, 0x7C) == SIG_HFSPLUS => {
            // drAlBlkSiz (allocation block size), drAlBlSt (first allocation block, in 512-byte sectors),
            // drEmbedExtent's start block.
            let block = u64::from(be32(b, 0x14));
            let first = u64::from(be16(b, 0x1C)) * 512;
            let start = u64::from(be16(b, 0x7E));
            (block >= 512 && block.is_power_of_two()).then_some(first + start * block)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_1904() {
        // 1970-01-01 is 2,082,844,800 s after 1904-01-01; FILETIME 116,444,736,000,000,000.
        assert_eq!(filetime(2_082_844_800), 116_444_736_000_000_000);
        assert_eq!(filetime(0), 0);
    }

    #[test]
    fn a_wrapper_names_where_its_volume_is() {
        let mut head = vec![0u8; 2048];
        head[1024..1026].copy_from_slice(&SIG_HFS.to_be_bytes());
        head[1024 + 0x14..1024 + 0x18].copy_from_slice(&4096u32.to_be_bytes());
        head[1024 + 0x1C..1024 + 0x1E].copy_from_slice(&6u16.to_be_bytes());
        head[1024 + 0x7C..1024 + 0x7E].copy_from_slice(&SIG_HFSPLUS.to_be_bytes());
        head[1024 + 0x7E..1024 + 0x80].copy_from_slice(&3u16.to_be_bytes());
        assert_eq!(embedded_at(&head), Some(6 * 512 + 3 * 4096));
        head[1024 + 0x7C] = 0;
        assert_eq!(embedded_at(&head), None);
    }
}
