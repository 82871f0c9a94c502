//! Following a walked folder's changes (Linux): which folders below it had entries created, deleted, moved,
//! or changed, as the kernel reports them.
//!
//! As root: fanotify with a mark on the whole file system (`FAN_MARK_FILESYSTEM`, `FAN_REPORT_DFID_NAME`): one
//! mark, whatever the tree's size, each event naming its folder by a file handle, which is opened to learn its
//! path (events outside the folder are dropped). Otherwise: inotify, one watch per folder (new folders get theirs
//! as they come), while `fs.inotify.max_user_watches` allows; past it, [`Watch::new`] fails naming the limit.
//! A queue that overflowed reports the folder itself as changed, and [`Watch::overflowed`] says so.
//!
//! Changed folders are kept as the kernel names them (a watch, a file handle) and turned into paths only when
//! [`Watch::wait`] returns, after every report read: a folder renamed after a change inside it is then named
//! by its new path (named by its old one, the change was lost: the old path is gone when it is read again).

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a folder is followed.
enum Kind {
    Fanotify {
        /// The folder itself, opened: the mount `open_by_handle_at` resolves handles on.
        mount: OwnedFd,
    },
    Inotify {
        /// Each watch's folder.
        folders: HashMap<i32, PathBuf>,
        /// Folders moved away whose arrival is not yet read, by the move's cookie: their watches are dropped
        /// if none comes (moved out of the folder followed).
        moved_away: HashMap<u32, PathBuf>,
    },
}

/// A folder with changes, as the kernel names it.
#[derive(PartialEq, Eq, Hash)]
enum Changed {
    /// An inotify watch.
    Watch(i32),
    /// A fanotify folder handle (`struct file_handle`, whole).
    Handle(Vec<u8>),
}

/// A folder followed; see the module doc.
pub struct Watch {
    fd: OwnedFd,
    kind: Kind,
    root: PathBuf,
    /// Folders whose changes are not reported (the daemon's own files).
    ignored: Vec<PathBuf>,
    buf: Vec<u8>,
    /// Folders changed since [`Watch::wait`] last returned.
    changed: HashSet<Changed>,
    /// The kernel's queue overflowed since [`Watch::overflowed`] was last asked: changes were lost.
    overflow: bool,
}

/// What fanotify reports: a folder's entries created, deleted or moved (a folder's own too), and an entry's
/// attributes or data changed.
const FAN_EVENTS: u64 = libc::FAN_CREATE
    | libc::FAN_DELETE
    | libc::FAN_MOVED_FROM
    | libc::FAN_MOVED_TO
    | libc::FAN_ATTRIB
    | libc::FAN_MODIFY
    | libc::FAN_DELETE_SELF
    | libc::FAN_MOVE_SELF
    | libc::FAN_ONDIR;

const IN_EVENTS: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_ATTRIB
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

