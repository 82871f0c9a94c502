//! The compiled search ([`Grep`]) and one thread's means to run it over files ([`Worker`]).
//!
//! `rg` finds files by walking and reads each one through a 64 KiB buffer (it maps only files named on its command
//! line); what it prints for a file with NUL bytes depends on that buffer (see [`Binary`]). A [`Worker`] therefore
//! searches a slice that holds a NUL (or is large) through the same buffered reader, copying it 64 KiB at a time,
//! and reads an `io::Read` in full blocks as a file gives them, whatever sizes the caller's reader returns: the
//! output is the same bytes either way.

use std::io::{self, Read, Seek};
use std::sync::Arc;

use grep_matcher::Matcher;
use grep_printer::{
    JSONBuilder, Standard, StandardBuilder, Stats, Summary, SummaryBuilder, SummaryKind, JSON,
};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Encoding, Searcher, SearcherBuilder, Sink};
use termcolor::NoColor;

use crate::sink::{Counted, FirstMatch};
use crate::{Binary, Compression, Error, Options, Output};

/// The largest file after which a worker's searcher keeps its buffer (see `Worker::refresh`).
const FRESH_MAX: u64 = 32 << 10;

/// The bytes `Worker::may_match_reader` reads at a time: a block and the searcher's work on it stay in the cache.
const BLOCK: usize = 256 << 10;

/// The longest line `Worker::may_match_reader` carries from block to block before it gives up and says "may match".
const CARRY_MAX: usize = 4 << 20;

/// The largest slice searched in place (see `Worker::slice_as_reader`).
const IN_PLACE_MAX: usize = 1 << 20;

/// A checked, compiled search: cheap to clone (one `Arc`), and `Send + Sync`. Each thread searches with its own
/// [`Worker`].
#[derive(Clone, Debug)]
pub struct Grep {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: Options,
    matcher: RegexMatcher,
    /// Configured once; each worker builds its own searcher (and line buffer) from it.
    searcher: SearcherBuilder,
    /// The same for `is_match_*`, without line numbers.
    probe: SearcherBuilder,
    /// `is_match_slice` may look for the strings in place whatever NULs the file holds (see `Grep::plain_probe`).
    plain_probe: bool,
    /// A file whose bytes as they are hold no match has no output (see `Grep::absent_means_nothing`).
    prefilter: bool,
}

impl Grep {
    /// Checks the options and compiles the patterns. A bad regex, an unknown encoding or no pattern at all is an
    /// error that says what is wrong.
    pub fn new(options: &Options) -> Result<Grep, Error> {
        if options.patterns.is_empty() {
            return Err(Error::NoPattern);
        }
        // rg 13's choices (crates/core/args.rs, `matcher_rust`): lines end at `\n`, which no match may span.
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(options.ignore_case)
            .multi_line(true)
            .unicode(true)
            .octal(false)
            .word(options.word)
            .fixed_strings(options.fixed_strings)
            .line_terminator(Some(b'\n'))
            .dot_matches_new_line(false)
            .build_many(&options.patterns)
            .map_err(|e| Error::Pattern(e.to_string()))?;

        let mut builder = SearcherBuilder::new();
        builder
            .line_number(options.line_number)
            .before_context(options.before_context)
            .after_context(options.after_context)
            .invert_match(options.invert_match)
            .max_matches(options.max_count)
            .memory_map(grep_searcher::MmapChoice::never())
            .binary_detection(detection(options.binary));
        match options.encoding.as_deref() {
            None | Some("auto") => {}
            Some("none") => {
                builder.bom_sniffing(false);
            }
            Some(label) => {
                let encoding =
                    Encoding::new(label).map_err(|_| Error::Encoding(label.to_string()))?;
                builder.encoding(Some(encoding));
            }
        }
        // Context stays: the lines it keeps decide where the searcher's blocks fall, as for `rg -l -C N`.
        let mut probe = builder.clone();
        probe.line_number(false);
        Ok(Grep {
            inner: Arc::new(Inner {
                options: options.clone(),
                matcher,
                searcher: builder,
                probe,
                // Inverted, a file whose bytes hold no match is one whose every line matches.
                plain_probe: Grep::plain_probe(options) && !options.invert_match,
                // (`--json` counts only files with output, as rg does: one with no match adds nothing.)
                prefilter: Grep::absent_means_nothing(options) && !options.invert_match,
            }),
        })
    }

