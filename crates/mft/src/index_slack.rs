//! Deleted files whose names only their folder's `$I30` index still holds: a `--deleted` build reads every
//! folder's index (its root and all its blocks, used or freed), takes the `$FILE_NAME` keys in the slack of each
//! node ([`uffs_ntfs::indx::slack_names`]) and makes entries of those the MFT does not list already.
//!
//! A slack key is a copy of an entry the index held once. Many copies are of files that still exist (an entry
//! moved when a name before it came or went, a node split) or of deleted files whose records still list them:
//! those are left out, so that each file is listed once, from its record where it has one. What remains are the
//! names of files whose records were used again by other files: the slack is the only place they are left.
//! Their record number (when the index entry's header survives) is the one the file had; the record may hold
//! another file now, so the entries are marked [`flags::FROM_INDEX_SLACK`] and nothing is read through them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamSizes};
use uffs_index::{flags, Builder, NO_RECORD};
use uffs_ntfs::attr::{namespace, FileName};
use uffs_ntfs::indx::{slack_names, Node};
use uffs_ntfs::record::{apply_fixups, FileRef};

use crate::content::folder_index;
use crate::volume::Volume;

/// The most bytes of one folder's index blocks read: past it (a folder of millions of names) the rest is left.
const MAX_FOLDER_INDEX: u64 = 1 << 30;

/// Threads reading folders' indexes: more than cores, for reads in flight on a cold disk.
const READ_THREADS: usize = 8;

/// The `$FILE_NAME` flag of a folder's name (an index of names is present).
const NAME_IS_FOLDER: u32 = 0x1000_0000;

/// What reading the slack found.
#[derive(Debug, Default)]
pub struct SlackFound {
    /// One record per name to list (see [`Builder::add_from_index_slack`]).
    pub batch: RecordBatch,
    /// Folders whose index was read, and its bytes.
    pub folders: u64,
    pub bytes: u64,
    /// Keys found in slack, before those the MFT lists were left out.
    pub keys: u64,
    /// Folders whose index could not be read, one line each (the first few).
    pub warnings: Vec<String>,
}

/// What one folder's index gave: its bytes read and the names in its slack, or why it could not be read.
type FolderRead = Result<(u64, Vec<Candidate>), String>;

/// A name in slack, with where it was found.
struct Candidate {
    folder: FileRef,
    /// The file the entry named, when its header survives.
    file: Option<FileRef>,
    name: String,
    key: KeyCopy,
}

/// The fields of a `$FILE_NAME` key an entry is made of.
#[derive(Clone, Copy)]
struct KeyCopy {
    created: u64,
    modified: u64,
    mft_changed: u64,
    accessed: u64,
    allocated: u64,
    size: u64,
    flags: u32,
    namespace: u8,
}

impl KeyCopy {
    fn of(k: &FileName<'_>) -> KeyCopy {
        KeyCopy {
            created: k.created,
            modified: k.modified,
            mft_changed: k.mft_changed,
            accessed: k.accessed,
            allocated: k.allocated_size,
            size: k.data_size,
            flags: k.flags,
            namespace: k.namespace,
        }
    }
}

