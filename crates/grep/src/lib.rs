//! Content search over one file at a time with ripgrep's libraries (`grep-searcher`, `grep-regex`,
//! `grep-printer`), printing for each file exactly the bytes that `rg --no-heading --with-filename --line-number
//! --color never -uu [flags] PATTERN DIR` prints for it when it finds that file by walking `DIR`.
//!
//! The content reader hands files to worker threads. The search is compiled once ([`Grep`], shared by all
//! threads); each thread owns a [`Worker`] and calls [`Worker::search_slice`] for a file in memory or
//! [`Worker::search_reader`] for one it streams; each call appends that file's output to a buffer and returns what
//! it [`Found`]. The query term `content:` ([`Options::content`]) asks [`Worker::is_match_slice`] /
//! [`Worker::is_match_reader`], which stop at the first matching line.
//!
//! # Printing across files
//!
//! A file's output never holds the `--` that `rg` prints *between* files when it prints context lines. Whoever
//! writes the files' outputs in turn (one printer thread, or behind a lock) passes each one to the same
//! [`FileSeparator`]: [`FileSeparator::parallel`] prints what `rg` prints with its default threads (`--` before
//! every file's output but the first), [`FileSeparator::single_threaded`] what `rg -j1` or `rg --sort path` prints
//! (no `--` before a file whose output is only its `binary file matches` line). Files with no output are skipped.
//!
//! ```
//! use uffs_grep::{FileSeparator, Grep, Options};
//!
//! let grep = Grep::new(&Options::new("needle").context(1)).unwrap();
//! let mut worker = grep.worker(); // one per thread; `Grep` is `Clone + Send + Sync`
//! let mut separator = FileSeparator::parallel(&grep); // one for the whole output
//! let mut stdout = Vec::new();
//! for (path, bytes) in [("a.txt", &b"hay\nneedle\n"[..]), ("b.txt", b"x\ny\nneedle\n")] {
//!     let mut out = Vec::new();
//!     let found = worker.search_slice(path, bytes, &mut out).unwrap();
//!     separator.print(&mut stdout, &found, &out).unwrap();
//! }
//! assert_eq!(stdout, b"a.txt-1-hay\na.txt:2:needle\n--\nb.txt-2-y\nb.txt:3:needle\n");
//! ```
//!
//! # Where `rg` itself varies, and rg 13 against these crates
//!
//! The reference is Debian's rg 13.0 (grep-searcher 0.1.8, grep-regex 0.1.9, grep-printer 0.1.6); this crate uses
//! grep-searcher 0.1.17, grep-regex 0.1.14 and grep-printer 0.2.2. The tests compare the bytes over every kind of
//! file and flag and find no difference; what is known to differ, or to vary in `rg` itself:
//! - `-c` with `-l`: rg 13 counts, rg 14 takes the flag given last. [`Output::from_flags`] follows rg 13.
//! - `-w`: rg 14 (regex 1.10) fixed rg 13's emulation of word boundaries, which could miss a match after another
//!   on the same line (`-o` shows it) or panic on a pattern that matches the empty string. The lines printed are
//!   the same in every case tested; a pattern that can match the empty string is where they could differ.
//! - A pattern that can match a NUL is an error in rg 14 unless `-a`; rg 13 and this crate accept it.
//! - Unicode tables (case folding, `\w`) are those of the current `regex` crate, newer than rg 13's.
//! - Which matches a file with a NUL past its first 64 KiB prints depends on where `rg`'s blocks fall: rg 13 kept
//!   max(`-A`, `-B`) lines when it moved to the next block, the crate keeps `-B` lines; and a `rg` thread keeps the
//!   larger buffer a long line gave it, so the file's output then depends on the files the thread searched before.
//!   A [`Worker`] prints what `rg` prints for the file searched alone (see `Worker::refresh`).
//!
//! # Modules
//!
//! - `options`: [`Options`], the `rg` flags as data;
//! - `worker`: [`Grep`] (the checked options and compiled patterns) and [`Worker`] (one thread's searchers and
//!   printers), [`Found`];
//! - `separator`: [`FileSeparator`], the `--` between files;
//! - `decompress`: [`Compression`], the decoders of `-z`;
//! - `sink`: the adapters between ripgrep's searcher and printers that count lines or stop at a first match.

mod decompress;
mod options;
mod separator;
mod sink;
mod worker;

pub use decompress::{Compression, DICTIONARY_MAX};
pub use grep_printer::Stats;
pub use options::{Binary, Options, Output};
pub use separator::FileSeparator;
pub use worker::{Found, Grep, Worker};

/// The line `rg --json` ends with: the statistics of all the files searched (their sum over every
/// [`Worker::stats`]) and the time the whole search took, keys in rg's order (sorted).
pub fn json_summary(stats: &Stats, elapsed: std::time::Duration) -> Vec<u8> {
    let duration = |d: std::time::Duration| {
        serde_json::json!({
            "human": format!("{:0.6}s", d.as_secs_f64()),
            "nanos": d.subsec_nanos(),
            "secs": d.as_secs(),
        })
    };
    let summary = serde_json::json!({
        "data": {
            "elapsed_total": duration(elapsed),
            "stats": {
                "bytes_printed": stats.bytes_printed(),
                "bytes_searched": stats.bytes_searched(),
                "elapsed": duration(stats.elapsed()),
                "matched_lines": stats.matched_lines(),
                "matches": stats.matches(),
                "searches": stats.searches(),
                "searches_with_match": stats.searches_with_match(),
            },
        },
        "type": "summary",
    });
    let mut line = summary.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Why a search could not be made or finished.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// [`Options::patterns`] is empty.
    #[error("no pattern given")]
    NoPattern,
    /// A pattern is not a valid regex (or could match a line end): the message is the regex parser's.
    #[error("bad pattern: {0}")]
    Pattern(String),
    /// [`Options::encoding`] names no encoding.
    #[error("unknown encoding {0:?}")]
    Encoding(String),
    /// Reading the file failed (the output holds what was printed before).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
