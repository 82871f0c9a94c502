//! The superblock (the first sector of allocation group 0; every field big-endian) and the arithmetic of XFS's
//! addresses: an inode number is (allocation group, inode within it), a file-system block number is (allocation
//! group, block within it), each packed with the group's number shifted by the bits the other part needs.

use crate::{be16, be32, be64, Error, Result};

/// `XFSB`.
pub const MAGIC: u32 = 0x5846_5342;

/// v5 incompatible features.
pub mod incompat {
    /// Folders' entries carry the file type.
    pub const FTYPE: u32 = 0x1;
    /// Inode chunks may be partly allocated (`ir_holemask`).
    pub const SPINODES: u32 = 0x2;
    pub const META_UUID: u32 = 0x4;
    /// Times as nanoseconds since 1901 (`di_flags2` says which inodes use it).
    pub const BIGTIME: u32 = 0x8;
    pub const NEEDSREPAIR: u32 = 0x10;
    /// 64-bit extent counters (`di_flags2` says which inodes use them).
    pub const NREXT64: u32 = 0x20;
}

/// v5 read-only-compatible features.
pub mod ro_compat {
    pub const FINOBT: u32 = 0x1;
    pub const RMAPBT: u32 = 0x2;
    pub const REFLINK: u32 = 0x4;
    pub const INOBTCNT: u32 = 0x8;
}

/// v4's `sb_features2` bit that says folders' entries carry the file type.
const V4_FTYPE: u32 = 0x200;

#[derive(Debug, Clone)]
pub struct Superblock {
    pub block_size: u64,
    /// Blocks of the data device.
    pub dblocks: u64,
    pub rblocks: u64,
    pub uuid: [u8; 16],
    /// The internal log's first block (0: the log is on a device of its own).
    pub logstart: u64,
    pub rootino: u64,
    pub rbmino: u64,
    pub rsumino: u64,
    pub agblocks: u64,
    pub agcount: u64,
    pub logblocks: u64,
    /// 4 or 5.
    pub version: u16,
    pub versionnum: u16,
    pub sector_size: u64,
    pub inode_size: u64,
    pub label: String,
    pub blocklog: u32,
    pub inopblog: u32,
    pub agblklog: u32,
    pub icount: u64,
    pub ifree: u64,
    pub fdblocks: u64,
    pub uquotino: u64,
    pub gquotino: u64,
    pub pquotino: u64,
    /// A folder block is `block_size << dirblklog` bytes.
    pub dirblklog: u32,
    pub features2: u32,
    pub ro_compat: u32,
    pub incompat: u32,
}

impl Superblock {
    /// Reads the superblock from its sector's bytes (a short image is said where the volume is opened).
    pub fn parse(b: &[u8]) -> Result<Superblock> {
        if b.len() < 264 || be32(b, 0) != MAGIC {
            return Err(Error::new("no XFS superblock (magic XFSB)"));
        }
        let block_size = u64::from(be32(b, 4));
        let blocklog = u32::from(b[120]);
        let sector_size = u64::from(be16(b, 102));
        let inode_size = u64::from(be16(b, 104));
        let inopblock = u64::from(be16(b, 106));
        let inopblog = u32::from(b[123]);
        let agblklog = u32::from(b[124]);
        let agblocks = u64::from(be32(b, 84));
        let agcount = u64::from(be32(b, 88));
        let versionnum = be16(b, 100);
        let version = versionnum & 0xF;
        let bad = |what: &str| Err(Error::new(format!("XFS superblock: {what}")));
        if !(9..=16).contains(&blocklog) || block_size != 1 << blocklog {
            return bad(&format!("block size {block_size} (log {blocklog})"));
        }
        if !sector_size.is_power_of_two()
            || !(512..=32768).contains(&sector_size)
            || sector_size > block_size
        {
            return bad(&format!("sector size {sector_size}"));
        }
        if !inode_size.is_power_of_two()
            || !(256..=2048).contains(&inode_size)
            || inode_size > block_size
            || inopblock != block_size / inode_size
            || 1u64 << inopblog != inopblock
        {
            return bad(&format!("inode size {inode_size}, {inopblock} a block"));
        }
        if agblocks < 16
            || agcount == 0
            || agblklog > 31
            || agblocks > 1 << agblklog
            || agblocks <= 1 << agblklog >> 1
        {
            return bad(&format!(
                "{agcount} allocation groups of {agblocks} blocks (log {agblklog})"
            ));
        }
        // Inode numbers of at most 48 bits (an `Entry` id's bound): 2^17 groups at the largest group size.
        if agcount > 1 << 17
            || u64::from(agblklog + inopblog) + u64::from(64 - (agcount - 1).leading_zeros()) > 48
        {
            return bad(&format!(
                "{agcount} allocation groups: inode numbers past 48 bits"
            ));
        }
        if !(4..=5).contains(&version) {
            return bad(&format!("version {version} (uffs reads 4 and 5)"));
        }
        let dblocks = be64(b, 8);
        if dblocks > agcount * agblocks || dblocks <= (agcount - 1) * agblocks {
            return bad(&format!(
                "{dblocks} blocks in {agcount} groups of {agblocks}"
            ));
        }
        let dirblklog = u32::from(b[192]);
        if blocklog + dirblklog > 16 {
            return bad(&format!(
                "folder blocks of 2^{} bytes",
                blocklog + dirblklog
            ));
        }
        let label_bytes = &b[108..120];
        let label_len = label_bytes.iter().position(|&c| c == 0).unwrap_or(12);
        let v5 = version == 5;
        Ok(Superblock {
            block_size,
            dblocks,
            rblocks: be64(b, 16),
            uuid: b[32..48].try_into().expect("16 bytes"),
            logstart: be64(b, 48),
            rootino: be64(b, 56),
            rbmino: be64(b, 64),
            rsumino: be64(b, 72),
            agblocks,
            agcount,
            logblocks: u64::from(be32(b, 96)),
            version,
            versionnum,
            sector_size,
            inode_size,
            label: String::from_utf8_lossy(&label_bytes[..label_len]).into_owned(),
            blocklog,
            inopblog,
            agblklog,
            icount: be64(b, 128),
            ifree: be64(b, 136),
            fdblocks: be64(b, 144),
            uquotino: be64(b, 160),
            gquotino: be64(b, 168),
            pquotino: if v5 { be64(b, 232) } else { 0 },
            dirblklog,
            features2: be32(b, 200),
            ro_compat: if v5 { be32(b, 212) } else { 0 },
            incompat: if v5 { be32(b, 216) } else { 0 },
        })
    }

