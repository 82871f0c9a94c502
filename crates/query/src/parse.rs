//! Query text to [`Expr`]: tokens, then a recursive-descent parser (`|` binds looser than the implicit AND of
//! spaces; `!` binds tightest), then each term's own syntax (modifiers, functions, sizes, dates).

use std::ops::Range;

use uffs_index::paths::fold;
use uffs_index::{flags, EntryKind};

use crate::ast::*;
use crate::dates;
use crate::error::QueryError;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A term's text, and whether it began with a quote (then an unknown `word:` in it is text).
    Text(String, bool),
    Or,
    Not,
    Open(char),
    Close(char),
}

/// Splits the query into tokens with their byte spans. Spaces separate terms except inside quotes; `(` and `<`
/// open a group at the start of a term; `)` and `>` close an open group at the end of a term (so `size:>1mb`
/// and `file (1).txt` stay text).
fn tokenize(q: &str) -> Result<Vec<(Tok, Range<usize>)>, QueryError> {
    let mut toks = Vec::new();
    let mut open: Vec<char> = Vec::new();
    let b = q.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'|' {
            toks.push((Tok::Or, i..i + 1));
            i += 1;
            continue;
        }
        if c == b'!' && i + 1 < b.len() && !b[i + 1].is_ascii_whitespace() {
            toks.push((Tok::Not, i..i + 1));
            i += 1;
            continue;
        }
        // A `!` standing alone, with no term to negate.
        if c == b'!' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            return Err(QueryError::new(
                "`!` needs a term right after it (`!ext:tmp`); quote it to search for the text: \"!\"",
                i..i + 1,
            ));
        }
        if (c == b'(' || c == b'<') && closes_later(b, i) {
            toks.push((Tok::Open(c as char), i..i + 1));
            open.push(if c == b'(' { ')' } else { '>' });
            i += 1;
            continue;
        }
        if (c == b')' || c == b'>') && open.last() == Some(&(c as char)) {
            open.pop();
            toks.push((Tok::Close(c as char), i..i + 1));
            i += 1;
            continue;
        }
        // A term: up to whitespace, `|`, or a closing bracket of the innermost group, with quotes grouping. A
        // `regex:` term runs to the next space: `|` and brackets are regular-expression syntax there.
        let start = i;
        let regex_term = is_regex_term(&q[i..]);
        let mut text = String::new();
        let mut in_quote = false;
        let mut quote_start = i;
        while i < b.len() {
            let c = b[i];
            if c == b'"' {
                in_quote = !in_quote;
                quote_start = i;
                i += 1;
                continue;
            }
            if !in_quote {
                if c.is_ascii_whitespace() || (c == b'|' && !regex_term) {
                    break;
                }
                if !regex_term && open.last() == Some(&(c as char)) && is_term_end(b, i + 1) {
                    break;
                }
            }
            let ch = q[i..].chars().next().unwrap_or(' ');
            text.push(ch);
            i += ch.len_utf8();
        }
        if in_quote {
            return Err(QueryError::new("unterminated quote", quote_start..q.len()));
        }
        if !regex_term {
            unbalanced(&q[start..i], start..i)?;
        }
        toks.push((Tok::Text(text, b[start] == b'"'), start..i));
    }
    Ok(toks)
}

/// A term that is a bracket nothing pairs with: an opening one that no later term closes (`(a | b`, where the
/// group was surely meant), or a closing one with no group open (`)`). A bracket inside a name stays text
/// (`file (1).txt`, `(1).txt`), and quotes make any of them text.
fn unbalanced(text: &str, span: Range<usize>) -> Result<(), QueryError> {
    let open = text.starts_with(['(', '<']) && !text.contains([')', '>']);
    if open {
        return Err(QueryError::new(
            format!(
                "this `{}` is never closed; close the group, or quote the term to search for the text",
                &text[..1]
            ),
            span.start..span.start + 1,
        ));
    }
    if text == ")" || text == ">" {
        return Err(QueryError::new(
            format!("this `{text}` closes no group; quote it to search for the text"),
            span,
        ));
    }
    // A term that ends in a closing bracket its own text does not open (`ext:exe)`): a group closed that was
    // never opened, not part of a name.
    if let Some(last) = text.chars().last().filter(|c| matches!(c, ')' | '>')) {
        let open = if last == ')' { '(' } else { '<' };
        let count = |c: char| text.chars().filter(|&x| x == c).count();
        if !text.contains('"') && count(last) > count(open) {
            return Err(QueryError::new(
                format!("this `{last}` closes no group; quote the term to search for the text"),
                span.end - 1..span.end,
            ));
        }
    }
    Ok(())
}

/// Whether a term starting here is (after any modifiers) a `regex:` term.
fn is_regex_term(rest: &str) -> bool {
    let word_end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    let mut t = &rest[..word_end];
    while let Some((head, tail)) = t.split_once(':') {
        if head.eq_ignore_ascii_case("regex") {
            return true;
        }
        if ![
            "case",
            "nocase",
            "path",
            "file",
            "files",
            "folder",
            "folders",
            "wholeword",
            "ww",
        ]
        .iter()
        .any(|m| head.eq_ignore_ascii_case(m))
        {
            return false;
        }
        t = tail;
    }
    false
}

