//! The calls the members tests make, and a new member.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::{OrgId, Role, UserId};

use crate::common::{TestApp, status_json};

pub async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app.req(method, path, Some(key));
    if let Some(b) = body {
        req = req.json(&b);
    }
    status_json(req.send().await.unwrap()).await
}

pub fn members(org: OrgId) -> String {
    format!("/api/organizations/{org}/members")
}

pub fn member(org: OrgId, user: UserId) -> String {
    format!("/api/organizations/{org}/members/{user}")
}

pub async fn patch(app: &TestApp, key: &str, path: String, role: &str) -> (u16, Value) {
    call(
        app,
        Method::PATCH,
        &path,
        key,
        Some(json!({ "role": role })),
    )
    .await
}

pub fn emails(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].as_str().unwrap())
        .collect()
}

/// A new member of organization A with `role`, and a key of theirs.
pub async fn new_member(app: &TestApp, email: &str, role: Role) -> (UserId, String) {
    let (s, org, email) = (app.services.clone(), app.org, email.to_owned());
    tokio::task::spawn_blocking(move || {
        let u = s.operator().create_user(&email, None).unwrap();
        s.operator().add_member(org, u.id, role).unwrap();
        let key = s
            .operator()
            .operator_create_key(u.id, None, "k".into(), None)
            .unwrap()
            .secret;
        (u.id, key)
    })
    .await
    .unwrap()
}
