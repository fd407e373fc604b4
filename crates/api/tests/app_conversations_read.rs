//! App conversations read and changed through the API on both backends (spec §4.3): search
//! with every filter and order, count, batch get, PATCH, the permission matrix (owner, admin,
//! member, another organization), every 400/404/422 path, and a keyset cursor that stays
//! exact while conversations are created. Conversations come from the conversations webhook
//! of registered sandboxes.

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

on_both_backends!(
    search_count_and_filters,
    batch_get_and_patch,
    cursor_under_creates
);

const BASE: &str = "/api/v1/app-conversations";

/// Query parameters.
type Params<'a> = Vec<(&'a str, String)>;

/// Creates conversation `id` titled `title` through the conversations webhook of the
/// sandbox whose key is `session`.
async fn create(app: &TestApp, session: &str, id: &str, title: &str) {
    let body = json!({"id": id, "title": title, "execution_status": "idle"}).to_string();
    let (status, body) = app
        .post_webhook("/api/v1/webhooks/conversations", Some(session), body)
        .await;
    assert_eq!(status, 200, "{}: create {id}: {body}", app.backend);
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn hex(id: &str) -> String {
    id.replace('-', "")
}

async fn search(app: &TestApp, key: &str, params: &[(&str, String)]) -> (u16, Value) {
    app.get_query(&format!("{BASE}/search"), key, params).await
}

/// The hex ids of a page's items.
fn ids_of(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn search_count_and_filters(backend: Backend) {
    let app = spawn_app(backend).await;
    let owner_sb = app.register_sandbox(app.org, app.owner.user_id).await;
    let member_sb = app.register_sandbox(app.org, app.member.user_id).await;
    let foreign_sb = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    let (a1, a2, b, m, f) = (new_id(), new_id(), new_id(), new_id(), new_id());
    create(&app, &owner_sb, &a1, "Alpha one").await;
    create(&app, &owner_sb, &a2, "alpha 100%_two").await;
    create(&app, &owner_sb, &b, "Beta").await;
    create(&app, &member_sb, &m, "Member alpha").await;
    create(&app, &foreign_sb, &f, "Alpha foreign").await;

    // Owner and admin see the whole organization, newest first; a member only their own;
    // the other organization only its own.
    let all_desc = vec![hex(&m), hex(&b), hex(&a2), hex(&a1)];
    for key in [&app.owner.key, &app.admin.key] {
        let (status, page) = search(&app, key, &[]).await;
        assert_eq!(status, 200, "{backend}: {page}");
        assert_eq!(ids_of(&page), all_desc, "{backend}");
        assert_eq!(page["next_page_id"], Value::Null);
    }
    let (_, page) = search(&app, &app.member.key, &[]).await;
    assert_eq!(ids_of(&page), vec![hex(&m)], "{backend}");
    let (_, page) = search(&app, &app.non_member.key, &[]).await;
    assert_eq!(ids_of(&page), vec![hex(&f)], "{backend}");
    let item = &page["items"][0];
    assert_eq!(item["title"], "Alpha foreign");
    assert_eq!(
        item["created_by_user_id"],
        app.non_member.user_id.to_string()
    );
    assert_eq!(item["agent_kind"], "openhands");
    assert_eq!(item["pr_number"], json!([]));
    assert_eq!(item["tags"], json!({}));
    // A registered sandbox is RUNNING; Switchboard has no URL or key for it.
    assert_eq!(item["sandbox_status"], "RUNNING");
    assert_eq!(item["execution_status"], "idle");
    assert_eq!(item["conversation_url"], Value::Null);
    assert_eq!(item["session_api_key"], Value::Null);

    // Orders.
    let (_, page) = search(&app, &app.owner.key, &[("sort_order", "CREATED_AT".into())]).await;
    let mut asc = all_desc.clone();
    asc.reverse();
    assert_eq!(ids_of(&page), asc, "{backend}");
    // An event for a1 makes it the most recently changed.
    app.ingest(
        &owner_sb,
        &a1,
        &[&json!({"id": new_id(), "timestamp": "2026-11-23T10:00:00", "source": "user", "kind": "PauseEvent"}).to_string()],
    )
    .await;
    let (_, page) = search(
        &app,
        &app.owner.key,
        &[("sort_order", "UPDATED_AT_DESC".into())],
    )
    .await;
    assert_eq!(ids_of(&page)[0], hex(&a1), "{backend}");
    let (_, page) = search(&app, &app.owner.key, &[("sort_order", "UPDATED_AT".into())]).await;
    assert_eq!(ids_of(&page).last().unwrap(), &hex(&a1), "{backend}");

    // Filters, each with its count.
    let created_b = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == hex(&b))
        .unwrap()["created_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let cases: Vec<(Params<'_>, Vec<String>)> = vec![
        (
            vec![("title__contains", "ALPHA".into())],
            vec![hex(&m), hex(&a2), hex(&a1)],
        ),
        (vec![("title__contains", "0%_".into())], vec![hex(&a2)]),
        (vec![("title__contains", "%".into())], vec![hex(&a2)]),
        (
            vec![("sandbox_id__eq", "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b".into())],
            vec![],
        ),
        (
            vec![("created_at__gte", created_b.clone())],
            vec![hex(&m), hex(&b)],
        ),
        (
            vec![("created_at__lt", created_b.clone())],
            vec![hex(&a2), hex(&a1)],
        ),
        (vec![("updated_at__gte", "2999-01-01".into())], vec![]),
        (
            vec![("updated_at__lt", "2999-01-01".into())],
            all_desc.clone(),
        ),
    ];
    for (params, want) in cases {
        let (status, page) = search(&app, &app.owner.key, &params).await;
        assert_eq!(status, 200, "{backend}: {params:?}: {page}");
        assert_eq!(ids_of(&page), want, "{backend}: {params:?}");
        let (status, n) = app
            .get_query(&format!("{BASE}/count"), &app.owner.key, &params)
            .await;
        assert_eq!(
            (status, n),
            (200, json!(want.len())),
            "{backend}: count {params:?}"
        );
    }
    let (_, n) = app
        .get_query(&format!("{BASE}/count"), &app.member.key, &[])
        .await;
    assert_eq!(n, json!(1), "{backend}");

    // Sub-conversations: hidden unless asked for; the parent lists them.
    app.exec_sql(&format!(
        "UPDATE conversations SET parent_conversation_id = '{a1}' WHERE id = '{b}'"
    ))
    .await;
    let (_, page) = search(&app, &app.owner.key, &[]).await;
    assert_eq!(
        ids_of(&page),
        vec![hex(&m), hex(&a2), hex(&a1)],
        "{backend}"
    );
    let parent = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == hex(&a1))
        .unwrap()
        .clone();
    assert_eq!(
        parent["sub_conversation_ids"],
        json!([hex(&b)]),
        "{backend}"
    );
    let (_, page) = search(
        &app,
        &app.owner.key,
        &[("include_sub_conversations", "true".into())],
    )
    .await;
    assert_eq!(ids_of(&page), all_desc, "{backend}");
    assert_eq!(page["items"][1]["parent_conversation_id"], hex(&a1));
    let (_, n) = app
        .get_query(
            &format!("{BASE}/count"),
            &app.owner.key,
            &[("include_sub_conversations", "1".into())],
        )
        .await;
    assert_eq!(n, json!(4), "{backend}");

    // Paging: limit 1 walks the list one by one.
    let mut seen = Vec::new();
    let mut page_id: Option<String> = None;
    loop {
        let mut params = vec![("limit", "1".to_owned())];
        if let Some(p) = &page_id {
            params.push(("page_id", p.clone()));
        }
        let (status, page) = search(&app, &app.owner.key, &params).await;
        assert_eq!(status, 200, "{backend}: {page}");
        seen.extend(ids_of(&page));
        match page["next_page_id"].as_str() {
            Some(p) => page_id = Some(p.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, vec![hex(&m), hex(&a2), hex(&a1)], "{backend}");

    // 422s, each at its parameter.
    let (_, first) = search(&app, &app.owner.key, &[("limit", "1".into())]).await;
    let cursor = first["next_page_id"].as_str().unwrap().to_owned();
    for (params, name, ty) in [
        (vec![("limit", "0".to_owned())], "limit", "greater_than"),
        (
            vec![("limit", "101".to_owned())],
            "limit",
            "less_than_equal",
        ),
        (vec![("limit", "x".to_owned())], "limit", "int_parsing"),
        (
            vec![("sort_order", "NEWEST".to_owned())],
            "sort_order",
            "enum",
        ),
        (
            vec![("page_id", "nope".to_owned())],
            "page_id",
            "value_error",
        ),
        (
            vec![
                ("page_id", cursor.clone()),
                ("sort_order", "UPDATED_AT".to_owned()),
            ],
            "page_id",
            "value_error",
        ),
        (
            vec![("created_at__gte", "yesterday".to_owned())],
            "created_at__gte",
            "datetime_from_date_parsing",
        ),
        (
            vec![("sandbox_id__eq", "x".to_owned())],
            "sandbox_id__eq",
            "uuid_parsing",
        ),
        (
            vec![("include_sub_conversations", "maybe".to_owned())],
            "include_sub_conversations",
            "bool_type",
        ),
    ] {
        let (status, body) = search(&app, &app.owner.key, &params).await;
        assert_eq!(status, 422, "{backend}: {params:?}: {body}");
        assert_one_error(&body, &json!(["query", name]), ty);
    }
    let (status, body) = app
        .get_query(
            &format!("{BASE}/count"),
            &app.owner.key,
            &[("updated_at__lt", "x".into())],
        )
        .await;
    assert_eq!(status, 422, "{backend}: {body}");
    // No key: 401.
    let (status, _) = status_json(app.get(&format!("{BASE}/search"), None).await).await;
    assert_eq!(status, 401, "{backend}");
    app.stop().await;
}

async fn batch_get_and_patch(backend: Backend) {
    let app = spawn_app(backend).await;
    let owner_sb = app.register_sandbox(app.org, app.owner.user_id).await;
    let member_sb = app.register_sandbox(app.org, app.member.user_id).await;
    let foreign_sb = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    let (o, m, f) = (new_id(), new_id(), new_id());
    create(&app, &owner_sb, &o, "Owner's").await;
    create(&app, &member_sb, &m, "Member's").await;
    create(&app, &foreign_sb, &f, "Foreign").await;
    let unknown = new_id();

    // Batch get: request order, null for unknown and not visible; hex ids accepted.
    let ids = vec![
        ("ids", hex(&m)),
        ("ids", unknown.clone()),
        ("ids", o.clone()),
        ("ids", f.clone()),
        ("ids", o.clone()),
    ];
    let visible_to = |key: &str| -> Vec<bool> {
        match key {
            k if k == app.member.key => vec![true, false, false, false, false],
            k if k == app.non_member.key => vec![false, false, false, true, false],
            _ => vec![true, false, true, false, true],
        }
    };
    for key in [
        &app.owner.key,
        &app.admin.key,
        &app.member.key,
        &app.non_member.key,
    ] {
        let (status, body) = app.get_query(BASE, key, &ids).await;
        assert_eq!(status, 200, "{backend}: {body}");
        let got: Vec<bool> = body
            .as_array()
            .unwrap()
            .iter()
            .map(|v| !v.is_null())
            .collect();
        assert_eq!(got, visible_to(key), "{backend}: {body}");
        for (item, (_, want)) in body.as_array().unwrap().iter().zip(&ids) {
            if !item.is_null() {
                assert_eq!(item["id"], hex(want), "{backend}");
            }
        }
    }
    // 100 ids are fine, 101 are a 400 (judged before their form); a bad id is a 422.
    let many: Vec<(&str, String)> = (0..100).map(|_| ("ids", new_id())).collect();
    let (status, body) = app.get_query(BASE, &app.owner.key, &many).await;
    assert_eq!(
        (status, body.as_array().map(Vec::len)),
        (200, Some(100)),
        "{backend}"
    );
    let mut too_many = many.clone();
    too_many.push(("ids", "not-a-uuid".into()));
    let (status, body) = app.get_query(BASE, &app.owner.key, &too_many).await;
    assert_eq!(
        (status, body),
        (
            400,
            detail("Cannot request more than 100 app conversations at once, got 101")
        ),
        "{backend}"
    );
    let (status, body) = app
        .get_query(
            BASE,
            &app.owner.key,
            &[("ids", o.clone()), ("ids", "abc".into())],
        )
        .await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["query", "ids", 1]), "uuid_parsing");
    let (status, body) = app.get_query(BASE, &app.owner.key, &[]).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["query", "ids"]), "missing");

    // PATCH: only the fields sent; null clears; updated_at moves.
    let patch = |key: &str, id: &str, body: Value| {
        let r = app
            .req(Method::PATCH, &format!("{BASE}/{id}"), Some(key))
            .json(&body);
        async move { status_json(r.send().await.unwrap()).await }
    };
    let (_, before) = app
        .get_query(BASE, &app.owner.key, &[("ids", o.clone())])
        .await;
    let (status, after) = patch(
        &app.owner.key,
        &o,
        json!({"title": "Renamed", "public": true, "selected_repository": "acme/app", "selected_branch": "main", "git_provider": "github"}),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {after}");
    assert_eq!(after["title"], "Renamed");
    assert_eq!(after["public"], true);
    assert_eq!(after["selected_repository"], "acme/app");
    assert_eq!(after["selected_branch"], "main");
    assert_eq!(after["git_provider"], "github");
    assert!(
        instant(&after["updated_at"]) > instant(&before[0]["updated_at"]),
        "{backend}"
    );
    assert_eq!(after["created_at"], before[0]["created_at"]);
    // The admin may change it too; a field not sent stays, null clears.
    let (status, after) = patch(
        &app.admin.key,
        &hex(&o),
        json!({"selected_branch": null, "public": false}),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {after}");
    assert_eq!(
        (
            &after["title"],
            &after["public"],
            &after["selected_branch"],
            &after["selected_repository"]
        ),
        (
            &json!("Renamed"),
            &json!(false),
            &Value::Null,
            &json!("acme/app")
        ),
        "{backend}"
    );
    let (_, stored) = app
        .get_query(BASE, &app.owner.key, &[("ids", o.clone())])
        .await;
    assert_eq!(stored[0]["title"], "Renamed", "{backend}");
    // An empty patch changes nothing but is fine.
    let (status, _) = patch(&app.owner.key, &o, json!({})).await;
    assert_eq!(status, 200, "{backend}");
    // Not visible or unknown: 404, nothing changed.
    for (key, id) in [
        (&app.member.key, &o),
        (&app.non_member.key, &o),
        (&app.owner.key, &f),
        (&app.owner.key, &unknown),
    ] {
        let (status, body) = patch(key, id, json!({"title": "x"})).await;
        assert_eq!(
            (status, body),
            (404, detail("Conversation not found")),
            "{backend}"
        );
    }
    let (_, stored) = app
        .get_query(BASE, &app.non_member.key, &[("ids", f.clone())])
        .await;
    assert_eq!(stored[0]["title"], "Foreign", "{backend}");
    // 422s: strict body, typed fields, a bad id.
    for (body, at, ty) in [
        (
            json!({"title": "x", "trigger": "gui"}),
            json!(["body", "trigger"]),
            "extra_forbidden",
        ),
        (
            json!({"public": "yes"}),
            json!(["body", "public"]),
            "bool_type",
        ),
        (json!({"title": 5}), json!(["body", "title"]), "string_type"),
        (
            json!({"git_provider": "svn"}),
            json!(["body", "git_provider"]),
            "enum",
        ),
        (
            json!({"title": "a\u{0}b"}),
            json!(["body", "title"]),
            "string_pattern_mismatch",
        ),
        (json!([1]), json!(["body"]), "model_type"),
    ] {
        let (status, got) = patch(&app.owner.key, &o, body.clone()).await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_one_error(&got, &at, ty);
    }
    let (status, got) = patch(&app.owner.key, "nope", json!({})).await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&got, &json!(["path", "conversation_id"]), "uuid_parsing");
    // A registered sandbox is not run by Switchboard: a message cannot be sent (409, a lasting
    // state, not an outage).
    let (status, body) = status_json(
        app.req(
            Method::POST,
            &format!("{BASE}/{o}/send-message"),
            Some(&app.owner.key),
        )
        .json(&json!({"content": [{"type": "text", "text": "hi"}]}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 409, "{backend}: {body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("not run by Switchboard"),
        "{body}"
    );
    app.stop().await;
}

/// Pages through the organization's conversations (limit 7) while another task creates
/// conversations: every conversation that existed before is seen exactly once, in order, and
/// nothing is seen twice, in both creation orders.
async fn cursor_under_creates(backend: Backend) {
    let app = Arc::new(spawn_app(backend).await);
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let mut pre = Vec::new();
    for i in 0..40 {
        let id = new_id();
        create(&app, &session, &id, &format!("pre {i}")).await;
        pre.push(hex(&id));
    }
    for order in ["CREATED_AT_DESC", "CREATED_AT"] {
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (app, session, done) = (app.clone(), session.clone(), done.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !done.load(Ordering::SeqCst) {
                    create(&app, &session, &new_id(), "new").await;
                    n += 1;
                }
                n
            })
        };
        let mut seen: Vec<String> = Vec::new();
        let mut page_id: Option<String> = None;
        loop {
            let mut params = vec![("limit", "7".to_owned()), ("sort_order", order.to_owned())];
            if let Some(p) = &page_id {
                params.push(("page_id", p.clone()));
            }
            let (status, page) = search(&app, &app.owner.key, &params).await;
            assert_eq!(status, 200, "{backend}: {page}");
            seen.extend(ids_of(&page));
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            match page["next_page_id"].as_str() {
                Some(p) => page_id = Some(p.to_owned()),
                None => break,
            }
        }
        done.store(true, Ordering::SeqCst);
        let written = writer.await.unwrap();
        assert!(written > 0, "{backend}: the writer created nothing");
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(
            unique.len(),
            seen.len(),
            "{backend} {order}: an item was seen twice"
        );
        let pre_seen: Vec<&String> = seen.iter().filter(|id| pre.contains(id)).collect();
        let mut want: Vec<&String> = pre.iter().collect();
        if order == "CREATED_AT_DESC" {
            want.reverse();
            // Newer conversations sort before the cursor: none appears after the first page.
            assert!(seen.iter().skip(7).all(|id| pre.contains(id)), "{backend}");
        }
        assert_eq!(pre_seen, want, "{backend} {order}");
        // The next round starts from the oldest 100 conversations existing now, oldest first.
        let (_, all) = search(&app, &app.owner.key, &[("sort_order", "CREATED_AT".into())]).await;
        pre = ids_of(&all);
    }
    Arc::try_unwrap(app).ok().unwrap().stop().await;
}
