//! What a conversation start does with what it must keep secret (issue 24 items 1 and 2), on
//! both backends, against real sandboxes (the stand-in agent server, which checks `secrets` as
//! the real agent server 1.58.2 does): request secrets reach the agent server as
//! `StaticSecret` sources and the start is `READY`; an agent server that echoes a secret in a
//! failure, so that it ends exactly at, just before or just after where a detail used to be cut
//! (200 characters), or echoes only a part of it, never puts 8 characters of it in the task's
//! `detail`; a clone URL's credentials never appear in any echo of the request (task, stream,
//! search), while the clone itself is given the real URL.

use crate::common;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use common::status_json;
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

on_both_backends!(
    secrets_reach_the_agent_server,
    redaction_comes_before_any_cut,
    clone_credentials_are_never_echoed
);

const START: &str = "/api/v1/app-conversations";
/// A GitHub-token-like secret: 40 characters.
const TOKEN: &str = "ghp_R8vQ2mXk7LpZ4nWc9tYb3HdJ6sFa1GeUo0Ii";
const NPM: &str = "npm_tTq5Zr2WvXp8KmLs3NbY";

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| {
        s.with_llm(LlmConfig {
            model: Some("openai/fake-model".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-test-llm-key-4242".into()),
            stream: false,
            key_owner: Some("operator"),
        })
    })
    .await
}

fn message(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "run": false})
}

/// Starts and waits for READY or ERROR (60 s): the final task.
async fn run(app: &SandboxApp, key: &str, body: Value) -> Value {
    let (status, task) = app.call(Method::POST, START, Some(key), Some(body)).await;
    assert_eq!(status, 200, "{}: {task}", app.backend);
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={id}"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let t = body[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(Instant::now() < deadline, "{}: stuck: {t}", app.backend);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// What the stand-in at `url` recorded under `/standin/<what>`.
async fn recorded(url: &str, what: &str) -> Vec<Value> {
    reqwest::get(format!("{url}/standin/{what}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Every run of 8 characters of `secret` found in `text`.
fn fragments_in(text: &str, secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(8)
        .map(|w| w.iter().collect::<String>())
        .filter(|w| text.contains(w.as_str()))
        .collect()
}

async fn secrets_reach_the_agent_server(backend: Backend) {
    let app = app(backend).await;
    let key = app.member.key.clone();
    let done = run(
        &app,
        &key,
        json!({"initial_message": message("hello"),
               "secrets": {"GITHUB_TOKEN": TOKEN, "NPM_TOKEN": NPM}}),
    )
    .await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    assert_eq!(
        done["request"]["secrets"],
        json!({"GITHUB_TOKEN": "**********", "NPM_TOKEN": "**********"})
    );
    assert!(fragments_in(&done.to_string(), TOKEN).is_empty(), "{done}");
    let url = done["agent_server_url"].as_str().unwrap();
    let creates = recorded(url, "creates").await;
    assert_eq!(creates.len(), 1, "{backend}");
    assert_eq!(
        creates[0]["secrets"],
        json!({
            "GITHUB_TOKEN": {"kind": "StaticSecret", "value": TOKEN},
            "NPM_TOKEN": {"kind": "StaticSecret", "value": NPM},
        }),
        "{backend}"
    );
}

async fn redaction_comes_before_any_cut(backend: Backend) {
    let app = app(backend).await;
    let key = app.member.key.clone();
    let sandbox = app.start(&key, None).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.wait_status(&key, &sandbox, "RUNNING").await;
    // (where the echo ends in the agent server's answer, which part of the secret it echoes)
    let mut cases: Vec<(usize, Option<(usize, usize)>)> = [195, 199, 200, 201, 202, 220, 239, 240]
        .into_iter()
        .map(|end| (end, None))
        .collect();
    cases.extend([
        (200, Some((0, 12))),  // a prefix, cut by the agent server
        (200, Some((0, 8))),   // the shortest prefix masked
        (150, Some((10, 24))), // a piece from the middle
        (201, Some((25, 40))), // the end
    ]);
    for (end, part) in cases {
        let marker = match part {
            None => format!("[standin:fail-create-echo:{end}]"),
            Some((a, b)) => format!("[standin:fail-create-echo:{end}:{a}:{b}]"),
        };
        let done = run(
            &app,
            &key,
            json!({"initial_message": message(&marker), "sandbox_id": sandbox,
                   "secrets": {"GITHUB_TOKEN": TOKEN}}),
        )
        .await;
        assert_eq!(done["status"], "ERROR", "{backend}: {marker}: {done}");
        let detail = done["detail"].as_str().unwrap();
        assert!(
            detail.contains("HTTP 500") && detail.contains("**********"),
            "{backend}: {marker}: {detail}"
        );
        let leaked = fragments_in(detail, TOKEN);
        assert!(
            leaked.is_empty(),
            "{backend}: {marker}: the detail holds {leaked:?}: {detail}"
        );
    }
}

async fn clone_credentials_are_never_echoed(backend: Backend) {
    let app = app(backend).await;
    let key = app.member.key.clone();
    let secret = "glpat-Xy7Qm2Lk9PzR4tVb8NwC";
    let repo = format!("https://oauth2:{secret}@127.0.0.1:9/team/repo.git");
    // A sandbox of its own, kept after the failure, so its record of commands can be read.
    let sandbox = app.start(&key, None).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.wait_status(&key, &sandbox, "RUNNING").await;
    let body = json!({
        "initial_message": message("hi"),
        "sandbox_id": sandbox,
        "selected_repository": repo,
        "selected_branch": "main",
        "plugins": [{"source": format!("https://deploy:{secret}@127.0.0.1:9/plugin.git")}],
    });
    let r = app
        .req(Method::POST, &format!("{START}/stream-start"), Some(&key))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, snaps) = status_json(r).await;
    assert_eq!(status, 200, "{backend}: {snaps}");
    let snaps = snaps.as_array().unwrap().clone();
    let last = snaps.last().unwrap().clone();
    assert_eq!(last["status"], "ERROR", "{backend}: {last}");
    for (what, text) in snaps
        .iter()
        .map(|s| ("a stream-start snapshot", s.to_string()))
        .chain([("the task's detail", last["detail"].to_string())])
    {
        assert!(!text.contains(secret), "{backend}: {what}: {text}");
    }
    let id = last["id"].as_str().unwrap();
    assert_eq!(
        last["request"]["selected_repository"], "https://**********@127.0.0.1:9/team/repo.git",
        "{backend}"
    );
    // The batch get and the search echo the request the same way.
    for path in [
        format!("{START}/start-tasks?ids={id}"),
        format!("{START}/start-tasks/search"),
    ] {
        let (status, body) = app.call(Method::GET, &path, Some(&key), None).await;
        assert_eq!(status, 200, "{body}");
        assert!(
            !body.to_string().contains(secret),
            "{backend}: {path}: {body}"
        );
        assert!(
            body.to_string()
                .contains("https://**********@127.0.0.1:9/team/repo.git"),
            "{backend}: {path}: {body}"
        );
    }
    // The clone was given the real URL.
    let url = last["agent_server_url"].as_str().unwrap();
    let commands = recorded(url, "commands").await;
    assert!(
        commands.iter().any(|c| c
            .as_str()
            .is_some_and(|c| c.starts_with("git clone") && c.contains(&repo))),
        "{backend}: {commands:?}"
    );
}
