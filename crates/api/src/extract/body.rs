//! [`RawBody`]: a request body left unread until the caller is authenticated, then read
//! ([`RawBody::read`]) under the server's limits (API.md, Request bodies): the route's size
//! limit (413), room among the body bytes in flight ([`BodyGate`], 503), a read timeout and a
//! minimum rate (408, connection closed).

use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use serde_json::Value;
use switchboard_domain::validation::{json_invalid, loc, missing};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::body_limits::{BodyGate, RATE_CHECK_EVERY};
use crate::error::ApiError;

/// 1 MiB: the default body limit (API.md, Conventions).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// Body limit of the webhook routes: the agent server sends batches of up to 5 MiB (API.md).
pub const WEBHOOK_BODY_LIMIT: usize = 8 << 20;

/// `--max-body-bytes-in-flight` as written: a byte count no smaller than the largest body
/// limit ([`WEBHOOK_BODY_LIMIT`]: a body larger than the whole budget could never be
/// admitted) and at most `u32::MAX`.
///
/// # Errors
/// Not a byte count, or out of that range (the message says which).
pub fn parse_max_in_flight(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|e| format!("not a byte count: {e}"))?;
    let floor = WEBHOOK_BODY_LIMIT;
    if n < floor {
        return Err(format!("at least {floor} bytes (the webhook body limit)"));
    }
    if n > u32::MAX as usize {
        return Err(format!("at most {} bytes", u32::MAX));
    }
    Ok(n)
}

/// A request body, not read yet: handlers authenticate from the headers first (and check the
/// operation's permission), then call [`RawBody::read`], so an unauthenticated request never
/// makes the server hold its body (issue 7 §2). `LIMIT` is the route's size limit in bytes,
/// [`DEFAULT_BODY_LIMIT`] unless the handler names another. Dropped unread, the body is
/// discarded by the HTTP layer and the connection closed after the response.
pub struct RawBody<const LIMIT: usize = DEFAULT_BODY_LIMIT> {
    payload: Payload,
    declared: Option<usize>,
    gate: Option<Arc<BodyGate>>,
}

impl<const LIMIT: usize> RawBody<LIMIT> {
    /// Reads the body: 413 when its declared length or its bytes exceed `LIMIT` (before
    /// reading more than `LIMIT`); otherwise it waits for room for its declared length (or
    /// `LIMIT` without one) among the body bytes in flight (503 after the read timeout), then
    /// reads it within the read timeout and above the minimum rate (408, connection closed);
    /// 400 when the stream breaks. The room is held until the returned [`Body`] is dropped.
    ///
    /// # Errors
    /// Those above.
    pub async fn read(self) -> Result<Body, ApiError> {
        let RawBody {
            mut payload,
            declared,
            gate,
        } = self;
        if declared.is_some_and(|n| n > LIMIT) {
            return Err(ApiError::PayloadTooLarge { limit: LIMIT });
        }
        let gate = gate.ok_or_else(|| ApiError::Internal("no body gate in the app".into()))?;
        let wanted = declared.unwrap_or(LIMIT);
        let mut permit = gate.admit(wanted).await?;
        let limits = *gate.limits();
        let started = Instant::now();
        let deadline = started + limits.read_timeout;
        let mut body = web::BytesMut::with_capacity(declared.unwrap_or(1024).min(LIMIT));
        loop {
            let now = Instant::now();
            if now >= deadline || limits.too_slow(body.len(), now - started) {
                return Err(ApiError::BodyTimeout);
            }
            let wake = deadline.min(now + RATE_CHECK_EVERY);
            let chunk = match tokio::time::timeout_at(wake, payload.next()).await {
                Err(_) => continue,
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(ApiError::BadBody(e.to_string())),
                Ok(Some(Ok(chunk))) => chunk,
            };
            if body.len() + chunk.len() > LIMIT {
                return Err(ApiError::PayloadTooLarge { limit: LIMIT });
            }
            body.extend_from_slice(&chunk);
        }
        // A body without a declared length took the route's limit: give back what it did
        // not use.
        if let Some(p) = permit.as_mut()
            && p.num_permits() > body.len()
        {
            drop(p.split(p.num_permits() - body.len()));
        }
        Ok(Body {
            bytes: body.freeze(),
            _room: permit,
        })
    }
}

