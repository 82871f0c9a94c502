//! ext2, ext3 and ext4, read from their own tables with no mount: every entry of a volume in the
//! file-system-neutral form ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! The fast path is ext's own MFT: the inode tables, read in group order with large reads, skipping what the group
//! descriptors say was never used (`INODE_UNINIT`, `itable_unused`); then the folders' blocks for the names.
//!
//! * [`superblock`]: geometry, counts and features;
//! * [`group`]: the block group descriptors;
//! * [`inode`]: an inode's mode, owner, size, times and flags;
//! * [`map`]: extent trees and block maps, as runs with holes;
//! * [`dir`]: directory blocks, live names and deleted ones in slack;
//! * [`metadata`]: the volume's own structures as entries, so that `du /` adds up to the blocks in use;
//! * [`xattr`]: in-inode extended attributes, for inline data.
//!
//! Ids are inode numbers (the root folder is 2), so `icat` and `debugfs` take what uffs prints; a file with
//! several names (hard links) is one id with one entry per name.

pub mod dir;
pub mod group;
pub mod inode;
pub mod map;
pub mod metadata;
pub mod superblock;
pub mod xattr;

use rayon::prelude::*;

use uffs_fs::{attr, Kind, Run};
pub use uffs_fs::{Entry, Error, ReadAt, Result, Scan, ScanOptions, Space};

use group::Group;
use inode::{flags, Inode};
use superblock::{incompat, ro_compat, Superblock};

/// Whether a volume's first 2 KiB hold an ext2/3/4 superblock (its magic at byte 1,080).
pub fn probe(head: &[u8]) -> bool {
    head.len() >= superblock::MAGIC_AT + 2 && le16(head, superblock::MAGIC_AT) == 0xEF53
}

/// The bytes [`probe`] needs.
pub const PROBE_LEN: usize = 2048;

/// The volume's length in bytes as its superblock gives it (for a device that does not tell its own).
pub fn volume_len(head: &[u8]) -> Option<u64> {
    let sb = head.get(superblock::OFFSET as usize..superblock::OFFSET as usize + 1024)?;
    Superblock::parse(sb, u64::MAX).ok().map(|s| s.volume_len())
}

pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The root folder's inode.
pub const ROOT: u32 = 2;

/// Threads reading folders' blocks: more than cores, so that a cold disk serves several reads at once.
const READ_THREADS: usize = 8;

/// The inode tables are read this many bytes at a time.
const TABLE_READ: u64 = 4 << 20;

/// An opened ext2/3/4 volume.
pub struct Volume<R: ReadAt> {
    dev: R,
    sb: Superblock,
    groups: Vec<Group>,
}

/// An inode in use, with its inline data when it keeps its data in the inode.
struct Held {
    inode: Inode,
    inline: Option<Vec<u8>>,
}

/// A name found by a scan, made an entry once every name is found and sorted by inode.
struct Pending {
    ino: u32,
    parent: u32,
    name: String,
    of: Of,
}

/// What a [`Pending`] name's entry is made from.
enum Of {
    /// The inode in use at this index of the scan's inodes.
    Live(usize),
    /// A reserved inode in use (the volume's own: `$Journal` …), at this index.
    Reserved(usize),
    /// A deleted inode, as its table still holds it.
    Deleted(Box<Inode>),
}