    /// Whether `is_match_slice` may look for the patterns in the bytes as they are when the whole file is searched
    /// (`--binary`): they are fixed strings, and the file is UTF-8. `rg` reads each NUL as a line end, but no string
    /// holds a NUL or a line end and either one is a non-word character for `-w`, so the answer is the same; and on
    /// a binary file the search runs at the speed of text (2.6 to 4.8 GB/s against 0.86 in `examples/throughput.rs`)
    /// instead of stopping at every run of NULs. (Not for a reader: a long run of NULs would be one line, held in
    /// memory whole.)
    fn plain_probe(options: &Options) -> bool {
        options.binary == Binary::Search
            && options.fixed_strings
            && options.patterns.iter().all(|p| !p.contains('\0'))
            && matches!(options.encoding.as_deref(), None | Some("auto"))
    }

    /// Whether a file in which the compiled patterns find no match in the bytes as they are, one regex search over
    /// the whole file, prints nothing, so that the line-by-line search need not run. Most files of a volume hold no
    /// match, and the searcher's line handling (and its turning of NULs into line ends for `--binary`, 0.87 GB/s)
    /// is what bounds a search of text and binaries alike; one search of the bytes runs at the speed of the regex's
    /// literal scan. It holds when the bytes are searched as they are (no encoding, no BOM: checked per file) and
    /// no pattern has a line or text anchor: turning NULs into line ends (`--binary`), stopping at the first NUL
    /// (the default) or splitting the bytes into lines only removes matches then, since no match may span a line
    /// end and a NUL and a line end are both non-word bytes for `\b` and `-w`. An anchor (`^foo`) could match
    /// after a NUL turned into a line end, and is searched line by line.
    fn absent_means_nothing(options: &Options) -> bool {
        matches!(options.encoding.as_deref(), None | Some("auto"))
            && (options.fixed_strings
                || options.patterns.iter().all(|p| {
                    regex_syntax::Parser::new()
                        .parse(p)
                        .is_ok_and(|hir| !hir.properties().look_set().contains_anchor())
                }))
    }

    /// The options this search was made from.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// A worker for one thread: its own searcher (a 64 KiB buffer), printers and copy of the compiled patterns.
    /// Make one per thread and keep it; making one costs about as much as searching a small file.
    pub fn worker(&self) -> Worker {
        let options = &self.inner.options;
        let mut lines = StandardBuilder::new();
        lines
            .heading(false)
            .path(true)
            .separator_search(None)
            .separator_context(Some(b"--".to_vec()))
            .only_matching(options.only_matching)
            .max_matches(options.max_count);
        let mut summary = SummaryBuilder::new();
        summary
            .kind(match options.output {
                // Inverted, `-l` is what `-c` finds, printed as the path (`Worker::search`): the summary's own
                // kind lists no file that stops at binary data, which rg 13 lists.
                Output::FilesWithMatches if !options.invert_match => SummaryKind::PathWithMatch,
                // As rg: `-c -o` counts the matches, not the lines.
                _ if options.only_matching => SummaryKind::CountMatches,
                _ => SummaryKind::Count,
            })
            .max_matches(options.max_count)
            .path(true)
            .exclude_zero(true)
            .separator_field(b":".to_vec());
        let json = JSONBuilder::new()
            .max_matches(options.max_count)
            .always_begin_end(false)
            .build(Vec::new());
        Worker {
            grep: self.clone(),
            matcher: self.inner.matcher.clone(),
            searcher: self.inner.searcher.build(),
            probe: self.inner.probe.build(),
            stale: false,
            lines: lines.build_no_color(Vec::new()),
            summary: summary.build_no_color(Vec::new()),
            json,
            stats: Stats::new(),
            block: Vec::new(),
        }
    }
}

