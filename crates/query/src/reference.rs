//! The reference matcher: evaluates a query on every entry the obvious way (building each path as a string).
//! Slow and simple on purpose; the property tests hold the engine's results to it.

use std::collections::{HashMap, HashSet};

use uffs_index::paths::fold;
use uffs_index::{flags, EntryId, Index};

use crate::ast::*;
use crate::search::SearchOptions;

/// The entries matching `expr`, in id order, under the same visibility rules as the engine.
pub fn matches(idx: &Index, expr: &Expr, opts: &SearchOptions) -> Vec<EntryId> {
    let deleted = opts.include_deleted || mentions(expr, &|k| matches!(k, TermKind::Deleted));
    let streams = opts.include_streams || mentions(expr, &|k| matches!(k, TermKind::Stream));
    // How many live entries (streams and synthetic folders aside) have each folded name, for `dupe:`.
    let mut names: HashMap<String, usize> = HashMap::new();
    if mentions(expr, &|k| matches!(k, TermKind::Dupe)) {
        for id in 0..idx.len() as EntryId {
            if idx.flags(id) & (flags::STREAM | flags::SYNTHETIC | flags::DELETED) == 0 {
                *names.entry(fold(&idx.name(id))).or_default() += 1;
            }
        }
    }
    let usage = if mentions(expr, &|k| {
        matches!(
            k,
            TermKind::TreeSize(_)
                | TermKind::Descendants(_)
                | TermKind::ChildCount(_)
                | TermKind::Empty
                | TermKind::SizeDupe
        )
    }) {
        Usage::of(idx)
    } else {
        Usage::default()
    };
    // Each live folder's children (files, folders and links; no streams, nothing deleted), for `child:` and
    // the child counts.
    let mut kids: HashMap<EntryId, Vec<EntryId>> = HashMap::new();
    if mentions(expr, &|k| {
        matches!(
            k,
            TermKind::Child { .. } | TermKind::ChildFiles(_) | TermKind::ChildFolders(_)
        )
    }) {
        for c in 0..idx.len() as EntryId {
            if c != idx.root() && idx.flags(c) & (flags::STREAM | flags::DELETED) == 0 {
                kids.entry(idx.parent(c)).or_default().push(c);
            }
        }
    }
    // For each `…dupe:` key: the live entries whose value entries of two records or more have.
    let mut same: HashMap<DupeKey, HashSet<EntryId>> = HashMap::new();
    for key in [
        DupeKey::NamePart,
        DupeKey::Attributes,
        DupeKey::Time(DateField::Modified),
        DupeKey::Time(DateField::Created),
        DupeKey::Time(DateField::Accessed),
    ] {
        if !mentions(expr, &|k| *k == TermKind::SameAs(key)) {
            continue;
        }
        let mut groups: HashMap<String, (HashSet<u32>, Vec<EntryId>)> = HashMap::new();
        for id in 0..idx.len() as EntryId {
            let f = idx.flags(id);
            if id == idx.root() || f & (flags::STREAM | flags::SYNTHETIC | flags::DELETED) != 0 {
                continue;
            }
            let value = match key {
                DupeKey::NamePart => {
                    let name = fold(&idx.name(id));
                    match name.rsplit_once('.') {
                        Some((part, _)) if f & flags::DIRECTORY == 0 => part.to_string(),
                        _ => name,
                    }
                }
                DupeKey::Attributes => (f & flags::WINDOWS_MASK).to_string(),
                DupeKey::Time(field) => {
                    let t = match field {
                        DateField::Modified => idx.modified(id),
                        DateField::Created => idx.created(id),
                        DateField::Accessed => idx.accessed(id),
                    };
                    if t == uffs_index::time::UNKNOWN {
                        continue;
                    }
                    t.to_string()
                }
            };
            let g = groups.entry(value).or_default();
            g.0.insert(idx.record(id));
            g.1.push(id);
        }
        let set = same.entry(key).or_default();
        for (records, ids) in groups.into_values() {
            if records.len() > 1 {
                set.extend(ids);
            }
        }
    }
    let names = Ctx {
        names,
        usage,
        kids,
        same,
    };
    (0..idx.len() as EntryId)
        .filter(|&id| {
            let f = idx.flags(id);
            id != idx.root()
                && f & flags::SYNTHETIC == 0
                && (deleted || f & flags::DELETED == 0)
                && (streams || f & flags::STREAM == 0)
        })
        .filter(|&id| eval(idx, expr, id, &names))
        .collect()
}

/// Whether a term of `e` is of a kind `k` picks.
pub(crate) fn mentions(e: &Expr, k: &dyn Fn(&TermKind) -> bool) -> bool {
    match e {
        Expr::All => false,
        Expr::Term(t) => k(&t.kind),
        Expr::Not(x) => mentions(x, k),
        Expr::And(xs) | Expr::Or(xs) => xs.iter().any(|x| mentions(x, k)),
    }
}