impl<R: ReadAt> Volume<R> {
    /// Opens the volume whose superblock is at byte 1,024 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut b = vec![0u8; 1024];
        dev.read_exact_at(&mut b, superblock::OFFSET)
            .map_err(|e| Error::new(format!("superblock: {e}")))?;
        let sb = Superblock::parse(&b, dev.len())?;
        let groups = group::read_all(&dev, &sb)?;
        Ok(Volume { dev, sb, groups })
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// `ext2`, `ext3` or `ext4`.
    pub fn flavor(&self) -> &'static str {
        self.sb.flavor()
    }

    /// A serial number from the UUID (its first 8 bytes, little-endian).
    pub fn serial(&self) -> u64 {
        u64::from_le_bytes(self.sb.uuid[..8].try_into().expect("8 bytes"))
    }

    /// The volume's space from the superblock's counts.
    pub fn space(&self) -> Space {
        let bs = self.sb.block_size;
        let used = self.sb.blocks_count.saturating_sub(self.sb.free_blocks);
        Space {
            cluster_size: bs,
            clusters_total: self.sb.blocks_count,
            clusters_in_use: used,
            bytes_in_use: used * bs,
            bytes_total: self.sb.blocks_count * bs,
        }
    }

    /// What `uffs info` shows: the flavour and features, block and inode sizes, counts, label, UUID, space.
    pub fn facts(&self) -> Vec<(String, String)> {
        let sb = &self.sb;
        let space = self.space();
        let mut f = vec![
            ("file system".to_string(), sb.flavor().to_string()),
            ("features".into(), sb.feature_names().join(" ")),
            ("block size".into(), format!("{} bytes", sb.block_size)),
            ("inode size".into(), format!("{} bytes", sb.inode_size)),
            (
                "groups".into(),
                format!(
                    "{} of {} blocks and {} inodes",
                    self.groups.len(),
                    sb.blocks_per_group,
                    sb.inodes_per_group
                ),
            ),
            (
                "inodes".into(),
                format!("{} ({} free)", sb.inodes_count, sb.free_inodes),
            ),
            ("label".into(), sb.label.clone()),
            ("uuid".into(), sb.uuid_text()),
            (
                "used".into(),
                format!(
                    "{} bytes in {} blocks of {}; free {} bytes (per the superblock)",
                    space.bytes_in_use,
                    space.clusters_in_use,
                    space.clusters_total,
                    space.bytes_total - space.bytes_in_use
                ),
            ),
            (
                "block bitmaps".into(),
                self.bitmap_note(space.clusters_in_use),
            ),
        ];
        if !sb.last_mounted.is_empty() {
            f.push(("last mounted on".into(), sb.last_mounted.clone()));
        }
        if sb.has_incompat(incompat::RECOVER) {
            f.push((
                "journal".into(),
                "needs recovery: changes in the journal are not yet in the tables (read as they are)".into(),
            ));
        }
        f
    }

    /// The blocks the groups' block bitmaps mark in use, with any before the first group (a group whose bitmap was never written, `BLOCK_UNINIT`,
    /// counts as its descriptor says), and the groups whose bitmap could not be read.
    pub fn bitmap_blocks_in_use(&self) -> (u64, Vec<u64>) {
        let sb = &self.sb;
        let per_group = u64::from(sb.blocks_per_group);
        let mut buf = vec![0u8; sb.block_size as usize];
        // Blocks before the first group (block 0 of a volume of 1 KiB blocks, the boot block) are in use.
        let (mut used, mut unread) = (u64::from(sb.first_data_block), Vec::new());
        for (g, d) in self.groups.iter().enumerate() {
            let first = group::first_block(sb, g as u64);
            let blocks = sb.blocks_count.saturating_sub(first).min(per_group);
            if d.flags & group::BLOCK_UNINIT != 0 {
                used += blocks.saturating_sub(u64::from(d.free_blocks));
                continue;
            }
            let at = d.block_bitmap.saturating_mul(sb.block_size);
            if d.block_bitmap >= sb.blocks_count || self.dev.read_exact_at(&mut buf, at).is_err() {
                unread.push(g as u64);
                continue;
            }
            let whole = (blocks / 8) as usize;
            used += buf[..whole]
                .iter()
                .map(|b| u64::from(b.count_ones()))
                .sum::<u64>();
            if blocks % 8 != 0 {
                used += u64::from((buf[whole] & ((1u8 << (blocks % 8)) - 1)).count_ones());
            }
        }
        (used, unread)
    }

    /// `uffs info`'s line on what the block bitmaps mark in use, beside the superblock's `superblock_used`.
    fn bitmap_note(&self, superblock_used: u64) -> String {
        let (used, unread) = self.bitmap_blocks_in_use();
        let bs = self.sb.block_size;
        let mut s = format!("{} bytes in {used} blocks in use", used * bs);
        if used == superblock_used {
            s.push_str(", as the superblock says");
        } else {
            s.push_str(&format!(
                "; the superblock says {superblock_used} (its counts lag the bitmaps on a volume mounted \
                 or not cleanly unmounted)"
            ));
        }
        if !unread.is_empty() {
            s.push_str(&format!(
                "; the bitmaps of {} groups could not be read (first: group {})",
                unread.len(),
                unread[0]
            ));
        }
        s
    }

    /// Every entry: one per name of each file and folder in use (and, with `opts.deleted`, the deleted names
    /// left in directory slack), the root folder, and the inodes in use that no folder names.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(opts, &mut |batch| entries.extend(batch))?;
        Ok(Scan {
            root: u64::from(ROOT),
            entries,
            warnings,
            space: self.space(),
        })
    }

    /// The entries of [`Volume::scan`], made in id order (inode order, then the volume's own structures) and handed
    /// to `sink` [`uffs_fs::BATCH_ENTRIES`] at a time as they are made; returns the warnings.
    pub fn scan_sorted(
        &self,
        opts: &ScanOptions,
        sink: &mut dyn FnMut(Vec<Entry>),
    ) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        // The inodes in use, in number order (as the tables give them): looked up by binary search.
        let (nums, held, freed) = self.read_inodes(&mut warnings, opts.deleted);
        // Deleted inodes a deleted name in slack points at (the others are listed as orphans, as fls lists them).
        let mut named_freed = Vec::new();
        let find = |ino: u32| nums.binary_search(&ino).ok();
        let mapper = map::Mapper {
            dev: &self.dev,
            block_size: self.sb.block_size,
            blocks_count: self.sb.blocks_count,
        };
        // Each inode's runs, on every core (an extent tree deeper than the inode reads its blocks).
        let mapped: Vec<std::result::Result<Option<Vec<Run>>, String>> = nums
            .par_iter()
            .zip(&held)
            .map(|(ino, h)| {
                if h.inline.is_some() || h.inode.is_fast_symlink() || !self.has_data(&h.inode) {
                    return Ok(None);
                }
                mapper
                    .runs(&h.inode.block, h.inode.has(flags::EXTENTS), h.inode.size)
                    .map(Some)
                    .map_err(|why| format!("inode {ino}: {why}: its data is left unread"))
            })
            .collect();
        let mut runs: Vec<Option<Vec<Run>>> = mapped
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|w| {
                    warnings.push(w);
                    None
                })
            })
            .collect();
        // Every name found, made an entry once they are in inode order (the order the index wants).
        let mut pending: Vec<Pending> = Vec::with_capacity(held.len() + 1);
        // Whether each inode has a name yet (a folder may have only one).
        let mut named = vec![false; held.len()];
        // The folders in the order their first block lies on the volume: their blocks are read in one sweep.
        let mut folders: Vec<usize> = (0..held.len())
            .filter(|&i| held[i].inode.is_dir())
            .collect();
        folders.sort_by_key(|&i| {
            runs[i]
                .as_ref()
                .and_then(|r| r.iter().find(|r| !r.is_hole()))
                .map_or(0, |r| r.offset)
        });
        let filetype = self.sb.has_incompat(incompat::FILETYPE);
        // Every folder's names, read and parsed by several threads in the folders' disk order (each takes a
        // stretch of them; more threads than cores, so that a cold disk has several reads in flight), then made
        // entries in that order.
        let read = |d: usize| -> (usize, Vec<dir::Name>, Vec<String>) {
            let (dir, h) = (nums[d], &held[d]);
            let (mut names, mut warned) = (Vec::new(), Vec::new());
            let bytes = match (&h.inline, &runs[d]) {
                (Some(inline), _) => inline_dir(inline),
                (None, Some(r)) => match self.read_folder(r, h.inode.size) {
                    Ok(b) => b,
                    Err(e) => {
                        warned.push(format!("folder inode {dir}: {e}: its names are left out"));
                        return (d, names, warned);
                    }
                },
                (None, None) => return (d, names, warned),
            };
            let bs = if h.inline.is_some() {
                bytes.len().max(1)
            } else {
                self.sb.block_size as usize
            };
            let indexed = h.inline.is_none() && h.inode.has(inode::flags::INDEX);
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
                    opts.deleted,
                    self.sb.inodes_count,
                    &mut names,
                ) {
                    warned.push(format!("folder inode {dir}, block {i}: {why}"));
                }
            }
            (d, names, warned)
        };
        let listed: Vec<(usize, Vec<dir::Name>, Vec<String>)> =
            match rayon::ThreadPoolBuilder::new()
                .num_threads(READ_THREADS)
                .build()
            {
                Ok(pool) => pool.install(|| folders.par_iter().map(|&d| read(d)).collect()),
                Err(_) => folders.par_iter().map(|&d| read(d)).collect(),
            };
        for (d, names, warned) in listed {
            let dir = nums[d];
            warnings.extend(warned);
            for n in names {
                if n.name == b"." || n.name == b".." {
                    continue;
                }
                let name = match String::from_utf8(n.name) {
                    Ok(s) => s,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                };
                match find(n.inode) {
                    Some(c) if !n.deleted => {
                        // A folder has one name: a second is damage (it would make a loop or a copy).
                        if held[c].inode.is_dir() && named[c] {
                            warnings.push(format!(
                                "folder inode {} has a second name {name:?} in folder {dir}: left out",
                                n.inode
                            ));
                            continue;
                        }
                        named[c] = true;
                        pending.push(Pending {
                            ino: n.inode,
                            parent: dir,
                            name,
                            of: Of::Live(c),
                        });
                    }
                    // A deleted name whose inode is in use again names another file now.
                    Some(_) => {}
                    None if n.deleted && n.inode != 0 => {
                        named_freed.push(n.inode);
                        let inode = self
                            .read_inode(n.inode)
                            .unwrap_or_else(|| Inode::parse(&[0; 128], false));
                        pending.push(Pending {
                            ino: n.inode,
                            parent: dir,
                            name,
                            of: Of::Deleted(Box::new(inode)),
                        });
                    }
                    None if n.deleted => {}
                    None => warnings.push(format!(
                        "folder inode {dir} names {name:?} as inode {}, which is not in use",
                        n.inode
                    )),
                }
            }
        }
        // The root, and what is in use but named by no folder: a reserved inode (the journal, the resize inode,
        // quota files: the volume's own), or an orphan (as TSK names them; their parent, 0, is no folder, so they
        // are kept under $Orphan).
        for i in (0..held.len()).filter(|&i| nums[i] == ROOT || !named[i]) {
            let ino = nums[i];
            let (parent, name, of) = if ino == ROOT {
                (ROOT, String::new(), Of::Live(i))
            } else if ino < self.sb.first_inode {
                (
                    ROOT,
                    metadata::reserved_name(&self.sb, ino),
                    Of::Reserved(i),
                )
            } else {
                (0, format!("OrphanFile-{ino}"), Of::Live(i))
            };
            pending.push(Pending {
                ino,
                parent,
                name,
                of,
            });
        }
        // Deleted inodes no name points at any more, as fls lists them (`$OrphanFiles/OrphanFile-N`): what their
        // inode still holds (ext3 and ext4 clear a deleted file's size and block map or extents).
        named_freed.sort_unstable();
        for (ino, inode) in freed {
            if named_freed.binary_search(&ino).is_err() {
                pending.push(Pending {
                    ino,
                    parent: 0,
                    name: format!("OrphanFile-{ino}"),
                    of: Of::Deleted(Box::new(inode)),
                });
            }
        }
        // In inode order, an inode's names in the order they were found (stable): each entry made once, in place.
        pending.sort_by_key(|p| p.ino);
        let mut batch = Vec::with_capacity(uffs_fs::BATCH_ENTRIES);
        for k in 0..pending.len() {
            let p = &mut pending[k];
            let name = std::mem::take(&mut p.name);
            let e = match &p.of {
                &Of::Live(c) => {
                    // The last of a file's names takes its runs; the others (hard links) a copy.
                    let last = pending
                        .get(k + 1)
                        .is_none_or(|next| !matches!(next.of, Of::Live(n) if n == c));
                    let r = if last {
                        runs[c].take()
                    } else {
                        runs[c].clone()
                    };
                    let p = &pending[k];
                    self.entry(p.ino, p.parent, name, &held[c], r, false)
                }
                &Of::Reserved(c) => {
                    let mut e = self.entry(p.ino, p.parent, name, &held[c], runs[c].take(), false);
                    e.metadata = true;
                    e.attributes = attr::SYSTEM | attr::HIDDEN;
                    if p.ino == 7 {
                        // Its i_size only places the reserved descriptor blocks in a sparse map: no data of that
                        // size.
                        e.size = e.allocated;
                    }
                    e
                }
                Of::Deleted(inode) => {
                    let r = mapper
                        .runs(&inode.block, inode.has(flags::EXTENTS), inode.size)
                        .unwrap_or_default();
                    let h = Held {
                        inode: (**inode).clone(),
                        inline: None,
                    };
                    self.entry(p.ino, p.parent, name, &h, Some(r), true)
                }
            };
            batch.push(e);
            if batch.len() == uffs_fs::BATCH_ENTRIES {
                sink(std::mem::replace(
                    &mut batch,
                    Vec::with_capacity(uffs_fs::BATCH_ENTRIES),
                ));
            }
        }
        // Their ids follow the last inode's.
        batch.extend(metadata::entries(&self.sb, &self.groups));
        sink(batch);
        Ok(warnings)
    }

    /// About how many entries a scan makes: the inodes in use (a few more for hard links' extra names).
    pub fn expected_entries(&self) -> u64 {
        let used = u64::from(self.sb.inodes_count.saturating_sub(self.sb.free_inodes));
        used + used / 64 + 64
    }

    /// Whether an inode's `i_block` maps data (not a device's numbers or a fast symlink's target).
    fn has_data(&self, i: &Inode) -> bool {
        matches!(i.kind(), Kind::File | Kind::Folder | Kind::Symlink)
    }

    fn entry(
        &self,
        ino: u32,
        parent: u32,
        name: String,
        h: &Held,
        runs: Option<Vec<Run>>,
        deleted: bool,
    ) -> Entry {
        let i = &h.inode;
        let kind = i.kind();
        let inline = match (&h.inline, i.is_fast_symlink()) {
            (Some(d), _) => Some(d[..d.len().min(i.size as usize)].to_vec()),
            (None, true) => Some(i.block[..i.size as usize].to_vec()),
            _ => None,
        };
        let runs = runs.unwrap_or_default();
        let link_target = match kind {
            Kind::Symlink => inline.clone().or_else(|| self.slow_link_target(i, &runs)),
            _ => None,
        };
        Entry {
            id: u64::from(ino),
            parent: u64::from(parent),
            name,
            short_name: None,
            kind,
            size: if kind == Kind::Special { 0 } else { i.size },
            allocated: i.allocated(self.sb.block_size),
            times: i.times,
            local_times: false,
            attributes: attributes(i, &runs),
            deleted,
            metadata: false,
            runs,
            inline,
            posix: Some(uffs_fs::Posix {
                mode: u32::from(i.mode),
                uid: i.uid,
                gid: i.gid,
            }),
            link_target,
        }
    }

    /// The target of a symlink too long for `i_block`: the start of its one block.
    fn slow_link_target(&self, i: &Inode, runs: &[Run]) -> Option<Vec<u8>> {
        let first = runs.first().filter(|r| !r.is_hole())?;
        // A target is at most a path's length (4,096 bytes), in the link's first block.
        let len = i.size.min(first.len).min(4096) as usize;
        let mut b = vec![0u8; len];
        self.dev.read_exact_at(&mut b, first.offset).ok()?;
        Some(b)
    }

    /// Every inode in use and its number (two lists in step), in number order: read table by table in group
    /// order; with `freed`, also the inodes not in use that were once (a change time: deleted files), as TSK
    /// counts them.
    #[allow(clippy::type_complexity)]
    fn read_inodes(
        &self,
        warnings: &mut Vec<String>,
        freed: bool,
    ) -> (Vec<u32>, Vec<Held>, Vec<(u32, Inode)>) {
        let sb = &self.sb;
        let size = u64::from(sb.inode_size);
        let huge = sb.has_ro_compat(ro_compat::HUGE_FILE);
        let hints = sb.has_group_checksums();
        // Sized once for the inodes the superblock says are in use (no doubling: the held inodes are the scan's
        // largest table), but never for more than the volume's bytes could hold, whatever a damaged superblock says.
        let used = u64::from(sb.inodes_count.saturating_sub(sb.free_inodes));
        let cap = used.min(self.dev.len() / size.max(128)) as usize + 16;
        let (mut nums, mut out) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        let mut gone = Vec::new();
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
                warnings.push(format!(
                    "group {g}: its inode table is at block {}, outside the volume: its {count} inodes are left out",
                    grp.inode_table
                ));
                continue;
            }
            let mut done = 0u64;
            while done < count {
                let n = (count - done).min(TABLE_READ / size);
                buf.resize((n * size) as usize, 0);
                if let Err(e) = self.dev.read_exact_at(&mut buf, table + done * size) {
                    warnings.push(format!(
                        "group {g}: inodes {} to {}: {e}: left out",
                        first + done,
                        first + done + n - 1
                    ));
                    break;
                }
                for (k, raw) in buf.chunks_exact(size as usize).enumerate() {
                    let ino = (first + done + k as u64) as u32;
                    let inode = Inode::parse(raw, huge);
                    if inode.is_free() {
                        // The reserved inodes (the bad-blocks inode …) are the volume's, never a file's.
                        if freed && inode.times.changed != 0 && ino >= sb.first_inode {
                            gone.push((ino, inode));
                        }
                        continue;
                    }
                    let inline = inode
                        .has(flags::INLINE_DATA)
                        .then(|| xattr::inline_data(raw, &inode));
                    nums.push(ino);
                    out.push(Held { inode, inline });
                }
                done += n;
            }
        }
        (nums, out, gone)
    }

    /// One inode, read alone (a deleted name's).
    fn read_inode(&self, ino: u32) -> Option<Inode> {
        let sb = &self.sb;
        let idx = u64::from(ino.checked_sub(1)?);
        let grp = self
            .groups
            .get((idx / u64::from(sb.inodes_per_group)) as usize)?;
        let size = u64::from(sb.inode_size);
        let at = grp.inode_table * sb.block_size + (idx % u64::from(sb.inodes_per_group)) * size;
        let mut raw = vec![0u8; size as usize];
        self.dev.read_exact_at(&mut raw, at).ok()?;
        Some(Inode::parse(&raw, sb.has_ro_compat(ro_compat::HUGE_FILE)))
    }

    /// A folder's blocks: the bytes of `runs` within its first `size` bytes, holes left out (a hole holds no
    /// entries). What is allocated is what the runs hold, which lie inside the volume: never more than its size,
    /// whatever `size` a damaged inode gives.
    fn read_folder(&self, runs: &[Run], size: u64) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut pos = 0u64;
        for r in runs {
            let want = size.saturating_sub(pos).min(r.len) as usize;
            if want == 0 {
                break;
            }
            pos += r.len;
            if r.is_hole() {
                continue;
            }
            let start = out.len();
            out.resize(start + want, 0);
            self.dev.read_exact_at(&mut out[start..], r.offset)?;
        }
        Ok(out)
    }
}

