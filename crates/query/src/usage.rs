//! Disk usage: every folder's recursive totals (size, allocated size, files, folders) and its direct children,
//! for `uffs du`, the query functions `treesize:`, `descendants:`, `childcount:`, `empty:` and `--sort treesize`.
//!
//! Totals are derived from the entry columns when first asked for, once per volume, so they always agree with
//! what the entries say (an index and the delta over it included) and the index file stores none of them. A file
//! with several hard links counts once in every folder above any of its links, as `du` counts an inode once;
//! named streams add their sizes to their file's (but for `$BadClus:$Bad`, whose size is the volume's); a folder's
//! own clusters (its index) count in its allocated total, as `du` counts a directory's blocks. Deleted entries count nowhere; `$Orphan` is a folder like any
//! other.
//!
//! A volume is one index, or an index less its hidden entries plus the delta over it ([`crate::Searcher::layered`]):
//! a base folder that the delta replaces is found again in the delta by its record number (a folder has one name).

use std::collections::HashMap;
use std::sync::OnceLock;

use uffs_index::{flags, EntryId, Index, MAX_DEPTH};

use crate::bitset::Bitset;

/// A folder's recursive totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Logical size of every file and stream below (hard links once).
    pub size: u64,
    /// Clusters' bytes held by the folder itself (its index of names) and by every file, stream and folder
    /// below (hard links once): the root's is every cluster its volume's records hold, what `$Bitmap` marks.
    pub allocated: u64,
    /// Files below, at any depth (hard links once).
    pub files: u64,
    /// Folders below, at any depth.
    pub folders: u64,
    /// Bytes of every file below (hard links once) that no other file or snapshot shares, on volumes that
    /// tell them (Btrfs, XFS with reflink; [`uffs_index::Index::exclusive`]); 0 elsewhere. As `btrfs filesystem du` sums its
    /// "Exclusive" column, but a file of several links counts in every folder above any of them.
    pub exclusive: u64,
    /// Entries directly inside (files, one per link, and folders; streams not counted).
    pub children: u32,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.size = self.size.saturating_add(o.size);
        self.allocated = self.allocated.saturating_add(o.allocated);
        self.files = self.files.saturating_add(o.files);
        self.folders = self.folders.saturating_add(o.folders);
        self.exclusive = self.exclusive.saturating_add(o.exclusive);
    }

    /// Entries below at any depth, streams not counted.
    pub fn descendants(&self) -> u64 {
        self.files.saturating_add(self.folders)
    }
}

/// One part of a volume: an index, and the entries of it that a delta replaces.
pub(crate) struct Part<'a> {
    pub idx: &'a Index,
    pub hidden: Option<&'a Bitset>,
}

/// The totals of every folder of a volume's parts.
pub struct Usage {
    /// Per part: its folders' ids, ascending, and their totals at the same positions.
    folders: Vec<Vec<EntryId>>,
    totals: Vec<Vec<Totals>>,
    /// Each folder's direct children, made when first listed (`uffs du`).
    kids: OnceLock<Kids>,
}

/// Folder slots' children: those of slot `s` are `list[start[s]..start[s + 1]]`, each `part << 32 | entry`.
struct Kids {
    start: Vec<u32>,
    list: Vec<u64>,
}

const NONE: u32 = u32::MAX;

impl Usage {
    /// The totals of folder `id` of part `part`; `None` for an entry that is no folder.
    pub fn of(&self, part: usize, id: EntryId) -> Option<&Totals> {
        let f = self.folders.get(part)?;
        f.binary_search(&id).ok().map(|i| &self.totals[part][i])
    }

    /// The folders of part `part` (a base's hidden ones too: those a delta replaces), ascending.
    pub fn folders(&self, part: usize) -> &[EntryId] {
        self.folders.get(part).map_or(&[], Vec::as_slice)
    }

