//! An index file brought up to date with its volume (`uffs index --update`): only what changed is read again
//! ([`crate::update::refresh`]) and written as a delta beside the file (`FILE.delta`), or merged into a new whole
//! index when the delta has grown large or a merge is asked for. The command line says what was done; the
//! daemon keeps its loaded indexes current the same way (`uffs-daemon`'s refresh).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use uffs_index::family;
use uffs_index::file::{self, FileError};
use uffs_index::layer::{self, BaseMap};

use crate::scan::ScanOptions;
use crate::update::{refresh, Applied, Refresh};
use crate::volume::Volume;

/// What [`update`] did to an index file.
pub enum Update {
    /// The file was built with deleted entries and the update asks for none, or the reverse: build it again.
    DeletedDiffers { built_with: bool },
    /// Nothing it holds changed (how that was checked); the file is left as it was.
    Unchanged { checked: String },
    /// The index cannot follow the volume (why): build it again.
    Rebuild(String),
    /// Written: the changes found (`None`: no new ones; the delta already beside the file merged, as asked),
    /// as a delta beside the file, or merged into a whole index of `merged` entries; in `write_time`.
    Written {
        applied: Option<Box<Applied>>,
        merged: Option<usize>,
        write_time: Duration,
    },
}

/// Why an index file could not be brought up to date.
#[derive(Debug)]
pub enum Error {
    /// Reading the index file, or writing it or its delta.
    File {
        path: PathBuf,
        writing: bool,
        source: FileError,
    },
    /// Reading the volume.
    Volume(crate::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::File {
                path,
                writing,
                source,
            } => {
                let verb = if *writing { "writing" } else { "reading index" };
                write!(f, "{verb} {}: {source}", path.display())
            }
            Error::Volume(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// Brings index file `path` up to date with `vol` (entries read as `opts` says, deleted ones included only when
/// the file has them): the changes as a delta beside it, merged into a new whole index when the delta has grown
/// past [`layer::compact_at`] or `merge` asks. Also returns the warnings about a damaged delta passed over.
pub fn update(
    vol: &Volume,
    path: &Path,
    opts: &ScanOptions,
    merge: bool,
) -> Result<(Update, Vec<String>), Error> {
    let file_error = |path: &Path, writing: bool| {
        let path = path.to_path_buf();
        move |source| Error::File {
            path,
            writing,
            source,
        }
    };
    let base = file::read(path).map_err(file_error(path, false))?;
    if base.meta.has_deleted != opts.include_deleted {
        return Ok((
            Update::DeletedDiffers {
                built_with: base.meta.has_deleted,
            },
            Vec::new(),
        ));
    }
    let (delta, warnings) = family::delta_beside(path, &base);
    let map = BaseMap::new(&base);
    let applied = match refresh(vol, &base, &map, delta.as_ref(), opts).map_err(Error::Volume)? {
        Refresh::Unchanged { checked } if !(merge && delta.is_some()) => {
            return Ok((Update::Unchanged { checked }, warnings))
        }
        Refresh::Unchanged { .. } => None,
        Refresh::Rebuild(why) => return Ok((Update::Rebuild(why), warnings)),
        Refresh::Updated(applied) => Some(applied),
    };
    let Some(new) = applied.as_ref().map(|a| &a.delta).or(delta.as_ref()) else {
        unreachable!("a merge without changes is asked only of a file with a delta");
    };
    let t = Instant::now();
    let delta_file = file::delta_path(path);
    let merged = if merge || new.index.len() > layer::compact_at(&base) {
        let (whole, _) = layer::compact(&base, new);
        drop(base);
        file::write(&whole, path).map_err(file_error(path, true))?;
        let _ = std::fs::remove_file(&delta_file);
        Some(whole.len())
    } else {
        file::write_delta(new, &base, &delta_file).map_err(file_error(&delta_file, true))?;
        None
    };
    Ok((
        Update::Written {
            applied,
            merged,
            write_time: t.elapsed(),
        },
        warnings,
    ))
}
