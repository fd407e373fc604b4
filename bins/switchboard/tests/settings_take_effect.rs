//! Settings that take effect or are refused (issue 36; docs/settings-fields.md), through the
//! real binary on both backends with the stand-in agent server:
//! - `--llm-model-allow` holds where a model is saved (a member's settings, their LLM profile,
//!   the organization's profile and default: 422 at the model's field, naming the rule), in a
//!   start's `llm_model` (422), and for a model stored before the rule narrowed (the start is
//!   a 400 before its task is written); `serve` refuses a `--llm-model` it does not allow;
//! - `default_sandbox_spec_id` is the spec of a start's new sandbox when the request names
//!   none; a spec the operator removed ends the start in `ERROR` naming the setting.
//!
//! The git preferences (identity, clone depth) and the organization's conversation settings
//! are checked where the clone and the start's body are: `user_settings/clone.rs`,
//! `user_settings/org_defaults.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const ALLOW: &str = "anthropic/*,openai/gpt-5*";

#[test]
fn settings_take_effect_sqlite() {
    settings_take_effect(Backend::Sqlite);
}

#[test]
fn settings_take_effect_postgres() {
    settings_take_effect(Backend::Postgres);
}

/// Two specs of the stand-in agent server, `standin` (the default) and `second`.
fn specs_file(dir: &std::path::Path) -> String {
    let path = dir.join("specs.json");
    let command = json!([python(), switchboard_testkit::standin_agent_server()]);
    let specs =
        json!([{"id": "standin", "command": command}, {"id": "second", "command": command}]);
    std::fs::write(&path, specs.to_string()).unwrap();
    path.display().to_string()
}

fn call(server: &Server, method: &str, path: &str, key: &str, body: Value) -> (u16, Value) {
    let req = match method {
        "POST" => client().post(server.url(path)),
        "PATCH" => client().patch(server.url(path)),
        _ => client().get(server.url(path)),
    };
    let req = req.header("X-Access-Token", key);
    send_json(if method == "GET" {
        req
    } else {
        req.json(&body)
    })
}

/// The 422 entry of a refused model: at `loc`, naming the rule.
fn refused_at(answer: &(u16, Value), loc: Value, what: &str) {
    let (code, body) = answer;
    assert_eq!(*code, 422, "{what}: {body}");
    let e = &body["detail"][0];
    assert_eq!(
        (&e["type"], &e["loc"]),
        (&json!("value_error"), &loc),
        "{what}: {body}"
    );
    let msg = e["msg"].as_str().unwrap();
    assert!(
        msg.contains("is not allowed on this server") && msg.contains(ALLOW),
        "{what}: {msg}"
    );
}