/// Whether the bracket at `at` has a partner that ends a later term; if not, it is text (`file (1).txt`).
fn closes_later(b: &[u8], at: usize) -> bool {
    let (open, close) = (b[at], if b[at] == b'(' { b')' } else { b'>' });
    let mut depth = 0;
    let mut in_quote = false;
    for i in at..b.len() {
        match b[i] {
            b'"' => in_quote = !in_quote,
            c if !in_quote
                && c == open
                && (i == at || b[i - 1].is_ascii_whitespace() || b[i - 1] == open) =>
            {
                depth += 1
            }
            c if !in_quote && c == close && is_term_end(b, i + 1) => {
                depth -= 1;
                if depth == 0 {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// After a closing bracket: the end, a space, `|` or another bracket.
fn is_term_end(b: &[u8], at: usize) -> bool {
    b.get(at)
        .is_none_or(|&c| c.is_ascii_whitespace() || matches!(c, b'|' | b')' | b'>'))
}

/// What the parser needs from its caller.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    /// FILETIME of "now", for `today`, `thisweek` and the like (UTC days).
    pub now: u64,
    /// Force case sensitivity on (`Some(true)`, fd's `-s`) or off (`Some(false)`, `-i`); `None` is smart case.
    pub case: Option<bool>,
}

/// Parses a query. An empty query is [`Expr::All`].
pub fn parse(q: &str, opts: &ParseOptions) -> Result<Expr, QueryError> {
    let toks = tokenize(q)?;
    let mut p = Parser {
        toks,
        pos: 0,
        opts,
        depth: 0,
    };
    let e = p.or()?;
    if let Some((_, span)) = p.toks.get(p.pos) {
        return Err(QueryError::new("unexpected closing bracket", span.clone()));
    }
    Ok(e)
}

struct Parser<'a> {
    toks: Vec<(Tok, Range<usize>)>,
    pos: usize,
    opts: &'a ParseOptions,
    /// Nesting of groups and `!`, bounded so a hostile query cannot exhaust the stack.
    depth: usize,
}

/// Deepest nesting of groups and `!` a query may have.
const MAX_NESTING: usize = 200;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn or(&mut self) -> Result<Expr, QueryError> {
        let mut alts = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            let span = self.toks[self.pos].1.clone();
            self.pos += 1;
            let next = self.and()?;
            if next == Expr::All || alts.last() == Some(&Expr::All) {
                return Err(QueryError::new("`|` needs a term on each side", span));
            }
            alts.push(next);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Expr::All)
        } else {
            Expr::Or(alts)
        })
    }

    fn and(&mut self) -> Result<Expr, QueryError> {
        let mut parts = Vec::new();
        while let Some(t) = self.peek() {
            if matches!(t, Tok::Or | Tok::Close(_)) {
                break;
            }
            parts.push(self.unary()?);
        }
        Ok(match parts.len() {
            0 => Expr::All,
            1 => parts.pop().unwrap_or(Expr::All),
            _ => Expr::And(parts),
        })
    }

    fn unary(&mut self) -> Result<Expr, QueryError> {
        let (tok, span) = self.toks[self.pos].clone();
        self.pos += 1;
        let nests = matches!(tok, Tok::Not | Tok::Open(_));
        if nests {
            self.depth += 1;
            if self.depth > MAX_NESTING {
                return Err(QueryError::new(
                    format!("the query nests deeper than {MAX_NESTING} levels"),
                    span,
                ));
            }
        }
        let e = self.unary_inner(tok, span);
        if nests {
            self.depth -= 1;
        }
        e
    }

    fn unary_inner(&mut self, tok: Tok, span: Range<usize>) -> Result<Expr, QueryError> {
        match tok {
            Tok::Not => {
                if self
                    .peek()
                    .is_none_or(|t| matches!(t, Tok::Or | Tok::Close(_)))
                {
                    return Err(QueryError::new("`!` needs a term after it", span));
                }
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Tok::Open(c) => {
                let inner = self.or()?;
                match self.peek() {
                    Some(Tok::Close(_)) => self.pos += 1,
                    _ => {
                        let close = if c == '(' { ')' } else { '>' };
                        return Err(QueryError::new(
                            format!("`{c}` is never closed with `{close}`"),
                            span,
                        ));
                    }
                }
                Ok(inner)
            }
            Tok::Text(text, quoted) => Ok(Expr::Term(term(&text, quoted, span, self.opts)?)),
            Tok::Or | Tok::Close(_) => Err(QueryError::new("unexpected operator", span)),
        }
    }
}

/// Modifier state collected from the prefixes of one term.
#[derive(Default)]
struct Mods {
    case: Option<bool>,
    path: bool,
    whole_word: bool,
    only: Option<KindFilter>,
    /// The text must start the name (or path): `startwith:`, `wfn:`.
    at_start: bool,
    /// The text must end it: `endwith:`, `wfn:`.
    at_end: bool,
    /// Diacritics must match (`diacritics:`; off by default).
    diacritics: bool,
    /// `*` and `?` are wildcards (`wildcards:`, the default), or text (`nowildcards:`).
    wildcards: Option<bool>,
}

/// Parses one term; `child:`, `childfile:` or `childfolder:` among its modifiers makes the name term after it a
/// condition on a folder's children (`case:child:Readme`, `childfile:*.jpg`).
fn term(
    text: &str,
    quoted: bool,
    span: Range<usize>,
    opts: &ParseOptions,
) -> Result<Term, QueryError> {
    let mut at = 0;
    let mut rest = text;
    while let Some((head, tail)) = rest.split_once(':') {
        let only = match head.to_ascii_lowercase().as_str() {
            "child" => None,
            "childfile" => Some(KindFilter::File),
            "childfolder" => Some(KindFilter::Folder),
            h if MODIFIER_WORDS.contains(&h) => {
                at += head.len() + 1;
                rest = tail;
                continue;
            }
            _ => break,
        };
        let inner = format!("{}{tail}", &text[..at]);
        let t = term_inner(&inner, quoted, span.clone(), opts)?;
        return match t.kind {
            TermKind::Text(name) if !name.path && t.only.is_none() => Ok(Term {
                span,
                kind: TermKind::Child { name, only },
                only: Some(KindFilter::Folder),
            }),
            _ => Err(QueryError::new(
                format!("`{head}:` takes a name (text or wildcards, no path), like {head}:readme or {head}:*.jpg"),
                span,
            )),
        };
    }
    term_inner(text, quoted, span, opts)
}

