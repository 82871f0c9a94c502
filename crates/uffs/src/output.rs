//! Printing search results: paths (coloured and escaped on a terminal, or NUL-separated), rows of chosen
//! columns as CSV, TSV, JSON lines or an aligned table, or a body file's rows (see [`crate::bodyfile`]); to
//! stdout or a file.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use uffs_index::{flags, EntryId, EntryKind, Index};
use uffs_query::Searcher;

#[derive(clap::Args, Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct OutputArgs {
    /// When to colour paths: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Separate paths with NUL instead of newlines (for xargs -0).
    #[arg(short = '0', long = "print0")]
    pub print0: bool,
    /// Output format (default: paths).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Columns for csv, tsv, jsonl and table, comma-separated, from: path name kind size allocated created
    /// modified mft_changed accessed attributes record sequence parent_record deleted reparse_tag fn_created
    /// fn_modified fn_mft_changed fn_accessed ext tree_size tree_allocated descendants children (the tree_ columns,
    /// descendants and children: a folder's totals).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub columns: Vec<String>,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Format {
    Paths,
    Csv,
    Tsv,
    Jsonl,
    Table,
    /// The Sleuth Kit's body file (mactime's input).
    Bodyfile,
}

/// Columns beyond `uffs export`'s (which come first).
const EXTRA_COLUMNS: [&str; 5] = [
    "ext",
    "tree_size",
    "tree_allocated",
    "descendants",
    "children",
];

fn all_columns() -> impl Iterator<Item = &'static str> {
    crate::export::COLUMNS
        .iter()
        .chain(EXTRA_COLUMNS.iter())
        .copied()
}
const NUMERIC: [&str; 10] = [
    "size",
    "allocated",
    "record",
    "sequence",
    "parent_record",
    "reparse_tag",
    "tree_size",
    "tree_allocated",
    "descendants",
    "children",
];

pub struct Printer<'a> {
    out: BufWriter<Box<dyn Write + 'a>>,
    format: Format,
    columns: Vec<&'static str>,
    terminal: bool,
    color: bool,
    print0: bool,
    rows: usize,
    header_done: bool,
    /// Table rows are held to align the columns.
    table: Vec<Vec<String>>,
    /// For rows that are not entries: which columns are numbers (aligned right).
    numeric: Vec<bool>,
}

