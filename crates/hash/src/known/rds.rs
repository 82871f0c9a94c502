//! NIST's National Software Reference Library Reference Data Set (NSRL RDS) in its SQLite form (RDSv3), looked
//! up in place: an RDS is tens to hundreds of gigabytes, so nothing of it is loaded; each lookup is one query
//! that SQLite answers from an index.
//!
//! What this relies on, from NIST's published schema (`RDS_<version>_<set>.schema.sql`, shipped in each RDSv3
//! zip; quoted in NIST's "Reference Dataset Version 3" note of 7 February 2022 and in the `schema.sql` of the
//! 2025–2026 "minimal" sets):
//! - the file hashes are in a table or view named `FILE`, with columns `sha256`, `sha1` and `md5` (besides
//!   `crc32`, `file_name`, `file_size`, `package_id`), as upper-case hex strings;
//! - in the current "minimal" sets `FILE` is a table whose primary key is `(sha256, sha1, md5, crc32, file_name,
//!   file_size, package_id)`: SQLite's index for that key answers `sha256 = ?` by a search, but not `sha1 = ?`
//!   or `md5 = ?`, which would each read the whole table; in the 2021–2022 demonstration sets `FILE` is a view
//!   over `METADATA` with `UPPER(...)` columns, which no index answers.
//!
//! So rather than trust a layout, [`Rds::open`] asks SQLite's planner (`EXPLAIN QUERY PLAN`) which of the three
//! columns it can search, and offers only those: on a current RDS, sha256. A database where none can be searched
//! is refused with the index to create. The case of the stored hex is read from one row, not assumed.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, TryLockError};

use rusqlite::{Connection, OpenFlags};

use crate::algo::{Algo, Algos};
use crate::{hex, Error};

/// The first 16 bytes of every SQLite 3 database.
pub(crate) const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// One searchable hash column.
struct Column {
    algo: Algo,
    /// `SELECT 1 FROM "FILE" WHERE "sha256" = ?1 LIMIT 1`.
    sql: String,
    /// Whether its hex is stored upper-case (NIST's is): SQLite compares text byte for byte.
    upper: bool,
}

pub(crate) struct Rds {
    /// A connection per core: a connection serves one thread at a time, and with small files the lookups of every
    /// hashing worker would otherwise queue on one.
    conns: Vec<Mutex<Connection>>,
    columns: Vec<Column>,
    unindexed: Algos,
}

fn sqlite_err(path: &Path) -> impl FnOnce(rusqlite::Error) -> Error + '_ {
    move |source| Error::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

impl Rds {
    pub(crate) fn open(path: &Path) -> Result<Rds, Error> {
        let conn = connect(path)?;
        let not_rds = |reason: String| Error::NotRds {
            path: path.to_path_buf(),
            reason,
        };

        let names: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('FILE')")
            .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect())
            .map_err(sqlite_err(path))?;
        if names.is_empty() {
            return Err(not_rds("it has no table or view named FILE".to_string()));
        }
        let mut columns = Vec::new();
        let mut present = Algos::EMPTY;
        let mut unindexed = Algos::EMPTY;
        // Strongest first: the one looked up first when a file's digests hold several.
        for algo in [Algo::Sha256, Algo::Sha1, Algo::Md5] {
            let Some(name) = names.iter().find(|n| n.eq_ignore_ascii_case(algo.name())) else {
                continue;
            };
            present.insert(algo);
            let quoted = format!("\"{}\"", name.replace('"', "\"\""));
            let sql = format!("SELECT 1 FROM \"FILE\" WHERE {quoted} = ?1 LIMIT 1");
            if !searchable(&conn, &sql).map_err(sqlite_err(path))? {
                unindexed.insert(algo);
                continue;
            }
            let sample: Option<String> = conn
                .query_row(&format!("SELECT {quoted} FROM \"FILE\" LIMIT 1"), [], |r| {
                    r.get(0)
                })
                .map(Some)
                .or_else(|e| {
                    if e == rusqlite::Error::QueryReturnedNoRows {
                        Ok(None)
                    } else {
                        Err(e)
                    }
                })
                .map_err(sqlite_err(path))?;
            let upper = sample.is_none_or(|s| !s.bytes().any(|b| b.is_ascii_lowercase()));
            columns.push(Column { algo, sql, upper });
        }
        if present.is_empty() {
            return Err(not_rds(
                "its FILE has none of the columns sha256, sha1, md5".to_string(),
            ));
        }
        if columns.is_empty() {
            let first = [Algo::Sha256, Algo::Sha1, Algo::Md5]
                .into_iter()
                .find(|&a| unindexed.contains(a))
                .expect("a column is present");
            return Err(Error::RdsUnindexed {
                path: path.to_path_buf(),
                columns: unindexed,
                example: first,
            });
        }
        let mut conns = vec![Mutex::new(conn)];
        let cores = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_CONNECTIONS);
        for _ in 1..cores {
            conns.push(Mutex::new(connect(path)?));
        }
        Ok(Rds {
            conns,
            columns,
            unindexed,
        })
    }

    /// The algorithms it can be searched by.
    pub(crate) fn algos(&self) -> Algos {
        self.columns.iter().map(|c| c.algo).collect()
    }

    /// Columns it has but could only scan (left out of [`Rds::algos`]).
    pub(crate) fn unindexed(&self) -> Algos {
        self.unindexed
    }

    pub(crate) fn contains(&self, algo: Algo, bytes: &[u8]) -> Result<bool, rusqlite::Error> {
        let Some(col) = self.columns.iter().find(|c| c.algo == algo) else {
            return Ok(false);
        };
        let mut text = hex::encode(bytes);
        if col.upper {
            text.make_ascii_uppercase();
        }
        let conn = self.connection();
        let mut stmt = conn.prepare_cached(&col.sql)?;
        stmt.exists([text])
    }

    /// A free connection, or the first one once it is free.
    fn connection(&self) -> MutexGuard<'_, Connection> {
        for c in &self.conns {
            match c.try_lock() {
                Ok(guard) => return guard,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        self.conns[0].lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// At most this many connections, whatever the core count (each holds its own page cache).
const MAX_CONNECTIONS: usize = 16;

/// Each connection's page cache: enough for the upper levels of the index of a few hundred million rows, so
/// a lookup reads few pages below them.
const CACHE_KIB: i64 = 32 * 1024;

fn connect(path: &Path) -> Result<Connection, Error> {
    // No SQLITE_OPEN_URI: a path is a path, even one that starts with `file:`.
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sqlite_err(path))?;
    // A negative cache_size is in KiB.
    conn.pragma_update(None, "cache_size", -CACHE_KIB)
        .map_err(sqlite_err(path))?;
    Ok(conn)
}

/// Whether SQLite answers `sql` by searching an index rather than reading a whole table.
fn searchable(conn: &Connection, sql: &str) -> Result<bool, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let details: Vec<String> = stmt
        .query_map([""], |r| r.get::<_, String>(3))?
        .collect::<Result<_, _>>()?;
    Ok(details.iter().any(|d| d.starts_with("SEARCH"))
        && !details.iter().any(|d| d.starts_with("SCAN")))
}
