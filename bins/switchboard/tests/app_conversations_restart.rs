//! A conversation start survives Switchboard's death: the real binary is killed (SIGKILL)
//! while a start waits on the agent server's create call; once Switchboard serves again on
//! the same database, the task is `ERROR` with a detail saying why (never `WORKING` or any
//! other step forever), the sandbox that start created is deleted, and a new start reaches
//! `READY`.
//!
//! The restart rule across replicas (issue 20; API.md, "App conversations: start", Restart):
//! when another replica (its own data directory, so its own replica id) serves on the same
//! database instead, it leaves the start alone while the dead replica's claim holds, then
//! fails it the same way once the claim lapses, and runs starts of its own.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const LLM_KEY: &str = "sk-restart-secret-7788";

/// Specs: `slow` (the default: the stand-in answering the create call after 60 s) and
/// `standin`.
fn specs_file(dir: &std::path::Path) -> String {
    let path = dir.join("specs.json");
    let standin = switchboard_testkit::standin_agent_server();
    let spec = json!([
        {"id": "slow", "command": [python(), standin], "initial_env": {"STANDIN_MODE": "slow-create:60"}},
        {"id": "standin", "command": [python(), standin]},
    ]);
    std::fs::write(&path, spec.to_string()).unwrap();
    path.display().to_string()
}

fn serve(url: &str, data: &str, specs: &str) -> Server {
    serve_with(url, data, specs, &[])
}

/// As [`serve`], with more arguments.
fn serve_with(url: &str, data: &str, specs: &str, more: &[&str]) -> Server {
    let mut args = vec![
        "--data-dir",
        data,
        "--sandbox-specs",
        specs,
        "--llm-model",
        "openai/fake-model",
    ];
    args.extend_from_slice(more);
    Server::spawn_with(
        url,
        ServeOptions {
            args,
            env: vec![("LLM_API_KEY", LLM_KEY)],
        },
    )
}