impl<'a> Printer<'a> {
    pub fn new(a: &OutputArgs) -> Result<Printer<'static>> {
        let (out, terminal): (Box<dyn Write>, bool) = match &a.output {
            Some(p) => (
                Box::new(File::create(p).with_context(|| format!("creating {}", p.display()))?),
                false,
            ),
            None => (Box::new(io::stdout()), io::stdout().is_terminal()),
        };
        Printer::to_writer(out, a, terminal)
    }

    /// The colour choice resolved for an output that is (or is not) a terminal: `Auto` becomes `Always` or
    /// `Never` (so a daemon can print for a client's terminal).
    pub fn resolve_color(c: ColorChoice, terminal: bool) -> ColorChoice {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        match c {
            ColorChoice::Auto if terminal && !no_color => ColorChoice::Always,
            ColorChoice::Auto => ColorChoice::Never,
            c => c,
        }
    }

    /// A printer writing to `out`; `terminal` says whether what is written ends on a terminal (control
    /// characters are then escaped).
    pub fn to_writer(
        out: Box<dyn Write + 'a>,
        a: &OutputArgs,
        terminal: bool,
    ) -> Result<Printer<'a>> {
        let color = Printer::resolve_color(a.color, terminal) == ColorChoice::Always;
        let format = a.format.unwrap_or(Format::Paths);
        let mut columns = Vec::new();
        for c in &a.columns {
            let Some(k) = all_columns().find(|k| k.eq_ignore_ascii_case(c.trim())) else {
                let all: Vec<&str> = all_columns().collect();
                bail!("unknown column {c:?}; columns are: {}", all.join(", "));
            };
            columns.push(k);
        }
        if columns.is_empty() {
            columns = match format {
                Format::Table => vec!["path", "kind", "size", "modified"],
                _ => vec!["path", "name", "kind", "size", "modified", "attributes"],
            };
        }
        Ok(Printer {
            out: BufWriter::with_capacity(1 << 16, out),
            format,
            columns,
            terminal,
            color,
            print0: a.print0,
            rows: 0,
            header_done: false,
            table: Vec::new(),
            numeric: Vec::new(),
        })
    }

    /// The column names, once, before the first CSV or TSV row (JSON lines name every field).
    fn header(&mut self, names: &[&str]) -> Result<()> {
        if !self.header_done && self.format != Format::Jsonl {
            let sep = if self.format == Format::Csv {
                ","
            } else {
                "\t"
            };
            self.write((names.join(sep) + "\n").as_bytes())?;
        }
        self.header_done = true;
        Ok(())
    }

    /// Whether rows print as an aligned table (the table and paths formats) rather than CSV, TSV or JSON lines.
    pub fn is_tabular(&self) -> bool {
        matches!(self.format, Format::Table | Format::Paths)
    }

    /// Whether printing reads the entries' timelines (`$FILE_NAME` times), a part of the index no query reads.
    pub fn reads_timeline(&self) -> bool {
        self.format == Format::Bodyfile
            || (self.format != Format::Paths && self.columns.iter().any(|c| c.starts_with("fn_")))
    }

    pub fn count(&mut self, n: usize) -> Result<()> {
        self.write(format!("{n}\n").as_bytes())
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        match self.out.write_all(b) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("writing results"),
        }
    }

    pub fn rows(&mut self, s: &Searcher, prefix: &str, ids: &[EntryId]) -> Result<()> {
        let idx = s.index();
        let mut line = Vec::with_capacity(256);
        for &id in ids {
            line.clear();
            match self.format {
                Format::Paths => self.path_line(idx, prefix, id, &mut line),
                Format::Bodyfile => {
                    let path = full_path(idx, prefix, id);
                    crate::bodyfile::rows(idx, id, path.as_bytes(), idx.timeline(id), &mut line);
                }
                Format::Table => {
                    let cells = self
                        .columns
                        .iter()
                        .map(|c| value(s, prefix, id, c, true))
                        .collect();
                    self.table.push(cells);
                }
                Format::Csv | Format::Tsv | Format::Jsonl => {
                    if !self.header_done {
                        let columns = self.columns.clone();
                        self.header(&columns)?;
                    }
                    self.record_line(s, prefix, id, &mut line);
                }
            }
            self.rows += 1;
            if !line.is_empty() {
                match self.out.write_all(&line) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                    r => r.context("writing results")?,
                }
            }
        }
        Ok(())
    }

    fn path_line(&self, idx: &Index, prefix: &str, id: EntryId, line: &mut Vec<u8>) {
        let path = full_path(idx, prefix, id);
        let style = if !self.color {
            ""
        } else if idx.is_deleted(id) {
            "\x1b[31m"
        } else {
            match idx.kind(id) {
                EntryKind::Directory => "\x1b[1;34m",
                EntryKind::Stream => "\x1b[36m",
                EntryKind::File => "",
            }
        };
        line.extend_from_slice(style.as_bytes());
        if self.terminal && !self.print0 {
            escape_controls(path.as_bytes(), line);
        } else {
            line.extend_from_slice(path.as_bytes());
        }
        if !style.is_empty() {
            line.extend_from_slice(b"\x1b[0m");
        }
        line.push(if self.print0 { 0 } else { b'\n' });
    }

    fn record_line(&self, s: &Searcher, prefix: &str, id: EntryId, line: &mut Vec<u8>) {
        let cells: Vec<String> = self
            .columns
            .iter()
            .map(|c| value(s, prefix, id, c, false))
            .collect();
        // A `$FILE_NAME` time the index does not keep is null, as in `uffs export`.
        let numeric: Vec<bool> = self
            .columns
            .iter()
            .zip(&cells)
            .map(|(c, v)| {
                NUMERIC.contains(c) || *c == "deleted" || (c.starts_with("fn_") && v.is_empty())
            })
            .collect();
        self.record_cells(&self.columns, &numeric, &cells, line);
    }

    /// One record of named cells in the printer's CSV, TSV or JSON lines form; `numeric` cells are JSON
    /// numbers (`null` when empty).
    fn record_cells(&self, names: &[&str], numeric: &[bool], cells: &[String], line: &mut Vec<u8>) {
        match self.format {
            Format::Jsonl => {
                line.push(b'{');
                for (i, (c, v)) in names.iter().zip(cells).enumerate() {
                    if i > 0 {
                        line.push(b',');
                    }
                    line.extend_from_slice(format!("\"{c}\":").as_bytes());
                    if numeric[i] {
                        line.extend_from_slice(if v.is_empty() { b"null" } else { v.as_bytes() });
                    } else {
                        line.extend_from_slice(
                            serde_json::to_string(&v).unwrap_or_default().as_bytes(),
                        );
                    }
                }
                line.extend_from_slice(b"}\n");
            }
            _ => {
                let csv = self.format == Format::Csv;
                for (i, v) in cells.iter().enumerate() {
                    if i > 0 {
                        line.push(if csv { b',' } else { b'\t' });
                    }
                    if csv && v.contains([',', '"', '\n', '\r']) {
                        line.push(b'"');
                        line.extend_from_slice(v.replace('"', "\"\"").as_bytes());
                        line.push(b'"');
                    } else if csv {
                        line.extend_from_slice(v.as_bytes());
                    } else {
                        let v = v
                            .replace('\\', "\\\\")
                            .replace('\t', "\\t")
                            .replace('\n', "\\n")
                            .replace('\r', "\\r");
                        line.extend_from_slice(v.as_bytes());
                    }
                }
                line.push(b'\n');
            }
        }
    }

    /// Rows that are not entries (disk usage, facets, statistics, duplicate groups): `names` head the columns,
    /// `numeric` ones align right in a table and are numbers in JSON. `human` holds each row's cells as a table
    /// shows them (sizes in KiB, MiB …), `raw` as the other formats write them. The paths format prints a table.
    pub fn records(
        &mut self,
        names: &[&'static str],
        numeric: &[bool],
        rows: &[(Vec<String>, Vec<String>)],
    ) -> Result<()> {
        let mut line = Vec::with_capacity(256);
        match self.format {
            Format::Table | Format::Paths => {
                self.columns = names.to_vec();
                self.numeric = numeric.to_vec();
                self.table.extend(rows.iter().map(|r| r.0.clone()));
                self.format = Format::Table;
            }
            Format::Bodyfile => {
                bail!(
                    "--format bodyfile lists entries; use csv, tsv, jsonl or table for these rows"
                )
            }
            Format::Csv | Format::Tsv | Format::Jsonl => {
                self.header(names)?;
                for r in rows {
                    line.clear();
                    self.record_cells(names, numeric, &r.1, &mut line);
                    self.write(&line)?;
                }
            }
        }
        self.rows += rows.len();
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        if self.format == Format::Table && !self.table.is_empty() {
            let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
            for r in &self.table {
                for (w, cell) in widths.iter_mut().zip(r) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let mut s = String::new();
            let head: Vec<String> = self.columns.iter().map(|c| c.to_uppercase()).collect();
            for row in std::iter::once(&head).chain(self.table.iter()) {
                for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                    let right = match self.numeric.get(i) {
                        Some(&n) => n,
                        None => NUMERIC.contains(&self.columns[i]),
                    };
                    let pad = w - cell.chars().count();
                    if i > 0 {
                        s.push_str("  ");
                    }
                    let cell = if self.terminal {
                        escape_str(cell)
                    } else {
                        cell.clone()
                    };
                    if right {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(&cell);
                    } else {
                        s.push_str(&cell);
                        if i + 1 < row.len() {
                            s.push_str(&" ".repeat(pad));
                        }
                    }
                }
                s.push('\n');
            }
            self.write(s.as_bytes())?;
        }
        match self.out.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("writing results"),
        }
    }
}

