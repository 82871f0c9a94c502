//! One store's block list, and reading the volume as it was through a chain of stores.
//!
//! A store's block list has a 32-byte descriptor per 16 KiB block of the volume that was overwritten after
//! the store was taken: the block's offset in the volume (`original`), where its old content was copied
//! (`store`, an offset in the volume that keeps the stores, inside the store's file), and flags. A *forwarder* says the block's old
//! content is what the next newer store holds for another block (`relative`); an *overlay* holds only some of
//! the block's 512-byte sectors (a bit each in `bitmap`). Reading store `i` looks for the block in store `i`,
//! then in `i + 1` …, then in the current volume. The store's bitmap marks blocks it did not hold as in use;
//! the newest store reads them as zeros (what libvshadow does; Windows leaves them undefined).
//!
//! When Windows keeps the stores on another volume (`vssadmin add shadowstorage`), the lists, bitmaps and
//! copied blocks are on that *storage* volume: `store` is an offset there, while `original`, a forwarder's
//! `relative` and the bitmaps' bits stay the original volume's (docs/research/vss-store-on-another-volume.md).

use std::collections::{HashMap, HashSet};
use std::io;

use super::{check_block, read_block, StoreInfo, BLOCK};
use crate::container::bytes::{le32, le64};
use crate::container::{bad, within};
use crate::ReadAt;

const FORWARDER: u32 = 0x1;
const OVERLAY: u32 = 0x2;
const NOT_USED: u32 = 0x4;
/// 512-byte sectors per block: the overlay bitmap's bits.
const SECTOR: u64 = 512;

#[derive(Debug, Clone, Copy)]
struct Descriptor {
    original: u64,
    relative: u64,
    store: u64,
    flags: u32,
    bitmap: u32,
}

/// A block's descriptor and, for an overlay, the sectors it replaces.
#[derive(Debug, Default, Clone, Copy)]
struct Entry {
    whole: Option<Descriptor>,
    overlay: Option<Descriptor>,
}

/// Where one store finds each block it holds.
#[derive(Debug, Default)]
pub struct StoreMap {
    blocks: HashMap<u64, Entry>,
    /// Forwarders, by the offset they forward to.
    reverse: HashSet<u64>,
    /// One bit per block, set where the store held no data (the block was free when it was taken).
    unused: Option<Vec<u8>>,
    /// The same, from the store before it (which may since have been deleted).
    previous_unused: Option<Vec<u8>>,
}

impl StoreMap {
    /// Reads the block list and bitmaps of `info`'s store from `storage` (the volume itself, or the volume
    /// that keeps its stores), for a volume of `volume_len` bytes.
    pub fn read(storage: &dyn ReadAt, volume_len: u64, info: &StoreInfo) -> io::Result<StoreMap> {
        let blocks_in_volume = volume_len.div_ceil(BLOCK);
        // Each list block holds 508 descriptors; a store holds at most a few per block of the volume.
        let max_list_blocks = (blocks_in_volume / 508 + 1) * 8;
        let mut map = StoreMap::default();
        let mut reverse: HashMap<u64, Descriptor> = HashMap::new();
        let mut block = vec![0u8; BLOCK as usize];
        let mut at = info.block_list;
        let mut seen = HashSet::new();
        while at != 0 {
            if !seen.insert(at) || seen.len() as u64 > max_list_blocks {
                return Err(bad(format!(
                    "shadow copy {}'s block list loops or is longer than the volume allows (at offset {at})",
                    info.index
                )));
            }
            read_block(storage, &mut block, at, "block list")?;
            check_block(&block, at, 3, "block list")?;
            for d in block[128..].chunks_exact(32) {
                let d = Descriptor {
                    original: le64(d, 0),
                    relative: le64(d, 8),
                    store: le64(d, 16),
                    flags: le32(d, 24),
                    bitmap: le32(d, 28),
                };
                if d.original == 0 && d.store == 0 && d.flags == 0 && d.relative == 0 {
                    continue; // an empty slot
                }
                map.add(d, &mut reverse, volume_len, storage.len(), info.index)?;
            }
            at = le64(&block, 40);
        }
        map.reverse = reverse.into_keys().collect();
        let bits = (blocks_in_volume as usize).div_ceil(8);
        map.unused = read_bitmap(storage, info.bitmap, bits, info.index)?;
        map.previous_unused = read_bitmap(storage, info.previous_bitmap, bits, info.index)?;
        Ok(map)
    }

