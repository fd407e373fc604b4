//! Cursor stability (API.md, Conventions and Events): paging through a conversation while new
//! events keep arriving, older and newer than the current page, sees every pre-existing event
//! exactly once and in order, and nothing twice.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::Backend;
use time::OffsetDateTime;
use time::macros::{datetime, format_description};

const N: usize = 300;
const LIMIT: usize = 7;

fn naive(t: OffsetDateTime) -> String {
    t.format(format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
    ))
    .unwrap()
}

fn event(id: &str, t: OffsetDateTime) -> String {
    json!({"id": id, "timestamp": naive(t), "source": "user", "kind": "PauseEvent"}).to_string()
}

/// Pages through `conv` with `LIMIT` while a writer appends events around the position just
/// read; checks the pre-existing events (`pre`, in expected order) are all seen once, in
/// order, and that nothing is seen twice.
async fn page_while_writing(
    app: Arc<TestApp>,
    session: String,
    conv: String,
    pre: Vec<String>,
    sort: &str,
) {
    let backend = app.backend;
    let done = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let position = Arc::new(std::sync::Mutex::new(datetime!(2026-01-01 00:02:30 UTC)));
    let writer = {
        let (app, conv, done, written, position) = (
            app.clone(),
            conv.clone(),
            done.clone(),
            written.clone(),
            position.clone(),
        );
        let sort = sort.to_owned();
        tokio::spawn(async move {
            let mut k = 0u32;
            while !done.load(Ordering::Acquire) {
                let at = *position.lock().unwrap();
                // Older than, equal to and newer than the last item read, and far out.
                let stamps = [
                    at - Duration::from_secs(1),
                    at,
                    at + Duration::from_millis(1),
                    at + Duration::from_secs(1),
                    datetime!(2025-01-01 00:00 UTC),
                    datetime!(2027-01-01 00:00 UTC),
                ];
                let batch: Vec<String> = stamps
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (k as usize + i).is_multiple_of(2))
                    .map(|(i, t)| event(&format!("new-{sort}-{k}-{i}"), *t))
                    .collect();
                let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
                app.ingest(&session, &conv, &refs).await;
                written.fetch_add(batch.len(), Ordering::AcqRel);
                k += 1;
            }
        })
    };

    let mut seen: Vec<Value> = Vec::new();
    let mut page_id: Option<String> = None;
    let path = events_path(&conv, "/search");
    let mut pages = 0;
    loop {
        // Let the writer append something between every two pages.
        let before = written.load(Ordering::Acquire);
        for _ in 0..2000 {
            if written.load(Ordering::Acquire) > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut q = vec![
            ("limit", LIMIT.to_string()),
            ("sort_order", sort.to_owned()),
        ];
        if let Some(p) = &page_id {
            q.push(("page_id", p.clone()));
        }
        let (status, body) = app.get_query(&path, &app.owner.key, &q).await;
        assert_eq!(status, 200, "{backend}: {body}");
        let items = body["items"].as_array().unwrap();
        if let Some(last) = items.last() {
            *position.lock().unwrap() = event_instant(last);
        }
        seen.extend(items.iter().cloned());
        pages += 1;
        assert!(pages < 10_000, "{backend}: paging does not end");
        match body["next_page_id"].as_str() {
            Some(p) => {
                assert_eq!(items.len(), LIMIT, "{backend}: short page before the end");
                page_id = Some(p.to_owned());
            }
            None => break,
        }
    }
    done.store(true, Ordering::Release);
    writer.await.unwrap();
    assert!(
        written.load(Ordering::Acquire) >= pages,
        "{backend}: the writer kept writing"
    );

    let ids: Vec<String> = seen
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for id in &ids {
        *counts.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{backend} {sort}: seen twice: {twice:?}");
    let pre_set: HashSet<&str> = pre.iter().map(String::as_str).collect();
    let pre_seen: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|i| pre_set.contains(i))
        .collect();
    assert_eq!(pre_seen, pre, "{backend} {sort}: pre-existing events");
    // What was seen is in order.
    let instants: Vec<OffsetDateTime> = seen.iter().map(event_instant).collect();
    let ordered = match sort {
        "TIMESTAMP" => instants.windows(2).all(|w| w[0] <= w[1]),
        _ => instants.windows(2).all(|w| w[0] >= w[1]),
    };
    assert!(ordered, "{backend} {sort}: out of order");
    // Some events written meanwhile were seen (those newer than the position, ascending).
    assert!(
        ids.len() > pre.len(),
        "{backend} {sort}: no new event seen at all"
    );
}

async fn cursor_stability(backend: Backend) {
    let app = Arc::new(spawn_app(backend).await);
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    // N events, three to a timestamp (ties broken by arrival), sent in an order that is not
    // the timestamp order (batches in reverse).
    let base = datetime!(2026-01-01 00:00 UTC);
    let pre: Vec<(String, String)> = (0..N)
        .map(|i| {
            let id = format!("pre-{i:03}");
            let t = base + Duration::from_secs((i / 3) as u64);
            (id.clone(), event(&id, t))
        })
        .collect();
    let chunks: Vec<&[(String, String)]> = pre.chunks(30).collect();
    for chunk in chunks.iter().rev() {
        let refs: Vec<&str> = chunk.iter().map(|(_, e)| e.as_str()).collect();
        app.ingest(&session, &conv, &refs).await;
    }
    let ascending: Vec<String> = pre.iter().map(|(id, _)| id.clone()).collect();
    let descending: Vec<String> = ascending.iter().rev().cloned().collect();
    // Stable before anything is written.
    let all = app.search_all(&app.owner.key, &conv, &[], 7, N).await;
    let ids: Vec<&str> = all.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ascending, "{backend}");

    page_while_writing(
        app.clone(),
        session.clone(),
        conv.clone(),
        ascending,
        "TIMESTAMP",
    )
    .await;
    // Descending, over a fresh conversation (the first one now holds the new events too).
    let conv2 = uuid::Uuid::new_v4().to_string();
    for chunk in &chunks {
        let refs: Vec<&str> = chunk.iter().map(|(_, e)| e.as_str()).collect();
        app.ingest(&session, &conv2, &refs).await;
    }
    // Within a timestamp, later arrivals come first in descending order: the batches were
    // sent in order this time, so descending is the exact reverse of the ids.
    page_while_writing(app, session, conv2, descending, "TIMESTAMP_DESC").await;
}

on_both_backends!(cursor_stability);
