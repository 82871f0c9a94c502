//! Executes a parsed query over an index.
//!
//! Every term can *scan* (produce the set of all entries it matches, using the fastest whole-index method: a
//! SIMD substring search over the name arena, or a column scan) and *test* (check one entry). An AND scans its
//! cheapest term first; when what is left is a small fraction of the index, the remaining terms only test those
//! candidates. Full-path terms never build every path: folder paths are built once and a name's path is its
//! folder's path plus the name. Scans run on all cores, each thread on its own range of entries.

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

/// A searcher over one index. Helper structures (case-folded names, folder paths, depths, duplicate names) are
/// built on first use and kept for later queries, and shared by the searchers of the same index that hide other
/// entries (one per delta over it).
pub struct Searcher {
    idx: Arc<Index>,
    derived: Arc<Derived>,
    /// Visible entries for each (deleted shown, streams shown).
    visible: [OnceLock<Bitset>; 4],
    /// Entries no answer includes: those of a base index that a delta over it replaces (`uffs_index::layer`).
    hidden: Option<Bitset>,
    /// For an index and the delta over it: what they must know of each other (which of them this is).
    pair: Option<(Arc<Pair>, usize)>,
}

/// An index (less its hidden entries) and the delta over it, which answer as one volume: a name is a duplicate
/// (`dupe:`) when it occurs twice among the entries of both.
struct Pair {
    parts: [Arc<Index>; 2],
    hidden: Bitset,
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
    dupes: OnceLock<Bitset>,
    size_dupes: OnceLock<Bitset>,
    usage: OnceLock<Usage>,
    /// The path order now of a view whose grafts include moved folders (`None`: the stored order holds).
    path_blocks: OnceLock<Option<PathBlocks>>,
}

/// Whether `dupe:` counts entry `id` of `idx`: files and folders that exist (not streams, deleted or made up).
fn names_a_file(idx: &Index, id: EntryId) -> bool {
    idx.flags(id) & (flags::STREAM | flags::SYNTHETIC | flags::DELETED) == 0
}

