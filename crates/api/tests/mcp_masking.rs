//! MCP credentials (issue 38), on both backends, the real app with the installation key and
//! real sandboxes (the stand-in agent server): an owner stores the organization's MCP servers
//! with a credential in every place one goes (a URL's user part, a query parameter, a server's
//! `api_key`, a stdio server's `args` and `env`, a header); no route a member reads shows any
//! of them (the organization's settings, their own settings, `users/me`, their start task and
//! conversation), nor the answers the owner and admin get; the configuration sent back as it
//! was answered keeps every credential (what the agent server of a member's start receives,
//! and what the organization's defaults hold), and a credential does not follow a server whose
//! address changed. A member's own configuration keeps its credentials the same way.

use crate::common;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

on_both_backends!(
    members_never_read_an_mcp_credential,
    a_round_trip_keeps_every_credential
);

const START: &str = "/api/v1/app-conversations";
const MASK: &str = "**********";

const USERINFO_PW: &str = "pw-Userinfo-4b1e9a";
const QUERY_KEY: &str = "qk-Query-7c2d8f";
const SSE_API_KEY: &str = "sk-Sse-3e5a1c";
const ACCESS_TOKEN: &str = "at-Access-9d4b2e";
const ARG_KEY: &str = "sk-Arg-6f1c3a";
const ARG_TOKEN: &str = "tok-Inline-2a7e5d";
const ARG_URL_PW: &str = "pw-ArgUrl-8b3f1e";
const ENV_VALUE: &str = "env-Value-5c9a2b";
const HEADER_VALUE: &str = "hdr-Value-1d6e4f";

/// Every credential of [`org_mcp`].
const SECRETS: [&str; 9] = [
    USERINFO_PW,
    QUERY_KEY,
    SSE_API_KEY,
    ACCESS_TOKEN,
    ARG_KEY,
    ARG_TOKEN,
    ARG_URL_PW,
    ENV_VALUE,
    HEADER_VALUE,
];

/// MCP servers with a credential in every place one goes.
fn org_mcp() -> Value {
    json!({
        "sse_servers": [{
            "url": format!("https://alice:{USERINFO_PW}@mcp.example.test/sse?apikey={QUERY_KEY}&region=eu"),
            "api_key": SSE_API_KEY,
        }],
        "shttp_servers": [{
            "url": format!("https://mcp.example.test/mcp?access_token={ACCESS_TOKEN}"),
            "timeout": 30,
        }],
        "stdio_servers": [{
            "name": "tools",
            "command": "npx",
            "args": ["-y", "@acme/mcp", "--api-key", ARG_KEY, format!("--token={ARG_TOKEN}"),
                     format!("https://bot:{ARG_URL_PW}@git.example.test/r.git")],
            "env": {"ACME_KEY": ENV_VALUE},
        }],
        "mcpServers": {"remote": {
            "url": "https://remote.example.test/mcp",
            "headers": {"Authorization": format!("Bearer {HEADER_VALUE}")},
        }},
    })
}

/// The app with sandboxes and the installation key; no LLM of the operator's (the
/// organization's default names the model).
async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| s).await
}

/// `GET path` as `key`: must be 200; the raw body, which must hold no credential.
async fn read_clean(app: &SandboxApp, key: &str, path: &str) -> String {
    let r = app.get(path, Some(key)).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(status, 200, "{}: {path}: {text}", app.backend);
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "{}: {path} shows {secret}: {text}",
            app.backend
        );
    }
    text
}

/// `PATCH /api/organizations/{org}/settings` as `key` with `mcp_config`: must be 200; the
/// answer holds no credential.
async fn save_org_mcp(app: &SandboxApp, key: &str, mcp: &Value) -> Value {
    let path = format!("/api/organizations/{}/settings", app.org);
    let body = json!({"agent_settings_diff": {"mcp_config": mcp}});
    let r = app
        .req(Method::PATCH, &path, Some(key))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(status, 200, "{}: {text}", app.backend);
    for secret in SECRETS {
        assert!(!text.contains(secret), "{}: {secret}: {text}", app.backend);
    }
    serde_json::from_str(&text).unwrap()
}

/// The organization's MCP configuration as shown to `key` (masked).
async fn shown_org_mcp(app: &SandboxApp, key: &str) -> Value {
    let path = format!("/api/organizations/{}/settings", app.org);
    let text = read_clean(app, key, &path).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    v["agent_settings"]["mcp_config"].clone()
}

/// The organization's MCP configuration as a start takes it (unmasked).
async fn stored_org_mcp(app: &SandboxApp) -> Value {
    let (services, org) = (app.services.clone(), app.org);
    tokio::task::spawn_blocking(move || services.org_defaults().for_start(org))
        .await
        .unwrap()
        .unwrap()
        .mcp_config
        .unwrap_or(Value::Null)
}

