//! An allocation group's headers (the free-space header `XAGF` and the inode header `XAGI`, in its second and
//! third sectors) and the walk of its short-form B+trees (`xfs_btree_sblock`: 32-bit block pointers within the
//! group), which finds the inode chunks (the inode B+tree's leaf records) and counts the trees' own blocks.

use crate::sb::{ro_compat, Superblock};
use crate::{be16, be32, be64, Error, ReadAt, Result};

const AGF_MAGIC: u32 = 0x5841_4746;
const AGI_MAGIC: u32 = 0x5841_4749;

/// Levels a group's B+tree may have.
const MAX_LEVELS: u32 = 9;

/// The trees a group keeps, by their blocks' magic numbers (v4, v5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// Free space by block number.
    Bno,
    /// Free space by length.
    Cnt,
    /// Inodes.
    Ino,
    /// Inodes with free ones.
    Fino,
    /// Reverse mapping.
    Rmap,
    /// Shared blocks' reference counts.
    Refcount,
}

impl Tree {
    /// Its name, for warnings.
    pub fn name(self) -> &'static str {
        match self {
            Tree::Bno => "free-space B+tree (by block)",
            Tree::Cnt => "free-space B+tree (by length)",
            Tree::Ino => "inode B+tree",
            Tree::Fino => "free-inode B+tree",
            Tree::Rmap => "reverse-mapping B+tree",
            Tree::Refcount => "reference-count B+tree",
        }
    }

    fn magics(self) -> [u32; 2] {
        match self {
            Tree::Bno => [0x4142_5442, 0x4142_3342],
            Tree::Cnt => [0x4142_5443, 0x4142_3343],
            Tree::Ino => [0x4941_4254, 0x4941_4233],
            Tree::Fino => [0x4649_4254, 0x4649_4233],
            Tree::Rmap => [0, 0x524d_4233],
            Tree::Refcount => [0, 0x5233_4643],
        }
    }

    /// Bytes of a key and of a leaf record.
    fn sizes(self) -> (usize, usize) {
        match self {
            Tree::Bno | Tree::Cnt => (8, 8),
            Tree::Ino | Tree::Fino => (4, 16),
            // Rmap nodes hold a low and a high key.
            Tree::Rmap => (40, 24),
            Tree::Refcount => (4, 12),
        }
    }
}

/// One group's headers.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub ag: u64,
    /// Free blocks (the free-space trees' count) and the free list's.
    pub freeblks: u64,
    pub flcount: u64,
    /// Roots and levels of the free-space, reverse-mapping and reference-count trees (0: none).
    pub roots: Vec<(Tree, u32, u32)>,
    /// Inodes allocated in it.
    pub inodes: u64,
}

/// Reads group `ag`'s headers.
pub fn read<R: ReadAt + ?Sized>(dev: &R, sb: &Superblock, ag: u64) -> Result<Group> {
    let base = ag * sb.agblocks * sb.block_size;
    let mut agf = vec![0u8; sb.sector_size as usize];
    let mut agi = vec![0u8; sb.sector_size as usize];
    let io = |e: std::io::Error| Error::new(format!("allocation group {ag}'s headers: {e}"));
    dev.read_exact_at(&mut agf, base + sb.sector_size)
        .map_err(io)?;
    dev.read_exact_at(&mut agi, base + 2 * sb.sector_size)
        .map_err(io)?;
    if be32(&agf, 0) != AGF_MAGIC || be32(&agi, 0) != AGI_MAGIC {
        return Err(Error::new(format!(
            "allocation group {ag}: no XAGF/XAGI header"
        )));
    }
    let mut roots = vec![
        (Tree::Bno, be32(&agf, 16), be32(&agf, 28)),
        (Tree::Cnt, be32(&agf, 20), be32(&agf, 32)),
        (Tree::Ino, be32(&agi, 20), be32(&agi, 24)),
    ];
    if sb.has_ro_compat(ro_compat::RMAPBT) {
        roots.push((Tree::Rmap, be32(&agf, 24), be32(&agf, 36)));
    }
    if sb.has_ro_compat(ro_compat::REFLINK) {
        roots.push((Tree::Refcount, be32(&agf, 88), be32(&agf, 92)));
    }
    if sb.has_ro_compat(ro_compat::FINOBT) {
        roots.push((Tree::Fino, be32(&agi, 328), be32(&agi, 332)));
    }
    Ok(Group {
        ag,
        freeblks: u64::from(be32(&agf, 52)),
        flcount: u64::from(be32(&agf, 48)),
        roots,
        inodes: u64::from(be32(&agi, 16)),
    })
}

