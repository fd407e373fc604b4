//! A conversation keeps what it was after its sandbox ends (issue 31), with the real binary,
//! the real agent server (openhands-agent-server 1.58.2) and the fake LLM, on both backends: a
//! conversation run to `finished`, then its sandbox paused, then deleted, still answers
//! `execution_status: "finished"`, the title its agent server gave it, its LLM model and its
//! metrics (the agent server's own, combined over its LLM usages) in the batch get, the search
//! and the count, with `sandbox_status` `PAUSED`, then `MISSING`. Without the real agent server
//! on this machine each test says so and passes.

use crate::common;
use crate::event_catch_up::rig;

use std::time::{Duration, Instant};

use common::*;
use rig::{Agent, Rig};
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const BASE: &str = "/api/v1/app-conversations";

#[test]
fn kept_after_pause_and_delete_sqlite() {
    kept(Backend::Sqlite);
}

#[test]
fn kept_after_pause_and_delete_postgres() {
    kept(Backend::Postgres);
}

/// The most prompt tokens the agent server reported for the conversation: in its
/// `ConversationInfo`'s `stats` and in every `stats` or `full_state` update among its events
/// (its info may lag the events: Switchboard keeps the largest, since spend only grows).
fn agent_spend(agent: &Agent, conversation: &str, info: &Value) -> u64 {
    let url = format!(
        "{}/api/conversations/{}/events/search?limit=100",
        agent.url,
        conversation.replace('-', "")
    );
    let (status, events) = send_json(client().get(url).header("X-Session-API-Key", &agent.key));
    assert_eq!(status, 200, "{events}");
    let reported = events["items"].as_array().unwrap().iter().filter_map(|e| {
        match (e["kind"].as_str(), e["key"].as_str()) {
            (Some("ConversationStateUpdateEvent"), Some("stats")) => {
                Some(prompt_tokens(&json!({"stats": e["value"]})))
            }
            (Some("ConversationStateUpdateEvent"), Some("full_state")) => {
                Some(prompt_tokens(&e["value"]))
            }
            _ => None,
        }
    });
    reported.chain([prompt_tokens(info)]).max().unwrap_or(0)
}

/// The prompt tokens of every LLM usage of an agent server's `stats`, summed.
fn prompt_tokens(info: &Value) -> u64 {
    info["stats"]["usage_to_metrics"]
        .as_object()
        .into_iter()
        .flat_map(|o| o.values())
        .map(|m| {
            m["accumulated_token_usage"]["prompt_tokens"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum()
}

/// The conversation through the batch get, checked against the search (plain and by sandbox)
/// and the count.
fn answers(rig: &Rig, conversation: &str, sandbox: &str) -> Value {
    let one = rig.get(&format!("{BASE}?ids={conversation}"))[0].clone();
    for query in ["", &format!("sandbox_id__eq={sandbox}")] {
        let page = rig.get(&format!("{BASE}/search?{query}"));
        let items = page["items"].as_array().unwrap();
        let found: Vec<&Value> = items.iter().filter(|c| c["id"] == one["id"]).collect();
        assert_eq!(found, [&one], "search ?{query}");
        let n = rig.get(&format!("{BASE}/count?{query}"));
        assert_eq!(n.as_u64(), Some(items.len() as u64), "count ?{query}");
    }
    one
}

/// Waits (30 s at most) until the conversation answers `finished` with metrics holding
/// `tokens` prompt tokens and the title `title`; the answer.
fn wait_answer(rig: &Rig, conversation: &str, sandbox: &str, title: &str, tokens: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = answers(rig, conversation, sandbox);
        let ready = v["execution_status"] == "finished"
            && v["title"] == title
            && v["metrics"]["accumulated_token_usage"]["prompt_tokens"] == tokens;
        if ready {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the conversation does not answer what it was (want {title:?}, {tokens} prompt tokens): {v}\nstderr:\n{}",
            rig.server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[track_caller]
fn assert_kept(v: &Value, sandbox_status: &str, title: &str, tokens: u64, backend: Backend) {
    assert_eq!(v["sandbox_status"], sandbox_status, "{backend}: {v}");
    assert_eq!(v["execution_status"], "finished", "{backend}: {v}");
    assert_eq!(v["title"], title, "{backend}: {v}");
    assert_eq!(v["llm_model"], "openai/fake-model", "{backend}: {v}");
    assert_eq!(
        v["metrics"]["accumulated_token_usage"]["prompt_tokens"], tokens,
        "{backend}: {v}"
    );
    assert_eq!(v["conversation_url"], Value::Null, "{backend}: {v}");
    assert_eq!(v["session_api_key"], Value::Null, "{backend}: {v}");
}

fn kept(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!(
            "conversation_kept: no real agent server on this machine (scripts/e2e.sh); skipped"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let (conversation, agent) = rig.start_conversation("say hello");
    agent.wait_finished(&conversation, 1);
    // The agent server's title (generated by its own LLM call) and spend, once both settled:
    // the spend (the largest its info and its events report) must read the same for 2 s (a
    // loaded machine once paused while its info still counted one call fewer than its events).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stable_since: Option<(u64, Instant)> = None;
    let info = loop {
        let info = agent.info(&conversation);
        let spend = agent_spend(&agent, &conversation, &info);
        let settled = match stable_since {
            Some((seen, since)) if seen == spend => since.elapsed() >= Duration::from_secs(2),
            _ => {
                stable_since = Some((spend, Instant::now()));
                false
            }
        };
        if (info["title"].is_string() && settled) || Instant::now() > deadline {
            break info;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let title = info["title"].as_str().expect("a title").to_owned();
    let tokens = agent_spend(&agent, &conversation, &info);
    assert!(tokens > 0, "{backend}: no spend in {}", info["stats"]);

    // Paused: the pause reads the agent server's conversations first, title included.
    rig.sandbox_action(&agent.sandbox, "pause");
    let v = wait_answer(&rig, &conversation, &agent.sandbox, &title, tokens);
    assert_kept(&v, "PAUSED", &title, tokens, backend);

    // Deleted: MISSING, and still what it was.
    rig.delete_sandbox(&agent.sandbox);
    let v = answers(&rig, &conversation, &agent.sandbox);
    assert_kept(&v, "MISSING", &title, tokens, backend);
    // Once the cleanup ended its agent server too (nothing listens on its port).
    let addr = agent.url.trim_start_matches("http://");
    let addr = addr.split('/').next().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(
            Instant::now() < deadline,
            "{backend}: the agent server stays"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let v = answers(&rig, &conversation, &agent.sandbox);
    assert_kept(&v, "MISSING", &title, tokens, backend);
}
