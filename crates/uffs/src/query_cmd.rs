//! `uffs QUERY`: search an index file or a source with the query language and fd-style shortcut flags.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::ValueEnum;
use uffs_index::time::{from_civil_date, TICKS_PER_SECOND};
use uffs_index::EntryId;
use uffs_query::ast::{Cmp, DateField, KindFilter, Pattern, Term, TermKind, TextMatch};
use uffs_query::{parse, Expr, ParseOptions, SearchOptions, Searcher, SortKey};

use crate::common::load_indexes;
use uffs_results::{self as output, OutputArgs};

#[derive(clap::Args, Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SearchArgs {
    /// The query, in Everything's syntax (several words are joined with spaces).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Search this index file (written by `uffs index`).
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    pub index: Option<PathBuf>,
    /// Search this source (volume, disk image or $MFT capture), indexing it first.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
    /// Search only this volume (repeatable): a name `uffs volumes list` shows, or a partition of a disk
    /// (`@2`).
    #[arg(long = "volume", value_name = "NAME")]
    pub volumes: Vec<String>,
    /// Ignore case everywhere (instead of smart case).
    #[arg(short = 'i', long = "ignore-case", conflicts_with = "case_sensitive")]
    pub ignore_case: bool,
    /// Match case everywhere (instead of smart case).
    #[arg(short = 's', long)]
    pub case_sensitive: bool,
    /// Only files with this extension (repeatable).
    #[arg(short = 'e', long = "extension", value_name = "EXT")]
    pub extension: Vec<String>,
    /// Only files (f) or only folders (d).
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = ["f", "file", "d", "dir", "directory"])]
    pub kind: Option<String>,
    /// Size: +10M (at least), -1k (at most) or 4096 (exactly); units b k m g t (powers of 1024). Repeatable.
    #[arg(short = 'S', long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Vec<String>,
    /// Modified within a duration (10min, 2h, 3d, 2weeks, 1y) or since a date (2024-05-01).
    #[arg(long, value_name = "WHEN")]
    pub changed_within: Option<String>,
    /// Modified before a duration ago or a date.
    #[arg(long, value_name = "WHEN")]
    pub changed_before: Option<String>,
    /// The query is one glob pattern over the whole name (or path with -p).
    #[arg(short = 'g', long, conflicts_with = "regex")]
    pub glob: bool,
    /// The query is one regular expression over the name (or path with -p).
    #[arg(short = 'r', long)]
    pub regex: bool,
    /// Match text terms against the full path instead of the name.
    #[arg(short = 'p', long)]
    pub full_path: bool,
    /// Show at most N results (leave it out for all).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::common::count)]
    pub limit: Option<usize>,
    /// Skip the first N results (for paging with --limit).
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "count",
          allow_negative_numbers = true, value_parser = crate::common::count)]
    pub offset: usize,
    /// Print only the number of matches.
    #[arg(long)]
    pub count: bool,
    /// Sort the results (default: index order, which is fastest).
    #[arg(long, value_enum)]
    pub sort: Option<SortArg>,
    /// Reverse the order.
    #[arg(long)]
    pub reverse: bool,
    /// Include deleted entries (from an index built with --deleted).
    #[arg(long)]
    pub deleted: bool,
    /// Include named data streams.
    #[arg(long)]
    pub streams: bool,
    /// Count the matches per group instead of listing them: their number and total size per extension,
    /// folder, year or month modified, attribute letter, or size bucket.
    #[arg(long, value_enum, value_name = "GROUP", conflicts_with_all = ["count", "stats"])]
    pub facet: Option<FacetArg>,
    /// With --facet ext or folder: show the N largest groups (by count; default 25; 0 for all).
    #[arg(long, value_name = "N", requires = "facet")]
    pub top: Option<usize>,
    /// Print totals of the matches instead of listing them: how many, files and folders, total and allocated
    /// size, and the earliest and latest of each time.
    #[arg(long, conflicts_with = "count")]
    pub stats: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Set by `uffs du`: list folder sizes instead (sent to the daemon with the query).
    #[arg(skip)]
    pub du: Option<crate::du_cmd::DuRequest>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum FacetArg {
    Ext,
    Folder,
    Year,
    Month,
    Attrib,
    SizeBucket,
}

#[derive(Debug, Clone, Copy, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum SortArg {
    Name,
    Path,
    Size,
    #[value(alias = "ext")]
    Extension,
    Created,
    Modified,
    Accessed,
    /// A folder's recursive size (hard links once), a file's size.
    Treesize,
}

