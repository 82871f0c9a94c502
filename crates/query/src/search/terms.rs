//! One term over the whole index (its scan) or over one entry (its test).

use super::*;

/// Whether `needle` occurs in `hay` (bounded by non-alphanumerics when `whole_word`).
pub(super) fn find_word(hay: &[u8], needle: &[u8], whole_word: bool) -> bool {
    if !whole_word {
        return memmem::find(hay, needle).is_some();
    }
    memmem::find_iter(hay, needle).any(|at| word_bounded(hay, at, needle.len()))
}

pub(super) fn word_bounded(hay: &[u8], at: usize, len: usize) -> bool {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c >= 0x80;
    (at == 0 || !is_word(hay[at - 1])) && hay.get(at + len).is_none_or(|&c| !is_word(c))
}

/// Whether the text of text term `leaf` is in `hay` (a name or path, folded when the term ignores case).
pub(super) fn text_matches(leaf: &Leaf, hay: &[u8]) -> bool {
    let Leaf::Text {
        t, regex, finder, ..
    } = leaf
    else {
        return false;
    };
    match (regex, &t.pattern) {
        (Some(r), _) => r.is_match(hay),
        (None, Pattern::Substring(s)) => match finder {
            Some(f) if !t.whole_word => f.find(hay).is_some(),
            _ => find_word(hay, s.as_bytes(), t.whole_word),
        },
        (None, Pattern::Wildcard(w)) => glob::matches(w.as_bytes(), hay),
        (None, Pattern::Regex(_)) => false,
    }
}

/// Whether text term `leaf` matches `hay` (folded when the term ignores case), with diacritics taken off both
/// unless the term heeds them.
pub(super) fn marked_match(leaf: &Leaf, t: &TextMatch, hay: &[u8]) -> bool {
    match ignores_marks(t).then(|| unmarked(hay)).flatten() {
        Some(u) => text_matches(leaf, &u),
        None => text_matches(leaf, hay),
    }
}

/// Whether name term `leaf` matches the name of entry `id` of `idx` (any part of a volume).
pub(super) fn name_matches(leaf: &Leaf, idx: &Index, id: EntryId) -> bool {
    let Leaf::Text { t, .. } = leaf else {
        return false;
    };
    if t.case_sensitive {
        marked_match(leaf, t, &idx.name_bytes(id))
    } else {
        marked_match(leaf, t, idx.folded_name(id))
    }
}

/// Whether entry `id`'s file reference number is `frn`: its record number, or record and sequence number
/// (the sequence in the top 16 bits) when `frn` has one.
fn frn_holds(idx: &Index, id: EntryId, frn: u64) -> bool {
    let record = frn & 0xFFFF_FFFF_FFFF;
    u64::from(idx.record(id)) == record
        && (frn >> 48 == 0 || u64::from(idx.sequence(id)) == frn >> 48)
}

/// An 8.3 alias as a name term reads it: folded as the names are, or as written.
pub(super) fn alias_bytes(alias: &[u8], folded: bool) -> Cow<'_, [u8]> {
    if !folded {
        return Cow::Borrowed(alias);
    }
    let mut out = Vec::with_capacity(alias.len());
    fold_into(alias, &mut out);
    Cow::Owned(out)
}

