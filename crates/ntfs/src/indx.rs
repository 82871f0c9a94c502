//! A folder's `$I30` index: its `INDX` blocks (the value of `$INDEX_ALLOCATION`) and its root (`$INDEX_ROOT`),
//! the names each lists, and the names of deleted files that only the bytes past its used end still hold.
//!
//! An index block is protected as a file record is (magic `INDX`, update sequence array at 0x04, fixups every 512
//! bytes: [`crate::record::apply_fixups`]); its node header is at 0x18, and an index root's at 0x10 of its value.
//! A node header gives, relative to itself: where the entries start (u32 at 0x00), where the entries in use end
//! (u32 at 0x04) and where the node's room ends (u32 at 0x08). Each entry: the file reference (u64 at 0x00), the
//! entry's length (u16 at 0x08), its key's length (u16 at 0x0A), flags (u32 at 0x0C: 1 a child node follows, 2
//! the last entry, which has no key), then at 0x10 its key, a `$FILE_NAME` value ([`FileName`]), 8-byte aligned.
//!
//! When a name is removed or a node splits, NTFS moves the entries after it and lowers the used end; it does not
//! clear what lies past it. So the bytes between the used end and the room's end (the slack) can hold whole
//! entries of files deleted since, whose MFT records may have been used again by other files: then the slack is
//! the only place their names are left. [`slack_names`] finds them. A later write to the node covers its bytes
//! from some entry up to its new used end, so an entry wholly in the slack was written in one piece: its key is
//! either whole or begins below the used end (and is not looked at). What is left to fear is bytes that look like
//! a name and are not, which is why a key counts only when its parent reference is this folder's (record and
//! sequence number), its four times are plausible, its name is valid for its namespace and its lengths agree with
//! the entry header where that survives.

use crate::attr::{namespace, FileName};
use crate::le::{u16_at, u32_at, u64_at};
use crate::record::FileRef;
use crate::{Error, Result};

/// The magic of an index block.
pub const INDX_MAGIC: &[u8; 4] = b"INDX";

/// Where an index block's node header starts.
const BLOCK_NODE_HEADER: usize = 0x18;

/// Where an index root value's node header starts (after the indexed attribute type, collation rule, block size
/// and clusters per block).
const ROOT_NODE_HEADER: usize = 0x10;

/// A `$FILE_NAME` key's length before its name.
const KEY_FIXED: usize = 0x42;

/// An entry's header before its key.
const ENTRY_HEADER: usize = 0x10;

/// Entry flags.
const ENTRY_LAST: u32 = 0x2;

/// The file attribute bits a `$FILE_NAME` may carry: the DOS attributes up to 0x4000 (but volume label 0x8 and
/// device 0x40, never set on a file), and the directory and index-view bits NTFS adds in file names.
const KNOWN_ATTRIBUTES: u32 = (0x7FFF & !0x48) | 0x1000_0000 | 0x2000_0000;

/// The oldest time taken as plausible: 1980-01-01 (the FAT epoch; NTFS dates from 1993), as a FILETIME.
pub const PLAUSIBLE_SINCE: u64 = 119_600_064_000_000_000;

/// One index node: its bytes (fixups applied) and the offsets its header gives, checked to lie in order inside it.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    bytes: &'a [u8],
    /// Where the entries start.
    first: usize,
    /// Where the entries in use end.
    used_end: usize,
    /// Where the node's room ends.
    room_end: usize,
}

