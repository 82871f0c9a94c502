//! A mounted folder of any file system (ext4, XFS, Btrfs, tmpfs, a FUSE mount, a network share) read by walking
//! it, for the file systems uffs does not read raw or whose device the user may not open. What the walk keeps is
//! what a raw read keeps: the inode as the entry's id (hard links are one entry with a name each), sizes and
//! allocated bytes, the four times where the kernel gives them, mode, owner, group and symlink targets.
//!
//! * [`Options`]: what is not walked: other file systems below the folder (as `find -xdev`, unless
//!   [`Options::cross_mounts`]), pseudo file systems (never), and updatedb's prune rules ([`Prune`]).
//! * [`Folder`]: an opened folder, a [`uffs_fs::Reader`] like any raw reader's volume, so that the index build,
//!   `uffs info` and the daemon take it as they take a volume.
//! * `watch`: a walked folder's changes as the system reports them (Linux: fanotify, or inotify; Windows:
//!   `ReadDirectoryChangesW`).
//! * [`mounts`]: the system's mount table (`/proc/self/mountinfo`): which file system and device a folder is on.
//!
//! On Windows (`win`) each folder is listed with `FindFirstFileExW` (large fetches: names, attributes, sizes and
//! times come with the listing), several at once; no file is opened, so ids are handed out in listing order.
//!
//! The walk itself (Linux) reads each folder with `getdents64` into a large buffer and each entry with `statx`
//! relative to the folder's descriptor (`AT_STATX_DONT_SYNC`: a network file system is not asked to flush),
//! several folders at once on every core, and packs the entries into a per-thread [`uffs_fs::Spool`] without an
//! allocation each; the spools are merged in id order for the builder.

pub mod mounts;
mod prune;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod walk;
#[cfg(target_os = "linux")]
pub mod watch;
#[cfg(windows)]
#[path = "watch_win.rs"]
pub mod watch;
#[cfg(windows)]
mod win;

pub use prune::Prune;
#[cfg(target_os = "linux")]
pub use walk::{reread, Reread};

/// The root folder's id in a walk (its inode is not: see the walk's numbering).
pub const ROOT_ID: u64 = 2;

/// How this system's walk reads a folder, for `uffs info`.
const HOW: &str = if cfg!(windows) {
    "GetFileInformationByHandleEx listings"
} else {
    "getdents64 and statx"
};

/// `path` without Windows's verbatim prefix (`\\?\C:\x` is `C:\x`, `\\?\UNC\server\share` is
/// `\\server\share`), as users write it and as paths print; elsewhere `path`.
pub fn plain(path: PathBuf) -> PathBuf {
    if !cfg!(windows) {
        return path;
    }
    let s = path.to_string_lossy();
    let shorter = match s.strip_prefix(r"\\?\UNC\") {
        Some(rest) => Some(format!(r"\\{rest}")),
        None => s.strip_prefix(r"\\?\").map(str::to_string),
    };
    shorter.map_or(path.clone(), PathBuf::from)
}

use std::path::{Path, PathBuf};

use uffs_fs::{FileSystem, Scan, ScanOptions, Sink, Space};

/// What a walk leaves out.
#[derive(Debug, Clone)]
pub struct Options {
    /// Walk into other file systems mounted below the folder (`find` without `-xdev`); bind mounts of a file
    /// system already walked and pseudo file systems are left out all the same.
    pub cross_mounts: bool,
    pub prune: Prune,
    /// Folders read at once; 0: as the machine suits (see [`Options::threads`]).
    pub threads: usize,
    /// Read a folder that is the top of a file system uffs reads raw through its device, when this user may
    /// (the source layer decides); `false` (`--walk`): always walk.
    pub raw: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cross_mounts: false,
            prune: Prune::updatedb(),
            threads: 0,
            raw: true,
        }
    }
}

impl Options {
    /// Threads that walk: twice the cores, at least 4 and at most 16. A walk waits on the disk (cold) or on the
    /// kernel's locks (warm) as much as it computes, so more folders in flight than cores pay.
    pub fn threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        // For measuring: the benchmarks try other counts.
        if let Some(n) = std::env::var("UFFS_WALK_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            return usize::max(n, 1);
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (2 * cores).clamp(4, 16)
    }
}

/// The options every folder opened by this process is walked with, unless told others: set once from the
/// command line ([`set_default_options`]).
static DEFAULTS: std::sync::Mutex<Option<Options>> = std::sync::Mutex::new(None);

/// Makes `opts` what [`Folder::open`] walks with in this process.
pub fn set_default_options(opts: Options) {
    *DEFAULTS.lock().unwrap_or_else(|e| e.into_inner()) = Some(opts);
}