    /// The entries directly inside folder `id` of part `part` (files, one per link, and folders; no streams,
    /// nothing deleted or hidden), as (part, entry): a folder of a delta also holds the unchanged entries of the
    /// base folder it replaces. `parts` must be those the usage was computed from.
    pub(crate) fn children(
        &self,
        parts: &[Part<'_>],
        part: usize,
        id: EntryId,
    ) -> Vec<(usize, EntryId)> {
        let view = View::new(parts, &self.folders);
        let Some(slot) = view.slot(part, id) else {
            return Vec::new();
        };
        let k = self.kids.get_or_init(|| {
            let slots = view.slots();
            let mut start = vec![0u32; slots + 2];
            let each = |f: &mut dyn FnMut(usize, usize, EntryId)| {
                for (p, x) in parts.iter().enumerate() {
                    for c in 0..x.idx.len() as EntryId {
                        if view.visible(p, c) && x.idx.flags(c) & flags::STREAM == 0 {
                            if let Some(s) = view.parent_slot(p, c) {
                                f(s, p, c);
                            }
                        }
                    }
                }
            };
            each(&mut |s, _, _| start[s + 2] += 1);
            for i in 2..start.len() {
                start[i] += start[i - 1];
            }
            let mut list = vec![0u64; start[slots + 1] as usize];
            each(&mut |s, p, c| {
                list[start[s + 1] as usize] = (p as u64) << 32 | u64::from(c);
                start[s + 1] += 1;
            });
            start.pop();
            Kids { start, list }
        });
        k.list[k.start[slot] as usize..k.start[slot + 1] as usize]
            .iter()
            .map(|&v| ((v >> 32) as usize, v as EntryId))
            .collect()
    }

    pub(crate) fn compute(parts: &[Part<'_>]) -> Usage {
        // Folder slots: part by part, in id order.
        let folders: Vec<Vec<EntryId>> = parts
            .iter()
            .map(|p| {
                let fl = p.idx.flags_column();
                (0..p.idx.len() as EntryId)
                    .filter(|&id| {
                        fl[id as usize] & (flags::DIRECTORY | flags::STREAM | flags::DELETED)
                            == flags::DIRECTORY
                    })
                    .collect()
            })
            .collect();
        let view = View::new(parts, &folders);
        let slots = view.slots();
        // Each folder's parent slot, then its depth in the folder tree (cycles, in a file not checked yet, cut).
        let parent: Vec<u32> = (0..parts.len())
            .flat_map(|p| folders[p].iter().map(move |&id| (p, id)))
            // A base folder that the delta replaces adds nothing: its copy in the delta does.
            .map(|(p, id)| match view.visible(p, id) {
                true => view.parent_slot(p, id).map_or(NONE, |s| s as u32),
                false => NONE,
            })
            .collect();
        let depth = depths(&parent);

        // What each folder holds directly, summed on all cores; entries of files with several links aside.
        let (mut own, multi) = view.direct_totals(slots);
        // A folder's own clusters (its index of names) count in it, and so above it: the root's too, so that
        // the root's total is every cluster the volume's records hold.
        for (p, f) in folders.iter().enumerate() {
            for (&id, t) in f.iter().zip(&mut own[view.base[p]..]) {
                if view.counts(p, id) {
                    t.allocated = t.allocated.saturating_add(parts[p].idx.allocated(id));
                    t.exclusive = t.exclusive.saturating_add(exclusive(parts[p].idx, id));
                }
            }
        }
        // Children before parents: add each folder's totals to its parent's.
        let mut order: Vec<u32> = (0..slots as u32).collect();
        order.sort_unstable_by_key(|&s| std::cmp::Reverse(depth[s as usize]));
        for s in order {
            let p = parent[s as usize];
            if p != NONE && depth[p as usize] < depth[s as usize] {
                let t = own[s as usize];
                own[p as usize].add(&Totals {
                    folders: t.folders + 1,
                    ..t
                });
            }
        }
        // A file of several links: once in every folder above any of them.
        let mut seen: Vec<u32> = Vec::new();
        for (p, first) in multi {
            let g = view.group(p, first);
            seen.clear();
            for &link in &g.links {
                let mut s = view.parent_slot(p, link);
                let mut steps = 0;
                while let Some(x) = s {
                    if seen.contains(&(x as u32)) || steps > MAX_DEPTH {
                        break;
                    }
                    seen.push(x as u32);
                    let px = parent[x];
                    s = (px != NONE && depth[px as usize] < depth[x]).then_some(px as usize);
                    steps += 1;
                }
            }
            for &x in &seen {
                own[x as usize].add(&Totals {
                    size: g.size,
                    allocated: g.allocated,
                    exclusive: g.exclusive,
                    files: 1,
                    ..Totals::default()
                });
            }
        }
        let mut totals = Vec::with_capacity(parts.len());
        let mut rest = &own[..];
        for f in &folders {
            let (mine, after) = rest.split_at(f.len());
            totals.push(mine.to_vec());
            rest = after;
        }
        Usage {
            folders,
            totals,
            kids: OnceLock::new(),
        }
    }
}

/// The parts of a volume seen as one folder tree.
struct View<'a> {
    parts: &'a [Part<'a>],
    folders: &'a [Vec<EntryId>],
    /// The first slot of each part's folders.
    base: Vec<usize>,
    /// A delta's folders by (record, synthetic bit): where a base folder that the delta replaces is found again.
    by_record: HashMap<(u32, u32), EntryId>,
}

