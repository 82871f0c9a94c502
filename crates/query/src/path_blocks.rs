//! The path order of a base index under a delta that renamed or moved folders.
//!
//! A base index stores its path order: depth first, each folder's children by folded name. A folder the delta
//! renamed or moved stays in that order where its old path sorted, with its whole subtree after it (see
//! `uffs_index::graft`). Its subtree is one stretch of the order, and inside the stretch the order still holds:
//! the names below it did not change. So the order now is the stored one cut into a few *runs* (the stretch of
//! each moved folder, less the stretches of moved folders inside it, and the rest), each already in order, merged
//! by the paths now. [`PathBlocks`] finds the stretches with binary searches, so it costs a few path comparisons
//! per moved folder, never a pass over the entries.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use uffs_index::aids::SearchAids;
use uffs_index::packed::Packed;
use uffs_index::paths::fold_into;
use uffs_index::{EntryId, Index};

/// The path order of an index with grafts, as stretches of its stored path order.
#[derive(Debug)]
pub struct PathBlocks {
    /// (start, end) positions in the stored order, in the order now.
    stretches: Vec<(u32, u32)>,
    /// (start, end, position now of start), sorted by start: from a stored rank to the rank now.
    by_start: Vec<(u32, u32, u32)>,
}

/// What paths are compared by: the path now, folded, with `/` as the lowest byte, so that comparing two keys
/// compares their paths name by name, as the path order does (`/a/b` before `/a-c`).
pub fn path_key(idx: &Index, id: EntryId, out: &mut Vec<u8>) {
    let mut path = String::with_capacity(128);
    idx.path_into(id, &mut path);
    out.clear();
    fold_into(path.as_bytes(), out);
    for b in out.iter_mut().filter(|b| **b == b'/') {
        *b = 0;
    }
}

/// The end of the stretch of the stored path order that folder `m`, at position `at`, begins: itself and its
/// subtree by the stored parent links (which a view keeps). A binary search: O(log n) walks up.
pub fn stretch_end(idx: &Index, order: &Packed, at: usize, m: EntryId) -> usize {
    let root = idx.root();
    let below = |mut e: EntryId| {
        for _ in 0..=uffs_index::MAX_DEPTH {
            if e == m {
                return true;
            }
            if e == root {
                return false;
            }
            e = idx.parent(e);
        }
        false
    };
    order.partition_point(at + 1..order.len(), below)
}

/// One run: stretches of the stored order that keep their order, and how far the merge has taken it.
struct Run {
    stretches: Vec<(u32, u32)>,
    /// Entries before each stretch, and in all (one more element).
    before: Vec<u32>,
    next: u32,
}

impl Run {
    fn new(stretches: Vec<(u32, u32)>) -> Run {
        let mut before = vec![0];
        for &(s, e) in &stretches {
            before.push(before[before.len() - 1] + (e - s));
        }
        Run {
            stretches,
            before,
            next: 0,
        }
    }

    fn len(&self) -> u32 {
        self.before[self.before.len() - 1]
    }

    /// The stored position of the run's `i`-th entry.
    fn position(&self, i: u32) -> u32 {
        let k = self.before.partition_point(|&b| b <= i) - 1;
        self.stretches[k].0 + (i - self.before[k])
    }

    /// The stored stretches of the run's entries `from..to`.
    fn take(&self, from: u32, to: u32, out: &mut Vec<(u32, u32)>) {
        let mut i = from;
        while i < to {
            let k = self.before.partition_point(|&b| b <= i) - 1;
            let end = to.min(self.before[k + 1]);
            let s = self.stretches[k].0 + (i - self.before[k]);
            out.push((s, s + (end - i)));
            i = end;
        }
    }
}

