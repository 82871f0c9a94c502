//! [`SearchRequest`]: one search as every front end asks it, and as the daemon protocol, the HTTP API and MCP
//! carry it in JSON. Its JSON names are `snake_case` and documented in `docs/protocol.md`; a request carries
//! [`PROTOCOL_VERSION`] (or leaves it out), and a field this version does not know is refused.

use serde::{Deserialize, Serialize};
use uffs_query::SortKey;
use uffs_results::OutputArgs;

use crate::Error;

/// The version of the request's JSON form. A change that a client of the previous version could misread (a field
/// renamed, a meaning changed) raises it; a new optional field does not.
pub const PROTOCOL_VERSION: u32 = 1;

/// One search: what to match, over which volumes, in what order, and what to answer (rows, a count, groups, totals
/// or folder sizes) in which format. Every field may be left out of the JSON; [`Default`] is "every entry, in
/// index order, as paths".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchRequest {
    /// [`PROTOCOL_VERSION`]; another value is refused.
    pub version: u32,
    /// The query, in Everything's syntax (`ext:exe size:>2mb`); empty matches everything.
    pub query: String,
    /// Smart case (the default: case matters when the query has a capital), or always or never.
    pub case: Case,
    /// The query is one glob over the whole name (or path with `full_path`).
    pub glob: bool,
    /// The query is one regular expression over the name (or path with `full_path`).
    pub regex: bool,
    /// Text terms match the full path instead of the name.
    pub full_path: bool,
    /// Only files with one of these extensions.
    pub extensions: Vec<String>,
    /// Only files or only folders.
    pub kind: Option<Kind>,
    /// Sizes in fd's form, all of which must hold: `+10M` (at least), `-1k` (at most), `4096` (exactly).
    pub size: Vec<String>,
    /// Modified within a duration (`2weeks`) or since a date (`2024-05-01`).
    pub changed_within: Option<String>,
    /// Modified before a duration ago or a date.
    pub changed_before: Option<String>,
    /// Only these volumes (names as the daemon lists them, `C`; a partition `@2`); empty: all.
    pub volumes: Vec<String>,
    /// Deleted entries too (from an index built with them).
    pub deleted: bool,
    /// Named data streams too (`file.txt:Zone.Identifier`).
    pub streams: bool,
    /// The order of the rows; none: index order, the fastest.
    pub sort: Option<Sort>,
    /// Reverse the order.
    pub reverse: bool,
    /// Rows skipped first (paging).
    pub offset: usize,
    /// Rows shown at most; none: all.
    pub limit: Option<usize>,
    /// Answer only the number of matches.
    pub count: bool,
    /// Answer groups of the matches (their number and sizes per group), or their totals.
    pub facet: Option<Facet>,
    /// With `facet` ext or folder: the N largest groups (default 25; 0: all).
    pub top: Option<usize>,
    /// Answer folder sizes (`uffs du`) instead of matches; the query is not used.
    pub du: Option<DuRequest>,
    /// How the answer is printed.
    pub output: OutputArgs,
}

impl Default for SearchRequest {
    fn default() -> SearchRequest {
        SearchRequest {
            version: PROTOCOL_VERSION,
            query: String::new(),
            case: Case::Smart,
            glob: false,
            regex: false,
            full_path: false,
            extensions: Vec::new(),
            kind: None,
            size: Vec::new(),
            changed_within: None,
            changed_before: None,
            volumes: Vec::new(),
            deleted: false,
            streams: false,
            sort: None,
            reverse: false,
            offset: 0,
            limit: None,
            count: false,
            facet: None,
            top: None,
            du: None,
            output: OutputArgs::default(),
        }
    }
}

impl SearchRequest {
    /// A request for `query` with every other field at its default.
    pub fn new(query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            ..SearchRequest::default()
        }
    }

    /// Refuses what no front end should send: another version, or answers that exclude each other.
    pub fn check(&self) -> Result<(), Error> {
        if self.version != PROTOCOL_VERSION {
            return Err(Error::BadRequest(format!(
                "this uffs speaks search request version {PROTOCOL_VERSION}, not {}",
                self.version
            )));
        }
        if self.glob && self.regex {
            return Err(Error::BadRequest(
                "glob and regex exclude each other".into(),
            ));
        }
        let answers = [self.count, self.facet.is_some(), self.du.is_some()];
        if answers.iter().filter(|&&a| a).count() > 1 {
            return Err(Error::BadRequest(
                "count, facet and du exclude each other: ask one of them".into(),
            ));
        }
        if self.count && self.offset > 0 {
            return Err(Error::BadRequest("a count takes no offset".into()));
        }
        Ok(())
    }
}

