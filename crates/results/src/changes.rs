//! The rows of a change set, as `uffs diff` writes them in csv, tsv, jsonl and Parquet and as a dataset's change
//! files hold them (docs/commands.md, "diff", documents the columns): what changed and of which entry, then each
//! compared field's old and new value.

use uffs_index::diff::{field, Change, ChangeKind};
use uffs_index::time::known;
use uffs_index::{EntryId, Index};

use crate::column::attribute_letters;
use crate::{ColumnType, Value};

/// The columns of csv, tsv, jsonl and parquet, in order (docs/commands.md says what each holds).
pub const FIELD_COLUMNS: [(u32, &str, &str, ColumnType); 12] = [
    (field::SIZE, "size_old", "size_new", ColumnType::Integer),
    (
        field::ALLOCATED,
        "allocated_old",
        "allocated_new",
        ColumnType::Integer,
    ),
    (
        field::CREATED,
        "created_old",
        "created_new",
        ColumnType::Time,
    ),
    (
        field::MODIFIED,
        "modified_old",
        "modified_new",
        ColumnType::Time,
    ),
    (
        field::MFT_CHANGED,
        "mft_changed_old",
        "mft_changed_new",
        ColumnType::Time,
    ),
    (
        field::ACCESSED,
        "accessed_old",
        "accessed_new",
        ColumnType::Time,
    ),
    (
        field::ATTRIBUTES,
        "attributes_old",
        "attributes_new",
        ColumnType::Text,
    ),
    (
        field::REPARSE_TAG,
        "reparse_tag_old",
        "reparse_tag_new",
        ColumnType::Integer,
    ),
    (
        field::FN_CREATED,
        "fn_created_old",
        "fn_created_new",
        ColumnType::Time,
    ),
    (
        field::FN_MODIFIED,
        "fn_modified_old",
        "fn_modified_new",
        ColumnType::Time,
    ),
    (
        field::FN_MFT_CHANGED,
        "fn_mft_changed_old",
        "fn_mft_changed_new",
        ColumnType::Time,
    ),
    (
        field::FN_ACCESSED,
        "fn_accessed_old",
        "fn_accessed_new",
        ColumnType::Time,
    ),
];

/// The leading columns: what changed, and of which entry.
pub const HEAD: [(&str, ColumnType); 7] = [
    ("change", ColumnType::Text),
    ("kind", ColumnType::Text),
    ("path", ColumnType::Text),
    ("old_path", ColumnType::Text),
    ("record", ColumnType::Integer),
    ("sequence", ColumnType::Integer),
    ("fields", ColumnType::Text),
];

/// Each change with its path (the new one, or the old for a deleted entry) after `prefix`, by path, then kind: a
/// folder's changes before those inside it.
pub fn by_path(
    changes: Vec<Change>,
    old: &Index,
    new: &Index,
    prefix: &str,
) -> Vec<(String, Change)> {
    let mut rows: Vec<(String, Change)> = changes
        .into_iter()
        .map(|c| {
            let p = match (c.new, c.old) {
                (Some(n), _) => new.path(n),
                (None, Some(o)) => old.path(o),
                (None, None) => String::new(),
            };
            (format!("{prefix}{p}"), c)
        })
        .collect();
    rows.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.kind.cmp(&y.1.kind)));
    rows
}

/// The names and types of every machine-format column.
pub fn columns() -> (Vec<&'static str>, Vec<ColumnType>) {
    let mut names: Vec<&'static str> = HEAD.iter().map(|h| h.0).collect();
    let mut types: Vec<ColumnType> = HEAD.iter().map(|h| h.1).collect();
    for (_, o, n, ty) in FIELD_COLUMNS {
        names.extend([o, n]);
        types.extend([ty, ty]);
    }
    (names, types)
}

/// Field `bit`'s value of entry `id` of `idx`.
pub fn value(idx: &Index, id: EntryId, bit: u32) -> Value {
    let fnt = |k: usize| Value::Time(idx.timeline(id).and_then(|t| known(t.fn_times[k])));
    match bit {
        field::SIZE => Value::Int(Some(idx.size(id))),
        field::ALLOCATED => Value::Int(Some(idx.allocated(id))),
        field::CREATED => Value::time(idx.created(id)),
        field::MODIFIED => Value::time(idx.modified(id)),
        field::MFT_CHANGED => Value::time(idx.mft_changed(id)),
        field::ACCESSED => Value::time(idx.accessed(id)),
        field::ATTRIBUTES => Value::Text(attribute_letters(idx.flags(id))),
        field::REPARSE_TAG => Value::Int(Some(u64::from(idx.reparse_tag(id)))),
        field::FN_CREATED => fnt(0),
        field::FN_MODIFIED => fnt(1),
        field::FN_MFT_CHANGED => fnt(2),
        field::FN_ACCESSED => fnt(3),
        _ => Value::Text(String::new()),
    }
}

/// The empty value of a column of type `ty`.
fn none(ty: ColumnType) -> Value {
    match ty {
        ColumnType::Text => Value::Text(String::new()),
        ColumnType::Integer => Value::Int(None),
        ColumnType::Time => Value::Time(None),
        ColumnType::Bool => Value::Int(None),
    }
}

/// A change's row in the machine formats: created rows hold the entry's values in the `_new` columns, deleted
/// rows in the `_old` ones, changed rows the old and new values of the fields they name; renamed and moved rows
/// hold the old path (after `prefix`, as `path` has it).
pub fn row(path: &str, c: &Change, old: &Index, new: &Index, prefix: &str) -> Vec<Value> {
    let (idx, id) = match (c.new, c.old) {
        (Some(n), _) => (new, n),
        (None, Some(o)) => (old, o),
        (None, None) => (new, 0),
    };
    let old_path = match c.kind {
        ChangeKind::Renamed | ChangeKind::Moved => c
            .old
            .map(|o| format!("{prefix}{}", old.path(o)))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let mut r = vec![
        Value::Text(c.kind.as_str().into()),
        Value::Text(idx.kind(id).as_str().into()),
        Value::Text(path.to_string()),
        Value::Text(old_path),
        Value::Int(Some(u64::from(idx.record(id)))),
        Value::Int(Some(u64::from(idx.sequence(id)))),
        Value::Text(field::names(c.fields)),
    ];
    for (bit, _, _, ty) in FIELD_COLUMNS {
        let show_old = match c.kind {
            ChangeKind::Deleted => true,
            ChangeKind::Changed => c.fields & bit != 0,
            _ => false,
        };
        let show_new = match c.kind {
            ChangeKind::Created => true,
            ChangeKind::Changed => c.fields & bit != 0,
            _ => false,
        };
        r.push(match (show_old, c.old) {
            (true, Some(o)) => value(old, o, bit),
            _ => none(ty),
        });
        r.push(match (show_new, c.new) {
            (true, Some(n)) => value(new, n, bit),
            _ => none(ty),
        });
    }
    r
}