/// What the terms that look at other entries need, made once per query.
struct Ctx {
    names: HashMap<String, usize>,
    usage: Usage,
    kids: HashMap<EntryId, Vec<EntryId>>,
    same: HashMap<DupeKey, HashSet<EntryId>>,
}

fn eval(idx: &Index, e: &Expr, id: EntryId, names: &Ctx) -> bool {
    match e {
        Expr::All => true,
        Expr::And(xs) => xs.iter().all(|x| eval(idx, x, id, names)),
        Expr::Or(xs) => xs.iter().any(|x| eval(idx, x, id, names)),
        Expr::Not(x) => !eval(idx, x, id, names),
        Expr::Term(t) => term(idx, t, id, names),
    }
}

fn term(idx: &Index, t: &Term, id: EntryId, ctx: &Ctx) -> bool {
    let Ctx {
        names,
        usage,
        kids,
        same,
    } = ctx;
    let f = idx.flags(id);
    let is_dir = f & flags::DIRECTORY != 0;
    let is_stream = f & flags::STREAM != 0;
    match t.only {
        Some(KindFilter::File) if is_dir || is_stream => return false,
        Some(KindFilter::Folder) if !is_dir || is_stream => return false,
        _ => {}
    }
    let name = idx.name(id).to_string();
    match &t.kind {
        TermKind::Any => true,
        // Answered from the data, by the caller (see `TermKind::Content`).
        TermKind::Content(_) => true,
        TermKind::Text(m) => {
            let hay = if m.path { idx.path(id) } else { name };
            // Folded, then (unless diacritics must match) without diacritics, as the pattern was.
            let prepared = |hay: String| {
                let hay = if m.case_sensitive { hay } else { fold(&hay) };
                if m.diacritics {
                    hay
                } else {
                    uffs_index::diacritics::strip(&hay)
                }
            };
            match &m.pattern {
                Pattern::Regex(r) => regex::RegexBuilder::new(r)
                    .case_insensitive(!m.case_sensitive)
                    .build()
                    .map(|re| re.is_match(&hay))
                    .unwrap_or(false),
                Pattern::Substring(s) => {
                    let hay = prepared(hay);
                    hay.match_indices(s.as_str())
                        .any(|(at, _)| !m.whole_word || bounded(&hay, at, s.len()))
                }
                Pattern::Wildcard(w) => {
                    let hay = prepared(hay);
                    wildcard(w, &hay)
                }
            }
        }
        TermKind::Ext(exts) => {
            !is_dir && !is_stream && {
                let lower = fold(&name);
                lower
                    .rfind('.')
                    .is_some_and(|d| exts.iter().any(|e| *e == lower[d + 1..]))
            }
        }
        TermKind::Size(c) => !is_dir && c.holds(idx.size(id)),
        TermKind::Date { field, from, to } => {
            let v = match field {
                DateField::Modified => idx.modified(id),
                DateField::Created => idx.created(id),
                DateField::Accessed => idx.accessed(id),
            };
            *from <= v && v < *to
        }
        TermKind::Attrib(bits) => f & bits == *bits,
        TermKind::Parent {
            path,
            case_sensitive,
        } => {
            let p = idx.path(idx.parent(id));
            let p = if *case_sensitive { p } else { fold(&p) };
            p == *path
        }
        TermKind::Depth(c) => c.holds(idx.depth(id) as u64),
        TermKind::Len(c) => c.holds(name.chars().count() as u64),
        // Among the live entries: a deleted copy is no one's duplicate, nor has one.
        TermKind::Dupe => {
            !is_stream && f & flags::DELETED == 0 && names.get(&fold(&name)).is_some_and(|&n| n > 1)
        }
        TermKind::Deleted => f & flags::DELETED != 0,
        TermKind::Stream => is_stream,
        TermKind::Uid(c) => idx.posix(id).is_some_and(|p| c.holds(u64::from(p.uid))),
        TermKind::Gid(c) => idx.posix(id).is_some_and(|p| c.holds(u64::from(p.gid))),
        TermKind::Perm(m) => idx.posix(id).is_some_and(|p| m.holds(p.permissions())),
        TermKind::Kind(k) => idx.kind(id) == *k,
        TermKind::TreeSize(c) => usage.folder(id).is_some_and(|u| c.holds(u.size)),
        TermKind::Descendants(c) => usage
            .folder(id)
            .is_some_and(|u| c.holds((u.files.len() + u.folders) as u64)),
        TermKind::ChildCount(c) => usage.folder(id).is_some_and(|u| c.holds(u.children)),
        TermKind::Empty => usage.folder(id).is_some_and(|u| u.children == 0),
        TermKind::Child { name, only } => {
            f & flags::DELETED == 0
                && kids.get(&id).is_some_and(|k| {
                    k.iter().any(|&c| {
                        let is_dir = idx.flags(c) & flags::DIRECTORY != 0;
                        only.is_none_or(|o| is_dir == (o == KindFilter::Folder))
                            && term(
                                idx,
                                &Term {
                                    span: 0..0,
                                    kind: TermKind::Text(name.clone()),
                                    only: None,
                                },
                                c,
                                ctx,
                            )
                    })
                })
        }
        TermKind::ChildFiles(c) | TermKind::ChildFolders(c) => {
            let folders = matches!(t.kind, TermKind::ChildFolders(_));
            is_dir
                && !is_stream
                && f & flags::DELETED == 0
                && c.holds(kids.get(&id).map_or(0, |k| {
                    k.iter()
                        .filter(|&&x| (idx.flags(x) & flags::DIRECTORY != 0) == folders)
                        .count() as u64
                }))
        }
        TermKind::SameAs(key) => same.get(key).is_some_and(|s| s.contains(&id)),
        TermKind::Frn(v) => {
            u64::from(idx.record(id)) == v & 0xFFFF_FFFF_FFFF
                && (v >> 48 == 0 || u64::from(idx.sequence(id)) == v >> 48)
        }
        TermKind::Fsi(c) => c.holds(0),
        TermKind::SizeDupe => {
            !is_dir
                && !is_stream
                && f & (flags::DELETED | flags::SYNTHETIC) == 0
                && usage
                    .by_size
                    .get(&idx.size(id))
                    .is_some_and(|records| records.len() > 1)
        }
    }
}

