//! A query as a SQL boolean expression over the columns of uffs's Parquet schema (docs/parquet.md), for DuckDB,
//! Spark SQL or Trino: `uffs sql QUERY`. It selects the rows `uffs QUERY` answers from the same volumes,
//! the [reference matcher](crate::reference) term by term:
//!
//! - diacritics ignored unless `diacritics:`, as uffs ignores them: the column through `translate` with uffs's own
//!   table of letters ([`uffs_index::diacritics`]);
//! - case as uffs folds it (the parser has already folded a case-insensitive pattern; the column is `lower()`ed),
//!   substrings and `*`/`?` as `LIKE` with `\` escaping `%`, `_` and `\`, `wholeword:` and `regex:` as each
//!   engine's regular expression function (Spark's Java regex needs `(?iu)` for Unicode case);
//! - paths as uffs matches them, `/`-separated from the volume's root, from the `path` column (which carries the
//!   volume's prefix, `C:\…` or `@2:/…`, on some volumes);
//! - dates as FILETIME bounds on the `_filetime` columns, resolved when the SQL is made (a comment shows each in
//!   UTC), exact to the 100 ns tick; a time the volume does not keep (null, or 0 in older files) is matched by
//!   `unknown` alone;
//! - the rows a search never shows (the root, deleted entries and streams unless the query asks for them) left
//!   out.
//!
//! Terms that need other rows (`dupe:` and the other `…dupe:` functions, `treesize:`, `descendants:`,
//! `childcount:`, `child:` and the other child functions, `empty:`), the order of volumes searched (`fsi:`) or a
//! file's data (`content:`, `type:`, `hash:`) have no SQL form here: [`to_sql`] refuses them with their place in
//! the query.
//!
//! Known differences, from the engines' case rules: uffs keeps a character whose lower case has another length
//! in UTF-8 (the Kelvin sign, `İ`) as it is, and Spark lower-cases a final `Σ` as `ς`.

use std::fmt::Write as _;

use uffs_index::time::{FIRST_KNOWN, UNKNOWN};

use crate::ast::*;
use crate::reference::mentions;
use crate::QueryError;

/// The engine whose SQL to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    DuckDb,
    Spark,
    Trino,
}

/// Which rows besides a search's own the SQL may select (a search's `--deleted` and `--streams`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SqlOptions {
    pub include_deleted: bool,
    pub include_streams: bool,
}

/// The path uffs matches: the `path` column as schema 3 writes it; a version 2 file's without its volume's
/// prefix (`@2:`, `C:`), `/`-separated.
const UPATH: &str = "(CASE WHEN path LIKE '/%' THEN path ELSE replace(substr(path, strpos(path, ':') + 1), '\\', '/') END)";

/// `expr` as a SQL boolean expression in `dialect`.
pub fn to_sql(expr: &Expr, dialect: Dialect, opts: SqlOptions) -> Result<String, QueryError> {
    let w = Writer { d: dialect };
    // The root is its own parent; an entry of a folder uffs made (`$Orphan`) has none.
    let mut parts = vec!["coalesce(record <> parent_record, TRUE)".to_string()];
    if !opts.include_deleted && !mentions(expr, &|k| matches!(k, TermKind::Deleted)) {
        parts.push("NOT deleted".into());
    }
    if !opts.include_streams && !mentions(expr, &|k| matches!(k, TermKind::Stream)) {
        parts.push("kind <> 'stream'".into());
    }
    if *expr != Expr::All {
        parts.push(format!("({})", w.expr(expr)?));
    }
    Ok(parts.join(" AND "))
}

struct Writer {
    d: Dialect,
}

impl Writer {
    fn expr(&self, e: &Expr) -> Result<String, QueryError> {
        Ok(match e {
            Expr::All => "TRUE".into(),
            Expr::And(xs) => self.join(xs, " AND ")?,
            Expr::Or(xs) => self.join(xs, " OR ")?,
            Expr::Not(x) => format!("NOT ({})", self.expr(x)?),
            Expr::Term(t) => self.term(t)?,
        })
    }

    fn join(&self, xs: &[Expr], op: &str) -> Result<String, QueryError> {
        let parts = xs
            .iter()
            .map(|x| Ok(format!("({})", self.expr(x)?)))
            .collect::<Result<Vec<_>, QueryError>>()?;
        Ok(parts.join(op))
    }

    /// A string literal.
    fn lit(&self, s: &str) -> String {
        match self.d {
            // Spark's literals take backslash escapes.
            Dialect::Spark => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Dialect::DuckDb | Dialect::Trino => format!("'{}'", s.replace('\'', "''")),
        }
    }

    /// `a & b` on integers.
    fn bit_and(&self, a: &str, b: u64) -> String {
        match self.d {
            Dialect::Trino => format!("bitwise_and({a}, {b})"),
            Dialect::DuckDb | Dialect::Spark => format!("({a} & {b})"),
        }
    }

