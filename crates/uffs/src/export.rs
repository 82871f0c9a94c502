//! `uffs export`: one row per entry of a source or an index file as CSV, JSON lines, a body file or Parquet;
//! the formatting is `uffs_results::export`'s.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use uffs_results::export::{self, Filter, Format};
use uffs_results::parquet::{Layout, ParquetWriter};
use uffs_results::printer::PARQUET_TO_TERMINAL;

use crate::common::load_indexes_with;
use crate::dataset;
use uffs_results::dataset::{machine_name, safe_name, write_volume};

/// Which entries of a source are exported: the flags.
pub struct Scope {
    /// With a whole disk: its partition N.
    pub partition: Option<u32>,
    pub deleted: bool,
    pub streams: bool,
    /// Every shadow copy after the volume, paths prefixed `@vssN:`.
    pub snapshots: bool,
}

impl Scope {
    /// The parts of `spec` this scope exports.
    fn load(&self, spec: &str) -> Result<Vec<crate::common::Part>> {
        load_indexes_with(spec, self.partition, self.deleted, self.snapshots)
    }
}

pub fn run(
    specs: &[String],
    scope: Scope,
    format: Option<Format>,
    output: Option<&Path>,
) -> Result<()> {
    let [spec] = specs else {
        bail!(
            "export writes one source or index file at a time (give --dataset DIR to write several as a Parquet \
             dataset)"
        );
    };
    let format = format.unwrap_or(Format::Csv);
    if format == Format::Parquet && output.is_none() && io::stdout().is_terminal() {
        bail!("{PARQUET_TO_TERMINAL}");
    }
    let indexes = scope.load(spec)?;
    let Scope {
        deleted, streams, ..
    } = scope;
    if format == Format::Bodyfile && indexes.iter().any(|p| !p.index.has_timeline()) {
        bail!(
            "{spec} was indexed by an older uffs, which kept no $FILE_NAME times; rebuild the index for a body file"
        );
    }
    // A file goes to a temporary name renamed into place once whole: an error or an interruption leaves
    // nothing (see `uffs_results::create_output`).
    let (out, temp) = uffs_results::output_or_stdout(output)?;
    let writing = || match output {
        Some(p) => format!("writing {}", p.display()),
        None => "writing export".to_string(),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    // A progress bar on a terminal, when the rows go to a file (not over them).
    let pb = if output.is_some() {
        crate::common::styled_bar(
            "export",
            "{prefix} [{bar:30}] {human_pos}/{human_len} entries ({percent}%), eta {eta}",
        )
    } else {
        indicatif::ProgressBar::hidden()
    };
    pb.set_length(indexes.iter().map(|p| p.index.len() as u64).sum());
    if format == Format::Csv {
        out.write_all(export::csv_header().as_bytes())
            .with_context(writing)?;
    }
    let mut pq = match format {
        Format::Parquet => Some(ParquetWriter::new(Layout::File)?),
        _ => None,
    };
    let mut base = 0u64;
    for part in &indexes {
        let filter = Filter {
            deleted,
            streams,
            hidden: part.hidden.as_deref(),
        };
        let progress = |n: u64| pb.set_position(base + n);
        match &mut pq {
            Some(pq) => {
                export::write_parquet(&part.index, &part.prefix, filter, pq, &mut out, &progress)
                    .with_context(writing)
                    .map(|_| ())?
            }
            None => export::write_rows(
                &part.index,
                &part.prefix,
                format,
                filter,
                &mut out,
                &progress,
            )
            .with_context(writing)?,
        }
        base += part.index.len() as u64;
    }
    if let Some(pq) = pq {
        let rest = pq.finish().with_context(writing)?;
        match out.write_all(&rest) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            r => r.with_context(writing)?,
        }
    }
    pb.finish_and_clear();
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        r => r.with_context(writing)?,
    }
    drop(out);
    if let Some(t) = temp {
        t.commit()?;
    }
    Ok(())
}

/// `uffs export SOURCE... --dataset DIR [--host NAME]`: each volume of each source as its own Parquet file of the
/// dataset (see `crate::dataset`), one line on stderr per volume written.
/// Where `uffs export --dataset` writes: the dataset's folder, its host, and where change sets go.
pub struct DatasetTarget<'a> {
    pub dir: &'a Path,
    pub host: Option<String>,
    pub changes: Option<&'a Path>,
}

pub fn run_dataset(
    specs: &[String],
    scope: Scope,
    format: Option<Format>,
    target: DatasetTarget<'_>,
) -> Result<()> {
    let DatasetTarget { dir, host, changes } = target;
    if let Some(f) = format.filter(|&f| f != Format::Parquet) {
        bail!(
            "--dataset writes Parquet, not {}: leave --format out or give --format parquet",
            format!("{f:?}").to_lowercase()
        );
    }
    let host = safe_name(&host.unwrap_or_else(machine_name));
    let Scope {
        deleted, streams, ..
    } = scope;
    // Every source is read before anything is written: a bad one leaves the dataset as it was.
    let mut loaded = Vec::with_capacity(specs.len());
    for spec in specs {
        loaded.push((spec, scope.load(spec)?));
    }
    let volumes: Vec<dataset::DatasetVolume<'_>> = loaded
        .iter()
        .flat_map(|(spec, parts)| dataset::volumes(spec, parts))
        .collect();
    dataset::check_names(volumes.iter().map(|v| v.name.as_str()))?;
    let pb = crate::common::styled_bar(
        "export",
        "{prefix} [{bar:30}] {human_pos}/{human_len} entries ({percent}%), eta {eta}",
    );
    pb.set_length(volumes.iter().map(|v| v.entries()).sum());
    let mut base = 0u64;
    for v in &volumes {
        let progress = |n: u64| pb.set_position(base + n);
        // The volume as the dataset held it, for its change set.
        // What the dataset held, read back; a file that cannot be read costs the change set, not the export.
        let before = match changes.map(|_| uffs_results::dataset::held(dir, &host, &v.name)) {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                pb.suspend(|| {
                    eprintln!(
                        "uffs: {host}/{}: no change set: reading what the dataset held: {e}",
                        v.name
                    )
                });
                None
            }
            None => None,
        };
        let w = write_volume(dir, &host, &v.name, &v.parts(), deleted, streams, &progress)?;
        pb.suspend(|| {
            eprintln!(
                "uffs: {}: {} rows, {} bytes",
                w.file.display(),
                w.rows,
                w.bytes
            )
        });
        if let (Some(cdir), Some(old)) = (changes, before) {
            let prefix = v.parts.first().map_or("", |p| p.prefix.as_str());
            let at = (dir, host.as_str(), v.name.as_str());
            let w = uffs_results::dataset::write_changes_since(cdir, at, &old, prefix, streams)?;
            let said = dataset::changes_said(&host, &v.name, old.1, w);
            pb.suspend(|| eprintln!("uffs: {said}"));
        }
        base += v.entries();
    }
    pb.finish_and_clear();
    Ok(())
}
