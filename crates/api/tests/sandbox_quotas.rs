//! Quotas on the sandboxes a user and an organization hold (issue 18, Quotas; issue 24 item
//! 6), on both backends, with real sandboxes (the stand-in agent server run by the process
//! runtime): the default of 20 per user (a 21st start is 409 naming what to delete; another
//! user is not affected; a delete makes room), a conversation start at the quota (its task is
//! `ERROR` with the same words), the per-organization quota (what a member and an admin are
//! told; `ERROR` sandboxes do not count), concurrent starts (exactly the quota succeed), and
//! on PostgreSQL concurrent starts through two replicas of one database.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::sandboxes::{
    NO_SUCH_COMMAND, SandboxApp, SandboxOptions, spawn_sandbox_app, spawn_sandbox_app_with,
};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::sandboxes::quotas::HOLDING_STATUSES;
use switchboard_domain::services::LlmConfig;
use switchboard_testkit::Backend;

on_both_backends!(
    default_quota_per_user,
    conversation_start_at_the_quota,
    quota_per_organization,
    concurrent_starts_stay_within_the_quotas
);

/// `POST /api/v1/sandboxes` as `key`: status and body.
async fn try_start(app: &SandboxApp, key: &str) -> (u16, Value) {
    app.call(Method::POST, "/api/v1/sandboxes", Some(key), None)
        .await
}

