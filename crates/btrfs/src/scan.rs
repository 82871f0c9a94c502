//! The entries of every subvolume, read tree by tree: an inode's items come together in its tree (the inode,
//! its names, then its file extents), so each inode's entries are made when the walk passes to the next one.
//! A subvolume's root folder takes the name its reference in the parent subvolume gives it, so snapshots and
//! nested subvolumes sit where `find` over a mount of the top level shows them.
//!
//! A data extent referenced by several files (reflinks, snapshots) is counted in the allocation of the first
//! entry that meets it only, so that `du /` counts each byte of the device once. Each file's exclusive bytes
//! are those of its extents that no other file (another inode, or the same inode in another subvolume or
//! snapshot, or the same file at another place: a clone within it) also references, as the kernel's FIEMAP
//! marks them not shared and `btrfs filesystem du` adds them up: every subvolume's tree is read for that, a
//! state read alone too (so reading one snapshot of many reads them all). A deleted subvolume the cleaner has
//! not freed yet still shares its extents for the kernel; its tree is not read (it may be half freed).

use std::collections::HashMap;

use uffs_fs::{attr, Codec, Entry, Kind, Packed, Posix, Run, Sink, Spool, Times};

use crate::items::{self, Extent, Inode};
use crate::tree::{key, objectid, Key, Root};
use crate::{ReadAt, Result, ScanOptions, Subvolume, Volume};

/// Ids of the entries that stand for the volume's own trees (below the first inode number, 256).
const METADATA_ID: u64 = 3;
const SYSTEM_ID: u64 = 4;

impl<R: ReadAt> Volume<R> {
    /// The entries of [`Volume::scan`], handed to `sink` in id order; returns the warnings.
    pub fn scan_sorted(&self, _opts: &ScanOptions, sink: &mut dyn Sink) -> Result<Vec<String>> {
        let mut spool = Spool::new();
        let mut warnings = self.left_out.clone();
        let mut holders = Holders::default();
        if self.state.is_none() {
            self.own_entries(&mut spool);
        }
        // The trees read for their entries, then those read only for who else holds their extents (the other
        // states when one is read alone, subvolumes placed nowhere or left out for their records).
        let others = self
            .subvolumes
            .iter()
            .filter(|s| self.ranges.binary_search_by_key(&s.id, |r| r.id).is_err())
            .chain(&self.holders_only);
        for (s, entries) in self
            .ranges
            .iter()
            .map(|s| (s, true))
            .chain(others.map(|s| (s, false)))
        {
            let mut walk = TreeScan {
                vol: self,
                sub: s,
                entries,
                spool: &mut spool,
                holders: &mut holders,
                warnings: Vec::new(),
                cur: None,
            };
            let root = Root {
                bytenr: s.root.bytenr,
                level: s.root.level,
            };
            let mut tree_warnings = Vec::new();
            let r = self.trees().walk(root, &mut tree_warnings, &mut |k, data| {
                walk.item(k, data);
                true
            });
            walk.finish();
            warnings.append(&mut walk.warnings);
            let place = if s.id == objectid::FS_TREE {
                "the top-level subvolume".to_string()
            } else {
                format!("subvolume {} ({})", s.id, self.subvolume_path(s.id))
            };
            if let Err(e) = r {
                warnings.push(format!("{place}: {e}"));
            }
            warnings.extend(tree_warnings.into_iter().map(|w| format!("{place}: {w}")));
        }
        sink.expect(spool.len());
        // What another file turned out to share, known only now, leaves each file's exclusive bytes. (The
        // extents' holders are let go of first: the drain is the build's peak.)
        let Holders { by_extent, shared } = holders;
        drop(by_extent);
        spool.drain_sorted(&mut |mut batch: Vec<Entry>| {
            for e in &mut batch {
                if let (Some(x), Some(s)) = (e.exclusive.as_mut(), shared.get(&e.id)) {
                    *x = x.saturating_sub(*s);
                }
            }
            sink.take(batch);
        });
        Ok(warnings)
    }