impl Watch {
    /// Follows folder `root` (absolute, symlinks resolved), leaving out changes below `ignored`: fanotify where
    /// this process may, else inotify.
    pub fn new(root: &Path, ignored: Vec<PathBuf>) -> io::Result<Watch> {
        let c = cstr(root);
        // SAFETY: plain system calls on a valid C string; each descriptor returned is owned at once.
        unsafe {
            let fd = libc::fanotify_init(
                libc::FAN_CLASS_NOTIF
                    | libc::FAN_CLOEXEC
                    | libc::FAN_NONBLOCK
                    | libc::FAN_REPORT_DFID_NAME,
                (libc::O_RDONLY | libc::O_CLOEXEC) as u32,
            );
            if fd >= 0 {
                let fd = OwnedFd::from_raw_fd(fd);
                let marked = libc::fanotify_mark(
                    fd.as_raw_fd(),
                    libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                    FAN_EVENTS,
                    libc::AT_FDCWD,
                    c.as_ptr(),
                );
                let mount = libc::open(
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                if marked == 0 && mount >= 0 {
                    return Ok(Watch {
                        fd,
                        kind: Kind::Fanotify {
                            mount: OwnedFd::from_raw_fd(mount),
                        },
                        root: root.to_path_buf(),
                        ignored,
                        buf: vec![0; 64 * 1024],
                        changed: HashSet::new(),
                        overflow: false,
                    });
                }
                if mount >= 0 {
                    libc::close(mount);
                }
            }
        }
        Watch::inotify(root, ignored)
    }

    /// Follows folder `root` with inotify, a watch a folder.
    fn inotify(root: &Path, ignored: Vec<PathBuf>) -> io::Result<Watch> {
        // SAFETY: a plain system call; the descriptor returned is owned at once.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut w = Watch {
            // SAFETY: just made, owned here.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            kind: Kind::Inotify {
                folders: HashMap::new(),
                moved_away: HashMap::new(),
            },
            root: root.to_path_buf(),
            ignored,
            buf: vec![0; 64 * 1024],
            changed: HashSet::new(),
            overflow: false,
        };
        w.watch_tree(root)?;
        Ok(w)
    }

    /// Whether the kernel's queue overflowed since this was last asked (changes were lost: only a whole walk
    /// finds them).
    pub fn overflowed(&mut self) -> bool {
        std::mem::take(&mut self.overflow)
    }

    /// How it follows: `fanotify (the whole file system)` or `inotify (N folders)`.
    pub fn how(&self) -> String {
        match &self.kind {
            Kind::Fanotify { .. } => "fanotify (one mark on the file system)".into(),
            Kind::Inotify { folders, .. } => format!("inotify ({} folders)", folders.len()),
        }
    }

    /// Adds an inotify watch to `dir` and every folder below it on the same file system; `dir`'s watch.
    fn watch_tree(&mut self, dir: &Path) -> io::Result<Option<i32>> {
        let Kind::Inotify { folders, .. } = &mut self.kind else {
            return Ok(None);
        };
        let mut top = None;
        // Gone again since it was reported: nothing to follow there.
        let Ok(dev) =
            std::fs::symlink_metadata(dir).map(|m| std::os::unix::fs::MetadataExt::dev(&m))
        else {
            return Ok(None);
        };
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            let c = cstr(&d);
            // SAFETY: a valid descriptor and C string.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), IN_EVENTS) };
            if wd < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOSPC) {
                    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
                        .unwrap_or_default();
                    return Err(io::Error::other(format!(
                        "following {} takes one inotify watch a folder, past this user's limit of {} \
                         (fs.inotify.max_user_watches: raise it with `sysctl fs.inotify.max_user_watches=N`, or \
                         run the daemon as root, which follows a whole file system with one fanotify mark)",
                        self.root.display(),
                        limit.trim()
                    )));
                }
                // A folder gone or closed to this user since: nothing to follow there.
                continue;
            }
            top.get_or_insert(wd);
            folders.insert(wd, d.clone());
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(m) = e.metadata() else {
                    continue;
                };
                if m.is_dir() && std::os::unix::fs::MetadataExt::dev(&m) == dev {
                    todo.push(e.path());
                }
            }
        }
        Ok(top)
    }

    /// Waits up to `timeout` for changes, then `gather` longer for the rest of a burst, and returns the folders
    /// they were in, by their paths now (none: nothing changed). A queue that overflowed gives the followed folder.
    pub fn wait(&mut self, timeout: Duration, gather: Duration) -> io::Result<Vec<PathBuf>> {
        if !self.read(timeout)? {
            return Ok(Vec::new());
        }
        std::thread::sleep(gather);
        // A folder changed then moved is named by its new path once the move is read: a path gone when it is
        // resolved may be such a folder whose move came after the last read (a few tries; a folder still gone
        // is read again by its parent's report, or walked whole).
        let mut out = Vec::new();
        for _ in 0..4 {
            self.read(Duration::ZERO)?;
            self.drop_moved_away();
            out = self.resolve();
            if out.iter().all(|p| std::fs::symlink_metadata(p).is_ok()) {
                break;
            }
        }
        self.changed.clear();
        if self.overflow {
            out.push(self.root.clone());
        }
        out.retain(|p| p.starts_with(&self.root) && !self.ignored.iter().any(|i| p.starts_with(i)));
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Reads what the kernel reported, waiting up to `timeout` for a first report; whether there was one.
    fn read(&mut self, timeout: Duration) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe {
            libc::poll(
                &mut pfd,
                1,
                timeout.as_millis().min(i32::MAX as u128) as i32,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        let mut any = false;
        loop {
            // SAFETY: the kernel writes at most `buf.len()` bytes.
            let got = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if got < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    break;
                }
                return Err(e);
            }
            if got == 0 {
                break;
            }
            any = true;
            // Taken out while its reports are noted (which borrow the watch), not copied.
            let buf = std::mem::take(&mut self.buf);
            let noted = match &self.kind {
                Kind::Fanotify { .. } => {
                    self.fanotify_records(&buf[..got as usize]);
                    Ok(())
                }
                Kind::Inotify { .. } => self.inotify_events(&buf[..got as usize]),
            };
            self.buf = buf;
            noted?;
        }
        Ok(any)
    }

    /// The changed folders' paths as they are now (those gone dropped: their parents' reports name them).
    fn resolve(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for c in &self.changed {
            match (c, &self.kind) {
                (Changed::Watch(wd), Kind::Inotify { folders, .. }) => {
                    out.extend(folders.get(wd).cloned());
                }
                (Changed::Handle(h), Kind::Fanotify { mount }) => out.extend(handle_path(mount, h)),
                _ => {}
            }
        }
        out
    }

    /// Notes the folders of fanotify's reports (`buf`, whole events).
    fn fanotify_records(&mut self, buf: &[u8]) {
        let u32_at =
            |b: &[u8], at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let mut at = 0;
        // fanotify_event_metadata: event_len (4), vers (1), reserved (1), metadata_len (2), mask (8), fd (4),
        // pid (4); then info records: info_type (1), pad (1), len (2), and for a folder's handle and name the
        // file system id (8), `struct file_handle` (handle_bytes (4), handle_type (4), the handle) and the name.
        while at + 24 <= buf.len() {
            let len = u32_at(buf, at) as usize;
            let meta_len = u16::from_ne_bytes([buf[at + 6], buf[at + 7]]) as usize;
            let mask = u64::from_ne_bytes(buf[at + 8..at + 16].try_into().expect("8 bytes"));
            if len < 24 || at + len > buf.len() {
                break;
            }
            let event = &buf[at..at + len];
            at += len;
            if mask & libc::FAN_Q_OVERFLOW != 0 {
                self.overflow = true;
                continue;
            }
            let mut i = meta_len;
            while i + 4 <= event.len() {
                let kind = event[i];
                let info_len = u16::from_ne_bytes([event[i + 2], event[i + 3]]) as usize;
                if info_len < 4 || i + info_len > event.len() {
                    break;
                }
                let info = &event[i..i + info_len];
                i += info_len;
                if kind != libc::FAN_EVENT_INFO_TYPE_DFID_NAME
                    && kind != libc::FAN_EVENT_INFO_TYPE_DFID
                {
                    continue;
                }
                // After the header (4) and the file system id (8).
                let Some(handle) = info.get(12..) else {
                    continue;
                };
                if handle.len() < 8 {
                    continue;
                }
                let bytes = u32_at(handle, 0) as usize;
                if let Some(whole) = handle.get(..8 + bytes) {
                    self.changed.insert(Changed::Handle(whole.to_vec()));
                }
            }
        }
    }

    /// Notes the folders of inotify's reports (`buf`, whole events), watching folders made or moved in as they
    /// come (a folder moved keeps its watches, which then name its new path).
    fn inotify_events(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut at = 0;
        // inotify_event: wd (4), mask (4), cookie (4), len (4), name (len bytes, NUL-padded).
        while at + 16 <= buf.len() {
            let wd = i32::from_ne_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
            let mask = u32::from_ne_bytes(buf[at + 4..at + 8].try_into().expect("4 bytes"));
            let cookie = u32::from_ne_bytes(buf[at + 8..at + 12].try_into().expect("4 bytes"));
            let len =
                u32::from_ne_bytes(buf[at + 12..at + 16].try_into().expect("4 bytes")) as usize;
            let name = &buf[(at + 16).min(buf.len())..(at + 16 + len).min(buf.len())];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            at += 16 + len;
            let Kind::Inotify {
                folders,
                moved_away,
            } = &mut self.kind
            else {
                return Ok(());
            };
            if mask & libc::IN_Q_OVERFLOW != 0 {
                self.overflow = true;
                continue;
            }
            if mask & libc::IN_IGNORED != 0 {
                folders.remove(&wd);
                self.changed.remove(&Changed::Watch(wd));
                continue;
            }
            let Some(dir) = folders.get(&wd) else {
                continue;
            };
            self.changed.insert(Changed::Watch(wd));
            if mask & libc::IN_ISDIR == 0 {
                continue;
            }
            let path = dir.join(std::ffi::OsStr::from_bytes(name));
            if mask & libc::IN_MOVED_FROM != 0 {
                moved_away.insert(cookie, path);
            } else if mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                if mask & libc::IN_MOVED_TO != 0 {
                    moved_away.remove(&cookie);
                }
                // At once, so that the reports after this one name the folders below by their new paths. A
                // folder moved in is read again itself too: what changed in it just before is then not lost.
                let top = self.watch_tree(&path)?;
                if let (Some(wd), true) = (top, mask & libc::IN_MOVED_TO != 0) {
                    self.changed.insert(Changed::Watch(wd));
                }
            }
        }
        Ok(())
    }

    /// Drops the watches of folders moved out of the folder followed (moved away, no arrival read).
    fn drop_moved_away(&mut self) {
        let Kind::Inotify {
            folders,
            moved_away,
        } = &mut self.kind
        else {
            return;
        };
        for (_, gone) in moved_away.drain() {
            folders.retain(|&wd, p| {
                let keep = !p.starts_with(&gone) || std::fs::symlink_metadata(&*p).is_ok();
                if !keep {
                    // SAFETY: a valid descriptor; a watch already gone is an error ignored.
                    unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
                }
                keep
            });
        }
    }
}