/// What a folder holds, gathered the obvious way: every live entry added to each folder above it.
#[derive(Default)]
struct FolderUsage {
    /// The records of the files below (a file of several links is one record).
    files: std::collections::HashSet<u32>,
    folders: usize,
    children: u64,
    size: u64,
}

#[derive(Default)]
struct Usage {
    folders: HashMap<EntryId, FolderUsage>,
    /// Live files' records by size, for `sizedupe:`.
    by_size: HashMap<u64, std::collections::HashSet<u32>>,
}

impl Usage {
    fn of(idx: &Index) -> Usage {
        let mut u = Usage::default();
        let live = |id: EntryId| id != idx.root() && idx.flags(id) & flags::DELETED == 0;
        for id in 0..idx.len() as EntryId {
            let f = idx.flags(id);
            if f & flags::DIRECTORY != 0 && f & flags::STREAM == 0 && !idx.is_deleted(id) {
                u.folders.entry(id).or_default();
            }
        }
        // Sizes counted once per folder: a file by its record, a stream by its record and stream name.
        let mut counted: std::collections::HashSet<(EntryId, u32, String)> = Default::default();
        for id in 0..idx.len() as EntryId {
            if !live(id) {
                continue;
            }
            let f = idx.flags(id);
            let (dir, stream) = (f & flags::DIRECTORY != 0, f & flags::STREAM != 0);
            if !dir && !stream && f & flags::SYNTHETIC == 0 {
                u.by_size
                    .entry(idx.size(id))
                    .or_default()
                    .insert(idx.record(id));
            }
            let stream_name = match idx.name(id).rsplit_once(':') {
                Some((_, s)) if stream => s.to_string(),
                _ => String::new(),
            };
            let mut above = idx.parent(id);
            let mut first = true;
            for _ in 0..crate::MAX_WALK {
                let Some(a) = u.folders.get_mut(&above) else {
                    break;
                };
                if first && !stream {
                    a.children += 1;
                }
                first = false;
                if dir && !stream {
                    a.folders += 1;
                } else {
                    if !stream {
                        a.files.insert(idx.record(id));
                    }
                    if counted.insert((above, idx.record(id), stream_name.clone())) {
                        a.size += idx.size(id);
                    }
                }
                if above == idx.root() {
                    break;
                }
                above = idx.parent(above);
            }
        }
        u
    }

    fn folder(&self, id: EntryId) -> Option<&FolderUsage> {
        self.folders.get(&id)
    }
}

fn bounded(hay: &str, at: usize, len: usize) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || !c.is_ascii();
    hay[..at].chars().next_back().is_none_or(|c| !word(c))
        && hay[at + len..].chars().next().is_none_or(|c| !word(c))
}

/// `*` any run of characters, `?` one character, over the whole string; by recursion on characters.
fn wildcard(p: &str, s: &str) -> bool {
    let (pc, sc): (Vec<char>, Vec<char>) = (p.chars().collect(), s.chars().collect());
    fn go(p: &[char], s: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('*') => (0..=s.len()).any(|k| go(&p[1..], &s[k..])),
            Some('?') => !s.is_empty() && go(&p[1..], &s[1..]),
            Some(c) => s.first() == Some(c) && go(&p[1..], &s[1..]),
        }
    }
    go(&pc, &sc)
}
