//! [`RawBody`]: a request body read while the request is in flight, judged only after
//! authentication.

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;
use serde_json::Value;
use switchboard_domain::validation::{json_invalid, loc, missing};

use crate::error::ApiError;

/// 1 MiB: the default body limit (API.md, Conventions).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// A request body, read up to `LIMIT` bytes (the route's limit, [`DEFAULT_BODY_LIMIT`] unless
/// the handler names another) but not yet judged: a body over the limit (413) or unreadable
/// (400) is reported by [`RawBody::json`], [`RawBody::text`] or [`RawBody::bytes`], which
/// handlers call only after authentication, so an unauthenticated caller learns nothing from
/// body errors. Reading it while the request is in flight lets the handler do authentication
/// and its work in one blocking call.
pub struct RawBody<const LIMIT: usize = DEFAULT_BODY_LIMIT>(Result<web::Bytes, ApiError>);

impl<const LIMIT: usize> RawBody<LIMIT> {
    /// The body parsed as JSON: 413 over the limit; 422 `missing` at `["body"]` when empty;
    /// 422 `json_invalid` at `["body", <offset>]` when malformed (FastAPI's shape).
    ///
    /// # Errors
    /// Those above.
    pub fn json(self) -> Result<Value, ApiError> {
        parse_json_body(&self.0?)
    }

    /// The body's bytes: 413 over the limit, 400 when it could not be read.
    ///
    /// # Errors
    /// Those above.
    pub fn bytes(self) -> Result<web::Bytes, ApiError> {
        self.0
    }

    /// The body as UTF-8 text: as [`RawBody::bytes`], and 422 `json_invalid` at
    /// `["body", <offset of the first invalid byte>]` when it is not UTF-8.
    ///
    /// # Errors
    /// Those above.
    pub fn text(self) -> Result<String, ApiError> {
        let bytes = self.0?;
        match std::str::from_utf8(&bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => Err(json_invalid(e.valid_up_to(), &e.to_string()).into()),
        }
    }
}

impl<const LIMIT: usize> FromRequest for RawBody<LIMIT> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<RawBody<LIMIT>, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut payload = payload.take();
        Box::pin(async move {
            let too_large = || RawBody(Err(ApiError::PayloadTooLarge { limit: LIMIT }));
            if declared.is_some_and(|n| n > LIMIT) {
                return Ok(too_large());
            }
            let mut body = web::BytesMut::with_capacity(declared.unwrap_or(1024).min(LIMIT));
            while let Some(chunk) = payload.next().await {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => return Ok(RawBody(Err(ApiError::BadBody(e.to_string())))),
                };
                if body.len() + chunk.len() > LIMIT {
                    return Ok(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(RawBody(Ok(body.freeze())))
        })
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
