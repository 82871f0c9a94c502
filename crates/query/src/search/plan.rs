//! The plan: a parsed query compiled into terms ready to run (`Leaf`), their rough costs (cheapest first in an
//! AND), and the literals a regex's matches start with.

use super::*;

/// A term compiled for execution. A query has a handful of these, so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Leaf {
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
    Uid(Cmp),
    Gid(Cmp),
    Perm(Perm),
    Kind(uffs_index::EntryKind),
    /// `child:`: the folders with a matching entry directly inside, found once per query.
    Child {
        name: Box<Leaf>,
        only: Option<KindFilter>,
        hits: OnceLock<Bitset>,
    },
    ChildFiles(Cmp),
    ChildFolders(Cmp),
    /// `namepartdupe:` and the like, found once per query.
    SameAs {
        key: DupeKey,
        hits: OnceLock<Bitset>,
    },
    Frn(u64),
    Fsi(Cmp),
}

pub(super) struct Compiled {
    pub(super) leaf: Leaf,
    pub(super) only: Option<KindFilter>,
}

#[allow(clippy::large_enum_variant)]
pub(super) enum Node {
    All,
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Leaf(Compiled),
}

/// Rough cost of evaluating a node over the whole index (cheapest first in an AND).
pub(super) fn cost(n: &Node) -> u8 {
    match n {
        Node::All => 0,
        Node::Leaf(c) => match &c.leaf {
            Leaf::Attrib(_)
            | Leaf::Uid(_)
            | Leaf::Gid(_)
            | Leaf::Perm(_)
            | Leaf::Kind(_)
            | Leaf::Deleted
            | Leaf::Stream
            | Leaf::Size(_)
            | Leaf::Date { .. }
            | Leaf::Frn(_)
            | Leaf::Fsi(_)
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
            | Leaf::ChildFiles(_)
            | Leaf::ChildFolders(_)
            | Leaf::Child { .. }
            | Leaf::SameAs { .. }
            | Leaf::Empty => 4,
            Leaf::Text { .. } => 5,
        },
        Node::Not(x) => cost(x).max(3),
        Node::And(xs) | Node::Or(xs) => xs.iter().map(cost).max().unwrap_or(0).max(3),
    }
}

/// The regex leaf without its prefilter, for checking candidates one by one.
pub(super) fn clone_regex_leaf(l: &Leaf) -> Leaf {
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
pub(super) fn regex_prefixes(pattern: &str, case_sensitive: bool) -> Option<Vec<Vec<u8>>> {
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

pub(super) fn compile(e: &Expr) -> Node {
    match e {
        Expr::All => Node::All,
        Expr::And(xs) => Node::And(xs.iter().map(compile).collect()),
        Expr::Or(xs) => Node::Or(xs.iter().map(compile).collect()),
        Expr::Not(x) => Node::Not(Box::new(compile(x))),
        // Answered from the data, by the caller: true here (see `TermKind::Content`).
        Expr::Term(t) if matches!(t.kind, TermKind::Content(_)) => Node::All,
        Expr::Term(t) => Node::Leaf(Compiled {
            leaf: compile_term(&t.kind),
            only: t.only,
        }),
    }
}

pub(super) fn compile_term(k: &TermKind) -> Leaf {
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
        TermKind::Uid(c) => Leaf::Uid(*c),
        TermKind::Gid(c) => Leaf::Gid(*c),
        TermKind::Perm(p) => Leaf::Perm(*p),
        TermKind::Kind(k) => Leaf::Kind(*k),
        TermKind::Child { name, only } => Leaf::Child {
            name: Box::new(compile_term(&TermKind::Text(name.clone()))),
            only: *only,
            hits: OnceLock::new(),
        },
        TermKind::ChildFiles(c) => Leaf::ChildFiles(*c),
        TermKind::ChildFolders(c) => Leaf::ChildFolders(*c),
        TermKind::SameAs(key) => Leaf::SameAs {
            key: *key,
            hits: OnceLock::new(),
        },
        TermKind::Frn(v) => Leaf::Frn(*v),
        TermKind::Fsi(c) => Leaf::Fsi(*c),
        TermKind::Content(_) => Leaf::Any,
    }
}

pub(super) fn mentions(n: &Node, k: &dyn Fn(&Leaf) -> bool) -> bool {
    match n {
        Node::All => false,
        Node::Leaf(c) => k(&c.leaf),
        Node::Not(x) => mentions(x, k),
        Node::And(xs) | Node::Or(xs) => xs.iter().any(|x| mentions(x, k)),
    }
}
