//! The audit log, and disabled users.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::Role;
use switchboard_testkit::Backend;

use crate::common::{detail, spawn_app};
use crate::members_api::rig::{call, member, members, new_member};

/// Every change is in the log with who, what, whom, when and from where; owners read it,
/// newest first, in pages; admins and members do not.
pub async fn the_audit_log_is_the_owners(backend: Backend) {
    let app = spawn_app(backend).await;
    let org = app.org;
    let (dev, _) = new_member(&app, "dev@example.com", Role::Member).await;
    let (status, _) = call(
        &app,
        Method::PATCH,
        &member(org, dev),
        &app.admin.key,
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        &app,
        Method::DELETE,
        &member(org, dev),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let log = format!("/api/organizations/{org}/audit-log");
    for key in [&app.admin.key, &app.member.key] {
        let (status, body) = call(&app, Method::GET, &log, key, None).await;
        assert_eq!(
            (status, body),
            (
                403,
                detail("Only the organization's owners can read its audit log")
            ),
            "{backend}"
        );
    }
    let (status, page) = call(&app, Method::GET, &log, &app.owner.key, None).await;
    assert_eq!(status, 200, "{backend}: {page}");
    let items = page["items"].as_array().unwrap();
    let actions: Vec<&str> = items
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    // Newest first: the removal, the change, then the operator's additions (seed and dev).
    assert_eq!(
        &actions[..3],
        ["member.removed", "member.role_changed", "member.added"],
        "{backend}"
    );
    let removed = &items[0];
    assert_eq!(removed["actor_email"], "owner@example.com");
    assert_eq!(removed["actor_user_id"], app.owner.user_id.to_string());
    assert_eq!(removed["target_email"], "dev@example.com");
    assert_eq!(removed["detail"], json!({"role": "admin"}));
    assert_eq!(removed["remote_addr"], "127.0.0.1");
    assert_eq!(removed["org_id"], org.to_string());
    let changed = &items[1];
    assert_eq!(changed["actor_email"], "admin@example.com");
    assert_eq!(changed["detail"], json!({"from": "member", "to": "admin"}));
    let added = &items[2];
    assert_eq!(
        (added["actor_user_id"].clone(), added["remote_addr"].clone()),
        (Value::Null, Value::Null),
        "the operator"
    );
    assert_eq!(added["detail"], json!({"role": "member"}));
    assert!(
        items.iter().all(|e| e["org_id"] == org.to_string()),
        "{backend}: only A's"
    );
    // Pages of one, newest first, ending.
    let mut seen = Vec::new();
    let mut url = format!("{log}?limit=1");
    loop {
        let (_, p) = call(&app, Method::GET, &url, &app.owner.key, None).await;
        seen.push(p["items"][0]["id"].as_i64().unwrap());
        match p["next_page_id"].as_str() {
            Some(c) => url = format!("{log}?limit=1&page_id={c}"),
            None => break,
        }
    }
    let ids: Vec<i64> = items.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert_eq!(seen, ids, "{backend}");
    app.stop().await;
}

/// A disabled user's every key is refused at once (401 "User is disabled"), on routes and
/// sockets alike, and accepted again once enabled; both are logged.
pub async fn a_disabled_user_is_refused_at_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let (s, user) = (app.services.clone(), app.member.user_id);
    let (status, _) = call(&app, Method::GET, "/api/v1/users/me", &app.member.key, None).await;
    assert_eq!(status, 200);
    tokio::task::spawn_blocking(move || s.user_admin().set_disabled(user, true).unwrap())
        .await
        .unwrap();
    let (status, body) = call(&app, Method::GET, "/api/v1/users/me", &app.member.key, None).await;
    assert_eq!(
        (status, body),
        (401, detail("User is disabled")),
        "{backend}"
    );
    let (status, _) = call(&app, Method::GET, "/api/keys", &app.member.key, None).await;
    assert_eq!(status, 401, "{backend}");
    let (_, all) = call(&app, Method::GET, &members(app.org), &app.owner.key, None).await;
    assert_eq!(all["items"][2]["status"], "disabled", "{backend}: {all}");
    let (s, user) = (app.services.clone(), app.member.user_id);
    let log = tokio::task::spawn_blocking(move || {
        s.user_admin().set_disabled(user, false).unwrap();
        s.user_admin().audit(None, None, 10).unwrap()
    })
    .await
    .unwrap();
    let (status, _) = call(&app, Method::GET, "/api/v1/users/me", &app.member.key, None).await;
    assert_eq!(status, 200, "{backend}: enabled again");
    let actions: Vec<&str> = log.iter().map(|r| r.entry.action.as_str()).collect();
    // Newest first (the seed's revocation of an unbound key, by the operator, before them).
    assert_eq!(
        &actions[..2],
        ["user.enabled", "user.disabled"],
        "{backend}"
    );
    app.stop().await;
}
