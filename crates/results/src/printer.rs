//! Printing search results: paths (coloured and escaped on a terminal, or NUL-separated), rows of chosen
//! [`Column`]s as CSV, TSV, JSON lines or an aligned table (fitted to the terminal's width), a body file's rows
//! (see [`crate::bodyfile`]), or Parquet (see [`crate::parquet`]); to stdout or a file.

use std::collections::HashMap;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use clap::ValueEnum;
use uffs_index::{EntryId, EntryKind, Index};
use uffs_query::Searcher;

use crate::column::{full_path, human, Column, ColumnType, Value};
use crate::parquet::{ParquetWriter, VolumeInfo};
use crate::{io_err, Error, Result, TempFile};

/// How results print: the command line's output options, and a search request's `output` (where `-o FILE` is
/// the client's, never sent).
#[derive(clap::Args, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputArgs {
    /// When to colour paths: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Separate paths with NUL instead of newlines (for xargs -0).
    #[arg(short = '0', long = "print0")]
    pub print0: bool,
    /// Output format (default: paths). parquet: the fixed schema of docs/parquet.md, to -o FILE or a pipe.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Columns for csv, tsv, jsonl and table, comma-separated, from: path name kind size allocated created
    /// modified mft_changed accessed attributes record sequence parent_record deleted reparse_tag fn_created
    /// fn_modified fn_mft_changed fn_accessed mode uid gid link_target from_index_slack alias ext tree_size
    /// tree_allocated descendants children type (the tree_ columns, descendants and children: a folder's totals;
    /// mode uid gid link_target: ext's; from_index_slack: a deleted name only its folder's index slack keeps;
    /// alias: the 8.3 name beside a long one; type: a file's type by signature, read from its data).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub columns: Vec<String>,
    /// Write to FILE instead of stdout (a query that finds nothing writes no file, a count still does).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    #[serde(skip)]
    pub output: Option<PathBuf>,
    /// The width of the terminal a table is fitted to (set by a client for the daemon that prints for it).
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Paths,
    Csv,
    Tsv,
    Jsonl,
    Table,
    /// The Sleuth Kit's body file (mactime's input).
    Bodyfile,
    /// Apache Parquet with uffs's fixed schema (docs/parquet.md); to -o FILE or a pipe, never a terminal.
    Parquet,
}

/// Why Parquet is not written to a terminal.
pub const PARQUET_TO_TERMINAL: &str =
    "--format parquet writes binary data: give -o FILE or pipe it (it is not written to a terminal)";

pub struct Printer<'a> {
    out: BufWriter<Box<dyn Write + 'a>>,
    format: Format,
    /// The entry columns of csv, tsv, jsonl and table.
    columns: Vec<Column>,
    /// The headings of a table or of CSV and TSV (the columns' names, or those of rows that are not entries).
    names: Vec<&'static str>,
    terminal: bool,
    color: bool,
    print0: bool,
    rows: usize,
    header_done: bool,
    /// Table rows are held to align the columns.
    table: Vec<Vec<String>>,
    /// For rows that are not entries: which columns are numbers (aligned right).
    numeric: Vec<bool>,
    /// The terminal's width a table is fitted to.
    width: Option<usize>,
    parquet: Option<ParquetWriter>,
    /// Where Parquet goes once complete (renamed from a temporary name).
    temp: Option<TempFile>,
    /// Lines a table is followed by (see [`Printer::note`]).
    notes: Vec<String>,
    /// The `type` column of the rows being printed (see [`Printer::set_types`]).
    types: HashMap<EntryId, &'static str>,
}