    /// Adds one descriptor of the list, read front to back (libyal's "successive block descriptors").
    fn add(
        &mut self,
        mut d: Descriptor,
        reverse: &mut HashMap<u64, Descriptor>,
        volume_len: u64,
        storage_len: u64,
        index: u32,
    ) -> io::Result<()> {
        if d.flags & NOT_USED != 0 {
            return Ok(());
        }
        let outside = |at: u64, len: u64| !within(at, BLOCK, len) || !at.is_multiple_of(SECTOR);
        if outside(d.original, volume_len)
            || (d.flags & FORWARDER == 0 && outside(d.store, storage_len))
        {
            return Err(bad(format!(
                "shadow copy {index}'s block list points outside the volume (block {} copied to {})",
                d.original, d.store
            )));
        }
        if d.flags & OVERLAY == 0 {
            // A block that an earlier forwarder moved: it stands for the forwarder's block.
            if let Some(f) = reverse.remove(&d.original) {
                d.original = f.original;
                if d.flags & FORWARDER != 0 && d.original == d.relative {
                    return Ok(());
                }
            }
        }
        let e = self.blocks.entry(d.original).or_default();
        if d.flags & OVERLAY == 0 {
            e.whole = Some(d);
        } else if let Some(o) = &mut e.overlay {
            o.bitmap |= d.bitmap;
        } else {
            // Only its sectors: the rest of the block reads on through the newer stores.
            e.overlay = Some(d);
        }
        if d.flags & FORWARDER != 0 {
            reverse.insert(d.relative, d);
        }
        Ok(())
    }

    fn is_unused(&self, block: u64) -> bool {
        let bit = |m: &Option<Vec<u8>>| {
            m.as_ref().map(|m| {
                let i = (block / BLOCK) as usize;
                m.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
            })
        };
        bit(&self.unused) == Some(true) && bit(&self.previous_unused) != Some(false)
    }
}

/// A store's bitmap (a chain of type-6 blocks on `storage`), `bytes` long; `None` when it has none.
fn read_bitmap(
    storage: &dyn ReadAt,
    mut at: u64,
    bytes: usize,
    index: u32,
) -> io::Result<Option<Vec<u8>>> {
    if at == 0 {
        return Ok(None);
    }
    let mut bits = Vec::with_capacity(bytes.min(1 << 24));
    let mut block = vec![0u8; BLOCK as usize];
    let per_block = BLOCK as usize - 128;
    let mut seen = HashSet::new();
    while at != 0 && bits.len() < bytes {
        if !seen.insert(at) || seen.len() > bytes / per_block + 1 {
            return Err(bad(format!(
                "shadow copy {index}'s bitmap blocks loop (at offset {at})"
            )));
        }
        read_block(storage, &mut block, at, "bitmap")?;
        check_block(&block, at, 6, "bitmap")?;
        let take = per_block.min(bytes - bits.len());
        bits.extend_from_slice(&block[128..128 + take]);
        at = le64(&block, 40);
    }
    Ok(Some(bits))
}

/// The two volumes a snapshot reads from: the volume as it is now, and the one its stores are on (the same
/// volume unless Windows keeps them on another).
#[derive(Clone, Copy)]
pub(super) struct Volumes<'a> {
    pub present: &'a dyn ReadAt,
    pub storage: &'a dyn ReadAt,
}

/// Where a block's content is, for one store.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Where {
    /// At this offset of the volume as it is now.
    Volume(u64),
    /// A store's copy, at this offset of the storage volume.
    Store(u64),
    Zero,
}

/// Where block `block` of the volume as store `active` saw it lies: in a store's copy, or still in place.
fn locate(maps: &[StoreMap], active: usize, block: u64) -> Where {
    let mut b = block;
    for i in active..maps.len() {
        let m = &maps[i];
        let last = i + 1 == maps.len();
        if let Some(d) = m.blocks.get(&b).and_then(|e| e.whole) {
            if d.flags & FORWARDER != 0 {
                if last {
                    return Where::Volume(d.relative);
                }
                b = d.relative;
                continue;
            }
            return Where::Store(d.store);
        }
        if last {
            if !m.reverse.contains(&b) && i == active && m.is_unused(b) {
                return Where::Zero;
            }
            return Where::Volume(b);
        }
    }
    Where::Volume(b)
}

