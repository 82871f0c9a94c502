//! Name scans: substring search over the folded name arena (with the trigram filter), wildcards, and the
//! stretches of the stored orders that a name prefix or a value range selects.

use super::*;

/// The filter keys of a needle, when the filter applies: at least two trigrams, ASCII only (lower-casing the
/// needle and the names then keeps every ASCII byte in place, so a case-sensitive needle's lower-case trigrams
/// are in the folded name too).
pub(super) fn trigram_keys(needle: &[u8], filter_keys: usize) -> Option<Vec<usize>> {
    if needle.len() < 4 || !needle.is_ascii() {
        return None;
    }
    let lower = needle.to_ascii_lowercase();
    let mut keys: Vec<usize> = lower
        .windows(3)
        .map(|t| trigram_key(t, filter_keys))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

pub(super) fn placement(whole_word: bool) -> Placement {
    if whole_word {
        Placement::WholeWord
    } else {
        Placement::Anywhere
    }
}

/// Where in a name a substring hit counts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    Anywhere,
    /// Not touching a letter or digit on either side.
    WholeWord,
    /// Ending the name (a `*suffix` wildcard).
    AtEnd,
}

/// Substring hits of `finder` in the names of entries `lo..hi` (their text is contiguous in the arena); sets
/// the bit of each matching entry in `words`, which start at entry `lo`. Offsets out of order (a file not checked
/// yet) give wrong hits, never a fault or an endless loop.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan_arena(
    text: &[u8],
    starts: &[u32],
    finder: &memmem::Finder<'_>,
    len: usize,
    placement: Placement,
    lo: usize,
    hi: usize,
    words: &mut [u64],
) {
    let end = (starts[hi] as usize).min(text.len());
    let mut pos = starts[lo] as usize;
    let mut cur = lo;
    while pos < end {
        let Some(h) = finder.find(&text[pos..end]) else {
            break;
        };
        let at = pos + h;
        // The entry holding byte `at`: walk forward a little, then binary search the rest.
        let mut steps = 0;
        while cur < hi && starts[cur + 1] as usize <= at && steps < 8 {
            cur += 1;
            steps += 1;
        }
        if cur < hi && starts[cur + 1] as usize <= at {
            cur += starts[cur..=hi]
                .partition_point(|&s| s as usize <= at)
                .saturating_sub(1);
        }
        if cur >= hi {
            break;
        }
        let (s, e) = (starts[cur] as usize, starts[cur + 1] as usize);
        let counts = match placement {
            Placement::Anywhere => at + len <= e,
            Placement::WholeWord => {
                at + len <= e
                    && text
                        .get(s..e)
                        .is_some_and(|name| at >= s && word_bounded(name, at - s, len))
            }
            Placement::AtEnd => at + len == e,
        };
        if counts {
            words[(cur - lo) / 64] |= 1 << ((cur - lo) % 64);
            pos = e.max(at + 1);
        } else {
            pos = at + 1;
        }
    }
}

impl Searcher {
    /// Substring search over the whole name arena, which is folded: one SIMD pass per thread. A case-sensitive
    /// needle is searched folded, and its hits checked against the names as written.
    pub(super) fn scan_names(
        &self,
        needle: &[u8],
        case_sensitive: bool,
        placement: Placement,
    ) -> Bitset {
        if !case_sensitive {
            return self.scan_folded_names(needle, placement);
        }
        let mut folded = Vec::with_capacity(needle.len());
        fold_into(needle, &mut folded);
        let hits = self.scan_folded_names(&folded, placement);
        if needle.is_empty() {
            return hits;
        }
        let finder = memmem::Finder::new(needle);
        let exact = |name: &[u8]| match placement {
            Placement::Anywhere => finder.find(name).is_some(),
            Placement::WholeWord => find_word(name, needle, true),
            Placement::AtEnd => name.ends_with(needle),
        };
        let mut out = Bitset::empty(hits.len());
        for id in hits.iter().filter(|&id| exact(&self.idx.name_bytes(id))) {
            out.set(id as usize);
        }
        out
    }

    /// Substring search of a folded needle over the folded names.
    pub(super) fn scan_folded_names(&self, needle: &[u8], placement: Placement) -> Bitset {
        use rayon::prelude::*;
        let n = self.idx.len();
        if needle.is_empty() {
            return Bitset::full(n);
        }
        let (text, starts) = (self.idx.folded_arena(), self.idx.name_starts());
        let finder = memmem::Finder::new(needle);
        let scan = |lo: usize, hi: usize, words: &mut [u64]| {
            scan_arena(
                text,
                starts,
                &finder,
                needle.len(),
                placement,
                lo,
                hi,
                words,
            )
        };
        let mut out = Bitset::empty(n);
        // A needle of a few ASCII bytes: search only the blocks whose trigram filter has all its trigrams, when
        // that is a small part of the index.
        let aids = self.aids();
        if let Some(keys) = aids
            .trigram_keys(n)
            .and_then(|filter_keys| trigram_keys(needle, filter_keys))
        {
            let t = &aids.trigrams;
            let blocks = n.div_ceil(TRIGRAM_BLOCK);
            // The candidate blocks: the AND of the needle's trigram rows.
            let row = trigram_row_words(n);
            let mut cand = t[keys[0] * row..(keys[0] + 1) * row].to_vec();
            for &k in &keys[1..] {
                for (c, &r) in cand.iter_mut().zip(&t[k * row..(k + 1) * row]) {
                    *c &= r;
                }
            }
            let hits: Vec<usize> = cand
                .iter()
                .enumerate()
                .flat_map(|(w, &bits)| {
                    (0..64)
                        .filter(move |i| bits & (1 << i) != 0)
                        .map(move |i| w * 64 + i)
                })
                // Bits past the last block are clear in a file as written; not trusted in one not checked yet.
                .filter(|&b| b < blocks)
                .collect();
            if hits.len() * 4 < blocks {
                let words = out.words_mut();
                let one = |b: usize, w: &mut u64| {
                    let lo = b * TRIGRAM_BLOCK;
                    scan(lo, (lo + TRIGRAM_BLOCK).min(n), std::slice::from_mut(w));
                };
                // A few blocks are quicker on this thread than handing out to (and waking) the others.
                if hits.len() < 256 {
                    hits.iter().for_each(|&b| one(b, &mut words[b]));
                } else {
                    words
                        .par_iter_mut()
                        .enumerate()
                        .filter(|(b, _)| hits.binary_search(b).is_ok())
                        .for_each(|(b, w)| one(b, w));
                }
                return out;
            }
        }
        self.for_ranges(&mut out, scan);
        out
    }

