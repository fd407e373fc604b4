//! A conversation keeps what it was after its sandbox ends (issue 31), on both backends, with
//! sandboxes Switchboard runs (the stand-in agent server, real processes): a conversation whose
//! agent server reported its LLM model, metrics (`stats`, `full_state`), title and
//! `finished` still answers them, with `sandbox_status` `PAUSED` after a pause and `MISSING`
//! after its sandbox is deleted or its process killed behind Switchboard's back, in the batch
//! get, the search (with and without filters) and
//! the count. A `deleting` `ConversationInfo` brings its title but never its status, and
//! creates nothing; the same info twice moves nothing.

use crate::common;

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app};
use common::*;
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

on_both_backends!(kept_after_pause_and_delete);

const BASE: &str = "/api/v1/app-conversations";

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A running sandbox for `key`: its id and session key.
async fn running_sandbox(app: &SandboxApp, key: &str) -> (String, String) {
    let started = app.start(key, None).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(key, &id, "RUNNING").await;
    (id, info["session_api_key"].as_str().unwrap().to_owned())
}

/// The agent server's `ConversationInfo` as its conversations webhook sends it (the parts
/// read, and some others).
fn info(id: &str, title: Option<&str>, status: &str, model: &str, prompt_tokens: u64) -> String {
    json!({"id": id, "title": title, "execution_status": status, "max_iterations": 500,
        "agent": {"kind": "Agent", "llm": {"model": model, "api_key": null}},
        "stats": {"usage_to_metrics": {"agent": metrics(prompt_tokens)}}, "metrics": null})
    .to_string()
}

/// The info the agent server sends as it deletes the conversation (after the run: its title,
/// the switched model, the run's stats).
fn deleting(id: &str) -> String {
    info(
        id,
        Some("Say hello"),
        "deleting",
        "openai/switched-model",
        300,
    )
}

/// One usage's `Metrics` as the agent server's `stats` hold it.
fn metrics(prompt_tokens: u64) -> Value {
    json!({"model_name": "openai/fake-model", "accumulated_cost": 0.5, "max_budget_per_task": null,
        "accumulated_token_usage": {"model": "openai/fake-model", "prompt_tokens": prompt_tokens,
            "completion_tokens": 30, "cache_read_tokens": 0, "cache_write_tokens": 0,
            "reasoning_tokens": 0, "context_window": 0, "per_turn_token": 110, "response_id": ""},
        "costs": [], "response_latencies": [], "token_usages": []})
}

fn update(n: u32, key: &str, value: Value) -> String {
    json!({"id": new_id(), "timestamp": format!("2026-11-29T07:00:{n:02}"), "source": "environment",
        "key": key, "value": value, "kind": "ConversationStateUpdateEvent"})
    .to_string()
}

/// One run as the agent server reports it: running, two `stats`, finished, the `full_state`
/// snapshot after the run (another model than at the start: a switch).
async fn run(app: &TestApp, session: &str, id: &str) {
    let full = json!({"id": id, "execution_status": "finished",
        "agent": {"llm": {"model": "openai/switched-model"}},
        "stats": {"usage_to_metrics": {"agent": metrics(300)}}});
    app.ingest(
        session,
        id,
        &[
            &update(1, "execution_status", json!("running")),
            &update(
                2,
                "stats",
                json!({"usage_to_metrics": {"agent": metrics(100)}}),
            ),
            &update(
                3,
                "stats",
                json!({"usage_to_metrics": {"agent": metrics(200)}}),
            ),
            &update(4, "execution_status", json!("finished")),
            &update(5, "full_state", full),
        ],
    )
    .await;
}

async fn webhook(app: &TestApp, session: &str, body: String) {
    let (status, got) = app
        .post_webhook("/api/v1/webhooks/conversations", Some(session), body)
        .await;
    assert_eq!(status, 200, "{}: {got}", app.backend);
}

/// What the conversation answers through the batch get, the search (plain, by title, by
/// sandbox) and the count, which must agree; the batch get's item.
async fn answers(app: &TestApp, key: &str, id: &str, sandbox: &str) -> Value {
    let (status, got) = app.get_query(BASE, key, &[("ids", id.to_owned())]).await;
    assert_eq!(status, 200, "{got}");
    let one = got[0].clone();
    let mut filters = vec![vec![], vec![("sandbox_id__eq", sandbox.to_owned())]];
    if one["title"].is_string() {
        filters.push(vec![("title__contains", "hello".to_owned())]);
    }
    for filter in filters {
        let (status, page) = app.get_query(&format!("{BASE}/search"), key, &filter).await;
        assert_eq!(status, 200, "{page}");
        let found: Vec<&Value> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["id"] == one["id"])
            .collect();
        assert_eq!(found, [&one], "{}: search {filter:?}", app.backend);
        let (status, n) = app.get_query(&format!("{BASE}/count"), key, &filter).await;
        assert_eq!(
            (status, n.as_u64()),
            (200, Some(page["items"].as_array().unwrap().len() as u64)),
            "{}: count {filter:?}",
            app.backend
        );
    }
    one
}

