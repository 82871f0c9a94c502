//! A fork's block map: the packed 128-bit extent records (`xfs_bmbt_rec`), in the inode or in the leaves of an
//! extent B+tree whose root is in the inode (long-form blocks, `BMAP`/`BMA3`), as the runs that hold the data
//! in file order with holes. An unwritten (preallocated) extent reads as zeros: a hole that is allocated.

use uffs_fs::Run;

use crate::sb::Superblock;
use crate::{be16, be64, ReadAt};

/// `BMAP` (v4) and `BMA3` (v5) extent B+tree blocks.
const BMAP_MAGIC: u32 = 0x424d_4150;
const BMA3_MAGIC: u32 = 0x424d_4133;

/// Levels an extent B+tree may have (a 64-bit offset space in blocks of at least 512 bytes needs fewer).
const MAX_LEVELS: u16 = 9;

/// One extent: `count` blocks of the file from block `offset`, at file-system block `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub start: u64,
    pub count: u64,
    pub unwritten: bool,
}

/// The extent packed in `r` (16 bytes): 1 bit unwritten, 54 bits file offset, 52 bits start block, 21 bits count.
pub fn unpack(r: &[u8]) -> Extent {
    let (l0, l1) = (be64(r, 0), be64(r, 8));
    Extent {
        unwritten: l0 >> 63 != 0,
        offset: (l0 & (u64::MAX >> 1)) >> 9,
        start: ((l0 & 0x1FF) << 43) | (l1 >> 21),
        count: l1 & 0x1F_FFFF,
    }
}

/// What reading a fork's map met.
#[derive(Debug, Default)]
pub struct Mapped {
    pub extents: Vec<Extent>,
    /// Why part of the map could not be read (a B+tree block that is not one, past the end …).
    pub damage: Option<String>,
}

/// The extents of a fork in `extents` format: `count` records at the fork's start (as many as fit).
pub fn extent_list(fork: &[u8], count: u64) -> Mapped {
    let n = (count as usize).min(fork.len() / 16);
    let mut m = Mapped {
        extents: fork.chunks_exact(16).take(n).map(unpack).collect(),
        damage: None,
    };
    if (n as u64) < count {
        m.damage = Some(format!("{count} extents said, room for {n} in the inode"));
    }
    m
}

/// The extents of a fork in `btree` format: the root (`xfs_bmdr_block`: level, count, keys, pointers) in the
/// fork, its children on the volume.
pub fn extent_tree<R: ReadAt + ?Sized>(dev: &R, sb: &Superblock, fork: &[u8]) -> Mapped {
    let mut m = Mapped::default();
    if fork.len() < 4 {
        m.damage = Some("an extent B+tree root too short".into());
        return m;
    }
    let (level, count) = (be16(fork, 0), usize::from(be16(fork, 2)));
    let room = (fork.len() - 4) / 16;
    if level == 0 || level > MAX_LEVELS || count > room {
        m.damage = Some(format!(
            "an extent B+tree root of level {level} with {count} keys"
        ));
        return m;
    }
    let ptrs = 4 + room * 8;
    let mut budget = sb.dblocks;
    for k in 0..count {
        let child = be64(fork, ptrs + k * 8);
        walk(dev, sb, child, level - 1, &mut budget, &mut m);
    }
    m
}

/// Reads extent B+tree block `fsb`, expected at `level`, into `m`.
fn walk<R: ReadAt + ?Sized>(
    dev: &R,
    sb: &Superblock,
    fsb: u64,
    level: u16,
    budget: &mut u64,
    m: &mut Mapped,
) {
    if m.damage.is_some() {
        return;
    }
    let fail = |m: &mut Mapped, why: String| m.damage = Some(why);
    if *budget == 0 {
        return fail(
            m,
            "an extent B+tree with more blocks than the volume".into(),
        );
    }
    *budget -= 1;
    let Some(at) = sb.fsb_offset(fsb) else {
        return fail(m, format!("extent B+tree block {fsb} outside the volume"));
    };
    let mut b = vec![0u8; sb.block_size as usize];
    if let Err(e) = dev.read_exact_at(&mut b, at) {
        return fail(m, format!("extent B+tree block {fsb}: {e}"));
    }
    let hdr = match crate::be32(&b, 0) {
        BMAP_MAGIC => 24,
        BMA3_MAGIC => 72,
        _ => return fail(m, format!("extent B+tree block {fsb} is not one")),
    };
    let (got_level, count) = (be16(&b, 4), usize::from(be16(&b, 6)));
    let room = (b.len() - hdr) / 16;
    if got_level != level || count > room {
        return fail(
            m,
            format!("extent B+tree block {fsb}: level {got_level} with {count} records"),
        );
    }
    if level == 0 {
        m.extents
            .extend(b[hdr..hdr + count * 16].chunks_exact(16).map(unpack));
        return;
    }
    let ptrs = hdr + room * 8;
    for k in 0..count {
        walk(dev, sb, be64(&b, ptrs + k * 8), level - 1, budget, m);
    }
}

/// The runs of `extents` (in file order, with holes where none maps a block and for unwritten extents) covering
/// at least `size` bytes; an extent outside the volume, or overlapping one before it, ends the map there and says
/// why.
pub fn runs(sb: &Superblock, mut extents: Vec<Extent>, size: u64) -> (Vec<Run>, Option<String>) {
    extents.sort_by_key(|e| e.offset);
    let bs = sb.block_size;
    let mut runs: Vec<Run> = Vec::with_capacity(extents.len());
    let mut pos = 0u64;
    for e in extents {
        let (Some(from), Some(len)) = (e.offset.checked_mul(bs), e.count.checked_mul(bs)) else {
            return (
                runs,
                Some(format!(
                    "an extent at block {} past any file's end",
                    e.offset
                )),
            );
        };
        if from < pos {
            return (runs, Some(format!("extents overlap at block {}", e.offset)));
        }
        let inside = sb.fsb_offset(e.start).filter(|&at| {
            e.count > 0
                && at
                    .checked_add(len)
                    .is_some_and(|end| end <= sb.volume_len())
        });
        let Some(at) = inside else {
            return (
                runs,
                Some(format!(
                    "an extent of {} blocks at block {} outside the volume",
                    e.count, e.start
                )),
            );
        };
        if from > pos {
            push(&mut runs, Run::hole(from - pos));
        }
        push(
            &mut runs,
            if e.unwritten {
                Run::hole(len)
            } else {
                Run { offset: at, len }
            },
        );
        pos = from + len;
    }
    if pos < size {
        push(&mut runs, Run::hole(size - pos));
    }
    (runs, None)
}

/// Appends `r`, joined to the last run when it continues it.
fn push(runs: &mut Vec<Run>, r: Run) {
    if let Some(last) = runs.last_mut() {
        if last.is_hole() && r.is_hole() {
            last.len += r.len;
            return;
        }
        if !last.is_hole() && !r.is_hole() && last.offset + last.len == r.offset {
            last.len += r.len;
            return;
        }
    }
    runs.push(r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extent_unpacks() {
        // Unwritten, file block 5, start block 0x1234_5678_9, 300 blocks.
        let (off, start, count) = (5u64, 0x1_2345_6789u64, 300u64);
        let l0 = (1u64 << 63) | (off << 9) | (start >> 43);
        let l1 = (start << 21) | count;
        let mut r = [0u8; 16];
        r[..8].copy_from_slice(&l0.to_be_bytes());
        r[8..].copy_from_slice(&l1.to_be_bytes());
        assert_eq!(
            unpack(&r),
            Extent {
                offset: off,
                start,
                count,
                unwritten: true
            }
        );
    }
}
