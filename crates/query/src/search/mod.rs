//! Executes a parsed query over an index.
//!
//! Every term can *scan* (produce the set of all entries it matches, using the fastest whole-index method: a
//! SIMD substring search over the name arena, or a column scan) and *test* (check one entry). An AND scans its
//! cheapest term first; when what is left is a small fraction of the index, the remaining terms only test those
//! candidates. Full-path terms never build every path: folder paths are built once and a name's path is its
//! folder's path plus the name. Scans run on all cores, each thread on its own range of entries.
//!
//! This file holds the [`Searcher`] and the evaluation of a query's tree; the rest is split by what it does:
//! `plan` (terms compiled, their costs), `terms` (one term's scan and test), `names` (scans of the name arena
//! and the stored orders), `paths` (path terms and depths), `sort` (orders and top-N) and `dupes` (duplicate
//! names and sizes, across an index and its delta too).

// The imports of every part: each one takes them, and the parts' items, with `use super::*`.
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use memchr::memmem;
use uffs_index::aids::{trigram_key, trigram_row_words, Key, SearchAids, TRIGRAM_BLOCK};
use uffs_index::packed::Packed;
use uffs_index::paths::fold_into;
use uffs_index::timecol::Times;
use uffs_index::{flags, EntryId, Index};

use crate::ast::*;
use crate::bitset::Bitset;
use crate::glob;
use crate::path_blocks::PathBlocks;
use crate::usage::{self, Usage};

mod children;
mod dupes;
mod marks;
mod names;
mod paths;
mod plan;
mod sort;
mod terms;

use marks::*;
use names::*;
use plan::*;
use terms::*;

/// What is searched besides the query itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchOptions {
    /// Deleted entries are hidden unless this is set or the query has `deleted:`.
    pub include_deleted: bool,
    /// Named streams are hidden unless this is set or the query has `stream:`.
    pub include_streams: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Path,
    Size,
    Extension,
    Created,
    Modified,
    Accessed,
    /// A folder's recursive size ([`crate::usage`]), a file's own size.
    TreeSize,
}

impl SortKey {
    /// The time entry `id` of `idx` sorts by, for the keys that sort by a time.
    pub fn time(self, idx: &Index, id: EntryId) -> Option<u64> {
        match self {
            SortKey::Created => Some(idx.created(id)),
            SortKey::Modified => Some(idx.modified(id)),
            SortKey::Accessed => Some(idx.accessed(id)),
            _ => None,
        }
    }

    /// Whether entry `id` has no value to sort by (a time its volume does not keep): such entries come after
    /// the others, ascending or descending.
    pub fn unknown(self, idx: &Index, id: EntryId) -> bool {
        self.time(idx, id) == Some(uffs_index::time::UNKNOWN)
    }
}

/// A searcher over one index. Helper structures (case-folded names, folder paths, depths, duplicate names) are
/// built on first use and kept for later queries, and shared by the searchers of the same index that hide other
/// entries (one per delta over it).
pub struct Searcher {
    idx: Arc<Index>,
    derived: Arc<Derived>,
    /// Visible entries for each (deleted shown, streams shown).
    visible: [OnceLock<Bitset>; 4],
    /// Entries no answer includes: those of a base index that a delta over it replaces (`uffs_index::layer`),
    /// and those the caller may not see ([`Searcher::restricted`]).
    hidden: Option<Bitset>,
    /// For an index and the delta over it: what they must know of each other (which of them this is).
    pair: Option<(Arc<Pair>, usize)>,
    /// What depends on the entries this searcher leaves out: made for it alone.
    counted: Counted,
}

/// Structures over the entries a searcher answers (not those it hides), made on first use.
#[derive(Default)]
struct Counted {
    dupes: OnceLock<Bitset>,
    size_dupes: OnceLock<Bitset>,
    usage: OnceLock<Usage>,
}

/// An index (less its hidden entries) and the delta over it, which answer as one volume: a name is a duplicate
/// (`dupe:`) when it occurs twice among the entries of both.
struct Pair {
    parts: [Arc<Index>; 2],
    hidden: Bitset,
    /// The delta's entries the caller may not see (none but for a [`Searcher::restricted`] pair).
    hidden_delta: Option<Bitset>,
    dupes: OnceLock<[Bitset; 2]>,
    size_dupes: OnceLock<[Bitset; 2]>,
    usage: OnceLock<Usage>,
}

