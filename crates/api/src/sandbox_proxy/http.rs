//! HTTP through the proxy: the request is sent to the sandbox's service with its body
//! streamed as it arrives (a bounded channel of a few chunks: a slow sandbox slows the client,
//! nothing piles up here), and the answer streamed back as the service writes it. Hop-by-hop
//! headers and the client's credentials are dropped; the sandbox's session key and the
//! `X-Forwarded-*` headers are added.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use switchboard_domain::services::ProxyTarget;

use super::config::Proxy;
use super::route::{PREFIX, Route, SESSION_KEY_QUERY};
use crate::error::ApiError;
use crate::extract::{ACCESS_TOKEN_HEADER, ORG_HEADER, SESSION_KEY_HEADER};

/// Request body chunks in flight between the client and the sandbox.
const BODY_CHUNKS: usize = 4;

/// Headers never forwarded either way (RFC 9110 §7.6.1 hop-by-hop, and the framing each side
/// sets itself).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Whether a request header stays behind: hop-by-hop, or a credential of the client's.
fn dropped_request_header(name: &HeaderName) -> bool {
    let n = name.as_str();
    HOP_BY_HOP.contains(&n)
        || n == "authorization"
        || n.eq_ignore_ascii_case(ACCESS_TOKEN_HEADER)
        || n.eq_ignore_ascii_case(SESSION_KEY_HEADER)
        || n.eq_ignore_ascii_case(ORG_HEADER)
        || n.starts_with("x-forwarded-")
        || n == "forwarded"
        // Answered by Switchboard itself as the body is read.
        || n == "expect"
}

/// The upstream URL: the service's base, the route's rest of the path, and the query without
/// `session_api_key` (Switchboard authenticates upstream by header).
pub fn upstream_url(base: &str, route: &Route, query: &str) -> String {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| p.split('=').next() != Some(SESSION_KEY_QUERY))
        .collect();
    let tail = if route.tail.is_empty() {
        "/"
    } else {
        &route.tail
    };
    let mut url = format!("{}{tail}", base.trim_end_matches('/'));
    if !kept.is_empty() {
        url.push('?');
        url.push_str(&kept.join("&"));
    }
    url
}

/// The headers sent upstream for `req`.
pub(super) fn upstream_headers(
    req: &HttpRequest,
    route: &Route,
    target: &ProxyTarget,
) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in req.headers() {
        if !dropped_request_header(name) {
            out.append(name.clone(), value.clone());
        }
    }
    let info = req.connection_info();
    let pairs = [
        ("x-forwarded-host", info.host().to_owned()),
        ("x-forwarded-proto", info.scheme().to_owned()),
        (
            "x-forwarded-prefix",
            format!(
                "{}/{}/{}",
                PREFIX,
                route.sandbox_id.map(|s| s.to_string()).unwrap_or_default(),
                route.service
            ),
        ),
    ];
    for (name, value) in pairs {
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            out.insert(HeaderName::from_static(name), v);
        }
    }
    if let Some(peer) = req.peer_addr()
        && let Ok(v) = header::HeaderValue::from_str(&peer.ip().to_string())
    {
        out.insert(HeaderName::from_static("x-forwarded-for"), v);
    }
    if let Ok(v) = header::HeaderValue::from_str(target.session_key.expose()) {
        out.insert(HeaderName::from_static("x-session-api-key"), v);
    }
    out
}

/// The declared length of the request body: `Some(0)` for none, `None` when it is chunked.
fn declared_length(req: &HttpRequest) -> Result<Option<u64>, ApiError> {
    if let Some(v) = req.headers().get(header::CONTENT_LENGTH) {
        let n = v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| ApiError::BadBody("Invalid Content-Length".into()))?;
        return Ok(Some(n));
    }
    if req.headers().contains_key(header::TRANSFER_ENCODING) {
        return Ok(None);
    }
    Ok(Some(0))
}

