//! Path terms: walks down the folder tree (a value per folder, each folder once), the fast path from the names
//! that end a needle, whole paths and depths. In a view with grafts (`uffs_index::graft`), paths are the paths now.

use super::*;

impl Searcher {
    /// A substring of the full path without building paths or keeping folder paths in memory. Split at its
    /// slashes the needle is c0/c1/.../ck, and a path holds it when some component ends with c0, the next ones
    /// are c1 ... c(k-1) exactly, and the one after starts with ck. One walk down the folder tree carries, per
    /// folder, which of these chains its path ends with (a bit per j: "ends with c0/.../c(j-1)") and whether
    /// the needle occurred already; an entry matches when its folder's path holds the needle or the chain ends
    /// in its name. Each folder costs a few comparisons of its name, whatever the needle.
    pub(super) fn scan_path_substring(&self, needle: &[u8], case_sensitive: bool) -> Bitset {
        let idx = &*self.idx;
        let folded = !case_sensitive;
        let parts: Vec<&[u8]> = needle.split(|&b| b == b'/').collect();
        let k = parts.len() - 1;
        let root = idx.root();
        if k == 0 {
            // No slash: within one name (the entry's own, or a folder's above it).
            let names_hit = self.scan_names(needle, case_sensitive, Placement::Anywhere);
            let has = self.folder_values(folded, 0u8, |h, name| {
                u8::from(h != 0 || memmem::find(name, needle).is_some())
            });
            return self.scan(|id| {
                id != root && (has[idx.parent(id) as usize] != 0 || names_hit.get(id as usize))
            });
        }
        if k >= 63 {
            return self.scan(|id| {
                id != root && memmem::find(&self.path_bytes(id, folded), needle).is_some()
            });
        }
        if let Some(hits) = self.path_substring_from_last_part(&parts, folded) {
            return hits;
        }
        // The per-folder values are as narrow as the needle allows: a query's scratch memory stays small.
        match k {
            0..7 => self.scan_path_parts::<u8>(&parts, folded),
            7..15 => self.scan_path_parts::<u16>(&parts, folded),
            15..31 => self.scan_path_parts::<u32>(&parts, folded),
            _ => self.scan_path_parts::<u64>(&parts, folded),
        }
    }