impl From<SortArg> for SortKey {
    fn from(s: SortArg) -> SortKey {
        match s {
            SortArg::Name => SortKey::Name,
            SortArg::Path => SortKey::Path,
            SortArg::Size => SortKey::Size,
            SortArg::Extension => SortKey::Extension,
            SortArg::Created => SortKey::Created,
            SortArg::Modified => SortKey::Modified,
            SortArg::Accessed => SortKey::Accessed,
            SortArg::Treesize => SortKey::TreeSize,
        }
    }
}

pub fn now_filetime() -> u64 {
    uffs_index::time::now()
}

pub fn run(a: &SearchArgs) -> Result<bool> {
    if a.index.is_none() && a.source.is_none() {
        return crate::daemon_cmd::query(a);
    }
    let now = now_filetime();
    let expr = build_query(a, now)?;
    let parts = match (&a.index, &a.source) {
        (Some(f), _) => {
            // Opened in O(1): what the query reads is checked before anything is printed.
            let parts = crate::common::open_index_file(f)?;
            if a.deleted && !parts[0].index.meta.has_deleted {
                bail!(
                    "{} was built without deleted entries; rebuild it with `uffs index --deleted`",
                    f.display()
                );
            }
            parts
        }
        (None, Some(s)) => load_indexes(s, a.partition, a.deleted)?,
        (None, None) => unreachable!("handled above"),
    };
    let targets: Vec<(String, Searcher)> = crate::common::searchers(parts);
    let refs: Vec<(&str, &Searcher)> = targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let mut out = output::Printer::new(&a.output)?;
    let found = search_and_print(&refs, a, &expr, &mut out)?;
    // A query that found nothing leaves no -o file (its temporary one goes with the printer; a count still
    // writes its 0).
    if found > 0 || a.count || a.output.output.is_none() {
        out.finish()?;
    }
    Ok(found > 0)
}

/// The targets of the volumes `--volume` names (all when it names none). A volume's name is its path prefix
/// without the colon (`C`, `data`, `@2`); an unknown name is an error that lists the names.
pub fn pick_volumes<'a>(
    targets: &[(&'a str, &'a Searcher)],
    names: &[String],
) -> Result<Vec<(&'a str, &'a Searcher)>> {
    if names.is_empty() {
        return Ok(targets.to_vec());
    }
    let name = |prefix: &str| prefix.trim_end_matches(':').to_string();
    for n in names {
        if !targets
            .iter()
            .any(|(p, _)| name(p).eq_ignore_ascii_case(n.trim_end_matches(':')))
        {
            let mut known: Vec<String> = targets.iter().map(|(p, _)| name(p)).collect();
            known.dedup();
            known.retain(|k| !k.is_empty());
            if known.is_empty() {
                bail!("no volume named {n:?}: this search has one volume, without a name");
            }
            bail!(
                "no volume named {n:?}; the volumes are: {}",
                known.join(", ")
            );
        }
    }
    Ok(targets
        .iter()
        .filter(|(p, _)| {
            names
                .iter()
                .any(|n| name(p).eq_ignore_ascii_case(n.trim_end_matches(':')))
        })
        .copied()
        .collect())
}

/// Runs `expr` on every volume (those `--volume` picks) and prints the hits (or their count) with `out`;
/// returns how many matched.
pub fn search_and_print(
    targets: &[(&str, &Searcher)],
    a: &SearchArgs,
    expr: &Expr,
    out: &mut output::Printer<'_>,
) -> Result<usize> {
    let picked = pick_volumes(targets, &a.volumes)?;
    let targets = &picked[..];
    if let Some(du) = &a.du {
        return crate::du_cmd::print(targets, du, out);
    }
    if a.facet.is_some() || a.stats {
        return crate::facet_cmd::print(targets, a, expr, out);
    }
    let key = a.sort.map(SortKey::from);
    let (found, hits) = search_targets(targets, a, expr, key)?;
    // An index opened without checking its data (a one-shot query): check what the search read and what
    // printing the hits will read, before anything is printed. (The daemon's indexes were checked at load.)
    for (t, (_, s)) in targets.iter().enumerate() {
        if !s.index().needs_check() {
            continue;
        }
        if !a.count {
            let ids: Vec<EntryId> = hits.iter().filter(|h| h.0 == t).map(|h| h.1).collect();
            s.index().touch_rows(&ids);
            if out.reads_timeline() {
                s.index().touch_timeline(&ids);
                s.index()
                    .touch_rows(&uffs_results::bodyfile::neighbours(s.index(), &ids));
            }
        }
        s.index().verify_touched()?;
    }
    if a.count {
        out.count(found)?;
        return Ok(found);
    }
    // Runs of hits from one target are printed together.
    let mut start = 0;
    while start < hits.len() {
        let t = hits[start].0;
        let end = start + hits[start..].iter().take_while(|h| h.0 == t).count();
        let ids: Vec<EntryId> = hits[start..end].iter().map(|h| h.1).collect();
        out.rows(targets[t].1, targets[t].0, &ids)?;
        start = end;
    }
    Ok(found)
}

