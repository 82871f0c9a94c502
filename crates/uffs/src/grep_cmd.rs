//! `uffs grep PATTERN [QUERY]`: the lines of the files a query selects that match a pattern, with ripgrep's
//! manners (`path:line:text`, `-l`, `-c`, `-i`, `-w`, `-F`, `-e`, `-C N`, `-v`, `-o`, `-m N`, `-q`, `-z`,
//! `--json`, binary files skipped unless asked,
//! UTF-16 by its byte-order mark or `--utf16`). The files are read from the volume in disk order on every core
//! ([`crate::contents`]); each file's lines print together, files in the order they finish, as `rg` does.
//! Exit status as rg's: 0 a match, 1 none, 2 an error (a file that could not be read, even beside matches; with
//! `-q` a match gives 0 all the same).

use std::io::{Seek, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Result};
use uffs_grep::{Binary, FileSeparator, Found, Grep, Options, Output, Worker};
use uffs_mft::content::many::File;
use uffs_query::Searcher;
use uffs_results::full_path;
use uffs_search::SearchRequest;

use crate::contents;

#[derive(clap::Args, Debug)]
pub struct GrepArgs {
    /// The pattern (a regular expression unless -F), then the query that selects the files (default: every
    /// file). With -e, every word is the query.
    #[arg(value_name = "PATTERN [QUERY]")]
    pub words: Vec<String>,
    /// A pattern (repeatable): a line matching any of them matches.
    #[arg(short = 'e', long = "regexp", value_name = "PATTERN")]
    pub patterns: Vec<String>,
    /// The patterns are literal text.
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Letters match either case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Only whole words match.
    #[arg(short = 'w', long = "word-regexp")]
    pub word: bool,
    /// Print each matching file's number of matching lines.
    #[arg(short = 'c', long)]
    pub count: bool,
    /// Print only the paths of matching files.
    #[arg(short = 'l', long = "files-with-matches")]
    pub files_with_matches: bool,
    /// Print (count, list for) the lines that do not match.
    #[arg(short = 'v', long = "invert-match")]
    pub invert_match: bool,
    /// Print each match alone on its line.
    #[arg(short = 'o', long = "only-matching")]
    pub only_matching: bool,
    /// At most N matching lines of each file.
    #[arg(short = 'm', long = "max-count", value_name = "N")]
    pub max_count: Option<u64>,
    /// Print nothing: the exit status says whether a line matched (0, even when some file could not be read,
    /// as rg's -q).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Lines of context after each match.
    #[arg(short = 'A', long, value_name = "N")]
    pub after_context: Option<usize>,
    /// Lines of context before each match.
    #[arg(short = 'B', long, value_name = "N")]
    pub before_context: Option<usize>,
    /// Lines of context before and after each match.
    #[arg(short = 'C', long, value_name = "N")]
    pub context: Option<usize>,
    /// Search binary files too (files with NUL bytes; rg's --binary).
    #[arg(long, conflicts_with = "text")]
    pub binary: bool,
    /// Search binary files as if they were text (rg's -a).
    #[arg(short = 'a', long)]
    pub text: bool,
    /// The files' encoding when they have no byte-order mark (utf-16le, utf-16be, latin1, ...; a BOM always
    /// wins).
    #[arg(short = 'E', long, value_name = "ENCODING", conflicts_with = "utf16")]
    pub encoding: Option<String>,
    /// Search files without a byte-order mark as UTF-16LE (common on Windows): -E utf-16le.
    #[arg(long)]
    pub utf16: bool,
    /// Search compressed files as what they decompress to, by their names' endings as rg -z: .gz .tgz .bz2
    /// .tbz2 .xz .txz .lzma .zst .zstd.
    #[arg(short = 'z', long = "search-zip")]
    pub search_zip: bool,
    /// Print rg's JSON lines: begin, match, context and end messages for each file with a match, then a
    /// summary.
    #[arg(long, conflicts_with_all = ["count", "files_with_matches"])]
    pub json: bool,
    #[command(flatten)]
    pub files: contents::FilesArgs,
}

