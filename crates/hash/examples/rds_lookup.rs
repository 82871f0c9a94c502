//! How fast a known-file lookup is: an RDS-shaped SQLite database (NIST's "minimal" layout, a `FILE` table whose
//! primary key starts with sha256) searched through [`KnownSet`], against the same digests held in memory as a
//! hash list, and against one search by a column no index serves (a whole-table scan).
//!
//!     cargo run --release -p uffs-hash --example rds_lookup [ROWS]
//!
//! The database (default 1,000,000 rows) is written under target/ and removed at the end.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use uffs_hash::{Algo, Algos, Digests, Hasher, KnownSet};

fn contents(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

fn per_lookup(n: usize, d: Duration) -> String {
    format!(
        "{:>8.2} µs/lookup {:>10.0} lookups/s",
        d.as_secs_f64() * 1e6 / n as f64,
        n as f64 / d.as_secs_f64()
    )
}

fn main() {
    let rows: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("ROWS"))
        .unwrap_or(1_000_000);
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let db = target.join("uffs-hash-rds-bench.db");
    let list = target.join("uffs-hash-rds-bench.sha256");
    let _ = std::fs::remove_file(&db);

    let t = Instant::now();
    let mut conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
         CREATE TABLE FILE (sha256 VARCHAR NOT NULL, sha1 VARCHAR NOT NULL, md5 VARCHAR NOT NULL,
             crc32 VARCHAR NOT NULL, file_name VARCHAR NOT NULL, file_size INTEGER NOT NULL,
             package_id INTEGER NOT NULL,
             CONSTRAINT PK_FILE__FILE PRIMARY KEY (sha256, sha1, md5, crc32, file_name, file_size, package_id));",
    )
    .unwrap();
    let mut text = Vec::new();
    let tx = conn.transaction().unwrap();
    {
        let mut ins = tx
            .prepare("INSERT INTO FILE VALUES (?1, ?2, ?3, '00000000', ?4, 8, ?5)")
            .unwrap();
        for i in 0..rows {
            let d = Hasher::digest(Algos::parse("md5,sha1,sha256").unwrap(), &contents(i));
            let up = |a| d.hex(a).unwrap().to_uppercase();
            ins.execute(params![
                up(Algo::Sha256),
                up(Algo::Sha1),
                up(Algo::Md5),
                format!("file{i}.dll"),
                (i % 5000) as i64
            ])
            .unwrap();
            writeln!(text, "{}  file{i}.dll", d.hex(Algo::Sha256).unwrap()).unwrap();
        }
    }
    tx.commit().unwrap();
    drop(conn);
    std::fs::write(&list, &text).unwrap();
    let mb = std::fs::metadata(&db).unwrap().len() as f64 / 1e6;
    println!(
        "{rows} rows, {mb:.0} MB database, built in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let rds = KnownSet::open(&db).unwrap();
    println!(
        "searchable by: {} (unindexed: {})",
        rds.algos(),
        rds.unindexed()
    );
    let t = Instant::now();
    let mem = KnownSet::open(&list).unwrap();
    println!(
        "the same {rows} sha256 as a text list: loaded in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    // Lookups of digests already computed: the cost of the set alone.
    let n = 100_000usize;
    let step = (rows / n as u64).max(1);
    let hits: Vec<Digests> = (0..n as u64)
        .map(|k| Hasher::digest(Algo::Sha256, &contents((k * step + 13) % rows)))
        .collect();
    let misses: Vec<Digests> = (0..n as u64)
        .map(|k| Hasher::digest(Algo::Sha256, &contents(rows + k)))
        .collect();
    for (name, set) in [
        ("RDS (SQLite, by index)", &rds),
        ("hash list (in memory)", &mem),
    ] {
        for (what, ds, expect) in [("hits", &hits, true), ("misses", &misses, false)] {
            let t = Instant::now();
            for d in ds {
                assert_eq!(set.is_known(d).unwrap(), expect);
            }
            println!("{name:<24} {what:<7} {}", per_lookup(ds.len(), t.elapsed()));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = Instant::now();
    std::thread::scope(|s| {
        for part in hits.chunks(hits.len().div_ceil(threads)) {
            let rds = &rds;
            s.spawn(move || part.iter().for_each(|d| assert!(rds.is_known(d).unwrap())));
        }
    });
    println!(
        "{:<24} {:<7} {} ({threads} threads)",
        "RDS (SQLite, by index)",
        "hits",
        per_lookup(hits.len(), t.elapsed())
    );

    // What a column without an index would cost: one search reads the whole table.
    let conn = Connection::open(&db).unwrap();
    let t = Instant::now();
    let found: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM FILE WHERE sha1 = 'NONE')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!found);
    println!(
        "one search by sha1 (no index, a whole-table scan): {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(&list);
}
