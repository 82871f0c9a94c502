//! The container (`nx_superblock_t`, Apple File System Reference, "Container"): block 0 holds a copy of the
//! superblock; the newest valid one is in the checkpoint descriptor area, a ring of blocks holding, for each
//! checkpoint, its map of ephemeral objects (the space manager among them) and then the superblock. The
//! superblock names the container's object map and, by virtual id, each volume's superblock.

use crate::btree::read_block;
use crate::object::{self, kind, Header};
use crate::{le32, le64, Error, ReadAt, Result};

/// `NXSB` as stored.
pub const MAGIC: u32 = 0x4253_584E;
/// The most volumes a container holds.
pub const MAX_VOLUMES: usize = 100;

#[derive(Debug, Clone)]
pub struct Superblock {
    pub header: Header,
    pub block_size: u32,
    pub block_count: u64,
    pub features: u64,
    pub incompatible: u64,
    pub uuid: [u8; 16],
    pub next_xid: u64,
    pub desc_blocks: u32,
    pub desc_base: u64,
    pub data_blocks: u32,
    pub data_base: u64,
    pub desc_index: u32,
    pub desc_len: u32,
    pub spaceman_oid: u64,
    pub omap_oid: u64,
    /// The volumes' superblocks' virtual ids, in the order macOS lists them (0: none).
    pub volumes: Vec<u64>,
    /// Software encryption's key bag (a prange: start, blocks); 0 when none.
    pub keylocker: u64,
}

impl Superblock {
    /// Parses a container superblock (at least 1,408 bytes): `None` when it is none.
    pub fn parse(b: &[u8]) -> Option<Superblock> {
        if b.len() < 0x580 || le32(b, 32) != MAGIC {
            return None;
        }
        let max = (le32(b, 0xB4) as usize).min(MAX_VOLUMES);
        Some(Superblock {
            header: Header::parse(b),
            block_size: le32(b, 0x24),
            block_count: le64(b, 0x28),
            features: le64(b, 0x30),
            incompatible: le64(b, 0x40),
            uuid: b[0x48..0x58].try_into().expect("16 bytes"),
            next_xid: le64(b, 0x60),
            desc_blocks: le32(b, 0x68),
            data_blocks: le32(b, 0x6C),
            desc_base: le64(b, 0x70),
            data_base: le64(b, 0x78),
            desc_index: le32(b, 0x88),
            desc_len: le32(b, 0x8C),
            spaceman_oid: le64(b, 0x98),
            omap_oid: le64(b, 0xA0),
            volumes: (0..max).map(|i| le64(b, 0xB8 + 8 * i)).collect(),
            keylocker: le64(b, 0x510),
        })
    }

    /// The container's length in bytes, as its superblock gives it.
    pub fn bytes(&self) -> u64 {
        self.block_count * u64::from(self.block_size)
    }
}

/// Whether a volume's first bytes are an APFS container's: `NXSB` and a sane block size.
pub fn probe(head: &[u8]) -> Option<Superblock> {
    let sb = Superblock::parse(head)?;
    (sb.header.kind == kind::NX_SUPERBLOCK
        && (4096..=65536).contains(&sb.block_size)
        && sb.block_size.is_power_of_two()
        && sb.block_count > 0)
        .then_some(sb)
}

/// The newest valid superblock: block 0's, or a newer one of the checkpoint descriptor area (whose blocks are
/// a ring; each valid superblock there is a checkpoint's). Its checkpoint map's blocks come with it.
pub fn newest<R: ReadAt + ?Sized>(
    dev: &R,
    first: Superblock,
    warnings: &mut Vec<String>,
) -> Result<(Superblock, Vec<Vec<u8>>)> {
    let bs = u64::from(first.block_size);
    if first.desc_blocks & 0x8000_0000 != 0 {
        // The descriptor area is a B-tree (never seen on a Mac); block 0's copy is used.
        warnings.push(
            "the checkpoint descriptor area is a B-tree: block 0's superblock is read".into(),
        );
        return Ok((first, Vec::new()));
    }
    let n = u64::from(first.desc_blocks);
    if n == 0 || n > 1 << 16 {
        return Err(Error::new(format!(
            "the checkpoint descriptor area has {n} blocks"
        )));
    }
    let mut area = vec![0u8; (n * bs) as usize];
    dev.read_exact_at(&mut area, first.desc_base * bs)
        .map_err(|e| Error::new(format!("the checkpoint descriptor area: {e}")))?;
    let block = |i: u64| &area[(i * bs) as usize..((i + 1) * bs) as usize];
    let mut best: Option<(u64, u64)> = None;
    for i in 0..n {
        let b = block(i);
        if !object::valid(b) {
            continue;
        }
        let h = Header::parse(b);
        if h.kind == kind::NX_SUPERBLOCK
            && Superblock::parse(b).is_some()
            && best.is_none_or(|(xid, _)| h.xid > xid)
        {
            best = Some((h.xid, i));
        }
    }
    let Some((xid, at)) = best else {
        warnings.push(
            "no valid superblock in the checkpoint descriptor area: block 0's is read".into(),
        );
        return Ok((first, Vec::new()));
    };
    if xid < first.header.xid {
        return Ok((first, Vec::new()));
    }
    let sb = Superblock::parse(block(at)).expect("checked");
    // The checkpoint's maps are the blocks before its superblock, in the ring.
    let mut maps = Vec::new();
    let len = u64::from(sb.desc_len).clamp(1, n);
    for back in (1..len).rev() {
        let b = block((at + n - back) % n);
        let h = Header::parse(b);
        if object::valid(b) && h.kind == kind::CHECKPOINT_MAP && h.xid == xid {
            maps.push(b.to_vec());
        }
    }
    Ok((sb, maps))
}

/// The block of ephemeral object `oid` in the checkpoint's maps (`checkpoint_mapping_t`s).
pub fn ephemeral(maps: &[Vec<u8>], oid: u64) -> Option<u64> {
    for m in maps {
        let count = le32(m, 36) as usize;
        for i in 0..count {
            let at = 40 + 40 * i;
            if at + 40 > m.len() {
                break;
            }
            if le64(m, at + 24) == oid {
                return Some(le64(m, at + 32));
            }
        }
    }
    None
}

/// The space manager's free block count of the main device (`sm_dev[SD_MAIN].sm_free_count`).
pub fn free_blocks<R: ReadAt + ?Sized>(dev: &R, sb: &Superblock, maps: &[Vec<u8>]) -> Option<u64> {
    let paddr = ephemeral(maps, sb.spaceman_oid)?;
    let b = read_block(dev, paddr, u64::from(sb.block_size)).ok()?;
    (object::valid(&b) && Header::parse(&b).kind == kind::SPACEMAN).then(|| le64(&b, 0x48))
}
