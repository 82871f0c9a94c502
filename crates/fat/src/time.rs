//! DOS dates and times, as FAT and exFAT keep them, to FILETIME (100 ns units since 1601-01-01).
//!
//! A DOS date is `year-1980:7 month:4 day:5`, a time `hour:5 minute:6 second/2:5`, with a separate 10 ms
//! field for finer creation (and on exFAT modification) times. FAT keeps local time of no stated zone; exFAT
//! adds the offset from UTC in 15-minute steps.

use uffs_fs::time::{TICKS_PER_SECOND, UNIX_EPOCH};

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The FILETIME of a DOS date and time read as UTC, plus `centis` hundredths of a second (0..=199, the 10 ms
/// field); 0 for a date of 0 (never set) or one that is no date (month 0 or 13+, day 0, hour 24+ …).
pub fn dos_to_filetime(date: u16, time: u16, centis: u8) -> u64 {
    if date == 0 {
        return 0;
    }
    let year = 1980 + i64::from(date >> 9);
    let month = u32::from((date >> 5) & 0xF);
    let day = u32::from(date & 0x1F);
    let hour = u64::from(time >> 11);
    let minute = u64::from((time >> 5) & 0x3F);
    let second = u64::from(time & 0x1F) * 2;
    if !(1..=12).contains(&month)
        || day == 0
        || hour > 23
        || minute > 59
        || second > 59
        || centis > 199
    {
        return 0;
    }
    let days = days_from_civil(year, month, day);
    let secs = days as u64 * 86_400 + hour * 3600 + minute * 60 + second;
    UNIX_EPOCH + secs * TICKS_PER_SECOND + u64::from(centis) * 100_000
}

pub use uffs_fs::time::shift;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dos_dates_become_filetimes() {
        // 1980-01-01 00:00:00
        assert_eq!(
            dos_to_filetime(0x21, 0, 0),
            UNIX_EPOCH + 315_532_800 * TICKS_PER_SECOND
        );
        // 2024-02-29 13:45:58.37: date = (44<<9)|(2<<5)|29, time = (13<<11)|(45<<5)|29, centis 137 (1.37 s)
        let ft = dos_to_filetime((44 << 9) | (2 << 5) | 29, (13 << 11) | (45 << 5) | 29, 137);
        assert_eq!(
            ft,
            UNIX_EPOCH + 1_709_214_358 * TICKS_PER_SECOND + 13_700_000
        );
        assert_eq!(dos_to_filetime(0, 0, 0), 0);
        assert_eq!(
            dos_to_filetime((44 << 9) | (13 << 5) | 1, 0, 0),
            0,
            "month 13"
        );
    }

    #[test]
    fn shifts_keep_zero() {
        assert_eq!(shift(0, 3600), 0);
        assert_eq!(shift(10 * TICKS_PER_SECOND, -3), 7 * TICKS_PER_SECOND);
    }
}