/// What the search of one file found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The file counts as matching for `rg`: it makes the exit status 0, and `-l` lists it. False for a file that
    /// `-c` leaves out because it stopped at binary data.
    pub matched: bool,
    /// The matching lines the search saw before it ended (it ends early with `-l`, or at binary data).
    pub lines: u64,
    /// Where the first NUL byte was seen, if one was (in the decoded text, for UTF-16). `None` for a slice with no
    /// match anywhere, which is not searched line by line (see `Grep::absent_means_nothing`).
    pub binary_offset: Option<u64>,
    /// The file's output is only the `binary file matches` line (see [`FileSeparator`](crate::FileSeparator)).
    pub(crate) only_binary_message: bool,
}

/// One thread's searcher and printers. Each `search_*` appends one file's output to `out` and returns what it
/// found; `is_match_*` only says whether a line matches, and stops at the first.
#[derive(Debug)]
pub struct Worker {
    grep: Grep,
    matcher: RegexMatcher,
    searcher: Searcher,
    /// The searcher of `is_match_*`.
    probe: Searcher,
    /// The last file may have grown a searcher's buffer (see `Worker::refresh`).
    stale: bool,
    lines: Standard<NoColor<Vec<u8>>>,
    summary: Summary<NoColor<Vec<u8>>>,
    json: JSON<Vec<u8>>,
    /// What the `--json` searches of this worker added up to.
    stats: Stats,
    /// The bytes of `may_match_reader`.
    block: Vec<u8>,
}

/// Where a file's bytes come from.
enum Source<'a, R> {
    Slice(&'a [u8]),
    Reader(FullReads<R>),
}

impl<R: Read> Source<'_, R> {
    /// Searches the bytes, and says how many there were (or were read before an error).
    fn search<S: Sink<Error = io::Error>>(
        self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: S,
    ) -> (io::Result<()>, u64) {
        match self {
            Source::Slice(bytes) => (
                searcher.search_slice(matcher, bytes, sink),
                bytes.len() as u64,
            ),
            Source::Reader(mut reader) => (
                searcher.search_reader(matcher, &mut reader, sink),
                reader.total,
            ),
        }
    }
}

