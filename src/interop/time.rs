//! ISO 8601 timestamps (what pi, Claude Code and Codex write) to and from Unix
//! milliseconds (what libsession's `timestamp` holds), the way JavaScript's `Date`
//! reads and writes them: `Date.parse` for the one direction, `toISOString` for the
//! other, so that pi sees the same instant it wrote.

/// Unix milliseconds of an ISO 8601 date-time: `YYYY-MM-DD`, optionally
/// `THH:MM`, `:SS`, a fraction (milliseconds; further digits are cut, as `Date`
/// does), and `Z` or `±HH:MM` (none means UTC). `None` for anything else.
pub(crate) fn iso_to_millis(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let year = digits(b, 0, 4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let month = digits(b, 5, 2)?;
    let day = digits(b, 8, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut at = 10;
    let (mut hour, mut minute, mut second, mut millis) = (0, 0, 0, 0);
    let mut offset_minutes = 0i64;
    if at < b.len() {
        if b[at] != b'T' && b[at] != b't' {
            return None;
        }
        hour = digits(b, at + 1, 2)?;
        if b.get(at + 3) != Some(&b':') {
            return None;
        }
        minute = digits(b, at + 4, 2)?;
        at += 6;
        if b.get(at) == Some(&b':') {
            second = digits(b, at + 1, 2)?;
            at += 3;
            if b.get(at) == Some(&b'.') {
                at += 1;
                let start = at;
                while b.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
                if at == start {
                    return None;
                }
                let fraction = &text[start..at.min(start + 3)];
                millis = fraction.parse::<i64>().ok()? * 10i64.pow(3 - fraction.len() as u32);
            }
        }
        match b.get(at) {
            None => {}
            Some(b'Z' | b'z') if at + 1 == b.len() => {}
            Some(sign @ (b'+' | b'-')) if at + 6 == b.len() && b[at + 3] == b':' => {
                let minutes = digits(b, at + 1, 2)? * 60 + digits(b, at + 4, 2)?;
                offset_minutes = if *sign == b'+' { minutes } else { -minutes };
            }
            _ => return None,
        }
        if hour > 24
            || minute > 59
            || second > 59
            || (hour == 24 && (minute, second, millis) != (0, 0, 0))
        {
            return None;
        }
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some((seconds * 1000 + millis) as f64)
}

/// `Date.prototype.toISOString`: `YYYY-MM-DDTHH:MM:SS.sssZ` for a millisecond count
/// in years 0–9999. `None` outside that range or for a fractional or non-finite
/// number (which no ISO text could have produced).
///
/// Hidden-public: the benchmark's session generator writes pi's timestamps with it.
pub fn millis_to_iso(millis: f64) -> Option<String> {
    if !millis.is_finite() || millis.fract() != 0.0 || millis.abs() > 253_402_300_799_999.0 {
        return None;
    }
    let millis = millis as i64;
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return None;
    }
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    ))
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = b.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, d| {
        d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
    })
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month 1–12, day 1–31)` of a count of days since 1970-01-01, proleptic
/// Gregorian (Howard Hinnant's `civil_from_days`); exact for every day count of an
/// `i64` of milliseconds. Hidden-public: the `session` binary's dates use it.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_text_reads_as_javascript_date_parse_does() {
        assert_eq!(iso_to_millis("1970-01-01T00:00:00.000Z"), Some(0.0));
        assert_eq!(
            iso_to_millis("2025-06-02T18:46:59.937Z"),
            Some(1_748_890_019_937.0)
        );
        assert_eq!(
            iso_to_millis("2025-06-02T18:46:59.9379Z"),
            Some(1_748_890_019_937.0)
        );
        assert_eq!(
            iso_to_millis("2025-06-02T20:46:59.937+02:00"),
            Some(1_748_890_019_937.0)
        );
        assert_eq!(iso_to_millis("2024-02-29"), Some(1_709_164_800_000.0));
        assert_eq!(iso_to_millis("1969-12-31T23:59:59.999Z"), Some(-1.0));
        assert_eq!(iso_to_millis("2023-02-29T00:00:00Z"), None);
        assert_eq!(iso_to_millis("yesterday"), None);
        assert_eq!(iso_to_millis("2025-06-02T18:46:59.937Zjunk"), None);
    }

    #[test]
    fn civil_from_days_inverts_days_from_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        // Every day from 1600-01-01 to 2400-12-31, leap centuries on both sides.
        for days in days_from_civil(1600, 1, 1)..=days_from_civil(2400, 12, 31) {
            let (year, month, day) = civil_from_days(days);
            assert!((1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day));
            assert_eq!(days_from_civil(year, month, day), days);
        }
    }

    #[test]
    fn millis_write_as_to_iso_string_does() {
        assert_eq!(
            millis_to_iso(1_748_890_019_937.0).as_deref(),
            Some("2025-06-02T18:46:59.937Z")
        );
        assert_eq!(
            millis_to_iso(-1.0).as_deref(),
            Some("1969-12-31T23:59:59.999Z")
        );
        assert_eq!(millis_to_iso(1.5), None);
        assert_eq!(millis_to_iso(f64::NAN), None);
    }
}
