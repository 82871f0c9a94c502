//! Directory blocks: the linear entries (`inode`, `rec_len`, `name_len`, `file_type`, name) of every folder, read
//! as plain blocks whether the folder is linear or an htree (an htree's interior blocks hold one empty entry
//! spanning the block, and its root the `.` and `..` entries, so a linear read sees exactly the names), and the
//! names of deleted entries still in the slack after a live one. An htree's index entries (hash, block) lie in
//! the space those spanning entries cover; they are not slack, and are passed over when looking for deleted names
//! (The Sleuth Kit reads them as names: `^` or empty ones with the block number as their inode).

use crate::{le16, le32};

/// One name in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub inode: u32,
    pub name: Vec<u8>,
    /// Found in the slack of a live entry, or in an entry whose inode was cleared to 0: a deleted name.
    pub deleted: bool,
    /// The entry's `file_type` byte (0 when the volume keeps none): what a deleted name whose inode is unknown
    /// or another file's was.
    pub file_type: u8,
}

/// How `rec_len` is kept on disk (64 KiB blocks store 65,536 as 0 or 65,535).
fn rec_len(raw: u16, block_size: usize) -> usize {
    if block_size >= 65536 && (raw == 0 || raw == 65535) {
        65536
    } else {
        usize::from(raw)
    }
}

/// The space an entry with a name of `n` bytes needs.
fn needed(n: usize) -> usize {
    (8 + n).div_ceil(4) * 4
}

/// Which block of its folder a directory block is, for telling an htree's index from slack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A block of a linear folder (no `INDEX` flag).
    Linear,
    /// The first block of an htree folder: `.`, `..` and the root of the index.
    HtreeRoot,
    /// Any later block of an htree folder: names, or an interior node of the index.
    HtreeOther,
}

/// The offset in `block` where the index entries in use end, when the entry at `at` (spanning `len` bytes) is
/// where an htree keeps them: the root's `..` entry (followed by `dx_root_info`, then the entries) or an interior
/// node's empty entry. `limit` must be what the block holds (with or without the 8-byte checksum tail) and
/// `count` within it, so a leaf whose entries all were deleted is not taken for a node.
fn index_end(block: &[u8], place: Place, at: usize, len: usize) -> Option<usize> {
    let entries = match place {
        Place::HtreeRoot if at == 12 && block.len() >= 0x28 => {
            // dx_root_info: reserved_zero (4), hash_version, info_length (8), indirect_levels, flags.
            (le32(block, 0x18) == 0 && block[0x1d] == 8).then_some(0x20)?
        }
        Place::HtreeOther if at == 0 && len == block.len() && block.len() >= 16 => {
            (le32(block, 0) == 0 && block[6] == 0 && block[7] == 0).then_some(8)?
        }
        _ => return None,
    };
    let (limit, count) = (
        usize::from(le16(block, entries)),
        usize::from(le16(block, entries + 2)),
    );
    let room = (block.len() - entries) / 8;
    let fits = limit == room || limit + 1 == room;
    (fits && (1..=limit).contains(&count)).then_some(entries + 8 * count)
}

