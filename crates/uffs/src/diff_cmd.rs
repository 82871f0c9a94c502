//! `uffs diff OLD NEW`: what changed between two states of a volume, each an index file or a source (an image,
//! a device, `disk.img@2`, a container; a snapshot source is just another source). The comparison is
//! `uffs_index::diff`'s; this loads the two indexes, narrows to a query, and prints the changes through the
//! results layer (docs/commands.md, "diff", documents the columns).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use uffs_index::diff::{self, field, Change, ChangeKind};
use uffs_index::{EntryId, Index};
use uffs_mft::ScanOptions;
use uffs_results::changes;
use uffs_results::column::iso;
use uffs_results::{human, ColumnType, OutputArgs, Printer, Value};

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The earlier state: an index file written by `uffs index`, or a source (a volume, an image, a partition
    /// of a disk as SOURCE@N, a container).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The later state, as OLD.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Compare only the entries this query matches in OLD or in NEW (`path:\Windows ext:exe`).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Only these kinds of change, comma-separated: created, deleted, renamed, moved, changed.
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    pub only: Vec<String>,
    /// Fields not compared, comma-separated: size, allocated, created, modified, mft_changed, accessed,
    /// attributes, reparse_tag, fn_created, fn_modified, fn_mft_changed, fn_accessed (times: the four
    /// $STANDARD_INFORMATION times; fn_times: the four $FILE_NAME ones), or none. Default: accessed, which
    /// reading a file changes.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "FIELDS",
        default_value = "accessed"
    )]
    pub ignore: Vec<String>,
    /// Compare named data streams (`file:stream`) too: created, deleted, and changed in size.
    #[arg(long)]
    pub streams: bool,
    /// Print only how many changes of each kind there are.
    #[arg(long)]
    pub count: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs the command; `Ok(true)` when there are differences (exit status 1).
pub fn run(a: DiffArgs) -> Result<bool> {
    let mut ignore = 0;
    for f in &a.ignore {
        if f.trim().eq_ignore_ascii_case("none") || f.trim().is_empty() {
            continue;
        }
        ignore |= field::parse(f).ok_or_else(|| {
            anyhow!(
                "--ignore {f:?}: fields are {}, times, fn_times, none",
                field::names(field::VALUES)
            )
        })?;
    }
    let mut only: Vec<ChangeKind> = Vec::new();
    for k in &a.only {
        only.push(ChangeKind::parse(k).ok_or_else(|| {
            anyhow!("--only {k:?}: kinds are created, deleted, renamed, moved, changed")
        })?);
    }
    // --columns names this command's columns, which the printer (made for entries) does not know.
    let mut out_args = a.output.clone();
    let columns = std::mem::take(&mut out_args.columns);
    let mut printer = Printer::new(&out_args)?;

    let old = load(&a.old).with_context(|| format!("OLD {}", a.old))?;
    let new = load(&a.new).with_context(|| format!("NEW {}", a.new))?;
    let t = Instant::now();
    let opts = diff::Options {
        streams: a.streams,
        ignore,
    };
    let mut changes = diff::diff(&old, &new, &opts);
    let took = t.elapsed();
    if !only.is_empty() {
        changes.retain(|c| only.contains(&c.kind));
    }
    if !a.query.is_empty() {
        let (old_set, new_set) = scope(&a.query.join(" "), &old, &new, a.streams)?;
        changes.retain(|c| {
            c.old.is_some_and(|o| old_set.get(o as usize))
                || c.new.is_some_and(|n| new_set.get(n as usize))
        });
    }
    if std::env::var_os("UFFS_DIFF_TIMING").is_some() {
        eprintln!(
            "uffs diff: {} and {} entries compared in {:.3} s: {} changes",
            old.len(),
            new.len(),
            took.as_secs_f64(),
            changes.len()
        );
    }
    let differ = !changes.is_empty();
    if a.count {
        let rows: Vec<Vec<Value>> = ChangeKind::ALL
            .into_iter()
            .filter(|k| only.is_empty() || only.contains(k))
            .map(|k| {
                let n = changes.iter().filter(|c| c.kind == k).count() as u64;
                vec![Value::Text(k.as_str().into()), Value::Int(Some(n))]
            })
            .collect();
        printer.values(
            &["change", "count"],
            &[ColumnType::Text, ColumnType::Integer],
            &rows,
        )?;
        printer.finish()?;
        return Ok(differ);
    }
    let rows = changes::by_path(changes, &old, &new, "");

    if printer.is_tabular() {
        if !columns.is_empty() {
            bail!("--columns is for csv, tsv, jsonl: a table shows change, path and details");
        }
        let table: Vec<Vec<Value>> = rows
            .iter()
            .map(|(path, c)| {
                vec![
                    Value::Text(c.kind.as_str().into()),
                    Value::Text(path.clone()),
                    Value::Text(details(c, &old, &new)),
                ]
            })
            .collect();
        printer.values(
            &["change", "path", "details"],
            &[ColumnType::Text, ColumnType::Text, ColumnType::Text],
            &table,
        )?;
        let n = rows.len();
        printer.finish()?;
        if n == 0 {
            eprintln!("no differences");
        }
        return Ok(differ);
    }
    let (names, types) = changes::columns();
    let pick: Vec<usize> = if columns.is_empty() {
        (0..names.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(c.trim()))
                    .ok_or_else(|| {
                        anyhow!("unknown column {c:?}; columns are: {}", names.join(", "))
                    })
            })
            .collect::<Result<_>>()?
    };
    if !columns.is_empty() && printer_is_parquet(&a.output) {
        bail!("--format parquet has the fixed schema of docs/commands.md: --columns is for csv, tsv and jsonl");
    }
    let out: Vec<Vec<Value>> = rows
        .iter()
        .map(|(path, c)| {
            let all = changes::row(path, c, &old, &new, "");
            pick.iter().map(|&i| all[i].clone()).collect()
        })
        .collect();
    let names: Vec<&'static str> = pick.iter().map(|&i| names[i]).collect();
    let types: Vec<ColumnType> = pick.iter().map(|&i| types[i]).collect();
    printer.values(&names, &types, &out)?;
    printer.finish()?;
    Ok(differ)
}