fn task(server: &Server, key: &str, id: &str) -> Value {
    let (code, body) = send_json(
        client()
            .get(server.url(&format!("/api/v1/app-conversations/start-tasks?ids={id}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body[0].clone()
}

fn wait_task(server: &Server, key: &str, id: &str, until: impl Fn(&str) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t = task(server, key, id);
        if until(t["status"].as_str().unwrap_or("")) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "task {id}: {t}; stderr:\n{}",
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start(server: &Server, key: &str, body: Value) -> String {
    let (code, t) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", key)
            .json(&body),
    );
    assert_eq!((code, &t["status"]), (200, &json!("WORKING")), "{t}");
    t["id"].as_str().unwrap().to_owned()
}

fn agent_pid(url: &str) -> Option<u64> {
    let r = client().get(format!("{url}/server_info")).send().ok()?;
    r.json::<Value>().ok()?["pid"].as_u64()
}

fn restart_mid_start(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let specs = specs_file(data.path());
    let server = serve(db.url(), &data_dir, &specs);
    let key = server.bootstrap_key();
    let hello = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let id = start(&server, &key, json!({"initial_message": hello}));
    let t = wait_task(&server, &key, &id, |s| s == "STARTING_CONVERSATION");
    let url = t["agent_server_url"].as_str().unwrap().to_owned();
    let sandbox = t["sandbox_id"].as_str().unwrap().to_owned();
    agent_pid(&direct_agent_url(&url)).expect("the stand-in answers");
    let pid = agent_host_pid(&url).expect("the stand-in's process");

    drop(server); // SIGKILL in the middle of the create call
    let server = serve(db.url(), &data_dir, &specs);
    let t = task(&server, &key, &id);
    assert_eq!(t["status"], "ERROR", "{backend}: {t}");
    let detail = t["detail"].as_str().unwrap();
    assert!(
        detail.contains("restarted") && detail.contains("STARTING_CONVERSATION"),
        "{backend}: {detail}"
    );
    assert!(!t.to_string().contains(LLM_KEY));
    // The sandbox that start created is deleted and its process stopped.
    let (code, body) = send_json(
        client()
            .get(server.url(&format!("/api/v1/sandboxes?id={sandbox}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!((code, &body[0]), (200, &Value::Null), "{backend}: {body}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while agent_host_pid(&url) == Some(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let gone = agent_host_pid(&url) != Some(pid);
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    assert!(gone, "{backend}: the cut-off start's sandbox still runs");

    // The restarted server starts conversations.
    let id = start(
        &server,
        &key,
        json!({"initial_message": hello, "sandbox_spec_id": "standin"}),
    );
    let t = wait_task(&server, &key, &id, |s| s == "READY" || s == "ERROR");
    assert_eq!(t["status"], "READY", "{backend}: {t}");
    let url = t["agent_server_url"].as_str().unwrap().to_owned();
    let pid = agent_host_pid(&url);
    drop(server);
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
}

#[test]
fn restart_mid_start_sqlite() {
    restart_mid_start(Backend::Sqlite);
}

#[test]
fn restart_mid_start_postgres() {
    restart_mid_start(Backend::Postgres);
}

/// The claim's lease in the replica test: a replica renews every 5 s (a third of it), so a
/// killed replica's claim lapses 10 to 15 s after the kill.
const LEASE: &str = "15";

fn kill(pid: Option<u64>) {
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
}

fn another_replica_fails_a_lapsed_start(backend: Backend) {
    let db = TestDatabase::new(backend);
    let (a_dir, b_dir) = (TempDir::new(), TempDir::new());
    let a_data = a_dir.path().display().to_string();
    let b_data = b_dir.path().display().to_string();
    let specs = specs_file(a_dir.path());
    let mut a = serve_with(db.url(), &a_data, &specs, &["--start-claim-lease", LEASE]);
    let key = a.bootstrap_key();
    let hello = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let id = start(&a, &key, json!({"initial_message": hello}));
    let t = wait_task(&a, &key, &id, |s| s == "STARTING_CONVERSATION");
    let url = t["agent_server_url"].as_str().unwrap().to_owned();
    let sandbox = t["sandbox_id"].as_str().unwrap().to_owned();
    let pid = agent_host_pid(&url);
    assert!(pid.is_some(), "{backend}: the stand-in's process");
    let replica_a = std::fs::read_to_string(a_dir.path().join("replica-id")).unwrap();

    a.kill9();
    let killed = Instant::now();
    let b = serve_with(db.url(), &b_data, &specs, &["--start-claim-lease", LEASE]);
    let replica_b = std::fs::read_to_string(b_dir.path().join("replica-id")).unwrap();
    assert_ne!(
        replica_a, replica_b,
        "{backend}: each data directory is a replica"
    );
    // B's start does not fail a start A claimed while A's claim holds.
    let t = task(&b, &key, &id);
    if killed.elapsed() < Duration::from_secs(9) {
        assert_eq!(t["status"], "STARTING_CONVERSATION", "{backend}: {t}");
    }
    let t = wait_task(&b, &key, &id, |s| s == "ERROR");
    assert!(
        killed.elapsed() >= Duration::from_secs(9),
        "{backend}: failed {:?} after the kill, before A's claim lapsed",
        killed.elapsed()
    );
    let detail = t["detail"].as_str().unwrap();
    assert!(
        detail.contains("restarted") && detail.contains("STARTING_CONVERSATION"),
        "{backend}: {detail}"
    );
    // The sandbox that start created is deleted.
    let (code, body) = send_json(
        client()
            .get(b.url(&format!("/api/v1/sandboxes?id={sandbox}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!((code, &body[0]), (200, &Value::Null), "{backend}: {body}");
    kill(pid);

    // B runs starts of its own.
    let id = start(
        &b,
        &key,
        json!({"initial_message": hello, "sandbox_spec_id": "standin"}),
    );
    let t = wait_task(&b, &key, &id, |s| s == "READY" || s == "ERROR");
    assert_eq!(t["status"], "READY", "{backend}: {t}");
    let pid = agent_host_pid(t["agent_server_url"].as_str().unwrap());
    drop(b);
    kill(pid);
}

#[test]
fn another_replica_fails_a_lapsed_start_sqlite() {
    another_replica_fails_a_lapsed_start(Backend::Sqlite);
}

#[test]
fn another_replica_fails_a_lapsed_start_postgres() {
    another_replica_fails_a_lapsed_start(Backend::Postgres);
}
