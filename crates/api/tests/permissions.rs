//! Who may read and change organization app settings (`GET`/`POST /api/organizations/app`):
//! authentication (API.md, Identity), the effective organization (key binding, `X-Org-Id`,
//! current organization), the role table (reference §2.2) and the order of the checks
//! (reference §1.6: 401, then 403/404/422 of the organization, then the body, then the
//! marketplace gate).

#[macro_use]
mod common;

use common::{SETTINGS, TestApp, assert_one_error, detail, spawn_app, status_json};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};
use switchboard_domain::OrgId;
use switchboard_testkit::Backend;

const NOT_MEMBER: &str = "User is not a member of this organization";
const KEY_ELSEWHERE: &str = "API key is not authorized for this organization";
const MISSING_EDIT: &str = "Missing required permission: edit_org_settings";

/// How a request presents its key.
#[derive(Clone, Copy)]
enum Cred<'a> {
    /// No credentials at all.
    Nothing,
    /// `X-Access-Token: <key>`.
    Token(&'a str),
    /// `Authorization: Bearer <key>`.
    Bearer(&'a str),
    /// Both headers.
    Both { token: &'a str, bearer: &'a str },
}

/// What a case must answer.
#[derive(Clone)]
enum Expect {
    /// 200, acting on this organization.
    Ok(OrgId),
    /// This status and body.
    Err(u16, Value),
}

struct Case<'a> {
    name: &'static str,
    cred: Cred<'a>,
    org_header: Option<String>,
    expect: Expect,
}

fn request(
    app: &TestApp,
    method: Method,
    cred: Cred<'_>,
    org_header: Option<&str>,
) -> RequestBuilder {
    let mut r = app.req(method, SETTINGS, None);
    match cred {
        Cred::Nothing => {}
        Cred::Token(k) => r = r.header("X-Access-Token", k),
        Cred::Bearer(k) => r = r.header("Authorization", format!("Bearer {k}")),
        Cred::Both { token, bearer } => {
            r = r
                .header("X-Access-Token", token)
                .header("Authorization", format!("Bearer {bearer}"));
        }
    }
    if let Some(o) = org_header {
        r = r.header("X-Org-Id", o);
    }
    r
}

/// Asserts status and body of an error answer; a 401 must carry `WWW-Authenticate`.
async fn expect_error(backend: Backend, what: &str, resp: Response, status: u16, body: &Value) {
    let www = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let (got, got_body) = status_json(resp).await;
    assert_eq!((got, &got_body), (status, body), "{backend}: {what}");
    if status == 401 {
        assert_eq!(www.as_deref(), Some("Bearer"), "{backend}: {what}");
    } else {
        assert_eq!(www, None, "{backend}: {what}");
    }
}

