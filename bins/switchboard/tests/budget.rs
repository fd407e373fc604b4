//! Budgets take effect (API.md, "Budgets"), with the real binary, the real agent server
//! (openhands-agent-server 1.58.2) as the sandbox spec and the fake LLM priced as
//! `openai/gpt-4o` (LiteLLM: 100 prompt + 10 completion tokens = $0.00035 a call), on both
//! backends, one server each. A member starts three conversations in one sandbox, each asking
//! the agent to run `sleep 3` (one LLM call, the command, then a second call to finish):
//! - a member budget of $0.0001: the first call's cost reaches it; the conversation answers
//!   `error` and its budget in `metrics.max_budget_per_task`, its events hold the SDK's
//!   `MaxBudgetReached` error, its agent server's own conversation is `paused` without having
//!   finished, and a further run is refused with 409;
//! - a member budget of $5 under an organization ceiling of $0.0002: the ceiling applies;
//! - no budget: the same run finishes, with no budget in its metrics.
//!
//! Without the real agent server on this machine each test says so and passes.

use crate::common;
use crate::event_catch_up::rig;

use std::time::{Duration, Instant};

use common::*;
use rig::{Agent, Rig, START_WITHIN};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const BASE: &str = "/api/v1/app-conversations";
/// The agent's task: one terminal call long enough for the pause to land before its end.
const TASK: &str = "run: sleep 3";

#[test]
fn budgets_stop_runs_sqlite() {
    budgets(Backend::Sqlite);
}

#[test]
fn budgets_stop_runs_postgres() {
    budgets(Backend::Postgres);
}

/// `POST path` with `body` as `key`, answered 200.
#[track_caller]
fn post(rig: &Rig, key: &str, path: &str, body: &Value) -> Value {
    let (status, answer) = send_json(
        client()
            .post(rig.server.url(path))
            .header("X-Access-Token", key)
            .json(body),
    );
    assert_eq!(status, 200, "POST {path} {body}: {answer}");
    answer
}