/// Control characters in a name would move the cursor or worse on a terminal: show them as `\xNN`.
fn escape_controls(s: &[u8], out: &mut Vec<u8>) {
    for &c in s {
        if c < 0x20 || c == 0x7F {
            out.extend_from_slice(format!("\\x{c:02x}").as_bytes());
        } else {
            out.push(c);
        }
    }
}

fn escape_str(s: &str) -> String {
    let mut v = Vec::with_capacity(s.len());
    escape_controls(s.as_bytes(), &mut v);
    String::from_utf8_lossy(&v).into_owned()
}

fn iso(ft: u64, table: bool) -> String {
    let mut s = String::new();
    uffs_index::time::format_iso(ft, &mut s);
    if table {
        // 2024-05-01 12:34 reads better in a table than the full 100 ns precision.
        s.replace_range(10..11, " ");
        s.truncate(16);
    }
    s
}

pub fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// One column of one entry as text (`table`: human-readable sizes and short times).
/// The path of `id` after its volume's prefix. A drive-letter prefix (`C:`) gives a Windows path
/// (`C:\Windows\System32`); any other (`@2:`, `data:`) keeps `/`.
pub fn full_path(idx: &Index, prefix: &str, id: EntryId) -> String {
    let mut s = String::with_capacity(prefix.len() + 64);
    s.push_str(prefix);
    idx.path_into(id, &mut s);
    let p = prefix.as_bytes();
    if p.len() == 2 && p[0].is_ascii_alphabetic() && p[1] == b':' {
        // Safe on UTF-8: '/' and '\\' are single bytes that never occur inside a multi-byte character.
        s = s.replace('/', "\\");
    }
    s
}

