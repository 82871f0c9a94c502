//! The temporary files this process is writing, each beside the file it becomes, so that a process ended by a
//! signal can remove them first (the `uffs` command line's signal handler calls [`remove_all`]): an interrupted
//! command leaves neither a partial output nor a temporary file. Every file uffs writes under a temporary name
//! and renames into place is made here: index files and deltas ([`crate::file`]), exports and Parquet
//! (`uffs_results::TempFile`), `uffs cat -o`, the daemon's registry.
//!
//! A file is created and registered under one lock, and renamed into place (or removed) and forgotten under it
//! too; [`remove_all`] takes the lock and never lets it go. So whatever the order, a temporary file is either
//! removed or already complete under its own name, and none is made or renamed once the process is ending.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temps() -> MutexGuard<'static, Vec<PathBuf>> {
    TEMPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn forget(t: &mut Vec<PathBuf>, tmp: &Path) {
    if let Some(i) = t.iter().rposition(|p| p == tmp) {
        t.swap_remove(i);
    }
}

/// Creates (or truncates) the temporary file `tmp`, registered for removal.
pub fn create(tmp: &Path) -> io::Result<File> {
    let mut t = temps();
    let f = File::create(tmp)?;
    t.push(tmp.to_path_buf());
    Ok(f)
}

/// Renames the temporary file `tmp` to `dest`; once renamed, it is no longer removed by [`remove_all`].
pub fn persist(tmp: &Path, dest: &Path) -> io::Result<()> {
    hold_for_tests();
    let mut t = temps();
    fs::rename(tmp, dest)?;
    forget(&mut t, tmp);
    Ok(())
}

/// Fault injection for tests: with `UFFS_TEST_HOLD_BEFORE_RENAME_MS=N` in the environment, a complete temporary
/// file waits N ms before it is renamed, so that a test's signal lands while it is being written on any machine
/// (a write of a few milliseconds is missed by a poll on a loaded one).
fn hold_for_tests() {
    if let Some(ms) = std::env::var_os("UFFS_TEST_HOLD_BEFORE_RENAME_MS")
        .and_then(|v| v.to_str()?.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(10_000)));
    }
}

/// Removes the temporary file `tmp` (when it was not renamed) and forgets it.
pub fn discard(tmp: &Path) {
    let mut t = temps();
    if let Some(i) = t.iter().rposition(|p| p == tmp) {
        let _ = fs::remove_file(tmp);
        t.swap_remove(i);
    }
}

/// Removes every temporary file of this process and keeps the registry locked for good, so that no thread makes
/// or renames one after: for a process about to end. Returns how many were removed.
pub fn remove_all() -> usize {
    let t = temps();
    let removed = t.iter().filter(|p| fs::remove_file(p).is_ok()).count();
    std::mem::forget(t);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persisted_files_stay_and_discarded_ones_go() {
        let dir = std::env::temp_dir().join(format!("uffs-temp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (a, b, dest) = (dir.join(".a.tmp"), dir.join(".b.tmp"), dir.join("a"));
        create(&a).unwrap();
        create(&b).unwrap();
        persist(&a, &dest).unwrap();
        discard(&b);
        assert!(dest.exists() && !a.exists() && !b.exists());
        // Other tests of this process may be writing files of their own meanwhile: only these two are checked.
        assert!(!temps().iter().any(|p| *p == a || *p == b));
        fs::remove_dir_all(&dir).unwrap();
    }
}
