//! A shadow copy's index as a delta over the present volume's index.
//!
//! A store holds only the 16 KiB blocks of the volume that were overwritten after it was taken: every MFT record
//! outside them reads the same in the past as now, and so do its entries. [`changed_records`] finds the records
//! in those blocks (with what else makes their entries differ), and [`delta`] reads only them through the store
//! and makes them a delta over the present's index with `uffs_index::layer`, as a live update does. A store's
//! index then costs what the store changed, not what the volume holds.

use uffs_index::layer::{self, BaseMap, Delta};
use uffs_index::{BuildOptions, Index};

use super::BLOCK;
use crate::update::{base_of, hashed, read_records};
use crate::volume::{MftRun, Volume};
use crate::Result;

/// Records read at once while looking for extension records.
const READ_RUN: usize = 64;

/// The records of `then` (a volume as a shadow copy saw it) whose entries may differ from those of `now` (the
/// same volume as it is): the records in blocks the store holds, the base records of extension records among
/// them, records whose `$MFT:$BITMAP` bit differs, and records the MFT has now but did not have then. Sorted.
/// Every record of either when the blocks cannot tell: `then` is no shadow copy, or its MFT lay elsewhere (so
/// that no record can be trusted to read as now); the delta then holds the whole store.
pub fn changed_records(now: &Volume, then: &Volume) -> Result<Vec<u64>> {
    let rs = u64::from(then.record_size);
    if rs == 0
        || rs != u64::from(now.record_size)
        || then.fixups_applied
        || then.device.differs_from_present(0, 0).is_none()
        || !same_place(&then.runs, &now.runs)
    {
        return Ok((0..then.records_total.max(now.records_total)).collect());
    }
    let mut changed = Vec::new();
    for run in &then.runs {
        let Some(dev) = run.device_offset else {
            continue;
        };
        let end = dev + run.len;
        let mut block = dev - dev % BLOCK;
        while block < end {
            if then.device.differs_from_present(block, BLOCK) != Some(false) {
                // The MFT's bytes in this block, as record numbers.
                let lo = run.mft_offset + block.max(dev) - dev;
                let hi = run.mft_offset + (block + BLOCK).min(end) - dev;
                changed.extend((lo / rs..hi.div_ceil(rs)).filter(|&r| r < then.records_total));
            }
            block += BLOCK;
        }
    }
    changed.extend(then.records_total..now.records_total);
    let total = then.records_total.min(now.records_total);
    changed.extend((0..total).filter(|&r| then.bitmap_bit(r) != now.bitmap_bit(r)));
    changed.sort_unstable();
    changed.dedup();
    // Only records the store's MFT has can be read through it (the MFT may have grown since).
    let in_then: Vec<u64> = changed
        .iter()
        .copied()
        .filter(|&r| r < then.records_total)
        .collect();
    let bases = extension_bases(then, &in_then)?;
    changed.extend(bases);
    changed.sort_unstable();
    changed.dedup();
    Ok(changed)
}

/// Whether every record of the MFT described by `then` lies where `now` has it (an MFT only grows at its end).
fn same_place(then: &[MftRun], now: &[MftRun]) -> bool {
    then.iter().all(|t| {
        let mut at = t.mft_offset;
        let end = t.mft_offset + t.len;
        while at < end {
            let Some(n) = now
                .iter()
                .find(|n| n.mft_offset <= at && at < n.mft_offset + n.len)
            else {
                return false;
            };
            let step = (n.mft_offset + n.len).min(end) - at;
            let here = |r: &MftRun| r.device_offset.map(|d| d + (at - r.mft_offset));
            if here(t) != here(n) {
                return false;
            }
            at += step;
        }
        true
    })
}

