//! Live updates as a layer over an immutable base index, so applying a change costs what the change touches, not
//! what the volume holds.
//!
//! A [`Delta`] is a small index of every entry of the volume's current state that differs from the base: the
//! entries of the changed records and their ancestor folders (whose totals change). A bitset hides the base
//! entries it replaces. The delta is closed under parents (every delta entry's parent is a delta entry), so it
//! resolves its own paths, and the base less its hidden entries plus the delta is exactly the current volume: a
//! query runs on both and merges the answers.
//!
//! A folder renamed or moved is one changed record: the entries below it stay in the base, and a [`view`] of the
//! base resolves their paths through the folder's new path ([`crate::graft`]). Only a folder that is gone (deleted,
//! its record reused) takes its base subtree into the delta, where the entries find their new places.
//!
//! Each update makes a new delta from the base, the previous delta and the changed records; the base is written
//! again only when the delta has grown large (compaction, in `uffs_mft::update`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::batch::RecordBatch;
use crate::build::{BuildOptions, Builder};
use crate::graft::Grafts;
use crate::index::{flags, EntryId, Index, VolumeMeta};
use crate::update::UpdateStats;

const NONE: u32 = u32::MAX;

/// Lookups on a base index that every delta over it needs, made once per base (one pass over it): each record's
/// first entry, the synthetic folders, and the entries an update may have to read again.
#[derive(Debug, Default)]
pub struct BaseMap {
    /// First entry of each record number (`NONE`: none), for records up to a bound the entries justify.
    first: Vec<u32>,
    /// First entries of records numbered past that bound (only damaged volumes have them).
    far: HashMap<u32, EntryId>,
    /// Synthetic entries (the root when the MFT had none, `$Orphan`) by their record number.
    synthetic: Vec<(u32, EntryId)>,
    /// Orphans, and deleted entries or entries of deleted folders: see [`Index::records_to_recheck`].
    recheck: Vec<EntryId>,
}

impl BaseMap {
    pub fn new(base: &Index) -> BaseMap {
        let n = base.len();
        let dense = (base.meta.records_total as usize).min(4 * n + 4096);
        let mut m = BaseMap {
            first: vec![NONE; dense],
            ..BaseMap::default()
        };
        for i in 0..n {
            let (f, r) = (base.flags[i], base.record[i]);
            if f & flags::SYNTHETIC != 0 {
                m.synthetic.push((r, i as EntryId));
                continue;
            }
            // A name from index slack is no entry of its record: an update keeps it as the build found it.
            if f & flags::FROM_INDEX_SLACK != 0 {
                continue;
            }
            match m.first.get_mut(r as usize) {
                Some(slot) if *slot == NONE => *slot = i as u32,
                Some(_) => {}
                None => {
                    m.far.entry(r).or_insert(i as EntryId);
                }
            }
            let p = base.parent[i] as usize;
            if f & flags::ORPHAN != 0 || (f | base.flags[p]) & flags::DELETED != 0 {
                m.recheck.push(i as EntryId);
            }
        }
        m
    }

    /// The first base entry of record `record` (not a synthetic one).
    pub fn first(&self, record: u64) -> Option<EntryId> {
        let r = u32::try_from(record).ok()?;
        match self.first.get(r as usize) {
            Some(&e) => (e != NONE).then_some(e),
            None => self.far.get(&r).copied(),
        }
    }

    /// The base entries of record `record` (adjacent: its names, then its streams).
    fn entries(&self, base: &Index, record: u64) -> std::ops::Range<usize> {
        let Some(first) = self.first(record) else {
            return 0..0;
        };
        let first = first as usize;
        let end = (first..base.len())
            .find(|&i| u64::from(base.record[i]) != record || base.flags[i] & flags::SYNTHETIC != 0)
            .unwrap_or(base.len());
        first..end
    }
}

/// The entries of a volume's current state that differ from a base index, and the base entries they replace.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    /// The differing entries, with their search aids; closed under parents. Shared with the searcher of it.
    pub index: Arc<Index>,
    /// For a shadow copy's delta: which store it gives.
    pub store: Option<StoreIdentity>,
    /// A bit per base entry: set for the entries the delta replaces or that are gone.
    pub hidden: Vec<u64>,
    /// Record hashes that changed since the base was made, as (record, hash), sorted by record: a re-scan compares
    /// the base's hashes patched with these.
    pub hashes: Vec<(u32, u32)>,
}

/// Which shadow copy a delta gives, named for good: Windows deletes the oldest stores when it needs room, and
/// the positions of the others (`@vssN`) shift; these do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreIdentity {
    /// The shadow copy's id (what `vssadmin list shadows` shows), as stored.
    pub shadow_copy_id: [u8; 16],
    /// The store's id (its catalog entries' and its file's), as stored.
    pub store_id: [u8; 16],
    /// When it was taken (FILETIME, UTC).
    pub created: u64,
    /// The source its store was read from when the volume keeps its stores on another one that was given
    /// (`--shadow-storage`), as an absolute path where it is one: offered again when the store is read later.
    pub storage: Option<String>,
}

fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 != 0
}

/// Sets bit `i`; true when it was clear.
fn hide(words: &mut [u64], i: usize) -> bool {
    let was = bit(words, i);
    words[i / 64] |= 1 << (i % 64);
    !was
}

impl Delta {
    /// Hides every base entry whose name came from index slack: for a delta that gives another state of the
    /// volume (a shadow copy's), whose folders' slack was never read, the base's slack names are not its own.
    pub fn hide_names_from_index_slack(&mut self, base: &Index) {
        for (i, &f) in base.flags.iter().enumerate() {
            if f & flags::FROM_INDEX_SLACK != 0 {
                hide(&mut self.hidden, i);
            }
        }
    }

    pub fn is_hidden(&self, base_entry: EntryId) -> bool {
        bit(&self.hidden, base_entry as usize)
    }

    /// Base entries hidden.
    pub fn hidden_count(&self) -> usize {
        self.hidden.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Entries of the current state: the base's visible ones and the delta's.
    pub fn entries(&self, base: &Index) -> usize {
        base.len() - self.hidden_count() + self.index.len()
    }

    /// The base's record hashes patched with the delta's (by record number; 0: not read). None when the base
    /// keeps none (it was made by an older uffs): the delta's alone would make every other record look changed.
    pub fn record_hashes(&self, base: &Index) -> Vec<u32> {
        if base.record_hashes().is_empty() {
            return Vec::new();
        }
        let mut h = base.record_hashes().to_vec();
        // The MFT may have grown since the base was made.
        let total = self.index.meta.records_total as usize;
        h.resize(h.len().max(total), 0);
        for &(r, hash) in &self.hashes {
            if let Some(slot) = h.get_mut(r as usize) {
                *slot = hash;
            }
        }
        h
    }
}

/// Delta entries past which a delta is merged into a new whole index: a sixteenth of the base, so a query,
/// which searches both, costs little more than on a whole index, and an update, which makes the delta again,
/// stays small. `UFFS_COMPACT_AT` (entries) overrides it, for measurements.
pub fn compact_at(base: &Index) -> usize {
    std::env::var("UFFS_COMPACT_AT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((base.len() / 16).max(4096))
}

/// `base` with `delta` merged in: the index a fresh build of the delta's state would give (entry ids aside), with
/// the record hashes of both. Nothing is read from the volume.
pub fn compact(base: &Index, delta: &Delta) -> (Index, crate::BuildStats) {
    let meta = delta.index.meta.clone();
    let opts = BuildOptions {
        include_deleted: meta.has_deleted,
    };
    let mut b = Builder::new(meta, opts, delta.entries(base)).with_root_record(root_record(base));
    b.seed_as_is(
        base,
        (0..base.len() as EntryId).filter(|&e| !delta.is_hidden(e)),
    );
    b.seed_as_is(&delta.index, 0..delta.index.len() as EntryId);
    let (mut idx, stats) = b.finish();
    idx.set_record_hashes(delta.record_hashes(base));
    if base.search_aids().is_some() {
        idx.add_search_aids();
    }
    (idx, stats)
}

/// The record of `base`'s root folder: a delta's builder must know it (XFS's is the superblock's, not a fixed one).
fn root_record(base: &Index) -> u64 {
    u64::from(base.record[base.root as usize])
}

/// Records an update of `base` + `delta` must read again besides `changed` (sorted), for the reasons
/// [`Index::records_to_recheck`] gives, in the base's visible entries and in the delta.
pub fn records_to_recheck(
    base: &Index,
    map: &BaseMap,
    delta: Option<&Delta>,
    changed: &[u64],
) -> Vec<u64> {
    let mut v: Vec<u64> = map
        .recheck
        .iter()
        .filter(|&&e| !delta.is_some_and(|d| d.is_hidden(e)))
        .filter(|&&e| {
            let i = e as usize;
            let p = base.parent[i] as usize;
            base.flags[i] & flags::ORPHAN != 0
                || changed.binary_search(&u64::from(base.record[p])).is_ok()
        })
        .map(|&e| u64::from(base.record[e as usize]))
        .collect();
    if let Some(d) = delta {
        v.extend(d.index.records_to_recheck(changed));
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The delta over `base` after records `changed` (sorted, no duplicates; with what [`records_to_recheck`] adds)
/// changed again since `prev` (none: since the base), `fresh` holding those records as they are now (a changed
/// record missing from it is no longer in use). `meta` is the volume's description now (journal position, change
/// stamp). Costs what the change and `prev` hold, plus a pass over the hidden bits.
pub fn apply(
    base: &Index,
    map: &BaseMap,
    prev: Option<&Delta>,
    changed: &[u64],
    fresh: &RecordBatch,
    meta: VolumeMeta,
    opts: BuildOptions,
) -> (Delta, UpdateStats) {
    let t = Instant::now();
    let n = base.len();
    let mut hidden = prev.map_or_else(|| vec![0u64; n.div_ceil(64)], |d| d.hidden.clone());
    let is_changed = |r: u32| changed.binary_search(&u64::from(r)).is_ok();
    let mut removed = 0u64;
    // The base entries of changed records are replaced; their folders, and the folders the records name now,
    // join the delta with their ancestors (their totals change).
    let mut starts: Vec<EntryId> = Vec::new();
    for &r in changed {
        for e in map.entries(base, r) {
            removed += u64::from(hide(&mut hidden, e));
            starts.push(base.parent[e]);
        }
    }
    for name in &fresh.names {
        if let Some(e) = map.first(name.parent & 0xFFFF_FFFF_FFFF) {
            starts.push(e);
        }
    }
    let mut seeds: Vec<EntryId> = Vec::new();
    for s in starts {
        let mut x = s;
        while !bit(&hidden, x as usize) {
            if base.flags[x as usize] & flags::SYNTHETIC != 0 {
                hide(&mut hidden, x as usize);
            } else {
                // The whole record joins (a folder's named streams too): a record's entries stay together, in
                // the delta and in an index merged from it, where `BaseMap::entries` finds them.
                for e in map.entries(base, u64::from(base.record[x as usize])) {
                    if hide(&mut hidden, e) {
                        seeds.push(e as EntryId);
                    }
                }
            }
            if x == base.root {
                break;
            }
            x = base.parent[x as usize];
        }
    }
    let prev_kept = |d: &Delta| {
        (0..d.index.len() as EntryId)
            .filter(|&i| !is_changed(d.index.record[i as usize]))
            .collect::<Vec<_>>()
    };
    let prev_ids = prev.map(prev_kept).unwrap_or_default();
    let mut entries_time;
    let (mut idx, build) = loop {
        seeds.sort_unstable();
        let cap = seeds.len() + prev_ids.len() + fresh.names.len() + fresh.streams.len() + 16;
        let mut b = Builder::new(meta.clone(), opts, cap).with_root_record(root_record(base));
        b.seed(base, seeds.iter().copied());
        if let Some(d) = prev {
            b.seed(&d.index, prev_ids.iter().copied());
        }
        b.add_batch(fresh);
        entries_time = t.elapsed();
        let (idx, build) = b.finish();
        // A folder whose path changed takes its base subtree along; one more pass builds it in.
        let moved = moved_subtrees(base, map, &idx, changed, &mut hidden);
        if moved.is_empty() {
            break (idx, build);
        }
        seeds.extend(moved);
    };
    let link_time = t.elapsed() - entries_time;
    let t_aids = Instant::now();
    if base.search_aids().is_some() {
        idx.add_search_aids();
    }
    let stats = UpdateStats {
        records: changed.len() as u64,
        entries_removed: removed,
        entries_added: idx.len() as u64,
        build,
        entries_time,
        link_time,
        aids_time: t_aids.elapsed(),
    };
    let hashes = prev.map(|d| d.hashes.clone()).unwrap_or_default();
    (
        Delta {
            index: Arc::new(idx),
            store: prev.and_then(|d| d.store.clone()),
            hidden,
            hashes,
        },
        stats,
    )
}

/// The base entries below each changed folder that is gone (deleted, its record reused) that are not hidden yet:
/// they must join the delta, which finds their places now. (Below a folder renamed or moved, they stay: a
/// [`view`] resolves their paths through its new one.) Hides them.
fn moved_subtrees(
    base: &Index,
    map: &BaseMap,
    delta: &Index,
    changed: &[u64],
    hidden: &mut [u64],
) -> Vec<EntryId> {
    let mut out = Vec::new();
    let mut delta_first: Option<HashMap<u32, EntryId>> = None;
    for &r in changed {
        let Some(b) = map.first(r) else { continue };
        let bf = base.flags[b as usize];
        if bf & flags::DIRECTORY == 0 || bf & flags::STREAM != 0 {
            continue;
        }
        let firsts = delta_first.get_or_insert_with(|| {
            let mut m = HashMap::new();
            for i in 0..delta.len() {
                m.entry(delta.record[i]).or_insert(i as EntryId);
            }
            m
        });
        let same = firsts
            .get(&base.record[b as usize])
            .is_some_and(|&d| same_folder(base, b, delta, d));
        if !same {
            for e in subtree(base, b) {
                if hide(hidden, e as usize) {
                    out.push(e);
                }
            }
        }
    }
    out
}

/// Whether base folder `b` and delta entry `d` (of the same record) are the same folder, wherever it is now: same
/// sequence number and kind. The base entries below it are then below it still.
fn same_folder(base: &Index, b: EntryId, delta: &Index, d: EntryId) -> bool {
    const KIND: u32 =
        flags::DIRECTORY | flags::DELETED | flags::ORPHAN | flags::STREAM | flags::SYNTHETIC;
    base.sequence(b) == delta.sequence(d)
        && base.flags(b) & KIND == delta.flags(d) & KIND
        && delta.flags(d) & flags::DIRECTORY != 0
}

/// Whether base folder `b` and delta entry `d` (of the same record) are the same folder in the same place: same
/// name, sequence number, kind and parent.
fn same_place(base: &Index, b: EntryId, delta: &Index, d: EntryId) -> bool {
    let (bp, dp) = (base.parent(b), delta.parent(d));
    same_folder(base, b, delta, d)
        && base.name_bytes(b) == delta.name_bytes(d)
        && base.record(bp) == delta.record(dp)
        && base.sequence(bp) == delta.sequence(dp)
        && base.flags(bp) & flags::SYNTHETIC == delta.flags(dp) & flags::SYNTHETIC
}

/// `base` as a delta over it leaves it: with the [`Grafts`] its paths resolve through (the same index when no
/// folder's path changed). `hidden` is the delta's bit per base entry. Costs a pass over the hidden bits and a
/// walk up from each hidden folder.
pub fn view(base: &Arc<Index>, hidden: &[u64], delta: &Index) -> Arc<Index> {
    let g = grafts(base, hidden, delta);
    if g.is_empty() && base.grafts().is_none() {
        Arc::clone(base)
    } else {
        Arc::new(base.with_grafts(g))
    }
}

/// The folders of `base` that the delta hides and holds again, as the same folder, at another path: their paths
/// now, and which were renamed or moved themselves.
pub fn grafts(base: &Index, hidden: &[u64], delta: &Index) -> Grafts {
    let mut folders: HashMap<u32, EntryId> = HashMap::new();
    for d in 0..delta.len() as EntryId {
        if delta.flags(d) & (flags::DIRECTORY | flags::STREAM | flags::SYNTHETIC)
            == flags::DIRECTORY
        {
            folders.entry(delta.record(d)).or_insert(d);
        }
    }
    let mut list = Vec::new();
    for (w, &word) in hidden.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let b = (w * 64) as EntryId + bits.trailing_zeros();
            bits &= bits - 1;
            if b as usize >= base.len()
                || b == base.root()
                || base.flags(b) & (flags::DIRECTORY | flags::STREAM | flags::SYNTHETIC)
                    != flags::DIRECTORY
            {
                continue;
            }
            let Some(&d) = folders.get(&base.record(b)) else {
                continue;
            };
            if !same_folder(base, b, delta, d) {
                continue;
            }
            let now = names_up(delta, d);
            if now != names_up(base, b) {
                list.push((b, now, !same_place(base, b, delta, d)));
            }
        }
    }
    Grafts::new(list)
}

/// The names on the path of `id`, from the root's child down to `id`, as `idx` holds them (its grafts aside).
fn names_up(idx: &Index, id: EntryId) -> crate::graft::PathNames {
    let mut names = Vec::new();
    let mut cur = id;
    while cur != idx.root() && names.len() <= crate::MAX_DEPTH {
        names.push(idx.name_bytes(cur).into_owned().into_boxed_slice());
        cur = idx.parent(cur);
    }
    names.reverse();
    names
}

/// The entries below folder `b` in the base: a stretch of the path order (depth first), or a scan without aids.
fn subtree(base: &Index, b: EntryId) -> Vec<EntryId> {
    let under = |mut e: EntryId| {
        while e != base.root {
            e = base.parent[e as usize];
            if e == b {
                return true;
            }
        }
        false
    };
    match base.search_aids() {
        Some(a) => a
            .path_order
            .range(a.path_rank.at(b as usize) as usize + 1..a.path_order.len())
            .take_while(|&e| under(e))
            .collect(),
        None => (0..base.len() as EntryId).filter(|&e| under(e)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A re-scan compares the base's hashes patched with the delta's; a base without hashes (an older uffs's)
    /// gives none, so the index is rebuilt instead of every record looking changed.
    #[test]
    fn record_hashes_patch_the_base_or_are_none() {
        let mut base = Index::default();
        base.set_record_hashes(vec![5, 6, 7]);
        let mut grown = Index::default();
        grown.meta.records_total = 4;
        let delta = Delta {
            index: Arc::new(grown),
            store: None,
            hidden: Vec::new(),
            hashes: vec![(1, 9), (3, 8)],
        };
        assert_eq!(delta.record_hashes(&base), vec![5, 9, 7, 8]);
        assert!(delta.record_hashes(&Index::default()).is_empty());
    }
}
