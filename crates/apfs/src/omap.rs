//! Object maps (`omap_phys_t`, Apple File System Reference, "Object Maps"): a physical B-tree from (virtual
//! object id, transaction) to the block that holds that version of the object. The container has one (for
//! its volumes' superblocks), each volume another (for its trees' nodes). Read whole into a sorted table: a
//! volume's map has one entry per node of its trees, and the sweep of the file-system tree asks it once per
//! node.

use crate::btree::{self, Node};
use crate::object::{self, kind};
use crate::{le32, le64, Error, ReadAt, Result};

/// `ov_flags`: the mapping was deleted in this transaction.
const DELETED: u32 = 0x1;
/// The object is encrypted.
pub const ENCRYPTED: u32 = 0x4;

/// One mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mapping {
    pub oid: u64,
    pub xid: u64,
    pub flags: u32,
    pub paddr: u64,
}

/// An object map read whole.
#[derive(Debug, Clone, Default)]
pub struct Omap {
    /// Sorted by (oid, xid).
    pub entries: Vec<Mapping>,
    /// The transactions its snapshots were taken at (`omap_snapshot_t` keys).
    pub snapshots: Vec<u64>,
}

impl Omap {
    /// Reads the object map whose `omap_phys_t` is block `paddr`.
    pub fn read<R: ReadAt + ?Sized>(
        dev: &R,
        block_size: u64,
        paddr: u64,
        warnings: &mut Vec<String>,
    ) -> Result<Omap> {
        let b = btree::read_block(dev, paddr, block_size)?;
        if !object::valid(&b) {
            return Err(Error::new(format!(
                "object map (block {paddr}): its checksum is wrong"
            )));
        }
        let h = object::Header::parse(&b);
        if h.kind != kind::OMAP {
            return Err(Error::new(format!(
                "block {paddr} holds no object map (type {:#x})",
                h.kind
            )));
        }
        let tree = le64(&b, 48);
        let snapshot_tree = le64(&b, 56);
        let mut omap = Omap {
            entries: read_fixed(
                dev,
                block_size,
                tree,
                (16, 16),
                warnings,
                |k, v, out: &mut Vec<Mapping>| {
                    out.push(Mapping {
                        oid: le64(k, 0),
                        xid: le64(k, 8),
                        flags: le32(v, 0),
                        paddr: le64(v, 8),
                    })
                },
            )?,
            snapshots: Vec::new(),
        };
        if snapshot_tree != 0 && le32(&b, 36) != 0 {
            omap.snapshots = read_fixed(
                dev,
                block_size,
                snapshot_tree,
                (8, 16),
                warnings,
                |k, _, out| out.push(le64(k, 0)),
            )?;
        }
        omap.entries.sort_unstable();
        Ok(omap)
    }

    /// The block holding object `oid` as of transaction `xid` (its newest version no later); `None` when the
    /// map has none, or it was deleted.
    pub fn lookup(&self, oid: u64, xid: u64) -> Option<u64> {
        let end = self
            .entries
            .partition_point(|m| (m.oid, m.xid) <= (oid, xid));
        let m = self.entries[..end].last()?;
        (m.oid == oid && m.flags & DELETED == 0).then_some(m.paddr)
    }

    /// Whether the newest version of `oid` as of `xid` is marked encrypted.
    pub fn encrypted(&self, oid: u64, xid: u64) -> bool {
        let end = self
            .entries
            .partition_point(|m| (m.oid, m.xid) <= (oid, xid));
        self.entries[..end]
            .last()
            .is_some_and(|m| m.oid == oid && m.flags & ENCRYPTED != 0)
    }
}

/// Every entry of the physical, fixed-size B-tree rooted at block `root` (key and leaf value sizes `sizes`),
/// each made by `take`.
fn read_fixed<R: ReadAt + ?Sized, T>(
    dev: &R,
    block_size: u64,
    root: u64,
    sizes: (usize, usize),
    warnings: &mut Vec<String>,
    take: impl Fn(&[u8], &[u8], &mut Vec<T>),
) -> Result<Vec<T>> {
    let leaves = btree::leaves(dev, block_size, root, &|oid| Some(oid), warnings)?;
    let mut out = Vec::new();
    for paddr in leaves {
        let b = btree::read_block(dev, paddr, block_size)?;
        let node = match Node::parse(&b, Some(sizes)) {
            Ok(n) => n,
            Err(e) => {
                warnings.push(format!("object map node {paddr}: {e}"));
                continue;
            }
        };
        for i in 0..node.count {
            if let Some((k, v)) = node.entry(i) {
                take(k, v, &mut out);
            }
        }
    }
    Ok(out)
}