/// The base records of the extension records among `records` of `vol` (read as they are there): a changed
/// extension record changes its base record's entries.
fn extension_bases(vol: &Volume, records: &[u64]) -> Result<Vec<u64>> {
    let rs = vol.record_size as usize;
    let mut buf = vec![0u8; rs * READ_RUN];
    let mut bases = Vec::new();
    let mut i = 0;
    while i < records.len() {
        let first = records[i];
        let mut n = 1;
        while n < READ_RUN && records.get(i + n) == Some(&(first + n as u64)) {
            n += 1;
        }
        let run = &mut buf[..n * rs];
        vol.read_records(first, run)
            .map_err(|e| crate::Error::io(format!("{}: MFT record {first}", vol.name), e))?;
        bases.extend(run.chunks_exact(rs).map(base_of).filter(|&b| b != 0));
        i += n;
    }
    Ok(bases)
}

/// The delta over `base` (the present volume's index; `map` made from it) that gives the volume as `then` saw
/// it, from the records [`changed_records`] found, read through `then`.
pub fn delta(then: &Volume, base: &Index, map: &BaseMap, changed: &[u64]) -> Result<Delta> {
    let mut records = changed.to_vec();
    records.extend(layer::records_to_recheck(base, map, None, changed));
    records.sort_unstable();
    records.dedup();
    let include_deleted = base.meta.has_deleted;
    let (batch, read) = read_records(then, &records, include_deleted)?;
    records.extend(read.iter().map(|&(r, _)| r));
    records.sort_unstable();
    records.dedup();
    let meta = crate::scan::volume_meta(then, include_deleted, then.space_bytes(u64::MAX));
    let opts = BuildOptions { include_deleted };
    let (mut d, _) = layer::apply(base, map, None, &records, &batch, meta, opts);
    // The store's folders' index slack is not read: the present's slack names are not the store's.
    d.hide_names_from_index_slack(base);
    // The record hashes that differ from the base's, as an update keeps them, so that a re-scan of the store (a
    // daemon checking it for changes) finds it unchanged: those of the records read, and none (0) past the
    // store's MFT.
    let before = base.record_hashes();
    if !before.is_empty() {
        let mut hashes: Vec<(u32, u32)> = Vec::new();
        // A record a re-scan does not read (not in use, unless deleted ones are kept) has hash 0.
        let read_now = read
            .iter()
            .map(|&(r, h)| (r, h * u32::from(hashed(then, include_deleted, r))));
        let gone = (then.records_total..before.len() as u64).map(|r| (r, 0));
        for (r, h) in read_now.chain(gone) {
            if before.get(r as usize).copied().unwrap_or(0) != h {
                hashes.push((r as u32, h));
            }
        }
        hashes.sort_unstable();
        hashes.dedup_by_key(|x| x.0);
        d.hashes = hashes;
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mft_offset: u64, len: u64, device_offset: Option<u64>) -> MftRun {
        MftRun {
            mft_offset,
            len,
            device_offset,
        }
    }

    #[test]
    fn an_mft_that_grew_at_its_end_keeps_its_records_in_place() {
        let then = [run(0, 4096, Some(1 << 20)), run(4096, 4096, Some(8 << 20))];
        // Grown: the last run longer, and a new one after it.
        let grown = [
            run(0, 4096, Some(1 << 20)),
            run(4096, 8192, Some(8 << 20)),
            run(12288, 4096, Some(3 << 20)),
        ];
        assert!(same_place(&then, &grown));
        // The same records described by runs cut elsewhere.
        let recut = [run(0, 2048, Some(1 << 20)), run(2048, 6144, None)];
        assert!(!same_place(&then, &recut));
        let recut = [
            run(0, 2048, Some(1 << 20)),
            run(2048, 2048, Some((1 << 20) + 2048)),
            run(4096, 4096, Some(8 << 20)),
        ];
        assert!(same_place(&then, &recut));
        // Moved (defragmented), or shrunk.
        assert!(!same_place(&then, &[run(0, 8192, Some(1 << 20))]));
        assert!(!same_place(&then, &[run(0, 4096, Some(1 << 20))]));
    }
}
