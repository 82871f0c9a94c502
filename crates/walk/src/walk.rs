//! The walk (Linux): folders read on several threads at once, each one's entries packed into the thread's own
//! [`Spool`] sorted by id (a folder becomes one ascending stretch), the spools merged at the end.

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use uffs_fs::{attr, Entry, Kind, Posix, Spool, Times, UNREADABLE};

use crate::{mounts, sys, Error, Folder};

/// The root folder's id, whatever its inode (as ext's root, which The Sleuth Kit numbers alike).
const ROOT: u64 = crate::ROOT_ID;

/// An entry's id is its inode when that is below this, on the folder's own file system, and neither 2 nor the
/// root's: the index keeps an id's low 32 bits as its record number, which must be one file's alone.
const DIRECT: u64 = 1 << 31;

/// Where the ids the walk hands out start, counting down: for entries of another file system than the folder's
/// (crossed into with `--cross-mounts`, or a mount point's own root), inodes of [`DIRECT`] or more, and inode 2
/// when it is not the root. (The index keeps record `u32::MAX` for its `$Orphan` folder.)
const FAR_TOP: u64 = 0xFFFF_FF00;

/// Bytes a `getdents64` call may fill: a folder of a few thousand entries in one call.
const LISTING: usize = 128 * 1024;

/// A folder to read.
struct Job {
    id: u64,
    /// Absolute, without a NUL.
    path: Vec<u8>,
    dev: u64,
    mnt: u64,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Threads reading a folder (that may yet add folders).
    busy: usize,
}

struct Shared<'a> {
    folder: &'a Folder,
    queue: Mutex<Queue>,
    ready: Condvar,
    root_dev: u64,
    root_ino: u64,
    far: Mutex<Far>,
    /// The mounts a walk may cross into, by id (only read with `--cross-mounts`).
    mounts: Vec<mounts::Mount>,
    /// The file systems (devices) walked, so that a bind mount of one is not walked twice.
    devices: Mutex<HashSet<u64>>,
    /// For a partial walk ([`reread`]): which subfolders to walk into (those the index does not know); `None`:
    /// all of them.
    descend: Option<&'a (dyn Fn(u64) -> bool + Sync)>,
    /// An id was handed out (a mount point, a large inode): a partial walk's ids may not be a whole walk's.
    far_used: AtomicBool,
}

/// The ids handed out from [`FAR_TOP`] down, by (device, inode): a hard link's names share one.
struct Far {
    ids: HashMap<(u64, u64), u64>,
    next: u64,
}

/// Walks `folder`: every entry below it (its own included, as the root), and the warnings of what could not be
/// read.
pub fn walk(folder: &Folder) -> Result<(Spool, Vec<String>), Error> {
    let (shared, st) = shared(folder, None)?;
    let root = ROOT;
    let mut spool = Spool::new();
    let mut e = Entry::default();
    fill(&mut e, root, root, b"", &st);
    spool.push_ref(&e);
    shared.queue.lock().expect("not poisoned").jobs.push(Job {
        id: root,
        path: folder.path.as_os_str().as_encoded_bytes().to_vec(),
        dev: device(&st),
        mnt: st.stx_mnt_id,
    });
    let warnings = run(&shared, &mut spool);
    Ok((spool, warnings))
}

/// Folders below a walked folder read again, after the kernel reported changes in them.
#[derive(Debug, Default)]
pub struct Reread {
    /// Each folder's own entry and every entry in it, and every entry below the subfolders the index did not
    /// know (made or moved in since), in id order.
    pub entries: Vec<Entry>,
    /// The ids of the folders listed.
    pub listed: Vec<u64>,
    /// A folder could not be read, or one asked for is gone (moved or deleted since it was reported).
    pub missing: bool,
    /// The ids are a whole walk's: false when an entry of another file system or an inode the walk numbers
    /// itself was met (its number is this walk's); then only a whole walk is exact.
    pub exact: bool,
    pub warnings: Vec<String>,
}

