//! The order of the checks (401, the organization's 403/404/422, the body, the marketplace
//! gate), and an organization deleted under its members.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{SETTINGS, assert_one_error, detail, spawn_app, status_json};
use crate::permissions::cases::{Cred, KEY_ELSEWHERE, NOT_MEMBER, expect_error, request};

/// Authentication comes before anything about the body, and the organization checks (403,
/// malformed `X-Org-Id`) too; a member's invalid marketplace list is a 422 before the 403.
pub async fn order_of_checks(backend: Backend) {
    let app = spawn_app(backend).await;
    let a = app.org.to_string();
    let b = app.other_org.to_string();
    let before = app.settings().await;
    let big = vec![b' '; (1 << 20) + 1];
    let bad_bodies: Vec<(&str, Vec<u8>)> = vec![
        ("malformed JSON", b"{\"max_budget_per_task\": ".to_vec()),
        ("empty body", Vec::new()),
        ("invalid value", br#"{"max_budget_per_task": -1}"#.to_vec()),
        ("not an object", b"[1, 2]".to_vec()),
        (
            "marketplaces null",
            br#"{"registered_marketplaces": null}"#.to_vec(),
        ),
        ("over 1 MiB", big),
    ];
    let refusals: Vec<(&str, Cred<'_>, Option<&str>, u16, Value)> = vec![
        (
            "no key",
            Cred::Nothing,
            None,
            401,
            detail("Not authenticated"),
        ),
        (
            "garbage key",
            Cred::Token("sb_garbage"),
            None,
            401,
            detail("Invalid API key"),
        ),
        (
            "garbage bearer",
            Cred::Bearer("sb_garbage"),
            None,
            401,
            detail("Invalid API key"),
        ),
        (
            "expired key",
            Cred::Token(&app.expired.key),
            None,
            401,
            detail("API key expired"),
        ),
        (
            "revoked key",
            Cred::Token(&app.revoked.key),
            None,
            401,
            detail("API key revoked"),
        ),
        (
            "garbage key, malformed X-Org-Id",
            Cred::Token("sb_garbage"),
            Some("not-a-uuid"),
            401,
            detail("Invalid API key"),
        ),
        (
            "no key, malformed X-Org-Id",
            Cred::Nothing,
            Some("not-a-uuid"),
            401,
            detail("Not authenticated"),
        ),
        (
            "non-member naming org A",
            Cred::Token(&app.non_member.key),
            Some(&a),
            403,
            detail(NOT_MEMBER),
        ),
        (
            "bound key naming org B",
            Cred::Token(&app.bound_owner.key),
            Some(&b),
            403,
            detail(KEY_ELSEWHERE),
        ),
    ];
    for (who, cred, org, status, expected) in &refusals {
        for (what, bytes) in &bad_bodies {
            // Several times: the answer must not depend on how fast the body arrives.
            for _ in 0..3 {
                let resp = request(&app, Method::POST, *cred, *org)
                    .header("content-type", "application/json")
                    .body(bytes.clone())
                    .send()
                    .await
                    .unwrap();
                expect_error(backend, &format!("{who}, {what}"), resp, *status, expected).await;
            }
        }
    }
    // A malformed X-Org-Id, once authenticated: 422 on the header, before the body.
    for (method, body) in [
        (Method::GET, None),
        (
            Method::POST,
            Some(br#"{"max_budget_per_task": 5}"#.to_vec()),
        ),
        (Method::POST, Some(b"{oops".to_vec())),
    ] {
        for bad in [
            "not-a-uuid",
            "1234",
            "{6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b}",
        ] {
            let mut r = request(&app, method.clone(), Cred::Token(&app.owner.key), Some(bad));
            if let Some(b) = &body {
                r = r.header("content-type", "application/json").body(b.clone());
            }
            let (status, got) = status_json(r.send().await.unwrap()).await;
            assert_eq!(status, 422, "{backend}: {method} {bad}: {got}");
            assert_one_error(&got, &json!(["header", "x-org-id"]), "uuid_parsing");
            assert_eq!(got["detail"][0]["input"], bad, "{backend}");
        }
    }
    // A member's invalid marketplace list: the body is checked (422) before the gate (403).
    let (status, got) = app
        .post_settings(
            &app.member.key,
            &json!({"registered_marketplaces": [{"name": "1bad", "source": "github:o/r"}]}),
        )
        .await;
    assert_eq!(status, 422, "{backend}: {got}");
    assert_one_error(
        &got,
        &json!(["body", "registered_marketplaces", 0, "name"]),
        "value_error",
    );
    assert_eq!(
        app.settings().await,
        before,
        "{backend}: nothing was written"
    );
    app.stop().await;
}

/// The organization is deleted while its members still hold keys: their current
/// organization is gone (404), keys bound to it are gone with it (401), and naming it is
/// being a member of nothing (403).
pub async fn organization_deleted(backend: Backend) {
    let app = spawn_app(backend).await;
    app.exec_sql(&format!("DELETE FROM orgs WHERE id = '{}'", app.org))
        .await;
    let gone = detail("Current organization not found");
    for (who, key) in [
        ("owner", &app.owner.key),
        ("admin", &app.admin.key),
        ("member", &app.member.key),
    ] {
        let (status, body) = status_json(app.get(SETTINGS, Some(key)).await).await;
        assert_eq!((status, &body), (404, &gone), "{backend}: GET {who}");
        for update in [
            json!({}),
            json!({"max_budget_per_task": 1}),
            json!({"registered_marketplaces": []}),
        ] {
            let (status, body) = app.post_settings(key, &update).await;
            assert_eq!(
                (status, &body),
                (404, &gone),
                "{backend}: POST {who} {update}"
            );
        }
    }
    let resp = request(
        &app,
        Method::GET,
        Cred::Token(&app.owner.key),
        Some(&app.org.to_string()),
    )
    .send()
    .await
    .unwrap();
    expect_error(
        backend,
        "naming the deleted org",
        resp,
        403,
        &detail(NOT_MEMBER),
    )
    .await;
    let resp = request(&app, Method::GET, Cred::Token(&app.bound_owner.key), None)
        .send()
        .await
        .unwrap();
    expect_error(
        backend,
        "key bound to it",
        resp,
        401,
        &detail("Invalid API key"),
    )
    .await;
    // Organization B is untouched.
    let b = app.settings_of(&app.non_member.key, None).await;
    assert_eq!(b["enable_proactive_conversation_starters"], true);
    app.stop().await;
}