/// Starts a conversation of `key` with `body`; waits for READY or ERROR and answers the task.
fn start(server: &Server, key: &str, body: Value) -> Value {
    let (code, task) = call(server, "POST", "/api/v1/app-conversations", key, body);
    assert_eq!(code, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, t) = call(
            server,
            "GET",
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            key,
            Value::Null,
        );
        if matches!(t[0]["status"].as_str(), Some("READY" | "ERROR")) {
            return t[0].clone();
        }
        assert!(Instant::now() < deadline, "stuck: {t}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn settings_take_effect(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let specs = specs_file(data.path());
    let base = [
        "--data-dir",
        &data_dir,
        "--sandbox-specs",
        &specs,
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
    ];

    // Before the rule: the owner stores a model the rule will not allow.
    let first = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: base.to_vec(),
            ..Default::default()
        },
    );
    let key = first.bootstrap_key();
    let org = first.bootstrapped.as_ref().unwrap()["org_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, b) = call(
        &first,
        "POST",
        "/api/v1/settings",
        &key,
        json!({"agent_settings_diff": {"llm": {"model": "openai/gpt-4o"}}}),
    );
    assert_eq!(code, 200, "{backend}: {b}");
    first.stop(Duration::from_secs(30));

    // `serve` refuses an operator default the rule does not allow.
    let mut c = command(data.path());
    c.args(["serve", "--bind", "127.0.0.1:0", "--database-url", db.url()])
        .args(base)
        .args(["--llm-model-allow", ALLOW, "--llm-model", "openai/gpt-4o"]);
    let err = expect_error(&output(c));
    assert!(
        err.contains("--llm-model") && err.contains("is not allowed"),
        "{backend}: {err}"
    );

    let mut args = base.to_vec();
    args.extend([
        "--llm-model-allow",
        ALLOW,
        "--llm-model",
        "openai/gpt-5-mini",
    ]);
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args,
            ..Default::default()
        },
    );
    // The model stored before the rule: the start is refused before its task is written.
    let (code, b) = call(
        &server,
        "POST",
        "/api/v1/app-conversations",
        &key,
        json!({}),
    );
    assert_eq!(code, 400, "{backend}: {b}");
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .contains("'openai/gpt-4o' is not allowed"),
        "{backend}: {b}"
    );
    let (_, tasks) = call(
        &server,
        "GET",
        "/api/v1/app-conversations/start-tasks/count",
        &key,
        Value::Null,
    );
    assert_eq!(tasks, json!(0), "{backend}: no task was written");

    // Every place a model is saved refuses one the rule does not allow, and stores nothing.
    let bad = json!({"model": "openai/gpt-4o"});
    refused_at(
        &call(
            &server,
            "POST",
            "/api/v1/settings",
            &key,
            json!({"agent_settings_diff": {"llm": bad}}),
        ),
        json!(["body", "agent_settings_diff", "llm", "model"]),
        "settings",
    );
    refused_at(
        &call(
            &server,
            "POST",
            "/api/v1/settings/profiles/mine",
            &key,
            json!({"llm": bad}),
        ),
        json!(["body", "llm", "model"]),
        "a member's profile",
    );
    refused_at(
        &call(
            &server,
            "POST",
            &format!("/api/organizations/{org}/profiles/team"),
            &key,
            json!({"llm": bad}),
        ),
        json!(["body", "llm", "model"]),
        "an organization profile",
    );
    refused_at(
        &call(
            &server,
            "PATCH",
            &format!("/api/organizations/{org}/settings"),
            &key,
            json!({"agent_settings_diff": {"llm": bad}}),
        ),
        json!(["body", "agent_settings_diff", "llm", "model"]),
        "the organization's default",
    );
    refused_at(
        &call(
            &server,
            "POST",
            "/api/v1/app-conversations",
            &key,
            json!({"llm_model": "openai/gpt-4o"}),
        ),
        json!(["body", "llm_model"]),
        "a start's llm_model",
    );
    let (_, profiles) = call(
        &server,
        "GET",
        "/api/v1/settings/profiles",
        &key,
        Value::Null,
    );
    assert_eq!(profiles["profiles"], json!([]), "{backend}: {profiles}");

    // An allowed model is saved; the member's default spec takes a start's new sandbox.
    let (code, b) = call(
        &server,
        "POST",
        "/api/v1/settings",
        &key,
        json!({"agent_settings_diff": {"llm": {"model": "anthropic/claude-sonnet-4-5"}},
               "default_sandbox_spec_id": "second"}),
    );
    assert_eq!(code, 200, "{backend}: {b}");
    let task = start(&server, &key, json!({}));
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let sandbox = task["sandbox_id"].as_str().unwrap();
    let (_, sandboxes) = call(
        &server,
        "GET",
        &format!("/api/v1/sandboxes?id={sandbox}"),
        &key,
        Value::Null,
    );
    assert_eq!(
        sandboxes[0]["sandbox_spec_id"], "second",
        "{backend}: {sandboxes}"
    );
    // The request's spec wins over the member's default.
    let task = start(&server, &key, json!({"sandbox_spec_id": "standin"}));
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let (_, sandboxes) = call(
        &server,
        "GET",
        &format!(
            "/api/v1/sandboxes?id={}",
            task["sandbox_id"].as_str().unwrap()
        ),
        &key,
        Value::Null,
    );
    assert_eq!(sandboxes[0]["sandbox_spec_id"], "standin", "{backend}");
    // A default spec this server does not have: the start says which setting to change.
    let (code, b) = call(
        &server,
        "POST",
        "/api/v1/settings",
        &key,
        json!({"default_sandbox_spec_id": "removed-by-the-operator"}),
    );
    assert_eq!(code, 200, "{backend}: {b}");
    let task = start(&server, &key, json!({}));
    assert_eq!(task["status"], "ERROR", "{backend}: {task}");
    let detail = task["detail"].as_str().unwrap();
    assert!(
        detail.contains("'removed-by-the-operator'") && detail.contains("default_sandbox_spec_id"),
        "{backend}: {detail}"
    );
}
