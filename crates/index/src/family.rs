//! An index file and the files kept beside it, read as the parts a search goes through. Beside `FILE` may be
//! `FILE.delta` (what changed since FILE was written: `uffs index --update`, the daemon's refreshes) and
//! `FILE.vss1`, `FILE.vss2` … (the volume's shadow copies, each as what differs from FILE: `uffs index
//! --snapshots`), all of them [`Delta`]s over FILE's index. `FILE@vssN`, where no such file exists, names shadow
//! copy N alone. The command line, the daemon and the front ends read index files through here.
//!
//! Damage in a file beside FILE is no error: the file is passed over and said in the warnings returned (a delta
//! left from before FILE was written again is passed over silently).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::file::{self, FileError};
use crate::layer::{self, Delta};
use crate::Index;

/// Something to search or export: an index with the prefix its paths get, and for an index under a delta, the
/// entries the delta replaces (a bit per entry). An index file with a delta gives two parts: the index with the
/// delta's entries hidden, and the delta.
pub struct Part {
    pub prefix: String,
    pub index: Arc<Index>,
    pub hidden: Option<Vec<u64>>,
}

impl Part {
    /// An index with nothing hidden.
    pub fn whole(prefix: String, index: Arc<Index>) -> Part {
        Part {
            prefix,
            index,
            hidden: None,
        }
    }
}

/// Why an index file (or one of its shadow copies) could not be read.
#[derive(Debug)]
pub enum Error {
    /// The index file itself: not an index, damaged, unreadable.
    File { path: PathBuf, source: FileError },
    /// A shadow copy's file beside it: damaged, unreadable.
    Store { path: PathBuf, source: FileError },
    /// `FILE@vssN` asked for a shadow copy FILE was not written with; `have` is how many it has.
    NoStore { file: PathBuf, n: u32, have: usize },
    /// The shadow copy's file was written for an earlier FILE.
    StaleStore { file: PathBuf, store: PathBuf },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::File { path, source } => write!(f, "reading index {}: {source}", path.display()),
            Error::Store { path, source } => write!(f, "reading {}: {source}", path.display()),
            Error::NoStore { file, n, have } => write!(
                f,
                "{} has no shadow copy {n}: {}",
                file.display(),
                match have {
                    0 => "it was indexed without them (`uffs index SOURCE --snapshots -o FILE` keeps them)"
                        .to_string(),
                    1 => "it has one, @vss1".to_string(),
                    k => format!("it has {k}, @vss1 to @vss{k}"),
                }
            ),
            Error::StaleStore { file, store } => write!(
                f,
                "{} was written again after {}: run `uffs index --snapshots` again",
                file.display(),
                store.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::File { source, .. } | Error::Store { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What was read, and the warnings about files beside it that were passed over.
pub type WithWarnings<T> = (T, Vec<String>);

fn file_error(path: &Path) -> impl FnOnce(FileError) -> Error + '_ {
    move |source| Error::File {
        path: path.to_path_buf(),
        source,
    }
}

/// The parts of index file `path`, checked wholly: the index, its delta when it has one, and the shadow copies
/// written with it; for `FILE@vssN`, shadow copy N alone (see [`store_spec`]).
pub fn read(path: &Path) -> Result<WithWarnings<Vec<Part>>, Error> {
    if let Some((file, n)) = store_spec(path) {
        let base = file::read(&file).map_err(file_error(&file))?;
        let base = Arc::new(base);
        let d = store_of(&file, n, &base)?;
        return Ok((layered(String::new(), &base, d), Vec::new()));
    }
    let base = file::read(path).map_err(file_error(path))?;
    Ok(with_deltas(path, base))
}

/// The parts of index file `path` opened in O(1) (see [`file::open`]): what is read from the index must be
/// checked with [`Index::verify_touched`] before it is shown (a delta is small: it is checked wholly).
pub fn open(path: &Path) -> Result<WithWarnings<Vec<Part>>, Error> {
    if store_spec(path).is_some() {
        return read(path);
    }
    let base = file::open(path).map_err(file_error(path))?;
    Ok(with_deltas(path, base))
}

/// Index file `path` (or `FILE@vssN`) as one index, checked wholly, with its delta merged in.
pub fn read_merged(path: &Path) -> Result<WithWarnings<Index>, Error> {
    let (file, store) = match store_spec(path) {
        Some((file, n)) => (file, Some(n)),
        None => (path.to_path_buf(), None),
    };
    let base = file::read(&file).map_err(file_error(&file))?;
    let (d, warnings) = match store {
        Some(n) => (Some(store_of(&file, n, &base)?), Vec::new()),
        None => delta_beside(&file, &base),
    };
    let index = match d {
        Some(d) => layer::compact(&base, &d).0,
        None => base,
    };
    Ok((index, warnings))
}

/// The delta beside index file `path` (`FILE.delta`), if it has one that fits `base`: one left from before the
/// index was written again is passed over, a damaged one too, with a warning.
pub fn delta_beside(path: &Path, base: &Index) -> (Option<Delta>, Vec<String>) {
    let file = file::delta_path(path);
    if !file.exists() {
        return (None, Vec::new());
    }
    match file::read_delta(&file, base) {
        Ok(d) => (Some(d), Vec::new()),
        Err(FileError::StaleDelta) => (None, Vec::new()),
        Err(e) => (None, vec![format!("ignoring {}: {e}", file.display())]),
    }
}

/// `FILE@vssN` where FILE is an index file and `FILE@vssN` no file: (FILE, N).
pub fn store_spec(path: &Path) -> Option<(PathBuf, u32)> {
    let s = path.to_str()?;
    let (file, n) = s.rsplit_once("@vss")?;
    let n = n.parse::<u32>().ok()?;
    (!path.exists() && is_index_file_itself(Path::new(file))).then(|| (PathBuf::from(file), n))
}

/// Whether `spec` names an index file, or a shadow copy kept beside one (`FILE@vssN`, see [`store_spec`]).
pub fn is_index_file(spec: &Path) -> bool {
    is_index_file_itself(spec) || store_spec(spec).is_some()
}

fn is_index_file_itself(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && file::is_index_file(&head)
}

/// Where `uffs index --snapshots` writes shadow copy `n` of the volume index file `path` holds: `FILE.vssN`.
pub fn store_path(path: &Path, n: u32) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".vss{n}"));
    p.into()
}

