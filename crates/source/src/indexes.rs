//! A source's volumes as indexes: each volume built, each shadow copy after its volume read as a delta over the
//! volume's index (only the MFT records in blocks its store changed), each with the prefix its paths get. What
//! every front end that searches a source rather than an index file does; they bring the progress bars and the
//! lines that tell the user (a [`Report`]).

use std::sync::Arc;

use uffs_index::family::{layered, Part};
use uffs_index::layer::{BaseMap, Delta, StoreIdentity};
use uffs_index::Index;
use uffs_mft::{ScanOptions, ScanReport, Volume};

use crate::{split_suffixes, Error, Result, Source};

/// What a front end shows as a source's volumes are read.
pub trait Report {
    /// Volume `vol` is about to be built: the progress callback for its build (entries done, entries in all). The
    /// moment to ready the process for a build's large allocations, too.
    fn building(&self, vol: &Volume) -> Box<dyn Fn(u64, u64) + Sync + '_>;

    /// Volume `vol` was built into `idx`; `report` says how, and what the build skipped.
    fn built(&self, vol: &Volume, idx: &Index, report: &ScanReport);

    /// Shadow copy `then` was read as a delta over its volume's index.
    fn delta_read(&self, then: &Volume, facts: &StoreDelta);
}

/// How a shadow copy was read as a delta over its volume's present index.
#[derive(Debug, Clone)]
pub struct StoreDelta {
    /// MFT records that differ from the present's.
    pub records_changed: u64,
    /// Entries of the shadow copy in all (the present's, hidden and added ones counted).
    pub entries: u64,
    /// Entries the delta itself holds.
    pub delta_entries: u64,
    pub seconds: f64,
}

/// The prefix of volume `vol`'s paths among a source's `several` volumes: none for a single volume, `@N:` for
/// partition N, `@vssN:` for shadow copy N, `@N@vssM:` for both, `@snapN:` for snapshot N; a mounted folder's
/// path (`/home/ana`).
pub fn prefix_of(vol: &Volume, several: bool) -> String {
    // A folder's entries print as the real paths below it.
    if let Some(root) = uffs_index::folder_root(&vol.name) {
        return root.to_string();
    }
    if let (Some((_, id)), true) = (crate::source::split_state(&vol.name), several) {
        return match &vol.partition {
            Some(p) => format!("@{}@snap{id}:", p.index),
            None => format!("@snap{id}:"),
        };
    }
    let store = split_suffixes(&vol.name).2;
    match (&vol.partition, store, several) {
        (_, _, false) | (None, None, _) => String::new(),
        (Some(p), None, true) => format!("@{}:", p.index),
        (None, Some(n), true) => format!("@vss{n}:"),
        (Some(p), Some(n), true) => format!("@{}@vss{n}:", p.index),
    }
}

/// The index of every volume of `src` (opened with its shadow copies, if asked), in order: a volume built whole
/// (`opts`), a shadow copy as a delta over the volume before it.
pub fn indexes_of(src: &Source, opts: &ScanOptions, report: &dyn Report) -> Result<Vec<Part>> {
    let several = src.volumes.len() > 1;
    let mut out = Vec::new();
    // The volume the stores that follow it are shadow copies of: its index, and the map a delta over it needs.
    let mut present: Option<(&Volume, Arc<Index>, Option<BaseMap>)> = None;
    for vol in &src.volumes {
        let prefix = prefix_of(vol, several);
        let store = split_suffixes(&vol.name).2;
        if let (Some(_), Some((now, base, map))) = (store, present.as_mut()) {
            let map = map.get_or_insert_with(|| BaseMap::new(base));
            let (d, facts) = store_delta(now, vol, base, map)?;
            report.delta_read(vol, &facts);
            out.extend(layered(prefix, base, d));
            continue;
        }
        let (idx, built) = {
            let progress = report.building(vol);
            uffs_mft::build_index(vol, opts, &*progress).map_err(|e| in_indexing(vol, e))?
        };
        report.built(vol, &idx, &built);
        let idx = Arc::new(idx);
        present = Some((vol, idx.clone(), None));
        out.push(Part::whole(prefix, idx));
    }
    Ok(out)
}

/// Shadow copy `then` of volume `now` as a delta over `now`'s index `base` (see `uffs_mft::vss::delta`), named
/// by its shadow copy id, and, when its stores are kept on another volume the user offered, by that volume too.
pub fn store_delta(
    now: &Volume,
    then: &Volume,
    base: &Index,
    map: &BaseMap,
) -> Result<(Delta, StoreDelta)> {
    let t = std::time::Instant::now();
    let changed =
        uffs_mft::vss::delta::changed_records(now, then).map_err(|e| in_indexing(then, e))?;
    let mut d =
        uffs_mft::vss::delta::delta(then, base, map, &changed).map_err(|e| in_indexing(then, e))?;
    // Named for good: the store's position among the volume's shifts when Windows deletes older ones.
    d.store = then.snapshot.as_ref().map(|s| StoreIdentity {
        shadow_copy_id: s.shadow_copy_id,
        store_id: s.id,
        created: s.created,
        // Kept on a volume the user gave: remembered, so that the store's data reads without it later.
        storage: s
            .storage
            .as_ref()
            .and_then(crate::storage::offered_source_of),
    });
    let facts = StoreDelta {
        records_changed: changed.len() as u64,
        entries: d.entries(base) as u64,
        delta_entries: d.index.len() as u64,
        seconds: t.elapsed().as_secs_f64(),
    };
    Ok((d, facts))
}

/// `indexing NAME: why`, as every build's error reads, of the same kind as `e` (an internal one excepted).
fn in_indexing(vol: &Volume, e: Error) -> Error {
    let about = |what: String| format!("indexing {}: {what}", vol.name);
    match e {
        Error::Io { what, cause } => Error::Io {
            what: about(what),
            cause,
        },
        Error::Format { what, cause } => Error::Format {
            what: about(what),
            cause,
        },
        Error::Source(m) => Error::Source(about(m)),
        Error::Privilege(m) => Error::Privilege(about(m)),
        // Said as before the move here: `indexing NAME: internal error: ...`, the panic's words last.
        e @ Error::Internal(_) => Error::Source(about(e.to_string())),
    }
}
