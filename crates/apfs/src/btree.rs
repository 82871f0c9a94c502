//! APFS B-tree nodes (`btree_node_phys_t`, Apple File System Reference, "B-Trees"): a table of contents after
//! the node header, keys growing up from after it, values growing down from the node's end (before the tree's
//! `btree_info_t` in the root). Entries are fixed-size (object maps) or located by offset and length (a
//! volume's file-system tree). Index nodes' values are their children's object ids.

use crate::object::{self, Header};
use crate::{le16, le32, le64, Error, Result};

pub const ROOT: u16 = 0x1;
pub const LEAF: u16 = 0x2;
pub const FIXED_KV_SIZE: u16 = 0x4;

/// The `btree_info_t` at a root node's end.
const INFO_LEN: usize = 40;
/// Where the table of contents starts (`btn_data`).
const DATA: usize = 56;

/// One node, parsed over its block's bytes.
#[derive(Debug)]
pub struct Node<'a> {
    pub bytes: &'a [u8],
    pub header: Header,
    pub flags: u16,
    pub level: u16,
    pub count: usize,
    toc: usize,
    keys: usize,
    values_end: usize,
    /// Key and value sizes of a fixed-size tree's entries (the value's in a leaf; index values are 8 bytes).
    fixed: Option<(usize, usize)>,
}

impl<'a> Node<'a> {
    /// Parses a node; `fixed` gives a fixed-size tree's key and leaf value sizes, which only its root records.
    pub fn parse(bytes: &'a [u8], fixed: Option<(usize, usize)>) -> Result<Node<'a>> {
        if !object::valid(bytes) {
            return Err(Error::new("its checksum is wrong"));
        }
        let header = Header::parse(bytes);
        if header.kind != object::kind::BTREE && header.kind != object::kind::BTREE_NODE {
            return Err(Error::new(format!(
                "it is no B-tree node (type {:#x})",
                header.kind
            )));
        }
        let flags = le16(bytes, 32);
        let level = le16(bytes, 34);
        let count = le32(bytes, 36) as usize;
        let toc = DATA + usize::from(le16(bytes, 40));
        let toc_len = usize::from(le16(bytes, 42));
        let keys = toc + toc_len;
        let values_end = bytes.len() - if flags & ROOT != 0 { INFO_LEN } else { 0 };
        let per = if flags & FIXED_KV_SIZE != 0 { 4 } else { 8 };
        if keys > values_end || count * per > toc_len {
            return Err(Error::new(format!(
                "its table of contents ({count} entries in {toc_len} bytes) does not fit"
            )));
        }
        let fixed = (flags & FIXED_KV_SIZE != 0).then(|| fixed.unwrap_or((16, 16)));
        Ok(Node {
            bytes,
            header,
            flags,
            level,
            count,
            toc,
            keys,
            values_end,
            fixed,
        })
    }

    pub fn is_leaf(&self) -> bool {
        self.flags & LEAF != 0
    }

    /// Entry `i`'s key and value; `None` where they lie outside the node (or the value was removed).
    pub fn entry(&self, i: usize) -> Option<(&'a [u8], &'a [u8])> {
        let b = self.bytes;
        let (k, klen, v, vlen) = match self.fixed {
            Some((klen, vlen)) => {
                let at = self.toc + 4 * i;
                let vlen = if self.is_leaf() { vlen } else { 8 };
                (le16(b, at), klen, le16(b, at + 2), vlen)
            }
            None => {
                let at = self.toc + 8 * i;
                (
                    le16(b, at),
                    usize::from(le16(b, at + 2)),
                    le16(b, at + 4),
                    usize::from(le16(b, at + 6)),
                )
            }
        };
        if v == 0xFFFF {
            return None;
        }
        let key = b.get(self.keys + usize::from(k)..self.keys + usize::from(k) + klen)?;
        let start = self.values_end.checked_sub(usize::from(v))?;
        let value = b.get(start..start + vlen)?;
        Some((key, value))
    }

    /// Where entry `i`'s value starts in the node (for data located on the volume through the node).
    pub fn value_offset(&self, value: &[u8]) -> usize {
        value.as_ptr() as usize - self.bytes.as_ptr() as usize
    }

    /// An index node's child `i`: its object id.
    pub fn child(&self, i: usize) -> Option<u64> {
        let (_, v) = self.entry(i)?;
        (v.len() >= 8).then(|| le64(v, 0))
    }
}

/// Reads block `paddr` (of `block_size` bytes) of `dev`.
pub fn read_block<R: crate::ReadAt + ?Sized>(
    dev: &R,
    paddr: u64,
    block_size: u64,
) -> Result<Vec<u8>> {
    let mut b = vec![0u8; block_size as usize];
    let at = paddr
        .checked_mul(block_size)
        .ok_or_else(|| Error::new(format!("block {paddr} is past any volume")))?;
    dev.read_exact_at(&mut b, at)
        .map_err(|e| Error::new(format!("block {paddr}: {e}")))?;
    Ok(b)
}

/// The most levels a tree may have (APFS's are a handful deep; more is a loop).
pub const MAX_DEPTH: u16 = 16;

/// Every leaf of the tree whose root is at block `root`, in key order, as block addresses; `resolve` turns a
/// child's object id into its block (an object map's lookup for a virtual tree, itself for a physical one).
/// Index nodes that cannot be read are warnings (their leaves are missing), not errors.
pub fn leaves<R: crate::ReadAt + ?Sized>(
    dev: &R,
    block_size: u64,
    root: u64,
    resolve: &dyn Fn(u64) -> Option<u64>,
    warnings: &mut Vec<String>,
) -> Result<Vec<u64>> {
    let bytes = read_block(dev, root, block_size)?;
    let node = Node::parse(&bytes, None)
        .map_err(|e| Error::new(format!("root node (block {root}): {e}")))?;
    if node.level > MAX_DEPTH {
        return Err(Error::new(format!(
            "root node (block {root}) claims {} levels",
            node.level
        )));
    }
    let mut out = Vec::new();
    // Depth first, children in order: each level's nodes as a stack of (block, level expected).
    let mut stack = vec![(root, node.level)];
    while let Some((paddr, level)) = stack.pop() {
        if level == 0 {
            out.push(paddr);
            continue;
        }
        let bytes = match read_block(dev, paddr, block_size) {
            Ok(b) => b,
            Err(e) => {
                warnings.push(format!(
                    "index node {paddr}: {e} (the leaves below it are missing)"
                ));
                continue;
            }
        };
        let node = match Node::parse(&bytes, None) {
            Ok(n) if n.level == level && !n.is_leaf() => n,
            Ok(n) => {
                warnings.push(format!(
                    "index node {paddr}: level {} where {level} was expected (the leaves below it are missing)",
                    n.level
                ));
                continue;
            }
            Err(e) => {
                warnings.push(format!(
                    "index node {paddr}: {e} (the leaves below it are missing)"
                ));
                continue;
            }
        };
        for i in (0..node.count).rev() {
            match node.child(i).and_then(resolve) {
                Some(child) => stack.push((child, level - 1)),
                None => warnings.push(format!(
                    "index node {paddr}: child {i} cannot be found (the leaves below it are missing)"
                )),
            }
        }
    }
    Ok(out)
}