    /// Whether `hay` has a match of regular expression `re` anywhere.
    fn regex(&self, hay: &str, re: &str) -> String {
        let re = self.lit(re);
        match self.d {
            Dialect::DuckDb => format!("regexp_matches({hay}, {re})"),
            Dialect::Spark => format!("rlike({hay}, {re})"),
            Dialect::Trino => format!("regexp_like({hay}, {re})"),
        }
    }

    /// `s LIKE pattern`, `\` escaping.
    fn like(&self, hay: &str, pattern: &str) -> String {
        format!("{hay} LIKE {} ESCAPE {}", self.lit(pattern), self.lit("\\"))
    }

    /// The path uffs matches, with `/` where Windows volumes have `\`; in Trino `strpos` is the only name of it.
    fn upath(&self) -> String {
        let p = UPATH.to_string();
        let p = match self.d {
            Dialect::Spark => p.replace("strpos(path, ':')", "instr(path, ':')"),
            _ => p,
        };
        match self.d {
            // The `'\'` literal in Spark's escaping.
            Dialect::Spark => p.replace("'\\'", "'\\\\'"),
            _ => p,
        }
    }

    fn term(&self, t: &Term) -> Result<String, QueryError> {
        let refuse = |what: &str| {
            Err(QueryError::new(
                format!("{what} has no SQL form: it needs {}", needs(&t.kind)),
                t.span.clone(),
            ))
        };
        let body = match &t.kind {
            TermKind::Any => "TRUE".to_string(),
            TermKind::Text(m) => self.text(m),
            TermKind::Ext(exts) => {
                let list: Vec<String> = exts.iter().map(|e| self.lit(e)).collect();
                format!(
                    "kind NOT IN ('folder', 'stream') AND lower(ext) IN ({})",
                    list.join(", ")
                )
            }
            TermKind::Size(c) => format!("kind <> 'folder' AND {}", between("size", c)),
            TermKind::Date { field, from, to } => {
                let col = match field {
                    DateField::Modified => "modified_filetime",
                    DateField::Created => "created_filetime",
                    DateField::Accessed => "accessed_filetime",
                };
                if (*from, *to) == (UNKNOWN, FIRST_KNOWN) {
                    // `unknown`: null in the files of a uffs that writes it so, 0 in older ones.
                    format!("coalesce({col}, 0) = 0")
                } else {
                    let mut s = String::new();
                    if let Ok(from) = i64::try_from(*from) {
                        let _ = write!(s, "{col} >= {from} /* {} */", iso(from as u64));
                    }
                    if let Ok(to) = i64::try_from(*to) {
                        if !s.is_empty() {
                            s.push_str(" AND ");
                        }
                        let _ = write!(s, "{col} < {to} /* {} */", iso(to as u64));
                    }
                    if s.is_empty() {
                        s = format!("{col} IS NOT NULL");
                    }
                    format!("coalesce({s}, FALSE)")
                }
            }
            TermKind::Attrib(bits) => {
                format!(
                    "{} = {bits}",
                    self.bit_and("attributes_mask", u64::from(*bits))
                )
            }
            TermKind::Parent {
                path,
                case_sensitive,
            } => {
                if !path.starts_with('/') {
                    return Err(QueryError::new(
                        "a folder with its volume named has no SQL form: give the folder from the volume's root and \
                         name the volume with `volume = '...'`"
                            .to_string(),
                        t.span.clone(),
                    ));
                }
                let parent = self.parent_path();
                let parent = if *case_sensitive {
                    parent
                } else {
                    format!("lower({parent})")
                };
                format!("{parent} = {}", self.lit(path))
            }
            TermKind::Depth(c) => {
                let p = self.upath();
                let depth = format!(
                    "(length({p}) - length(replace({p}, '/', '')) + CASE WHEN kind = 'stream' THEN 1 ELSE 0 END)"
                );
                between(&depth, c)
            }
            TermKind::Len(c) => between("length(name)", c),
            TermKind::Deleted => "deleted".into(),
            TermKind::Stream => "kind = 'stream'".into(),
            TermKind::Uid(c) => format!("coalesce({}, FALSE)", between("uid", c)),
            TermKind::Gid(c) => format!("coalesce({}, FALSE)", between("gid", c)),
            TermKind::Perm(p) => {
                let bits = permissions();
                let holds = match *p {
                    Perm::Exactly(b) => format!("{bits} = {b}"),
                    Perm::All(b) => format!("{} = {b}", self.bit_and(&bits, u64::from(b))),
                    Perm::Any(0) => "TRUE".into(),
                    Perm::Any(b) => format!("{} <> 0", self.bit_and(&bits, u64::from(b))),
                };
                format!("mode <> '' AND {holds}")
            }
            TermKind::Kind(k) => format!("kind = {}", self.lit(k.as_str())),
            TermKind::Dupe => return refuse("`dupe:`"),
            TermKind::SizeDupe => return refuse("`sizedupe:`"),
            TermKind::TreeSize(_) => return refuse("`treesize:`"),
            TermKind::Descendants(_) => return refuse("`descendants:`"),
            TermKind::ChildCount(_) => return refuse("`childcount:`"),
            TermKind::Empty => return refuse("`empty:`"),
            TermKind::Child { .. } => return refuse("`child:`"),
            TermKind::ChildFiles(_) => return refuse("`childfilecount:`"),
            TermKind::ChildFolders(_) => return refuse("`childfoldercount:`"),
            TermKind::SameAs(_) => return refuse("a `…dupe:` function"),
            TermKind::Fsi(_) => return refuse("`fsi:`"),
            TermKind::Frn(v) => {
                let record = format!("record = {}", v & 0xFFFF_FFFF_FFFF);
                match v >> 48 {
                    0 => record,
                    seq => format!("{record} AND sequence = {seq}"),
                }
            }
            TermKind::Content(ContentTerm::Text { .. }) => return refuse("`content:`"),
            TermKind::Content(ContentTerm::Type(_)) => return refuse("`type:`"),
            TermKind::Content(ContentTerm::Hash(_)) => return refuse("`hash:`"),
        };
        Ok(match t.only {
            None => body,
            Some(KindFilter::File) => format!("kind NOT IN ('folder', 'stream') AND {body}"),
            Some(KindFilter::Folder) => format!("kind = 'folder' AND {body}"),
        })
    }

