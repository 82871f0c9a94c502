//! `uffs journal`: the records of a volume's USN change journal (`$Extend/$UsnJrnl:$J`), or of a raw `$J`
//! capture, one row per record, with the full path of each file where the volume's MFT still resolves its parent.

use std::collections::HashMap;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use clap::ValueEnum;
use uffs_index::{flags, EntryId, Index};
use uffs_mft::device::Device;
use uffs_mft::journal::{find_usnjrnl_record, first_nonzero, is_raw_journal, scan_raw, Journal};
use uffs_mft::ScanOptions;
use uffs_ntfs::usn::{reason_names, ScanCounts, UsnRecord};

use crate::common;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
    Table,
}

pub const COLUMNS: [&str; 13] = [
    "usn",
    "timestamp",
    "reasons",
    "file_record",
    "file_sequence",
    "parent_record",
    "parent_sequence",
    "name",
    "path",
    "attributes",
    "source_info",
    "security_id",
    "version",
];

pub fn run(
    spec: &str,
    partition: Option<u32>,
    since: Option<u64>,
    format: Format,
    output: Option<&Path>,
) -> Result<()> {
    let from = since.unwrap_or(0);
    // A file goes to a temporary name renamed into place once whole: an error or an interruption leaves
    // nothing, and an earlier FILE stays as it was (see `uffs_results::create_output`).
    let (out, temp) = uffs_results::output_or_stdout(output)?;
    let mut w = Writer::new(BufWriter::with_capacity(1 << 20, out), format);
    let (counts, what) = if let Some(dev) = raw_journal(spec, partition)? {
        let c =
            scan_raw(&dev, from, |_, r| w.row(r, "")).with_context(|| format!("reading {spec}"))?;
        (c, format!("{spec} (raw $J capture)"))
    } else {
        let src = crate::common::open_source(spec, partition, false)?;
        let vol = common::only_volume(
            &src,
            spec,
            "the journal command reads one: pick one, e.g. uffs journal",
            "",
        )?;
        let pb = common::progress_bar(&vol.name);
        let (idx, _) = common::build(vol, &ScanOptions::default(), &pb)?;
        pb.finish_and_clear();
        let record = find_usnjrnl_record(&idx)
            .ok_or_else(|| anyhow!("{spec} has no USN change journal ($Extend/$UsnJrnl)"))?;
        let journal = Journal::open(vol, record)?;
        let mut paths = Paths::new(&idx);
        let c = journal
            .for_each_record(vol, from, |_, r| {
                let path = paths.of(r);
                w.row(r, &path)
            })
            .with_context(|| format!("reading the change journal of {spec}"))?;
        (
            c,
            format!(
                "{}: journal {:#x}, USNs {}..{}, {} bytes allocated",
                vol.name,
                journal.id,
                journal.lowest_valid_usn,
                journal.size,
                common::thousands(journal.allocated_bytes())
            ),
        )
    };
    w.finish()?;
    if let Some(t) = temp {
        t.commit()?;
    }
    if io::stderr().is_terminal() {
        eprintln!("{}", summary(&what, &counts));
    }
    Ok(())
}

/// The source as a raw `$J` capture, when its content is one: a plain file (no partition asked for) whose first
/// non-zero bytes are a USN record and that is not an NTFS volume or `$MFT` capture.
fn raw_journal(spec: &str, partition: Option<u32>) -> Result<Option<Device>> {
    let path = Path::new(spec);
    if partition.is_some() || !path.is_file() {
        return Ok(None);
    }
    let dev = Device::open(path).with_context(|| format!("cannot open {spec}"))?;
    let mut head = vec![0u8; 4096];
    let n = dev
        .read_head(&mut head, 0)
        .with_context(|| format!("cannot read {spec}"))?;
    if uffs_ntfs::boot::is_ntfs(&head[..n]) || head[..n].starts_with(b"FILE") {
        return Ok(None);
    }
    let Some(at) = first_nonzero(&dev, 0)? else {
        return Ok(None);
    };
    let n = dev
        .read_head(&mut head, at)
        .with_context(|| format!("cannot read {spec}"))?;
    Ok(is_raw_journal(&head[..n]).then_some(dev))
}

fn summary(what: &str, c: &ScanCounts) -> String {
    let mut s = format!("{what}: {} records", common::thousands(c.records));
    if c.v4_records > 0 {
        s += &format!(
            ", {} range-tracking (V4) records skipped",
            common::thousands(c.v4_records)
        );
    }
    if c.damaged_regions > 0 {
        s += &format!(
            ", {} damaged regions ({} bytes) skipped",
            c.damaged_regions,
            common::thousands(c.skipped_bytes)
        );
    }
    s
}

/// Full paths of the records' parents, from the volume's index: only where the parent record is a folder of the
/// index with the sequence number the journal record names (else the folder was deleted or its record reused).
struct Paths<'a> {
    idx: &'a Index,
    folders: HashMap<u32, EntryId>,
    cache: HashMap<EntryId, String>,
}

