//! A volume's superblock (`apfs_superblock_t`, Apple File System Reference, "Volumes"): its name, role,
//! features, whether it is encrypted, and the trees it keeps (its object map, file-system tree, snapshot
//! metadata tree).

use crate::object::{Header, PHYSICAL, STORAGE_MASK};
use crate::{le16, le32, le64};

/// `APSB` as stored.
pub const MAGIC: u32 = 0x4253_5041;

pub mod incompat {
    pub const CASE_INSENSITIVE: u64 = 0x1;
    pub const NORMALIZATION_INSENSITIVE: u64 = 0x8;
    pub const SEALED: u64 = 0x20;
}

/// `apfs_fs_flags`: the volume is not encrypted.
pub const UNENCRYPTED: u64 = 0x1;

#[derive(Debug, Clone)]
pub struct Superblock {
    pub header: Header,
    pub index: u32,
    pub incompatible: u64,
    pub unmount_time: u64,
    pub alloc_blocks: u64,
    pub omap_oid: u64,
    pub root_tree_oid: u64,
    pub root_tree_type: u32,
    pub snap_meta_tree_oid: u64,
    pub snap_meta_tree_type: u32,
    pub next_obj_id: u64,
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    pub other: u64,
    pub snapshots: u64,
    pub uuid: [u8; 16],
    pub last_modified: u64,
    pub fs_flags: u64,
    pub formatted_by: String,
    pub name: String,
    pub role: u16,
}

impl Superblock {
    pub fn parse(b: &[u8]) -> Option<Superblock> {
        if b.len() < 0x420 || le32(b, 32) != MAGIC {
            return None;
        }
        let text = |r: std::ops::Range<usize>| {
            let s = &b[r];
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        };
        Some(Superblock {
            header: Header::parse(b),
            index: le32(b, 0x24),
            incompatible: le64(b, 0x38),
            unmount_time: le64(b, 0x40),
            alloc_blocks: le64(b, 0x58),
            root_tree_type: le32(b, 0x74),
            snap_meta_tree_type: le32(b, 0x7C),
            omap_oid: le64(b, 0x80),
            root_tree_oid: le64(b, 0x88),
            snap_meta_tree_oid: le64(b, 0x98),
            next_obj_id: le64(b, 0xB0),
            files: le64(b, 0xB8),
            directories: le64(b, 0xC0),
            symlinks: le64(b, 0xC8),
            other: le64(b, 0xD0),
            snapshots: le64(b, 0xD8),
            uuid: b[0xF0..0x100].try_into().expect("16 bytes"),
            last_modified: le64(b, 0x100),
            fs_flags: le64(b, 0x108),
            formatted_by: text(0x110..0x130),
            name: text(0x2C0..0x3C0),
            role: le16(b, 0x3C4),
        })
    }

    pub fn case_sensitive(&self) -> bool {
        self.incompatible & incompat::CASE_INSENSITIVE == 0
    }

    /// Directory records are keyed by a hash of the name (case- or normalization-insensitive volumes: every
    /// volume macOS makes) rather than by the name.
    pub fn hashed_names(&self) -> bool {
        self.incompatible & (incompat::CASE_INSENSITIVE | incompat::NORMALIZATION_INSENSITIVE) != 0
    }

    pub fn encrypted(&self) -> bool {
        self.fs_flags & UNENCRYPTED == 0
    }

    /// The file-system tree's nodes are at their ids (a sealed system volume's), not found through the map.
    pub fn physical_tree(&self) -> bool {
        self.root_tree_type & STORAGE_MASK == PHYSICAL
    }

    pub fn role_name(&self) -> &'static str {
        role_name(self.role)
    }
}

/// A volume role as Disk Utility names it.
pub fn role_name(role: u16) -> &'static str {
    match role {
        0 => "no role",
        0x1 => "System",
        0x2 => "User",
        0x4 => "Recovery",
        0x8 => "VM",
        0x10 => "Preboot",
        0x20 => "Installer",
        0x40 => "Data",
        0x80 => "Baseband",
        0xC0 => "Update",
        0x100 => "xART",
        0x140 => "Hardware",
        0x180 => "Backup",
        0x1C0 => "Reserved",
        0x200 => "Enterprise",
        0x240 => "Reserved",
        0x280 => "Prelogin",
        _ => "unknown role",
    }
}
