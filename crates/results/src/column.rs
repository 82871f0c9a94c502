//! The columns of an entry, defined once: each [`Column`] has its name, its [`ColumnType`] and how its value is
//! read from an index ([`Column::value`]). The printer's CSV, TSV, JSON lines and table, `uffs export`'s fast
//! formatter and the Parquet writer all take their columns from here, so a column added once appears in each.

use std::borrow::Cow;

use uffs_index::time::known;
use uffs_index::{flags, EntryId, EntryKind, Index};
use uffs_query::Searcher;

/// What a column holds, which decides how each format writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Text: quoted in JSON.
    Text,
    /// An unsigned integer (a JSON number, `null` when unknown; aligned right in a table).
    Integer,
    /// A FILETIME (ISO 8601 UTC with 100 ns in text; empty, `null` in JSON and Parquet, when the volume does not
    /// keep it: [`uffs_index::time::UNKNOWN`]).
    Time,
    /// `true` or `false`.
    Bool,
}

macro_rules! columns {
    ($($(#[$doc:meta])* $v:ident = $name:literal : $ty:ident,)*) => {
        /// One column of an entry.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Column {
            $($(#[$doc])* $v,)*
        }

        impl Column {
            /// Every column, in the order `--columns`' help lists them.
            pub const ALL: &'static [Column] = &[$(Column::$v,)*];

            /// The column's name (in `--columns`, headers and JSON keys).
            pub fn name(self) -> &'static str {
                match self {
                    $(Column::$v => $name,)*
                }
            }

            pub fn ty(self) -> ColumnType {
                match self {
                    $(Column::$v => ColumnType::$ty,)*
                }
            }
        }
    };
}

columns! {
    /// The full path, after the volume's prefix.
    Path = "path": Text,
    Name = "name": Text,
    /// `file`, `folder` or `stream` (uffs before 2026-11 wrote `dir`); on ext also `symlink`, `socket`,
    /// `block-device`, `char-device` and `fifo`.
    Kind = "kind": Text,
    /// The entry's own data size in bytes: a file's unnamed data, a stream entry's stream, 0 for a folder (its
    /// total below it is `tree_size`).
    Size = "size": Integer,
    /// The bytes the disk holds for the entry's own record (every cluster of its non-resident attributes).
    Allocated = "allocated": Integer,
    Created = "created": Time,
    Modified = "modified": Time,
    MftChanged = "mft_changed": Time,
    Accessed = "accessed": Time,
    /// The Windows attributes as letters (see [`flags::LETTERS`]).
    Attributes = "attributes": Text,
    Record = "record": Integer,
    Sequence = "sequence": Integer,
    ParentRecord = "parent_record": Integer,
    Deleted = "deleted": Bool,
    ReparseTag = "reparse_tag": Integer,
    /// The `$FILE_NAME` times of the entry's name (unknown in an index made before uffs kept them).
    FnCreated = "fn_created": Time,
    FnModified = "fn_modified": Time,
    FnMftChanged = "fn_mft_changed": Time,
    FnAccessed = "fn_accessed": Time,
    /// The mode as `ls -l` writes it (`-rwxr-xr-x`), on file systems that keep one (ext; empty elsewhere).
    Mode = "mode": Text,
    /// The owner's user and group ids (ext; unknown elsewhere).
    Uid = "uid": Integer,
    Gid = "gid": Integer,
    /// A symbolic link's target (ext).
    LinkTarget = "link_target": Text,
    /// The entry is a deleted file whose name only its folder's index slack keeps (NTFS, `--deleted`): its
    /// record, if known, may hold another file now.
    FromIndexSlack = "from_index_slack": Bool,
    /// The DOS 8.3 name an entry keeps beside its long one (`PROGRA~1`; NTFS and FAT), empty when it has none.
    Alias = "alias": Text,
    /// A file's extension (empty for folders and streams).
    Ext = "ext": Text,
    /// A folder's totals below it (hard links once): the sum of `size` (streams included) and of `allocated`,
    /// the entries below it and its children; unknown for a file.
    TreeSize = "tree_size": Integer,
    TreeAllocated = "tree_allocated": Integer,
    Descendants = "descendants": Integer,
    Children = "children": Integer,
    /// A file's type by the signature of its first bytes (a `type:` name; empty when none is known, or for a
    /// folder). Not in the index: the printer is given it (`Printer::set_types`) by whoever reads the data.
    Type = "type": Text,
}

impl Column {
    /// `uffs export`'s CSV and JSON lines columns, in order (the first 25 of [`Column::ALL`]).
    pub const EXPORT: &'static [Column] = {
        let (head, _) = Column::ALL.split_at(25);
        head
    };

    /// The `$FILE_NAME` time columns, in the order of `EntryTimeline::fn_times`.
    pub const FN_TIMES: [Column; 4] = [
        Column::FnCreated,
        Column::FnModified,
        Column::FnMftChanged,
        Column::FnAccessed,
    ];

    /// The column named `s` (ignoring case and surrounding spaces).
    pub fn parse(s: &str) -> Option<Column> {
        Column::ALL
            .iter()
            .copied()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The position of a `$FILE_NAME` time in `EntryTimeline::fn_times`.
    pub fn fn_index(self) -> Option<usize> {
        Column::FN_TIMES.iter().position(|&c| c == self)
    }

    /// Whether the value is a count of bytes, which a table shows in KiB, MiB … (the other formats write the
    /// number).
    pub fn is_bytes(self) -> bool {
        matches!(
            self,
            Column::Size | Column::Allocated | Column::TreeSize | Column::TreeAllocated
        )
    }

    /// Whether the value comes from a folder's totals (computed by the searcher on first use).
    pub fn needs_usage(self) -> bool {
        matches!(
            self,
            Column::TreeSize | Column::TreeAllocated | Column::Descendants | Column::Children
        )
    }

    /// The column's value for entry `id` of `s`'s index, whose paths start with `prefix`.
    pub fn value(self, s: &Searcher, prefix: &str, id: EntryId) -> Value {
        let idx = s.index();
        let totals = || {
            let (usage, part) = s.usage_if(true);
            usage.and_then(|u| u.of(part, id)).copied()
        };
        match self {
            Column::Path => Value::Text(full_path(idx, prefix, id)),
            Column::Name => Value::Text(idx.name(id).to_string()),
            Column::Kind => Value::Text(idx.kind(id).as_str().to_string()),
            Column::Ext => Value::Text(ext(idx, id).to_string()),
            Column::Size => Value::Int(Some(idx.size(id))),
            Column::Allocated => Value::Int(Some(idx.allocated(id))),
            Column::Created => Value::time(idx.created(id)),
            Column::Modified => Value::time(idx.modified(id)),
            Column::MftChanged => Value::time(idx.mft_changed(id)),
            Column::Accessed => Value::time(idx.accessed(id)),
            Column::FnCreated | Column::FnModified | Column::FnMftChanged | Column::FnAccessed => {
                let k = self.fn_index().unwrap_or(0);
                Value::Time(idx.timeline(id).and_then(|t| known(t.fn_times[k])))
            }
            Column::Attributes => Value::Text(attribute_letters(idx.flags(id))),
            Column::Record => Value::Int(known_record(idx, id).map(u64::from)),
            Column::Sequence => {
                Value::Int(known_record(idx, id).map(|_| u64::from(idx.sequence(id))))
            }
            Column::ParentRecord => Value::Int(idx.parent_record(id).map(u64::from)),
            Column::Deleted => Value::Bool(idx.is_deleted(id)),
            Column::FromIndexSlack => Value::Bool(idx.is_from_index_slack(id)),
            Column::ReparseTag => Value::Int(Some(u64::from(idx.reparse_tag(id)))),
            Column::Mode => Value::Text(idx.posix(id).map(|p| p.symbolic()).unwrap_or_default()),
            Column::Uid => Value::Int(idx.posix(id).map(|p| u64::from(p.uid))),
            Column::Gid => Value::Int(idx.posix(id).map(|p| u64::from(p.gid))),
            Column::LinkTarget => Value::Text(
                String::from_utf8_lossy(idx.link_target(id).unwrap_or_default()).into_owned(),
            ),
            Column::Alias => {
                Value::Text(String::from_utf8_lossy(idx.alias(id).unwrap_or_default()).into_owned())
            }
            Column::TreeSize => Value::Int(totals().map(|t| t.size)),
            Column::TreeAllocated => Value::Int(totals().map(|t| t.allocated)),
            Column::Descendants => Value::Int(totals().map(|t| t.descendants())),
            Column::Children => Value::Int(totals().map(|t| u64::from(t.children))),
            Column::Type => Value::Text(String::new()),
        }
    }
}

/// The record of entry `id`: none for a name from index slack whose index entry lost it.
pub fn known_record(idx: &Index, id: EntryId) -> Option<u32> {
    let r = idx.record(id);
    (r != uffs_index::NO_RECORD || !idx.is_from_index_slack(id)).then_some(r)
}

/// One column's value of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    /// `None`: unknown (no parent, a file's folder totals).
    Int(Option<u64>),
    /// A FILETIME; `None`: not kept (by the volume, or by an index made before uffs kept `$FILE_NAME` times).
    Time(Option<u64>),
    Bool(bool),
}

impl Value {
    /// The value of FILETIME `ft`: unknown when it is [`uffs_index::time::UNKNOWN`].
    pub fn time(ft: u64) -> Value {
        Value::Time(known(ft))
    }

    /// The value as text; empty when unknown. `table`: times to the minute (`2024-05-01 12:34`).
    pub fn text(&self, table: bool) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Int(n) => n.map(|n| n.to_string()).unwrap_or_default(),
            Value::Time(t) => t.map(|t| iso(t, table)).unwrap_or_default(),
            Value::Bool(b) => b.to_string(),
        }
    }

    /// Whether JSON writes the value bare (a number, `true`, `false`, `null`) rather than as a string.
    pub fn json_bare(&self) -> bool {
        match self {
            Value::Text(_) => false,
            Value::Time(t) => t.is_none(),
            Value::Int(_) | Value::Bool(_) => true,
        }
    }
}