/// How letter case is matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    /// Case matters when the query has a capital letter.
    #[default]
    Smart,
    Sensitive,
    Ignore,
}

impl Case {
    /// `Some(true)` sensitive, `Some(false)` ignore, `None` smart: what the query parser takes.
    pub fn sensitive(self) -> Option<bool> {
        match self {
            Case::Smart => None,
            Case::Sensitive => Some(true),
            Case::Ignore => Some(false),
        }
    }
}

/// What kind of entries (fd's `--type`): regular files, folders, and the other kinds a POSIX file system (ext)
/// keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Folder,
    Symlink,
    Socket,
    Fifo,
    BlockDevice,
    CharDevice,
}

/// The orders of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    Name,
    Path,
    Size,
    #[value(alias = "ext")]
    #[serde(alias = "ext")]
    Extension,
    Created,
    Modified,
    Accessed,
    /// A folder's recursive size (hard links once), a file's size.
    #[value(alias = "tree-size")]
    #[serde(alias = "tree_size")]
    Treesize,
}

impl From<Sort> for SortKey {
    fn from(s: Sort) -> SortKey {
        match s {
            Sort::Name => SortKey::Name,
            Sort::Path => SortKey::Path,
            Sort::Size => SortKey::Size,
            Sort::Extension => SortKey::Extension,
            Sort::Created => SortKey::Created,
            Sort::Modified => SortKey::Modified,
            Sort::Accessed => SortKey::Accessed,
            Sort::Treesize => SortKey::TreeSize,
        }
    }
}

/// What the matches are grouped by, or their totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Facet {
    /// Extension.
    Ext,
    /// The folder each match is in.
    Folder,
    /// Year modified.
    Year,
    /// Month modified.
    Month,
    /// Attribute letter.
    Attrib,
    /// Size bucket (0, 1 B–1 KiB, …).
    #[serde(alias = "size-bucket")]
    SizeBucket,
    /// No groups: one row of totals (count, files, folders, sizes, earliest and latest times).
    #[value(skip)]
    Totals,
}

impl Facet {
    /// The name of the group's column.
    pub fn column(self) -> &'static str {
        match self {
            Facet::Ext => "ext",
            Facet::Folder => "folder",
            Facet::Year => "year",
            Facet::Month => "month",
            Facet::Attrib => "attrib",
            Facet::SizeBucket => "size_bucket",
            Facet::Totals => "totals",
        }
    }
}

/// `uffs du`: a folder's children with their recursive sizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DuRequest {
    /// The folder (default: the root of every volume); with several volumes, starting with the volume's name.
    pub path: Option<String>,
    /// Folders this many levels below `path` (at least 1).
    pub depth: u32,
    /// The order of each folder's children.
    pub sort: DuSort,
    /// At most this many children of each folder (0 or none: all).
    pub limit: Option<usize>,
}

impl Default for DuRequest {
    fn default() -> DuRequest {
        DuRequest {
            path: None,
            depth: 1,
            sort: DuSort::Allocated,
            limit: None,
        }
    }
}

/// The orders of `du`'s children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuSort {
    /// Most disk space first.
    Allocated,
    /// Largest logical size first.
    Size,
    /// Most files and folders first.
    Count,
    Name,
    /// Most bytes no other file or snapshot shares first (Btrfs, XFS with reflink; as allocated elsewhere).
    Exclusive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_are_snake_case_and_unknown_fields_are_refused() {
        let r: SearchRequest = serde_json::from_str(
            r#"{"version":1,"query":"ext:exe","sort":"tree_size","facet":"size_bucket","case":"ignore",
                "output":{"format":"jsonl","color":"never","columns":["path"]}}"#,
        )
        .unwrap();
        assert_eq!(r.sort, Some(Sort::Treesize));
        assert_eq!(r.facet, Some(Facet::SizeBucket));
        assert_eq!(r.case, Case::Ignore);
        assert_eq!(r.output.format, Some(uffs_results::Format::Jsonl));
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["sort"], "treesize");
        assert_eq!(back["output"]["color"], "never");
        assert!(serde_json::from_str::<SearchRequest>(r#"{"qeury":"x"}"#).is_err());
        assert!(serde_json::from_str::<SearchRequest>(r#"{"sort":"Size"}"#).is_err());
        assert!(
            serde_json::from_str::<SearchRequest>(r#"{"output":{"output":"/tmp/x"}}"#).is_err()
        );
        // Left out, the version is the current one; another is refused by `check`.
        let r: SearchRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(r, SearchRequest::default());
        r.check().unwrap();
        let old: SearchRequest = serde_json::from_str(r#"{"version":2}"#).unwrap();
        assert!(old.check().is_err());
    }
}
