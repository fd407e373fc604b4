//! No part of a start request's secret in the server log (issue 24 items 1 and 2): the real
//! binary, every log at `debug` (Switchboard's at `trace`), starts conversations (the stand-in
//! agent server, which checks secrets as the real one does) with request secrets, one of which
//! its agent server echoes in a failure so that it straddles where a detail used to be cut,
//! and one with a clone URL holding a token. No run of 8 characters of any of them may appear
//! in stderr or in a task.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const TOKEN: &str = "ghp_Wq3Lz8Nc5Rv1Tx7Kp2Ym9Hb4Jd6Gf0Se8Ua3";
const CLONE_TOKEN: &str = "glpat-Hn4Vb7Qs2Wz9Xc5Lk8Mt";

fn message(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "run": false})
}

/// Starts and polls the task to READY or ERROR.
fn run(server: &Server, key: &str, body: Value) -> Value {
    let (code, task) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", key)
            .json(&body),
    );
    assert_eq!(code, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = send_json(
            client()
                .get(server.url(&format!("/api/v1/app-conversations/start-tasks?ids={id}")))
                .header("X-Access-Token", key),
        );
        if body[0]["status"] == "READY" || body[0]["status"] == "ERROR" {
            return body[0].clone();
        }
        assert!(Instant::now() < deadline, "stuck: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The runs of 8 characters of `secret` that `text` holds.
fn fragments(text: &str, secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(8)
        .map(|w| w.iter().collect::<String>())
        .filter(|w| text.contains(w.as_str()))
        .collect()
}

fn secrets_stay_out_of_the_log(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let _sandboxes = EndProcessesUnder(data.path().to_path_buf());
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{"id": "standin", "command": [python(), switchboard_testkit::standin_agent_server()]}])
            .to_string(),
    )
    .unwrap();
    let data_dir = data.path().display().to_string();
    let specs = specs.display().to_string();
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--llm-model",
                "openai/fake-model",
                "--llm-base-url",
                "http://127.0.0.1:9/v1",
            ],
            env: vec![("SWITCHBOARD_LOG", "debug,switchboard=trace")],
        },
    );
    let key = server.bootstrap_key();
    let (code, sandbox) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{sandbox}");
    let sandbox = sandbox["id"].as_str().unwrap().to_owned();
    wait_sandbox_status(&server, &key, &sandbox, "RUNNING");
    let mut tasks = Vec::new();
    let mut problems = Vec::new();
    // Accepted by the agent server: READY.
    let ready = run(
        &server,
        &key,
        json!({"initial_message": message("hello"), "sandbox_id": sandbox,
               "secrets": {"GITHUB_TOKEN": TOKEN}}),
    );
    if ready["status"] != "READY" {
        problems.push(format!("a start with secrets is not READY: {ready}"));
    }
    tasks.push(ready);
    // Echoed back in failures that end around character 200 of the answer.
    for end in [199, 200, 201, 230] {
        let t = run(
            &server,
            &key,
            json!({"initial_message": message(&format!("[standin:fail-create-echo:{end}]")),
                   "sandbox_id": sandbox, "secrets": {"GITHUB_TOKEN": TOKEN}}),
        );
        assert_eq!(t["status"], "ERROR", "{backend}: {t}");
        tasks.push(t);
    }
    // A token in a clone URL (the clone fails: nothing listens there).
    let t = run(
        &server,
        &key,
        json!({"initial_message": message("hi"), "sandbox_id": sandbox,
               "selected_repository": format!("https://oauth2:{CLONE_TOKEN}@127.0.0.1:9/team/repo.git")}),
    );
    assert_eq!(t["status"], "ERROR", "{backend}: {t}");
    tasks.push(t);

    let log = server.stderr_lines().join("\n");
    assert!(
        log.contains("conversation start failed"),
        "{backend}: the failures are logged"
    );
    let mut leaks = problems;
    for secret in [TOKEN, CLONE_TOKEN] {
        for f in fragments(&log, secret) {
            let line = log.lines().find(|l| l.contains(&f)).unwrap_or_default();
            leaks.push(format!("log: {f}: {line}"));
        }
        for t in &tasks {
            for f in fragments(&t.to_string(), secret) {
                leaks.push(format!("task: {f}: {t}"));
            }
        }
    }
    let (code, _) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{sandbox}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200);
    assert!(leaks.is_empty(), "{backend}:\n{}", leaks.join("\n"));
}

#[test]
fn start_secrets_stay_out_of_the_log_sqlite() {
    secrets_stay_out_of_the_log(Backend::Sqlite);
}

#[test]
fn start_secrets_stay_out_of_the_log_postgres() {
    secrets_stay_out_of_the_log(Backend::Postgres);
}
