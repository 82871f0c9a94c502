//! `uffs index`: a source's volume indexed into a file, brought up to date (`--update`, `--compact`), with its
//! shadow copies beside it (`--snapshots`). The work is the libraries' (`uffs_mft::scan` builds,
//! `uffs_mft::index_file` updates, `uffs_mft::vss::delta` makes the stores' deltas, `uffs_index::family` names the
//! files); this says what was done.

use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use uffs_index::family::{self, remove_stores, store_path};
use uffs_index::layer::BaseMap;
use uffs_index::Index;
use uffs_mft::update::Applied;
use uffs_mft::Volume;

use crate::common::{
    build, head, index_error, offer_remembered_storage, only_volume, open_source, progress_bar,
    store_delta, summary, thousands, warn, ReadArgs,
};

/// What `uffs index` does besides a build.
pub struct IndexMode {
    /// Apply what changed to the index file instead of building it again (`--update`) …
    pub update: bool,
    /// … and merge its delta into it now (`--compact`).
    pub compact: bool,
    /// Every shadow copy too, each as a delta beside the file (`--snapshots`).
    pub snapshots: bool,
}

/// `uffs index SOURCE -o FILE`: the one volume of `source` indexed into `output` (brought up to date instead with
/// `mode.update`, when the file exists and can follow the volume), and with `mode.snapshots` each of its shadow
/// copies as a delta beside it.
pub fn index_command(
    source: &str,
    partition: Option<u32>,
    output: &Path,
    deleted: bool,
    read: &ReadArgs,
    mode: IndexMode,
) -> Result<()> {
    let IndexMode {
        update,
        compact,
        snapshots,
    } = mode;
    // An index written with --snapshots keeps its stores through updates.
    let snapshots = snapshots || (update && store_path(output, 1).exists());
    if let (true, Some(n)) = (snapshots, uffs_source::split_suffixes(source).2) {
        bail!("{source} is shadow copy {n} of a volume: --snapshots takes the volume, and indexes its every copy");
    }
    if update && snapshots {
        // The volume that keeps the stores, as the file's stores remember it.
        offer_remembered_storage(
            uffs_index::file::read_delta_store(&store_path(output, 1))
                .ok()
                .flatten()
                .as_ref(),
        );
    }
    let mut src = open_source(source, partition, snapshots)?;
    if let Some(v) = src
        .volumes
        .iter()
        .find(|v| uffs_source::split_state(&v.name).is_some())
    {
        bail!(
            "{source} keeps snapshots of its own ({}, …): an index file holds one of them; index each on its own \
             (uffs index {} -o FILE), or search them all with uffs --source {source} --snapshots",
            v.name,
            v.name
        );
    }
    // With --snapshots, each volume is followed by its shadow copies.
    let (stores, present): (Vec<Volume>, Vec<Volume>) = std::mem::take(&mut src.volumes)
        .into_iter()
        .partition(|v| snapshots && uffs_source::split_suffixes(&v.name).2.is_some());
    src.volumes = present;
    let vol = only_volume(
        &src,
        source,
        "an index file holds one: index them one at a time, e.g. uffs index",
        "-o FILE",
    )?;
    if update && output.exists() {
        if let Some(line) = update_index_file(vol, output, deleted, read, compact)? {
            eprintln!("{line}");
            // The stores are deltas over FILE: while it stands (the update went to its delta) they still fit;
            // written again (merged), it describes the volume as it is now, and they are made over it again.
            if !stores.is_empty() {
                // Whether they fit takes FILE's identity only: opened, not read.
                let standing =
                    uffs_index::file::open(output).map_err(|e| index_error(output, e))?;
                if family::stores_beside(output, &standing).is_err() {
                    let base =
                        uffs_index::file::read(output).map_err(|e| index_error(output, e))?;
                    write_stores(vol, &stores, output, &base)?;
                }
            }
            return Ok(());
        }
    }
    let line = write_index(vol, output, deleted, read, &progress_bar(&vol.name))?;
    eprintln!("{line}");
    if snapshots && stores.is_empty() {
        eprintln!("uffs: {}: no shadow copies", head(&vol.name));
    }
    if !stores.is_empty() {
        // The deltas are made over the index as written (its entries in the file's order).
        let base = uffs_index::file::read(output).map_err(|e| index_error(output, e))?;
        write_stores(vol, &stores, output, &base)?;
    }
    Ok(())
}

