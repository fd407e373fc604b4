//! The LLM pass-through (issue 38), with the real agent server 1.58.2 in process sandboxes and
//! the fake LLM, on both backends. The organization sets its default LLM (a priced fake model,
//! the fake LLM's base URL, its key); a member's conversation runs to `finished` with every
//! completion reaching the fake LLM with the organization's key, while no process of the
//! member's sandbox holds it (environment, command line and readable memory searched; the
//! per-conversation token is found there, so the search reads what it should) and no file
//! under the data directory does. Then, through the pass-through with that token: a streamed
//! answer arrives chunk by chunk; usage by member and by day, and the member's own, equal what
//! the fake LLM billed; a member cannot read the organization's; the token dies with its
//! sandbox while another sandbox's keeps working; the per-task budget stops a conversation and
//! the monthly budget refuses the organization's next request; an organization key without a
//! base URL is never sent where a model prefix points (a listener on that loopback port gets
//! nothing, the start fails saying why). Without the real agent server each test says so and
//! passes (`scripts/e2e.sh` installs it).

use crate::common;
use crate::event_catch_up::rig;
mod scan;

use std::io::Read;
use std::time::{Duration, Instant};

use common::*;
use rig::Rig;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

/// The organization's key: must never be in a sandbox.
const ORG_KEY: &str = "sk-org-Qm7Vw2Lp9Xc4Rt8Hb3Zs";
/// What the fake LLM bills per request for this model (`usage.cost`).
const MODEL: &str = "openai/priced-0.001";
const COST: f64 = 0.001;

#[test]
fn llm_relay_sqlite() {
    llm_relay(Backend::Sqlite);
}

#[test]
fn llm_relay_postgres() {
    llm_relay(Backend::Postgres);
}

/// The organization and a member of it with their API key.
struct Parties {
    org: String,
    member: String,
    member_id: String,
}

fn parties(rig: &Rig) -> Parties {
    let (org, member_id, member) = rig.add_member("relay-member@example.com");
    Parties {
        org,
        member,
        member_id,
    }
}

