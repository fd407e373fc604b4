//! The traffic itself: a streamed answer arrives as streamed; redirects are not followed; an
//! upstream that is down answers in the provider's shape; bodies pass byte for byte up to the
//! limit and no further; the Prometheus counters follow.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::Method;
use switchboard_api::llm_relay::forward::MAX_BODY;
use switchboard_testkit::Backend;

use crate::common::status_json;
use crate::llm_relay::rig::{Relay, RouteSpec, anthropic_error, openai_error};
use crate::llm_relay::upstream::{
    JSON_USAGE, SSE_CHUNKS, SSE_GAP, SSE_USAGE, dead_address, sse_body,
};

pub async fn streams_pass_through_as_streamed(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    let answer = relay
        .call(Method::POST, "sse/chat/completions")
        .bearer_auth(&r.token)
        .header("content-type", "application/json")
        .body(r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    let kind = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/event-stream"), "{backend}: {kind}");
    let mut arrivals = Vec::new();
    let mut text = Vec::new();
    let mut chunks = answer.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.unwrap();
        arrivals.push(Instant::now());
        text.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8(text).unwrap(), sse_body(), "{backend}");
    // The first chunk was in the client's hands long before the upstream sent its last one
    // (it sends the first at once and the last (SSE_CHUNKS - 1) gaps later).
    let last_sent = relay.up.last_sse_chunk().unwrap();
    let first = arrivals[0];
    assert!(
        first + SSE_GAP * 2 < last_sent,
        "{backend}: the first chunk arrived {:?} before the last was sent",
        last_sent.saturating_duration_since(first)
    );
    // The chunks arrived spread over the upstream's pacing, not in one piece at the end.
    let spread = *arrivals.last().unwrap() - first;
    assert!(
        spread >= SSE_GAP * (SSE_CHUNKS as u32 - 2),
        "{backend}: {} chunks over {spread:?}",
        arrivals.len()
    );
    assert!(arrivals.len() >= 3, "{backend}: {} chunks", arrivals.len());
    // Its usage, from the last chunk, is recorded once the stream ended.
    let page = relay.wait_requests(1).await;
    assert_eq!(page["total"]["input_tokens"], SSE_USAGE.0, "{backend}");
    assert_eq!(page["total"]["output_tokens"], SSE_USAGE.1, "{backend}");
    assert_eq!(page["total"]["cost_usd"], SSE_USAGE.2, "{backend}");
    relay.stop().await;
}

pub async fn redirects_are_not_followed_and_failures_are_shaped(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    // A redirect comes back to the client as it is; its target hears nothing.
    let answer = relay.chat("redirect/chat/completions", &r.token).await;
    assert_eq!(answer.status(), 302, "{backend}");
    assert_eq!(
        answer.headers()["location"],
        format!("{}/stolen", relay.elsewhere.base).as_str(),
        "{backend}"
    );
    answer.bytes().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        relay.elsewhere.seen().is_empty(),
        "{backend}: {:?}",
        relay.elsewhere.seen()
    );
    assert_eq!(relay.up.seen().len(), 1, "{backend}");
    // An upstream nobody listens on: 502 in the shape of the client's provider.
    let dead = format!("{}/v1", dead_address());
    let down = relay
        .route_with(RouteSpec {
            org: relay.app.org,
            user: relay.app.member.user_id,
            budget: None,
            upstream: &dead,
            sealer: &relay.sealer,
            bound_to: None,
        })
        .await;
    let (status, body) = status_json(relay.chat("chat/completions", &down.token).await).await;
    let message = openai_error(status, &body, 502, "api_error");
    assert!(
        !message.contains(&dead),
        "{backend}: the upstream's address shown: {message}"
    );
    let (status, body) = relay.anthropic("v1/messages", &down.token).await;
    anthropic_error(status, &body, 502, "api_error");
    // Neither the redirect nor the failures recorded any usage.
    let (_, page) = relay
        .org_usage(&relay.app.owner.key, &crate::llm_relay::rig::around_today())
        .await;
    assert_eq!(page["total"]["requests"], 0, "{backend}: {page}");
    relay.stop().await;
}

