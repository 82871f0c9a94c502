//! The daemon's volumes, read by this process: what `uffs grep`, `uffs hash` and `uffs dupes --by content` (and
//! MCP's `grep` through the daemon) read when given neither `--index` nor `--source`. Each registered volume's
//! index file is opened as the daemon last wrote it (the changes it applied are in the delta beside it), and the
//! files' data is read from the volume's source, as the daemon reads it for `content:`. Paths carry the volume's
//! name as the daemon prints them (`C:\…`, `NAME:/…`), so a path from `uffs QUERY` is one these commands take.

use anyhow::{anyhow, bail, Result};
use uffs_daemon::registry::{Registry, VolumeEntry};
use uffs_query::Searcher;

use crate::common::Part;

/// The registered volumes, in the registry's order.
fn entries() -> Result<(std::path::PathBuf, Vec<VolumeEntry>)> {
    let cache = uffs_daemon::dirs::cache_dir()?;
    let registry = Registry::load(&cache)?;
    Ok((cache, registry.volumes))
}

/// The parts of every registered volume's newest index file (the index and its delta), each part's prefix its
/// volume's (`C:`, `NAME:`). A volume whose index is not built yet is named on stderr and left out (the answer
/// is then partial). `what` names the command for the error when no volume is registered.
pub fn parts(what: &str) -> Result<Vec<Part>> {
    let (cache, volumes) = entries()?;
    if volumes.is_empty() {
        bail!(
            "{what} reads the files' data: give --index FILE (its source must be at hand) or --source SOURCE, or \
             register volumes with `uffs volumes add SOURCE` and it reads the daemon's"
        );
    }
    let mut out = Vec::new();
    for e in &volumes {
        // An image or disk that is not at hand (unplugged, moved): its files cannot be read now. (Windows devices,
        // `\\.\C:` and `C:`, are opened as they are.)
        let spec = uffs_source::path_of(&e.source);
        if !spec.starts_with(r"\\") && !is_drive(spec) && std::fs::metadata(spec).is_err() {
            crate::common::mark_partial();
            eprintln!(
                "uffs: warning: volume {}: its source {} is not at hand: left out",
                e.name, e.source
            );
            continue;
        }
        let Some(file) = Registry::index_files(&cache, &e.name).into_iter().next() else {
            crate::common::mark_partial();
            eprintln!(
                "uffs: warning: volume {} has no index yet (see `uffs daemon status`): left out",
                e.name
            );
            continue;
        };
        // The daemon's index of a volume is the file and its delta; shadow copies are volumes of their own.
        for mut p in crate::common::open_index_file(&file)? {
            if p.prefix.is_empty() {
                p.prefix = e.prefix();
                out.push(p);
            }
        }
    }
    if out.is_empty() {
        bail!(
            "none of the daemon's volumes can be read now (see above); give --index FILE or --source SOURCE"
        );
    }
    Ok(out)
}

/// A Windows drive letter (`C:`), which is no path to stat.
fn is_drive(spec: &str) -> bool {
    let b = spec.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// The sources of the volumes `targets` search (registered volumes, by their prefixes), as one source whose
/// volumes are in the targets' order; and how to name it in messages.
pub fn source(targets: &[(&str, &Searcher)], what: &str) -> Result<(uffs_source::Source, String)> {
    let (_, volumes) = entries()?;
    let mut combined = uffs_source::Source {
        spec: "the daemon's volumes".into(),
        kind: uffs_source::SourceKind::Volume,
        container: None,
        partitions: Vec::new(),
        volumes: Vec::new(),
    };
    let mut last = None;
    for (prefix, _) in targets {
        if last == Some(*prefix) {
            continue; // an index and its delta: one volume
        }
        last = Some(*prefix);
        let name = prefix.trim_end_matches(':');
        let e = volumes
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| anyhow!("volume {name} is no longer registered"))?;
        let mut src = crate::common::open_source(&e.source, e.partition, false).map_err(|err| {
            anyhow!(
                "volume {name}: reading the files' data from {}: {err:#}",
                e.source
            )
        })?;
        if src.kind == uffs_source::SourceKind::RawMft {
            bail!(
                "volume {name} is a raw $MFT capture ({}): it holds the records but not the files' data, which \
                 {what} reads",
                e.source
            );
        }
        if src.volumes.is_empty() {
            bail!("volume {name}: {} has no volume uffs reads now", e.source);
        }
        // As the daemon: the volume a registered source gives first is the one its index is of.
        combined.volumes.push(src.volumes.swap_remove(0));
    }
    Ok((combined, "the daemon's volumes".into()))
}