/// Structures derived from an index alone, made on first use.
#[derive(Default)]
struct Derived {
    /// Search aids made here when the index has none stored (an index built from a source, not loaded).
    made_aids: OnceLock<SearchAids>,
    /// The folders' ids (a few percent of the entries), for walks down the folder tree.
    folders: OnceLock<Vec<EntryId>>,
    depth: OnceLock<Vec<u16>>,
    /// Entries with diacritics in their name, and in their path (`marks`).
    marked_names: OnceLock<Vec<EntryId>>,
    marked_paths: OnceLock<Vec<EntryId>>,
    /// Those names with their marks off, folded and as written (`marks::Unmarked`).
    unmarked_folded: OnceLock<Unmarked>,
    unmarked_written: OnceLock<Unmarked>,
    /// The path order now of a view whose grafts include moved folders (`None`: the stored order holds).
    path_blocks: OnceLock<Option<PathBlocks>>,
}

/// Whether `dupe:` counts entry `id` of `idx`: files and folders that exist (not streams, deleted or made up).
fn names_a_file(idx: &Index, id: EntryId) -> bool {
    idx.flags(id) & (flags::STREAM | flags::SYNTHETIC | flags::DELETED) == 0
}

/// The value of `cell`, made by `make` when it has none yet. Unlike `OnceLock::get_or_init`, no lock is held while
/// `make` runs, and every cell of a searcher is filled this way: `make` uses rayon, and a rayon thread that waits
/// for its tasks runs other tasks meanwhile, such as another query on this searcher, which would wait for the
/// cell's lock that the thread itself holds (the soak benchmark found a daemon stuck so, every pool thread waiting
/// in `get_or_init`). Two threads may both make the value; the first one stored is kept.
fn made<T>(cell: &OnceLock<T>, make: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let v = make();
    cell.get_or_init(|| v)
}

impl Searcher {
    pub fn new(idx: Arc<Index>) -> Searcher {
        Searcher {
            idx,
            derived: Arc::default(),
            visible: Default::default(),
            hidden: None,
            pair: None,
            counted: Counted::default(),
        }
    }

    /// Searchers over an index whose entries with a bit set in `hidden` are replaced by `delta`, and over the
    /// delta: they answer as one volume (their answers are merged like those of several volumes), and `dupe:`
    /// sees the names of both. The first searches a view of the base whose paths resolve through the folders
    /// the delta renamed or moved (`uffs_index::layer::view`); it shares what `base` has made so far when no
    /// folder's path changed.
    pub fn layered(base: &Searcher, hidden: Vec<u64>, delta: Arc<Index>) -> [Searcher; 2] {
        let view = uffs_index::layer::view(&base.idx, &hidden, &delta);
        let mut b = if Arc::ptr_eq(&view, &base.idx) {
            base.hiding(hidden)
        } else {
            Searcher::new(view).hiding(hidden)
        };
        let mut d = Searcher::new(delta);
        let pair = Arc::new(Pair {
            parts: [Arc::clone(&b.idx), Arc::clone(&d.idx)],
            hidden: b.hidden.clone().unwrap_or_else(|| Bitset::empty(0)),
            hidden_delta: None,
            dupes: OnceLock::new(),
            size_dupes: OnceLock::new(),
            usage: OnceLock::new(),
        });
        b.pair = Some((Arc::clone(&pair), 0));
        d.pair = Some((pair, 1));
        [b, d]
    }

    /// A searcher over the same index, sharing the structures made so far, that leaves out the entries with a
    /// bit set in `hidden` (a bit per entry) instead of those this one leaves out.
    pub fn hiding(&self, hidden: Vec<u64>) -> Searcher {
        Searcher {
            idx: Arc::clone(&self.idx),
            derived: Arc::clone(&self.derived),
            visible: Default::default(),
            hidden: Some(Bitset::from_words(hidden, self.idx.len())),
            pair: None,
            counted: Counted::default(),
        }
    }

