//! Who sees, starts, pauses, resumes and deletes which sandbox (design: Sandboxes), on both
//! backends: the owner, an admin, the creator (a member), another member, another org's
//! user, a key bound to the org, no key; 404 (ids do not leak) versus 403 (the organization
//! itself); `session_api_key` only for the creator and admins/owners. Also the warm pool
//! under 20 concurrent starts and the per-user running limit.

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::detail;
use common::sandboxes::{SandboxOptions, spawn_sandbox_app, success};
use reqwest::Method;
use serde_json::Value;
use switchboard_domain::Role;
use switchboard_domain::ports::SandboxStore;
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_testkit::Backend;

on_both_backends!(matrix, warm_pool_under_concurrent_starts, running_limit);

async fn matrix(backend: Backend) {
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    // A second member of org A.
    let s = app.services.clone();
    let org = app.org;
    let other_member_key = tokio::task::spawn_blocking(move || {
        let u = s
            .operator()
            .create_user("other@example.com", None)
            .unwrap()
            .id;
        s.operator().add_member(org, u, Role::Member).unwrap();
        s.operator()
            .operator_create_key(u, None, "k".into(), None)
            .unwrap()
            .secret
    })
    .await
    .unwrap();

    let started = app.start(&app.member.key, None).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let running = app.wait_status(&app.member.key, &id, "RUNNING").await;
    let key = running["session_api_key"].as_str().unwrap().to_owned();

    // (who, sees it, is shown the key)
    let cases: [(&str, &str, bool); 6] = [
        ("creator (member)", &app.member.key, true),
        ("owner", &app.owner.key, true),
        ("admin", &app.admin.key, true),
        ("owner's key bound to the org", &app.bound_owner.key, true),
        ("another member", &other_member_key, false),
        ("another org's user", &app.non_member.key, false),
    ];
    for (who, k, sees) in cases {
        let info = app.info(k, &id).await;
        let (_, page) = app
            .call(Method::GET, "/api/v1/sandboxes/search", Some(k), None)
            .await;
        let listed = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == id.as_str());
        assert_eq!(listed, sees, "{backend}: {who}: search");
        if sees {
            assert_eq!(info["session_api_key"], key.as_str(), "{backend}: {who}");
            assert_eq!(info["status"], "RUNNING");
        } else {
            assert_eq!(info, Value::Null, "{backend}: {who}: batch get");
            for (method, path) in [
                (Method::POST, format!("/api/v1/sandboxes/{id}/pause")),
                (Method::POST, format!("/api/v1/sandboxes/{id}/resume")),
                (Method::DELETE, format!("/api/v1/sandboxes/{id}")),
            ] {
                let (status, body) = app.call(method, &path, Some(k), None).await;
                assert_eq!(
                    (status, body),
                    (404, detail("Not Found")),
                    "{backend}: {who}: {path}"
                );
            }
        }
    }
    // No key, an expired key: 401 before anything else.
    for k in [None, Some(app.expired.key.as_str())] {
        let (status, _) = app
            .call(Method::GET, "/api/v1/sandboxes/search", k, None)
            .await;
        assert_eq!(status, 401, "{backend}");
        let (status, _) = app.call(Method::POST, "/api/v1/sandboxes", k, None).await;
        assert_eq!(status, 401, "{backend}");
    }
    // Another organization named in X-Org-Id: 403 for a non-member (the org, not the id).
    let r = app
        .req(
            Method::GET,
            &format!("/api/v1/sandboxes?id={id}"),
            Some(&app.member.key),
        )
        .header("X-Org-Id", app.other_org.to_string());
    let (status, _) = common::status_json(r.send().await.unwrap()).await;
    assert_eq!(status, 403, "{backend}");
    // The other org's user acting in their own org does not see it, and cannot start there
    // for org A.
    let theirs = app
        .start(
            &app.non_member.key,
            Some(common::sandboxes::NO_SUCH_COMMAND),
        )
        .await;
    let their_id = theirs["id"].as_str().unwrap();
    assert_eq!(
        app.info(&app.owner.key, their_id).await,
        Value::Null,
        "{backend}"
    );

    // An admin pauses and resumes the member's sandbox; the creator sees it.
    for action in ["pause", "resume"] {
        let (status, body) = app
            .call(
                Method::POST,
                &format!("/api/v1/sandboxes/{id}/{action}"),
                Some(&app.admin.key),
                None,
            )
            .await;
        assert_eq!(
            (status, body),
            (200, success()),
            "{backend}: admin {action}"
        );
    }
    app.wait_status(&app.member.key, &id, "RUNNING").await;
    // Not RUNNING: no key for anyone.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&app.member.key),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        app.info(&app.owner.key, &id).await["session_api_key"],
        Value::Null
    );
    // The owner deletes it.
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/sandboxes/{id}"),
            Some(&app.owner.key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    assert_eq!(app.info(&app.member.key, &id).await, Value::Null);
}

