//! Btrfs's B-trees: nodes and leaves, keys, and the walk of a whole tree in key order (each leaf's items
//! handed to a visitor), or of its part from a key on.
//!
//! A node is `nodesize` bytes at a logical address: a 101-byte header (checksum, fsid, its own address, owner
//! tree, item count, level), then at level 0 items (key, data offset and size; the data packed at the leaf's
//! end) and above it key pointers (key, child address, generation). Leaves that lie next to each other on the
//! device are read together.

use uffs_fs::ReadAt;

use crate::chunk::ChunkMap;
use crate::sb::Superblock;
use crate::{le32, le64, Error, Result};

/// Item types (a key's middle byte).
pub mod key {
    pub const INODE_ITEM: u8 = 1;
    pub const INODE_REF: u8 = 12;
    pub const INODE_EXTREF: u8 = 13;
    pub const XATTR_ITEM: u8 = 24;
    pub const DIR_ITEM: u8 = 84;
    pub const DIR_INDEX: u8 = 96;
    pub const EXTENT_DATA: u8 = 108;
    pub const ROOT_ITEM: u8 = 132;
    pub const ROOT_BACKREF: u8 = 144;
    pub const ROOT_REF: u8 = 156;
    pub const BLOCK_GROUP_ITEM: u8 = 192;
    pub const CHUNK_ITEM: u8 = 228;
}

/// Well-known object ids: trees, and special inodes.
pub mod objectid {
    pub const ROOT_TREE: u64 = 1;
    pub const EXTENT_TREE: u64 = 2;
    pub const CHUNK_TREE: u64 = 3;
    /// The top-level subvolume's tree (subvolume 5).
    pub const FS_TREE: u64 = 5;
    pub const BLOCK_GROUP_TREE: u64 = 11;
    /// The first subvolume id and the first inode number of a file-system tree.
    pub const FIRST_FREE: u64 = 256;
    pub const LAST_FREE: u64 = -256i64 as u64;
    /// What a snapshot shows in place of a subvolume nested in the snapshotted one: an empty folder.
    pub const EMPTY_SUBVOL_DIR: u64 = 2;
}

pub const HEADER: usize = 101;
const ITEM: usize = 25;
const KEY_PTR: usize = 33;
/// Bytes of adjacent leaves read at once.
const READ_AHEAD: usize = 1 << 20;

/// A key: (object id, item type, offset), ordered in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Key {
    pub objectid: u64,
    pub kind: u8,
    pub offset: u64,
}

impl Key {
    pub fn new(objectid: u64, kind: u8, offset: u64) -> Key {
        Key {
            objectid,
            kind,
            offset,
        }
    }

    pub fn parse(b: &[u8], at: usize) -> Key {
        Key {
            objectid: le64(b, at),
            kind: b[at + 8],
            offset: le64(b, at + 9),
        }
    }
}

/// A tree's root: its node's logical address and level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root {
    pub bytenr: u64,
    pub level: u8,
}

/// Reads tree blocks of one device through the chunk map.
pub struct Trees<'a, R: ReadAt> {
    dev: &'a R,
    sb: &'a Superblock,
    chunks: &'a ChunkMap,
    /// The buffer leaves are read into, kept between reads: a fresh one each time cost the page faults and
    /// zeroing of every byte read.
    scratch: std::cell::RefCell<Vec<u8>>,
}

/// What a visitor says after an item: go on, or stop the walk.
pub type Go = bool;

impl<'a, R: ReadAt> Trees<'a, R> {
    pub fn new(dev: &'a R, sb: &'a Superblock, chunks: &'a ChunkMap) -> Self {
        Trees {
            dev,
            sb,
            chunks,
            scratch: Default::default(),
        }
    }

    /// The node at logical address `at`, checked to be that node at `level` of this file system.
    pub fn node(&self, at: u64, level: u8) -> Result<Vec<u8>> {
        let n = self.sb.nodesize as usize;
        let phys = self.chunks.physical(at, n as u64)?;
        let mut b = vec![0u8; n];
        self.dev
            .read_exact_at(&mut b, phys)
            .map_err(|e| Error::new(format!("tree block at logical {at}: {e}")))?;
        self.check(&b, at, level)?;
        Ok(b)
    }

    fn check(&self, b: &[u8], at: u64, level: u8) -> Result<()> {
        let n = b.len();
        if le64(b, 0x30) != at || b[0x20..0x30] != self.sb.metadata_uuid {
            return Err(Error::new(format!(
                "the tree block at logical {at} is not one (its header names another address or file system)"
            )));
        }
        if b[0x64] != level {
            return Err(Error::new(format!(
                "the tree block at logical {at} is at level {}, its parent says {level}",
                b[0x64]
            )));
        }
        let items = le32(b, 0x60) as usize;
        let each = if level == 0 { ITEM } else { KEY_PTR };
        if items > (n - HEADER) / each {
            return Err(Error::new(format!(
                "the tree block at logical {at} claims {items} items"
            )));
        }
        Ok(())
    }

    /// Every item of the tree at `root`, in key order: `visit(key, data)`; a block that cannot be read is a
    /// warning and its part of the tree is skipped.
    pub fn walk(
        &self,
        root: Root,
        warnings: &mut Vec<String>,
        visit: &mut dyn FnMut(Key, &[u8]) -> Go,
    ) -> Result<()> {
        self.walk_from(root, Key::default(), warnings, visit)
    }

