//! Times a volume does not keep (FILETIME 0: ext2's birth time, FAT's change time): sorted after every known time
//! in both directions, by every way a sort picks its rows (a walk of the stored order, a sampled threshold, a
//! heap, a whole sort), and matched by no date term but `unknown`, in the engine as in the reference matcher.

use std::sync::Arc;

use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamSizes};
use uffs_index::time::{from_civil_date, FIRST_KNOWN, TICKS_PER_SECOND, UNKNOWN};
use uffs_index::{BuildOptions, Builder, EntryId, Index, VolumeMeta};
use uffs_query::{parse, reference, Bitset, ParseOptions, SearchOptions, Searcher, SortKey};

/// `n` files in one folder: every third has no creation time, every fifth no access time, and one was created
/// on the first known tick (1601-01-01, 100 ns after the unknown time); the others' times grow with their number.
fn index(n: u64) -> Index {
    let base = from_civil_date(2020, 1, 1);
    let mut b = RecordBatch::default();
    let mut add = |number: u64, dir: bool, name: &str, parent: u64, times: [u64; 3]| {
        let start = b.text.len() as u32;
        b.text.extend_from_slice(name.as_bytes());
        let n0 = b.names.len() as u32;
        b.names.push(NameInfo {
            parent: parent | 1 << 48,
            namespace: 1,
            text: start..b.text.len() as u32,
            ..Default::default()
        });
        b.records.push(RecordInfo {
            number,
            sequence: 1,
            header_flags: 1 | if dir { 2 } else { 0 },
            std_info: Some(StdInfo {
                created: times[0],
                modified: times[1],
                accessed: times[2],
                attributes: 0x20,
                ..StdInfo::default()
            }),
            data: (!dir).then_some(StreamSizes {
                size: number,
                allocated: 4096,
                ..StreamSizes::default()
            }),
            names: n0..b.names.len() as u32,
            ..Default::default()
        });
    };
    let t = base + TICKS_PER_SECOND;
    add(5, true, ".", 5, [t, t, t]);
    add(16, true, "folder", 5, [t, t, t]);
    for f in 0..n {
        // Descending with the number, so name order and time order differ.
        let at = base + (n - f) * 7 * TICKS_PER_SECOND;
        let created = match f {
            1 => FIRST_KNOWN,
            f if f % 3 == 0 => UNKNOWN,
            _ => at,
        };
        let accessed = if f % 5 == 0 { UNKNOWN } else { at + 3 };
        add(
            17 + f,
            false,
            &format!("file{:05}.txt", f * 7919 % n),
            16,
            [created, at, accessed],
        );
    }
    let meta = VolumeMeta {
        records_total: 17 + n,
        ..VolumeMeta::default()
    };
    let mut builder = Builder::new(meta, BuildOptions::default(), n as usize + 2);
    builder.add_batch(&b);
    builder.finish().0
}

fn time(idx: &Index, key: SortKey, id: EntryId) -> u64 {
    key.time(idx, id).expect("a time key")
}

/// `ids` are `set`'s members with every known time before every unknown one, the known ones in order.
fn check_order(idx: &Index, key: SortKey, desc: bool, ids: &[EntryId], what: &str) {
    let first_unknown = ids
        .iter()
        .position(|&id| time(idx, key, id) == UNKNOWN)
        .unwrap_or(ids.len());
    assert!(
        ids[first_unknown..]
            .iter()
            .all(|&id| time(idx, key, id) == UNKNOWN),
        "{what}: a known time after an unknown one"
    );
    for w in ids[..first_unknown].windows(2) {
        let (a, b) = (time(idx, key, w[0]), time(idx, key, w[1]));
        assert!(if desc { a >= b } else { a <= b }, "{what}: {a} then {b}");
    }
}

fn searchers() -> Vec<(&'static str, Searcher)> {
    let idx = index(40_000);
    let mut with_aids = idx.clone();
    with_aids.add_search_aids();
    vec![
        ("built", Searcher::new(Arc::new(idx))),
        ("with stored orders", Searcher::new(Arc::new(with_aids))),
    ]
}

