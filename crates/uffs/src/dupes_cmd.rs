//! `uffs dupes [QUERY]`: files with the same content. Candidates come from the index grouped by size (hard links
//! of one file are one file); `--by content` (the default) then reads them from the volume: a hash of the first
//! and last 64 KiB splits each group, and a hash of the whole content confirms what is left. Groups print with
//! the bytes they waste, largest first.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use uffs_index::{flags, EntryId};
use uffs_query::Searcher;

use crate::common::{progress_bar, thousands};
use crate::query_cmd::now_filetime;
use uffs_results::{full_path, human, OutputArgs, Printer};
use uffs_search::SearchRequest;

#[derive(clap::Args, Debug)]
pub struct DupesArgs {
    /// Only files matching this query (default: every file).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Ignore files smaller than this (units b k m g t, powers of 1024). Empty files are never duplicates.
    #[arg(long, value_name = "SIZE", default_value = "1")]
    pub min_size: String,
    /// What makes files duplicates: the same size; the same name and size; or the same content (read from the
    /// volume, which must be at hand).
    #[arg(long, value_enum, default_value_t = By::Content)]
    pub by: By,
    /// Search this index file; the content is read from the source it was built from.
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    pub index: Option<PathBuf>,
    /// Index this source first.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
    /// Show at most N groups.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::common::count)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    Size,
    Name,
    Content,
}

/// A file: the target (volume part) and entry of its first link.
type File = (usize, EntryId);

/// Bytes hashed at each end of a file in the first content pass.
const END: u64 = 64 << 10;

pub fn run(a: DupesArgs) -> Result<bool> {
    let (spec, partition) = match (&a.index, &a.source) {
        (Some(f), _) => (f.to_string_lossy().into_owned(), None),
        (None, Some(s)) => (s.clone(), a.partition),
        (None, None) => bail!("uffs dupes needs --index FILE or --source SOURCE"),
    };
    // An index file opens in O(1); what the grouping reads is checked before anything is printed.
    let parts = if crate::common::is_index_file(&spec) {
        crate::common::open_index_file(std::path::Path::new(&spec))?
    } else {
        crate::common::load_indexes(&spec, partition, false)?
    };
    let targets: Vec<(String, Searcher)> = crate::common::searchers(parts);
    let search = SearchRequest::new(a.query.join(" "));
    let expr = uffs_search::compile(&search, now_filetime())?;
    let min = parse_min_size(&a.min_size)?;
    let refs: Vec<(&str, &Searcher)> = targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let sets = uffs_search::execute::sets(&refs, &search, &expr, None)?;

    // Every candidate file as (size, volume and record, target, entry), sorted: runs of one size are the
    // groups, and the links of one file (one volume and record) stand together, the first kept.
    let mut volume = 0u64;
    let mut cands: Vec<(u64, u64, usize, EntryId)> = Vec::new();
    for (t, ((prefix, s), set)) in refs.iter().zip(&sets).enumerate() {
        if t > 0 && *prefix != refs[t - 1].0 {
            volume += 1;
        }
        let idx = s.index();
        cands.extend(set.iter().filter_map(|id| {
            let size = idx.size(id);
            (idx.flags(id) & (flags::DIRECTORY | flags::STREAM) == 0 && size >= min)
                .then(|| (size, volume << 32 | u64::from(idx.record(id)), t, id))
        }));
    }
    {
        use rayon::slice::ParallelSliceMut;
        cands.par_sort_unstable();
    }
    cands.dedup_by_key(|c| (c.0, c.1));
    let mut groups: Vec<(u64, Vec<File>)> = cands
        .chunk_by(|x, y| x.0 == y.0)
        .filter(|g| g.len() > 1)
        .map(|g| (g[0].0, g.iter().map(|c| (c.2, c.3)).collect()))
        .collect();
    drop(cands);
    if a.by == By::Name {
        groups = groups
            .into_iter()
            .flat_map(|(size, files)| {
                split(files, |&(t, id)| refs[t].1.index().folded_name(id).to_vec())
                    .into_iter()
                    .map(move |g| (size, g))
            })
            .collect();
    }
    if a.by == By::Content {
        groups = by_content(&refs, &spec, partition, groups)?;
    }
    groups.sort_by(|x, y| {
        let w = |g: &(u64, Vec<File>)| g.0 * (g.1.len() as u64 - 1);
        w(y).cmp(&w(x)).then_with(|| y.0.cmp(&x.0))
    });
    // The summary counts every group, also those --limit leaves out of the listing.
    let all = Summary {
        groups: groups.len() as u64,
        wasted: groups.iter().map(|(s, f)| s * (f.len() as u64 - 1)).sum(),
    };
    if let Some(l) = a.limit {
        groups.truncate(l);
    }
    for (_, s) in &refs {
        if s.index().needs_check() {
            let ids: Vec<EntryId> = groups.iter().flat_map(|g| &g.1).map(|f| f.1).collect();
            s.index().touch_rows(&ids);
            s.index().verify_touched()?;
        }
    }
    print(&refs, &groups, &all, &a.output)?;
    Ok(!groups.is_empty())
}

