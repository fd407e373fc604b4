//! The OpenHands SDK's `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2, unchanged) runs a
//! conversation on a member's own LLM and secrets (issue 21, Tests), against the real binary
//! with real sandboxes (the process runtime, the real agent server 1.58.2) and the fake LLM,
//! on both backends: the member sets their model, base URL and key (`POST /api/v1/settings`)
//! and a secret (`POST /api/v1/secrets`); `get_llm()` answers them, `get_secrets()` names the
//! secret, and the conversation's every completion reaches the fake LLM with the member's key
//! (its `Authorization: Bearer` header), never the operator's; the command the agent runs
//! reads the secret (the agent server resolves the `LookupSecret` through Switchboard's
//! sandbox route, logged without the value). Neither value appears in Switchboard's log.
//! Without the real agent server or the SDK's venv on this machine each test says so and
//! passes (`scripts/e2e.sh` installs both).

use crate::common;
use crate::event_catch_up::rig;

use std::path::Path;

use common::*;
use rig::Rig;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const MEMBER_KEY: &str = "sk-member-Zt6Gh2Rk9Pw4Lc";
const SECRET: &str = "member-secret-Xv3Nq8Bd5Jm";

#[test]
fn sdk_member_llm_sqlite() {
    sdk_member_llm(Backend::Sqlite);
}

#[test]
fn sdk_member_llm_postgres() {
    sdk_member_llm(Backend::Postgres);
}

/// A member of the rig's organization and their API key.
fn member(rig: &Rig) -> String {
    rig.add_member("sdk-member@example.com").2
}

fn post(rig: &Rig, key: &str, path: &str, body: &Value) {
    let (status, answer) = send_json(
        client()
            .post(rig.server.url(path))
            .header("X-Access-Token", key)
            .json(body),
    );
    assert!(status == 200 || status == 201, "{path}: {answer}");
}

/// The fake LLM's chat completions: `(model, Authorization header, the request's text)`.
fn completions(rig: &Rig) -> Vec<(String, String, String)> {
    rig.completions()
}

fn sdk_member_llm(backend: Backend) {
    let (Some(agent_server), Some(sdk_python)) = (
        switchboard_testkit::real_agent_server(),
        switchboard_testkit::sdk_workspace_python(),
    ) else {
        eprintln!(
            "sdk_member_llm: no real agent server or SDK venv on this machine (scripts/e2e.sh installs them): skipped"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let key = member(&rig);
    post(
        &rig,
        &key,
        "/api/v1/settings",
        &json!({"agent_settings_diff": {"llm": {"model": "openai/member-model", "base_url": rig.llm_base, "api_key": MEMBER_KEY}}}),
    );
    post(
        &rig,
        &key,
        "/api/v1/secrets",
        &json!({"name": "MEMBER_TOKEN", "value": SECRET, "description": "the member's"}),
    );
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/e2e/sdk_member_conversation.py");
    let server = format!("http://{}", rig.bind);
    // The agent reverses the secret: the agent server masks the value itself in what it
    // shows the LLM, not its reverse.
    let out = run_with_sandbox_hosts(
        &sdk_python,
        &script,
        &[&server, &key, "run: printf %s \"$MEMBER_TOKEN\" | rev"],
        &server,
        &key,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{backend}: the SDK failed: {stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        rig.server.stderr_lines().join("\n")
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(
        (&v["model"], &v["api_key"], &v["base_url"]),
        (
            &json!("openai/member-model"),
            &json!(MEMBER_KEY),
            &json!(rig.llm_base)
        ),
        "{backend}: get_llm(): {v}"
    );
    assert_eq!(
        v["secret_names"],
        json!(["MEMBER_TOKEN"]),
        "{backend}: get_secrets(): {v}"
    );
    let calls = completions(&rig);
    assert!(
        !calls.is_empty(),
        "{backend}: the fake LLM got no completion"
    );
    for (model, auth, _) in &calls {
        assert_eq!(auth, &format!("Bearer {MEMBER_KEY}"), "{backend}: {model}");
        assert!(model.ends_with("member-model"), "{backend}: {model}");
    }
    let reversed: String = SECRET.chars().rev().collect();
    assert!(
        calls.iter().any(|(_, _, text)| text.contains(&reversed)),
        "{backend}: the command did not read the member's secret: {calls:?}"
    );
    let log = rig.server.stderr_lines().join("\n");
    assert!(
        log.lines()
            .any(|l| l.contains("a sandbox read its owner's secret") && l.contains("MEMBER_TOKEN")),
        "{backend}: the agent server's read of the secret is logged"
    );
    for value in [MEMBER_KEY, SECRET, reversed.as_str()] {
        assert!(!log.contains(value), "{backend}: {value} in the log");
    }
}
