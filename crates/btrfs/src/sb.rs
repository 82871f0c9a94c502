//! The superblock (at byte 64 KiB; copies at 64 MiB and 256 GiB) and its system chunk array: what is needed to
//! find the chunk tree, the root tree, and which device of a multi-device file system this is.

use crate::{le16, le32, le64, Error, Result};

/// Where the superblock is.
pub const OFFSET: u64 = 0x1_0000;
/// Its length.
pub const LEN: usize = 4096;
/// `_BHRfS_M` at byte 0x40 of the superblock.
pub const MAGIC: &[u8; 8] = b"_BHRfS_M";

/// Incompatible features (`incompat_flags`) by bit.
pub mod incompat {
    pub const MIXED_BACKREF: u64 = 1 << 0;
    pub const DEFAULT_SUBVOL: u64 = 1 << 1;
    pub const MIXED_GROUPS: u64 = 1 << 2;
    pub const COMPRESS_LZO: u64 = 1 << 3;
    pub const COMPRESS_ZSTD: u64 = 1 << 4;
    pub const BIG_METADATA: u64 = 1 << 5;
    pub const EXTENDED_IREF: u64 = 1 << 6;
    pub const RAID56: u64 = 1 << 7;
    pub const SKINNY_METADATA: u64 = 1 << 8;
    pub const NO_HOLES: u64 = 1 << 9;
    pub const METADATA_UUID: u64 = 1 << 10;
    pub const RAID1C34: u64 = 1 << 11;
    pub const ZONED: u64 = 1 << 12;
    pub const EXTENT_TREE_V2: u64 = 1 << 13;
    pub const RAID_STRIPE_TREE: u64 = 1 << 14;
    pub const SIMPLE_QUOTA: u64 = 1 << 16;

    /// Names as `btrfs inspect-internal dump-super` prints them.
    pub const NAMES: &[(u64, &str)] = &[
        (MIXED_BACKREF, "MIXED_BACKREF"),
        (DEFAULT_SUBVOL, "DEFAULT_SUBVOL"),
        (MIXED_GROUPS, "MIXED_GROUPS"),
        (COMPRESS_LZO, "COMPRESS_LZO"),
        (COMPRESS_ZSTD, "COMPRESS_ZSTD"),
        (BIG_METADATA, "BIG_METADATA"),
        (EXTENDED_IREF, "EXTENDED_IREF"),
        (RAID56, "RAID56"),
        (SKINNY_METADATA, "SKINNY_METADATA"),
        (NO_HOLES, "NO_HOLES"),
        (METADATA_UUID, "METADATA_UUID"),
        (RAID1C34, "RAID1C34"),
        (ZONED, "ZONED"),
        (EXTENT_TREE_V2, "EXTENT_TREE_V2"),
        (RAID_STRIPE_TREE, "RAID_STRIPE_TREE"),
        (SIMPLE_QUOTA, "SIMPLE_QUOTA"),
    ];
}

/// Read-only compatible features (`compat_ro_flags`).
pub mod compat_ro {
    pub const FREE_SPACE_TREE: u64 = 1 << 0;
    pub const FREE_SPACE_TREE_VALID: u64 = 1 << 1;
    pub const VERITY: u64 = 1 << 2;
    pub const BLOCK_GROUP_TREE: u64 = 1 << 3;

    pub const NAMES: &[(u64, &str)] = &[
        (FREE_SPACE_TREE, "FREE_SPACE_TREE"),
        (FREE_SPACE_TREE_VALID, "FREE_SPACE_TREE_VALID"),
        (VERITY, "VERITY"),
        (BLOCK_GROUP_TREE, "BLOCK_GROUP_TREE"),
    ];
}

