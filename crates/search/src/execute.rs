//! Running a [`SearchRequest`] over a set of volumes: each searched (at once when there are several), the hits
//! of several volumes merged by the sort key, paged, checked (an index opened without checking its data has what
//! was read checked before anything prints) and printed through the results layer.

use uffs_index::EntryId;
use uffs_query::{Bitset, Expr, SearchOptions, Searcher, SortKey};
use uffs_results::Printer;

use crate::contents::{split, Contents};
use crate::request::SearchRequest;
use crate::{Error, Targets};

/// Runs `req` on `targets` and prints its answer with `out` (which the caller finishes): the number of matches
/// (all of them, not only those printed; for `du`, the folders found). A query with data terms (`content:`,
/// `type:`, `hash:`) is refused: [`run_with`] runs it with a reader of the volumes' data.
pub fn run(
    targets: &Targets<'_>,
    req: &SearchRequest,
    out: &mut Printer<'_>,
) -> Result<usize, Error> {
    run_with(targets, req, out, None)
}

/// [`run`], with `contents` deciding the data terms of the query (see [`crate::contents`]).
pub fn run_with(
    targets: &Targets<'_>,
    req: &SearchRequest,
    out: &mut Printer<'_>,
    contents: Option<&dyn Contents>,
) -> Result<usize, Error> {
    req.check()?;
    let picked = pick_volumes(targets, &req.volumes)?;
    let targets = &picked[..];
    if let Some(du) = &req.du {
        return crate::du::print(targets, du, out);
    }
    let expr = crate::compile(req, uffs_index::time::now())?;
    if let Some(facet) = req.facet {
        return crate::facets::print(targets, req, facet, &expr, contents, out);
    }
    print_rows(targets, req, &expr, contents, out)
}

/// The targets of the volumes `--volume` names (all when it names none). A volume's name is its path prefix
/// without the colon (`C`, `data`, `@2`); an unknown name is an error that lists the names.
pub fn pick_volumes<'a>(
    targets: &[(&'a str, &'a Searcher)],
    names: &[String],
) -> Result<Vec<(&'a str, &'a Searcher)>, Error> {
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
                return Err(Error::BadRequest(format!(
                    "no volume named {n:?}: this search has one volume, without a name"
                )));
            }
            return Err(Error::BadRequest(format!(
                "no volume named {n:?}; the volumes are: {}",
                known.join(", ")
            )));
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

/// Prints the rows of the hits (or their count); returns how many matched.
fn print_rows(
    targets: &Targets<'_>,
    a: &SearchRequest,
    expr: &Expr,
    contents: Option<&dyn Contents>,
    out: &mut Printer<'_>,
) -> Result<usize, Error> {
    let key = a.sort.map(SortKey::from);
    let (found, hits) = hits(targets, a, expr, key, contents)?;
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
        s.index().verify_touched().map_err(Error::failed)?;
    }
    if a.count {
        out.count(found).map_err(Error::from)?;
        return Ok(found);
    }
    // Runs of hits from one target are printed together.
    let mut start = 0;
    while start < hits.len() {
        let t = hits[start].0;
        let end = start + hits[start..].iter().take_while(|h| h.0 == t).count();
        let ids: Vec<EntryId> = hits[start..end].iter().map(|h| h.1).collect();
        if out.wants_types() {
            let contents = contents.ok_or_else(|| {
                Error::Failed(
                    "the type column reads the files' data, and no volume is at hand".into(),
                )
            })?;
            let types = contents.types(t, targets[t].1, &ids)?;
            out.set_types(
                ids.iter()
                    .zip(types)
                    .filter_map(|(&id, ty)| Some((id, ty?))),
            );
        }
        out.rows(targets[t].1, targets[t].0, &ids)
            .map_err(Error::from)?;
        start = end;
    }
    Ok(found)
}

