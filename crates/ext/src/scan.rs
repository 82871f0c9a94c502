//! A volume's entries, made in inode order and streamed: one per name of each file and folder in use (and with
//! `deleted`, the deleted names folders' slack keeps and the freed inodes no name points at), the root, and the
//! inodes in use that no folder names. A deleted name whose inode is 0 or in use again is listed by name and
//! kind alone (`Entry::from_index_slack`); copies of a live name an htree split left behind are not listed.
//!
//! No table of every inode is held (an ext4 of ten million files would need gigabytes); three passes instead:
//! 1. the inode tables, in group order with large reads: which inodes are in use and which are folders (two
//!    bitmaps), each folder's inode (to read its blocks), and with `deleted` the freed inodes once in use;
//! 2. the folders' blocks, in the order they lie on the volume, read by several threads a wave at a time: every
//!    name kept as (inode, parent, bytes in one arena), then sorted by inode into chunks;
//! 3. the inode tables again (in the page cache from the first pass), a read at a time: each read's inodes mapped
//!    on every core, made entries one per name, merged in inode order with the deleted names and orphans, and
//!    handed to the sink a batch at a time; each chunk of names let go of once passed, so that the names are gone
//!    by the time the index builder holds nearly every entry.

use rayon::prelude::*;

use uffs_fs::{attr, Entry, Kind, Run};

use crate::inode::{flags, Inode};
use crate::superblock::{incompat, ro_compat};
use crate::{
    dir, group, map, metadata, ReadAt, Result, ScanOptions, Volume, READ_THREADS, ROOT, TABLE_READ,
};

/// Folders whose blocks are read at once (a wave): enough to keep the threads busy, few enough that their names
/// are not all held in the parsed form at once.
const FOLDER_WAVE: usize = 4096;

