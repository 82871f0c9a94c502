//! Terms about a folder's direct children: `child:` (`childfile:`, `childfolder:`), `childfilecount:` and
//! `childfoldercount:`. The children are [`Usage`]'s: files (one per link) and folders, no streams, nothing
//! deleted or replaced by a delta, an index's folder and the delta's copy of it as one.

use super::*;

impl Searcher {
    /// The folders with an entry directly inside that `name` (a name term) matches, of kind `only` when set.
    pub(super) fn child_hits(&self, name: &Leaf, only: Option<KindFilter>) -> Bitset {
        let (u, part) = self.usage();
        let parts = self.usage_parts();
        let mut b = Bitset::empty(self.idx.len());
        for &f in u.folders(part) {
            let found = u.children(&parts, part, f).into_iter().any(|(p, c)| {
                let idx = parts[p].idx;
                let is_dir = idx.flags(c) & flags::DIRECTORY != 0;
                only.is_none_or(|k| is_dir == (k == KindFilter::Folder))
                    && name_matches(name, idx, c)
            });
            if found {
                b.set(f as usize);
            }
        }
        b
    }

    /// Folder `id`'s files (`folders` false) or folders directly inside; `None` for an entry that is no folder.
    pub(super) fn child_count(&self, id: EntryId, folders: bool) -> Option<u64> {
        let (u, part) = self.usage();
        u.of(part, id)?;
        let parts = self.usage_parts();
        let n = u
            .children(&parts, part, id)
            .into_iter()
            .filter(|&(p, c)| (parts[p].idx.flags(c) & flags::DIRECTORY != 0) == folders)
            .count();
        Some(n as u64)
    }
}
