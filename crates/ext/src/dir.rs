//! Directory blocks: the linear entries (`inode`, `rec_len`, `name_len`, `file_type`, name) of every folder, read
//! as plain blocks whether the folder is linear or an htree (an htree's interior blocks hold one empty entry
//! spanning the block, and its root the `.` and `..` entries, so a linear read sees exactly the names), and the
//! names of deleted entries still in the slack after a live one.

use crate::{le16, le32};

/// One name in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub inode: u32,
    pub name: Vec<u8>,
    /// Found in the slack of a live entry (or in a block's first entry with inode 0): a deleted name.
    pub deleted: bool,
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

/// The names of one directory block (`filetype`: the `file_type` byte follows a one-byte `name_len`; else
/// `name_len` is 16 bits). With `deleted`, the names in slack are given too. `Err` when an entry's lengths do not
/// add up (the rest of the block is skipped).
pub fn names(
    block: &[u8],
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
        if inode != 0 && name_len > 0 {
            out.push(Name {
                inode,
                name: name.to_vec(),
                deleted: false,
            });
        } else if deleted && inode != 0 && name_len == 0 {
            // Nothing to name.
        } else if deleted && at == 0 && name_len > 0 && plausible(name) {
            // The first entry of a block is deleted by clearing its inode: its name stays.
            out.push(Name {
                inode: 0,
                name: name.to_vec(),
                deleted: true,
            });
        }
        if deleted {
            let used = if inode == 0 && at != 0 {
                0
            } else {
                needed(name_len)
            };
            slack(&block[at + used.min(len)..at + len], filetype, inodes, out);
        }
        at += len;
    }
    Ok(())
}

/// Deleted entries in `gap`, the space after a live entry's name up to its `rec_len`: an entry the kernel
/// removed by growing the one before it over it keeps its inode, lengths and name.
fn slack(gap: &[u8], filetype: bool, inodes: u32, out: &mut Vec<Name>) {
    let mut at = 0usize;
    while at + 8 <= gap.len() {
        let inode = le32(gap, at);
        if inode == 0 {
            // Slack is mostly zeros (a folder's last block past its names): skip to the next word that is not.
            at = next_nonzero_word(gap, at + 4);
            continue;
        }
        let name_len = if filetype {
            usize::from(gap[at + 6])
        } else {
            usize::from(le16(gap, at + 6))
        };
        let len = usize::from(le16(gap, at + 4));
        let fits = name_len > 0 && at + 8 + name_len <= gap.len();
        if inode != 0 && inode <= inodes && fits && len >= needed(name_len) && len.is_multiple_of(4)
        {
            let name = &gap[at + 8..at + 8 + name_len];
            if plausible(name) && name != b"." && name != b".." {
                out.push(Name {
                    inode,
                    name: name.to_vec(),
                    deleted: true,
                });
                at += needed(name_len);
                continue;
            }
        }
        at += 4;
    }
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

/// A name the kernel could have written: no NUL or `/`.
fn plausible(name: &[u8]) -> bool {
    !name.is_empty() && !name.iter().any(|&c| c == 0 || c == b'/')
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
        names(&block, 1024, true, true, 100, &mut out).unwrap();
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

    #[test]
    fn lengths_that_do_not_add_up_are_an_error() {
        let mut block = entry(2, 12, ".");
        block.extend(entry(3, 6, "x"));
        block.resize(1024, 0);
        let mut out = Vec::new();
        assert!(names(&block, 1024, true, false, 100, &mut out).is_err());
        assert_eq!(out.len(), 1);
    }
}
