//! Device logins (RFC 8628) as `openhands login` makes them: its exact requests and the
//! answers it reads.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{spawn_app, status_json};
use crate::sign_in::rig::{csrf, provider_missing, spawn};

/// `POST /oauth/device/token` with `device_code` as the CLI sends it (a form, nothing else).
async fn poll(app: &crate::common::TestApp, code: &str) -> (u16, Value) {
    let r = app
        .req(Method::POST, "/oauth/device/token", None)
        .form(&[("device_code", code)]);
    status_json(r.send().await.unwrap()).await
}

/// Starts a device login as the CLI does (`POST /oauth/device/authorize`, JSON `{}`).
async fn authorize(app: &crate::common::TestApp) -> Value {
    let r = app
        .req(Method::POST, "/oauth/device/authorize", None)
        .json(&json!({}));
    let (status, body) = status_json(r.send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Pending, too fast, approved once (a key of the approver), then unknown; denied; expired;
/// malformed; and without sign-in configured, 404.
pub async fn device_logins(backend: Backend) {
    if provider_missing(backend) {
        return;
    }
    let s = spawn(
        backend,
        &["group:engineering=6a1e0c52-4b7f-4d2e-9c31-0f5e8d7a6b41:member"],
        3600,
    )
    .await;
    let app = &s.app;
    let start = authorize(app).await;
    for field in [
        "device_code",
        "user_code",
        "verification_uri",
        "verification_uri_complete",
    ] {
        assert!(
            start[field].as_str().is_some_and(|v| !v.is_empty()),
            "{backend}: {field}: {start}"
        );
    }
    assert_eq!(
        (start["expires_in"].as_i64(), start["interval"].as_i64()),
        (Some(600), Some(5)),
        "{backend}"
    );
    let user_code = start["user_code"].as_str().unwrap().to_owned();
    assert_eq!(start["verification_uri"], format!("{}/device", app.base));
    assert_eq!(
        start["verification_uri_complete"],
        format!("{}/device?user_code={user_code}", app.base)
    );
    let code = start["device_code"].as_str().unwrap().to_owned();
    let (status, body) = poll(app, &code).await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("authorization_pending")),
        "{backend}: {body}"
    );
    let (status, body) = poll(app, &code).await;
    assert_eq!(
        (status, body["error"].clone(), body["interval"].clone()),
        (400, json!("slow_down"), json!(10)),
        "{backend}: {body}"
    );

    // The verification page: to /login first, then back to the code; approved.
    let (browser, page) = s
        .signed_in("alice", &format!("/device?user_code={user_code}"))
        .await;
    assert_eq!(page.status, 200, "{backend}: {page:?}");
    assert!(
        page.body.contains(&user_code) && page.body.contains("Approve"),
        "{backend}: {}",
        page.body
    );
    let decided = browser
        .post_form(
            &format!("{}/device", app.base),
            &[
                ("csrf", &csrf(&page)),
                ("user_code", &user_code.to_lowercase()),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(decided.status, 200, "{backend}: {decided:?}");
    assert!(decided.body.contains("Device connected"), "{backend}");
    let (status, token) = poll(app, &code).await;
    assert_eq!(status, 200, "{backend}: {token}");
    assert_eq!(token["token_type"], "Bearer");
    let key = token["access_token"].as_str().unwrap();
    let (status, me) = status_json(
        app.req(Method::GET, "/api/v1/users/me", Some(key))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, me["email"].clone()),
        (200, json!("alice@example.com")),
        "{backend}: {me}"
    );
    let (status, body) = poll(app, &code).await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("invalid_grant")),
        "{backend}: single use"
    );
    // The key is on the account page, named after the code, and revocable there.
    let account = browser.get(&format!("{}/account", app.base)).await;
    assert!(
        account
            .body
            .contains(&format!("openhands login ({user_code})")),
        "{backend}"
    );

    // Denied.
    let start = authorize(app).await;
    let (code, user_code) = (
        start["device_code"].as_str().unwrap(),
        start["user_code"].as_str().unwrap(),
    );
    let page = browser
        .get(&format!("{}/device?user_code={user_code}", app.base))
        .await;
    browser
        .post_form(
            &format!("{}/device", app.base),
            &[
                ("csrf", &csrf(&page)),
                ("user_code", user_code),
                ("decision", "deny"),
            ],
        )
        .await;
    let (_, body) = poll(app, code).await;
    assert_eq!(body["error"], "access_denied", "{backend}");
    // A decided code cannot be approved after all.
    let again = browser
        .post_form(
            &format!("{}/device", app.base),
            &[
                ("csrf", &csrf(&page)),
                ("user_code", user_code),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(again.status, 404, "{backend}");
    // Not without the session's token.
    let start = authorize(app).await;
    let forged = browser
        .post_form(
            &format!("{}/device", app.base),
            &[
                ("csrf", "forged"),
                ("user_code", start["user_code"].as_str().unwrap()),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403, "{backend}");
    // Expired.
    app.exec_sql("UPDATE device_grants SET expires_at = created_at")
        .await;
    let (_, body) = poll(app, start["device_code"].as_str().unwrap()).await;
    assert_eq!(body["error"], "expired_token", "{backend}");
    // Malformed.
    let (status, body) = poll(app, "").await;
    assert_eq!(
        (status, body["error"].clone()),
        (400, json!("invalid_request")),
        "{backend}"
    );
    let (_, body) = poll(app, "sbd_not-a-code").await;
    assert_eq!(body["error"], "invalid_grant", "{backend}");

    // A server without sign-in: the device endpoints say so.
    let plain = spawn_app(backend).await;
    let r = plain
        .req(Method::POST, "/oauth/device/authorize", None)
        .json(&json!({}));
    let (status, body) = status_json(r.send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"detail": "Sign-in is not configured on this server"})
        ),
        "{backend}"
    );
    plain.stop().await;
}
