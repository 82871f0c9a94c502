//! Matching with diacritics ignored (Everything's default): a text term's pattern is kept without them, and a
//! name or path with letters that have them (a few percent of most volumes' names) is also tested with them
//! taken off (and only so: a `?` matches a letter, not the combining mark after it). The scan of the name
//! arena answers for every name without marks as before; only the marked ones are tested again, so the search
//! aids still do the work.

use uffs_index::diacritics::{has_marks, strip_into};

use super::*;

/// Whether text term `t` matches with diacritics ignored (a regular expression matches as written).
pub(super) fn ignores_marks(t: &TextMatch) -> bool {
    !t.diacritics && !matches!(t.pattern, Pattern::Regex(_))
}

/// `hay` (a name or path) with its diacritics taken off, when it has any.
pub(super) fn unmarked(hay: &[u8]) -> Option<Vec<u8>> {
    has_marks(hay).then(|| {
        let mut out = Vec::with_capacity(hay.len());
        strip_into(hay, &mut out);
        out
    })
}

/// Where the first byte past ASCII is in `s`: eight words at a time, their high bits or'ed.
fn first_non_ascii(s: &[u8]) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    let mut blocks = s.chunks_exact(64);
    for block in &mut blocks {
        let any = block.chunks_exact(8).fold(0u64, |acc, w| {
            acc | u64::from_ne_bytes(w.try_into().expect("8 bytes"))
        });
        if any & HIGH != 0 {
            return block.iter().position(|&b| b >= 0x80).map(|p| at + p);
        }
        at += 64;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| b >= 0x80)
        .map(|p| at + p)
}

/// The names of the entries with marks, as a name term tests them with diacritics ignored, end to end: the `k`th
/// is that of the `k`th of [`Searcher::marked_names`].
pub(super) struct Unmarked {
    /// Where each name starts in `text`, and where the last one ends.
    starts: Vec<u32>,
    text: Vec<u8>,
}

impl Unmarked {
    fn get(&self, k: usize) -> &[u8] {
        &self.text[self.starts[k] as usize..self.starts[k + 1] as usize]
    }
}

impl Searcher {
    /// Decides the entries with marks in their name (or path, for a path term) in `hits`: whether term `leaf`
    /// matches them once the marks are off.
    pub(super) fn marked_hits(&self, leaf: &Leaf, hits: &mut Bitset) {
        let Leaf::Text { t, .. } = leaf else {
            return;
        };
        if !ignores_marks(t) {
            return;
        }
        if t.path {
            for &id in self.marked_paths() {
                if self.test_leaf(leaf, id) {
                    hits.set(id as usize);
                } else {
                    hits.unset(id as usize);
                }
            }
            return;
        }
        // As `test_leaf` tests a name (or its 8.3 alias), with the names' marks taken off once per searcher rather
        // than at every query (a volume of many accented names spent milliseconds a query so).
        let folded = !t.case_sensitive;
        let names = self.unmarked_names(folded);
        for (k, &id) in self.marked_names().iter().enumerate() {
            let hit = text_matches(leaf, names.get(k))
                || self
                    .idx
                    .alias(id)
                    .is_some_and(|a| marked_match(leaf, t, &alias_bytes(a, folded)));
            if hit {
                hits.set(id as usize);
            } else {
                hits.unset(id as usize);
            }
        }
    }

    /// The names of [`Searcher::marked_names`], folded or as written, with their marks off.
    fn unmarked_names(&self, folded: bool) -> &Unmarked {
        let cell = if folded {
            &self.derived.unmarked_folded
        } else {
            &self.derived.unmarked_written
        };
        made(cell, || {
            let mut u = Unmarked {
                starts: vec![0],
                text: Vec::new(),
            };
            for &id in self.marked_names() {
                let name = self.name_bytes(id, folded);
                match unmarked(&name) {
                    Some(s) => u.text.extend_from_slice(&s),
                    None => u.text.extend_from_slice(&name),
                }
                u.starts.push(u.text.len() as u32);
            }
            u
        })
    }

    /// The entries whose name has a letter with diacritics or a combining mark, ascending.
    fn marked_names(&self) -> &[EntryId] {
        made(&self.derived.marked_names, || {
            let idx = &*self.idx;
            // Found from the arena's bytes past ASCII, which few names have: a one-shot query pays this at every
            // run, and testing each of a million names took 90 ms where this takes a few.
            let (text, starts) = (idx.folded_arena(), idx.name_starts());
            let mut out = Vec::new();
            let mut pos = 0;
            while let Some(off) = first_non_ascii(&text[pos..]) {
                let at = pos + off;
                // The entry whose name holds byte `at` (the last of those starting at or before it).
                let id = starts
                    .partition_point(|&s| s as usize <= at)
                    .saturating_sub(1);
                if id >= idx.len() {
                    break;
                }
                if has_marks(idx.folded_name(id as EntryId)) {
                    out.push(id as EntryId);
                }
                // Past this name (or this byte, in a file whose starts are out of order: never stuck).
                pos = (starts[id + 1] as usize).clamp(at + 1, text.len());
            }
            out.dedup();
            out
        })
        .as_slice()
    }

    /// The entries whose path has marks: in their own name or a folder's above them (or a moved folder's path).
    fn marked_paths(&self) -> &[EntryId] {
        made(&self.derived.marked_paths, || {
            let idx = &*self.idx;
            let names = self.marked_names();
            let grafted = idx
                .grafts()
                .into_iter()
                .flat_map(|g| g.iter())
                .filter(|(_, n)| n.iter().any(|c| has_marks(c)));
            // 0: not known yet, 1: marked, 2: not, 3: on the chain being walked (a cycle, in a file not checked).
            let mut state = vec![0u8; idx.len()];
            if idx.is_empty() {
                return Vec::new();
            }
            state[idx.root() as usize] = 2;
            for &id in names {
                state[id as usize] = 1;
            }
            for (g, _) in grafted {
                state[g as usize] = 1;
            }
            if names.is_empty() && !state.contains(&1) {
                return Vec::new();
            }
            let mut chain = Vec::new();
            for id in 0..idx.len() as EntryId {
                let mut cur = id;
                while state[cur as usize] == 0 {
                    state[cur as usize] = 3;
                    chain.push(cur);
                    cur = idx.parent(cur);
                }
                let s = if state[cur as usize] == 1 { 1 } else { 2 };
                for x in chain.drain(..) {
                    state[x as usize] = s;
                }
            }
            (0..idx.len() as EntryId)
                .filter(|&id| state[id as usize] == 1)
                .collect()
        })
        .as_slice()
    }
}
