//! The items of file-system trees and of the root tree that uffs reads: inodes, their names (inode references),
//! file extents, folder entries, subvolumes' root items and references.

use crate::tree::Key;
use crate::{le16, le32, le64};

/// Bytes of an inode item.
pub const INODE_ITEM_LEN: usize = 160;

/// A time: seconds and nanoseconds since 1970.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Time {
    pub sec: i64,
    pub nsec: u32,
}

impl Time {
    fn parse(b: &[u8], at: usize) -> Time {
        Time {
            sec: le64(b, at) as i64,
            nsec: le32(b, at + 8),
        }
    }

    /// As FILETIME; 0 before 1601.
    pub fn filetime(self) -> u64 {
        let ticks = i128::from(uffs_fs::time::UNIX_EPOCH)
            + i128::from(self.sec) * 10_000_000
            + i128::from(self.nsec.min(999_999_999)) / 100;
        u64::try_from(ticks).unwrap_or(0)
    }
}

/// Inode flag: immutable (`chattr +i`).
pub const FLAG_IMMUTABLE: u64 = 1 << 6;

#[derive(Debug, Clone, Default)]
pub struct Inode {
    pub size: u64,
    /// Bytes of extents it holds (uncompressed), as `stat` gives in blocks.
    pub nbytes: u64,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub rdev: u64,
    pub flags: u64,
    pub atime: Time,
    pub ctime: Time,
    pub mtime: Time,
    /// Creation (birth) time.
    pub otime: Time,
}

impl Inode {
    pub fn parse(b: &[u8]) -> Option<Inode> {
        if b.len() < INODE_ITEM_LEN {
            return None;
        }
        Some(Inode {
            size: le64(b, 16),
            nbytes: le64(b, 24),
            nlink: le32(b, 40),
            uid: le32(b, 44),
            gid: le32(b, 48),
            mode: le32(b, 52),
            rdev: le64(b, 56),
            flags: le64(b, 64),
            atime: Time::parse(b, 112),
            ctime: Time::parse(b, 124),
            mtime: Time::parse(b, 136),
            otime: Time::parse(b, 148),
        })
    }

    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == 0o040000
    }
}

/// The names an inode reference (key offset: the folder) holds: (index in the folder, name).
pub fn inode_refs(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while b.len().saturating_sub(at) >= 10 {
        let n = le16(b, at + 8) as usize;
        let Some(name) = b.get(at + 10..at + 10 + n) else {
            break;
        };
        out.push(name);
        at += 10 + n;
    }
    out
}

/// The (folder, name) pairs an extended inode reference holds (for names past what one leaf item takes).
pub fn inode_extrefs(b: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while b.len().saturating_sub(at) >= 18 {
        let parent = le64(b, at);
        let n = le16(b, at + 16) as usize;
        let Some(name) = b.get(at + 18..at + 18 + n) else {
            break;
        };
        out.push((parent, name));
        at += 18 + n;
    }
    out
}

/// One entry of a folder (a `DIR_INDEX` item holds one): what it names, its type byte and its name.
#[derive(Debug, Clone)]
pub struct DirEntry<'a> {
    pub location: Key,
    pub file_type: u8,
    pub name: &'a [u8],
}

pub fn dir_entries(b: &[u8]) -> Vec<DirEntry<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    while b.len().saturating_sub(at) >= 30 {
        let data_len = le16(b, at + 25) as usize;
        let name_len = le16(b, at + 27) as usize;
        let Some(name) = b.get(at + 30..at + 30 + name_len) else {
            break;
        };
        out.push(DirEntry {
            location: Key::parse(b, at),
            file_type: b[at + 29],
            name,
        });
        at += 30 + name_len + data_len;
    }
    out
}