fn value(s: &Searcher, prefix: &str, id: EntryId, col: &str, table: bool) -> String {
    let idx = s.index();
    let (usage, part) = s.usage_if(
        matches!(
            col,
            "tree_size" | "tree_allocated" | "descendants" | "children"
        ) || (table && col == "size"),
    );
    let totals = usage.and_then(|u| u.of(part, id));
    match col {
        "path" => full_path(idx, prefix, id),
        "name" => idx.name(id).to_string(),
        "kind" => idx.kind(id).as_str().to_string(),
        "ext" => match idx.kind(id) {
            EntryKind::File => idx
                .name(id)
                .rsplit_once('.')
                .map(|(_, e)| e.to_string())
                .unwrap_or_default(),
            _ => String::new(),
        },
        "size" if table => human(totals.map_or(idx.size(id), |t| t.size)),
        "size" => idx.size(id).to_string(),
        "allocated" => idx.allocated(id).to_string(),
        "created" => iso(idx.created(id), table),
        "modified" => iso(idx.modified(id), table),
        "mft_changed" => iso(idx.mft_changed(id), table),
        "accessed" => iso(idx.accessed(id), table),
        c if c.starts_with("fn_") => {
            let k = crate::export::FN_COLUMNS.iter().position(|f| *f == c);
            match (k, idx.timeline(id)) {
                (Some(k), Some(t)) => iso(t.fn_times[k], table),
                _ => String::new(),
            }
        }
        "attributes" => flags::LETTERS
            .iter()
            .filter(|(_, b)| idx.flags(id) & b != 0)
            .map(|(c, _)| *c)
            .collect(),
        "record" => idx.record(id).to_string(),
        "sequence" => idx.sequence(id).to_string(),
        "parent_record" => idx
            .parent_record(id)
            .map(|p| p.to_string())
            .unwrap_or_default(),
        "deleted" => idx.is_deleted(id).to_string(),
        "reparse_tag" => idx.reparse_tag(id).to_string(),
        "tree_size" => totals.map(|t| t.size.to_string()).unwrap_or_default(),
        "tree_allocated" => totals.map(|t| t.allocated.to_string()).unwrap_or_default(),
        "descendants" => totals
            .map(|t| t.descendants().to_string())
            .unwrap_or_default(),
        "children" => totals.map(|t| t.children.to_string()).unwrap_or_default(),
        _ => String::new(),
    }
}
