//! The organization routes as Agent Canvas reads them: `GET /api/keys/current`,
//! `GET /api/organizations`, `/{org}/me`, `/{org}/members/{user}`, the organization's LLM
//! profiles (`/{org}/profiles…`) and LLM provider connections (`/{org}/provider-connections…`):
//! members read, owners and admins write, no key in any answer, bad input a 422 that changes
//! nothing.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::agent_canvas::profiles::send;
use crate::agent_canvas::{fixture, has_reads, request};
use crate::common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app};

on_both_backends!(who_and_where, organization_profiles, provider_connections);

const ORG_KEY: &str = "sk-org-1";
const CONN_KEY: &str = "sk-conn-1";

/// A server with the installation key (keys can be stored).
async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app(backend, SandboxOptions::default()).await
}

async fn who_and_where(backend: Backend) {
    let app = app(backend).await;
    let f = fixture("organizations.json");
    let org = app.org.to_string();

    // The connection probe: the key's organization.
    let current = request(&f, "keys_current");
    let (code, k) = send(&app, &app.bound_owner.key, current, &[], None).await;
    assert_eq!(code, 200, "{backend}: {k}");
    has_reads(current, &k, "keys_current");
    assert_eq!(k["org_id"], json!(org));
    let (code, _) = send(&app, "sk-oh-nothing", current, &[], None).await;
    assert_eq!(code, 401, "{backend}: a rejected key shows as disconnected");

    let orgs = request(&f, "organizations");
    let (code, list) = send(&app, &app.owner.key, orgs, &[], None).await;
    assert_eq!(code, 200);
    has_reads(orgs, &list, "organizations");
    assert_eq!(list["current_org_id"], json!(org), "{list}");
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == json!(org))
    );

    // /me: the role and the permission set that decides organization-profile writes.
    let me = request(&f, "me");
    for (key, role, edits) in [
        (&app.owner.key, "owner", true),
        (&app.admin.key, "admin", true),
        (&app.member.key, "member", false),
    ] {
        let (code, m) = send(&app, key, me, &[("org_id", &org)], None).await;
        assert_eq!(code, 200, "{m}");
        has_reads(me, &m, "me");
        assert_eq!(m["role"], role);
        let has = m["permissions"]
            .as_array()
            .unwrap()
            .contains(&json!("edit_org_settings"));
        assert_eq!(has, edits, "{backend}: {role}: {m}");
    }

    // One member, read by any member.
    let member = request(&f, "member");
    let (code, m) = send(
        &app,
        &app.member.key,
        member,
        &[
            ("org_id", &org),
            ("user_id", &app.admin.user_id.to_string()),
        ],
        None,
    )
    .await;
    assert_eq!(code, 200, "{backend}: {m}");
    has_reads(member, &m, "member");
    assert_eq!(
        (
            &m["user_id"],
            &m["role"],
            &m["role_id"],
            &m["role_rank"],
            &m["status"]
        ),
        (
            &json!(app.admin.user_id.to_string()),
            &json!("admin"),
            &json!(2),
            &json!(20),
            &json!("active")
        )
    );
    for (key, user, want) in [
        // Not a member of A.
        (&app.owner.key, app.non_member.user_id.to_string(), 404),
        (&app.owner.key, uuid::Uuid::new_v4().to_string(), 404),
        // B's owner asking about A.
        (&app.non_member.key, app.owner.user_id.to_string(), 404),
        (&app.owner.key, "not-a-uuid".to_owned(), 422),
    ] {
        let (code, e) = send(
            &app,
            key,
            member,
            &[("org_id", &org), ("user_id", &user)],
            None,
        )
        .await;
        assert_eq!(code, want, "{backend}: {user}: {e}");
    }
}

/// The fixture's request `name` as `key`, at `place`, with `body` instead of the fixture's.
async fn ocall(
    app: &SandboxApp,
    f: &Value,
    key: &str,
    name: &str,
    place: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    send(app, key, request(f, name), place, body.as_ref()).await
}

