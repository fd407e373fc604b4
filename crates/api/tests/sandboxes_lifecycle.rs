//! Sandboxes run by Switchboard, through the API on both backends, with real processes (the
//! stand-in agent server): start → RUNNING, every status, the session key and URL only when
//! RUNNING, webhooks authenticated by the started sandbox's key with no registration, pause,
//! resume, a process killed behind Switchboard's back (MISSING), failed starts (ERROR),
//! delete (the key stops authenticating, the process and directory go), paging.

use crate::common;

use std::time::{Duration, Instant};

use common::sandboxes::{CRASHES, NO_SUCH_COMMAND, SandboxOptions, spawn_sandbox_app, success};
use common::{detail, webhook_events_path};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_sandbox::procfs;
use switchboard_testkit::Backend;

on_both_backends!(lifecycle, failures_are_error, registered_sandboxes, paging);

/// `GET {url}/alive` answered within `timeout`.
async fn answers(url: &str, timeout: Duration) -> bool {
    let client = reqwest::Client::builder().timeout(timeout).build().unwrap();
    client
        .get(format!("{url}/alive"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

async fn lifecycle(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let started = app.start(&key, None).await;
    assert_eq!(started["status"], "STARTING", "{backend}: {started}");
    assert_eq!(started["session_api_key"], Value::Null);
    assert_eq!(started["exposed_urls"], Value::Null);
    assert_eq!(started["sandbox_spec_id"], "standin");
    assert_eq!(
        started["created_by_user_id"],
        app.owner.user_id.to_string(),
        "{backend}"
    );
    let id = started["id"].as_str().unwrap().to_owned();

    // RUNNING: the key and the agent server's URL are shown, and the URL answers.
    let running = app.wait_status(&key, &id, "RUNNING").await;
    let session = running["session_api_key"].as_str().unwrap().to_owned();
    assert!(session.starts_with("sbs_"), "{backend}: {running}");
    let urls = running["exposed_urls"].as_array().unwrap();
    assert_eq!(urls.len(), 1);
    assert_eq!(urls[0]["name"], "AGENT_SERVER");
    let url = urls[0]["url"].as_str().unwrap().to_owned();
    assert!(url.ends_with(&format!(":{}", urls[0]["port"])), "{running}");
    assert!(
        answers(&url, Duration::from_secs(2)).await,
        "{backend}: {url}"
    );
    // The key at rest is sealed, never the key itself.
    let record = app.record(&id).unwrap();
    assert!(!record.session_key_sealed.unwrap().contains(&session));

    // Its webhooks authenticate with that key: no registration step.
    let conversation = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
    let info =
        json!({"id": conversation, "title": "from a started sandbox", "execution_status": "idle"});
    let (status, body) = app
        .post_webhook(
            "/api/v1/webhooks/conversations",
            Some(&session),
            info.to_string(),
        )
        .await;
    assert_eq!((status, body), (200, success()), "{backend}");
    let stored = app.conversation(conversation).await.unwrap();
    assert_eq!(
        (stored.org_id, stored.owner_id),
        (app.org, app.owner.user_id)
    );

    // Pause: every process of the group stopped, PAUSED, the agent server silent.
    let pid = app.process(&id).pid;
    let (status, body) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (200, success()), "{backend}");
    let paused = app.info(&key, &id).await;
    assert_eq!(paused["status"], "PAUSED", "{backend}");
    assert_eq!(paused["session_api_key"], Value::Null);
    assert_eq!(paused["exposed_urls"], Value::Null);
    assert!(procfs::read_stat(pid).unwrap().is_stopped());
    assert!(
        !answers(&url, Duration::from_millis(500)).await,
        "{backend}: paused yet answering"
    );
    // Pausing again succeeds.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200);

    // Resume (32-hex id form): RUNNING again, the same process.
    let simple = id.replace('-', "");
    let (status, body) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{simple}/resume"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (200, success()), "{backend}");
    app.wait_status(&key, &id, "RUNNING").await;
    assert_eq!(app.process(&id).pid, pid, "{backend}: nothing restarted");
    assert!(answers(&url, Duration::from_secs(2)).await);

    // Killed behind Switchboard's back: MISSING, and pause/resume say why.
    rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let missing = app.wait_status(&key, &id, "MISSING").await;
    assert_eq!(missing["session_api_key"], Value::Null);
    let (status, body) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/resume"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 409, "{backend}: {body}");
    assert!(
        body["detail"].as_str().unwrap().contains("MISSING"),
        "{body}"
    );

    // A second sandbox: delete it with OpenHands' form; its key stops authenticating, its
    // process and directory go; conversations stay.
    let second = app.start(&key, None).await;
    let id2 = second["id"].as_str().unwrap().to_owned();
    let key2 = app.wait_status(&key, &id2, "RUNNING").await["session_api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let identity = app.process(&id2);
    let dir = app.record(&id2).unwrap();
    let dir = switchboard_domain::sandboxes::runtime::RuntimeHandle::from_json(
        dir.handle.as_deref().unwrap(),
    )
    .unwrap()
    .working_dir;
    assert!(dir.is_dir());
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/anything?sandbox_id={id2}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (200, success()), "{backend}");
    assert_eq!(app.info(&key, &id2).await, Value::Null);
    let (status, _) = app
        .post_webhook(&webhook_events_path(conversation), Some(&key2), "[]")
        .await;
    assert_eq!(
        status, 401,
        "{backend}: a deleted sandbox's key still authenticates"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while (!procfs::live_group_members(identity.pid).is_empty() || dir.exists())
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        procfs::live_group_members(identity.pid).is_empty(),
        "{backend}: still running"
    );
    assert!(!dir.exists(), "{backend}: directory left");
    // Deleting again: 404; the path form too.
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id2}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (404, detail("Not Found")));
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (200, success()));
    assert!(
        app.conversation(conversation).await.is_some(),
        "conversations stay"
    );
}