impl Worker {
    /// Searches one file held in memory, appending to `out` what `rg` prints for it, with `path` as its name.
    pub fn search_slice(
        &mut self,
        path: &str,
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Found, Error> {
        if let Some(c) = self.compression(path) {
            return self.search_reader(path, c.decoder(bytes)?, out);
        }
        if self.absent(bytes) {
            return Ok(Found::default());
        }
        if self.slice_as_reader(bytes, self.grep.inner.options.binary) {
            self.search(path, Source::Reader(FullReads::new(bytes)), out)
        } else {
            self.search(path, Source::<&[u8]>::Slice(bytes), out)
        }
    }

    /// Searches one file read from `reader` to its end, appending to `out` what `rg` prints for it. On a read
    /// error, `out` keeps what was printed before it.
    pub fn search_reader(
        &mut self,
        path: &str,
        reader: impl Read,
        out: &mut Vec<u8>,
    ) -> Result<Found, Error> {
        self.search(path, Source::Reader(FullReads::new(reader)), out)
    }

    /// Searches one file read from `reader`, as [`Worker::search_reader`] does, but first reads it once through a
    /// quick whole-block search of its bytes (see `Grep::absent_means_nothing`) and rewinds it only when that finds
    /// a match: most files hold none, and are then read once at the speed of the regex's literal scan instead of
    /// through the searcher's line handling.
    pub fn search_seekable(
        &mut self,
        path: &str,
        mut reader: impl Read + Seek,
        out: &mut Vec<u8>,
    ) -> Result<Found, Error> {
        if let Some(c) = self.compression(path) {
            return self.search_reader(path, c.decoder(reader)?, out);
        }
        if !self.may_match_reader(&mut reader)? {
            return Ok(Found::default());
        }
        reader.rewind()?;
        self.search_reader(path, reader, out)
    }

    /// Whether any line read from `reader` matches, as [`Worker::is_match_reader`] says, with the quick search of
    /// [`Worker::search_seekable`] first.
    pub fn is_match_seekable(&mut self, mut reader: impl Read + Seek) -> Result<bool, Error> {
        if !self.may_match_reader(&mut reader)? {
            return Ok(false);
        }
        reader.rewind()?;
        self.is_match_reader(reader)
    }

    /// False when no line of the file read from `reader` can match: the patterns find nothing in its bytes as
    /// they are. The bytes are searched in blocks cut after a line end, or after a NUL when NULs end lines or the
    /// search (`--binary`, the default): no match spans one, so none is missed at a cut, and both are non-word
    /// bytes as the start of a block is for `\b`. True as soon as a block matches, when a line runs past
    /// `CARRY_MAX` with no cut, at a byte-order mark, or when the options allow no quick search.
    fn may_match_reader(&mut self, reader: &mut impl Read) -> Result<bool, Error> {
        if !self.grep.inner.prefilter {
            return Ok(true);
        }
        let text = self.grep.inner.options.binary == Binary::Text;
        let block = &mut self.block;
        // `block[..carried]` is the end of the last block after its cut; the buffer only grows (no zeroing per read).
        let mut carried = 0;
        let mut first = true;
        loop {
            if block.len() < carried + BLOCK {
                block.resize(carried + BLOCK, 0);
            }
            let n = read_full(reader, &mut block[carried..carried + BLOCK])?;
            let end = carried + n;
            if first && has_bom(&block[..end]) {
                return Ok(true);
            }
            first = false;
            if n == 0 {
                return Ok(end > 0 && !matches!(self.matcher.is_match(&block[..end]), Ok(false)));
            }
            let cut = if text {
                memchr::memrchr(b'\n', &block[..end])
            } else {
                memchr::memrchr2(b'\n', 0, &block[..end])
            };
            let Some(cut) = cut else {
                if end > CARRY_MAX {
                    return Ok(true);
                }
                carried = end;
                continue;
            };
            if !matches!(self.matcher.is_match(&block[..=cut]), Ok(false)) {
                return Ok(true);
            }
            block.copy_within(cut + 1..end, 0);
            carried = end - cut - 1;
        }
    }

    /// Whether any line of the file in memory matches (what `rg -l` says), stopping at the first.
    pub fn is_match_slice(&mut self, bytes: &[u8]) -> Result<bool, Error> {
        if self.absent(bytes) {
            Ok(false)
        } else if self.grep.inner.plain_probe && !has_bom(bytes) {
            self.probe.set_binary_detection(BinaryDetection::none());
            let result = self.is_match(Source::<&[u8]>::Slice(bytes));
            self.probe
                .set_binary_detection(detection(self.grep.inner.options.binary));
            result
        } else if self.slice_as_reader(bytes, self.grep.inner.options.binary) {
            self.is_match(Source::Reader(FullReads::new(bytes)))
        } else {
            self.is_match(Source::<&[u8]>::Slice(bytes))
        }
    }

    /// Whether the file in memory has no output because its bytes hold no match at all: one search of the whole
    /// slice (see `Grep::absent_means_nothing`).
    fn absent(&self, bytes: &[u8]) -> bool {
        self.grep.inner.prefilter
            && !has_bom(bytes)
            && matches!(self.matcher.is_match(bytes), Ok(false))
    }

    /// Whether any line read from `reader` matches (what `rg -l` says), stopping at the first.
    pub fn is_match_reader(&mut self, reader: impl Read) -> Result<bool, Error> {
        self.is_match(Source::Reader(FullReads::new(reader)))
    }

    /// The search this worker runs.
    pub fn grep(&self) -> &Grep {
        &self.grep
    }

    /// What this worker's `--json` searches added up to (for [`json_summary`](crate::json_summary)).
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// How a file is decompressed before it is searched (`-z`), by its name.
    fn compression(&self, path: &str) -> Option<Compression> {
        self.grep
            .inner
            .options
            .decompress
            .then(|| Compression::of(path))
            .flatten()
    }

    /// Whether a slice goes through the buffered reader rather than being searched in place. It must when it holds
    /// a NUL that is not plain text, to be printed as `rg` prints it. A large one had better: the reader's 64 KiB
    /// block stays in the CPU's cache while it is searched and its lines counted, where a search in place reads a
    /// stretch of memory twice for each match (a rare literal over 128 MiB: 4.0 GB/s in place, 7.0 through the
    /// reader). Up to 1 MiB, in place is the faster by the copy it saves (`examples/throughput.rs`, a rare literal
    /// in files of 64 KiB: 5.9 GB/s against 4.6; 1 MiB: 6.1 against 5.6; 4 MiB: 5.5 against 5.6).
    /// `--json` reads every file as rg reads one it finds by walking, so that the bytes it counts are rg's.
    fn slice_as_reader(&self, bytes: &[u8], binary: Binary) -> bool {
        self.grep.inner.options.output == Output::Json
            || bytes.len() > IN_PLACE_MAX
            || binary != Binary::Text && memchr::memchr(0, bytes).is_some()
    }

    /// Gives the searcher a new 64 KiB buffer if the last file may have grown it. `rg` keeps a thread's buffer
    /// as a long line grew it, so that what it prints for a file with a NUL past its first 64 KiB depends on the
    /// files that thread searched before; a worker prints what `rg` prints for the file searched alone. A file
    /// that decodes to less than 64 KiB cannot grow the buffer (UTF-16 decodes to at most 1.5 times its size).
    fn refresh(&mut self) {
        if self.stale {
            self.searcher = self.grep.inner.searcher.build();
            self.probe = self.grep.inner.probe.build();
            self.stale = false;
        }
    }

    fn is_match<R: Read>(&mut self, source: Source<'_, R>) -> Result<bool, Error> {
        let mut sink = FirstMatch::default();
        self.refresh();
        let (result, read) = source.search(&mut self.probe, &self.matcher, &mut sink);
        self.stale = read > FRESH_MAX;
        result?;
        Ok(sink.matched)
    }

    fn search<R: Read>(
        &mut self,
        path: &str,
        source: Source<'_, R>,
        out: &mut Vec<u8>,
    ) -> Result<Found, Error> {
        let start = out.len();
        self.refresh();
        let (result, read, mut found) = match self.grep.inner.options.output {
            Output::Lines => {
                // The printer writes into the caller's buffer, lent to it for this one file.
                std::mem::swap(self.lines.get_mut().get_mut(), out);
                let mut sink = Counted {
                    inner: self.lines.sink_with_path(&self.matcher, path),
                    lines: 0,
                };
                let (result, read) = source.search(&mut self.searcher, &self.matcher, &mut sink);
                let found = Found {
                    matched: sink.inner.has_match(),
                    lines: sink.lines,
                    binary_offset: sink.inner.binary_byte_offset(),
                    only_binary_message: false,
                };
                drop(sink);
                std::mem::swap(self.lines.get_mut().get_mut(), out);
                (result, read, found)
            }
            Output::Count | Output::FilesWithMatches => {
                std::mem::swap(self.summary.get_mut().get_mut(), out);
                let mut sink = Counted {
                    inner: self.summary.sink_with_path(&self.matcher, path),
                    lines: 0,
                };
                let (result, read) = source.search(&mut self.searcher, &self.matcher, &mut sink);
                // Inverted `-l` (counted, see `Grep::worker`): a file is listed when a line before any binary
                // data matched, as rg 13 lists it.
                let listing_inverted = self.grep.inner.options.output == Output::FilesWithMatches
                    && self.grep.inner.options.invert_match;
                let matched = sink.inner.has_match() || listing_inverted && sink.lines > 0;
                let found = Found {
                    matched,
                    lines: if matched { sink.lines } else { 0 },
                    binary_offset: sink.inner.binary_byte_offset(),
                    only_binary_message: false,
                };
                drop(sink);
                std::mem::swap(self.summary.get_mut().get_mut(), out);
                if listing_inverted {
                    out.truncate(start);
                    if matched {
                        out.extend_from_slice(path.as_bytes());
                        out.push(b'\n');
                    }
                }
                (result, read, found)
            }
            Output::Json => {
                std::mem::swap(self.json.get_mut(), out);
                let mut sink = Counted {
                    inner: self.json.sink_with_path(&self.matcher, path),
                    lines: 0,
                };
                let (result, read) = source.search(&mut self.searcher, &self.matcher, &mut sink);
                let found = Found {
                    matched: sink.inner.has_match(),
                    lines: sink.lines,
                    binary_offset: sink.inner.binary_byte_offset(),
                    only_binary_message: false,
                };
                self.stats += sink.inner.stats();
                std::mem::swap(self.json.get_mut(), out);
                (result, read, found)
            }
        };
        self.stale = read > FRESH_MAX;
        result?;
        if let (Some(offset), Output::Lines) = (found.binary_offset, self.grep.inner.options.output)
        {
            found.only_binary_message =
                out[start..] == binary_message(path, offset, self.grep.inner.options.binary);
        }
        Ok(found)
    }
}

/// Whether the bytes begin with a byte-order mark, which makes the searcher decode them.
fn has_bom(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xEF, 0xBB, 0xBF])
        || bytes.starts_with(&[0xFF, 0xFE])
        || bytes.starts_with(&[0xFE, 0xFF])
}

