//! Sorting and top-N: a walk of a stored order when the set is dense, a threshold from a sample or a heap per
//! thread when it is not.

use super::*;

impl Searcher {
    /// The sort key of an entry: the key's value, ties broken by name order (so every key is a total order).
    pub(super) fn sort_key(&self, key: SortKey, id: EntryId) -> u128 {
        let o = self.aids();
        let idx = &*self.idx;
        let rank = u128::from(o.name_rank.at(id as usize));
        let primary: u64 = match key {
            SortKey::Name => 0,
            SortKey::Path => {
                let r = o.path_rank.at(id as usize);
                u64::from(self.path_blocks().map_or(r, |b| b.rank(r)))
            }
            SortKey::Size => idx.size(id),
            SortKey::Extension => u64::from(o.ext_id.get(id)),
            SortKey::Created => idx.created(id),
            SortKey::Modified => idx.modified(id),
            SortKey::Accessed => idx.accessed(id),
            SortKey::TreeSize => self.tree_size(id),
        };
        (u128::from(primary) << 32) | rank
    }

    /// Top `l` of a large set by a column value: estimate the `l`-th value from a sample, keep the members at or
    /// beyond it in one parallel pass over the column alone, and order only those by the full key. `None` when
    /// the set is small or the estimate kept too few (then a heap is used).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn top_by_threshold<P: Fn(EntryId) -> u64 + Sync>(
        &self,
        set: &Bitset,
        primary: P,
        descending: bool,
        k: &(dyn Fn(EntryId) -> u128 + Sync),
        count: usize,
        l: usize,
    ) -> Option<Vec<EntryId>> {
        use rayon::prelude::*;
        const SAMPLE: usize = 2048;
        if count < SAMPLE * 4 || l > count / 16 {
            return None;
        }
        let oriented = |id: EntryId| {
            if descending {
                !primary(id)
            } else {
                primary(id)
            }
        };
        // Evenly spaced members: the first member at or after each of SAMPLE evenly spaced words.
        let words = set.words();
        let mut sample: Vec<u64> = (0..SAMPLE)
            .filter_map(|i| {
                let start = i * words.len() / SAMPLE;
                let (off, w) = words[start..].iter().enumerate().find(|(_, w)| **w != 0)?;
                Some(oriented(
                    ((start + off) * 64) as EntryId + w.trailing_zeros(),
                ))
            })
            .collect();
        sample.sort_unstable();
        // Twice the expected position, so the threshold almost always keeps at least `l`.
        if sample.is_empty() {
            return None;
        }
        let pos = ((l * sample.len()).div_ceil(count) * 2 + 2).min(sample.len() - 1);
        let t = sample[pos];
        let kept: Vec<(u128, EntryId)> = set
            .words()
            .par_chunks(1024)
            .enumerate()
            .flat_map_iter(|(ci, chunk)| {
                let mut v = Vec::new();
                for (wi, &w) in chunk.iter().enumerate() {
                    let mut b = w;
                    while b != 0 {
                        let id = ((ci * 1024 + wi) * 64) as EntryId + b.trailing_zeros();
                        b &= b - 1;
                        if oriented(id) <= t {
                            v.push((k(id), id));
                        }
                    }
                }
                v.into_iter()
            })
            .collect();
        if kept.len() < l {
            return None;
        }
        let mut kept = kept;
        kept.select_nth_unstable(l - 1);
        kept.truncate(l);
        kept.sort_unstable();
        Some(kept.into_iter().map(|(_, id)| id).collect())
    }

    /// The members of `set` in the order of `key` (ties by name), at most `limit` of them. With a limit, each
    /// thread keeps a bounded heap of its range's best keys: one pass, no sort of the whole set.
    pub fn sorted(
        &self,
        set: &Bitset,
        key: Option<SortKey>,
        descending: bool,
        limit: Option<usize>,
    ) -> Vec<EntryId> {
        use rayon::prelude::*;
        let Some(key) = key else {
            let mut ids: Vec<EntryId> = set.iter().collect();
            if descending {
                ids.reverse();
            }
            if let Some(l) = limit {
                ids.truncate(l);
            }
            return ids;
        };
        let o = self.aids();
        // The sort key (96 bits) oriented, then a bit above it for an entry without a value, so it comes last
        // either way.
        const KEY_BITS: u128 = (1 << 96) - 1;
        let k = |id: EntryId| {
            let v = self.sort_key(key, id);
            let v = if descending { !v & KEY_BITS } else { v };
            if key.unknown(&self.idx, id) {
                v | (KEY_BITS + 1)
            } else {
                v
            }
        };
        let count = set.count();
        let n = set.len();
        // Walk the stored order, when the set is dense enough for the walk to be short: the first `l` members
        // lie about `l * n / count` entries in, which is at most an eighth of the order or at most 8 entries
        // per member kept (a sort of a dense set, whole, reads the order and the set and sorts nothing). Stored
        // orders break ties by name order, as the sort key does, so the walk gives the same answer.
        let stored = match key {
            SortKey::Name => Some(&o.name_order),
            SortKey::Path => Some(&o.path_order),
            SortKey::Size => Some(&o.size_order),
            SortKey::Created => Some(&o.created_order),
            SortKey::Modified => Some(&o.modified_order),
            SortKey::Accessed => Some(&o.accessed_order),
            SortKey::Extension => Some(&o.ext_order),
            SortKey::TreeSize => None,
        };
        let l = limit.unwrap_or(count).min(count);
        let walk = l.saturating_mul(n / count.max(1));
        if let Some(order) = stored.filter(|_| l > 0 && (walk <= n / 8 || walk <= count * 8)) {
            let pick = |id: &EntryId| set.get(*id as usize);
            if let Some(blocks) = self.path_blocks().filter(|_| key == SortKey::Path) {
                // The stored order with the blocks of moved folders where they sort now.
                let at = |p: usize| order.at(p);
                return if descending {
                    blocks
                        .positions()
                        .rev()
                        .map(at)
                        .filter(pick)
                        .take(l)
                        .collect()
                } else {
                    blocks.positions().map(at).filter(pick).take(l).collect()
                };
            }
            // Unknown times (0) lead a time's order: ascending, they are walked after the rest; descending, they
            // are last already.
            let unknowns = match (key, descending) {
                (SortKey::Created | SortKey::Modified | SortKey::Accessed, false) => {
                    let times = match key {
                        SortKey::Created => self.idx.created_times(),
                        SortKey::Modified => self.idx.modified_times(),
                        _ => self.idx.accessed_times(),
                    };
                    let fence = o.made_fences().map(|f| match key {
                        SortKey::Created => &f.created[..],
                        SortKey::Modified => &f.modified[..],
                        _ => &f.accessed[..],
                    });
                    let t = |id| times.get(id);
                    uffs_index::aids::lower_bound(order, &t, fence, uffs_index::time::FIRST_KNOWN)
                }
                _ => 0,
            };
            let ids: Vec<EntryId> = if descending {
                order.iter().rev().filter(pick).take(l).collect()
            } else {
                let rest = order.range(unknowns..order.len());
                rest.chain(order.range(0..unknowns))
                    .filter(pick)
                    .take(l)
                    .collect()
            };
            // A walk to the set's last member read the order from end to end, once: a daemon need not keep it.
            // Its pages stay in the page cache, so the next such walk maps them back in a few dozen faults.
            if l == count && walk > n / 2 {
                uffs_index::file::release_order_pages(&self.idx, order);
            }
            return ids;
        }
        match limit {
            Some(0) => Vec::new(),
            Some(l) if l < count => {
                let idx = &*self.idx;
                let top = match key {
                    SortKey::Size => {
                        self.top_by_threshold(set, |id| idx.size(id), descending, &k, count, l)
                    }
                    SortKey::Created | SortKey::Modified | SortKey::Accessed => {
                        let c = match key {
                            SortKey::Created => idx.created_times(),
                            SortKey::Modified => idx.modified_times(),
                            _ => idx.accessed_times(),
                        };
                        // Unknown times last: the largest value ascending, the smallest descending.
                        let last = if descending { 0 } else { u64::MAX };
                        let t = |id| match c.at(id) {
                            uffs_index::time::UNKNOWN => last,
                            t => t,
                        };
                        self.top_by_threshold(set, t, descending, &k, count, l)
                    }
                    SortKey::Extension => {
                        // Extension and name rank together fit in 64 bits: no ties at the threshold.
                        let (c, r) = (&o.ext_id, &o.name_rank);
                        let packed = |id: EntryId| {
                            (u64::from(c.get(id)) << 32) | u64::from(r.at(id as usize))
                        };
                        self.top_by_threshold(set, packed, descending, &k, count, l)
                    }
                    SortKey::TreeSize => self.top_by_threshold(
                        set,
                        |id| self.tree_size(id),
                        descending,
                        &k,
                        count,
                        l,
                    ),
                    SortKey::Name | SortKey::Path => None,
                };
                if let Some(top) = top {
                    return top;
                }
                const WORDS: usize = 2048;
                let n = set.len();
                let parts: Vec<Vec<(u128, EntryId)>> = (0..n.div_ceil(WORDS * 64))
                    .into_par_iter()
                    .map(|chunk| {
                        let mut heap: std::collections::BinaryHeap<(u128, EntryId)> =
                            std::collections::BinaryHeap::with_capacity(l + 1);
                        let lo = chunk * WORDS * 64;
                        let hi = (lo + WORDS * 64).min(n);
                        for id in lo as EntryId..hi as EntryId {
                            if !set.get(id as usize) {
                                continue;
                            }
                            let v = k(id);
                            if heap.len() < l {
                                heap.push((v, id));
                            } else if heap.peek().is_some_and(|top| v < top.0) {
                                heap.pop();
                                heap.push((v, id));
                            }
                        }
                        heap.into_vec()
                    })
                    .collect();
                let mut all: Vec<(u128, EntryId)> = parts.into_iter().flatten().collect();
                all.sort_unstable();
                all.truncate(l);
                all.into_iter().map(|(_, id)| id).collect()
            }
            _ => {
                let mut v: Vec<(u128, EntryId)> = set.iter().map(|id| (k(id), id)).collect();
                v.par_sort_unstable();
                v.into_iter().map(|(_, id)| id).collect()
            }
        }
    }
}
