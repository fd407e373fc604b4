//! Where a start may clone from (issue 18, "Repository sources"), on both backends: every
//! accepted form reaches the clone (a local repository under `--allow-local-repositories`
//! to READY; `owner/repo` with a `git_provider` as the provider's HTTPS URL; `https://`,
//! `ssh://` and `user@host:path` as given), and every refused one (other transports such as
//! `ext::` and `fd::`, a leading `-`, option-looking branches, local paths outside the
//! allowed directories) is a 422 naming the field, with no task written and no sandbox
//! started.

use crate::common;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::ports::SandboxStore;
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

on_both_backends!(refused_sources_are_422, accepted_sources_reach_the_clone);

const START: &str = "/api/v1/app-conversations";

/// A git repository with one commit on `main`, in a directory of its own under `parent`.
fn git_repo(parent: &std::path::Path, name: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "main\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "main"]);
    dir
}

/// The app, allowing local repositories under `allowed` only.
async fn app(backend: Backend, allowed: &std::path::Path) -> SandboxApp {
    spawn_sandbox_app_with(
        backend,
        SandboxOptions {
            local_repositories: vec![std::fs::canonicalize(allowed).unwrap()],
            ..SandboxOptions::default()
        },
        &[],
        |s| {
            s.with_llm(LlmConfig {
                model: Some("openai/fake-model".into()),
                ..Default::default()
            })
        },
    )
    .await
}

fn hello() -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
}

/// The refused starts of `refused_sources_are_422` and the field each names: `outside` is a
/// repository outside the allowed directory `allowed`.
fn refused_cases(allowed: &std::path::Path, outside: &std::path::Path) -> Vec<(Value, Value)> {
    let repo = json!(["body", "selected_repository"]);
    let branch = json!(["body", "selected_branch"]);
    vec![
        (
            json!({"selected_repository": "ext::sh -c touch% /tmp/pwned"}),
            repo.clone(),
        ),
        (json!({"selected_repository": "ext::sh"}), repo.clone()),
        (json!({"selected_repository": "fd::7"}), repo.clone()),
        (json!({"selected_repository": "-uhelp"}), repo.clone()),
        (
            json!({"selected_repository": "--upload-pack=touch /tmp/x"}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": "http://127.0.0.1:9/r.git"}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": "git://127.0.0.1:9/r.git"}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": "ssh://-oProxyCommand=touch%20x/r"}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": "git@-oProxyCommand=x:r"}),
            repo.clone(),
        ),
        (json!({"selected_repository": "o/../r"}), repo.clone()),
        (
            json!({"selected_repository": "https://github.com/o/r\u{e9}"}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": outside.display().to_string()}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": format!("file://{}", outside.display())}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": format!("{}/../elsewhere/r", allowed.display())}),
            repo.clone(),
        ),
        (
            json!({"selected_repository": "relative/path/../x"}),
            repo.clone(),
        ),
        (json!({"selected_repository": "/etc"}), repo.clone()),
        (
            json!({"selected_repository": "https://github.com/o/r", "selected_branch": "--upload-pack=x"}),
            branch.clone(),
        ),
        (
            json!({"selected_repository": "https://github.com/o/r", "selected_branch": "-b"}),
            branch.clone(),
        ),
        (
            json!({"selected_repository": "https://github.com/o/r", "selected_branch": "a..b"}),
            branch.clone(),
        ),
    ]
}

async fn refused_sources_are_422(backend: Backend) {
    let root = tempfile::TempDir::new().unwrap();
    let allowed = root.path().join("allowed");
    let elsewhere = root.path().join("elsewhere");
    git_repo(&allowed, "r");
    let outside = git_repo(&elsewhere, "r");
    let app = app(backend, &allowed).await;
    let key = app.owner.key.clone();
    let cases = refused_cases(&allowed, &outside);
    for (mut body, loc) in cases {
        body["initial_message"] = hello();
        let (status, got) = app
            .call(Method::POST, START, Some(&key), Some(body.clone()))
            .await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_eq!(got["detail"][0]["type"], "value_error", "{body}: {got}");
        assert_eq!(got["detail"][0]["loc"], loc, "{body}: {got}");
    }
    // Nothing was started or written: no sandbox, no task.
    let store = app.store.clone();
    let live = tokio::task::spawn_blocking(move || store.live_sandboxes().unwrap())
        .await
        .unwrap();
    assert!(live.is_empty(), "{backend}: {live:?}");
    let (status, page) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks/search"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, page["items"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{page}"
    );
}

/// Starts `body` and waits for its task to end; returns the final task.
async fn run(app: &SandboxApp, key: &str, mut body: Value) -> Value {
    body["initial_message"] = hello();
    let (status, task) = app
        .call(Method::POST, START, Some(key), Some(body.clone()))
        .await;
    assert_eq!(status, 200, "{}: {body}: {task}", app.backend);
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, tasks) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={id}"),
                Some(key),
                None,
            )
            .await;
        let t = tasks[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            return t;
        }
        assert!(Instant::now() < deadline, "{}: stuck: {t}", app.backend);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn accepted_sources_reach_the_clone(backend: Backend) {
    let root = tempfile::TempDir::new().unwrap();
    let allowed = root.path().join("allowed");
    let repo = git_repo(&allowed, "r");
    let app = app(backend, &allowed).await;
    let key = app.owner.key.clone();
    // Local repositories under the allowed directory: cloned, READY.
    for source in [
        repo.display().to_string(),
        format!("file://{}", repo.display()),
    ] {
        let t = run(
            &app,
            &key,
            json!({"selected_repository": source, "selected_branch": "main"}),
        )
        .await;
        assert_eq!(t["status"], "READY", "{backend}: {source}: {t}");
    }
    // Remote forms pass the check and reach git, which cannot clone them (nothing listens on
    // port 9; the provider repositories do not exist): ERROR at the clone, with git's words
    // naming the URL a slug became.
    for (body, seen) in [
        (
            json!({"selected_repository": "no-such-owner-5f3a9c/none", "git_provider": "github"}),
            "github.com/no-such-owner-5f3a9c/none.git",
        ),
        (
            json!({"selected_repository": "no-such-group-5f3a9c/sub/none", "git_provider": "gitlab"}),
            "gitlab.com/no-such-group-5f3a9c/sub/none.git",
        ),
        (
            json!({"selected_repository": "no-such-owner-5f3a9c/none"}),
            "github.com/no-such-owner-5f3a9c/none.git",
        ),
        (
            json!({"selected_repository": "o/r", "git_provider": "bitbucket_data_center"}),
            "has no public host",
        ),
        (
            json!({"selected_repository": "https://127.0.0.1:9/r.git"}),
            "127.0.0.1",
        ),
        (
            json!({"selected_repository": "ssh://git@127.0.0.1:9/r.git"}),
            "",
        ),
        (
            json!({"selected_repository": "git@127.0.0.1:r.git", "selected_branch": "feature/x"}),
            "",
        ),
    ] {
        let t = run(&app, &key, body.clone()).await;
        assert_eq!(t["status"], "ERROR", "{backend}: {body}: {t}");
        let detail = t["detail"].as_str().unwrap();
        assert!(
            detail.contains("cloning the repository failed")
                || detail.contains("the repository cannot be cloned"),
            "{body}: {detail}"
        );
        assert!(detail.contains(seen), "{body}: {detail}");
    }
}
