//! Inodes: a file's mode, owner, size, times (with nanoseconds and epoch bits from a large inode), flags, and its
//! `i_block` area (an extent tree's root, a block map, inline data or a short symlink's target).

use uffs_fs::{Kind, Times};

use crate::{le16, le32};

/// `i_flags` bits.
pub mod flags {
    pub const COMPR: u32 = 0x4;
    pub const IMMUTABLE: u32 = 0x10;
    pub const INDEX: u32 = 0x1000;
    pub const HUGE_FILE: u32 = 0x40000;
    pub const EXTENTS: u32 = 0x80000;
    pub const EA_INODE: u32 = 0x200000;
    pub const INLINE_DATA: u32 = 0x1000_0000;
    pub const ENCRYPT: u32 = 0x800;
}

/// `i_mode`'s file type.
const S_IFMT: u16 = 0xF000;
const S_IFDIR: u16 = 0x4000;
const S_IFREG: u16 = 0x8000;
const S_IFLNK: u16 = 0xA000;

/// FILETIME of 1970-01-01.
const UNIX_EPOCH: i128 = uffs_fs::time::UNIX_EPOCH as i128;

/// The fields of one inode uffs uses.
#[derive(Debug, Clone)]
pub struct Inode {
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub links: u16,
    /// `i_blocks` in 512-byte units (or, with `HUGE_FILE` on the inode, in blocks: see [`Inode::allocated`]).
    pub blocks: u64,
    pub flags: u32,
    pub dtime: u32,
    /// The 60 bytes of `i_block`.
    pub block: [u8; 60],
    pub file_acl: u64,
    pub times: Times,
}

impl Inode {
    /// Parses one inode record of `size` bytes (`s_inode_size`); `huge` is the `huge_file` feature.
    pub fn parse(b: &[u8], huge: bool) -> Inode {
        let extra = if b.len() > 128 {
            usize::from(le16(b, 0x80))
        } else {
            0
        };
        // A field of the large inode counts only if `i_extra_isize` covers it.
        let has = |end: usize| b.len() >= 128 + extra && 128 + extra >= end && extra > 0;
        let time = |lo_at: usize, extra_at: usize| {
            let extra = if has(extra_at + 4) {
                le32(b, extra_at)
            } else {
                0
            };
            filetime(le32(b, lo_at), extra)
        };
        let blocks_hi = if huge {
            u64::from(le16(b, 0x74)) << 32
        } else {
            0
        };
        Inode {
            mode: le16(b, 0),
            uid: u32::from(le16(b, 2)) | u32::from(le16(b, 0x78)) << 16,
            gid: u32::from(le16(b, 0x18)) | u32::from(le16(b, 0x7A)) << 16,
            size: u64::from(le32(b, 4)) | u64::from(le32(b, 0x6C)) << 32,
            links: le16(b, 0x1A),
            blocks: u64::from(le32(b, 0x1C)) | blocks_hi,
            flags: le32(b, 0x20),
            dtime: le32(b, 0x14),
            block: b[0x28..0x64].try_into().expect("60 bytes"),
            file_acl: u64::from(le32(b, 0x68)) | u64::from(le16(b, 0x76)) << 32,
            times: Times {
                created: if has(0x98) { time(0x90, 0x94) } else { 0 },
                modified: time(0x10, 0x88),
                changed: time(0x0C, 0x84),
                accessed: time(0x08, 0x8C),
            },
        }
    }

    /// Never used, or freed: no mode and no links.
    pub fn is_free(&self) -> bool {
        self.links == 0 || self.mode == 0
    }

    pub fn kind(&self) -> Kind {
        match self.mode & S_IFMT {
            S_IFDIR => Kind::Folder,
            S_IFREG => Kind::File,
            S_IFLNK => Kind::Symlink,
            0 => Kind::File,
            _ => Kind::Special,
        }
    }

    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Bytes the inode holds on the volume (its data, extent tree and extended-attribute blocks).
    pub fn allocated(&self, block_size: u64) -> u64 {
        if self.has(flags::HUGE_FILE) {
            self.blocks.saturating_mul(block_size)
        } else {
            self.blocks.saturating_mul(512)
        }
    }

    /// A symlink whose target is in `i_block` itself (no block holds it): shorter than 60 bytes, as the kernel
    /// decides (`ext4_inode_is_fast_symlink`).
    pub fn is_fast_symlink(&self) -> bool {
        self.kind() == Kind::Symlink && self.size < 60 && !self.has(flags::INLINE_DATA)
    }
}

/// FILETIME of an ext time: `lo` seconds since 1970 (signed), and the extra field's epoch bits (added above bit
/// 31) and nanoseconds (its upper 30 bits); 0 for a time before 1601 or a 0 time (never set).
pub fn filetime(lo: u32, extra: u32) -> u64 {
    if lo == 0 && extra == 0 {
        return 0;
    }
    let secs = i128::from(lo as i32) + (i128::from(extra & 3) << 32);
    let nanos = i128::from(extra >> 2).min(999_999_999);
    let t = UNIX_EPOCH + secs * 10_000_000 + nanos / 100;
    u64::try_from(t).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_nanoseconds_and_epoch_bits() {
        // 2021-01-01T00:00:00Z = 1609459200.
        assert_eq!(filetime(1_609_459_200, 0), 132_539_328_000_000_000);
        assert_eq!(
            filetime(1_609_459_200, 123_456_700 << 2),
            132_539_328_001_234_567
        );
        // Before 1970: negative seconds.
        assert_eq!(
            filetime((-86_400i32) as u32, 0),
            116_444_736_000_000_000 - 864_000_000_000
        );
        // An epoch bit moves a time past 2038: 0x80000000 with epoch 1 is 2^31 + 2^32 - 2^32 … = 2^31 s.
        assert_eq!(
            filetime(0x8000_0000, 1),
            (116_444_736_000_000_000i128 + (1i128 << 31) * 10_000_000) as u64
        );
        assert_eq!(filetime(0, 0), 0);
    }
}
