//! The service route's rules: 503 without a configured key (OpenHands' answer without
//! `AUTOMATIONS_SERVICE_KEY`), 401 for no or a wrong key before anything else is read, 404 for
//! an unknown user, 403 outside the organization, 422 for a bad organization id or name; a
//! minted key is the user's like any other: bound, expiring in 24 h, listed, revocable (by id
//! or by the service, by name).

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_api::extract::BodyLimits;
use switchboard_domain::services::ServiceKey;
use switchboard_testkit::Backend;

use crate::automation_service::{SERVICE_KEY, replay};
use crate::common::{
    TestApp, assert_one_error, detail, spawn_app, spawn_app_configured, status_json,
};

async fn with_service_key(backend: Backend) -> TestApp {
    spawn_app_configured(backend, BodyLimits::default(), |s| {
        s.with_service_key(ServiceKey::new(SERVICE_KEY).unwrap())
    })
    .await
}

/// `POST` of the mint route with `key` (none: no header) and a raw body.
async fn mint(app: &TestApp, user: &str, org: &str, key: Option<&str>, body: &str) -> (u16, Value) {
    let mut r = app
        .client
        .post(format!(
            "{}/api/service/users/{user}/orgs/{org}/api-keys",
            app.base
        ))
        .header("Content-Type", "application/json")
        .body(body.to_owned());
    if let Some(k) = key {
        r = r.header("X-Service-API-Key", k);
    }
    status_json(r.send().await.unwrap()).await
}

