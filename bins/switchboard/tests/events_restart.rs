//! The real binary keeps every event across a restart: register a sandbox with the CLI, serve,
//! ingest a conversation log through the webhook, stop with SIGTERM, serve again on the same
//! database, and search finds everything, in order.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const CONVERSATION: &str = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";

/// The corpus's conversation logs, in log order.
fn conversation_log() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/model/tests/fixtures/conformance/valid");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("conversation_")
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no conversation log in {}",
        dir.display()
    );
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What search must return: the canonical form of each stored event (no streaming deltas,
/// first of each id), sorted by (instant, arrival).
fn expected(log: &[String]) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    // Instants in microseconds, as stored.
    let mut out: Vec<(i128, Value)> = Vec::new();
    for line in log {
        let e = switchboard_model::Event::from_json_str(line).unwrap();
        if e.kind_name() == "StreamingDeltaEvent" || !seen.insert(e.id.clone()) {
            continue;
        }
        let t = e
            .timestamp_instant()
            .unwrap()
            .unix_timestamp_nanos()
            .div_euclid(1000);
        out.push((t, serde_json::from_str(&e.to_json_string()).unwrap()));
    }
    out.sort_by_key(|(t, _)| *t);
    out.into_iter().map(|(_, v)| v).collect()
}

/// Every page of the conversation's events, ascending, 7 at a time.
fn search_all(server: &Server, key: &str) -> Vec<Value> {
    let client = client();
    let mut out = Vec::new();
    let mut page: Option<String> = None;
    for _ in 0..1000 {
        let mut url = server.url(&format!(
            "/api/v1/conversation/{CONVERSATION}/events/search?limit=7"
        ));
        if let Some(p) = &page {
            url.push_str(&format!("&page_id={p}"));
        }
        let (status, body) = send_json(client.get(url).header("X-Access-Token", key));
        assert_eq!(status, 200, "{body}");
        out.extend(body["items"].as_array().unwrap().iter().cloned());
        match body["next_page_id"].as_str() {
            Some(p) => page = Some(p.to_owned()),
            None => return out,
        }
    }
    panic!("search did not end")
}

fn restart_loses_nothing(backend: Backend) {
    let db = TestDatabase::new(backend);
    let url = db.url();
    let boot = cli_json(
        url,
        &[
            "bootstrap",
            "--org-name",
            "Restart",
            "--email",
            "r@example.com",
        ],
    );
    let (org, user, key) = (
        str_of(&boot, "org_id").to_owned(),
        str_of(&boot, "user_id").to_owned(),
        str_of(&boot, "api_key").to_owned(),
    );
    let reg = cli_json(
        url,
        &[
            "sandboxes",
            "register",
            "--org-id",
            &org,
            "--user-id",
            &user,
        ],
    );
    let mut keys: Vec<&String> = reg.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["sandbox_id", "session_api_key"],
        "{backend}: {reg:?}"
    );
    let session = str_of(&reg, "session_api_key").to_owned();
    assert!(session.starts_with("sbs_"), "{backend}: {session}");

    let log = conversation_log();
    let want = expected(&log);
    assert!(want.len() >= 10, "{}", want.len());

    let server = Server::spawn(url);
    let http = client();
    let hook = server.url(&format!("/api/v1/webhooks/events/{CONVERSATION}"));
    for batch in log.chunks(5) {
        let (status, body) = send_json(
            http.post(&hook)
                .header("X-Session-API-Key", &session)
                .header("content-type", "application/json")
                .body(format!("[{}]", batch.join(","))),
        );
        assert_eq!((status, body), (200, json!({"success": true})), "{backend}");
    }
    let before = search_all(&server, &key);
    assert_eq!(before, want, "{backend}: before the restart");
    drop(http);
    server.stop(Duration::from_secs(30));

    let server = Server::spawn(url);
    assert!(
        server.bootstrapped.is_none(),
        "{backend}: bootstrapped again"
    );
    let after = search_all(&server, &key);
    assert_eq!(after, want, "{backend}: after the restart");
    // The session key still works, and a redelivery is still skipped.
    let hook = server.url(&format!("/api/v1/webhooks/events/{CONVERSATION}"));
    let (status, _) = send_json(
        client()
            .post(&hook)
            .header("X-Session-API-Key", &session)
            .header("content-type", "application/json")
            .body(format!("[{}]", log.join(","))),
    );
    assert_eq!(status, 200, "{backend}");
    assert_eq!(
        search_all(&server, &key),
        want,
        "{backend}: after redelivery"
    );
    server.stop(Duration::from_secs(30));
}

#[test]
fn restart_loses_nothing_sqlite() {
    restart_loses_nothing(Backend::Sqlite);
}

#[test]
fn restart_loses_nothing_postgres() {
    restart_loses_nothing(Backend::Postgres);
}
