//! uffs's results layer, shared by the command line, the daemon, the HTTP API and the MCP server (ripgrep's
//! `printer` crate is the model): what an entry's columns are ([`column`](mod@column)), how rows print ([`printer`]: paths,
//! CSV, TSV, JSON lines, an aligned table, body files, Parquet), The Sleuth Kit's body file rows
//! ([`bodyfile`]), `uffs export`'s parallel block formatter ([`export`]) and the Parquet writer ([`parquet`]).
//! A column added to [`Column`] appears in each format.

pub mod bodyfile;
pub mod changes;
pub mod column;
pub mod dataset;
pub mod export;
pub mod parquet;
pub mod printer;
pub mod term;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub use column::{full_path, human, thousands, Column, ColumnType, Value};
pub use printer::{ColorChoice, Format, OutputArgs, Printer};

/// What can go wrong writing results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing or creating an output (the context names what: `writing results`, `creating FILE`).
    #[error("{context}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("unknown column {0:?}; columns are: {1}")]
    UnknownColumn(String, String),
    /// A format asked of rows it cannot hold, or an output it cannot go to.
    #[error("{0}")]
    Unsupported(String),
    #[error("writing Parquet")]
    Parquet(#[from] ::parquet::errors::ParquetError),
    #[error("building Parquet columns")]
    Arrow(#[from] arrow_schema::ArrowError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// A file written under a temporary name beside its destination and renamed into place by [`TempFile::commit`]:
/// an error or an interruption never leaves a partial file under the final name (dropped uncommitted, the
/// temporary file is removed; it is registered in [`uffs_index::temp`], so a process ended by a signal removes
/// it too).
pub struct TempFile {
    file: Option<File>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl TempFile {
    pub fn create(dest: &Path) -> Result<TempFile> {
        let dir = dest
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = dest
            .file_name()
            .ok_or_else(|| Error::Unsupported(format!("{} is not a file name", dest.display())))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".uffs-{}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        let file = uffs_index::temp::create(&tmp)
            .map_err(io_err(format!("creating {}", tmp.display())))?;
        Ok(TempFile {
            file: Some(file),
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// Whether output to `dest` goes through a temporary file: yes for a regular file or a name not taken yet;
    /// no for a symbolic link (written through) or what is not a file (a FIFO, a device such as `/dev/stdout`),
    /// which cannot be replaced by a rename.
    pub fn suits(dest: &Path) -> bool {
        match std::fs::symlink_metadata(dest) {
            Ok(m) => m.is_file(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        }
    }

    /// A second handle on the temporary file, to write through.
    pub fn writer(&self) -> Result<File> {
        self.file
            .as_ref()
            .ok_or_else(|| Error::Unsupported("the file was committed".into()))?
            .try_clone()
            .map_err(io_err(format!("opening {}", self.tmp.display())))
    }

    /// The file it becomes.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs and renames the file into place. Every other handle on it must be closed (Windows renames no open
    /// file).
    pub fn commit(mut self) -> Result<()> {
        if let Some(f) = self.file.take() {
            f.sync_all()
                .map_err(io_err(format!("writing {}", self.dest.display())))?;
        }
        uffs_index::temp::persist(&self.tmp, &self.dest).map_err(io_err(format!(
            "renaming {} to {}",
            self.tmp.display(),
            self.dest.display()
        )))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

/// An output file `dest` to write: a [`TempFile`] (returned, to commit once the output is whole) where
/// [`TempFile::suits`] says so, else `dest` itself opened for writing.
pub fn create_output(dest: &Path) -> Result<(File, Option<TempFile>)> {
    if TempFile::suits(dest) {
        let t = TempFile::create(dest)?;
        Ok((t.writer()?, Some(t)))
    } else {
        let f = File::create(dest).map_err(io_err(format!("creating {}", dest.display())))?;
        Ok((f, None))
    }
}

/// Where a command's output goes: `dest` through [`create_output`] (the [`TempFile`] to commit once the output
/// is whole), or stdout, locked, when there is none.
pub fn output_or_stdout(dest: Option<&Path>) -> Result<(Box<dyn io::Write>, Option<TempFile>)> {
    Ok(match dest {
        Some(p) => {
            let (f, t) = create_output(p)?;
            (Box::new(f), t)
        }
        None => (Box::new(io::stdout().lock()), None),
    })
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file.take();
            uffs_index::temp::discard(&self.tmp);
        }
    }
}
