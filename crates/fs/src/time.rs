//! FILETIME (100 ns units since 1601-01-01) helpers every reader shares.

pub use uffs_index::time::{format_iso, TICKS_PER_SECOND, UNIX_EPOCH};

/// Shifts a FILETIME by `seconds` (east of UTC positive: a local time at +01:00 is UTC minus an hour, so pass
/// -3600 to turn it into UTC); 0 (no time) stays 0.
pub fn shift(ft: u64, seconds: i64) -> u64 {
    if ft == 0 {
        return 0;
    }
    let delta = seconds.unsigned_abs() * TICKS_PER_SECOND;
    if seconds >= 0 {
        ft.saturating_add(delta)
    } else {
        ft.saturating_sub(delta).max(1)
    }
}
