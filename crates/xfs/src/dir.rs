//! Folders' entries in each of XFS's forms: short form in the inode (`xfs_dir2_sf`), and the data blocks of
//! block, leaf, node and B+tree folders (`XD2B`/`XD2D`, v5 `XDB3`/`XDD3`), which lie in the folder's first
//! 32 GiB of offsets (its leaf and free-index blocks lie above, and hold no names).
//!
//! A name removed from a data block becomes unused space: its first 4 bytes (the top half of its inode number)
//! take the unused marker and length, the rest stays until a new name is written there. So the names of deleted
//! entries can be read back from unused space (short-form folders close the gap: nothing is left there).

use crate::{be16, be32, be64};

/// Folder offsets from here on hold the leaf and free-index blocks.
pub const LEAF_OFFSET: u64 = 32 << 30;

const BLOCK_V4: u32 = 0x5844_3242;
const DATA_V4: u32 = 0x5844_3244;
const BLOCK_V5: u32 = 0x5844_4233;
const DATA_V5: u32 = 0x5844_4433;

/// One name in a folder: the inode it names and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Name<'a> {
    pub ino: u64,
    pub name: &'a [u8],
}

/// The entries of a short-form folder (the inode's data fork), and its parent; `None` when the header does not
/// fit. Entries that run past the fork end the list.
pub fn short_form(fork: &[u8], ftype: bool, mut each: impl FnMut(Name<'_>)) -> Option<u64> {
    let (count, i8count) = (usize::from(*fork.first()?), *fork.get(1)?);
    let ino_len = if i8count > 0 { 8 } else { 4 };
    let read_ino = |at: usize| -> Option<u64> {
        let b = fork.get(at..at + ino_len)?;
        Some(if ino_len == 8 {
            be64(b, 0)
        } else {
            u64::from(be32(b, 0))
        })
    };
    let parent = read_ino(2)?;
    let mut at = 2 + ino_len;
    for _ in 0..count {
        let Some(&len) = fork.get(at) else { break };
        // namelen, a 2-byte offset, the name, the file type, the inode number.
        let name_at = at + 3;
        let ino_at = name_at + usize::from(len) + usize::from(ftype);
        let (Some(name), Some(ino)) = (
            fork.get(name_at..name_at + usize::from(len)),
            read_ino(ino_at),
        ) else {
            break;
        };
        if len > 0 {
            each(Name { ino, name });
        }
        at = ino_at + ino_len;
    }
    Some(parent)
}

/// What a folder data block held.
#[derive(Debug, PartialEq, Eq)]
pub enum Block {
    /// A data block (its names given to the callback).
    Data,
    /// No folder data block: a hole, or damage.
    Not,
}

/// A name of a deleted entry, read from a data block's unused space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted<'a> {
    /// The inode it named: whole, or only its low 32 bits when the unused marker took the top half (`whole`).
    pub ino: u64,
    pub whole: bool,
    pub name: &'a [u8],
    /// Its file type byte (as ext's: 1 file, 2 folder, 7 symlink …), 0 without the `ftype` feature.
    pub file_type: u8,
}