    /// A wildcard over names. A literal prefix (`img_*`, `kernel32.dll`) is a range of the name order: found by
    /// binary search, then each candidate checked. `*literal` and `*literal*` are arena substring scans. Anything
    /// else is checked name by name.
    pub(super) fn scan_wildcard(&self, w: &[u8], case_sensitive: bool) -> Bitset {
        let n = self.idx.len();
        let first_wild = w
            .iter()
            .position(|&c| c == b'*' || c == b'?')
            .unwrap_or(w.len());
        let name = |id: u32| self.name_bytes(id, !case_sensitive);
        if first_wild > 0 {
            let mut prefix = Vec::with_capacity(first_wild);
            fold_into(&w[..first_wild], &mut prefix);
            let o = self.aids();
            let (lo, hi) = self.name_prefix_range(&prefix);
            let mut out = Bitset::empty(n);
            for id in o.name_order.range(lo..hi) {
                if (id as usize) < n && glob::matches(w, &name(id)) {
                    out.set(id as usize);
                }
            }
            return out;
        }
        if w[0] != b'*' {
            // A leading `?`: no literal prefix and no substring shortcut; check name by name.
            return self.scan(|id| glob::matches(w, &name(id)));
        }
        let inner = &w[1..];
        let is_literal = |s: &[u8]| !s.iter().any(|&c| c == b'*' || c == b'?');
        if !inner.is_empty() && is_literal(inner) {
            return self.scan_names(inner, case_sensitive, Placement::AtEnd);
        }
        if inner.len() > 1 && inner.ends_with(b"*") && is_literal(&inner[..inner.len() - 1]) {
            return self.scan_names(
                &inner[..inner.len() - 1],
                case_sensitive,
                Placement::Anywhere,
            );
        }
        self.scan(|id| glob::matches(w, &name(id)))
    }

    /// The entries whose value of `col` lies in `min..=max`: a slice of `order` (sorted by `col`) found by two
    /// binary searches.
    pub(super) fn order_range(
        &self,
        order: &Packed,
        key: Key<'_>,
        fence: Option<&[u64]>,
        min: u64,
        max: u64,
    ) -> Bitset {
        use uffs_index::aids::lower_bound;
        let mut out = Bitset::empty(self.idx.len());
        let lo = lower_bound(order, key, fence, min);
        let hi = if max == u64::MAX {
            order.len()
        } else {
            lower_bound(order, key, fence, max + 1)
        };
        for id in order.range(lo..hi.max(lo)) {
            out.set(id as usize);
        }
        out
    }

    /// The stretch of the name order whose folded names start with `prefix`. The start is found between two
    /// fence posts; the end by galloping from the start, so a short stretch reads only the pages around it.
    pub(super) fn name_prefix_range(&self, prefix: &[u8]) -> (usize, usize) {
        use uffs_index::aids::{FENCE, NAME_FENCE};
        let o = self.aids();
        let order = &o.name_order;
        // The stretch between the last fence post below `prefix` and the next one: `k` posts are below it.
        let stretch = |k: usize, every: usize| match k {
            0 => (0, 0),
            k => (
                ((k - 1) * every).min(order.len()),
                (k * every).min(order.len()),
            ),
        };
        let (a, b) = match (o.name_fence_count(), o.made_fences().map(|f| &f.names)) {
            // Stored posts (256 entries apart), in a small table: no page of names is read to find the stretch.
            (posts, _) if posts > 0 => stretch(o.name_fences_before(prefix), NAME_FENCE),
            // Posts sampled by a daemon from a file written before they were stored.
            (_, Some(fence)) if !fence.is_empty() => {
                stretch(fence.partition_point(|f| f.as_slice() < prefix), FENCE)
            }
            // Neither: a binary search of the whole order.
            _ => (0, order.len()),
        };
        let name = |id: EntryId| self.idx.folded_name(id);
        let lo = order.partition_point(a..b, |id| name(id) < prefix);
        let inside = |i: usize| order.get(i).is_some_and(|id| name(id).starts_with(prefix));
        // Gallop: lo + 1, lo + 2, lo + 4, ... until outside, then binary search the last step.
        let mut step = 1;
        let mut last_in = lo;
        if !inside(lo) {
            return (lo, lo);
        }
        while inside(lo + step) {
            last_in = lo + step;
            step *= 2;
        }
        let end = (lo + step).min(order.len());
        let hi = order.partition_point(last_in + 1..end, |id| name(id).starts_with(prefix));
        (lo, hi)
    }
}
