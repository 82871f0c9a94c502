//! uffs's file hashes: the digests, the formats they are written in, and the known-file sets they are checked
//! against. It reads no files of a volume itself (the content reader hands it each file's bytes) and depends on
//! nothing else of uffs.
//!
//! * [`algo`]: the algorithms (md5, sha1, sha256, xxh3) and the `--algo md5,sha256` lists naming them.
//! * [`hasher`]: [`Hasher`] computes several digests of a stream in one pass; [`Digests`] holds them.
//! * [`format`](mod@format): hashdeep's file format and md5sum/sha1sum/sha256sum lines, byte for byte as those tools write
//!   them, so `hashdeep -a -k` and `sha256sum -c` check what uffs wrote.
//! * [`known`]: known-file sets (hash lists, hashdeep files, NIST NSRL RDS databases) and [`KnownSets`], which
//!   says whether a file's digests are in any of them.
//! * [`term`]: the value of the query term `hash:HEX`.
//!
//! ```
//! use uffs_hash::format::{Hashdeep, Sum};
//! use uffs_hash::{Algo, Algos, Hasher, KnownSet, KnownSets};
//!
//! let algos = Algos::parse("md5,sha256")?;
//! let mut h = Hasher::new(algos);
//! h.update(b"hello\n");
//! let digests = h.finish();
//!
//! // hashdeep's format: a header, then a line per file.
//! let hd = Hashdeep::new(algos)?;
//! let mut out = Vec::new();
//! hd.write_header(&mut out, b"/home/me", "$", &["uffs", "hash", "d"])?;
//! hd.write_file(&mut out, 6, &digests, b"/home/me/d/a.txt")?;
//! assert!(String::from_utf8(out)?.ends_with(
//!     "6,b1946ac92492d2347c6235b4d2611184,\
//!      5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03,/home/me/d/a.txt\n"
//! ));
//!
//! // sha256sum's lines.
//! let mut out = Vec::new();
//! Sum::new(Algo::Sha256).write_file(&mut out, &digests, b"d/a.txt")?;
//! assert_eq!(out, b"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  d/a.txt\n");
//!
//! // A known-file set (`KnownSet::open` takes a path and tells the kind from the content).
//! let list = "b1946ac92492d2347c6235b4d2611184  a.txt\n";
//! let mut known = KnownSets::new();
//! known.push(KnownSet::from_reader("known.md5", list.as_bytes())?);
//! assert!(known.is_known(&digests)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod algo;
pub mod format;
pub mod hasher;
pub mod hex;
pub mod known;
pub mod term;

use std::io;
use std::path::PathBuf;

pub use algo::{Algo, Algos};
pub use hasher::{Digests, Hasher};
pub use known::{KnownSet, KnownSets};
pub use term::HashTerm;

/// What can go wrong naming algorithms, parsing digests or opening known-file sets.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown hash algorithm {name:?}; algorithms are: {known}")]
    UnknownAlgo { name: String, known: &'static str },
    #[error("no hash algorithm given")]
    NoAlgo,
    #[error("hashdeep's format has no {0} column (it has md5, sha1, sha256)")]
    NotInHashdeep(Algo),
    #[error("bad hash {text:?}: {reason}")]
    BadHash { text: String, reason: String },
    #[error("reading {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: not a known-file set: {reason}", path.display())]
    UnknownFormat { path: PathBuf, reason: String },
    /// A text set in which no line held a digest.
    #[error("{}: no digest in this {kind}{}", path.display(), first_bad.as_ref().map(|b| format!(" ({bad_lines} bad lines; line {}: {})", b.line, b.reason)).unwrap_or_default())]
    NoHashes {
        path: PathBuf,
        kind: &'static str,
        bad_lines: u64,
        first_bad: Option<known::BadLine>,
    },
    #[error("{}: reading the SQLite database", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: an SQLite database but not an NSRL RDS: {reason}", path.display())]
    NotRds { path: PathBuf, reason: String },
    /// An RDS whose hash columns have no index: every lookup would read the whole database.
    #[error(
        "{}: no index on the FILE columns {columns}, so each lookup would read the whole database; \
         an index makes it usable, e.g. sqlite3 {} 'CREATE INDEX FILE_{example} ON FILE({example})' \
         (on a FILE view, index the table behind it)",
        path.display(), path.display()
    )]
    RdsUnindexed {
        path: PathBuf,
        columns: Algos,
        example: Algo,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    /// The command hashes on every core and checks each file against the sets from there.
    #[test]
    fn shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::KnownSets>();
        send_sync::<crate::Hasher>();
        send_sync::<crate::Digests>();
        send_sync::<crate::Error>();
    }
}