/// The searcher's setting for a `Binary`.
fn detection(binary: Binary) -> BinaryDetection {
    match binary {
        Binary::Skip => BinaryDetection::quit(0),
        Binary::Search => BinaryDetection::convert(0),
        Binary::Text => BinaryDetection::none(),
    }
}

/// The line the printer ends a file with when it saw binary data after a match (`grep-printer`'s wording).
fn binary_message(path: &str, offset: u64, binary: Binary) -> Vec<u8> {
    match binary {
        Binary::Skip => format!(
            "{path}: WARNING: stopped searching binary file after match (found \"\\0\" byte around offset {offset})\n"
        ),
        Binary::Search => format!("{path}: binary file matches (found \"\\0\" byte around offset {offset})\n"),
        Binary::Text => String::new(),
    }
    .into_bytes()
}

/// Reads until `buf` is full or the reader ends; the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A reader whose every read fills the buffer unless the end is reached, as reading a file does: the searcher's
/// blocks then fall where `rg`'s do, whatever sizes the wrapped reader returns. A read error after some bytes were
/// read is returned by the next call. It counts the bytes, for `Worker::refresh`.
struct FullReads<R> {
    reader: R,
    error: Option<io::Error>,
    /// The bytes read so far.
    total: u64,
}

impl<R> FullReads<R> {
    fn new(reader: R) -> FullReads<R> {
        FullReads {
            reader,
            error: None,
            total: 0,
        }
    }
}

