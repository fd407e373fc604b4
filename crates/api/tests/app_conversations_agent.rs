//! App conversations whose sandboxes Switchboard runs (the stand-in agent server, real
//! processes), on both backends: the view while `RUNNING` and `PAUSED` (URL, key, run
//! state: the last reported in both), send-message forwarded to the agent server (which records it) and a paused sandbox
//! resumed first, delete on the agent server then in the database (exactly one
//! conversation's rows) then the sandbox once unused, and the 404/410/422/502/503 paths.

use crate::common;

use std::time::Duration;

use common::sandboxes::{
    CRASHES, SandboxApp, SandboxOptions, spawn_sandbox_app, spawn_sandbox_app_with, success,
};
use common::*;
use diesel::QueryableByName;
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

on_both_backends!(send_message_and_views, delete_and_failures);

const BASE: &str = "/api/v1/app-conversations";
/// A spec whose stand-in fails send-message and conversation delete (500).
const FAILS_CALLS: &str = "fails-calls";

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn hex(id: &str) -> String {
    id.replace('-', "")
}

/// A running sandbox of `spec` for `key`: its id, session key and agent server URL.
async fn running_sandbox(
    app: &SandboxApp,
    key: &str,
    spec: Option<&str>,
) -> (String, String, String) {
    let started = app.start(key, spec).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(key, &id, "RUNNING").await;
    (
        id,
        info["session_api_key"].as_str().unwrap().to_owned(),
        info["exposed_urls"][0]["url"].as_str().unwrap().to_owned(),
    )
}

/// Creates conversation `id` in the sandbox whose key is `session` (its webhook).
async fn create(app: &TestApp, session: &str, id: &str) {
    let body = json!({"id": id, "title": "t", "execution_status": "running"}).to_string();
    let (status, body) = app
        .post_webhook("/api/v1/webhooks/conversations", Some(session), body)
        .await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
}

/// What the stand-in at `url` received (send-message and delete calls).
async fn received(url: &str) -> Vec<Value> {
    reqwest::get(format!("{url}/standin/received"))
        .await
        .unwrap()
        .json::<Vec<Value>>()
        .await
        .unwrap()
}

async fn send(app: &TestApp, key: &str, id: &str, body: Value) -> (u16, Value) {
    status_json(
        app.req(
            Method::POST,
            &format!("{BASE}/{id}/send-message"),
            Some(key),
        )
        .json(&body)
        .send()
        .await
        .unwrap(),
    )
    .await
}

async fn get_one(app: &TestApp, key: &str, id: &str) -> Value {
    let (status, body) = app.get_query(BASE, key, &[("ids", id.to_owned())]).await;
    assert_eq!(status, 200, "{body}");
    body[0].clone()
}

fn hello(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true})
}