async fn organization_profiles(backend: Backend) {
    let app = app(backend).await;
    let f = fixture("org_profiles.json");
    let org = app.org.to_string();
    let o = [("org_id", org.as_str())];
    let team = [("org_id", org.as_str()), ("name", "team")];
    let crew = [("org_id", org.as_str()), ("name", "crew")];
    let (owner, admin, member) = (
        app.owner.key.clone(),
        app.admin.key.clone(),
        app.member.key.clone(),
    );
    let (code, empty) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(
        (code, &empty),
        (200, &json!({"profiles": [], "active_profile": null})),
        "{backend}"
    );
    // A member cannot write, whatever the body; nothing is stored.
    let (code, e) = ocall(&app, &f, &member, "save", &team, None).await;
    assert_eq!(code, 403, "{backend}: {e}");
    let (code, _) = ocall(&app, &f, &member, "save", &team, Some(json!({"llm": 3}))).await;
    assert_eq!(code, 403, "{backend}: the permission before the body");
    // An admin saves (the client's body, with a key).
    let (code, saved) = ocall(&app, &f, &admin, "save", &team, None).await;
    assert_eq!(code, 201, "{backend}: {saved}");
    has_reads(request(&f, "save"), &saved, "save");
    let (code, list) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(code, 200);
    has_reads(request(&f, "list"), &list, "list");
    assert_eq!(
        list["profiles"][0],
        json!({"name": "team", "model": "openai/gpt-4o-mini", "base_url": "https://llm.example.test/v1",
               "provider_connection_id": null, "provider_connection_broken": false, "api_key_set": true})
    );
    let (code, one) = ocall(&app, &f, &member, "get", &team, None).await;
    assert_eq!(code, 200);
    has_reads(request(&f, "get"), &one, "get");
    assert_eq!(
        (&one["llm"]["api_key"], &one["api_key_set"]),
        (&Value::Null, &json!(true))
    );

    // Activate: the profile's LLM is the organization's default LLM.
    let (code, a) = ocall(&app, &f, &owner, "activate", &team, None).await;
    assert_eq!(code, 200, "{a}");
    has_reads(request(&f, "activate"), &a, "activate");
    assert_eq!(a["llm"]["model"], "openai/gpt-4o-mini");
    let (_, defaults) = crate::common::status_json(
        app.get(&format!("/api/organizations/{org}/settings"), Some(&member))
            .await,
    )
    .await;
    assert_eq!(
        (
            &defaults["agent_settings"]["llm"]["model"],
            &defaults["llm_api_key_set"]
        ),
        (&json!("openai/gpt-4o-mini"), &json!(true)),
        "{backend}: {defaults}"
    );
    let (_, list) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(list["active_profile"], "team");

    // Rename (the active flag follows), 404, 409, 422.
    let (code, _) = ocall(
        &app,
        &f,
        &admin,
        "save",
        &[("org_id", org.as_str()), ("name", "other")],
        Some(json!({"llm": {"model": "m2"}})),
    )
    .await;
    assert_eq!(code, 201);
    let (code, e) = ocall(
        &app,
        &f,
        &admin,
        "rename",
        &team,
        Some(json!({"new_name": "other"})),
    )
    .await;
    assert_eq!(code, 409, "{e}");
    let (code, r) = ocall(
        &app,
        &f,
        &admin,
        "rename",
        &team,
        Some(json!({"new_name": "crew"})),
    )
    .await;
    assert_eq!((code, &r["name"]), (200, &json!("crew")), "{r}");
    has_reads(request(&f, "rename"), &r, "rename");
    let (_, list) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(list["active_profile"], "crew", "{backend}: {list}");
    let (code, _) = ocall(&app, &f, &member, "get", &team, None).await;
    assert_eq!(code, 404);
    let before = list.clone();
    let bad_name = [("org_id", org.as_str()), ("name", "bad%20name")];
    let bad_org = [("org_id", "nope"), ("name", "crew")];
    for (body, place, loc) in [
        (
            json!({"llm": {"model": 3}}),
            &crew,
            json!(["body", "llm", "model"]),
        ),
        (
            json!({"llm": {"base_url": "ftp://x"}}),
            &crew,
            json!(["body", "llm", "base_url"]),
        ),
        (
            json!({"llm": {"model": "m"}}),
            &bad_name,
            json!(["path", "name"]),
        ),
        (json!({}), &bad_org, json!(["path", "org_id"])),
    ] {
        let (code, e) = ocall(&app, &f, &admin, "save", place, Some(body)).await;
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &loc),
            "{backend}: {e}"
        );
    }
    let (_, after) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(before, after, "{backend}: a refused save changed nothing");
    // Another organization's owner reads none of it.
    let (code, _) = ocall(&app, &f, &app.non_member.key, "list", &o, None).await;
    assert_eq!(code, 404);
    // Delete: idempotent; the default LLM stays.
    for _ in 0..2 {
        let (code, d) = ocall(&app, &f, &owner, "delete", &crew, None).await;
        assert_eq!(code, 200, "{d}");
        has_reads(request(&f, "delete"), &d, "delete");
    }
    let (_, list) = ocall(&app, &f, &member, "list", &o, None).await;
    assert_eq!(
        (
            list["profiles"].as_array().unwrap().len(),
            &list["active_profile"]
        ),
        (1, &Value::Null)
    );
    // No answer held the key.
    for text in [
        list.to_string(),
        one.to_string(),
        a.to_string(),
        defaults.to_string(),
    ] {
        assert!(!text.contains(ORG_KEY), "{backend}: {text}");
    }
}

