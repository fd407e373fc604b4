//! The rules of the create body (`POST /api/keys`).

use reqwest::Method;
use serde_json::json;
use switchboard_testkit::Backend;

use switchboard_api::extract::BodyLimits;

use crate::common::{assert_one_error, detail, spawn_app, spawn_app_configured, status_json};
use crate::keys_and_me::rig::{create_key, delete_key, list_keys};

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

/// A member holds at most `--max-api-keys-per-member` live keys (issue 33: minting keys must
/// not multiply what a member may hold): one more is 409 with the reason; a revoked or
/// expired key does not count, so revoking one makes room; another member is not refused.
pub async fn keys_per_member(backend: Backend) {
    const MAX: usize = 6;
    let app = spawn_app_configured(backend, BodyLimits::default(), |s| {
        s.with_max_api_keys_per_member(MAX)
    })
    .await;
    let owner = app.owner.key.clone();
    // The owner holds keys already (the rig's); new ones until the limit.
    let mut made = Vec::new();
    let refused = loop {
        let (status, body) = create_key(&app, &owner, &json!({"name": "k"})).await;
        if status != 200 {
            break (status, body);
        }
        made.push(body["id"].as_str().unwrap().to_owned());
        assert!(
            made.len() < MAX,
            "{backend}: {MAX} keys made and never refused"
        );
    };
    assert!(
        !made.is_empty(),
        "{backend}: the rig holds the limit already"
    );
    assert_eq!(refused.0, 409, "{backend}: {}", refused.1);
    assert_eq!(
        refused.1,
        detail(&format!(
            "You hold {MAX} API keys, the most a member may hold ({MAX}); revoke one to create another"
        )),
        "{backend}"
    );
    let (status, _) = create_key(&app, &owner, &json!({"name": "again"})).await;
    assert_eq!(status, 409, "{backend}: still at the limit");
    // Another member is counted apart.
    let (status, body) = create_key(&app, &app.admin.key, &json!({"name": "admin's"})).await;
    assert_eq!(status, 200, "{backend}: {body}");
    // A revoked key makes room.
    let (status, _) = delete_key(&app, &owner, &made[0]).await;
    assert_eq!(status, 200, "{backend}");
    let (status, body) = create_key(&app, &owner, &json!({"name": "after a revoke"})).await;
    assert_eq!(status, 200, "{backend}: {body}");
}
