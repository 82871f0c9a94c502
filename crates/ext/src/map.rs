//! Where a file's data is: its extent tree (ext4) or block map (ext2/3), as [`uffs_fs::Run`]s in file order with
//! holes, checked as they are read: a tree that loops, is deeper than the kernel allows or points past the
//! volume, and a map whose blocks lie outside it, stop the mapping with the reason instead of reading on.

use std::collections::HashSet;

use uffs_fs::Run;

use crate::{le16, le32, ReadAt};

const EXTENT_MAGIC: u16 = 0xF30A;
/// The kernel's limit on an extent tree's depth.
const MAX_DEPTH: u16 = 5;
/// An extent longer than this (in blocks) is an uninitialised one of `len - 32768` blocks: it reads as zeros.
const INIT_MAX: u16 = 32768;

/// A stretch of a file: `len` blocks from logical block `logical` at physical block `physical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    logical: u64,
    physical: u64,
    len: u64,
    /// Allocated but never written (reads as zeros).
    uninit: bool,
}

/// What a file's blocks are read through.
pub struct Mapper<'a> {
    pub dev: &'a dyn ReadAt,
    pub block_size: u64,
    pub blocks_count: u64,
}

impl Mapper<'_> {
    /// The runs of a file of `size` bytes whose `i_block` is `root`, through its extent tree (`extents`) or its
    /// block map; what could not be mapped is the error's reason (the runs then stop there).
    pub fn runs(&self, root: &[u8; 60], extents: bool, size: u64) -> Result<Vec<Run>, String> {
        let mut pieces = Vec::new();
        let blocks = size.div_ceil(self.block_size);
        if extents {
            let mut seen = HashSet::new();
            self.extent_node(root, None, &mut seen, &mut pieces)?;
        } else {
            self.block_map(root, blocks, &mut pieces)?;
        }
        pieces.sort_by_key(|p| p.logical);
        Ok(self.to_runs(&pieces, size))
    }

    fn check_block(&self, b: u64, what: &str) -> Result<(), String> {
        if b == 0 || b >= self.blocks_count {
            return Err(format!(
                "{what} points at block {b}, outside the volume's {} blocks",
                self.blocks_count
            ));
        }
        Ok(())
    }

    /// One node of an extent tree (`depth` is what its parent says it must be).
    fn extent_node(
        &self,
        node: &[u8],
        depth: Option<u16>,
        seen: &mut HashSet<u64>,
        out: &mut Vec<Piece>,
    ) -> Result<(), String> {
        if node.len() < 12 || le16(node, 0) != EXTENT_MAGIC {
            return Err("an extent tree node has no header (magic 0xF30A)".into());
        }
        let entries = usize::from(le16(node, 2));
        let max = usize::from(le16(node, 4));
        let d = le16(node, 6);
        if entries > max || 12 + max * 12 > node.len() || d > MAX_DEPTH {
            return Err(format!(
                "an extent tree node says {entries} entries of {max}, depth {d}, in {} bytes",
                node.len()
            ));
        }
        if depth.is_some_and(|want| want != d) {
            return Err(format!(
                "an extent tree node of depth {d} where its parent says {}",
                depth.unwrap_or(0)
            ));
        }
        for i in 0..entries {
            let e = &node[12 + i * 12..24 + i * 12];
            let logical = u64::from(le32(e, 0));
            if d == 0 {
                let raw = le16(e, 4);
                let (len, uninit) = if raw > INIT_MAX {
                    (raw - INIT_MAX, true)
                } else {
                    (raw, false)
                };
                let physical = u64::from(le16(e, 6)) << 32 | u64::from(le32(e, 8));
                let len = u64::from(len);
                if len == 0 {
                    continue;
                }
                self.check_block(physical, "an extent")?;
                if physical + len > self.blocks_count {
                    return Err(format!(
                        "an extent of {len} blocks at block {physical} runs past the volume's {} blocks",
                        self.blocks_count
                    ));
                }
                out.push(Piece {
                    logical,
                    physical,
                    len,
                    uninit,
                });
            } else {
                let child = u64::from(le16(e, 8)) << 32 | u64::from(le32(e, 4));
                self.check_block(child, "an extent index")?;
                if !seen.insert(child) {
                    return Err(format!("the extent tree loops: block {child} twice"));
                }
                let mut buf = vec![0u8; self.block_size as usize];
                self.dev
                    .read_exact_at(&mut buf, child * self.block_size)
                    .map_err(|e| format!("extent tree block {child}: {e}"))?;
                self.extent_node(&buf, Some(d - 1), seen, out)?;
            }
        }
        Ok(())
    }

    /// ext2/3's block map: 12 direct pointers, then single, double and triple indirect blocks, for the file's
    /// `blocks` logical blocks (a 0 pointer is a hole, and a 0 indirect pointer a hole of all it would map).
    fn block_map(&self, root: &[u8; 60], blocks: u64, out: &mut Vec<Piece>) -> Result<(), String> {
        let per = self.block_size / 4;
        let mut push = |logical: u64, physical: u64| match out.last_mut() {
            Some(p)
                if !p.uninit && p.logical + p.len == logical && p.physical + p.len == physical =>
            {
                p.len += 1
            }
            _ => out.push(Piece {
                logical,
                physical,
                len: 1,
                uninit: false,
            }),
        };
        for i in 0..12u64.min(blocks) {
            let b = u64::from(le32(root, i as usize * 4));
            if b != 0 {
                self.check_block(b, "a block map")?;
                push(i, b);
            }
        }
        let mut start = 12u64;
        let mut span = per;
        for level in 0..3usize {
            if start >= blocks {
                break;
            }
            let b = u64::from(le32(root, (12 + level) * 4));
            if b != 0 {
                self.indirect(b, level, start, blocks, &mut push)?;
            }
            start += span;
            span = span.saturating_mul(per);
        }
        Ok(())
    }

    /// An indirect block of `level` (0 single, 1 double, 2 triple) mapping logical blocks from `start`.
    fn indirect(
        &self,
        block: u64,
        level: usize,
        start: u64,
        blocks: u64,
        push: &mut dyn FnMut(u64, u64),
    ) -> Result<(), String> {
        self.check_block(block, "an indirect block")?;
        let per = self.block_size / 4;
        let mut buf = vec![0u8; self.block_size as usize];
        self.dev
            .read_exact_at(&mut buf, block * self.block_size)
            .map_err(|e| format!("indirect block {block}: {e}"))?;
        let span = per.pow(level as u32);
        for i in 0..per {
            let first = start + i * span;
            if first >= blocks {
                break;
            }
            let b = u64::from(le32(&buf, (i * 4) as usize));
            if b == 0 {
                continue;
            }
            if level == 0 {
                self.check_block(b, "a block map")?;
                push(first, b);
            } else {
                self.indirect(b, level - 1, first, blocks, push)?;
            }
        }
        Ok(())
    }

    /// The pieces (sorted by logical block) as runs in file order: holes where no piece maps a block (and for
    /// uninitialised extents), up to `size` bytes (a piece past it is kept whole: the last run may run past).
    fn to_runs(&self, pieces: &[Piece], size: u64) -> Vec<Run> {
        let bs = self.block_size;
        let mut runs: Vec<Run> = Vec::new();
        let mut push = |r: Run| match runs.last_mut() {
            Some(last) if last.is_hole() && r.is_hole() => last.len += r.len,
            Some(last) if !last.is_hole() && !r.is_hole() && last.offset + last.len == r.offset => {
                last.len += r.len
            }
            _ => runs.push(r),
        };
        let mut pos = 0u64;
        for p in pieces {
            if p.logical < pos {
                continue; // overlaps one before it: a damaged tree
            }
            if p.logical > pos {
                push(Run::hole((p.logical - pos) * bs));
            }
            push(if p.uninit {
                Run::hole(p.len * bs)
            } else {
                Run {
                    offset: p.physical * bs,
                    len: p.len * bs,
                }
            });
            pos = p.logical + p.len;
        }
        if pos * bs < size {
            push(Run::hole(size.div_ceil(bs) * bs - pos * bs));
        }
        runs
    }
}