fn call(rig: &Rig, method: &str, key: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client()
        .request(m, rig.server.url(path))
        .header("X-Access-Token", key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    send_json(req)
}

/// Starts a conversation as `key`; the start task once it is `READY` or `ERROR`.
fn start(rig: &Rig, key: &str, body: Value) -> Value {
    let (status, task) = call(rig, "POST", key, "/api/v1/app-conversations", Some(body));
    assert!(status == 200 || status == 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let (_, tasks) = call(
            rig,
            "GET",
            key,
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            None,
        );
        let t = tasks[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(Instant::now() < deadline, "the start is still {t}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn message(text: &str) -> Value {
    json!({"initial_message": {"role": "user", "content": [{"type": "text", "text": text}]}})
}

/// Waits (120 s at most) until the conversation answers `status`.
fn wait_status(rig: &Rig, key: &str, conversation: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, v) = call(
            rig,
            "GET",
            key,
            &format!("/api/v1/app-conversations?ids={conversation}"),
            None,
        );
        if v[0]["execution_status"] == status {
            return v[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the conversation does not answer {status}: {v}\nstderr:\n{}",
            rig.server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Waits out the pass-through's per-replica cache of authorized tokens (1 s): a revocation
/// or a budget reached is refused from then on.
fn past_cache() {
    std::thread::sleep(Duration::from_millis(1100));
}

/// A request through the pass-through with `token`: its status and body.
fn through(rig: &Rig, token: &str, body: &Value) -> (u16, String) {
    let r = client()
        .post(rig.server.url("/api/v1/llm-proxy/chat/completions"))
        .bearer_auth(token)
        .json(body)
        .send()
        .unwrap();
    (r.status().as_u16(), r.text().unwrap())
}

fn llm_relay(backend: Backend) {
    let Some(agent_server) = switchboard_testkit::real_agent_server() else {
        eprintln!(
            "llm_relay: no real agent server on this machine (scripts/e2e.sh installs it): skipped"
        );
        return;
    };
    let db = TestDatabase::new(backend);
    let rig = Rig::start(db.url(), &agent_server, false, true);
    let p = parties(&rig);
    let (status, v) = call(
        &rig,
        "PATCH",
        &rig.key,
        &format!("/api/organizations/{}/settings", p.org),
        Some(
            json!({"agent_settings_diff": {"llm": {"model": MODEL, "base_url": rig.llm_base, "api_key": ORG_KEY}}}),
        ),
    );
    assert_eq!(status, 200, "{backend}: {v}");

    // A member's conversation on the organization's key runs to its end.
    let task = start(&rig, &p.member, message("run: echo relayed"));
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let conversation = task["app_conversation_id"].as_str().unwrap().to_owned();
    let sandbox = task["sandbox_id"].as_str().unwrap().to_owned();
    wait_status(&rig, &p.member, &conversation, "finished");
    let calls = rig.completions();
    assert!(
        !calls.is_empty(),
        "{backend}: the fake LLM got no completion"
    );
    for (model, auth, _) in &calls {
        assert_eq!(auth, &format!("Bearer {ORG_KEY}"), "{backend}: {model}");
    }

    // No process of the sandbox holds the key; the token is where the key would have been.
    let (_, sandboxes) = call(
        &rig,
        "GET",
        &p.member,
        &format!("/api/v1/sandboxes?id={sandbox}"),
        None,
    );
    let session_key = sandboxes[0]["session_api_key"].as_str().unwrap().to_owned();
    let found = scan::sandbox_processes(&session_key, ORG_KEY);
    assert!(
        !found.pids.is_empty(),
        "{backend}: no process of the sandbox found"
    );
    assert!(
        found.holding_needle.is_empty(),
        "{backend}: the organization's key is in sandbox processes {:?}",
        found.holding_needle
    );
    let token = found.token.clone().unwrap_or_else(|| {
        panic!(
            "{backend}: no pass-through token in the sandbox's memory ({:?})",
            found.pids
        )
    });
    // The data directory (the sandboxes' own among them), but the fake LLM's request log.
    let mut files = scan::files_holding(std::path::Path::new(&rig.data_dir), ORG_KEY);
    files.retain(|f| f != &rig.llm_log);
    assert!(files.is_empty(), "{backend}: files hold the key: {files:?}");
    assert!(
        !rig.server.stderr_lines().join("\n").contains(ORG_KEY),
        "{backend}: the key is in the log"
    );

    streamed(&rig, &token, backend);
    usage(&rig, &p, backend);
    let other = budgets(&rig, &p, &token, backend);

    // The token dies with its sandbox; the other sandbox's token still opens its route.
    let (status, _) = call(
        &rig,
        "DELETE",
        &p.member,
        &format!("/api/v1/sandboxes/{sandbox}"),
        None,
    );
    assert_eq!(status, 200, "{backend}");
    past_cache();
    let (status, body) = through(
        &rig,
        &token,
        &json!({"model": MODEL, "messages": [{"role": "user", "content": "reply: x"}]}),
    );
    assert_eq!(status, 401, "{backend}: {body}");
    assert!(body.contains("not valid"), "{backend}: {body}");
    let (status, body) = through(
        &rig,
        &other,
        &json!({"model": MODEL, "messages": [{"role": "user", "content": "reply: x"}]}),
    );
    assert_ne!(status, 401, "{backend}: {body}");
    loopback(&rig, &p, backend);
}

/// A streamed answer arrives as streamed: its chunks spread over the fake LLM's pacing, not
/// all at once; its text whole.
fn streamed(rig: &Rig, token: &str, backend: Backend) {
    let mut r = client()
        .post(rig.server.url("/api/v1/llm-proxy/chat/completions"))
        .bearer_auth(token)
        // With a tool, so the fake LLM answers the `reply:` text (word by word, 20 ms apart).
        .json(&json!({"model": MODEL, "stream": true,
            "tools": [{"type": "function", "function": {"name": "finish", "parameters": {}}}],
            "messages": [{"role": "user", "content": "reply: one two three four five six seven eight"}]}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{backend}");
    let mut arrivals = Vec::new();
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        arrivals.push(Instant::now());
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(text).unwrap();
    let spread = *arrivals.last().unwrap() - arrivals[0];
    // Eight words 20 ms apart: at least 100 ms between the first read and the last.
    assert!(
        arrivals.len() >= 4 && spread >= Duration::from_millis(100),
        "{backend}: {} reads over {spread:?}",
        arrivals.len()
    );
    let words: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        words, "one two three four five six seven eight",
        "{backend}: {text}"
    );
}

/// Usage equals what the fake LLM billed: each of its requests 100 + 10 tokens at COST.
fn usage(rig: &Rig, p: &Parties, backend: Backend) {
    // Recorded off the request path, after the answer: wait until the counts agree.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (by_member, n) = loop {
        let n = rig.completions().len() as u64;
        let (status, v) = call(
            rig,
            "GET",
            &rig.key,
            &format!("/api/organizations/{}/llm-usage", p.org),
            None,
        );
        assert_eq!(status, 200, "{backend}: {v}");
        if v["total"]["requests"] == n || Instant::now() > deadline {
            break (v, n);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        by_member["items"].as_array().unwrap().len(),
        1,
        "{backend}: {by_member}"
    );
    let row = &by_member["items"][0];
    assert_eq!(
        (
            &row["user_id"],
            &row["requests"],
            &row["input_tokens"],
            &row["output_tokens"]
        ),
        (
            &json!(p.member_id),
            &json!(n),
            &json!(100 * n),
            &json!(10 * n)
        ),
        "{backend}: {by_member}"
    );
    assert!(
        (row["cost_usd"].as_f64().unwrap() - COST * n as f64).abs() < 1e-9,
        "{backend}: {row}"
    );
    let (_, by_day) = call(
        rig,
        "GET",
        &rig.key,
        &format!("/api/organizations/{}/llm-usage?group_by=day", p.org),
        None,
    );
    assert_eq!(by_day["total"], by_member["total"], "{backend}: {by_day}");
    let (_, mine) = call(rig, "GET", &p.member, "/api/v1/users/me/llm-usage", None);
    assert_eq!(mine["total"]["requests"], json!(n), "{backend}: {mine}");
    let (status, _) = call(
        rig,
        "GET",
        &p.member,
        &format!("/api/organizations/{}/llm-usage", p.org),
        None,
    );
    assert_eq!(
        status, 403,
        "{backend}: a member reads the organization's usage"
    );
    let metrics = client()
        .get(rig.server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("llm_relay_tokens_total{kind=\"input\"}"),
        "{backend}"
    );
}

/// The per-task budget stops a conversation; the monthly budget then refuses the
/// organization's requests. Answers the stopped conversation's token.
fn budgets(rig: &Rig, p: &Parties, token: &str, backend: Backend) -> String {
    let (status, v) = call(
        rig,
        "POST",
        &rig.key,
        "/api/organizations/app",
        Some(json!({"max_budget_per_task": 0.0005})),
    );
    assert_eq!(status, 200, "{backend}: {v}");
    let task = start(rig, &p.member, message("run: echo budget"));
    assert_eq!(task["status"], "READY", "{backend}: {task}");
    let conversation = task["app_conversation_id"].as_str().unwrap().to_owned();
    let sandbox = task["sandbox_id"].as_str().unwrap().to_owned();
    wait_status(rig, &p.member, &conversation, "error");
    let (_, sandboxes) = call(
        rig,
        "GET",
        &p.member,
        &format!("/api/v1/sandboxes?id={sandbox}"),
        None,
    );
    let found = scan::sandbox_processes(sandboxes[0]["session_api_key"].as_str().unwrap(), ORG_KEY);
    let other = found.token.expect("the second sandbox's token");
    assert_ne!(other, token, "{backend}: one token per conversation");
    let ask = json!({"model": MODEL, "messages": [{"role": "user", "content": "reply: x"}]});
    past_cache();
    let (status, body) = through(rig, &other, &ask);
    assert_eq!(status, 400, "{backend}: {body}");
    assert!(
        body.contains("budget_exceeded") && body.contains("max_budget_per_task"),
        "{backend}: {body}"
    );
    // The monthly budget: at what the organization spent, its next request is refused.
    let (status, v) = call(
        rig,
        "POST",
        &rig.key,
        "/api/organizations/app",
        Some(json!({"max_budget_per_task": null, "llm_monthly_budget": 0.001})),
    );
    assert_eq!(status, 200, "{backend}: {v}");
    past_cache();
    let (status, body) = through(rig, token, &ask);
    assert_eq!(status, 400, "{backend}: {body}");
    assert!(body.contains("llm_monthly_budget"), "{backend}: {body}");
    let (status, v) = call(
        rig,
        "POST",
        &rig.key,
        "/api/organizations/app",
        Some(json!({"llm_monthly_budget": null})),
    );
    assert_eq!(status, 200, "{backend}: {v}");
    other
}

/// An organization key without a base URL never goes where a model prefix points: `ollama/`
/// (LiteLLM's default `http://localhost:11434`) has no public endpoint, so the start fails
/// saying so and the port hears nothing.
fn loopback(rig: &Rig, p: &Parties, backend: Backend) {
    let listener = std::net::TcpListener::bind("127.0.0.1:11434").ok();
    let (status, v) = call(
        rig,
        "PATCH",
        &rig.key,
        &format!("/api/organizations/{}/settings", p.org),
        Some(
            json!({"agent_settings_diff": {"llm": {"model": MODEL, "base_url": null, "api_key": ORG_KEY}}}),
        ),
    );
    assert_eq!(status, 200, "{backend}: {v}");
    let mut body = message("reply: x");
    body["llm_model"] = json!("ollama/llama3");
    let task = start(rig, &p.member, body);
    assert_eq!(task["status"], "ERROR", "{backend}: {task}");
    assert!(
        task["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("base URL"),
        "{backend}: {task}"
    );
    if let Some(l) = listener {
        l.set_nonblocking(true).unwrap();
        assert!(
            l.accept().is_err(),
            "{backend}: something connected to the model prefix's port"
        );
    }
}