async fn warm_pool_under_concurrent_starts(backend: Backend) {
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            warm: 3,
            max_running: 100,
            ..SandboxOptions::default()
        },
    )
    .await;
    let wait_pool_ready = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let pool = app.pool();
            if pool.len() == 3 && pool.iter().all(|s| *s == SandboxStatus::Running) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{backend}: {what}: pool is {pool:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_pool_ready("at first");
    let pool_before: HashSet<String> = app
        .store
        .live_sandboxes()
        .unwrap()
        .into_iter()
        .filter(|r| r.org_id.is_none())
        .map(|r| r.id.to_string())
        .collect();

    let mut tasks = Vec::new();
    for i in 0..20 {
        let client = app.client.clone();
        let url = format!("{}/api/v1/sandboxes", app.base);
        let key = [&app.owner.key, &app.admin.key, &app.member.key][i % 3].clone();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .header("X-Access-Token", key)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.json::<Value>().await.unwrap()
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let ids: HashSet<&str> = answers.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 20, "{backend}: every start got its own sandbox");
    let claimed: Vec<&Value> = answers
        .iter()
        .filter(|a| a["status"] == "RUNNING")
        .collect();
    assert!(claimed.len() >= 3, "{backend}: {} claims", claimed.len());
    let from_pool = answers
        .iter()
        .filter(|a| pool_before.contains(a["id"].as_str().unwrap()))
        .count();
    assert_eq!(
        from_pool, 3,
        "{backend}: each warm sandbox claimed exactly once"
    );
    for a in &claimed {
        assert!(a["session_api_key"].as_str().is_some(), "{backend}: {a}");
    }
    // Every one belongs to its claimant (requests alternate owner, admin, member).
    let users = [app.owner.user_id, app.admin.user_id, app.member.user_id];
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(
            a["created_by_user_id"],
            users[i % 3].to_string(),
            "{backend}: {a}"
        );
    }
    wait_pool_ready("after the claims");
    for a in &answers {
        app.wait_status(&app.owner.key, a["id"].as_str().unwrap(), "RUNNING")
            .await;
    }
}

async fn running_limit(backend: Backend) {
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            warm: 0,
            max_running: 2,
            ..SandboxOptions::default()
        },
    )
    .await;
    let key = app.member.key.clone();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let s = app.start(&key, None).await;
        let id = s["id"].as_str().unwrap().to_owned();
        app.wait_status(&key, &id, "RUNNING").await;
        ids.push(id);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another user's sandboxes do not count.
    let admins = app.start(&app.admin.key, None).await;
    // A third start pauses the least recently used (the first).
    let third = app.start(&key, None).await;
    let third = third["id"].as_str().unwrap().to_owned();
    app.wait_status(&key, &ids[0], "PAUSED").await;
    let pid = app.process(&ids[0]).pid;
    assert!(
        switchboard_sandbox::procfs::read_stat(pid)
            .unwrap()
            .is_stopped(),
        "{backend}"
    );
    app.wait_status(&key, &third, "RUNNING").await;
    assert_eq!(
        app.info(&key, &ids[1]).await["status"],
        "RUNNING",
        "{backend}"
    );
    // Resuming the first pauses the least recently used of the others (the second).
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{}/resume", ids[0]),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200);
    app.wait_status(&key, &ids[0], "RUNNING").await;
    app.wait_status(&key, &ids[1], "PAUSED").await;
    assert_eq!(app.info(&key, &third).await["status"], "RUNNING");
    let admins = app
        .wait_status(&app.admin.key, admins["id"].as_str().unwrap(), "RUNNING")
        .await;
    assert_eq!(admins["status"], "RUNNING", "{backend}");
}