impl PathBlocks {
    /// The order now of `idx` (a view with grafts) from its stored `aids`. `None` when it has no moved folder,
    /// or when the stored order does not hold a moved folder where its rank says (aids not checked yet).
    pub fn build(idx: &Index, aids: &SearchAids) -> Option<PathBlocks> {
        let moved = idx.grafts()?.moved();
        if moved.is_empty() {
            return None;
        }
        let (order, rank) = (&aids.path_order, &aids.path_rank);
        let n = order.len() as u32;
        // Each moved folder's stretch: itself and its subtree (by the stored parent links, which a view keeps).
        let mut blocks: Vec<(u32, u32)> = Vec::with_capacity(moved.len());
        for &m in moved {
            let start = rank.at(m as usize);
            if order.get(start as usize) != Some(m) {
                return None;
            }
            blocks.push((start, stretch_end(idx, order, start as usize, m) as u32));
        }
        // Stretches of a tree nest or are apart: each run is its stretch less those of the runs directly in it.
        blocks.sort_unstable_by_key(|&(s, e)| (s, Reverse(e)));
        let mut spans = vec![(0u32, n)];
        spans.extend(blocks.iter().copied());
        let mut holes: Vec<Vec<(u32, u32)>> = vec![Vec::new(); spans.len()];
        let mut open: Vec<usize> = vec![0];
        for (i, &(s, e)) in spans.iter().enumerate().skip(1) {
            while open.len() > 1 && spans[open[open.len() - 1]].1 <= s {
                open.pop();
            }
            holes[open[open.len() - 1]].push((s, e));
            open.push(i);
        }
        let runs: Vec<Run> = spans
            .iter()
            .zip(&holes)
            .map(|(&(s, e), holes)| {
                let mut parts = Vec::new();
                let mut at = s;
                for &(hs, he) in holes {
                    if hs > at {
                        parts.push((at, hs));
                    }
                    at = at.max(he);
                }
                if e > at {
                    parts.push((at, e));
                }
                Run::new(parts)
            })
            .collect();
        Some(PathBlocks::merge(idx, order, runs))
    }

    /// Merges the runs by the path now of their entries: the run whose next entry sorts first gives every entry
    /// up to the next entry of another run (found by a binary search: a run is in order).
    fn merge(idx: &Index, order: &Packed, mut runs: Vec<Run>) -> PathBlocks {
        let key = |pos: u32| {
            let mut k = Vec::new();
            path_key(idx, order.at(pos as usize), &mut k);
            k
        };
        let mut heads: BinaryHeap<Reverse<(Vec<u8>, usize)>> = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.len() > 0)
            .map(|(i, r)| Reverse((key(r.position(0)), i)))
            .collect();
        let mut stretches = Vec::new();
        while let Some(Reverse((_, r))) = heads.pop() {
            let run = &runs[r];
            let (from, len) = (run.next, run.len());
            let to = match heads.peek() {
                None => len,
                Some(Reverse((next, _))) => {
                    // The first of this run's entries after `from` that sorts after the other runs' next one.
                    let (mut lo, mut hi) = (from + 1, len);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if key(run.position(mid)) <= *next {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    lo
                }
            };
            run.take(from, to, &mut stretches);
            runs[r].next = to;
            if to < len {
                heads.push(Reverse((key(runs[r].position(to)), r)));
            }
        }
        // Neighbouring stretches join.
        let mut joined: Vec<(u32, u32)> = Vec::with_capacity(stretches.len());
        for (s, e) in stretches {
            match joined.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => joined.push((s, e)),
            }
        }
        let mut by_start = Vec::with_capacity(joined.len());
        let mut at = 0;
        for &(s, e) in &joined {
            by_start.push((s, e, at));
            at += e - s;
        }
        by_start.sort_unstable();
        PathBlocks {
            stretches: joined,
            by_start,
        }
    }

    /// The rank now of the entry at `stored` in the stored order.
    pub fn rank(&self, stored: u32) -> u32 {
        let k = self.by_start.partition_point(|&(s, _, _)| s <= stored);
        match k.checked_sub(1).map(|k| self.by_start[k]) {
            Some((s, e, at)) if stored < e => at + (stored - s),
            _ => stored,
        }
    }

    /// The stored positions in the order now.
    pub fn positions(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.stretches
            .iter()
            .flat_map(|&(s, e)| s as usize..e as usize)
    }
}
