//! Many queries at once on one searcher whose lazily made parts (visible entries, usage totals, folders, depths,
//! duplicates) are not made yet, run as rayon tasks (as the daemon's search over its volumes runs them): every one
//! answers, and none waits for ever. A searcher once filled those parts under a `OnceLock`'s lock while running
//! rayon tasks, and a pool thread that stole another query of the same searcher then waited for that lock:
//! the soak benchmark found a daemon stuck so.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use rayon::prelude::*;
use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamSizes};
use uffs_index::{BuildOptions, Builder, VolumeMeta};
use uffs_query::{parse, ParseOptions, SearchOptions, Searcher};

/// `n` files in 100 folders below the root: enough entries that making the visible set runs rayon tasks.
fn big_index(n: u64) -> uffs_index::Index {
    let mut b = RecordBatch::default();
    let add = |b: &mut RecordBatch, number: u64, dir: bool, name: &str, parent: u64| {
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
                modified: number,
                attributes: 0x20,
                ..StdInfo::default()
            }),
            data: (!dir).then_some(StreamSizes {
                size: number % 5000,
                allocated: 4096,
                ..StreamSizes::default()
            }),
            names: n0..b.names.len() as u32,
            ..Default::default()
        });
    };
    add(&mut b, 5, true, ".", 5);
    for d in 0..100 {
        add(&mut b, 16 + d, true, &format!("folder{d}"), 5);
    }
    for f in 0..n {
        add(
            &mut b,
            116 + f,
            false,
            &format!("file{}.{}", f % 7000, ["txt", "dll", "log"][f as usize % 3]),
            16 + f % 100,
        );
    }
    let meta = VolumeMeta {
        records_total: 116 + n,
        ..VolumeMeta::default()
    };
    let mut builder = Builder::new(meta, BuildOptions::default(), n as usize + 101);
    builder.add_batch(&b);
    builder.finish().0
}

#[test]
fn many_queries_at_once_on_a_fresh_searcher_all_answer() {
    let idx = Arc::new(big_index(200_000));
    let queries = [
        "ext:dll",
        "file1",
        "dupe:",
        "treesize:>1mb",
        "depth:2",
        "sizedupe: ext:log",
        "*",
        "folder7/",
    ];
    // More pool threads than cores, so that a thread making a part has its tasks stolen while it waits, and
    // steals another query in turn.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .expect("pool"),
    );
    for round in 0..12 {
        // A new searcher each round: nothing made yet.
        let s = Arc::new(Searcher::new(idx.clone()));
        let (tx, rx) = mpsc::channel();
        let worker = {
            let (s, pool) = (s.clone(), pool.clone());
            std::thread::spawn(move || {
                let counts: Vec<usize> = pool.install(|| {
                    (0..64)
                        .into_par_iter()
                        .map(|i| {
                            let q = queries[(i + round) % queries.len()];
                            let e = parse(q, &ParseOptions { now: 0, case: None }).expect("query");
                            s.search(&e, &SearchOptions::default()).count()
                        })
                        .collect()
                });
                let _ = tx.send(counts);
            })
        };
        // A bound to tell a hang from slowness on a loaded machine, not a timing assertion.
        let counts = rx
            .recv_timeout(Duration::from_secs(300))
            .unwrap_or_else(|_| {
                panic!("round {round}: the queries did not all answer: a searcher waits on itself")
            });
        worker.join().expect("worker");
        // The same query answers the same, whichever thread made the parts it read.
        for (i, c) in counts.iter().enumerate() {
            assert_eq!(
                *c,
                counts[i % queries.len()],
                "query {:?}",
                queries[(i + round) % queries.len()]
            );
        }
        assert!(counts.iter().any(|&c| c > 60_000), "{counts:?}");
    }
}
