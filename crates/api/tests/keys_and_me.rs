//! API keys over REST (`POST`/`GET /api/keys`, `DELETE /api/keys/{id}`) and
//! `GET /api/v1/users/me` (API.md, Identity and authentication).

#[macro_use]
mod common;

use std::collections::BTreeSet;

use common::{Actor, SETTINGS, TestApp, assert_one_error, detail, instant, spawn_app, status_json};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::Role;
use switchboard_testkit::Backend;

const KEY_ELSEWHERE: &str = "API key is not authorized for this organization";

const OWNER_PERMISSIONS: [&str; 22] = [
    "manage_secrets",
    "manage_mcp",
    "manage_integrations",
    "manage_integration_providers",
    "manage_application_settings",
    "manage_api_keys",
    "view_llm_settings",
    "edit_llm_settings",
    "view_billing",
    "add_credits",
    "invite_user_to_organization",
    "change_user_role:member",
    "change_user_role:admin",
    "change_user_role:owner",
    "view_org_settings",
    "edit_org_settings",
    "change_organization_name",
    "delete_organization",
    "manage_org_claims",
    "manage_automations",
    "provision_user",
    "view_org_conversations",
];
const NOT_FOR_ADMINS: [&str; 3] = [
    "change_user_role:owner",
    "change_organization_name",
    "delete_organization",
];
const MEMBER_PERMISSIONS: [&str; 8] = [
    "manage_secrets",
    "manage_mcp",
    "manage_integrations",
    "manage_application_settings",
    "manage_api_keys",
    "view_llm_settings",
    "view_org_settings",
    "manage_automations",
];

fn sorted(perms: &[&str]) -> Value {
    let mut v: Vec<&str> = perms.to_vec();
    v.sort_unstable();
    json!(v)
}

/// The fields of a key as listed (no secret), in order.
const KEY_FIELDS: [&str; 8] = [
    "id",
    "name",
    "prefix",
    "org_id",
    "created_at",
    "last_used_at",
    "expires_at",
    "revoked",
];

async fn create_key(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    status_json(app.post_json("/api/keys", Some(key), body).await).await
}

/// `GET /api/keys` as `key`: the raw text and the items.
async fn list_keys(app: &TestApp, key: &str) -> (String, Vec<Value>) {
    let resp = app.get("/api/keys", Some(key)).await;
    assert_eq!(resp.status().as_u16(), 200, "{}", app.backend);
    let text = resp.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["items"], "{}", app.backend);
    (text, body["items"].as_array().unwrap().clone())
}

fn find<'a>(items: &'a [Value], id: &Value) -> &'a Value {
    items
        .iter()
        .find(|k| &k["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {items:?}"))
}

