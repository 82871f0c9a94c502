//! The parsed form of a query.

use std::ops::Range;

/// A boolean combination of terms. `All` is the empty query (everything matches).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    All,
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Term(Term),
}

impl Expr {
    /// Whether some term of the query is of a kind `is` picks (`deleted:`, say), negated or not.
    pub fn has_term(&self, is: &dyn Fn(&TermKind) -> bool) -> bool {
        match self {
            Expr::All => false,
            Expr::And(v) | Expr::Or(v) => v.iter().any(|e| e.has_term(is)),
            Expr::Not(e) => e.has_term(is),
            Expr::Term(t) => is(&t.kind),
        }
    }
}

/// One term and where it stands in the query text (for error messages and plans).
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub span: Range<usize>,
    pub kind: TermKind,
    /// `file:` / `folder:` in front of the term: it only matches entries of that kind.
    pub only: Option<KindFilter>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindFilter {
    File,
    Folder,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TermKind {
    /// Matches entries of the `only` kind (a bare `file:` or `folder:`).
    Any,
    Text(TextMatch),
    /// Extensions, lower-case, without the dot.
    Ext(Vec<String>),
    Size(Cmp),
    Date {
        field: DateField,
        from: u64,
        to: u64,
    },
    /// Every bit must be set.
    Attrib(u32),
    /// The entry's folder, as a full path (`/`-separated, no trailing slash, lower-case unless case-sensitive).
    Parent {
        path: String,
        case_sensitive: bool,
    },
    Depth(Cmp),
    Len(Cmp),
    /// Another entry has the same name (case-insensitive).
    Dupe,
    Deleted,
    Stream,
    /// A folder's recursive size (`treesize:`, hard links once, streams counted).
    TreeSize(Cmp),
    /// A folder's files and folders at any depth (`descendants:`).
    Descendants(Cmp),
    /// A folder's direct children (`childcount:`).
    ChildCount(Cmp),
    /// A folder with nothing in it (`empty:`).
    Empty,
    /// A file whose size another file has too (`sizedupe:`; hard links of one file are one file).
    SizeDupe,
    /// The owner's user id, or group id (`uid:`, `gid:`; entries of file systems that keep none never match).
    Uid(Cmp),
    Gid(Cmp),
    /// The permission bits (with set-user-id, set-group-id and sticky), as `find -perm` takes them (`perm:`).
    Perm(Perm),
    /// The entry is of this kind (`kind:symlink`).
    Kind(uffs_index::EntryKind),
    /// A folder with an entry directly inside whose name matches (`child:`; `childfile:` a file's,
    /// `childfolder:` a folder's).
    Child {
        name: TextMatch,
        only: Option<KindFilter>,
    },
    /// A folder's files directly inside (`childfilecount:`), or folders (`childfoldercount:`).
    ChildFiles(Cmp),
    ChildFolders(Cmp),
    /// Another live entry of the volume has the same value (`namepartdupe:`, `dmdupe:`, `dcdupe:`, `dadupe:`,
    /// `attribdupe:`).
    SameAs(DupeKey),
    /// The file reference number (`frn:`): the record number, or the whole 64-bit reference with the sequence
    /// number in its top 16 bits.
    Frn(u64),
    /// The volume's place among those searched, from 0 (`fsi:`, Everything's file system index).
    Fsi(Cmp),
    /// What only a file's data answers (`content:`, `type:`, `hash:`). The index cannot: a searcher takes it as
    /// true, and `uffs_search` narrows by the rest of the query, then reads the candidates.
    Content(ContentTerm),
}

/// What a `…dupe:` function compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DupeKey {
    /// The name without its extension (`namepartdupe:`), case ignored.
    NamePart,
    /// A time (`dmdupe:`, `dcdupe:`, `dadupe:`); an unknown time is no one's duplicate.
    Time(DateField),
    /// The attribute bits (`attribdupe:`).
    Attributes,
}

/// A term answered from a file's data.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentTerm {
    /// `content:TEXT`: the file's data holds TEXT (`case:` to match case, `wholeword:`, `regex:` for a regular
    /// expression), in UTF-8 or in UTF-16 with a byte-order mark; `utf16content:TEXT` (Everything's): in UTF-16LE
    /// with or without one.
    Text {
        text: String,
        case_sensitive: bool,
        whole_word: bool,
        regex: bool,
        /// Files without a byte-order mark are read as UTF-16LE (`utf16content:`), not UTF-8.
        utf16: bool,
    },
    /// `type:NAME`: the type the file's first bytes show (`pdf`, `exe`, a group such as `image`, or `mismatch`),
    /// lower-case; the name is checked where the data is read.
    Type(String),
    /// `hash:HEX`: an md5, sha1, sha256 or xxh3 digest of the data (by its length), lower-case.
    Hash(String),
}

/// How a text term matches.
#[derive(Debug, Clone, PartialEq)]
pub struct TextMatch {
    pub pattern: Pattern,
    /// Match the full path instead of the name.
    pub path: bool,
    pub case_sensitive: bool,
    /// The match must not touch a letter or digit on either side.
    pub whole_word: bool,
    /// Letters' diacritics must match (`diacritics:`). Off by default, as in Everything: the pattern is stored
    /// without them ([`uffs_index::diacritics::strip`]) and matches names with or without them (`cafe` finds
    /// `café`). Regular expressions match as written.
    pub diacritics: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// A substring; lower-case unless the match is case-sensitive.
    Substring(String),
    /// `*` and `?` over the whole name (or path); lower-case unless case-sensitive.
    Wildcard(String),
    Regex(String),
}

/// A `perm:` condition: `bits` (at most `0o7777`) exactly, every one of them (`perm:-0022`), or any of them
/// (`perm:/4000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Perm {
    Exactly(u32),
    All(u32),
    Any(u32),
}

impl Perm {
    pub fn holds(&self, permissions: u32) -> bool {
        match *self {
            Perm::Exactly(b) => permissions == b,
            Perm::All(b) => permissions & b == b,
            Perm::Any(b) => b == 0 || permissions & b != 0,
        }
    }
}

/// A numeric condition: inclusive bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cmp {
    pub min: u64,
    pub max: u64,
}

impl Cmp {
    pub fn holds(&self, v: u64) -> bool {
        self.min <= v && v <= self.max
    }
}

/// Which `$STANDARD_INFORMATION` time a date term looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateField {
    Modified,
    Created,
    Accessed,
}
