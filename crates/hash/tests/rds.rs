//! NSRL RDS sets, on small databases of the shapes NIST publishes, built here:
//! - the current "minimal" set: a `FILE` table (sha256, sha1, md5, crc32, file_name, file_size, package_id)
//!   whose primary key starts with sha256, hashes in upper-case hex, and the `DISTINCT_HASH` view over it;
//! - the 2021–2022 demonstration set: `FILE` a view over `METADATA` and `PACKAGE_OBJECT` with `UPPER(...)`
//!   columns, which no index serves.
//!
//! The table and column names, the key and the views follow NIST's published `schema.sql`; the rows are made up.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use uffs_hash::known::Kind;
use uffs_hash::{Algo, Algos, Digests, Error, Hasher, KnownSet, KnownSets};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("uffs-hash")
        .join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// The "minimal" RDSv3 layout (NIST's `RDS_<version>_modern_minimal.schema.sql`).
const MINIMAL_SCHEMA: &str = "
CREATE TABLE FILE (
    sha256     VARCHAR NOT NULL,
    sha1       VARCHAR NOT NULL,
    md5        VARCHAR NOT NULL,
    crc32      VARCHAR NOT NULL,
    file_name  VARCHAR NOT NULL,
    file_size  INTEGER NOT NULL,
    package_id INTEGER NOT NULL,
    CONSTRAINT PK_FILE__FILE PRIMARY KEY (sha256, sha1, md5, crc32, file_name, file_size, package_id)
);
CREATE VIEW DISTINCT_HASH AS SELECT DISTINCT sha256, sha1, md5, crc32 FROM FILE;
CREATE TABLE PKG (package_id INTEGER, name VARCHAR, version VARCHAR, operating_system_id INTEGER,
    manufacturer_id INTEGER, language VARCHAR, application_type VARCHAR);
CREATE TABLE VERSION (version VARCHAR, build_set VARCHAR, build_date TIMESTAMP, release_date TIMESTAMP,
    description VARCHAR);
";

fn contents(i: usize) -> Vec<u8> {
    format!("file number {i}\n").into_bytes()
}

fn hex(d: &Digests, a: Algo, upper: bool) -> String {
    let h = d.hex(a).unwrap();
    if upper {
        h.to_uppercase()
    } else {
        h
    }
}

/// A minimal-layout RDS of the files `contents(0..n)`, each in two packages as real sets have it.
fn minimal_rds(path: &Path, n: usize, upper: bool) {
    let mut conn = Connection::open(path).unwrap();
    conn.execute_batch(MINIMAL_SCHEMA).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut ins = tx
            .prepare("INSERT INTO FILE VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .unwrap();
        for i in 0..n {
            let data = contents(i);
            let d = Hasher::digest(Algos::all(), &data);
            for package in [100 + i as i64 % 7, 200] {
                let (s256, s1, m5) = (
                    hex(&d, Algo::Sha256, upper),
                    hex(&d, Algo::Sha1, upper),
                    hex(&d, Algo::Md5, upper),
                );
                ins.execute(params![
                    s256,
                    s1,
                    m5,
                    "00000000",
                    format!("f{i}.txt"),
                    data.len() as i64,
                    package
                ])
                .unwrap();
            }
        }
        tx.execute("INSERT INTO VERSION VALUES ('2026.03.1', 'modern', '2026-03-01', '2026-03-06', 'synthetic')", []).unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_minimal_rds_is_searched_by_sha256() {
    let dir = scratch("rds-minimal");
    let path = dir.join("RDS_synthetic_modern_minimal.db");
    minimal_rds(&path, 500, true);

    let set = KnownSet::open(&path).unwrap();
    assert_eq!(set.kind(), Kind::Rds);
    // The primary key serves sha256 only; sha1 and md5 would be whole-table scans and are not offered.
    assert_eq!(set.algos(), Algos::from(Algo::Sha256));
    assert_eq!(set.unindexed(), Algos::parse("md5,sha1").unwrap());
    assert_eq!(set.preferred_algo(), Algo::Sha256);
    assert_eq!(set.len(Algo::Sha256), None);

    for i in [0, 1, 250, 499] {
        let d = Hasher::digest(Algos::all(), &contents(i));
        assert!(set.is_known(&d).unwrap(), "file {i}");
        assert!(set
            .contains(Algo::Sha256, d.get(Algo::Sha256).unwrap())
            .unwrap());
        assert!(
            !set.is_known(&Hasher::digest(
                Algos::parse("md5,sha1").unwrap(),
                &contents(i)
            ))
            .unwrap(),
            "md5/sha1 are not searched"
        );
    }
    for i in [500, 10_000] {
        assert!(
            !set.is_known(&Hasher::digest(Algos::all(), &contents(i)))
                .unwrap(),
            "file {i} is not in it"
        );
    }

    // A caller computing md5 alone learns it must add sha256 for this set.
    let mut sets = KnownSets::new();
    sets.push(set);
    assert_eq!(sets.unusable(Algos::from(Algo::Md5)).count(), 1);
    assert_eq!(
        sets.algos_to_compute(Algos::from(Algo::Md5)),
        Algos::parse("md5,sha256").unwrap()
    );
}

#[test]
fn an_index_added_to_an_rds_is_used() {
    let dir = scratch("rds-indexed");
    let path = dir.join("rds.db");
    minimal_rds(&path, 50, true);
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE INDEX FILE_md5 ON FILE(md5);")
        .unwrap();
    let set = KnownSet::open(&path).unwrap();
    assert_eq!(set.algos(), Algos::parse("md5,sha256").unwrap());
    assert_eq!(set.unindexed(), Algos::from(Algo::Sha1));
    assert!(set
        .is_known(&Hasher::digest(Algo::Md5, &contents(7)))
        .unwrap());
    assert!(!set
        .is_known(&Hasher::digest(Algo::Md5, &contents(70)))
        .unwrap());
}

#[test]
fn lower_case_hashes_are_found_too() {
    let dir = scratch("rds-lower");
    let path = dir.join("rds.db");
    minimal_rds(&path, 20, false);
    let set = KnownSet::open(&path).unwrap();
    assert!(set
        .is_known(&Hasher::digest(Algo::Sha256, &contents(3)))
        .unwrap());
}

#[test]
fn lookups_from_many_threads() {
    let dir = scratch("rds-threads");
    let path = dir.join("rds.db");
    minimal_rds(&path, 200, true);
    let sets = KnownSets::open([&path]).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let sets = &sets;
            s.spawn(move || {
                for i in (t..400).step_by(4) {
                    let known = sets
                        .is_known(&Hasher::digest(Algo::Sha256, &contents(i)))
                        .unwrap();
                    assert_eq!(known, i < 200, "file {i}");
                }
            });
        }
    });
}

