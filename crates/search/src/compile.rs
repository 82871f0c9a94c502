//! A [`SearchRequest`]'s filters as one [`Expr`]: the query text parsed (or taken as one glob or regular
//! expression), and fd's shortcut filters (extensions, kind, sizes, modification times) joined to it.

use uffs_index::time::{from_civil_date, TICKS_PER_SECOND};
use uffs_query::ast::{Cmp, DateField, KindFilter, Pattern, Term, TermKind, TextMatch};
use uffs_query::{parse, Expr, ParseOptions};

use crate::request::{Kind, SearchRequest};
use crate::Error;

fn bad(msg: String) -> Error {
    Error::BadRequest(msg)
}

/// The request's filters as one expression; `now` (FILETIME) is what relative dates count back from.
pub fn compile(a: &SearchRequest, now: u64) -> Result<Expr, Error> {
    let text = &a.query;
    let case = a.case.sensitive();
    let mut parts = Vec::new();
    let term = |kind: TermKind, only: Option<KindFilter>| {
        Expr::Term(Term {
            span: 0..0,
            kind,
            only,
        })
    };
    if a.glob || a.regex {
        if text.is_empty() {
            return Err(bad("--glob and --regex need a pattern".into()));
        }
        let case_sensitive = case.unwrap_or_else(|| text.chars().any(char::is_uppercase));
        let pattern = if a.regex {
            regex::RegexBuilder::new(text)
                .case_insensitive(!case_sensitive)
                .build()
                .map_err(|e| bad(format!("bad regular expression {text:?}: {e}")))?;
            Pattern::Regex(text.clone())
        } else if case_sensitive {
            Pattern::Wildcard(text.clone())
        } else {
            Pattern::Wildcard(uffs_index::paths::fold(text))
        };
        let m = TextMatch {
            pattern,
            path: a.full_path,
            case_sensitive,
            whole_word: false,
            // As fd matches: the characters as written.
            diacritics: true,
        };
        parts.push(term(TermKind::Text(m), None));
    } else {
        let mut e = parse(text, &ParseOptions { now, case })
            .map_err(|e| bad(format!("bad query: {}", e.render(text))))?;
        let wrong_data_term = crate::contents::misplaced(&e)
            .map(|span| (span, crate::contents::MISPLACED.to_string()))
            .or_else(|| crate::contents::unknown_type(&e));
        if let Some((span, message)) = wrong_data_term {
            let e = uffs_query::QueryError { message, span };
            return Err(bad(format!("bad query: {}", e.render(text))));
        }
        if a.full_path {
            set_path(&mut e);
        }
        // The query's own terms stand beside the flags' (`-e txt`), not in a group of their own: a data term
        // among them stays beside the rest.
        match e {
            Expr::And(xs) => parts.extend(xs),
            e => parts.push(e),
        }
    }
    if !a.extensions.is_empty() {
        let exts = a
            .extensions
            .iter()
            .map(|e| uffs_index::paths::fold(e.trim_start_matches('.')))
            .collect();
        parts.push(term(TermKind::Ext(exts), None));
    }
    if let Some(k) = a.kind {
        use uffs_index::EntryKind;
        parts.push(match k {
            Kind::Folder => term(TermKind::Any, Some(KindFilter::Folder)),
            // A regular file, as fd's `-t f`: not a symlink or another kind of file ext keeps.
            Kind::File => term(TermKind::Kind(EntryKind::File), Some(KindFilter::File)),
            Kind::Symlink => term(TermKind::Kind(EntryKind::Symlink), None),
            Kind::Socket => term(TermKind::Kind(EntryKind::Socket), None),
            Kind::Fifo => term(TermKind::Kind(EntryKind::Fifo), None),
            Kind::BlockDevice => term(TermKind::Kind(EntryKind::BlockDevice), None),
            Kind::CharDevice => term(TermKind::Kind(EntryKind::CharDevice), None),
        });
    }
    for s in &a.size {
        parts.push(term(TermKind::Size(fd_size(s)?), None));
    }
    if let Some(w) = &a.changed_within {
        parts.push(term(
            TermKind::Date {
                field: DateField::Modified,
                // A duration past 1601 reaches the start of time, never the unknown time.
                from: when(w, now)?.max(uffs_index::time::FIRST_KNOWN),
                to: u64::MAX,
            },
            None,
        ));
    }
    if let Some(w) = &a.changed_before {
        parts.push(term(
            TermKind::Date {
                field: DateField::Modified,
                // Before a time is after the unknown one, as `dm:<DATE`.
                from: uffs_index::time::FIRST_KNOWN,
                to: when(w, now)?,
            },
            None,
        ));
    }
    Ok(if parts.len() == 1 {
        parts.pop().unwrap_or(Expr::All)
    } else {
        Expr::And(parts)
    })
}

/// `-p`: every text term matches the full path.
fn set_path(e: &mut Expr) {
    match e {
        Expr::Term(Term {
            kind: TermKind::Text(t),
            ..
        }) => t.path = true,
        Expr::And(xs) | Expr::Or(xs) => xs.iter_mut().for_each(set_path),
        Expr::Not(x) => set_path(x),
        _ => {}
    }
}

/// fd's size syntax: `+N` at least, `-N` at most, `N` exactly.
fn fd_size(s: &str) -> Result<Cmp, Error> {
    let wrong = || {
        bad(format!(
            "bad --size {s:?}: use +10M (at least), -1k (at most) or 4096 (exactly)"
        ))
    };
    let (sign, v) = match s.as_bytes().first() {
        Some(b'+') => ('+', &s[1..]),
        Some(b'-') => ('-', &s[1..]),
        _ => ('=', s),
    };
    let q = format!("size:{v}");
    let e = parse(&q, &ParseOptions { now: 0, case: None }).map_err(|_| wrong())?;
    let Expr::Term(Term {
        kind: TermKind::Size(c),
        ..
    }) = e
    else {
        return Err(wrong());
    };
    Ok(match sign {
        '+' => Cmp {
            min: c.min,
            max: u64::MAX,
        },
        '-' => Cmp { min: 0, max: c.max },
        _ => c,
    })
}

/// A duration ago (`10min`, `2h`, `3d`, `2weeks`, `1y`) or a date (`2024-05-01`), as FILETIME.
fn when(s: &str, now: u64) -> Result<u64, Error> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if split > 0 && split < t.len() && !t[split..].contains('-') {
        let n: u64 = t[..split]
            .parse()
            .map_err(|_| bad(format!("bad time {s:?}: the number is too large")))?;
        let secs = match t[split..].trim() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 7 * 86_400,
            "month" | "months" => 30 * 86_400,
            "y" | "year" | "years" => 365 * 86_400,
            u => {
                return Err(bad(format!(
                    "unknown time unit {u:?} in {s:?} (use s, min, h, d, weeks, months, y)"
                )))
            }
        };
        return Ok(now.saturating_sub(n.saturating_mul(secs).saturating_mul(TICKS_PER_SECOND)));
    }
    let p: Vec<&str> = t.split('-').collect();
    let num = |i: usize| p.get(i).and_then(|x| x.parse::<u32>().ok());
    match (p.len(), num(0), num(1), num(2)) {
        (3, Some(y), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => {
            Ok(from_civil_date(i64::from(y), m, d))
        }
        _ => Err(bad(format!(
            "bad time {s:?}: use a duration like 2weeks or a date like 2024-05-01"
        ))),
    }
}