/// The modifiers a `child:` may stand among.
const MODIFIER_WORDS: [&str; 11] = [
    "case",
    "nocase",
    "wholeword",
    "ww",
    "wfn",
    "wholefilename",
    "nowfn",
    "startwith",
    "endwith",
    "diacritics",
    "nodiacritics",
];

/// Parses one term: modifiers (`case:`, `nocase:`, `path:`, `file:`, `folder:`, `wholeword:`), then a function
/// (`ext:`, `size:`, …) or text.
fn term_inner(
    text: &str,
    quoted: bool,
    span: Range<usize>,
    opts: &ParseOptions,
) -> Result<Term, QueryError> {
    let mut m = Mods {
        case: opts.case,
        ..Mods::default()
    };
    let mut rest = text;
    while let Some((head, tail)) = rest.split_once(':') {
        let head_l = head.to_ascii_lowercase();
        let func = |kind: TermKind| {
            Ok(Term {
                span: span.clone(),
                kind,
                only: None,
            })
        };
        let err = |msg: String| Err(QueryError::new(msg, span.clone()));
        match head_l.as_str() {
            "case" => m.case = Some(true),
            "nocase" => m.case = Some(false),
            "path" => m.path = true,
            "wholeword" | "ww" => m.whole_word = true,
            "wfn" | "wholefilename" => (m.at_start, m.at_end) = (true, true),
            "nowfn" | "nowholefilename" => (m.at_start, m.at_end) = (false, false),
            "startwith" => m.at_start = true,
            "diacritics" => m.diacritics = true,
            // Everything's switches of its own fast paths: uffs always compares case in full Unicode, and
            // takes text as text unless `regex:` comes.
            "ascii" | "utf8" | "noregex" => {}
            "wildcards" => m.wildcards = Some(true),
            "nowildcards" => m.wildcards = Some(false),
            "nodiacritics" => m.diacritics = false,
            "endwith" => m.at_end = true,
            "file" | "files" => m.only = Some(KindFilter::File),
            "folder" | "folders" => m.only = Some(KindFilter::Folder),
            "regex"
                if tail
                    .get(..8)
                    .is_some_and(|h| h.eq_ignore_ascii_case("content:")) =>
            {
                return content_text(&tail[8..], true, false, &m, span);
            }
            "regex"
                if tail
                    .get(..13)
                    .is_some_and(|h| h.eq_ignore_ascii_case("utf16content:")) =>
            {
                return content_text(&tail[13..], true, true, &m, span);
            }
            "content" | "utf16content" => {
                let (text, regex) = match tail.get(..6) {
                    Some(h) if h.eq_ignore_ascii_case("regex:") => (&tail[6..], true),
                    _ => (tail, false),
                };
                return content_text(text, regex, head_l == "utf16content", &m, span);
            }
            "type" => {
                if tail.is_empty() {
                    return err(
                        "`type:` needs a type, like type:pdf, type:image or type:mismatch".into(),
                    );
                }
                return with_only(
                    func(TermKind::Content(ContentTerm::Type(fold(tail)))),
                    m.only,
                );
            }
            "hash" => {
                let hex = tail.to_ascii_lowercase();
                if ![32, 40, 64, 16].contains(&hex.len())
                    || !hex.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    return err(
                        "`hash:` needs a digest in hex: md5 (32 digits), sha1 (40), sha256 (64) or xxh3 (16)".into(),
                    );
                }
                return with_only(func(TermKind::Content(ContentTerm::Hash(hex))), m.only);
            }
            "regex" => {
                if tail.is_empty() {
                    return err("`regex:` needs a regular expression".into());
                }
                let case_sensitive = m.case.unwrap_or(false);
                if let Err(e) = check_regex(tail, case_sensitive) {
                    return err(e);
                }
                let t = TextMatch {
                    pattern: Pattern::Regex(tail.to_string()),
                    path: m.path || tail.contains('/'),
                    case_sensitive,
                    whole_word: m.whole_word,
                    diacritics: true,
                };
                return Ok(Term {
                    span,
                    kind: TermKind::Text(t),
                    only: m.only,
                });
            }
            "ext" => {
                let exts: Vec<String> = tail
                    .split([';', ','])
                    .map(|e| fold(e.trim_start_matches('.')))
                    .filter(|e| !e.is_empty())
                    .collect();
                if exts.is_empty() {
                    return err("`ext:` needs one or more extensions, like ext:jpg;png".into());
                }
                return with_only(func(TermKind::Ext(exts)), m.only);
            }
            "size" if tail.trim().eq_ignore_ascii_case("unknown") => {
                // Everything's constant: what has no size of its own, a folder (treesize: gives its total).
                return with_only(func(TermKind::Kind(EntryKind::Directory)), m.only);
            }
            "size" => {
                return with_only(
                    func(TermKind::Size(
                        cmp(tail, parse_size).map_err(|e| QueryError::new(e, span.clone()))?,
                    )),
                    m.only,
                )
            }
            "childfilecount" | "childfoldercount" => {
                let c = cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?;
                let kind = if head_l == "childfilecount" {
                    TermKind::ChildFiles(c)
                } else {
                    TermKind::ChildFolders(c)
                };
                return with_only(func(kind), m.only);
            }
            "parents" | "parentcount" => {
                let c = cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?;
                return with_only(func(TermKind::Depth(c)), m.only);
            }
            "frn" => {
                let t = tail.trim();
                let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => t.parse().ok(),
                };
                let Some(v) = v else {
                    return err(format!(
                        "`frn:` needs a file reference number, decimal or 0x hex (frn:5, frn:0x1000000000005), found `{tail}`"
                    ));
                };
                return with_only(func(TermKind::Frn(v)), m.only);
            }
            "fsi" => {
                let c = cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?;
                return with_only(func(TermKind::Fsi(c)), m.only);
            }
            "dm" | "datemodified" | "dc" | "datecreated" | "da" | "dateaccessed" => {
                let field = match head_l.as_str() {
                    "dm" | "datemodified" => DateField::Modified,
                    "dc" | "datecreated" => DateField::Created,
                    _ => DateField::Accessed,
                };
                let (from, to) =
                    dates::parse(tail, opts.now).map_err(|e| QueryError::new(e, span.clone()))?;
                return with_only(func(TermKind::Date { field, from, to }), m.only);
            }
            "attrib" | "attributes" => {
                let mut bits = 0;
                for c in tail.chars() {
                    let Some((_, bit)) = flags::LETTERS
                        .iter()
                        .find(|(l, _)| *l == c.to_ascii_lowercase())
                    else {
                        return err(format!(
                            "unknown attribute letter `{c}` (use r h s a c e p l o i t: read-only, hidden, system, \
                             archive, compressed, encrypted, sparse, reparse point, offline, not indexed, temporary)"
                        ));
                    };
                    bits |= bit;
                }
                if bits == 0 {
                    return err("`attrib:` needs attribute letters, like attrib:h".into());
                }
                return with_only(func(TermKind::Attrib(bits)), m.only);
            }
            "parent" | "infolder" | "nosubfolders" => {
                if tail.is_empty() {
                    return err("`parent:` needs a folder path, like parent:/Windows".into());
                }
                let case_sensitive = m.case.unwrap_or(false);
                let mut p = tail.replace('\\', "/").trim_end_matches('/').to_string();
                // A folder with its volume named (`parent:C:\Windows`) keeps the name for the search to match.
                if !p.starts_with('/') && volume_named(&format!("{p}/")).is_none() {
                    p.insert(0, '/');
                }
                let path = if case_sensitive { p } else { fold(&p) };
                return with_only(
                    func(TermKind::Parent {
                        path,
                        case_sensitive,
                    }),
                    m.only,
                );
            }
            "depth" => {
                return with_only(
                    func(TermKind::Depth(
                        cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?,
                    )),
                    m.only,
                )
            }
            "len" => {
                return with_only(
                    func(TermKind::Len(
                        cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?,
                    )),
                    m.only,
                )
            }
            "uid" | "gid" => {
                let c = cmp(tail, parse_count).map_err(|e| QueryError::new(e, span.clone()))?;
                let kind = if head_l == "uid" {
                    TermKind::Uid(c)
                } else {
                    TermKind::Gid(c)
                };
                return with_only(func(kind), m.only);
            }
            "perm" => {
                let p = parse_perm(tail).map_err(|e| QueryError::new(e, span.clone()))?;
                return with_only(func(TermKind::Perm(p)), m.only);
            }
            "kind" => {
                let Some(k) = parse_kind(tail) else {
                    return err(format!(
                        "unknown kind `{tail}` (use file, folder, stream, symlink, socket, fifo, block-device or \
                         char-device)"
                    ));
                };
                return with_only(func(TermKind::Kind(k)), m.only);
            }
            "treesize" | "descendants" | "childcount" => {
                let value = if head_l == "treesize" {
                    parse_size
                } else {
                    parse_count
                };
                let c = cmp(tail, value).map_err(|e| QueryError::new(e, span.clone()))?;
                let kind = match head_l.as_str() {
                    "treesize" => TermKind::TreeSize(c),
                    "descendants" => TermKind::Descendants(c),
                    _ => TermKind::ChildCount(c),
                };
                return with_only(func(kind), m.only);
            }
            "dupe" | "deleted" | "stream" | "empty" | "sizedupe" | "root" | "namepartdupe"
            | "dmdupe" | "dcdupe" | "dadupe" | "attribdupe" => {
                if !tail.is_empty() {
                    return err(format!("`{head_l}:` takes no value"));
                }
                let kind = match head_l.as_str() {
                    "dupe" => TermKind::Dupe,
                    "deleted" => TermKind::Deleted,
                    "empty" => TermKind::Empty,
                    "sizedupe" => TermKind::SizeDupe,
                    // uffs lists no entry for a volume itself (Everything's root: finds `C:`): what has no
                    // folder above it but the volume's root.
                    "root" => TermKind::Depth(Cmp { min: 1, max: 1 }),
                    "namepartdupe" => TermKind::SameAs(DupeKey::NamePart),
                    "dmdupe" => TermKind::SameAs(DupeKey::Time(DateField::Modified)),
                    "dcdupe" => TermKind::SameAs(DupeKey::Time(DateField::Created)),
                    "dadupe" => TermKind::SameAs(DupeKey::Time(DateField::Accessed)),
                    "attribdupe" => TermKind::SameAs(DupeKey::Attributes),
                    _ => TermKind::Stream,
                };
                return with_only(func(kind), m.only);
            }
            name if macro_exts(name).is_some() => {
                if !tail.is_empty() {
                    return err(format!(
                        "`{head_l}:` takes no value (for {head_l} files named so, write `{head_l}: {tail}`)"
                    ));
                }
                let exts = macro_exts(name).unwrap_or_default();
                return with_only(
                    func(TermKind::Ext(exts.iter().map(|e| e.to_string()).collect())),
                    m.only,
                );
            }
            // A word of two or more letters (and digits: `utf8content:`) before the colon names a function: an
            // unknown one is a mistake, not text to search for (a drive `C:`, `file.txt:stream` and `name:stream`
            // with other characters are text).
            w if !quoted
                && w.len() > 1
                && w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) =>
            {
                return err(format!(
                    "unknown function `{head}:`; the functions are {FUNCTIONS}, the macros {MACROS}, the modifiers \
                     {MODIFIERS} (quote a term to search for it as text: \"{text}\")"
                ));
            }
            // Anything else (`C:`, `file.txt:stream`) is text.
            _ => break,
        }
        rest = tail;
    }
    if rest.is_empty() {
        return match m.only {
            Some(_) => Ok(Term {
                span,
                kind: TermKind::Any,
                only: m.only,
            }),
            None => Err(QueryError::new(
                "a modifier needs a term after it, like case:Readme",
                span,
            )),
        };
    }
    let mut text = rest.replace('\\', "/");
    // Smart case looks past a volume's name (`C:\Windows` is `c:/windows`, as uffs prints it).
    let named = volume_named(&text).map_or(0, |n| n.len() + 1);
    let case_sensitive = m
        .case
        .unwrap_or_else(|| text[named..].chars().any(char::is_uppercase));
    if !case_sensitive {
        text = fold(&text);
    }
    if !m.diacritics {
        text = uffs_index::diacritics::strip(&text);
    }
    let path = m.path || text.contains('/');
    let literal = m.wildcards == Some(false);
    if !literal && text.bytes().all(|b| b == b'*') {
        // `*` matches every name (and path): no text to test.
        return Ok(Term {
            span,
            kind: TermKind::Any,
            only: m.only,
        });
    }
    let wild = !literal && text.contains(['*', '?']);
    if literal && (m.at_start || m.at_end) && text.contains(['*', '?']) {
        return Err(QueryError::new(
            "`nowildcards:` text with `*` or `?` cannot be anchored (startwith:, endwith:, wfn:): a wildcard \
             pattern could not tell the text's `*` from its own",
            span,
        ));
    }
    let pattern = if wild || m.at_start || m.at_end {
        // Anchored text is a wildcard over the whole name (or path) with `*` on the open sides.
        let open = |anchored: bool| if anchored { "" } else { "*" };
        let (a, b) = (open(m.at_start), open(m.at_end));
        Pattern::Wildcard(if wild { text } else { format!("{a}{text}{b}") })
    } else {
        Pattern::Substring(text)
    };
    Ok(Term {
        span,
        kind: TermKind::Text(TextMatch {
            pattern,
            path,
            case_sensitive,
            whole_word: m.whole_word,
            diacritics: m.diacritics,
        }),
        only: m.only,
    })
}