/// Reads folders `dirs` (below `folder`, absolute) again: their own entries and what is in them, and whole
/// every subfolder `is_new` says the index does not know.
pub fn reread(
    folder: &Folder,
    dirs: &[std::path::PathBuf],
    is_new: &(dyn Fn(u64) -> bool + Sync),
) -> Result<Reread, Error> {
    let (shared, root_st) = shared(folder, Some(is_new))?;
    let mut out = Reread {
        exact: true,
        ..Reread::default()
    };
    let mut spool = Spool::new();
    let mut e = Entry::default();
    {
        let w = Worker::new(&shared);
        let mut q = shared.queue.lock().expect("not poisoned");
        for d in dirs {
            // Gone since it was reported: deleted (its parent's report lists that) or renamed, when what changed
            // in it would be lost; the reports name folders by their paths after every move read, so this is a
            // move or delete racing the read, and only a whole walk is sure.
            let Ok(st) = sys::stat_path(&sys::cstring(d.as_os_str())) else {
                out.missing = true;
                continue;
            };
            if u32::from(st.stx_mode) & libc::S_IFMT != libc::S_IFDIR
                || device(&st) != shared.root_dev
            {
                out.exact = false;
                continue;
            }
            let id = w.id_of(device(&st), st.stx_ino);
            if *d == folder.path {
                fill(&mut e, ROOT, ROOT, b"", &root_st);
            } else {
                let (Some(parent), Some(name)) = (d.parent(), d.file_name()) else {
                    continue;
                };
                let Ok(pst) = sys::stat_path(&sys::cstring(parent.as_os_str())) else {
                    out.missing = true;
                    continue;
                };
                let pid = w.id_of(device(&pst), pst.stx_ino);
                fill(&mut e, id, pid, name.as_encoded_bytes(), &st);
            }
            spool.push_ref(&e);
            out.listed.push(id);
            q.jobs.push(Job {
                id,
                path: d.as_os_str().as_encoded_bytes().to_vec(),
                dev: device(&st),
                mnt: st.stx_mnt_id,
            });
        }
    }
    out.warnings = run(&shared, &mut spool);
    out.missing |= !out.warnings.is_empty();
    out.exact &= !shared.far_used.load(Ordering::Relaxed);
    out.entries = spool.into_entries();
    // A folder both asked for and new below another one is listed twice, alike.
    out.entries.dedup();
    out.listed.sort_unstable();
    out.listed.dedup();
    Ok(out)
}

/// The state the walking threads share, for `folder` (and `descend`, see [`Shared::descend`]), and the
/// folder's own `statx`.
fn shared<'a>(
    folder: &'a Folder,
    descend: Option<&'a (dyn Fn(u64) -> bool + Sync)>,
) -> Result<(Shared<'a>, libc::statx), Error> {
    let c = sys::cstring(folder.path.as_os_str());
    let st =
        sys::stat_path(&c).map_err(|e| Error::new(format!("{}: {e}", folder.path.display())))?;
    let dev = device(&st);
    let shared = Shared {
        folder,
        queue: Mutex::new(Queue::default()),
        ready: Condvar::new(),
        root_dev: dev,
        root_ino: st.stx_ino,
        far: Mutex::new(Far {
            ids: HashMap::new(),
            next: FAR_TOP,
        }),
        mounts: if folder.options.cross_mounts {
            mounts::table()
        } else {
            Vec::new()
        },
        devices: Mutex::new(HashSet::from([dev])),
        descend,
        far_used: AtomicBool::new(false),
    };
    Ok((shared, st))
}

/// Reads the folders queued in `shared` (and those they lead to) on the walk's threads into `spool`; returns
/// the warnings, sorted.
fn run(shared: &Shared, spool: &mut Spool) -> Vec<String> {
    let threads = shared.folder.options.threads();
    let done: Vec<(Spool, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| Worker::new(shared).run()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a walking thread panicked"))
            .collect()
    });
    let mut warnings = Vec::new();
    for (sp, w) in done {
        spool.absorb(sp);
        warnings.extend(w);
    }
    warnings.sort();
    warnings
}

/// One walking thread's state: its spool, and buffers reused for every folder.
struct Worker<'s, 'a> {
    shared: &'s Shared<'a>,
    spool: Spool,
    listing: Vec<u8>,
    /// The current folder's entries, filled in place folder after folder (their names' buffers kept).
    slots: Vec<Entry>,
    order: Vec<(u64, u32)>,
    found: Vec<Job>,
    warnings: Vec<String>,
}

