//! Date-times given by clients, and how Switchboard writes them (API.md, Conventions).

use serde_json::Value;
use switchboard_model::{LocItem, ValidationError};
use time::{OffsetDateTime, UtcOffset};

use crate::validation::datetime_parsing;

/// A date-time as [`parse_datetime`] takes it (ISO-8601, naive = UTC), restricted to a plain
/// form that every accepted value generator can only produce valid instances of: years 1900 to
/// 2999, days 1 to 28, optional fraction (µs) and offset. The parsers accept more (any day,
/// dates alone, Unix seconds): the OpenAPI document states this subset, the descriptions the rest.
pub const DATE_TIME_PATTERN: &str = r"^(19|2[0-9])[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?$";
/// As [`DATE_TIME_PATTERN`], in years 2100 to 2999: an instant surely in the future (an API
/// key's expiry must be).
pub const FUTURE_DATE_TIME_PATTERN: &str = r"^2[1-9][0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?$";
/// Unix seconds of 1900-01-01: the start of [`DATE_TIME_PATTERN`]'s range.
pub const UNIX_1900: i64 = -2_208_988_800;
/// Unix seconds of 2100-01-01: the start of [`FUTURE_DATE_TIME_PATTERN`]'s range.
pub const UNIX_2100: i64 = 4_102_444_800;
/// Unix seconds of 3000-01-01: the end (excluded) of both patterns' ranges.
pub const UNIX_3000: i64 = 32_503_680_000;

/// Truncates to whole microseconds: the precision stored and compared.
pub fn truncate_micros(t: OffsetDateTime) -> OffsetDateTime {
    let nanos = t.nanosecond();
    t.replace_nanosecond(nanos - nanos % 1_000)
        .expect("a smaller nanosecond is valid")
}

/// Now, in UTC, truncated to microseconds.
pub fn now_micros() -> OffsetDateTime {
    truncate_micros(OffsetDateTime::now_utc())
}

/// Reads a client date-time: RFC 3339, naive ISO-8601 (UTC), a date alone (midnight UTC), or
/// Unix seconds (an integer or decimal string). Truncated to microseconds; `None` otherwise.
pub fn parse_datetime(s: &str) -> Option<OffsetDateTime> {
    let s = s.trim();
    if let Some(t) = switchboard_model::parse_instant(s) {
        return Some(truncate_micros(t.to_offset(UtcOffset::UTC)));
    }
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return s.parse::<f64>().ok().and_then(unix_seconds);
    }
    None
}

fn unix_seconds(secs: f64) -> Option<OffsetDateTime> {
    if !secs.is_finite() {
        return None;
    }
    let nanos = (secs * 1e9).round();
    if nanos.abs() > 2.5e20 {
        return None;
    }
    OffsetDateTime::from_unix_timestamp_nanos(nanos as i128)
        .ok()
        .map(truncate_micros)
}

/// Reads a JSON date-time value (a string as [`parse_datetime`], or a number of Unix seconds).
///
/// # Errors
/// `datetime_from_date_parsing` at `loc` for anything else.
pub fn parse_datetime_value(
    v: &Value,
    loc: Vec<LocItem>,
) -> Result<OffsetDateTime, ValidationError> {
    let parsed = match v {
        Value::String(s) => parse_datetime(s),
        Value::Number(n) => n.as_f64().and_then(unix_seconds),
        _ => None,
    };
    parsed.ok_or_else(|| datetime_parsing(loc, "invalid character in year", v))
}

/// Writes an instant as RFC 3339 in UTC with six fraction digits: `2026-11-21T09:08:18.014821Z`.
pub fn format_rfc3339_micros(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn accepted_forms() {
        let t = datetime!(2026-11-21 09:08:18.014821 UTC);
        assert_eq!(parse_datetime("2026-11-21T09:08:18.014821Z"), Some(t));
        assert_eq!(parse_datetime("2026-11-21T09:08:18.014821"), Some(t));
        assert_eq!(parse_datetime("2026-11-21T10:08:18.014821+01:00"), Some(t));
        assert_eq!(
            parse_datetime("2026-11-21T09:08:18.0148219Z"),
            Some(t),
            "truncated to µs"
        );
        assert_eq!(
            parse_datetime("2026-11-21"),
            Some(datetime!(2026-11-21 0:00 UTC))
        );
        assert_eq!(
            parse_datetime("1763716098"),
            Some(datetime!(2025-11-21 09:08:18 UTC))
        );
        assert_eq!(
            parse_datetime("1763716098.5"),
            Some(datetime!(2025-11-21 09:08:18.5 UTC))
        );
        assert_eq!(parse_datetime("nope"), None);
        assert_eq!(format_rfc3339_micros(t), "2026-11-21T09:08:18.014821Z");
        assert_eq!(
            format_rfc3339_micros(datetime!(2026-11-21 0:00 UTC)),
            "2026-11-21T00:00:00.000000Z"
        );
    }
}
