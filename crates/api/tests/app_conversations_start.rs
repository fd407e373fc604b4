//! Starting app conversations through the API on both backends, against real sandboxes (the
//! stand-in agent server run by the process runtime): the pipeline to READY (with a local
//! repository cloned and its setup script run), the snapshots of stream-start, the events the
//! stand-in posts back landing on the same conversation row, a failure at each step (ERROR,
//! a redacted detail, the sandbox deleted), the 400 and 422 answers, who sees which task,
//! search paging and count, and 20 starts at once.

#[macro_use]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::sandboxes::{CRASHES, SandboxApp, SandboxOptions, spawn_sandbox_app_with};
use common::{detail, status_json};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::ConversationId;
use switchboard_domain::ports::ConversationStore;
use switchboard_domain::services::{LlmConfig, StartTimeouts};
use switchboard_testkit::Backend;

on_both_backends!(
    start_to_ready,
    repository_and_setup_script,
    failures_are_error,
    bad_requests,
    visibility,
    search_and_count,
    concurrent_starts,
);

const START: &str = "/api/v1/app-conversations";
const LLM_KEY: &str = "sk-test-llm-key-4242";
const FAIL_CREATE: &str = "fail-create";
const FAIL_BASH: &str = "fail-bash";

async fn app(backend: Backend, options: SandboxOptions) -> SandboxApp {
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

fn hello(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "run": true})
}

async fn start(app: &SandboxApp, key: &str, body: Value) -> Value {
    let (status, task) = app.call(Method::POST, START, Some(key), Some(body)).await;
    assert_eq!(status, 200, "{}: start: {task}", app.backend);
    assert_eq!(task["status"], "WORKING", "{task}");
    task
}