/// The entries of one file with several links (names), and what it holds once.
struct Group {
    links: Vec<EntryId>,
    size: u64,
    allocated: u64,
    exclusive: u64,
}

impl<'a> View<'a> {
    fn new(parts: &'a [Part<'a>], folders: &'a [Vec<EntryId>]) -> View<'a> {
        let base = folders
            .iter()
            .scan(0, |acc, f| {
                let b = *acc;
                *acc += f.len();
                Some(b)
            })
            .collect();
        let by_record = match (parts.get(1), folders.get(1)) {
            (Some(d), Some(f)) => f
                .iter()
                .map(|&id| ((d.idx.record(id), d.idx.flags(id) & flags::SYNTHETIC), id))
                .collect(),
            _ => HashMap::new(),
        };
        View {
            parts,
            folders,
            base,
            by_record,
        }
    }

    fn slots(&self) -> usize {
        self.base.last().copied().unwrap_or(0) + self.folders.last().map_or(0, Vec::len)
    }

    fn slot(&self, part: usize, id: EntryId) -> Option<usize> {
        self.folders[part]
            .binary_search(&id)
            .ok()
            .map(|i| self.base[part] + i)
    }

    /// Whether entry `id` of part `part` is below a folder and counts in it: it counts, and is not the root.
    fn visible(&self, part: usize, id: EntryId) -> bool {
        id != self.parts[part].idx.root() && self.counts(part, id)
    }

    /// Whether entry `id` of part `part` counts: not deleted, not replaced by the delta.
    fn counts(&self, part: usize, id: EntryId) -> bool {
        let p = &self.parts[part];
        p.idx.flags(id) & flags::DELETED == 0 && !p.hidden.is_some_and(|h| h.get(id as usize))
    }

    /// The slot of the folder holding entry `id`: its parent, or the delta's copy of a parent it replaces.
    fn parent_slot(&self, part: usize, id: EntryId) -> Option<usize> {
        let idx = self.parts[part].idx;
        if id == idx.root() {
            return None;
        }
        let p = idx.parent(id);
        if part == 0 && self.parts[0].hidden.is_some_and(|h| h.get(p as usize)) {
            let key = (idx.record(p), idx.flags(p) & flags::SYNTHETIC);
            return self.by_record.get(&key).and_then(|&d| self.slot(1, d));
        }
        self.slot(part, p)
    }

    /// Whether `id` is a file's name (not a folder, not a stream).
    fn is_link(idx: &Index, id: EntryId) -> bool {
        idx.flags(id) & (flags::DIRECTORY | flags::STREAM) == 0
    }

    /// The first entry of `id`'s record group (a record's names, then its streams, stand together), and whether
    /// that record has several names that are files.
    fn group_start(idx: &Index, id: EntryId) -> (EntryId, bool) {
        let r = idx.record(id);
        let mut first = id;
        while first > 0 && idx.record(first - 1) == r && id - first < 1 << 16 {
            first -= 1;
        }
        let multi = Self::is_link(idx, first)
            && first + 1 < idx.len() as EntryId
            && idx.record(first + 1) == r
            && Self::is_link(idx, first + 1);
        (first, multi)
    }

    /// A file of several links that starts at `first`: its links, and its data and streams counted once (every
    /// link carries the same streams, unless a damaged record had too many to repeat).
    fn group(&self, part: usize, first: EntryId) -> Group {
        let idx = self.parts[part].idx;
        let r = idx.record(first);
        let end = (first..idx.len() as EntryId)
            .take_while(|&e| idx.record(e) == r)
            .count() as EntryId
            + first;
        let links: Vec<EntryId> = (first..end).filter(|&e| Self::is_link(idx, e)).collect();
        let streams: Vec<EntryId> = (first..end)
            .filter(|&e| idx.flags(e) & flags::STREAM != 0)
            .collect();
        let per_link = if !links.is_empty() && streams.len().is_multiple_of(links.len()) {
            streams.len() / links.len()
        } else {
            streams.len()
        };
        let once = &streams[..per_link];
        Group {
            size: once.iter().fold(counted_size(idx, first), |a, &s| {
                a.saturating_add(counted_size(idx, s))
            }),
            allocated: once.iter().fold(idx.allocated(first), |a, &s| {
                a.saturating_add(idx.allocated(s))
            }),
            exclusive: once.iter().fold(exclusive(idx, first), |a, &s| {
                a.saturating_add(exclusive(idx, s))
            }),
            links: links
                .into_iter()
                .filter(|&l| self.visible(part, l))
                .collect(),
        }
    }