fn printer_is_parquet(a: &OutputArgs) -> bool {
    a.format == Some(uffs_results::Format::Parquet)
}

/// A value as a table shows it: sizes in KiB …, times to the second (in full where that hides the change).
fn shown(v: &Value, other: &Value, bytes: bool) -> String {
    match v {
        Value::Int(Some(n)) if bytes => human(*n),
        Value::Time(Some(t)) => {
            let full = iso(*t, false);
            let short = full.replace('T', " ").chars().take(19).collect::<String>();
            match other {
                Value::Time(Some(o)) if iso(*o, false).get(..19) == full.get(..19) => full,
                _ => short,
            }
        }
        Value::Text(s) if s.is_empty() => "-".into(),
        // A time the volume does not keep (or an index before uffs kept `$FILE_NAME` times).
        Value::Time(None) => "unknown".into(),
        v => v.text(true),
    }
}

/// The table's third column: where a renamed or moved entry was, a changed one's fields old → new, a created
/// or deleted one's size.
fn details(c: &Change, old: &Index, new: &Index) -> String {
    match (c.kind, c.old, c.new) {
        (ChangeKind::Renamed | ChangeKind::Moved, Some(o), _) => format!("from {}", old.path(o)),
        (ChangeKind::Changed, Some(o), Some(n)) => {
            let mut parts = Vec::new();
            for (bit, name) in field::ALL {
                if c.fields & bit == 0 {
                    continue;
                }
                let (x, y) = (changes::value(old, o, bit), changes::value(new, n, bit));
                let bytes = bit == field::SIZE || bit == field::ALLOCATED;
                parts.push(format!(
                    "{name} {} -> {}",
                    shown(&x, &y, bytes),
                    shown(&y, &x, bytes)
                ));
            }
            parts.join("; ")
        }
        (ChangeKind::Created, _, Some(n)) => sized(new, n),
        (ChangeKind::Deleted, Some(o), _) => sized(old, o),
        _ => String::new(),
    }
}

fn sized(idx: &Index, id: EntryId) -> String {
    match idx.kind(id) {
        uffs_index::EntryKind::Directory => "folder".into(),
        k => format!("{} {}", k.as_str(), human(idx.size(id))),
    }
}

/// The entries `query` matches in each index (streams among them with `streams`).
fn scope(
    query: &str,
    old: &Arc<Index>,
    new: &Arc<Index>,
    streams: bool,
) -> Result<(uffs_query::Bitset, uffs_query::Bitset)> {
    let mut search = uffs_search::SearchRequest::new(query.to_string());
    search.streams = streams;
    let expr = uffs_search::compile(&search, crate::query_cmd::now_filetime())?;
    let so = uffs_query::Searcher::new(old.clone());
    let sn = uffs_query::Searcher::new(new.clone());
    let targets = [("", &so), ("", &sn)];
    let mut sets = uffs_search::execute::sets(&targets, &search, &expr, None)?.into_iter();
    match (sets.next(), sets.next()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => bail!("the query gave no result sets"),
    }
}

/// The index of OLD or NEW: an index file (with its delta merged in), or a source's one volume, built without
/// deleted entries.
fn load(spec: &str) -> Result<Arc<Index>> {
    if crate::common::is_index_file(spec) {
        return Ok(Arc::new(crate::common::read_index_merged(Path::new(spec))?));
    }
    let src = crate::common::open_source(spec, None, false)?;
    let vol = crate::common::only_volume(
        &src,
        spec,
        "compare one volume at a time, e.g. `uffs diff",
        "NEW`",
    )?;
    let opts = ScanOptions {
        include_deleted: false,
        ..ScanOptions::default()
    };
    let pb = crate::common::progress_bar(&vol.name);
    let (idx, report) = crate::common::build(vol, &opts, &pb)?;
    pb.finish_and_clear();
    eprintln!("{}", crate::common::summary(vol, &idx, &report));
    Ok(Arc::new(idx))
}
