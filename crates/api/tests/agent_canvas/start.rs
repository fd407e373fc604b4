//! A start naming `agent_profile_id`, as Agent Canvas sends it (the cloud branch of its
//! `createConversation`), against real sandboxes (the stand-in agent server): the profile's LLM
//! profile, system message suffix, tools and secret allow-list reach the agent server's create
//! request, and the conversation answers `launched_agent_profile` as the client reads it. An
//! unknown profile, a dangling LLM profile and an ACP profile end the task in ERROR saying so.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

use crate::common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use crate::{fixture, has_reads, request};

on_both_backends!(a_start_launches_from_the_profile);

const PROFILE_KEY: &str = "sk-fast-profile-Rq8Lm3Vz";
const TEAM_KEY: &str = "sk-team-profile-Hc5Wq2Tn";

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| {
        s.with_llm(LlmConfig {
            model: Some("openai/operator-model".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-operator".into()),
            stream: false,
        })
    })
    .await
}

/// `method path` as `key` with `Authorization: Bearer`, as the client sends it.
async fn call(
    app: &SandboxApp,
    m: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = app
        .client
        .request(m, format!("{}{path}", app.base))
        .header("Authorization", format!("Bearer {key}"));
    if let Some(b) = body {
        r = r.json(&b);
    }
    crate::common::status_json(r.send().await.unwrap()).await
}

