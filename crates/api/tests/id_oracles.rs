//! Ids a client chooses never tell it what exists outside what it may see (issue 24 item 5),
//! on both backends: a conversation start naming the id of another organization's
//! conversation, or of another member's, behaves as for an unknown id (the start proceeds,
//! with a fresh id), also when the id is taken while the start runs; naming one the caller sees
//! is 409; a webhook for a conversation its sandbox may not write is answered as any other and
//! stores nothing.

use crate::common;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use common::{detail, webhook_events_path};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

on_both_backends!(
    conversation_ids_of_others_are_unknown,
    an_id_taken_during_the_start,
    webhooks_into_others_conversations
);

/// A spec whose stand-in takes 2 s to listen: a start waits for its sandbox that long.
const SLOW: &str = "slow";

const START: &str = "/api/v1/app-conversations";

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app_with(
        backend,
        SandboxOptions::default(),
        &[(SLOW, "slow-start:2")],
        |s| {
            s.with_llm(LlmConfig {
                model: Some("openai/fake-model".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                api_key: None,
                stream: false,
                key_owner: None,
            })
        },
    )
    .await
}

fn event(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","timestamp":"2026-11-21T10:00:00","source":"user","kind":"PauseEvent"}}"#
    )
}

/// A conversation of the owner of organization A, with one event, made by a registered
/// sandbox's webhook.
async fn owners_conversation(app: &SandboxApp) -> String {
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    app.ingest(&session, &conv, &[&event("first")]).await;
    conv
}

/// Starts with `conversation_id` = `conv` as `key`: the answer, and for a 200 the final task.
async fn start_with(app: &SandboxApp, key: &str, conv: &str) -> (u16, Value) {
    let body = json!({
        "conversation_id": conv,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "run": false},
    });
    let (status, task) = app.call(Method::POST, START, Some(key), Some(body)).await;
    if status != 200 {
        return (status, task);
    }
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={id}"),
                Some(key),
                None,
            )
            .await;
        if body[0]["status"] == "READY" || body[0]["status"] == "ERROR" {
            return (200, body[0].clone());
        }
        assert!(Instant::now() < deadline, "{}: stuck: {body}", app.backend);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// How many events the owner sees in `conv`.
async fn event_count(app: &SandboxApp, conv: &str) -> i64 {
    let (status, body) = app
        .call(
            Method::GET,
            &format!("/api/v1/conversation/{conv}/events/count"),
            Some(&app.owner.key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body.as_i64().unwrap()
}

async fn conversation_ids_of_others_are_unknown(backend: Backend) {
    let app = app(backend).await;
    let conv = owners_conversation(&app).await;
    let unknown = uuid::Uuid::new_v4().to_string();

    // Another organization's owner, and a member who does not see the owner's conversations:
    // the start goes on as for an unknown id, under a fresh id of their own.
    for (who, key) in [
        ("another org", &app.non_member.key),
        ("a member", &app.member.key),
    ] {
        let (status, task) = start_with(&app, key, &conv).await;
        assert_eq!(status, 200, "{backend}: {who}: {task}");
        assert_eq!(task["status"], "READY", "{backend}: {who}: {task}");
        let got = task["app_conversation_id"].as_str().unwrap();
        assert_ne!(got, conv, "{backend}: {who}");
        assert!(!task.to_string().contains("already exists"), "{task}");
        // Theirs, and the owner's conversation untouched.
        let (status, mine) = app
            .call(Method::GET, &format!("{START}?ids={got}"), Some(key), None)
            .await;
        assert_eq!(status, 200);
        assert_eq!(
            mine[0]["id"].as_str().map(|s| s.replace('-', "")),
            Some(got.replace('-', ""))
        );
    }
    assert_eq!(event_count(&app, &conv).await, 1, "{backend}");
    // An unknown id is taken as asked.
    let (status, task) = start_with(&app, &app.member.key, &unknown).await;
    assert_eq!((status, &task["status"]), (200, &json!("READY")), "{task}");
    assert_eq!(
        task["app_conversation_id"]
            .as_str()
            .map(|s| s.replace('-', "")),
        Some(unknown.replace('-', ""))
    );

    // Those who see it: 409.
    for key in [&app.owner.key, &app.admin.key] {
        let (status, body) = start_with(&app, key, &conv).await;
        assert_eq!(
            (status, body),
            (409, detail(&format!("Conversation {conv} already exists"))),
            "{backend}"
        );
    }
}

async fn an_id_taken_during_the_start(backend: Backend) {
    let app = app(backend).await;
    let wanted = uuid::Uuid::new_v4().to_string();
    let body = json!({
        "conversation_id": wanted,
        "sandbox_spec_id": SLOW,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "run": false},
    });
    let (status, task) = app
        .call(Method::POST, START, Some(&app.member.key), Some(body))
        .await;
    assert_eq!(status, 200, "{backend}: {task}");
    // While the start waits for its sandbox, another organization's agent server takes the id.
    let outsider = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    app.ingest(&outsider, &wanted, &[&event("theirs")]).await;
    let id = task["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let (_, body) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={id}"),
                Some(&app.member.key),
                None,
            )
            .await;
        if body[0]["status"] == "READY" || body[0]["status"] == "ERROR" {
            break body[0].clone();
        }
        assert!(Instant::now() < deadline, "{backend}: stuck: {body}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    let got = done["app_conversation_id"].as_str().unwrap().to_owned();
    assert_ne!(got.replace('-', ""), wanted.replace('-', ""), "{backend}");
    // The member's conversation is the fresh one; the other organization's is untouched.
    assert_eq!(
        app.conversation(&got).await.unwrap().owner_id,
        app.member.user_id
    );
    let theirs = app.conversation(&wanted).await.unwrap();
    assert_eq!(
        (theirs.org_id, theirs.owner_id),
        (app.other_org, app.non_member.user_id),
        "{backend}"
    );
}

async fn webhooks_into_others_conversations(backend: Backend) {
    let app = app(backend).await;
    let conv = owners_conversation(&app).await;
    // A sandbox of a member of the same organization, and one of another organization: the
    // answer is the one an unknown id gets, and nothing is stored in the owner's conversation.
    let member = app.register_sandbox(app.org, app.member.user_id).await;
    let outsider = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    for (i, session) in [member, outsider].iter().enumerate() {
        let (status, body) = app
            .post_webhook(
                &webhook_events_path(&conv),
                Some(session),
                format!("[{}]", event(&format!("forged-{i}"))),
            )
            .await;
        assert_eq!(
            (status, &body),
            (200, &json!({"success": true})),
            "{backend}: {i}"
        );
        let info = json!({"id": conv, "title": "forged", "execution_status": "error"}).to_string();
        let (status, body) = app
            .post_webhook("/api/v1/webhooks/conversations", Some(session), info)
            .await;
        assert_eq!(
            (status, &body),
            (200, &json!({"success": true})),
            "{backend}: {i}"
        );
    }
    assert_eq!(event_count(&app, &conv).await, 1, "{backend}");
    let stored = app.conversation(&conv).await.unwrap();
    assert_eq!(stored.owner_id, app.owner.user_id);
    assert_ne!(stored.title.as_deref(), Some("forged"), "{backend}");
    assert_ne!(
        stored.execution_status.as_deref(),
        Some("error"),
        "{backend}"
    );
}