/// The names of one directory block (`filetype`: the `file_type` byte follows a one-byte `name_len`; else
/// `name_len` is 16 bits). With `deleted`, the names in slack are given too. `Err` when an entry's lengths do not
/// add up (the rest of the block is skipped).
pub fn names(
    block: &[u8],
    place: Place,
    block_size: usize,
    filetype: bool,
    deleted: bool,
    inodes: u32,
    out: &mut Vec<Name>,
) -> Result<(), String> {
    let mut at = 0usize;
    while at + 8 <= block.len() {
        let inode = le32(block, at);
        let len = rec_len(le16(block, at + 4), block_size);
        let name_len = if filetype {
            usize::from(block[at + 6])
        } else {
            usize::from(le16(block, at + 6))
        };
        if len < 8 || !len.is_multiple_of(4) || at + len > block.len() || 8 + name_len > len {
            return Err(format!(
                "a directory entry at byte {at} of a block has rec_len {len} and a name of {name_len} bytes"
            ));
        }
        let name = &block[at + 8..at + 8 + name_len];
        let file_type = if filetype { block[at + 7] } else { 0 };
        if inode != 0 && name_len > 0 {
            out.push(Name {
                inode,
                name: name.to_vec(),
                deleted: false,
                file_type,
            });
        } else if deleted && inode == 0 && plausible(name) && name != b"." && name != b".." {
            // An entry deleted by clearing its inode (the first of a block, which has no entry before it to grow
            // over it; or one e2fsck cleared): its name stays. Kernels since 5.14 also wipe the name.
            out.push(Name {
                inode: 0,
                name: name.to_vec(),
                deleted: true,
                file_type,
            });
        }
        if deleted {
            let mut from = at + needed(name_len).min(len);
            if let Some(end) = index_end(block, place, at, len) {
                from = from.max(end.min(at + len));
                if from == end {
                    from += overwritten(&block[end - 4..at + len], filetype, out);
                }
            }
            slack(&block[from..at + len], filetype, inodes, out);
        }
        at += len;
    }
    Ok(())
}

/// Deleted entries in `gap`, the space after an entry's name up to its `rec_len`: an entry the kernel
/// removed by growing the one before it over it keeps its inode, lengths and name; one whose inode had been
/// cleared first (a block's first entry) keeps inode 0.
fn slack(gap: &[u8], filetype: bool, inodes: u32, out: &mut Vec<Name>) {
    let mut at = 0usize;
    while at + 8 <= gap.len() {
        let inode = le32(gap, at);
        if inode == 0 && le32(gap, at + 4) == 0 {
            // Slack is mostly zeros (a folder's last block past its names): skip to the word before the next one
            // that is not (an entry with inode 0 starts with a zero word).
            at = next_nonzero_word(gap, at + 8).saturating_sub(4).max(at + 4);
            continue;
        }
        let name_len = if filetype {
            usize::from(gap[at + 6])
        } else {
            usize::from(le16(gap, at + 6))
        };
        let len = usize::from(le16(gap, at + 4));
        // The checks The Sleuth Kit makes of an entry in slack (inode 0 too, as a name `fls` lists as `* 0:`),
        // and two it does not: the entry ends in the slack (a deleted entry is grown over whole, so it lies
        // within the one before it; an htree's stale index entries read as one run past it), and its type is
        // one ext has.
        let fits = name_len > 0 && at + 8 + name_len <= gap.len() && at + len <= gap.len();
        let typed = !filetype || gap[at + 7] <= 7;
        if inode <= inodes && fits && typed && len >= needed(name_len) && len.is_multiple_of(4) {
            let name = &gap[at + 8..at + 8 + name_len];
            if plausible(name) && name != b"." && name != b".." {
                out.push(Name {
                    inode,
                    name: name.to_vec(),
                    deleted: true,
                    file_type: if filetype { gap[at + 7] } else { 0 },
                });
                at += needed(name_len);
                continue;
            }
        }
        at += 4;
    }
}

/// The deleted entry an htree's index was written over, when only its inode field was (it began 4 bytes before
/// the index's end, which `gap` starts at: a folder made an htree keeps the names its first block held): its name,
/// with inode 0 (unknown; The Sleuth Kit reads the index's last block number as its inode). Returns the bytes
/// of `gap` past the index it takes.
fn overwritten(gap: &[u8], filetype: bool, out: &mut Vec<Name>) -> usize {
    if gap.len() < 12 {
        return 0;
    }
    let len = usize::from(le16(gap, 4));
    let name_len = if filetype {
        usize::from(gap[6])
    } else {
        usize::from(le16(gap, 6))
    };
    if name_len == 0 || len < needed(name_len) || !len.is_multiple_of(4) || len > gap.len() {
        return 0;
    }
    let name = &gap[8..8 + name_len];
    if !plausible(name) || name == b"." || name == b".." {
        return 0;
    }
    out.push(Name {
        inode: 0,
        name: name.to_vec(),
        deleted: true,
        file_type: if filetype { gap[7] } else { 0 },
    });
    needed(name_len) - 4
}

