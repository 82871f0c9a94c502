//! The header every APFS object starts with (`obj_phys_t`: checksum, id, transaction, type) and the checksum
//! that guards it: Fletcher-64 over the block's bytes after the checksum, as 32-bit little-endian words
//! (Apple File System Reference, "Objects").

use crate::{le32, le64};

/// Object types (the low 16 bits of `o_type`).
pub mod kind {
    pub const NX_SUPERBLOCK: u32 = 0x1;
    pub const BTREE: u32 = 0x2;
    pub const BTREE_NODE: u32 = 0x3;
    pub const SPACEMAN: u32 = 0x5;
    pub const OMAP: u32 = 0xB;
    pub const CHECKPOINT_MAP: u32 = 0xC;
    pub const FS: u32 = 0xD;
}

/// How an object is found (the top bits of `o_type`, and of a tree's type in a volume superblock): a virtual
/// one through an object map, a physical one at its address, an ephemeral one through the checkpoint map.
pub const STORAGE_MASK: u32 = 0xC000_0000;
pub const PHYSICAL: u32 = 0x4000_0000;
pub const EPHEMERAL: u32 = 0x8000_0000;
/// The object's bytes are encrypted (a volume's tree on an encrypted volume).
pub const ENCRYPTED: u32 = 0x1000_0000;

/// An object's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub checksum: u64,
    pub oid: u64,
    pub xid: u64,
    pub kind: u32,
    pub flags: u32,
    pub subtype: u32,
}

impl Header {
    pub fn parse(b: &[u8]) -> Header {
        let t = le32(b, 24);
        Header {
            checksum: le64(b, 0),
            oid: le64(b, 8),
            xid: le64(b, 16),
            kind: t & 0xFFFF,
            flags: t & 0xFFFF_0000,
            subtype: le32(b, 28),
        }
    }
}

/// The Fletcher-64 checksum of `block` as APFS computes it (over everything after the 8-byte checksum).
pub fn fletcher64(block: &[u8]) -> u64 {
    const M: u64 = 0xFFFF_FFFF;
    let (mut a, mut b) = (0u64, 0u64);
    // Sums stay below 2^64 for 2^31 words between reductions: reduce once per block of 1,024 words.
    for chunk in block[8..].chunks(4096) {
        for w in chunk.chunks_exact(4) {
            a += u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            b += a;
        }
        a %= M;
        b %= M;
    }
    let c1 = M - ((a + b) % M);
    let c2 = M - ((a + c1) % M);
    (c2 << 32) | c1
}

/// Whether `block`'s stored checksum is right (an all-zero block is not an object).
pub fn valid(block: &[u8]) -> bool {
    block.len() >= 32 && le64(block, 0) == fletcher64(block) && block.iter().any(|&b| b != 0)
}
