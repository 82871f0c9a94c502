//! Following walked folders as they change: a thread per walked folder waits on the system's reports
//! (`uffs_walk::watch`: on Linux fanotify as root, inotify otherwise; on Windows `ReadDirectoryChangesW`) and runs
//! a check as soon as something below the
//! folder changed, instead of the volume's interval. A folder that cannot be followed (inotify's watch limit) is
//! left to its interval, and the log says why.
//!
//! A check reads again only the folders reported (`uffs_walk::reread`) and applies what differs as a delta
//! (`uffs_mft::update::folder_delta`), in time proportional to those folders; where that cannot be exact (a folder
//! deleted with what was below it, a hard link, a queue that overflowed) it walks the whole folder, as the first
//! check after the index was loaded does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::server::{self, log, Loaded, Shared};

/// After a report, changes are gathered this long before the check, so that a burst (a copy of many files) is
/// one check; short enough that a new file shows within a quarter second on a folder of modest size.
const GATHER: Duration = Duration::from_millis(30);

/// The folder watchers, kept by the refresher thread.
#[derive(Default)]
pub(crate) struct Followers {
    running: HashMap<String, Follower>,
}

struct Follower {
    stop: Arc<AtomicBool>,
    /// Ended: the folder could not be followed (or is no longer loaded).
    done: Arc<AtomicBool>,
    source: String,
    thread: Option<JoinHandle<()>>,
}

impl Followers {
    /// Starts a follower for each loaded folder that has none (and is checked at all), and stops those of
    /// folders gone or changed.
    pub(crate) fn sync(&mut self, shared: &Arc<Shared>, volumes: &[Arc<Loaded>]) {
        self.running.retain(|name, f| {
            let same = volumes
                .iter()
                .any(|l| &l.entry.name == name && l.entry.source == f.source);
            if !same {
                f.stop.store(true, Ordering::SeqCst);
            }
            same
        });
        for l in volumes {
            let e = &l.entry;
            let Some(root) = uffs_index::folder_root(&e.source) else {
                continue;
            };
            if self.running.contains_key(&e.name) || e.refresh_interval().is_none() {
                continue;
            }
            let root = std::path::PathBuf::from(if root.is_empty() { "/" } else { root });
            let (stop, done) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicBool::new(false)),
            );
            let (sh, name, st, dn) = (
                Arc::clone(shared),
                e.name.clone(),
                Arc::clone(&stop),
                Arc::clone(&done),
            );
            let thread = std::thread::Builder::new()
                .name(format!("follow-{name}"))
                .spawn(move || {
                    follow(&sh, &name, &root, &st);
                    dn.store(true, Ordering::SeqCst);
                })
                .ok();
            self.running.insert(
                e.name.clone(),
                Follower {
                    stop,
                    done,
                    source: e.source.clone(),
                    thread,
                },
            );
        }
    }

    /// Whether folder `name` is followed as it changes (so needs no interval check).
    pub(crate) fn following(&self, name: &str) -> bool {
        self.running
            .get(name)
            .is_some_and(|f| !f.done.load(Ordering::SeqCst))
    }

    /// Stops every follower and waits for them (at daemon exit).
    pub(crate) fn stop_all(&mut self) {
        for f in self.running.values() {
            f.stop.store(true, Ordering::SeqCst);
        }
        for (_, mut f) in self.running.drain() {
            if let Some(t) = f.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn loaded(shared: &Shared, name: &str) -> Option<Arc<Loaded>> {
    server::current(shared)
        .volumes
        .iter()
        .find(|v| v.entry.name == name)
        .cloned()
}

/// The follower of folder `name` (at `root`): checks once when its reports start (what changed since the index
/// was made), then each time something below the folder changed. Returns when stopped, when the folder is no
/// longer loaded, or when it cannot be followed.
fn follow(shared: &Arc<Shared>, name: &str, root: &std::path::Path, stop: &AtomicBool) {
    // The daemon's own files change with every check: never a reason for another. (Written as the reports name
    // paths: without Windows's `\\?\` prefix; a user's folder on Windows holds the cache, in AppData.)
    let own = vec![uffs_walk::plain(
        std::fs::canonicalize(shared.cache_dir())
            .unwrap_or_else(|_| shared.cache_dir().to_path_buf()),
    )];
    let mut watch = match uffs_walk::watch::Watch::new(root, own) {
        Ok(w) => w,
        Err(e) => {
            log(&format!(
                "{name}: cannot follow {} ({e}); checking on the interval",
                root.display()
            ));
            return;
        }
    };
    // The first check is whole, at once: what changed between the index's walk and the watch is known to no
    // report. What changes meanwhile waits in the kernel's queue for the next check. Only then is the folder
    // said to be followed, so that a change made after that line is always found by the reports.
    let Some(l) = loaded(shared, name) else {
        return;
    };
    let _ = crate::refresh::check(shared, &l, true);
    drop(l);
    log(&format!(
        "{name}: following {} with {}",
        root.display(),
        watch.how()
    ));
    while !stop.load(Ordering::SeqCst) {
        let changed = match watch.wait(Duration::from_millis(250), GATHER) {
            Ok(dirs) => dirs,
            Err(e) => {
                log(&format!(
                    "{name}: following {} failed ({e}); checking on the interval",
                    root.display()
                ));
                return;
            }
        };
        if changed.is_empty() {
            continue;
        }
        let Some(l) = loaded(shared, name) else {
            return;
        };
        // The folders reported, read again; the whole folder walked when that cannot be exact, when its top is
        // all that is known (a queue that overflowed), or when the folders are very many.
        let overflowed = watch.overflowed();
        if overflowed {
            log(&format!(
                "{name}: the kernel's queue of changes overflowed: walking the whole folder"
            ));
        }
        // Windows: a listing gives no change time to read a folder again by (`uffs_walk::reread` is Linux's), so
        // the whole folder is walked; its ids are the file ids, so the delta is what changed.
        let partly = cfg!(target_os = "linux")
            && !overflowed
            && changed.len() <= MAX_FOLDERS
            && match check_folders(shared, &l, &changed) {
                Ok(_) => true,
                Err(why) => {
                    log(&format!(
                        "{name}: the {} folders reported were not enough ({why}): walking the whole folder",
                        changed.len()
                    ));
                    false
                }
            };
        if !partly {
            let _ = crate::refresh::check(shared, &l, true);
        }
    }
}

#[cfg(target_os = "linux")]
use crate::refresh::check_folders;

/// Windows reads no folder alone: never called (see `follow`).
#[cfg(windows)]
fn check_folders(
    _: &Arc<Shared>,
    _: &Arc<Loaded>,
    _: &[std::path::PathBuf],
) -> std::result::Result<(String, u64), String> {
    Err("not on Windows".into())
}

/// Folders reported at once past which a whole walk is cheaper than reading them one by one.
const MAX_FOLDERS: usize = 4096;