impl<'s, 'a> Worker<'s, 'a> {
    fn new(shared: &'s Shared<'a>) -> Self {
        Worker {
            shared,
            spool: Spool::new(),
            listing: vec![0; LISTING],
            slots: Vec::new(),
            order: Vec::new(),
            found: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn run(mut self) -> (Spool, Vec<String>) {
        while let Some(job) = self.next() {
            self.read(&job);
            let mut q = self.shared.queue.lock().expect("not poisoned");
            q.jobs.append(&mut self.found);
            q.busy -= 1;
            if !q.jobs.is_empty() || q.busy == 0 {
                self.shared.ready.notify_all();
            }
        }
        (self.spool, self.warnings)
    }

    /// The next folder to read; `None` once none is left and no thread may add one.
    fn next(&self) -> Option<Job> {
        let mut q = self.shared.queue.lock().expect("not poisoned");
        loop {
            if let Some(j) = q.jobs.pop() {
                q.busy += 1;
                return Some(j);
            }
            if q.busy == 0 {
                return None;
            }
            q = self.shared.ready.wait(q).expect("not poisoned");
        }
    }

    /// Reads folder `job`: its entries into the spool, its subfolders to walk into `found`.
    fn read(&mut self, job: &Job) {
        let shown = || String::from_utf8_lossy(&job.path).into_owned();
        let mut c = job.path.clone();
        c.push(0);
        let c = CStr::from_bytes_with_nul(&c).expect("one NUL, at the end");
        let dir = match sys::open_dir(c) {
            Ok(d) => d,
            Err(e) => {
                self.warnings.push(format!("{UNREADABLE}{}: {e}", shown()));
                return;
            }
        };
        let mut n = 0usize;
        let mut unstated = (0u64, None);
        let mut listing = std::mem::take(&mut self.listing);
        loop {
            let got = match sys::getdents(&dir, &mut listing) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) => {
                    self.warnings.push(format!("{UNREADABLE}{}: {e}", shown()));
                    break;
                }
            };
            for d in sys::dirents(&listing[..got]) {
                if n == self.slots.len() {
                    self.slots.push(Entry::default());
                }
                match sys::stat_at(&dir, d.name) {
                    Ok(st) => {
                        // A mount point shows the root of what is mounted there: never one of this file
                        // system's inodes (a bind mount's may be this very folder's).
                        let id = if device(&st) != job.dev || st.stx_mnt_id != job.mnt {
                            self.far_id(device(&st), st.stx_ino)
                        } else {
                            self.id_of(device(&st), st.stx_ino)
                        };
                        let e = &mut self.slots[n];
                        fill(e, id, job.id, d.name.to_bytes(), &st);
                        if e.kind == Kind::Symlink {
                            let t = e.link_target.get_or_insert_with(Vec::new);
                            if sys::read_link_at(&dir, d.name, t).is_err() {
                                e.link_target = None;
                            }
                        }
                        if e.kind == Kind::Folder {
                            self.enter(job, d.name.to_bytes(), id, &st);
                        }
                    }
                    // Gone since the listing: as if it had not been there.
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                    // Named but not to be looked at (a folder readable but not searchable): its name and kind.
                    Err(err) => {
                        unstated.0 += 1;
                        unstated.1.get_or_insert(err);
                        let id = self.id_of(job.dev, d.ino);
                        named_only(&mut self.slots[n], id, job.id, d.name.to_bytes(), d.kind);
                    }
                }
                n += 1;
            }
        }
        self.listing = listing;
        if let (k @ 1.., Some(err)) = unstated {
            self.warnings.push(format!(
                "{UNREADABLE}{}: {k} entries listed by name alone ({err})",
                shown()
            ));
        }
        self.order.clear();
        self.order.extend(
            self.slots[..n]
                .iter()
                .enumerate()
                .map(|(i, e)| (e.id, i as u32)),
        );
        self.order.sort_unstable();
        for &(_, i) in &self.order {
            self.spool.push_ref(&self.slots[i as usize]);
        }
    }

