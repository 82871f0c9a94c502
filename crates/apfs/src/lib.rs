//! APFS, read from its own tables with no mount: every volume of a container in the file-system-neutral form
//! ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! A container's superblock names its object map and its volumes; each volume keeps an object map of its
//! own, through which its file-system B-tree's nodes are found. That tree is keyed by object id, so a sweep of
//! its leaves is the volume's MFT: inodes, names, extents, attributes. Snapshots are earlier transactions of a
//! volume that its object map keeps.
//!
//! * [`object`]: the header and checksum every object has;
//! * [`container`]: the container superblock, its checkpoint, the space manager's count;
//! * [`omap`]: object maps, read whole;
//! * [`btree`]: nodes and the walk to a tree's leaves;
//! * [`volume`]: a volume's superblock;
//! * [`records`]: the file-system tree's records;
//! * `scan`: the entries.
//!
//! A container read whole lists each volume as a folder under its root (id 1), named as the volume is; a
//! volume's ids are then its inode numbers plus the sum of the ranges of the volumes before it (each as large as
//! the inode numbers it has handed out: `apfs_next_obj_id`), all within the 2^32 records an index holds. A
//! volume read alone (`SOURCE@N`, or a snapshot of it) has the inode numbers as ids, as The Sleuth Kit numbers
//! them; so does the first volume of a container read whole.

pub mod btree;
pub mod container;
pub mod object;
pub mod omap;
pub mod records;
mod scan;
pub mod volume;

use std::sync::Arc;

pub use uffs_fs::{Entry, Error, ReadAt, Result, Run, Scan, ScanOptions, Space};

use omap::Omap;
use records::Snapshot;

pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The most ids a container read whole gives its volumes together (an index's records).
const IDS: u64 = 1 << 32;
/// The root of a container read whole (volumes are folders in it).
pub const CONTAINER_ROOT: u64 = 1;

/// One volume of a container, opened.
pub struct Volume {
    /// Its position in the container's list (from 0).
    pub index: usize,
    pub superblock: volume::Superblock,
    pub omap: Omap,
    /// Its snapshots, oldest first.
    pub snapshots: Vec<Snapshot>,
    /// Its name, made unique in the container (a second `Data` is `Data 2`).
    pub name: String,
    /// Its ids in a container read whole: inode numbers from `base`, below `base + span`; `None` when they do
    /// not fit an index beside the volumes before it.
    pub ids: Option<(u64, u64)>,
}

/// An opened container: its newest checkpoint, its volumes.
pub struct Container {
    dev: Box<dyn ReadAt>,
    pub superblock: container::Superblock,
    /// The space manager's free blocks.
    free: Option<u64>,
    pub volumes: Vec<Volume>,
    /// What was wrong opening it (volumes that cannot be read …).
    open_warnings: Vec<String>,
}

impl Container {
    /// Opens the container whose first block is at offset 0 of `dev`.
    pub fn open(dev: Box<dyn ReadAt>) -> Result<Container> {
        let mut head = vec![0u8; 4096];
        dev.read_exact_at(&mut head, 0)
            .map_err(|e| Error::new(format!("container superblock: {e}")))?;
        let first = container::probe(&head)
            .ok_or_else(|| Error::new("no APFS container superblock (NXSB) at block 0"))?;
        let mut warnings = Vec::new();
        let (sb, maps) = container::newest(&*dev, first, &mut warnings)?;
        let bs = u64::from(sb.block_size);
        if sb.block_count.saturating_mul(bs) > dev.len() {
            warnings.push(format!(
                "{}{} bytes of a container of {}",
                uffs_fs::SHORT_IMAGE,
                dev.len(),
                sb.block_count * bs
            ));
        }
        let xid = sb.header.xid;
        let omap = Omap::read(&*dev, bs, sb.omap_oid, &mut warnings)
            .map_err(|e| Error::new(format!("the container's object map: {e}")))?;
        let free = container::free_blocks(&*dev, &sb, &maps);
        let mut volumes: Vec<Volume> = Vec::new();
        for (index, &oid) in sb.volumes.iter().enumerate() {
            if oid == 0 {
                continue;
            }
            match open_volume(&*dev, bs, &omap, oid, xid, index, &mut warnings) {
                Ok(mut v) => {
                    let taken = |n: &str| volumes.iter().any(|o| o.name == n);
                    if v.name.is_empty() {
                        v.name = format!("Volume {}", index + 1);
                    }
                    if taken(&v.name) {
                        let mut k = 2;
                        while taken(&format!("{} {k}", v.name)) {
                            k += 1;
                        }
                        v.name = format!("{} {k}", v.name);
                    }
                    let base = volumes
                        .iter()
                        .filter_map(|o| o.ids)
                        .map(|(b, s)| b + s)
                        .max()
                        .unwrap_or(0);
                    let span = v.superblock.next_obj_id.max(records::ROOT + 1);
                    v.ids = (base.checked_add(span).is_some_and(|end| end <= IDS))
                        .then_some((base, span));
                    volumes.push(v);
                }
                // Its entries are missing: the build is partial.
                Err(e) => warnings.push(format!(
                    "{}volume {} of the container ({e})",
                    uffs_fs::UNREADABLE,
                    index + 1
                )),
            }
        }
        Ok(Container {
            dev,
            superblock: sb,
            free,
            volumes,
            open_warnings: warnings,
        })
    }

    pub fn block_size(&self) -> u64 {
        u64::from(self.superblock.block_size)
    }

    /// The container's space as its space manager counts it.
    pub fn space(&self) -> Space {
        let bs = self.block_size();
        let total = self.superblock.block_count;
        let used = total - self.free.unwrap_or(0).min(total);
        Space {
            cluster_size: bs,
            clusters_total: total,
            clusters_in_use: used,
            bytes_in_use: used * bs,
            bytes_total: total * bs,
        }
    }

    /// The entries of volume `v` as of snapshot `at` (its current state when `None`), to `out`.
    fn scan_volume(
        &self,
        v: &Volume,
        at: Option<&Snapshot>,
        out: scan::Out<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if v.superblock.encrypted() {
            return Err(Error::new(format!(
                "volume {} is encrypted (FileVault, or a Mac's own key): uffs reads no encrypted APFS volume; \
                 unlock it on a Mac and image it from there",
                v.name
            )));
        }
        let bs = self.block_size();
        let (sb, xid) = match at {
            None => (v.superblock.clone(), self.superblock.header.xid),
            Some(s) => {
                let b = btree::read_block(&*self.dev, s.superblock, bs)?;
                let sb = volume::Superblock::parse(&b)
                    .filter(|_| object::valid(&b))
                    .ok_or_else(|| {
                        Error::new(format!(
                            "snapshot {} of volume {}: block {} holds no volume superblock",
                            s.name, v.name, s.superblock
                        ))
                    })?;
                (sb, s.xid)
            }
        };
        let physical = sb.physical_tree();
        let omap = &v.omap;
        let resolve = move |oid: u64| {
            if physical {
                Some(oid)
            } else {
                omap.lookup(oid, xid)
            }
        };
        let root = resolve(sb.root_tree_oid).ok_or_else(|| {
            Error::new(format!(
                "volume {}: its object map does not hold the file-system tree's root ({})",
                v.name, sb.root_tree_oid
            ))
        })?;
        let tree = scan::Tree {
            dev: &*self.dev,
            block_size: bs,
            root,
            resolve: &resolve,
            hashed: sb.hashed_names(),
        };
        let mut w = Vec::new();
        let got = scan::scan(&tree, out, &mut w);
        warnings.extend(w.into_iter().map(|w| format!("volume {}: {w}", v.name)));
        got.map_err(|e| Error::new(format!("volume {}: {e}", v.name)))
    }

    /// What `uffs info` shows of the container.
    fn container_facts(&self) -> Vec<(String, String)> {
        let sb = &self.superblock;
        let space = self.space();
        let mut f = vec![
            (
                "file system".to_string(),
                format!("APFS container, {} volumes", self.volumes.len()),
            ),
            ("container uuid".into(), uffs_fs::uuid_text(&sb.uuid)),
            ("block size".into(), format!("{} bytes", sb.block_size)),
            (
                "used".into(),
                match self.free {
                    Some(free) => format!(
                        "{} bytes in {} blocks of {} (per the space manager: {free} free)",
                        space.bytes_in_use, space.clusters_in_use, space.clusters_total
                    ),
                    None => format!(
                        "unknown (the space manager cannot be read); {} blocks",
                        sb.block_count
                    ),
                },
            ),
            (
                "checkpoint".into(),
                format!("transaction {}", sb.header.xid),
            ),
        ];
        for (pos, v) in self.volumes.iter().enumerate() {
            f.push((format!("@{}", pos + 1), describe(v)));
            if !v.snapshots.is_empty() {
                f.push((format!("@{} snapshots", pos + 1), snapshot_list(v)));
            }
        }
        f
    }
}

/// One line of what a volume is.
fn describe(v: &Volume) -> String {
    let sb = &v.superblock;
    let mut s = format!(
        "{} ({}), names case-{}sensitive, {} files, {} folders, {} symlinks, {} snapshots, uuid {}",
        v.name,
        sb.role_name(),
        if sb.case_sensitive() { "" } else { "in" },
        sb.files,
        sb.directories,
        sb.symlinks,
        v.snapshots.len(),
        uffs_fs::uuid_text(&sb.uuid)
    );
    if sb.encrypted() {
        s.push_str(", ENCRYPTED (not read)");
    }
    if sb.incompatible & volume::incompat::SEALED != 0 {
        s.push_str(", sealed");
    }
    s
}

/// A volume's snapshots as `--snapshots` names them: `snap1234 Before update (2026-12-01T10:00:00Z)`, ….
fn snapshot_list(v: &Volume) -> String {
    v.snapshots
        .iter()
        .map(|s| {
            let mut t = String::new();
            uffs_fs::time::format_iso(s.created, &mut t);
            format!("snap{} {} ({t})", s.xid, s.name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opens the volume whose superblock has virtual id `oid` in the container's object map.
fn open_volume(
    dev: &dyn ReadAt,
    bs: u64,
    container_omap: &Omap,
    oid: u64,
    xid: u64,
    index: usize,
    warnings: &mut Vec<String>,
) -> Result<Volume> {
    let paddr = container_omap.lookup(oid, xid).ok_or_else(|| {
        Error::new(format!(
            "its superblock ({oid}) is not in the container's object map"
        ))
    })?;
    let b = btree::read_block(dev, paddr, bs)?;
    if !object::valid(&b) {
        return Err(Error::new(format!(
            "its superblock (block {paddr}) has a wrong checksum"
        )));
    }
    let sb = volume::Superblock::parse(&b)
        .ok_or_else(|| Error::new(format!("block {paddr} holds no volume superblock (APSB)")))?;
    let omap = Omap::read(dev, bs, sb.omap_oid, warnings)
        .map_err(|e| Error::new(format!("its object map: {e}")))?;
    let mut snapshots = Vec::new();
    if sb.snap_meta_tree_oid != 0 && sb.snapshots > 0 {
        let physical = sb.snap_meta_tree_type & object::STORAGE_MASK == object::PHYSICAL;
        let root = if physical {
            Some(sb.snap_meta_tree_oid)
        } else {
            omap.lookup(sb.snap_meta_tree_oid, xid)
        };
        let resolve = |o: u64| {
            if physical {
                Some(o)
            } else {
                omap.lookup(o, xid)
            }
        };
        match root.map(|r| btree::leaves(dev, bs, r, &resolve, warnings)) {
            Some(Ok(leaves)) => {
                for paddr in leaves {
                    let Ok(b) = btree::read_block(dev, paddr, bs) else {
                        continue;
                    };
                    let Ok(node) = btree::Node::parse(&b, None) else {
                        continue;
                    };
                    for i in 0..node.count {
                        let Some((k, v)) = node.entry(i) else {
                            continue;
                        };
                        if let Some((sxid, records::kind::SNAP_METADATA)) = records::split_key(k) {
                            snapshots.extend(Snapshot::parse(sxid, v));
                        }
                    }
                }
            }
            Some(Err(e)) => warnings.push(format!("{}: snapshots: {e}", sb.name)),
            None => warnings.push(format!(
                "{}: the snapshot tree is not in its object map",
                sb.name
            )),
        }
        snapshots.sort_by_key(|s| s.xid);
    }
    Ok(Volume {
        index,
        name: sb.name.clone(),
        superblock: sb,
        omap,
        snapshots,
        ids: None,
    })
}

/// A container read whole, or one volume of it (as of a snapshot).
pub struct Reader {
    container: Arc<Container>,
    /// The volume read alone (a position in `container.volumes`); `None`: all of them.
    volume: Option<usize>,
    snapshot: Option<u64>,
}

impl Reader {
    pub fn open(dev: Box<dyn ReadAt>) -> Result<Reader> {
        Ok(Reader {
            container: Arc::new(Container::open(dev)?),
            volume: None,
            snapshot: None,
        })
    }

    pub fn container(&self) -> &Container {
        &self.container
    }

    fn alone(&self) -> Option<&Volume> {
        self.volume.map(|i| &self.container.volumes[i])
    }

    fn snapshot(&self) -> Option<&Snapshot> {
        let id = self.snapshot?;
        self.alone()?.snapshots.iter().find(|s| s.xid == id)
    }

    /// The volumes' entries (or the one volume's), to `emit` in id order; the warnings.
    pub fn entries(&self, emit: &mut dyn FnMut(Entry)) -> Result<Vec<String>> {
        let c = &self.container;
        let mut warnings = c.open_warnings.clone();
        if let Some(v) = self.alone() {
            let out = scan::Out {
                base: 0,
                span: u64::MAX,
                root_name: "",
                root_parent: None,
                emit,
            };
            c.scan_volume(v, self.snapshot(), out, &mut warnings)?;
            return Ok(warnings);
        }
        emit(Entry {
            id: CONTAINER_ROOT,
            parent: CONTAINER_ROOT,
            kind: uffs_fs::Kind::Folder,
            attributes: uffs_fs::attr::DIRECTORY,
            ..Entry::default()
        });
        for (pos, v) in c.volumes.iter().enumerate() {
            let Some((base, span)) = v.ids else {
                warnings.push(format!(
                    "{}/{} (its inode numbers do not fit an index beside the volumes before it: read it alone \
                     (@{}))",
                    uffs_fs::UNREADABLE,
                    v.name,
                    pos + 1
                ));
                continue;
            };
            let out = scan::Out {
                base,
                span,
                root_name: &v.name,
                root_parent: Some(CONTAINER_ROOT),
                emit: &mut *emit,
            };
            match c.scan_volume(v, None, out, &mut warnings) {
                Ok(()) => {}
                Err(e) => {
                    // Listed, and the build is partial.
                    warnings.push(format!("{}/{} ({e})", uffs_fs::UNREADABLE, v.name));
                    emit(Entry {
                        id: base + records::ROOT,
                        parent: CONTAINER_ROOT,
                        name: v.name.clone(),
                        kind: uffs_fs::Kind::Folder,
                        attributes: uffs_fs::attr::DIRECTORY,
                        ..Entry::default()
                    });
                }
            }
        }
        Ok(warnings)
    }

    fn serial_of(uuid: &[u8; 16]) -> u64 {
        le64(uuid, 0) ^ le64(uuid, 8)
    }
}

/// APFS as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "APFS"
    }

    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        container::probe(head).map(|_| uffs_fs::FileSystem::Apfs)
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        container::probe(head).map(|sb| sb.bytes())
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Reader::open(device)?))
    }
}