/// One inode chunk from the inode B+tree: 64 inodes from `start` (inode number within the group), `free` a bit
/// for each that is free, `holes` a bit for each 4 that were never allocated (sparse inodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub free: u64,
    pub holes: u16,
}

impl Chunk {
    /// Whether inode `k` (0..64) of the chunk is in use.
    pub fn in_use(&self, k: u32) -> bool {
        self.free & (1 << k) == 0 && self.holes & (1 << (k / 4)) == 0
    }
}

/// What walking one tree of a group found.
#[derive(Debug, Default)]
pub struct Walked {
    /// Its blocks (within the group), the root's included.
    pub blocks: Vec<u32>,
    /// Its leaf records (each of the tree's record size).
    pub records: Vec<u8>,
    pub damage: Option<String>,
}

/// Walks `tree` of group `g` from its root, level by level, keeping its leaf records.
pub fn walk<R: ReadAt + ?Sized>(dev: &R, sb: &Superblock, g: &Group, tree: Tree) -> Walked {
    let mut w = Walked::default();
    let Some(&(_, root, levels)) = g.roots.iter().find(|r| r.0 == tree) else {
        return w;
    };
    if levels == 0 || levels > MAX_LEVELS {
        w.damage = Some(format!("its {} of {levels} levels", tree.name()));
        return w;
    }
    let (key, rec) = tree.sizes();
    let hdr = if sb.is_v5() { 56 } else { 16 };
    let mut level_blocks = vec![root];
    let mut b = vec![0u8; sb.block_size as usize];
    let mut budget = sb.ag_len(g.ag);
    for level in (0..levels).rev() {
        let mut next = Vec::new();
        for &bno in &level_blocks {
            if budget == 0 {
                w.damage = Some(format!(
                    "its {} has more blocks than the group",
                    tree.name()
                ));
                return w;
            }
            budget -= 1;
            let at = sb.agb_offset(g.ag, u64::from(bno));
            if at.is_none_or(|at| dev.read_exact_at(&mut b, at).is_err()) {
                w.damage = Some(format!("its {} block {bno} cannot be read", tree.name()));
                return w;
            }
            let (magic, got, count) = (
                be32(&b, 0),
                u32::from(be16(&b, 4)),
                usize::from(be16(&b, 6)),
            );
            if !tree.magics().contains(&magic) || magic == 0 || got != level {
                w.damage = Some(format!(
                    "its {} block {bno} is not one (of level {level})",
                    tree.name()
                ));
                return w;
            }
            w.blocks.push(bno);
            if level == 0 {
                let Some(recs) = b.get(hdr..hdr + count * rec) else {
                    w.damage = Some(format!("its {} block {bno}: {count} records", tree.name()));
                    return w;
                };
                w.records.extend_from_slice(recs);
                continue;
            }
            // Keys, then as many pointers (4 bytes) as the block has room for keys.
            let room = (b.len() - hdr) / (key + 4);
            if count > room {
                w.damage = Some(format!("its {} block {bno}: {count} keys", tree.name()));
                return w;
            }
            let ptrs = hdr + room * key;
            next.extend((0..count).map(|k| be32(&b, ptrs + k * 4)));
        }
        level_blocks = next;
    }
    w
}

/// The inode chunks of the inode tree's leaf records.
pub fn chunks(sb: &Superblock, records: &[u8]) -> Vec<Chunk> {
    let sparse = sb.has_incompat(crate::sb::incompat::SPINODES);
    records
        .chunks_exact(16)
        .map(|r| Chunk {
            start: u64::from(be32(r, 0)),
            holes: if sparse { be16(r, 4) } else { 0 },
            free: be64(r, 8),
        })
        .collect()
}
