//! The LLM pass-through (issue 38; docs/API.md, "LLM pass-through") as a client and an
//! attacker see it, on both backends, against a real upstream on loopback that records what
//! reaches it (`llm_relay/upstream.rs`), over routes stored as a start stores them
//! (`llm_relay/rig.rs`):
//!
//! - the real key reaches the upstream where the token came (bearer, `x-api-key`, `api-key`,
//!   `x-goog-api-key`, the `key` query parameter), the token nowhere; cookies, forwarding
//!   headers, the sandbox's session key and `Accept-Encoding` stay behind; method, path and
//!   query arrive as sent; a path cannot climb out of the upstream's base path;
//! - refusals in the provider's shape: no key, an unknown token, a key sealed for another
//!   conversation or by another server, a deleted sandbox, a deleted conversation;
//! - the per-task and monthly budgets;
//! - usage equal to what the upstream reported, whole or streamed, and who reads it;
//! - a streamed answer arrives as streamed; redirects are not followed; an upstream that is
//!   down; the body limit; bodies forwarded byte for byte;
//! - the Prometheus counters.

use crate::common;
#[path = "llm_relay/rig.rs"]
mod rig;
#[path = "llm_relay/seed.rs"]
mod seed;
#[path = "llm_relay/traffic.rs"]
mod traffic;
#[path = "llm_relay/upstream.rs"]
mod upstream;
#[path = "llm_relay/usage.rs"]
mod usage;

use reqwest::Method;
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::ports::{AppConversationStore, SandboxStore};
use switchboard_domain::time_input::now_micros;
use switchboard_testkit::Backend;

use common::status_json;
use rig::{REAL_KEY, Relay, Route, RouteSpec, anthropic_error, new_token, openai_error};
use traffic::{
    bodies_pass_byte_for_byte_up_to_the_limit, metrics_count_the_outcomes,
    redirects_are_not_followed_and_failures_are_shaped, streams_pass_through_as_streamed,
};
use upstream::Seen;
use usage::{budgets_refuse_before_forwarding, usage_is_what_the_upstream_reported};

on_both_backends!(
    the_key_goes_where_the_token_came,
    paths_stay_under_the_upstream,
    refusals_in_the_providers_shape,
    budgets_refuse_before_forwarding,
    usage_is_what_the_upstream_reported,
    streams_pass_through_as_streamed,
    redirects_are_not_followed_and_failures_are_shaped,
    bodies_pass_byte_for_byte_up_to_the_limit,
    metrics_count_the_outcomes,
);

/// Headers that say where the key goes.
const KEY_HEADERS: [&str; 4] = ["authorization", "x-api-key", "api-key", "x-goog-api-key"];

/// Asserts what reached the upstream: `method` on `uri`, the real key in header `key_in` only
/// (or in no header), the token nowhere, and none of what must stay behind.
#[track_caller]
fn assert_forwarded(seen: &Seen, token: &str, method: &str, uri: &str, key_in: Option<&str>) {
    assert_eq!(seen.method, method, "{seen:?}");
    assert_eq!(seen.uri, uri, "{seen:?}");
    assert!(
        !seen.mentions(token),
        "the token reached the upstream: {seen:?}"
    );
    assert!(
        !seen.mentions("sbl_"),
        "a token reached the upstream: {seen:?}"
    );
    for h in KEY_HEADERS {
        let want: Vec<String> = match (key_in, h) {
            (Some(k), "authorization") if k == h => vec![format!("Bearer {REAL_KEY}")],
            (Some(k), _) if k == h => vec![REAL_KEY.to_owned()],
            _ => Vec::new(),
        };
        assert_eq!(seen.header(h), want, "{h}: {seen:?}");
    }
    for (name, _) in &seen.headers {
        assert!(
            !matches!(
                name.as_str(),
                "cookie"
                    | "forwarded"
                    | "x-real-ip"
                    | "x-session-api-key"
                    | "accept-encoding"
                    | "proxy-authorization"
            ) && !name.starts_with("x-forwarded-"),
            "{name} reached the upstream: {seen:?}"
        );
    }
}

/// A bearer, sent with everything that must stay behind and the headers a provider reads.
async fn a_bearer_leaves_the_rest_behind(relay: &Relay, t: &str, backend: Backend) {
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let answer = relay
        .call(Method::POST, "chat/completions?api-version=2024-10-21")
        .bearer_auth(t)
        .header("content-type", "application/json")
        .header("cookie", "session=agent-cookie")
        .header("x-forwarded-for", "10.0.0.7")
        .header("x-forwarded-host", "evil.example")
        .header("x-forwarded-proto", "https")
        .header("forwarded", "for=10.0.0.7")
        .header("x-real-ip", "10.0.0.7")
        .header("x-session-api-key", "sandbox-session-key")
        .header("proxy-authorization", "Basic cHJveHk6cHJveHk=")
        .header("accept-encoding", "gzip, br")
        .header("openai-organization", "org-kept")
        .header("x-stainless-lang", "python")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    // The provider's headers come back, its cookie does not.
    assert_eq!(answer.headers()["openai-processing-ms"], "17", "{backend}");
    assert!(answer.headers().get("set-cookie").is_none(), "{backend}");
    let (_, answered) = status_json(answer).await;
    assert_eq!(answered["usage"]["prompt_tokens"], 100, "{backend}");
    let seen = relay.up.last();
    assert_forwarded(
        &seen,
        t,
        "POST",
        "/v1/chat/completions?api-version=2024-10-21",
        Some("authorization"),
    );
    assert_eq!(seen.body, body.as_bytes(), "{backend}");
    assert_eq!(
        seen.header("openai-organization"),
        ["org-kept"],
        "{backend}"
    );
    assert_eq!(seen.header("x-stainless-lang"), ["python"], "{backend}");
    assert_eq!(
        seen.header("content-type"),
        ["application/json"],
        "{backend}"
    );
}