/// Forwards `req` (its body from `payload`) to `base` + the route's path with the sandbox's
/// session key, and streams the answer back.
///
/// # Errors
/// 413 for a declared body over the limit (and a streamed one that grows past it); 502 when
/// the service cannot be reached or breaks off; 504 when it does not answer in time.
pub async fn forward(
    proxy: &Proxy,
    req: &HttpRequest,
    payload: web::Payload,
    base: &str,
    route: &Route,
    target: &ProxyTarget,
) -> Result<HttpResponse, ApiError> {
    let limit = proxy.config.max_body;
    let declared = declared_length(req)?;
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let url = upstream_url(base, route, req.query_string());
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
        .map_err(|_| ApiError::BadBody("Invalid method".into()))?;
    let mut upstream = proxy
        .client
        .request(method, &url)
        .headers(convert_headers(&upstream_headers(req, route, target)));
    let over = Arc::new(AtomicBool::new(false));
    if declared != Some(0) {
        upstream = upstream.body(stream_body(payload, limit, over.clone()));
    }
    let answer = match upstream.send().await {
        Ok(a) => a,
        Err(_) if over.load(Ordering::SeqCst) => return Err(ApiError::PayloadTooLarge { limit }),
        Err(e) => return Err(upstream_error(&e, route)),
    };
    Ok(respond(req, answer))
}

/// The request body as a stream the HTTP client can send from another thread: a local task
/// reads the client's body into a channel of [`BODY_CHUNKS`] chunks (backpressure both
/// ways), and cuts it with an error once it passes `limit` bytes (flagging `over`).
fn stream_body(mut payload: web::Payload, limit: usize, over: Arc<AtomicBool>) -> reqwest::Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<web::Bytes, std::io::Error>>(BODY_CHUNKS);
    actix_web::rt::spawn(async move {
        let mut seen = 0usize;
        while let Some(chunk) = payload.next().await {
            let item = match chunk {
                Ok(bytes) => {
                    seen += bytes.len();
                    if seen > limit {
                        over.store(true, Ordering::SeqCst);
                        let _ = tx
                            .send(Err(std::io::Error::other("body over the limit")))
                            .await;
                        return;
                    }
                    Ok(bytes)
                }
                Err(e) => Err(std::io::Error::other(e.to_string())),
            };
            let failed = item.is_err();
            if tx.send(item).await.is_err() || failed {
                return;
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    reqwest::Body::wrap_stream(stream)
}

/// Header maps of the two HTTP stacks (actix's `http` 0.2 and reqwest's `http` 1).
fn convert_headers(from: &HeaderMap) -> reqwest::header::HeaderMap {
    let mut out = reqwest::header::HeaderMap::with_capacity(from.len());
    for (name, value) in from {
        if let (Ok(n), Ok(v)) = (
            reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
            reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            out.append(n, v);
        }
    }
    out
}

/// The client's answer: the service's status and headers (hop-by-hop dropped), its body
/// streamed; the length kept when the service declared one.
fn respond(req: &HttpRequest, answer: reqwest::Response) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = HttpResponse::build(status);
    let mut length = None;
    for (name, value) in answer.headers() {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) {
            continue;
        }
        if n == "content-length" {
            length = value.to_str().ok().and_then(|v| v.parse::<u64>().ok());
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.as_bytes()),
            header::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            out.append_header((n, v));
        }
    }
    if req.method() == actix_web::http::Method::HEAD
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return out.finish();
    }
    if let Some(n) = length {
        out.no_chunking(n);
    }
    out.streaming(answer.bytes_stream())
}

/// What a failed upstream call is answered with: 504 for a timeout, else 502 (logged).
fn upstream_error(e: &reqwest::Error, route: &Route) -> ApiError {
    tracing::warn!(
        sandbox = ?route.sandbox_id,
        service = %route.service,
        error = %e,
        "a sandbox's service did not answer"
    );
    if e.is_timeout() {
        ApiError::UpstreamTimeout
    } else {
        ApiError::UpstreamUnreachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_urls_drop_the_session_key() {
        let route = Route::parse("/sandboxes/x/agent_server/api/a%20b").unwrap();
        assert_eq!(
            upstream_url("http://127.0.0.1:9/", &route, "session_api_key=s&x=1&y"),
            "http://127.0.0.1:9/api/a%20b?x=1&y"
        );
        let root = Route::parse("/sandboxes/x/agent_server").unwrap();
        assert_eq!(upstream_url("http://h:1", &root, ""), "http://h:1/");
    }
}