/// Runs `expr` on every target (volumes, and the parts of a volume under a delta): how many matched, and the
/// hits to show as (target, entry), in order: several targets sorted by a key are merged by that key;
/// unsorted, they follow one another. Nothing when `a.count`. Data terms are decided by `contents`.
pub fn hits(
    targets: &Targets<'_>,
    a: &SearchRequest,
    expr: &Expr,
    key: Option<SortKey>,
    contents: Option<&dyn Contents>,
) -> Result<(usize, Vec<(usize, EntryId)>), Error> {
    use rayon::prelude::*;
    let sets = sets(targets, a, expr, contents)?;
    // Counted side by side: each count reads a whole set (22 sets of 150 KB at 26 million entries). One set is
    // counted here: a one-shot query that needs no other thread starts none.
    let found = match &sets[..] {
        [one] => one.count(),
        _ => sets.par_iter().map(Bitset::count).sum(),
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
            // Hits without a value (a time their volume does not keep) last either way, as each target has them.
            all.sort_by_key(|&(t, id)| k.unknown(targets[t].1.index(), id));
            all.truncate(wanted.unwrap_or(usize::MAX));
        }
    }
    all.drain(..a.offset.min(all.len()));
    Ok((found, all))
}

/// The entries of every target matching `expr`: the index answers all but the data terms, which `contents`
/// decides for the entries the rest of the query found (folders have no data: none matches a data term).
pub fn sets(
    targets: &Targets<'_>,
    a: &SearchRequest,
    expr: &Expr,
    contents: Option<&dyn Contents>,
) -> Result<Vec<Bitset>, Error> {
    let (expr, filters) = split(expr.clone())?;
    let mut sets = index_sets(targets, a, &expr)?;
    if filters.is_empty() {
        return Ok(sets);
    }
    let Some(contents) = contents else {
        return Err(Error::BadRequest(
            "content:, type: and hash: read the files' data, which this search cannot reach: search with --index \
             FILE or --source SOURCE (the volume at hand), or through a daemon whose volumes are at hand"
                .into(),
        ));
    };
    for (t, ((prefix, s), set)) in targets.iter().zip(sets.iter_mut()).enumerate() {
        let idx = s.index();
        let ids: Vec<EntryId> = set
            .iter()
            .filter(|&id| idx.kind(id) != uffs_index::EntryKind::Directory)
            .collect();
        let kept = contents.filter(t, prefix, s, ids, &filters)?;
        let mut narrowed = Bitset::empty(set.len());
        for id in kept {
            narrowed.set(id as usize);
        }
        *set = narrowed;
    }
    Ok(sets)
}

/// The entries of every target matching `expr`, which has no data terms.
fn index_sets(targets: &Targets<'_>, a: &SearchRequest, expr: &Expr) -> Result<Vec<Bitset>, Error> {
    let opts = SearchOptions {
        include_deleted: a.deleted,
        include_streams: a.streams,
    };
    for (prefix, s) in targets {
        if a.deleted && !s.index().meta.has_deleted {
            return Err(Error::BadRequest(format!(
                "volume {prefix} was indexed without deleted entries; add it again with --deleted"
            )));
        }
    }
    // The volumes are searched at once: a selective query spends most of its time per volume on one thread.
    // (One volume is searched on this thread, which starts no others unless the search needs them.)
    use rayon::prelude::*;
    // A path with its volume named (`C:\x`, `@vss1:/x`) is each volume's own path, or none of its entries.
    let prefixes: Vec<&str> = targets.iter().map(|(p, _)| *p).collect();
    // Each target's place among the volumes (`fsi:`): an index and the delta over it are one volume.
    let mut distinct: Vec<&str> = Vec::new();
    let scoped: Vec<Option<Expr>> = targets
        .iter()
        .map(|(p, _)| {
            if !distinct.contains(p) {
                distinct.push(p);
            }
            let place = distinct.len() as u64 - 1;
            let others: Vec<&str> = prefixes.iter().copied().filter(|o| o != p).collect();
            let named = crate::scope::for_volume(expr, p, &others);
            crate::scope::at_place(named.as_ref().unwrap_or(expr), place).or(named)
        })
        .collect();
    let expr_of = |t: usize| scoped[t].as_ref().unwrap_or(expr);
    if let [(_, s)] = targets {
        return Ok(vec![s.search(expr_of(0), &opts)]);
    }
    Ok(targets
        .par_iter()
        .enumerate()
        .map(|(t, (_, s))| s.search(expr_of(t), &opts))
        .collect())
}

/// How two hits of different targets order by `key` (within one target the searcher's own order is used):
/// by the key's number, then by folded name, which the search aids hold (nothing is allocated). Not for paths.
fn order(
    targets: &Targets<'_>,
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