/// The fields a conversation keeps, as issue 31 lists them.
#[track_caller]
fn assert_kept(v: &Value, sandbox_status: &str, backend: Backend) {
    assert_eq!(v["execution_status"], "finished", "{backend}: {v}");
    assert_eq!(v["sandbox_status"], sandbox_status, "{backend}: {v}");
    assert_eq!(v["title"], "Say hello", "{backend}");
    assert_eq!(v["llm_model"], "openai/switched-model", "{backend}");
    let m = &v["metrics"];
    assert_eq!(
        (
            &m["model_name"],
            &m["accumulated_cost"],
            &m["accumulated_token_usage"]["prompt_tokens"],
            &m["accumulated_token_usage"]["completion_tokens"],
        ),
        (&json!("default"), &json!(0.5), &json!(300), &json!(30)),
        "{backend}: {m}"
    );
    if sandbox_status != "RUNNING" {
        assert_eq!(
            (&v["conversation_url"], &v["session_api_key"]),
            (&Value::Null, &Value::Null),
            "{backend}"
        );
    }
}

async fn kept_after_pause_and_delete(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let owner = app.owner.key.clone();
    let (paused_sb, paused_session) = running_sandbox(&app, &owner).await;
    let (deleted_sb, deleted_session) = running_sandbox(&app, &owner).await;
    let (lost_sb, lost_session) = running_sandbox(&app, &owner).await;
    let (paused, deleted, lost) = (new_id(), new_id(), new_id());

    for (sb, session, id) in [
        (&paused_sb, &paused_session, &paused),
        (&deleted_sb, &deleted_session, &deleted),
        (&lost_sb, &lost_session, &lost),
    ] {
        // Created by its webhook (idle, no title yet): the model of its agent.
        webhook(
            &app,
            session,
            info(id, None, "idle", "openai/fake-model", 0),
        )
        .await;
        let v = answers(&app, &owner, id, sb).await;
        assert_eq!(
            (&v["execution_status"], &v["llm_model"], &v["title"]),
            (&json!("idle"), &json!("openai/fake-model"), &Value::Null),
            "{backend}"
        );
        assert_eq!(v["metrics"]["accumulated_token_usage"]["prompt_tokens"], 0);
        run(&app, session, id).await;
        // The agent server deletes the conversation (the SDK's close): its title comes, its
        // `deleting` status does not.
        webhook(&app, session, deleting(id)).await;
        let v = answers(&app, &owner, id, sb).await;
        assert_kept(&v, "RUNNING", backend);
        assert!(v["conversation_url"].is_string(), "{backend}");
    }
    // The same info again changes nothing, not even `updated_at`; a `deleting` info of a
    // conversation Switchboard does not know creates nothing.
    let before = answers(&app, &owner, &paused, &paused_sb).await;
    webhook(&app, &paused_session, deleting(&paused)).await;
    let after = answers(&app, &owner, &paused, &paused_sb).await;
    assert_eq!(before["updated_at"], after["updated_at"], "{backend}");
    let stranger = new_id();
    webhook(&app, &paused_session, deleting(&stranger)).await;
    let (_, got) = app.get_query(BASE, &owner, &[("ids", stranger)]).await;
    assert_eq!(got, json!([null]), "{backend}");

    // Paused: PAUSED, and what the conversation was.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{paused_sb}/pause"),
            Some(&owner),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    assert_kept(
        &answers(&app, &owner, &paused, &paused_sb).await,
        "PAUSED",
        backend,
    );

    // Deleted: MISSING, and what the conversation was; the admin sees the same.
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{deleted_sb}"),
            Some(&owner),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    assert_eq!(app.info(&owner, &deleted_sb).await, Value::Null);
    for key in [&owner, &app.admin.key] {
        assert_kept(
            &answers(&app, key, &deleted, &deleted_sb).await,
            "MISSING",
            backend,
        );
    }

    // Lost: its process killed behind Switchboard's back, found MISSING by reconciliation.
    rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(app.process(&lost_sb).pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    app.wait_status(&owner, &lost_sb, "MISSING").await;
    assert_kept(
        &answers(&app, &owner, &lost, &lost_sb).await,
        "MISSING",
        backend,
    );
}