/// The `key` query parameter: the real key in place of the token, the others kept.
async fn the_query_key_is_replaced(relay: &Relay, t: &str, backend: Backend) {
    let answer = relay
        .call(
            Method::POST,
            &format!("v1beta/models/gemini-2.5:streamGenerateContent?alt=sse&key={t}&b=2"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    let seen = relay.up.last();
    assert!(!seen.mentions(t), "{backend}: {seen:?}");
    assert!(
        seen.uri
            .starts_with("/v1/v1beta/models/gemini-2.5:streamGenerateContent?")
    );
    let mut query = seen.query();
    query.sort();
    assert_eq!(
        query,
        [
            ("alt".to_owned(), "sse".to_owned()),
            ("b".to_owned(), "2".to_owned()),
            ("key".to_owned(), REAL_KEY.to_owned())
        ],
        "{backend}: {seen:?}"
    );
    for h in KEY_HEADERS {
        assert!(seen.header(h).is_empty(), "{backend}: {h}: {seen:?}");
    }
}

async fn the_key_goes_where_the_token_came(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    let t = r.token.as_str();
    a_bearer_leaves_the_rest_behind(&relay, t, backend).await;

    // Each header a provider's client puts its key in, each with another method.
    for (method, header, path) in [
        (Method::POST, "x-api-key", "anthropic/v1/messages"),
        (Method::PUT, "api-key", "openai/deployments/d1/files/f1"),
        (Method::PATCH, "x-goog-api-key", "v1beta/cachedContents/c1"),
        (Method::DELETE, "x-api-key", "files/file-1"),
        (Method::GET, "api-key", "models"),
    ] {
        let answer = relay
            .call(method.clone(), &format!("{path}?keep=1"))
            .header(header, t)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{backend}: {method} {header}");
        let seen = relay.up.last();
        assert_forwarded(
            &seen,
            t,
            method.as_str(),
            &format!("/v1/{path}?keep=1"),
            Some(header),
        );
    }

    the_query_key_is_replaced(&relay, t, backend).await;

    // The token in a header and in the query too: the header's place gets the key, the query
    // parameter is dropped rather than passed on.
    let answer = relay
        .call(Method::GET, &format!("models?key={t}&x=1"))
        .bearer_auth(t)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    let seen = relay.up.last();
    assert_forwarded(&seen, t, "GET", "/v1/models?x=1", Some("authorization"));

    // Another credential beside the token (an Anthropic client behind a gateway's basic
    // auth): the token is still found, and the other credential dropped.
    let answer = relay
        .call(Method::POST, "anthropic/v1/messages")
        .header("authorization", "Basic dXNlcjpwYXNz")
        .header("x-api-key", t)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    let seen = relay.up.last();
    assert_forwarded(
        &seen,
        t,
        "POST",
        "/v1/anthropic/v1/messages",
        Some("x-api-key"),
    );

    assert_eq!(relay.up.seen().len(), 9, "{backend}");
    relay.stop().await;
}

async fn paths_stay_under_the_upstream(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    // Dot segments, plain or percent-encoded, and backslashes, sent verbatim (a client would
    // resolve them): refused in the provider's shape, never forwarded outside the upstream's
    // base path `/v1`.
    for target in [
        "/api/v1/llm-proxy/../../../admin",
        "/api/v1/llm-proxy/chat/../../admin",
        "/api/v1/llm-proxy/%2e%2e/admin",
        "/api/v1/llm-proxy/chat/%2E%2E/%2e%2e/admin",
        "/api/v1/llm-proxy/.%2e/admin",
        "/api/v1/llm-proxy/chat\\..\\..\\admin",
        "/api/v1/llm%2Dproxy/../admin",
    ] {
        let (status, body) = relay.raw_get(target, &r.token).await;
        assert_eq!(status, 400, "{backend}: {target}: {body}");
        assert!(
            relay.up.seen().is_empty(),
            "{backend}: {target}: {:?}",
            relay.up.seen()
        );
    }
    let (status, body) = relay
        .raw_get("/api/v1/llm-proxy/chat/../../admin", &r.token)
        .await;
    openai_error(
        status,
        &serde_json::from_str(&body).unwrap(),
        400,
        "invalid_request_error",
    );
    // An encoded slash or question mark stays a part of the path as sent.
    for (target, want) in [
        ("chat%2Fcompletions", "/v1/chat%2Fcompletions"),
        ("models/a%3Fkey%3Dx", "/v1/models/a%3Fkey%3Dx"),
        ("models/a%23b", "/v1/models/a%23b"),
        ("chat%5C..%5C..%5Cadmin", "/v1/chat%5C..%5C..%5Cadmin"),
        ("a/../chat/completions", "/v1/chat/completions"),
    ] {
        let (status, _) = relay
            .raw_get(&format!("/api/v1/llm-proxy/{target}"), &r.token)
            .await;
        assert_eq!(status, 200, "{backend}: {target}");
        let seen = relay.up.last();
        assert_eq!(seen.uri, want, "{backend}");
        assert!(!seen.mentions(&r.token), "{backend}: {seen:?}");
    }
    relay.stop().await;
}

/// No key, unknown tokens, the real key, a token one character off, keys sealed for another
/// conversation or by another server: each refused in the provider's shape.
async fn keys_that_open_nothing(relay: &Relay, r: &Route, backend: Backend) {
    // No key at all.
    let (status, body) = status_json(
        relay
            .call(Method::POST, "chat/completions")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;
    openai_error(status, &body, 401, "authentication_error");
    // An unknown token, as a bearer (OpenAI's shape) and as `x-api-key` (Anthropic's).
    let unknown = new_token();
    let (status, body) = status_json(relay.chat("chat/completions", &unknown).await).await;
    let message = openai_error(status, &body, 401, "authentication_error");
    assert!(!message.contains(&unknown), "{backend}: {message}");
    let (status, body) = relay.anthropic("v1/messages", &unknown).await;
    anthropic_error(status, &body, 401, "authentication_error");
    // The real key itself, and a real token with one character changed.
    let mut changed = r.token.clone();
    let last = changed.pop().unwrap();
    changed.push(if last == 'a' { 'b' } else { 'a' });
    for key in [REAL_KEY, changed.as_str(), &r.token.to_uppercase()] {
        let (status, body) = status_json(relay.chat("chat/completions", key).await).await;
        openai_error(status, &body, 401, "authentication_error");
    }
    // A key sealed for another conversation, or by another server, does not open: 503.
    let spec = |bound_to, sealer| RouteSpec {
        org: relay.app.org,
        user: relay.app.member.user_id,
        budget: None,
        upstream: &relay.upstream,
        sealer,
        bound_to,
    };
    let foreign = relay
        .route_with(spec(Some(r.conversation), &relay.sealer))
        .await;
    let other_sealer = Sealer::new(&Sealer::generate_key());
    let other_server = relay.route_with(spec(None, &other_sealer)).await;
    for route in [&foreign, &other_server] {
        let (status, body) = status_json(relay.chat("chat/completions", &route.token).await).await;
        openai_error(status, &body, 503, "api_error");
    }
}

async fn refusals_in_the_providers_shape(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    keys_that_open_nothing(&relay, &r, backend).await;
    assert!(
        relay.up.seen().is_empty(),
        "{backend}: {:?}",
        relay.up.seen()
    );

    // A live route works; deleting its sandbox revokes it, and only it.
    let kept = relay.route(None).await;
    let (status, _) = status_json(relay.chat("chat/completions", &r.token).await).await;
    assert_eq!(status, 200, "{backend}");
    let store = relay.app.store.clone();
    let sandbox = r.sandbox;
    let deleted = tokio::task::spawn_blocking(move || store.delete_sandbox(sandbox, now_micros()))
        .await
        .unwrap()
        .unwrap();
    assert!(deleted, "{backend}");
    rig::past_cache().await;
    let (status, body) = status_json(relay.chat("chat/completions", &r.token).await).await;
    openai_error(status, &body, 401, "authentication_error");
    let (status, body) = relay.anthropic("v1/messages", &r.token).await;
    anthropic_error(status, &body, 401, "authentication_error");
    let (status, _) = status_json(relay.chat("chat/completions", &kept.token).await).await;
    assert_eq!(status, 200, "{backend}");
    // Deleting the conversation revokes its route as well.
    let store = relay.app.store.clone();
    let conversation = kept.conversation;
    let gone = tokio::task::spawn_blocking(move || store.delete_app_conversation(conversation))
        .await
        .unwrap()
        .unwrap();
    rig::past_cache().await;
    assert!(gone.is_some(), "{backend}");
    let (status, body) = status_json(relay.chat("chat/completions", &kept.token).await).await;
    openai_error(status, &body, 401, "authentication_error");
    // Only the two live requests reached the upstream.
    assert_eq!(relay.up.seen().len(), 2, "{backend}");
    // A method no provider's API uses is not forwarded either.
    let fresh = relay.route(None).await;
    let answer = relay
        .call(Method::from_bytes(b"PROPFIND").unwrap(), "models")
        .bearer_auth(&fresh.token)
        .send()
        .await
        .unwrap();
    assert!(
        answer.status().is_client_error(),
        "{backend}: {}",
        answer.status()
    );
    assert_eq!(relay.up.seen().len(), 2, "{backend}");
    relay.stop().await;
}
