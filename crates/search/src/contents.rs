//! The terms only a file's data answers (`content:`, `type:`, `hash:`). The index cannot, so a query with them is
//! split: the rest of the query is searched in the index as usual, and the entries it finds (files and streams;
//! `ext:log content:timeout` reads only `.log` files) are handed to a [`Contents`], which reads them from the
//! volume and keeps those the data terms hold for. A front end that can read the volume gives one to
//! [`run_with`](crate::execute::run_with); without one, such a query is refused with a message that says why.
//!
//! The data terms stand beside the rest with AND (each may be negated): `ext:log content:timeout !type:text`. A
//! data term inside OR, or under a NOT with other terms, would need the data of every entry the index cannot rule
//! out, which is the whole volume: refused, with the way to write it.

use uffs_index::EntryId;
use uffs_query::ast::{ContentTerm, Expr, KindFilter, TermKind};
use uffs_query::Searcher;

use crate::{Error, SearchRequest};

/// One data term of a query, as it stands beside the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentFilter {
    pub term: ContentTerm,
    /// `!content:x`: the entries whose data does not hold it.
    pub negated: bool,
    /// `file:` / `folder:` in front of the term.
    pub only: Option<KindFilter>,
}

/// Reads entries' data and decides the data terms: what a front end that can read the volumes gives the search.
pub trait Contents: Sync {
    /// Of `ids` (entries of target `target`, whose path prefix is `prefix`: files and streams, in index order),
    /// those for which every filter holds. Entries whose data cannot be read (encrypted, damaged) are left out; the
    /// implementation says so where its caller will see it.
    fn filter(
        &self,
        target: usize,
        prefix: &str,
        searcher: &Searcher,
        ids: Vec<EntryId>,
        filters: &[ContentFilter],
    ) -> Result<Vec<EntryId>, Error>;

    /// The `type` column of `ids` (entries of target `target`, in the order they are printed): each one's type by
    /// signature (a `type:` name, `""` when no signature is known), `None` for a folder or a file whose data
    /// cannot be read.
    fn types(
        &self,
        target: usize,
        searcher: &Searcher,
        ids: &[EntryId],
    ) -> Result<Vec<Option<&'static str>>, Error>;
}

/// Whether answering `req` reads the files' data: its query has a data term (`content:`, `type:`, `hash:`), or
/// it prints the `type` column. Front ends open the volumes' sources only then.
pub fn reads_data(req: &SearchRequest, expr: &Expr) -> bool {
    mentions_content(expr)
        || req.output.columns.iter().any(|c| {
            c.split(',')
                .any(|c| uffs_results::Column::parse(c) == Some(uffs_results::Column::Type))
        })
}

/// Splits `expr` into what the index answers and the data terms beside it.
pub fn split(expr: Expr) -> Result<(Expr, Vec<ContentFilter>), Error> {
    if !mentions_content(&expr) {
        return Ok((expr, Vec::new()));
    }
    let parts = match expr {
        Expr::And(xs) => xs,
        other => vec![other],
    };
    let mut rest = Vec::new();
    let mut filters = Vec::new();
    for x in parts {
        match x {
            Expr::Term(t) => match t.kind {
                TermKind::Content(term) => filters.push(ContentFilter {
                    term,
                    negated: false,
                    only: t.only,
                }),
                kind => rest.push(Expr::Term(uffs_query::ast::Term { kind, ..t })),
            },
            Expr::Not(inner) => match *inner {
                Expr::Term(uffs_query::ast::Term {
                    kind: TermKind::Content(term),
                    only,
                    ..
                }) => filters.push(ContentFilter {
                    term,
                    negated: true,
                    only,
                }),
                other if mentions_content(&other) => return Err(nested()),
                other => rest.push(Expr::Not(Box::new(other))),
            },
            other if mentions_content(&other) => return Err(nested()),
            other => rest.push(other),
        }
    }
    let rest = match rest.len() {
        0 => Expr::All,
        1 => rest.pop().expect("one"),
        _ => Expr::And(rest),
    };
    Ok((rest, filters))
}

/// Why a data term inside OR or a group is refused, and how to write the query instead.
pub const MISPLACED: &str = "content:, type: and hash: stand beside the rest of the query with AND (each may be \
negated), not inside OR or a group: the data of every file would have to be read. Write each alternative as its \
own query, or narrow with AND (ext:log content:timeout)";

fn nested() -> Error {
    Error::BadRequest(MISPLACED.into())
}

/// Where the first data term that [`split`] would refuse (inside OR or a group) is in the query's text: so that
/// the refusal points at it.
pub fn misplaced(e: &Expr) -> Option<std::ops::Range<usize>> {
    let parts = match e {
        Expr::And(xs) => xs.as_slice(),
        other => std::slice::from_ref(other),
    };
    parts.iter().find_map(|x| match x {
        Expr::Term(_) => None,
        Expr::Not(inner) if matches!(**inner, Expr::Term(_)) => None,
        other => first_data_term(other),
    })
}

