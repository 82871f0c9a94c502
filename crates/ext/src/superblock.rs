//! The superblock (1,024 bytes at byte 1,024 of the volume): geometry, counts, features and the volume's name.
//! Field offsets are those of the kernel's `struct ext4_super_block` (Documentation/filesystems/ext4).

use crate::{le16, le32, Error, Result};

/// Where the superblock starts, and where its magic number is (`0xEF53` at byte 1,080).
pub const OFFSET: u64 = 1024;
pub const MAGIC_AT: usize = 1080;
const MAGIC: u16 = 0xEF53;

/// `s_feature_compat` bits.
pub mod compat {
    pub const HAS_JOURNAL: u32 = 0x4;
    pub const RESIZE_INODE: u32 = 0x10;
    pub const DIR_INDEX: u32 = 0x20;
}

/// `s_feature_incompat` bits.
pub mod incompat {
    pub const FILETYPE: u32 = 0x2;
    pub const RECOVER: u32 = 0x4;
    pub const JOURNAL_DEV: u32 = 0x8;
    pub const META_BG: u32 = 0x10;
    pub const EXTENTS: u32 = 0x40;
    pub const BIT64: u32 = 0x80;
    pub const MMP: u32 = 0x100;
    pub const FLEX_BG: u32 = 0x200;
    pub const EA_INODE: u32 = 0x400;
    pub const DIRDATA: u32 = 0x1000;
    pub const CSUM_SEED: u32 = 0x2000;
    pub const LARGEDIR: u32 = 0x4000;
    pub const INLINE_DATA: u32 = 0x8000;
    pub const ENCRYPT: u32 = 0x10000;
    pub const CASEFOLD: u32 = 0x20000;
}

/// `s_feature_ro_compat` bits.
pub mod ro_compat {
    pub const SPARSE_SUPER: u32 = 0x1;
    pub const LARGE_FILE: u32 = 0x2;
    pub const HUGE_FILE: u32 = 0x8;
    pub const GDT_CSUM: u32 = 0x10;
    pub const DIR_NLINK: u32 = 0x20;
    pub const EXTRA_ISIZE: u32 = 0x40;
    pub const QUOTA: u32 = 0x100;
    pub const BIGALLOC: u32 = 0x200;
    pub const METADATA_CSUM: u32 = 0x400;
    pub const PROJECT: u32 = 0x2000;
    pub const VERITY: u32 = 0x8000;
}

/// The names `mke2fs -O` and `dumpe2fs` use for the feature bits, by word.
const NAMES: [(u8, u32, &str); 29] = [
    (0, compat::HAS_JOURNAL, "has_journal"),
    (0, 0x8, "ext_attr"),
    (0, compat::RESIZE_INODE, "resize_inode"),
    (0, compat::DIR_INDEX, "dir_index"),
    (0, 0x200, "sparse_super2"),
    (0, 0x400, "fast_commit"),
    (0, 0x800, "stable_inodes"),
    (0, 0x1000, "orphan_file"),
    (1, incompat::FILETYPE, "filetype"),
    (1, incompat::RECOVER, "needs_recovery"),
    (1, incompat::META_BG, "meta_bg"),
    (1, incompat::EXTENTS, "extents"),
    (1, incompat::BIT64, "64bit"),
    (1, incompat::MMP, "mmp"),
    (1, incompat::FLEX_BG, "flex_bg"),
    (1, incompat::EA_INODE, "ea_inode"),
    (1, incompat::LARGEDIR, "large_dir"),
    (1, incompat::INLINE_DATA, "inline_data"),
    (1, incompat::ENCRYPT, "encrypt"),
    (1, incompat::CASEFOLD, "casefold"),
    (2, ro_compat::SPARSE_SUPER, "sparse_super"),
    (2, ro_compat::LARGE_FILE, "large_file"),
    (2, ro_compat::HUGE_FILE, "huge_file"),
    (2, ro_compat::GDT_CSUM, "uninit_bg"),
    (2, ro_compat::DIR_NLINK, "dir_nlink"),
    (2, ro_compat::EXTRA_ISIZE, "extra_isize"),
    (2, ro_compat::QUOTA, "quota"),
    (2, ro_compat::BIGALLOC, "bigalloc"),
    (2, ro_compat::METADATA_CSUM, "metadata_csum"),
];