/// The first 4-byte-aligned offset at or after `from` (itself aligned) whose word is not zero, or the end.
fn next_nonzero_word(gap: &[u8], from: usize) -> usize {
    let mut at = from;
    // Eight bytes at a time, then the word of them that is not zero.
    while at + 8 <= gap.len() {
        if u64::from_le_bytes(gap[at..at + 8].try_into().expect("8 bytes")) != 0 {
            return if le32(gap, at) != 0 { at } else { at + 4 };
        }
        at += 8;
    }
    if at + 4 <= gap.len() && le32(gap, at) == 0 {
        at += 4;
    }
    at.min(gap.len())
}

/// A deleted name worth listing: one the kernel could have written (no NUL or `/`) and no control character,
/// which a name almost never holds and bytes that are no name (an htree's index entries, a damaged block's
/// leftovers read as an entry) almost always do. A live entry's name is listed whatever it holds.
fn plausible(name: &[u8]) -> bool {
    !name.is_empty() && !name.iter().any(|&c| c < 0x20 || c == 0x7f || c == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(inode: u32, rec: u16, name: &str) -> Vec<u8> {
        let mut e = inode.to_le_bytes().to_vec();
        e.extend(rec.to_le_bytes());
        e.push(name.len() as u8);
        e.push(1);
        e.extend(name.as_bytes());
        e.resize(usize::from(rec), 0);
        e
    }

    #[test]
    fn live_names_and_a_deleted_one_in_slack() {
        // "a" (12 bytes needed) grown over the deleted "gone" after it.
        let mut block = entry(2, 12, ".");
        block.extend(entry(2, 12, ".."));
        let mut a = entry(12, 40, "a");
        a[12..12 + 12].copy_from_slice(&entry(13, 12, "gone")[..12]);
        let gone = entry(13, 12, "gone");
        a[12..24].copy_from_slice(&gone);
        block.extend(a);
        block.extend(entry(14, 1024 - 64, "b"));
        let mut out = Vec::new();
        names(&block, Place::Linear, 1024, true, true, 100, &mut out).unwrap();
        let got: Vec<(u32, &[u8], bool)> = out
            .iter()
            .map(|n| (n.inode, &n.name[..], n.deleted))
            .collect();
        assert_eq!(
            got,
            [
                (2, &b"."[..], false),
                (2, b"..", false),
                (12, b"a", false),
                (13, b"gone", true),
                (14, b"b", false)
            ]
        );
    }

    /// Names of deleted entries whose inode is 0: a block's first entry, cleared (its name kept, as kernels before
    /// 5.14 left it), and one in the slack of a live entry after it, behind a run of zeros.
    #[test]
    fn deleted_names_with_inode_0() {
        let mut block = entry(0, 16, "first");
        let mut a = entry(12, 64, "a");
        a[40..40 + 16].copy_from_slice(&entry(0, 16, "zeroed")[..16]);
        block.extend(a);
        block.extend(entry(14, 1024 - 80, "b"));
        let mut out = Vec::new();
        names(&block, Place::Linear, 1024, true, true, 100, &mut out).unwrap();
        let got: Vec<(u32, &[u8], bool, u8)> = out
            .iter()
            .map(|n| (n.inode, &n.name[..], n.deleted, n.file_type))
            .collect();
        assert_eq!(
            got,
            [
                (0, &b"first"[..], true, 1),
                (12, b"a", false, 1),
                (0, b"zeroed", true, 1),
                (14, b"b", false, 1)
            ]
        );
        // Without `deleted`, only the live names.
        out.clear();
        names(&block, Place::Linear, 1024, true, false, 100, &mut out).unwrap();
        assert_eq!(out.len(), 2);
    }

    /// The first block of a folder made an htree (e2fsprogs' `r_inline_xattr` test image, block 436): the index
    /// (count 2) ends at 0x30, over the inode field of the old entry `file1` that began at 0x2c; the next old
    /// entry, `file2` (inode 13), follows in the slack.
    #[test]
    fn a_name_whose_inode_the_index_was_written_over() {
        let mut block = entry(2, 12, ".");
        block.extend(entry(2, 1012, ".."));
        block[0x18..0x20].copy_from_slice(&[0, 0, 0, 0, 2, 8, 0, 0]);
        block[0x20..0x30].copy_from_slice(&[
            0x7c, 0, 2, 0, 1, 0, 0, 0, 0x6a, 0xa3, 0xe8, 0x68, 2, 0, 0, 0,
        ]);
        block[0x2c..0x3c].copy_from_slice(&entry(2, 16, "file1"));
        block[0x3c..0x4c].copy_from_slice(&entry(13, 16, "file2"));
        let mut out = Vec::new();
        names(&block, Place::HtreeRoot, 1024, true, true, 100, &mut out).unwrap();
        let got: Vec<(u32, &[u8], bool)> = out
            .iter()
            .map(|n| (n.inode, &n.name[..], n.deleted))
            .collect();
        assert_eq!(
            got,
            [
                (2, &b"."[..], false),
                (2, b"..", false),
                (0, b"file1", true),
                (13, b"file2", true)
            ]
        );
    }

    #[test]
    fn lengths_that_do_not_add_up_are_an_error() {
        let mut block = entry(2, 12, ".");
        block.extend(entry(3, 6, "x"));
        block.resize(1024, 0);
        let mut out = Vec::new();
        assert!(names(&block, Place::Linear, 1024, true, false, 100, &mut out).is_err());
        assert_eq!(out.len(), 1);
    }

    /// An htree root (as the kernel writes it: `..` spanning the block, `dx_root_info`, limit 123 of a 1 KiB
    /// block with a checksum tail) whose index entries happen to read as a deleted entry: inode 1 (the first
    /// entry's block), rec_len 12 and a one-byte name from the next (hash 0x0201000c, block 7).
    #[test]
    fn an_htree_index_is_no_slack() {
        let mut block = entry(2, 12, ".");
        block.extend(entry(2, 1012, ".."));
        block[0x1c..0x20].copy_from_slice(&[1, 8, 0, 0]);
        for (at, word) in [
            (0x20, 0x0003_007b_u32),
            (0x24, 1),
            (0x28, 0x0201_000c),
            (0x2c, 7),
        ] {
            block[at..at + 4].copy_from_slice(&u32::to_le_bytes(word));
        }
        block[0x30..0x38].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f, 2, 0, 0, 0]);
        let read = |place| {
            let mut out = Vec::new();
            names(&block, place, 1024, true, true, 100, &mut out).unwrap();
            out.into_iter().map(|n| n.name).collect::<Vec<_>>()
        };
        assert_eq!(read(Place::HtreeRoot), [b".".to_vec(), b"..".to_vec()]);
        // Read as a linear folder's block, the same bytes give The Sleuth Kit the name "\x07"; a name of a control
        // character is no deleted name to uffs.
        assert_eq!(read(Place::Linear), [b".".to_vec(), b"..".to_vec()]);
        // An interior node: an empty entry spanning the block, limit 126 (no tail) and count 2.
        let mut node = vec![0u8; 1024];
        node[4..6].copy_from_slice(&1024u16.to_le_bytes());
        for (at, word) in [(8, 0x0002_007f_u32), (12, 1), (16, 0x0201_000c), (20, 7)] {
            node[at..at + 4].copy_from_slice(&u32::to_le_bytes(word));
        }
        let mut out = Vec::new();
        names(&node, Place::HtreeOther, 1024, true, true, 100, &mut out).unwrap();
        assert!(out.is_empty(), "{out:?}");
    }
}
