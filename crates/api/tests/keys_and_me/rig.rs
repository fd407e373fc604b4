//! What these tests compare with (each role's permissions, a listed key's fields) and the
//! calls they make (create, list, delete a key; `users/me`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Actor, TestApp, status_json};

pub const KEY_ELSEWHERE: &str = "API key is not authorized for this organization";

pub const OWNER_PERMISSIONS: [&str; 23] = [
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
    "view_automations",
    "manage_automations",
    "provision_user",
    "view_org_conversations",
];
pub const NOT_FOR_ADMINS: [&str; 3] = [
    "change_user_role:owner",
    "change_organization_name",
    "delete_organization",
];
pub const MEMBER_PERMISSIONS: [&str; 8] = [
    "manage_secrets",
    "manage_mcp",
    "manage_integrations",
    "manage_application_settings",
    "manage_api_keys",
    "view_llm_settings",
    "view_org_settings",
    "view_automations",
];

pub fn sorted(perms: &[&str]) -> Value {
    let mut v: Vec<&str> = perms.to_vec();
    v.sort_unstable();
    json!(v)
}

/// The fields of a key as listed (no secret), in order.
pub const KEY_FIELDS: [&str; 8] = [
    "id",
    "name",
    "prefix",
    "org_id",
    "created_at",
    "last_used_at",
    "expires_at",
    "revoked",
];

pub async fn create_key(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    status_json(app.post_json("/api/keys", Some(key), body).await).await
}

/// `GET /api/keys` as `key`: the raw text and the items.
pub async fn list_keys(app: &TestApp, key: &str) -> (String, Vec<Value>) {
    let resp = app.get("/api/keys", Some(key)).await;
    assert_eq!(resp.status().as_u16(), 200, "{}", app.backend);
    let text = resp.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["items"], "{}", app.backend);
    (text, body["items"].as_array().unwrap().clone())
}

pub fn find<'a>(items: &'a [Value], id: &Value) -> &'a Value {
    items
        .iter()
        .find(|k| &k["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {items:?}"))
}

pub async fn delete_key(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    status_json(
        app.req(Method::DELETE, &format!("/api/keys/{id}"), Some(key))
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub async fn me(app: &TestApp, key: &str, org: Option<String>) -> (u16, Value) {
    let mut r = app.req(Method::GET, "/api/v1/users/me", Some(key));
    if let Some(o) = org {
        r = r.header("X-Org-Id", o);
    }
    status_json(r.send().await.unwrap()).await
}

/// Every secret the app knows of.
pub fn secrets(app: &TestApp) -> Vec<String> {
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