async fn provider_connections(backend: Backend) {
    let app = app(backend).await;
    let f = fixture("provider_connections.json");
    let org = app.org.to_string();
    let (admin, member) = (app.admin.key.clone(), app.member.key.clone());
    let list = request(&f, "list");
    let o = [("org_id", org.as_str())];
    let (code, empty) = send(&app, &member, list, &o, None).await;
    assert_eq!(
        (code, &empty),
        (200, &json!({"connections": []})),
        "{backend}"
    );

    let create = request(&f, "create");
    let (code, e) = send(&app, &member, create, &o, None).await;
    assert_eq!(code, 403, "{backend}: {e}");
    let (code, made) = send(&app, &admin, create, &o, None).await;
    assert_eq!(code, 201, "{backend}: {made}");
    has_reads(create, &made, "create");
    assert_eq!(
        (
            &made["display_name"],
            &made["provider"],
            &made["base_url"],
            &made["api_key_set"]
        ),
        (
            &json!("Team OpenAI"),
            &json!("openai"),
            &Value::Null,
            &json!(true)
        )
    );
    assert!(made["created_at"].is_i64(), "{made}");
    let id = made["id"].as_str().unwrap().to_owned();
    let (_, listed) = send(&app, &member, list, &o, None).await;
    has_reads(list, &listed, "list");
    assert_eq!(listed["connections"][0], made);

    let update = request(&f, "update");
    let place = [("org_id", org.as_str()), ("id", id.as_str())];
    let (code, changed) = send(&app, &admin, update, &place, None).await;
    assert_eq!(code, 200, "{changed}");
    has_reads(update, &changed, "update");
    assert_eq!(
        (
            &changed["display_name"],
            &changed["base_url"],
            &changed["api_key_set"]
        ),
        (
            &json!("Team OpenAI (EU)"),
            &json!("https://eu.llm.example.test/v1"),
            &json!(true)
        )
    );
    for (body, loc) in [
        (json!({"api_key": null}), json!(["body", "api_key"])),
        (json!({"base_url": "ftp://x"}), json!(["body", "base_url"])),
        (json!({"display_name": ""}), json!(["body", "display_name"])),
    ] {
        let (code, e) = send(&app, &admin, update, &place, Some(&body)).await;
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &loc),
            "{backend}: {e}"
        );
    }
    let (code, e) = send(
        &app,
        &admin,
        create,
        &o,
        Some(&json!({"display_name": "x", "provider": "p"})),
    )
    .await;
    assert_eq!(
        (code, &e["detail"][0]["loc"]),
        (422, &json!(["body", "api_key"])),
        "{e}"
    );
    let (_, still) = send(&app, &member, list, &o, None).await;
    assert_eq!(
        still["connections"][0], changed,
        "{backend}: refused changes changed nothing"
    );

    let delete = request(&f, "delete");
    let (code, e) = send(&app, &member, delete, &place, None).await;
    assert_eq!(code, 403, "{e}");
    let (code, gone) = send(&app, &admin, delete, &place, None).await;
    assert_eq!((code, &gone["id"]), (200, &json!(id)), "{gone}");
    has_reads(delete, &gone, "delete");
    let (code, _) = send(&app, &admin, delete, &place, None).await;
    assert_eq!(code, 404);
    let (code, _) = send(&app, &app.non_member.key, list, &o, None).await;
    assert_eq!(code, 404, "{backend}: another organization's owner");
    for text in [
        made.to_string(),
        listed.to_string(),
        changed.to_string(),
        gone.to_string(),
    ] {
        assert!(!text.contains(CONN_KEY), "{backend}: {text}");
    }
    let _ = Method::GET;
}