/// Every group of duplicates found, and the bytes they waste (each group's size times its copies past the first).
struct Summary {
    groups: u64,
    wasted: u64,
}

fn parse_min_size(s: &str) -> Result<u64> {
    let q = format!("size:>={s}");
    let e = uffs_query::parse(&q, &uffs_query::ParseOptions { now: 0, case: None })
        .map_err(|_| anyhow!("bad --min-size {s:?}: use a size like 1, 4k or 10m"))?;
    match e {
        uffs_query::Expr::Term(uffs_query::ast::Term {
            kind: uffs_query::ast::TermKind::Size(c),
            ..
        }) => Ok(c.min),
        _ => bail!("bad --min-size {s:?}"),
    }
}

/// Splits `files` into the groups of two or more with the same key.
fn split<K: std::hash::Hash + Eq>(files: Vec<File>, key: impl Fn(&File) -> K) -> Vec<Vec<File>> {
    let mut m: HashMap<K, Vec<File>> = HashMap::new();
    for f in files {
        m.entry(key(&f)).or_default().push(f);
    }
    m.into_values().filter(|g| g.len() > 1).collect()
}

/// Keeps the files whose content equals another's: the ends first, then (for files longer than both ends) all
/// of it. Reads in large runs from the volume the index was built from.
fn by_content(
    refs: &[(&str, &Searcher)],
    spec: &str,
    partition: Option<u32>,
    groups: Vec<(u64, Vec<File>)>,
) -> Result<Vec<(u64, Vec<File>)>> {
    // The volume of each target: a source's volumes are in the order its parts are (an index file: its source).
    let src_spec = match refs.first() {
        Some((_, s)) if crate::common::is_index_file(spec) => {
            match crate::common::store_spec(std::path::Path::new(spec)) {
                // A shadow copy kept in an index file: its data is that store's.
                Some((file, n)) => crate::common::store_source(&file, n, &s.index().meta.source)?,
                None => s.index().meta.source.clone(),
            }
        }
        _ => spec.to_string(),
    };
    let src = crate::common::open_source(&src_spec, partition, false).with_context(|| {
        format!("reading contents from {src_spec} (the volume must be at hand for --by content)")
    })?;
    // A capture holds only the data resident in its records: most files' contents are not in it.
    if src.kind == uffs_source::SourceKind::RawMft {
        bail!(
            "{src_spec} is a raw $MFT capture, which holds the records but not the files' contents: \
             compare with --by size or --by name instead"
        );
    }
    let volume_of = |t: usize| -> Result<&uffs_mft::Volume> {
        src.volumes
            .get(crate::contents::volume_of(refs, t))
            .ok_or_else(|| anyhow!("{src_spec} has fewer volumes than its index"))
    };
    let total: u64 = groups
        .iter()
        .map(|(size, files)| files.len() as u64 * (*size).min(2 * END))
        .sum();
    let pb = progress_bar("hashing");
    pb.set_length(total);
    let hash = |f: &File, size: u64, whole: bool| -> Result<u128> {
        let (t, id) = *f;
        let idx = refs[t].1.index();
        let vol = volume_of(t)?;
        let mut r = uffs_mft::content::open_stream(vol, u64::from(idx.record(id)), "")
            .with_context(|| format!("reading {}", full_path(idx, refs[t].0, id)))?;
        let mut h = twox_hash::XxHash3_128::new();
        let mut buf = vec![0u8; (4 << 20).min(size.max(1) as usize)];
        let ranges: Vec<(u64, u64)> = if whole || size <= 2 * END {
            vec![(0, size)]
        } else {
            vec![(0, END), (size - END, size)]
        };
        for (mut at, end) in ranges {
            while at < end {
                let n = ((end - at) as usize).min(buf.len());
                r.read_exact_at(at, &mut buf[..n])
                    .with_context(|| format!("reading {}", full_path(idx, refs[t].0, id)))?;
                h.write(&buf[..n]);
                at += n as u64;
                pb.inc(n as u64);
            }
        }
        Ok(h.finish_128())
    };
    // A file that cannot be read is left out of its group, said, and makes the answer partial (exit 3).
    let mut unreadable = 0u64;
    let mut hash_or_skip = |f: &File, size: u64, whole: bool| match hash(f, size, whole) {
        Ok(h) => Some((h, *f)),
        Err(e) => {
            unreadable += 1;
            eprintln!("uffs: {e:#}");
            None
        }
    };
    let mut out = Vec::new();
    for (size, files) in groups {
        let keyed: Vec<(u128, File)> = files
            .iter()
            .filter_map(|f| hash_or_skip(f, size, false))
            .collect();
        for g in split_keyed(keyed) {
            if size <= 2 * END {
                out.push((size, g));
                continue;
            }
            pb.inc_length(g.len() as u64 * size);
            let whole: Vec<(u128, File)> = g
                .iter()
                .filter_map(|f| hash_or_skip(f, size, true))
                .collect();
            out.extend(split_keyed(whole).into_iter().map(|g| (size, g)));
        }
    }
    pb.finish_and_clear();
    if unreadable > 0 {
        eprintln!("uffs dupes: {unreadable} file(s) could not be read: left out of their groups");
        crate::common::mark_partial();
    }
    Ok(out)
}

