//! HFS+ and HFSX, read from their own tables with no mount: every entry of a volume in the file-system-neutral
//! form ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! HFS+ keeps every name in one B-tree, the catalog, keyed by (parent id, name): its leaves, swept left to right,
//! are the volume's MFT. A file's first eight extents are in its record, the rest in the extents overflow
//! B-tree; the allocation file is a bitmap of the blocks in use.
//!
//! * [`header`]: the volume header, its forks, and the HFS wrapper an older volume may sit in;
//! * [`btree`]: nodes, records, and the sweep of a tree's leaves;
//! * [`catalog`]: folder, file and thread records;
//! * [`names`]: names as a user types them (composed, `:` for the Finder's `/`);
//! * `scan`: the entries, hard links folded onto the file they name.
//!
//! Ids are catalog node ids (the root folder is 2), as The Sleuth Kit numbers them; a file with several names
//! (hard links) is its indirect node's id, with one entry per name.

pub mod btree;
pub mod catalog;
pub mod decmpfs;
pub mod header;
pub mod names;
mod scan;

use std::collections::HashMap;
use std::sync::OnceLock;

pub use uffs_fs::{Entry, Error, ReadAt, Result, Run, Scan, ScanOptions, Space};

use btree::{Layout, Tree};
use header::{Extent, ForkData, VolumeHeader};

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether a volume's first bytes hold an HFS+ or HFSX volume header, or an HFS wrapper around one.
pub fn probe(head: &[u8]) -> bool {
    header::embedded_at(head).is_some()
}

/// The volume's length as its header gives it (the wrapper's, for a wrapped volume).
pub fn volume_len(head: &[u8]) -> Option<u64> {
    let at = header::OFFSET as usize;
    let b = head.get(at..at + header::LEN)?;
    match be16(b, 0) {
        header::SIG_HFS => {
            // drNmAlBlks × drAlBlkSiz after drAlBlSt, and the two sectors at the end (the alternate MDB).
            let blocks = u64::from(be16(b, 0x12));
            let block = u64::from(be32(b, 0x14));
            Some(u64::from(be16(b, 0x1C)) * 512 + blocks * block + 1024)
        }
        _ => VolumeHeader::parse(b).ok().map(|h| h.volume_len()),
    }
}

/// The extents overflow file's records: a fork's extents past its record's eight, by (file id, fork type
/// 0 data or 0xFF resource), each record's first block in the fork and its eight extents, in fork order.
type Overflow = HashMap<(u32, u8), Vec<(u32, [Extent; 8])>>;

/// Fork types in the extents overflow file's keys.
pub const DATA_FORK: u8 = 0;
pub const RESOURCE_FORK: u8 = 0xFF;

/// An opened HFS+ or HFSX volume.
pub struct Volume<R: ReadAt> {
    dev: R,
    /// Where the HFS+ volume starts on `dev` (after an HFS wrapper's first blocks; 0 bare).
    base: u64,
    header: VolumeHeader,
    catalog: Tree,
    /// The attributes file (extended attributes; decmpfs headers), when the volume has one.
    attributes: Option<Tree>,
    overflow: Overflow,
    /// What was wrong reading the extents overflow and attributes files (the scan's first warnings).
    open_warnings: Vec<String>,
    /// [`Volume::space`], counted once (the allocation file is read whole for it).
    space: OnceLock<Space>,
}

