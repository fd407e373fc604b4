//! Cross-origin requests from browser clients (issue 22; API.md, CORS): `serve
//! --cors-allowed-origin ORIGIN` (repeatable; none by default, so no browser of another origin
//! may call). For an allowed `Origin`, a preflight (`OPTIONS` with
//! `Access-Control-Request-Method`) is answered 204 here, before authentication and rate
//! limits, allowing the API's methods and the headers clients send: `Authorization`,
//! `Content-Type`, `X-Access-Token`, `X-Org-Id`, `X-Session-API-Key` and any
//! `X-OpenHands-Client*`; every answer to an allowed origin carries
//! `Access-Control-Allow-Origin` (that origin) and exposes `X-Request-Id` and `Retry-After`.
//! Other origins get no CORS headers (the browser then refuses the answer), and their
//! preflights go on to the routes as plain `OPTIONS` requests. No cookies are used, so
//! credentials are never allowed.
//!
//! A small middleware of its own rather than `actix-cors`, which allows headers by exact
//! name only (no `X-OpenHands-Client*` prefix).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

/// Methods a preflight may ask for.
pub const ALLOWED_METHODS: &str = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
/// Request headers allowed by exact name (lowercase).
pub const ALLOWED_HEADERS: [&str; 6] = [
    "authorization",
    "content-type",
    "x-access-token",
    "x-org-id",
    "x-session-api-key",
    "accept",
];
/// Request headers allowed by prefix (lowercase).
pub const ALLOWED_HEADER_PREFIX: &str = "x-openhands-client";
/// Response headers a page may read.
pub const EXPOSED_HEADERS: &str = "X-Request-Id, Retry-After";
/// How long a browser may cache a preflight, seconds.
pub const MAX_AGE_SECS: u32 = 600;

/// The allowed origins, exactly as written (`https://app.example.com`, no trailing `/`).
#[derive(Debug, Clone, Default)]
pub struct CorsConfig {
    origins: Vec<String>,
}

impl CorsConfig {
    /// Allows `origins` (a trailing `/` is dropped).
    pub fn new(origins: Vec<String>) -> Self {
        CorsConfig {
            origins: origins
                .into_iter()
                .map(|o| o.trim().trim_end_matches('/').to_owned())
                .filter(|o| !o.is_empty())
                .collect(),
        }
    }

    /// Whether `origin` may call.
    pub fn allows(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }
}

/// Whether every header a preflight names is allowed.
pub fn headers_allowed(requested: &str) -> bool {
    requested
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .all(|h| ALLOWED_HEADERS.contains(&h.as_str()) || h.starts_with(ALLOWED_HEADER_PREFIX))
}

/// The middleware (see the module docs).
///
/// # Errors
/// Those of the wrapped service.
pub async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let allowed = req.app_data::<web::Data<CorsConfig>>().cloned();
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let origin = match (origin, allowed) {
        (Some(o), Some(c)) if c.allows(&o) => o,
        _ => {
            return next
                .call(req)
                .await
                .map(ServiceResponse::map_into_left_body);
        }
    };
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        let requested = req
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut answer = HttpResponse::build(StatusCode::NO_CONTENT);
        answer.insert_header((header::VARY, "Origin"));
        if headers_allowed(&requested) {
            answer
                .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.as_str()))
                .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, ALLOWED_METHODS))
                .insert_header((header::ACCESS_CONTROL_MAX_AGE, MAX_AGE_SECS));
            if !requested.is_empty() {
                answer.insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, requested));
            }
        }
        return Ok(req.into_response(answer.finish()).map_into_right_body());
    }
    let mut res = next.call(req).await?.map_into_left_body();
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_headers() {
        let c = CorsConfig::new(vec!["https://app.example.com/".into()]);
        assert!(c.allows("https://app.example.com"));
        assert!(!c.allows("https://evil.example.com"));
        assert!(!CorsConfig::default().allows("https://app.example.com"));
        assert!(headers_allowed(
            "Authorization, content-type, X-Org-Id, X-Session-API-Key, X-OpenHands-Client-Version"
        ));
        assert!(headers_allowed(""));
        assert!(!headers_allowed("Authorization, X-Evil"));
    }
}