/// The superblock's fields uffs uses.
#[derive(Debug, Clone)]
pub struct Superblock {
    pub inodes_count: u32,
    pub blocks_count: u64,
    pub reserved_blocks: u64,
    pub free_blocks: u64,
    pub free_inodes: u32,
    pub first_data_block: u32,
    pub block_size: u64,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub rev_level: u32,
    pub first_inode: u32,
    pub inode_size: u16,
    pub compat: u32,
    pub incompat: u32,
    pub ro_compat: u32,
    pub uuid: [u8; 16],
    pub label: String,
    pub last_mounted: String,
    pub journal_inode: u32,
    pub desc_size: u16,
    pub first_meta_bg: u32,
    pub created: u32,
    pub written: u32,
    pub last_orphan: u32,
}

impl Superblock {
    /// Parses and checks the 1,024 bytes of a superblock; `volume_len` bounds the geometry.
    pub fn parse(b: &[u8], volume_len: u64) -> Result<Superblock> {
        if b.len() < 1024 || le16(b, 56) != MAGIC {
            return Err(Error::new(
                "no ext2/3/4 superblock (magic 0xEF53 at byte 1080)",
            ));
        }
        let log = le32(b, 24);
        if log > 6 {
            return Err(Error::new(format!(
                "superblock: a block size of 1024 << {log} bytes (at most 64 KiB)"
            )));
        }
        let incompat = le32(b, 0x60);
        let bit64 = incompat & incompat::BIT64 != 0;
        let hi = |at: usize| {
            if bit64 {
                u64::from(le32(b, at)) << 32
            } else {
                0
            }
        };
        let rev_level = le32(b, 0x4C);
        let (first_inode, inode_size) = if rev_level == 0 {
            (11, 128)
        } else {
            (le32(b, 0x54), le16(b, 0x58))
        };
        let block_size = 1024u64 << log;
        let sb = Superblock {
            inodes_count: le32(b, 0),
            blocks_count: u64::from(le32(b, 4)) | hi(0x150),
            reserved_blocks: u64::from(le32(b, 8)) | hi(0x154),
            free_blocks: u64::from(le32(b, 0xC)) | hi(0x158),
            free_inodes: le32(b, 0x10),
            first_data_block: le32(b, 0x14),
            block_size,
            blocks_per_group: le32(b, 0x20),
            inodes_per_group: le32(b, 0x28),
            rev_level,
            first_inode,
            inode_size,
            compat: le32(b, 0x5C),
            incompat,
            ro_compat: le32(b, 0x64),
            uuid: b[0x68..0x78].try_into().expect("16 bytes"),
            label: text(&b[0x78..0x88]),
            last_mounted: text(&b[0x88..0xC8]),
            journal_inode: le32(b, 0xE0),
            desc_size: if bit64 { le16(b, 0xFE) } else { 32 },
            first_meta_bg: le32(b, 0x104),
            created: le32(b, 0x108),
            written: le32(b, 0x30),
            last_orphan: le32(b, 0xE8),
        };
        sb.check(volume_len)?;
        Ok(sb)
    }

