//! Event storage quotas and the disk reserve through the real binary (issue 33, "post large
//! event batches into its own conversation"), on both backends: a sandbox flooding its own
//! conversation is answered 507 once past `--max-events-per-conversation`, and its members
//! see why in the conversation (a `ConversationErrorEvent`); flooding many conversations is
//! stopped at `--max-event-bytes-per-org` while another organization's sandbox still stores;
//! under `--min-free-disk` (SQLite) appends are 507, reads answer and `/ready` says `degraded`.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use switchboard_testkit::{Backend, TestDatabase};

/// A registered sandbox's session key for the organization `boot` names.
fn sandbox(db: &str, org: &str, user: &str) -> String {
    let reg = cli_json(
        db,
        &["sandboxes", "register", "--org-id", org, "--user-id", user],
    );
    str_of(&reg, "session_api_key").to_owned()
}

/// Posts `n` events from `from`, each with `pad` bytes of text, to `conv`'s webhook.
fn post(
    server: &Server,
    session: &str,
    conv: &str,
    from: usize,
    n: usize,
    pad: usize,
) -> (u16, Value) {
    let events: Vec<String> = (from..from + n)
        .map(|i| {
            format!(
                r#"{{"id":"00000000-0000-4000-8000-{i:012}","timestamp":"2026-11-23T10:00:00","kind":"MessageEvent","source":"user","llm_message":{{"role":"user","content":[{{"type":"text","text":"{}"}}]}}}}"#,
                "x".repeat(pad)
            )
        })
        .collect();
    send_json(
        client()
            .post(server.url(&format!("/api/v1/webhooks/events/{conv}")))
            .header("X-Session-API-Key", session)
            .header("content-type", "application/json")
            .body(format!("[{}]", events.join(","))),
    )
}

fn kinds(server: &Server, key: &str, conv: &str) -> Vec<String> {
    let (status, body) = send_json(
        client()
            .get(server.url(&format!(
                "/api/v1/conversation/{conv}/events/search?limit=100"
            )))
            .header("X-Access-Token", key),
    );
    assert_eq!(status, 200, "{body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn quotas(backend: Backend) {
    let db = TestDatabase::new(backend);
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![
                "--max-events-per-conversation",
                "5",
                "--max-event-bytes-per-org",
                "40000",
            ],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let boot = server.bootstrapped.clone().unwrap();
    let session = sandbox(db.url(), str_of(&boot, "org_id"), str_of(&boot, "user_id"));
    let other = cli_json(
        db.url(),
        &["bootstrap", "--org-name", "other", "--email", "o@x"],
    );
    let other_key = str_of(&other, "api_key").to_owned();
    let other_session = sandbox(
        db.url(),
        str_of(&other, "org_id"),
        str_of(&other, "user_id"),
    );

    // One conversation: 4 events fit, 2 more would be 6 of 5.
    let conv = "6c1d7c2e-3f7a-4b8e-9d2c-1a2b3c4d5e6f";
    assert_eq!(post(&server, &session, conv, 0, 4, 10).0, 200, "{backend}");
    let (status, body) = post(&server, &session, conv, 4, 2, 10);
    assert_eq!(status, 507, "{backend}: {body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("--max-events-per-conversation") && detail.contains("holds 4 events"),
        "{backend}: {detail}"
    );
    // The members see why, once, in the conversation itself.
    let seen = kinds(&server, &key, conv);
    assert_eq!(seen.len(), 5, "{backend}: {seen:?}");
    assert_eq!(seen[4], "ConversationErrorEvent", "{backend}: {seen:?}");
    assert_eq!(post(&server, &session, conv, 6, 1, 10).0, 507, "{backend}");
    assert_eq!(kinds(&server, &key, conv).len(), 5, "{backend}: one notice");

    // Many conversations of 5 KB events: the organization's 40,000 bytes stop the flood.
    let mut refused = None;
    for c in 0..20 {
        let conv = format!("7c1d7c2e-3f7a-4b8e-9d2c-{c:012}");
        let (status, body) = post(&server, &session, &conv, 0, 2, 5000);
        if status == 507 {
            refused = Some((c, body));
            break;
        }
        assert_eq!(status, 200, "{backend}: {body}");
    }
    let (c, body) = refused.expect("the organization's quota never refused");
    assert!(
        (3..=4).contains(&c),
        "{backend}: refused at conversation {c}"
    );
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("--max-event-bytes-per-org"),
        "{backend}: {body}"
    );
    // Another organization's sandbox still stores.
    let theirs = "8c1d7c2e-3f7a-4b8e-9d2c-1a2b3c4d5e6f";
    assert_eq!(post(&server, &other_session, theirs, 0, 2, 5000).0, 200);
    assert_eq!(kinds(&server, &other_key, theirs).len(), 2, "{backend}");
    server.stop(Duration::from_secs(30));
}

#[test]
fn event_quotas_sqlite() {
    quotas(Backend::Sqlite);
}

#[test]
fn event_quotas_postgres() {
    quotas(Backend::Postgres);
}

/// `--min-free-disk` larger than any disk: nothing stored, reads and `/ready` answer.
#[test]
fn disk_reserve_sqlite() {
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec!["--min-free-disk", "1000000000000"],
            env: vec![],
        },
    );
    let key = server.bootstrap_key();
    let boot = server.bootstrapped.clone().unwrap();
    let session = sandbox(db.url(), str_of(&boot, "org_id"), str_of(&boot, "user_id"));
    let conv = "6c1d7c2e-3f7a-4b8e-9d2c-1a2b3c4d5e6f";
    let (status, body) = post(&server, &session, conv, 0, 1, 10);
    assert_eq!(status, 507, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("--min-free-disk"),
        "{body}"
    );
    let (status, ready) = send_json(client().get(server.url("/ready")));
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["status"], "degraded", "{ready}");
    assert!(
        ready["detail"].as_str().unwrap().contains("bytes free"),
        "{ready}"
    );
    let metrics = client()
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("database_disk_bytes{state=\"reserve\"} 1048576000000000000"),
        "{metrics}"
    );
    let (status, _) = send_json(
        client()
            .get(server.url("/api/v1/app-conversations/search"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(status, 200, "reads go on");
    server.stop(Duration::from_secs(30));
}
