//! Content search over one file at a time with ripgrep's libraries, printing for each file exactly the bytes that
//! `rg --no-heading --with-filename --line-number --color never -uu [flags] PATTERN DIR` prints for it when it
//! finds that file by walking `DIR`. The content reader hands files to worker threads; each thread owns a
//! [`Worker`], and a single printer joins the files' outputs with a [`FileSeparator`].
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
//! - `options`: [`Options`], the `rg` flags as data;
//! - `worker`: [`Grep`] (the checked options and compiled pattern) and [`Worker`] (one thread's searcher and
//!   printers), [`Found`];
//! - `separator`: [`FileSeparator`], the `--` that `rg` prints between files when it prints context;
//! - `sink`: the adapters between ripgrep's searcher and printers that count lines or stop at a first match.

mod options;
mod separator;
mod sink;
mod worker;

pub use options::{Binary, Options, Output};
pub use separator::FileSeparator;
pub use worker::{Found, Grep, Worker};

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
