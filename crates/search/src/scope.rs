//! Paths with their volume named, as uffs prints them (`C:\Windows`, `@vss1:/x`, `data@vss2:/x`), in a query:
//! each volume's searcher sees the path from its root when the name is its own, and nothing when it is another's.
//! A search over one index file or source (no prefix) takes any name but another target's, so that a path
//! printed by the daemon, by `--snapshots` or by `content:` pastes back.

use uffs_query::ast::{Expr, Pattern, TermKind};
use uffs_query::parse::volume_named;

/// `expr` as the volume whose paths start `prefix` (`C:`, `@vss1:`, or empty) answers it, beside volumes with
/// `others`' prefixes; `None` when it names no volume (it is used as it is).
pub fn for_volume(expr: &Expr, prefix: &str, others: &[&str]) -> Option<Expr> {
    if !names_volume(expr) {
        return None;
    }
    let own = prefix.trim_end_matches(':');
    let mine = |name: &str| {
        name.eq_ignore_ascii_case(own)
            || (own.is_empty()
                && !others
                    .iter()
                    .any(|o| o.trim_end_matches(':').eq_ignore_ascii_case(name)))
    };
    Some(rewrite(expr.clone(), &mine))
}

/// `expr` with each `fsi:` term decided for the volume at place `index` (from 0) of those searched; `None` when
/// it has none.
pub fn at_place(expr: &Expr, index: u64) -> Option<Expr> {
    if !expr.has_term(&|k| matches!(k, TermKind::Fsi(_))) {
        return None;
    }
    fn decide(e: Expr, index: u64) -> Expr {
        match e {
            Expr::And(v) => Expr::And(v.into_iter().map(|e| decide(e, index)).collect()),
            Expr::Or(v) => Expr::Or(v.into_iter().map(|e| decide(e, index)).collect()),
            Expr::Not(e) => Expr::Not(Box::new(decide(*e, index))),
            Expr::Term(t) => match &t.kind {
                TermKind::Fsi(c) if c.holds(index) => Expr::All,
                TermKind::Fsi(_) => nothing(),
                _ => Expr::Term(t),
            },
            Expr::All => Expr::All,
        }
    }
    Some(decide(expr.clone(), index))
}

fn names_volume(e: &Expr) -> bool {
    match e {
        Expr::All => false,
        Expr::And(v) | Expr::Or(v) => v.iter().any(names_volume),
        Expr::Not(e) => names_volume(e),
        Expr::Term(t) => match &t.kind {
            TermKind::Text(m) if m.path => match &m.pattern {
                Pattern::Substring(s) | Pattern::Wildcard(s) => volume_named(s).is_some(),
                Pattern::Regex(_) => false,
            },
            TermKind::Parent { path, .. } => volume_named(&format!("{path}/")).is_some(),
            _ => false,
        },
    }
}

/// Matches nothing.
fn nothing() -> Expr {
    Expr::Not(Box::new(Expr::All))
}

fn rewrite(e: Expr, mine: &dyn Fn(&str) -> bool) -> Expr {
    match e {
        Expr::And(v) => Expr::And(v.into_iter().map(|e| rewrite(e, mine)).collect()),
        Expr::Or(v) => Expr::Or(v.into_iter().map(|e| rewrite(e, mine)).collect()),
        Expr::Not(e) => Expr::Not(Box::new(rewrite(*e, mine))),
        Expr::Term(mut t) => {
            match &mut t.kind {
                TermKind::Text(m) if m.path => {
                    let (s, anchored) = match &m.pattern {
                        Pattern::Substring(s) => (s, false),
                        Pattern::Wildcard(s) => (s, true),
                        Pattern::Regex(_) => return Expr::Term(t),
                    };
                    let Some(name) = volume_named(s) else {
                        return Expr::Term(t);
                    };
                    if !mine(name) {
                        return nothing();
                    }
                    let rest = s[name.len() + 1..].to_string();
                    // The path starts at the volume's root: a substring that began with the name now begins
                    // there, as a pattern over the whole path.
                    m.pattern = if anchored {
                        Pattern::Wildcard(rest)
                    } else {
                        Pattern::Wildcard(format!("{rest}*"))
                    };
                }
                TermKind::Parent { path, .. } => {
                    let with_root = format!("{path}/");
                    let Some(name) = volume_named(&with_root) else {
                        return Expr::Term(t);
                    };
                    if !mine(name) {
                        return nothing();
                    }
                    let rest = &path[name.len() + 1..];
                    *path = if rest.is_empty() {
                        "/".to_string()
                    } else {
                        rest.to_string()
                    };
                }
                _ => {}
            }
            Expr::Term(t)
        }
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Expr {
        uffs_query::parse(s, &uffs_query::ParseOptions { now: 0, case: None }).unwrap()
    }

    fn text(e: &Expr) -> (Pattern, bool) {
        match e {
            Expr::Term(t) => match &t.kind {
                TermKind::Text(m) => (m.pattern.clone(), m.case_sensitive),
                k => panic!("{k:?}"),
            },
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_drive_path_is_searched_from_the_root_of_its_volume() {
        let e = q("C:\\Windows\\notepad.exe");
        // Smart case looks past the drive letter: `Windows` makes it case-sensitive.
        assert_eq!(
            text(&for_volume(&e, "C:", &["D:"]).unwrap()),
            (Pattern::Wildcard("/Windows/notepad.exe*".into()), true)
        );
        assert_eq!(for_volume(&e, "D:", &["C:"]).unwrap(), nothing());
        // One index file, printed by the daemon as C:: its own.
        assert!(matches!(
            text(&for_volume(&q("C:\\password.txt"), "", &[]).unwrap()),
            (Pattern::Wildcard(p), false) if p == "/password.txt*"
        ));
        // A source with its stores: `@vss1:` is the store's, not the present's.
        let e = q("@vss1:/syslog");
        assert_eq!(for_volume(&e, "", &["@vss1:"]).unwrap(), nothing());
        assert!(for_volume(&e, "@vss1:", &[""]).is_some_and(|e| e != nothing()));
        // No volume named: used as it is.
        assert!(for_volume(&q("/windows/x"), "C:", &[]).is_none());
        assert!(for_volume(&q("notes.txt:stream"), "C:", &[]).is_none());
    }

    #[test]
    fn a_parent_with_its_volume_named() {
        let e = for_volume(&q("parent:C:\\"), "", &[]).unwrap();
        match e {
            Expr::Term(t) => {
                assert!(matches!(t.kind, TermKind::Parent { ref path, .. } if path == "/"))
            }
            e => panic!("{e:?}"),
        }
    }
}