pub async fn bodies_pass_byte_for_byte_up_to_the_limit(backend: Backend) {
    let relay = Relay::start(backend).await;
    let r = relay.route(None).await;
    // NUL bytes and bytes that are not UTF-8, in a body that claims to be JSON.
    let mut body =
        b"{\"messages\":[{\"content\":\"a\x00b\xff\xfe\xc3\x28\xed\xa0\x80\"}]}".to_vec();
    body.extend(0..=255u8);
    for kind in ["application/json", "application/octet-stream"] {
        let answer = relay
            .call(Method::POST, "chat/completions")
            .bearer_auth(&r.token)
            .header("content-type", kind)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{backend}: {kind}");
        let seen = relay.up.last();
        assert!(
            seen.body == body,
            "{backend}: {kind}: the body changed on its way"
        );
        assert_eq!(seen.header("content-type"), [kind], "{backend}");
    }
    // Exactly the limit passes, whole.
    let big: Vec<u8> = (0..MAX_BODY).map(|i| (i % 251) as u8).collect();
    let answer = relay
        .call(Method::POST, "chat/completions")
        .bearer_auth(&r.token)
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{backend}");
    let seen = relay.up.last();
    assert_eq!(seen.body.len(), MAX_BODY, "{backend}");
    assert!(
        seen.body == big,
        "{backend}: the largest body changed on its way"
    );
    let forwarded = relay.up.seen().len();
    // One byte over: refused in the provider's shape, nothing forwarded.
    let mut over = big;
    over.push(b'!');
    let (status, body) = status_json(
        relay
            .call(Method::POST, "chat/completions")
            .bearer_auth(&r.token)
            .body(over)
            .send()
            .await
            .unwrap(),
    )
    .await;
    openai_error(status, &body, 413, "api_error");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(relay.up.seen().len(), forwarded, "{backend}");
    relay.stop().await;
}

/// A series of `llm_relay_requests_total`.
fn outcome(name: &str) -> String {
    format!("llm_relay_requests_total{{outcome=\"{name}\"}}")
}

pub async fn metrics_count_the_outcomes(backend: Backend) {
    let relay = Relay::start(backend).await;
    for name in [
        "forwarded",
        "unknown_token",
        "task_budget",
        "upstream_failed",
    ] {
        assert_eq!(relay.metric(&outcome(name)).await, 0.0, "{backend}: {name}");
    }
    let r = relay.route(Some(0.1)).await;
    let answer = relay.chat("chat/completions", &r.token).await;
    assert_eq!(answer.status(), 200, "{backend}");
    answer.bytes().await.unwrap();
    relay.wait_metric(&outcome("forwarded"), 1.0).await;
    relay
        .wait_metric(
            "llm_relay_tokens_total{kind=\"input\"}",
            JSON_USAGE.0 as f64,
        )
        .await;
    relay
        .wait_metric(
            "llm_relay_tokens_total{kind=\"output\"}",
            JSON_USAGE.1 as f64,
        )
        .await;
    relay
        .wait_metric("llm_relay_cost_usd_total", JSON_USAGE.2)
        .await;
    let unknown = crate::llm_relay::rig::new_token();
    let (status, _) = status_json(relay.chat("chat/completions", &unknown).await).await;
    assert_eq!(status, 401, "{backend}");
    relay.wait_metric(&outcome("unknown_token"), 1.0).await;
    // The conversation's budget (0.1) is now spent.
    relay.wait_requests(1).await;
    crate::llm_relay::rig::past_cache().await;
    let (status, _) = status_json(relay.chat("chat/completions", &r.token).await).await;
    assert_eq!(status, 400, "{backend}");
    relay.wait_metric(&outcome("task_budget"), 1.0).await;
    assert_eq!(relay.metric(&outcome("forwarded")).await, 1.0, "{backend}");
    let first_byte = relay.metric("llm_relay_first_byte_seconds_count").await;
    assert_eq!(first_byte, 1.0, "{backend}");
    relay.stop().await;
}
