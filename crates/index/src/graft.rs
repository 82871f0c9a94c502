//! The base folders whose path a delta changed, so that renaming or moving a folder costs one record.
//!
//! A delta over a base index ([`crate::layer`]) replaces the changed records' entries and their ancestor folders.
//! The entries below a renamed or moved folder keep their base entries: their parent links still lead to the
//! base folder, which the delta hides and holds again under its new name or in its new place. [`Grafts`] gives
//! each such hidden folder its path now, and an [`Index`](crate::Index) that carries them (a *view* of the base, see
//! [`crate::layer::view`]) resolves every path through them: a base entry's path is the path of its nearest
//! grafted ancestor, then the names below it, as the base holds them.
//!
//! Only the folders whose path differs from the base's are grafts, and of those the few whose own name or
//! parent changed are *moved*: their subtree is one stretch of the base's path order, a block that a sort by
//! path moves to where the new name sorts (see `uffs_query`).

use crate::index::EntryId;

/// The names of a path, from the root's child down.
pub type PathNames = Vec<Box<[u8]>>;

/// The current paths of base folders a delta moved (directly, or by moving a folder above them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Grafts {
    /// (folder, the names of its path now from the root down), sorted by folder.
    paths: Vec<(EntryId, PathNames)>,
    /// The folders renamed or moved themselves (a new name or a new parent), ascending.
    moved: Vec<EntryId>,
}

impl Grafts {
    /// Grafts from (folder, its path's names now, whether it was itself renamed or moved), in any order.
    pub fn new(mut list: Vec<(EntryId, PathNames, bool)>) -> Grafts {
        list.sort_unstable_by_key(|g| g.0);
        list.dedup_by_key(|g| g.0);
        let moved = list.iter().filter(|g| g.2).map(|g| g.0).collect();
        Grafts {
            paths: list.into_iter().map(|(e, names, _)| (e, names)).collect(),
            moved,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// The names of folder `id`'s path now (root first), when it is a graft.
    pub fn get(&self, id: EntryId) -> Option<&[Box<[u8]>]> {
        let i = self.paths.binary_search_by_key(&id, |g| g.0).ok()?;
        Some(&self.paths[i].1)
    }

    /// Every graft: (folder, the names of its path now).
    pub fn iter(&self) -> impl Iterator<Item = (EntryId, &[Box<[u8]>])> {
        self.paths.iter().map(|(e, n)| (*e, n.as_slice()))
    }

    /// The grafts renamed or moved themselves, ascending: where a path order's blocks begin.
    pub fn moved(&self) -> &[EntryId] {
        &self.moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafts_are_found_by_folder() {
        let names =
            |p: &str| -> Vec<Box<[u8]>> { p.split('/').map(|s| s.as_bytes().into()).collect() };
        let g = Grafts::new(vec![
            (9, names("a/b"), false),
            (3, names("x"), true),
            (9, names("a/b"), false),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g.get(3), Some(names("x").as_slice()));
        assert_eq!(g.get(4), None);
        assert_eq!(g.moved(), &[3]);
    }
}
