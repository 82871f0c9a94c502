//! Executes a parsed query over an index.
//!
//! Every term can *scan* (produce the set of all entries it matches, using the fastest whole-index method: a
//! SIMD substring search over the name arena, or a column scan) and *test* (check one entry). An AND scans its
//! cheapest term first; when what is left is a small fraction of the index, the remaining terms only test those
//! candidates. Full-path terms never build every path: folder paths are built once and a name's path is its
//! folder's path plus the name. Scans run on all cores, each thread on its own range of entries.

use std::borrow::Cow;
use std::sync::OnceLock;

use memchr::memmem;
use uffs_index::{flags, EntryId, Index};

use crate::ast::*;
use crate::bitset::Bitset;
use crate::glob;

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
}

/// A searcher over one index. Helper structures (case-folded names, folder paths, depths, duplicate names) are
/// built on first use and kept for later queries.
pub struct Searcher<'a> {
    idx: &'a Index,
    threads: usize,
    folded: OnceLock<Arena>,
    dirs: OnceLock<DirPaths>,
    depth: OnceLock<Vec<u16>>,
    dupes: OnceLock<Bitset>,
}

/// Names folded to lower case, with their own offsets (folding can change a name's length in bytes).
struct Arena {
    text: Vec<u8>,
    starts: Vec<u32>,
}

/// The full path of every folder, as given and folded (`""` for the root, so a child's path is folder + `/` +
/// name).
struct DirPaths {
    text: Vec<u8>,
    folded: Vec<u8>,
    span: Vec<(u32, u32)>,
    folded_span: Vec<(u32, u32)>,
}

/// A term compiled for execution.
enum Leaf {
    Any,
    Text {
        t: TextMatch,
        regex: Option<regex::bytes::Regex>,
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
}

struct Compiled {
    leaf: Leaf,
    only: Option<KindFilter>,
}

enum Node {
    All,
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Leaf(Compiled),
}

impl<'a> Searcher<'a> {
    pub fn new(idx: &'a Index) -> Searcher<'a> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        Searcher {
            idx,
            threads,
            folded: OnceLock::new(),
            dirs: OnceLock::new(),
            depth: OnceLock::new(),
            dupes: OnceLock::new(),
        }
    }

    pub fn index(&self) -> &'a Index {
        self.idx
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
        let mut visible = self.scan(|id| fl[id as usize] & hide == 0 && id != root);
        let m = self.eval(&node, Some(&visible));
        visible.and(&m);
        visible
    }