impl<R: ReadAt> Volume<R> {
    /// Opens the volume (or the wrapper around one) whose first byte is offset 0 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut head = vec![0u8; header::OFFSET as usize + header::LEN];
        dev.read_exact_at(&mut head, 0)
            .map_err(|e| Error::new(format!("volume header: {e}")))?;
        let base = header::embedded_at(&head)
            .ok_or_else(|| Error::new("no HFS+ volume header (H+ or HX at byte 1,024)"))?;
        if base != 0 {
            dev.read_exact_at(&mut head[header::OFFSET as usize..], base + header::OFFSET)
                .map_err(|e| Error::new(format!("the wrapped volume's header: {e}")))?;
        }
        let header = VolumeHeader::parse(&head[header::OFFSET as usize..])?;
        let mut vol = Volume {
            dev,
            base,
            // Opened below, once the extents overflow file is read (the catalog may have extents there).
            catalog: Tree::default(),
            header,
            attributes: None,
            overflow: Overflow::new(),
            open_warnings: Vec::new(),
            space: OnceLock::new(),
        };
        // The extents file's own extents are all in the header (it cannot overflow into itself).
        let (layout, _) = vol.layout(catalog::cnid::EXTENTS, DATA_FORK, &vol.header.extents);
        if !layout.is_empty() {
            match Tree::open(&vol.dev, layout, "extents overflow") {
                Ok(tree) => {
                    let (overflow, warning) = read_overflow(&vol.dev, &tree);
                    vol.overflow = overflow;
                    vol.open_warnings.extend(warning);
                }
                Err(e) => vol.open_warnings.push(e.message),
            }
        }
        let (layout, warning) = vol.layout(catalog::cnid::CATALOG, DATA_FORK, &vol.header.catalog);
        if let Some(w) = warning {
            return Err(Error::new(format!("the catalog file: {w}")));
        }
        vol.catalog = Tree::open(&vol.dev, layout, "catalog")?;
        let (layout, warning) = vol.layout(
            catalog::cnid::ATTRIBUTES,
            DATA_FORK,
            &vol.header.attributes_file,
        );
        if !layout.is_empty() {
            match Tree::open(&vol.dev, layout, "attributes") {
                Ok(tree) => vol.attributes = Some(tree),
                Err(e) => vol.open_warnings.push(e.message),
            }
        }
        if let Some(w) = warning {
            vol.open_warnings.push(format!("the attributes file: {w}"));
        }
        Ok(vol)
    }

    pub fn header(&self) -> &VolumeHeader {
        &self.header
    }

    pub fn block_size(&self) -> u64 {
        u64::from(self.header.block_size)
    }

    /// Where fork `fork` (data or resource) of file `id`, whose record gives `data`, is on `dev`: byte runs in
    /// file order, at most its blocks long; and what was wrong (an extent past the volume, extents missing).
    pub fn layout(&self, id: u32, fork: u8, data: &ForkData) -> (Layout, Option<String>) {
        let bs = self.block_size();
        let total = u64::from(data.total_blocks);
        let mut runs = Vec::new();
        let mut blocks = 0u64;
        let mut warning = None;
        let mut add = |e: &Extent, blocks: &mut u64, warning: &mut Option<String>| -> bool {
            if e.count == 0 || *blocks >= total {
                return false;
            }
            let end = u64::from(e.start) + u64::from(e.count);
            if end > u64::from(self.header.total_blocks) {
                *warning = Some(format!(
                    "an extent of file {id} runs to block {end}, past the volume's {}",
                    self.header.total_blocks
                ));
                return false;
            }
            let count = u64::from(e.count).min(total - *blocks);
            runs.push((self.base + u64::from(e.start) * bs, count * bs));
            *blocks += count;
            true
        };
        let mut more = data
            .extents
            .iter()
            .all(|e| add(e, &mut blocks, &mut warning));
        if let Some(records) = self.overflow.get(&(id, fork)) {
            for (start, extents) in records {
                if !more || blocks >= total {
                    break;
                }
                if u64::from(*start) != blocks {
                    warning = Some(format!(
                        "file {id}'s extents overflow record starts at block {start}, not {blocks}"
                    ));
                    break;
                }
                more = extents.iter().all(|e| add(e, &mut blocks, &mut warning));
            }
        }
        if blocks < total && warning.is_none() {
            warning = Some(format!(
                "file {id}'s extents hold {blocks} of its {total} blocks"
            ));
        }
        (Layout { runs }, warning)
    }

    /// Blocks in use, counted in the allocation file's bitmap (`None` when it cannot be read).
    pub fn blocks_in_use(&self) -> Option<u64> {
        let (layout, warning) = self.layout(
            catalog::cnid::ALLOCATION,
            DATA_FORK,
            &self.header.allocation,
        );
        if warning.is_some() {
            return None;
        }
        let bits = u64::from(self.header.total_blocks);
        let bytes = bits.div_ceil(8);
        let mut used = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < bytes {
            let n = (bytes - at).min(buf.len() as u64) as usize;
            layout.read(&self.dev, &mut buf[..n], at).ok()?;
            let mut chunk = &buf[..n];
            if at + n as u64 == bytes && bits % 8 != 0 {
                // The last byte's bits past the volume's end are not blocks.
                let last = chunk[n - 1] >> (8 - bits % 8);
                used += u64::from(last.count_ones());
                chunk = &chunk[..n - 1];
            }
            used += chunk.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
            at += n as u64;
        }
        Some(used)
    }

    /// The space as the allocation file gives it (the header's free count when that cannot be read).
    pub fn space(&self) -> Space {
        *self.space.get_or_init(|| self.count_space())
    }

    fn count_space(&self) -> Space {
        let bs = self.block_size();
        let total = u64::from(self.header.total_blocks);
        let used = self
            .blocks_in_use()
            .unwrap_or(total - u64::from(self.header.free_blocks));
        Space {
            cluster_size: bs,
            clusters_total: total,
            clusters_in_use: used,
            bytes_in_use: used * bs,
            bytes_total: total * bs,
        }
    }

    /// The volume's name: its root folder's, the catalog's record keyed by the root's parent (the first leaf's
    /// first record, as the catalog sorts).
    pub fn label(&self) -> String {
        let Ok(bytes) = self
            .catalog
            .read_node(&self.dev, self.catalog.header.first_leaf)
        else {
            return String::new();
        };
        let Ok(node) = btree::Node::parse(&bytes) else {
            return String::new();
        };
        (0..node.len())
            .filter_map(|i| catalog::Key::parse(btree::split_record(node.record(i))?.0))
            .find(|k| k.parent == catalog::cnid::ROOT_PARENT)
            .map(|k| names::decode(k.name))
            .unwrap_or_default()
    }

    /// What `uffs info` shows.
    pub fn facts(&self) -> Vec<(String, String)> {
        let h = &self.header;
        let c = &self.catalog.header;
        let space = self.space();
        let mut f = vec![
            (
                "file system".to_string(),
                if h.is_hfsx() {
                    format!(
                        "HFSX (version {}), names {}",
                        h.version,
                        if c.compare == 0xBC {
                            "case-sensitive"
                        } else {
                            "case-insensitive"
                        }
                    )
                } else {
                    format!("HFS+ (version {}), names case-insensitive", h.version)
                },
            ),
            ("label".into(), self.label()),
            ("volume id".into(), format!("{:016x}", h.volume_id)),
            ("block size".into(), format!("{} bytes", h.block_size)),
            (
                "used".into(),
                format!(
                    "{} bytes in {} blocks of {} (per the allocation file); the header says {} free",
                    space.bytes_in_use, space.clusters_in_use, space.clusters_total, h.free_blocks
                ),
            ),
            (
                "files".into(),
                format!("{} files, {} folders (per the header)", h.file_count, h.folder_count),
            ),
            (
                "catalog".into(),
                format!(
                    "{} records in a B-tree of depth {}, nodes of {} bytes",
                    c.leaf_records, c.depth, c.node_size
                ),
            ),
            (
                "journal".into(),
                if h.is_journaled() {
                    "yes (not replayed: what it holds that the tables do not is not read)".into()
                } else {
                    "no".into()
                },
            ),
            (
                "last mounted by".into(),
                String::from_utf8_lossy(&h.last_mounted_version).into_owned(),
            ),
            (
                "state".into(),
                if h.attributes & header::attributes::UNMOUNTED != 0 {
                    "unmounted cleanly".into()
                } else {
                    "not unmounted cleanly (in use, or the Mac was not shut down)".into()
                },
            ),
            (
                "times".into(),
                "created, modified, changed, accessed (to the second, UTC)".into(),
            ),
        ];
        if self.base != 0 {
            f.push((
                "wrapper".into(),
                format!("inside an HFS volume, from byte {}", self.base),
            ));
        }
        f
    }

    /// Every entry: one per name of each file and folder, the volume's own files.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(opts, &mut |batch: Vec<Entry>| entries.extend(batch))?;
        Ok(Scan {
            root: u64::from(catalog::cnid::ROOT),
            entries,
            warnings,
            space: self.space(),
        })
    }
}