/// A file's extension (after its last dot); empty for folders and streams.
pub fn ext(idx: &Index, id: EntryId) -> Cow<'_, str> {
    // After the last dot; a name without one has none (as `ext:` and the search aids take it: `README` is no
    // file of extension `readme`).
    let after_dot = |n: &str| {
        n.rsplit_once('.')
            .map_or(n.len(), |(head, _)| head.len() + 1)
    };
    match idx.kind(id) {
        EntryKind::File => match idx.name(id) {
            Cow::Borrowed(n) => Cow::Borrowed(&n[after_dot(n)..]),
            Cow::Owned(mut n) => {
                n.drain(..after_dot(&n));
                Cow::Owned(n)
            }
        },
        _ => Cow::Borrowed(""),
    }
}

/// The Windows attribute letters of entry flags `f`, in [`flags::LETTERS`]' order.
pub fn attribute_letters(f: u32) -> String {
    flags::LETTERS
        .iter()
        .filter(|(_, b)| f & b != 0)
        .map(|(c, _)| *c)
        .collect()
}

/// ISO 8601 UTC with 100 ns; `table`: `2024-05-01 12:34`, which reads better in a table.
pub fn iso(ft: u64, table: bool) -> String {
    let mut s = String::new();
    uffs_index::time::format_iso(ft, &mut s);
    if table {
        s.replace_range(10..11, " ");
        s.truncate(16);
    }
    s
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1536` → `1.5 KiB`.
pub fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The path of `id` after its volume's prefix. On Windows a drive-letter prefix (`C:`) or a walked folder's
/// (`C:\Users\ana`, `\\server\share`) gives a Windows path (`C:\Windows\System32`); any other (`@2:`,
/// `data:`), and every path elsewhere, keeps `/`, the platform's separator (a volume named `L` prints
/// `L:/home/ana` on Linux, which the shell and uffs's own queries take).
pub fn full_path(idx: &Index, prefix: &str, id: EntryId) -> String {
    let mut s = String::with_capacity(prefix.len() + 64);
    s.push_str(prefix);
    idx.path_into(id, &mut s);
    let p = prefix.as_bytes();
    let drive = p.len() >= 2 && p[0].is_ascii_alphabetic() && p[1] == b':';
    let windows_path = (drive && (p.len() == 2 || p[2] == b'\\')) || prefix.starts_with("\\\\");
    if cfg!(windows) && windows_path {
        // Safe on UTF-8: '/' and '\\' are single bytes that never occur inside a multi-byte character.
        s = s.replace('/', "\\");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_types_and_export_order() {
        let names: Vec<&str> = Column::EXPORT.iter().map(|c| c.name()).collect();
        assert_eq!(names.first(), Some(&"path"));
        assert_eq!(names.last(), Some(&"alias"));
        assert_eq!(Column::parse(" Tree_Size "), Some(Column::TreeSize));
        assert_eq!(Column::parse("nope"), None);
        assert_eq!(Column::FnMftChanged.fn_index(), Some(2));
        assert_eq!(Column::Deleted.ty(), ColumnType::Bool);
        assert_eq!(human(1536), "1.5 KiB");
        assert!(Value::Time(None).json_bare() && !Value::Time(Some(1)).json_bare());
    }

    #[test]
    fn a_zero_time_is_unknown_in_every_text_form() {
        let v = Value::time(0);
        assert_eq!(v, Value::Time(None));
        assert_eq!(v.text(false), "");
        assert_eq!(v.text(true), "");
        // JSON writes it bare, as `null`.
        assert!(v.json_bare());
        let one = Value::time(uffs_index::time::UNIX_EPOCH);
        assert_eq!(one.text(false), "1970-01-01T00:00:00.0000000Z");
        assert_eq!(one.text(true), "1970-01-01 00:00");
    }
}
