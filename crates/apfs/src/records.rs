//! The records of a volume's file-system tree (Apple File System Reference, "File-System Objects"): keys start
//! with an object id and a record type in its top four bits, so a leaf-order sweep meets each object's
//! records together: its inode, extended attributes, file extents (keyed by its data stream's id) and, for
//! a folder, the directory records naming its children.

use uffs_fs::Times;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use crate::{le16, le32, le64};

/// Record types (`j_obj_types`).
pub mod kind {
    pub const SNAP_METADATA: u8 = 1;
    pub const INODE: u8 = 3;
    pub const XATTR: u8 = 4;
    pub const FILE_EXTENT: u8 = 8;
    pub const DIR_REC: u8 = 9;
}

/// The object id part of a key's first field.
pub const OID_MASK: u64 = 0x0FFF_FFFF_FFFF_FFFF;

/// A key's object id and record type.
pub fn split_key(key: &[u8]) -> Option<(u64, u8)> {
    let h = le64(key.get(..8)?, 0);
    Some((h & OID_MASK, (h >> 60) as u8))
}

/// The root folder's inode number, and its parent's.
pub const ROOT: u64 = 2;
pub const ROOT_PARENT: u64 = 1;

/// `bsd_flags`: the file is compressed (decmpfs); hidden; immutable.
pub const UF_COMPRESSED: u32 = 0x20;
pub const UF_HIDDEN: u32 = 0x8000;
pub const UF_IMMUTABLE: u32 = 0x2;

/// What an inode record (`j_inode_val_t` and its extended fields) tells.
#[derive(Debug, Clone, Default)]
pub struct Inode {
    pub id: u64,
    pub parent: u64,
    /// The data stream's id: its file extents are keyed by it.
    pub private_id: u64,
    pub times: Times,
    pub bsd_flags: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
    /// The data stream's length and bytes allocated (`j_dstream_t`); 0 without one.
    pub size: u64,
    pub allocated: u64,
    pub sparse: bool,
}

/// Nanoseconds since 1970 as FILETIME (0 stays 0).
pub fn filetime(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        ns / 100 + uffs_fs::time::UNIX_EPOCH
    }
}

/// Extended field types of an inode (`INO_EXT_TYPE_*`).
const XF_DSTREAM: u8 = 8;
const XF_SPARSE_BYTES: u8 = 13;

impl Inode {
    pub fn parse(id: u64, v: &[u8]) -> Option<Inode> {
        if v.len() < 92 {
            return None;
        }
        let mut i = Inode {
            id,
            parent: le64(v, 0),
            private_id: le64(v, 8),
            times: Times {
                created: filetime(le64(v, 16)),
                modified: filetime(le64(v, 24)),
                changed: filetime(le64(v, 32)),
                accessed: filetime(le64(v, 40)),
            },
            bsd_flags: le32(v, 68),
            uid: le32(v, 72),
            gid: le32(v, 76),
            mode: le16(v, 80),
            ..Inode::default()
        };
        for (kind, data) in xfields(&v[92..]) {
            match kind {
                XF_DSTREAM if data.len() >= 16 => {
                    i.size = le64(data, 0);
                    i.allocated = le64(data, 8);
                }
                XF_SPARSE_BYTES => i.sparse = true,
                _ => {}
            }
        }
        Some(i)
    }
}

/// The extended fields of an `xf_blob_t`: (type, data) each.
pub fn xfields(b: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    if b.len() < 4 {
        return out;
    }
    let n = usize::from(le16(b, 0));
    let mut data = 4 + 4 * n;
    for j in 0..n {
        let at = 4 + 4 * j;
        if at + 4 > b.len() {
            break;
        }
        let size = usize::from(le16(b, at + 2));
        let Some(d) = b.get(data..data + size) else {
            break;
        };
        out.push((b[at], d));
        data += size.div_ceil(8) * 8;
    }
    out
}

