//! Every agent-profile field acts or is refused, and an LLM profile's provider connection
//! supplies its key (issue 25), against the real binary with the real agent server
//! (openhands-agent-server 1.58.2) and the fake LLM, on both backends, one server each:
//!
//! - a save the agent server could not carry out is a 422 saying why;
//! - an OpenHands profile whose LLM profile names a provider connection starts: the agent
//!   server's own view of the conversation shows the profile's condenser, tools (with the
//!   sub-agent tool set), tool concurrency, skills deny-list and suffix, and every completion
//!   reaches the fake LLM with the connection's key (its `Authorization` header), never the
//!   operator's, through the LLM pass-through (issue 38: the agent server never holds it);
//! - an ACP profile starts the agent server's ACP agent in the same sandbox: a tiny ACP server
//!   (Python, the agent server's own `acp` package) answers the prompt;
//! - the connection deleted, the LLM profile's list entry says `provider_connection_broken`
//!   and a start from the agent profile ends in `ERROR` saying why.
//!
//! Without the real agent server on this machine each test says so and passes.

use crate::common;
use crate::event_catch_up::rig;

use std::time::{Duration, Instant};

use common::*;
use rig::{Rig, START_WITHIN};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const CONN_KEY: &str = "sk-connection-Mv7Qx2Lp9Rw";

/// An ACP server on its standard streams: every prompt is answered `ACP echo: <prompt>`.
const ECHO_ACP: &str = r#"
import asyncio, uuid
from acp import run_agent, text_block, update_agent_message
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse

class Echo:
    def on_connect(self, conn):
        self.conn = conn
    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        return InitializeResponse(protocol_version=protocol_version, agent_capabilities=AgentCapabilities())
    async def new_session(self, cwd, mcp_servers=None, **kw):
        return NewSessionResponse(session_id=uuid.uuid4().hex)
    async def authenticate(self, method_id, **kw):
        return None
    async def prompt(self, session_id, prompt, **kw):
        text = " ".join(getattr(b, "text", "") for b in prompt)
        await self.conn.session_update(session_id, update_agent_message(text_block("ACP echo: " + text)))
        return PromptResponse(stop_reason="end_turn")
    async def cancel(self, session_id, **kw):
        return None

asyncio.run(run_agent(Echo()))
"#;

#[test]
fn agent_profile_fields_sqlite() {
    agent_profile_fields(Backend::Sqlite);
}

#[test]
fn agent_profile_fields_postgres() {
    agent_profile_fields(Backend::Postgres);
}

fn call(rig: &Rig, method: reqwest::Method, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut r = client()
        .request(method, rig.server.url(path))
        .header("X-Access-Token", &rig.key);
    if let Some(b) = body {
        r = r.json(b);
    }
    send_json(r)
}

fn post(rig: &Rig, path: &str, body: &Value) -> (u16, Value) {
    call(rig, reqwest::Method::POST, path, Some(body))
}