async fn delete_key(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    status_json(
        app.req(Method::DELETE, &format!("/api/keys/{id}"), Some(key))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn me(app: &TestApp, key: &str, org: Option<String>) -> (u16, Value) {
    let mut r = app.req(Method::GET, "/api/v1/users/me", Some(key));
    if let Some(o) = org {
        r = r.header("X-Org-Id", o);
    }
    status_json(r.send().await.unwrap()).await
}

/// Every secret the app knows of.
fn secrets(app: &TestApp) -> Vec<String> {
    [
        &app.owner,
        &app.admin,
        &app.member,
        &app.non_member,
        &app.bound_owner,
        &app.expired,
        &app.revoked,
    ]
    .iter()
    .map(|a: &&Actor| a.key.clone())
    .collect()
}

async fn create_use_list_revoke(backend: Backend) {
    let app = spawn_app(backend).await;
    let (status, created) = create_key(&app, &app.owner.key, &json!({"name": "ci"})).await;
    assert_eq!(status, 200, "{backend}: {created}");
    let secret = created["api_key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sb_"), "{backend}: {secret}");
    assert_eq!(secret.len(), 46, "{backend}: {secret}");
    assert!(
        secret[3..].bytes().all(|b| b.is_ascii_alphanumeric()),
        "{secret}"
    );
    let fields: Vec<&String> = created.as_object().unwrap().keys().collect();
    let mut expected_fields = KEY_FIELDS.to_vec();
    expected_fields.push("api_key");
    assert_eq!(fields, expected_fields, "{backend}");
    assert_eq!(created["name"], "ci");
    assert_eq!(created["prefix"], secret[..8], "{backend}");
    assert_eq!(
        created["org_id"],
        app.org.to_string(),
        "{backend}: bound to org A"
    );
    assert_eq!(created["last_used_at"], Value::Null);
    assert_eq!(created["expires_at"], Value::Null);
    assert_eq!(created["revoked"], false);
    instant(&created["created_at"]);
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        uuid::Uuid::parse_str(&id).unwrap().to_string(),
        id,
        "dashed lowercase"
    );

    // It works at once, on org A, and only there.
    let (status, body) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body, app.settings().await);
    let (status, body) = me(&app, &secret, None).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["api_key_id"], id.as_str());
    assert_eq!(body["api_key_org_id"], app.org.to_string());
    let (status, body) = me(&app, &secret, Some(app.other_org.to_string())).await;
    assert_eq!((status, &body), (403, &detail(KEY_ELSEWHERE)), "{backend}");
    let resp = app
        .req(Method::GET, SETTINGS, Some(&secret))
        .header("X-Org-Id", app.other_org.to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(resp).await;
    assert_eq!((status, &body), (403, &detail(KEY_ELSEWHERE)), "{backend}");

    // Names are trimmed; an expiry in the future is kept.
    let (status, spaced) = create_key(
        &app,
        &app.owner.key,
        &json!({"name": "  spaced  ", "expires_at": "2099-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {spaced}");
    assert_eq!(spaced["name"], "spaced");
    assert_eq!(spaced["expires_at"], "2099-01-01T00:00:00.000000Z");
    let spaced_secret = spaced["api_key"].as_str().unwrap().to_owned();
    assert_ne!(spaced_secret, secret);
    let (status, _) = status_json(app.get(SETTINGS, Some(&spaced_secret)).await).await;
    assert_eq!(status, 200, "{backend}");

    // The list: the owner's keys usable in org A, newest first, never a secret.
    let (text, items) = list_keys(&app, &app.owner.key).await;
    let mut all_secrets = secrets(&app);
    all_secrets.extend([secret.clone(), spaced_secret.clone()]);
    for s in &all_secrets {
        assert!(!text.contains(s.as_str()), "{backend}: a secret is listed");
        assert!(!text.contains(&s[3..]), "{backend}: a secret is listed");
    }
    let names: Vec<&str> = items.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(
        names.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from(["bootstrap", "test", "expired", "revoked", "ci", "spaced"]),
        "{backend}: {names:?}"
    );
    assert_eq!(names.len(), 6, "{backend}: {names:?}");
    assert_eq!(&names[..2], ["spaced", "ci"], "{backend}: newest first");
    for pair in items.windows(2) {
        assert!(
            instant(&pair[0]["created_at"]) >= instant(&pair[1]["created_at"]),
            "{backend}: {items:?}"
        );
    }
    for k in &items {
        let fields: Vec<&String> = k.as_object().unwrap().keys().collect();
        assert_eq!(fields, KEY_FIELDS, "{backend}");
    }
    let listed = find(&items, &created["id"]);
    for f in [
        "id",
        "name",
        "prefix",
        "org_id",
        "created_at",
        "expires_at",
        "revoked",
    ] {
        assert_eq!(listed[f], created[f], "{backend}: {f}");
    }
    let revoked_before: Vec<&str> = items
        .iter()
        .filter(|k| k["revoked"] == true)
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(revoked_before, ["revoked"], "{backend}");

    // Revoke: the key stops working; the list says so; revoking again changes nothing.
    let (status, body) = delete_key(&app, &app.owner.key, &id).await;
    assert_eq!(
        (status, &body),
        (200, &json!({"id": id, "revoked": true})),
        "{backend}"
    );
    let resp = app.get(SETTINGS, Some(&secret)).await;
    assert_eq!(
        resp.headers().get("www-authenticate").unwrap(),
        "Bearer",
        "{backend}"
    );
    let (status, body) = status_json(resp).await;
    assert_eq!(
        (status, &body),
        (401, &detail("API key revoked")),
        "{backend}"
    );
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(find(&items, &created["id"])["revoked"], true, "{backend}");
    let (status, again) = delete_key(&app, &app.owner.key, &id).await;
    assert_eq!((status, &again), (200, &body_revoked(&id)), "{backend}");
    // The id in 32-hex form names the same key.
    let spaced_id = spaced["id"]
        .as_str()
        .unwrap()
        .replace('-', "")
        .to_uppercase();
    let (status, body) = delete_key(&app, &app.owner.key, &spaced_id).await;
    assert_eq!(
        (status, &body),
        (200, &body_revoked(spaced["id"].as_str().unwrap())),
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&spaced_secret)).await).await;
    assert_eq!(status, 401, "{backend}");
    // A key can revoke itself; the owner's other keys keep working.
    let (_, items) = list_keys(&app, &app.bound_owner.key).await;
    let bound_id = items
        .iter()
        .find(|k| k["prefix"] == app.bound_owner.key[..8])
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = delete_key(&app, &app.bound_owner.key, &bound_id).await;
    assert_eq!(status, 200, "{backend}");
    let (status, body) = status_json(app.get(SETTINGS, Some(&app.bound_owner.key)).await).await;
    assert_eq!(
        (status, &body),
        (401, &detail("API key revoked")),
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&app.owner.key)).await).await;
    assert_eq!(status, 200, "{backend}");
    app.stop().await;
}

