//! The separator `rg` prints between the outputs of two files: `--` when it prints context lines (`-A/-B/-C`), and
//! nothing otherwise (nor ever with `-c` or `-l`). Each [`Worker`](crate::Worker) prints one file without it; the
//! one place that writes the files' outputs in turn puts it in with a [`FileSeparator`].

use std::io::{self, Write};

use crate::{Found, Grep, Output};

/// Writes each file's output after the separator `rg` would print before it. One for the whole output, used by
/// whoever writes the files' outputs in turn (behind a lock if several threads write).
#[derive(Clone, Debug)]
pub struct FileSeparator {
    /// The separator, if this search has one.
    separator: Option<&'static [u8]>,
    /// Whether `rg -j1` (or `--sort`, or one file) is mirrored rather than `rg` with several threads.
    single_threaded: bool,
    /// Whether any file's output was written yet.
    written: bool,
}

impl FileSeparator {
    /// As `rg` prints when it searches with several threads (its default, in whatever order files finish): `--`
    /// before every file's output but the first written.
    pub fn parallel(grep: &Grep) -> FileSeparator {
        FileSeparator::new(grep, false)
    }

    /// As `rg -j1` (or `rg --sort path`) prints: the same, except before a file whose output is only its `binary
    /// file matches` line.
    pub fn single_threaded(grep: &Grep) -> FileSeparator {
        FileSeparator::new(grep, true)
    }

    fn new(grep: &Grep, single_threaded: bool) -> FileSeparator {
        let options = grep.options();
        let context = options.before_context > 0 || options.after_context > 0;
        let separator = (context && options.output == Output::Lines).then_some(&b"--\n"[..]);
        FileSeparator {
            separator,
            single_threaded,
            written: false,
        }
    }

    /// Writes one file's output (what `search_*` appended for it, and what it found) with the separator before it.
    /// An empty output writes nothing.
    pub fn print(&mut self, to: &mut impl Write, found: &Found, output: &[u8]) -> io::Result<()> {
        if output.is_empty() {
            return Ok(());
        }
        if let Some(separator) = self.separator {
            if self.written && !(self.single_threaded && found.only_binary_message) {
                to.write_all(separator)?;
            }
        }
        self.written = true;
        to.write_all(output)
    }
}