impl uffs_fs::Reader for Reader {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        uffs_fs::FileSystem::Apfs
    }

    fn serial(&self) -> u64 {
        match self.alone() {
            Some(v) => Reader::serial_of(&v.superblock.uuid),
            None => Reader::serial_of(&self.container.superblock.uuid),
        }
    }

    fn root(&self) -> u64 {
        if self.volume.is_some() {
            records::ROOT
        } else {
            CONTAINER_ROOT
        }
    }

    fn facts(&self) -> Vec<(String, String)> {
        let c = &self.container;
        let Some(v) = self.alone() else {
            return c.container_facts();
        };
        let mut f = vec![
            (
                "file system".to_string(),
                format!(
                    "APFS volume {} of a container of {}",
                    v.index + 1,
                    c.volumes.len()
                ),
            ),
            ("volume".into(), describe(v)),
            (
                "container uuid".into(),
                uffs_fs::uuid_text(&c.superblock.uuid),
            ),
            (
                "block size".into(),
                format!("{} bytes", c.superblock.block_size),
            ),
            (
                "used".into(),
                format!(
                    "{} bytes in {} blocks (the volume's count)",
                    v.superblock.alloc_blocks * c.block_size(),
                    v.superblock.alloc_blocks
                ),
            ),
            ("formatted by".into(), v.superblock.formatted_by.clone()),
            (
                "times".into(),
                "created, modified, changed, accessed (to the nanosecond, UTC)".into(),
            ),
        ];
        match self.snapshot() {
            Some(s) => f.push((
                "snapshot".into(),
                format!("{} (transaction {})", s.name, s.xid),
            )),
            None if !v.snapshots.is_empty() => f.push(("snapshots".into(), snapshot_list(v))),
            None => {}
        }
        f
    }

    fn space(&self) -> Option<Space> {
        let c = &self.container;
        let mut space = c.space();
        if let Some(v) = self.alone() {
            space.clusters_in_use = v.superblock.alloc_blocks;
            space.bytes_in_use = v.superblock.alloc_blocks * c.block_size();
        }
        Some(space)
    }

    fn scan(&self, _opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.entries(&mut |e| entries.push(e))?;
        Ok(Scan {
            root: uffs_fs::Reader::root(self),
            entries,
            warnings,
            space: uffs_fs::Reader::space(self).unwrap_or_default(),
        })
    }

    fn scan_sorted(
        &self,
        _opts: &ScanOptions,
        sink: &mut dyn uffs_fs::Sink,
    ) -> Result<Vec<String>> {
        let mut batch = Vec::with_capacity(uffs_fs::BATCH_ENTRIES);
        let warnings = self.entries(&mut |e| {
            batch.push(e);
            if batch.len() == uffs_fs::BATCH_ENTRIES {
                sink.take(std::mem::replace(
                    &mut batch,
                    Vec::with_capacity(uffs_fs::BATCH_ENTRIES),
                ));
            }
        })?;
        if !batch.is_empty() {
            sink.take(batch);
        }
        Ok(warnings)
    }

    fn expected_entries(&self) -> Option<u64> {
        let vols: Vec<&Volume> = match self.alone() {
            Some(v) => vec![v],
            None => self.container.volumes.iter().collect(),
        };
        Some(
            vols.iter()
                .map(|v| {
                    let s = &v.superblock;
                    s.files + s.directories + s.symlinks + s.other + 1
                })
                .sum::<u64>()
                + 1,
        )
    }

    fn states(&self) -> Vec<uffs_fs::State> {
        let vols: Vec<&Volume> = match self.alone() {
            Some(v) => vec![v],
            None => self.container.volumes.iter().collect(),
        };
        vols.iter()
            .flat_map(|v| {
                v.snapshots.iter().map(|s| uffs_fs::State {
                    id: s.xid,
                    name: format!("{}: {}", v.name, s.name),
                    created: s.created,
                    read_only: true,
                    snapshot: true,
                })
            })
            .collect()
    }

    fn state(&self, id: u64) -> Result<Box<dyn uffs_fs::Reader>> {
        let c = &self.container;
        let found = c
            .volumes
            .iter()
            .enumerate()
            .filter(|(i, _)| self.volume.is_none_or(|v| v == *i))
            .find(|(_, v)| v.snapshots.iter().any(|s| s.xid == id));
        match found {
            Some((i, _)) => Ok(Box::new(Reader {
                container: self.container.clone(),
                volume: Some(i),
                snapshot: Some(id),
            })),
            None => Err(Error::new(format!(
                "no APFS snapshot was taken at transaction {id} (snap{id}); its snapshots: {}",
                describe_states(&uffs_fs::Reader::states(self))
            ))),
        }
    }

    fn volumes(&self) -> Vec<String> {
        if self.volume.is_some() {
            return Vec::new();
        }
        self.container
            .volumes
            .iter()
            .map(|v| v.name.clone())
            .collect()
    }

    fn volume(&self, n: u32) -> Result<Box<dyn uffs_fs::Reader>> {
        let c = &self.container;
        if n == 0 || n as usize > c.volumes.len() {
            return Err(Error::new(format!(
                "the APFS container has no volume {n} (volumes: {})",
                c.volumes
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("@{} {}", i + 1, v.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(Box::new(Reader {
            container: self.container.clone(),
            volume: Some(n as usize - 1),
            snapshot: None,
        }))
    }
}

fn describe_states(states: &[uffs_fs::State]) -> String {
    if states.is_empty() {
        return "none".into();
    }
    states
        .iter()
        .map(|s| format!("snap{} {}", s.id, s.name))
        .collect::<Vec<_>>()
        .join(", ")
}