    /// Notes subfolder `name` of `job` (id `id`) to walk, unless a rule leaves it out.
    fn enter(&mut self, job: &Job, name: &[u8], id: u64, st: &libc::statx) {
        let mut path = Vec::with_capacity(job.path.len() + 1 + name.len());
        path.extend_from_slice(&job.path);
        if path.last() != Some(&b'/') {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let opts = &self.shared.folder.options;
        if opts.prune.folder(&path, name) {
            return;
        }
        if self.shared.descend.is_some_and(|new| !new(id)) {
            return;
        }
        let dev = device(st);
        if dev != job.dev || st.stx_mnt_id != job.mnt {
            if !opts.cross_mounts {
                return;
            }
            let fstype = self
                .shared
                .mounts
                .iter()
                .find(|m| m.id == st.stx_mnt_id)
                .map_or("", |m| m.fstype.as_str());
            if opts.prune.filesystem(fstype) {
                return;
            }
            // A bind mount of a file system walked already (or being walked) is not walked again.
            if !self
                .shared
                .devices
                .lock()
                .expect("not poisoned")
                .insert(dev)
            {
                return;
            }
        }
        self.found.push(Job {
            id,
            path,
            dev,
            mnt: st.stx_mnt_id,
        });
    }

    /// The id of inode `ino` of device `dev`: the inode itself on the folder's file system (see [`DIRECT`]),
    /// [`ROOT`] for the root, else one handed out.
    fn id_of(&self, dev: u64, ino: u64) -> u64 {
        if dev == self.shared.root_dev {
            if ino == self.shared.root_ino {
                return ROOT;
            }
            if ino != ROOT && ino < DIRECT {
                return ino;
            }
        }
        self.far_id(dev, ino)
    }

    /// An id handed out for inode `ino` of device `dev` (the same for each of its names).
    fn far_id(&self, dev: u64, ino: u64) -> u64 {
        self.shared.far_used.store(true, Ordering::Relaxed);
        let mut far = self.shared.far.lock().expect("not poisoned");
        let next = far.next;
        let id = *far.ids.entry((dev, ino)).or_insert(next);
        if id == next {
            // 2^31 ids handed out would need far more memory than a walk has first.
            far.next = (next - 1).max(DIRECT);
        }
        id
    }
}

/// `st`'s device number.
fn device(st: &libc::statx) -> u64 {
    u64::from(st.stx_dev_major) << 32 | u64::from(st.stx_dev_minor)
}

/// A `statx` time as FILETIME; 0 (unknown) before 1601 or when the kernel did not give it.
fn filetime(t: &libc::statx_timestamp, given: bool) -> u64 {
    if !given {
        return 0;
    }
    let secs = t.tv_sec + uffs_fs::time::UNIX_EPOCH as i64 / uffs_fs::time::TICKS_PER_SECOND as i64;
    if secs < 0 {
        return 0;
    }
    secs as u64 * uffs_fs::time::TICKS_PER_SECOND + u64::from(t.tv_nsec) / 100
}

/// Entry `e`, refilled (its buffers kept) as `statx` tells inode `id`, named `name` in folder `parent`.
fn fill(e: &mut Entry, id: u64, parent: u64, name: &[u8], st: &libc::statx) {
    let mode = u32::from(st.stx_mode);
    let kind = match mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Folder,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Special,
    };
    set_name(e, name);
    e.id = id;
    e.parent = parent;
    e.kind = kind;
    e.size = if kind == Kind::Special {
        0
    } else {
        st.stx_size
    };
    e.allocated = st.stx_blocks * 512;
    let has = |bit: u32| st.stx_mask & bit != 0;
    e.times = Times {
        created: filetime(&st.stx_btime, has(libc::STATX_BTIME)),
        modified: filetime(&st.stx_mtime, has(libc::STATX_MTIME)),
        changed: filetime(&st.stx_ctime, has(libc::STATX_CTIME)),
        accessed: filetime(&st.stx_atime, has(libc::STATX_ATIME)),
    };
    let mut a = match kind {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    let flags = st.stx_attributes & st.stx_attributes_mask;
    for (flag, bit) in [
        (libc::STATX_ATTR_IMMUTABLE, attr::READ_ONLY),
        (libc::STATX_ATTR_COMPRESSED, attr::COMPRESSED),
        (libc::STATX_ATTR_ENCRYPTED, attr::ENCRYPTED),
    ] {
        if flags & flag as u64 != 0 {
            a |= bit;
        }
    }
    e.attributes = a;
    e.posix = Some(Posix {
        mode,
        uid: st.stx_uid,
        gid: st.stx_gid,
    });
    if kind != Kind::Symlink {
        e.link_target = None;
    }
    clear_rest(e);
}

/// Entry `e` as a listing alone tells it: a name, an inode and a kind.
fn named_only(e: &mut Entry, id: u64, parent: u64, name: &[u8], dtype: u8) {
    set_name(e, name);
    e.id = id;
    e.parent = parent;
    e.kind = match dtype {
        libc::DT_DIR => Kind::Folder,
        libc::DT_REG | libc::DT_UNKNOWN => Kind::File,
        libc::DT_LNK => Kind::Symlink,
        _ => Kind::Special,
    };
    e.size = 0;
    e.allocated = 0;
    e.times = Times::default();
    e.attributes = match e.kind {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    e.posix = None;
    e.link_target = None;
    clear_rest(e);
}

fn set_name(e: &mut Entry, name: &[u8]) {
    e.name.clear();
    match std::str::from_utf8(name) {
        Ok(s) => e.name.push_str(s),
        Err(_) => e.name.push_str(&String::from_utf8_lossy(name)),
    }
}

/// The fields a walk never sets.
fn clear_rest(e: &mut Entry) {
    e.short_name = None;
    e.local_times = false;
    e.deleted = false;
    e.metadata = false;
    e.from_index_slack = false;
    e.runs.clear();
    e.inline = None;
    e.packed.clear();
}
