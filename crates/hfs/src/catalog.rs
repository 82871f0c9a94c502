//! The catalog file's records (TN1150, "Catalog File"): every file and folder is a record keyed by its parent's
//! id and its name, and has a thread record keyed by its own id that names its parent and name.

use crate::header::ForkData;
use crate::{be16, be32};

/// Record types.
pub mod record {
    pub const FOLDER: u16 = 1;
    pub const FILE: u16 = 2;
    pub const FOLDER_THREAD: u16 = 3;
    pub const FILE_THREAD: u16 = 4;
}

/// Catalog node ids with a meaning of their own.
pub mod cnid {
    /// The root folder's parent: the key of the root folder's record, whose name is the volume's.
    pub const ROOT_PARENT: u32 = 1;
    pub const ROOT: u32 = 2;
    pub const EXTENTS: u32 = 3;
    pub const CATALOG: u32 = 4;
    pub const BAD_BLOCKS: u32 = 5;
    pub const ALLOCATION: u32 = 6;
    pub const STARTUP: u32 = 7;
    pub const ATTRIBUTES: u32 = 8;
    pub const FIRST_USER: u32 = 16;
}

/// `flags` bits of a file or folder record.
pub mod flags {
    pub const LOCKED: u16 = 0x1;
    pub const HAS_ATTRIBUTES: u16 = 0x4;
    pub const HAS_LINK_CHAIN: u16 = 0x20;
}

/// A four-character code as a number (`b"hlnk"`).
pub const fn code(c: &[u8; 4]) -> u32 {
    u32::from_be_bytes(*c)
}

/// Finder file types and creators that make a file record something else.
pub mod finder {
    use super::code;
    /// A file hard link: `hlnk` by `hfs+`.
    pub const HARD_LINK: (u32, u32) = (code(b"hlnk"), code(b"hfs+"));
    /// A folder hard link (Time Machine): `fdrp` by `MACS`.
    pub const FOLDER_LINK: (u32, u32) = (code(b"fdrp"), code(b"MACS"));
    /// A symbolic link: `slnk` by `rhap`.
    pub const SYMLINK: (u32, u32) = (code(b"slnk"), code(b"rhap"));
    /// Finder flag: not shown.
    pub const INVISIBLE: u16 = 0x4000;
}

/// BSD `st_flags` low byte (ownerFlags): decmpfs-compressed.
pub const UF_COMPRESSED: u8 = 0x20;
/// BSD `st_flags` low byte: immutable.
pub const UF_IMMUTABLE: u8 = 0x02;

/// A catalog key: the parent's id and the name as UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key<'a> {
    pub parent: u32,
    /// The name's UTF-16BE bytes.
    pub name: &'a [u8],
}

impl<'a> Key<'a> {
    /// The key bytes after the key length.
    pub fn parse(b: &'a [u8]) -> Option<Key<'a>> {
        if b.len() < 6 {
            return None;
        }
        let len = usize::from(be16(b, 4)) * 2;
        Some(Key {
            parent: be32(b, 0),
            name: b.get(6..6 + len)?,
        })
    }
}

/// The owner, group and mode of a file or folder (`HFSPlusBSDInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BsdInfo {
    pub owner: u32,
    pub group: u32,
    pub admin_flags: u8,
    pub owner_flags: u8,
    pub mode: u16,
    /// An indirect node's link count, a hard link's indirect node number, a device's number.
    pub special: u32,
}

impl BsdInfo {
    fn parse(b: &[u8]) -> BsdInfo {
        BsdInfo {
            owner: be32(b, 0),
            group: be32(b, 4),
            admin_flags: b[8],
            owner_flags: b[9],
            mode: be16(b, 10),
            special: be32(b, 12),
        }
    }
}

/// What a file and a folder record share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Common {
    pub flags: u16,
    pub id: u32,
    pub created: u32,
    pub modified: u32,
    /// Attributes (metadata) modified: the inode change time.
    pub changed: u32,
    pub accessed: u32,
    pub bsd: BsdInfo,
    pub finder_flags: u16,
}

/// A folder or file record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Folder {
        common: Common,
        /// How many entries it holds.
        valence: u32,
    },
    File {
        common: Common,
        file_type: u32,
        creator: u32,
        data: ForkData,
        resource: ForkData,
    },
    /// A thread record (of either kind): the entry's parent and name, keyed by its own id.
    Thread,
}

/// A folder record is 88 bytes, a file record 248.
pub const FOLDER_LEN: usize = 88;
pub const FILE_LEN: usize = 248;

impl Record {
    /// A leaf record's data; `None` for a record type that is not one of the four or data cut short.
    pub fn parse(b: &[u8]) -> Option<Record> {
        if b.len() < 2 {
            return None;
        }
        let common = |b: &[u8]| Common {
            flags: be16(b, 2),
            id: be32(b, 8),
            created: be32(b, 12),
            modified: be32(b, 16),
            changed: be32(b, 20),
            accessed: be32(b, 24),
            bsd: BsdInfo::parse(&b[32..48]),
            finder_flags: be16(b, 56),
        };
        match be16(b, 0) {
            record::FOLDER if b.len() >= FOLDER_LEN => Some(Record::Folder {
                common: common(b),
                valence: be32(b, 4),
            }),
            record::FILE if b.len() >= FILE_LEN => Some(Record::File {
                common: common(b),
                file_type: be32(b, 48),
                creator: be32(b, 52),
                data: ForkData::parse(&b[88..168]),
                resource: ForkData::parse(&b[168..248]),
            }),
            record::FOLDER_THREAD | record::FILE_THREAD => Some(Record::Thread),
            _ => None,
        }
    }
}