fn name_hash(name: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// What the entries built so far say of each record and each folder's names.
struct Listed {
    /// Each record's sequence number and whether it is in use.
    records: HashMap<u32, (u16, bool)>,
    /// (folder record, hash of a name) of every name the MFT lists.
    names: std::collections::HashSet<(u64, u64)>,
    /// The folders in use, by record.
    folders: Vec<FileRef>,
}

impl Listed {
    fn of(builder: &Builder) -> Listed {
        let mut l = Listed {
            records: HashMap::new(),
            names: Default::default(),
            folders: Vec::new(),
        };
        for (parent, name, record, sequence, f) in builder.entries_so_far() {
            if f & (flags::STREAM | flags::SYNTHETIC | flags::FROM_INDEX_SLACK) != 0 {
                continue;
            }
            let deleted = f & flags::DELETED != 0;
            l.records.insert(record, (sequence, !deleted));
            l.names.insert((FileRef(parent).record(), name_hash(name)));
            if f & flags::DIRECTORY != 0 && !deleted {
                l.folders.push(FileRef::new(u64::from(record), sequence));
            }
        }
        l.folders.sort_unstable_by_key(|f| f.0);
        l.folders.dedup();
        l
    }

    /// Whether the MFT lists the file a slack key names already: its record is the same file still (in use
    /// with the sequence number the entry gave, or deleted since, which adds one), or, when the entry's header
    /// is gone, the folder lists a file of that name.
    fn lists(&self, c: &Candidate) -> bool {
        match c.file {
            Some(f) => match self.records.get(&(f.record() as u32)) {
                Some(&(seq, true)) => seq == f.sequence(),
                Some(&(seq, false)) => seq == f.sequence() || seq == f.sequence().wrapping_add(1),
                None => false,
            },
            None => self
                .names
                .contains(&(c.folder.record(), name_hash(c.name.as_bytes()))),
        }
    }
}

/// Reads the index of every folder in use that `builder` has entries for and returns the names found only in
/// slack, as records to add with [`Builder::add_from_index_slack`]. `latest` (a FILETIME) bounds the times a key
/// may have. `progress(folders_done, folders)` is called as folders are read.
pub fn find(
    vol: &Volume,
    builder: &Builder,
    latest: u64,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> SlackFound {
    let listed = Listed::of(builder);
    let mut out = SlackFound::default();
    let mut candidates = Vec::new();
    let mut failed = 0u64;
    let total = listed.folders.len() as u64;
    let done = AtomicU64::new(0);
    // Folders in record order, read by more threads than cores so that a cold disk has several reads in
    // flight (each folder is a record read, then its blocks).
    let read = |&folder: &FileRef| {
        let mut found = Vec::new();
        let r = read_folder(vol, folder, latest, &mut found);
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(256) {
            progress(n, total);
        }
        (folder, r.map(|bytes| (bytes, found)))
    };
    let each: Vec<(FileRef, FolderRead)> = match rayon::ThreadPoolBuilder::new()
        .num_threads(READ_THREADS)
        .build()
    {
        Ok(pool) => pool.install(|| listed.folders.par_iter().map(read).collect()),
        Err(_) => listed.folders.iter().map(read).collect(),
    };
    progress(total, total);
    for (folder, r) in each {
        match r {
            Ok((bytes, found)) => {
                out.folders += 1;
                out.bytes += bytes;
                candidates.extend(found);
            }
            Err(why) => {
                failed += 1;
                if out.warnings.len() < 5 {
                    out.warnings.push(format!(
                        "index slack: folder record {}: {why}",
                        folder.record()
                    ));
                }
            }
        }
    }
    if failed > 5 {
        out.warnings.push(format!(
            "index slack: {} more folders whose index could not be read",
            failed - 5
        ));
    }
    out.keys = candidates.len() as u64;
    candidates.retain(|c| !listed.lists(c));
    out.batch = records_of(dedup(candidates));
    out
}

/// Reads folder `folder`'s index and adds the keys in its slack to `out`; returns the bytes read.
fn read_folder(
    vol: &Volume,
    folder: FileRef,
    latest: u64,
    out: &mut Vec<Candidate>,
) -> Result<u64, String> {
    let fi = folder_index(vol, folder.record()).map_err(|e| e.to_string())?;
    if !fi.in_use || fi.sequence != folder.sequence() {
        return Ok(0);
    }
    let mut take = |node: &Node<'_>| {
        for s in slack_names(node, folder, latest) {
            // A DOS 8.3 name is an alias of a long name, which is listed instead.
            if s.key.namespace == namespace::DOS {
                continue;
            }
            out.push(Candidate {
                folder,
                file: s.file,
                name: uffs_ntfs::utf16::decode(s.key.name),
                key: KeyCopy::of(&s.key),
            });
        }
    };
    let mut bytes = fi.root.len() as u64;
    if let Ok(node) = Node::root(&fi.root) {
        take(&node);
    }
    let Some(mut blocks) = fi.blocks else {
        return Ok(bytes);
    };
    // The size of an index block, from the root (u32 at 0x08).
    let block = fi
        .root
        .get(8..12)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .filter(|b| b.is_power_of_two() && (512..=65536).contains(b))
        .ok_or("its index root gives no valid block size")?;
    let len = blocks.len().min(MAX_FOLDER_INDEX);
    let mut data = vec![0u8; len as usize];
    blocks
        .read_exact_at(0, &mut data)
        .map_err(|e| e.to_string())?;
    bytes += len;
    for (n, b) in data.chunks_exact_mut(block).enumerate() {
        let in_use = fi
            .bitmap
            .as_ref()
            .is_none_or(|m| m.get(n / 8).is_some_and(|byte| byte >> (n % 8) & 1 != 0));
        if apply_fixups(b).is_err() {
            continue;
        }
        let Ok(node) = Node::block(b) else { continue };
        take(&if in_use { node } else { node.freed() });
    }
    Ok(bytes)
}

/// One entry per file: copies of the same entry (in several nodes, or before and after a move) are one name,
/// known by folder, name and creation time; of those, one per file reference (the unknown one only when no
/// copy kept it), the copy with the latest change time.
fn dedup(mut c: Vec<Candidate>) -> Vec<Candidate> {
    c.sort_by(|a, b| {
        (a.folder.0, &a.name, a.key.created, a.file.map(|f| f.0))
            .cmp(&(b.folder.0, &b.name, b.key.created, b.file.map(|f| f.0)))
            .then(b.key.mft_changed.cmp(&a.key.mft_changed))
    });
    let mut out: Vec<Candidate> = Vec::with_capacity(c.len());
    for x in c {
        if let Some(last) = out.last() {
            let same =
                last.folder == x.folder && last.name == x.name && last.key.created == x.key.created;
            // Sorted so that an unknown reference (None) comes first: a known one after it replaces it.
            if same && (last.file == x.file || x.file.is_none()) {
                continue;
            }
            if same && last.file.is_none() {
                out.pop();
            }
        }
        out.push(x);
    }
    out
}

/// The records [`Builder::add_from_index_slack`] makes the entries of: one per name, not in use.
fn records_of(c: Vec<Candidate>) -> RecordBatch {
    let mut b = RecordBatch::with_capacity(c.len());
    for x in c {
        let k = x.key;
        let start = b.text.len() as u32;
        b.text.extend_from_slice(x.name.as_bytes());
        let n = b.names.len() as u32;
        b.names.push(NameInfo {
            parent: x.folder.0,
            namespace: k.namespace,
            attr_id: 0,
            created: k.created,
            modified: k.modified,
            mft_changed: k.mft_changed,
            accessed: k.accessed,
            text: start..b.text.len() as u32,
        });
        let folder = k.flags & NAME_IS_FOLDER != 0;
        b.records.push(RecordInfo {
            number: x
                .file
                .map(|f| f.record())
                .filter(|&r| r < u64::from(NO_RECORD))
                .unwrap_or(u64::from(NO_RECORD)),
            sequence: x.file.map_or(0, |f| f.sequence()),
            header_flags: if folder { 2 } else { 0 },
            std_info: Some(StdInfo {
                created: k.created,
                modified: k.modified,
                mft_changed: k.mft_changed,
                accessed: k.accessed,
                attributes: k.flags & 0xFFFF,
            }),
            data: (!folder).then_some(StreamSizes {
                size: k.size,
                allocated: k.allocated,
                ..StreamSizes::default()
            }),
            names: n..n + 1,
            ..RecordInfo::default()
        });
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(created: u64, mft_changed: u64) -> KeyCopy {
        KeyCopy {
            created,
            modified: created,
            mft_changed,
            accessed: created,
            allocated: 8,
            size: 5,
            flags: 0x20,
            namespace: namespace::WIN32,
        }
    }

    fn candidate(name: &str, file: Option<(u64, u16)>, created: u64, changed: u64) -> Candidate {
        Candidate {
            folder: FileRef::new(64, 1),
            file: file.map(|(r, s)| FileRef::new(r, s)),
            name: name.into(),
            key: key(created, changed),
        }
    }

    #[test]
    fn copies_of_one_entry_are_one_name_and_files_of_one_name_stay_apart() {
        let out = dedup(vec![
            // Three copies of one entry, one of them without its header: one name, the latest copy's times.
            candidate("a.txt", Some((80, 2)), 100, 5),
            candidate("a.txt", None, 100, 9),
            candidate("a.txt", Some((80, 2)), 100, 7),
            // The same name made again later: another file.
            candidate("a.txt", Some((91, 1)), 200, 1),
            // A copy known only by its name: kept, once.
            candidate("b.txt", None, 300, 1),
            candidate("b.txt", None, 300, 2),
        ]);
        let got: Vec<_> = out
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.file.map(|f| f.record()),
                    c.key.mft_changed,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a.txt", Some(80), 7),
                ("a.txt", Some(91), 1),
                ("b.txt", None, 2)
            ]
        );
    }

    #[test]
    fn a_name_the_mft_lists_is_not_listed_again() {
        let mut l = Listed {
            records: HashMap::new(),
            names: Default::default(),
            folders: Vec::new(),
        };
        l.records.insert(80, (2, true)); // in use, the same file
        l.records.insert(81, (3, false)); // deleted since (its sequence number went up)
        l.records.insert(82, (5, true)); // used again by another file
        l.names.insert((64, name_hash(b"c.txt")));
        assert!(l.lists(&candidate("a.txt", Some((80, 2)), 1, 1)));
        assert!(l.lists(&candidate("a.txt", Some((81, 2)), 1, 1)));
        assert!(!l.lists(&candidate("a.txt", Some((82, 2)), 1, 1)));
        assert!(!l.lists(&candidate("a.txt", Some((83, 1)), 1, 1)));
        assert!(l.lists(&candidate("c.txt", None, 1, 1)));
        assert!(!l.lists(&candidate("d.txt", None, 1, 1)));
    }
}
