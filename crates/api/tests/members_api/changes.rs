//! Role changes and removals under the rank rules.

use reqwest::Method;
use serde_json::json;
use switchboard_domain::Role;
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, detail, spawn_app, status_json};
use crate::members_api::rig::{call, emails, member, members, new_member, patch};

/// Owners change admins and members to any role; admins change members to admin or member;
/// nobody changes themselves or an owner; bad bodies are 422; nothing changes on a refusal.
pub async fn role_changes_follow_rank(backend: Backend) {
    let app = spawn_app(backend).await;
    let (dev, dev_key) = new_member(&app, "dev@example.com", Role::Member).await;
    let org = app.org;
    // An admin raises a member to admin, not to owner.
    let (status, body) = patch(&app, &app.admin.key, member(org, dev), "owner").await;
    assert_eq!(
        (status, body),
        (
            403,
            detail("You do not have permission to modify this member")
        ),
        "{backend}"
    );
    let (status, body) = patch(&app, &app.admin.key, member(org, dev), "admin").await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(
        (
            body["role"].clone(),
            body["role_id"].clone(),
            body["email"].clone()
        ),
        (json!("admin"), json!(2), json!("dev@example.com"))
    );
    // …and then cannot touch them (an admin now), nor the owner.
    let (status, _) = patch(&app, &app.admin.key, member(org, dev), "member").await;
    assert_eq!(status, 403, "{backend}: admins change only members");
    let (status, _) = patch(
        &app,
        &app.admin.key,
        member(org, app.owner.user_id),
        "member",
    )
    .await;
    assert_eq!(status, 403, "{backend}");
    // A member changes nobody; nobody changes themselves.
    let (status, _) = patch(&app, &app.member.key, member(org, dev), "member").await;
    assert_eq!(status, 403, "{backend}");
    let (status, body) = patch(
        &app,
        &app.owner.key,
        member(org, app.owner.user_id),
        "member",
    )
    .await;
    assert_eq!(
        (status, body),
        (403, detail("Cannot modify your own role")),
        "{backend}"
    );
    let (status, _) = patch(&app, &dev_key, member(org, dev), "owner").await;
    assert_eq!(status, 403, "{backend}");
    // The owner makes dev an owner; owners do not change owners.
    let (status, body) = patch(&app, &app.owner.key, member(org, dev), "owner").await;
    assert_eq!(
        (status, body["role"].clone()),
        (200, json!("owner")),
        "{backend}"
    );
    let (status, _) = patch(&app, &app.owner.key, member(org, dev), "member").await;
    assert_eq!(status, 403, "{backend}: owners do not change owners");
    let (status, body) = patch(&app, &dev_key, member(org, app.owner.user_id), "admin").await;
    assert_eq!(status, 403, "{backend}: {body}");
    // Unknown member, bad bodies.
    let (status, body) = patch(
        &app,
        &app.owner.key,
        member(org, app.non_member.user_id),
        "member",
    )
    .await;
    assert_eq!(
        (status, body),
        (404, detail("Member not found in this organization")),
        "{backend}"
    );
    let (status, body) = patch(
        &app,
        &app.owner.key,
        member(org, app.member.user_id),
        "superuser",
    )
    .await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["body", "role"]), "literal_error");
    let (status, body) = call(
        &app,
        Method::PATCH,
        &member(org, app.member.user_id),
        &app.owner.key,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["body", "role"]), "missing");
    let (status, body) = call(
        &app,
        Method::PATCH,
        &member(org, app.member.user_id),
        &app.owner.key,
        Some(json!({"role": 3})),
    )
    .await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["body", "role"]), "string_type");
    // What is stored: dev owner, member still member, owner still owner.
    let (_, all) = call(&app, Method::GET, &members(org), &app.owner.key, None).await;
    let roles: Vec<(&str, &str)> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["email"].as_str().unwrap(), m["role"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("owner@example.com", "owner"),
            ("admin@example.com", "admin"),
            ("member@example.com", "member"),
            ("dev@example.com", "owner")
        ],
        "{backend}"
    );
    // The member's new role acts at once: dev, an owner now, reads the audit log.
    let (status, _) = call(
        &app,
        Method::GET,
        &format!("/api/organizations/{org}/audit-log"),
        &dev_key,
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}");
    app.stop().await;
}

