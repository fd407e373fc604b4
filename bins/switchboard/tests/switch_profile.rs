//! `POST /api/v1/app-conversations/{id}/switch_profile` (issue 21) with the real agent server
//! (openhands-agent-server 1.58.2) and the fake LLM, on both backends: a conversation started
//! on the operator's LLM runs its next step on the caller's saved profile (the fake LLM records
//! the profile's model and key), and the refusals: an unknown profile (404), a profile without
//! a model (400), a body without `profile_name` (422), a conversation the caller does not see
//! (404). The profile's key appears in no answer and no line of Switchboard's log. Without the
//! real agent server on this machine each test says so and passes.

use crate::common;
use crate::event_catch_up::rig;

use std::time::{Duration, Instant};

use common::*;
use rig::Rig;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const PROFILE_KEY: &str = "sk-switched-Wq4Ty8Ux2Zc6Vb";

#[test]
fn switch_profile_sqlite() {
    switch_profile(Backend::Sqlite);
}

#[test]
fn switch_profile_postgres() {
    switch_profile(Backend::Postgres);
}

fn post(rig: &Rig, key: &str, path: &str, body: &Value) -> (u16, Value) {
    send_json(
        client()
            .post(rig.server.url(path))
            .header("X-Access-Token", key)
            .json(body),
    )
}

/// The fake LLM's chat completions, oldest first: `(model, Authorization header, whether the
/// prompt holds `marker`)`.
fn completions(rig: &Rig, marker: &str) -> Vec<(String, String, bool)> {
    rig.completions()
        .into_iter()
        .map(|(model, auth, text)| (model, auth, text.contains(marker)))
        .collect()
}

fn switch_profile(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!("switch_profile: no real agent server on this machine (scripts/e2e.sh); skipped");
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let (status, body) = post(
        &rig,
        &rig.key,
        "/api/v1/settings/profiles/switched",
        &json!({"llm": {"model": "openai/switched-model", "base_url": rig.llm_base, "api_key": PROFILE_KEY}}),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        &rig,
        &rig.key,
        "/api/v1/settings/profiles/modelless",
        &json!({"llm": {"api_key": "sk-none"}, "include_secrets": false}),
    );
    assert_eq!(status, 201, "{body}");

    let (conversation, agent) = rig.start_conversation("run: echo first");
    agent.wait_finished(&conversation, 1);
    let first = completions(&rig, "echo first");
    assert!(
        first
            .iter()
            .any(|(_, auth, run)| *run && auth == "Bearer fake-key"),
        "the first run uses the operator's key: {first:?}"
    );

    let path = format!("/api/v1/app-conversations/{conversation}/switch_profile");
    for (body, want) in [
        (json!({"profile_name": "nope"}), 404),
        (json!({"profile_name": "modelless"}), 400),
        (json!({"profile_name": ""}), 422),
        (json!({}), 422),
    ] {
        let (status, answer) = post(&rig, &rig.key, &path, &body);
        assert_eq!(status, want, "{body}: {answer}");
    }
    let unknown = format!(
        "/api/v1/app-conversations/{}/switch_profile",
        uuid::Uuid::new_v4()
    );
    let (status, _) = post(
        &rig,
        &rig.key,
        &unknown,
        &json!({"profile_name": "switched"}),
    );
    assert_eq!(status, 404);

    let (status, answer) = post(&rig, &rig.key, &path, &json!({"profile_name": "switched"}));
    assert_eq!(
        (status, &answer),
        (200, &json!({"success": true})),
        "{backend}"
    );
    let (status, answer) = post(
        &rig,
        &rig.key,
        &format!("/api/v1/app-conversations/{conversation}/send-message"),
        &json!({"role": "user", "content": [{"type": "text", "text": "run: echo second"}]}),
    );
    assert_eq!(status, 200, "{answer}");
    agent.wait_finished(&conversation, 2);
    // The second run's completions (its prompt holds the second message; a title or other
    // call the agent server makes on its own is left out).
    let deadline = Instant::now() + Duration::from_secs(10);
    let second = loop {
        let runs: Vec<_> = completions(&rig, "echo second")
            .into_iter()
            .filter(|(_, _, run)| *run)
            .collect();
        if !runs.is_empty() || Instant::now() > deadline {
            break runs;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        !second.is_empty(),
        "{backend}: no completion of the second run"
    );
    for (model, auth, _) in &second {
        assert_eq!(auth, &format!("Bearer {PROFILE_KEY}"), "{backend}");
        assert!(model.ends_with("switched-model"), "{backend}: {model}");
    }
    let log = rig.server.stderr_lines().join("\n");
    assert!(!log.contains(PROFILE_KEY), "{backend}: the key in the log");
}