    /// The searchers of one volume (one index, or an index and the delta over it, as [`Searcher::layered`]
    /// makes them) as a caller sees them who may not see the entries with a bit set in `unseen[i]` of
    /// `parts[i]` (a bit per entry): no answer, count, total, duplicate or child term counts those. They share
    /// the search aids made so far; what counts entries is made again for them.
    pub fn restricted(parts: &[Searcher], unseen: &[Bitset]) -> Vec<Searcher> {
        let less = |s: &Searcher, u: &Bitset| {
            let mut h = s
                .hidden
                .clone()
                .unwrap_or_else(|| Bitset::empty(s.idx.len()));
            h.or(u);
            h
        };
        let one = |s: &Searcher, u: &Bitset| Searcher {
            idx: Arc::clone(&s.idx),
            derived: Arc::clone(&s.derived),
            visible: Default::default(),
            hidden: Some(less(s, u)),
            pair: None,
            counted: Counted::default(),
        };
        let mut out: Vec<Searcher> = parts.iter().zip(unseen).map(|(s, u)| one(s, u)).collect();
        if let (Some((pair, 0)), [b, d]) = (&parts[0].pair, &mut out[..]) {
            let pair = Arc::new(Pair {
                parts: pair.parts.clone(),
                hidden: b.hidden.clone().unwrap_or_else(|| Bitset::empty(0)),
                hidden_delta: d.hidden.clone(),
                dupes: OnceLock::new(),
                size_dupes: OnceLock::new(),
                usage: OnceLock::new(),
            });
            b.pair = Some((Arc::clone(&pair), 0));
            d.pair = Some((pair, 1));
        }
        out
    }

    /// The index searched, shared.
    pub fn index_arc(&self) -> &Arc<Index> {
        &self.idx
    }

    pub fn index(&self) -> &Index {
        &self.idx
    }

    /// The index's stored search aids, or aids made on first use.
    pub fn aids(&self) -> &SearchAids {
        match self.idx.search_aids() {
            Some(a) => a,
            None => made(&self.derived.made_aids, || SearchAids::build(&self.idx)),
        }
    }

    /// Every folder's recursive totals in the volume this searcher is (a part of), and which part it is.
    pub fn usage(&self) -> (&Usage, usize) {
        let (cell, which) = match &self.pair {
            Some((pair, which)) => (&pair.usage, *which),
            None => (&self.counted.usage, 0),
        };
        (made(cell, || Usage::compute(&self.usage_parts())), which)
    }