    /// The path of the entry's folder as uffs writes it (`/` for the root); a stream's folder is its file.
    fn parent_path(&self) -> String {
        let p = self.upath();
        let strip = |re: &str| format!("regexp_replace({p}, {}, '')", self.lit(re));
        format!(
            "(CASE WHEN kind = 'stream' THEN {} ELSE coalesce(nullif({}, ''), '/') END)",
            strip(":[^:/]*$"),
            strip("/[^/]*$")
        )
    }

    fn text(&self, m: &TextMatch) -> String {
        let hay = if m.path {
            self.upath()
        } else {
            "name".to_string()
        };
        match &m.pattern {
            Pattern::Regex(r) => {
                let flags = match (m.case_sensitive, self.d) {
                    (true, _) => "",
                    (false, Dialect::Spark) => "(?iu)",
                    (false, _) => "(?i)",
                };
                self.regex(&hay, &format!("{flags}{r}"))
            }
            Pattern::Substring(s) => {
                let hay = self.unmarked(folded(&hay, m.case_sensitive), m);
                if m.whole_word {
                    // A letter or digit is ASCII alphanumeric or not ASCII at all (as uffs's `bounded`).
                    let edge = "[\\x00-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7F]";
                    self.regex(&hay, &format!("(^|{edge}){}($|{edge})", regex_escape(s)))
                } else {
                    self.like(&hay, &format!("%{}%", like_escape(s)))
                }
            }
            Pattern::Wildcard(w) => {
                let hay = self.unmarked(folded(&hay, m.case_sensitive), m);
                let mut p = String::with_capacity(w.len());
                for c in w.chars() {
                    match c {
                        '*' => p.push('%'),
                        '?' => p.push('_'),
                        '%' | '_' | '\\' => {
                            p.push('\\');
                            p.push(c);
                        }
                        c => p.push(c),
                    }
                }
                self.like(&hay, &p)
            }
        }
    }
}

impl Writer {
    /// `hay` without diacritics unless term `m` heeds them: `translate` with uffs's own table (the letters that
    /// have them, then the combining marks, which have no letter to become and so are dropped).
    fn unmarked(&self, hay: String, m: &TextMatch) -> String {
        if m.diacritics {
            return hay;
        }
        use uffs_index::diacritics::{BASE_LETTERS, COMBINING};
        let from: String = BASE_LETTERS
            .iter()
            .map(|(l, _)| *l)
            .chain(COMBINING)
            .collect();
        let to: String = BASE_LETTERS.iter().map(|(_, b)| *b).collect();
        format!("translate({hay}, {}, {})", self.lit(&from), self.lit(&to))
    }
}

/// What a term SQL cannot answer needs instead.
fn needs(k: &TermKind) -> &'static str {
    match k {
        TermKind::Content(_) => "the files' data, which only uffs reads",
        TermKind::Fsi(_) => "the order of the volumes a search spans, which the rows do not hold",
        _ => "other rows of the volume, which one row's condition cannot see",
    }
}

fn folded(hay: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        hay.to_string()
    } else {
        format!("lower({hay})")
    }
}

