//! A failure at each step of the pipeline: ERROR, a redacted detail, and the sandbox the start
//! created deleted.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::app_conversations_start::rig::{
    FAIL_BASH, FAIL_CREATE, LLM_KEY, app, finished, git_repo, hello, start,
};
use crate::common::sandboxes::{CRASHES, SandboxApp, SandboxOptions};

/// Starts `body`, expects ERROR; returns the task. The sandbox it started, if any, is deleted.
pub async fn fails(app: &SandboxApp, body: Value, want_in_detail: &str) -> Value {
    let key = app.owner.key.clone();
    let t = start(app, &key, body).await;
    let done = finished(app, &key, t["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "ERROR", "{}: {done}", app.backend);
    let d = done["detail"].as_str().unwrap();
    assert!(d.contains(want_in_detail), "{}: {d}", app.backend);
    assert!(!d.contains(LLM_KEY), "{d}");
    assert!(!d.contains("sbs_"), "a session key in {d}");
    if let Some(s) = done["sandbox_id"].as_str()
        && t["request"]["sandbox_id"].is_null()
    {
        // Deleted: a tombstone, or already cleaned up (then no longer listed at all).
        let record = app.record(s);
        assert!(
            record.is_none_or(|r| r.deleted_at.is_some()),
            "{}: sandbox of a failed start left running: {d}",
            app.backend
        );
    }
    done
}

pub async fn failures_are_error(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let msg = hello("x");
    // WAITING_FOR_SANDBOX: the sandbox crashes; an unknown sandbox.
    fails(
        &app,
        json!({"initial_message": msg, "sandbox_spec_id": CRASHES}),
        "sandbox",
    )
    .await;
    fails(
        &app,
        json!({"initial_message": msg, "sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"}),
        "Sandbox not found",
    )
    .await;
    // The bash endpoint fails.
    fails(
        &app,
        json!({"initial_message": msg, "sandbox_spec_id": FAIL_BASH}),
        "bash",
    )
    .await;
    // PREPARING_REPOSITORY: no such repository; the URL's credentials are masked.
    let done = fails(
        &app,
        json!({"initial_message": msg, "selected_repository": "https://bob:tok-123456@127.0.0.1:9/x.git"}),
        "cloning the repository failed",
    )
    .await;
    assert!(
        !done["detail"].as_str().unwrap().contains("tok-123456"),
        "{done}"
    );
    // RUNNING_SETUP_SCRIPT: fails (printing the LLM key), and runs past its timeout.
    let repo = tempfile::TempDir::new().unwrap();
    git_repo(repo.path(), &format!("echo {LLM_KEY} >&2\nexit 3\n"));
    let done = fails(
        &app,
        json!({"initial_message": msg, "selected_repository": repo.path().display().to_string(),
               "selected_branch": "work"}),
        "setup.sh failed (exit 3)",
    )
    .await;
    assert!(
        done["detail"].as_str().unwrap().contains("**********"),
        "{done}"
    );
    let slow = tempfile::TempDir::new().unwrap();
    git_repo(slow.path(), "sleep 30\n");
    fails(
        &app,
        json!({"initial_message": msg, "selected_repository": slow.path().display().to_string(),
               "selected_branch": "work"}),
        "ran longer than 2 s",
    )
    .await;
    // STARTING_CONVERSATION: the agent server refuses the create.
    fails(
        &app,
        json!({"initial_message": msg, "sandbox_spec_id": FAIL_CREATE}),
        "refused the conversation",
    )
    .await;
    // No live sandbox is left by any of them.
    let store = app.store.clone();
    let live = tokio::task::spawn_blocking(move || {
        switchboard_domain::ports::SandboxStore::live_sandboxes(&*store).unwrap()
    })
    .await
    .unwrap();
    assert!(live.is_empty(), "{backend}: leaked sandboxes: {live:?}");
}
