//! What applying changes to an index needs besides the delta itself (`crate::layer`): the records an update must
//! read again although they did not change, and what an update did.

use std::time::Duration;

use crate::build::BuildStats;
use crate::index::{flags, Index};

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
                if f & (flags::SYNTHETIC | flags::FROM_INDEX_SLACK) != 0 {
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