async fn revoke_named(app: &TestApp, user: &str, org: &str, name: &str, key: &str) -> (u16, Value) {
    let url = format!(
        "{}/api/service/users/{user}/orgs/{org}/api-keys/{name}",
        app.base
    );
    status_json(
        app.client
            .delete(url)
            .header("X-Service-API-Key", key)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn health(app: &TestApp) -> Value {
    let (status, body) = status_json(app.get("/api/service/health", None).await).await;
    assert_eq!(status, 200, "{body}");
    body
}

pub async fn without_a_service_key_the_routes_answer_503(backend: Backend) {
    let app = spawn_app(backend).await;
    let (user, org) = (app.member.user_id.to_string(), app.org.to_string());
    let (status, body) = replay(
        &app,
        "mint_run_key",
        &[
            ("user_id", &user),
            ("org_id", &org),
            ("service_key", "anything"),
        ],
    )
    .await;
    assert_eq!(
        (status, body),
        (503, detail("Service authentication not configured")),
        "{backend}"
    );
    let (status, body) = revoke_named(&app, &user, &org, "automation", "anything").await;
    assert_eq!(
        (status, body),
        (503, detail("Service authentication not configured")),
        "{backend}"
    );
    assert_eq!(
        health(&app).await,
        json!({"status": "ok", "service_auth_configured": false})
    );
}

pub async fn the_service_key_and_the_user_are_checked(backend: Backend) {
    let app = with_service_key(backend).await;
    assert_eq!(health(&app).await["service_auth_configured"], true);
    let (user, org) = (app.member.user_id.to_string(), app.org.to_string());
    let good = r#"{"name": "automation"}"#;
    // The key first: a wrong key with a bad path and body is still 401.
    let cases = [
        (None, "X-Service-API-Key header is required"),
        (Some(""), "X-Service-API-Key header is required"),
        (Some("svc-wrong"), "Invalid service API key"),
        (
            Some(&SERVICE_KEY[..SERVICE_KEY.len() - 1]),
            "Invalid service API key",
        ),
    ];
    for (key, message) in cases {
        assert_eq!(
            mint(&app, &user, &org, key, good).await,
            (401, detail(message)),
            "{backend}: {key:?}"
        );
        assert_eq!(
            mint(&app, "nobody", "not-a-uuid", key, "{").await,
            (401, detail(message)),
            "{backend}: {key:?}"
        );
    }
    let k = Some(SERVICE_KEY);
    let stranger = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        mint(&app, &stranger, &org, k, good).await,
        (404, detail(&format!("User {stranger} not found")))
    );
    assert_eq!(
        mint(&app, "not-a-uuid", &org, k, good).await,
        (404, detail("User not-a-uuid not found"))
    );
    // A user of organization B only.
    let outsider = app.non_member.user_id.to_string();
    assert_eq!(
        mint(&app, &outsider, &org, k, good).await,
        (
            403,
            detail(&format!("User {outsider} is not a member of org {org}"))
        ),
        "{backend}"
    );
    let (status, body) = mint(&app, &user, "not-a-uuid", k, good).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["path", "org_id"]), "uuid_parsing");
    for (bad, loc, kind) in [
        ("{}", json!(["body", "name"]), "missing"),
        (r#"{"name": "  "}"#, json!(["body", "name"]), "value_error"),
        (r#"{"name": 7}"#, json!(["body", "name"]), "string_type"),
        ("[]", json!(["body"]), "model_type"),
    ] {
        let (status, body) = mint(&app, &user, &org, k, bad).await;
        assert_eq!(status, 422, "{backend}: {bad}: {body}");
        assert_one_error(&body, &loc, kind);
    }
    // Nothing was minted by any of those.
    let (_, keys) = status_json(app.get("/api/keys", Some(&app.member.key)).await).await;
    assert_eq!(
        keys["items"].as_array().unwrap().len(),
        1,
        "{backend}: {keys}"
    );
}

pub async fn a_minted_key_is_listed_expires_and_is_revocable(backend: Backend) {
    let app = with_service_key(backend).await;
    let (user, org) = (app.member.user_id.to_string(), app.org.to_string());
    let before = time::OffsetDateTime::now_utc();
    let (status, first) = mint(
        &app,
        &user,
        &org,
        Some(SERVICE_KEY),
        r#"{"name": " automation "}"#,
    )
    .await;
    assert_eq!(status, 200, "{backend}: {first}");
    let (_, second) = mint(
        &app,
        &user,
        &org,
        Some(SERVICE_KEY),
        r#"{"name": "automation"}"#,
    )
    .await;
    assert_ne!(
        first["key"], second["key"],
        "{backend}: each call mints a new key"
    );
    let expires = crate::common::instant(&first["expires_at"]);
    let hours = (expires - before).whole_minutes();
    assert!(
        (24 * 60 - 1..=24 * 60 + 1).contains(&hours),
        "{backend}: {expires}"
    );
    // Listed among the member's keys, bound to the organization.
    let (_, keys) = status_json(app.get("/api/keys", Some(&app.member.key)).await).await;
    let listed = keys["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == first["id"])
        .cloned()
        .unwrap_or_else(|| panic!("{backend}: {keys}"));
    assert_eq!(
        (
            listed["name"].as_str(),
            listed["org_id"].as_str(),
            listed["revoked"].as_bool()
        ),
        (Some("automation"), Some(org.as_str()), Some(false))
    );
    // Usable; revoked by the member by id, then refused.
    let run_key = first["key"].as_str().unwrap();
    assert_eq!(
        app.get("/api/v1/users/me", Some(run_key)).await.status(),
        200
    );
    let id = first["id"].as_str().unwrap();
    let r = app
        .req(
            Method::DELETE,
            &format!("/api/keys/{id}"),
            Some(&app.member.key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{backend}");
    assert_eq!(
        app.get("/api/v1/users/me", Some(run_key)).await.status(),
        401,
        "{backend}"
    );
    // The service revokes the others by name; then there is none left of that name.
    let other = second["key"].as_str().unwrap();
    assert_eq!(app.get("/api/v1/users/me", Some(other)).await.status(), 200);
    assert_eq!(
        revoke_named(&app, &user, &org, "automation", SERVICE_KEY).await,
        (200, json!({"message": "API key deleted successfully"})),
        "{backend}"
    );
    assert_eq!(
        app.get("/api/v1/users/me", Some(other)).await.status(),
        401,
        "{backend}"
    );
    let (status, body) = revoke_named(&app, &user, &org, "automation", SERVICE_KEY).await;
    assert_eq!(status, 404, "{backend}: {body}");
    assert_eq!(
        revoke_named(&app, &user, &org, "automation", "svc-wrong")
            .await
            .0,
        401
    );
}