/// The volume a path names before its `:/` as uffs prints paths (`C:/x`, `@vss1:/x`, `data@vss2:/x`), if it
/// names one: letters, digits, `-`, `_` and `@`.
pub fn volume_named(path: &str) -> Option<&str> {
    let (name, rest) = path.split_once(':')?;
    let ok = !name.is_empty()
        && rest.starts_with('/')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'@'));
    ok.then_some(name)
}

/// `content:TEXT` with the modifiers before it (`case:`, `wholeword:`) and `regex:` (before or after it).
fn content_text(
    text: &str,
    regex: bool,
    utf16: bool,
    m: &Mods,
    span: Range<usize>,
) -> Result<Term, QueryError> {
    if text.is_empty() {
        let f = if utf16 { "utf16content" } else { "content" };
        return Err(QueryError::new(
            format!("`{f}:` needs the text to look for, like {f}:timeout"),
            span,
        ));
    }
    let case_sensitive = m.case.unwrap_or(false);
    if regex {
        check_regex(text, case_sensitive).map_err(|e| QueryError::new(e, span.clone()))?;
    }
    Ok(Term {
        span,
        kind: TermKind::Content(ContentTerm::Text {
            text: text.to_string(),
            case_sensitive,
            whole_word: m.whole_word,
            regex,
            utf16,
        }),
        only: m.only,
    })
}

