//! The daemon's Parquet dataset (`uffs volumes export --dataset DIR`): each loaded volume written as
//! `DIR/host=HOST/volume=NAME/uffs.parquet` (`uffs_results::dataset`) from what the daemon answers, its index and
//! the delta of the changes applied since; on request and, when kept (`--keep`, recorded as `dataset.json` in the
//! cache directory), again after each update or rebuild of a volume, so the dataset stays as current as the
//! daemon. With a change folder, each write also writes what changed since the dataset last held the volume
//! (`uffs_results::dataset::write_changes`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uffs_results::dataset::{held, safe_name, write_changes_since, write_volume, Part, Written};

use crate::server::{log, Loaded, Shared};

/// Where the dataset goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub dir: PathBuf,
    /// Already [safe](safe_name).
    pub host: String,
    /// Where each volume's change set goes, if anywhere.
    #[serde(default)]
    pub changes: Option<PathBuf>,
}

const KEPT: &str = "dataset.json";

/// The dataset kept current, if one is.
pub fn kept(cache: &Path) -> Option<Target> {
    let text = std::fs::read(cache.join(KEPT)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Records `target` as the dataset to keep current, or forgets it (`None`).
pub fn keep(cache: &Path, target: Option<&Target>) -> std::io::Result<()> {
    let file = cache.join(KEPT);
    match target {
        None => match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
        Some(t) => {
            let tmp = cache.join(format!(".{KEPT}.tmp"));
            std::fs::write(
                &tmp,
                serde_json::to_vec_pretty(t).map_err(std::io::Error::other)?,
            )?;
            std::fs::rename(&tmp, &file)
        }
    }
}

/// Writes volume `l` into `t`: its index (less what its delta replaces), then the delta; deleted entries when the
/// volume keeps them, and streams; then its change set when `t` has a change folder. Returns what to say.
pub fn write(l: &Loaded, t: &Target) -> Result<String, String> {
    let name = safe_name(&l.entry.name);
    // What the dataset held, read back; a file that cannot be read costs the change set, not the write.
    let before = match &t.changes {
        Some(_) => held(&t.dir, &t.host, &name),
        None => Ok(None),
    };
    let w = write_parts(l, t, &name)?;
    let mut line = said(&l.entry.name, &w);
    let before = match before {
        Ok(b) => b,
        Err(e) => {
            line.push_str(&format!(
                "; no change set: reading what the dataset held: {e}"
            ));
            None
        }
    };
    if let (Some(cdir), Some(old)) = (&t.changes, before) {
        let at = (t.dir.as_path(), t.host.as_str(), name.as_str());
        match write_changes_since(cdir, at, &old, &l.entry.prefix(), true) {
            Ok(Some(c)) => line.push_str(&format!("; {} changes to {}", c.rows, c.file.display())),
            Ok(None) => line.push_str("; no changes"),
            Err(e) => return Err(format!("its change set: {e}")),
        }
    }
    Ok(line)
}

/// Writes volume `l`'s file as `name` into `t`.
fn write_parts(l: &Loaded, t: &Target, name: &str) -> Result<Written, String> {
    let prefix = l.entry.prefix();
    let base = l.base();
    let mut parts = vec![Part {
        index: base,
        prefix: &prefix,
        hidden: l.delta.as_ref().map(|d| d.hidden.as_slice()),
    }];
    if let Some(d) = &l.delta {
        parts.push(Part {
            index: &d.index,
            prefix: &prefix,
            hidden: None,
        });
    }
    write_volume(
        &t.dir,
        &t.host,
        name,
        &parts,
        l.entry.deleted,
        true,
        &|_| {},
    )
    .map_err(|e| e.to_string())
}

/// The line a volume written says.
fn said(name: &str, w: &Written) -> String {
    format!(
        "{name}: {} rows to {} ({} bytes)",
        w.rows,
        w.file.display(),
        w.bytes
    )
}

/// After volume `name` changed: writes it again into the kept dataset, if there is one.
pub(crate) fn after_update(shared: &Shared, name: &str) {
    let Some(t) = kept(shared.cache_dir()) else {
        return;
    };
    let snap = crate::server::current(shared);
    let Some(l) = snap.volumes.iter().find(|v| v.entry.name == name) else {
        return;
    };
    match write(l, &t) {
        Ok(line) => log(&format!("dataset: {line}")),
        Err(why) => log(&format!("dataset: {name}: {why}")),
    }
}