async fn send_message_and_views(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let owner = app.owner.key.clone();
    let (sb, session, url) = running_sandbox(&app, &owner, None).await;
    let (msb, msession, _) = running_sandbox(&app, &app.member.key, None).await;
    let c = new_id();
    let mc = new_id();
    create(&app, &session, &c).await;
    create(&app, &msession, &mc).await;

    // RUNNING: URL, run state; the key to the owner and the admin only.
    for key in [&owner, &app.admin.key] {
        let v = get_one(&app, key, &c).await;
        assert_eq!(v["sandbox_id"], sb, "{backend}");
        assert_eq!(v["sandbox_status"], "RUNNING");
        assert_eq!(v["execution_status"], "running");
        assert_eq!(
            v["conversation_url"],
            format!("{url}/api/conversations/{}", hex(&c))
        );
        assert_eq!(v["session_api_key"], session, "{backend}");
    }
    assert_eq!(get_one(&app, &app.member.key, &c).await, Value::Null);
    assert_eq!(get_one(&app, &app.non_member.key, &c).await, Value::Null);
    // The member sees their own conversation with their sandbox's key; the admin too.
    for key in [&app.member.key, &app.admin.key] {
        let v = get_one(&app, key, &mc).await;
        assert_eq!(v["sandbox_id"], msb);
        assert_eq!(v["session_api_key"], msession, "{backend}");
    }

    // Send: forwarded as a SendMessageRequest with the session key.
    let (status, body) = send(&app, &owner, &c, hello("first")).await;
    assert_eq!(
        (status, &body),
        (
            200,
            &json!({"success": true, "sandbox_status": "RUNNING", "message": null})
        ),
        "{backend}"
    );
    let got = received(&url).await;
    assert_eq!(got.len(), 1, "{backend}: {got:?}");
    assert_eq!(got[0]["method"], "POST");
    assert_eq!(
        got[0]["path"],
        format!("/api/conversations/{}/events", hex(&c))
    );
    assert_eq!(got[0]["body"], hello("first"));
    // `run` defaults to true, `role` may be left out; the admin may send too.
    let (status, _) = send(
        &app,
        &app.admin.key,
        &c,
        json!({"content": [{"type": "text", "text": "second"}]}),
    )
    .await;
    assert_eq!(status, 200, "{backend}");
    assert_eq!(received(&url).await[1]["body"], hello("second"));

    // Not visible or unknown: 404; bad bodies and ids: 422; nothing forwarded.
    for (key, id) in [
        (&app.member.key, c.clone()),
        (&app.non_member.key, c.clone()),
        (&owner, new_id()),
    ] {
        let (status, body) = send(&app, key, &id, hello("x")).await;
        assert_eq!(
            (status, body),
            (404, detail("Conversation not found")),
            "{backend}"
        );
    }
    for (body, at, ty) in [
        (
            json!({"content": []}),
            json!(["body", "content"]),
            "value_error",
        ),
        (
            json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}),
            json!(["body", "role"]),
            "literal_error",
        ),
        (
            json!({"content": [{"type": "text", "text": "x"}], "extra": 1}),
            json!(["body", "extra"]),
            "extra_forbidden",
        ),
        (
            json!({"content": [{"type": "video"}]}),
            json!(["body", "content", 0]),
            "value_error",
        ),
        (
            json!({"content": [{"type": "text", "text": "x"}], "run": "yes"}),
            json!(["body", "run"]),
            "bool_type",
        ),
    ] {
        let (status, got) = send(&app, &owner, &c, body.clone()).await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_one_error(&got, &at, ty);
    }
    let (status, got) = send(&app, &owner, "x", hello("x")).await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&got, &json!(["path", "conversation_id"]), "uuid_parsing");
    assert_eq!(received(&url).await.len(), 2, "{backend}");

    // PAUSED: no URL or key, the last run state reported (issue 31); a message resumes it
    // first, then is forwarded.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{sb}/pause"),
            Some(&owner),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    let v = get_one(&app, &owner, &c).await;
    assert_eq!(
        (
            &v["sandbox_status"],
            &v["session_api_key"],
            &v["conversation_url"],
            &v["execution_status"]
        ),
        (
            &json!("PAUSED"),
            &Value::Null,
            &Value::Null,
            &json!("running")
        ),
        "{backend}"
    );
    let (status, body) = send(&app, &owner, &c, hello("after pause")).await;
    assert_eq!(
        (status, &body),
        (
            200,
            &json!({"success": true, "sandbox_status": "RUNNING", "message": "Sandbox resumed"})
        ),
        "{backend}"
    );
    assert_eq!(
        app.info(&owner, &sb).await["status"],
        "RUNNING",
        "{backend}"
    );
    let got = received(&url).await;
    assert_eq!(got.len(), 3, "{backend}: {got:?}");
    assert_eq!(got[2]["body"], hello("after pause"));
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// `SELECT COUNT(*) AS n FROM {table} WHERE conversation_id = '{id}'` (or `id` for the
/// conversations table), on a connection of its own.
async fn rows(app: &TestApp, table: &str, id: &str) -> i64 {
    use diesel::RunQueryDsl;
    let column = if table == "conversations" {
        "id"
    } else {
        "conversation_id"
    };
    let sql = format!("SELECT COUNT(*) AS n FROM {table} WHERE {column} = '{id}'");
    let url = app.url.clone();
    tokio::task::spawn_blocking(move || {
        use diesel::Connection;
        let n: Vec<Count> = if url.starts_with("postgres") {
            let mut c = diesel::PgConnection::establish(&url).unwrap();
            diesel::sql_query(sql).load(&mut c).unwrap()
        } else {
            let path = url.trim_start_matches("sqlite://");
            let mut c = diesel::SqliteConnection::establish(path).unwrap();
            diesel::sql_query(sql).load(&mut c).unwrap()
        };
        n[0].n
    })
    .await
    .unwrap()
}

fn event(id: &str) -> String {
    json!({"id": id, "timestamp": "2026-11-23T10:00:00", "source": "user", "kind": "PauseEvent"})
        .to_string()
}

/// A start task of conversation `id`, stored directly (the start pipeline writes them).
async fn start_task(app: &TestApp, id: &str) {
    app.exec_sql(&format!(
        "INSERT INTO start_tasks (id, org_id, created_by_user_id, status, conversation_id, request, created_at, updated_at) \
         VALUES ('{}', '{}', '{}', 'READY', '{id}', '{{}}', '2026-11-23 10:00:00', '2026-11-23 10:00:00')",
        new_id(),
        app.org,
        app.owner.user_id
    ))
    .await;
}