/// Posts the client's start body naming `profile_id`; waits for READY or ERROR (60 s).
async fn start_from(app: &SandboxApp, key: &str, profile_id: &str) -> Value {
    let f = fixture("conversation_start.json");
    let req = request(&f, "start_from_profile");
    let mut body = req["body"].clone();
    body["agent_profile_id"] = json!(profile_id);
    let (code, task) = call(
        app,
        Method::POST,
        "/api/v1/app-conversations",
        key,
        Some(body),
    )
    .await;
    assert_eq!(code, 200, "{}: {task}", app.backend);
    has_reads(req, &task, "start");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, t) = call(
            app,
            Method::GET,
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            key,
            None,
        )
        .await;
        let t = t[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(Instant::now() < deadline, "{}: stuck: {t}", app.backend);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn save_profile(app: &SandboxApp, key: &str, name: &str, body: Value) -> String {
    let (code, e) = call(
        app,
        Method::POST,
        &format!("/api/agent-profiles/{name}"),
        key,
        Some(body),
    )
    .await;
    assert_eq!(code, 201, "{e}");
    let (_, one) = call(
        app,
        Method::GET,
        &format!("/api/agent-profiles/{name}"),
        key,
        None,
    )
    .await;
    one["profile"]["id"].as_str().unwrap().to_owned()
}

async fn a_start_launches_from_the_profile(backend: Backend) {
    let app = app(backend).await;
    let key = app.member.key.clone();
    // The member's LLM profile `fast`, and two secrets of which the profile allows one.
    let (code, e) = call(
        &app,
        Method::POST,
        "/api/v1/settings/profiles/fast",
        &key,
        Some(json!({"llm": {"model": "openai/fast-model", "api_key": PROFILE_KEY}})),
    )
    .await;
    assert_eq!(code, 201, "{e}");
    for (name, value) in [("KEEP_ME", "kept-value-1"), ("NOT_ME", "dropped-value-2")] {
        let (code, e) = call(
            &app,
            Method::POST,
            "/api/v1/secrets",
            &key,
            Some(json!({"name": name, "value": value})),
        )
        .await;
        assert_eq!(code, 201, "{e}");
    }
    let f = fixture("agent_profiles.json");
    let mut body = request(&f, "save_openhands")["body"].clone();
    body["tools"] = json!([{"name": "terminal"}, {"name": "file_editor", "params": {"x": 1}}]);
    body["secret_refs"] = json!(["KEEP_ME"]);
    let id = save_profile(&app, &key, "coder", body).await;

    let done = start_from(&app, &key, &id).await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    assert_eq!(done["request"]["agent_profile_id"], json!(id));
    let url = done["agent_server_url"].as_str().unwrap();
    let creates: Vec<Value> = reqwest::get(format!("{url}/standin/creates"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let c = creates.last().unwrap();
    let agent = &c["agent"];
    assert_eq!(
        (&agent["llm"]["model"], &agent["llm"]["api_key"]),
        (&json!("openai/fast-model"), &json!(PROFILE_KEY)),
        "{backend}: the profile's LLM profile: {c}"
    );
    assert_eq!(
        agent["agent_context"]["system_message_suffix"],
        "Answer in French."
    );
    assert_eq!(
        agent["tools"],
        json!([{"name": "terminal"}, {"name": "file_editor", "params": {"x": 1}}])
    );
    assert_eq!(c["secrets"]["KEEP_ME"]["value"], "kept-value-1", "{c}");
    assert!(
        c["secrets"].get("NOT_ME").is_none(),
        "{backend}: not in secret_refs: {c}"
    );

    // The conversation, as the client reads it.
    let conv = done["app_conversation_id"].as_str().unwrap();
    let read = request(&fixture("conversation_start.json"), "conversation").clone();
    let (code, got) = call(
        &app,
        Method::GET,
        &format!("/api/v1/app-conversations?ids={conv}"),
        &key,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        got[0]["launched_agent_profile"],
        json!({"agent_profile_id": id, "revision": 0}),
        "{backend}: {} {got}",
        read["path"]
    );

    // A reference to an LLM profile of the organization's (what the client lists when an
    // organization is picked); a member's own profile of the same name wins.
    let org = app.org.to_string();
    let admin = app.admin.key.clone();
    for (name, model) in [
        ("team-llm", "openai/team-model"),
        ("fast", "openai/org-fast"),
    ] {
        let (code, e) = call(&app, Method::POST, &format!("/api/organizations/{org}/profiles/{name}"), &admin,
            Some(json!({"llm": {"model": model, "base_url": "https://team.example.test/v1", "api_key": TEAM_KEY}}))).await;
        assert_eq!(code, 201, "{e}");
    }
    for (reference, model, api_key) in [
        ("team-llm", "openai/team-model", TEAM_KEY),
        ("fast", "openai/fast-model", PROFILE_KEY),
    ] {
        let pid = save_profile(
            &app,
            &key,
            "teamwork",
            json!({"llm_profile_ref": reference}),
        )
        .await;
        let done = start_from(&app, &key, &pid).await;
        assert_eq!(done["status"], "READY", "{backend}: {done}");
        let url = done["agent_server_url"].as_str().unwrap();
        let creates: Vec<Value> = reqwest::get(format!("{url}/standin/creates"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let llm = &creates.last().unwrap()["agent"]["llm"];
        assert_eq!(
            (&llm["model"], &llm["api_key"]),
            (&json!(model), &json!(api_key)),
            "{backend}: {reference}"
        );
    }

    // What cannot launch ends in ERROR, saying why.
    let missing = uuid::Uuid::new_v4().to_string();
    let dangling = save_profile(&app, &key, "dangling", json!({"llm_profile_ref": "gone"})).await;
    let acp = save_profile(&app, &key, "acp", json!({"agent_kind": "acp"})).await;
    for (pid, says) in [
        (
            missing.clone(),
            format!("Agent profile with id '{missing}' not found"),
        ),
        (dangling, "LLM profile 'gone' not found".to_owned()),
        (acp, "this server starts OpenHands agents only".to_owned()),
    ] {
        let t = start_from(&app, &key, &pid).await;
        assert_eq!(t["status"], "ERROR", "{backend}: {t}");
        assert!(
            t["detail"].as_str().unwrap().contains(&says),
            "{backend}: {t}"
        );
    }
    // Another member's profile id is unknown to this one.
    let t = start_from(&app, &app.owner.key.clone(), &id).await;
    assert_eq!(t["status"], "ERROR", "{backend}: {t}");
}