async fn failures_are_error(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    for spec in [NO_SUCH_COMMAND, CRASHES] {
        let started = app.start(&key, Some(spec)).await;
        let id = started["id"].as_str().unwrap();
        let error = app.wait_status(&key, id, "ERROR").await;
        assert_eq!(error["sandbox_spec_id"], spec, "{backend}");
        assert_eq!(error["session_api_key"], Value::Null);
        let (status, _) = app
            .call(
                Method::POST,
                &format!("/api/v1/sandboxes/{id}/pause"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(status, 409, "{backend}: pause of an ERROR sandbox");
    }
    // A JSON null body is no body (`oneOf [null, StartSandboxRequest]` in the document).
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/sandboxes?sandbox_spec_id=nope0",
            Some(&key),
            Some(Value::Null),
        )
        .await;
    assert_eq!(
        (status, body),
        (400, detail("Unknown sandbox spec: \"nope0\"")),
        "{backend}: a null body"
    );
    // The body form names the spec too; an unknown one is 400 naming it.
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/sandboxes",
            Some(&key),
            Some(json!({"sandbox_spec_id": "nope"})),
        )
        .await;
    assert_eq!(
        (status, body),
        (400, detail("Unknown sandbox spec: \"nope\"")),
        "{backend}"
    );
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/sandboxes?sandbox_spec_id=nope2",
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, body),
        (400, detail("Unknown sandbox spec: \"nope2\""))
    );
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/sandboxes",
            Some(&key),
            Some(json!({"sandbox_spec_id": NO_SUCH_COMMAND})),
        )
        .await;
    assert_eq!(
        (status, body["sandbox_spec_id"].clone()),
        (200, json!(NO_SUCH_COMMAND))
    );

    // Every 422 and 400.
    let ids101: String = (0..101)
        .map(|_| format!("id={}", uuid::Uuid::new_v4()))
        .collect::<Vec<_>>()
        .join("&");
    let cases: Vec<(Method, String, Option<Value>, u16, Value)> = vec![
        (
            Method::GET,
            "/api/v1/sandboxes/search?limit=0".into(),
            None,
            422,
            json!(["query", "limit"]),
        ),
        (
            Method::GET,
            "/api/v1/sandboxes/search?limit=101".into(),
            None,
            422,
            json!(["query", "limit"]),
        ),
        (
            Method::GET,
            "/api/v1/sandboxes/search?limit=x".into(),
            None,
            422,
            json!(["query", "limit"]),
        ),
        (
            Method::GET,
            "/api/v1/sandboxes/search?page_id=bogus".into(),
            None,
            422,
            json!(["query", "page_id"]),
        ),
        (
            Method::GET,
            "/api/v1/sandbox-specs/search?limit=0".into(),
            None,
            422,
            json!(["query", "limit"]),
        ),
        (
            Method::GET,
            "/api/v1/sandbox-specs/search?page_id=x".into(),
            None,
            422,
            json!(["query", "page_id"]),
        ),
        (
            Method::GET,
            "/api/v1/sandboxes".into(),
            None,
            422,
            json!(["query", "id"]),
        ),
        (
            Method::GET,
            "/api/v1/sandbox-specs".into(),
            None,
            422,
            json!(["query", "id"]),
        ),
        (
            Method::GET,
            "/api/v1/sandboxes?id=abc".into(),
            None,
            422,
            json!(["query", "id", 0]),
        ),
        (
            Method::POST,
            "/api/v1/sandboxes/abc/pause".into(),
            None,
            422,
            json!(["path", "sandbox_id"]),
        ),
        (
            Method::POST,
            "/api/v1/sandboxes/abc/resume".into(),
            None,
            422,
            json!(["path", "sandbox_id"]),
        ),
        (
            Method::DELETE,
            "/api/v1/sandboxes/x?sandbox_id=abc".into(),
            None,
            422,
            json!(["query", "sandbox_id"]),
        ),
        (
            Method::POST,
            "/api/v1/sandboxes".into(),
            Some(json!([1])),
            422,
            json!(["body"]),
        ),
        (
            Method::POST,
            "/api/v1/sandboxes".into(),
            Some(json!({"sandbox_spec_id": 3})),
            422,
            json!(["body", "sandbox_spec_id"]),
        ),
    ];
    for (method, path, body, want, loc) in cases {
        let (status, got) = app.call(method.clone(), &path, Some(&key), body).await;
        assert_eq!(status, want, "{backend}: {method} {path}: {got}");
        assert_eq!(
            got["detail"][0]["loc"], loc,
            "{backend}: {method} {path}: {got}"
        );
    }
    let (status, body) = app
        .call(
            Method::GET,
            &format!("/api/v1/sandboxes?{ids101}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            detail("Cannot request more than 100 sandboxes at once, got 101")
        )
    );
    let specs101: String = (0..101)
        .map(|i| format!("id=s{i}"))
        .collect::<Vec<_>>()
        .join("&");
    let (status, body) = app
        .call(
            Method::GET,
            &format!("/api/v1/sandbox-specs?{specs101}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            detail("Cannot request more than 100 sandbox specs at once, got 101")
        )
    );
    // Unknown ids: 404 as the router's, null in a batch.
    let unknown = uuid::Uuid::new_v4();
    for (method, path) in [
        (Method::POST, format!("/api/v1/sandboxes/{unknown}/pause")),
        (Method::POST, format!("/api/v1/sandboxes/{unknown}/resume")),
        (Method::DELETE, format!("/api/v1/sandboxes/{unknown}")),
        // A path value that is no UUID names no sandbox (the document allows any string).
        (Method::DELETE, "/api/v1/sandboxes/0".to_owned()),
        (Method::DELETE, "/api/v1/sandboxes/R%02%C2%A5".to_owned()),
    ] {
        let (status, body) = app.call(method, &path, Some(&key), None).await;
        assert_eq!(
            (status, body),
            (404, detail("Not Found")),
            "{backend}: {path}"
        );
    }
    assert_eq!(app.info(&key, &unknown.to_string()).await, Value::Null);

    // The specs, in order; the batch in request order with null for unknown ids.
    let (status, page) = app
        .call(
            Method::GET,
            "/api/v1/sandbox-specs/search?limit=2",
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["standin", NO_SUCH_COMMAND]);
    let next = page["next_page_id"].as_str().unwrap();
    let (_, page2) = app
        .call(
            Method::GET,
            &format!("/api/v1/sandbox-specs/search?page_id={next}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(page2["items"][0]["id"], CRASHES);
    assert_eq!(page2["next_page_id"], Value::Null);
    assert_eq!(
        page2["items"][0]["initial_env"]["STANDIN_MODE"],
        "crash-on-start"
    );
    let (_, got) = app
        .call(
            Method::GET,
            &format!("/api/v1/sandbox-specs?id={CRASHES}&id=zz&id=standin"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(got[0]["id"], CRASHES);
    assert_eq!(got[1], Value::Null);
    assert_eq!(got[2]["id"], "standin");
    assert_eq!(got[2]["working_dir"], ".");
    assert!(got[2]["command"].as_array().unwrap().len() == 2);
}

async fn registered_sandboxes(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let (_, page) = app
        .call(Method::GET, "/api/v1/sandboxes/search", Some(&key), None)
        .await;
    let item = &page["items"][0];
    assert_eq!(item["status"], "RUNNING", "{backend}: {page}");
    assert_eq!(item["sandbox_spec_id"], "external");
    assert_eq!(item["exposed_urls"], Value::Null);
    assert_eq!(
        item["session_api_key"],
        Value::Null,
        "only its hash is stored"
    );
    let id = item["id"].as_str().unwrap();
    for action in ["pause", "resume"] {
        let (status, body) = app
            .call(
                Method::POST,
                &format!("/api/v1/sandboxes/{id}/{action}"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(status, 409, "{backend}: {action}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("not managed by Switchboard")
        );
    }
    let conversation = "1b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
    let (status, _) = app
        .post_webhook(&webhook_events_path(conversation), Some(&session), "[]")
        .await;
    assert_eq!(status, 200);
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!((status, body), (200, success()));
    let (status, _) = app
        .post_webhook(&webhook_events_path(conversation), Some(&session), "[]")
        .await;
    assert_eq!(
        status, 401,
        "{backend}: a deleted sandbox's key still authenticates"
    );
}

async fn paging(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let s = app.start(&key, Some(NO_SUCH_COMMAND)).await;
        ids.push(s["id"].as_str().unwrap().to_owned());
    }
    ids.reverse(); // newest first
    let mut seen = Vec::new();
    let mut page_id: Option<String> = None;
    loop {
        let path = match &page_id {
            Some(p) => format!("/api/v1/sandboxes/search?limit=2&page_id={p}"),
            None => "/api/v1/sandboxes/search?limit=2".to_owned(),
        };
        let (status, page) = app.call(Method::GET, &path, Some(&key), None).await;
        assert_eq!(status, 200, "{page}");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|i| i["id"].as_str().unwrap().to_owned()));
        match page["next_page_id"].as_str() {
            Some(p) => page_id = Some(p.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ids, "{backend}: newest first, each once");
}