impl<R: Read> Read for FullReads<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut filled = 0;
        while filled < buf.len() {
            match self.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if filled == 0 => return Err(e),
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
        self.total += filled as u64;
        Ok(filled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Grep` goes to every thread; a `Worker` may move to one.
    #[test]
    fn grep_is_shared_and_worker_sent() {
        fn shared<T: Send + Sync>() {}
        fn sent<T: Send>() {}
        shared::<Grep>();
        sent::<Worker>();
    }

    /// A reader that returns at most 7 bytes a call, then fails.
    struct Dribble<'a>(&'a [u8], bool);

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() && self.1 {
                return Err(io::Error::other("bad sector"));
            }
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn full_reads_fill_the_buffer_and_keep_the_error_for_later() {
        let data: Vec<u8> = (0..100).collect();
        let mut r = FullReads::new(Dribble(&data, true));
        let mut buf = [0; 64];
        assert_eq!(r.read(&mut buf).unwrap(), 64);
        assert_eq!(r.read(&mut buf).unwrap(), 36);
        assert_eq!(buf[..36], data[64..]);
        assert_eq!(r.read(&mut buf).unwrap_err().to_string(), "bad sector");
    }

    #[test]
    fn a_reader_that_dribbles_prints_as_a_slice_does() {
        let mut text = b"foo 1\n".to_vec();
        text.extend(
            std::iter::repeat_n(b"y".repeat(79).into_iter().chain([b'\n']), 2000).flatten(),
        );
        text.extend(b"foo 2\n\0foo 3\n");
        let grep = Grep::new(&Options::new("foo")).unwrap();
        let mut w = grep.worker();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let fa = w.search_slice("f", &text, &mut a).unwrap();
        let fb = w.search_reader("f", Dribble(&text, false), &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(fa, fb);
        assert!(
            a.starts_with(b"f:1:foo 1\nf: WARNING: stopped searching binary file after match"),
            "{a:?}"
        );
    }

    /// Files larger than a block of the quick search, each with one match: in a line that crosses a block's
    /// end, at the end of a line longer than a block, after a NUL, at the very end. Through `search_seekable`
    /// each prints what the slice prints (the quick search must find that one match), and without it, nothing.
    #[test]
    fn the_quick_search_misses_nothing_at_block_ends() {
        let mut filler = Vec::new();
        for i in 0..3000 {
            filler.extend(vec![b'a'; 100 + i % 7]);
            filler.push(b'\n');
        }
        let crossing = {
            let mut t = filler.clone();
            t.extend(vec![b'b'; BLOCK - t.len() % BLOCK - 4]);
            t.extend(b" needle b\n");
            t.extend(&filler);
            t
        };
        let long_line = {
            let mut t = filler.clone();
            t.extend(vec![b'c'; 2 * BLOCK]);
            t.extend(b" needle\n");
            t.extend(&filler);
            t
        };
        let after_nul = {
            let mut t = filler.clone();
            t.extend(b"x\0needle\n");
            t.extend(&filler);
            t
        };
        let at_end = {
            let mut t = filler.clone();
            t.extend(vec![b'd'; BLOCK]);
            t.extend(b" needle");
            t
        };
        for binary in [Binary::Skip, Binary::Search, Binary::Text] {
            for pattern in ["needle", "ne+dle\\b", "-w"] {
                let mut o = Options::new(if pattern == "-w" { "needle" } else { pattern });
                o.word = pattern == "-w";
                o.binary = binary;
                let grep = Grep::new(&o).unwrap();
                let mut w = grep.worker();
                for (name, bytes) in [
                    ("crossing", &crossing),
                    ("long line", &long_line),
                    ("after a NUL", &after_nul),
                    ("at the end", &at_end),
                ] {
                    let quiet: Vec<u8> = bytes
                        .iter()
                        .map(|&b| if b == b'n' { b'm' } else { b })
                        .collect();
                    for bytes in [bytes, &quiet] {
                        let (mut a, mut b) = (Vec::new(), Vec::new());
                        let fa = w.search_slice("f", bytes, &mut a).unwrap();
                        let fb = w
                            .search_seekable("f", io::Cursor::new(bytes), &mut b)
                            .unwrap();
                        let what = format!("{name}, {pattern}, {binary:?}");
                        assert!(a == b, "{what}: the outputs differ");
                        assert_eq!(fa.matched, fb.matched, "{what}");
                        assert_eq!(
                            w.is_match_seekable(io::Cursor::new(bytes)).unwrap(),
                            w.is_match_slice(bytes).unwrap(),
                            "{what}"
                        );
                    }
                    // Each file has its match (but `rg` stops at the NUL before it, by default).
                    let stops = binary == Binary::Skip && name == "after a NUL";
                    assert!(
                        w.is_match_slice(bytes).unwrap() != stops,
                        "{name}, {pattern}, {binary:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_read_error_is_returned() {
        let grep = Grep::new(&Options::new("foo")).unwrap();
        let mut out = Vec::new();
        let e = grep
            .worker()
            .search_reader("f", Dribble(b"foo\n", true), &mut out)
            .unwrap_err();
        assert!(matches!(e, Error::Io(_)), "{e}");
    }
}
