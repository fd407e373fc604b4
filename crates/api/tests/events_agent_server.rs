//! Replays webhook traffic captured from a real agent server (openhands-agent-server 1.58.2,
//! `tests/fixtures/agent-server/`): every request in order, retries included, with a session
//! key of the test database. Search must return what the agent server's own search returned,
//! in the same order, plus the `full_state` snapshots it posted; the run state and title follow
//! the traffic.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent-server")
        .join(name)
}

/// One captured request: the route on our side and the JSON body.
struct Request {
    path: String,
    body: Value,
    /// What the capture receiver answered (500 for a failure the agent server retried).
    replied: u64,
}

fn requests(file: &str) -> Vec<Request> {
    read_lines(&fixture(file))
        .iter()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            assert_eq!(r["method"], "POST", "{file}");
            let captured = r["path"].as_str().unwrap();
            let body = match &r["body"] {
                Value::String(s) => serde_json::from_str(s).unwrap(),
                v => v.clone(),
            };
            let path = if captured.ends_with("/conversations") {
                "/api/v1/webhooks/conversations".to_owned()
            } else {
                let (_, conv) = captured.rsplit_once("/events/").unwrap();
                webhook_events_path(conv)
            };
            Request {
                path,
                body,
                replied: r["replied"].as_u64().unwrap(),
            }
        })
        .collect()
}

/// The run's conversation id (dashed), from its event posts.
fn conversation_of(reqs: &[Request]) -> String {
    let ids: HashSet<String> = reqs
        .iter()
        .filter_map(|r| r.path.strip_prefix("/api/v1/webhooks/events/"))
        .map(|hex| uuid::Uuid::parse_str(hex).unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.into_iter().next().unwrap()
}

/// The run state an event implies (API.md, Event ingestion).
fn status_effect(e: &Value) -> Option<String> {
    match e["kind"].as_str()? {
        "ConversationStateUpdateEvent" if e["key"] == "execution_status" => {
            e["value"].as_str().map(str::to_owned)
        }
        "ConversationStateUpdateEvent" if e["key"] == "full_state" => {
            e["value"]["execution_status"].as_str().map(str::to_owned)
        }
        "InterruptEvent" => Some("paused".to_owned()),
        "ConversationErrorEvent" => Some("error".to_owned()),
        _ => None,
    }
}

fn is_full_state(e: &Value) -> bool {
    e["kind"] == "ConversationStateUpdateEvent" && e["key"] == "full_state"
}

/// What the traffic delivered so far to one server: the ids stored, the run state and title
/// they imply.
#[derive(Default)]
struct Delivered {
    stored: HashSet<String>,
    status: Option<String>,
    title: Option<String>,
}

/// Replays `file` (from a fresh [`Delivered`]), checking every answer and the conversation's
/// state after each request; returns the conversation id and what must be stored, sorted by
/// (instant, arrival).
async fn replay(app: &TestApp, session: &str, file: &str) -> (String, Vec<Value>) {
    replay_onto(app, session, file, &mut Delivered::default()).await
}

/// [`replay`] onto what was delivered before. A batch whose every event is stored already
/// writes nothing (API.md, stream path): a retried or redelivered stale batch leaves the run
/// state as newer events set it.
async fn replay_onto(
    app: &TestApp,
    session: &str,
    file: &str,
    delivered: &mut Delivered,
) -> (String, Vec<Value>) {
    let backend = app.backend;
    let reqs = requests(file);
    let conv = conversation_of(&reqs);
    let Delivered {
        stored: seen,
        status,
        title,
    } = delivered;
    let mut arrival: Vec<Value> = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let (code, body) = app
            .post_webhook(&r.path, Some(session), r.body.to_string())
            .await;
        assert_eq!(
            (code, &body),
            (200, &json!({"success": true})),
            "{backend}: {file} request {i} (captured reply {})",
            r.replied
        );
        match &r.body {
            Value::Array(events) => {
                let all_stored = events
                    .iter()
                    .all(|e| seen.contains(e["id"].as_str().unwrap()));
                for e in events {
                    if e["kind"] != "StreamingDeltaEvent"
                        && seen.insert(e["id"].as_str().unwrap().to_owned())
                    {
                        arrival.push(canonical(&e.to_string()));
                    }
                    if let Some(s) = status_effect(e).filter(|_| !all_stored) {
                        *status = Some(s);
                    }
                }
            }
            info => {
                assert_eq!(
                    info["id"].as_str().map(|s| s.replace('-', "")),
                    Some(conv.replace('-', ""))
                );
                if let Some(t) = info["title"].as_str() {
                    *title = Some(t.to_owned());
                }
                match info["execution_status"].as_str() {
                    Some("deleting") | None => {}
                    Some(s) => *status = Some(s.to_owned()),
                }
            }
        }
        let c = app
            .conversation(&conv)
            .await
            .unwrap_or_else(|| panic!("{backend}: {file} request {i}: no conversation"));
        assert_eq!(
            (&c.title, &c.execution_status),
            (&*title, &*status),
            "{backend}: {file} after request {i}"
        );
        assert_eq!(
            (c.org_id, c.owner_id),
            (app.org, app.owner.user_id),
            "{backend}"
        );
    }
    let mut sorted = arrival;
    sorted.sort_by_key(event_instant);
    (conv, sorted)
}