impl<'a> Printer<'a> {
    /// A printer to `a.output` or stdout. A file is written under a temporary name beside it, renamed into place
    /// by [`Printer::finish`] (see [`crate::create_output`]).
    pub fn new(a: &OutputArgs) -> Result<Printer<'static>> {
        let mut temp = None;
        let (out, terminal): (Box<dyn Write>, bool) = match &a.output {
            Some(p) => {
                let (f, t) = crate::create_output(p)?;
                temp = t;
                (Box::new(f), false)
            }
            None => (Box::new(io::stdout()), io::stdout().is_terminal()),
        };
        let mut a = a.clone();
        if terminal {
            a.width = a.width.or_else(crate::term::stdout_width);
        }
        let mut p = Printer::to_writer(out, &a, terminal)?;
        p.temp = temp;
        Ok(p)
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
    /// characters are then escaped, and Parquet refused); a table is fitted to `a.width` when given.
    pub fn to_writer(
        out: Box<dyn Write + 'a>,
        a: &OutputArgs,
        terminal: bool,
    ) -> Result<Printer<'a>> {
        let color = Printer::resolve_color(a.color, terminal) == ColorChoice::Always;
        let format = a.format.unwrap_or(Format::Paths);
        let mut columns = Vec::new();
        for c in &a.columns {
            let Some(k) = Column::parse(c) else {
                let all: Vec<&str> = Column::ALL.iter().map(|c| c.name()).collect();
                return Err(Error::UnknownColumn(c.clone(), all.join(", ")));
            };
            columns.push(k);
        }
        let parquet = if format == Format::Parquet {
            if terminal {
                return Err(Error::Unsupported(PARQUET_TO_TERMINAL.into()));
            }
            if !columns.is_empty() {
                return Err(Error::Unsupported(
                    "--format parquet has a fixed schema (docs/parquet.md): --columns is for csv, tsv, jsonl and table".into(),
                ));
            }
            Some(ParquetWriter::new(crate::parquet::Layout::File)?)
        } else {
            None
        };
        if columns.is_empty() {
            columns = match format {
                Format::Table => vec![Column::Path, Column::Kind, Column::Size, Column::Modified],
                _ => vec![
                    Column::Path,
                    Column::Name,
                    Column::Kind,
                    Column::Size,
                    Column::Modified,
                    Column::Attributes,
                ],
            };
        }
        Ok(Printer {
            out: BufWriter::with_capacity(1 << 16, out),
            format,
            names: columns.iter().map(|c| c.name()).collect(),
            columns,
            terminal,
            color,
            print0: a.print0,
            rows: 0,
            header_done: false,
            table: Vec::new(),
            numeric: Vec::new(),
            width: a.width.filter(|_| terminal),
            parquet,
            temp: None,
            notes: Vec::new(),
            types: HashMap::new(),
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
        matches!(self.format, Format::Bodyfile | Format::Parquet)
            || (self.format != Format::Paths && self.columns.iter().any(|c| c.fn_index().is_some()))
    }

    pub fn count(&mut self, n: usize) -> Result<()> {
        if self.format == Format::Parquet {
            return Err(Error::Unsupported(
                "--format parquet lists entries; --count prints a number (leave out --format)"
                    .into(),
            ));
        }
        self.write(format!("{n}\n").as_bytes())
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        match self.out.write_all(b) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(io_err("writing results")),
        }
    }

