//! Every identity case read and written, and which fields each role may change.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::OrgId;
use switchboard_testkit::Backend;

use crate::common::{TestApp, detail, spawn_app, status_json};
use crate::permissions::cases::{Expect, MISSING_EDIT, cases, expect_error, request};

/// Gives organization A a budget of 7 (and a monthly one of 70) so that answers show which
/// organization was read.
pub async fn distinguish_orgs(app: &TestApp) {
    let (status, body) = app
        .post_settings(
            &app.owner.key,
            &json!({"max_budget_per_task": 7.0, "llm_monthly_budget": 70.0}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

pub async fn org_settings(app: &TestApp, org: OrgId) -> Value {
    if org == app.org {
        app.settings().await
    } else {
        app.settings_of(&app.non_member.key, None).await
    }
}

pub async fn get_matrix(backend: Backend) {
    let app = spawn_app(backend).await;
    distinguish_orgs(&app).await;
    let a = app.settings().await;
    let b = app.settings_of(&app.non_member.key, None).await;
    assert_eq!(a["max_budget_per_task"], 7.0);
    assert_eq!(b["max_budget_per_task"], Value::Null);
    assert_eq!(a["llm_monthly_budget"], 70.0);
    assert_eq!(b["llm_monthly_budget"], Value::Null);
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

pub async fn post_matrix(backend: Backend) {
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

/// Each field of the body against each role: the plain fields (the flag and the per-task
/// budget) need only `manage_application_settings` (every role); `registered_marketplaces`
/// and `llm_monthly_budget` need `edit_org_settings` (owner, admin).
pub async fn fields_by_role(backend: Backend) {
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
        for monthly in [json!(200.0 + i as f64), Value::Null] {
            let before = app.settings().await;
            let (status, body) = app
                .post_settings(key, &json!({"llm_monthly_budget": monthly}))
                .await;
            if may_edit {
                assert_eq!(status, 200, "{backend}: {role}: {body}");
                assert_eq!(body["llm_monthly_budget"], monthly);
                assert_eq!(body["max_budget_per_task"], budget);
                assert_eq!(app.settings().await, body, "{backend}: {role}");
            } else {
                assert_eq!(
                    (status, &body),
                    (403, &detail(MISSING_EDIT)),
                    "{backend}: {role}"
                );
                assert_eq!(app.settings().await, before, "{backend}: {role}");
            }
        }

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