impl Searcher {
    pub(super) fn scan_leaf(&self, c: &Compiled) -> Bitset {
        let idx = &*self.idx;
        let mut b = match &c.leaf {
            Leaf::Text {
                t,
                regex: Some(_),
                prefixes: Some(lits),
                ..
            } if !t.path => {
                // Candidates contain one of the literals every match starts with; the regex checks only those.
                let mut cand = Bitset::empty(idx.len());
                for l in lits {
                    cand.or(&self.scan_names(l, t.case_sensitive, Placement::Anywhere));
                }
                self.test_each(
                    &Compiled {
                        leaf: clone_regex_leaf(&c.leaf),
                        only: None,
                    },
                    &cand,
                )
            }
            Leaf::Text { t, regex: None, .. } if !t.path => match &t.pattern {
                Pattern::Substring(s) => {
                    self.scan_names(s.as_bytes(), t.case_sensitive, placement(t.whole_word))
                }
                Pattern::Wildcard(w) => self.scan_wildcard(w.as_bytes(), t.case_sensitive),
                Pattern::Regex(_) => self.scan(|id| self.test_leaf(&c.leaf, id)),
            },
            Leaf::Text { t, regex: None, .. } if !t.whole_word => match &t.pattern {
                Pattern::Substring(s) => self.scan_path_substring(s.as_bytes(), t.case_sensitive),
                _ => self.scan(|id| self.test_leaf(&c.leaf, id)),
            },
            Leaf::Ext(exts) => {
                // The files with an extension are a stretch of the extension order, found by two binary
                // searches: O(hits), where a suffix scan of the names reads every block its trigrams allow. (An
                // extension with a dot in it never matches; folders and streams have none.)
                let a = self.aids();
                let key = |id| Some(u64::from(a.ext_id.get(id)));
                let mut b = Bitset::empty(idx.len());
                let mut folded = Vec::new();
                for e in exts.iter().filter(|e| !e.contains(&b'.')) {
                    folded.clear();
                    fold_into(e, &mut folded);
                    if let Some(x) = a.ext_id_of(&folded) {
                        let x = u64::from(x);
                        b.or(&self.order_range(&a.ext_order, &key, None, x, x));
                    }
                }
                b
            }
            Leaf::Size(cmp) => {
                let a = self.aids();
                let fl = idx.flags_column();
                let fence = a.made_fences().map(|f| &f.size[..]);
                let size = |id| idx.size_key(id);
                let mut b = self.order_range(&a.size_order, &size, fence, cmp.min, cmp.max);
                // Folders have no size of their own.
                b.retain(|id| fl[id as usize] & flags::DIRECTORY == 0);
                b
            }
            Leaf::Date { field, from, to } => {
                let a = self.aids();
                let f = a.made_fences();
                let (order, fence) = match field {
                    DateField::Created => (&a.created_order, f.map(|f| &f.created[..])),
                    DateField::Modified => (&a.modified_order, f.map(|f| &f.modified[..])),
                    DateField::Accessed => (&a.accessed_order, f.map(|f| &f.accessed[..])),
                };
                if from >= to {
                    Bitset::empty(idx.len())
                } else {
                    let times = self.date_column(*field);
                    let key = |id| times.get(id);
                    self.order_range(order, &key, fence, *from, *to - 1)
                }
            }
            Leaf::Attrib(bits) => {
                let fl = idx.flags_column();
                self.scan(|id| fl[id as usize] & bits == *bits)
            }
            Leaf::Deleted => {
                let fl = idx.flags_column();
                self.scan(|id| fl[id as usize] & flags::DELETED != 0)
            }
            Leaf::Stream => {
                let fl = idx.flags_column();
                self.scan(|id| fl[id as usize] & flags::STREAM != 0)
            }
            Leaf::Dupe => self.dupes().clone(),
            Leaf::SizeDupe => self.size_dupes().clone(),
            Leaf::Child { .. } | Leaf::SameAs { .. } => self.found_once(&c.leaf).clone(),
            Leaf::Fsi(cmp) if cmp.holds(0) => Bitset::full(idx.len()),
            Leaf::Fsi(_) => Bitset::empty(idx.len()),
            Leaf::TreeSize(_)
            | Leaf::Descendants(_)
            | Leaf::ChildCount(_)
            | Leaf::ChildFiles(_)
            | Leaf::ChildFolders(_)
            | Leaf::Empty => {
                // Only folders have totals: test those.
                let (u, part) = self.usage();
                let mut b = Bitset::empty(idx.len());
                for &id in u.folders(part) {
                    if self.test_leaf(&c.leaf, id) {
                        b.set(id as usize);
                    }
                }
                b
            }
            Leaf::Parent {
                path,
                case_sensitive,
            } => self.scan_parent(path, *case_sensitive),
            _ => self.scan(|id| self.test_leaf(&c.leaf, id)),
        };
        self.marked_hits(&c.leaf, &mut b);
        self.alias_hits(&c.leaf, &mut b);
        if let Some(k) = c.only {
            let fl = idx.flags_column();
            let want_dir = k == KindFilter::Folder;
            b.and(&self.scan(|id| {
                let f = fl[id as usize];
                f & flags::STREAM == 0 && (f & flags::DIRECTORY != 0) == want_dir
            }));
        }
        b
    }

    /// Adds to `hits` the entries whose 8.3 alias name term `leaf` matches (a name term only; the aliases are
    /// few, so each is tested).
    fn alias_hits(&self, leaf: &Leaf, hits: &mut Bitset) {
        let Leaf::Text { t, .. } = leaf else {
            return;
        };
        if t.path || self.idx.aliases().is_empty() {
            return;
        }
        // Names are searched folded unless the term heeds case (see `test_leaf`).
        let folded = !t.case_sensitive;
        let mut buf = Vec::new();
        for (id, a) in self.idx.aliases().iter() {
            if hits.get(id as usize) {
                continue;
            }
            let hay = if folded {
                buf.clear();
                fold_into(a, &mut buf);
                &buf[..]
            } else {
                a
            };
            // Marks ignored as in names (`JÓGA(R~1.MP3` is searched as `JOGA(R~1.MP3`, which the alias must match).
            if marked_match(leaf, t, hay) {
                hits.set(id as usize);
            }
        }
    }

    pub(super) fn date_column(&self, f: DateField) -> &Times {
        match f {
            DateField::Modified => self.idx.modified_times(),
            DateField::Created => self.idx.created_times(),
            DateField::Accessed => self.idx.accessed_times(),
        }
    }

    pub(super) fn test(&self, c: &Compiled, id: EntryId) -> bool {
        if let Some(k) = c.only {
            let f = self.idx.flags(id);
            if f & flags::STREAM != 0 || (f & flags::DIRECTORY != 0) != (k == KindFilter::Folder) {
                return false;
            }
        }
        self.test_leaf(&c.leaf, id)
    }