/// Every record of the extents overflow file, and what stopped the sweep early.
fn read_overflow<R: ReadAt>(dev: &R, tree: &Tree) -> (Overflow, Option<String>) {
    let mut map = Overflow::new();
    let warning = tree.sweep_leaves(dev, |_, node| {
        for i in 0..node.len() {
            let Some((key, data)) = btree::split_record(node.record(i)) else {
                continue;
            };
            if key.len() < 10 || data.len() < 64 {
                continue;
            }
            let mut extents = [Extent::default(); 8];
            for (j, e) in extents.iter_mut().enumerate() {
                e.start = be32(data, 8 * j);
                e.count = be32(data, 8 * j + 4);
            }
            map.entry((be32(key, 2), key[0]))
                .or_default()
                .push((be32(key, 6), extents));
        }
    });
    for records in map.values_mut() {
        records.sort_by_key(|r| r.0);
    }
    (
        map,
        warning.map(|w| format!("the extents overflow file: {w}")),
    )
}

/// HFS+ as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "HFS+, HFSX"
    }

    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        let at = header::OFFSET as usize;
        let base = header::embedded_at(head)?;
        // A wrapped volume is HFS+ (the wrapper names only `H+`).
        let sig = if base == 0 {
            be16(head, at)
        } else {
            header::SIG_HFSPLUS
        };
        Some(if sig == header::SIG_HFSX {
            uffs_fs::FileSystem::Hfsx
        } else {
            uffs_fs::FileSystem::HfsPlus
        })
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

impl<R: ReadAt> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        if self.header.is_hfsx() {
            uffs_fs::FileSystem::Hfsx
        } else {
            uffs_fs::FileSystem::HfsPlus
        }
    }

    fn serial(&self) -> u64 {
        self.header.volume_id
    }

    fn root(&self) -> u64 {
        u64::from(catalog::cnid::ROOT)
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

    fn expected_entries(&self) -> Option<u64> {
        Some(u64::from(self.header.file_count) + u64::from(self.header.folder_count) + 16)
    }
}