/// The path folder handle `h` (a whole `struct file_handle`) has now, opened on `mount`; none when it is gone.
fn handle_path(mount: &OwnedFd, h: &[u8]) -> Option<PathBuf> {
    // A copy, aligned as `struct file_handle` is.
    let mut aligned = vec![0u32; h.len().div_ceil(4)];
    // SAFETY: `aligned` holds at least `h.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(h.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), h.len())
    };
    // SAFETY: a valid mount descriptor and handle; the descriptor returned is owned at once.
    let fd = unsafe {
        libc::open_by_handle_at(
            mount.as_raw_fd(),
            aligned.as_mut_ptr().cast(),
            libc::O_PATH | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: just opened, owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // A folder deleted while something holds it open still opens: it has no path.
    // SAFETY: plain data, all zeros valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 || st.st_nlink == 0 {
        return None;
    }
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

fn cstr(p: &Path) -> CString {
    crate::sys::cstring(p.as_os_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder changed just after it was renamed is reported by its new name, whatever order the reports are
    /// read in (it was named by its old one, gone when read again: the deletes in it were lost).
    #[test]
    fn inotify_names_a_renamed_folder_by_its_new_path() {
        let top = std::env::temp_dir().join(format!("uffs-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("a/inner")).unwrap();
        let mut w = Watch::inotify(&top, Vec::new()).unwrap();
        for i in 0..20 {
            std::fs::write(top.join(format!("a/inner/f{i}")), b"x").unwrap();
        }
        std::fs::rename(top.join("a/inner"), top.join("a/renamed")).unwrap();
        std::fs::remove_file(top.join("a/renamed/f1")).unwrap();
        std::fs::create_dir(top.join("a/renamed/new")).unwrap();
        std::fs::write(top.join("a/renamed/new/g"), b"y").unwrap();
        let got = w.wait(Duration::from_secs(5), Duration::ZERO).unwrap();
        let want: Vec<PathBuf> = ["a", "a/renamed"].iter().map(|p| top.join(p)).collect();
        assert_eq!(got, want);
        // The new folder below the renamed one is followed by its path.
        std::fs::write(top.join("a/renamed/new/h"), b"z").unwrap();
        // A folder moved out of the folder followed is no longer followed.
        std::fs::rename(
            top.join("a/renamed"),
            std::env::temp_dir().join(format!("uffs-watch-out-{}", std::process::id())),
        )
        .unwrap();
        let got = w.wait(Duration::from_secs(5), Duration::ZERO).unwrap();
        assert_eq!(got, vec![top.join("a")]);
        let Kind::Inotify { folders, .. } = &w.kind else {
            unreachable!()
        };
        assert_eq!(folders.len(), 2, "{folders:?}");
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("uffs-watch-out-{}", std::process::id())),
        );
        let _ = std::fs::remove_dir_all(&top);
    }
}