/// A regular expression that does not compile, as the last line of the regex crate's message.
fn check_regex(text: &str, case_sensitive: bool) -> Result<(), String> {
    match regex::RegexBuilder::new(text)
        .case_insensitive(!case_sensitive)
        .build()
    {
        Ok(_) => Ok(()),
        Err(e) => {
            let first = e
                .to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string();
            Err(format!("bad regular expression: {first}"))
        }
    }
}

/// What the unknown-function error lists.
const FUNCTIONS: &str =
    "ext: size: dm: dc: da: attrib: parent: infolder: nosubfolders: depth: parents: root: len: treesize: \
                         descendants: childcount: childfilecount: childfoldercount: child: childfile: childfolder: \
                         empty: dupe: namepartdupe: sizedupe: dmdupe: dcdupe: dadupe: attribdupe: deleted: stream: \
                         kind: uid: gid: perm: frn: fsi: regex: content: utf16content: type: hash:";
const MACROS: &str = "audio: video: pic: doc: exe: zip:";
const MODIFIERS: &str =
    "case: nocase: path: file: folder: wholeword: wfn: nowfn: startwith: endwith: diacritics: nodiacritics: \
     wildcards: nowildcards: ascii: utf8: noregex:";

/// Everything's search macros: the extensions each stands for.
pub const MACRO_EXTENSIONS: [(&str, &str); 6] = [
    (
        "audio",
        "aac ac3 aif aifc aiff amr ape au cda dts fla flac it m1a m2a m3u m4a m4b mid midi mka mod mp2 mp3 mpa \
         ogg opus ra rmi snd spc umx voc wav weba wma wv xm",
    ),
    (
        "video",
        "3g2 3gp 3gp2 3gpp amv asf avi bik divx drc dv f4v flv ifo m1v m2p m2t m2ts m2v m4p m4v mkv mov mp2v \
         mp4 mp4v mpe mpeg mpg mpv2 mts mxf ogm ogv qt rm rmvb swf ts vob webm wm wmv",
    ),
    (
        "pic",
        "ani avif bmp cur gif heic heif ico jfif jpe jpeg jpg jxl pcx png psd raw svg tga tif tiff webp wmf",
    ),
    (
        "doc",
        "c chm cpp cs csv cxx doc docm docx dot dotm dotx epub h hpp htm html hxx ini java js json lua md mht \
         mhtml odp ods odt pdf pot potm potx pps ppsm ppsx ppt pptm pptx py rtf tex txt wpd wps wri xls xlsb \
         xlsm xlsx xlt xltm xltx xml",
    ),
    ("exe", "appx bat cmd com exe msi msix msp ps1 scr vbs"),
    (
        "zip",
        "7z ace arj bz2 cab gz gzip iso jar lz lzma rar tar tbz2 tgz txz wim xz z zip zipx zst",
    ),
];