/// Whether block `block` reads otherwise through store `active` than from the volume as it is now.
pub(super) fn moved(maps: &[StoreMap], active: usize, block: u64) -> bool {
    has_overlay(&maps[active], block)
        || !matches!(locate(maps, active, block), Where::Volume(b) if b == block)
}

/// Fills `buf` from `offset` of the volume as store `active` saw it. Blocks whose content lies side by side
/// are read with one read.
pub(super) fn read(
    volumes: Volumes,
    maps: &[StoreMap],
    active: usize,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<()> {
    // A run: where in `buf` it starts, where its bytes come from, how long it is.
    let mut run: Option<(usize, Where, usize)> = None;
    let mut done = 0usize;
    while done < buf.len() {
        let at = offset + done as u64;
        let block = at - at % BLOCK;
        let n = ((BLOCK - at % BLOCK) as usize).min(buf.len() - done);
        let src = match locate(maps, active, block) {
            Where::Volume(v) => Where::Volume(v + at % BLOCK),
            Where::Store(v) => Where::Store(v + at % BLOCK),
            Where::Zero => Where::Zero,
        };
        let continues = run.is_some_and(|(_, w, len)| match (w, src) {
            (Where::Volume(a), Where::Volume(b)) | (Where::Store(a), Where::Store(b)) => {
                a + len as u64 == b
            }
            (Where::Zero, Where::Zero) => true,
            _ => false,
        });
        match &mut run {
            Some((_, _, len)) if continues => *len += n,
            _ => {
                if let Some(r) = run.take() {
                    fill(volumes, buf, r)?;
                }
                run = Some((done, src, n));
            }
        }
        if has_overlay(&maps[active], block) {
            if let Some(r) = run.take() {
                fill(volumes, buf, r)?;
            }
            apply_overlay(
                volumes.storage,
                &maps[active],
                block,
                at % BLOCK,
                &mut buf[done..done + n],
            )?;
        }
        done += n;
    }
    if let Some(r) = run {
        fill(volumes, buf, r)?;
    }
    Ok(())
}

/// Fills one run of `buf` from the present volume, a store's copy, or with zeros.
fn fill(
    volumes: Volumes,
    buf: &mut [u8],
    (start, src, len): (usize, Where, usize),
) -> io::Result<()> {
    let out = &mut buf[start..start + len];
    let (from, v) = match src {
        Where::Volume(v) => (volumes.present, v),
        Where::Store(v) => (volumes.storage, v),
        Where::Zero => {
            out.fill(0);
            return Ok(());
        }
    };
    if !within(v, len as u64, from.len()) {
        return Err(bad(format!(
            "a shadow copy's block lies at offset {v}, outside the volume"
        )));
    }
    from.read_exact_at(out, v)
}

fn has_overlay(m: &StoreMap, block: u64) -> bool {
    m.blocks.get(&block).is_some_and(|e| e.overlay.is_some())
}

/// Replaces the sectors of `out` (block `block` from byte `within`) that the active store's overlay holds (its
/// copy is on `storage`).
fn apply_overlay(
    storage: &dyn ReadAt,
    m: &StoreMap,
    block: u64,
    within_block: u64,
    out: &mut [u8],
) -> io::Result<()> {
    let Some(o) = m.blocks.get(&block).and_then(|e| e.overlay) else {
        return Ok(());
    };
    let end = within_block + out.len() as u64;
    for s in 0..BLOCK / SECTOR {
        let (lo, hi) = (s * SECTOR, (s + 1) * SECTOR);
        if o.bitmap & (1 << s) == 0 || hi <= within_block || lo >= end {
            continue;
        }
        let (from, to) = (lo.max(within_block), hi.min(end));
        let src = o.store + from;
        if !within(src, to - from, storage.len()) {
            return Err(bad(format!(
                "a shadow copy overlay of block {block} lies outside the volume"
            )));
        }
        storage.read_exact_at(
            &mut out[(from - within_block) as usize..(to - within_block) as usize],
            src,
        )?;
    }
    Ok(())
}