/// A removed member's keys stop acting in the organization at once (bound ones revoked), the
/// rank rules hold, nobody removes themselves, and the last owner stays (the operator too).
pub async fn removal_ends_access_at_once(backend: Backend) {
    let app = spawn_app(backend).await;
    let org = app.org;
    let (dev, dev_key) = new_member(&app, "dev@example.com", Role::Member).await;
    let (s, bound) = (app.services.clone(), dev);
    let dev_bound = tokio::task::spawn_blocking(move || {
        s.operator()
            .operator_create_key(bound, Some(org), "bound".into(), None)
            .unwrap()
            .secret
    })
    .await
    .unwrap();
    let (status, _) = call(&app, Method::GET, "/api/v1/users/me", &dev_key, None).await;
    assert_eq!(status, 200, "{backend}");

    let (status, body) = call(
        &app,
        Method::DELETE,
        &member(org, app.admin.user_id),
        &app.admin.key,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (403, detail("Cannot remove yourself from an organization")),
        "{backend}"
    );
    let (status, body) = call(
        &app,
        Method::DELETE,
        &member(org, app.owner.user_id),
        &app.admin.key,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (
            403,
            detail("You do not have permission to remove this member")
        ),
        "{backend}"
    );
    let (status, _) = call(
        &app,
        Method::DELETE,
        &member(org, dev),
        &app.member.key,
        None,
    )
    .await;
    assert_eq!(status, 403, "{backend}: members remove nobody");
    let (status, body) = call(
        &app,
        Method::DELETE,
        &member(org, dev),
        &app.admin.key,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"message": "Member removed successfully"})),
        "{backend}"
    );
    let (status, body) = call(
        &app,
        Method::DELETE,
        &member(org, dev),
        &app.admin.key,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (404, detail("Member not found in this organization")),
        "{backend}"
    );

    // At once: the unbound key has no organization left, the bound one is revoked.
    let (status, body) = call(&app, Method::GET, "/api/v1/users/me", &dev_key, None).await;
    assert_eq!(
        (status, body),
        (404, detail("Current organization not found")),
        "{backend}"
    );
    let asked = app
        .req(Method::GET, "/api/v1/users/me", Some(&dev_key))
        .header("X-Org-Id", org.to_string());
    let (status, body) = status_json(asked.send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (403, detail("User is not a member of this organization")),
        "{backend}"
    );
    let (status, body) = call(&app, Method::GET, "/api/v1/users/me", &dev_bound, None).await;
    assert_eq!(
        (status, body),
        (401, detail("API key revoked")),
        "{backend}"
    );

    // The owner removes the admin; the last owner cannot be removed, not even by the operator.
    let (status, _) = call(
        &app,
        Method::DELETE,
        &member(org, app.admin.user_id),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}");
    let (status, _) = call(&app, Method::GET, &members(org), &app.admin.key, None).await;
    assert_eq!(status, 404, "{backend}: the admin is out");
    let (s, owner) = (app.services.clone(), app.owner.user_id);
    let refused = tokio::task::spawn_blocking(move || {
        s.user_admin()
            .remove_member(org, owner)
            .unwrap_err()
            .to_string()
    })
    .await
    .unwrap();
    assert!(refused.contains("last owner"), "{backend}: {refused}");
    let (_, all) = call(&app, Method::GET, &members(org), &app.owner.key, None).await;
    assert_eq!(
        emails(&all),
        ["owner@example.com", "member@example.com"],
        "{backend}"
    );
    app.stop().await;
}

/// Owners and admins add a user by e-mail (admins not as owner); a member already, an unknown
/// e-mail and bad bodies are refused; the new member acts at once.
pub async fn adding_by_email(backend: Backend) {
    let app = spawn_app(backend).await;
    let org = app.org;
    let s = app.services.clone();
    let (newcomer, key) = tokio::task::spawn_blocking(move || {
        let u = s.operator().create_user("new@example.com", None).unwrap();
        let k = s
            .operator()
            .operator_create_key(u.id, None, "k".into(), None)
            .unwrap();
        (u.id, k.secret)
    })
    .await
    .unwrap();
    let add = |key: String, body: serde_json::Value| {
        let app = &app;
        async move { call(app, Method::POST, &members(org), &key, Some(body)).await }
    };
    let (status, _) = add(app.member.key.clone(), json!({"email": "new@example.com"})).await;
    assert_eq!(status, 403, "{backend}: members add nobody");
    let (status, body) = add(
        app.admin.key.clone(),
        json!({"email": "new@example.com", "role": "owner"}),
    )
    .await;
    assert_eq!(
        (status, body),
        (403, detail("You do not have permission to add this member")),
        "{backend}"
    );
    let (status, body) = add(
        app.admin.key.clone(),
        json!({"email": "nobody@example.com"}),
    )
    .await;
    assert_eq!(status, 404, "{backend}: {body}");
    let (status, body) = add(app.admin.key.clone(), json!({"email": "no-at-sign"})).await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["body", "email"]), "value_error");
    let (status, body) = add(
        app.admin.key.clone(),
        json!({"email": "new@example.com", "role": "boss"}),
    )
    .await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["body", "role"]), "literal_error");
    let (status, me) = call(&app, Method::GET, "/api/v1/users/me", &key, None).await;
    assert_eq!(status, 404, "{backend}: no organization yet: {me}");
    let (status, body) = add(
        app.admin.key.clone(),
        json!({"email": "NEW@example.com ".trim()}),
    )
    .await;
    // E-mails are matched as stored.
    assert_eq!(status, 404, "{backend}: {body}");
    let (status, body) = add(
        app.admin.key.clone(),
        json!({"email": "new@example.com", "role": "admin"}),
    )
    .await;
    assert_eq!(status, 201, "{backend}: {body}");
    assert_eq!(
        (body["user_id"].clone(), body["role"].clone()),
        (json!(newcomer.to_string()), json!("admin"))
    );
    let (status, _) = add(app.owner.key.clone(), json!({"email": "new@example.com"})).await;
    assert_eq!(status, 409, "{backend}: a member already");
    // At once: the new member's key acts in the organization, now their current one.
    let (status, me) = call(&app, Method::GET, "/api/v1/users/me", &key, None).await;
    assert_eq!(
        (status, me["org_id"].clone(), me["role"].clone()),
        (200, json!(org.to_string()), json!("admin")),
        "{backend}: {me}"
    );
    app.stop().await;
}
