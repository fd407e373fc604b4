//! A conversation start survives Switchboard's death: the real binary is killed (SIGKILL)
//! while a start waits on the agent server's create call; once Switchboard serves again on
//! the same database, the task is `ERROR` with a detail saying why (never `WORKING` or any
//! other step forever), the sandbox that start created is deleted, and a new start reaches
//! `READY`.

mod common;

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
    Server::spawn_with(
        url,
        ServeOptions {
            args: vec![
                "--data-dir",
                data,
                "--sandbox-specs",
                specs,
                "--llm-model",
                "openai/fake-model",
            ],
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
    agent_pid(&url).expect("the stand-in answers");
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
