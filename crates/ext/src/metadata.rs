//! The blocks a volume spends on itself, as entries under the root (as NTFS shows `$MFT`), so that `du /` adds up
//! to the blocks in use: the superblock and group descriptor copies, the bitmaps, the inode tables, and the
//! reserved inodes that hold blocks (the journal, the resize inode's reserved descriptor blocks, quota files).

use uffs_fs::{attr, Entry, Run};

use crate::group::{self, Group};
use crate::superblock::{incompat, Superblock};

/// Names of the reserved inodes that hold blocks.
pub fn reserved_name(sb: &Superblock, ino: u32) -> String {
    match ino {
        7 => "$ResizeInode".into(),
        3 => "$UserQuota".into(),
        4 => "$GroupQuota".into(),
        _ if ino == sb.journal_inode => "$Journal".into(),
        _ => format!("$Reserved{ino}"),
    }
}

/// The entries of the volume's own structures, with ids after the last inode.
pub fn entries(sb: &Superblock, groups: &[Group]) -> Vec<Entry> {
    let bs = sb.block_size;
    let n = groups.len() as u64;
    let desc_blocks = (n * u64::from(sb.desc_size)).div_ceil(bs);
    let per_block = bs / u64::from(sb.desc_size);
    let meta_bg = sb.has_incompat(incompat::META_BG);
    let mut supers = Vec::new();
    // With 1 KiB blocks, block 0 (the boot block) lies before group 0 and is in use.
    if sb.first_data_block == 1 {
        supers.push(Run { offset: 0, len: bs });
    }
    for g in 0..n {
        let first = group::first_block(sb, g);
        let has = group::has_superblock(sb, g);
        let mut blocks = u64::from(has);
        if meta_bg {
            // The classic table (before s_first_meta_bg) with each superblock copy; each meta group's own block in
            // its first, second and last group.
            if has {
                blocks += u64::from(sb.first_meta_bg).min(desc_blocks);
            }
            let at = g % per_block;
            if g / per_block >= u64::from(sb.first_meta_bg)
                && (at == 0 || at == 1 || at == per_block - 1)
            {
                blocks += 1;
            }
        } else if has {
            blocks += desc_blocks;
        }
        if blocks > 0 {
            supers.push(Run {
                offset: first * bs,
                len: blocks * bs,
            });
        }
    }
    let table_blocks = (u64::from(sb.inodes_per_group) * u64::from(sb.inode_size)).div_ceil(bs);
    let mut bitmaps = Vec::new();
    let mut tables = Vec::new();
    for g in groups {
        bitmaps.push(Run {
            offset: g.block_bitmap.saturating_mul(bs),
            len: bs,
        });
        bitmaps.push(Run {
            offset: g.inode_bitmap.saturating_mul(bs),
            len: bs,
        });
        tables.push(Run {
            offset: g.inode_table.saturating_mul(bs),
            len: table_blocks.saturating_mul(bs),
        });
    }
    // A damaged descriptor may place a table past the volume's end: only what lies inside is the volume's.
    let end = sb.volume_len();
    let inside = |runs: Vec<Run>| -> Vec<Run> {
        runs.into_iter()
            .filter(|r| r.offset < end)
            .map(|r| Run {
                offset: r.offset,
                len: r.len.min(end - r.offset),
            })
            .collect()
    };
    let (supers, bitmaps, tables) = (inside(supers), inside(bitmaps), inside(tables));
    let first_id = u64::from(sb.inodes_count) + 1;
    [
        ("$Superblocks", supers),
        ("$Bitmaps", bitmaps),
        ("$InodeTables", tables),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (name, mut runs))| {
        runs.sort_by_key(|r| r.offset);
        let size = runs.iter().fold(0u64, |n, r| n.saturating_add(r.len));
        Entry {
            id: first_id + k as u64,
            parent: u64::from(crate::ROOT),
            name: name.into(),
            size,
            allocated: size,
            metadata: true,
            from_index_slack: false,
            attributes: attr::SYSTEM | attr::HIDDEN,
            runs,
            ..Entry::default()
        }
    })
    .collect()
}
