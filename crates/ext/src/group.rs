//! Block group descriptors: where each group's bitmaps and inode table are, and the hints that let a scan skip
//! what was never used (`INODE_UNINIT`, `itable_unused`).

use crate::superblock::{incompat, ro_compat, Superblock};
use crate::{le16, le32, Error, ReadAt, Result};

/// `bg_flags` bits.
pub const INODE_UNINIT: u16 = 0x1;
pub const BLOCK_UNINIT: u16 = 0x2;

/// One block group's descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Group {
    pub block_bitmap: u64,
    pub inode_bitmap: u64,
    pub inode_table: u64,
    pub free_blocks: u32,
    pub free_inodes: u32,
    pub flags: u16,
    /// Inodes at the end of the group's table never used (`bg_itable_unused`): valid only with group checksums.
    pub itable_unused: u32,
}

impl Group {
    fn parse(d: &[u8], bit64: bool) -> Group {
        let hi32 = |at: usize| {
            if bit64 {
                u64::from(le32(d, at)) << 32
            } else {
                0
            }
        };
        let hi16 = |at: usize| {
            if bit64 {
                u32::from(le16(d, at)) << 16
            } else {
                0
            }
        };
        Group {
            block_bitmap: u64::from(le32(d, 0)) | hi32(0x20),
            inode_bitmap: u64::from(le32(d, 4)) | hi32(0x24),
            inode_table: u64::from(le32(d, 8)) | hi32(0x28),
            free_blocks: u32::from(le16(d, 0xC)) | hi16(0x2C),
            free_inodes: u32::from(le16(d, 0xE)) | hi16(0x2E),
            flags: le16(d, 0x12),
            itable_unused: u32::from(le16(d, 0x1C)) | hi16(0x32),
        }
    }
}

/// Whether group `g` holds a copy of the superblock (and of the descriptors): every group, or with
/// `sparse_super` groups 0, 1 and the powers of 3, 5 and 7.
pub fn has_superblock(sb: &Superblock, g: u64) -> bool {
    if !sb.has_ro_compat(ro_compat::SPARSE_SUPER) || g <= 1 {
        return true;
    }
    [3u64, 5, 7].iter().any(|&base| {
        let mut p = base;
        while p < g {
            p *= base;
        }
        p == g
    })
}

/// The first block of group `g`.
pub fn first_block(sb: &Superblock, g: u64) -> u64 {
    u64::from(sb.first_data_block) + g * u64::from(sb.blocks_per_group)
}

/// Reads every group's descriptor: one table after the superblock, or with `meta_bg` one block of descriptors
/// at the start of each meta group past `s_first_meta_bg`.
pub fn read_all(dev: &dyn ReadAt, sb: &Superblock) -> Result<Vec<Group>> {
    let groups = sb.groups();
    let size = u64::from(sb.desc_size);
    let per_block = sb.block_size / size;
    let bit64 = sb.has_incompat(incompat::BIT64);
    // Where each block of descriptors is: consecutive blocks after the superblock's, until meta_bg takes over.
    let table = u64::from(sb.first_data_block) + 1;
    let blocks = groups.div_ceil(per_block);
    let classic = if sb.has_incompat(incompat::META_BG) {
        u64::from(sb.first_meta_bg).min(blocks)
    } else {
        blocks
    };
    let mut out = Vec::with_capacity(groups as usize);
    let mut buf = vec![0u8; sb.block_size as usize];
    for b in 0..blocks {
        let block = if b < classic {
            table + b
        } else {
            let g = b * per_block;
            first_block(sb, g) + u64::from(has_superblock(sb, g))
        };
        dev.read_exact_at(&mut buf, block * sb.block_size)
            .map_err(|e| {
                Error::new(format!(
                    "group descriptors in block {block}: {e} (the image ends at byte {})",
                    dev.len()
                ))
            })?;
        for i in 0..per_block {
            if out.len() as u64 == groups {
                break;
            }
            let at = (i * size) as usize;
            out.push(Group::parse(&buf[at..at + size as usize], bit64));
        }
    }
    Ok(out)
}
