//! Extended attributes kept in the inode, after `i_extra_isize`: what inline data needs (`system.data`, the part
//! of a file's or folder's inline data that does not fit in `i_block`).

use crate::inode::Inode;
use crate::{le16, le32};

/// The magic number before in-inode attributes.
const IBODY_MAGIC: u32 = 0xEA02_0000;
/// `e_name_index` of the `system.` prefix.
const SYSTEM: u8 = 7;

/// The value of in-inode attribute `system.<name>` of the raw inode `raw`, if it has one.
pub fn system_value<'a>(raw: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    if raw.len() <= 128 {
        return None;
    }
    let start = 128 + usize::from(le16(raw, 0x80));
    if start + 4 > raw.len() || le32(raw, start) != IBODY_MAGIC {
        return None;
    }
    // Entries start after the magic; value offsets are from the first entry.
    let base = start + 4;
    let mut at = base;
    while at + 16 <= raw.len() {
        let name_len = usize::from(raw[at]);
        if name_len == 0 && raw[at + 1] == 0 && le16(raw, at + 2) == 0 && le32(raw, at + 4) == 0 {
            break; // the 4 zero bytes that end the list
        }
        let index = raw[at + 1];
        let offs = usize::from(le16(raw, at + 2));
        let inum = le32(raw, at + 4);
        let size = le32(raw, at + 8) as usize;
        let n = raw.get(at + 16..at + 16 + name_len)?;
        if index == SYSTEM && n == name && inum == 0 {
            return raw.get(base + offs..base + offs + size);
        }
        at += (16 + name_len).div_ceil(4) * 4;
    }
    None
}

/// An inline-data inode's bytes: `i_block`'s 60, then `system.data`'s.
pub fn inline_data(raw: &[u8], inode: &Inode) -> Vec<u8> {
    let mut out = inode.block.to_vec();
    if let Some(more) = system_value(raw, b"data") {
        out.extend_from_slice(more);
    }
    out
}
