//! Every valid event of the conformance corpus goes in through the agent-server webhook and
//! comes back out of search, count and batch get exactly as the SDK persists it (API.md, Events
//! and Event ingestion): canonical JSON, ordered by (instant, arrival), every filter, both
//! orders, every page size, no duplicates, no gaps.

use crate::common;

use std::collections::HashSet;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::Backend;
use time::OffsetDateTime;
use time::macros::{format_description, offset};

/// One event as sent.
struct Sent {
    /// The JSON line as sent.
    text: String,
    /// Its id.
    id: String,
    /// Its kind.
    kind: String,
}

/// Every valid corpus event in send order: the canonical files, the `full/` files (explicit
/// nulls) and the conversation logs.
fn corpus() -> Vec<Sent> {
    let dir = corpus_dir().join("valid");
    let mut files = jsonl_files(&dir);
    files.extend(jsonl_files(&dir.join("full")));
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("conversation_")),
        "the corpus has conversation logs"
    );
    let mut out = Vec::new();
    for f in files {
        for text in read_lines(&f) {
            let v: Value = serde_json::from_str(&text).unwrap();
            out.push(Sent {
                id: v["id"].as_str().unwrap().to_owned(),
                kind: v["kind"].as_str().unwrap().to_owned(),
                text,
            });
        }
    }
    out
}

/// What must be stored for `sent`, in arrival order: the first event of each id, without
/// `StreamingDeltaEvent`s, as canonical JSON.
fn stored_in_arrival_order(sent: &[Sent]) -> Vec<Value> {
    let mut seen = HashSet::new();
    sent.iter()
        .filter(|s| s.kind != "StreamingDeltaEvent" && seen.insert(s.id.clone()))
        .map(|s| canonical(&s.text))
        .collect()
}

/// Sorted by (instant, arrival order): a stable sort of the arrival order.
fn by_instant(arrival: &[Value]) -> Vec<Value> {
    let mut v = arrival.to_vec();
    v.sort_by_key(event_instant);
    v
}

fn naive(t: OffsetDateTime) -> String {
    t.to_offset(offset!(UTC))
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
        ))
        .unwrap()
}

/// `t` written in the three forms a client may use: RFC 3339 with `Z`, naive (UTC), and with
/// an offset.
fn spellings(t: OffsetDateTime) -> [String; 3] {
    let plus = t.to_offset(offset!(+05:30));
    let plus = format!(
        "{}+05:30",
        plus.format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
        ))
        .unwrap()
    );
    [format!("{}Z", naive(t)), naive(t), plus]
}

/// The expected items for a filter.
fn filtered(
    sorted: &[Value],
    kind: Option<&str>,
    gte: Option<OffsetDateTime>,
    lt: Option<OffsetDateTime>,
) -> Vec<Value> {
    sorted
        .iter()
        .filter(|e| kind.is_none_or(|k| e["kind"] == k))
        .filter(|e| gte.is_none_or(|t| event_instant(e) >= t))
        .filter(|e| lt.is_none_or(|t| event_instant(e) < t))
        .cloned()
        .collect()
}

async fn check_filter(
    app: &TestApp,
    conversation: &str,
    params: &[(&str, String)],
    expected: &[Value],
) {
    let key = &app.owner.key;
    let (status, count) = app
        .get_query(&events_path(conversation, "/count"), key, params)
        .await;
    assert_eq!(
        (status, count),
        (200, json!(expected.len())),
        "{}: count {params:?}",
        app.backend
    );
    let reversed: Vec<Value> = expected.iter().rev().cloned().collect();
    for (sort, want) in [
        (None, expected),
        (Some("TIMESTAMP"), expected),
        (Some("TIMESTAMP_DESC"), &reversed[..]),
    ] {
        let mut q = params.to_vec();
        if let Some(s) = sort {
            q.push(("sort_order", s.to_owned()));
        }
        // The default order is TIMESTAMP: checked with the largest page only.
        let limits: &[u32] = if sort.is_none() { &[100] } else { &[1, 7, 100] };
        for &limit in limits {
            let got = app
                .search_all(key, conversation, &q, limit, want.len())
                .await;
            let ids: HashSet<String> = got.iter().map(|e| e["id"].to_string()).collect();
            assert_eq!(ids.len(), got.len(), "{}: duplicates in {q:?}", app.backend);
            assert_same_events(&got, want, &format!("{}: {q:?} limit {limit}", app.backend));
        }
    }
}