/// Runs `expr` on every target (volumes, and the parts of a volume under a delta): how many matched, and the
/// hits to show as (target, entry), in order: several targets sorted by a key are merged by that key;
/// unsorted, they follow one another. Nothing when `a.count`.
pub fn search_targets(
    targets: &[(&str, &Searcher)],
    a: &SearchArgs,
    expr: &Expr,
    key: Option<SortKey>,
) -> Result<(usize, Vec<(usize, EntryId)>)> {
    use rayon::prelude::*;
    let sets = search_sets(targets, a, expr)?;
    // Counted side by side: each count reads a whole set (22 sets of 150 KB at 26 million entries). One set is
    // counted here: a one-shot query that needs no other thread starts none.
    let found = match &sets[..] {
        [one] => one.count(),
        _ => sets.par_iter().map(uffs_query::Bitset::count).sum(),
    };
    // The first `offset` hits are found like the others and dropped at the end.
    let wanted = a.limit.map(|l| l.saturating_add(a.offset));
    let mut hits: Vec<(usize, Vec<EntryId>)> = Vec::with_capacity(targets.len());
    for (t, ((_, s), set)) in targets.iter().zip(&sets).enumerate() {
        if a.count {
            continue;
        }
        // Unsorted, the targets follow one another, so the limit left shrinks; sorted, each gives its best.
        let limit = match key {
            None => wanted.map(|l| l.saturating_sub(hits.iter().map(|h| h.1.len()).sum())),
            Some(_) => wanted,
        };
        hits.push((t, s.sorted(set, key, a.reverse, limit)));
    }
    let mut all: Vec<(usize, EntryId)> = hits
        .iter()
        .flat_map(|(t, ids)| ids.iter().map(move |&id| (*t, id)))
        .collect();
    if let Some(k) = key {
        if hits.iter().filter(|h| !h.1.is_empty()).count() > 1 {
            if k == SortKey::Path {
                // By volume, then by path name by name, as each target's own path order is.
                all.sort_by_cached_key(|&(t, id)| {
                    let (prefix, s) = targets[t];
                    let mut path = Vec::new();
                    uffs_query::path_blocks::path_key(s.index(), id, &mut path);
                    let mut v = Vec::with_capacity(prefix.len() + 1 + path.len());
                    uffs_index::paths::fold_into(prefix.as_bytes(), &mut v);
                    v.push(0);
                    v.extend_from_slice(&path);
                    v
                });
            } else {
                all.sort_by(|&x, &y| order(targets, k, x, y));
            }
            if a.reverse {
                all.reverse();
            }
            all.truncate(wanted.unwrap_or(usize::MAX));
        }
    }
    all.drain(..a.offset.min(all.len()));
    Ok((found, all))
}

/// The entries of every target matching `expr`.
pub fn search_sets(
    targets: &[(&str, &Searcher)],
    a: &SearchArgs,
    expr: &Expr,
) -> Result<Vec<uffs_query::Bitset>> {
    let opts = SearchOptions {
        include_deleted: a.deleted,
        include_streams: a.streams,
    };
    for (prefix, s) in targets {
        if a.deleted && !s.index().meta.has_deleted {
            bail!(
                "volume {prefix} was indexed without deleted entries; add it again with --deleted"
            );
        }
    }
    // The volumes are searched at once: a selective query spends most of its time per volume on one thread.
    // (One volume is searched on this thread, which starts no others unless the search needs them.)
    use rayon::prelude::*;
    if let [(_, s)] = targets {
        return Ok(vec![s.search(expr, &opts)]);
    }
    Ok(targets
        .par_iter()
        .map(|(_, s)| s.search(expr, &opts))
        .collect())
}