    /// The bytes the volume spends on its trees, as entries under the root (as NTFS shows `$MFT`).
    fn own_entries(&self, spool: &mut Spool) {
        let root = self.root();
        let [_, meta, system] = self.usage;
        for (id, name, u) in [
            (METADATA_ID, "$Metadata", meta),
            (SYSTEM_ID, "$System", system),
        ] {
            if u.size == 0 {
                continue;
            }
            let bytes = u.used.saturating_mul(u.copies.max(1));
            spool.push(Entry {
                id,
                parent: root,
                name: name.into(),
                size: bytes,
                allocated: bytes,
                metadata: true,
                attributes: attr::SYSTEM | attr::HIDDEN,
                // No file's data: `btrfs filesystem du` counts file extents only.
                exclusive: Some(0),
                ..Entry::default()
            });
        }
    }
}

/// The inode being read: its item, names, and data so far.
struct Current {
    ino: u64,
    inode: Option<Inode>,
    names: Vec<(u64, Vec<u8>)>,
    runs: Vec<Run>,
    packed: Vec<Packed>,
    inline: Option<Vec<u8>>,
    allocated: u64,
    /// The lengths of its extents in the file (compressed ones as they read, preallocated ones too; not inline
    /// data nor holes): what FIEMAP lists, of which the shared part is taken off at the end.
    extent_bytes: u64,
    /// File bytes the extents cover so far.
    pos: u64,
    /// A data extent could not be mapped: no runs after it.
    broken: bool,
    /// Holes in its data (not its compressed pieces' stand-ins).
    sparse: bool,
}

impl Current {
    /// Appends `r`, joined to the last run when it continues it.
    fn push(&mut self, r: Run) {
        if r.len == 0 {
            return;
        }
        if let Some(last) = self.runs.last_mut() {
            let joins = if r.is_hole() {
                last.is_hole()
            } else {
                !last.is_hole() && last.offset + last.len == r.offset
            };
            if joins {
                last.len = last.len.saturating_add(r.len);
                return;
            }
        }
        self.runs.push(r);
    }
}

/// Who holds each data extent, for each file's exclusive bytes.
#[derive(Default)]
struct Holders {
    /// By the extent's logical address: its first holder met and what of it that holder references. One per
    /// data extent of the volume.
    by_extent: HashMap<u64, Held>,
    /// Bytes of each file's extents that another holder also references, by record.
    shared: HashMap<u64, u64>,
}

/// One holder's references to an extent.
struct Held {
    /// Its file's record ([`OTHER`] for a tree read only for this; [`UNNUMBERED`] for an inode past its
    /// subvolume's range of records).
    who: u32,
    /// Where the file's references start in the extent (file offset less the offset into the extent; folded
    /// to 32 bits): the kernel tells references apart by file, subvolume and this, so one file holding the
    /// extent at two places (a clone within it) shares it, while the pieces a partial overwrite leaves (all
    /// at the same start) do not.
    start: u32,
    /// The 512-byte units of file extents that reference it ([`SHARED`] once a second holder does).
    units: u32,
}

/// The holder of the extents of a tree read only for who holds what (its files are no entries).
const OTHER: u32 = u32::MAX;
/// The holder of an inode of a subvolume read for its entries that has no record (past its range).
const UNNUMBERED: u32 = u32::MAX - 1;
/// Set in [`Held::units`] once an extent is shared.
const SHARED: u32 = 1 << 31;

impl Holders {
    /// Whether the extent at `bytenr` is met for the first time; notes that file `who` references `len` bytes of
    /// it, the reference starting at `start` (see [`Held::start`]).
    fn hold(&mut self, bytenr: u64, who: u32, start: u64, len: u64) -> bool {
        let start = (start ^ start >> 32) as u32;
        // File extents are whole sectors; units of 512 bytes keep a count in 31 bits.
        let units = u32::try_from(len.div_ceil(512)).unwrap_or(SHARED - 1);
        let mut first = false;
        let h = self.by_extent.entry(bytenr).or_insert_with(|| {
            first = true;
            Held {
                who,
                start,
                units: 0,
            }
        });
        if h.units & SHARED == 0 && h.who == who && h.start == start {
            h.units = h.units.saturating_add(units).min(SHARED - 1);
            return first;
        }
        if h.units & SHARED == 0 {
            // A second holder: what the first one references of it is shared too.
            let before = u64::from(h.units) * 512;
            h.units = SHARED;
            if h.who < UNNUMBERED {
                let s = self.shared.entry(u64::from(h.who)).or_default();
                *s = s.saturating_add(before);
            }
        }
        if who < UNNUMBERED {
            let s = self.shared.entry(u64::from(who)).or_default();
            *s = s.saturating_add(len);
        }
        first
    }
}

