//! A start naming `agent_profile_id`, as Agent Canvas sends it (the cloud branch of its
//! `createConversation`), against real sandboxes (the stand-in agent server): the profile's LLM
//! profile, system message suffix, tools, sub-agents, skills deny-list, condenser, tool
//! concurrency and secret allow-list reach the agent server's create request, an ACP profile
//! sends the ACP agent's settings, and the conversation answers `launched_agent_profile` as the
//! client reads it. An unknown profile and a dangling LLM profile end the task in ERROR saying
//! so. An LLM profile naming a provider connection sends the connection's key and base URL;
//! once the connection is deleted its lists say `provider_connection_broken` and a start from
//! it ends in ERROR saying why, with no other key sent. A key of the organization's (its LLM
//! profile's, a connection's) reaches the agent server only as an LLM pass-through token
//! (issue 38, `relayed.rs`).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

use crate::agent_canvas::relayed::{Chosen, assert_relayed};
use crate::agent_canvas::{fixture, has_reads, request};
use crate::common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};

on_both_backends!(
    a_start_launches_from_the_profile,
    a_provider_connection_supplies_the_key
);

const PROFILE_KEY: &str = "sk-fast-profile-Rq8Lm3Vz";
const TEAM_KEY: &str = "sk-team-profile-Hc5Wq2Tn";
const CONN_KEY: &str = "sk-connection-Jd4Pr7Wm";

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| {
        s.with_llm(LlmConfig {
            model: Some("openai/operator-model".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-operator".into()),
            stream: false,
            key_owner: Some("operator"),
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
    body["enable_sub_agents"] = json!(true);
    body["disabled_skills"] = json!(["noisy"]);
    body["condenser"] = json!({"max_size": 60, "keep_first": 4});
    body["tool_concurrency_limit"] = json!(2);
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
        agent["agent_context"],
        json!({"system_message_suffix": "Answer in French.", "disabled_skills": ["noisy"]})
    );
    assert_eq!(
        agent["tools"],
        json!([{"name": "terminal"}, {"name": "file_editor", "params": {"x": 1}}, {"name": "task_tool_set"}])
    );
    assert_eq!(agent["tool_concurrency_limit"], 2);
    let condenser = &agent["condenser"];
    assert_eq!(
        (
            &condenser["kind"],
            &condenser["max_size"],
            &condenser["keep_first"],
            &condenser["llm"]["usage_id"],
            &condenser["llm"]["api_key"]
        ),
        (
            &json!("LLMSummarizingCondenser"),
            &json!(60),
            &json!(4),
            &json!("condenser"),
            &json!(PROFILE_KEY)
        ),
        "{backend}: {c}"
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
    // The organization's key goes through the LLM pass-through (issue 38); the member's own
    // goes as it is.
    for (reference, model, theirs) in [
        ("team-llm", "openai/team-model", true),
        ("fast", "openai/fast-model", false),
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
        let c = creates.last().unwrap();
        if theirs {
            let team = Chosen {
                model,
                upstream: "https://team.example.test/v1",
                owner: "organization",
                key: TEAM_KEY,
            };
            assert_relayed(&app, c, &team);
        } else {
            let llm = &c["agent"]["llm"];
            assert_eq!(
                (&llm["model"], &llm["api_key"]),
                (&json!(model), &json!(PROFILE_KEY)),
                "{backend}: {reference}"
            );
        }
    }

    // An ACP profile: the ACP agent's settings, no LLM (no key) of Switchboard's.
    let acp = save_profile(
        &app,
        &key,
        "acp",
        json!({"agent_kind": "acp", "acp_model": "claude-opus-4-8", "acp_args": ["--x"]}),
    )
    .await;
    let done = start_from(&app, &key, &acp).await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    let url = done["agent_server_url"].as_str().unwrap();
    let creates: Vec<Value> = reqwest::get(format!("{url}/standin/creates"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let c = creates.last().unwrap();
    assert!(c.get("agent").is_none(), "{backend}: {c}");
    assert_eq!(
        c["agent_settings"],
        json!({"agent_kind": "acp", "acp_server": "claude-code", "acp_command": [],
               "acp_args": ["--x"], "acp_model": "claude-opus-4-8", "acp_session_mode": null,
               "acp_prompt_timeout": 1800.0, "acp_startup_timeout": 90.0}),
        "{backend}: {c}"
    );
    assert!(!c.to_string().contains("sk-operator"), "{backend}: {c}");

    // What cannot launch ends in ERROR, saying why.
    let missing = uuid::Uuid::new_v4().to_string();
    let dangling = save_profile(&app, &key, "dangling", json!({"llm_profile_ref": "gone"})).await;
    for (pid, says) in [
        (
            missing.clone(),
            format!("Agent profile with id '{missing}' not found"),
        ),
        (dangling, "LLM profile 'gone' not found".to_owned()),
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

/// The create bodies the stand-in agent server of `task`'s sandbox received, last last.
async fn creates_of(task: &Value) -> Vec<Value> {
    let url = task["agent_server_url"].as_str().unwrap();
    reqwest::get(format!("{url}/standin/creates"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn a_provider_connection_supplies_the_key(backend: Backend) {
    let app = app(backend).await;
    let key = app.member.key.clone();
    let org = app.org.to_string();
    let admin = app.admin.key.clone();
    let (code, conn) = call(
        &app,
        Method::POST,
        &format!("/api/organizations/{org}/provider-connections"),
        &admin,
        Some(
            json!({"display_name": "Team", "provider": "openai", "api_key": CONN_KEY,
                    "base_url": "https://conn.example.test/v1"}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{backend}: {conn}");
    let conn_id = conn["id"].as_str().unwrap().to_owned();
    // A member's LLM profile and an organization's, both on the connection (a key sent with
    // one is not kept: the connection's is the profile's).
    let (code, e) = call(
        &app,
        Method::POST,
        "/api/v1/settings/profiles/linked",
        &key,
        Some(
            json!({"llm": {"model": "openai/conn-model", "api_key": "sk-not-kept",
                            "provider_connection_id": conn_id}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{backend}: {e}");
    let (code, e) = call(
        &app,
        Method::POST,
        &format!("/api/organizations/{org}/profiles/team-linked"),
        &admin,
        Some(json!({"llm": {"model": "openai/team-conn", "provider_connection_id": conn_id}})),
    )
    .await;
    assert_eq!(code, 201, "{backend}: {e}");
    let listed = |path: String, name: &'static str| {
        let app = &app;
        let key = key.clone();
        async move {
            let (code, list) = call(app, Method::GET, &path, &key, None).await;
            assert_eq!(code, 200, "{list}");
            list["profiles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap()
                .clone()
        }
    };
    let mine = "/api/v1/settings/profiles".to_owned();
    let theirs = format!("/api/organizations/{org}/profiles");
    for (path, name) in [(mine.clone(), "linked"), (theirs.clone(), "team-linked")] {
        let p = listed(path, name).await;
        assert_eq!(
            (
                &p["provider_connection_id"],
                &p["provider_connection_broken"],
                &p["api_key_set"],
                &p["base_url"]
            ),
            (&json!(conn_id), &json!(false), &json!(true), &Value::Null),
            "{backend}: {p}"
        );
    }

    // A start from either sends the connection's key and base URL, through the LLM
    // pass-through (issue 38): the connection's key is the organization's, not the member's.
    for (reference, model) in [
        ("linked", "openai/conn-model"),
        ("team-linked", "openai/team-conn"),
    ] {
        let pid = save_profile(&app, &key, reference, json!({"llm_profile_ref": reference})).await;
        let done = start_from(&app, &key, &pid).await;
        assert_eq!(done["status"], "READY", "{backend}: {done}");
        let c = creates_of(&done).await.last().unwrap().clone();
        let connection = Chosen {
            model,
            upstream: "https://conn.example.test/v1",
            owner: "organization",
            key: CONN_KEY,
        };
        assert_relayed(&app, &c, &connection);
    }

    // The connection deleted: both lists say so, and a start ends in ERROR saying why,
    // sending no other key.
    let (code, _) = call(
        &app,
        Method::DELETE,
        &format!("/api/organizations/{org}/provider-connections/{conn_id}"),
        &admin,
        None,
    )
    .await;
    assert_eq!(code, 200);
    for (path, name) in [(mine, "linked"), (theirs, "team-linked")] {
        let p = listed(path, name).await;
        assert_eq!(
            (&p["provider_connection_broken"], &p["api_key_set"]),
            (&json!(true), &json!(false)),
            "{backend}: {p}"
        );
    }
    for (reference, owner) in [
        ("linked", "LLM profile 'linked'"),
        (
            "team-linked",
            "The organization's LLM profile 'team-linked'",
        ),
    ] {
        let pid = save_profile(&app, &key, reference, json!({"llm_profile_ref": reference})).await;
        let t = start_from(&app, &key, &pid).await;
        assert_eq!(t["status"], "ERROR", "{backend}: {t}");
        let detail = t["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(owner)
                && detail.contains(&conn_id)
                && detail.contains("no longer exists"),
            "{backend}: {detail}"
        );
    }
}