impl<'a> Node<'a> {
    /// The node of an index block whose fixups were applied.
    pub fn block(b: &'a [u8]) -> Result<Node<'a>> {
        if b.get(..4) != Some(&INDX_MAGIC[..]) {
            return Err(Error::Invalid {
                what: "index block",
                why: "no INDX magic",
            });
        }
        Node::at(b, BLOCK_NODE_HEADER)
    }

    /// The node of an `$INDEX_ROOT` value.
    pub fn root(v: &'a [u8]) -> Result<Node<'a>> {
        Node::at(v, ROOT_NODE_HEADER)
    }

    fn at(b: &'a [u8], header: usize) -> Result<Node<'a>> {
        const WHAT: &str = "index node header";
        let rel = |o: usize| -> Result<usize> {
            let v = u32_at(b, header + o, WHAT)? as usize;
            Ok(header.saturating_add(v))
        };
        let (first, used_end, room_end) = (rel(0)?, rel(4)?, rel(8)?);
        if !(header + 0x10 <= first
            && first <= used_end
            && used_end <= room_end
            && room_end <= b.len())
        {
            return Err(Error::Invalid {
                what: WHAT,
                why: "offsets out of order or past the node",
            });
        }
        Ok(Node {
            bytes: b,
            first,
            used_end,
            room_end,
        })
    }

    /// The node of a block its index no longer uses (its bit in the index's `$BITMAP` is clear): every entry in
    /// it is stale, so all of it past the first entry is slack to [`slack_names`].
    pub fn freed(self) -> Node<'a> {
        Node {
            used_end: self.first,
            ..self
        }
    }

    /// The entries in use, in order: each one's file reference and key. Ends at the last entry, or at the first
    /// that does not fit (then with that error).
    pub fn entries(&self) -> Entries<'a> {
        Entries {
            bytes: &self.bytes[..self.used_end],
            pos: self.first,
            done: false,
        }
    }
}

/// An entry of an index node.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub file: FileRef,
    pub key: FileName<'a>,
}

/// Iterator over the entries in use of a [`Node`].
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    bytes: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = (|| -> Result<Option<Entry<'a>>> {
            const WHAT: &str = "index entry";
            let at = self.pos;
            let len = usize::from(u16_at(self.bytes, at + 0x08, WHAT)?);
            let key_len = usize::from(u16_at(self.bytes, at + 0x0A, WHAT)?);
            let flags = u32_at(self.bytes, at + 0x0C, WHAT)?;
            if len < ENTRY_HEADER || at + len > self.bytes.len() || ENTRY_HEADER + key_len > len {
                return Err(Error::Invalid {
                    what: WHAT,
                    why: "length past the node",
                });
            }
            self.pos = at + len;
            if flags & ENTRY_LAST != 0 {
                return Ok(None);
            }
            let key = FileName::parse(&self.bytes[at + ENTRY_HEADER..at + ENTRY_HEADER + key_len])?;
            Ok(Some(Entry {
                file: FileRef(u64_at(self.bytes, at, WHAT)?),
                key,
            }))
        })();
        crate::end_after_error(&mut self.done, step)
    }
}

/// A name found in a node's slack.
#[derive(Debug, Clone, Copy)]
pub struct SlackName<'a> {
    /// The file the entry named, when the entry's header survives (its lengths agree with the key): the record
    /// number and the sequence number it had then.
    pub file: Option<FileRef>,
    pub key: FileName<'a>,
    /// Where the key starts in the node's bytes.
    pub offset: usize,
}

/// The whole `$FILE_NAME` keys in the slack of `node`, a node of the index of folder `folder` (its record and
/// sequence number): each 8-byte aligned place past the used end where a key that names `folder` as its parent
/// starts and passes [`plausible`] with times up to `latest` (a FILETIME: now, or the volume's newest time).
/// Keys that overlap one found before are left: a later key in an earlier one's bytes is part of it.
pub fn slack_names<'a>(node: &Node<'a>, folder: FileRef, latest: u64) -> Vec<SlackName<'a>> {
    let (b, start) = (node.bytes, node.used_end);
    let mut out = Vec::new();
    let mut at = start.next_multiple_of(8);
    let parent = folder.0.to_le_bytes();
    while at + KEY_FIXED <= node.room_end {
        if b[at..at + 8] != parent {
            at += 8;
            continue;
        }
        let Ok(key) = FileName::parse(&b[at..node.room_end]) else {
            at += 8;
            continue;
        };
        if !plausible(&key, latest) {
            at += 8;
            continue;
        }
        let key_len = KEY_FIXED + key.name.len();
        // The entry header just before the key, when it is in the slack and agrees: the file it named.
        let file = at
            .checked_sub(ENTRY_HEADER)
            .filter(|&h| h >= start)
            .and_then(|h| {
                let len = usize::from(u16_at(b, h + 0x08, "").ok()?);
                let klen = usize::from(u16_at(b, h + 0x0A, "").ok()?);
                let flags = u32_at(b, h + 0x0C, "").ok()?;
                let whole = (ENTRY_HEADER + key_len).next_multiple_of(8);
                let agrees = klen == key_len
                    && (len == whole || len == whole + 8)
                    && flags & ENTRY_LAST == 0;
                agrees.then(|| u64_at(b, h, "").ok().map(FileRef)).flatten()
            })
            .filter(|f| f.0 != 0);
        out.push(SlackName {
            file,
            key,
            offset: at,
        });
        at = (at + key_len).next_multiple_of(8);
    }
    out
}