    /// The items of the tree at `root` from the first whose key is at least `from`, in key order, until
    /// `visit` says stop.
    pub fn walk_from(
        &self,
        root: Root,
        from: Key,
        warnings: &mut Vec<String>,
        visit: &mut dyn FnMut(Key, &[u8]) -> Go,
    ) -> Result<()> {
        if root.level > 7 {
            return Err(Error::new(format!("a tree of {} levels", root.level)));
        }
        let top = self.node(root.bytenr, root.level)?;
        self.descend(&top, root.level, from, warnings, visit)
            .map(|_| ())
    }

    /// Walks the node `b` at `level`; false when the visitor stopped.
    fn descend(
        &self,
        b: &[u8],
        level: u8,
        from: Key,
        warnings: &mut Vec<String>,
        visit: &mut dyn FnMut(Key, &[u8]) -> Go,
    ) -> Result<Go> {
        let items = le32(b, 0x60) as usize;
        if level == 0 {
            return Ok(leaf_items(b, items, from, visit));
        }
        // The children that may hold keys from `from` on: from the last whose first key is not past it.
        let ptrs: Vec<(Key, u64)> = (0..items)
            .map(|i| {
                let at = HEADER + i * KEY_PTR;
                (Key::parse(b, at), le64(b, at + 17))
            })
            .collect();
        let first = ptrs.partition_point(|(k, _)| *k <= from).saturating_sub(1);
        let ptrs = &ptrs[first..];
        if level == 1 {
            return self.leaves(ptrs, from, warnings, visit);
        }
        for &(_, child) in ptrs {
            match self.node(child, level - 1) {
                Ok(c) => {
                    if !self.descend(&c, level - 1, from, warnings, visit)? {
                        return Ok(false);
                    }
                }
                Err(e) => warnings.push(e.to_string()),
            }
        }
        Ok(true)
    }

    /// The leaves `ptrs` point at, those next to each other on the device read in one go.
    fn leaves(
        &self,
        ptrs: &[(Key, u64)],
        from: Key,
        warnings: &mut Vec<String>,
        visit: &mut dyn FnMut(Key, &[u8]) -> Go,
    ) -> Result<Go> {
        let n = self.sb.nodesize as usize;
        let mut i = 0;
        while i < ptrs.len() {
            let start = match self.chunks.physical(ptrs[i].1, n as u64) {
                Ok(start) => start,
                Err(e) => {
                    warnings.push(e.to_string());
                    i += 1;
                    continue;
                }
            };
            let mut j = i + 1;
            while j < ptrs.len() && (j - i + 1) * n <= READ_AHEAD {
                match self.chunks.physical(ptrs[j].1, n as u64) {
                    Ok(p) if p == start + ((j - i) * n) as u64 => j += 1,
                    _ => break,
                }
            }
            let mut buf = self.scratch.take();
            buf.resize((j - i) * n, 0);
            if let Err(e) = self.dev.read_exact_at(&mut buf, start) {
                self.scratch.replace(buf);
                warnings.push(format!("tree blocks at logical {}: {e}", ptrs[i].1));
                i = j;
                continue;
            }
            for (k, b) in buf.chunks_exact(n).enumerate() {
                let at = ptrs[i + k].1;
                if let Err(e) = self.check(b, at, 0) {
                    warnings.push(e.to_string());
                    continue;
                }
                if !leaf_items(b, le32(b, 0x60) as usize, from, visit) {
                    self.scratch.replace(buf);
                    return Ok(false);
                }
            }
            self.scratch.replace(buf);
            i = j;
        }
        Ok(true)
    }

    /// The key of the last item of the tree at `root` not past `k`: down the right-most path that may hold it.
    pub fn last_at_most(&self, root: Root, k: Key) -> Result<Option<Key>> {
        let mut level = root.level;
        let mut b = self.node(root.bytenr, level)?;
        loop {
            let items = le32(&b, 0x60) as usize;
            let each = if level == 0 { ITEM } else { KEY_PTR };
            let keys = (0..items).map(|i| Key::parse(&b, HEADER + i * each));
            let Some(i) = keys.take_while(|key| *key <= k).count().checked_sub(1) else {
                return Ok(None);
            };
            if level == 0 {
                return Ok(Some(Key::parse(&b, HEADER + i * ITEM)));
            }
            let child = le64(&b, HEADER + i * KEY_PTR + 17);
            level -= 1;
            b = self.node(child, level)?;
        }
    }

    /// The data of the item with key `k` exactly, if the tree holds one.
    pub fn get(&self, root: Root, k: Key) -> Result<Option<Vec<u8>>> {
        let mut found = None;
        let mut warnings = Vec::new();
        self.walk_from(root, k, &mut warnings, &mut |key, data| {
            if key == k {
                found = Some(data.to_vec());
            }
            key < k
        })?;
        Ok(found)
    }
}

/// Hands the items of leaf `b` (`items` of them) from key `from` on to `visit`; false when it stopped.
fn leaf_items(b: &[u8], items: usize, from: Key, visit: &mut dyn FnMut(Key, &[u8]) -> Go) -> Go {
    for i in 0..items {
        let at = HEADER + i * ITEM;
        let key = Key::parse(b, at);
        if key < from {
            continue;
        }
        let off = HEADER + le32(b, at + 17) as usize;
        let len = le32(b, at + 21) as usize;
        let Some(data) = off.checked_add(len).and_then(|end| b.get(off..end)) else {
            // An item whose data lies outside its leaf: skipped, as damage.
            continue;
        };
        if !visit(key, data) {
            return false;
        }
    }
    true
}