/// What a file extent item says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent<'a> {
    /// Data held in the item itself (small files), perhaps compressed; `ram_bytes` decoded.
    Inline {
        compression: u8,
        ram_bytes: u64,
        data: &'a [u8],
    },
    /// `num_bytes` of the file are the bytes from `offset` of the extent at logical `disk_bytenr`
    /// (`disk_num_bytes` on disk, `ram_bytes` decoded); `disk_bytenr` 0 is a hole; `prealloc`: allocated, never
    /// written (reads as zeros).
    Regular {
        compression: u8,
        ram_bytes: u64,
        disk_bytenr: u64,
        disk_num_bytes: u64,
        offset: u64,
        num_bytes: u64,
        prealloc: bool,
    },
}

impl Extent<'_> {
    pub fn parse(b: &[u8]) -> Option<Extent<'_>> {
        if b.len() < 21 {
            return None;
        }
        let ram_bytes = le64(b, 8);
        let compression = b[16];
        match b[20] {
            0 => Some(Extent::Inline {
                compression,
                ram_bytes,
                data: &b[21..],
            }),
            t @ (1 | 2) if b.len() >= 53 => Some(Extent::Regular {
                compression,
                ram_bytes,
                disk_bytenr: le64(b, 21),
                disk_num_bytes: le64(b, 29),
                offset: le64(b, 37),
                num_bytes: le64(b, 45),
                prealloc: t == 2,
            }),
            _ => None,
        }
    }
}

/// A subvolume's root item: where its tree is, and what it is.
#[derive(Debug, Clone, Default)]
pub struct RootItem {
    pub bytenr: u64,
    pub level: u8,
    pub root_dirid: u64,
    pub flags: u64,
    pub refs: u32,
    pub uuid: [u8; 16],
    /// The subvolume it is a snapshot of (all zeros: none).
    pub parent_uuid: [u8; 16],
    pub generation: u64,
    pub otime: Time,
}

/// Root item flag: the subvolume is read-only.
pub const ROOT_SUBVOL_RDONLY: u64 = 1;

impl RootItem {
    pub fn parse(b: &[u8]) -> Option<RootItem> {
        if b.len() < 239 {
            return None;
        }
        let mut r = RootItem {
            generation: le64(b, 160),
            root_dirid: le64(b, 168),
            bytenr: le64(b, 176),
            flags: le64(b, 208),
            refs: le32(b, 216),
            level: b[238],
            ..RootItem::default()
        };
        // The UUIDs and times arrived later (an older item ends at the level).
        if b.len() >= 351 {
            r.uuid = b[247..263].try_into().expect("16 bytes");
            r.parent_uuid = b[263..279].try_into().expect("16 bytes");
            r.otime = Time::parse(b, 339);
        }
        Some(r)
    }

    pub fn is_snapshot(&self) -> bool {
        self.parent_uuid != [0; 16]
    }
}

/// A root reference or back reference: the folder (in the parent subvolume) a subvolume sits in, and its name.
pub fn root_ref(b: &[u8]) -> Option<(u64, &[u8])> {
    if b.len() < 18 {
        return None;
    }
    let n = le16(b, 16) as usize;
    Some((le64(b, 0), b.get(18..18 + n)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_whose_lengths_run_past_their_item_end_the_list() {
        // A folder entry whose data length points past the item (found by the fuzz target): one entry, no more.
        let mut b = vec![0u8; 34];
        b[25..27].copy_from_slice(&500u16.to_le_bytes());
        b[27..29].copy_from_slice(&4u16.to_le_bytes());
        b[30..34].copy_from_slice(b"name");
        let d = dir_entries(&b);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, b"name");
        // A name longer than the item: nothing.
        b[27..29].copy_from_slice(&40u16.to_le_bytes());
        assert!(dir_entries(&b).is_empty());
        let mut r = vec![0u8; 12];
        r[8..10].copy_from_slice(&9u16.to_le_bytes());
        assert!(inode_refs(&r).is_empty());
        let mut x = vec![0u8; 20];
        x[16..18].copy_from_slice(&3u16.to_le_bytes());
        assert!(inode_extrefs(&x).is_empty());
    }
}