#[derive(Debug, Clone)]
pub struct Superblock {
    pub fsid: [u8; 16],
    /// What tree blocks' headers carry: the fsid, or the metadata UUID when the fsid was changed after mkfs.
    pub metadata_uuid: [u8; 16],
    pub generation: u64,
    /// Logical address of the root tree's root node, and its level.
    pub root: u64,
    pub root_level: u8,
    pub chunk_root: u64,
    pub chunk_root_level: u8,
    pub log_root: u64,
    pub total_bytes: u64,
    pub bytes_used: u64,
    pub num_devices: u64,
    pub sectorsize: u32,
    pub nodesize: u32,
    pub compat_ro: u64,
    pub incompat: u64,
    pub csum_type: u16,
    /// This device's id among the file system's devices, its UUID and size.
    pub devid: u64,
    pub dev_uuid: [u8; 16],
    pub dev_total_bytes: u64,
    pub label: String,
    /// The system chunk array: the chunks that hold the chunk tree, as (key, chunk item) pairs.
    pub sys_chunks: Vec<u8>,
}

impl Superblock {
    /// Parses the superblock's bytes (`LEN` of them, from byte [`OFFSET`]).
    pub fn parse(b: &[u8]) -> Result<Superblock> {
        if b.len() < LEN || &b[0x40..0x48] != MAGIC {
            return Err(Error::new("no Btrfs superblock (_BHRfS_M at byte 65,600)"));
        }
        let sectorsize = le32(b, 0x90);
        let nodesize = le32(b, 0x94);
        if !(4096..=65536).contains(&sectorsize) || !sectorsize.is_power_of_two() {
            return Err(Error::new(format!(
                "Btrfs superblock: sector size {sectorsize}"
            )));
        }
        if !(sectorsize..=65536).contains(&nodesize) || !nodesize.is_power_of_two() {
            return Err(Error::new(format!(
                "Btrfs superblock: node size {nodesize}"
            )));
        }
        let sys_len = le32(b, 0xa0) as usize;
        if sys_len > 2048 {
            return Err(Error::new(format!(
                "Btrfs superblock: system chunk array of {sys_len} bytes (at most 2,048)"
            )));
        }
        let incompat = le64(b, 0xbc);
        let fsid: [u8; 16] = b[0x20..0x30].try_into().expect("16 bytes");
        let metadata_uuid = if incompat & incompat::METADATA_UUID != 0 {
            b[0x23b..0x24b].try_into().expect("16 bytes")
        } else {
            fsid
        };
        let label = &b[0x12b..0x22b];
        let label = &label[..label.iter().position(|&c| c == 0).unwrap_or(label.len())];
        Ok(Superblock {
            fsid,
            metadata_uuid,
            generation: le64(b, 0x48),
            root: le64(b, 0x50),
            chunk_root: le64(b, 0x58),
            log_root: le64(b, 0x60),
            total_bytes: le64(b, 0x70),
            bytes_used: le64(b, 0x78),
            num_devices: le64(b, 0x88),
            sectorsize,
            nodesize,
            compat_ro: le64(b, 0xb4),
            incompat,
            csum_type: le16(b, 0xc4),
            root_level: b[0xc6],
            chunk_root_level: b[0xc7],
            devid: le64(b, 0xc9),
            dev_total_bytes: le64(b, 0xc9 + 8),
            dev_uuid: b[0xc9 + 66..0xc9 + 82].try_into().expect("16 bytes"),
            label: String::from_utf8_lossy(label).into_owned(),
            sys_chunks: b[0x32b..0x32b + sys_len].to_vec(),
        })
    }

    pub fn has_incompat(&self, bit: u64) -> bool {
        self.incompat & bit != 0
    }

    /// The features' names, incompatible then read-only compatible ones.
    pub fn feature_names(&self) -> Vec<&'static str> {
        let mut v: Vec<&str> = incompat::NAMES
            .iter()
            .filter(|(bit, _)| self.incompat & bit != 0)
            .map(|(_, n)| *n)
            .collect();
        v.extend(
            compat_ro::NAMES
                .iter()
                .filter(|(bit, _)| self.compat_ro & bit != 0)
                .map(|(_, n)| *n),
        );
        v
    }

    pub fn csum_name(&self) -> String {
        match self.csum_type {
            0 => "crc32c".into(),
            1 => "xxhash64".into(),
            2 => "sha256".into(),
            3 => "blake2b".into(),
            n => format!("unknown ({n})"),
        }
    }
}
