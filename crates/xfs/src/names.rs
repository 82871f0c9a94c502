//! The names the first pass finds in folders, held until the second pass makes their inodes' entries: live
//! names in one arena while found, then sorted by inode into chunks let go of as the second pass passes them;
//! deleted names apart, and the entries they make.

use rayon::prelude::*;

use uffs_fs::{attr, Entry, Kind, Posix};

/// A name from a folder: its bytes are `arena[at..at + len]`.
#[derive(Clone, Copy)]
pub(crate) struct Name {
    pub(crate) ino: u64,
    pub(crate) parent: u64,
    pub(crate) at: u32,
    pub(crate) len: u32,
}

/// A deleted entry's name, in the same arena: `ino` 0 when only its low half was left and the volume's inode
/// numbers need more.
#[derive(Clone, Copy)]
pub(crate) struct Gone {
    pub(crate) ino: u64,
    pub(crate) parent: u64,
    pub(crate) at: u32,
    pub(crate) len: u32,
    pub(crate) file_type: u8,
}

/// Names found in some folders.
#[derive(Default)]
pub(crate) struct Names {
    pub(crate) names: Vec<Name>,
    pub(crate) gone: Vec<Gone>,
    pub(crate) arena: Vec<u8>,
    pub(crate) warnings: Vec<String>,
}

impl Names {
    pub(crate) fn push(&mut self, ino: u64, parent: u64, name: &[u8]) {
        self.names.push(Name {
            ino,
            parent,
            at: self.arena.len() as u32,
            len: name.len() as u32,
        });
        self.arena.extend_from_slice(name);
    }

    pub(crate) fn push_gone(&mut self, ino: u64, parent: u64, name: &[u8], file_type: u8) {
        self.gone.push(Gone {
            ino,
            parent,
            at: self.arena.len() as u32,
            len: name.len() as u32,
            file_type,
        });
        self.arena.extend_from_slice(name);
    }

    pub(crate) fn append(&mut self, mut o: Names) {
        let base = self.arena.len() as u32;
        self.names.extend(o.names.iter().map(|n| Name {
            at: n.at + base,
            ..*n
        }));
        self.gone.extend(o.gone.iter().map(|n| Gone {
            at: n.at + base,
            ..*n
        }));
        self.arena.append(&mut o.arena);
        self.warnings.append(&mut o.warnings);
    }

    pub(crate) fn text(&self, at: u32, len: u32) -> String {
        String::from_utf8_lossy(&self.arena[at as usize..(at + len) as usize]).into_owned()
    }
}

/// No names.
static NO_NAMES: Names = Names {
    names: Vec::new(),
    gone: Vec::new(),
    arena: Vec::new(),
    warnings: Vec::new(),
};

/// Names in one [`SortedNames`] chunk: 2.5 MiB of them and a few MiB of their bytes, each above the 1 MiB from
/// which the allocator maps blocks of their own, so that a chunk let go of goes back to the system (as ext's).
const NAME_CHUNK: usize = 1 << 17;

/// The folders' names sorted by inode, in chunks of about [`NAME_CHUNK`] that the second pass lets go of as it
/// passes them: held whole to the end, they were a fifth of the peak beside an index builder that by then held
/// nearly every entry. A chunk ends where an inode chunk (64 inodes) does, so that each inode chunk's names lie
/// in one.
pub(crate) struct SortedNames {
    /// Each chunk's last inode and its names (its own arena); emptied once passed.
    chunks: Vec<(u64, Names)>,
    /// Chunks emptied so far (all those before it).
    released: usize,
}

impl SortedNames {
    /// The live names of `all` in chunks, and its deleted names apart (few: one arena).
    pub(crate) fn new(mut all: Names) -> (SortedNames, Names) {
        // By inode, an inode's names (hard links) in a fixed order; on every core.
        all.names
            .par_sort_unstable_by_key(|n| (n.ino, n.parent, n.at));
        all.gone.sort_unstable_by_key(|n| (n.ino, n.parent, n.at));
        let bytes = |at: u32, len: u32| &all.arena[at as usize..(at + len) as usize];
        let mut chunks = Vec::new();
        let mut rest = &all.names[..];
        while !rest.is_empty() {
            let mut end = rest.len().min(NAME_CHUNK);
            while end < rest.len() && rest[end].ino >> 6 == rest[end - 1].ino >> 6 {
                end += 1;
            }
            let mut c = Names {
                names: Vec::with_capacity(end),
                arena: Vec::with_capacity(rest[..end].iter().map(|n| n.len as usize).sum()),
                ..Names::default()
            };
            for n in &rest[..end] {
                c.push(n.ino, n.parent, bytes(n.at, n.len));
            }
            chunks.push((rest[end - 1].ino, c));
            rest = &rest[end..];
        }
        let mut gone = Names::default();
        for n in &all.gone {
            gone.push_gone(n.ino, n.parent, bytes(n.at, n.len), n.file_type);
        }
        (
            SortedNames {
                chunks,
                released: 0,
            },
            gone,
        )
    }

    /// The chunk that holds the names of inodes `first..first + 64`, if any does.
    pub(crate) fn of(&self, first: u64) -> &Names {
        let i = self.chunks.partition_point(|c| c.0 < first);
        self.chunks.get(i).map_or(&NO_NAMES, |c| &c.1)
    }

    /// Lets go of every chunk whose names all come before inode `ino`.
    pub(crate) fn release_before(&mut self, ino: u64) {
        while self.chunks.get(self.released).is_some_and(|c| c.0 < ino) {
            self.chunks[self.released].1 = Names::default();
            self.released += 1;
        }
    }
}

/// The entry of deleted name `n`: with `facts`, its free inode's entry (named by it, its kind the name's when the
/// inode no longer has one); without, its name and kind alone.
pub(crate) fn gone_entry(names: &Names, n: &Gone, facts: Option<Entry>) -> Entry {
    let kind = Kind::of_file_type(n.file_type);
    let name = names.text(n.at, n.len);
    let attributes = match kind {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    match facts {
        // A freed inode keeps its times and owner; its mode is 0: the name's file type gives the type bits, the
        // permissions are gone.
        Some(e) if e.posix.is_some_and(|p| p.mode == 0) => Entry {
            parent: n.parent,
            name,
            kind,
            attributes,
            deleted: true,
            posix: e
                .posix
                .zip(type_bits(n.file_type))
                .map(|(p, mode)| Posix { mode, ..p }),
            ..e
        },
        Some(e) => Entry {
            parent: n.parent,
            name,
            deleted: true,
            ..e
        },
        None => Entry {
            id: n.ino,
            parent: n.parent,
            name,
            kind,
            attributes,
            deleted: true,
            from_index_slack: true,
            ..Entry::default()
        },
    }
}

/// The `st_mode` type bits of a folder entry's file type (XFS's are ext's: 1 file, 2 folder, 3 character device, 4
/// block device, 5 FIFO, 6 socket, 7 symlink); `None` without one.
fn type_bits(file_type: u8) -> Option<u32> {
    Some(match file_type {
        1 => 0o100000,
        2 => 0o040000,
        3 => 0o020000,
        4 => 0o060000,
        5 => 0o010000,
        6 => 0o140000,
        7 => 0o120000,
        _ => return None,
    })
}
