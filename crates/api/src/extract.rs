//! Extractors: the caller (API key → principal → effective organization) and JSON bodies,
//! with FastAPI-shaped 422s. Authentication runs before any body is read or validated, so an
//! unauthenticated caller learns nothing from 422s (API.md).

use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, CONTENT_LENGTH};
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;
use serde_json::Value;
use switchboard_domain::{DomainError, OrgContext, OrgId, parse_uuid};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use crate::AppState;
use crate::error::ApiError;

/// Header carrying an API key (spec §5).
pub const ACCESS_TOKEN_HEADER: &str = "X-Access-Token";
/// Header naming the organization to act on (API.md, Identity).
pub const ORG_HEADER: &str = "X-Org-Id";

/// The API key of a request: `X-Access-Token`, else `Authorization: Bearer`. The first present
/// wins; an invalid one never falls through to the other.
pub fn presented_key(req: &HttpRequest) -> Option<String> {
    if let Some(v) = req.headers().get(ACCESS_TOKEN_HEADER) {
        return Some(v.to_str().unwrap_or("").trim().to_owned());
    }
    let auth = req.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// `X-Org-Id`, parsed: `Ok(None)` when absent; a 422 (`uuid_parsing`, loc
/// `["header", "x-org-id"]`) when it is not a UUID.
pub fn requested_org(req: &HttpRequest) -> Result<Option<OrgId>, ValidationError> {
    let Some(v) = req.headers().get(ORG_HEADER) else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or("");
    parse_uuid(text.trim())
        .map(|u| Some(OrgId(u)))
        .ok_or_else(|| invalid_uuid(vec!["header".into(), "x-org-id".into()], text))
}

/// The 422 entry for a string that is not a UUID.
pub fn invalid_uuid(loc: Vec<LocItem>, input: &str) -> ValidationError {
    ValidationError::new(
        ErrorType::UuidParsing,
        loc,
        "Input should be a valid UUID, as 32 hexadecimal digits or in the dashed 8-4-4-4-12 form",
    )
    .with_input(Value::String(input.to_owned()))
}

/// The credentials of a request, not yet checked: for handlers without a body, which
/// authenticate, resolve the organization and do their work in one blocking call
/// ([`Caller::run`]) instead of two.
pub struct Caller {
    key: Option<String>,
    requested: Result<Option<OrgId>, ValidationError>,
}

impl Caller {
    /// Authenticates (401), resolves the effective organization (422 for a malformed
    /// `X-Org-Id`, 403, 404), then runs `f` with the context, all on the blocking pool.
    ///
    /// # Errors
    /// Those above, and `f`'s.
    pub async fn run<T: Send + 'static>(
        self,
        state: web::Data<AppState>,
        f: impl FnOnce(&AppState, OrgContext) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let key = self
            .key
            .filter(|k| !k.is_empty())
            .ok_or(DomainError::NotAuthenticated)?;
        let requested = self.requested;
        let st = state.clone();
        st.blocking(move || {
            // The key is checked before a malformed X-Org-Id is reported.
            let requested = match requested {
                Ok(r) => r,
                Err(e) => {
                    state.services.auth().authenticate(&key)?;
                    return Err(e.into());
                }
            };
            let ctx = state.services.auth().authenticate_in(&key, requested)?;
            f(&state, ctx)
        })
        .await
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(Caller {
            key: presented_key(req),
            requested: requested_org(req),
        }))
    }
}

/// Body size limit of a route, in bytes (app data; default [`DEFAULT_BODY_LIMIT`]).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// 1 MiB: the default body limit (API.md, Conventions).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// A request body, read up to the route's [`BodyLimit`] but not yet judged: a body over the
/// limit (413) or unreadable (400) is reported by [`RawBody::json`], which handlers call only
/// after authentication, so an unauthenticated caller learns nothing from body errors. Reading
/// it while the request is in flight lets the handler do authentication and its work in one
/// blocking call.
pub struct RawBody(Result<web::Bytes, ApiError>);

impl RawBody {
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
}

impl FromRequest for RawBody {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<RawBody, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req
            .app_data::<BodyLimit>()
            .map_or(DEFAULT_BODY_LIMIT, |l| l.0);
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > limit) {
                return Ok(RawBody(Err(ApiError::PayloadTooLarge { limit })));
            }
            let mut body = web::BytesMut::with_capacity(declared.unwrap_or(1024).min(limit));
            while let Some(chunk) = payload.next().await {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => return Ok(RawBody(Err(ApiError::BadBody(e.to_string())))),
                };
                if body.len() + chunk.len() > limit {
                    return Ok(RawBody(Err(ApiError::PayloadTooLarge { limit })));
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
        return Err(ValidationError::new(
            ErrorType::Missing,
            vec![LocItem::from("body")],
            "Field required",
        )
        .with_input(Value::Null)
        .into());
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let at = if e.classify() == serde_json::error::Category::Eof {
            bytes.len()
        } else {
            byte_offset(bytes, e.line(), e.column())
        };
        // Characters, not bytes: Python decodes the body before parsing it.
        let offset = bytes[..at].iter().filter(|b| **b & 0xC0 != 0x80).count();
        ValidationError::new(
            ErrorType::JsonInvalid,
            vec![LocItem::from("body"), LocItem::Index(offset)],
            "JSON decode error",
        )
        .with_input(Value::Object(Default::default()))
        .with_ctx(serde_json::json!({ "error": e.to_string() }))
        .into()
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

/// Parses a UUID path parameter; 422 (`uuid_parsing`) at `["path", name]` otherwise.
///
/// # Errors
/// [`ApiError::Validation`].
pub fn path_uuid(value: &str, name: &str) -> Result<uuid::Uuid, ApiError> {
    parse_uuid(value).ok_or_else(|| invalid_uuid(vec!["path".into(), name.into()], value).into())
}

#[cfg(test)]
mod tests {
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