#[track_caller]
fn get(rig: &Rig, key: &str, path: &str) -> Value {
    let (status, body) = send_json(
        client()
            .get(rig.server.url(path))
            .header("X-Access-Token", key),
    );
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// Starts a conversation as `key` running [`TASK`] on `openai/gpt-4o` (in `sandbox` when
/// given, else a new one); its id and sandbox once its start task is `READY` (its budget is
/// fixed then).
fn start(rig: &Rig, key: &str, sandbox: Option<&str>) -> (String, String) {
    let mut body = json!({
        "llm_model": "openai/gpt-4o",
        "initial_message": {"role": "user", "content": [{"type": "text", "text": TASK}]},
    });
    if let Some(s) = sandbox {
        body["sandbox_id"] = json!(s);
    }
    let task = post(rig, key, BASE, &body);
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let t = get(rig, key, &format!("{BASE}/start-tasks?ids={id}"))[0].clone();
        match t["status"].as_str() {
            Some("READY") => {
                return (
                    t["app_conversation_id"].as_str().unwrap().to_owned(),
                    t["sandbox_id"].as_str().unwrap().to_owned(),
                );
            }
            Some("ERROR") => panic!("the start failed: {t}"),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the start is still {}; stderr:\n{}",
            t["status"],
            rig.server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits (90 s at most) until the conversation answers `status`; the answer.
#[track_caller]
fn wait_status(rig: &Rig, key: &str, conversation: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let v = get(rig, key, &format!("{BASE}?ids={conversation}"))[0].clone();
        if v["execution_status"] == status {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the conversation does not answer {status}: {v}\nstderr:\n{}",
            rig.server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `MaxBudgetReached` errors among the conversation's stored events.
fn budget_errors(rig: &Rig, key: &str, conversation: &str) -> Vec<Value> {
    let page = get(
        rig,
        key,
        &format!(
            "/api/v1/conversation/{conversation}/events/search?kind__eq=ConversationErrorEvent&limit=100"
        ),
    );
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["code"] == "MaxBudgetReached")
        .cloned()
        .collect()
}

/// A conversation stopped by `budget`: `error`, the budget in its metrics, one
/// `MaxBudgetReached` event with the SDK's detail, its agent server's run paused before it
/// finished, and a further run refused.
#[track_caller]
fn assert_stopped(
    rig: &Rig,
    key: &str,
    agent: &Agent,
    conversation: &str,
    budget: f64,
    backend: Backend,
) {
    let mut v = wait_status(rig, key, conversation, "error");
    // The status (the conversation webhook) and the cost (a state update in an event batch)
    // come by two posts in no fixed order: the cost may land a moment after the status.
    let deadline = Instant::now() + Duration::from_secs(30);
    let cost = |v: &Value| v["metrics"]["accumulated_cost"].as_f64().unwrap_or(0.0);
    while cost(&v) < budget && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        v = get(rig, key, &format!("{BASE}?ids={conversation}"))[0].clone();
    }
    assert_eq!(v["execution_status"], "error", "{backend}: {v}");
    assert_eq!(
        v["metrics"]["max_budget_per_task"], budget,
        "{backend}: {v}"
    );
    assert!(
        cost(&v) >= budget,
        "{backend}: spent {} under {budget}: {v}",
        cost(&v)
    );
    let errors = budget_errors(rig, key, conversation);
    assert_eq!(errors.len(), 1, "{backend}: {errors:?}");
    let e = &errors[0];
    assert_eq!(e["source"], "environment", "{backend}: {e}");
    let detail = e["detail"].as_str().unwrap();
    let prefix = format!("Agent reached maximum budget limit (${budget:.4}); accumulated cost $");
    assert!(
        detail.starts_with(&prefix) && detail.ends_with('.'),
        "{backend}: {detail}"
    );
    assert!(
        e["id"].is_string() && e["timestamp"].is_string(),
        "{backend}: {e}"
    );
    // The agent server's own conversation: paused once its step (the command) ended, never
    // finished; or `error` when its next LLM call came before the pause and the LLM
    // pass-through refused it (the budget is enforced there too: API.md, LLM pass-through).
    let deadline = Instant::now() + Duration::from_secs(60);
    let stopped = |s: &Value| s == "paused" || s == "error";
    while !stopped(&agent.info(conversation)["execution_status"]) {
        assert!(
            Instant::now() < deadline,
            "{backend}: the agent server's conversation is {}",
            agent.info(conversation)["execution_status"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let finished = agent
        .events(conversation)
        .iter()
        .any(|e| e["key"] == "execution_status" && e["value"] == "finished");
    assert!(!finished, "{backend}: the run went on to its end");
    // Still `error` after the agent server's `paused` arrived, and no run again.
    std::thread::sleep(Duration::from_millis(500));
    let v = wait_status(rig, key, conversation, "error");
    assert_eq!(
        v["metrics"]["max_budget_per_task"], budget,
        "{backend}: {v}"
    );
    let (status, body) = send_json(
        client()
            .post(rig.server.url(&format!("{BASE}/{conversation}/send-message")))
            .header("X-Access-Token", key)
            .json(&json!({"role": "user", "content": [{"type": "text", "text": "go on"}], "run": true})),
    );
    assert_eq!(status, 409, "{backend}: {body}");
    assert!(
        body["detail"].as_str().unwrap().contains("budget"),
        "{backend}: {body}"
    );
    let state = agent.info(conversation)["execution_status"].clone();
    assert!(stopped(&state), "{backend}: {state}");
}

fn budgets(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!("budget: no real agent server on this machine (scripts/e2e.sh); skipped");
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let org = rig.server.bootstrapped.clone().unwrap();
    let (_, member) = add_member(
        db.url(),
        str_of(&org, "org_id"),
        "budget-member@example.com",
        "member",
    );
    let owner = rig.key.clone();

    // The member's budget, below one LLM call's cost.
    post(
        &rig,
        &member,
        "/api/v1/settings",
        &json!({"max_budget_per_task": 0.0001}),
    );
    let (own, sandbox) = start(&rig, &member, None);
    // The organization's ceiling under the member's budget: the ceiling applies.
    post(
        &rig,
        &member,
        "/api/v1/settings",
        &json!({"max_budget_per_task": 5}),
    );
    post(
        &rig,
        &owner,
        "/api/organizations/app",
        &json!({"max_budget_per_task": 0.0002}),
    );
    let (capped, _) = start(&rig, &member, Some(&sandbox));
    // No budget: the same run finishes.
    post(
        &rig,
        &member,
        "/api/v1/settings",
        &json!({"max_budget_per_task": null}),
    );
    post(
        &rig,
        &owner,
        "/api/organizations/app",
        &json!({"max_budget_per_task": null}),
    );
    let (free, _) = start(&rig, &member, Some(&sandbox));

    let s = wait_sandbox_status(&rig.server, &member, &sandbox, "RUNNING");
    let agent = Agent {
        sandbox: sandbox.clone(),
        url: direct_agent_url(s["exposed_urls"][0]["url"].as_str().unwrap()),
        key: s["session_api_key"].as_str().unwrap().to_owned(),
    };
    assert_stopped(&rig, &member, &agent, &own, 0.0001, backend);
    assert_stopped(&rig, &member, &agent, &capped, 0.0002, backend);

    let v = wait_status(&rig, &member, &free, "finished");
    assert_eq!(
        v["metrics"]["max_budget_per_task"],
        Value::Null,
        "{backend}: {v}"
    );
    assert!(
        v["metrics"]["accumulated_cost"].as_f64().unwrap_or(0.0) > 0.0002,
        "{backend}: {v}"
    );
    assert!(budget_errors(&rig, &member, &free).is_empty(), "{backend}");
    assert_eq!(
        agent.info(&free)["execution_status"],
        "finished",
        "{backend}"
    );
}