    fn check(&self, volume_len: u64) -> Result<()> {
        let bad = |why: String| Err(Error::new(format!("superblock: {why}")));
        if self.blocks_per_group == 0 || self.inodes_per_group == 0 {
            return bad("no blocks or inodes per group".into());
        }
        if u64::from(self.blocks_per_group) > self.block_size * 8 {
            return bad(format!(
                "{} blocks per group, more than a block's bitmap holds",
                self.blocks_per_group
            ));
        }
        if u64::from(self.inodes_per_group) > self.block_size * 8 {
            return bad(format!(
                "{} inodes per group, more than a block's bitmap holds",
                self.inodes_per_group
            ));
        }
        if self.inode_size < 128
            || !self.inode_size.is_power_of_two()
            || u64::from(self.inode_size) > self.block_size
        {
            return bad(format!("an inode size of {} bytes", self.inode_size));
        }
        if self.incompat & incompat::BIT64 != 0
            && (self.desc_size < 32 || !self.desc_size.is_power_of_two() || self.desc_size > 1024)
        {
            return bad(format!("a group descriptor size of {}", self.desc_size));
        }
        if u64::from(self.first_data_block) >= self.blocks_count {
            return bad(format!(
                "the first data block {} is past the last, {}",
                self.first_data_block, self.blocks_count
            ));
        }
        let groups = self.groups();
        if u64::from(self.inodes_count) > groups * u64::from(self.inodes_per_group) {
            return bad(format!(
                "{} inodes in {groups} groups of {}",
                self.inodes_count, self.inodes_per_group
            ));
        }
        // The group descriptors must fit in the volume (the image may still be cut short of its end).
        if groups.saturating_mul(u64::from(self.desc_size)) > volume_len.max(self.block_size * 2) {
            return bad(format!(
                "{groups} groups' descriptors do not fit in the image"
            ));
        }
        if self.incompat & incompat::JOURNAL_DEV != 0 {
            return bad("this is an external journal device, which holds no files".into());
        }
        Ok(())
    }

    /// The number of block groups.
    pub fn groups(&self) -> u64 {
        (self.blocks_count - u64::from(self.first_data_block))
            .div_ceil(u64::from(self.blocks_per_group))
    }

    /// The volume's length in bytes as the superblock gives it.
    pub fn volume_len(&self) -> u64 {
        self.blocks_count.saturating_mul(self.block_size)
    }

    pub fn has_incompat(&self, bit: u32) -> bool {
        self.incompat & bit != 0
    }

    pub fn has_ro_compat(&self, bit: u32) -> bool {
        self.ro_compat & bit != 0
    }

    /// Group descriptors carry checksums and the `itable_unused` and `*_UNINIT` hints may be trusted.
    pub fn has_group_checksums(&self) -> bool {
        self.has_ro_compat(ro_compat::GDT_CSUM) || self.has_ro_compat(ro_compat::METADATA_CSUM)
    }

    /// `ext2`, `ext3` or `ext4`, as `blkid` names the file system from its features.
    pub fn flavor(&self) -> &'static str {
        let ext4_only = incompat::EXTENTS
            | incompat::BIT64
            | incompat::FLEX_BG
            | incompat::INLINE_DATA
            | incompat::META_BG
            | incompat::EA_INODE
            | incompat::LARGEDIR
            | incompat::CASEFOLD
            | incompat::ENCRYPT;
        if self.incompat & ext4_only != 0
            || self.ro_compat
                & (ro_compat::HUGE_FILE
                    | ro_compat::GDT_CSUM
                    | ro_compat::DIR_NLINK
                    | ro_compat::EXTRA_ISIZE
                    | ro_compat::METADATA_CSUM
                    | ro_compat::BIGALLOC)
                != 0
        {
            "ext4"
        } else if self.compat & compat::HAS_JOURNAL != 0 {
            "ext3"
        } else {
            "ext2"
        }
    }

    /// The features set, by the names `mke2fs -O` takes, in `dumpe2fs`'s order.
    pub fn feature_names(&self) -> Vec<&'static str> {
        let words = [self.compat, self.incompat, self.ro_compat];
        NAMES
            .iter()
            .filter(|(w, bit, _)| words[usize::from(*w)] & bit != 0)
            .map(|(_, _, name)| *name)
            .collect()
    }

    /// The UUID as `blkid` prints it.
    pub fn uuid_text(&self) -> String {
        uffs_fs::uuid_text(&self.uuid)
    }
}

/// A NUL-padded text field.
fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}