fn split_keyed(keyed: Vec<(u128, File)>) -> Vec<Vec<File>> {
    let mut m: HashMap<u128, Vec<File>> = HashMap::new();
    for (k, f) in keyed {
        m.entry(k).or_default().push(f);
    }
    m.into_values().filter(|g| g.len() > 1).collect()
}

fn print(
    refs: &[(&str, &Searcher)],
    groups: &[(u64, Vec<File>)],
    all: &Summary,
    args: &OutputArgs,
) -> Result<()> {
    let mut out = Printer::new(args)?;
    let mut rows = Vec::new();
    for (n, (size, files)) in groups.iter().enumerate() {
        let wasted = size * (files.len() as u64 - 1);
        let mut paths: Vec<String> = files
            .iter()
            .map(|&(t, id)| full_path(refs[t].1.index(), refs[t].0, id))
            .collect();
        paths.sort();
        for p in paths {
            rows.push((
                vec![(n + 1).to_string(), human(*size), human(wasted), p.clone()],
                vec![(n + 1).to_string(), size.to_string(), wasted.to_string(), p],
            ));
        }
    }
    out.records(
        &["group", "size", "wasted", "path"],
        &[true, true, true, false],
        &rows,
    )?;
    out.finish()?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) || args.format.is_none() {
        let shown = if (groups.len() as u64) < all.groups {
            format!(" ({} shown)", thousands(groups.len() as u64))
        } else {
            String::new()
        };
        eprintln!(
            "{} groups of duplicates{shown}, {} wasted",
            thousands(all.groups),
            human(all.wasted)
        );
    }
    Ok(())
}
