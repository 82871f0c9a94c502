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
    if let Some(p) = named(s.trim(), now) {
        return Ok(p);
    }
    let month_start = |y: i64, m: u32| from_civil_date(y, m, 1);
    let next_month = |y: i64, m: u32| if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let other = s.trim();
    let parts: Vec<&str> = other.split(['-', '/']).collect();
    let num = |p: &str, what: &str, lo: u32, hi: u32| -> Result<u32, String> {
        p.parse::<u32>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| format!("bad {what} `{p}` in date `{other}`"))
    };
    let bad = || {
        format!(
            "expected a date like 2024, 2024-05, 2024-05-01, today, yesterday, tomorrow, thisweek, \
             lastmonth, pastyear, nextweek, last3days, prev2weeks, june, friday or unknown, found \
             `{other}`"
        )
    };
    if parts[0].len() != 4 || !parts[0].bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let y = i64::from(num(parts[0], "year", 1601, 9999)?);
    Ok(match parts.len() {
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
    })
}

/// The units a counted period (`last3days`) takes, singular or plural.
#[derive(Clone, Copy)]
enum Unit {
    Year,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
}

fn unit(s: &str) -> Option<Unit> {
    Some(match s.strip_suffix('s').unwrap_or(s) {
        "year" => Unit::Year,
        "month" => Unit::Month,
        "week" => Unit::Week,
        "day" => Unit::Day,
        "hour" => Unit::Hour,
        "minute" | "min" => Unit::Minute,
        "second" | "sec" => Unit::Second,
        _ => return None,
    })
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Everything's date constants: `today`, `yesterday`, `tomorrow`; `this`/`current`, `last`/`prev`, `past` and
/// `next`/`coming` with `year`, `month`, `week` or `day`; the counted forms (`last3days`, `prev2weeks`,
/// `next6hours`); month and weekday names and their three-letter forms.
///
/// `this` and `current` are the calendar period holding now; `last` and `prev` the whole one before it,
/// `next` and `coming` the one after; `past` is the period's length up to now (`pastweek`: the last 7 days).
/// Counted: `lastN`/`pastN` units are the N units up to now, `prevN` the N whole calendar units before the
/// current one, `nextN`/`comingN` the N units from now. A month name is that month of this year; a weekday's
/// name the latest such day (today, on that day). Weeks start on Monday; days are UTC days.
fn named(s: &str, now: u64) -> Option<(u64, u64)> {
    let today = now / DAY * DAY;
    match s {
        "today" => return Some((today, today + DAY)),
        "yesterday" => return Some((today.saturating_sub(DAY), today)),
        "tomorrow" => return Some((today + DAY, today + 2 * DAY)),
        _ => {}
    }
    if let Some(m) = MONTHS
        .iter()
        .position(|m| *m == s || (s.len() == 3 && m.starts_with(s)))
    {
        let y = to_civil(now).year;
        let m = m as u32 + 1;
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        return Some((from_civil_date(y, m, 1), from_civil_date(ny, nm, 1)));
    }
    if let Some(w) = WEEKDAYS
        .iter()
        .position(|w| *w == s || (s.len() == 3 && w.starts_with(s)))
    {
        // 1601-01-01 was a Monday: days since the FILETIME epoch modulo 7 is the weekday (0 = Monday).
        let back = (now / DAY % 7 + 7 - w as u64) % 7;
        let day = today.saturating_sub(back * DAY);
        return Some((day, day + DAY));
    }
    let (how, rest) = ["current", "coming", "last", "past", "prev", "this", "next"]
        .iter()
        .find_map(|p| s.strip_prefix(p).map(|r| (*p, r)))?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let u = unit(&rest[digits..])?;
    let start_of = |t: u64, k: i64| calendar_start(t, u, k);
    if digits == 0 {
        if rest.ends_with('s') {
            return None;
        }
        let this = start_of(now, 0);
        return Some(match how {
            "this" | "current" => (this, start_of(now, 1)),
            "last" | "prev" => (start_of(now, -1), this),
            "past" => (shift(now, u, -1), now + 1),
            _ => (start_of(now, 1), start_of(now, 2)),
        });
    }
    let n: i64 = rest[..digits].parse().ok().filter(|&n| n <= 100_000)?;
    Some(match how {
        "last" | "past" => (shift(now, u, -n), now + 1),
        "prev" => (start_of(now, -n), start_of(now, 0)),
        "next" | "coming" => (now, shift(now, u, n)),
        _ => return None,
    })
}

/// Time `t` moved by `k` units (months and years by the calendar, the day kept within the month).
fn shift(t: u64, u: Unit, k: i64) -> u64 {
    let secs: i64 = match u {
        Unit::Week => 7 * 86_400,
        Unit::Day => 86_400,
        Unit::Hour => 3_600,
        Unit::Minute => 60,
        Unit::Second => 1,
        Unit::Year | Unit::Month => {
            let months = if matches!(u, Unit::Year) { 12 * k } else { k };
            let c = to_civil(t);
            let total = c.year * 12 + i64::from(c.month) - 1 + months;
            let (y, m) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
            let mut d = c.day;
            while d > 28 && to_civil(from_civil_date(y, m, d)).month != m {
                d -= 1;
            }
            return from_civil_date(y.max(1601), m, d) + t % DAY;
        }
    };
    let delta = secs
        .saturating_mul(k)
        .saturating_mul(TICKS_PER_SECOND as i64);
    (t as i64).saturating_add(delta).max(0) as u64
}

/// The start of the calendar unit holding `t`, moved by `k` units.
fn calendar_start(t: u64, u: Unit, k: i64) -> u64 {
    let c = to_civil(t);
    let start = match u {
        Unit::Year => from_civil_date(c.year, 1, 1),
        Unit::Month => from_civil_date(c.year, c.month, 1),
        Unit::Week => t / DAY * DAY - (t / DAY % 7) * DAY,
        Unit::Day => t / DAY * DAY,
        Unit::Hour => t - t % (3_600 * TICKS_PER_SECOND),
        Unit::Minute => t - t % (60 * TICKS_PER_SECOND),
        Unit::Second => t - t % TICKS_PER_SECOND,
    };
    shift(start, u, k)
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
    fn everythings_date_constants() {
        // Wednesday 2024-05-15 12:00 UTC.
        let now = from_civil_date(2024, 5, 15) + DAY / 2;
        let d = |y, m, dd| from_civil_date(y, m, dd);
        let p = |v: &str| parse(v, now).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(p("tomorrow"), (d(2024, 5, 16), d(2024, 5, 17)));
        for this in ["thisweek", "currentweek"] {
            assert_eq!(p(this), (d(2024, 5, 13), d(2024, 5, 20)));
        }
        for last in ["lastweek", "prevweek"] {
            assert_eq!(p(last), (d(2024, 5, 6), d(2024, 5, 13)));
        }
        for next in ["nextweek", "comingweek"] {
            assert_eq!(p(next), (d(2024, 5, 20), d(2024, 5, 27)));
        }
        assert_eq!(p("pastweek"), (d(2024, 5, 8) + DAY / 2, now + 1));
        assert_eq!(p("pastmonth"), (d(2024, 4, 15) + DAY / 2, now + 1));
        assert_eq!(p("prevyear"), (d(2023, 1, 1), d(2024, 1, 1)));
        assert_eq!(p("nextmonth"), (d(2024, 6, 1), d(2024, 7, 1)));
        assert_eq!(p("thisday"), (d(2024, 5, 15), d(2024, 5, 16)));
        // Counted: up to now, whole calendar units before this one, or from now.
        assert_eq!(p("last3days"), (d(2024, 5, 12) + DAY / 2, now + 1));
        assert_eq!(p("past2weeks"), (d(2024, 5, 1) + DAY / 2, now + 1));
        assert_eq!(p("prev2weeks"), (d(2024, 4, 29), d(2024, 5, 13)));
        assert_eq!(p("prev3months"), (d(2024, 2, 1), d(2024, 5, 1)));
        assert_eq!(p("next6hours"), (now, now + 6 * 3_600 * TICKS_PER_SECOND));
        assert_eq!(p("coming1year"), (now, d(2025, 5, 15) + DAY / 2));
        assert_eq!(p("last90mins"), (now - 90 * 60 * TICKS_PER_SECOND, now + 1));
        assert_eq!(p("last1second"), (now - TICKS_PER_SECOND, now + 1));
        // Month and weekday names.
        assert_eq!(p("june"), (d(2024, 6, 1), d(2024, 7, 1)));
        assert_eq!(p("dec"), (d(2024, 12, 1), d(2025, 1, 1)));
        assert_eq!(p("wednesday"), (d(2024, 5, 15), d(2024, 5, 16)));
        assert_eq!(p("mon"), (d(2024, 5, 13), d(2024, 5, 14)));
        assert_eq!(p("thu"), (d(2024, 5, 9), d(2024, 5, 10)));
        assert_eq!(p("sunday"), (d(2024, 5, 12), d(2024, 5, 13)));
        // A month that is shorter: the day kept within it.
        let mar31 = d(2024, 3, 31);
        assert_eq!(parse("pastmonth", mar31), Ok((d(2024, 2, 29), mar31 + 1)));
        // In comparisons and ranges.
        assert_eq!(p(">lastweek"), (d(2024, 5, 13), u64::MAX));
        assert_eq!(p("january..march"), (d(2024, 1, 1), d(2024, 4, 1)));
        for bad in [
            "lastweeks",
            "last3",
            "thisfortnight",
            "last3fortnights",
            "this2days",
        ] {
            assert!(parse(bad, now).is_err(), "{bad}");
        }
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