impl GrepArgs {
    /// The search settings and the query the flags give.
    fn options(&self) -> Result<(Options, String)> {
        let (patterns, query) = if self.patterns.is_empty() {
            match self.words.split_first() {
                Some((p, q)) => (vec![p.clone()], q.join(" ")),
                None => {
                    bail!("uffs grep needs a pattern: uffs grep PATTERN [QUERY], or -e PATTERN")
                }
            }
        } else {
            (self.patterns.clone(), self.words.join(" "))
        };
        let context = self.context.unwrap_or(0);
        let o = Options {
            patterns,
            fixed_strings: self.fixed_strings,
            ignore_case: self.ignore_case,
            word: self.word,
            output: if self.json && !self.quiet {
                Output::Json
            } else {
                Output::from_flags(self.count, self.files_with_matches || self.quiet)
            },
            before_context: self.before_context.unwrap_or(context),
            after_context: self.after_context.unwrap_or(context),
            invert_match: self.invert_match,
            only_matching: self.only_matching,
            max_count: self.max_count,
            line_number: true,
            binary: if self.text {
                Binary::Text
            } else if self.binary {
                Binary::Search
            } else {
                Binary::Skip
            },
            encoding: if self.utf16 {
                Some("utf-16le".into())
            } else {
                self.encoding.clone()
            },
            decompress: self.search_zip,
        };
        Ok((o, query))
    }
}

/// Searches the files; true when a line matched.
pub fn run(a: GrepArgs) -> Result<bool> {
    let started = std::time::Instant::now();
    let (options, query) = a.options()?;
    let grep = Grep::new(&options)?;
    let sel = a.files.select(SearchRequest::new(query), "uffs grep")?;
    let refs: Vec<(&str, &Searcher)> = sel.targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let out = Mutex::new((
        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout()),
        FileSeparator::parallel(&grep),
    ));
    // One searcher per thread, taken from the pool for a file and given back after.
    let pool: Mutex<Vec<Worker>> = Mutex::new(Vec::new());
    let path_of = |hit: usize| {
        let (t, id) = sel.hits[hit];
        full_path(refs[t].1.index(), refs[t].0, id)
    };
    // Set when stdout is closed (`uffs grep … | head`): the reading ends at once, and uffs with it, quietly, as rg.
    let closed = Arc::new(AtomicBool::new(false));
    let (answers, outcome) =
        contents::read_each(&sel, u64::MAX, "searching", &closed, |hits, f| {
            search_every_path(&grep, &pool, hits, &path_of, f, |_, found, buf| {
                if !buf.is_empty() && !a.quiet {
                    let mut o = out.lock().expect("output");
                    let (w, sep) = &mut *o;
                    match sep.print(w, found, buf) {
                        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                            closed.store(true, Ordering::Relaxed)
                        }
                        r => r.map_err(|e| e.to_string())?,
                    }
                }
                Ok(())
            })
        })?;
    if closed.load(Ordering::Relaxed) {
        return Ok(true);
    }
    let mut w = out.into_inner().expect("output").0;
    if options.output == Output::Json {
        let mut stats = uffs_grep::Stats::new();
        for worker in pool.into_inner().expect("pool") {
            stats += worker.stats();
        }
        w.write_all(&uffs_grep::json_summary(&stats, started.elapsed()))?;
    }
    w.flush()?;
    let matched = answers.iter().any(|a| matches!(a, Ok(true)));
    if outcome.failed > 0 {
        // As rg: each file's error was said; the exit status says there were some (2).
        crate::common::mark_partial();
    }
    Ok(matched)
}

/// Searches one file under each of its paths (`hits`, its hard links: `path_of` names each), as `rg` finds and
/// searches it once under every path, and hands `each` what each search found and printed; true when a line
/// matched. The same bytes print nothing under any name when they print nothing under the first, so the file is
/// searched again (rewound) only when the first search printed something.
pub(crate) fn search_every_path(
    grep: &Grep,
    pool: &Mutex<Vec<Worker>>,
    hits: &[usize],
    path_of: &dyn Fn(usize) -> String,
    f: &mut File<'_>,
    mut each: impl FnMut(usize, &Found, &[u8]) -> Result<(), String>,
) -> Result<bool, String> {
    let mut matched = false;
    for (n, &hit) in hits.iter().enumerate() {
        if n > 0 {
            f.rewind().map_err(|e| e.to_string())?;
        }
        let (found, buf) = search_file(grep, pool, &path_of(hit), f)?;
        matched |= found.matched;
        each(hit, &found, &buf)?;
        if buf.is_empty() && !found.matched {
            break;
        }
    }
    Ok(matched)
}

/// Searches one file with a worker from `pool` (a new one when none is free; given back after): what it found,
/// and what `rg` prints for it.
pub(crate) fn search_file(
    grep: &Grep,
    pool: &Mutex<Vec<Worker>>,
    path: &str,
    f: &mut File<'_>,
) -> Result<(Found, Vec<u8>), String> {
    let mut w = pool
        .lock()
        .expect("pool")
        .pop()
        .unwrap_or_else(|| grep.worker());
    let mut buf = Vec::new();
    let found = match f.as_slice() {
        Some(bytes) => w.search_slice(path, bytes, &mut buf),
        None => w.search_seekable(path, &mut *f, &mut buf),
    };
    pool.lock().expect("pool").push(w);
    Ok((found.map_err(|e| e.to_string())?, buf))
}
