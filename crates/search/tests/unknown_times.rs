//! Hits of several volumes merged by a time: a time its volume does not keep (FILETIME 0) comes after every known
//! one, with `--reverse` too, as within one volume; fd's `--changed-before` and `--changed-within` match no
//! unknown time; the year facet groups unknown times as `unknown`, after the years.

use std::sync::Arc;

use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamSizes};
use uffs_index::time::{from_civil_date, TICKS_PER_SECOND, UNKNOWN};
use uffs_index::{BuildOptions, Builder, Index, VolumeMeta};
use uffs_query::Searcher;
use uffs_results::{Format, OutputArgs, Printer};
use uffs_search::{Facet, SearchRequest, Sort};

/// A volume of files `NAME0`… with these (created, modified) times.
fn volume(name: &str, times: &[(u64, u64)]) -> Index {
    let mut b = RecordBatch::default();
    let mut add = |number: u64, dir: bool, name: &str, (created, modified): (u64, u64)| {
        let start = b.text.len() as u32;
        b.text.extend_from_slice(name.as_bytes());
        let n0 = b.names.len() as u32;
        b.names.push(NameInfo {
            parent: 5 | 1 << 48,
            namespace: 1,
            text: start..b.text.len() as u32,
            ..Default::default()
        });
        b.records.push(RecordInfo {
            number,
            sequence: 1,
            header_flags: 1 | if dir { 2 } else { 0 },
            std_info: Some(StdInfo {
                created,
                modified,
                attributes: 0x20,
                ..StdInfo::default()
            }),
            data: (!dir).then_some(StreamSizes::default()),
            names: n0..b.names.len() as u32,
            ..Default::default()
        });
    };
    let root = from_civil_date(2000, 1, 1);
    add(5, true, ".", (root, root));
    for (i, &t) in times.iter().enumerate() {
        add(16 + i as u64, false, &format!("{name}{i}"), t);
    }
    let meta = VolumeMeta {
        records_total: 16 + times.len() as u64,
        ..VolumeMeta::default()
    };
    let mut builder = Builder::new(meta, BuildOptions::default(), times.len() + 1);
    builder.add_batch(&b);
    builder.finish().0
}

fn day(d: u32) -> u64 {
    from_civil_date(2024, 5, d) + 12 * 3600 * TICKS_PER_SECOND
}

/// The names a request finds over volumes `a:` and `b:`, in order.
fn names(req: &SearchRequest) -> Vec<String> {
    let mut req = req.clone();
    req.output.columns = vec!["name".into()];
    csv(&req)
        .into_iter()
        .skip(1)
        .filter(|n| *n != ".")
        .collect()
}

/// The CSV lines a request prints over volumes `a:` and `b:`.
fn csv(req: &SearchRequest) -> Vec<String> {
    let a = Searcher::new(Arc::new(volume(
        "a",
        &[(day(3), day(3)), (UNKNOWN, day(4)), (day(1), day(1))],
    )));
    let b = Searcher::new(Arc::new(volume(
        "b",
        &[(UNKNOWN, UNKNOWN), (day(2), day(2)), (day(5), day(5))],
    )));
    let targets = [("a:", &a), ("b:", &b)];
    let mut req = req.clone();
    req.output = OutputArgs {
        format: Some(Format::Csv),
        ..req.output
    };
    let mut out = Vec::new();
    let mut p = Printer::to_writer(Box::new(&mut out), &req.output, false).expect("printer");
    uffs_search::run(&targets, &req, &mut p).expect("search");
    p.finish().expect("finish");
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn merged_volumes_sort_unknown_times_last_both_ways() {
    let by = |sort, reverse, limit| {
        names(&SearchRequest {
            query: "file:".into(),
            sort: Some(sort),
            reverse,
            limit,
            ..SearchRequest::default()
        })
    };
    assert_eq!(
        by(Sort::Created, false, None),
        ["a2", "b1", "a0", "b2", "a1", "b0"]
    );
    assert_eq!(
        by(Sort::Created, true, None),
        ["b2", "a0", "b1", "a2", "b0", "a1"]
    );
    assert_eq!(by(Sort::Created, true, Some(2)), ["b2", "a0"]);
    assert_eq!(
        by(Sort::Created, false, Some(5)),
        ["a2", "b1", "a0", "b2", "a1"]
    );
    assert_eq!(
        by(Sort::Modified, false, None),
        ["a2", "b1", "a0", "a1", "b2", "b0"]
    );
    assert_eq!(
        by(Sort::Modified, true, None),
        ["b2", "a1", "a0", "b1", "a2", "b0"]
    );
}

#[test]
fn fd_time_flags_match_no_unknown_time() {
    let find = |within: Option<&str>, before: Option<&str>| {
        let mut got = names(&SearchRequest {
            query: "file:".into(),
            changed_within: within.map(String::from),
            changed_before: before.map(String::from),
            ..SearchRequest::default()
        });
        got.sort();
        got
    };
    assert_eq!(find(None, Some("2024-05-03")), ["a2", "b1"], "before a day");
    assert_eq!(
        find(Some("5000y"), None),
        ["a0", "a1", "a2", "b1", "b2"],
        "within more years than since 1601"
    );
}

#[test]
fn the_year_facet_puts_unknown_modified_times_in_a_group_of_their_own() {
    let rows = csv(&SearchRequest {
        query: "file:".into(),
        facet: Some(Facet::Year),
        ..SearchRequest::default()
    });
    let groups: Vec<(&str, &str)> = rows
        .iter()
        .skip(1)
        .map(|r| {
            let mut c = r.split(',');
            (c.next().unwrap(), c.next().unwrap())
        })
        .collect();
    assert_eq!(groups, [("2024", "5"), ("unknown", "1")], "{rows:?}");
}