    pub fn rows(&mut self, s: &Searcher, prefix: &str, ids: &[EntryId]) -> Result<()> {
        let idx = s.index();
        if let Some(pq) = &mut self.parquet {
            let vol = VolumeInfo::of(idx, prefix);
            let mut path = Vec::with_capacity(256);
            for &id in ids {
                path.clear();
                path.extend_from_slice(
                    full_path(idx, crate::parquet::path_prefix(prefix), id).as_bytes(),
                );
                pq.push(&vol, idx, id, &path, idx.timeline(id))?;
            }
            self.rows += ids.len();
            return match pq.drain_into(&mut self.out) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                r => r.map_err(io_err("writing results")),
            };
        }
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
                        .map(|&c| self.table_cell(s, prefix, id, c))
                        .collect();
                    self.table.push(cells);
                }
                Format::Csv | Format::Tsv | Format::Jsonl => {
                    if !self.header_done {
                        let names = self.names.clone();
                        self.header(&names)?;
                    }
                    self.record_line(s, prefix, id, &mut line);
                }
                Format::Parquet => unreachable!("written above"),
            }
            self.rows += 1;
            if !line.is_empty() {
                match self.out.write_all(&line) {
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                    r => r.map_err(io_err("writing results"))?,
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
                // As `ls` colours them by default.
                EntryKind::Symlink => "\x1b[1;36m",
                EntryKind::Socket => "\x1b[1;35m",
                EntryKind::Fifo => "\x1b[33m",
                EntryKind::BlockDevice | EntryKind::CharDevice => "\x1b[1;33m",
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

    /// Whether the rows print the `type` column, which the caller reads from the files (see
    /// [`Printer::set_types`]).
    pub fn wants_types(&self) -> bool {
        matches!(
            self.format,
            Format::Csv | Format::Tsv | Format::Jsonl | Format::Table
        ) && self.columns.contains(&Column::Type)
    }

    /// The `type` column of the entries the next [`Printer::rows`] prints (an entry left out prints empty).
    pub fn set_types(&mut self, types: impl IntoIterator<Item = (EntryId, &'static str)>) {
        self.types.clear();
        self.types.extend(types);
    }

    /// One column's value of an entry: from the index, or for `type` from [`Printer::set_types`].
    fn cell(&self, s: &Searcher, prefix: &str, id: EntryId, c: Column) -> Value {
        match c {
            Column::Type => {
                Value::Text(self.types.get(&id).copied().unwrap_or_default().to_string())
            }
            c => c.value(s, prefix, id),
        }
    }

    /// One column of one entry as a table shows it: the value the other formats write, with byte counts in KiB,
    /// MiB … ([`Column::is_bytes`]) and times to the minute.
    fn table_cell(&self, s: &Searcher, prefix: &str, id: EntryId, c: Column) -> String {
        match self.cell(s, prefix, id, c) {
            Value::Int(Some(n)) if c.is_bytes() => human(n),
            v => v.text(true),
        }
    }

    fn record_line(&self, s: &Searcher, prefix: &str, id: EntryId, line: &mut Vec<u8>) {
        let values: Vec<Value> = self
            .columns
            .iter()
            .map(|&c| self.cell(s, prefix, id, c))
            .collect();
        let cells: Vec<String> = values.iter().map(|v| v.text(false)).collect();
        // A `$FILE_NAME` time the index does not keep is null, as in `uffs export`.
        let numeric: Vec<bool> = values.iter().map(Value::json_bare).collect();
        self.record_cells(&self.names, &numeric, &cells, line);
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
                self.names = names.to_vec();
                self.numeric = numeric.to_vec();
                self.table.extend(rows.iter().map(|r| r.0.clone()));
                self.format = Format::Table;
            }
            Format::Bodyfile => {
                return Err(Error::Unsupported(
                    "--format bodyfile lists entries; use csv, tsv, jsonl or table for these rows"
                        .into(),
                ))
            }
            Format::Parquet => {
                return Err(Error::Unsupported(
                    "--format parquet lists entries; use csv, tsv, jsonl or table for these rows"
                        .into(),
                ))
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

    /// Typed rows that are not entries (the changes of `uffs diff`): `names` head the columns, `types` say what
    /// each holds. Text formats write [`Value::text`] (a table: times to the minute); JSON lines write numbers,
    /// booleans and unknown values bare; Parquet types each column by its [`ColumnType`] (see
    /// [`crate::parquet::values_file`]). Called once per printer for Parquet.
    pub fn values(
        &mut self,
        names: &[&'static str],
        types: &[ColumnType],
        rows: &[Vec<Value>],
    ) -> Result<()> {
        match self.format {
            Format::Parquet => {
                let bytes = crate::parquet::values_file(names, types, rows)?;
                // The entry writer made for this printer has nothing to add.
                self.parquet = None;
                self.write(&bytes)?;
                self.rows += rows.len();
                Ok(())
            }
            Format::Csv | Format::Tsv | Format::Jsonl => {
                self.header(names)?;
                let mut line = Vec::with_capacity(256);
                for r in rows {
                    line.clear();
                    let numeric: Vec<bool> = r.iter().map(Value::json_bare).collect();
                    let cells: Vec<String> = r.iter().map(|v| v.text(false)).collect();
                    self.record_cells(names, &numeric, &cells, &mut line);
                    self.write(&line)?;
                }
                self.rows += rows.len();
                Ok(())
            }
            _ => {
                let numeric: Vec<bool> = types.iter().map(|t| *t == ColumnType::Integer).collect();
                let rows: Vec<(Vec<String>, Vec<String>)> = rows
                    .iter()
                    .map(|r| (r.iter().map(|v| v.text(true)).collect(), Vec::new()))
                    .collect();
                self.records(names, &numeric, &rows)
            }
        }
    }

    /// A line for a person after a table (how a total compares with the volume's, say); the machine formats
    /// carry rows only and leave it out.
    pub fn note(&mut self, line: String) {
        self.notes.push(line);
    }

    /// Writes what is held (a table, Parquet's last row group and footer) and flushes; Parquet written to a
    /// file is renamed into place.
    pub fn finish(mut self) -> Result<()> {
        if self.format == Format::Table && !self.table.is_empty() {
            if self.terminal {
                // Escaped before measuring: `\xNN` takes four columns where the control character took none.
                for cell in self.table.iter_mut().flatten() {
                    *cell = escape_str(cell);
                }
            }
            self.fit_table();
            // Columns on the screen, not characters: a CJK name takes two a character.
            let width = crate::term::width;
            let mut widths: Vec<usize> = self.names.iter().map(|c| width(c)).collect();
            for r in &self.table {
                for (w, cell) in widths.iter_mut().zip(r) {
                    *w = (*w).max(width(cell));
                }
            }
            let mut s = String::new();
            let head: Vec<String> = self.names.iter().map(|c| c.to_uppercase()).collect();
            for row in std::iter::once(&head).chain(self.table.iter()) {
                for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                    let right = match self.numeric.get(i) {
                        Some(&n) => n,
                        None => self.columns[i].ty() == ColumnType::Integer,
                    };
                    let pad = w - width(cell);
                    if i > 0 {
                        s.push_str("  ");
                    }
                    if right {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(cell);
                    } else {
                        s.push_str(cell);
                        if i + 1 < row.len() {
                            s.push_str(&" ".repeat(pad));
                        }
                    }
                }
                s.push('\n');
            }
            for n in std::mem::take(&mut self.notes) {
                s.push_str(&n);
                s.push('\n');
            }
            self.write(s.as_bytes())?;
        }
        if let Some(pq) = self.parquet.take() {
            let bytes = pq.finish()?;
            self.write(&bytes)?;
        }
        match self.out.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(io_err("writing results")),
        }?;
        if let Some(t) = self.temp.take() {
            // The handle is closed before the rename (Windows renames no open file).
            drop(std::mem::replace(
                &mut self.out,
                BufWriter::new(Box::new(io::sink())),
            ));
            t.commit()?;
        }
        Ok(())
    }

    /// On a terminal of known width, a table wider than the window has its path column shortened in the middle
    /// (`/Users/alice/…/report.pdf`) so each row fits; the other columns stay whole.
    fn fit_table(&mut self) {
        let Some(width) = self.width else {
            return;
        };
        let Some(p) = self.names.iter().position(|n| *n == "path") else {
            return;
        };
        let cols = crate::term::width;
        let mut widths: Vec<usize> = self.names.iter().map(|c| cols(c)).collect();
        for r in &self.table {
            for (w, cell) in widths.iter_mut().zip(r) {
                *w = (*w).max(cols(cell));
            }
        }
        let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        if total <= width {
            return;
        }
        // The path keeps at least a few characters of each end, even when the others alone overflow.
        let others = total - widths[p];
        let fit = width.saturating_sub(others).max(MIN_PATH_WIDTH);
        for r in &mut self.table {
            if let Some(cell) = r.get_mut(p) {
                if cols(cell) > fit {
                    *cell = crate::term::shorten_middle(cell, fit);
                }
            }
        }
    }
}

/// The narrowest a table's path column is shortened to.
const MIN_PATH_WIDTH: usize = 12;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `--columns`' help names every column (clap's help text is a constant, so this keeps it in step).
    #[test]
    fn the_columns_help_names_every_column() {
        let src = include_str!("printer.rs");
        let start = src.find("/// Columns for csv, tsv").unwrap();
        let help = &src[start..start + src[start..].find("#[arg").unwrap()];
        let words: Vec<&str> = help
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        for c in Column::ALL {
            assert!(
                words.contains(&c.name()),
                "{} is not in --columns' help",
                c.name()
            );
        }
    }
}
