//! Keeping every volume current: a thread checks each loaded volume on its interval (`volumes add --refresh`)
//! and `uffs volumes refresh` asks for a check now. A check that finds changes (`uffs_mft::update`: the change
//! journal where the volume has one, else a re-scan of record hashes) makes a new delta over the volume's index
//! (`uffs_index::layer`, in time proportional to the change) and swaps it into the snapshot at once; then it
//! writes the delta beside the index, or, once the delta has grown past a sixteenth of the index, merges both
//! into a whole index written to the free slot. Every file is written, synced and renamed, so a kill at any
//! moment leaves a loadable state, before or after the change. Queries keep reading the old snapshot meanwhile
//! and never wait.
//!
//! A live Windows volume with a change journal is not checked on its interval but as soon as the journal has new
//! records (`crate::watch`).
//!
//! An unchanged image or block device costs one `stat` per check (`uffs_mft::device::write_stamp`); only when
//! that moves is the source read.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uffs_index::layer::BaseMap;
use uffs_mft::update::{refresh, Applied, Refresh};
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

/// The refresher thread: every quarter second, checks the volumes whose interval has passed. On Windows, live
/// volumes with a change journal are followed by their watchers instead (`crate::watch`); on Linux, mounted
/// folders by theirs (`crate::follow`).
pub(crate) fn run(shared: Arc<Shared>) {
    #[cfg(windows)]
    let mut watchers = crate::watch::Watchers::default();
    #[cfg(any(target_os = "linux", windows))]
    let mut followers = crate::follow::Followers::default();
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(250));
        let snap = server::current(&shared);
        #[cfg(windows)]
        watchers.sync(&shared, &snap.volumes);
        #[cfg(any(target_os = "linux", windows))]
        followers.sync(&shared, &snap.volumes);
        for l in &snap.volumes {
            let Some(every) = l.entry.refresh_interval() else {
                continue;
            };
            #[cfg(windows)]
            if watchers.watching(&l.entry.name) {
                continue;
            }
            #[cfg(any(target_os = "linux", windows))]
            if followers.following(&l.entry.name) {
                continue;
            }
            let due = follow_of(&shared, &l.entry.name)
                .last_check
                .is_none_or(|t| t.elapsed() >= every);
            if due {
                let _ = check(&shared, l, false);
            }
        }
    }
    #[cfg(windows)]
    watchers.stop_all();
    #[cfg(any(target_os = "linux", windows))]
    followers.stop_all();
}

pub(crate) fn follow_of(shared: &Shared, name: &str) -> Follow {
    shared
        .follow
        .lock()
        .map(|f| f.get(name).cloned().unwrap_or_default())
        .unwrap_or_default()
}