    /// Evaluates `node`; `within`, when given, is a superset the result will be intersected with (candidates).
    fn eval(&self, node: &Node, within: Option<&Bitset>) -> Bitset {
        let n = self.idx.len();
        match node {
            Node::All => Bitset::full(n),
            Node::Leaf(c) => match within {
                Some(w) if w.count() * 16 < n => self.test_each(c, w),
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

    /// Tests `c` on the members of `w` only.
    fn test_each(&self, c: &Compiled, w: &Bitset) -> Bitset {
        let mut out = Bitset::empty(self.idx.len());
        for id in w.iter() {
            if self.test(c, id) {
                out.set(id as usize);
            }
        }
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

    /// Splits the entries into one range per thread (64-aligned) and hands each its slice of `out`'s words.
    fn for_ranges(&self, out: &mut Bitset, f: impl Fn(usize, usize, &mut [u64]) + Sync) {
        let n = out.len();
        let words = out.words_mut();
        let per = words.len().div_ceil(self.threads).max(1);
        if self.threads == 1 || n < 4096 {
            f(0, n, words);
            return;
        }
        std::thread::scope(|s| {
            for (i, chunk) in words.chunks_mut(per).enumerate() {
                let f = &f;
                s.spawn(move || {
                    let lo = i * per * 64;
                    let hi = (lo + chunk.len() * 64).min(n);
                    f(lo, hi, chunk);
                });
            }
        });
    }

    fn scan_leaf(&self, c: &Compiled) -> Bitset {
        let idx = self.idx;
        let mut b = match &c.leaf {
            Leaf::Text { t, regex: None } if !t.path => match &t.pattern {
                Pattern::Substring(s) => {
                    self.scan_names(s.as_bytes(), t.case_sensitive, t.whole_word)
                }
                _ => self.scan(|id| self.test_leaf(&c.leaf, id)),
            },
            Leaf::Size(cmp) => {
                let (sz, fl) = (idx.sizes(), idx.flags_column());
                self.scan(|id| {
                    fl[id as usize] & flags::DIRECTORY == 0 && cmp.holds(sz[id as usize])
                })
            }
            Leaf::Date { field, from, to } => {
                let col = self.date_column(*field);
                self.scan(|id| (*from..*to).contains(&col[id as usize]))
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

    /// Substring search over the whole name arena (folded unless case-sensitive): one SIMD pass per thread.
    fn scan_names(&self, needle: &[u8], case_sensitive: bool, whole_word: bool) -> Bitset {
        let (text, starts): (&[u8], &[u32]) = if case_sensitive {
            (self.idx.name_arena(), self.idx.name_starts())
        } else {
            let a = self.folded();
            (&a.text, &a.starts)
        };
        let finder = memmem::Finder::new(needle);
        let mut out = Bitset::empty(self.idx.len());
        if needle.is_empty() {
            return Bitset::full(self.idx.len());
        }
        self.for_ranges(&mut out, |lo, hi, words| {
            let end = starts[hi] as usize;
            let mut pos = starts[lo] as usize;
            let mut cur = lo;
            while let Some(h) = finder.find(&text[pos..end]) {
                let at = pos + h;
                // The entry holding byte `at`: walk forward a little, then binary search the rest.
                let mut steps = 0;
                while starts[cur + 1] as usize <= at && steps < 8 {
                    cur += 1;
                    steps += 1;
                }
                if starts[cur + 1] as usize <= at {
                    cur += starts[cur..=hi].partition_point(|&s| s as usize <= at) - 1;
                }
                let (s, e) = (starts[cur] as usize, starts[cur + 1] as usize);
                if at + needle.len() <= e
                    && (!whole_word || word_bounded(&text[s..e], at - s, needle.len()))
                {
                    words[(cur - lo) / 64] |= 1 << ((cur - lo) % 64);
                    pos = e;
                } else {
                    pos = at + 1;
                }
                if pos >= end {
                    break;
                }
            }
        });
        out
    }

    fn date_column(&self, f: DateField) -> &[u64] {
        match f {
            DateField::Modified => self.idx.modified_column(),
            DateField::Created => self.idx.created_column(),
            DateField::Accessed => self.idx.accessed_column(),
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
        let idx = self.idx;
        match leaf {
            Leaf::Any => true,
            Leaf::Text { t, regex } => {
                let hay = if t.path {
                    self.path_bytes(id, !t.case_sensitive && regex.is_none())
                } else {
                    self.name_bytes(id, !t.case_sensitive && regex.is_none())
                };
                match (regex, &t.pattern) {
                    (Some(r), _) => r.is_match(&hay),
                    (None, Pattern::Substring(s)) => find_word(&hay, s.as_bytes(), t.whole_word),
                    (None, Pattern::Wildcard(w)) => glob::matches(w.as_bytes(), &hay),
                    (None, Pattern::Regex(_)) => false,
                }
            }
            Leaf::Ext(exts) => {
                let f = idx.flags(id);
                if f & (flags::DIRECTORY | flags::STREAM) != 0 {
                    return false;
                }
                let name = self.name_bytes(id, true);
                match memchr::memrchr(b'.', &name) {
                    Some(dot) => exts.iter().any(|e| e.as_slice() == &name[dot + 1..]),
                    None => false,
                }
            }
            Leaf::Size(c) => idx.flags(id) & flags::DIRECTORY == 0 && c.holds(idx.size(id)),
            Leaf::Date { field, from, to } => {
                (*from..*to).contains(&self.date_column(*field)[id as usize])
            }
            Leaf::Attrib(bits) => idx.flags(id) & bits == *bits,
            Leaf::Parent {
                path,
                case_sensitive,
            } => {
                let d = self.dirs();
                let p = idx.parent(id);
                if id == idx.root() {
                    return false;
                }
                let (s, e) = if *case_sensitive {
                    d.span[p as usize]
                } else {
                    d.folded_span[p as usize]
                };
                let text = if *case_sensitive { &d.text } else { &d.folded };
                // The root's path is empty here and `/` in the query.
                let dir = &text[s as usize..e as usize];
                if dir.is_empty() {
                    path.as_slice() == b"/"
                } else {
                    dir == path.as_slice()
                }
            }
            Leaf::Depth(c) => c.holds(u64::from(self.depths()[id as usize])),
            Leaf::Len(c) => c.holds(idx.name(id).chars().count() as u64),
            Leaf::Dupe => self.dupes().get(id as usize),
            Leaf::Deleted => idx.flags(id) & flags::DELETED != 0,
            Leaf::Stream => idx.flags(id) & flags::STREAM != 0,
        }
    }

    fn name_bytes(&self, id: EntryId, folded: bool) -> Cow<'_, [u8]> {
        if folded {
            let a = self.folded();
            Cow::Borrowed(
                &a.text[a.starts[id as usize] as usize..a.starts[id as usize + 1] as usize],
            )
        } else {
            Cow::Borrowed(self.idx.name_bytes(id))
        }
    }

    /// The full path (`/`-separated from the root), folded or as given.
    fn path_bytes(&self, id: EntryId, folded: bool) -> Cow<'_, [u8]> {
        let d = self.dirs();
        if id == self.idx.root() {
            return Cow::Borrowed(b"/");
        }
        let p = self.idx.parent(id) as usize;
        let (text, (s, e)) = if folded {
            (&d.folded, d.folded_span[p])
        } else {
            (&d.text, d.span[p])
        };
        let name = self.name_bytes(id, folded);
        let mut v = Vec::with_capacity((e - s) as usize + 1 + name.len());
        v.extend_from_slice(&text[s as usize..e as usize]);
        v.push(b'/');
        v.extend_from_slice(&name);
        Cow::Owned(v)
    }

    fn folded(&self) -> &Arena {
        self.folded.get_or_init(|| {
            let idx = self.idx;
            let mut text = Vec::with_capacity(idx.name_arena().len());
            let mut starts = Vec::with_capacity(idx.len() + 1);
            starts.push(0);
            for id in 0..idx.len() as EntryId {
                fold_into(idx.name_bytes(id), &mut text);
                starts.push(text.len() as u32);
            }
            Arena { text, starts }
        })
    }

    fn dirs(&self) -> &DirPaths {
        self.dirs.get_or_init(|| {
            let idx = self.idx;
            const UNSET: (u32, u32) = (u32::MAX, 0);
            let mut d = DirPaths {
                text: Vec::new(),
                folded: Vec::new(),
                span: vec![UNSET; idx.len()],
                folded_span: vec![UNSET; idx.len()],
            };
            let root = idx.root() as usize;
            d.span[root] = (0, 0);
            d.folded_span[root] = (0, 0);
            let mut chain = Vec::new();
            for id in 0..idx.len() as EntryId {
                if idx.flags(id) & flags::DIRECTORY == 0 || d.span[id as usize] != UNSET {
                    continue;
                }
                let mut cur = id;
                while d.span[cur as usize] == UNSET {
                    chain.push(cur);
                    cur = idx.parent(cur);
                }
                while let Some(x) = chain.pop() {
                    let p = idx.parent(x) as usize;
                    let (s, e) = d.span[p];
                    let start = d.text.len();
                    d.text.extend_from_within(s as usize..e as usize);
                    d.text.push(b'/');
                    d.text.extend_from_slice(idx.name_bytes(x));
                    d.span[x as usize] = (start as u32, d.text.len() as u32);
                    let (s, e) = d.folded_span[p];
                    let start = d.folded.len();
                    d.folded.extend_from_within(s as usize..e as usize);
                    d.folded.push(b'/');
                    fold_into(idx.name_bytes(x), &mut d.folded);
                    d.folded_span[x as usize] = (start as u32, d.folded.len() as u32);
                }
            }
            d
        })
    }

    fn depths(&self) -> &[u16] {
        self.depth.get_or_init(|| {
            let idx = self.idx;
            const UNKNOWN: u16 = u16::MAX;
            let mut depth = vec![UNKNOWN; idx.len()];
            depth[idx.root() as usize] = 0;
            let mut chain = Vec::new();
            for id in 0..idx.len() as EntryId {
                let mut cur = id;
                while depth[cur as usize] == UNKNOWN {
                    chain.push(cur);
                    cur = idx.parent(cur);
                }
                let mut d = depth[cur as usize];
                while let Some(x) = chain.pop() {
                    d = d.saturating_add(1).min(UNKNOWN - 1);
                    depth[x as usize] = d;
                }
            }
            depth
        })
    }

    /// Entries whose folded name another visible entry also has.
    fn dupes(&self) -> &Bitset {
        self.dupes.get_or_init(|| {
            let a = self.folded();
            let n = self.idx.len();
            let name = |id: u32| {
                &a.text[a.starts[id as usize] as usize..a.starts[id as usize + 1] as usize]
            };
            let mut ids: Vec<u32> = (0..n as u32)
                .filter(|&id| self.idx.flags(id) & (flags::STREAM | flags::SYNTHETIC) == 0)
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

    /// The members of `set` in the order of `key` (ties by name, then id), at most `limit` of them: a partial
    /// selection when the limit is small.
    pub fn sorted(
        &self,
        set: &Bitset,
        key: Option<SortKey>,
        descending: bool,
        limit: Option<usize>,
    ) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = set.iter().collect();
        let Some(key) = key else {
            if descending {
                ids.reverse();
            }
            if let Some(l) = limit {
                ids.truncate(l);
            }
            return ids;
        };
        if matches!(key, SortKey::Name | SortKey::Extension) || key == SortKey::Path {
            self.folded();
        }
        if key == SortKey::Path {
            self.dirs();
        }
        let cmp = |a: &EntryId, b: &EntryId| {
            let o = self.compare(key, *a, *b);
            if descending {
                o.reverse()
            } else {
                o
            }
        };
        match limit {
            Some(l) if l < ids.len() => {
                if l > 0 {
                    ids.select_nth_unstable_by(l - 1, cmp);
                }
                ids.truncate(l);
                ids.sort_unstable_by(cmp);
            }
            _ => ids.sort_unstable_by(cmp),
        }
        ids
    }

    fn compare(&self, key: SortKey, a: EntryId, b: EntryId) -> std::cmp::Ordering {
        let idx = self.idx;
        let by_name = || {
            self.name_bytes(a, true)
                .cmp(&self.name_bytes(b, true))
                .then_with(|| idx.name_bytes(a).cmp(idx.name_bytes(b)))
                .then(a.cmp(&b))
        };
        match key {
            SortKey::Name => by_name(),
            SortKey::Path => self
                .path_bytes(a, true)
                .cmp(&self.path_bytes(b, true))
                .then(a.cmp(&b)),
            SortKey::Size => idx.size(a).cmp(&idx.size(b)).then_with(by_name),
            SortKey::Extension => extension(&self.name_bytes(a, true))
                .cmp(extension(&self.name_bytes(b, true)))
                .then_with(by_name),
            SortKey::Created => idx.created(a).cmp(&idx.created(b)).then_with(by_name),
            SortKey::Modified => idx.modified(a).cmp(&idx.modified(b)).then_with(by_name),
            SortKey::Accessed => idx.accessed(a).cmp(&idx.accessed(b)).then_with(by_name),
        }
    }
}

fn extension(name: &[u8]) -> &[u8] {
    match memchr::memrchr(b'.', name) {
        Some(d) if d > 0 => &name[d + 1..],
        _ => b"",
    }
}

/// Lower-cases UTF-8 `s` onto `out` (ASCII byte by byte, the rest by `char::to_lowercase`).
pub(crate) fn fold_into(s: &[u8], out: &mut Vec<u8>) {
    if s.is_ascii() {
        out.extend(s.iter().map(u8::to_ascii_lowercase));
    } else {
        out.extend_from_slice(String::from_utf8_lossy(s).to_lowercase().as_bytes());
    }
}

/// Whether `needle` occurs in `hay` (bounded by non-alphanumerics when `whole_word`).
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
            Leaf::Text { t, regex: None }
                if !t.path && matches!(t.pattern, Pattern::Substring(_)) =>
            {
                2
            }
            Leaf::Ext(_) | Leaf::Len(_) | Leaf::Depth(_) => 3,
            Leaf::Text { regex: None, .. } | Leaf::Parent { .. } | Leaf::Dupe => 4,
            Leaf::Text { .. } => 5,
        },
        Node::Not(x) => cost(x).max(3),
        Node::And(xs) | Node::Or(xs) => xs.iter().map(cost).max().unwrap_or(0).max(3),
    }
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
            Leaf::Text {
                t: t.clone(),
                regex,
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
