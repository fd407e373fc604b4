//! Opaque page cursors (spec §4.1 `page_id`): a keyset position (the last item of a page)
//! written as base64url without padding of `<version>:<field>:<field>…`. A list continues
//! exactly after that position while items arrive, whatever keyset orders it: events use
//! `(instant, seq)` ([`crate::events::EventCursor`]); a list ordered by `(created_at, id)`
//! implements [`Keyset`] the same way.

use time::OffsetDateTime;

/// A keyset position that can be a cursor.
pub trait Keyset: Sized {
    /// The version tag written first (e.g. `v1`): a cursor of another version is refused.
    const VERSION: &'static str;

    /// The position's fields, in order; none may contain `:`.
    fn to_fields(&self) -> Vec<String>;

    /// The position from its fields (after the version); `None` when they are not a
    /// position of this keyset.
    fn from_fields(fields: &[&str]) -> Option<Self>;

    /// The opaque `page_id`.
    fn encode(&self) -> String {
        let mut text = Self::VERSION.to_owned();
        for f in self.to_fields() {
            text.push(':');
            text.push_str(&f);
        }
        b64url_encode(text.as_bytes())
    }

    /// Reads a `page_id`; `None` when it is not one this service wrote for this keyset.
    fn decode(page_id: &str) -> Option<Self> {
        let raw = String::from_utf8(b64url_decode(page_id)?).ok()?;
        let mut parts = raw.split(':');
        if parts.next()? != Self::VERSION {
            return None;
        }
        let fields: Vec<&str> = parts.collect();
        Self::from_fields(&fields)
    }
}

/// An instant as a cursor field: Unix microseconds.
pub fn instant_field(t: OffsetDateTime) -> String {
    (t.unix_timestamp_nanos() / 1_000).to_string()
}

/// Reads an [`instant_field`]; `None` when it is not one.
pub fn parse_instant_field(s: &str) -> Option<OffsetDateTime> {
    let micros: i128 = s.parse().ok()?;
    OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1_000)?).ok()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 §5).
pub(crate) fn b64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let vals: Option<Vec<u32>> = s
        .bytes()
        .map(|c| B64.iter().position(|&b| b == c).map(|p| p as u32))
        .collect();
    let vals = vals?;
    for chunk in vals.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, v) in chunk.iter().enumerate() {
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    /// A `(created_at, id)` keyset, as a list of resources would use.
    #[derive(Debug, PartialEq)]
    struct CreatedAt {
        created_at: OffsetDateTime,
        id: Uuid,
    }

    impl Keyset for CreatedAt {
        const VERSION: &'static str = "c1";

        fn to_fields(&self) -> Vec<String> {
            vec![instant_field(self.created_at), self.id.simple().to_string()]
        }

        fn from_fields(fields: &[&str]) -> Option<Self> {
            let [t, id] = fields else { return None };
            Some(CreatedAt {
                created_at: parse_instant_field(t)?,
                id: Uuid::try_parse(id).ok()?,
            })
        }
    }

    #[test]
    fn another_keyset_round_trips_and_refuses_other_versions() {
        let c = CreatedAt {
            created_at: time::macros::datetime!(2026-11-21 09:08:18.014821 UTC),
            id: Uuid::from_u128(7),
        };
        assert_eq!(CreatedAt::decode(&c.encode()), Some(c));
        assert_eq!(CreatedAt::decode(&b64url_encode(b"v1:1:2")), None);
        assert_eq!(CreatedAt::decode(&b64url_encode(b"c1:1")), None);
        for len in 0..7 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 200) as u8).collect();
            assert_eq!(b64url_decode(&b64url_encode(&data)), Some(data));
        }
    }
}