/// One bit per inode number.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u32) -> Bits {
        Bits(vec![0; (n as usize + 1).div_ceil(64)])
    }
    fn set(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut(i as usize / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn get(&self, i: u32) -> bool {
        self.0
            .get(i as usize / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// A folder in use, from the first pass: what reading its blocks needs.
struct Folder {
    ino: u32,
    inode: Inode,
    inline: Option<Vec<u8>>,
    /// Its blocks (`None` for inline data, or a map that could not be read).
    runs: Option<Vec<Run>>,
}

/// A name from a folder's blocks: its bytes are `arena[at..at + len]`.
#[derive(Clone, Copy)]
struct Name {
    ino: u32,
    parent: u32,
    at: u32,
    len: u32,
    /// A deleted name whose inode is free: its entry is what the inode table still holds.
    deleted: bool,
    /// A deleted name whose inode is 0 or in use again (another file's, or the same file's under its new name):
    /// listed by its name and kind alone (`Entry::from_index_slack`).
    slack: bool,
    /// Its entry's `file_type` byte.
    file_type: u8,
}

/// Names in one [`SortedNames`] chunk: 2.5 MiB of them and about 2 MiB of their bytes, each above the 1 MiB from
/// which an index build's allocator maps blocks of their own (`uffs_daemon::os::return_large_blocks`), so that a
/// chunk let go of goes back to the system (chunks of 32,768 names stayed in the heap: 14 MB more at the peak).
const NAME_CHUNK: usize = 1 << 17;

/// The second pass's names sorted by inode, in chunks of [`NAME_CHUNK`] that the third pass lets go of as it
/// passes them: held whole to the end, they were a fifth of an index build's peak on a 1.2M-entry volume, beside
/// an index builder that by then held nearly every entry.
struct SortedNames {
    /// Each chunk's names (`at` counted in its own arena) and their bytes; emptied once passed.
    chunks: Vec<(Vec<Name>, Vec<u8>)>,
    /// Chunks emptied so far (all those before it).
    released: usize,
}

impl SortedNames {
    fn new(mut names: Vec<Name>, arena: Vec<u8>) -> SortedNames {
        // In inode order, an inode's names in the order they were found (stable).
        names.sort_by_key(|n| n.ino);
        drop_copies(&mut names, &arena);
        let chunks = names
            .chunks(NAME_CHUNK)
            .map(|c| {
                let mut bytes = Vec::with_capacity(c.iter().map(|n| n.len as usize).sum());
                let names = c
                    .iter()
                    .map(|n| {
                        let at = bytes.len() as u32;
                        bytes.extend_from_slice(&arena[n.at as usize..(n.at + n.len) as usize]);
                        Name { at, ..*n }
                    })
                    .collect();
                (names, bytes)
            })
            .collect();
        SortedNames {
            chunks,
            released: 0,
        }
    }

    /// Name `i` (in inode order), unless its chunk was let go of.
    fn get(&self, i: usize) -> Option<Name> {
        self.chunks
            .get(i / NAME_CHUNK)?
            .0
            .get(i % NAME_CHUNK)
            .copied()
    }

    /// Name `i`'s bytes (made a `String` in the second pass).
    fn text(&self, i: usize) -> String {
        let (names, bytes) = &self.chunks[i / NAME_CHUNK];
        let n = names[i % NAME_CHUNK];
        String::from_utf8_lossy(&bytes[n.at as usize..(n.at + n.len) as usize]).into_owned()
    }

    /// Lets go of every chunk whose names all come before name `next`.
    fn release_before(&mut self, next: usize) {
        while self.released < (next / NAME_CHUNK).min(self.chunks.len()) {
            self.chunks[self.released] = Default::default();
            self.released += 1;
        }
    }
}

/// Drops every deleted name (`names` sorted by inode) that is the same name in the same folder as another name
/// of its inode, live or found before it: a copy an htree leaf's split or a block's compaction left behind, which
/// is no name deleted (The Sleuth Kit lists it once, too).
fn drop_copies(names: &mut Vec<Name>, arena: &[u8]) {
    let bytes = |n: &Name| &arena[n.at as usize..(n.at + n.len) as usize];
    let mut drop = vec![false; names.len()];
    let mut any = false;
    let mut start = 0;
    for run in names.chunk_by(|a, b| a.ino == b.ino) {
        let first = start;
        start += run.len();
        if run.len() < 2 || !run.iter().any(|n| n.deleted || n.slack) {
            continue;
        }
        // The live names first, then each deleted one unless already seen.
        let mut seen: std::collections::HashSet<(u32, &[u8])> = run
            .iter()
            .filter(|n| !n.deleted && !n.slack)
            .map(|n| (n.parent, bytes(n)))
            .collect();
        for (k, n) in run.iter().enumerate() {
            if (n.deleted || n.slack) && !seen.insert((n.parent, bytes(n))) {
                drop[first + k] = true;
                any = true;
            }
        }
    }
    if any {
        let mut k = 0;
        names.retain(|_| {
            k += 1;
            !drop[k - 1]
        });
    }
}

/// An inode in use, read in the third pass, with its inline data when it keeps its data in the inode.
pub(crate) struct Held {
    pub(crate) inode: Inode,
    pub(crate) inline: Option<Vec<u8>>,
}

impl<R: ReadAt> Volume<R> {
    /// The entries of [`Volume::scan`], made in id order (inode order, then the volume's own structures) and handed
    /// to `sink` [`uffs_fs::BATCH_ENTRIES`] at a time as they are made; returns the warnings.
    pub fn scan_sorted(
        &self,
        opts: &ScanOptions,
        sink: &mut dyn uffs_fs::Sink,
    ) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        let sb = &self.sb;
        let mapper = map::Mapper {
            dev: &self.dev,
            block_size: sb.block_size,
            blocks_count: sb.blocks_count,
        };
        // Pass 1: which inodes are in use and which are folders.
        let mut in_use = Bits::new(sb.inodes_count);
        let mut is_dir = Bits::new(sb.inodes_count);
        let mut folders = Vec::new();
        let mut freed = Vec::new();
        let huge = sb.has_ro_compat(ro_compat::HUGE_FILE);
        self.sweep_tables(Some(&mut warnings), |first, raw, size| {
            for (k, raw) in raw.chunks_exact(size).enumerate() {
                let ino = first + k as u32;
                let inode = Inode::parse(raw, huge);
                if inode.is_free() {
                    // The reserved inodes (the bad-blocks inode …) are the volume's, never a file's.
                    if opts.deleted && inode.times.changed != 0 && ino >= sb.first_inode {
                        freed.push((ino, inode));
                    }
                    continue;
                }
                in_use.set(ino);
                if inode.is_dir() {
                    is_dir.set(ino);
                    let inline = inode
                        .has(flags::INLINE_DATA)
                        .then(|| crate::xattr::inline_data(raw, &inode));
                    folders.push(Folder {
                        ino,
                        inode,
                        inline,
                        runs: None,
                    });
                }
            }
        });
        // Each folder's blocks, on every core (an extent tree deeper than the inode reads its blocks).
        let mapped: Vec<std::result::Result<Option<Vec<Run>>, String>> = folders
            .par_iter()
            .map(|f| {
                if f.inline.is_some() {
                    return Ok(None);
                }
                mapper
                    .runs(&f.inode.block, f.inode.has(flags::EXTENTS), f.inode.size)
                    .map(Some)
                    .map_err(|why| format!("inode {}: {why}: its data is left unread", f.ino))
            })
            .collect();
        for (f, m) in folders.iter_mut().zip(mapped) {
            f.runs = m.unwrap_or_else(|w| {
                warnings.push(w);
                None
            });
        }
        // Pass 2: every folder's names, the folders in the order their first block lies on the volume.
        let mut order: Vec<usize> = (0..folders.len()).collect();
        order.sort_by_key(|&i| {
            folders[i]
                .runs
                .as_ref()
                .and_then(|r| r.iter().find(|r| !r.is_hole()))
                .map_or(0, |r| r.offset)
        });
        let mut named = Bits::new(sb.inodes_count);
        let mut names: Vec<Name> = Vec::new();
        let mut arena: Vec<u8> = Vec::new();
        // Freed inodes a deleted name points at, as their table holds them (the others are listed as orphans, as
        // fls lists them).
        let mut named_freed: std::collections::HashMap<u32, Inode> =
            std::collections::HashMap::new();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(READ_THREADS)
            .build()
            .ok();
        for wave in order.chunks(FOLDER_WAVE) {
            let read = |&d: &usize| self.folder_names(&folders[d], opts.deleted);
            let listed: Vec<(Vec<dir::Name>, Vec<String>)> = match &pool {
                Some(pool) => pool.install(|| wave.par_iter().map(read).collect()),
                None => wave.par_iter().map(read).collect(),
            };
            for (&d, (found, warned)) in wave.iter().zip(listed) {
                let dir = folders[d].ino;
                warnings.extend(warned);
                for n in found {
                    if n.name == b"." || n.name == b".." {
                        continue;
                    }
                    let name = match String::from_utf8(n.name) {
                        Ok(s) => s,
                        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    };
                    let live = in_use.get(n.inode);
                    let mut slack = false;
                    match (live, n.deleted) {
                        (true, false) => {
                            // A folder has one name: a second is damage (it would make a loop or a copy).
                            if is_dir.get(n.inode) && named.get(n.inode) {
                                warnings.push(format!(
                                    "folder inode {} has a second name {name:?} in folder {dir}: left out",
                                    n.inode
                                ));
                                continue;
                            }
                            named.set(n.inode);
                        }
                        // A deleted name whose inode is in use again (fls's `realloc`) or unknown: its inode
                        // says nothing of the file it named.
                        (true, true) => slack = true,
                        (false, true) if n.inode != 0 => {
                            named_freed.entry(n.inode).or_insert_with(|| {
                                self.read_inode(n.inode)
                                    .unwrap_or_else(|| Inode::parse(&[0; 128], false))
                            });
                        }
                        (false, true) => slack = true,
                        (false, false) => {
                            warnings.push(format!(
                                "folder inode {dir} names {name:?} as inode {}, which is not in use",
                                n.inode
                            ));
                            continue;
                        }
                    }
                    let (Ok(at), Ok(len)) = (u32::try_from(arena.len()), u32::try_from(name.len()))
                    else {
                        warnings.push(format!(
                            "folder inode {dir}: more name bytes than one scan keeps: {name:?} left out"
                        ));
                        continue;
                    };
                    arena.extend_from_slice(name.as_bytes());
                    names.push(Name {
                        ino: n.inode,
                        parent: dir,
                        at,
                        len,
                        deleted: n.deleted && !slack,
                        slack,
                        file_type: n.file_type,
                    });
                }
            }
        }
        drop(pool);
        let names = SortedNames::new(names, arena);
        let mut named_freed: Vec<(u32, Inode)> = named_freed.into_iter().collect();
        named_freed.sort_unstable_by_key(|(i, _)| *i);
        // Freed inodes no name points at: `$OrphanFiles/OrphanFile-N`, as fls lists them.
        freed.retain(|(ino, _)| named_freed.binary_search_by_key(ino, |(i, _)| *i).is_err());
        let mut folder_runs: Vec<(u32, Option<Vec<Run>>)> =
            folders.into_iter().map(|f| (f.ino, f.runs)).collect();
        folder_runs.shrink_to_fit();

        // Pass 3: the tables again; every inode's entries in inode order.
        let mut out = Out {
            vol: self,
            mapper: &mapper,
            batch: Vec::with_capacity(uffs_fs::BATCH_ENTRIES),
            sink,
            names,
            next: 0,
            named_freed: &named_freed,
            freed: &freed,
            next_freed: 0,
        };
        let mut lost = 0u64;
        self.sweep_tables(None, |first, raw, size| {
            let held: Vec<(u32, Held)> = raw
                .chunks_exact(size)
                .enumerate()
                .filter_map(|(k, raw)| {
                    let ino = first + k as u32;
                    if !in_use.get(ino) {
                        return None;
                    }
                    let inode = Inode::parse(raw, huge);
                    // Changed since the first pass (a live volume): left as it was found then.
                    if inode.is_free() {
                        return None;
                    }
                    let inline = inode
                        .has(flags::INLINE_DATA)
                        .then(|| crate::xattr::inline_data(raw, &inode));
                    Some((ino, Held { inode, inline }))
                })
                .collect();
            let mapped: Vec<std::result::Result<Option<Vec<Run>>, String>> = held
                .par_iter()
                .map(|(ino, h)| {
                    if h.inode.is_dir() {
                        let runs = folder_runs
                            .binary_search_by_key(ino, |(i, _)| *i)
                            .ok()
                            .and_then(|i| folder_runs[i].1.clone());
                        return Ok(runs);
                    }
                    if h.inline.is_some() || h.inode.is_fast_symlink() || !self.has_data(&h.inode) {
                        return Ok(None);
                    }
                    mapper
                        .runs(&h.inode.block, h.inode.has(flags::EXTENTS), h.inode.size)
                        .map(Some)
                        .map_err(|why| format!("inode {ino}: {why}: its data is left unread"))
                })
                .collect();
            for ((ino, h), runs) in held.into_iter().zip(mapped) {
                let runs = runs.unwrap_or_else(|w| {
                    warnings.push(w);
                    None
                });
                lost += out.deleted_before(ino);
                out.live(ino, &h, runs, named.get(ino));
            }
        });
        lost += out.deleted_before(u32::MAX);
        if lost > 0 {
            warnings.push(format!(
                "{lost} names of inodes whose table could not be read the second time are left out"
            ));
        }
        // Their ids follow the last inode's.
        out.batch.extend(metadata::entries(&self.sb, &self.groups));
        out.sink.take(out.batch);
        Ok(warnings)
    }

    /// Reads the inode tables in group order, [`TABLE_READ`] bytes at a time, handing `visit` the first inode
    /// number of each read, its bytes and the inode size. Groups the descriptors say were never used are passed
    /// over; with `warnings`, what cannot be read is said there.
    fn sweep_tables(
        &self,
        mut warnings: Option<&mut Vec<String>>,
        mut visit: impl FnMut(u32, &[u8], usize),
    ) {
        let sb = &self.sb;
        let size = u64::from(sb.inode_size);
        let hints = sb.has_group_checksums();
        let mut buf = Vec::new();
        for (g, grp) in self.groups.iter().enumerate() {
            let mut count = u64::from(sb.inodes_per_group);
            if hints {
                if grp.flags & group::INODE_UNINIT != 0 {
                    continue;
                }
                count = count.saturating_sub(u64::from(grp.itable_unused));
            }
            let first = g as u64 * u64::from(sb.inodes_per_group) + 1;
            count = count.min((u64::from(sb.inodes_count) + 1).saturating_sub(first));
            let table = grp.inode_table.saturating_mul(sb.block_size);
            if grp.inode_table == 0 || grp.inode_table >= sb.blocks_count {
                if let Some(w) = warnings.as_deref_mut() {
                    w.push(format!(
                        "group {g}: its inode table is at block {}, outside the volume: its {count} inodes are left out",
                        grp.inode_table
                    ));
                }
                continue;
            }
            let mut done = 0u64;
            while done < count {
                let n = (count - done).min(TABLE_READ / size);
                buf.resize((n * size) as usize, 0);
                if let Err(e) = self.dev.read_exact_at(&mut buf, table + done * size) {
                    if let Some(w) = warnings.as_deref_mut() {
                        w.push(format!(
                            "group {g}: inodes {} to {}: {e}: left out",
                            first + done,
                            first + done + n - 1
                        ));
                    }
                    break;
                }
                visit((first + done) as u32, &buf, size as usize);
                done += n;
            }
        }
    }

    /// A folder's names and the warnings reading them gave.
    fn folder_names(&self, f: &Folder, deleted: bool) -> (Vec<dir::Name>, Vec<String>) {
        let (mut names, mut warned) = (Vec::new(), Vec::new());
        let bytes = match (&f.inline, &f.runs) {
            (Some(inline), _) => crate::inline_dir(inline),
            (None, Some(r)) => match self.read_folder(r, f.inode.size) {
                Ok(b) => b,
                Err(e) => {
                    warned.push(format!(
                        "folder inode {}: {e}: its names are left out",
                        f.ino
                    ));
                    return (names, warned);
                }
            },
            (None, None) => return (names, warned),
        };
        let bs = if f.inline.is_some() {
            bytes.len().max(1)
        } else {
            self.sb.block_size as usize
        };
        let indexed = f.inline.is_none() && f.inode.has(flags::INDEX);
        let filetype = self.sb.has_incompat(incompat::FILETYPE);
        for (i, block) in bytes.chunks(bs).enumerate() {
            let place = match (indexed, i) {
                (false, _) => dir::Place::Linear,
                (true, 0) => dir::Place::HtreeRoot,
                (true, _) => dir::Place::HtreeOther,
            };
            if let Err(why) = dir::names(
                block,
                place,
                self.sb.block_size as usize,
                filetype,
                deleted,
                self.sb.inodes_count,
                &mut names,
            ) {
                warned.push(format!("folder inode {}, block {i}: {why}", f.ino));
            }
        }
        (names, warned)
    }
}

/// The third pass's output: entries made in inode order from the sorted names and the inodes as read, a batch at
/// a time.
struct Out<'a, R: ReadAt> {
    vol: &'a Volume<R>,
    mapper: &'a map::Mapper<'a>,
    batch: Vec<Entry>,
    sink: &'a mut dyn uffs_fs::Sink,
    names: SortedNames,
    /// The first name not yet made an entry.
    next: usize,
    /// Freed inodes deleted names point at, by number.
    named_freed: &'a [(u32, Inode)],
    /// Freed inodes no name points at (orphans), by number.
    freed: &'a [(u32, Inode)],
    next_freed: usize,
}

impl<R: ReadAt> Out<'_, R> {
    fn push(&mut self, e: Entry) {
        self.batch.push(e);
        if self.batch.len() == uffs_fs::BATCH_ENTRIES {
            let full =
                std::mem::replace(&mut self.batch, Vec::with_capacity(uffs_fs::BATCH_ENTRIES));
            self.sink.take(full);
        }
    }

    /// Makes the entries of every deleted name and orphan of an inode numbered below `ino`; returns how many live
    /// names of inodes the third pass did not read were passed over.
    fn deleted_before(&mut self, ino: u32) -> u64 {
        let mut lost = 0;
        loop {
            self.names.release_before(self.next);
            let name = self.names.get(self.next).filter(|n| n.ino < ino);
            let orphan = self.freed.get(self.next_freed).filter(|(i, _)| *i < ino);
            match (name, orphan) {
                (Some(n), o) if o.is_none_or(|(i, _)| n.ino <= *i) => {
                    self.next += 1;
                    if n.slack {
                        self.push_slack(n);
                        continue;
                    }
                    if !n.deleted {
                        lost += 1;
                        continue;
                    }
                    let Ok(k) = self.named_freed.binary_search_by_key(&n.ino, |(i, _)| *i) else {
                        continue;
                    };
                    let inode = self.named_freed[k].1.clone();
                    let name = self.names.text(self.next - 1);
                    let e = self.deleted_entry(n.ino, n.parent, name, inode);
                    self.push(e);
                }
                (_, Some((i, inode))) => {
                    let (i, inode) = (*i, inode.clone());
                    self.next_freed += 1;
                    let e = self.deleted_entry(i, 0, format!("OrphanFile-{i}"), inode);
                    self.push(e);
                }
                (None, None) => return lost,
                (Some(_), None) => {
                    unreachable!("the first arm takes a name when there is no orphan")
                }
            }
        }
    }

    /// The entry of deleted inode `ino` named `name` in folder `parent`: what its inode still holds (ext3 and
    /// ext4 clear a deleted file's size and block map or extents).
    fn deleted_entry(&self, ino: u32, parent: u32, name: String, inode: Inode) -> Entry {
        let runs = self
            .mapper
            .runs(&inode.block, inode.has(flags::EXTENTS), inode.size)
            .unwrap_or_default();
        let h = Held {
            inode,
            inline: None,
        };
        self.vol.entry(ino, parent, name, &h, Some(runs), true)
    }

    /// The entry of name `n` (the one before [`Out::next`]), a deleted name whose inode says nothing of it: its
    /// name, folder and kind, nothing of the inode.
    fn push_slack(&mut self, n: Name) {
        let kind = Kind::of_file_type(n.file_type);
        let e = Entry {
            id: u64::from(n.ino),
            parent: u64::from(n.parent),
            name: self.names.text(self.next - 1),
            kind,
            deleted: true,
            from_index_slack: true,
            ..Entry::default()
        };
        self.push(e);
    }

    /// The entries of inode `ino`, in use: one per name (the last takes its runs, the others a copy), then the
    /// root, a reserved inode (the journal, the resize inode: the volume's own) or an orphan (in use but named by
    /// no folder; its parent, 0, is no folder, so it is kept under $Orphan), as `named` says.
    fn live(&mut self, ino: u32, h: &Held, mut runs: Option<Vec<Run>>, named: bool) {
        self.names.release_before(self.next);
        while let Some(n) = self.names.get(self.next).filter(|n| n.ino == ino) {
            self.next += 1;
            if n.slack {
                self.push_slack(n);
                continue;
            }
            if n.deleted {
                continue;
            }
            // The root's own entry comes after its names (damage) and takes the runs.
            let last = ino != ROOT
                && self
                    .names
                    .get(self.next)
                    .is_none_or(|next| next.ino != ino || next.deleted || next.slack);
            let r = if last { runs.take() } else { runs.clone() };
            let name = self.names.text(self.next - 1);
            let e = self.vol.entry(ino, n.parent, name, h, r, false);
            self.push(e);
        }
        if ino != ROOT && named {
            return;
        }
        let sb = &self.vol.sb;
        let e = if ino == ROOT {
            self.vol.entry(ino, ROOT, String::new(), h, runs, false)
        } else if ino < sb.first_inode {
            let mut e = self
                .vol
                .entry(ino, ROOT, metadata::reserved_name(sb, ino), h, runs, false);
            e.metadata = true;
            e.attributes = attr::SYSTEM | attr::HIDDEN;
            if ino == 7 {
                // Its i_size only places the reserved descriptor blocks in a sparse map: no data of that size.
                e.size = e.allocated;
            }
            e
        } else {
            self.vol
                .entry(ino, 0, format!("OrphanFile-{ino}"), h, runs, false)
        };
        self.push(e);
    }
}
