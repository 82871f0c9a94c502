//! Duplicate names (`dupe:`) and sizes (`sizedupe:`), within one index and across an index and its delta.

use super::*;

/// For each part (an index, its aids, the entries a delta replaces): the files whose size a file of another
/// record also has, among the parts' visible files. Each part's size order is sorted, so a merge of the parts'
/// orders finds every run of equal sizes.
pub(super) fn size_dupes(parts: &[(&Index, &SearchAids, Option<&Bitset>)]) -> Vec<Bitset> {
    let counts = |&(idx, _, hidden): &(&Index, &SearchAids, Option<&Bitset>), id: EntryId| {
        (id as usize) < idx.len()
            && idx.flags(id)
                & (flags::DIRECTORY | flags::STREAM | flags::DELETED | flags::SYNTHETIC)
                == 0
            && !hidden.is_some_and(|h| h.get(id as usize))
    };
    #[allow(clippy::type_complexity)]
    let mut runs: Vec<std::iter::Peekable<Box<dyn Iterator<Item = (u64, u32, EntryId)> + '_>>> =
        parts
            .iter()
            .map(|p| {
                let it: Box<dyn Iterator<Item = (u64, u32, EntryId)> + '_> = Box::new(
                    p.1.size_order
                        .iter()
                        .filter(move |&id| counts(p, id))
                        .map(move |id| (p.0.size(id), p.0.record(id), id)),
                );
                it.peekable()
            })
            .collect();
    let mut out: Vec<Bitset> = parts.iter().map(|p| Bitset::empty(p.0.len())).collect();
    let mut group: Vec<(usize, u32, EntryId)> = Vec::new();
    let mut size = None;
    let flush = |group: &mut Vec<(usize, u32, EntryId)>, out: &mut Vec<Bitset>| {
        if group.iter().any(|g| (g.0, g.1) != (group[0].0, group[0].1)) {
            group.iter().for_each(|&(p, _, id)| out[p].set(id as usize));
        }
        group.clear();
    };
    loop {
        // The smallest size next in any part.
        let next = runs
            .iter_mut()
            .enumerate()
            .filter_map(|(p, r)| r.peek().map(|x| (x.0, p)))
            .min();
        let Some((s, p)) = next else { break };
        let Some((_, record, id)) = runs[p].next() else {
            break;
        };
        if size != Some(s) {
            flush(&mut group, &mut out);
            size = Some(s);
        }
        group.push((p, record, id));
    }
    flush(&mut group, &mut out);
    out
}

impl Searcher {
    /// Entries whose folded name another live entry also has (a deleted copy does not make a duplicate;
    /// streams and synthetic folders are not names).
    pub(super) fn dupes(&self) -> &Bitset {
        if let Some((pair, which)) = &self.pair {
            return &made(&pair.dupes, || pair.dupes())[*which];
        }
        made(&self.counted.dupes, || {
            let n = self.idx.len();
            let name = |id: u32| self.idx.folded_name(id);
            let mut ids: Vec<u32> = (0..n as u32)
                .filter(|&id| names_a_file(&self.idx, id))
                .filter(|&id| !self.hidden.as_ref().is_some_and(|h| h.get(id as usize)))
                .collect();
            ids.sort_unstable_by(|&x, &y| name(x).cmp(name(y)));
            let mut out = Bitset::empty(n);
            for w in ids.chunk_by(|&x, &y| name(x) == name(y)) {
                if w.len() > 1 {
                    w.iter().for_each(|&id| out.set(id as usize));
                }
            }
            out
        })
    }

    /// Files (not streams, not deleted, not hidden by a delta) whose size another such file of another record has.
    pub(super) fn size_dupes(&self) -> &Bitset {
        if let Some((pair, which)) = &self.pair {
            return &made(&pair.size_dupes, || pair.size_dupes())[*which];
        }
        made(&self.counted.size_dupes, || {
            let parts = [(&*self.idx, self.aids(), self.hidden.as_ref())];
            size_dupes(&parts).pop().unwrap_or_else(|| Bitset::empty(0))
        })
    }
}

