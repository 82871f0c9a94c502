//! Date values of `dm:`, `dc:` and `da:`: a day, month or year, a named period, a comparison or a range, each
//! turned into a half-open FILETIME interval `[from, to)`. Days are UTC days. A time the volume does not keep
//! ([`UNKNOWN`]) is in no interval but `unknown`'s, which holds only it.

use uffs_index::time::{from_civil_date, to_civil, FIRST_KNOWN, TICKS_PER_SECOND, UNKNOWN};

const DAY: u64 = 86_400 * TICKS_PER_SECOND;

/// Parses `value` (`today`, `2024`, `>2024-05-01`, `2024-01..2024-03`, `unknown`, …) relative to `now`
/// (FILETIME).
pub fn parse(value: &str, now: u64) -> Result<(u64, u64), String> {
    let (from, to) = interval(value, now)?;
    Ok(if (from, to) == (UNKNOWN, FIRST_KNOWN) {
        (from, to)
    } else {
        (from.max(FIRST_KNOWN), to)
    })
}

fn interval(value: &str, now: u64) -> Result<(u64, u64), String> {
    let v = value.trim().to_ascii_lowercase();
    match v.trim_start_matches(['<', '>', '=']) {
        "unknown" if v == "unknown" || v == "=unknown" => return Ok((UNKNOWN, FIRST_KNOWN)),
        "unknown" => {
            return Err(format!(
                "`{value}`: `unknown` is no point in time to compare with; it stands alone"
            ))
        }
        _ => {}
    }
    if let Some((a, b)) = v.split_once("..") {
        let (from, _) = period(a, now)?;
        let (_, to) = period(b, now)?;
        if from >= to {
            return Err(format!(
                "date range `{value}` is empty: its start is after its end"
            ));
        }
        return Ok((from, to));
    }
    let (op, rest) = ["<=", ">=", "<", ">", "="]
        .iter()
        .find_map(|op| v.strip_prefix(op).map(|r| (*op, r)))
        .unwrap_or(("=", v.as_str()));
    let (from, to) = period(rest, now)?;
    Ok(match op {
        ">" => (to, u64::MAX),
        ">=" => (from, u64::MAX),
        "<" => (FIRST_KNOWN, from),
        "<=" => (FIRST_KNOWN, to),
        _ => (from, to),
    })
}

