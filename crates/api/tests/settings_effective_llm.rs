//! The LLM a member's settings show (issue 31): where the member set none, the one a start
//! would use (the organization's default, else the operator's `--llm-*`), as set
//! (`llm_api_key_set: true`, model, base URL, never a key) with `llm_source` saying whose;
//! where they set their own, theirs. And `GET /api/keys/llm/byor`: the caller's own key only.
//! Both backends, the real app with the installation key (sandboxes configured, none run).

use crate::common;

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use common::status_json;

const OPERATOR_KEY: &str = "sk-operator-3c1d9e";
const ORG_KEY: &str = "sk-org-77aa10";
const OWN_KEY: &str = "sk-member-own-5b2e";

async fn app(backend: Backend, operator: bool) -> SandboxApp {
    spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], move |s| {
        if operator {
            s.with_llm(LlmConfig {
                model: Some("openai/operator-model".into()),
                base_url: Some("http://operator.example.test/v1".into()),
                api_key: Some(OPERATOR_KEY.into()),
                stream: false,
                key_owner: Some("operator"),
            })
        } else {
            s
        }
    })
    .await
}

/// `GET /api/v1/settings` and `GET /api/v1/users/me` as `key`: (model, base URL, key set,
/// source), the same in both; no key of anyone's in either answer.
async fn shown(app: &SandboxApp, key: &str) -> (Value, Value, Value, Value) {
    let mut seen = Vec::new();
    for path in ["/api/v1/settings", "/api/v1/users/me"] {
        let r = app.req(Method::GET, path, Some(key)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{}: {path}", app.backend);
        let text = r.text().await.unwrap();
        for secret in [OPERATOR_KEY, ORG_KEY, OWN_KEY] {
            assert!(
                !text.contains(secret),
                "{}: {path} shows a key: {text}",
                app.backend
            );
        }
        let v: Value = serde_json::from_str(&text).unwrap();
        let llm = &v["agent_settings"]["llm"];
        seen.push((
            llm["model"].clone(),
            llm["base_url"].clone(),
            v["llm_api_key_set"].clone(),
            v["llm_source"].clone(),
        ));
    }
    assert_eq!(
        seen[0], seen[1],
        "{}: settings and users/me differ",
        app.backend
    );
    seen.remove(0)
}

async fn byor(app: &SandboxApp, key: &str) -> Value {
    let (status, body) = status_json(app.get("/api/keys/llm/byor", Some(key)).await).await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
    body
}

async fn post_settings(app: &SandboxApp, key: &str, llm: Value) {
    let body = json!({"agent_settings_diff": {"llm": llm}});
    let (status, got) =
        status_json(app.post_json("/api/v1/settings", Some(key), &body).await).await;
    assert_eq!(status, 200, "{}: {got}", app.backend);
}

async fn effective_llm_in_settings(backend: Backend) {
    let app = app(backend, true).await;
    let member = app.member.key.clone();
    // Nothing of the member's, nothing of the organization's: the operator's.
    assert_eq!(
        shown(&app, &member).await,
        (
            json!("openai/operator-model"),
            json!("http://operator.example.test/v1"),
            json!(true),
            json!("operator")
        )
    );
    assert_eq!(
        byor(&app, &member).await,
        json!({"key": null}),
        "{backend}: never the operator's key"
    );
    // The organization's default, set by its owner, comes first.
    let org = app.org.to_string();
    let patch = json!({"agent_settings_diff": {"llm": {"model": "openai/org-model",
        "base_url": "http://org.example.test/v1"}}, "llm_api_key": ORG_KEY});
    let r = app
        .req(
            Method::PATCH,
            &format!("/api/organizations/{org}/settings"),
            Some(&app.owner.key),
        )
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{backend}");
    assert_eq!(
        shown(&app, &member).await,
        (
            json!("openai/org-model"),
            json!("http://org.example.test/v1"),
            json!(true),
            json!("organization")
        )
    );
    assert_eq!(
        byor(&app, &member).await,
        json!({"key": null}),
        "{backend}: never the org's key"
    );
    // A model of the member's own: theirs, on the organization's endpoint and key.
    post_settings(&app, &member, json!({"model": "openai/mine"})).await;
    assert_eq!(
        shown(&app, &member).await,
        (
            json!("openai/mine"),
            json!("http://org.example.test/v1"),
            json!(true),
            json!("organization")
        )
    );
    // Their own key and endpoint: theirs entirely.
    post_settings(
        &app,
        &member,
        json!({"api_key": OWN_KEY, "base_url": "http://mine.example.test/v1"}),
    )
    .await;
    assert_eq!(
        shown(&app, &member).await,
        (
            json!("openai/mine"),
            json!("http://mine.example.test/v1"),
            json!(true),
            json!("user")
        )
    );
    assert_eq!(
        byor(&app, &member).await,
        json!({"key": OWN_KEY}),
        "{backend}"
    );
    // Another member of the organization still sees the organization's, and no key of anyone.
    assert_eq!(byor(&app, &app.admin.key).await, json!({"key": null}));
    assert_eq!(shown(&app, &app.admin.key).await.3, json!("organization"));
    // Unset again: back to the organization's.
    post_settings(
        &app,
        &member,
        json!({"api_key": null, "base_url": null, "model": null}),
    )
    .await;
    assert_eq!(shown(&app, &member).await.3, json!("organization"));
    assert_eq!(byor(&app, &member).await, json!({"key": null}));
    // Without a key, byor is 401 as every keyed route.
    assert_eq!(app.get("/api/keys/llm/byor", None).await.status(), 401);
}

async fn nothing_set_anywhere(backend: Backend) {
    let app = app(backend, false).await;
    assert_eq!(
        shown(&app, &app.member.key).await,
        (Value::Null, Value::Null, json!(false), Value::Null),
        "{backend}"
    );
    post_settings(
        &app,
        &app.member.key,
        json!({"model": "openai/only-a-model"}),
    )
    .await;
    assert_eq!(
        shown(&app, &app.member.key).await,
        (
            json!("openai/only-a-model"),
            Value::Null,
            json!(false),
            json!("user")
        ),
        "{backend}"
    );
}

on_both_backends!(effective_llm_in_settings, nothing_set_anywhere);