    /// [`Self::scan_path_substring`] from the few entries whose name starts with the needle's last part `ck` (a
    /// stretch of the name order): the same answer as the walk down every folder, reading that stretch and
    /// stretches of the path order instead of every folder's name and every entry's parent. An entry
    /// `b` named `ck...` ends the needle when the folders above it are named `c(k-1)` ... `c1` and then `...c0`
    /// (the root, when `c0` is empty); then `b` matches, and so does the rest of its subtree, which follows it
    /// in the path order, as the walk would find it: every entry whose parent is `b` or a folder that matched.
    /// `None` when `ck` is empty or starts more than one name in 64.
    ///
    /// In a view whose delta moved folders, a moved folder's stretch of the path order is elsewhere now: a walk
    /// steps over it, and it matches whole when its path now holds the needle (its entries below that match by
    /// their own names are found as any others, their paths resolved through it).
    pub(super) fn path_substring_from_last_part(
        &self,
        parts: &[&[u8]],
        folded: bool,
    ) -> Option<Bitset> {
        let idx = &*self.idx;
        let n = idx.len();
        let root = idx.root();
        let k = parts.len() - 1;
        let last = parts[k];
        if last.is_empty() {
            return None;
        }
        let moved = idx.grafts().map_or(&[][..], |g| g.moved());
        let is_moved = |e: EntryId| moved.binary_search(&e).is_ok();
        let head = parts[..k].join(&b'/');
        let aids = self.aids();
        // The names starting with `ck` (folded) are a stretch of the name order.
        let mut prefix = Vec::with_capacity(last.len());
        fold_into(last, &mut prefix);
        let (lo, hi) = self.name_prefix_range(&prefix);
        if hi - lo > n / 64 {
            return None;
        }
        let fl = idx.flags_column();
        let is_folder = |id: EntryId| {
            fl.get(id as usize)
                .is_some_and(|f| f & flags::DIRECTORY != 0)
        };
        // Whether the path of `cur` ends with c0/c1/.../c(k-1), as the walk down the folders sees it. (With
        // grafts, the path now does: c0 has no slash, so it ends the component before c1, or the root's empty path.)
        let ends_needle_head = |mut cur: EntryId| -> bool {
            if idx.grafts().is_some() {
                return cur == root && head.is_empty()
                    || cur != root && self.path_bytes(cur, folded).ends_with(&head);
            }
            for part in parts[1..k].iter().rev() {
                if cur == root || !is_folder(cur) || *self.name_bytes(cur, folded) != **part {
                    return false;
                }
                cur = idx.parent(cur);
            }
            if cur == root {
                parts[0].is_empty()
            } else {
                is_folder(cur) && self.name_bytes(cur, folded).ends_with(parts[0])
            }
        };
        let (order, rank) = (&aids.path_order, &aids.path_rank);
        let mut out = Bitset::empty(n);
        // The subtree being walked: where it ends, the next entry's parent is outside it.
        let mut inside = Bitset::empty(n);
        // A walk's stretches of the path order, to clear what it set.
        let mut walked: Vec<(usize, usize)> = Vec::new();
        for b in aids.name_order.range(lo..hi) {
            if b as usize >= n
                || b == root
                || out.get(b as usize)
                || is_moved(b)
                || !self.name_bytes(b, folded).starts_with(last)
                || !ends_needle_head(idx.parent(b))
            {
                continue;
            }
            // (An order that does not hold `b` where its rank says, which only aids made from damaged parent
            // links could have, leaves the question to the walk down the folders.)
            let at = rank.at(b as usize) as usize;
            if order.get(at) != Some(b) {
                return None;
            }
            out.set(b as usize);
            inside.set(b as usize);
            let mut first = at + 1;
            let mut end = first;
            while let Some(e) = order.get(end).filter(|&e| (e as usize) < n) {
                let p = idx.parent(e);
                if !inside.get(p as usize) {
                    break;
                }
                if is_moved(e) {
                    walked.push((first, end));
                    end = crate::path_blocks::stretch_end(idx, order, end, e);
                    first = end;
                    continue;
                }
                inside.set(e as usize);
                if is_folder(p) && out.get(p as usize) {
                    out.set(e as usize);
                }
                end += 1;
            }
            // Cleared for the next one: only what this walk set.
            inside.unset(b as usize);
            walked.push((first, end));
            for (s, e) in walked.drain(..) {
                order.range(s..e).for_each(|e| inside.unset(e as usize));
            }
        }
        // A moved folder whose path now holds the needle matches with everything below it, except the stretches
        // of folders moved from below it, which answer for themselves.
        let needle = parts.join(&b'/');
        for &m in moved {
            if memmem::find(&self.path_bytes(m, folded), &needle).is_none() {
                continue;
            }
            let at = rank.at(m as usize) as usize;
            if order.get(at) != Some(m) {
                return None;
            }
            let end = crate::path_blocks::stretch_end(idx, order, at, m);
            let mut p = at;
            while p < end {
                let e = order.at(p);
                if e != m && is_moved(e) {
                    p = crate::path_blocks::stretch_end(idx, order, p, e);
                    continue;
                }
                out.set(e as usize);
                p += 1;
            }
        }
        Some(out)
    }

    /// [`Self::scan_path_substring`] for a needle of `parts.len() - 1` slashes, with per-folder values of type
    /// `M` (its top bit is "the needle occurred", bit j "the path ends with c0/.../c(j-1)").
    pub(super) fn scan_path_parts<M>(&self, parts: &[&[u8]], folded: bool) -> Bitset
    where
        M: Copy + Default + Send + Sync + Into<u64> + TryFrom<u64>,
    {
        let idx = &*self.idx;
        let root = idx.root();
        let k = parts.len() - 1;
        let has: u64 = 1 << (std::mem::size_of::<M>() * 8 - 1);
        let narrow = |v: u64| M::try_from(v).unwrap_or_default();
        let (first, last) = (parts[0], parts[k]);
        let start = |mask: M, name: &[u8]| -> M {
            let mask: u64 = mask.into();
            if mask & has != 0 || (mask & (1 << k) != 0 && name.starts_with(last)) {
                return narrow(has);
            }
            // Last bytes first: most names differ there, and a call to memcmp costs more than the test.
            let ends = first.last().is_none_or(|l| name.last() == Some(l)) && name.ends_with(first);
            let mut next = u64::from(ends) << 1;
            let mut m = mask & !1;
            while m != 0 {
                let j = m.trailing_zeros() as usize;
                m &= m - 1;
                if j < k && name.first() == parts[j].first() && name == parts[j] {
                    next |= 1 << (j + 1);
                }
            }
            narrow(next)
        };
        // The root's path is empty: it ends with c0 only if c0 is.
        let root_mask = narrow(u64::from(first.is_empty()) << 1);
        let masks = self.folder_values(folded, root_mask, start);
        self.scan(|id| {
            if id == root {
                return false;
            }
            let mask: u64 = masks[idx.parent(id) as usize].into();
            mask & has != 0
                || (mask & (1 << k) != 0 && self.name_bytes(id, folded).starts_with(last))
        })
    }