struct TreeScan<'a, R: ReadAt> {
    vol: &'a Volume<R>,
    sub: &'a Subvolume,
    /// Whether its inodes become entries; if not, it is read only for who holds which extents.
    entries: bool,
    spool: &'a mut Spool,
    holders: &'a mut Holders,
    warnings: Vec<String>,
    cur: Option<Current>,
}

impl<R: ReadAt> TreeScan<'_, R> {
    fn item(&mut self, k: Key, data: &[u8]) {
        if self.cur.as_ref().is_some_and(|c| c.ino != k.objectid) {
            self.finish();
        }
        if k.objectid < objectid::FIRST_FREE && k.kind != key::DIR_INDEX {
            // The tree's own items (orphans, the free-space cache's inodes, quota) name no file.
            return;
        }
        if !self.entries && k.kind != key::EXTENT_DATA {
            return;
        }
        let cur = self.cur.get_or_insert_with(|| Current {
            ino: k.objectid,
            inode: None,
            names: Vec::new(),
            runs: Vec::new(),
            packed: Vec::new(),
            inline: None,
            allocated: 0,
            extent_bytes: 0,
            pos: 0,
            broken: false,
            sparse: false,
        });
        match k.kind {
            key::INODE_ITEM => cur.inode = Inode::parse(data),
            key::INODE_REF => {
                for name in items::inode_refs(data) {
                    cur.names.push((k.offset, name.to_vec()));
                }
            }
            key::INODE_EXTREF => {
                for (parent, name) in items::inode_extrefs(data) {
                    cur.names.push((parent, name.to_vec()));
                }
            }
            key::DIR_INDEX => {
                for d in items::dir_entries(data) {
                    if d.location.kind == key::ROOT_ITEM {
                        self.subvolume_in_folder(k.objectid, d.location.objectid, d.name);
                    }
                }
            }
            key::EXTENT_DATA => self.extent(k.offset, data),
            _ => {}
        }
    }

    /// Folder `dir` names subvolume `child`: placed there by the child's own root (made from its tree), or, in a
    /// snapshot of a subvolume that held it, an empty folder the kernel shows in its place (inode 2).
    fn subvolume_in_folder(&mut self, dir: u64, child: u64, name: &[u8]) {
        let here = self.vol.ranges.iter().any(|s| {
            s.id == child
                && s.placed
                    .as_ref()
                    .is_some_and(|(p, d, n)| *p == self.sub.id && *d == dir && n == name)
        });
        if here {
            return;
        }
        let (Some(id), Some(parent)) = (
            self.vol.id_of(self.sub.id, objectid::EMPTY_SUBVOL_DIR),
            self.vol.id_of(self.sub.id, dir),
        ) else {
            return;
        };
        self.spool.push(Entry {
            id,
            parent,
            name: String::from_utf8_lossy(name).into_owned(),
            kind: Kind::Folder,
            attributes: attr::DIRECTORY,
            posix: Some(Posix {
                mode: 0o040755,
                uid: 0,
                gid: 0,
            }),
            exclusive: Some(0),
            ..Entry::default()
        });
    }

    fn extent(&mut self, at: u64, data: &[u8]) {
        let vol = self.vol;
        // Who holds the extent is noted before anything else about it: damage in this file leaves other files'
        // sharing as it is.
        let who = match self.entries {
            true => self
                .cur
                .as_ref()
                .and_then(|c| vol.id_of(self.sub.id, c.ino))
                .and_then(|h| u32::try_from(h).ok())
                .unwrap_or(UNNUMBERED),
            false => OTHER,
        };
        let mut first_holder = false;
        let parsed = Extent::parse(data);
        if let Some(Extent::Regular {
            disk_bytenr,
            disk_num_bytes,
            offset,
            num_bytes,
            ..
        }) = parsed
        {
            if disk_bytenr != 0 {
                first_holder =
                    self.holders
                        .hold(disk_bytenr, who, at.wrapping_sub(offset), num_bytes);
            }
            // The first file met holding an extent holds its bytes on the device (each copy), whether or not
            // its map of them reads well.
            if let (true, Some(cur)) = (first_holder && self.entries, self.cur.as_mut()) {
                let copies = vol.chunks.chunk_of(disk_bytenr).map_or(1, |c| c.copies());
                cur.allocated = cur
                    .allocated
                    .saturating_add(disk_num_bytes.saturating_mul(copies));
            }
        }
        if !self.entries {
            return;
        }
        let Some(cur) = self.cur.as_mut() else { return };
        let Some(x) = parsed else {
            self.warnings.push(format!(
                "inode {} of subvolume {}: a file extent item that does not parse",
                cur.ino, self.sub.id
            ));
            return;
        };
        if cur.broken {
            return;
        }
        if at < cur.pos {
            self.warnings.push(format!(
                "inode {} of subvolume {}: file extents overlap at byte {at}",
                cur.ino, self.sub.id
            ));
            return;
        }
        if at > cur.pos {
            cur.push(Run::hole(at - cur.pos));
            cur.sparse = true;
            cur.pos = at;
        }
        match x {
            Extent::Inline {
                compression,
                ram_bytes,
                data,
            } => {
                let bytes = match codec(compression) {
                    None => Ok(data.to_vec()),
                    Some(c) => uffs_fs::packed::decode(c, data, ram_bytes.min(1 << 20) as usize)
                        .map_err(|e| e.to_string()),
                };
                match bytes {
                    Ok(b) => {
                        cur.pos = cur.pos.saturating_add(b.len() as u64);
                        cur.inline = Some(b);
                    }
                    Err(e) => self.warnings.push(format!(
                        "inode {} of subvolume {}: inline data: {e}",
                        cur.ino, self.sub.id
                    )),
                }
            }
            Extent::Regular {
                compression,
                ram_bytes,
                disk_bytenr,
                disk_num_bytes,
                offset,
                num_bytes,
                prealloc,
            } => {
                cur.pos = cur.pos.saturating_add(num_bytes);
                if disk_bytenr == 0 {
                    cur.push(Run::hole(num_bytes));
                    cur.sparse = true;
                    return;
                }
                cur.extent_bytes = cur.extent_bytes.saturating_add(num_bytes);
                if prealloc {
                    cur.push(Run::hole(num_bytes));
                    return;
                }
                let mapped = match codec(compression) {
                    None => vol
                        .chunks
                        .physical(disk_bytenr.saturating_add(offset), num_bytes)
                        .map(|p| {
                            cur.push(Run {
                                offset: p,
                                len: num_bytes,
                            })
                        }),
                    Some(codec) => vol.chunks.physical(disk_bytenr, disk_num_bytes).map(|p| {
                        cur.packed.push(Packed {
                            file_offset: at,
                            len: num_bytes,
                            disk: Run {
                                offset: p,
                                len: disk_num_bytes,
                            },
                            codec,
                            decoded_len: ram_bytes,
                            skip: offset,
                        });
                        // The content reader finds the piece by its file offset; the hole keeps the runs' length.
                        cur.push(Run::hole(num_bytes));
                    }),
                };
                if let Err(e) = mapped {
                    cur.broken = true;
                    self.warnings.push(format!(
                        "inode {} of subvolume {}: data at file byte {at}: {e}",
                        cur.ino, self.sub.id
                    ));
                }
            }
        }
    }

    /// Makes the entries of the inode read so far: one per name.
    fn finish(&mut self) {
        let Some(mut cur) = self.cur.take() else {
            return;
        };
        let Some(inode) = cur.inode.take() else {
            return;
        };
        let tree = self.sub.id;
        let Some(id) = self.vol.id_of(tree, cur.ino) else {
            self.warnings.push(format!(
                "inode {} of subvolume {tree}: past its range of records (it grew while read)",
                cur.ino
            ));
            return;
        };
        let names: Vec<(u64, Vec<u8>)> = if cur.ino == self.sub.root.root_dirid {
            match &self.sub.placed {
                None => vec![(id, Vec::new())],
                Some((parent_tree, dir, name)) => match self.vol.id_of(*parent_tree, *dir) {
                    Some(p) => vec![(p, name.clone())],
                    None => return,
                },
            }
        } else {
            std::mem::take(&mut cur.names)
                .into_iter()
                .filter_map(|(dir, name)| Some((self.vol.id_of(tree, dir)?, name)))
                .collect()
        };
        let kind = match inode.mode & 0o170000 {
            0o040000 => Kind::Folder,
            0o120000 => Kind::Symlink,
            0o100000 => Kind::File,
            _ => Kind::Special,
        };
        let mut sparse = cur.sparse;
        if kind == Kind::File && !cur.broken && cur.pos < inode.size && cur.inline.is_none() {
            cur.push(Run::hole(inode.size - cur.pos));
            sparse = true;
        }
        let runs = std::mem::take(&mut cur.runs);
        let mut attributes = match kind {
            Kind::Folder => attr::DIRECTORY,
            Kind::Symlink => attr::REPARSE_POINT,
            _ => 0,
        };
        if inode.flags & items::FLAG_IMMUTABLE != 0 {
            attributes |= attr::READ_ONLY;
        }
        if kind == Kind::File && sparse {
            attributes |= attr::SPARSE;
        }
        if !cur.packed.is_empty() {
            attributes |= attr::COMPRESSED;
        }
        if let Some(data) = cur.inline.as_mut() {
            // An inline extent may hold more than the file (mkfs.btrfs --rootdir keeps a symlink's NUL), or less
            // (a file grown by truncate past it: zeros).
            if inode.size <= 1 << 20 {
                data.resize(inode.size as usize, 0);
            }
        }
        let (inline, link_target) = match kind {
            Kind::Symlink => (cur.inline.clone(), cur.inline),
            Kind::File => (cur.inline, None),
            _ => (None, None),
        };
        let base = Entry {
            id,
            parent: 0,
            name: String::new(),
            short_name: None,
            kind,
            size: match kind {
                Kind::Folder | Kind::Special => 0,
                _ => inode.size,
            },
            allocated: cur.allocated,
            times: Times {
                created: inode.otime.filetime(),
                modified: inode.mtime.filetime(),
                changed: inode.ctime.filetime(),
                accessed: inode.atime.filetime(),
            },
            local_times: false,
            attributes,
            deleted: false,
            metadata: false,
            from_index_slack: false,
            runs: if kind == Kind::File { runs } else { Vec::new() },
            inline,
            posix: Some(Posix {
                mode: inode.mode,
                uid: inode.uid,
                gid: inode.gid,
            }),
            link_target,
            packed: cur.packed,
            forks: Vec::new(),
            exclusive: Some(match kind {
                Kind::File => cur.extent_bytes,
                _ => 0,
            }),
        };
        let last = names.len().saturating_sub(1);
        let mut base = Some(base);
        for (k, (parent, name)) in names.into_iter().enumerate() {
            let mut e = if k == last {
                base.take().expect("once")
            } else {
                base.clone().expect("kept")
            };
            e.parent = parent;
            e.name = String::from_utf8_lossy(&name).into_owned();
            self.spool.push(e);
        }
    }
}

/// The codec of a file extent's compression byte; `None` for none (or one uffs does not know).
fn codec(compression: u8) -> Option<Codec> {
    match compression {
        1 => Some(Codec::Zlib),
        2 => Some(Codec::BtrfsLzo),
        3 => Some(Codec::Zstd),
        _ => None,
    }
}
