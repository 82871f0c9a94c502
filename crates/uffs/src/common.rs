//! Pieces shared by the subcommands: progress bars, loading a source or an index file, the summary line.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use uffs_index::Index;
use uffs_mft::{ScanOptions, ScanReport, Volume};

/// Prints an error as one line (with its causes) to stderr.
pub fn report_error(e: &anyhow::Error) {
    eprintln!("uffs: error: {e:#}");
}

/// A progress bar over records on stderr, shown only when stderr is a terminal.
pub fn progress_bar(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {human_pos}/{human_len} records ({percent}%), eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

/// Builds the index of one volume, showing its progress on `pb` (which it leaves in place).
pub fn build(vol: &Volume, opts: &ScanOptions, pb: &ProgressBar) -> Result<(Index, ScanReport)> {
    uffs_mft::build_index(vol, opts, &|done, total| {
        pb.set_length(total);
        pb.set_position(done);
    })
    .with_context(|| format!("indexing {}", vol.name))
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn per_second(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

/// The one-line summary of an index build.
pub fn summary(vol: &Volume, idx: &Index, r: &ScanReport) -> String {
    let t = r.times.total;
    let c = &r.build.counts;
    let mut s = format!(
        "{}: {} entries from {} records in {:.3} s ({:.2} M records/s, {:.0} MB/s)",
        vol.name,
        thousands(idx.len() as u64),
        thousands(r.records_read),
        t.as_secs_f64(),
        per_second(r.records_read, t) / 1e6,
        per_second(r.bytes_read, t) / 1e6,
    );
    let bad = c.corrupt + c.damaged + r.records_unreadable;
    if bad > 0 {
        s += &format!(
            "; skipped {} corrupt, {} damaged, {} unreadable records",
            c.corrupt, c.damaged, r.records_unreadable
        );
    }
    if r.build.orphans > 0 {
        s += &format!("; {} orphans under /$Orphan", thousands(r.build.orphans));
    }
    s
}

pub fn index_command(
    source: &str,
    partition: Option<u32>,
    output: &Path,
    deleted: bool,
    threads: usize,
    update: bool,
) -> Result<()> {
    let src = uffs_mft::open(source, partition)?;
    let vol = only_volume(
        &src,
        source,
        "an index file holds one: index them one at a time, e.g. uffs index",
        "-o FILE",
    )?;
    if update && output.exists() {
        if let Some(line) = update_index_file(vol, output, deleted, threads)? {
            eprintln!("{line}");
            return Ok(());
        }
    }
    let line = write_index(vol, output, deleted, threads, &progress_bar(&vol.name))?;
    eprintln!("{line}");
    Ok(())
}

/// Brings the index file `output` up to date with `vol` by applying only what changed; `None` when it must be
/// built again (the reason is printed).
fn update_index_file(
    vol: &Volume,
    output: &Path,
    deleted: bool,
    threads: usize,
) -> Result<Option<String>> {
    let old = uffs_index::file::read(output)
        .with_context(|| format!("reading index {}", output.display()))?;
    if old.meta.has_deleted != deleted {
        eprintln!(
            "uffs: {} was built {} deleted entries; building it again",
            output.display(),
            if old.meta.has_deleted {
                "with"
            } else {
                "without"
            }
        );
        return Ok(None);
    }
    let opts = ScanOptions {
        include_deleted: deleted,
        threads,
        ..ScanOptions::default()
    };
    let t = std::time::Instant::now();
    match uffs_mft::update::refresh(vol, &old, &opts)? {
        uffs_mft::update::Refresh::Unchanged { checked } => Ok(Some(format!(
            "{}: unchanged ({checked}); {} left as it was",
            vol.name,
            output.display()
        ))),
        uffs_mft::update::Refresh::Rebuild(why) => {
            eprintln!("uffs: {}: {why}; building it again", vol.name);
            Ok(None)
        }
        uffs_mft::update::Refresh::Updated(applied) => {
            let uffs_mft::update::Applied {
                index,
                report,
                how,
                find_time,
            } = *applied;
            drop(old);
            let tw = std::time::Instant::now();
            uffs_index::file::write(&index, output)
                .with_context(|| format!("writing {}", output.display()))?;
            let s = &report.stats;
            Ok(Some(format!(
                "{}: {} changed records found by {how} in {:.1} ms; {} records read again in {:.1} ms, \
                 -{} +{} entries (entries {:.1} ms, links and totals {:.1} ms, search aids {:.1} ms); \
                 written in {:.1} ms; {:.3} s in all -> {}",
                vol.name,
                thousands(s.records),
                find_time.as_secs_f64() * 1e3,
                thousands(report.records_read),
                report.read_time.as_secs_f64() * 1e3,
                thousands(s.entries_removed),
                thousands(s.entries_added),
                s.entries_time.as_secs_f64() * 1e3,
                s.link_time.as_secs_f64() * 1e3,
                s.aids_time.as_secs_f64() * 1e3,
                tw.elapsed().as_secs_f64() * 1e3,
                t.elapsed().as_secs_f64(),
                output.display()
            )))
        }
    }
}

/// The one NTFS volume of a source, or an error that names each (`disk.img@1`, `disk.img@3`) and shows the
/// command (`before` SPEC `after`) for the first.
pub fn only_volume<'a>(
    src: &'a uffs_mft::Source,
    spec: &str,
    before: &str,
    after: &str,
) -> Result<&'a Volume> {
    match &src.volumes[..] {
        [one] => Ok(one),
        many => {
            let names: Vec<&str> = many.iter().map(|v| v.name.as_str()).collect();
            bail!(
                "{spec} holds {} NTFS volumes ({}); {before} {} {after}",
                names.len(),
                names.join(", "),
                names.first().copied().unwrap_or_default()
            )
        }
    }
}

/// Builds the index of `vol` with its search aids and writes it to `output`; returns the summary line.
pub fn write_index(
    vol: &Volume,
    output: &Path,
    deleted: bool,
    threads: usize,
    pb: &ProgressBar,
) -> Result<String> {
    let opts = ScanOptions {
        include_deleted: deleted,
        threads,
        ..ScanOptions::default()
    };
    let (mut idx, report) = build(vol, &opts, pb)?;
    pb.set_message("sorting and writing");
    let t = std::time::Instant::now();
    idx.add_search_aids();
    uffs_index::file::write(&idx, output)
        .with_context(|| format!("writing {}", output.display()))?;
    pb.finish_and_clear();
    Ok(format!(
        "{}; search aids and write {:.3} s -> {}",
        summary(vol, &idx, &report),
        t.elapsed().as_secs_f64(),
        output.display()
    ))
}

/// The indexes of a source (every selected volume), or of an index file. Each comes with the prefix its paths
/// get: empty for a single volume, `@N:` for partition N of a disk with several.
pub fn load_indexes(
    spec: &str,
    partition: Option<u32>,
    deleted: bool,
) -> Result<Vec<(String, Index)>> {
    if is_index_file(spec) {
        let idx = uffs_index::file::read(Path::new(spec))
            .with_context(|| format!("reading index {spec}"))?;
        if deleted && !idx.meta.has_deleted {
            bail!(
                "{spec} was built without deleted entries; rebuild it with `uffs index --deleted`"
            );
        }
        return Ok(vec![(String::new(), idx)]);
    }
    let src = uffs_mft::open(spec, partition)?;
    let opts = ScanOptions {
        include_deleted: deleted,
        ..ScanOptions::default()
    };
    let several = src.volumes.len() > 1;
    let mut out = Vec::new();
    for vol in &src.volumes {
        let pb = progress_bar(&vol.name);
        let (idx, report) = build(vol, &opts, &pb)?;
        pb.finish_and_clear();
        eprintln!("{}", summary(vol, &idx, &report));
        let prefix = match (&vol.partition, several) {
            (Some(p), true) => format!("@{}:", p.index),
            _ => String::new(),
        };
        out.push((prefix, idx));
    }
    Ok(out)
}

fn is_index_file(spec: &str) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(spec)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && uffs_index::file::is_index_file(&head)
}
