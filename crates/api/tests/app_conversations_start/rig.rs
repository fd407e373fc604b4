//! The app these tests start conversations in (its sandbox specs, LLM and timeouts), a start
//! and its task as the caller sees it, and a test repository.

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::{LlmConfig, StartTimeouts};
use switchboard_testkit::Backend;

use crate::common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use crate::common::status_json;

pub const START: &str = "/api/v1/app-conversations";
pub const LLM_KEY: &str = "sk-test-llm-key-4242";
pub const FAIL_CREATE: &str = "fail-create";
pub const FAIL_BASH: &str = "fail-bash";

pub async fn app(backend: Backend, options: SandboxOptions) -> SandboxApp {
    // The test repositories are temporary directories (issue 18: local repositories only
    // under --allow-local-repositories).
    let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let options = SandboxOptions {
        local_repositories: vec![temp],
        ..options
    };
    spawn_sandbox_app_with(
        backend,
        options,
        &[(FAIL_CREATE, "fail-create"), (FAIL_BASH, "fail-bash")],
        |s| {
            s.with_llm(LlmConfig {
                model: Some("openai/fake-model".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                api_key: Some(LLM_KEY.into()),
                stream: false,
                key_owner: Some("operator"),
            })
            .with_start_timeouts(StartTimeouts {
                sandbox: Duration::from_secs(60),
                setup_script: Duration::from_secs(2),
                ..Default::default()
            })
        },
    )
    .await
}

pub fn hello(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true})
}

pub async fn start(app: &SandboxApp, key: &str, body: Value) -> Value {
    let (status, task) = app.call(Method::POST, START, Some(key), Some(body)).await;
    assert_eq!(status, 200, "{}: start: {task}", app.backend);
    assert_eq!(task["status"], "WORKING", "{task}");
    task
}

/// The task as `key` sees it (`null` when not visible).
pub async fn task(app: &SandboxApp, key: &str, id: &str) -> Value {
    let (status, body) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?ids={id}"),
            Some(key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body[0].clone()
}

/// Polls the task until READY or ERROR (at most 60 s).
pub async fn finished(app: &SandboxApp, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t = task(app, key, id).await;
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "{}: task stuck: {t}",
            app.backend
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// stream-start: the array of snapshots.
pub async fn stream_start(app: &SandboxApp, key: &str, body: Value) -> Vec<Value> {
    let r = app
        .req(Method::POST, &format!("{START}/stream-start"), Some(key))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(r).await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
    body.as_array().expect("a JSON array").clone()
}

pub async fn events_of(app: &SandboxApp, key: &str, conversation: &str, want: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = app
            .call(
                Method::GET,
                &format!("/api/v1/conversation/{conversation}/events/search"),
                Some(key),
                None,
            )
            .await;
        let items = body["items"].as_array().cloned().unwrap_or_default();
        if status == 200 && items.len() >= want {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "{}: events of {conversation}: {status} {body}",
            app.backend
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A git repository at `dir` with a `work` branch holding `.openhands/setup.sh` running
/// `script`.
pub fn git_repo(dir: &Path, script: &str) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    std::fs::create_dir_all(dir.join(".openhands")).unwrap();
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "main\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "main"]);
    git(&["checkout", "-q", "-b", "work"]);
    std::fs::write(dir.join(".openhands/setup.sh"), script).unwrap();
    std::fs::write(dir.join("README"), "work\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "work"]);
    git(&["checkout", "-q", "main"]);
}
