//! A request's `facet`: what its matches add up to, per group (extension, folder, year, month, attribute, size
//! bucket) or in all (`totals`, the command line's `--stats`), computed by `uffs_query::facets` without building
//! their paths.

use std::collections::HashMap;

use uffs_query::facets::{self, FacetKey, RawKey, Stats, Tally};
use uffs_query::Expr;
use uffs_results::{full_path, human, thousands, Printer};

use crate::request::{Facet, SearchRequest};
use crate::{Error, Targets};

/// Groups shown by default for the facets that can have very many (extensions, folders).
const DEFAULT_TOP: usize = 25;

/// Prints the groups (or totals) of `expr`'s matches; returns how many matched.
pub fn print(
    targets: &Targets<'_>,
    a: &SearchRequest,
    facet: Facet,
    expr: &Expr,
    contents: Option<&dyn crate::Contents>,
    out: &mut Printer<'_>,
) -> Result<usize, Error> {
    let sets = crate::execute::sets(targets, a, expr, contents)?;
    let found: usize = sets.iter().map(|s| s.count()).sum();
    if facet == Facet::Totals {
        let mut total = Stats::default();
        for ((_, s), set) in targets.iter().zip(&sets) {
            total.merge(&facets::stats(s.index(), set));
        }
        check_read(targets)?;
        print_stats(&total, out)?;
        return Ok(found);
    }
    let key = match facet {
        Facet::Ext => FacetKey::Ext,
        Facet::Folder => FacetKey::Folder,
        Facet::Year => FacetKey::Year,
        Facet::Month => FacetKey::Month,
        Facet::Attrib => FacetKey::Attrib,
        Facet::SizeBucket | Facet::Totals => FacetKey::SizeBucket,
    };
    // Groups of the same label across volumes are one (an extension, a year); folders differ by volume.
    let mut groups: HashMap<String, (RawKey, Tally)> = HashMap::new();
    for ((prefix, s), set) in targets.iter().zip(&sets) {
        let path = |id| full_path(s.index(), prefix, id);
        for (raw, label, t) in facets::facet(s, set, key, &path) {
            groups
                .entry(label)
                .or_insert((raw, Tally::default()))
                .1
                .merge(&t);
        }
    }
    check_read(targets)?;
    let mut rows: Vec<(String, RawKey, Tally)> =
        groups.into_iter().map(|(l, (k, t))| (l, k, t)).collect();
    let by_count = matches!(key, FacetKey::Ext | FacetKey::Folder);
    if by_count {
        rows.sort_by(|x, y| y.2.count.cmp(&x.2.count).then_with(|| x.0.cmp(&y.0)));
        match a.top.unwrap_or(DEFAULT_TOP) {
            0 => {}
            n => rows.truncate(n),
        }
    } else {
        rows.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)));
    }
    let name = facet.column();
    let cells: Vec<(Vec<String>, Vec<String>)> = rows
        .iter()
        .map(|(label, _, t)| {
            let share = if found == 0 {
                0.0
            } else {
                100.0 * t.count as f64 / found as f64
            };
            (
                vec![
                    label.clone(),
                    thousands(t.count),
                    format!("{share:.1}%"),
                    human(t.size),
                    human(t.allocated),
                ],
                vec![
                    label.clone(),
                    t.count.to_string(),
                    format!("{share:.2}"),
                    t.size.to_string(),
                    t.allocated.to_string(),
                ],
            )
        })
        .collect();
    out.records(
        &[name, "count", "share", "size", "allocated"],
        &[false, true, true, true, true],
        &cells,
    )
    .map_err(Error::from)?;
    Ok(found)
}

/// An index opened without checking (a one-shot query): check what the aggregation read before printing.
fn check_read(targets: &Targets<'_>) -> Result<(), Error> {
    for (_, s) in targets {
        if s.index().needs_check() {
            s.index().verify_touched().map_err(Error::failed)?;
        }
    }
    Ok(())
}

fn print_stats(t: &Stats, out: &mut Printer<'_>) -> Result<(), Error> {
    let time = |v: Option<u64>| {
        v.map(|ft| {
            let mut s = String::new();
            uffs_index::time::format_iso(ft, &mut s);
            s
        })
        .unwrap_or_default()
    };
    let mut named: Vec<(&'static str, String, String, bool)> = vec![
        ("count", thousands(t.count), t.count.to_string(), true),
        ("files", thousands(t.files), t.files.to_string(), true),
        ("folders", thousands(t.folders), t.folders.to_string(), true),
        ("size", human(t.size), t.size.to_string(), true),
        (
            "allocated",
            human(t.allocated),
            t.allocated.to_string(),
            true,
        ),
    ];
    let names = [
        ("created_min", "created_max"),
        ("modified_min", "modified_max"),
        ("mft_changed_min", "mft_changed_max"),
        ("accessed_min", "accessed_max"),
    ];
    for ((lo, hi), range) in names.iter().zip(&t.times) {
        let (a, b) = (time(range.map(|r| r.0)), time(range.map(|r| r.1)));
        named.push((lo, a.clone(), a, false));
        named.push((hi, b.clone(), b, false));
    }
    if out.is_tabular() {
        // One line per figure reads better than a row thirteen columns wide.
        let rows: Vec<(Vec<String>, Vec<String>)> = named
            .iter()
            .map(|(n, h, r, _)| {
                (
                    vec![n.to_string(), h.clone()],
                    vec![n.to_string(), r.clone()],
                )
            })
            .collect();
        return Ok(out.records(&["stat", "value"], &[false, true], &rows)?);
    }
    let heads: Vec<&'static str> = named.iter().map(|n| n.0).collect();
    let numeric: Vec<bool> = named.iter().map(|n| n.3).collect();
    let row = (
        named.iter().map(|n| n.1.clone()).collect(),
        named.iter().map(|n| n.2.clone()).collect(),
    );
    Ok(out.records(&heads, &numeric, &[row])?)
}
