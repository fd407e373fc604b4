//! The rules of the create body (`POST /api/keys`).

use reqwest::Method;
use serde_json::json;
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, detail, spawn_app, status_json};
use crate::rig::{create_key, list_keys};

pub async fn create_validation(backend: Backend) {
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