async fn delete(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    status_json(
        app.req(Method::DELETE, &format!("{BASE}/{id}"), Some(key))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn delete_and_failures(backend: Backend) {
    let app = spawn_sandbox_app_with(
        backend,
        SandboxOptions::default(),
        &[(FAILS_CALLS, "fail-conversation-calls")],
        |s| s,
    )
    .await;
    let owner = app.owner.key.clone();
    let (sb, session, url) = running_sandbox(&app, &owner, None).await;
    let (c1, c2) = (new_id(), new_id());
    for c in [&c1, &c2] {
        create(&app, &session, c).await;
        app.ingest(&session, c, &[&event(&new_id()), &event(&new_id())])
            .await;
        start_task(&app, c).await;
    }

    // Not visible or unknown: 404, nothing deleted; a bad id: 422.
    for (key, id) in [
        (&app.member.key, c1.clone()),
        (&app.non_member.key, c1.clone()),
        (&owner, new_id()),
    ] {
        let (status, body) = delete(&app, key, &id).await;
        assert_eq!(
            (status, body),
            (404, detail("Conversation not found")),
            "{backend}"
        );
    }
    let (status, _) = delete(&app, &owner, "nope").await;
    assert_eq!(status, 422, "{backend}");
    assert!(received(&url).await.is_empty(), "{backend}");

    // Delete c1: the agent server is told, c1's rows go, c2's stay, the sandbox (still used
    // by c2) stays.
    let (status, body) = delete(&app, &owner, &hex(&c1)).await;
    assert_eq!((status, body), (200, success()), "{backend}");
    let got = received(&url).await;
    assert_eq!(got.len(), 1, "{backend}: {got:?}");
    assert_eq!(
        (&got[0]["method"], &got[0]["path"]),
        (
            &json!("DELETE"),
            &json!(format!("/api/conversations/{}", hex(&c1)))
        )
    );
    for (table, want1, want2) in [
        ("conversations", 0, 1),
        ("events", 0, 2),
        ("start_tasks", 0, 1),
    ] {
        assert_eq!(
            rows(&app, table, &c1).await,
            want1,
            "{backend}: {table} of c1"
        );
        assert_eq!(
            rows(&app, table, &c2).await,
            want2,
            "{backend}: {table} of c2"
        );
    }
    assert_eq!(get_one(&app, &owner, &c1).await, Value::Null);
    assert_eq!(
        app.info(&owner, &sb).await["status"],
        "RUNNING",
        "{backend}"
    );
    let (status, _) = delete(&app, &owner, &c1).await;
    assert_eq!(status, 404, "{backend}");
    // The admin deletes c2, the sandbox's last conversation: the sandbox goes too.
    let (status, _) = delete(&app, &app.admin.key, &c2).await;
    assert_eq!(status, 200, "{backend}");
    assert_eq!(rows(&app, "events", &c2).await, 0, "{backend}");
    assert_eq!(app.info(&owner, &sb).await, Value::Null, "{backend}");
    // Deleted: its session key no longer authenticates.
    let (status, _) = app
        .post_webhook(
            "/api/v1/webhooks/conversations",
            Some(&session),
            json!({"id": new_id()}).to_string(),
        )
        .await;
    assert_eq!(status, 401, "{backend}");

    // A failing agent server: send-message 502, delete 502 with nothing deleted.
    let (_, fsession, furl) = running_sandbox(&app, &owner, Some(FAILS_CALLS)).await;
    let fc = new_id();
    create(&app, &fsession, &fc).await;
    let (status, body) = send(&app, &owner, &fc, hello("x")).await;
    assert_eq!(
        (status, body),
        (502, detail("The agent server failed: HTTP 500")),
        "{backend}"
    );
    let (status, body) = delete(&app, &owner, &fc).await;
    assert_eq!(
        (status, body),
        (502, detail("The agent server failed: HTTP 500")),
        "{backend}"
    );
    assert_eq!(rows(&app, "conversations", &fc).await, 1, "{backend}");
    assert_eq!(received(&furl).await.len(), 2, "{backend}");

    // A deleted sandbox: 410; its conversation can still be deleted (no agent server call).
    let (gsb, gsession, _) = running_sandbox(&app, &owner, None).await;
    let gc = new_id();
    create(&app, &gsession, &gc).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{gsb}"),
            Some(&owner),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    let v = get_one(&app, &owner, &gc).await;
    assert_eq!(v["sandbox_status"], "MISSING", "{backend}");
    let (status, body) = send(&app, &owner, &gc, hello("x")).await;
    assert_eq!(
        (
            status,
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("Sandbox is MISSING")
        ),
        (410, true),
        "{backend}"
    );
    let (status, _) = delete(&app, &owner, &gc).await;
    assert_eq!(status, 200, "{backend}");

    // A sandbox in ERROR: 503.
    let crashed = app.start(&owner, Some(CRASHES)).await;
    let esb = crashed["id"].as_str().unwrap().to_owned();
    app.wait_status(&owner, &esb, "ERROR").await;
    let ec = new_id();
    app.exec_sql(&format!(
        "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, created_at, updated_at) \
         VALUES ('{ec}', '{}', '{}', '{esb}', '2026-11-23 10:00:00', '2026-11-23 10:00:00')",
        app.org, app.owner.user_id
    ))
    .await;
    let (status, body) = send(&app, &owner, &ec, hello("x")).await;
    assert_eq!(
        (status, body),
        (
            503,
            detail("Sandbox is ERROR: the conversation's agent server cannot be reached")
        ),
        "{backend}"
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
}