/// Replays a run that has the agent server's own search result and compares.
async fn replay_against_search(backend: Backend, run: &str) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let file = format!("{run}-requests.jsonl");
    let mut delivered = Delivered::default();
    let (conv, expected) = replay_onto(&app, &session, &file, &mut delivered).await;
    let key = &app.owner.key;
    let got = app.search_all(key, &conv, &[], 100, expected.len()).await;
    assert_same_events(&got, &expected, &format!("{backend}: {run}"));

    // Without the full_state snapshots: exactly the agent server's own search, in its order.
    let theirs: Vec<Value> = read_lines(&fixture(&format!("{run}-search.jsonl")))
        .iter()
        .map(|l| canonical(l))
        .collect();
    assert!(theirs.len() >= 10, "{run}");
    let ours: Vec<Value> = got.iter().filter(|e| !is_full_state(e)).cloned().collect();
    assert_same_events(
        &ours,
        &theirs,
        &format!("{backend}: {run}: the agent server's search"),
    );
    // Every full_state snapshot posted is there exactly once.
    let mut posted_snapshots = Vec::new();
    for r in requests(&format!("{run}-requests.jsonl")) {
        if let Value::Array(events) = r.body {
            posted_snapshots.extend(events.into_iter().filter(is_full_state));
        }
    }
    assert!(!posted_snapshots.is_empty(), "{run}");
    for s in &posted_snapshots {
        let n = got.iter().filter(|e| e["id"] == s["id"]).count();
        assert_eq!(n, 1, "{backend}: {run}: snapshot {}", s["id"]);
        let stored = got.iter().find(|e| e["id"] == s["id"]).unwrap();
        assert_eq!(stored, &canonical(&s.to_string()), "{backend}");
    }
    assert_eq!(
        got.len(),
        theirs.len() + posted_snapshots.len(),
        "{backend}: {run}"
    );

    // The conversation's final run state is the traffic's last one.
    let c = app.conversation(&conv).await.unwrap();
    assert_eq!(
        c.execution_status.as_deref(),
        Some("finished"),
        "{backend}: {run}"
    );

    // Delivering the whole traffic again (at-least-once) changes nothing: no event twice, and
    // no stale batch sets the run state back (ConversationInfo posts still set theirs).
    replay_onto(&app, &session, &file, &mut delivered).await;
    let again = app.search_all(key, &conv, &[], 100, expected.len()).await;
    assert_same_events(&again, &got, &format!("{backend}: {run}: after redelivery"));
    let (_, n) = app.get_query(&events_path(&conv, "/count"), key, &[]).await;
    assert_eq!(n, json!(expected.len()), "{backend}");
}

async fn default_run(backend: Backend) {
    replay_against_search(backend, "run-20261121-091709-27353").await;
}

async fn streaming_run(backend: Backend) {
    replay_against_search(backend, "run-20261121-090952-28751").await;
}

/// Batches of 5 with the first one refused twice by the capture receiver (so sent three
/// times): stored once.
async fn retried_batches(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let file = "retry-buffer5-fail2-webhook-requests.jsonl";
    let reqs = requests(file);
    assert!(
        reqs.iter().filter(|r| r.replied == 500).count() >= 2,
        "the capture has retries"
    );
    let mut deliveries: HashMap<String, usize> = HashMap::new();
    for r in &reqs {
        if let Value::Array(events) = &r.body {
            for e in events {
                *deliveries
                    .entry(e["id"].as_str().unwrap().to_owned())
                    .or_default() += 1;
            }
        }
    }
    assert!(
        deliveries.values().any(|&n| n == 3),
        "some events are delivered three times"
    );
    let (conv, expected) = replay(&app, &session, file).await;
    assert_eq!(expected.len(), deliveries.len(), "{backend}");
    let got = app
        .search_all(&app.owner.key, &conv, &[], 7, expected.len())
        .await;
    assert_same_events(&got, &expected, backend.name());
    let c = app.conversation(&conv).await.unwrap();
    assert_eq!(c.execution_status.as_deref(), Some("finished"), "{backend}");
}

/// A session driven by hand: pause, interrupt, a renamed title and a final `deleting` status
/// (ignored).
async fn manual_session(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let (conv, expected) = replay(&app, &session, "manual-session-webhook-requests.jsonl").await;
    let got = app
        .search_all(&app.owner.key, &conv, &[], 100, expected.len())
        .await;
    assert_same_events(&got, &expected, backend.name());
    for kind in ["PauseEvent", "InterruptEvent", "AgentErrorEvent"] {
        assert!(got.iter().any(|e| e["kind"] == kind), "{backend}: {kind}");
    }
    let c = app.conversation(&conv).await.unwrap();
    assert_eq!(
        (c.title.as_deref(), c.execution_status.as_deref()),
        (Some("renamed by test"), Some("finished")),
        "{backend}"
    );
}

on_both_backends!(default_run, streaming_run, retried_batches, manual_session);