/// The entries of one folder data block (`block` is one whole folder block), `.` and `..` left out; with
/// `deleted`, the names of deleted entries its unused space still holds.
pub fn data_block(
    block: &[u8],
    ftype: bool,
    mut each: impl FnMut(Name<'_>),
    mut deleted: Option<&mut dyn FnMut(Deleted<'_>)>,
) -> Block {
    if block.len() < 64 {
        return Block::Not;
    }
    let (hdr, single) = match be32(block, 0) {
        BLOCK_V4 => (16, true),
        DATA_V4 => (16, false),
        BLOCK_V5 => (64, true),
        DATA_V5 => (64, false),
        _ => return Block::Not,
    };
    // A single-block folder ends with its leaf entries (8 bytes each) and a tail (their count, the stale ones).
    let end = if single {
        let count = be32(block, block.len() - 8) as usize;
        match count
            .checked_mul(8)
            .and_then(|l| (block.len() - 8).checked_sub(l))
        {
            Some(end) if end >= hdr => end,
            _ => return Block::Not,
        }
    } else {
        block.len()
    };
    let mut at = hdr;
    while at + 8 <= end {
        if be16(block, at) == 0xFFFF {
            // Unused space: its length, a multiple of 8.
            let len = usize::from(be16(block, at + 2));
            if len < 8 || len % 8 != 0 {
                break;
            }
            if let Some(d) = deleted.as_deref_mut() {
                unused_names(block, at, (at + len).min(end), ftype, d);
            }
            at += len;
            continue;
        }
        let Some(&len) = block.get(at + 8) else { break };
        let name_at = at + 9;
        // inumber, namelen, name, file type, tag; 8-byte aligned.
        let size = (8 + 1 + usize::from(len) + usize::from(ftype) + 2).next_multiple_of(8);
        if len == 0 || at + size > end {
            break;
        }
        let name = &block[name_at..name_at + usize::from(len)];
        if name != b"." && name != b".." {
            each(Name {
                ino: be64(block, at),
                name,
            });
        }
        at += size;
    }
    Block::Data
}

/// The deleted entries in the unused space `block[start..end]`: at each 8-byte step, an entry whose lengths fit,
/// whose name the kernel could have written and whose tag (its last two bytes) is an offset at or before it: its
/// own, or, once it was merged into the unused space before it, that space's start (the kernel writes the tag of
/// the unused space grown over it where the entry's tag was).
fn unused_names(
    block: &[u8],
    start: usize,
    end: usize,
    ftype: bool,
    each: &mut dyn FnMut(Deleted<'_>),
) {
    let mut at = start;
    while at + 16 <= end {
        let len = usize::from(block[at + 8]);
        let size = (8 + 1 + len + usize::from(ftype) + 2).next_multiple_of(8);
        let fits = len > 0 && at + size <= end;
        let tagged = fits && {
            let tag = usize::from(be16(block, at + size - 2));
            tag <= at && tag >= 16 && tag % 8 == 0
        };
        let name = &block[(at + 9).min(end)..(at + 9 + len).min(end)];
        let file_type = if ftype {
            block[(at + 9 + len).min(end - 1)]
        } else {
            0
        };
        if tagged
            && plausible(name)
            && name != b"."
            && name != b".."
            && (!ftype || (1..=7).contains(&file_type))
        {
            // The space's start, or an entry that started unused space before the space before it grew over it.
            let whole = at != start && be16(block, at) != 0xFFFF;
            each(Deleted {
                ino: if whole {
                    be64(block, at)
                } else {
                    u64::from(be32(block, at + 4))
                },
                whole,
                name,
                file_type,
            });
            at += size;
        } else {
            at += 8;
        }
    }
}

/// A name the kernel could have written, with no control character: not noise taken for a name.
fn plausible(name: &[u8]) -> bool {
    !name.is_empty() && !name.iter().any(|&c| c < 0x20 || c == 0x7f || c == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_form_folder() {
        // Two entries, 4-byte inode numbers, with file types; parent 128.
        let mut f = vec![2u8, 0, 0, 0, 0, 128];
        for (name, ino) in [(&b"a.txt"[..], 131u32), (b"sub", 132)] {
            f.push(name.len() as u8);
            f.extend_from_slice(&[0, 0x60]);
            f.extend_from_slice(name);
            f.push(1);
            f.extend_from_slice(&ino.to_be_bytes());
        }
        let mut got = Vec::new();
        let parent = short_form(&f, true, |n| got.push((n.ino, n.name.to_vec())));
        assert_eq!(parent, Some(128));
        assert_eq!(got, [(131, b"a.txt".to_vec()), (132, b"sub".to_vec())]);
        // Cut short: the whole entries before the cut.
        let mut got = Vec::new();
        short_form(&f[..f.len() - 2], true, |n| got.push(n.ino));
        assert_eq!(got, [131]);
    }
}