/// Whether a part's prefix names a shadow copy (`@vss2:`, `@1@vss2:`).
pub fn names_store(prefix: &str) -> bool {
    prefix.contains("@vss")
}

/// The delta of shadow copy `n` kept beside index file `file` (whose index is `base`), or why there is none.
pub fn store_of(file: &Path, n: u32, base: &Index) -> Result<Delta, Error> {
    let path = store_path(file, n);
    if !path.exists() {
        let have = (1..).take_while(|&k| store_path(file, k).exists()).count();
        return Err(Error::NoStore {
            file: file.to_path_buf(),
            n,
            have,
        });
    }
    file::read_delta(&path, base).map_err(|e| match e {
        FileError::StaleDelta => Error::StaleStore {
            file: file.to_path_buf(),
            store: path.clone(),
        },
        source => Error::Store {
            path: path.clone(),
            source,
        },
    })
}

/// The shadow copy files beside index file `path` (`FILE.vss1` …, oldest first), read as deltas over `base`; the
/// first that cannot be, with why.
pub fn stores_beside(path: &Path, base: &Index) -> Result<Vec<(u32, Delta)>, (PathBuf, FileError)> {
    let mut out = Vec::new();
    for n in 1.. {
        let file = store_path(path, n);
        if !file.exists() {
            break;
        }
        match file::read_delta(&file, base) {
            Ok(d) => out.push((n, d)),
            Err(e) => return Err((file, e)),
        }
    }
    Ok(out)
}

/// Removes the shadow copy files beside index file `path` from store `from` on (left from an earlier
/// `uffs index --snapshots` of a volume that had more stores, or of one indexed now without them).
pub fn remove_stores(path: &Path, from: u32) {
    for n in from.. {
        if std::fs::remove_file(store_path(path, n)).is_err() {
            break;
        }
    }
}

/// The two parts of `base` under delta `d`: `base` with the delta's entries hidden, and the delta.
pub fn layered(prefix: String, base: &Arc<Index>, d: Delta) -> Vec<Part> {
    vec![
        Part {
            prefix: prefix.clone(),
            // Paths below folders the delta renamed or moved resolve through their new paths.
            index: layer::view(base, &d.hidden, &d.index),
            hidden: Some(d.hidden),
        },
        Part::whole(prefix, d.index),
    ]
}

/// Index file `path`'s parts: `base` with the delta beside it, then the shadow copies written with it (all of
/// them or, when one no longer fits `base` or is damaged, none, with a warning, so that the stores keep their
/// numbers).
fn with_deltas(path: &Path, base: Index) -> WithWarnings<Vec<Part>> {
    let base = Arc::new(base);
    let (delta, mut warnings) = delta_beside(path, &base);
    // A walked folder's entries print as the real paths below it; a volume's as they are.
    let prefix = crate::folder_root(&base.meta.source)
        .unwrap_or_default()
        .to_string();
    let mut parts = match delta {
        None => vec![Part::whole(prefix, base.clone())],
        Some(d) => layered(prefix, &base, d),
    };
    let stores = stores_beside(path, &base).unwrap_or_else(|(file, e)| {
        let why = match e {
            FileError::StaleDelta => format!(
                "{} was written again after it; run `uffs index --snapshots` again",
                path.display()
            ),
            e => e.to_string(),
        };
        warnings.push(format!(
            "ignoring the shadow copies beside {}: {}: {why}",
            path.display(),
            file.display()
        ));
        Vec::new()
    });
    parts.extend(
        stores
            .into_iter()
            .flat_map(|(n, d)| layered(format!("@vss{n}:"), &base, d)),
    );
    (parts, warnings)
}