impl Pair {
    /// The files of both parts whose size another file of another record has: the visible entries of the index
    /// and the delta's.
    fn size_dupes(&self) -> [Bitset; 2] {
        let aids = [0, 1].map(|p| {
            self.parts[p].search_aids().map_or_else(
                || Cow::Owned(SearchAids::build(&self.parts[p])),
                Cow::Borrowed,
            )
        });
        let parts = [
            (&*self.parts[0], &*aids[0], Some(&self.hidden)),
            (&*self.parts[1], &*aids[1], self.hidden_delta.as_ref()),
        ];
        let mut v = size_dupes(&parts);
        let d = v.pop().unwrap_or_else(|| Bitset::empty(0));
        let b = v.pop().unwrap_or_else(|| Bitset::empty(0));
        [b, d]
    }

    /// The duplicate names of both parts, as one set of names: the visible entries of the index and the delta's.
    fn dupes(&self) -> [Bitset; 2] {
        let name = |&(p, id): &(usize, EntryId)| self.parts[p].folded_name(id);
        let mut ids: Vec<(usize, EntryId)> = Vec::new();
        for (p, idx) in self.parts.iter().enumerate() {
            ids.extend(
                (0..idx.len() as EntryId)
                    .filter(|&id| names_a_file(idx, id))
                    .filter(|&id| match p {
                        0 => !self.hidden.get(id as usize),
                        _ => !self
                            .hidden_delta
                            .as_ref()
                            .is_some_and(|h| h.get(id as usize)),
                    })
                    .map(|id| (p, id)),
            );
        }
        ids.sort_unstable_by(|x, y| name(x).cmp(name(y)));
        let mut out = [0, 1].map(|p| Bitset::empty(self.parts[p].len()));
        for w in ids.chunk_by(|x, y| name(x) == name(y)) {
            if w.len() > 1 {
                w.iter().for_each(|&(p, id)| out[p].set(id as usize));
            }
        }
        out
    }
}

/// What `key` compares of entry `id`: the name part (folded, before the extension `ext:` takes; a folder's whole
/// name) as bytes, or a number. `None` for an unknown time, which is no one's duplicate.
fn dupe_key(idx: &Index, id: EntryId, key: DupeKey) -> Option<(u64, &[u8])> {
    match key {
        DupeKey::NamePart => {
            let name = idx.folded_name(id);
            let part = if idx.flags(id) & flags::DIRECTORY != 0 {
                name
            } else {
                memchr::memrchr(b'.', name).map_or(name, |dot| &name[..dot])
            };
            Some((0, part))
        }
        DupeKey::Time(f) => {
            let t = match f {
                DateField::Modified => idx.modified(id),
                DateField::Created => idx.created(id),
                DateField::Accessed => idx.accessed(id),
            };
            (t != uffs_index::time::UNKNOWN).then_some((t, &[][..]))
        }
        DupeKey::Attributes => Some((u64::from(idx.flags(id) & flags::WINDOWS_MASK), &[][..])),
    }
}

impl Searcher {
    /// The live entries of this part (no streams, nothing deleted, synthetic or replaced by a delta; not the
    /// root) whose `key` an entry of another record of the volume also has (the index and its delta as one).
    pub(super) fn same_as(&self, key: DupeKey) -> Bitset {
        let parts = self.usage_parts();
        let which = self.pair.as_ref().map_or(0, |(_, w)| *w);
        let mut all: Vec<(u64, &[u8], usize, u32, EntryId)> = Vec::new();
        for (p, x) in parts.iter().enumerate() {
            for id in 0..x.idx.len() as EntryId {
                if id == x.idx.root()
                    || !names_a_file(x.idx, id)
                    || x.hidden.is_some_and(|h| h.get(id as usize))
                {
                    continue;
                }
                if let Some((n, b)) = dupe_key(x.idx, id, key) {
                    all.push((n, b, p, x.idx.record(id), id));
                }
            }
        }
        all.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut out = Bitset::empty(self.idx.len());
        for g in all.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            if g.iter().any(|x| (x.2, x.3) != (g[0].2, g[0].3)) {
                g.iter()
                    .filter(|x| x.2 == which)
                    .for_each(|x| out.set(x.4 as usize));
            }
        }
        out
    }
}
