//! Whose keys a caller sees and deletes: the effective organization's, never another user's;
//! ids that are not keys.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::json;
use switchboard_domain::Role;
use switchboard_testkit::Backend;

use crate::common::{SETTINGS, assert_one_error, detail, spawn_app, status_json};
use crate::keys_and_me::rig::{
    KEY_ELSEWHERE, MEMBER_PERMISSIONS, delete_key, list_keys, me, sorted,
};

/// Keys are bound to the effective organization: a key made with `X-Org-Id: B` acts on B.
pub async fn keys_follow_the_effective_org(backend: Backend) {
    let app = spawn_app(backend).await;
    let s = app.services.clone();
    let (owner, b) = (app.owner.user_id, app.other_org);
    tokio::task::spawn_blocking(move || s.operator().add_member(b, owner, Role::Member).unwrap())
        .await
        .unwrap();
    let resp = app
        .req(Method::POST, "/api/keys", Some(&app.owner.key))
        .header("X-Org-Id", app.other_org.to_string())
        .json(&json!({"name": "for-b"}))
        .send()
        .await
        .unwrap();
    let (status, created) = status_json(resp).await;
    assert_eq!(status, 200, "{backend}: {created}");
    assert_eq!(created["org_id"], app.other_org.to_string(), "{backend}");
    let secret = created["api_key"].as_str().unwrap();
    let (status, body) = me(&app, secret, None).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["org_id"], app.other_org.to_string());
    assert_eq!(body["org_name"], "Org B");
    assert_eq!(body["role"], "member");
    assert_eq!(body["permissions"], sorted(&MEMBER_PERMISSIONS));
    let (status, body) = me(&app, secret, Some(app.org.to_string())).await;
    assert_eq!((status, &body), (403, &detail(KEY_ELSEWHERE)), "{backend}");
    // The list in org A does not show it; in org B it does, with the unbound keys.
    let (_, in_a) = list_keys(&app, &app.owner.key).await;
    assert!(in_a.iter().all(|k| k["name"] != "for-b"), "{backend}");
    let (_, in_b) = list_keys(&app, secret).await;
    let names: BTreeSet<&str> = in_b.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["bootstrap", "expired", "revoked", "for-b"]),
        "{backend}"
    );
    // A key bound to another organization cannot be revoked from this one.
    let (status, body) = delete_key(&app, &app.owner.key, created["id"].as_str().unwrap()).await;
    assert_eq!(
        (status, &body),
        (404, &detail("API key not found")),
        "{backend}"
    );
    let (status, _) = me(&app, secret, None).await;
    assert_eq!(status, 200, "{backend}: still usable");
    app.stop().await;
}

pub async fn other_users_keys_and_bad_ids(backend: Backend) {
    let app = spawn_app(backend).await;
    let (text, admin_keys) = list_keys(&app, &app.admin.key).await;
    assert_eq!(admin_keys.len(), 1, "{backend}: {text}");
    let admin_key_id = admin_keys[0]["id"].as_str().unwrap().to_owned();
    let (status, body) = delete_key(&app, &app.owner.key, &admin_key_id).await;
    assert_eq!(
        (status, &body),
        (404, &detail("API key not found")),
        "{backend}"
    );
    let (status, body) = delete_key(&app, &app.member.key, &admin_key_id).await;
    assert_eq!(
        (status, &body),
        (404, &detail("API key not found")),
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&app.admin.key)).await).await;
    assert_eq!(status, 200, "{backend}: the admin's key still works");
    let (status, body) = delete_key(&app, &app.owner.key, &uuid::Uuid::new_v4().to_string()).await;
    assert_eq!(
        (status, &body),
        (404, &detail("API key not found")),
        "{backend}"
    );
    for bad in [
        "abc",
        "123",
        "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4",
        "not-a-uuid-at-all-0000000000000000",
    ] {
        let (status, body) = delete_key(&app, &app.owner.key, bad).await;
        assert_eq!(status, 422, "{backend}: {bad}: {body}");
        assert_one_error(&body, &json!(["path", "id"]), "uuid_parsing");
        assert_eq!(body["detail"][0]["input"], bad, "{backend}");
    }
    // Authentication first: no key is a 401 whatever the id.
    let (status, body) = status_json(
        app.req(Method::DELETE, "/api/keys/abc", None)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &body),
        (401, &detail("Not authenticated")),
        "{backend}"
    );
    // Each user lists only their own keys.
    let (text, outsider) = list_keys(&app, &app.non_member.key).await;
    assert_eq!(outsider.len(), 1, "{backend}: {text}");
    assert_eq!(outsider[0]["name"], "bootstrap");
    assert_ne!(outsider[0]["id"], admin_keys[0]["id"]);
    app.stop().await;
}
