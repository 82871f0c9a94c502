//! Applying changes to an index: the entries of the records that changed are replaced by those records as they
//! are now, and everything derived from entries (parents, folder totals, search aids) is made again.
//!
//! The caller (`uffs_mft::update`) finds which records changed — from the change journal or a re-scan — and
//! parses them again; this module only replaces entries. Kept entries are copied column by column, never parsed
//! again, so the cost beyond the changed records is a few linear passes over the columns.

use std::time::{Duration, Instant};

use crate::batch::RecordBatch;
use crate::build::{BuildOptions, BuildStats, Builder};
use crate::index::{flags, Index, VolumeMeta};

/// What an update did.
#[derive(Debug, Clone, Default)]
pub struct UpdateStats {
    /// Records whose entries were replaced.
    pub records: u64,
    pub entries_removed: u64,
    pub entries_added: u64,
    pub build: BuildStats,
    /// Copying kept entries and adding the re-read ones.
    pub entries_time: Duration,
    /// Linking parents and summing folder totals.
    pub link_time: Duration,
    /// Making the search aids again.
    pub aids_time: Duration,
}

impl Index {
    /// Records an update must parse again besides the changed ones (`changed`, sorted), because their entries
    /// do not keep the parent reference the volume has:
    /// * orphans: the index hangs them under `$Orphan`, and their parent may have come back;
    /// * deleted entries, and entries of deleted folders, whose folder's record changed: they may have been
    ///   linked by the rule that lets a deleted entry be one sequence number behind its deleted folder, and
    ///   whether that still holds depends on the reference only the record has.
    ///
    /// Live entries of live folders were linked by an exact match of the folder's sequence number, so their
    /// parent reference is the folder's record and sequence: those are rebuilt without reading anything.
    pub fn records_to_recheck(&self, changed: &[u64]) -> Vec<u64> {
        let mut v: Vec<u64> = (0..self.len())
            .filter(|&i| {
                let f = self.flags[i];
                if f & flags::SYNTHETIC != 0 {
                    return false;
                }
                if f & flags::ORPHAN != 0 {
                    return true;
                }
                let p = self.parent[i] as usize;
                (f | self.flags[p]) & flags::DELETED != 0
                    && changed.binary_search(&u64::from(self.record[p])).is_ok()
            })
            .map(|i| u64::from(self.record[i]))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The index `old` with the entries of records `changed` (sorted, no duplicates) replaced by the records in
/// `fresh`, which holds those records as parsed now, with their extension records. A changed record that is
/// missing from `fresh` (no longer in use) just loses its entries. Search aids are made when `old` had them.
pub fn apply(
    old: &Index,
    changed: &[u64],
    fresh: &RecordBatch,
    meta: VolumeMeta,
    opts: BuildOptions,
) -> (Index, UpdateStats) {
    let t = Instant::now();
    let is_changed = |r: u32| changed.binary_search(&u64::from(r)).is_ok();
    let mut builder = Builder::seeded(old, meta, opts, |r| !is_changed(r));
    let kept = builder.entries();
    builder.add_batch(fresh);
    let entries_time = t.elapsed();
    let t = Instant::now();
    let (mut idx, build) = builder.finish();
    let link_time = t.elapsed();
    let t = Instant::now();
    if old.search_aids().is_some() {
        idx.add_search_aids();
    }
    let synthetic = |x: &Index| {
        (0..x.len())
            .filter(|&i| x.flags[i] & flags::SYNTHETIC != 0)
            .count()
    };
    let stats = UpdateStats {
        records: changed.len() as u64,
        entries_removed: (old.len() - synthetic(old) - kept) as u64,
        entries_added: (idx.len() - synthetic(&idx) - kept) as u64,
        build,
        entries_time,
        link_time,
        aids_time: t.elapsed(),
    };
    (idx, stats)
}
