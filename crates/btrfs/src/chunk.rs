//! Chunks: how Btrfs's logical addresses (every tree pointer and extent) map to bytes of its devices. The
//! superblock's system chunk array holds the chunks of the chunk tree; the chunk tree holds all of them.
//!
//! uffs reads one device: a chunk kept whole on it (single, DUP, each RAID1 copy) is read from its first copy
//! there; a chunk striped across devices (RAID0, RAID10, RAID5/6) or kept only on others cannot be.

use crate::{le16, le64, Error, Result};

/// Chunk type bits (`type` of a chunk item, `flags` of a block group).
pub mod kind {
    pub const DATA: u64 = 1 << 0;
    pub const SYSTEM: u64 = 1 << 1;
    pub const METADATA: u64 = 1 << 2;
    pub const RAID0: u64 = 1 << 3;
    pub const RAID1: u64 = 1 << 4;
    pub const DUP: u64 = 1 << 5;
    pub const RAID10: u64 = 1 << 6;
    pub const RAID5: u64 = 1 << 7;
    pub const RAID6: u64 = 1 << 8;
    pub const RAID1C3: u64 = 1 << 9;
    pub const RAID1C4: u64 = 1 << 10;
    /// Every copy of the data is whole on one device.
    pub const MIRRORED: u64 = RAID1 | DUP | RAID1C3 | RAID1C4;
    pub const STRIPED: u64 = RAID0 | RAID10 | RAID5 | RAID6;
}

/// The profile's name as `btrfs filesystem df` prints it.
pub fn profile_name(t: u64) -> &'static str {
    match t & !(kind::DATA | kind::SYSTEM | kind::METADATA) {
        0 => "single",
        kind::RAID0 => "RAID0",
        kind::RAID1 => "RAID1",
        kind::DUP => "DUP",
        kind::RAID10 => "RAID10",
        kind::RAID5 => "RAID5",
        kind::RAID6 => "RAID6",
        kind::RAID1C3 => "RAID1C3",
        kind::RAID1C4 => "RAID1C4",
        _ => "mixed",
    }
}

/// Bytes of a chunk item before its stripes, and of each stripe.
const ITEM: usize = 48;
const STRIPE: usize = 32;

#[derive(Debug, Clone)]
pub struct Chunk {
    pub logical: u64,
    pub length: u64,
    pub kind: u64,
    /// (device id, byte offset on it) of each stripe.
    pub stripes: Vec<(u64, u64)>,
}

impl Chunk {
    /// Parses the chunk item at the start of `b` whose key's offset is `logical`; its length in bytes too.
    pub fn parse(logical: u64, b: &[u8]) -> Result<(Chunk, usize)> {
        if b.len() < ITEM {
            return Err(Error::new("a chunk item cut short"));
        }
        let n = le16(b, 44) as usize;
        let len = ITEM + n * STRIPE;
        if n == 0 || b.len() < len {
            return Err(Error::new(format!("a chunk item of {n} stripes cut short")));
        }
        let stripes = (0..n)
            .map(|i| {
                let s = ITEM + i * STRIPE;
                (le64(b, s), le64(b, s + 8))
            })
            .collect();
        let chunk = Chunk {
            logical,
            length: le64(b, 0),
            kind: le64(b, 24),
            stripes,
        };
        if chunk.length == 0 || chunk.logical.checked_add(chunk.length).is_none() {
            return Err(Error::new(format!(
                "a chunk of {} bytes at logical {logical}",
                chunk.length
            )));
        }
        Ok((chunk, len))
    }

    /// How many copies of each byte the profile keeps (the bytes it takes on the devices for each it holds).
    pub fn copies(&self) -> u64 {
        match self.kind {
            k if k & (kind::RAID1 | kind::DUP | kind::RAID10) != 0 => 2,
            k if k & kind::RAID1C3 != 0 => 3,
            k if k & kind::RAID1C4 != 0 => 4,
            _ => 1,
        }
    }
}