async fn corpus_round_trip(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let sent = corpus();
    let arrival = stored_in_arrival_order(&sent);
    assert!(arrival.len() > 150, "{}", arrival.len());
    assert!(
        arrival.len()
            < sent
                .iter()
                .filter(|s| s.kind != "StreamingDeltaEvent")
                .count(),
        "the corpus repeats ids (canonical and full forms), so some events are skipped"
    );
    let sorted = by_instant(&arrival);

    // Two conversations with the same events: batches of 5 (dashed id) and of 50 (32 hex).
    let conv_a = uuid::Uuid::new_v4();
    let conv_b = uuid::Uuid::new_v4();
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    for batch in texts.chunks(5) {
        app.ingest(&session, &conv_a.to_string(), batch).await;
    }
    for batch in texts.chunks(50) {
        app.ingest(&session, &conv_b.simple().to_string(), batch)
            .await;
    }
    let conv_a = conv_a.to_string();
    let conv_b = conv_b.to_string();

    // Conversation B holds the same events, in the same order: ids are unique per conversation.
    let all_b = app
        .search_all(&app.owner.key, &conv_b, &[], 100, sorted.len())
        .await;
    assert_same_events(&all_b, &sorted, &format!("{backend}: conversation B"));

    // No filter, and every kind (with one present in the corpus but never stored).
    check_filter(&app, &conv_a, &[], &sorted).await;
    let mut kinds: Vec<&str> = sent.iter().map(|s| s.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert!(kinds.len() >= 20, "{kinds:?}");
    for kind in &kinds {
        let want = filtered(&sorted, Some(kind), None, None);
        assert_eq!(want.is_empty(), *kind == "StreamingDeltaEvent", "{kind}");
        check_filter(&app, &conv_a, &[("kind__eq", (*kind).to_owned())], &want).await;
    }

    // Time filters at instants of stored events (so both bounds are exercised exactly), each
    // written three ways.
    let t1 = event_instant(&sorted[sorted.len() / 3]);
    let t2 = event_instant(&sorted[2 * sorted.len() / 3]);
    assert!(t1 < t2);
    for (s1, s2) in spellings(t1).into_iter().zip(spellings(t2)) {
        check_filter(
            &app,
            &conv_a,
            &[("timestamp__gte", s1.clone())],
            &filtered(&sorted, None, Some(t1), None),
        )
        .await;
        check_filter(
            &app,
            &conv_a,
            &[("timestamp__lt", s2.clone())],
            &filtered(&sorted, None, None, Some(t2)),
        )
        .await;
        let both = filtered(&sorted, None, Some(t1), Some(t2));
        assert!(!both.is_empty());
        check_filter(
            &app,
            &conv_a,
            &[
                ("timestamp__gte", s1.clone()),
                ("timestamp__lt", s2.clone()),
            ],
            &both,
        )
        .await;
    }
    // Everything combined.
    let kind = "ActionEvent";
    let [z1, ..] = spellings(t1);
    let [_, _, off2] = spellings(t2);
    check_filter(
        &app,
        &conv_a,
        &[
            ("kind__eq", kind.to_owned()),
            ("timestamp__gte", z1),
            ("timestamp__lt", off2),
        ],
        &filtered(&sorted, Some(kind), Some(t1), Some(t2)),
    )
    .await;
}

async fn batch_get(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let sent = corpus();
    let conv = uuid::Uuid::new_v4().to_string();
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    for batch in texts.chunks(50) {
        app.ingest(&session, &conv, batch).await;
    }
    let stored = stored_in_arrival_order(&sent);
    let delta = sent
        .iter()
        .find(|s| s.kind == "StreamingDeltaEvent")
        .unwrap();
    let path = events_path(&conv, "");
    let pick = |i: usize| stored[i]["id"].as_str().unwrap().to_owned();
    let ids = [
        pick(7),
        "no-such-event".to_owned(),
        pick(0),
        delta.id.clone(),
        pick(stored.len() - 1),
        pick(7),
        pick(3),
    ];
    let q: Vec<(&str, String)> = ids.iter().map(|i| ("id", i.clone())).collect();
    let (status, body) = app.get_query(&path, &app.owner.key, &q).await;
    assert_eq!(status, 200, "{backend}: {body}");
    let want = json!([
        stored[7],
        null,
        stored[0],
        null,
        stored[stored.len() - 1],
        stored[7],
        stored[3]
    ]);
    assert_eq!(body, want, "{backend}");

    // Exactly 100 ids is allowed, 101 is not.
    let hundred: Vec<(&str, String)> = (0..100).map(|i| ("id", pick(i))).collect();
    let (status, body) = app.get_query(&path, &app.owner.key, &hundred).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body, Value::Array(stored[..100].to_vec()), "{backend}");
    let mut too_many = hundred.clone();
    too_many.push(("id", "one-more".to_owned()));
    let (status, body) = app.get_query(&path, &app.owner.key, &too_many).await;
    assert_eq!(
        (status, body),
        (
            400,
            detail("Cannot request more than 100 events at once, got 101")
        ),
        "{backend}"
    );
}