/// One period: named, a year, a month or a day.
fn period(s: &str, now: u64) -> Result<(u64, u64), String> {
    let today = now / DAY * DAY;
    let c = to_civil(now);
    let month_start = |y: i64, m: u32| from_civil_date(y, m, 1);
    let next_month = |y: i64, m: u32| if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let prev_month = |y: i64, m: u32| if m == 1 { (y - 1, 12) } else { (y, m - 1) };
    // 1601-01-01 was a Monday, so days since the FILETIME epoch modulo 7 is the weekday (0 = Monday).
    let week_start = today - (now / DAY % 7) * DAY;
    Ok(match s.trim() {
        "today" => (today, today + DAY),
        "yesterday" => (today.saturating_sub(DAY), today),
        "thisweek" => (week_start, week_start + 7 * DAY),
        "lastweek" => (week_start.saturating_sub(7 * DAY), week_start),
        "thismonth" => {
            let (ny, nm) = next_month(c.year, c.month);
            (month_start(c.year, c.month), month_start(ny, nm))
        }
        "lastmonth" => {
            let (py, pm) = prev_month(c.year, c.month);
            (month_start(py, pm), month_start(c.year, c.month))
        }
        "thisyear" => (
            from_civil_date(c.year, 1, 1),
            from_civil_date(c.year + 1, 1, 1),
        ),
        "lastyear" => (
            from_civil_date(c.year - 1, 1, 1),
            from_civil_date(c.year, 1, 1),
        ),
        other => {
            let parts: Vec<&str> = other.split(['-', '/']).collect();
            let num = |p: &str, what: &str, lo: u32, hi: u32| -> Result<u32, String> {
                p.parse::<u32>()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| format!("bad {what} `{p}` in date `{other}`"))
            };
            let bad = || {
                format!(
                    "expected a date like 2024, 2024-05, 2024-05-01, today, yesterday, thisweek, lastweek, \
                     thismonth, lastmonth, thisyear, lastyear or unknown, found `{other}`"
                )
            };
            if parts[0].len() != 4 || !parts[0].bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            let y = i64::from(num(parts[0], "year", 1601, 9999)?);
            match parts.len() {
                1 => (from_civil_date(y, 1, 1), from_civil_date(y + 1, 1, 1)),
                2 => {
                    let m = num(parts[1], "month", 1, 12)?;
                    let (ny, nm) = next_month(y, m);
                    (month_start(y, m), month_start(ny, nm))
                }
                3 => {
                    let m = num(parts[1], "month", 1, 12)?;
                    let d = num(parts[2], "day", 1, 31)?;
                    let start = from_civil_date(y, m, d);
                    if to_civil(start).month != m {
                        return Err(format!("{other} is not a date"));
                    }
                    (start, start + DAY)
                }
                _ => return Err(bad()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_comparisons() {
        // Wednesday 2024-05-15 12:00 UTC.
        let now = from_civil_date(2024, 5, 15) + DAY / 2;
        let d = |y, m, dd| from_civil_date(y, m, dd);
        assert_eq!(parse("today", now), Ok((d(2024, 5, 15), d(2024, 5, 16))));
        assert_eq!(
            parse("yesterday", now),
            Ok((d(2024, 5, 14), d(2024, 5, 15)))
        );
        assert_eq!(parse("thisweek", now), Ok((d(2024, 5, 13), d(2024, 5, 20))));
        assert_eq!(parse("lastmonth", now), Ok((d(2024, 4, 1), d(2024, 5, 1))));
        assert_eq!(parse("2024", now), Ok((d(2024, 1, 1), d(2025, 1, 1))));
        assert_eq!(parse("2024-02", now), Ok((d(2024, 2, 1), d(2024, 3, 1))));
        assert_eq!(parse(">2024-05-01", now), Ok((d(2024, 5, 2), u64::MAX)));
        // Before a date is after the unknown time (0).
        assert_eq!(parse("<2024", now), Ok((FIRST_KNOWN, d(2024, 1, 1))));
        assert_eq!(parse("<=1601", now), Ok((FIRST_KNOWN, d(1602, 1, 1))));
        assert_eq!(parse("1601-01-01", now), Ok((FIRST_KNOWN, DAY)));
        assert_eq!(parse("1601..2024", now), Ok((FIRST_KNOWN, d(2025, 1, 1))));
        assert_eq!(
            parse("2023-12..2024-01", now),
            Ok((d(2023, 12, 1), d(2024, 2, 1)))
        );
        assert!(parse("2024-02-30", now).is_err());
        assert!(parse("soon", now).unwrap_err().contains("expected a date"));
    }

    #[test]
    fn only_unknown_holds_the_unknown_time() {
        let now = from_civil_date(2024, 5, 15);
        let holds_zero = |v: &str| parse(v, now).map(|(a, b)| (a..b).contains(&UNKNOWN));
        assert_eq!(parse("unknown", now), Ok((UNKNOWN, FIRST_KNOWN)));
        assert_eq!(parse(" =Unknown", now), Ok((UNKNOWN, FIRST_KNOWN)));
        for v in [
            "<2020",
            "<=2020",
            ">=1601-01-01",
            "1601",
            "1601-01",
            "1601..2024",
            "<today",
            "thisyear",
        ] {
            assert_eq!(holds_zero(v), Ok(false), "{v}");
        }
        for v in ["<unknown", ">=unknown", "unknown..2024", "2020..unknown"] {
            assert!(parse(v, now).is_err(), "{v}");
        }
    }
}