/// The filter keys of a needle, when the filter applies: at least two trigrams, ASCII only (lower-casing the
/// needle and the names then keeps every ASCII byte in place, so a case-sensitive needle's lower-case trigrams
/// are in the folded name too).
fn trigram_keys(needle: &[u8], filter_keys: usize) -> Option<Vec<usize>> {
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

fn placement(whole_word: bool) -> Placement {
    if whole_word {
        Placement::WholeWord
    } else {
        Placement::Anywhere
    }
}

/// Where in a name a substring hit counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
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
fn scan_arena(
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

/// A term compiled for execution. A query has a handful of these, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Leaf {
    Any,
    Text {
        t: TextMatch,
        regex: Option<regex::bytes::Regex>,
        /// For substrings: the searcher, built once rather than per entry.
        finder: Option<memmem::Finder<'static>>,
        /// For regexes: literals one of which every match starts with (lower-case when the regex ignores
        /// case), to find candidates by substring search.
        prefixes: Option<Vec<Vec<u8>>>,
    },
    Ext(Vec<Vec<u8>>),
    Size(Cmp),
    Date {
        field: DateField,
        from: u64,
        to: u64,
    },
    Attrib(u32),
    Parent {
        path: Vec<u8>,
        case_sensitive: bool,
    },
    Depth(Cmp),
    Len(Cmp),
    Dupe,
    Deleted,
    Stream,
    TreeSize(Cmp),
    Descendants(Cmp),
    ChildCount(Cmp),
    Empty,
    SizeDupe,
}

struct Compiled {
    leaf: Leaf,
    only: Option<KindFilter>,
}

#[allow(clippy::large_enum_variant)]
enum Node {
    All,
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Leaf(Compiled),
}

impl Searcher {
    pub fn new(idx: Arc<Index>) -> Searcher {
        Searcher {
            idx,
            derived: Arc::default(),
            visible: Default::default(),
            hidden: None,
            pair: None,
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
        }
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
            None => (&self.derived.usage, 0),
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
                    hidden: None,
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

    fn scan_leaf(&self, c: &Compiled) -> Bitset {
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
            Leaf::TreeSize(_) | Leaf::Descendants(_) | Leaf::ChildCount(_) | Leaf::Empty => {
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

    /// Substring search over the whole name arena, which is folded: one SIMD pass per thread. A case-sensitive
    /// needle is searched folded, and its hits checked against the names as written.
    fn scan_names(&self, needle: &[u8], case_sensitive: bool, placement: Placement) -> Bitset {
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
    fn scan_folded_names(&self, needle: &[u8], placement: Placement) -> Bitset {
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
    fn scan_wildcard(&self, w: &[u8], case_sensitive: bool) -> Bitset {
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

    /// A substring of the full path without building paths or keeping folder paths in memory. Split at its
    /// slashes the needle is c0/c1/.../ck, and a path holds it when some component ends with c0, the next ones
    /// are c1 ... c(k-1) exactly, and the one after starts with ck. One walk down the folder tree carries, per
    /// folder, which of these chains its path ends with (a bit per j: "ends with c0/.../c(j-1)") and whether
    /// the needle occurred already; an entry matches when its folder's path holds the needle or the chain ends
    /// in its name. Each folder costs a few comparisons of its name, whatever the needle.
    fn scan_path_substring(&self, needle: &[u8], case_sensitive: bool) -> Bitset {
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
    fn path_substring_from_last_part(&self, parts: &[&[u8]], folded: bool) -> Option<Bitset> {
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
    fn scan_path_parts<M>(&self, parts: &[&[u8]], folded: bool) -> Bitset
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
    fn scan_parent(&self, path: &[u8], case_sensitive: bool) -> Bitset {
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

    /// The entries whose value of `col` lies in `min..=max`: a slice of `order` (sorted by `col`) found by two
    /// binary searches.
    fn order_range(
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
    fn name_prefix_range(&self, prefix: &[u8]) -> (usize, usize) {
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

    /// A value for every folder, computed from the root down as `step(parent's value, folder name)` (names
    /// folded or not), each folder once. Entries that are not folders keep `root_value`; only folders' values
    /// are meaningful.
    fn folder_values<S: Copy + Default>(
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

    fn date_column(&self, f: DateField) -> &Times {
        match f {
            DateField::Modified => self.idx.modified_times(),
            DateField::Created => self.idx.created_times(),
            DateField::Accessed => self.idx.accessed_times(),
        }
    }

    fn test(&self, c: &Compiled, id: EntryId) -> bool {
        if let Some(k) = c.only {
            let f = self.idx.flags(id);
            if f & flags::STREAM != 0 || (f & flags::DIRECTORY != 0) != (k == KindFilter::Folder) {
                return false;
            }
        }
        self.test_leaf(&c.leaf, id)
    }

    fn test_leaf(&self, leaf: &Leaf, id: EntryId) -> bool {
        let idx = &*self.idx;
        match leaf {
            Leaf::Any => true,
            Leaf::Text {
                t, regex, finder, ..
            } => {
                // A regex that ignores case finds the same in the folded text (folding maps each character to one
                // of its case), and the names are stored folded.
                let folded = !t.case_sensitive && (regex.is_none() || !t.path);
                let hay: Cow<'_, [u8]> = if t.path {
                    Cow::Owned(self.path_bytes(id, folded))
                } else {
                    self.name_bytes(id, folded)
                };
                match (regex, &t.pattern) {
                    (Some(r), _) => r.is_match(&hay),
                    (None, Pattern::Substring(s)) => match finder {
                        Some(f) if !t.whole_word => f.find(&hay).is_some(),
                        _ => find_word(&hay, s.as_bytes(), t.whole_word),
                    },
                    (None, Pattern::Wildcard(w)) => glob::matches(w.as_bytes(), &hay),
                    (None, Pattern::Regex(_)) => false,
                }
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
        }
    }

    /// The name folded, or as written.
    fn name_bytes(&self, id: EntryId, folded: bool) -> Cow<'_, [u8]> {
        if folded {
            Cow::Borrowed(self.idx.folded_name(id))
        } else {
            self.idx.name_bytes(id)
        }
    }

    /// The full path (`/`-separated from the root), folded or as given, by walking up the parents.
    fn path_bytes(&self, id: EntryId, folded: bool) -> Vec<u8> {
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

    fn depths(&self) -> &[u16] {
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

    /// Entries whose folded name another live entry also has (a deleted copy does not make a duplicate;
    /// streams and synthetic folders are not names).
    fn dupes(&self) -> &Bitset {
        if let Some((pair, which)) = &self.pair {
            return &made(&pair.dupes, || pair.dupes())[*which];
        }
        made(&self.derived.dupes, || {
            let n = self.idx.len();
            let name = |id: u32| self.idx.folded_name(id);
            let mut ids: Vec<u32> = (0..n as u32)
                .filter(|&id| names_a_file(&self.idx, id))
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

    /// The recursive totals of folder `id` (of a deleted folder, or an entry that is no folder: none).
    fn folder_totals(&self, id: EntryId) -> Option<&usage::Totals> {
        let (u, part) = self.usage();
        u.of(part, id)
    }

    /// What `--sort treesize` orders by: a folder's recursive size, another entry's own size.
    pub fn tree_size(&self, id: EntryId) -> u64 {
        self.folder_totals(id)
            .map_or_else(|| self.idx.size(id), |t| t.size)
    }

    /// Files (not streams, not deleted, not hidden by a delta) whose size another such file of another record has.
    fn size_dupes(&self) -> &Bitset {
        if let Some((pair, which)) = &self.pair {
            return &made(&pair.size_dupes, || pair.size_dupes())[*which];
        }
        made(&self.derived.size_dupes, || {
            let parts = [(&*self.idx, self.aids(), self.hidden.as_ref())];
            size_dupes(&parts).pop().unwrap_or_else(|| Bitset::empty(0))
        })
    }

    /// The sort key of an entry: the key's value, ties broken by name order (so every key is a total order).
    fn sort_key(&self, key: SortKey, id: EntryId) -> u128 {
        let o = self.aids();
        let idx = &*self.idx;
        let rank = u128::from(o.name_rank.at(id as usize));
        let primary: u64 = match key {
            SortKey::Name => 0,
            SortKey::Path => {
                let r = o.path_rank.at(id as usize);
                u64::from(self.path_blocks().map_or(r, |b| b.rank(r)))
            }
            SortKey::Size => idx.size(id),
            SortKey::Extension => u64::from(o.ext_id.get(id)),
            SortKey::Created => idx.created(id),
            SortKey::Modified => idx.modified(id),
            SortKey::Accessed => idx.accessed(id),
            SortKey::TreeSize => self.tree_size(id),
        };
        (u128::from(primary) << 32) | rank
    }

    /// Top `l` of a large set by a column value: estimate the `l`-th value from a sample, keep the members at or
    /// beyond it in one parallel pass over the column alone, and order only those by the full key. `None` when
    /// the set is small or the estimate kept too few (then a heap is used).
    #[allow(clippy::too_many_arguments)]
    fn top_by_threshold<P: Fn(EntryId) -> u64 + Sync>(
        &self,
        set: &Bitset,
        primary: P,
        descending: bool,
        k: &(dyn Fn(EntryId) -> u128 + Sync),
        count: usize,
        l: usize,
    ) -> Option<Vec<EntryId>> {
        use rayon::prelude::*;
        const SAMPLE: usize = 2048;
        if count < SAMPLE * 4 || l > count / 16 {
            return None;
        }
        let oriented = |id: EntryId| {
            if descending {
                !primary(id)
            } else {
                primary(id)
            }
        };
        // Evenly spaced members: the first member at or after each of SAMPLE evenly spaced words.
        let words = set.words();
        let mut sample: Vec<u64> = (0..SAMPLE)
            .filter_map(|i| {
                let start = i * words.len() / SAMPLE;
                let (off, w) = words[start..].iter().enumerate().find(|(_, w)| **w != 0)?;
                Some(oriented(
                    ((start + off) * 64) as EntryId + w.trailing_zeros(),
                ))
            })
            .collect();
        sample.sort_unstable();
        // Twice the expected position, so the threshold almost always keeps at least `l`.
        if sample.is_empty() {
            return None;
        }
        let pos = ((l * sample.len()).div_ceil(count) * 2 + 2).min(sample.len() - 1);
        let t = sample[pos];
        let kept: Vec<(u128, EntryId)> = set
            .words()
            .par_chunks(1024)
            .enumerate()
            .flat_map_iter(|(ci, chunk)| {
                let mut v = Vec::new();
                for (wi, &w) in chunk.iter().enumerate() {
                    let mut b = w;
                    while b != 0 {
                        let id = ((ci * 1024 + wi) * 64) as EntryId + b.trailing_zeros();
                        b &= b - 1;
                        if oriented(id) <= t {
                            v.push((k(id), id));
                        }
                    }
                }
                v.into_iter()
            })
            .collect();
        if kept.len() < l {
            return None;
        }
        let mut kept = kept;
        kept.select_nth_unstable(l - 1);
        kept.truncate(l);
        kept.sort_unstable();
        Some(kept.into_iter().map(|(_, id)| id).collect())
    }

    /// The members of `set` in the order of `key` (ties by name), at most `limit` of them. With a limit, each
    /// thread keeps a bounded heap of its range's best keys: one pass, no sort of the whole set.
    pub fn sorted(
        &self,
        set: &Bitset,
        key: Option<SortKey>,
        descending: bool,
        limit: Option<usize>,
    ) -> Vec<EntryId> {
        use rayon::prelude::*;
        let Some(key) = key else {
            let mut ids: Vec<EntryId> = set.iter().collect();
            if descending {
                ids.reverse();
            }
            if let Some(l) = limit {
                ids.truncate(l);
            }
            return ids;
        };
        let o = self.aids();
        let k = |id: EntryId| {
            let v = self.sort_key(key, id);
            if descending {
                !v
            } else {
                v
            }
        };
        let count = set.count();
        let n = set.len();
        // Walk the stored order, when the set is dense enough for the walk to be short: the first `l` members
        // lie about `l * n / count` entries in, which is at most an eighth of the order or at most 8 entries
        // per member kept (a sort of a dense set, whole, reads the order and the set and sorts nothing). Stored
        // orders break ties by name order, as the sort key does, so the walk gives the same answer.
        let stored = match key {
            SortKey::Name => Some(&o.name_order),
            SortKey::Path => Some(&o.path_order),
            SortKey::Size => Some(&o.size_order),
            SortKey::Created => Some(&o.created_order),
            SortKey::Modified => Some(&o.modified_order),
            SortKey::Accessed => Some(&o.accessed_order),
            SortKey::Extension => Some(&o.ext_order),
            SortKey::TreeSize => None,
        };
        let l = limit.unwrap_or(count).min(count);
        let walk = l.saturating_mul(n / count.max(1));
        if let Some(order) = stored.filter(|_| l > 0 && (walk <= n / 8 || walk <= count * 8)) {
            let pick = |id: &EntryId| set.get(*id as usize);
            if let Some(blocks) = self.path_blocks().filter(|_| key == SortKey::Path) {
                // The stored order with the blocks of moved folders where they sort now.
                let at = |p: usize| order.at(p);
                return if descending {
                    blocks
                        .positions()
                        .rev()
                        .map(at)
                        .filter(pick)
                        .take(l)
                        .collect()
                } else {
                    blocks.positions().map(at).filter(pick).take(l).collect()
                };
            }
            let ids: Vec<EntryId> = if descending {
                order.iter().rev().filter(pick).take(l).collect()
            } else {
                order.iter().filter(pick).take(l).collect()
            };
            // A walk to the set's last member read the order from end to end, once: a daemon need not keep it.
            // Its pages stay in the page cache, so the next such walk maps them back in a few dozen faults.
            if l == count && walk > n / 2 {
                uffs_index::file::release_order_pages(&self.idx, order);
            }
            return ids;
        }
        match limit {
            Some(0) => Vec::new(),
            Some(l) if l < count => {
                let idx = &*self.idx;
                let top = match key {
                    SortKey::Size => {
                        self.top_by_threshold(set, |id| idx.size(id), descending, &k, count, l)
                    }
                    SortKey::Created | SortKey::Modified | SortKey::Accessed => {
                        let c = match key {
                            SortKey::Created => idx.created_times(),
                            SortKey::Modified => idx.modified_times(),
                            _ => idx.accessed_times(),
                        };
                        self.top_by_threshold(set, |id| c.at(id), descending, &k, count, l)
                    }
                    SortKey::Extension => {
                        // Extension and name rank together fit in 64 bits: no ties at the threshold.
                        let (c, r) = (&o.ext_id, &o.name_rank);
                        let packed = |id: EntryId| {
                            (u64::from(c.get(id)) << 32) | u64::from(r.at(id as usize))
                        };
                        self.top_by_threshold(set, packed, descending, &k, count, l)
                    }
                    SortKey::TreeSize => self.top_by_threshold(
                        set,
                        |id| self.tree_size(id),
                        descending,
                        &k,
                        count,
                        l,
                    ),
                    SortKey::Name | SortKey::Path => None,
                };
                if let Some(top) = top {
                    return top;
                }
                const WORDS: usize = 2048;
                let n = set.len();
                let parts: Vec<Vec<(u128, EntryId)>> = (0..n.div_ceil(WORDS * 64))
                    .into_par_iter()
                    .map(|chunk| {
                        let mut heap: std::collections::BinaryHeap<(u128, EntryId)> =
                            std::collections::BinaryHeap::with_capacity(l + 1);
                        let lo = chunk * WORDS * 64;
                        let hi = (lo + WORDS * 64).min(n);
                        for id in lo as EntryId..hi as EntryId {
                            if !set.get(id as usize) {
                                continue;
                            }
                            let v = k(id);
                            if heap.len() < l {
                                heap.push((v, id));
                            } else if heap.peek().is_some_and(|top| v < top.0) {
                                heap.pop();
                                heap.push((v, id));
                            }
                        }
                        heap.into_vec()
                    })
                    .collect();
                let mut all: Vec<(u128, EntryId)> = parts.into_iter().flatten().collect();
                all.sort_unstable();
                all.truncate(l);
                all.into_iter().map(|(_, id)| id).collect()
            }
            _ => {
                let mut v: Vec<(u128, EntryId)> = set.iter().map(|id| (k(id), id)).collect();
                v.par_sort_unstable();
                v.into_iter().map(|(_, id)| id).collect()
            }
        }
    }
}

/// Whether `needle` occurs in `hay` (bounded by non-alphanumerics when `whole_word`).
impl Pair {
    /// The duplicate names of both parts, as one set of names: the visible entries of the index and the delta's.
    fn size_dupes(&self) -> [Bitset; 2] {
        let aids = [0, 1].map(|p| {
            self.parts[p].search_aids().map_or_else(
                || Cow::Owned(SearchAids::build(&self.parts[p])),
                Cow::Borrowed,
            )
        });
        let parts = [
            (&*self.parts[0], &*aids[0], Some(&self.hidden)),
            (&*self.parts[1], &*aids[1], None),
        ];
        let mut v = size_dupes(&parts);
        let d = v.pop().unwrap_or_else(|| Bitset::empty(0));
        let b = v.pop().unwrap_or_else(|| Bitset::empty(0));
        [b, d]
    }

    fn dupes(&self) -> [Bitset; 2] {
        let name = |&(p, id): &(usize, EntryId)| self.parts[p].folded_name(id);
        let mut ids: Vec<(usize, EntryId)> = Vec::new();
        for (p, idx) in self.parts.iter().enumerate() {
            ids.extend(
                (0..idx.len() as EntryId)
                    .filter(|&id| names_a_file(idx, id))
                    .filter(|&id| p == 1 || !self.hidden.get(id as usize))
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

fn find_word(hay: &[u8], needle: &[u8], whole_word: bool) -> bool {
    if !whole_word {
        return memmem::find(hay, needle).is_some();
    }
    memmem::find_iter(hay, needle).any(|at| word_bounded(hay, at, needle.len()))
}

fn word_bounded(hay: &[u8], at: usize, len: usize) -> bool {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c >= 0x80;
    (at == 0 || !is_word(hay[at - 1])) && hay.get(at + len).is_none_or(|&c| !is_word(c))
}

/// Rough cost of evaluating a node over the whole index (cheapest first in an AND).
fn cost(n: &Node) -> u8 {
    match n {
        Node::All => 0,
        Node::Leaf(c) => match &c.leaf {
            Leaf::Attrib(_)
            | Leaf::Deleted
            | Leaf::Stream
            | Leaf::Size(_)
            | Leaf::Date { .. }
            | Leaf::Any => 1,
            Leaf::Text { t, regex: None, .. }
                if !t.path && matches!(t.pattern, Pattern::Substring(_)) =>
            {
                2
            }
            Leaf::Ext(_) | Leaf::Len(_) | Leaf::Depth(_) => 3,
            Leaf::Text { regex: None, .. }
            | Leaf::Parent { .. }
            | Leaf::Dupe
            | Leaf::SizeDupe
            | Leaf::TreeSize(_)
            | Leaf::Descendants(_)
            | Leaf::ChildCount(_)
            | Leaf::Empty => 4,
            Leaf::Text { .. } => 5,
        },
        Node::Not(x) => cost(x).max(3),
        Node::And(xs) | Node::Or(xs) => xs.iter().map(cost).max().unwrap_or(0).max(3),
    }
}

/// For each part (an index, its aids, the entries a delta replaces): the files whose size a file of another
/// record also has, among the parts' visible files. Each part's size order is sorted, so a merge of the parts'
/// orders finds every run of equal sizes.
fn size_dupes(parts: &[(&Index, &SearchAids, Option<&Bitset>)]) -> Vec<Bitset> {
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

/// The regex leaf without its prefilter, for checking candidates one by one.
fn clone_regex_leaf(l: &Leaf) -> Leaf {
    match l {
        Leaf::Text { t, regex, .. } => Leaf::Text {
            t: t.clone(),
            regex: regex.clone(),
            finder: None,
            prefixes: None,
        },
        _ => Leaf::Any,
    }
}

/// Literals one of which starts every match of `pattern` (so every matching name contains one), when there are
/// few and none is shorter than two bytes. For a case-insensitive regex they are lower-cased, to be searched in
/// the folded names, and must be ASCII without an `s`: the regex folds `ſ` (U+017F) to `s`, and non-ASCII
/// letters more widely than lower-casing does.
fn regex_prefixes(pattern: &str, case_sensitive: bool) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let lits = seq.literals()?;
    if lits.is_empty() || lits.len() > 16 {
        return None;
    }
    let mut out = Vec::with_capacity(lits.len());
    for l in lits {
        let b = l.as_bytes();
        if b.len() < 2 {
            return None;
        }
        if case_sensitive {
            out.push(b.to_vec());
        } else {
            let mut f = Vec::with_capacity(b.len());
            fold_into(b, &mut f);
            // Beyond ASCII, a case-insensitive regex also folds letters that lower-casing does not
            // (ς and σ, ϑ and θ, …): no prefilter there.
            if f.contains(&b's') || !f.is_ascii() {
                return None;
            }
            out.push(f);
        }
    }
    Some(out)
}

fn compile(e: &Expr) -> Node {
    match e {
        Expr::All => Node::All,
        Expr::And(xs) => Node::And(xs.iter().map(compile).collect()),
        Expr::Or(xs) => Node::Or(xs.iter().map(compile).collect()),
        Expr::Not(x) => Node::Not(Box::new(compile(x))),
        Expr::Term(t) => Node::Leaf(Compiled {
            leaf: compile_term(&t.kind),
            only: t.only,
        }),
    }
}

fn compile_term(k: &TermKind) -> Leaf {
    match k {
        TermKind::Any => Leaf::Any,
        TermKind::Text(t) => {
            // The parser has checked that the expression compiles.
            let regex = match &t.pattern {
                Pattern::Regex(r) => regex::bytes::RegexBuilder::new(r)
                    .case_insensitive(!t.case_sensitive)
                    .build()
                    .ok(),
                _ => None,
            };
            let finder = match &t.pattern {
                Pattern::Substring(s) => Some(memmem::Finder::new(s.as_bytes()).into_owned()),
                _ => None,
            };
            let prefixes = match &t.pattern {
                Pattern::Regex(r) if !t.path => regex_prefixes(r, t.case_sensitive),
                _ => None,
            };
            Leaf::Text {
                t: t.clone(),
                regex,
                finder,
                prefixes,
            }
        }
        TermKind::Ext(e) => Leaf::Ext(e.iter().map(|x| x.as_bytes().to_vec()).collect()),
        TermKind::Size(c) => Leaf::Size(*c),
        TermKind::Date { field, from, to } => Leaf::Date {
            field: *field,
            from: *from,
            to: *to,
        },
        TermKind::Attrib(b) => Leaf::Attrib(*b),
        TermKind::Parent {
            path,
            case_sensitive,
        } => Leaf::Parent {
            path: path.as_bytes().to_vec(),
            case_sensitive: *case_sensitive,
        },
        TermKind::Depth(c) => Leaf::Depth(*c),
        TermKind::Len(c) => Leaf::Len(*c),
        TermKind::Dupe => Leaf::Dupe,
        TermKind::Deleted => Leaf::Deleted,
        TermKind::Stream => Leaf::Stream,
        TermKind::TreeSize(c) => Leaf::TreeSize(*c),
        TermKind::Descendants(c) => Leaf::Descendants(*c),
        TermKind::ChildCount(c) => Leaf::ChildCount(*c),
        TermKind::Empty => Leaf::Empty,
        TermKind::SizeDupe => Leaf::SizeDupe,
    }
}

fn mentions(n: &Node, k: &dyn Fn(&Leaf) -> bool) -> bool {
    match n {
        Node::All => false,
        Node::Leaf(c) => k(&c.leaf),
        Node::Not(x) => mentions(x, k),
        Node::And(xs) | Node::Or(xs) => xs.iter().any(|x| mentions(x, k)),
    }
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
