//! What a search looks for and how it prints: the flags of `rg` that `uffs grep` and the query term `content:`
//! take, as plain data. [`Grep::new`](crate::Grep::new) checks them.

/// One search's settings. Every field is named after the `rg` flag it mirrors; [`Default`] is `rg` with no flags
/// (no pattern yet: push at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The patterns, any of which makes a line match: `rg -e A -e B`, or the one positional pattern. Regexes in
    /// the syntax of the `regex` crate, unless `fixed_strings`.
    pub patterns: Vec<String>,
    /// `-F`: the patterns are literal text.
    pub fixed_strings: bool,
    /// `-i`: letters match either case (Unicode simple case folding).
    pub ignore_case: bool,
    /// `-w`: a match must have a non-word character (or the line's edge) on each side.
    pub word: bool,
    /// What is printed for a file: its lines (default), its count (`-c`), or its path (`-l`).
    pub output: Output,
    /// `-B N`, lines printed before each match (`-C N` sets both; `-B` wins over `-C`).
    pub before_context: usize,
    /// `-A N`, lines printed after each match (`-A` wins over `-C`).
    pub after_context: usize,
    /// `-v`: the lines that do not match are the ones printed, counted and listed for.
    pub invert_match: bool,
    /// `-o`: each match is printed on a line of its own, without the rest of its line.
    pub only_matching: bool,
    /// `-m N`: at most N matching lines of each file are printed or counted (its search then stops).
    pub max_count: Option<u64>,
    /// `-n`: each line is prefixed with its number (on by default, as `rg` does when it prints paths).
    pub line_number: bool,
    /// What a NUL byte in a file does.
    pub binary: Binary,
    /// `-E LABEL`: the files' encoding when they have no byte-order mark, as a WHATWG label (`utf-16le`,
    /// `utf-16be`, `latin1`, …); `None` or `auto` is `rg`'s default (UTF-8, or what a BOM says); `none` turns off
    /// BOM sniffing too. A BOM always wins over the label.
    pub encoding: Option<String>,
    /// `-z`: a file whose name ends as a compressed file's does (`.gz`, `.tgz`, `.bz2`, `.tbz2`, `.xz`, `.txz`,
    /// `.zst`, `.zstd`) is searched as what it decompresses to (see [`Compression`](crate::Compression)).
    pub decompress: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            patterns: Vec::new(),
            fixed_strings: false,
            ignore_case: false,
            word: false,
            output: Output::Lines,
            before_context: 0,
            after_context: 0,
            invert_match: false,
            only_matching: false,
            max_count: None,
            line_number: true,
            binary: Binary::Skip,
            encoding: None,
            decompress: false,
        }
    }
}

impl Options {
    /// One pattern, everything else `rg`'s default.
    pub fn new(pattern: impl Into<String>) -> Options {
        Options {
            patterns: vec![pattern.into()],
            ..Options::default()
        }
    }

    /// The query term `content:TEXT` (Everything's), with its modifiers: `case:` (match case; off by default, so
    /// `content:` ignores case like Everything), `wholeword:` and `regex:` (TEXT is a regex, not a substring).
    /// Binary files are searched (`rg -uuu`): a file with NUL bytes still has text in it.
    pub fn content(text: impl Into<String>, case: bool, whole_word: bool, regex: bool) -> Options {
        Options {
            fixed_strings: !regex,
            ignore_case: !case,
            word: whole_word,
            binary: Binary::Search,
            ..Options::new(text)
        }
    }

    /// Sets the context as `-C N` does, both before and after.
    pub fn context(mut self, lines: usize) -> Options {
        self.before_context = lines;
        self.after_context = lines;
        self
    }
}

/// What is printed for each file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// `path:line:text` for each matching line, `path-line-text` for context lines.
    #[default]
    Lines,
    /// `-c`: `path:N`, the number of matching lines, for files with at least one.
    Count,
    /// `-l`: the path of each file with a match.
    FilesWithMatches,
    /// `--json`: rg's JSON lines, a `begin`, each `match` and `context` line and an `end` (with the file's
    /// statistics) for each file with a match; [`json_summary`](crate::json_summary) gives the last line.
    Json,
}

impl Output {
    /// The output that `rg`'s flags ask for: `-c` wins over `-l`, as in rg 13 (rg 14 takes the last one given).
    pub fn from_flags(count: bool, files_with_matches: bool) -> Output {
        if count {
            Output::Count
        } else if files_with_matches {
            Output::FilesWithMatches
        } else {
            Output::Lines
        }
    }
}

/// What a NUL byte does, as `rg` does for files it finds by walking (not for paths named on its command line,
/// which it always searches as with `--binary`). `rg` reads a file in blocks of 64 KiB (of decoded text, for
/// UTF-16), more for a longer line, and looks for NUL in each block before searching it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Binary {
    /// `rg`'s default: the search stops at the first block that holds a NUL, which is not searched. If a block
    /// before it had a match, the lines were printed and the output ends with `path: WARNING: stopped searching
    /// binary file after match (found "\0" byte around offset N)`; `-c` prints nothing for such a file, `-l`
    /// lists it.
    #[default]
    Skip,
    /// `--binary` (or `-uuu`): the whole file is searched, each NUL read as a line end. Lines are printed up to
    /// the first block that holds a NUL; after it, the first match ends the search and the output with `path:
    /// binary file matches (found "\0" byte around offset N)`. `-c` counts every matching line.
    Search,
    /// `-a`: NUL is a byte like any other, and lines are printed whatever they hold.
    Text,
}