/// Every identity case, for an app whose organization A has budget 7 and B has none.
fn cases(app: &TestApp) -> Vec<Case<'_>> {
    let a = app.org.to_string();
    let b = app.other_org.to_string();
    let nowhere = uuid::Uuid::new_v4().to_string();
    let err = |status: u16, msg: &str| Expect::Err(status, detail(msg));
    let case = |name, cred, org_header: Option<&str>, expect| Case {
        name,
        cred,
        org_header: org_header.map(str::to_owned),
        expect,
    };
    vec![
        case(
            "owner",
            Cred::Token(&app.owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "admin",
            Cred::Token(&app.admin.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "member",
            Cred::Token(&app.member.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "member naming its org",
            Cred::Token(&app.member.key),
            Some(&a),
            Expect::Ok(app.org),
        ),
        case(
            "owner naming its org as 32 hex digits",
            Cred::Token(&app.owner.key),
            Some(&app.org.0.simple().to_string()),
            Expect::Ok(app.org),
        ),
        case(
            "owner naming its org in upper case",
            Cred::Token(&app.owner.key),
            Some(&a.to_uppercase()),
            Expect::Ok(app.org),
        ),
        case(
            "non-member, own current org",
            Cred::Token(&app.non_member.key),
            None,
            Expect::Ok(app.other_org),
        ),
        case(
            "non-member naming its own org",
            Cred::Token(&app.non_member.key),
            Some(&b),
            Expect::Ok(app.other_org),
        ),
        case(
            "non-member naming org A",
            Cred::Token(&app.non_member.key),
            Some(&a),
            err(403, NOT_MEMBER),
        ),
        case(
            "non-member naming an org that does not exist",
            Cred::Token(&app.non_member.key),
            Some(&nowhere),
            err(403, NOT_MEMBER),
        ),
        case(
            "unbound key naming an org of which the user is no member",
            Cred::Token(&app.owner.key),
            Some(&b),
            err(403, NOT_MEMBER),
        ),
        case(
            "bound key, no header",
            Cred::Token(&app.bound_owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "bound key, matching header",
            Cred::Token(&app.bound_owner.key),
            Some(&a),
            Expect::Ok(app.org),
        ),
        case(
            "bound key, other org",
            Cred::Token(&app.bound_owner.key),
            Some(&b),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "bound key, unknown org",
            Cred::Token(&app.bound_owner.key),
            Some(&nowhere),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "expired key",
            Cred::Token(&app.expired.key),
            None,
            err(401, "API key expired"),
        ),
        case(
            "revoked key",
            Cred::Token(&app.revoked.key),
            None,
            err(401, "API key revoked"),
        ),
        case("no key", Cred::Nothing, None, err(401, "Not authenticated")),
        case(
            "no key, with a header",
            Cred::Nothing,
            Some(&a),
            err(401, "Not authenticated"),
        ),
        case(
            "garbage key",
            Cred::Token("sb_garbage000000000000000000000000000000000000"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "not even a prefix",
            Cred::Token("hello"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "bearer owner",
            Cred::Bearer(&app.owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "bearer non-member naming org A",
            Cred::Bearer(&app.non_member.key),
            Some(&a),
            err(403, NOT_MEMBER),
        ),
        case(
            "bearer bound key, other org",
            Cred::Bearer(&app.bound_owner.key),
            Some(&b),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "bearer expired",
            Cred::Bearer(&app.expired.key),
            None,
            err(401, "API key expired"),
        ),
        case(
            "bearer revoked",
            Cred::Bearer(&app.revoked.key),
            None,
            err(401, "API key revoked"),
        ),
        case(
            "bearer garbage",
            Cred::Bearer("nope"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "invalid X-Access-Token wins over a valid bearer",
            Cred::Both {
                token: "sb_invalid",
                bearer: &app.owner.key,
            },
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "revoked X-Access-Token wins over a valid bearer",
            Cred::Both {
                token: &app.revoked.key,
                bearer: &app.owner.key,
            },
            None,
            err(401, "API key revoked"),
        ),
        case(
            "valid X-Access-Token wins over an invalid bearer",
            Cred::Both {
                token: &app.member.key,
                bearer: "sb_invalid",
            },
            None,
            Expect::Ok(app.org),
        ),
        case(
            "X-Access-Token of B's user wins over A's owner as bearer",
            Cred::Both {
                token: &app.non_member.key,
                bearer: &app.owner.key,
            },
            None,
            Expect::Ok(app.other_org),
        ),
    ]
}

/// Gives organization A a budget of 7 so that answers show which organization was read.
async fn distinguish_orgs(app: &TestApp) {
    let (status, body) = app
        .post_settings(&app.owner.key, &json!({"max_budget_per_task": 7.0}))
        .await;
    assert_eq!(status, 200, "{body}");
}

async fn org_settings(app: &TestApp, org: OrgId) -> Value {
    if org == app.org {
        app.settings().await
    } else {
        app.settings_of(&app.non_member.key, None).await
    }
}

async fn get_matrix(backend: Backend) {
    let app = spawn_app(backend).await;
    distinguish_orgs(&app).await;
    let a = app.settings().await;
    let b = app.settings_of(&app.non_member.key, None).await;
    assert_eq!(a["max_budget_per_task"], 7.0);
    assert_eq!(b["max_budget_per_task"], Value::Null);
    for c in cases(&app) {
        let resp = request(&app, Method::GET, c.cred, c.org_header.as_deref())
            .send()
            .await
            .unwrap();
        match &c.expect {
            Expect::Ok(org) => {
                let (status, body) = status_json(resp).await;
                let expected = if *org == app.org { &a } else { &b };
                assert_eq!((status, &body), (200, expected), "{backend}: {}", c.name);
            }
            Expect::Err(status, body) => expect_error(backend, c.name, resp, *status, body).await,
        }
    }
    app.stop().await;
}

async fn post_matrix(backend: Backend) {
    let app = spawn_app(backend).await;
    distinguish_orgs(&app).await;
    for (i, c) in cases(&app).into_iter().enumerate() {
        let budget = 100.0 + i as f64;
        let before_a = app.settings().await;
        let before_b = org_settings(&app, app.other_org).await;
        let resp = request(&app, Method::POST, c.cred, c.org_header.as_deref())
            .json(&json!({"max_budget_per_task": budget}))
            .send()
            .await
            .unwrap();
        match &c.expect {
            Expect::Ok(org) => {
                let (status, body) = status_json(resp).await;
                assert_eq!(status, 200, "{backend}: {}: {body}", c.name);
                assert_eq!(body["max_budget_per_task"], budget, "{backend}: {}", c.name);
                // Written to that organization, and only there.
                assert_eq!(
                    org_settings(&app, *org).await,
                    body,
                    "{backend}: {}",
                    c.name
                );
                let other = if *org == app.org {
                    app.other_org
                } else {
                    app.org
                };
                let before_other = if *org == app.org {
                    &before_b
                } else {
                    &before_a
                };
                assert_eq!(
                    &org_settings(&app, other).await,
                    before_other,
                    "{backend}: {}",
                    c.name
                );
            }
            Expect::Err(status, body) => {
                expect_error(backend, c.name, resp, *status, body).await;
                assert_eq!(app.settings().await, before_a, "{backend}: {}", c.name);
                assert_eq!(
                    org_settings(&app, app.other_org).await,
                    before_b,
                    "{backend}: {}",
                    c.name
                );
            }
        }
    }
    app.stop().await;
}

/// Each field of the body against each role: the two plain fields need only
/// `manage_application_settings` (every role); `registered_marketplaces` needs
/// `edit_org_settings` (owner, admin).
async fn fields_by_role(backend: Backend) {
    let app = spawn_app(backend).await;
    let roles = [
        ("owner", &app.owner, true),
        ("admin", &app.admin, true),
        ("member", &app.member, false),
    ];
    for (i, (role, actor, may_edit)) in roles.into_iter().enumerate() {
        let key = actor.key.as_str();
        for flag in [false, true] {
            let (status, body) = app
                .post_settings(
                    key,
                    &json!({"enable_proactive_conversation_starters": flag}),
                )
                .await;
            assert_eq!(status, 200, "{backend}: {role}: {body}");
            assert_eq!(body["enable_proactive_conversation_starters"], flag);
            assert_eq!(app.settings().await, body, "{backend}: {role}");
        }
        let budget = 10.5 + i as f64;
        let (status, body) = app
            .post_settings(key, &json!({"max_budget_per_task": budget}))
            .await;
        assert_eq!(status, 200, "{backend}: {role}: {body}");
        assert_eq!(body["max_budget_per_task"], budget);
        assert_eq!(app.settings().await, body, "{backend}: {role}");

        let name = format!("by-{role}");
        let list = json!([{"name": name, "source": "github:o/r"}]);
        for attempt in [
            json!({"registered_marketplaces": list}),
            json!({"registered_marketplaces": []}),
            // The whole body is refused: the budget is not written either.
            json!({"registered_marketplaces": list, "max_budget_per_task": 999}),
        ] {
            let before = app.settings().await;
            let (status, body) = app.post_settings(key, &attempt).await;
            if may_edit {
                assert_eq!(status, 200, "{backend}: {role}: {attempt}: {body}");
                assert_eq!(
                    body["registered_marketplaces"],
                    attempt["registered_marketplaces"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| json!({
                            "name": m["name"], "source": m["source"], "ref": null,
                            "repo_path": null, "auto_load": false, "scope": "org",
                        }))
                        .collect::<Value>()
                );
                assert_eq!(app.settings().await, body, "{backend}: {role}");
            } else {
                assert_eq!(
                    (status, &body),
                    (403, &detail(MISSING_EDIT)),
                    "{backend}: {role}: {attempt}"
                );
                assert_eq!(app.settings().await, before, "{backend}: {role}: {attempt}");
            }
        }
    }
    // Every role reads the marketplaces.
    let seen_by_member = app.settings_of(&app.member.key, None).await;
    assert_eq!(seen_by_member, app.settings().await);
    app.stop().await;
}

/// Authentication comes before anything about the body, and the organization checks (403,
/// malformed `X-Org-Id`) too; a member's invalid marketplace list is a 422 before the 403.
async fn order_of_checks(backend: Backend) {
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
async fn organization_deleted(backend: Backend) {
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

on_both_backends!(
    get_matrix,
    post_matrix,
    fields_by_role,
    order_of_checks,
    organization_deleted
);
