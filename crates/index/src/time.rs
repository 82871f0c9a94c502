//! FILETIME (100-nanosecond ticks since 1601-01-01 UTC) to and from calendar dates, and the FILETIME that stands
//! for a time the file system does not keep ([`UNKNOWN`]).

/// FILETIME of 1970-01-01T00:00:00Z.
pub const UNIX_EPOCH: u64 = 116_444_736_000_000_000;
pub const TICKS_PER_SECOND: u64 = 10_000_000;

/// A time the volume does not keep: ext2/3 and 128-byte ext4 inodes have no birth time, FAT and exFAT no change
/// time, and any file system may leave a time unset. No real file is from the first tick of 1601, so every
/// front end shows it as unknown (empty, null), sorts it last and matches it by no date term but `unknown`.
pub const UNKNOWN: u64 = 0;

/// The first known time: a date term's interval starts here or later, but `unknown`'s.
pub const FIRST_KNOWN: u64 = UNKNOWN + 1;

/// `ft`, or `None` when it is [`UNKNOWN`].
pub fn known(ft: u64) -> Option<u64> {
    (ft != UNKNOWN).then_some(ft)
}

/// The current time as a FILETIME.
pub fn now() -> u64 {
    of(std::time::SystemTime::now())
}

/// A system time (a file's modification time) as a FILETIME; a time before 1970 as 1970.
pub fn of(t: std::time::SystemTime) -> u64 {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + d.as_secs() * TICKS_PER_SECOND + u64::from(d.subsec_nanos() / 100)
}

/// A broken-down UTC time with 100 ns precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub ticks: u32,
}

pub fn to_civil(ft: u64) -> Civil {
    let secs = ft / TICKS_PER_SECOND;
    let ticks = (ft % TICKS_PER_SECOND) as u32;
    // Days since 1601-01-01, then shifted to days since 1970-01-01 for the civil-from-days algorithm.
    let days = (secs / 86_400) as i64 - 134_774;
    let sod = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: (sod / 3600) as u32,
        minute: (sod / 60 % 60) as u32,
        second: (sod % 60) as u32,
        ticks,
    }
}

/// Formats as ISO 8601 UTC with 100 ns precision: `2024-05-01T12:34:56.1234567Z`.
pub fn format_iso(ft: u64, out: &mut String) {
    use std::fmt::Write;
    let c = to_civil(ft);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second, c.ticks
    );
}

/// FILETIME of midnight UTC at the start of a calendar day.
pub fn from_civil_date(year: i64, month: u32, day: u32) -> u64 {
    let days = days_from_civil(year, month, day) + 134_774;
    (days.max(0) as u64) * 86_400 * TICKS_PER_SECOND
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(ft: u64) -> String {
        let mut s = String::new();
        format_iso(ft, &mut s);
        s
    }

    #[test]
    fn known_instants() {
        assert_eq!(iso(0), "1601-01-01T00:00:00.0000000Z");
        assert_eq!(iso(UNIX_EPOCH), "1970-01-01T00:00:00.0000000Z");
        // 2000-02-29T12:00:00.1234567Z
        let ft = from_civil_date(2000, 2, 29) + 12 * 3600 * TICKS_PER_SECOND + 1_234_567;
        assert_eq!(iso(ft), "2000-02-29T12:00:00.1234567Z");
        assert_eq!(iso(u64::MAX).len(), "30828-09-14T02:48:05.4775807Z".len());
    }

    #[test]
    fn zero_is_unknown() {
        assert_eq!(known(UNKNOWN), None);
        assert_eq!(known(1), Some(1));
        assert_eq!(known(UNIX_EPOCH), Some(UNIX_EPOCH));
    }
}