/// Starts as `key` and waits for READY or ERROR (60 s): the final task.
async fn run(app: &SandboxApp, key: &str) -> Value {
    let body = json!({"initial_message": {"role": "user", "run": false,
                      "content": [{"type": "text", "text": "hi"}]}});
    let (status, task) = app.call(Method::POST, START, Some(key), Some(body)).await;
    assert_eq!(status, 200, "{}: {task}", app.backend);
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let path = format!("{START}/start-tasks?ids={id}");
        let (status, body) = app.call(Method::GET, &path, Some(key), None).await;
        assert_eq!(status, 200, "{body}");
        let t = body[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(Instant::now() < deadline, "{}: stuck: {t}", app.backend);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn members_never_read_an_mcp_credential(backend: Backend) {
    let app = app(backend).await;
    let (owner, admin, member) = (
        app.owner.key.clone(),
        app.admin.key.clone(),
        app.member.key.clone(),
    );
    save_org_mcp(&app, &owner, &org_mcp()).await;
    let model = json!({"agent_settings_diff": {"llm": {"model": "openai/fake-model"}}});
    let path = format!("/api/organizations/{}/settings", app.org);
    let (status, body) = app
        .call(Method::PATCH, &path, Some(&owner), Some(model))
        .await;
    assert_eq!(status, 200, "{backend}: {body}");
    // Every role sees the servers, none their credentials.
    let shown = shown_org_mcp(&app, &member).await;
    assert_eq!(
        shown["sse_servers"][0],
        json!({"url": format!("https://{MASK}@mcp.example.test/sse?apikey={MASK}&region=eu"),
               "api_key": null}),
        "{backend}"
    );
    assert_eq!(
        shown["stdio_servers"][0]["args"],
        json!([
            "-y",
            "@acme/mcp",
            "--api-key",
            MASK,
            format!("--token={MASK}"),
            format!("https://{MASK}@git.example.test/r.git")
        ]),
        "{backend}"
    );
    assert_eq!(
        shown["mcpServers"]["remote"],
        json!({"url": "https://remote.example.test/mcp", "headers": {"Authorization": null}}),
        "{backend}"
    );
    for key in [&owner, &admin] {
        assert_eq!(shown_org_mcp(&app, key).await, shown, "{backend}");
    }
    // The owner saves what they were shown: nothing is lost.
    save_org_mcp(&app, &owner, &shown).await;
    assert_eq!(stored_org_mcp(&app).await, org_mcp(), "{backend}");
    // A member's start: the agent server gets every credential (the sandbox holds them)...
    let done = run(&app, &member).await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    let url = done["agent_server_url"].as_str().unwrap();
    let creates: Vec<Value> = reqwest::get(format!("{url}/standin/creates"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(creates.len(), 1, "{backend}");
    assert_eq!(creates[0]["agent"]["mcp_config"], org_mcp(), "{backend}");
    // ... and no route the member reads shows one.
    let (task, conversation) = (
        done["id"].as_str().unwrap(),
        done["app_conversation_id"].as_str().unwrap(),
    );
    for path in [
        format!("/api/organizations/{}/settings", app.org),
        format!("/api/organizations/{}/me", app.org),
        "/api/v1/settings".to_owned(),
        "/api/v1/users/me".to_owned(),
        format!("{START}/start-tasks?ids={task}"),
        format!("{START}/start-tasks/search"),
        format!("{START}/search"),
        format!("{START}?ids={conversation}"),
    ] {
        read_clean(&app, &member, &path).await;
    }
}

async fn a_round_trip_keeps_every_credential(backend: Backend) {
    let app = app(backend).await;
    let (owner, admin, member) = (
        app.owner.key.clone(),
        app.admin.key.clone(),
        app.member.key.clone(),
    );
    save_org_mcp(&app, &owner, &org_mcp()).await;
    // An admin adds a server, changes a timeout and moves the remote server elsewhere, around
    // the masked values.
    let mut edited = shown_org_mcp(&app, &admin).await;
    edited["shttp_servers"][0]["timeout"] = json!(60);
    edited["sse_servers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"url": "https://new.example.test/sse", "api_key": "new-key-1"}));
    edited["mcpServers"]["remote"]["url"] = json!("https://elsewhere.example.test/mcp");
    save_org_mcp(&app, &admin, &edited).await;
    let mut want = org_mcp();
    want["shttp_servers"][0]["timeout"] = json!(60);
    want["sse_servers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"url": "https://new.example.test/sse", "api_key": "new-key-1"}));
    // The moved server keeps nothing of its credential.
    want["mcpServers"]["remote"] = json!({"url": "https://elsewhere.example.test/mcp",
                                          "headers": {"Authorization": null}});
    assert_eq!(stored_org_mcp(&app).await, want, "{backend}");
    // A member's own MCP servers: masked in their settings, kept when sent back as shown.
    let own = json!({"agent_settings_diff": {"mcp_config": org_mcp()}});
    let (status, body) = app
        .call(Method::POST, "/api/v1/settings", Some(&member), Some(own))
        .await;
    assert_eq!(status, 200, "{backend}: {body}");
    let text = read_clean(&app, &member, "/api/v1/settings").await;
    let shown: Value = serde_json::from_str(&text).unwrap();
    let back =
        json!({"agent_settings_diff": {"mcp_config": shown["agent_settings"]["mcp_config"]}});
    let (status, body) = app
        .call(Method::POST, "/api/v1/settings", Some(&member), Some(back))
        .await;
    assert_eq!(status, 200, "{backend}: {body}");
    read_clean(&app, &member, "/api/v1/users/me").await;
    let (services, org, user) = (app.services.clone(), app.org, app.member.user_id);
    let stored =
        tokio::task::spawn_blocking(move || services.user_settings().mcp_config(org, user))
            .await
            .unwrap()
            .unwrap();
    assert_eq!(stored, Some(org_mcp()), "{backend}");
}