impl<const LIMIT: usize> FromRequest for RawBody<LIMIT> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<RawBody<LIMIT>, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let gate = req
            .app_data::<web::Data<BodyGate>>()
            .map(|g| g.clone().into_inner());
        std::future::ready(Ok(RawBody {
            payload: payload.take(),
            declared,
            gate,
        }))
    }
}

/// A body read whole ([`RawBody::read`]); its room among the body bytes in flight is given
/// back when it is dropped.
pub struct Body {
    bytes: web::Bytes,
    _room: Option<OwnedSemaphorePermit>,
}

impl Body {
    /// The body parsed as JSON: 422 `missing` at `["body"]` when empty; 422 `json_invalid`
    /// at `["body", <offset>]` when malformed (FastAPI's shape).
    ///
    /// # Errors
    /// Those above.
    pub fn json(&self) -> Result<Value, ApiError> {
        parse_json_body(&self.bytes)
    }

    /// The body read as the request body type `T` ([`switchboard_domain::typed_body`]): JSON
    /// as [`Self::json`], then judged against `T`'s derived schema and deserialized.
    ///
    /// # Errors
    /// As [`Self::json`]; 422 with every rule `T` states that the body breaks.
    pub fn typed<T: switchboard_domain::typed_body::RequestBody>(&self) -> Result<T, ApiError> {
        Ok(switchboard_domain::typed_body::parse(&self.json()?)?)
    }

    /// The body's bytes.
    pub fn bytes(&self) -> &web::Bytes {
        &self.bytes
    }

    /// The body as UTF-8 text: 422 `json_invalid` at `["body", <offset of the first invalid
    /// byte>]` when it is not UTF-8.
    ///
    /// # Errors
    /// That above.
    pub fn text(&self) -> Result<&str, ApiError> {
        std::str::from_utf8(&self.bytes)
            .map_err(|e| json_invalid(e.valid_up_to(), &e.to_string()).into())
    }
}

/// Parses a body as JSON with FastAPI's 422 entries.
///
/// # Errors
/// `missing` for an empty body, `json_invalid` otherwise, at the offset Python's `json`
/// module reports (FastAPI's `loc`): counted in characters, and the body's length when the
/// body ends too early.
pub fn parse_json_body(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(missing(loc(["body"]), Value::Null).into());
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let at = if e.classify() == serde_json::error::Category::Eof {
            bytes.len()
        } else {
            byte_offset(bytes, e.line(), e.column())
        };
        // Characters, not bytes: Python decodes the body before parsing it.
        let offset = bytes[..at].iter().filter(|b| **b & 0xC0 != 0x80).count();
        json_invalid(offset, &e.to_string()).into()
    })
}

fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut current = 1;
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if current == line {
            break;
        }
        if *b == b'\n' {
            current += 1;
            start = i + 1;
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

#[cfg(test)]
mod tests {
    use switchboard_model::LocItem;

    use super::*;

    #[test]
    fn json_errors_point_at_the_byte() {
        let ApiError::Validation(e) = parse_json_body(b"{\"a\": }").unwrap_err() else {
            panic!()
        };
        assert_eq!(e[0].loc, [LocItem::from("body"), LocItem::Index(6)]);
        assert_eq!(e[0].error_type.as_str(), "json_invalid");
        // Python's offsets: the length of a truncated body; characters, not bytes.
        for (body, offset) in [
            (&b"{\"a\": 1"[..], 7),
            (b"{\"a\": ", 6),
            (b"{", 1),
            ("{\"\u{e4}\u{e4}\": }".as_bytes(), 7),
            ("{\"\u{e4}\": 1,\n\"\u{e4}\" 2}".as_bytes(), 13),
        ] {
            let ApiError::Validation(e) = parse_json_body(body).unwrap_err() else {
                panic!()
            };
            assert_eq!(e[0].loc[1], LocItem::Index(offset), "{body:?}");
        }
        let ApiError::Validation(e) = parse_json_body(b"  ").unwrap_err() else {
            panic!()
        };
        assert_eq!(e[0].error_type.as_str(), "missing");
        assert!(parse_json_body(b"{\"a\": 1}").is_ok());
    }
}