/// Starts `n` sandboxes as `key` (each must be 200); their ids in start order.
async fn start_n(app: &SandboxApp, key: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let (status, body) = try_start(app, key).await;
        assert_eq!(status, 200, "{}: start {i}: {body}", app.backend);
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// The refusal's detail, after checking it is a 409 naming the per-user quota.
fn refusal(status: u16, body: &Value, limit: u32, backend: Backend) -> String {
    assert_eq!(status, 409, "{backend}: {body}");
    let detail = body["detail"].as_str().unwrap_or_default().to_owned();
    assert!(
        detail.starts_with("Sandbox limit reached: you have")
            && detail.contains(&format!("--max-sandboxes-per-user {limit}")),
        "{backend}: {detail}"
    );
    detail
}

async fn default_quota_per_user(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let member = app.member.key.clone();
    let ids = start_n(&app, &member, 20).await;
    let (status, body) = try_start(&app, &member).await;
    let detail = refusal(status, &body, 20, backend);
    // Which to delete: the least recently used first (the first started).
    assert!(
        detail.contains(&format!("least recently used first: {}", ids[0])),
        "{backend}: {detail}"
    );
    // Another user of the organization is not affected.
    let (status, body) = try_start(&app, &app.admin.key).await;
    assert_eq!(status, 200, "{backend}: {body}");
    // A delete makes room for one more, and only one.
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{}", ids[0]),
            Some(&member),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    let (status, body) = try_start(&app, &member).await;
    assert_eq!(status, 200, "{backend}: {body}");
    let (status, body) = try_start(&app, &member).await;
    refusal(status, &body, 20, backend);
}

async fn conversation_start_at_the_quota(backend: Backend) {
    let app = spawn_sandbox_app_with(backend, SandboxOptions::default(), &[], |s| {
        s.with_llm(LlmConfig {
            model: Some("openai/fake-model".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-test-llm-key-4242".into()),
            stream: false,
            key_owner: Some("operator"),
        })
    })
    .await;
    let member = app.member.key.clone();
    start_n(&app, &member, 20).await;
    let (status, task) = app
        .call(
            Method::POST,
            "/api/v1/app-conversations",
            Some(&member),
            Some(json!({"initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}})),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let task = loop {
        let (status, body) = app
            .call(
                Method::GET,
                &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
                Some(&member),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        if body[0]["status"] == "READY" || body[0]["status"] == "ERROR" {
            break body[0].clone();
        }
        assert!(Instant::now() < deadline, "{backend}: {body}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(task["status"], "ERROR", "{backend}: {task}");
    let detail = task["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("Sandbox limit reached: you have 20 sandboxes")
            && detail.contains("--max-sandboxes-per-user 20"),
        "{backend}: {detail}"
    );
}

/// Small quotas: 3 per user, 4 per organization.
fn small() -> SandboxOptions {
    SandboxOptions {
        max_per_user: 3,
        max_per_org: Some(4),
        ..SandboxOptions::default()
    }
}

async fn delete(app: &SandboxApp, key: &str, id: &str) {
    let (status, body) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id}"),
            Some(key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
}

async fn quota_per_organization(backend: Backend) {
    let app = spawn_sandbox_app(backend, small()).await;
    let (member, admin) = (app.member.key.clone(), app.admin.key.clone());
    let mine = start_n(&app, &member, 3).await;
    let (status, body) = try_start(&app, &member).await;
    refusal(status, &body, 3, backend);
    let admins = start_n(&app, &admin, 1).await;
    // The organization is at 4: the admin is refused by the organization's quota and told
    // about every sandbox (admins see them all), least recently used first.
    let (status, body) = try_start(&app, &admin).await;
    assert_eq!(status, 409, "{backend}: {body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("Sandbox limit reached: this organization has 4 sandboxes")
            && detail.contains("--max-sandboxes-per-org 4"),
        "{backend}: {detail}"
    );
    assert!(
        detail.contains(&format!("least recently used first: {}", mine[0])),
        "{detail}"
    );
    assert!(detail.contains(&admins[0]), "{detail}");
    // A member is told about their own only.
    delete(&app, &member, &mine[2]).await;
    start_n(&app, &app.owner.key, 1).await;
    let (status, body) = try_start(&app, &member).await;
    assert_eq!(status, 409, "{backend}: {body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("this organization has 4"), "{detail}");
    assert!(
        detail.contains(&mine[0]) && detail.contains(&mine[1]),
        "{detail}"
    );
    assert!(
        !detail.contains(&admins[0]),
        "another member's sandbox named: {detail}"
    );
    // Another organization is not affected.
    start_n(&app, &app.non_member.key, 3).await;
    // A sandbox that failed (ERROR) holds nothing: it does not count.
    delete(&app, &app.owner.key, &admins[0]).await;
    let (status, failed) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes?sandbox_spec_id={NO_SUCH_COMMAND}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}: {failed}");
    app.wait_status(&admin, failed["id"].as_str().unwrap(), "ERROR")
        .await;
    start_n(&app, &admin, 1).await;
}

/// How many sandboxes of the member hold resources, as stored.
fn held_by(app: &SandboxApp, user: switchboard_domain::UserId) -> usize {
    use switchboard_domain::ports::SandboxStore;
    app.store
        .live_sandboxes()
        .unwrap()
        .iter()
        .filter(|r| r.owner_id == Some(user) && HOLDING_STATUSES.contains(&r.status))
        .count()
}

/// `n` starts at once as `key`, spread over the servers at `bases`: how many were 200 and
/// how many 409 (anything else fails).
async fn concurrent(app: &SandboxApp, bases: &[String], key: &str, n: usize) -> (usize, usize) {
    let mut tasks = Vec::new();
    for i in 0..n {
        let client = app.client.clone();
        let url = format!("{}/api/v1/sandboxes", bases[i % bases.len()]);
        let key = key.to_owned();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .header("X-Access-Token", key)
                .send()
                .await
                .unwrap();
            r.status().as_u16()
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            200 => ok += 1,
            409 => refused += 1,
            other => panic!("{}: a concurrent start answered {other}", app.backend),
        }
    }
    (ok, refused)
}

async fn concurrent_starts_stay_within_the_quotas(backend: Backend) {
    let app = spawn_sandbox_app(backend, small()).await;
    let base = vec![app.base.clone()];
    let (ok, refused) = concurrent(&app, &base, &app.member.key, 24).await;
    assert_eq!((ok, refused), (3, 21), "{backend}");
    assert_eq!(held_by(&app, app.member.user_id), 3, "{backend}");
    // The organization's quota (4) under concurrent starts of two users.
    let (a, b) = tokio::join!(
        concurrent(&app, &base, &app.admin.key, 12),
        concurrent(&app, &base, &app.owner.key, 12)
    );
    assert_eq!(a.0 + b.0, 1, "{backend}: {a:?} {b:?}");
}

/// A second replica of the app: its own store (pool) and sandbox service over the same
/// database, serving HTTP; stopped when dropped.
struct Replica {
    base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

async fn replica(app: &SandboxApp) -> Replica {
    use switchboard_api::{AppState, create_app};
    let url = app.url.clone();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || switchboard_storage::DieselStore::open(&url, None))
            .await
            .unwrap()
            .unwrap()
            .0,
    );
    let services =
        switchboard_domain::Switchboard::new(store).with_managed_sandboxes(app.managed.clone());
    let state = actix_web::web::Data::new(AppState::new(services, None));
    let server = actix_web::HttpServer::new(move || create_app(state.clone()))
        .workers(2)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Replica {
        base: format!("http://{addr}"),
        handle,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_replicas_share_the_quotas() {
    let app = spawn_sandbox_app(Backend::Postgres, small()).await;
    let other = replica(&app).await;
    let bases = vec![app.base.clone(), other.base.clone()];
    let (ok, refused) = concurrent(&app, &bases, &app.member.key, 30).await;
    assert_eq!((ok, refused), (3, 27), "two replicas");
    assert_eq!(held_by(&app, app.member.user_id), 3);
    let (a, b) = tokio::join!(
        concurrent(&app, &bases, &app.admin.key, 16),
        concurrent(&app, &bases, &app.owner.key, 16)
    );
    assert_eq!(
        a.0 + b.0,
        1,
        "the organization's quota across replicas: {a:?} {b:?}"
    );
}