#[test]
fn the_demonstration_layout_without_an_index_is_refused() {
    let dir = scratch("rds-view");
    let path = dir.join("RDS_2021.12.2_curated.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE PACKAGE_OBJECT (package_object_id INTEGER UNIQUE NOT NULL, package_id INTEGER NOT NULL,
             object_id INTEGER UNIQUE NOT NULL, PRIMARY KEY (package_object_id));
         CREATE TABLE METADATA (metadata_id NUMERIC UNIQUE NOT NULL, object_id INTEGER, file_name VARCHAR NOT NULL,
             extension VARCHAR DEFAULT '' NOT NULL, bytes INTEGER NOT NULL, crc32 VARCHAR NOT NULL,
             md5 VARCHAR NOT NULL, sha1 VARCHAR NOT NULL, sha256 VARCHAR NOT NULL, PRIMARY KEY (metadata_id));
         CREATE VIEW FILE AS SELECT UPPER(md.sha256) AS sha256, UPPER(md.sha1) AS sha1, UPPER(md.md5) AS md5,
             md.file_name AS file_name, md.bytes AS file_size, po.package_id
             FROM METADATA AS md, PACKAGE_OBJECT AS po WHERE md.object_id = po.object_id;
         INSERT INTO PACKAGE_OBJECT VALUES (1, 10, 1);",
    )
    .unwrap();
    let d = Hasher::digest(Algos::all(), b"x");
    conn.execute(
        "INSERT INTO METADATA VALUES (1, 1, 'x', 'txt', 1, '0', ?1, ?2, ?3)",
        params![d.hex(Algo::Md5), d.hex(Algo::Sha1), d.hex(Algo::Sha256)],
    )
    .unwrap();
    drop(conn);
    match KnownSet::open(&path) {
        Err(e @ Error::RdsUnindexed { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("md5,sha1,sha256")
                    && msg.contains("CREATE INDEX FILE_sha256 ON FILE(sha256)"),
                "{msg}"
            );
        }
        other => panic!("expected RdsUnindexed, got {other:?}"),
    }
}

#[test]
fn other_sqlite_databases_are_not_rds() {
    let dir = scratch("rds-not");
    let path = dir.join("other.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); CREATE TABLE FILE_LIST (sha256);")
        .unwrap();
    assert!(matches!(KnownSet::open(&path), Err(Error::NotRds { .. })));
    let path = dir.join("nohash.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE FILE (name);")
        .unwrap();
    let err = KnownSet::open(&path).unwrap_err();
    assert!(matches!(err, Error::NotRds { .. }), "{err}");
    // A damaged database is an error, not a panic.
    let path = dir.join("damaged.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend(std::iter::repeat_n(0xAB, 5000));
    fs::write(&path, bytes).unwrap();
    assert!(KnownSet::open(&path).is_err());
}