fn macro_exts(name: &str) -> Option<Vec<&'static str>> {
    MACRO_EXTENSIONS
        .iter()
        .find(|(m, _)| *m == name)
        .map(|(_, e)| e.split_whitespace().collect())
}

fn with_only(t: Result<Term, QueryError>, only: Option<KindFilter>) -> Result<Term, QueryError> {
    t.map(|t| Term { only, ..t })
}

/// `N`, `>N`, `>=N`, `<N`, `<=N`, `a..b` with `value` parsing each number.
fn cmp(s: &str, value: fn(&str) -> Result<(u64, u64), String>) -> Result<Cmp, String> {
    let s = s.trim();
    if let Some((a, b)) = s.split_once("..") {
        let (lo, _) = value(a)?;
        let (_, hi) = value(b)?;
        if lo > hi {
            return Err(format!("range `{s}` is empty: its start is after its end"));
        }
        return Ok(Cmp { min: lo, max: hi });
    }
    let (op, v) = if let Some(v) = s.strip_prefix(">=") {
        (">=", v)
    } else if let Some(v) = s.strip_prefix("<=") {
        ("<=", v)
    } else if let Some(v) = s.strip_prefix('>') {
        (">", v)
    } else if let Some(v) = s.strip_prefix('<') {
        ("<", v)
    } else if let Some(v) = s.strip_prefix('=') {
        ("=", v)
    } else {
        ("=", s)
    };
    let (lo, hi) = value(v)?;
    Ok(match op {
        ">=" => Cmp {
            min: lo,
            max: u64::MAX,
        },
        "<=" => Cmp { min: 0, max: hi },
        ">" => Cmp {
            min: hi.saturating_add(1),
            max: u64::MAX,
        },
        "<" => {
            if lo == 0 {
                return Err(format!("`<{v}` matches nothing"));
            }
            Cmp {
                min: 0,
                max: lo - 1,
            }
        }
        _ => Cmp { min: lo, max: hi },
    })
}

/// `perm:`'s value: octal permission bits, after `-` (all of them) or `/` (any of them), as `find -perm`.
fn parse_perm(s: &str) -> Result<Perm, String> {
    let (how, digits): (fn(u32) -> Perm, &str) = match s.trim() {
        t if t.starts_with('-') => (Perm::All, &t[1..]),
        t if t.starts_with('/') => (Perm::Any, &t[1..]),
        t => (Perm::Exactly, t),
    };
    match u32::from_str_radix(digits, 8) {
        Ok(b) if b <= 0o7777 && !digits.is_empty() => Ok(how(b)),
        _ => Err(format!(
            "`perm:` needs octal permission bits like perm:755, perm:-022 (all of them) or perm:/4000 (any), found \
             `{s}`"
        )),
    }
}

/// An entry kind by its name (as the `kind` column writes it) or `find -type`'s letter.
pub fn parse_kind(s: &str) -> Option<EntryKind> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "f" | "file" | "files" => EntryKind::File,
        "d" | "dir" | "directory" | "folder" | "folders" => EntryKind::Directory,
        "stream" | "streams" => EntryKind::Stream,
        "l" | "link" | "symlink" | "symlinks" => EntryKind::Symlink,
        "s" | "socket" => EntryKind::Socket,
        "p" | "pipe" | "fifo" => EntryKind::Fifo,
        "b" | "block" | "block-device" => EntryKind::BlockDevice,
        "c" | "char" | "char-device" => EntryKind::CharDevice,
        _ => return None,
    })
}

