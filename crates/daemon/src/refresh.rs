//! Keeping every volume current: a thread checks each loaded volume on its interval (`volumes add --refresh`)
//! and `uffs volumes refresh` asks for a check now. A check that finds changes applies them
//! (`uffs_mft::update::refresh`: the change journal where the volume has one, else a re-scan of record hashes),
//! writes the new index to the free slot (written, synced, renamed: a kill at any moment leaves the old index or
//! the new one, both loadable) and swaps it into the snapshot. Queries keep reading the old snapshot meanwhile
//! and never wait.
//!
//! An unchanged image or block device costs one `stat` per check (`uffs_mft::device::write_stamp`); only when
//! that moves is the source read.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uffs_mft::update::Refresh;
use uffs_mft::ScanOptions;

use crate::server::{self, log, Loaded, Shared};

/// What the daemon knows of one volume's following (kept in memory; the index file holds the journal position).
#[derive(Debug, Clone, Default)]
pub(crate) struct Follow {
    /// When the volume was last checked.
    pub last_check: Option<Instant>,
    /// The source's write stamp at that check: while it stays the same, nothing was written.
    pub write_stamp: Option<u64>,
    /// When changes were last applied (FILETIME).
    pub updated_at: u64,
    pub last_changes: u64,
    pub total_changes: u64,
    /// A source error was logged (logged once until the source comes back).
    pub unavailable: bool,
}

/// The refresher thread: every quarter second, checks the volumes whose interval has passed.
pub(crate) fn run(shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(250));
        let snap = server::current(&shared);
        for l in &snap.volumes {
            let Some(every) = l.entry.refresh_interval() else {
                continue;
            };
            let due = follow_of(&shared, &l.entry.name)
                .last_check
                .is_none_or(|t| t.elapsed() >= every);
            if due {
                let _ = check(&shared, l, false);
            }
        }
    }
}

pub(crate) fn follow_of(shared: &Shared, name: &str) -> Follow {
    shared
        .follow
        .lock()
        .map(|f| f.get(name).cloned().unwrap_or_default())
        .unwrap_or_default()
}

fn set_follow(shared: &Shared, name: &str, f: impl FnOnce(&mut Follow)) {
    if let Ok(mut m) = shared.follow.lock() {
        f(m.entry(name.to_string()).or_default());
    }
}

/// Checks volume `l` for changes and applies them. `forced` skips the write-stamp shortcut. Returns what was
/// done (one line) and the number of changed records applied.
pub(crate) fn check(shared: &Arc<Shared>, l: &Arc<Loaded>, forced: bool) -> (String, u64) {
    // One check at a time: two would race for the free index slot.
    let _one = shared.refreshing.lock();
    let e = &l.entry;
    if server::building(shared, &e.name) {
        return (format!("{}: being rebuilt", e.name), 0);
    }
    // The snapshot may have moved on while this waited for the lock.
    let l = match server::current(shared)
        .volumes
        .iter()
        .find(|v| v.entry.name == e.name)
    {
        Some(now) => Arc::clone(now),
        None => return (format!("{}: not loaded", e.name), 0),
    };
    let e = &l.entry;
    let stamp = uffs_mft::device::write_stamp(&e.source);
    let before = follow_of(shared, &e.name);
    set_follow(shared, &e.name, |f| f.last_check = Some(Instant::now()));
    if !forced && stamp.is_some() && stamp == before.write_stamp {
        return (format!("{}: unchanged (nothing written)", e.name), 0);
    }
    let t = Instant::now();
    let vol = match uffs_mft::open(&e.source, e.partition) {
        Ok(src) if src.volumes.len() == 1 => src.volumes.into_iter().next(),
        Ok(_) => None,
        Err(err) => {
            if !before.unavailable {
                log(&format!(
                    "{}: source unavailable ({err}); answering from the index",
                    e.name
                ));
            }
            set_follow(shared, &e.name, |f| f.unavailable = true);
            server::set_state(
                shared,
                &e.name,
                Some(format!("ready (source unavailable: {err})")),
            );
            return (format!("{}: source unavailable: {err}", e.name), 0);
        }
    };
    let Some(vol) = vol else {
        return (
            format!("{}: the source no longer holds one volume", e.name),
            0,
        );
    };
    if before.unavailable {
        log(&format!("{}: the source is back", e.name));
        server::set_state(shared, &e.name, None);
    }
    let idx = l.searcher.index();
    let outcome = uffs_mft::update::refresh(&vol, idx, &ScanOptions::default());
    set_follow(shared, &e.name, |f| f.unavailable = false);
    match outcome {
        Err(err) => {
            log(&format!(
                "{}: checking for changes failed ({err}); the last index keeps answering",
                e.name
            ));
            (format!("{}: check failed: {err}", e.name), 0)
        }
        Ok(Refresh::Unchanged { checked }) => {
            set_follow(shared, &e.name, |f| f.write_stamp = stamp);
            (format!("{}: unchanged ({checked})", e.name), 0)
        }
        Ok(Refresh::Rebuild(why)) => {
            log(&format!("{}: {why}; rebuilding", e.name));
            server::start_rebuild(shared, e.clone(), "stale (rebuilding)");
            (format!("{}: {why}; rebuilding", e.name), 0)
        }
        Ok(Refresh::Updated(applied)) => {
            let records = applied.report.stats.records;
            let path = match server::free_slot(shared, &e.name) {
                Ok(p) => p,
                Err(why) => return (format!("{}: {why}", e.name), 0),
            };
            let written = uffs_index::file::write(&applied.index, &path);
            drop(applied.index);
            if let Err(err) = written {
                log(&format!(
                    "{}: writing the updated index failed: {err}",
                    e.name
                ));
                return (format!("{}: writing the update failed: {err}", e.name), 0);
            }
            match server::load(shared, e, &path) {
                Ok(new) => server::replace_volume(shared, &e.name, Some(new)),
                Err(why) => {
                    log(&format!(
                        "{}: the updated index did not load: {why}",
                        e.name
                    ));
                    return (format!("{}: the update did not load: {why}", e.name), 0);
                }
            }
            crate::os::release_free_memory();
            let s = &applied.report.stats;
            let line = format!(
                "{}: applied {} changed records (found by {} in {:.1} ms; -{} +{} entries) in {:.1} ms",
                e.name,
                records,
                applied.how,
                applied.find_time.as_secs_f64() * 1e3,
                s.entries_removed,
                s.entries_added,
                t.elapsed().as_secs_f64() * 1e3
            );
            log(&line);
            set_follow(shared, &e.name, |f| {
                f.write_stamp = stamp;
                f.updated_at = uffs_index::time::now();
                f.last_changes = records;
                f.total_changes += records;
            });
            (line, records)
        }
    }
}

/// The `follow` column of `daemon status` for a volume.
pub(crate) fn describe(l: Option<&Arc<Loaded>>, entry: &crate::registry::VolumeEntry) -> String {
    let every = match entry.refresh_interval() {
        Some(d) => format!("every {} s", d.as_secs()),
        None => "never (uffs volumes refresh)".into(),
    };
    match l.map(|l| &l.searcher.index().meta) {
        Some(m) if m.journal_id != 0 => {
            format!(
                "journal {:016x} at USN {}, {every}",
                m.journal_id, m.journal_usn
            )
        }
        _ if entry.refresh_interval().is_none() => every,
        _ => format!("re-scan {every}"),
    }
}

/// Per volume name, what `follow_of` says, for the status answer.
pub(crate) fn all(shared: &Shared) -> HashMap<String, Follow> {
    shared.follow.lock().map(|f| f.clone()).unwrap_or_default()
}
