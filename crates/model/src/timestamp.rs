//! Event timestamps: generating them as the SDK writes them, and reading them as instants.
//!
//! The SDK's `timestamp` is a plain string (SCHEMA.md §3): `datetime.now().isoformat()`, a
//! naive local time with microseconds, the fraction left out when it is zero. Switchboard
//! generates the same shape in UTC. Reading accepts ISO-8601 / RFC 3339 date-times with or
//! without an offset (naive means UTC), with `T` or a space, with 0 to 9 fraction digits, and a
//! date alone (midnight UTC).

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// Now, in the SDK's format: `YYYY-MM-DDTHH:MM:SS[.ffffff]`, UTC, no offset.
pub fn now_timestamp() -> String {
    format_naive(OffsetDateTime::now_utc())
}

/// Formats an instant as the SDK writes timestamps: converted to UTC, no offset suffix,
/// six fraction digits, or none when the microsecond is zero.
pub fn format_naive(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    let mut out = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let micros = t.microsecond();
    if micros != 0 {
        out.push_str(&format!(".{micros:06}"));
    }
    out
}

/// Reads an ISO-8601 date or date-time as an instant; `None` when it is not one.
///
/// Accepted: `2026-11-21`, `2026-11-21T09:08:18`, `2026-11-21 09:08`, `…:18.014821`,
/// `…:18.1Z`, `…:18+05:30`, `…:18-0800`. A value without an offset is UTC.
pub fn parse_instant(s: &str) -> Option<OffsetDateTime> {
    let b = s.as_bytes();
    let date = parse_date(b.get(..10)?)?;
    if b.len() == 10 {
        return Some(PrimitiveDateTime::new(date, Time::MIDNIGHT).assume_utc());
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let rest = &b[11..];
    let hour = two(rest, 0)?;
    if rest.get(2) != Some(&b':') {
        return None;
    }
    let minute = two(rest, 3)?;
    let mut i = 5;
    let mut second = 0;
    let mut nanos: u32 = 0;
    if rest.get(i) == Some(&b':') {
        second = two(rest, i + 1)?;
        i += 3;
        if matches!(rest.get(i), Some(b'.') | Some(b',')) {
            i += 1;
            let start = i;
            while i < rest.len() && rest[i].is_ascii_digit() {
                if i - start < 9 {
                    nanos = nanos * 10 + u32::from(rest[i] - b'0');
                }
                i += 1;
            }
            let digits = i - start;
            if digits == 0 {
                return None;
            }
            for _ in digits..9 {
                nanos *= 10;
            }
        }
    }
    let time = Time::from_hms_nano(hour, minute, second, nanos).ok()?;
    let offset = parse_offset(&rest[i..])?;
    Some(PrimitiveDateTime::new(date, time).assume_offset(offset))
}

fn parse_date(b: &[u8]) -> Option<Date> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = i32::from(two(b, 0)?) * 100 + i32::from(two(b, 2)?);
    let month = Month::try_from(two(b, 5)?).ok()?;
    Date::from_calendar_date(year, month, two(b, 8)?).ok()
}

fn parse_offset(b: &[u8]) -> Option<UtcOffset> {
    match b {
        [] => Some(UtcOffset::UTC),
        [b'Z' | b'z'] => Some(UtcOffset::UTC),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest.len() {
                2 => (two(rest, 0)?, 0),
                4 => (two(rest, 0)?, two(rest, 2)?),
                5 if rest[2] == b':' => (two(rest, 0)?, two(rest, 3)?),
                _ => return None,
            };
            let secs =
                (i32::from(h) * 3600 + i32::from(m) * 60) * if *sign == b'-' { -1 } else { 1 };
            UtcOffset::from_whole_seconds(secs).ok()
        }
        _ => None,
    }
}

fn two(b: &[u8], at: usize) -> Option<u8> {
    let hi = *b.get(at)?;
    let lo = *b.get(at + 1)?;
    if hi.is_ascii_digit() && lo.is_ascii_digit() {
        Some((hi - b'0') * 10 + (lo - b'0'))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_like_python_isoformat() {
        assert_eq!(
            format_naive(datetime!(2025-11-21 09:30:00 UTC)),
            "2025-11-21T09:30:00"
        );
        assert_eq!(
            format_naive(datetime!(2026-11-21 09:07:56.130819 UTC)),
            "2026-11-21T09:07:56.130819"
        );
        assert_eq!(
            format_naive(datetime!(2026-11-21 11:07:56.000001 +02:00)),
            "2026-11-21T09:07:56.000001"
        );
    }

    #[test]
    fn parses_the_accepted_forms() {
        let utc = datetime!(2026-11-21 09:08:18.014821 UTC);
        assert_eq!(parse_instant("2026-11-21T09:08:18.014821"), Some(utc));
        assert_eq!(parse_instant("2026-11-21T09:08:18.014821Z"), Some(utc));
        assert_eq!(parse_instant("2026-11-21 09:08:18.014821+00:00"), Some(utc));
        assert_eq!(parse_instant("2026-11-21T14:38:18.014821+05:30"), Some(utc));
        assert_eq!(parse_instant("2026-11-21T01:08:18.014821-0800"), Some(utc));
        assert_eq!(
            parse_instant("2026-11-21"),
            Some(datetime!(2026-11-21 00:00 UTC))
        );
        assert_eq!(
            parse_instant("2026-11-21T09:08"),
            Some(datetime!(2026-11-21 09:08 UTC))
        );
        assert_eq!(
            parse_instant("2026-11-21T09:08:18.123456789"),
            Some(datetime!(2026-11-21 09:08:18.123456789 UTC))
        );
    }

    #[test]
    fn rejects_what_is_not_a_date_time() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-02-30",
            "2026-11-21T25:00",
            "2026-11-21T09:08:18.",
            "2026-11-21X09:08",
            "2026-11-21T09:08:18+5",
            "12345",
            "2026-11-21T09:08:18 UTC",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }
}