/// A directory record: a name of `file_id` in folder `parent`, as stored (UTF-8, no NUL).
#[derive(Debug, Clone, Copy)]
pub struct DirRec<'a> {
    pub parent: u64,
    pub file_id: u64,
    pub name: &'a [u8],
    /// The `DT_*` type (4 folder, 8 file, 10 symlink).
    pub dtype: u8,
}

impl<'a> DirRec<'a> {
    /// Parses a record of folder `parent`; `hashed`: the key holds the name's hash (see
    /// [`crate::volume::Superblock::hashed_names`]).
    pub fn parse(parent: u64, key: &'a [u8], v: &[u8], hashed: bool) -> Option<DirRec<'a>> {
        let (len, at) = if hashed {
            ((le32(key.get(..12)?, 8) & 0x3FF) as usize, 12)
        } else {
            (usize::from(le16(key.get(..10)?, 8)), 10)
        };
        let raw = key.get(at..at + len)?;
        if v.len() < 18 {
            return None;
        }
        Some(DirRec {
            parent,
            file_id: le64(v, 0),
            name: raw.strip_suffix(&[0]).unwrap_or(raw),
            dtype: (le16(v, 16) & 0xF) as u8,
        })
    }
}

/// A name as a user types it: UTF-8 composed (APFS keeps names as they were written, often decomposed).
pub fn name(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    if is_nfc_quick(s.chars()) == IsNormalized::Yes {
        s.into_owned()
    } else {
        s.nfc().collect()
    }
}

/// An extended attribute record's name, flags and data (`j_xattr_key_t`, `j_xattr_val_t`).
pub struct Xattr<'a> {
    pub name: &'a [u8],
    /// Its data is in a data stream (`j_xattr_dstream_t`: the stream's id and length), not in the record.
    pub stream: Option<(u64, u64)>,
    pub data: &'a [u8],
}

impl<'a> Xattr<'a> {
    pub fn parse(key: &'a [u8], v: &'a [u8]) -> Option<Xattr<'a>> {
        let len = usize::from(le16(key.get(..10)?, 8));
        let name = key.get(10..10 + len)?;
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        let flags = le16(v.get(..4)?, 0);
        let xlen = usize::from(le16(v, 2));
        let data = v.get(4..4 + xlen)?;
        let stream = (flags & 1 != 0)
            .then(|| (data.len() >= 16).then(|| (le64(data, 0), le64(data, 8))))
            .flatten();
        if flags & 1 != 0 && stream.is_none() {
            return None;
        }
        Some(Xattr { name, stream, data })
    }
}

/// A file extent (`j_file_extent_key_t`, `j_file_extent_val_t`): `len` bytes of stream `stream` from `logical`
/// at block `block` (0: a hole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Extent {
    pub stream: u64,
    pub logical: u64,
    pub len: u64,
    pub block: u64,
}

impl Extent {
    pub fn parse(stream: u64, key: &[u8], v: &[u8]) -> Option<Extent> {
        Some(Extent {
            stream,
            logical: le64(key.get(..16)?, 8),
            len: le64(v.get(..16)?, 0) & 0x00FF_FFFF_FFFF_FFFF,
            block: le64(v, 8),
        })
    }
}

/// A snapshot's metadata record (`j_snap_metadata_val_t`).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub xid: u64,
    /// The block of the volume's superblock as of the snapshot.
    pub superblock: u64,
    pub created: u64,
    pub name: String,
}

impl Snapshot {
    pub fn parse(xid: u64, v: &[u8]) -> Option<Snapshot> {
        let len = usize::from(le16(v.get(..50)?, 48));
        let raw = v.get(50..50 + len)?;
        Some(Snapshot {
            xid,
            superblock: le64(v, 8),
            created: filetime(le64(v, 16)),
            name: String::from_utf8_lossy(raw.strip_suffix(&[0]).unwrap_or(raw)).into_owned(),
        })
    }
}