    pub fn is_v5(&self) -> bool {
        self.version == 5
    }

    pub fn has_incompat(&self, f: u32) -> bool {
        self.incompat & f != 0
    }

    pub fn has_ro_compat(&self, f: u32) -> bool {
        self.ro_compat & f != 0
    }

    /// Whether folders' entries carry a file-type byte after the name.
    pub fn has_ftype(&self) -> bool {
        self.has_incompat(incompat::FTYPE) || (!self.is_v5() && self.features2 & V4_FTYPE != 0)
    }

    /// The data device's length in bytes.
    pub fn volume_len(&self) -> u64 {
        self.dblocks * self.block_size
    }

    /// Bytes of a folder block.
    pub fn dir_block_size(&self) -> u64 {
        self.block_size << self.dirblklog
    }

    /// Bits of an inode number below its group's number.
    pub fn agino_bits(&self) -> u32 {
        self.agblklog + self.inopblog
    }

    /// The inode number of inode `agino` of group `ag`.
    pub fn ino(&self, ag: u64, agino: u64) -> u64 {
        (ag << self.agino_bits()) | agino
    }

    /// Where inode `ino` lies on the volume, when it lies inside it.
    pub fn inode_offset(&self, ino: u64) -> Option<u64> {
        let ag = ino >> self.agino_bits();
        let agino = ino & ((1 << self.agino_bits()) - 1);
        if ag >= self.agcount || agino >> self.inopblog >= self.agblocks {
            return None;
        }
        let at = (ag * self.agblocks * self.block_size).checked_add(agino * self.inode_size)?;
        (at + self.inode_size <= self.volume_len()).then_some(at)
    }

    /// The byte offset of file-system block `fsb` (group in the high bits), when it lies inside the volume.
    pub fn fsb_offset(&self, fsb: u64) -> Option<u64> {
        let ag = fsb >> self.agblklog;
        let bno = fsb & ((1 << self.agblklog) - 1);
        if ag >= self.agcount || bno >= self.agblocks {
            return None;
        }
        let block = ag * self.agblocks + bno;
        (block < self.dblocks).then(|| block * self.block_size)
    }

    /// The byte offset of block `bno` of group `ag`.
    pub fn agb_offset(&self, ag: u64, bno: u64) -> Option<u64> {
        let block = ag.checked_mul(self.agblocks)?.checked_add(bno)?;
        (bno < self.agblocks && block < self.dblocks).then(|| block * self.block_size)
    }

    /// Blocks in group `ag` (the last may be shorter).
    pub fn ag_len(&self, ag: u64) -> u64 {
        self.dblocks
            .saturating_sub(ag * self.agblocks)
            .min(self.agblocks)
    }

    /// The UUID as text.
    pub fn uuid_text(&self) -> String {
        uffs_fs::uuid_text(&self.uuid)
    }

    /// The features' names, as `xfs_info` says them.
    pub fn feature_names(&self) -> Vec<&'static str> {
        let mut f = vec![if self.is_v5() { "crc (v5)" } else { "v4" }];
        for (on, name) in [
            (self.has_ftype(), "ftype"),
            (self.has_incompat(incompat::SPINODES), "sparse inodes"),
            (self.has_incompat(incompat::BIGTIME), "bigtime"),
            (self.has_incompat(incompat::NREXT64), "nrext64"),
            (self.has_ro_compat(ro_compat::FINOBT), "finobt"),
            (self.has_ro_compat(ro_compat::RMAPBT), "rmapbt"),
            (self.has_ro_compat(ro_compat::REFLINK), "reflink"),
            (self.has_ro_compat(ro_compat::INOBTCNT), "inobtcount"),
            (self.has_incompat(incompat::NEEDSREPAIR), "needsrepair"),
        ] {
            if on {
                f.push(name);
            }
        }
        f
    }
}