    /// What each folder holds directly (files, streams, folders as counts), and the files of several links,
    /// which are added up the tree separately: (part, first entry).
    fn direct_totals(&self, slots: usize) -> (Vec<Totals>, Vec<(usize, EntryId)>) {
        use rayon::prelude::*;
        const CHUNK: usize = 1 << 16;
        let jobs: Vec<(usize, usize)> = self
            .parts
            .iter()
            .enumerate()
            .flat_map(|(p, part)| (0..part.idx.len().div_ceil(CHUNK)).map(move |c| (p, c)))
            .collect();
        jobs.par_iter()
            .fold(
                || (vec![Totals::default(); slots], Vec::new()),
                |(mut own, mut multi), &(p, c)| {
                    let idx = self.parts[p].idx;
                    let end = ((c + 1) * CHUNK).min(idx.len());
                    for id in (c * CHUNK) as EntryId..end as EntryId {
                        if !self.visible(p, id) {
                            continue;
                        }
                        let Some(s) = self.parent_slot(p, id) else {
                            continue;
                        };
                        let f = idx.flags(id);
                        let t = &mut own[s];
                        if f & flags::STREAM == 0 {
                            t.children = t.children.saturating_add(1);
                        }
                        if f & flags::DIRECTORY != 0 && f & flags::STREAM == 0 {
                            continue;
                        }
                        let (first, several) = Self::group_start(idx, id);
                        if several {
                            if first == id {
                                multi.push((p, id));
                            }
                            continue;
                        }
                        t.size = t.size.saturating_add(counted_size(idx, id));
                        t.allocated = t.allocated.saturating_add(idx.allocated(id));
                        t.exclusive = t.exclusive.saturating_add(exclusive(idx, id));
                        if f & flags::STREAM == 0 {
                            t.files += 1;
                        }
                    }
                    (own, multi)
                },
            )
            .reduce(
                || (vec![Totals::default(); slots], Vec::new()),
                |(mut a, mut ma), (b, mb)| {
                    for (x, y) in a.iter_mut().zip(&b) {
                        x.add(y);
                        x.children = x.children.saturating_add(y.children);
                    }
                    ma.extend(mb);
                    (a, ma)
                },
            )
    }
}

/// NTFS's bad-cluster file, whose `$Bad` stream is as long as the volume and holds only the bad clusters.
const BADCLUS_RECORD: u32 = 8;

/// The logical size entry `id` adds to its folders' totals: its size, but none for NTFS's `$BadClus:$Bad`, whose
/// size is a placeholder (the volume's; its clusters, the bad ones, count in the allocated totals as they are).
/// Counted, it made a volume's root larger than the volume.
fn counted_size(idx: &Index, id: EntryId) -> u64 {
    let bad = idx.meta.filesystem == uffs_index::FileSystem::Ntfs
        && idx.record(id) == BADCLUS_RECORD
        && idx.flags(id) & flags::STREAM != 0;
    if bad {
        0
    } else {
        idx.size(id)
    }
}

/// The exclusive bytes entry `id` adds to its folders' totals (none on volumes that do not tell them).
fn exclusive(idx: &Index, id: EntryId) -> u64 {
    idx.exclusive(id).unwrap_or(0)
}

/// Each slot's depth below a top folder (one whose parent is `NONE`). A cycle (in a file not checked yet) is cut
/// where the walk met itself: there a folder's parent is not shallower than the folder, and totals stop.
fn depths(parent: &[u32]) -> Vec<u32> {
    const UNKNOWN: u32 = u32::MAX;
    const WALKING: u32 = u32::MAX - 1;
    let mut depth = vec![UNKNOWN; parent.len()];
    let mut chain = Vec::new();
    for s in 0..parent.len() {
        let mut cur = s as u32;
        while cur != NONE && depth[cur as usize] == UNKNOWN {
            depth[cur as usize] = WALKING;
            chain.push(cur);
            cur = parent[cur as usize];
        }
        // The walk ended at a top folder's parent, a known depth, or on its own chain (a cycle: start afresh).
        let mut d = match cur {
            NONE => 0,
            c if depth[c as usize] == WALKING => 0,
            c => depth[c as usize] + 1,
        };
        while let Some(x) = chain.pop() {
            depth[x as usize] = d.min(WALKING - 1);
            d = d.saturating_add(1);
        }
    }
    depth
}
