//! An inode (`xfs_dinode`, big-endian): its core (mode, owner, links, times, size, blocks, fork layout, flags)
//! and where its data fork lies within it. v1/v2 inodes' core is 100 bytes, v3's (v5 volumes) 176 with the
//! creation time.

use uffs_fs::{Kind, Times};

use crate::{be16, be32, be64};

/// `IN`.
pub const MAGIC: u16 = 0x494e;

/// Data fork formats.
pub mod format {
    /// A device's number.
    pub const DEV: u8 = 0;
    /// The data in the inode: a short-form folder, a symlink's target.
    pub const LOCAL: u8 = 1;
    pub const EXTENTS: u8 = 2;
    pub const BTREE: u8 = 3;
}

/// `di_flags`.
pub mod flags {
    /// Its data is on the real-time device.
    pub const REALTIME: u16 = 0x1;
    pub const PREALLOC: u16 = 0x2;
    pub const IMMUTABLE: u16 = 0x8;
    pub const APPEND: u16 = 0x10;
    pub const NODUMP: u16 = 0x80;
}

/// `di_flags2`.
mod flags2 {
    pub const BIGTIME: u64 = 0x8;
    pub const NREXT64: u64 = 0x10;
}

/// Seconds from 1601-01-01 to 1970-01-01.
const EPOCH_DIFF: i64 = 11_644_473_600;

#[derive(Debug, Clone, Default)]
pub struct Inode {
    pub mode: u16,
    pub version: u8,
    pub format: u8,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub times: Times,
    pub size: u64,
    /// Blocks it holds: data, attribute fork and the extent B+tree's own.
    pub nblocks: u64,
    /// Extents of its data fork.
    pub nextents: u64,
    /// Where its attribute fork starts, in 8-byte units past the core (0: none).
    pub forkoff: u8,
    pub flags: u16,
    pub flags2: u64,
}

impl Inode {
    /// The inode in `raw` (one whole inode), when it carries the magic `IN`.
    pub fn parse(raw: &[u8]) -> Option<Inode> {
        if raw.len() < 100 || be16(raw, 0) != MAGIC {
            return None;
        }
        let version = raw[4];
        let v3 = version >= 3 && raw.len() >= 176;
        let flags2 = if v3 { be64(raw, 120) } else { 0 };
        let bigtime = flags2 & flags2::BIGTIME != 0;
        let time = |at: usize| filetime(be64(raw, at), bigtime);
        let nextents = if flags2 & flags2::NREXT64 != 0 {
            be64(raw, 24)
        } else {
            u64::from(be32(raw, 76))
        };
        Some(Inode {
            mode: be16(raw, 2),
            version,
            format: raw[5],
            uid: be32(raw, 8),
            gid: be32(raw, 12),
            nlink: if version == 1 {
                u32::from(be16(raw, 6))
            } else {
                be32(raw, 16)
            },
            times: Times {
                created: if v3 { time(144) } else { 0 },
                modified: time(40),
                changed: time(48),
                accessed: time(32),
            },
            size: be64(raw, 56),
            nblocks: be64(raw, 64),
            nextents,
            forkoff: raw[82],
            flags: be16(raw, 90),
            flags2,
        })
    }

    /// Bytes of the core, where the data fork starts.
    pub fn core_len(&self) -> usize {
        if self.version >= 3 {
            176
        } else {
            100
        }
    }

    /// The data fork within the whole inode `raw`.
    pub fn data_fork<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        let start = self.core_len().min(raw.len());
        let end = if self.forkoff == 0 {
            raw.len()
        } else {
            (start + usize::from(self.forkoff) * 8).min(raw.len())
        };
        &raw[start..end]
    }

    pub fn kind(&self) -> Kind {
        match self.mode & 0o170000 {
            0o040000 => Kind::Folder,
            0o100000 => Kind::File,
            0o120000 => Kind::Symlink,
            _ => Kind::Special,
        }
    }

    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// An inode time as FILETIME: seconds (signed) and nanoseconds since 1970, or with bigtime nanoseconds since
/// 1901-12-13T20:45:52Z (-2^31 s); 0 for a time before 1601.
fn filetime(raw: u64, bigtime: bool) -> u64 {
    let (secs, nanos) = if bigtime {
        (
            (raw / 1_000_000_000) as i64 - (1 << 31),
            raw % 1_000_000_000,
        )
    } else {
        (
            i64::from((raw >> 32) as u32 as i32),
            (raw & 0xFFFF_FFFF).min(999_999_999),
        )
    };
    let ticks = (secs + EPOCH_DIFF) as i128 * 10_000_000 + i128::from(nanos / 100);
    u64::try_from(ticks).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_both_forms() {
        // 2021-01-01T00:00:00Z plus 0.5 s.
        let secs = 1_609_459_200u64;
        let want = (secs + EPOCH_DIFF as u64) * 10_000_000 + 5_000_000;
        assert_eq!(filetime(secs << 32 | 500_000_000, false), want);
        assert_eq!(
            filetime((secs + (1 << 31)) * 1_000_000_000 + 500_000_000, true),
            want
        );
        // Before 1970 (signed seconds), and before 1601 (none).
        assert_eq!(
            filetime(((-86_400i32) as u32 as u64) << 32, false),
            (EPOCH_DIFF as u64 - 86_400) * 10_000_000
        );
        assert_eq!(
            filetime(0, true),
            (EPOCH_DIFF - (1 << 31)) as u64 * 10_000_000
        );
    }
}
