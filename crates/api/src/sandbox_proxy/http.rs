//! HTTP through the proxy: the request is sent to the sandbox's service with its body
//! streamed as it arrives (a bounded channel of a few chunks: a slow sandbox slows the client,
//! nothing piles up here), and the answer streamed back as the service writes it. Hop-by-hop
//! headers and the client's credentials are dropped; the sandbox's session key and the
//! `X-Forwarded-*` headers are added.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::Frame;
use switchboard_domain::services::ProxyTarget;

use super::config::{Proxy, UpstreamBody};
use super::route::{PREFIX, Route, SESSION_KEY_QUERY};
use super::upstream::is_exhausted;
use crate::error::ApiError;
use crate::extract::{
    ACCESS_TOKEN_HEADER, BodyGate, BodyLimits, ORG_HEADER, RATE_CHECK_EVERY, SESSION_KEY_HEADER,
};

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
/// 413 for a declared body over the limit (and a streamed one that grows past it); 408 (the
/// connection closed) for a body that does not arrive within the read timeout or above the
/// minimum rate, as the API's own bodies ([`BodyLimits`]); 503 when the open-files budget
/// has no socket left for the sandbox ([`super::upstream`]); 502 when the service cannot be
/// reached or breaks off; 504 when it does not answer in time.
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
    let method = http::Method::from_bytes(req.method().as_str().as_bytes())
        .map_err(|_| ApiError::BadBody("Invalid method".into()))?;
    let cut = Arc::new(Cut::default());
    let body = if declared == Some(0) {
        cut.ended.notify_one();
        Empty::new().map_err(|never| match never {}).boxed_unsync()
    } else {
        let limits = req
            .app_data::<web::Data<BodyGate>>()
            .map(|g| *g.limits())
            .unwrap_or_default();
        stream_body(payload, limit, limits, cut.clone())
    };
    let mut upstream = http::Request::builder()
        .method(method)
        .uri(&url)
        .body(body)
        .map_err(|_| ApiError::UpstreamUnreachable)?;
    *upstream.headers_mut() = convert_headers(&upstream_headers(req, route, target));
    let mut sent = std::pin::pin!(proxy.client.request(upstream));
    // While the body is still coming the service is not expected to answer (the body's own
    // limits apply); from its end, the read timeout.
    let early = tokio::select! {
        r = &mut sent => Some(r),
        () = cut.ended.notified() => None,
    };
    let answer = match early {
        Some(r) => Ok(r),
        None => tokio::time::timeout(proxy.config.read_timeout, sent).await,
    };
    let answer = match answer {
        Ok(Ok(a)) => a,
        _ if cut.over.load(Ordering::SeqCst) => return Err(ApiError::PayloadTooLarge { limit }),
        _ if cut.slow.load(Ordering::SeqCst) => return Err(ApiError::BodyTimeout),
        Ok(Err(e)) => return Err(upstream_error(&e, route)),
        Err(_) => {
            warn(route, "no answer within the read timeout");
            return Err(ApiError::UpstreamTimeout);
        }
    };
    Ok(respond(req, answer, proxy.config.read_timeout))
}

/// Why the proxy cut a request body.
#[derive(Debug, Default)]
struct Cut {
    /// It grew past the limit (413).
    over: AtomicBool,
    /// It came too slowly: past the read timeout, or below the minimum rate (408).
    slow: AtomicBool,
    /// Notified once when the body has ended, whole or cut.
    ended: tokio::sync::Notify,
}

/// The request body as a stream the HTTP client can send: a local task reads the client's
/// body into a channel of [`BODY_CHUNKS`] chunks (backpressure both ways), and cuts it with
/// an error once it passes `limit` bytes (flagging `cut.over`), or when it has not all
/// arrived within `limits.read_timeout` or comes below `limits.min_rate` after the grace
/// (flagging `cut.slow`): a slow client never holds a sandbox's connection for long.
fn stream_body(
    mut payload: web::Payload,
    limit: usize,
    limits: BodyLimits,
    cut: Arc<Cut>,
) -> UpstreamBody {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<web::Bytes, std::io::Error>>(BODY_CHUNKS);
    actix_web::rt::spawn(async move {
        read_body(&mut payload, limit, limits, &cut, &tx).await;
        cut.ended.notify_one();
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item.map(Frame::data), rx))
    });
    StreamBody::new(stream).boxed_unsync()
}

/// [`stream_body`]'s reading: chunks from `payload` into `tx` until the body ends, or is cut.
async fn read_body(
    payload: &mut web::Payload,
    limit: usize,
    limits: BodyLimits,
    cut: &Cut,
    tx: &tokio::sync::mpsc::Sender<Result<web::Bytes, std::io::Error>>,
) {
    let started = Instant::now();
    let deadline = started + limits.read_timeout;
    let mut seen = 0usize;
    loop {
        let now = Instant::now();
        if now >= deadline || limits.too_slow(seen, now - started) {
            cut.slow.store(true, Ordering::SeqCst);
            let _ = tx.send(Err(std::io::Error::other("body too slow"))).await;
            return;
        }
        let wake = deadline.min(now + RATE_CHECK_EVERY);
        let item = match tokio::time::timeout_at(wake.into(), payload.next()).await {
            Err(_) => continue,
            Ok(None) => return,
            Ok(Some(Ok(bytes))) => {
                seen += bytes.len();
                if seen > limit {
                    cut.over.store(true, Ordering::SeqCst);
                    let _ = tx
                        .send(Err(std::io::Error::other("body over the limit")))
                        .await;
                    return;
                }
                Ok(bytes)
            }
            Ok(Some(Err(e))) => Err(std::io::Error::other(e.to_string())),
        };
        let failed = item.is_err();
        if tx.send(item).await.is_err() || failed {
            return;
        }
    }
}

/// Header maps of the two HTTP stacks (actix's `http` 0.2 and hyper's `http` 1).
fn convert_headers(from: &HeaderMap) -> http::HeaderMap {
    let mut out = http::HeaderMap::with_capacity(from.len());
    for (name, value) in from {
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(name.as_str().as_bytes()),
            http::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            out.append(n, v);
        }
    }
    out
}

/// The client's answer: the service's status and headers (hop-by-hop dropped), its body
/// streamed, each chunk awaited at most `read_timeout` (then the answer breaks off); the
/// length kept when the service declared one.
fn respond(
    req: &HttpRequest,
    answer: http::Response<hyper::body::Incoming>,
    read_timeout: Duration,
) -> HttpResponse {
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
    let chunks = answer.into_body().into_data_stream();
    let timed = futures_util::stream::unfold(Some(chunks), move |chunks| async move {
        let mut chunks = chunks?;
        match tokio::time::timeout(read_timeout, chunks.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(chunks))),
            Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e)), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(std::io::Error::other("the service stopped sending")),
                None,
            )),
        }
    });
    out.streaming(timed)
}

/// What a failed upstream call is answered with: 503 when no socket was left for it in the
/// open-files budget, else 502 (logged).
fn upstream_error(e: &hyper_util::client::legacy::Error, route: &Route) -> ApiError {
    if is_exhausted(e) {
        warn(
            route,
            "no socket left in the proxy's share of the open-files budget",
        );
        return ApiError::ProxySocketsExhausted;
    }
    warn(route, &e.to_string());
    ApiError::UpstreamUnreachable
}

/// Logs that a sandbox's service could not be used, and why.
fn warn(route: &Route, why: &str) {
    tracing::warn!(
        sandbox = ?route.sandbox_id,
        service = %route.service,
        error = %why,
        "a sandbox's service did not answer"
    );
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
