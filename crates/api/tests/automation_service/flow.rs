//! One automation run's requests, in the service's order: the member's identity and
//! permissions, the agent profiles, the run's key minted with the service key, a sandbox
//! created and polled with that key, the run's script reading the member's own LLM from the
//! sandbox, the sandbox paused, resumed and deleted.

use serde_json::{Value, json};
use switchboard_domain::services::ServiceKey;
use switchboard_testkit::Backend;

use crate::automation_service::{SERVICE_KEY, replay_ok};
use crate::common::sandboxes::{SandboxOptions, spawn_sandbox_app_with};
use crate::common::status_json;

pub async fn one_run_as_the_service_sends_it(backend: Backend) {
    let app = spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| {
        s.with_service_key(ServiceKey::new(SERVICE_KEY).unwrap())
    })
    .await;
    let org = app.org.to_string();
    let member = app.member.user_id.to_string();
    // The member's own LLM, which the run must get.
    let (status, body) = status_json(
        app.post_json(
            "/api/v1/settings",
            Some(&app.member.key),
            &json!({"agent_settings_diff": {"llm": {"model": "openai/member-model",
                "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-member-own"}}}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{backend}: {body}");

    // Every route of the service: view_automations for the member, manage_automations not.
    let me = replay_ok(
        &app,
        "users_me",
        &[("api_key", &app.member.key), ("org_id", &org)],
    )
    .await;
    assert_eq!(
        (me["id"].as_str(), me["org_id"].as_str()),
        (Some(member.as_str()), Some(org.as_str()))
    );
    let perms: Vec<&str> = me["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(perms.contains(&"view_automations"), "{backend}: {perms:?}");
    assert!(
        !perms.contains(&"manage_automations"),
        "{backend}: {perms:?}"
    );
    let owner = replay_ok(
        &app,
        "users_me",
        &[("api_key", &app.owner.key), ("org_id", &org)],
    )
    .await;
    for p in ["view_automations", "manage_automations"] {
        assert!(
            owner["permissions"].as_array().unwrap().contains(&json!(p)),
            "{backend}: {p}"
        );
    }
    replay_ok(
        &app,
        "agent_profiles",
        &[("api_key", &app.member.key), ("org_id", &org)],
    )
    .await;

    // The dispatcher mints the run's key; it acts for the member in the organization.
    let minted = replay_ok(
        &app,
        "mint_run_key",
        &[
            ("user_id", &member),
            ("org_id", &org),
            ("service_key", SERVICE_KEY),
        ],
    )
    .await;
    let run_key = minted["key"].as_str().unwrap().to_owned();
    assert!(run_key.starts_with("sb_"), "{backend}: {minted}");
    assert_eq!(
        (
            minted["user_id"].as_str(),
            minted["org_id"].as_str(),
            minted["name"].as_str()
        ),
        (
            Some(member.as_str()),
            Some(org.as_str()),
            Some("automation")
        )
    );
    let as_run = replay_ok(&app, "users_me", &[("api_key", &run_key), ("org_id", &org)]).await;
    assert_eq!(
        (as_run["id"].as_str(), as_run["api_key_org_id"].as_str()),
        (Some(member.as_str()), Some(org.as_str())),
        "{backend}"
    );

    // The run's sandbox, with the run's key.
    let created = replay_ok(&app, "create_sandbox", &[("run_key", &run_key)]).await;
    let sandbox = created["id"].as_str().unwrap().to_owned();
    app.wait_status(&run_key, &sandbox, "RUNNING").await;
    let polled = replay_ok(
        &app,
        "poll_sandbox",
        &[("run_key", &run_key), ("sandbox_id", &sandbox)],
    )
    .await;
    let agent = polled[0]["exposed_urls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "AGENT_SERVER")
        .unwrap_or_else(|| panic!("{backend}: no AGENT_SERVER in {polled}"));
    assert!(
        agent["url"].as_str().unwrap().starts_with("http"),
        "{backend}: {agent}"
    );
    let session = polled[0]["session_api_key"].as_str().unwrap().to_owned();

    // The run's script reads the member's own LLM, key included, from its sandbox.
    let llm = replay_ok(
        &app,
        "llm_in_sandbox",
        &[("run_key", &run_key), ("session_api_key", &session)],
    )
    .await;
    assert_eq!(
        (
            llm["llm_model"].as_str(),
            llm["llm_api_key"].as_str(),
            llm["llm_base_url"].as_str()
        ),
        (
            Some("openai/member-model"),
            Some("sk-member-own"),
            Some("http://127.0.0.1:9/v1")
        ),
        "{backend}"
    );

    // The run's end.
    replay_ok(
        &app,
        "pause_sandbox",
        &[("run_key", &run_key), ("sandbox_id", &sandbox)],
    )
    .await;
    app.wait_status(&run_key, &sandbox, "PAUSED").await;
    replay_ok(
        &app,
        "resume_sandbox",
        &[("run_key", &run_key), ("sandbox_id", &sandbox)],
    )
    .await;
    app.wait_status(&run_key, &sandbox, "RUNNING").await;
    replay_ok(
        &app,
        "delete_sandbox",
        &[("run_key", &run_key), ("sandbox_id", &sandbox)],
    )
    .await;
    assert_eq!(app.info(&run_key, &sandbox).await, Value::Null, "{backend}");
}
