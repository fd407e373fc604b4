//! The OpenHands automation service's own requests (issue 31), replayed from the fixture
//! captured from its source (`fixtures/automation_service/`, `openhands-automation` 1.26.0)
//! against the real server on both backends, headers as the service sends them: one run's
//! requests in order with the stand-in agent server as the sandbox (`flow.rs`), and the
//! service route's rules (`rules.rs`).

use crate::common;
mod flow;
mod rules;

use reqwest::Method;
use serde_json::Value;

use common::{TestApp, status_json};

/// The service key the tests configure.
pub const SERVICE_KEY: &str = "svc-7f3a0c1e9b2d4e5f8a6b";

/// The fixture.
pub fn fixture() -> Value {
    let path = format!(
        "{}/tests/fixtures/automation_service/requests.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The request named `name` of the fixture.
pub fn request<'a>(fixture: &'a Value, name: &str) -> &'a Value {
    fixture["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no request {name} in the fixture"))
}

/// `text` with every `{placeholder}` of `subst` replaced.
pub fn fill(text: &str, subst: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (k, v) in subst {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Sends the fixture's request `name` as the service does (its method, path, headers and body,
/// placeholders filled): status and JSON body.
pub async fn replay(app: &TestApp, name: &str, subst: &[(&str, &str)]) -> (u16, Value) {
    let fixture = fixture();
    let req = request(&fixture, name);
    let method = Method::from_bytes(req["method"].as_str().unwrap().as_bytes()).unwrap();
    let url = format!("{}{}", app.base, fill(req["path"].as_str().unwrap(), subst));
    let mut r = app.client.request(method, url);
    for (k, v) in req["headers"].as_object().unwrap() {
        r = r.header(k, fill(v.as_str().unwrap(), subst));
    }
    if let Some(body) = req.get("body") {
        r = r.body(fill(&body.to_string(), subst));
    }
    status_json(r.send().await.unwrap()).await
}

/// The value at a `reads` entry: `a.b`, `[0].x` (an element), `xs[].y` (on the first item).
pub fn read<'a>(body: &'a Value, field: &str) -> Option<&'a Value> {
    let mut v = body;
    for part in field.split('.') {
        if let Some(i) = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
            v = v.as_array()?.get(i.parse::<usize>().ok()?)?;
            continue;
        }
        let (key, each) = match part.strip_suffix("[]") {
            Some(k) => (k, true),
            None => (part, false),
        };
        v = v.as_object()?.get(key)?;
        if each {
            v = v.as_array()?.first()?;
        }
    }
    Some(v)
}

/// Replays `name`, asserts the fixture's status and that every field the service reads is
/// there; the body.
pub async fn replay_ok(app: &TestApp, name: &str, subst: &[(&str, &str)]) -> Value {
    let fixture = fixture();
    let req = request(&fixture, name);
    let (status, body) = replay(app, name, subst).await;
    assert_eq!(
        u64::from(status),
        req["status"].as_u64().unwrap(),
        "{}: {name}: {body}",
        app.backend
    );
    for f in req["reads"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        assert!(
            read(&body, f).is_some(),
            "{}: {name}: the service reads {f}, absent from {body}",
            app.backend
        );
    }
    body
}

use flow::one_run_as_the_service_sends_it;
use rules::{
    a_minted_key_is_listed_expires_and_is_revocable, the_service_key_and_the_user_are_checked,
    without_a_service_key_the_routes_answer_503,
};

on_both_backends!(
    one_run_as_the_service_sends_it,
    without_a_service_key_the_routes_answer_503,
    the_service_key_and_the_user_are_checked,
    a_minted_key_is_listed_expires_and_is_revocable,
);