#[test]
fn unknown_times_sort_last_both_ways() {
    let opts = ParseOptions { now: 0, case: None };
    for (how, s) in searchers() {
        let idx = s.index();
        let all = s.search(&uffs_query::Expr::All, &SearchOptions::default());
        // Everything (the stored order's walk), most (a walk or a threshold), a sparse set (a heap).
        let dense = s.search(&parse("file", &opts).unwrap(), &SearchOptions::default());
        let sparse = s.search(&parse("file0", &opts).unwrap(), &SearchOptions::default());
        for (name, set) in [("all", &all), ("dense", &dense), ("sparse", &sparse)] {
            for key in [SortKey::Created, SortKey::Modified, SortKey::Accessed] {
                for desc in [false, true] {
                    let what = format!("{how} {name} {key:?} desc={desc}");
                    let full = s.sorted(set, Some(key), desc, None);
                    assert_eq!(full.len(), set.count(), "{what}");
                    check_order(idx, key, desc, &full, &what);
                    for l in [1, 10, 100, 1000, 20_000] {
                        let top = s.sorted(set, Some(key), desc, Some(l));
                        assert_eq!(top, full[..l.min(full.len())], "{what} limit={l}");
                    }
                }
            }
        }
        // The unknowns are there, and last.
        let by_created = s.sorted(&all, Some(SortKey::Created), false, None);
        assert_eq!(idx.created(*by_created.last().unwrap()), UNKNOWN, "{how}");
        assert_eq!(idx.created(by_created[0]), FIRST_KNOWN, "{how}");
        let newest_first = s.sorted(&all, Some(SortKey::Created), true, Some(1));
        assert_ne!(idx.created(newest_first[0]), UNKNOWN, "{how}");
    }
}

#[test]
fn no_date_term_but_unknown_matches_an_unknown_time() {
    let now = from_civil_date(2024, 5, 15);
    let opts = ParseOptions { now, case: None };
    for (how, s) in searchers() {
        let idx = s.index();
        let unknown_created: Vec<EntryId> = (0..idx.len() as EntryId)
            .filter(|&id| idx.created(id) == UNKNOWN && idx.name(id).starts_with("file"))
            .collect();
        assert!(unknown_created.len() > 10_000, "{how}");
        let ids = |q: &str| {
            let e = parse(q, &opts).unwrap_or_else(|e| panic!("{q}: {e}"));
            let set: Bitset = s.search(&e, &SearchOptions::default());
            let got: Vec<EntryId> = set.iter().collect();
            assert_eq!(
                got,
                reference::matches(idx, &e, &SearchOptions::default()),
                "{how} {q}: the engine and the reference differ"
            );
            got
        };
        assert_eq!(ids("dc:unknown"), unknown_created, "{how}");
        assert_eq!(ids("datecreated:=unknown"), unknown_created, "{how}");
        for q in [
            "dc:<2100",
            "dc:<=2100",
            "dc:>=1601",
            "dc:1601",
            "dc:1601-01-01",
            "dc:1601..2100",
            "dc:<today",
            "da:<2100",
            "dm:<2100",
        ] {
            let got = ids(q);
            assert!(!got.is_empty(), "{how} {q}");
            assert!(
                got.iter()
                    .all(|&id| { idx.created(id) != UNKNOWN || !q.starts_with("dc:") })
                    && got
                        .iter()
                        .all(|&id| { idx.accessed(id) != UNKNOWN || !q.starts_with("da:") }),
                "{how} {q} matched an unknown time"
            );
        }
        // 1601 is a year like another: its first known tick is in it.
        assert_eq!(ids("dc:1601").len(), 1, "{how}");
        // NOT of a date term is every other entry, the unknown times among them.
        let not_2100: Vec<EntryId> = ids("file !dc:<2100");
        assert_eq!(
            not_2100,
            ids("file dc:unknown"),
            "{how}: every file is before 2100 or unknown"
        );
        assert_eq!(ids("da:unknown").len(), 8_000, "{how}");
        assert!(ids("dm:unknown").is_empty(), "{how}");
        for bad in ["dc:<unknown", "dc:unknown..2024", "dc:>=unknown"] {
            assert!(parse(bad, &opts).is_err(), "{bad}");
        }
    }
}