fn body_revoked(id: &str) -> Value {
    json!({"id": id, "revoked": true})
}

/// Keys are bound to the effective organization: a key made with `X-Org-Id: B` acts on B.
async fn keys_follow_the_effective_org(backend: Backend) {
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

async fn other_users_keys_and_bad_ids(backend: Backend) {
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

async fn create_validation(backend: Backend) {
    let app = spawn_app(backend).await;
    let (_, before) = list_keys(&app, &app.owner.key).await;
    let key = app.owner.key.as_str();
    let long = "x".repeat(101);
    let cases = [
        (json!({}), json!(["body", "name"]), "missing"),
        (
            json!({"expires_at": "2099-01-01T00:00:00Z"}),
            json!(["body", "name"]),
            "missing",
        ),
        (json!({"name": ""}), json!(["body", "name"]), "value_error"),
        (
            json!({"name": "   "}),
            json!(["body", "name"]),
            "value_error",
        ),
        (
            json!({"name": long}),
            json!(["body", "name"]),
            "value_error",
        ),
        (json!({"name": 5}), json!(["body", "name"]), "string_type"),
        (
            json!({"name": null}),
            json!(["body", "name"]),
            "string_type",
        ),
        (
            json!({"name": "k", "expires_at": "2000-01-01T00:00:00Z"}),
            json!(["body", "expires_at"]),
            "value_error",
        ),
        (
            json!({"name": "k", "expires_at": "1999-12-31"}),
            json!(["body", "expires_at"]),
            "value_error",
        ),
        (
            json!({"name": "k", "expires_at": "soon"}),
            json!(["body", "expires_at"]),
            "datetime_from_date_parsing",
        ),
        (json!(["name"]), json!(["body"]), "model_type"),
    ];
    for (body, loc, error_type) in cases {
        let (status, got) = create_key(&app, key, &body).await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_one_error(&got, &loc, error_type);
    }
    let (status, got) = create_key(
        &app,
        key,
        &json!({"name": "k", "expires_at": "2000-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        got["detail"][0]["msg"], "Value error, Expiration date cannot be in the past",
        "{backend}"
    );
    let resp = app
        .req(Method::POST, "/api/keys", Some(key))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    let (status, got) = status_json(resp).await;
    assert_eq!(status, 422, "{backend}: {got}");
    assert_one_error(&got, &json!(["body", 9]), "json_invalid");
    // 100 characters is fine; any role may create keys.
    let (status, got) = create_key(&app, key, &json!({"name": "y".repeat(100)})).await;
    assert_eq!(status, 200, "{backend}: {got}");
    let (status, got) = create_key(&app, &app.member.key, &json!({"name": "mine"})).await;
    assert_eq!(status, 200, "{backend}: {got}");
    // Refused callers, with bodies that are also bad: the 401 comes first.
    for (who, k, message) in [
        ("garbage", "sb_nope", "Invalid API key"),
        ("expired", app.expired.key.as_str(), "API key expired"),
        ("revoked", app.revoked.key.as_str(), "API key revoked"),
    ] {
        for body in [json!({"name": "k"}), json!({})] {
            let (status, got) = create_key(&app, k, &body).await;
            assert_eq!((status, &got), (401, &detail(message)), "{backend}: {who}");
        }
    }
    let (_, after) = list_keys(&app, &app.owner.key).await;
    assert_eq!(
        after.len(),
        before.len() + 1,
        "{backend}: only the valid key was made"
    );
    app.stop().await;
}

async fn last_used_is_debounced(backend: Backend) {
    let app = spawn_app(backend).await;
    let (status, created) = create_key(&app, &app.owner.key, &json!({"name": "used"})).await;
    assert_eq!(status, 200, "{backend}: {created}");
    let secret = created["api_key"].as_str().unwrap().to_owned();
    let last_used = |items: &[Value]| find(items, &created["id"])["last_used_at"].clone();
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(last_used(&items), Value::Null, "{backend}: not used yet");
    let owner_first =
        items.iter().find(|k| k["name"] == "bootstrap").unwrap()["last_used_at"].clone();
    assert!(
        !owner_first.is_null(),
        "{backend}: the listing key was used"
    );

    let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200);
    let (_, items) = list_keys(&app, &app.owner.key).await;
    let first = last_used(&items);
    assert!(
        instant(&first) >= instant(&created["created_at"]),
        "{backend}: {first}"
    );
    for _ in 0..3 {
        let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
        assert_eq!(status, 200);
    }
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(
        last_used(&items),
        first,
        "{backend}: written once a minute at most"
    );
    let bootstrap = items.iter().find(|k| k["name"] == "bootstrap").unwrap();
    assert_eq!(bootstrap["last_used_at"], owner_first, "{backend}");
    // Refused keys are not marked used.
    for k in [&app.expired.key, &app.revoked.key] {
        let (status, _) = status_json(app.get(SETTINGS, Some(k)).await).await;
        assert_eq!(status, 401);
    }
    let (_, items) = list_keys(&app, &app.owner.key).await;
    for name in ["expired", "revoked"] {
        let k = items.iter().find(|k| k["name"] == name).unwrap();
        assert_eq!(k["last_used_at"], Value::Null, "{backend}: {name}");
    }
    // A use more than a minute after the last one is written. The row is changed behind the
    // server's back: its key cache sees the change after its time to live (1 s, API.md "API
    // keys: lookups from a per-replica cache").
    app.exec_sql(&format!(
        "UPDATE api_keys SET last_used_at = '2000-01-01 00:00:00.000000' WHERE id = '{}'",
        created["id"].as_str().unwrap()
    ))
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert_eq!(
        last_used(&items),
        "2000-01-01T00:00:00.000000Z",
        "{backend}"
    );
    let (status, _) = status_json(app.get(SETTINGS, Some(&secret)).await).await;
    assert_eq!(status, 200);
    let (_, items) = list_keys(&app, &app.owner.key).await;
    assert!(
        instant(&last_used(&items)) >= instant(&first),
        "{backend}: {}",
        last_used(&items)
    );
    app.stop().await;
}

async fn users_me(backend: Backend) {
    let app = spawn_app(backend).await;
    let admin_permissions: Vec<&str> = OWNER_PERMISSIONS
        .iter()
        .copied()
        .filter(|p| !NOT_FOR_ADMINS.contains(p))
        .collect();
    assert_eq!(admin_permissions.len(), 19);
    let a = app.org.to_string();
    for (actor, email, role, permissions, bound) in [
        (
            &app.owner,
            "owner@example.com",
            "owner",
            sorted(&OWNER_PERMISSIONS),
            false,
        ),
        (
            &app.admin,
            "admin@example.com",
            "admin",
            sorted(&admin_permissions),
            false,
        ),
        (
            &app.member,
            "member@example.com",
            "member",
            sorted(&MEMBER_PERMISSIONS),
            false,
        ),
        (
            &app.bound_owner,
            "owner@example.com",
            "owner",
            sorted(&OWNER_PERMISSIONS),
            true,
        ),
    ] {
        let (_, items) = list_keys(&app, &actor.key).await;
        let key_id = items
            .iter()
            .find(|k| k["prefix"] == actor.key[..8])
            .unwrap()["id"]
            .clone();
        let (status, body) = me(&app, &actor.key, None).await;
        assert_eq!(status, 200, "{backend}: {body}");
        // Switchboard's own fields (issue 21 adds OpenHands' `UserInfo` fields beside them,
        // checked in bins/switchboard/tests/user_settings.rs).
        let ours = [
            "user_id",
            "email",
            "name",
            "org_id",
            "org_name",
            "role",
            "permissions",
            "api_key_id",
            "api_key_org_id",
        ];
        let shown: serde_json::Map<String, Value> = ours
            .iter()
            .map(|k| ((*k).to_owned(), body[*k].clone()))
            .collect();
        assert_eq!(body["id"], json!(actor.user_id.to_string()), "{backend}");
        assert_eq!(
            Value::Object(shown),
            json!({
                "user_id": actor.user_id.to_string(),
                "email": email,
                "name": null,
                "org_id": a,
                "org_name": "Org A",
                "role": role,
                "permissions": permissions,
                "api_key_id": key_id,
                "api_key_org_id": if bound { json!(a) } else { Value::Null },
            }),
            "{backend}: {role}"
        );
        let count = body["permissions"].as_array().unwrap().len();
        assert_eq!(
            count,
            match role {
                "owner" => 22,
                "admin" => 19,
                _ => 8,
            },
            "{backend}"
        );
        assert_eq!(
            body["permissions"]
                .as_array()
                .unwrap()
                .contains(&json!("edit_org_settings")),
            role != "member",
            "{backend}: {role}"
        );
    }
    // The outsider, in its own organization; refused in A.
    let (status, body) = me(&app, &app.non_member.key, None).await;
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["org_id"], app.other_org.to_string());
    assert_eq!(body["org_name"], "Org B");
    assert_eq!(body["email"], "outsider@example.com");
    assert_eq!(body["role"], "owner");
    let (status, body) = me(&app, &app.non_member.key, Some(a.clone())).await;
    assert_eq!(
        (status, &body),
        (403, &detail("User is not a member of this organization")),
        "{backend}"
    );
    let (status, body) = status_json(app.get("/api/v1/users/me", None).await).await;
    assert_eq!(
        (status, &body),
        (401, &detail("Not authenticated")),
        "{backend}"
    );
    let (status, body) = me(&app, &app.owner.key, Some("nope".into())).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["header", "x-org-id"]), "uuid_parsing");
    app.stop().await;
}

on_both_backends!(
    create_use_list_revoke,
    keys_follow_the_effective_org,
    other_users_keys_and_bad_ids,
    create_validation,
    last_used_is_debounced,
    users_me,
);