    pub(super) fn test_leaf(&self, leaf: &Leaf, id: EntryId) -> bool {
        let idx = &*self.idx;
        match leaf {
            Leaf::Any => true,
            Leaf::Text { t, regex, .. } => {
                // A regex that ignores case finds the same in the folded text (folding maps each character to one
                // of its case), and the names are stored folded.
                let folded = !t.case_sensitive && (regex.is_none() || !t.path);
                let matches = |hay: &[u8]| marked_match(leaf, t, hay);
                if t.path {
                    return matches(&self.path_bytes(id, folded));
                }
                matches(&self.name_bytes(id, folded))
                    || self
                        .idx
                        .alias(id)
                        .is_some_and(|a| marked_match(leaf, t, &alias_bytes(a, folded)))
            }
            Leaf::Ext(exts) => {
                let f = idx.flags(id);
                if f & (flags::DIRECTORY | flags::STREAM) != 0 {
                    return false;
                }
                let name = self.idx.folded_name(id);
                match memchr::memrchr(b'.', name) {
                    Some(dot) => exts.iter().any(|e| e.as_slice() == &name[dot + 1..]),
                    None => false,
                }
            }
            Leaf::Size(c) => idx.flags(id) & flags::DIRECTORY == 0 && c.holds(idx.size(id)),
            Leaf::Date { field, from, to } => {
                (*from..*to).contains(&self.date_column(*field).at(id))
            }
            Leaf::Attrib(bits) => idx.flags(id) & bits == *bits,
            Leaf::Parent {
                path,
                case_sensitive,
            } => {
                if id == idx.root() {
                    return false;
                }
                let p = idx.parent(id);
                if p == idx.root() {
                    return path.as_slice() == b"/";
                }
                self.path_bytes(p, !*case_sensitive) == path.as_slice()
            }
            Leaf::Depth(c) => c.holds(u64::from(self.depths()[id as usize])),
            Leaf::Len(c) => {
                // Folding keeps each character (and the count of them).
                let name = std::str::from_utf8(idx.folded_name(id)).unwrap_or_default();
                c.holds(name.chars().count() as u64)
            }
            Leaf::Dupe => self.dupes().get(id as usize),
            Leaf::Deleted => idx.flags(id) & flags::DELETED != 0,
            Leaf::Uid(c) => idx.posix(id).is_some_and(|p| c.holds(u64::from(p.uid))),
            Leaf::Gid(c) => idx.posix(id).is_some_and(|p| c.holds(u64::from(p.gid))),
            Leaf::Perm(m) => idx.posix(id).is_some_and(|p| m.holds(p.permissions())),
            Leaf::Kind(k) => idx.kind(id) == *k,
            Leaf::Stream => idx.flags(id) & flags::STREAM != 0,
            Leaf::TreeSize(c) => self.folder_totals(id).is_some_and(|t| c.holds(t.size)),
            Leaf::Descendants(c) => self
                .folder_totals(id)
                .is_some_and(|t| c.holds(t.descendants())),
            Leaf::ChildCount(c) => self
                .folder_totals(id)
                .is_some_and(|t| c.holds(u64::from(t.children))),
            Leaf::Empty => self.folder_totals(id).is_some_and(|t| t.children == 0),
            Leaf::SizeDupe => self.size_dupes().get(id as usize),
            Leaf::Child { .. } | Leaf::SameAs { .. } => self.found_once(leaf).get(id as usize),
            Leaf::ChildFiles(c) => self.child_count(id, false).is_some_and(|n| c.holds(n)),
            Leaf::ChildFolders(c) => self.child_count(id, true).is_some_and(|n| c.holds(n)),
            Leaf::Frn(v) => frn_holds(idx, id, *v),
            // One index searched alone is the first volume; a search of several volumes puts each one's place in
            // the query before it comes here (`uffs_search::scope`).
            Leaf::Fsi(c) => c.holds(0),
        }
    }

    /// What a term that needs the whole volume found (`child:`, `namepartdupe:`), found on first use.
    fn found_once<'l>(&self, leaf: &'l Leaf) -> &'l Bitset {
        match leaf {
            Leaf::Child { name, only, hits } => made(hits, || self.child_hits(name, *only)),
            Leaf::SameAs { key, hits } => made(hits, || self.same_as(*key)),
            _ => unreachable!("found_once takes child: and …dupe: terms"),
        }
    }

    /// The name folded, or as written.
    pub(super) fn name_bytes(&self, id: EntryId, folded: bool) -> Cow<'_, [u8]> {
        if folded {
            Cow::Borrowed(self.idx.folded_name(id))
        } else {
            self.idx.name_bytes(id)
        }
    }

    /// The recursive totals of folder `id` (of a deleted folder, or an entry that is no folder: none).
    pub(super) fn folder_totals(&self, id: EntryId) -> Option<&usage::Totals> {
        let (u, part) = self.usage();
        u.of(part, id)
    }

    /// What `--sort treesize` orders by: a folder's recursive size, another entry's own size.
    pub fn tree_size(&self, id: EntryId) -> u64 {
        self.folder_totals(id)
            .map_or_else(|| self.idx.size(id), |t| t.size)
    }
}
