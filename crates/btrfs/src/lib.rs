//! Btrfs, read from its own trees with no mount: every entry of every subvolume and snapshot in the
//! file-system-neutral form ([`uffs_fs::Scan`]), with the runs (and compressed pieces) that hold each file's data.
//!
//! Btrfs keeps everything in copy-on-write B-trees of logical addresses: the superblock's system chunk array
//! maps the chunk tree, the chunk tree maps every logical address to its device bytes, the root tree lists the
//! other trees and each subvolume's (and snapshot's) file-system tree, which holds its inodes, their names and
//! their file extents.
//!
//! * [`sb`]: the superblock and its features;
//! * [`chunk`]: logical to physical, for the one device read;
//! * [`tree`]: nodes, leaves, keys and the walk of a tree;
//! * [`items`]: inode, reference, folder entry, file extent and root items;
//! * `scan`: the entries of each subvolume, placed where the kernel shows them.
//!
//! Ids: a subvolume's inode numbers are its own (each subvolume's root folder is 256), and an index's record
//! numbers are one volume's, so each subvolume gets a range of records: the top-level subvolume's are its
//! inode numbers (`ls -i` agrees), each other's start where the one before it ends, its highest inode number
//! rounded up to a multiple of 2^20 (ranges stay put while subvolumes grow within them; records go past
//! 2^32 only with thousands of snapshots, and such subvolumes are left out with a warning).

pub mod chunk;
pub mod items;
pub mod sb;
mod scan;
pub mod tree;

pub use uffs_fs::{Entry, Error, ReadAt, Result, Scan, ScanOptions, Space};

use chunk::ChunkMap;
use items::RootItem;
use sb::Superblock;
use tree::{key, objectid, Key, Root, Trees};

pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The bytes [`probe`] needs: through the superblock's magic, 64 KiB in.
pub const PROBE_LEN: usize = sb::OFFSET as usize + 0x48;

/// Whether a volume's first bytes hold a Btrfs superblock (`_BHRfS_M` at byte 65,600).
pub fn probe(head: &[u8]) -> bool {
    head.get(sb::OFFSET as usize + 0x40..PROBE_LEN) == Some(sb::MAGIC)
}

/// This device's length as the superblock gives it.
pub fn volume_len(head: &[u8]) -> Option<u64> {
    let at = sb::OFFSET as usize;
    let b = head.get(at..at + sb::LEN)?;
    Superblock::parse(b).ok().map(|s| s.dev_total_bytes)
}

/// The unit of the subvolumes' record ranges.
const RANGE_UNIT: u64 = 1 << 20;

/// A subvolume (or snapshot): its tree and where it sits.
#[derive(Debug, Clone)]
pub struct Subvolume {
    pub id: u64,
    pub root: RootItem,
    /// Its inode `n` is record `base + n`; `span` records are its.
    pub base: u64,
    pub span: u64,
    /// The subvolume it sits in, the folder of that subvolume, and its name there (none for subvolume 5).
    pub placed: Option<(u64, u64, Vec<u8>)>,
}

/// Space per block group type: (bytes used, bytes of chunks, copies each byte takes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub used: u64,
    pub size: u64,
    pub copies: u64,
    pub profile: &'static str,
}

/// An opened Btrfs device.
pub struct Volume<R: ReadAt> {
    /// Shared with the readers of its subvolumes ([`Volume::state`]).
    dev: std::sync::Arc<R>,
    sb: Superblock,
    chunks: ChunkMap,
    /// Every subvolume, by id.
    subvolumes: Vec<Subvolume>,
    /// Those a scan reads, with their record ranges: all, or the selected state alone.
    ranges: Vec<Subvolume>,
    /// The snapshot read alone (`@snapN`).
    state: Option<u64>,
    /// Data, metadata and system block groups' use.
    usage: [Usage; 3],
    /// Subvolumes left out, and why.
    left_out: Vec<String>,
    /// Trees read only for which extents their files hold (see `scan`): subvolumes placed in no folder, and
    /// those left out for their records; their files are no entries but share extents all the same.
    holders_only: Vec<Subvolume>,
}

