//! Following a live Windows volume as it changes: a thread per volume waits in the kernel for new change
//! journal records (FSCTL_READ_USN_JOURNAL with BytesToWaitFor, so nothing runs while the drive is idle) and
//! runs a check as soon as there are some, instead of the volume's interval. A volume without a journal (or a
//! system that does not answer the call) is left to its interval: a re-scan.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::server::{self, log, Loaded, Shared};

/// After a wake, changes are gathered this long before the check, so that a burst (a copy of many files) is
/// applied in one delta; short enough that a new file shows well within a second.
const GATHER: Duration = Duration::from_millis(100);

/// The journal watchers, kept by the refresher thread.
#[derive(Default)]
pub(crate) struct Watchers {
    running: HashMap<String, Watcher>,
}

struct Watcher {
    stop: Arc<uffs_mft::live::StopSignal>,
    done: Arc<std::sync::atomic::AtomicBool>,
    source: String,
}

impl Watchers {
    /// Starts a watcher for each loaded live volume with a journal that has none, and stops those of volumes
    /// gone or changed.
    pub(crate) fn sync(&mut self, shared: &Arc<Shared>, volumes: &[Arc<Loaded>]) {
        self.running.retain(|name, w| {
            let keep = !w.done.load(std::sync::atomic::Ordering::SeqCst)
                && volumes
                    .iter()
                    .any(|l| &l.entry.name == name && l.entry.source == w.source);
            if !keep {
                w.stop.stop();
            }
            keep
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
            let Ok(stop) = uffs_mft::live::StopSignal::new() else {
                continue;
            };
            let w = Watcher {
                stop: Arc::new(stop),
                done: Arc::default(),
                source: e.source.clone(),
            };
            let (shared, name, stop, done) = (
                Arc::clone(shared),
                e.name.clone(),
                Arc::clone(&w.stop),
                Arc::clone(&w.done),
            );
            let spawned = std::thread::Builder::new()
                .name(format!("watch-{name}"))
                .spawn(move || {
                    watch(&shared, &name, &spec.device, &stop);
                    done.store(true, std::sync::atomic::Ordering::SeqCst);
                });
            if spawned.is_ok() {
                self.running.insert(e.name.clone(), w);
            }
        }
    }

    /// Whether volume `name` is followed through its journal (so needs no interval check).
    pub(crate) fn watching(&self, name: &str) -> bool {
        self.running
            .get(name)
            .is_some_and(|w| !w.done.load(std::sync::atomic::Ordering::SeqCst))
    }

    pub(crate) fn stop_all(&mut self) {
        for w in self.running.values() {
            w.stop.stop();
        }
        self.running.clear();
    }
}

/// The watcher of volume `name`: waits for journal records past the loaded index's position, then checks.
/// Returns when stopped, when the volume is gone, or when the journal cannot be waited on (the interval takes
/// over).
fn watch(shared: &Arc<Shared>, name: &str, device: &str, stop: &uffs_mft::live::StopSignal) {
    let dev = match uffs_mft::live::LiveDevice::open(device) {
        Ok(d) => d,
        Err(e) => {
            log(&format!(
                "{name}: cannot watch {device} ({e}); checking on the interval"
            ));
            return;
        }
    };
    loop {
        let Some(l) = server::current(shared)
            .volumes
            .iter()
            .find(|v| v.entry.name == name)
            .cloned()
        else {
            return;
        };
        let (id, at) = (l.meta().journal_id, l.meta().journal_usn);
        if id == 0 {
            return;
        }
        match dev.wait_journal(id, at, stop) {
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
        let (line, _) = crate::refresh::check(shared, &l, true);
        // A check that did not move the index past those records (it failed, or a rebuild is under way)
        // would wake this at once again: wait a little first.
        let moved = server::current(shared)
            .volumes
            .iter()
            .find(|v| v.entry.name == name)
            .is_some_and(|v| v.meta().journal_usn != at || v.meta().journal_id != id);
        if !moved {
            log(&format!("{name}: journal wake without progress ({line})"));
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}