impl<'a> Paths<'a> {
    fn new(idx: &'a Index) -> Paths<'a> {
        let mut folders = HashMap::new();
        for id in 0..idx.len() as EntryId {
            let f = idx.flags(id);
            if f & flags::DIRECTORY != 0
                && f & (flags::SYNTHETIC | flags::STREAM | flags::DELETED) == 0
            {
                folders.entry(idx.record(id)).or_insert(id);
            }
        }
        Paths {
            idx,
            folders,
            cache: HashMap::new(),
        }
    }

    fn of(&mut self, r: &UsnRecord<'_>) -> String {
        let Ok(rec) = u32::try_from(r.parent_record()) else {
            return String::new();
        };
        let Some(&id) = self.folders.get(&rec) else {
            return String::new();
        };
        if self.idx.sequence(id) != r.parent_sequence() {
            return String::new();
        }
        // The root is its own parent (its records are named ".").
        if r.file_ref == r.parent_ref && id == self.idx.root() {
            return "/".to_string();
        }
        let idx = self.idx;
        let dir = self.cache.entry(id).or_insert_with(|| idx.path(id));
        let mut p = String::with_capacity(dir.len() + 1 + r.name.len() / 2);
        p.push_str(dir);
        if !p.ends_with('/') {
            p.push('/');
        }
        p.push_str(&r.name_string());
        p
    }
}

/// Writes rows as they come (CSV, JSON lines) or at the end (a table, whose columns are aligned).
struct Writer<W: Write> {
    out: W,
    format: Format,
    table: Vec<Vec<String>>,
    error: Option<io::Error>,
    started: bool,
}

impl<W: Write> Writer<W> {
    fn new(out: W, format: Format) -> Writer<W> {
        Writer {
            out,
            format,
            table: Vec::new(),
            error: None,
            started: false,
        }
    }

    fn row(&mut self, r: &UsnRecord<'_>, path: &str) {
        if self.error.is_some() {
            return;
        }
        let mut ts = String::with_capacity(28);
        uffs_index::time::format_iso(r.timestamp, &mut ts);
        let cells: [String; 13] = [
            r.usn.to_string(),
            ts,
            reason_names(r.reason),
            r.file_record().to_string(),
            r.file_sequence().to_string(),
            r.parent_record().to_string(),
            r.parent_sequence().to_string(),
            r.name_string(),
            path.to_string(),
            attribute_letters(r.attributes),
            r.source_info.to_string(),
            r.security_id.to_string(),
            r.version.to_string(),
        ];
        let res = match self.format {
            Format::Table => {
                self.table
                    .push(cells.iter().map(|c| escape_controls(c)).collect());
                Ok(())
            }
            Format::Csv => self.csv(&cells),
            Format::Jsonl => self.json(&cells),
        };
        if let Err(e) = res {
            self.error = Some(e);
        }
    }

    fn csv(&mut self, cells: &[String]) -> io::Result<()> {
        if !self.started {
            self.started = true;
            writeln!(self.out, "{}", COLUMNS.join(","))?;
        }
        let mut line = String::with_capacity(256);
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            if c.contains([',', '"', '\n', '\r']) {
                line.push('"');
                line.push_str(&c.replace('"', "\"\""));
                line.push('"');
            } else {
                line.push_str(c);
            }
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    fn json(&mut self, cells: &[String]) -> io::Result<()> {
        const STRINGS: [&str; 5] = ["timestamp", "reasons", "name", "path", "attributes"];
        let mut line = String::with_capacity(320);
        line.push('{');
        for (i, (k, v)) in COLUMNS.iter().zip(cells).enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push('"');
            line.push_str(k);
            line.push_str("\":");
            if STRINGS.contains(k) {
                line.push_str(&serde_json::to_string(v).unwrap_or_default());
            } else {
                line.push_str(v);
            }
        }
        line.push_str("}\n");
        self.out.write_all(line.as_bytes())
    }

    fn finish(mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(e).context("writing the journal");
        }
        let r = (|| -> io::Result<()> {
            match self.format {
                // A header even when the journal is empty.
                Format::Csv if !self.started => writeln!(self.out, "{}", COLUMNS.join(","))?,
                Format::Table => {
                    // Terminal columns, not characters: a CJK name takes two a character.
                    let cols = uffs_results::term::width;
                    let mut width: Vec<usize> = COLUMNS.iter().map(|c| cols(c)).collect();
                    for r in &self.table {
                        for (w, c) in width.iter_mut().zip(r) {
                            *w = (*w).max(cols(c));
                        }
                    }
                    let head: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
                    for row in std::iter::once(&head).chain(self.table.iter()) {
                        let mut line = String::new();
                        for (i, (c, w)) in row.iter().zip(&width).enumerate() {
                            if i > 0 {
                                line.push_str("  ");
                            }
                            line.push_str(c);
                            if i + 1 < row.len() {
                                line.extend(std::iter::repeat_n(' ', w - cols(c)));
                            }
                        }
                        writeln!(self.out, "{}", line.trim_end())?;
                    }
                }
                _ => {}
            }
            self.out.flush()
        })();
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("writing the journal"),
        }
    }
}

/// The attribute letters `uffs export` prints, from Windows file attributes.
fn attribute_letters(a: u32) -> String {
    flags::LETTERS
        .iter()
        .filter(|(_, bit)| a & bit != 0)
        .map(|(c, _)| *c)
        .collect()
}

/// Control characters would move the cursor on a terminal: shown as `\xNN`.
fn escape_controls(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if (c as u32) < 0x20 || c as u32 == 0x7F {
                format!("\\x{:02x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}