impl<R: ReadAt> Volume<R> {
    /// Opens the device whose first byte is offset 0 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut b = vec![0u8; sb::LEN];
        dev.read_exact_at(&mut b, sb::OFFSET)
            .map_err(|e| Error::new(format!("superblock: {e}")))?;
        let sb = Superblock::parse(&b)?;
        for (bit, what) in [
            (sb::incompat::EXTENT_TREE_V2, "the extent tree v2"),
            (sb::incompat::RAID_STRIPE_TREE, "the RAID stripe tree"),
        ] {
            if sb.has_incompat(bit) {
                return Err(Error::new(format!(
                    "this Btrfs file system uses {what} (experimental), which uffs does not read yet"
                )));
            }
        }
        let mut chunks = ChunkMap::from_sys_array(sb.devid, sb.dev_total_bytes, &sb.sys_chunks)?;
        let mut warnings = Vec::new();
        {
            let map = chunks.clone();
            let trees = Trees::new(&dev, &sb, &map);
            let mut found = Vec::new();
            let mut bad = None;
            trees.walk(
                Root {
                    bytenr: sb.chunk_root,
                    level: sb.chunk_root_level,
                },
                &mut warnings,
                &mut |k, data| {
                    if k.kind == key::CHUNK_ITEM {
                        match chunk::Chunk::parse(k.offset, data) {
                            Ok((c, _)) => found.push(c),
                            Err(e) => bad = Some(e),
                        }
                    }
                    true
                },
            )?;
            if let Some(e) = bad {
                return Err(Error::new(format!("chunk tree: {e}")));
            }
            for c in found {
                chunks.insert(c);
            }
        }
        if let Some(w) = warnings.first() {
            return Err(Error::new(format!("chunk tree: {w}")));
        }
        if let Some(c) = chunks.first_unreadable() {
            return Err(Error::new(format!(
                "a Btrfs file system of {} devices: {}",
                sb.num_devices,
                chunks.unreadable(c)
            )));
        }
        let mut vol = Volume {
            dev: std::sync::Arc::new(dev),
            sb,
            chunks,
            subvolumes: Vec::new(),
            ranges: Vec::new(),
            state: None,
            usage: [Usage::default(); 3],
            left_out: Vec::new(),
            holders_only: Vec::new(),
        };
        vol.read_root_tree()?;
        vol.ranges = vol.subvolumes.clone();
        Ok(vol)
    }

    fn trees(&self) -> Trees<'_, R> {
        Trees::new(&self.dev, &self.sb, &self.chunks)
    }

    /// The subvolumes and where each sits; the extent (or block group) tree's block groups.
    fn read_root_tree(&mut self) -> Result<()> {
        let mut items: Vec<(u64, RootItem)> = Vec::new();
        let mut backrefs: Vec<(u64, u64, u64, Vec<u8>)> = Vec::new();
        let mut warnings = Vec::new();
        let root = Root {
            bytenr: self.sb.root,
            level: self.sb.root_level,
        };
        self.trees().walk(root, &mut warnings, &mut |k, data| {
            match k.kind {
                key::ROOT_ITEM => {
                    if let Some(r) = RootItem::parse(data) {
                        match items.last_mut() {
                            // Several items of one tree: the last is current.
                            Some(last) if last.0 == k.objectid => last.1 = r,
                            _ => items.push((k.objectid, r)),
                        }
                    }
                }
                key::ROOT_BACKREF => {
                    if let Some((dirid, name)) = items::root_ref(data) {
                        backrefs.push((k.objectid, k.offset, dirid, name.to_vec()));
                    }
                }
                _ => {}
            }
            true
        })?;
        if let Some(w) = warnings.first() {
            return Err(Error::new(format!("root tree: {w}")));
        }
        let tree_root = |id: u64| {
            items.iter().find(|(i, _)| *i == id).map(|(_, r)| Root {
                bytenr: r.bytenr,
                level: r.level,
            })
        };
        let groups = if self.sb.compat_ro & sb::compat_ro::BLOCK_GROUP_TREE != 0 {
            tree_root(objectid::BLOCK_GROUP_TREE)
        } else {
            tree_root(objectid::EXTENT_TREE)
        };
        if let Some(groups) = groups {
            self.read_block_groups(groups)?;
        }
        for (id, r) in items {
            let fs_tree = id == objectid::FS_TREE
                || (objectid::FIRST_FREE..=objectid::LAST_FREE).contains(&id);
            // A deleted subvolume whose tree the cleaner has not freed yet has no references.
            if !fs_tree || r.refs == 0 {
                continue;
            }
            let placed = backrefs
                .iter()
                .find(|b| b.0 == id)
                .map(|b| (b.1, b.2, b.3.clone()));
            let tree = Root {
                bytenr: r.bytenr,
                level: r.level,
            };
            let holder = |r: RootItem| Subvolume {
                id,
                root: r,
                base: 0,
                span: 0,
                placed: None,
            };
            if id != objectid::FS_TREE && placed.is_none() {
                self.holders_only.push(holder(r));
                continue;
            }
            let last = Key::new(objectid::LAST_FREE, u8::MAX, u64::MAX);
            let highest = match self.trees().last_at_most(tree, last) {
                Ok(k) => k.map_or(0, |k| k.objectid),
                Err(e) => {
                    self.left_out.push(format!("subvolume {id}: {e}"));
                    continue;
                }
            };
            let span = highest
                .checked_add(1)
                .and_then(|h| h.checked_next_multiple_of(RANGE_UNIT))
                .unwrap_or(u64::MAX);
            let base = self.subvolumes.last().map_or(0, |s| s.base + s.span);
            if base.checked_add(span).is_none_or(|end| end > 1 << 32) {
                self.left_out.push(format!(
                    "subvolume {id}: past the 2^32 records an index holds (its subvolumes' inode numbers \
                     add up to more)"
                ));
                self.holders_only.push(holder(r));
                continue;
            }
            self.subvolumes.push(Subvolume {
                id,
                root: r,
                base,
                span,
                placed,
            });
        }
        Ok(())
    }

    /// The id of inode `ino` of subvolume `tree` (see the crate doc); `None` for a subvolume left out, or an
    /// inode past its range.
    pub fn id_of(&self, tree: u64, ino: u64) -> Option<u64> {
        let i = self.ranges.binary_search_by_key(&tree, |s| s.id).ok()?;
        let s = &self.ranges[i];
        (ino < s.span).then_some(s.base + ino)
    }

    /// The subvolumes and snapshots (the top level aside), oldest first.
    pub fn states(&self) -> Vec<uffs_fs::State> {
        let mut v: Vec<(u64, uffs_fs::State)> = self
            .subvolumes
            .iter()
            .filter(|s| s.id != objectid::FS_TREE)
            .map(|s| {
                let created = s.root.otime.filetime();
                let state = uffs_fs::State {
                    id: s.id,
                    name: self.subvolume_path(s.id),
                    created,
                    read_only: s.root.flags & items::ROOT_SUBVOL_RDONLY != 0,
                    snapshot: s.root.is_snapshot(),
                };
                (created, state)
            })
            .collect();
        v.sort_by_key(|(created, s)| (*created, s.id));
        v.into_iter().map(|(_, s)| s).collect()
    }

    /// A reader of subvolume `id` alone (its records its inode numbers, its root folder the root), as a mount of
    /// it shows it: the subvolumes in it are empty folders, as in a snapshot.
    pub fn state(&self, id: u64) -> Result<Volume<R>> {
        let Some(s) = self.subvolumes.iter().find(|s| s.id == id) else {
            let have: Vec<String> = self
                .states()
                .iter()
                .filter(|s| s.snapshot)
                .map(|s| format!("snap{} ({})", s.id, s.name))
                .collect();
            return Err(Error::new(format!(
                "no subvolume {id} on this Btrfs volume; its snapshots: {}",
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            )));
        };
        Ok(Volume {
            dev: self.dev.clone(),
            sb: self.sb.clone(),
            chunks: self.chunks.clone(),
            subvolumes: self.subvolumes.clone(),
            ranges: vec![Subvolume {
                base: 0,
                placed: None,
                ..s.clone()
            }],
            state: Some(id),
            usage: self.usage,
            left_out: self.left_out.clone(),
            holders_only: self.holders_only.clone(),
        })
    }

    /// Subvolumes not read, and why.
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// Each chunk's block group item: bytes used per type.
    fn read_block_groups(&mut self, groups: Root) -> Result<()> {
        let trees = self.trees();
        let mut usage = [Usage::default(); 3];
        for c in self.chunks.chunks() {
            let k = Key::new(c.logical, key::BLOCK_GROUP_ITEM, c.length);
            let Some(item) = trees.get(groups, k)? else {
                continue;
            };
            if item.len() < 24 {
                continue;
            }
            let used = le64(&item, 0);
            let flags = le64(&item, 16);
            for (slot, bit) in [
                (0, chunk::kind::DATA),
                (1, chunk::kind::METADATA),
                (2, chunk::kind::SYSTEM),
            ] {
                if flags & bit != 0 {
                    let u = &mut usage[slot];
                    u.used = u.used.saturating_add(used);
                    u.size = u.size.saturating_add(c.length);
                    u.copies = c.copies();
                    u.profile = chunk::profile_name(c.kind);
                    // A mixed group (data and metadata) is counted as data.
                    break;
                }
            }
        }
        self.usage = usage;
        Ok(())
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    pub fn subvolumes(&self) -> &[Subvolume] {
        &self.subvolumes
    }

    /// Data, metadata and system use, as `btrfs filesystem df` shows it.
    pub fn usage(&self) -> [Usage; 3] {
        self.usage
    }

    /// A serial number from the fsid (its first 8 bytes, little-endian, as ext's from its UUID).
    pub fn serial(&self) -> u64 {
        u64::from_le_bytes(self.sb.fsid[..8].try_into().expect("8 bytes"))
    }

    /// This device's space: bytes used on it (each copy counted), of its size.
    pub fn space(&self) -> Space {
        let ss = u64::from(self.sb.sectorsize);
        let used = self.usage.iter().fold(0u64, |t, u| {
            t.saturating_add(u.used.saturating_mul(u.copies.max(1)))
        });
        Space {
            cluster_size: ss,
            clusters_total: self.sb.dev_total_bytes / ss,
            clusters_in_use: used / ss,
            bytes_in_use: used,
            bytes_total: self.sb.dev_total_bytes,
        }
    }

    /// Where subvolume `id` is, as a path from the top-level subvolume (`a/b/snap`).
    pub fn subvolume_path(&self, id: u64) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = id;
        let mut guard = 0;
        while let Some(s) = self.subvolumes.iter().find(|s| s.id == cur) {
            let Some((parent, dirid, name)) = &s.placed else {
                break;
            };
            guard += 1;
            if guard > 1000 {
                break;
            }
            parts.push(String::from_utf8_lossy(name).into_owned());
            if let Some(p) = self.subvolumes.iter().find(|s| s.id == *parent) {
                parts.extend(self.folder_path(p, *dirid));
            }
            cur = *parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// The names from folder `dir` of subvolume `s` up to its root folder, innermost first.
    fn folder_path(&self, s: &Subvolume, mut dir: u64) -> Vec<String> {
        let root = Root {
            bytenr: s.root.bytenr,
            level: s.root.level,
        };
        let mut out = Vec::new();
        while dir != s.root.root_dirid && out.len() < 4096 {
            let mut next = None;
            let mut w = Vec::new();
            let _ = self.trees().walk_from(
                root,
                Key::new(dir, key::INODE_REF, 0),
                &mut w,
                &mut |k, data| {
                    if k.objectid == dir && k.kind == key::INODE_REF {
                        if let Some(name) = items::inode_refs(data).first() {
                            next = Some((k.offset, String::from_utf8_lossy(name).into_owned()));
                        }
                    }
                    false
                },
            );
            let Some((parent, name)) = next else { break };
            out.push(name);
            dir = parent;
        }
        out
    }

    /// What `uffs info` shows.
    pub fn facts(&self) -> Vec<(String, String)> {
        let sb = &self.sb;
        let mut f = vec![("file system".to_string(), "Btrfs".to_string())];
        if let Some(s) = self
            .state
            .and_then(|id| self.ranges.iter().find(|s| s.id == id))
        {
            let mut t = format!("subvolume {} ({})", s.id, self.subvolume_path(s.id));
            if s.root.flags & items::ROOT_SUBVOL_RDONLY != 0 {
                t += ", read-only";
            }
            f.push(("read alone".into(), t));
        }
        f.extend([
            ("label".to_string(), sb.label.clone()),
            ("uuid".into(), uffs_fs::uuid_text(&sb.fsid)),
            ("generation".into(), sb.generation.to_string()),
            ("features".into(), sb.feature_names().join(" ")),
            (
                "sector and node size".into(),
                format!("{} and {} bytes", sb.sectorsize, sb.nodesize),
            ),
            ("checksum".into(), sb.csum_name()),
            (
                "devices".into(),
                format!(
                    "{} (this is device {}, {} bytes)",
                    sb.num_devices, sb.devid, sb.dev_total_bytes
                ),
            ),
        ]);
        for (name, u) in ["data", "metadata", "system"].iter().zip(self.usage) {
            if u.size > 0 {
                f.push((
                    (*name).into(),
                    format!("{}: {} bytes used of {}", u.profile, u.used, u.size),
                ));
            }
        }
        let space = self.space();
        f.push((
            "used".into(),
            format!(
                "{} bytes on this device (each copy counted) of {}",
                space.bytes_in_use, space.bytes_total
            ),
        ));
        if sb.log_root != 0 {
            f.push((
                "log tree".into(),
                "present: what was fsync'd after the last commit is replayed at the next mount, and not read here"
                    .into(),
            ));
        }
        let subs: Vec<String> = self
            .subvolumes
            .iter()
            .filter(|s| s.id != objectid::FS_TREE)
            .map(|s| {
                let mut t = format!("{} {}", s.id, self.subvolume_path(s.id));
                if s.root.is_snapshot() {
                    let of = self
                        .subvolumes
                        .iter()
                        .find(|o| o.root.uuid == s.root.parent_uuid)
                        .map_or("a subvolume since deleted".to_string(), |o| {
                            if o.id == objectid::FS_TREE {
                                "the top level".into()
                            } else {
                                self.subvolume_path(o.id)
                            }
                        });
                    t += &format!(" (snapshot of {of}");
                    if s.root.flags & items::ROOT_SUBVOL_RDONLY != 0 {
                        t += ", read-only";
                    }
                    t += ")";
                } else if s.root.flags & items::ROOT_SUBVOL_RDONLY != 0 {
                    t += " (read-only)";
                }
                t
            })
            .collect();
        if !self.left_out.is_empty() {
            f.push(("subvolumes left out".into(), self.left_out.join("; ")));
        }
        f.push((
            "subvolumes".into(),
            if subs.is_empty() {
                "none but the top level".into()
            } else {
                subs.join("; ")
            },
        ));
        f
    }

    /// Every entry: one per name of each inode of each subvolume, placed where the kernel shows it.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(opts, &mut |batch: Vec<Entry>| entries.extend(batch))?;
        Ok(Scan {
            root: self.root(),
            entries,
            warnings,
            space: self.space(),
        })
    }

    /// The root folder's id: the top-level subvolume's root folder.
    pub fn root(&self) -> u64 {
        self.ranges
            .first()
            .map_or(objectid::FIRST_FREE, |s| s.base + s.root.root_dirid)
    }
}

/// Btrfs as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "Btrfs"
    }

    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        probe(head).then_some(uffs_fs::FileSystem::Btrfs)
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

impl<R: ReadAt + 'static> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        uffs_fs::FileSystem::Btrfs
    }

    fn serial(&self) -> u64 {
        Volume::serial(self)
    }

    fn root(&self) -> u64 {
        Volume::root(self)
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

    fn scan_sorted(&self, opts: &ScanOptions, sink: &mut dyn uffs_fs::Sink) -> Result<Vec<String>> {
        Volume::scan_sorted(self, opts, sink)
    }

    fn states(&self) -> Vec<uffs_fs::State> {
        Volume::states(self)
    }

    fn state(&self, id: u64) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::state(self, id)?))
    }
}