/// `StreamingDeltaEvent`s are accepted (200) but never stored, alone or in a mixed batch.
async fn streaming_deltas_not_stored(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let sent = corpus();
    let deltas: Vec<&Sent> = sent
        .iter()
        .filter(|s| s.kind == "StreamingDeltaEvent")
        .collect();
    assert!(!deltas.is_empty());
    let pause = sent.iter().find(|s| s.kind == "PauseEvent").unwrap();
    let conv = uuid::Uuid::new_v4().to_string();
    app.ingest(&session, &conv, &[&deltas[0].text]).await;
    let batch: Vec<&str> = deltas
        .iter()
        .map(|d| d.text.as_str())
        .chain([pause.text.as_str()])
        .collect();
    app.ingest(&session, &conv, &batch).await;
    let key = &app.owner.key;
    let (_, count) = app.get_query(&events_path(&conv, "/count"), key, &[]).await;
    assert_eq!(count, json!(1), "{backend}");
    let (_, count) = app
        .get_query(
            &events_path(&conv, "/count"),
            key,
            &[("kind__eq", "StreamingDeltaEvent".to_owned())],
        )
        .await;
    assert_eq!(count, json!(0), "{backend}");
    let all = app.search_all(key, &conv, &[], 100, 1).await;
    assert_eq!(all, [canonical(&pause.text)], "{backend}");
    let q: Vec<(&str, String)> = deltas.iter().map(|d| ("id", d.id.clone())).collect();
    let (status, body) = app.get_query(&events_path(&conv, ""), key, &q).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        Value::Array(vec![Value::Null; deltas.len()]),
        "{backend}"
    );
}

/// A retried batch (at-least-once delivery) stores nothing twice and changes nothing.
async fn retries_never_duplicate(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let sent = corpus();
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    let conv = uuid::Uuid::new_v4().to_string();
    for batch in texts.chunks(50) {
        app.ingest(&session, &conv, batch).await;
        app.ingest(&session, &conv, batch).await;
    }
    // And everything once more in a different batching.
    for batch in texts.chunks(7) {
        app.ingest(&session, &conv, batch).await;
    }
    let sorted = by_instant(&stored_in_arrival_order(&sent));
    let got = app
        .search_all(&app.owner.key, &conv, &[], 100, sorted.len())
        .await;
    assert_same_events(&got, &sorted, backend.name());
}

/// A batch whose every event is stored already (the stream path stored it first, or a
/// retry) writes nothing, not even the conversation's activity time; a batch with one new
/// event among stored ones is appended as before and moves it.
async fn stored_batches_write_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let sent = corpus();
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    let conv = uuid::Uuid::new_v4().to_string();
    let updated_at = || async {
        let (status, body) = app
            .get_query(
                "/api/v1/app-conversations",
                &app.owner.key,
                &[("ids", conv.clone())],
            )
            .await;
        assert_eq!(status, 200, "{backend}: {body}");
        body[0]["updated_at"].as_str().unwrap().to_owned()
    };
    app.ingest(&session, &conv, &texts[..10]).await;
    let before = updated_at().await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    app.ingest(&session, &conv, &texts[..10]).await;
    app.ingest(&session, &conv, &texts[3..7]).await;
    assert_eq!(
        updated_at().await,
        before,
        "{backend}: nothing new, nothing written"
    );
    app.ingest(&session, &conv, &texts[5..12]).await;
    assert_ne!(
        updated_at().await,
        before,
        "{backend}: new events move the activity time"
    );
    let sorted = by_instant(&stored_in_arrival_order(&sent[..12]));
    let got = app
        .search_all(&app.owner.key, &conv, &[], 100, sorted.len())
        .await;
    assert_same_events(&got, &sorted, backend.name());
    app.stop().await;
}

/// A run state OpenHands does not define (from a newer agent server) is not an error: the
/// event is stored, the conversation keeps its run state, and a `ConversationInfo` carrying
/// one still updates the title.
async fn unknown_statuses_leave_the_run_state(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let update = |id: &str, status: &str| {
        json!({"id": id, "timestamp": "2026-11-21T09:00:00", "source": "environment",
               "key": "execution_status", "value": status, "kind": "ConversationStateUpdateEvent"})
        .to_string()
    };
    app.ingest(&session, &conv, &[&update("a", "running")])
        .await;
    app.ingest(&session, &conv, &[&update("b", "brand_new_status")])
        .await;
    let (_, n) = app
        .get_query(&events_path(&conv, "/count"), &app.owner.key, &[])
        .await;
    assert_eq!(n, json!(2), "{backend}: the event is stored");
    let c = app.conversation(&conv).await.unwrap();
    assert_eq!(c.execution_status.as_deref(), Some("running"), "{backend}");

    let info = json!({"id": conv, "title": "renamed", "execution_status": "brand_new_status"});
    let (status, body) = app
        .post_webhook(
            "/api/v1/webhooks/conversations",
            Some(&session),
            info.to_string(),
        )
        .await;
    assert_eq!((status, body), (200, json!({"success": true})), "{backend}");
    let c = app.conversation(&conv).await.unwrap();
    assert_eq!(
        (c.title.as_deref(), c.execution_status.as_deref()),
        (Some("renamed"), Some("running")),
        "{backend}"
    );
    app.stop().await;
}

on_both_backends!(
    corpus_round_trip,
    batch_get,
    streaming_deltas_not_stored,
    retries_never_duplicate,
    stored_batches_write_nothing,
    unknown_statuses_leave_the_run_state,
);