/// Whether a `$FILE_NAME` found where no structure vouches for it is taken for one: a name of 1 to 255 units,
/// valid UTF-16 with no NUL or `/` (nor, outside the POSIX namespace, a character Windows forbids), a known
/// namespace and attribute bits, its four times between 1980 and `latest` (plus a day, for clocks that differ),
/// and sizes below 2^48 with the allocation a multiple of 8.
pub fn plausible(key: &FileName<'_>, latest: u64) -> bool {
    const DAY: u64 = 864_000_000_000;
    let times = [key.created, key.modified, key.mft_changed, key.accessed];
    let window = PLAUSIBLE_SINCE..=latest.saturating_add(DAY);
    key.namespace <= namespace::WIN32_AND_DOS
        && key.flags & !KNOWN_ATTRIBUTES == 0
        && times.iter().all(|t| window.contains(t))
        && key.allocated_size < 1 << 48
        && key.data_size < 1 << 48
        && key.allocated_size.is_multiple_of(8)
        && valid_name(key.name, key.namespace)
}

fn valid_name(raw: &[u8], ns: u8) -> bool {
    if raw.is_empty() || !raw.len().is_multiple_of(2) {
        return false;
    }
    let units = raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]));
    for c in char::decode_utf16(units) {
        let Ok(c) = c else { return false };
        let forbidden = match c {
            '\0' | '/' => true,
            _ if ns == namespace::POSIX => false,
            '\u{1}'..='\u{1f}' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' => true,
            _ => false,
        };
        if forbidden {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 134_000_000_000_000_000; // 2025-08
    const T: u64 = 133_000_000_000_000_000; // 2022-06

    fn key(parent: FileRef, name: &str, ns: u8) -> Vec<u8> {
        let units: Vec<u16> = name.encode_utf16().collect();
        let mut k = vec![0u8; KEY_FIXED + units.len() * 2];
        k[0..8].copy_from_slice(&parent.0.to_le_bytes());
        for i in 0..4 {
            k[8 + i * 8..16 + i * 8].copy_from_slice(&T.to_le_bytes());
        }
        k[0x28..0x30].copy_from_slice(&4096u64.to_le_bytes());
        k[0x30..0x38].copy_from_slice(&100u64.to_le_bytes());
        k[0x38..0x3C].copy_from_slice(&0x20u32.to_le_bytes());
        k[0x40] = units.len() as u8;
        k[0x41] = ns;
        for (i, u) in units.iter().enumerate() {
            k[KEY_FIXED + i * 2..KEY_FIXED + i * 2 + 2].copy_from_slice(&u.to_le_bytes());
        }
        k
    }

    fn entry(file: FileRef, key: &[u8]) -> Vec<u8> {
        let len = (ENTRY_HEADER + key.len()).next_multiple_of(8);
        let mut e = vec![0u8; len];
        e[0..8].copy_from_slice(&file.0.to_le_bytes());
        e[8..10].copy_from_slice(&(len as u16).to_le_bytes());
        e[10..12].copy_from_slice(&(key.len() as u16).to_le_bytes());
        e[ENTRY_HEADER..ENTRY_HEADER + key.len()].copy_from_slice(key);
        e
    }

    fn last() -> Vec<u8> {
        let mut e = vec![0u8; 0x10];
        e[8..10].copy_from_slice(&0x10u16.to_le_bytes());
        e[12..16].copy_from_slice(&ENTRY_LAST.to_le_bytes());
        e
    }

    /// An index block (fixups already applied) of 4096 bytes: `live` entries in use, then `slack` bytes.
    fn block(live: &[Vec<u8>], slack: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        b[..4].copy_from_slice(INDX_MAGIC);
        let first = 0x40usize;
        let mut at = first;
        for e in live.iter().chain(std::iter::once(&last())) {
            b[at..at + e.len()].copy_from_slice(e);
            at += e.len();
        }
        let used = at;
        b[at..at + slack.len()].copy_from_slice(slack);
        let h = BLOCK_NODE_HEADER;
        b[h..h + 4].copy_from_slice(&((first - h) as u32).to_le_bytes());
        b[h + 4..h + 8].copy_from_slice(&((used - h) as u32).to_le_bytes());
        b[h + 8..h + 12].copy_from_slice(&((4096 - h) as u32).to_le_bytes());
        b
    }

    fn names(found: &[SlackName<'_>]) -> Vec<String> {
        found
            .iter()
            .map(|s| crate::utf16::decode(s.key.name))
            .collect()
    }

    #[test]
    fn live_entries_and_whole_slack_entries() {
        let dir = FileRef::new(40, 3);
        let live = [entry(FileRef::new(70, 1), &key(dir, "kept.txt", 1))];
        let mut slack = Vec::new();
        slack.extend(entry(FileRef::new(71, 2), &key(dir, "gone one.txt", 1)));
        slack.extend(entry(FileRef::new(72, 5), &key(dir, "Ünïcode ✓.doc", 0)));
        slack.extend(last());
        let b = block(&live, &slack);
        let node = Node::block(&b).unwrap();
        let got: Vec<_> = node.entries().map(|e| e.unwrap().file).collect();
        assert_eq!(got, [FileRef::new(70, 1)]);
        let found = slack_names(&node, dir, NOW);
        assert_eq!(names(&found), ["gone one.txt", "Ünïcode ✓.doc"]);
        assert_eq!(found[0].file, Some(FileRef::new(71, 2)));
        assert_eq!(found[1].file, Some(FileRef::new(72, 5)));
    }

    #[test]
    fn a_key_whose_header_was_overwritten_has_no_file() {
        let dir = FileRef::new(40, 3);
        let mut slack = entry(FileRef::new(71, 2), &key(dir, "orphan.txt", 1));
        // The used end moved 8 bytes into the header: its lengths are gone, the key is whole.
        slack[..8].fill(0xAB);
        let b = block(&[], &slack[8..]);
        let node = Node::block(&b).unwrap();
        let found = slack_names(&node, dir, NOW);
        assert_eq!(names(&found), ["orphan.txt"]);
        assert_eq!(found[0].file, None);
    }

    #[test]
    fn nothing_is_invented() {
        let dir = FileRef::new(40, 3);
        let other = FileRef::new(41, 3);
        let mut slack = Vec::new();
        // Another folder's entry, the same record with another sequence number, a time in the future, a
        // forbidden character outside POSIX, an unpaired surrogate, an unknown namespace, and a cut key.
        slack.extend(entry(FileRef::new(71, 2), &key(other, "elsewhere.txt", 1)));
        slack.extend(entry(
            FileRef::new(71, 2),
            &key(FileRef::new(40, 4), "older.txt", 1),
        ));
        let mut future = key(dir, "future.txt", 1);
        future[8..16].copy_from_slice(&(NOW + 100 * 864_000_000_000).to_le_bytes());
        slack.extend(entry(FileRef::new(72, 1), &future));
        slack.extend(entry(FileRef::new(73, 1), &key(dir, "a:b.txt", 1)));
        let mut surrogate = key(dir, "xx", 1);
        surrogate[KEY_FIXED..KEY_FIXED + 2].copy_from_slice(&0xD800u16.to_le_bytes());
        slack.extend(entry(FileRef::new(74, 1), &surrogate));
        slack.extend(entry(FileRef::new(75, 1), &key(dir, "ns.txt", 4)));
        let cut = entry(
            FileRef::new(76, 1),
            &key(dir, "cut at the end of the room.txt", 1),
        );
        let mut b = block(&[], &slack);
        let room = 4096 - 40;
        b[room..4096].copy_from_slice(&cut[..40]);
        let node = Node::block(&b).unwrap();
        assert!(slack_names(&node, dir, NOW).is_empty());
        // POSIX names may hold what Win32 names may not.
        let b = block(&[], &entry(FileRef::new(73, 1), &key(dir, "a:b.txt", 0)));
        assert_eq!(
            names(&slack_names(&Node::block(&b).unwrap(), dir, NOW)),
            ["a:b.txt"]
        );
    }

    #[test]
    fn bad_headers_are_errors() {
        let mut b = block(&[], &[]);
        b[BLOCK_NODE_HEADER + 4..BLOCK_NODE_HEADER + 8].copy_from_slice(&5000u32.to_le_bytes());
        assert!(Node::block(&b).is_err());
        assert!(Node::block(&[0u8; 16]).is_err());
        let mut b = block(&[], &[]);
        b[..4].copy_from_slice(b"FILE");
        assert!(Node::block(&b).is_err());
    }
}