/// Writes each of `stores` (shadow copies of `vol`, oldest first) beside index file `output` as a delta over
/// `base`, the index it holds, which must describe `vol` as it is now; removes store files left beyond them.
fn write_stores(vol: &Volume, stores: &[Volume], output: &Path, base: &Index) -> Result<()> {
    let map = BaseMap::new(base);
    for (k, store) in stores.iter().enumerate() {
        let (d, line) = store_delta(vol, store, base, &map)?;
        let file = store_path(output, k as u32 + 1);
        uffs_index::file::write_delta(&d, base, &file)
            .with_context(|| format!("writing {}", file.display()))?;
        eprintln!("{line} -> {}", file.display());
    }
    remove_stores(output, stores.len() as u32 + 1);
    Ok(())
}

/// Brings the index file `output` up to date with `vol` by applying only what changed (see
/// [`uffs_mft::index_file::update`]) and gives the line that says what was done; `None` when it must be built
/// again (the reason is printed).
fn update_index_file(
    vol: &Volume,
    output: &Path,
    deleted: bool,
    read: &ReadArgs,
    compact: bool,
) -> Result<Option<String>> {
    use uffs_mft::index_file::{update, Update};
    let t = std::time::Instant::now();
    let (done, warnings) = update(vol, output, &read.scan_options(deleted), compact)?;
    warn(warnings);
    let (applied, merged, write_time) = match done {
        Update::DeletedDiffers { built_with } => {
            eprintln!(
                "uffs: {} was built {} deleted entries; building it again",
                output.display(),
                if built_with { "with" } else { "without" }
            );
            return Ok(None);
        }
        Update::Unchanged { checked } => {
            return Ok(Some(format!(
                "{}: unchanged ({checked}); {} left as it was",
                vol.name,
                output.display()
            )))
        }
        Update::Rebuild(why) => {
            eprintln!("uffs: {}: {why}; building it again", vol.name);
            return Ok(None);
        }
        Update::Written {
            applied,
            merged,
            write_time,
        } => (applied, merged, write_time),
    };
    let mut line = match applied.as_deref() {
        Some(Applied {
            report,
            how,
            find_time,
            delta,
        }) => {
            let s = &report.stats;
            format!(
                "{}: {} changed records found by {how} in {:.1} ms; {} records read again in {:.1} ms; \
                 delta of {} entries hiding {} (entries {:.1} ms, links and totals {:.1} ms, search aids {:.1} ms)",
                vol.name,
                thousands(s.records),
                find_time.as_secs_f64() * 1e3,
                thousands(report.records_read),
                report.read_time.as_secs_f64() * 1e3,
                thousands(delta.index.len() as u64),
                thousands(delta.hidden_count() as u64),
                s.entries_time.as_secs_f64() * 1e3,
                s.link_time.as_secs_f64() * 1e3,
                s.aids_time.as_secs_f64() * 1e3,
            )
        }
        None => format!("{}: unchanged", vol.name),
    };
    line += &match merged {
        Some(n) => format!(
            "; merged into a whole index of {} entries in {:.1} ms",
            thousands(n as u64),
            write_time.as_secs_f64() * 1e3
        ),
        None => format!("; written in {:.1} ms", write_time.as_secs_f64() * 1e3),
    };
    line += &format!(
        "; {:.3} s in all -> {}",
        t.elapsed().as_secs_f64(),
        output.display()
    );
    Ok(Some(line))
}

/// Builds the index of `vol` with its search aids and writes it to `output`; returns the summary line.
pub fn write_index(
    vol: &Volume,
    output: &Path,
    deleted: bool,
    read: &ReadArgs,
    pb: &ProgressBar,
) -> Result<String> {
    let opts = read.scan_options(deleted);
    let (mut idx, report) = build(vol, &opts, pb)?;
    pb.set_message("sorting and writing");
    let t = std::time::Instant::now();
    uffs_index::file::write_with_aids(&mut idx, output)
        .with_context(|| format!("writing {}", output.display()))?;
    // A delta beside the file applied to what it held before; so did shadow copies written with it.
    let _ = std::fs::remove_file(uffs_index::file::delta_path(output));
    remove_stores(output, 1);
    pb.finish_and_clear();
    Ok(format!(
        "{}; search aids and write {:.3} s -> {}",
        summary(vol, &idx, &report),
        t.elapsed().as_secs_f64(),
        output.display()
    ))
}