/// How two hits of different targets order by `key` (within one target the searcher's own order is used):
/// by the key's number, then by folded name, which the search aids hold (nothing is allocated). Not for paths.
fn order(
    targets: &[(&str, &Searcher)],
    key: SortKey,
    (ta, a): (usize, EntryId),
    (tb, b): (usize, EntryId),
) -> std::cmp::Ordering {
    let (sa, sb) = (targets[ta].1, targets[tb].1);
    let (xa, xb) = (sa.aids(), sb.aids());
    let (ia, ib) = (sa.index(), sb.index());
    let by_name = || ia.folded_name(a).cmp(ib.folded_name(b));
    match key {
        SortKey::Name | SortKey::Path => by_name(),
        SortKey::Extension => xa
            .ext(xa.ext_id.get(a))
            .cmp(xb.ext(xb.ext_id.get(b)))
            .then_with(by_name),
        SortKey::Size => ia.size(a).cmp(&ib.size(b)).then_with(by_name),
        SortKey::Created => ia.created(a).cmp(&ib.created(b)).then_with(by_name),
        SortKey::Modified => ia.modified(a).cmp(&ib.modified(b)).then_with(by_name),
        SortKey::Accessed => ia.accessed(a).cmp(&ib.accessed(b)).then_with(by_name),
        SortKey::TreeSize => sa.tree_size(a).cmp(&sb.tree_size(b)).then_with(by_name),
    }
}

pub fn build_query(a: &SearchArgs, now: u64) -> Result<Expr> {
    let text = a.query.join(" ");
    let case = if a.case_sensitive {
        Some(true)
    } else if a.ignore_case {
        Some(false)
    } else {
        None
    };
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
            bail!("--glob and --regex need a pattern");
        }
        let case_sensitive = case.unwrap_or_else(|| text.chars().any(char::is_uppercase));
        let pattern = if a.regex {
            regex::RegexBuilder::new(&text)
                .case_insensitive(!case_sensitive)
                .build()
                .map_err(|e| anyhow!("bad regular expression {text:?}: {e}"))?;
            Pattern::Regex(text.clone())
        } else if case_sensitive {
            Pattern::Wildcard(text.clone())
        } else {
            Pattern::Wildcard(uffs_index::paths::fold(&text))
        };
        let m = TextMatch {
            pattern,
            path: a.full_path,
            case_sensitive,
            whole_word: false,
        };
        parts.push(term(TermKind::Text(m), None));
    } else {
        let mut e = parse(&text, &ParseOptions { now, case })
            .map_err(|e| anyhow!("bad query: {}", e.render(&text)))?;
        if a.full_path {
            set_path(&mut e);
        }
        parts.push(e);
    }
    if !a.extension.is_empty() {
        let exts = a
            .extension
            .iter()
            .map(|e| uffs_index::paths::fold(e.trim_start_matches('.')))
            .collect();
        parts.push(term(TermKind::Ext(exts), None));
    }
    if let Some(k) = &a.kind {
        let only = if k.starts_with('f') {
            KindFilter::File
        } else {
            KindFilter::Folder
        };
        parts.push(term(TermKind::Any, Some(only)));
    }
    for s in &a.size {
        parts.push(term(TermKind::Size(fd_size(s)?), None));
    }
    if let Some(w) = &a.changed_within {
        parts.push(term(
            TermKind::Date {
                field: DateField::Modified,
                from: when(w, now)?,
                to: u64::MAX,
            },
            None,
        ));
    }
    if let Some(w) = &a.changed_before {
        parts.push(term(
            TermKind::Date {
                field: DateField::Modified,
                from: 0,
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
fn fd_size(s: &str) -> Result<Cmp> {
    let bad = || anyhow!("bad --size {s:?}: use +10M (at least), -1k (at most) or 4096 (exactly)");
    let (sign, v) = match s.as_bytes().first() {
        Some(b'+') => ('+', &s[1..]),
        Some(b'-') => ('-', &s[1..]),
        _ => ('=', s),
    };
    let q = format!("size:{v}");
    let e = parse(&q, &ParseOptions { now: 0, case: None }).map_err(|_| bad())?;
    let Expr::Term(Term {
        kind: TermKind::Size(c),
        ..
    }) = e
    else {
        return Err(bad());
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
fn when(s: &str, now: u64) -> Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if split > 0 && split < t.len() && !t[split..].contains('-') {
        let n: u64 = t[..split].parse()?;
        let secs = match t[split..].trim() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 7 * 86_400,
            "month" | "months" => 30 * 86_400,
            "y" | "year" | "years" => 365 * 86_400,
            u => bail!("unknown time unit {u:?} in {s:?} (use s, min, h, d, weeks, months, y)"),
        };
        return Ok(now.saturating_sub(n * secs * TICKS_PER_SECOND));
    }
    let p: Vec<&str> = t.split('-').collect();
    let num = |i: usize| p.get(i).and_then(|x| x.parse::<u32>().ok());
    match (p.len(), num(0), num(1), num(2)) {
        (3, Some(y), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => {
            Ok(from_civil_date(i64::from(y), m, d))
        }
        _ => bail!("bad time {s:?}: use a duration like 2weeks or a date like 2024-05-01"),
    }
}