    /// The parts of this searcher's volume, as [`Usage`] numbers them.
    fn usage_parts(&self) -> Vec<usage::Part<'_>> {
        match &self.pair {
            Some((pair, _)) => vec![
                usage::Part {
                    idx: &pair.parts[0],
                    hidden: Some(&pair.hidden),
                },
                usage::Part {
                    idx: &pair.parts[1],
                    hidden: pair.hidden_delta.as_ref(),
                },
            ],
            None => vec![usage::Part {
                idx: &self.idx,
                hidden: self.hidden.as_ref(),
            }],
        }
    }

    /// The entries directly inside folder `id` (files, one per link, and folders; no streams, nothing deleted or
    /// hidden), as (part, entry) with parts numbered as [`Searcher::usage`] numbers them: a folder of a delta
    /// also holds the unchanged entries of the base folder it replaces.
    pub fn children(&self, id: EntryId) -> Vec<(usize, EntryId)> {
        let (u, part) = self.usage();
        u.children(&self.usage_parts(), part, id)
    }

    /// The usage, when `wanted` (made on first use), else none: for callers that need it for some columns only.
    pub fn usage_if(&self, wanted: bool) -> (Option<&Usage>, usize) {
        if wanted {
            let (u, p) = self.usage();
            (Some(u), p)
        } else {
            (None, 0)
        }
    }

    /// The path order now of a view whose delta moved folders (none: the stored one).
    fn path_blocks(&self) -> Option<&PathBlocks> {
        self.idx.grafts()?;
        made(&self.derived.path_blocks, || {
            PathBlocks::build(&self.idx, self.aids())
        })
        .as_ref()
    }

    /// The entries matching `expr`, with hidden kinds (deleted, streams, synthetic folders) filtered out.
    pub fn search(&self, expr: &Expr, opts: &SearchOptions) -> Bitset {
        let node = compile(expr);
        let asks = |k: &dyn Fn(&Leaf) -> bool| mentions(&node, k);
        let deleted = opts.include_deleted || asks(&|l| matches!(l, Leaf::Deleted));
        let streams = opts.include_streams || asks(&|l| matches!(l, Leaf::Stream));
        let mut hide = flags::SYNTHETIC;
        if !deleted {
            hide |= flags::DELETED;
        }
        if !streams {
            hide |= flags::STREAM;
        }
        let root = self.idx.root();
        let fl = self.idx.flags_column();
        let slot = &self.visible[usize::from(deleted) * 2 + usize::from(streams)];
        let hidden = self.hidden.as_ref();
        let shown = |id: EntryId| {
            fl[id as usize] & hide == 0 && id != root && !hidden.is_some_and(|h| h.get(id as usize))
        };
        if slot.get().is_none() {
            // The first query here (a one-shot query's only one): when it matches few, test those few rather
            // than read every entry's flags to make the set of visible entries.
            let mut m = self.eval(&node, None);
            if m.count() * 64 < self.idx.len() {
                m.retain(shown);
                return m;
            }
            let mut visible = made(slot, || self.scan(shown)).clone();
            visible.and(&m);
            return visible;
        }
        let visible = made(slot, || self.scan(shown));
        let mut m = self.eval(&node, Some(visible));
        m.and(visible);
        m
    }

    /// Evaluates `node`; `within`, when given, is a superset the result will be intersected with (candidates).
    fn eval(&self, node: &Node, within: Option<&Bitset>) -> Bitset {
        let n = self.idx.len();
        match node {
            Node::All
            | Node::Leaf(Compiled {
                leaf: Leaf::Any,
                only: None,
            }) => Bitset::full(n),
            Node::Leaf(c) => match within {
                // Testing a candidate costs a few times what a scan spends per entry. A size or date range is a
                // slice of its stored order: cheaper than testing, and it reads no column of other entries.
                Some(w)
                    if !matches!(c.leaf, Leaf::Size(_) | Leaf::Date { .. })
                        && w.fewer_than(n.div_ceil(4)) =>
                {
                    self.test_each(c, w)
                }
                _ => self.scan_leaf(c),
            },
            Node::Not(x) => {
                let mut b = self.eval(x, within);
                b.not();
                b
            }
            Node::Or(xs) => {
                let mut acc = Bitset::empty(n);
                for x in xs {
                    acc.or(&self.eval(x, within));
                }
                acc
            }
            Node::And(xs) => {
                let mut order: Vec<&Node> = xs.iter().collect();
                order.sort_by_key(|x| cost(x));
                let mut acc: Option<Bitset> = within.cloned();
                for x in order {
                    let b = self.eval(x, acc.as_ref());
                    match &mut acc {
                        Some(a) => a.and(&b),
                        None => acc = Some(b),
                    }
                }
                acc.unwrap_or_else(|| Bitset::full(n))
            }
        }
    }

    /// Tests `c` on the members of `w` only, on all cores.
    fn test_each(&self, c: &Compiled, w: &Bitset) -> Bitset {
        let mut out = Bitset::empty(self.idx.len());
        self.for_ranges(&mut out, |lo, _hi, words| {
            let src = &w.words()[lo / 64..lo / 64 + words.len()];
            for (i, (dst, &bits)) in words.iter_mut().zip(src).enumerate() {
                let mut b = bits;
                while b != 0 {
                    let bit = b.trailing_zeros();
                    b &= b - 1;
                    if self.test(c, (lo + i * 64) as EntryId + bit) {
                        *dst |= 1 << bit;
                    }
                }
            }
        });
        out
    }

    /// Runs `f` on every entry on all cores; each thread fills its own run of whole bitset words.
    fn scan(&self, f: impl Fn(EntryId) -> bool + Sync) -> Bitset {
        let n = self.idx.len();
        let mut out = Bitset::empty(n);
        self.for_ranges(&mut out, |lo, hi, words| {
            for id in lo..hi {
                if f(id as EntryId) {
                    words[(id - lo) / 64] |= 1 << ((id - lo) % 64);
                }
            }
        });
        out
    }

    /// Splits the entries into 64-aligned ranges run on rayon's threads, each with its slice of `out`'s words.
    fn for_ranges(&self, out: &mut Bitset, f: impl Fn(usize, usize, &mut [u64]) + Sync) {
        use rayon::prelude::*;
        const WORDS_PER_TASK: usize = 1024;
        let n = out.len();
        let words = out.words_mut();
        if words.len() <= WORDS_PER_TASK {
            f(0, n, words);
            return;
        }
        words
            .par_chunks_mut(WORDS_PER_TASK)
            .enumerate()
            .for_each(|(i, chunk)| {
                let lo = i * WORDS_PER_TASK * 64;
                let hi = (lo + chunk.len() * 64).min(n);
                f(lo, hi, chunk);
            });
    }
}
