//! The blocks the volume spends on itself outside any inode, as entries under the root (as NTFS shows `$MFT`),
//! so that `du /` adds up to the blocks in use: each group's header sectors, its B+trees' blocks, the inode
//! chunks, and the internal log. Files' blocks (their extent trees' and attribute forks' too) are their inodes',
//! but for those reflinked files share, which the volume lists once (see [`crate::shared`]).

use uffs_fs::{attr, Entry, Run};

use crate::ag::{self, Chunk, Tree};
use crate::{ReadAt, Volume};

/// The entries of the volume's own structures, with ids after the last inode number the volume can have.
pub(crate) fn entries<R: ReadAt>(vol: &Volume<R>, chunks: &[(u64, Chunk)]) -> Vec<Entry> {
    let sb = &vol.sb;
    let bs = sb.block_size;
    let mut headers = Vec::new();
    let mut trees: Vec<(&str, Vec<Run>)> = vec![
        ("$FreeSpaceTrees", Vec::new()),
        ("$InodeTrees", Vec::new()),
        ("$ReverseMapTrees", Vec::new()),
        ("$RefcountTrees", Vec::new()),
    ];
    // The superblock, AGF, AGI and AGFL sectors, in the group's first block(s).
    let header_len = (4 * sb.sector_size).div_ceil(bs) * bs;
    for g in &vol.groups {
        if let Some(at) = sb.agb_offset(g.ag, 0) {
            headers.push(Run {
                offset: at,
                len: header_len,
            });
        }
        for &(tree, _, _) in &g.roots {
            let slot = match tree {
                Tree::Bno | Tree::Cnt => 0,
                Tree::Ino | Tree::Fino => 1,
                Tree::Rmap => 2,
                Tree::Refcount => 3,
            };
            let w = ag::walk(&vol.dev, sb, g, tree);
            trees[slot].1.extend(
                w.blocks
                    .iter()
                    .filter_map(|&b| sb.agb_offset(g.ag, u64::from(b)))
                    .map(|offset| Run { offset, len: bs }),
            );
        }
    }
    // Each chunk's inodes, four at a time where it has holes; a chunk smaller than a block (large blocks, small
    // inodes) takes its block.
    let mut inodes = Vec::new();
    let quarter = 4 * sb.inode_size;
    for &(ag, c) in chunks {
        let Some(start) = sb.inode_offset(sb.ino(ag, c.start)) else {
            continue;
        };
        for q in 0..16u64 {
            if c.holes & (1 << q) == 0 {
                inodes.push(Run {
                    offset: start + q * quarter,
                    len: quarter,
                });
            }
        }
    }
    let mut log = Vec::new();
    if sb.logstart != 0 {
        if let Some(offset) = sb.fsb_offset(sb.logstart) {
            log.push(Run {
                offset,
                len: sb.logblocks * bs,
            });
        }
    }
    let end = sb.volume_len();
    let first_id = sb.ino(sb.agcount, 0);
    let mut all = vec![("$GroupHeaders", headers)];
    all.extend(trees);
    all.push(("$InodeChunks", inodes));
    all.push(("$Log", log));
    all.push(("$SharedExtents", vol.shared.runs.clone()));
    all.push(("$CopyOnWriteStaging", vol.shared.staging.clone()));
    // Where files can share blocks, every entry tells its exclusive bytes: the volume's own, none.
    let exclusive = sb.has_ro_compat(crate::sb::ro_compat::REFLINK).then_some(0);
    // Each name keeps its id whether or not the others are there (a delta compares entries by id).
    all.into_iter()
        .enumerate()
        .filter(|(_, (_, runs))| !runs.is_empty())
        .map(|(k, (name, runs))| {
            let runs = merged(runs, bs, end);
            let size = runs.iter().map(|r| r.len).sum();
            Entry {
                id: first_id + k as u64,
                parent: sb.rootino,
                name: name.into(),
                size,
                allocated: size,
                metadata: true,
                attributes: attr::SYSTEM | attr::HIDDEN,
                runs,
                exclusive,
                ..Entry::default()
            }
        })
        .collect()
}

/// `runs` in volume order, clipped to the volume, whole blocks, joined where they touch, each byte once.
fn merged(mut runs: Vec<Run>, bs: u64, end: u64) -> Vec<Run> {
    runs.sort_by_key(|r| r.offset);
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    for r in runs {
        let start = r.offset / bs * bs;
        let stop = (r.offset + r.len).next_multiple_of(bs).min(end);
        if start >= stop {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.offset + last.len >= start => {
                last.len = last.len.max(stop - last.offset);
            }
            _ => out.push(Run {
                offset: start,
                len: stop - start,
            }),
        }
    }
    out
}