pub(crate) fn set_follow(shared: &Shared, name: &str, f: impl FnOnce(&mut Follow)) {
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
    let stamp = uffs_source::write_stamp(&e.source);
    let before = follow_of(shared, &e.name);
    set_follow(shared, &e.name, |f| f.last_check = Some(Instant::now()));
    if !forced && stamp.is_some() && stamp == before.write_stamp {
        return (format!("{}: unchanged (nothing written)", e.name), 0);
    }
    let t = Instant::now();
    let vol = match e.open(true) {
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
                Some(server::offline_state(&err.to_string())),
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
    let base = l.base();
    let map = l.map.get_or_init(|| BaseMap::new(base));
    let opts = ScanOptions {
        local_time_offset: e
            .fat_timezone
            .or_else(uffs_mft::neutral::default_local_time_offset),
        fat_code_page: e
            .fat_codepage
            .unwrap_or_else(uffs_mft::neutral::default_fat_code_page),
        ..ScanOptions::default()
    };
    let outcome = refresh(&vol, base, map, l.delta.as_deref(), &opts);
    conclude(shared, &l, outcome, t, stamp)
}

/// Folders `dirs` of mounted folder `l`, which the kernel reported changes in, read again and what changed
/// applied as a delta (`uffs_mft::update::folder_delta`), without a walk of the whole folder. An error says why
/// that cannot be exact (a folder gone with what was below it, a folder read raw …): then [`check`] walks it
/// whole.
#[cfg(target_os = "linux")]
pub(crate) fn check_folders(
    shared: &Arc<Shared>,
    l: &Arc<Loaded>,
    dirs: &[std::path::PathBuf],
) -> Result<(String, u64), String> {
    let _one = shared.refreshing.lock();
    let l = server::current(shared)
        .volumes
        .iter()
        .find(|v| v.entry.name == l.entry.name)
        .cloned()
        .ok_or("not loaded")?;
    let e = &l.entry;
    if server::building(shared, &e.name) || l.meta().filesystem != uffs_index::FileSystem::Folder {
        return Err("not a walked folder, or being rebuilt".into());
    }
    let root = uffs_index::folder_root(&e.source).ok_or("not a folder")?;
    let root = std::path::Path::new(if root.is_empty() { "/" } else { root });
    let opts = e.walk.as_ref().map(|w| w.options()).unwrap_or_default();
    let folder = uffs_walk::Folder::open(root, opts).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let base = l.base();
    let map = l.map.get_or_init(|| BaseMap::new(base));
    let delta = l.delta.as_deref();
    let in_delta: std::collections::HashSet<u32> = delta
        .map(|d| {
            (0..d.index.len() as u32)
                .map(|i| d.index.record(i))
                .collect()
        })
        .unwrap_or_default();
    let known = |id: u64| {
        let r = uffs_mft::neutral::record_of(id).0;
        in_delta.contains(&(r as u32))
            || map
                .first(r)
                .is_some_and(|e| !delta.is_some_and(|d| d.is_hidden(e)))
    };
    let again = uffs_walk::reread(&folder, dirs, &|id| !known(id)).map_err(|e| e.to_string())?;
    if again.missing {
        return Err("a folder reported is gone or cannot be read".into());
    }
    if !again.exact {
        return Err("entries the walk numbers itself".into());
    }
    let found = t.elapsed();
    let mut applied = uffs_mft::update::folder_delta(
        base,
        map,
        delta,
        &again.listed,
        &again.entries,
        uffs_walk::ROOT_ID,
    )
    .ok_or("a folder removed with what was below it, or a file named elsewhere too")?;
    applied.find_time = found;
    Ok(conclude(
        shared,
        &l,
        Ok(Refresh::Updated(Box::new(applied))),
        t,
        None,
    ))
}

/// What a check found (`outcome`, after `t` began), applied: a delta swapped in and written, a rebuild started,
/// or why not; `stamp` is the source's write stamp the check began with.
fn conclude(
    shared: &Arc<Shared>,
    l: &Arc<Loaded>,
    outcome: uffs_mft::Result<Refresh>,
    t: Instant,
    stamp: Option<u64>,
) -> (String, u64) {
    let e = &l.entry;
    let base = l.base();
    // The check read the record numbers and hashes whole, which queries do not: their pages leave the process.
    uffs_index::file::release_update_pages(base);
    set_follow(shared, &e.name, |f| f.unavailable = false);
    let applied = match outcome {
        Err(err) => {
            log(&format!(
                "{}: checking for changes failed ({err}); the last index keeps answering",
                e.name
            ));
            return (format!("{}: check failed: {err}", e.name), 0);
        }
        Ok(Refresh::Unchanged { checked }) => {
            set_follow(shared, &e.name, |f| f.write_stamp = stamp);
            return (format!("{}: unchanged ({checked})", e.name), 0);
        }
        Ok(Refresh::Rebuild(why)) => {
            log(&format!("{}: {why}; rebuilding", e.name));
            server::start_rebuild(shared, e.clone(), "stale (rebuilding)");
            return (format!("{}: {why}; rebuilding", e.name), 0);
        }
        Ok(Refresh::Updated(applied)) => *applied,
    };
    let Applied {
        delta,
        report,
        how,
        find_time,
    } = applied;
    let records = report.stats.records;
    // Queries see the change as soon as the delta is made; it is written after (a kill before leaves the
    // previous delta, and the next check applies the change again).
    let delta = Arc::new(delta);
    let layered = Arc::new(l.with_delta(Arc::clone(&delta)));
    if !server::replace_volume_if(shared, &e.name, Arc::clone(&layered), |now| {
        Arc::ptr_eq(now, l)
    }) {
        return (format!("{}: replaced while this check ran", e.name), 0);
    }
    let applied_in = t.elapsed();
    let kept = if delta.index.len() > uffs_index::layer::compact_at(base) {
        compact(shared, &layered)
    } else {
        persist(shared, &layered)
    };
    let kept = match kept {
        Ok(k) => k,
        Err(why) => {
            // The change stays applied in memory; the next check writes it (or the next start applies it
            // again from the last written state).
            log(&format!("{}: {why}", e.name));
            return (format!("{}: {why}", e.name), records);
        }
    };
    crate::os::release_free_memory();
    // The update read columns of the index that queries do not (record numbers, parents, hashes): their pages
    // leave the process again.
    uffs_index::file::release_pages(base);
    let s = &report.stats;
    let line = format!(
        "{}: applied {} changed records (found by {how} in {:.1} ms; {} records read in {:.1} ms; delta of {} \
         entries made in {:.1} ms) in {:.1} ms; {kept} in {:.1} ms",
        e.name,
        records,
        find_time.as_secs_f64() * 1e3,
        report.records_read,
        report.read_time.as_secs_f64() * 1e3,
        delta.index.len(),
        (s.entries_time + s.link_time + s.aids_time).as_secs_f64() * 1e3,
        applied_in.as_secs_f64() * 1e3,
        (t.elapsed() - applied_in).as_secs_f64() * 1e3,
    );
    log(&line);
    set_follow(shared, &e.name, |f| {
        f.write_stamp = stamp;
        f.updated_at = uffs_index::time::now();
        f.last_changes = records;
        f.total_changes += records;
    });
    crate::dataset::after_update(shared, &e.name);
    (line, records)
}

/// Writes the delta of `l` beside its index, then swaps in the written one (mapped: its pages leave the
/// process until a query reads them) unless the snapshot moved on meanwhile.
fn persist(shared: &Shared, l: &Arc<Loaded>) -> Result<&'static str, String> {
    let Some(delta) = &l.delta else {
        return Ok("nothing to write");
    };
    let path = uffs_index::file::delta_path(&l.path);
    uffs_index::file::write_delta(delta, l.base(), &path)
        .map_err(|err| format!("writing {} failed: {err}", path.display()))?;
    let mapped = uffs_index::file::read_delta(&path, l.base())
        .map_err(|err| format!("{} did not load: {err}", path.display()))?;
    let new = Arc::new(l.with_delta(Arc::new(mapped)));
    server::replace_volume_if(shared, &l.entry.name, new, |now| Arc::ptr_eq(now, l));
    Ok("delta written")
}

/// Merges the delta of `l` into a whole index written to the volume's free slot, and swaps that in unless the
/// snapshot moved on meanwhile.
fn compact(shared: &Shared, l: &Arc<Loaded>) -> Result<&'static str, String> {
    let Some(delta) = &l.delta else {
        return Ok("nothing to merge");
    };
    let (whole, _) = uffs_index::layer::compact(l.base(), delta);
    let path = server::free_slot(shared, &l.entry.name)?;
    uffs_index::file::write(&whole, &path)
        .map_err(|err| format!("writing the merged index failed: {err}"))?;
    drop(whole);
    let new = server::load(shared, &l.entry, &path)
        .map_err(|why| format!("the merged index did not load: {why}"))?;
    server::replace_volume_if(shared, &l.entry.name, new, |now| Arc::ptr_eq(now, l));
    Ok("merged into a new index")
}

/// The `follow` column of `daemon status` for a volume.
pub(crate) fn describe(l: Option<&Arc<Loaded>>, entry: &crate::registry::VolumeEntry) -> String {
    let every = match entry.refresh_interval() {
        Some(d) => format!("every {} s", d.as_secs()),
        None => "never (uffs volumes refresh)".into(),
    };
    match l.map(|l| l.meta()) {
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
