//! Forwarding one authorized request: the route's upstream + the request's own path and query,
//! the agent's headers without the token, hop-by-hop headers, cookies or forwarding headers,
//! the real key where the token was; the answer's status, headers and body streamed back as
//! they come ([`super::tee`] reading its usage on the way).

use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use switchboard_domain::llm_relay::KeyPlacement;
use switchboard_domain::llm_relay::usage::SseUsage;
use switchboard_domain::services::llm_relay::RelayTarget;

use super::client::client;
use super::refusal;
use super::tee::{Reader, Sink, Tee};
use super::token::{Presented, QUERY_KEY, with_query_value, without_query_value};
use crate::AppState;
use crate::extract::RawBody;

/// The largest request body forwarded, bytes (32 MiB: a long conversation with images).
pub const MAX_BODY: usize = 32 << 20;

/// Request headers never forwarded: hop-by-hop (RFC 9110 §7.6.1), the framing and encoding
/// the client sets itself (the answer is asked for uncompressed, so its usage can be read),
/// every place a key travels in, and what describes the sandbox rather than the request.
const DROPPED: [&str; 21] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
    "expect",
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "forwarded",
    "x-real-ip",
    "x-session-api-key",
];

/// Answer headers never sent back (hop-by-hop and the framing actix sets itself).
const DROPPED_ANSWER: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "set-cookie",
];

/// Forwards `req` (its body from `body`) through `target`'s route. The body is read as the
/// API's own are ([`RawBody`]: room among the bytes in flight, the read timeout and minimum
/// rate, at most [`MAX_BODY`]), its room given back once it is handed to the client.
pub async fn forward(
    state: &web::Data<AppState>,
    req: &HttpRequest,
    body: RawBody<MAX_BODY>,
    path: &str,
    presented: &Presented,
    target: RelayTarget,
) -> HttpResponse {
    let started = Instant::now();
    let placement = presented.placement;
    let body = match body.read().await {
        Ok(b) => b.bytes().clone(),
        Err(e) => {
            let status = actix_web::ResponseError::status_code(&e);
            return refusal::upstream(
                placement,
                status,
                &format!("Switchboard LLM pass-through: the request body: {e}"),
            );
        }
    };
    let Some(url) = upstream_url(
        &target.route.upstream,
        path,
        req.query_string(),
        placement,
        &target.api_key,
    ) else {
        return refusal::invalid(
            placement,
            "Switchboard LLM pass-through: the request's path leaves the provider's base URL",
        );
    };
    let Ok(method) = reqwest::Method::from_bytes(req.method().as_str().as_bytes()) else {
        return HttpResponse::MethodNotAllowed().finish();
    };
    let mut upstream = client().request(method, &url).body(body);
    for (name, value) in req.headers() {
        let n = name.as_str();
        if DROPPED.contains(&n) || n.starts_with("x-forwarded-") {
            continue;
        }
        upstream = upstream.header(n, value.as_bytes());
    }
    upstream = match placement {
        KeyPlacement::Bearer => upstream.bearer_auth(&target.api_key),
        KeyPlacement::XApiKey => upstream.header("x-api-key", &target.api_key),
        KeyPlacement::ApiKey => upstream.header("api-key", &target.api_key),
        KeyPlacement::XGoogApiKey => upstream.header("x-goog-api-key", &target.api_key),
        KeyPlacement::QueryKey => upstream,
    };
    let answer = match upstream.send().await {
        Ok(a) => a,
        Err(e) => {
            let (status, why) = if e.is_timeout() {
                (StatusCode::GATEWAY_TIMEOUT, "did not answer in time")
            } else {
                (StatusCode::BAD_GATEWAY, "could not be reached")
            };
            tracing::warn!(conversation = %target.route.conversation_id, upstream = %target.route.upstream, error = %e, "the LLM pass-through's upstream failed");
            state.metrics.llm_relay().upstream_failed();
            return refusal::upstream(
                placement,
                status,
                &format!("Switchboard LLM pass-through: the provider {why}"),
            );
        }
    };
    state.metrics.llm_relay().first_byte(started.elapsed());
    respond(state, answer, target)
}

/// The upstream URL: `upstream` + `/path` + the query (the token's `key` parameter replaced by
/// the real key when it came there, else dropped). Where `upstream` already ends with the
/// segments `path` starts with (an owner's base URL that includes the path LiteLLM appends,
/// e.g. Mistral's `…/v1` or Anthropic's `…/v1/messages`, which LiteLLM itself does not append
/// again), they are not repeated. `None` when the URL as the HTTP client resolves it (dot
/// segments, plain or percent-encoded, backslashes) is not under `upstream` (its scheme,
/// host, port and path), or has a fragment: the key goes nowhere its owner did not point it.
fn upstream_url(
    upstream: &str,
    path: &str,
    query: &str,
    placement: KeyPlacement,
    key: &str,
) -> Option<String> {
    let query = match placement {
        KeyPlacement::QueryKey => with_query_value(query, QUERY_KEY, key),
        _ => without_query_value(query, QUERY_KEY),
    };
    let base = upstream.trim_end_matches('/');
    let path = path.trim_start_matches('/');
    let rest = after_overlap(base, path);
    let mut url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{rest}")
    };
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query);
    }
    let (Ok(base), Ok(full)) = (reqwest::Url::parse(base), reqwest::Url::parse(&url)) else {
        return None;
    };
    let base_path = base.path().trim_end_matches('/');
    let under = full.path() == base_path
        || full
            .path()
            .strip_prefix(base_path)
            .is_some_and(|rest| rest.starts_with('/'));
    let same_origin = full.scheme() == base.scheme()
        && full.host_str() == base.host_str()
        && full.port_or_known_default() == base.port_or_known_default();
    (under && same_origin && full.fragment().is_none()).then(|| full.to_string())
}