/// The first `type:` term that names no type: where it is in the query's text, and why. Checked with the query
/// (the reader of the files would refuse it too, but could not point at it).
pub fn unknown_type(e: &Expr) -> Option<(std::ops::Range<usize>, String)> {
    match e {
        Expr::All => None,
        Expr::Term(t) => match &t.kind {
            TermKind::Content(ContentTerm::Type(name)) => uffs_filetype::Filter::parse(name)
                .err()
                .map(|why| (t.span.clone(), why.to_string())),
            _ => None,
        },
        Expr::Not(x) => unknown_type(x),
        Expr::And(xs) | Expr::Or(xs) => xs.iter().find_map(unknown_type),
    }
}

/// The span of the first data term in `e`.
fn first_data_term(e: &Expr) -> Option<std::ops::Range<usize>> {
    match e {
        Expr::All => None,
        Expr::Term(t) => matches!(t.kind, TermKind::Content(_)).then(|| t.span.clone()),
        Expr::Not(x) => first_data_term(x),
        Expr::And(xs) | Expr::Or(xs) => xs.iter().find_map(first_data_term),
    }
}

/// Whether `e` has a data term anywhere.
pub fn mentions_content(e: &Expr) -> bool {
    match e {
        Expr::All => false,
        Expr::Term(t) => matches!(t.kind, TermKind::Content(_)),
        Expr::Not(x) => mentions_content(x),
        Expr::And(xs) | Expr::Or(xs) => xs.iter().any(mentions_content),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(q: &str) -> Expr {
        uffs_query::parse(q, &uffs_query::ParseOptions { now: 0, case: None }).unwrap()
    }

    #[test]
    fn data_terms_beside_the_rest_are_split_off() {
        let (rest, f) = split(parse("ext:log content:timeout !type:text")).unwrap();
        assert_eq!(rest, parse("ext:log"));
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].term,
            ContentTerm::Text {
                text: "timeout".into(),
                case_sensitive: false,
                whole_word: false,
                regex: false,
                utf16: false,
            }
        );
        assert!(!f[0].negated);
        assert_eq!(f[1].term, ContentTerm::Type("text".into()));
        assert!(f[1].negated);
        let (rest, f) = split(parse("content:x")).unwrap();
        assert_eq!(rest, Expr::All);
        assert_eq!(f.len(), 1);
        let (rest, f) = split(parse("report ext:pdf")).unwrap();
        assert_eq!(rest, parse("report ext:pdf"));
        assert!(f.is_empty());
    }

    #[test]
    fn a_data_term_inside_or_is_refused() {
        for q in [
            "a | content:x",
            "!(a content:x)",
            "<content:x | type:pdf> ext:log",
        ] {
            assert!(
                matches!(split(parse(q)), Err(Error::BadRequest(m)) if m.contains("beside")),
                "{q}"
            );
        }
    }

    #[test]
    fn a_misplaced_data_term_is_found_where_it_is() {
        for (q, term) in [
            ("a | content:x", "content:x"),
            ("ext:log !(regex:content:x+ a)", "regex:content:x+"),
            ("<type:pdf | b> ext:log", "type:pdf"),
        ] {
            let span = misplaced(&parse(q)).unwrap_or_else(|| panic!("{q}"));
            assert_eq!(&q[span], term, "{q}");
        }
        for q in ["ext:log content:x !type:text", "content:x", "a | b"] {
            assert_eq!(misplaced(&parse(q)), None, "{q}");
        }
        let q = "ext:log !type:pdff";
        let (span, why) = unknown_type(&parse(q)).unwrap();
        assert_eq!(&q[span], "type:pdff");
        assert!(why.contains("did you mean"), "{why}");
        assert_eq!(unknown_type(&parse("type:pdf !type:mismatch")), None);
    }

    #[test]
    fn modifiers_reach_the_data_term() {
        let (_, f) = split(parse(
            "case:ww:content:Error regex:content:t[io]+me hash:ABCDEF0123456789",
        ))
        .unwrap();
        assert_eq!(
            f[0].term,
            ContentTerm::Text {
                text: "Error".into(),
                case_sensitive: true,
                whole_word: true,
                regex: false,
                utf16: false,
            }
        );
        assert!(
            matches!(&f[1].term, ContentTerm::Text { regex: true, text, .. } if text == "t[io]+me")
        );
        assert_eq!(f[2].term, ContentTerm::Hash("abcdef0123456789".into()));
        // Everything's `utf16content:`: the same term, read as UTF-16LE where no byte-order mark says otherwise.
        let (_, f) = split(parse("utf16content:Quartz regex:utf16content:q.z")).unwrap();
        assert!(
            matches!(&f[0].term, ContentTerm::Text { utf16: true, regex: false, text, .. } if text == "Quartz")
        );
        assert!(
            matches!(&f[1].term, ContentTerm::Text { utf16: true, regex: true, text, .. } if text == "q.z")
        );
    }
}
