//! Following a live Windows volume as it changes: a thread per volume waits in the kernel for new change
//! journal records (FSCTL_READ_USN_JOURNAL with BytesToWaitFor, so nothing runs while the drive is idle) and
//! runs a check as soon as there are some, instead of the volume's interval. A volume without a journal (or a
//! system that does not answer the call) is left to its interval: a re-scan.
//!
//! The daemon's own writes (its index files and log, in the cache directory, usually on C:) add journal records
//! too: records of files in that directory do not wake a check, or C: would never rest.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use uffs_mft::live::{LiveDevice, StopSignal};

use crate::server::{self, log, Loaded, Shared};

/// After a wake, changes are gathered this long before the check, so that a burst (a copy of many files) is
/// applied in one delta; short enough that a new file shows well within a second.
const GATHER: Duration = Duration::from_millis(100);
/// A watcher that ended (no journal call, a failed open) is not started again for the same journal position
/// before this: the interval checks meanwhile.
const RETRY: Duration = Duration::from_secs(60);

/// The journal watchers, kept by the refresher thread.
#[derive(Default)]
pub(crate) struct Watchers {
    running: HashMap<String, Watcher>,
}

struct Watcher {
    stop: Arc<StopSignal>,
    done: Arc<AtomicBool>,
    source: String,
    /// The journal id and position of the index it was started for.
    key: (u64, u64),
    started: Instant,
    thread: Option<JoinHandle<()>>,
}

impl Watchers {
    /// Starts a watcher for each loaded live volume with a journal that has none, and stops those of volumes
    /// gone or changed. A watcher that ended is started again only once its volume's journal position moved
    /// (an interval check applied changes or a rebuild ran) and a while has passed.
    pub(crate) fn sync(&mut self, shared: &Arc<Shared>, volumes: &[Arc<Loaded>]) {
        self.running.retain(|name, w| {
            let now = volumes.iter().find(|l| &l.entry.name == name);
            let same = now.is_some_and(|l| l.entry.source == w.source);
            let ended = w.done.load(Ordering::SeqCst);
            let retry =
                ended && now.is_some_and(|l| key(l) != w.key) && w.started.elapsed() >= RETRY;
            if !same || retry {
                w.stop.stop();
            }
            same && !retry
        });
        for l in volumes {
            let e = &l.entry;
            if self.running.contains_key(&e.name)
                || e.refresh_interval().is_none()
                || l.meta().journal_id == 0
            {
                continue;
            }
            let Some(spec) = uffs_mft::live::parse_spec(&e.source) else {
                continue;
            };
            let Ok(stop) = StopSignal::new() else {
                continue;
            };
            let (stop, done) = (Arc::new(stop), Arc::new(AtomicBool::new(false)));
            let (sh, name, st, dn) = (
                Arc::clone(shared),
                e.name.clone(),
                Arc::clone(&stop),
                Arc::clone(&done),
            );
            let thread = std::thread::Builder::new()
                .name(format!("watch-{name}"))
                .spawn(move || {
                    watch(&sh, &name, &spec.device, &st);
                    dn.store(true, Ordering::SeqCst);
                })
                .ok();
            self.running.insert(
                e.name.clone(),
                Watcher {
                    stop,
                    done,
                    source: e.source.clone(),
                    key: key(l),
                    started: Instant::now(),
                    thread,
                },
            );
        }
    }

    /// Whether volume `name` is followed through its journal (so needs no interval check).
    pub(crate) fn watching(&self, name: &str) -> bool {
        self.running
            .get(name)
            .is_some_and(|w| !w.done.load(Ordering::SeqCst))
    }

    /// Stops every watcher and waits for them (at daemon exit).
    pub(crate) fn stop_all(&mut self) {
        for w in self.running.values() {
            w.stop.stop();
        }
        for (_, mut w) in self.running.drain() {
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn key(l: &Loaded) -> (u64, u64) {
    (l.meta().journal_id, l.meta().journal_usn)
}

fn loaded(shared: &Shared, name: &str) -> Option<Arc<Loaded>> {
    server::current(shared)
        .volumes
        .iter()
        .find(|v| v.entry.name == name)
        .cloned()
}

/// The record number of the daemon's cache directory, when it is on the volume `dev` is (its files' journal
/// records are the daemon's own writes).
fn own_folder(shared: &Shared, dev: &LiveDevice) -> Option<u64> {
    // Opening a directory as a file works on Windows (std asks for backup semantics).
    let dir = std::fs::File::open(shared.cache_dir()).ok()?;
    let (serial, index) = file_id(&dir)?;
    let ours = dev.volume_serial()? as u32;
    (serial == ours).then_some(index & 0xFFFF_FFFF_FFFF)
}

/// The volume serial and file index of an open file (GetFileInformationByHandle).
fn file_id(f: &std::fs::File) -> Option<(u32, u64)> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION,
    };
    // SAFETY: the structure is plain data, filled by the call for a valid handle.
    unsafe {
        let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
        if GetFileInformationByHandle(f.as_raw_handle() as _, &mut info) == 0 {
            return None;
        }
        Some((
            info.dwVolumeSerialNumber,
            (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        ))
    }
}

/// The watcher of volume `name`: waits for journal records past what it has seen, and checks when some are not
/// the daemon's own. Returns when stopped, when the volume is gone, or when the journal cannot be waited on (the
/// interval takes over).
fn watch(shared: &Arc<Shared>, name: &str, device: &str, stop: &StopSignal) {
    let dev = match LiveDevice::open(device) {
        Ok(d) => d,
        Err(e) => {
            log(&format!(
                "{name}: cannot watch {device} ({e}); checking on the interval"
            ));
            return;
        }
    };
    let own = own_folder(shared, &dev);
    let mut seen = 0u64;
    let mut idle_wakes = 0u32;
    loop {
        let Some(l) = loaded(shared, name) else {
            return;
        };
        let (id, at) = key(&l);
        if id == 0 {
            return;
        }
        seen = seen.max(at);
        match dev.wait_journal(id, seen, stop) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                log(&format!(
                    "{name}: cannot wait on the change journal ({e}); checking on the interval"
                ));
                return;
            }
        }
        std::thread::sleep(GATHER);
        if stop.stopped() {
            return;
        }
        // What arrived, and whether any of it is not the daemon's own writing.
        let end = match dev.query_journal() {
            Ok(Some(j)) if j.journal_id == id => j.next_usn,
            // Gone or new: the check finds out and rebuilds.
            _ => u64::MAX,
        };
        let mut foreign = end == u64::MAX;
        if !foreign {
            match dev.read_journal(id, seen, end, |r| {
                foreign |= own.is_none_or(|o| r.parent_record() != o && r.file_record() != o);
            }) {
                Ok(next) => seen = next,
                Err(_) => foreign = true,
            }
        }
        if !foreign {
            continue;
        }
        let (line, _) = crate::refresh::check(shared, &l, true);
        // A check that did not move the index past those records (it failed, or a rebuild is under way)
        // would wake this at once again: wait, longer each time, and say so once.
        if loaded(shared, name).is_some_and(|v| key(&v) == (id, at)) {
            if idle_wakes == 0 {
                log(&format!(
                    "{name}: the journal has changes the index did not take ({line}); retrying"
                ));
            }
            idle_wakes += 1;
            let wait = Duration::from_secs(1 << idle_wakes.min(6));
            let until = Instant::now() + wait;
            while Instant::now() < until {
                if stop.stopped() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        } else {
            idle_wakes = 0;
        }
    }
}