fn parse_count(s: &str) -> Result<(u64, u64), String> {
    s.trim()
        .parse::<u64>()
        .map(|n| (n, n))
        .map_err(|_| format!("expected a whole number, found `{s}`"))
}

/// Everything's size constants, as its search syntax defines them: (name, smallest, largest) in bytes.
const SIZE_CONSTANTS: [(&str, u64, u64); 7] = [
    ("empty", 0, 0),
    ("tiny", 1, 10 << 10),
    ("small", (10 << 10) + 1, 100 << 10),
    ("medium", (100 << 10) + 1, 1 << 20),
    ("large", (1 << 20) + 1, 16 << 20),
    ("huge", (16 << 20) + 1, 128 << 20),
    ("gigantic", (128 << 20) + 1, u64::MAX),
];

/// A size with an optional unit (b, kb, mb, gb, tb; powers of 1024), returned twice (sizes are points), or a
/// size constant (`tiny`), returned as its range.
pub(crate) fn parse_size(s: &str) -> Result<(u64, u64), String> {
    let s = s.trim().to_ascii_lowercase();
    if let Some(&(_, lo, hi)) = SIZE_CONSTANTS.iter().find(|(name, ..)| *name == s) {
        return Ok((lo, hi));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "expected a size like 10mb, or empty, tiny, small, medium, large, huge or gigantic, found `{s}`"
        ));
    }
    let mult: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown size unit `{unit}` (use b, kb, mb, gb or tb)"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("expected a number, found `{num}`"))?;
    let v = n * mult as f64;
    if !v.is_finite() || v > u64::MAX as f64 {
        return Err(format!("size `{s}` is too large"));
    }
    Ok((v as u64, v as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: &str) -> Expr {
        parse(q, &ParseOptions { now: 0, case: None }).unwrap_or_else(|e| panic!("{}", e.render(q)))
    }

    fn text(s: &str, path: bool, cs: bool) -> TermKind {
        let pattern = if s.contains(['*', '?']) {
            Pattern::Wildcard(s.into())
        } else {
            Pattern::Substring(s.into())
        };
        TermKind::Text(TextMatch {
            pattern,
            path,
            case_sensitive: cs,
            whole_word: false,
            diacritics: false,
        })
    }

    fn kinds(e: &Expr) -> Vec<TermKind> {
        match e {
            Expr::Term(t) => vec![t.kind.clone()],
            Expr::And(v) | Expr::Or(v) => v.iter().flat_map(kinds).collect(),
            Expr::Not(x) => kinds(x),
            Expr::All => vec![],
        }
    }

    #[test]
    fn structure() {
        assert_eq!(p(""), Expr::All);
        assert!(matches!(p("a b"), Expr::And(v) if v.len() == 2));
        assert!(
            matches!(p("a | b c"), Expr::Or(v) if v.len() == 2 && matches!(v[1], Expr::And(_)))
        );
        assert!(matches!(p("!a"), Expr::Not(_)));
        assert!(matches!(p("<a | b> c"), Expr::And(v) if matches!(v[0], Expr::Or(_))));
        assert!(matches!(p("(a | b) !(c)"), Expr::And(v) if matches!(v[1], Expr::Not(_))));
        assert_eq!(
            kinds(&p("\"foo bar\"")),
            vec![text("foo bar", false, false)]
        );
        assert_eq!(
            kinds(&p("file (1).txt")),
            vec![text("file", false, false), text("(1).txt", false, false)]
        );
    }

    #[test]
    fn text_terms() {
        assert_eq!(kinds(&p("Foo")), vec![text("Foo", false, true)]);
        assert_eq!(kinds(&p("nocase:Foo")), vec![text("foo", false, false)]);
        assert_eq!(kinds(&p("case:foo")), vec![text("foo", false, true)]);
        assert_eq!(
            kinds(&p("windows\\system32")),
            vec![text("windows/system32", true, false)]
        );
        assert_eq!(kinds(&p("*.jpg")), vec![text("*.jpg", false, false)]);
        assert_eq!(kinds(&p("path:foo")), vec![text("foo", true, false)]);
        // Diacritics are ignored unless `diacritics:`: the pattern is kept without them.
        assert_eq!(kinds(&p("café")), vec![text("cafe", false, false)]);
        assert_eq!(kinds(&p("Été*")), vec![text("Ete*", false, true)]);
        let exact = kinds(&p("diacritics:café"));
        assert!(
            matches!(&exact[0], TermKind::Text(m) if m.diacritics && m.pattern == Pattern::Substring("café".into()))
        );
        assert_eq!(
            kinds(&p("diacritics:nodiacritics:é")),
            vec![text("e", false, false)]
        );
        // A regex of letters that take several bytes, where `content:` could start (it once sliced mid-letter).
        assert!(
            matches!(&kinds(&p("regex:ééééé"))[0], TermKind::Text(m) if m.pattern == Pattern::Regex("ééééé".into()))
        );
    }

    #[test]
    fn anchored_text_is_a_wildcard_open_where_it_is_not_anchored() {
        assert_eq!(kinds(&p("startwith:lib")), vec![text("lib*", false, false)]);
        assert_eq!(kinds(&p("endwith:.so")), vec![text("*.so", false, false)]);
        assert_eq!(
            kinds(&p("wfn:libc.so.6")),
            vec![TermKind::Text(TextMatch {
                pattern: Pattern::Wildcard("libc.so.6".into()),
                path: false,
                case_sensitive: false,
                whole_word: false,
                diacritics: false,
            })]
        );
        assert_eq!(
            kinds(&p("wholefilename:nowfn:libc")),
            vec![text("libc", false, false)]
        );
        // Wildcards of its own already span the whole name.
        assert_eq!(
            kinds(&p("startwith:*.so")),
            vec![text("*.so", false, false)]
        );
        assert_eq!(
            kinds(&p("startwith:usr/lib")),
            vec![text("usr/lib*", true, false)]
        );
        let e = parse("startwith:", &ParseOptions { now: 0, case: None }).unwrap_err();
        assert!(e.message.contains("needs a term after it"), "{}", e.message);
    }

    #[test]
    fn size_constants_are_everythings_ranges() {
        let size = |q: &str| match kinds(&p(q)).as_slice() {
            [TermKind::Size(c)] => (c.min, c.max),
            other => panic!("{q}: {other:?}"),
        };
        assert_eq!(size("size:empty"), (0, 0));
        assert_eq!(size("size:tiny"), (1, 10 * 1024));
        assert_eq!(size("size:Small"), (10 * 1024 + 1, 100 * 1024));
        assert_eq!(size("size:medium"), (100 * 1024 + 1, 1 << 20));
        assert_eq!(size("size:large"), ((1 << 20) + 1, 16 << 20));
        assert_eq!(size("size:huge"), ((16 << 20) + 1, 128 << 20));
        assert_eq!(size("size:gigantic"), ((128 << 20) + 1, u64::MAX));
        assert_eq!(size("size:>small"), (100 * 1024 + 1, u64::MAX));
        assert_eq!(size("size:<=tiny"), (0, 10 * 1024));
        assert_eq!(size("size:tiny..medium"), (1, 1 << 20));
        let e = parse("size:enormous", &ParseOptions { now: 0, case: None }).unwrap_err();
        assert!(e.message.contains("tiny, small"), "{}", e.message);
    }

    #[test]
    fn functions() {
        assert_eq!(
            kinds(&p("size:>1kb")),
            vec![TermKind::Size(Cmp {
                min: 1025,
                max: u64::MAX
            })]
        );
        assert_eq!(
            kinds(&p("size:1kb..2mb")),
            vec![TermKind::Size(Cmp {
                min: 1024,
                max: 2 << 20
            })]
        );
        assert_eq!(
            kinds(&p("size:<=10")),
            vec![TermKind::Size(Cmp { min: 0, max: 10 })]
        );
        assert_eq!(
            kinds(&p("ext:JPG;.png")),
            vec![TermKind::Ext(vec!["jpg".into(), "png".into()])]
        );
        assert_eq!(
            kinds(&p("attrib:hs")),
            vec![TermKind::Attrib(flags::HIDDEN | flags::SYSTEM)]
        );
        assert_eq!(
            kinds(&p("depth:2..3")),
            vec![TermKind::Depth(Cmp { min: 2, max: 3 })]
        );
        assert_eq!(
            kinds(&p("dupe: deleted: stream:")),
            vec![TermKind::Dupe, TermKind::Deleted, TermKind::Stream]
        );
        let only = |q: &str| match p(q) {
            Expr::Term(t) => t.only,
            _ => None,
        };
        assert_eq!(only("file:"), Some(KindFilter::File));
        assert_eq!(only("folder:win"), Some(KindFilter::Folder));
    }

    #[test]
    fn errors_point_at_the_term() {
        let bad = |q: &str| parse(q, &ParseOptions { now: 0, case: None }).unwrap_err();
        let e = bad("foo size:>10xb");
        assert_eq!(e.span, 4..14);
        assert!(
            e.message.contains("unknown size unit `xb`"),
            "{}",
            e.message
        );
        assert_eq!(
            e.render("foo size:>10xb"),
            format!("{}\n  foo size:>10xb\n      ^^^^^^^^^^", e.message)
        );
        // A bracket nothing pairs with is an error that points at it; one inside a name is text.
        for (q, at) in [
            ("(a | b", 0..1),
            ("x (", 2..3),
            ("<a b", 0..1),
            (")", 0..1),
            ("a >", 2..3),
            ("ext:exe)", 7..8),
            ("notepad.exe) b", 11..12),
        ] {
            let e = bad(q);
            assert_eq!(e.span, at, "{q}: {}", e.message);
            assert!(
                e.message.contains("never closed") || e.message.contains("closes no group"),
                "{q}: {}",
                e.message
            );
        }
        // A function name with digits in it is a function name: an unknown one is an error.
        assert!(bad("utf8content:x")
            .message
            .contains("unknown function `utf8content:`"));
        assert!(bad("!").message.contains("needs a term right after it"));
        assert!(bad("a ! b").message.contains("needs a term right after it"));
        assert_eq!(
            kinds(&p("file (1).txt (2).txt \"(a\"")),
            vec![
                text("file", false, false),
                text("(1).txt", false, false),
                text("(2).txt", false, false),
                text("(a", false, false)
            ]
        );
        assert!(bad("a | ").message.contains("needs a term on each side"));
        assert!(bad("\"abc").message.contains("unterminated quote"));
        assert!(bad("regex:(").message.contains("bad regular expression"));
        // In a regex term `|` and brackets belong to the expression.
        assert!(matches!(p("regex:(a|b)c d"), Expr::And(v) if v.len() == 2));
        assert!(bad("attrib:q")
            .message
            .contains("unknown attribute letter `q`"));
        assert!(bad("case:").message.contains("needs a term after it"));
        assert!(bad("depth:x").message.contains("whole number"));
    }
}