/// `path` without the leading segments `base`'s path ends with (whole segments only; the
/// longest such overlap).
fn after_overlap<'a>(base: &str, path: &'a str) -> &'a str {
    let base_path = base
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or("", |(_, p)| p);
    let base_segments: Vec<&str> = base_path.split('/').filter(|s| !s.is_empty()).collect();
    let path_segments: Vec<&str> = path.split('/').collect();
    for n in (1..=base_segments.len().min(path_segments.len())).rev() {
        if base_segments[base_segments.len() - n..] == path_segments[..n] {
            let skip: usize = path_segments[..n].iter().map(|s| s.len() + 1).sum();
            return path.get(skip.min(path.len())..).unwrap_or("");
        }
    }
    path
}

/// The agent's answer: the provider's status, headers and body, streamed; the body read for
/// its usage on a success.
fn respond(
    state: &web::Data<AppState>,
    answer: reqwest::Response,
    target: RelayTarget,
) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = HttpResponse::build(status);
    let mut length = None;
    let mut event_stream = false;
    // LiteLLM's proxy reports the cost in a header when not in the body's usage.
    let header_cost = answer
        .headers()
        .get("x-litellm-response-cost")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok());
    for (name, value) in answer.headers() {
        let n = name.as_str();
        if DROPPED_ANSWER.contains(&n) {
            continue;
        }
        if n == "content-length" {
            length = value.to_str().ok().and_then(|v| v.parse::<u64>().ok());
            continue;
        }
        if n == "content-type" {
            event_stream = value.as_bytes().starts_with(b"text/event-stream");
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(n.as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            out.append_header((n, v));
        }
    }
    if let Some(n) = length {
        out.no_chunking(n);
    }
    let reader = match (status.is_success(), event_stream) {
        (false, _) => Reader::Skip,
        (true, true) => Reader::Sse(SseUsage::new()),
        (true, false) => Reader::Json(Some(Vec::new())),
    };
    let sink = Sink {
        relay: state.services.llm_relay().clone(),
        route: target.route,
        metrics: state.metrics.clone(),
        header_cost,
    };
    out.streaming(Tee::new(answer.bytes_stream(), reader, sink))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn url(upstream: &str, path: &str, query: &str, placement: KeyPlacement, key: &str) -> String {
        upstream_url(upstream, path, query, placement, key).expect("a URL under the upstream")
    }

    #[test]
    fn the_upstream_url_keeps_the_path_and_query_and_places_the_key() {
        assert_eq!(
            url(
                "https://api.openai.com/v1/",
                "chat/completions",
                "",
                KeyPlacement::Bearer,
                "k"
            ),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url(
                "https://g.example",
                "v1beta/models/m:streamGenerateContent",
                "alt=sse&key=sbl_t",
                KeyPlacement::QueryKey,
                "real"
            ),
            "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse&key=real"
        );
        // A base URL holding the path LiteLLM appends: not repeated.
        assert_eq!(
            url(
                "https://api.mistral.ai/v1",
                "v1/chat/completions",
                "",
                KeyPlacement::Bearer,
                "k"
            ),
            "https://api.mistral.ai/v1/chat/completions"
        );
        assert_eq!(
            url(
                "https://a.example/v1/messages",
                "v1/messages",
                "",
                KeyPlacement::XApiKey,
                "k"
            ),
            "https://a.example/v1/messages"
        );
        assert_eq!(
            url(
                "https://api.anthropic.com",
                "v1/messages",
                "",
                KeyPlacement::XApiKey,
                "k"
            ),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url(
                "http://h:1/v1",
                "chat/completions",
                "",
                KeyPlacement::Bearer,
                "k"
            ),
            "http://h:1/v1/chat/completions"
        );
        // A `key` parameter is never passed on when the key went elsewhere.
        assert_eq!(
            url("http://h", "x", "key=sbl_t&a=1", KeyPlacement::Bearer, "k"),
            "http://h/x?a=1"
        );
    }

    #[test]
    fn a_path_never_leaves_the_upstream() {
        let escapes = [
            "../admin",
            "chat/../../admin",
            "%2e%2e/admin",
            "chat/%2E%2E/%2e%2e/admin",
            ".%2e/admin",
            "chat\\..\\..\\admin",
            "chat#fragment",
        ];
        for path in escapes {
            assert_eq!(
                upstream_url("http://h:1/v1", path, "", KeyPlacement::Bearer, "k"),
                None,
                "{path}"
            );
        }
        // Under the base it may go anywhere, encoded characters kept as sent.
        assert_eq!(
            url(
                "http://h:1/v1",
                "a/../b%2Fc%3Fd",
                "",
                KeyPlacement::Bearer,
                "k"
            ),
            "http://h:1/v1/b%2Fc%3Fd"
        );
        assert_eq!(
            url("http://h:1", "../../x", "", KeyPlacement::Bearer, "k"),
            "http://h:1/x"
        );
    }
}