    /// Entries whose parent folder's path is `path` (`/` for the root): one walk down the folder tree matching
    /// the path component by component.
    pub(super) fn scan_parent(&self, path: &[u8], case_sensitive: bool) -> Bitset {
        let idx = &*self.idx;
        let root = idx.root();
        if path == b"/" {
            return self.scan(|id| id != root && idx.parent(id) == root);
        }
        const NONE: u32 = u32::MAX;
        let matched = self.folder_values(!case_sensitive, 0u32, |s, name| {
            let s = s as usize;
            let ok = s != NONE as usize
                && path.len() > s + name.len()
                && path[s] == b'/'
                && &path[s + 1..s + 1 + name.len()] == name;
            if ok {
                (s + 1 + name.len()) as u32
            } else {
                NONE
            }
        });
        self.scan(|id| id != root && matched[idx.parent(id) as usize] as usize == path.len())
    }

    /// A value for every folder, computed from the root down as `step(parent's value, folder name)` (names
    /// folded or not), each folder once. Entries that are not folders keep `root_value`; only folders' values
    /// are meaningful.
    pub(super) fn folder_values<S: Copy + Default>(
        &self,
        folded: bool,
        root_value: S,
        step: impl Fn(S, &[u8]) -> S,
    ) -> Vec<S> {
        let idx = &*self.idx;
        let n = idx.len();
        let fl = idx.flags_column();
        // Zeroed memory (for the usual zero default) costs nothing until a folder's slot is written.
        let mut value = vec![S::default(); n];
        value[idx.root() as usize] = root_value;
        let mut done = Bitset::empty(n);
        done.set(idx.root() as usize);
        // A grafted folder's value comes down its path now (see `uffs_index::graft`).
        let mut folded_name = Vec::new();
        for (g, names) in idx.grafts().into_iter().flat_map(|g| g.iter()) {
            let mut v = root_value;
            for name in names {
                v = if folded {
                    folded_name.clear();
                    fold_into(name, &mut folded_name);
                    step(v, &folded_name)
                } else {
                    step(v, name)
                };
            }
            value[g as usize] = v;
            done.set(g as usize);
        }
        let mut chain = Vec::new();
        let folders = made(&self.derived.folders, || {
            (0..n as EntryId)
                .filter(|&id| fl[id as usize] & flags::DIRECTORY != 0)
                .collect()
        });
        for &id in folders {
            let id = id as usize;
            if done.get(id) {
                continue;
            }
            // Parents of folders are folders, and parent links reach the root without cycles. (A file not checked
            // yet may hold a cycle: marked as it is walked, the chain stops where it meets itself.)
            let mut cur = id;
            while !done.get(cur) {
                done.set(cur);
                chain.push(cur);
                cur = idx.parent(cur as EntryId) as usize;
            }
            let mut v = value[cur];
            while let Some(d) = chain.pop() {
                v = step(v, &self.name_bytes(d as EntryId, folded));
                value[d] = v;
                done.set(d);
            }
        }
        value
    }

    /// The full path (`/`-separated from the root), folded or as given, by walking up the parents.
    pub(super) fn path_bytes(&self, id: EntryId, folded: bool) -> Vec<u8> {
        let mut s = String::with_capacity(128);
        self.idx.path_into(id, &mut s);
        if folded {
            let mut v = Vec::with_capacity(s.len());
            fold_into(s.as_bytes(), &mut v);
            v
        } else {
            s.into_bytes()
        }
    }

    pub(super) fn depths(&self) -> &[u16] {
        made(&self.derived.depth, || {
            let idx = &*self.idx;
            const UNKNOWN: u16 = u16::MAX;
            let mut depth = vec![UNKNOWN; idx.len()];
            if idx.is_empty() {
                return depth;
            }
            // On the chain being walked (met again in a file not checked yet: a cycle).
            const WALKING: u16 = u16::MAX - 1;
            depth[idx.root() as usize] = 0;
            for (g, names) in idx.grafts().into_iter().flat_map(|g| g.iter()) {
                depth[g as usize] = (names.len() as u16).min(WALKING - 1);
            }
            let mut chain = Vec::new();
            for id in 0..idx.len() as EntryId {
                let mut cur = id;
                while depth[cur as usize] == UNKNOWN {
                    depth[cur as usize] = WALKING;
                    chain.push(cur);
                    cur = idx.parent(cur);
                }
                let mut d = match depth[cur as usize] {
                    WALKING => 0,
                    d => d,
                };
                while let Some(x) = chain.pop() {
                    d = d.saturating_add(1).min(WALKING - 1);
                    depth[x as usize] = d;
                }
            }
            depth
        })
        .as_slice()
    }
}