/// Starts a conversation from agent profile `profile` (in `sandbox` when given); the start
/// task once `READY` or `ERROR`.
fn start(rig: &Rig, profile: &str, sandbox: Option<&str>, message: &str) -> Value {
    let mut body = json!({"agent_profile_id": profile, "initial_message": {"role": "user",
        "content": [{"type": "text", "text": message}]}});
    if let Some(s) = sandbox {
        body["sandbox_id"] = json!(s);
    }
    let (status, task) = post(rig, "/api/v1/app-conversations", &body);
    assert_eq!(status, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let path = format!("/api/v1/app-conversations/start-tasks?ids={id}");
        let (_, t) = call(rig, reqwest::Method::GET, &path, None);
        let t = t[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
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

/// Saves agent profile `name`; its id.
fn save_agent_profile(rig: &Rig, name: &str, body: &Value) -> String {
    let (status, e) = post(rig, &format!("/api/agent-profiles/{name}"), body);
    assert_eq!(status, 201, "{e}");
    let (_, one) = call(
        rig,
        reqwest::Method::GET,
        &format!("/api/agent-profiles/{name}"),
        None,
    );
    one["profile"]["id"].as_str().unwrap().to_owned()
}

/// The fake LLM's chat completions whose prompt holds `marker`: `(model, Authorization)`.
fn completions(rig: &Rig, marker: &str) -> Vec<(String, String)> {
    rig.completions()
        .into_iter()
        .filter(|(_, _, text)| text.contains(marker))
        .map(|(model, auth, _)| (model, auth))
        .collect()
}

fn agent_profile_fields(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!(
            "agent_profile_fields: no real agent server on this machine (scripts/e2e.sh); skipped"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);

    // Refused at save, saying why.
    let (status, e) = post(
        &rig,
        "/api/agent-profiles/critic",
        &json!({"llm_profile_ref": "conn", "verification": {"critic_enabled": true}}),
    );
    assert_eq!(status, 422, "{backend}: {e}");
    assert_eq!(
        e["detail"][0]["loc"],
        json!(["body", "verification", "critic_enabled"])
    );
    assert!(
        e["detail"][0]["msg"].as_str().unwrap().contains("LLM key"),
        "{e}"
    );

    // The organization's provider connection (the fake LLM, its own key), and the member's
    // LLM profile on it.
    let (_, me) = call(&rig, reqwest::Method::GET, "/api/v1/users/me", None);
    let org = me["org_id"].as_str().unwrap().to_owned();
    let (status, conn) = post(
        &rig,
        &format!("/api/organizations/{org}/provider-connections"),
        &json!({"display_name": "Fake", "provider": "openai", "api_key": CONN_KEY,
                "base_url": rig.llm_base}),
    );
    assert_eq!(status, 201, "{backend}: {conn}");
    let conn_id = conn["id"].as_str().unwrap().to_owned();
    let (status, e) = post(
        &rig,
        "/api/v1/settings/profiles/conn",
        &json!({"llm": {"model": "openai/conn-model", "provider_connection_id": conn_id}}),
    );
    assert_eq!(status, 201, "{backend}: {e}");

    // An OpenHands profile with every field that acts.
    let coder = save_agent_profile(
        &rig,
        "coder",
        &json!({"llm_profile_ref": "conn", "system_message_suffix": "Profile suffix.",
                "enable_sub_agents": true, "disabled_skills": ["noisy-skill"],
                "condenser": {"max_size": 60, "keep_first": 3}, "tool_concurrency_limit": 3}),
    );
    let t = start(&rig, &coder, None, "run: echo from-the-profile");
    assert_eq!(t["status"], "READY", "{backend}: {t}");
    let conversation = t["app_conversation_id"].as_str().unwrap().to_owned();
    let sandbox = t["sandbox_id"].as_str().unwrap().to_owned();
    let agent = rig.agent(&sandbox);
    agent.wait_finished(&conversation, 1);
    let a = &agent.info(&conversation)["agent"];
    let tools: Vec<&str> = a["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        tools,
        ["terminal", "file_editor", "task_tracker", "task_tool_set"],
        "{backend}: {a}"
    );
    assert_eq!(a["tool_concurrency_limit"], 3, "{backend}");
    assert_eq!(
        (
            &a["condenser"]["kind"],
            &a["condenser"]["max_size"],
            &a["condenser"]["keep_first"],
            &a["condenser"]["llm"]["usage_id"]
        ),
        (
            &json!("LLMSummarizingCondenser"),
            &json!(60),
            &json!(3),
            &json!("condenser")
        ),
        "{backend}: {a}"
    );
    assert_eq!(
        a["agent_context"]["disabled_skills"],
        json!(["noisy-skill"])
    );
    assert_eq!(
        a["agent_context"]["system_message_suffix"],
        "Profile suffix."
    );
    // The connection's key is the organization's: the agent server has the LLM pass-through's
    // address (issue 38), neither the key nor the connection's base URL, and every completion
    // reaches the fake LLM through it with the connection's key.
    let relay = format!("http://{}/api/v1/llm-proxy", rig.bind);
    assert_eq!(a["llm"]["base_url"], json!(relay), "{backend}");
    let seen = a.to_string();
    assert!(
        !seen.contains(CONN_KEY) && !seen.contains(&rig.llm_base),
        "{backend}: {a}"
    );
    let calls = completions(&rig, "from-the-profile");
    assert!(!calls.is_empty(), "{backend}: no completion of the run");
    for (model, auth) in &calls {
        assert_eq!(auth, &format!("Bearer {CONN_KEY}"), "{backend}: {model}");
        assert!(model.ends_with("conn-model"), "{backend}: {model}");
    }

    // An ACP profile in the same sandbox: the agent server's ACP agent runs its command.
    let python = agent_server.with_file_name("python");
    let acp = save_agent_profile(
        &rig,
        "echo",
        &json!({"agent_kind": "acp", "acp_server": "custom", "acp_model": "echo-1",
                "acp_command": [python.display().to_string(), "-c", ECHO_ACP],
                "acp_startup_timeout": 60.0}),
    );
    let t = start(&rig, &acp, Some(&sandbox), "hello from acp");
    assert_eq!(t["status"], "READY", "{backend}: {t}");
    let echoed = t["app_conversation_id"].as_str().unwrap().to_owned();
    agent.wait_finished(&echoed, 1);
    let view = &agent.info(&echoed);
    assert_eq!(
        (
            &view["agent"]["kind"],
            &view["agent"]["acp_server"],
            &view["agent"]["acp_model"]
        ),
        (&json!("ACPAgent"), &json!("custom"), &json!("echo-1")),
        "{backend}: {view}"
    );
    let said = agent.events(&echoed);
    assert!(
        said.iter()
            .any(|e| e.to_string().contains("ACP echo: hello from acp")),
        "{backend}: the ACP server did not answer: {said:?}"
    );

    // The connection deleted: the profile says so, and a start fails saying why.
    let (status, _) = call(
        &rig,
        reqwest::Method::DELETE,
        &format!("/api/organizations/{org}/provider-connections/{conn_id}"),
        None,
    );
    assert_eq!(status, 200);
    let (_, list) = call(
        &rig,
        reqwest::Method::GET,
        "/api/v1/settings/profiles",
        None,
    );
    let entry = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "conn")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (
            &entry["provider_connection_broken"],
            &entry["provider_connection_id"]
        ),
        (&json!(true), &json!(conn_id)),
        "{backend}: {list}"
    );
    let t = start(&rig, &coder, Some(&sandbox), "run: echo never");
    assert_eq!(t["status"], "ERROR", "{backend}: {t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(
        detail.contains("LLM profile 'conn'")
            && detail.contains(&conn_id)
            && detail.contains("no longer exists"),
        "{backend}: {detail}"
    );
    assert!(
        completions(&rig, "echo never").is_empty(),
        "{backend}: no LLM call"
    );
    let log = rig.server.stderr_lines().join("\n");
    assert!(!log.contains(CONN_KEY), "{backend}: the key in the log");
}