/// An inline folder's bytes as one block of entries: its first 4 bytes are the parent's inode (`..`), the rest
/// entries (in `i_block`, then in the `system.data` attribute; each part's entries end at its own end).
fn inline_dir(data: &[u8]) -> Vec<u8> {
    data.get(4..).unwrap_or_default().to_vec()
}

/// The Windows attribute bits an inode maps onto: a folder, a symlink (a link, as NTFS's reparse point), an
/// immutable file (read-only), ext's compression and encryption flags, and holes (sparse).
fn attributes(i: &Inode, runs: &[Run]) -> u32 {
    let mut a = match i.kind() {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    for (flag, bit) in [
        (flags::IMMUTABLE, attr::READ_ONLY),
        (flags::COMPR, attr::COMPRESSED),
        (flags::ENCRYPT, attr::ENCRYPTED),
    ] {
        if i.has(flag) {
            a |= bit;
        }
    }
    if i.kind() != Kind::Folder && runs.iter().any(Run::is_hole) {
        a |= attr::SPARSE;
    }
    a
}

/// ext2, ext3 and ext4 as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "ext2/3/4"
    }

    /// By the magic alone: a superblock that does not add up is then said to be one when it is opened.
    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        probe(head).then(|| {
            head.get(superblock::OFFSET as usize..superblock::OFFSET as usize + 1024)
                .and_then(|b| Superblock::parse(b, u64::MAX).ok())
                .map_or(uffs_fs::FileSystem::Ext4, |sb| filesystem_of(sb.flavor()))
        })
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

/// The index's name for a flavour.
fn filesystem_of(flavor: &str) -> uffs_fs::FileSystem {
    match flavor {
        "ext2" => uffs_fs::FileSystem::Ext2,
        "ext3" => uffs_fs::FileSystem::Ext3,
        _ => uffs_fs::FileSystem::Ext4,
    }
}

impl<R: ReadAt> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        filesystem_of(self.flavor())
    }

    fn serial(&self) -> u64 {
        Volume::serial(self)
    }

    fn root(&self) -> u64 {
        u64::from(ROOT)
    }

    fn facts(&self) -> Vec<(String, String)> {
        Volume::facts(self)
    }

    fn space(&self) -> Option<Space> {
        Some(Volume::space(self))
    }

    fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        Volume::scan(self, opts)
    }

    fn scan_sorted(
        &self,
        opts: &ScanOptions,
        sink: &mut dyn FnMut(Vec<Entry>),
    ) -> Result<Vec<String>> {
        Volume::scan_sorted(self, opts, sink)
    }

    fn expected_entries(&self) -> Option<u64> {
        Some(Volume::expected_entries(self))
    }
}