/// `v BETWEEN min AND max` with the bounds a signed column holds.
fn between(v: &str, c: &Cmp) -> String {
    let max = i64::try_from(c.max).ok();
    match (c.min, max) {
        (0, None) => format!("{v} >= 0"),
        (min, None) => format!("{v} >= {}", min.min(i64::MAX as u64)),
        (min, Some(max)) if min as i64 == max => format!("{v} = {min}"),
        (min, Some(max)) => format!("{v} BETWEEN {min} AND {max}"),
    }
}

/// The permission bits (with set-user-id, set-group-id and sticky) from the `mode` column's `ls -l` letters.
fn permissions() -> String {
    let at = |i: usize, letters: &str, v: u32| {
        let set: Vec<String> = letters.chars().map(|c| format!("'{c}'")).collect();
        format!(
            "CASE WHEN substr(mode, {i}, 1) IN ({}) THEN {v} ELSE 0 END",
            set.join(", ")
        )
    };
    let parts = [
        at(2, "r", 0o400),
        at(3, "w", 0o200),
        at(4, "xs", 0o100),
        at(4, "sS", 0o4000),
        at(5, "r", 0o040),
        at(6, "w", 0o020),
        at(7, "xs", 0o010),
        at(7, "sS", 0o2000),
        at(8, "r", 0o004),
        at(9, "w", 0o002),
        at(10, "xt", 0o001),
        at(10, "tT", 0o1000),
    ];
    format!("({})", parts.join(" + "))
}

/// Text for a `LIKE` pattern that matches it literally (`\` escapes).
fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text for a regular expression that matches it literally: every ASCII character but letters and digits
/// escaped (RE2, Java and Joni take `\` before any of them).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_alphanumeric() {
            if c.is_ascii_control() || c == ' ' {
                let _ = write!(out, "\\x{:02X}", c as u32);
                continue;
            }
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn iso(ft: u64) -> String {
    let mut s = String::new();
    uffs_index::time::format_iso(ft, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, ParseOptions};

    fn sql(q: &str, d: Dialect) -> Result<String, QueryError> {
        let e = parse(q, &ParseOptions { now: 0, case: None }).unwrap();
        to_sql(&e, d, SqlOptions::default())
    }

    #[test]
    fn terms_become_conditions() {
        let s = sql("ext:pdf", Dialect::DuckDb).unwrap();
        assert!(
            s.ends_with("(kind NOT IN ('folder', 'stream') AND lower(ext) IN ('pdf'))"),
            "{s}"
        );
        assert!(s.starts_with(
            "coalesce(record <> parent_record, TRUE) AND NOT deleted AND kind <> 'stream'"
        ));
        let s = sql("deleted: stream:", Dialect::DuckDb).unwrap();
        assert!(
            !s.contains("NOT deleted") && !s.contains("kind <> 'stream'"),
            "{s}"
        );
        // Quotes and backslashes in each dialect's literals; LIKE's own escapes.
        let s = sql(r#""it's 50%_a""#, Dialect::DuckDb).unwrap();
        assert!(s.contains(r"LIKE '%it''s 50\%\_a%' ESCAPE '\'"), "{s}");
        let s = sql(r#""it's 50%_a""#, Dialect::Spark).unwrap();
        assert!(s.contains(r"LIKE '%it\'s 50\\%\\_a%' ESCAPE '\\'"), "{s}");
        // A path term (a `\` is a path's separator to uffs): the path without its volume's prefix.
        let s = sql(r"windows\system32", Dialect::Spark).unwrap();
        assert!(
            s.contains(r"replace(substr(path, instr(path, ':') + 1), '\\', '/')"),
            "{s}"
        );
        assert!(sql("attrib:h", Dialect::Trino)
            .unwrap()
            .contains("bitwise_and(attributes_mask, 2) = 2"));
        // An unknown time is null (0 in older files): `unknown` alone matches it, a bound never does.
        let s = sql("dc:unknown", Dialect::DuckDb).unwrap();
        assert!(s.ends_with("(coalesce(created_filetime, 0) = 0)"), "{s}");
        let s = sql("dm:<2005", Dialect::DuckDb).unwrap();
        assert!(s.contains("coalesce(modified_filetime >= 1 /* "), "{s}");
    }

    #[test]
    fn what_needs_other_rows_or_data_is_refused_where_it_stands() {
        for (q, at) in [
            ("ext:txt dupe:", 8..13),
            ("content:x", 0..9),
            ("a | treesize:>1mb", 4..17),
        ] {
            let e = sql(q, Dialect::DuckDb).unwrap_err();
            assert_eq!(e.span, at, "{q}: {}", e.message);
            assert!(e.message.contains("no SQL form"));
        }
    }

    #[test]
    fn regex_escapes_are_literal() {
        assert_eq!(regex_escape("a.b(c)"), r"a\.b\(c\)");
        assert_eq!(regex_escape("é b"), r"é\x20b");
    }
}