/// The options set by [`set_default_options`], or the defaults.
pub fn default_options() -> Options {
    DEFAULTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

/// Why a folder cannot be walked at all.
pub type Error = uffs_fs::Error;

/// A folder opened for walking: its real absolute path, and the file system it is on.
pub struct Folder {
    /// Absolute, symlinks resolved: what every entry's path starts with.
    pub path: PathBuf,
    /// The mount it is on (its mount point, type and device), when the mount table tells.
    pub mount: Option<mounts::Mount>,
    pub options: Options,
    /// Why it is walked rather than read raw, when the source layer tried (for `uffs info`).
    pub why_walked: Option<String>,
    /// The file system's id (`statfs`'s `f_fsid`, or the device number).
    serial: u64,
    space: Option<Space>,
}

impl Folder {
    /// Opens `path`, a folder, for walking with `opts`. Refuses a pseudo file system (`/proc`, `/sys` …), whose
    /// entries are the kernel's state rather than files.
    pub fn open(path: &Path, opts: Options) -> Result<Folder, Error> {
        let real = plain(
            std::fs::canonicalize(path)
                .map_err(|e| Error::new(format!("{}: {e}", path.display())))?,
        );
        if !real.is_dir() {
            return Err(Error::new(format!("{} is not a folder", path.display())));
        }
        let mount = mounts::Mount::of(&real);
        if let Some(m) = &mount {
            if prune::is_pseudo(&m.fstype) {
                return Err(Error::new(format!(
                    "{} is on a {} file system, whose entries are the kernel's state, not files: it is not walked",
                    real.display(),
                    m.fstype
                )));
            }
        }
        let (serial, space) = Folder::identify(&real, mount.as_ref())?;
        Ok(Folder {
            path: real,
            mount,
            options: opts,
            why_walked: None,
            serial,
            space,
        })
    }

    #[cfg(target_os = "linux")]
    fn identify(real: &Path, mount: Option<&mounts::Mount>) -> Result<(u64, Option<Space>), Error> {
        let c = sys::cstring(real.as_os_str());
        let st = sys::stat_path(&c).map_err(|e| Error::new(format!("{}: {e}", real.display())))?;
        let (fsid, space) = sys::fs_space(&c);
        // The space of the whole file system is what the entries add up to only when the walk starts at its top.
        let at_top = mount.is_some_and(|m| m.point == real);
        Ok((
            fsid.unwrap_or(u64::from(st.stx_dev_major) << 32 | u64::from(st.stx_dev_minor)),
            space.filter(|_| at_top),
        ))
    }

    /// On Windows: the folder's path, hashed, names it (a listing gives no volume serial); its space is not
    /// asked for.
    #[cfg(windows)]
    fn identify(
        real: &Path,
        _mount: Option<&mounts::Mount>,
    ) -> Result<(u64, Option<Space>), Error> {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in real.to_string_lossy().to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        Ok((h, None))
    }

    #[cfg(not(any(target_os = "linux", windows)))]
    fn identify(
        real: &Path,
        _mount: Option<&mounts::Mount>,
    ) -> Result<(u64, Option<Space>), Error> {
        Err(Error::new(format!(
            "{}: walking a folder is not built for this system yet",
            real.display()
        )))
    }

    /// The file system's type as the mount table names it (`btrfs`, `tmpfs`, `fuse.sshfs`), or `unknown`.
    pub fn fstype(&self) -> &str {
        self.mount.as_ref().map_or("unknown", |m| m.fstype.as_str())
    }

    /// The folder's path as the index keeps a walked folder's source: with a `/` after it, which says that the
    /// entries' paths start there (see `uffs_index::folder_root`).
    pub fn source(&self) -> String {
        let mut s = self.path.to_string_lossy().into_owned();
        // A Windows drive's root (`D:\`): its entries' paths start at `D:`.
        if cfg!(windows) && s.ends_with('\\') {
            s.pop();
        }
        if !s.ends_with('/') {
            s.push('/');
        }
        s
    }
}

impl uffs_fs::Reader for Folder {
    fn filesystem(&self) -> FileSystem {
        FileSystem::Folder
    }

    fn serial(&self) -> u64 {
        self.serial
    }

    fn root(&self) -> u64 {
        ROOT_ID
    }

    fn facts(&self) -> Vec<(String, String)> {
        let mut f = vec![
            ("Folder".to_string(), self.path.display().to_string()),
            (
                "Read".to_string(),
                match &self.why_walked {
                    Some(why) => format!("walked ({HOW}), not raw: {why}"),
                    None => format!("walked ({HOW})"),
                },
            ),
        ];
        if let Some(m) = &self.mount {
            f.push(("File system".into(), m.fstype.clone()));
            f.push(("Mount point".into(), m.point.display().to_string()));
            f.push(("Mounted from".into(), m.source.clone()));
        }
        f.push((
            "Other mounts below".into(),
            if self.options.cross_mounts {
                "walked (--cross-mounts)".into()
            } else {
                "not walked (as find -xdev)".into()
            },
        ));
        f.extend(self.options.prune.facts());
        f
    }

    fn space(&self) -> Option<Space> {
        self.space
    }

    fn scan(&self, _opts: &ScanOptions) -> uffs_fs::Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(_opts, &mut |b: Vec<uffs_fs::Entry>| entries.extend(b))?;
        Ok(Scan {
            root: ROOT_ID,
            entries,
            warnings,
            space: self.space.unwrap_or_default(),
        })
    }

    fn scan_sorted(
        &self,
        _opts: &ScanOptions,
        sink: &mut dyn Sink,
    ) -> uffs_fs::Result<Vec<String>> {
        #[cfg(target_os = "linux")]
        {
            let (spool, warnings) = walk::walk(self)?;
            sink.expect(spool.len());
            spool.drain_sorted(sink);
            Ok(warnings)
        }
        #[cfg(windows)]
        {
            let (spool, warnings) = win::walk(self)?;
            sink.expect(spool.len());
            spool.drain_sorted(sink);
            Ok(warnings)
        }
        #[cfg(not(any(target_os = "linux", windows)))]
        {
            let _ = sink;
            Err(Error::new(
                "walking a folder is not built for this system yet",
            ))
        }
    }
}