/// Every chunk, by logical address, and the device read.
#[derive(Debug, Clone, Default)]
pub struct ChunkMap {
    chunks: Vec<Chunk>,
    devid: u64,
    /// The device's length: no stripe of it lies past that.
    dev_len: u64,
}

impl ChunkMap {
    pub fn new(devid: u64, dev_len: u64) -> ChunkMap {
        ChunkMap {
            chunks: Vec::new(),
            devid,
            dev_len,
        }
    }

    /// The chunks of the superblock's system chunk array.
    pub fn from_sys_array(devid: u64, dev_len: u64, array: &[u8]) -> Result<ChunkMap> {
        let mut map = ChunkMap::new(devid, dev_len);
        let mut at = 0;
        while at < array.len() {
            if array.len() - at < 17 || array[at + 8] != crate::tree::key::CHUNK_ITEM {
                return Err(Error::new(
                    "the superblock's system chunk array holds something else than chunks",
                ));
            }
            let logical = le64(array, at + 9);
            let (chunk, len) = Chunk::parse(logical, &array[at + 17..])?;
            map.insert(chunk);
            at += 17 + len;
        }
        Ok(map)
    }

    pub fn insert(&mut self, c: Chunk) {
        match self.chunks.binary_search_by_key(&c.logical, |c| c.logical) {
            Ok(i) => self.chunks[i] = c,
            Err(i) => self.chunks.insert(i, c),
        }
    }

    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// The chunk that holds logical address `at`.
    pub fn chunk_of(&self, at: u64) -> Option<&Chunk> {
        let i = self.chunks.partition_point(|c| c.logical <= at);
        let c = self.chunks.get(i.checked_sub(1)?)?;
        (at - c.logical < c.length).then_some(c)
    }

    /// The byte offset on this device of the `len` bytes at logical address `at`, which one chunk holds.
    pub fn physical(&self, at: u64, len: u64) -> Result<u64> {
        let c = self
            .chunk_of(at)
            .ok_or_else(|| Error::new(format!("logical address {at} is in no chunk")))?;
        let off = at - c.logical;
        if len > c.length - off {
            return Err(Error::new(format!(
                "{len} bytes at logical address {at} run past their chunk"
            )));
        }
        let stripe = self.readable_stripe(c)?;
        let start = stripe.checked_add(off);
        match start.and_then(|s| s.checked_add(len)) {
            Some(end) if end <= self.dev_len => Ok(end - len),
            _ => Err(Error::new(format!(
                "logical address {at} maps past the device's end ({} bytes)",
                self.dev_len
            ))),
        }
    }

    /// Where this device holds chunk `c` whole.
    fn readable_stripe(&self, c: &Chunk) -> Result<u64> {
        let mine = c.stripes.iter().find(|s| s.0 == self.devid);
        match mine {
            Some(&(_, offset)) if c.kind & kind::STRIPED == 0 => Ok(offset),
            _ => Err(Error::new(self.unreadable(c))),
        }
    }

    /// Why chunk `c` cannot be read from this device.
    pub fn unreadable(&self, c: &Chunk) -> String {
        let mut others: Vec<u64> = c
            .stripes
            .iter()
            .map(|s| s.0)
            .filter(|&d| d != self.devid)
            .collect();
        others.sort_unstable();
        others.dedup();
        let others = others
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        if c.kind & kind::STRIPED != 0 {
            format!(
                "the {} chunk at logical {} is striped across devices ({} and this one, {}): uffs reads one device of a Btrfs file system, and needs devices {others} for it",
                profile_name(c.kind),
                c.logical,
                others,
                self.devid
            )
        } else {
            format!(
                "the chunk at logical {} is on device {others} only, not on this one ({}): uffs reads one device of a Btrfs file system",
                c.logical, self.devid
            )
        }
    }

    /// The first chunk this device cannot read, if any.
    pub fn first_unreadable(&self) -> Option<&Chunk> {
        self.chunks
            .iter()
            .find(|c| self.readable_stripe(c).is_err())
    }
}