/// The task as `key` sees it (`null` when not visible).
async fn task(app: &SandboxApp, key: &str, id: &str) -> Value {
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
async fn finished(app: &SandboxApp, key: &str, id: &str) -> Value {
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
async fn stream_start(app: &SandboxApp, key: &str, body: Value) -> Vec<Value> {
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

async fn events_of(app: &SandboxApp, key: &str, conversation: &str, want: usize) -> Vec<Value> {
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

async fn start_to_ready(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let chosen = ConversationId::new_random();
    let t = start(
        &app,
        &key,
        json!({"initial_message": hello("say hello"), "conversation_id": chosen.0.simple().to_string(),
               "secrets": {"GITHUB_TOKEN": "ghp_very_secret"}, "trigger": "openhands_api"}),
    )
    .await;
    assert_eq!(t["created_by_user_id"], app.owner.user_id.to_string());
    assert_eq!(t["app_conversation_id"], Value::Null);
    assert!(!t.to_string().contains("ghp_very_secret"), "{t}");
    assert_eq!(t["request"]["secrets"]["GITHUB_TOKEN"], "**********");
    let id = t["id"].as_str().unwrap().to_owned();
    let done = finished(&app, &key, &id).await;
    assert_eq!(done["status"], "READY", "{backend}: {done}");
    assert_eq!(
        done["app_conversation_id"],
        chosen.0.simple().to_string(),
        "{done}"
    );
    assert!(done["sandbox_id"].is_string(), "{done}");
    assert!(
        done["agent_server_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{done}"
    );
    assert!(!done.to_string().contains(LLM_KEY));

    // The stand-in's webhooks land on the conversation the start created: 4 events, no more.
    let events = events_of(&app, &key, &chosen.to_string(), 4).await;
    assert_eq!(events.len(), 4, "{backend}: {events:?}");
    assert_eq!(events[0]["llm_message"]["content"][0]["text"], "say hello");
    let store = app.store.clone();
    let conv = tokio::task::spawn_blocking(move || store.conversation(chosen).unwrap().unwrap())
        .await
        .unwrap();
    assert_eq!(conv.owner_id, app.owner.user_id);
    assert_eq!(conv.sandbox_id.unwrap().to_string(), done["sandbox_id"]);
    assert_eq!(
        conv.title.as_deref(),
        Some(&format!("Conversation {}", &chosen.0.simple().to_string()[..5])[..])
    );
    // The stand-in reports the run finished.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let store = app.store.clone();
        let c = tokio::task::spawn_blocking(move || store.conversation(chosen).unwrap().unwrap())
            .await
            .unwrap();
        if c.execution_status.map(|s| s.as_str()) == Some("finished") {
            break;
        }
        assert!(Instant::now() < deadline, "{backend}: {c:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A second start into the same (running) sandbox reuses it.
    let sandbox = done["sandbox_id"].as_str().unwrap().to_owned();
    let snaps = stream_start(
        &app,
        &key,
        json!({"initial_message": hello("again"), "sandbox_id": sandbox}),
    )
    .await;
    let statuses: Vec<&str> = snaps
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&"WORKING"), "{snaps:?}");
    assert_eq!(statuses.last(), Some(&"READY"), "{backend}: {snaps:?}");
    assert!(statuses.contains(&"STARTING_CONVERSATION"), "{statuses:?}");
    assert!(!statuses.contains(&"PREPARING_REPOSITORY"), "{statuses:?}");
    assert_eq!(snaps.last().unwrap()["sandbox_id"], sandbox.as_str());
}

/// A git repository at `dir` with a `work` branch holding `.openhands/setup.sh` running
/// `script`.
fn git_repo(dir: &Path, script: &str) {
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

async fn repository_and_setup_script(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let repo = tempfile::TempDir::new().unwrap();
    git_repo(repo.path(), "echo set-up > marker\n");
    for source in [
        repo.path().display().to_string(),
        format!("file://{}", repo.path().display()),
    ] {
        let snaps = stream_start(
            &app,
            &key,
            json!({"initial_message": hello("hi"), "selected_repository": source,
                   "selected_branch": "work", "git_provider": "github"}),
        )
        .await;
        let mut statuses: Vec<&str> = snaps
            .iter()
            .map(|s| s["status"].as_str().unwrap())
            .collect();
        statuses.dedup();
        assert_eq!(
            statuses,
            [
                "WORKING",
                "WAITING_FOR_SANDBOX",
                "PREPARING_REPOSITORY",
                "RUNNING_SETUP_SCRIPT",
                "STARTING_CONVERSATION",
                "READY"
            ],
            "{backend}: {snaps:?}"
        );
        let done = snaps.last().unwrap();
        let sandbox = done["sandbox_id"].as_str().unwrap();
        let conversation: ConversationId = done["app_conversation_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let record = app.record(sandbox).unwrap();
        let handle = switchboard_domain::sandboxes::runtime::RuntimeHandle::from_json(
            record.handle.as_deref().unwrap(),
        )
        .unwrap();
        let workdir = handle.working_dir.join(conversation.0.simple().to_string());
        assert_eq!(
            std::fs::read_to_string(workdir.join("README")).unwrap(),
            "work\n",
            "{backend}: the branch is checked out"
        );
        assert_eq!(
            std::fs::read_to_string(workdir.join("marker")).unwrap(),
            "set-up\n",
            "{backend}: setup.sh ran in the clone"
        );
    }
}

/// Starts `body`, expects ERROR; returns the task. The sandbox it started, if any, is deleted.
async fn fails(app: &SandboxApp, body: Value, want_in_detail: &str) -> Value {
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

async fn failures_are_error(backend: Backend) {
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

async fn bad_requests(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let call = |body: Value| {
        let app = &app;
        let key = key.clone();
        async move { app.call(Method::POST, START, Some(&key), Some(body)).await }
    };
    for (body, ty, loc) in [
        (
            json!({"nope": 1}),
            "extra_forbidden",
            json!(["body", "nope"]),
        ),
        (
            json!({"conversation_id": "abc"}),
            "uuid_parsing",
            json!(["body", "conversation_id"]),
        ),
        (
            json!({"initial_message": {"role": "user", "content": "hi"}}),
            "list_type",
            json!(["body", "initial_message", "content"]),
        ),
        (
            json!({"pr_number": "1"}),
            "list_type",
            json!(["body", "pr_number"]),
        ),
        (
            json!({"trigger": "carrier_pigeon"}),
            "enum",
            json!(["body", "trigger"]),
        ),
        (json!([1]), "model_type", json!(["body"])),
    ] {
        let (status, got) = call(body.clone()).await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_eq!(got["detail"][0]["type"], ty, "{body}: {got}");
        assert_eq!(got["detail"][0]["loc"], loc, "{body}: {got}");
    }
    let (status, got) = app
        .req(Method::POST, START, Some(&key))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .map(|r| async move { status_json(r).await })
        .unwrap()
        .await;
    assert_eq!(
        (status, &got["detail"][0]["type"]),
        (422, &json!("json_invalid")),
        "{got}"
    );
    let (status, got) =
        call(json!({"suggested_task": {"repo": "a/b"}, "initial_message": hello("x")})).await;
    assert_eq!(
        (status, got),
        (
            400,
            detail("Only one of suggested_task and initial_message may be given")
        ),
        "{backend}"
    );
    let parent = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
    let (status, got) = call(json!({"parent_conversation_id": parent})).await;
    assert_eq!(
        (status, got),
        (
            400,
            detail(&format!("Parent conversation not found: {parent}"))
        ),
        "{backend}"
    );
    // A conversation id in use by a conversation the caller sees: 409 (issue 24 item 5).
    let t = start(
        &app,
        &key,
        json!({"initial_message": hello("x"), "sandbox_id": parent}),
    )
    .await;
    let done = finished(&app, &key, t["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "ERROR");
    let store = app.store.clone();
    let used = ConversationId::new_random();
    let sandbox_conv = switchboard_domain::conversations::Conversation {
        id: used,
        org_id: app.org,
        owner_id: app.owner.user_id,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: switchboard_domain::time_input::now_micros(),
        updated_at: switchboard_domain::time_input::now_micros(),
    };
    tokio::task::spawn_blocking(move || {
        store
            .upsert_conversation_info(
                &sandbox_conv,
                "{}",
                switchboard_domain::time_input::now_micros(),
            )
            .unwrap()
    })
    .await
    .unwrap();
    let (status, got) = call(json!({"conversation_id": used.to_string()})).await;
    assert_eq!(
        (status, got),
        (409, detail(&format!("Conversation {used} already exists"))),
        "{backend}"
    );
    // Batch get: no ids (422), an invalid one (422 at its index), 101 (400).
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, &got["detail"][0]["type"]),
        (422, &json!("missing")),
        "{got}"
    );
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?ids={parent}&ids=zzz"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 422, "{got}");
    assert_eq!(got["detail"][0]["loc"], json!(["query", "ids", 1]), "{got}");
    let many: Vec<String> = (0..101).map(|_| format!("ids={parent}")).collect();
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?{}", many.join("&")),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, got),
        (
            400,
            detail("Cannot request more than 100 start tasks at once, got 101")
        )
    );
    let hundred: Vec<String> = (0..100).map(|_| format!("ids={parent}")).collect();
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?{}", hundred.join("&")),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got.as_array().unwrap().len(), 100);
    // Search: a bad sort order, a bad filter.
    for q in [
        "sort_order=NEWEST",
        "conversation_id__eq=x",
        "created_at__gte=yesterday",
        "limit=0",
    ] {
        let (status, got) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks/search?{q}"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(status, 422, "{backend}: {q}: {got}");
    }
    // No credentials.
    let (status, _) = app.call(Method::POST, START, None, Some(json!({}))).await;
    assert_eq!(status, 401);
}

async fn visibility(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    // Starts that fail fast (an unknown sandbox) make tasks without sandboxes.
    let body = json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"});
    let owners = start(&app, &app.owner.key, body.clone()).await;
    let members = start(&app, &app.member.key, body.clone()).await;
    let (o, m) = (
        owners["id"].as_str().unwrap(),
        members["id"].as_str().unwrap(),
    );
    finished(&app, &app.owner.key, o).await;
    finished(&app, &app.member.key, m).await;
    let count = |key: String| {
        let app = &app;
        async move {
            let (s, n) = app
                .call(
                    Method::GET,
                    &format!("{START}/start-tasks/count"),
                    Some(&key),
                    None,
                )
                .await;
            assert_eq!(s, 200);
            n.as_u64().unwrap()
        }
    };
    for (who, key, sees_owner, sees_member, n) in [
        ("owner", &app.owner.key, true, true, 2),
        ("admin", &app.admin.key, true, true, 2),
        ("member", &app.member.key, false, true, 1),
        ("other org", &app.non_member.key, false, false, 0),
    ] {
        let (status, got) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={o}&ids={m}"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(status, 200, "{backend}: {who}: {got}");
        assert_eq!(got[0].is_object(), sees_owner, "{backend}: {who}: {got}");
        assert_eq!(got[1].is_object(), sees_member, "{backend}: {who}: {got}");
        assert_eq!(count(key.clone()).await, n, "{backend}: {who}");
        let (_, page) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks/search"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(
            page["items"].as_array().unwrap().len() as u64,
            n,
            "{who}: {page}"
        );
    }
}

async fn search_and_count(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let t = start(
            &app,
            &key,
            json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"}),
        )
        .await;
        finished(&app, &key, t["id"].as_str().unwrap()).await;
        ids.push(t);
    }
    for (order, reversed) in [
        ("CREATED_AT", false),
        ("CREATED_AT_DESC", true),
        ("UPDATED_AT", false),
        ("UPDATED_AT_DESC", true),
    ] {
        let mut seen = Vec::new();
        let mut page_id: Option<String> = None;
        loop {
            let mut path = format!("{START}/start-tasks/search?limit=2&sort_order={order}");
            if let Some(p) = &page_id {
                path.push_str(&format!("&page_id={p}"));
            }
            let (status, page) = app.call(Method::GET, &path, Some(&key), None).await;
            assert_eq!(status, 200, "{page}");
            for item in page["items"].as_array().unwrap() {
                seen.push(item["id"].as_str().unwrap().to_owned());
            }
            // A start created while paging does not disturb the ascending orders' pages seen.
            match page["next_page_id"].as_str() {
                Some(p) => page_id = Some(p.to_owned()),
                None => break,
            }
        }
        let mut want: Vec<String> = ids
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect();
        if reversed {
            want.reverse();
        }
        if order.starts_with("CREATED") {
            assert_eq!(seen, want, "{backend}: {order}");
        } else {
            assert_eq!(seen.len(), 5, "{backend}: {order}");
        }
    }
    // A cursor of one order is refused under another.
    let (_, page) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks/search?limit=1&sort_order=CREATED_AT"),
            Some(&key),
            None,
        )
        .await;
    let p = page["next_page_id"].as_str().unwrap();
    let (status, _) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks/search?page_id={p}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 422, "{backend}");
    // Filters.
    let conv = ids[2]["request"]["conversation_id"].clone();
    assert!(conv.is_null());
    let (_, n) = app
        .call(
            Method::GET,
            &format!(
                "{START}/start-tasks/count?created_at__gte={}",
                ids[3]["created_at"].as_str().unwrap()
            ),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(n, json!(2), "{backend}");
    let t = start(&app, &key, json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b", "conversation_id": "11111111-2222-4333-8444-555555555555"})).await;
    finished(&app, &key, t["id"].as_str().unwrap()).await;
    let (_, page) = app
        .call(
            Method::GET,
            &format!(
                "{START}/start-tasks/search?conversation_id__eq=11111111222243338444555555555555"
            ),
            Some(&key),
            None,
        )
        .await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{backend}: {page}");
    assert_eq!(items[0]["id"], t["id"]);
}

async fn concurrent_starts(backend: Backend) {
    let app = app(
        backend,
        SandboxOptions {
            warm: 0,
            max_running: 25,
            ..SandboxOptions::default()
        },
    )
    .await;
    let key = app.owner.key.clone();
    let began = Instant::now();
    let mut pending = Vec::new();
    for i in 0..20 {
        let app = &app;
        let key = key.clone();
        pending.push(async move {
            let t = start(
                app,
                &key,
                json!({"initial_message": hello(&format!("n{i}"))}),
            )
            .await;
            finished(app, &key, t["id"].as_str().unwrap()).await
        });
    }
    let done = futures_util::future::join_all(pending).await;
    let mut sandboxes = std::collections::HashSet::new();
    let mut conversations = std::collections::HashSet::new();
    for d in &done {
        assert_eq!(d["status"], "READY", "{backend}: {d}");
        sandboxes.insert(d["sandbox_id"].as_str().unwrap().to_owned());
        conversations.insert(d["app_conversation_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        (sandboxes.len(), conversations.len()),
        (20, 20),
        "{backend}"
    );
    eprintln!(
        "{backend}: 20 concurrent starts READY in {:?}",
        began.elapsed()
    );
}
