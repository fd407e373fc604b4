//! The members list's pages, filter and count.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::Role;
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, detail, spawn_app};
use crate::members_api::rig::{call, emails, members, new_member};

/// Pages in the order members joined, `current_page` counted, the e-mail filter any case and
/// literal, the count; bad paging and filters are 422; another organization is 404.
pub async fn pages_filter_and_count(backend: Backend) {
    let app = spawn_app(backend).await;
    new_member(&app, "dev_1%@example.com", Role::Member).await;
    let path = members(app.org);
    let (status, all) = call(&app, Method::GET, &path, &app.member.key, None).await;
    assert_eq!(status, 200, "{backend}: any member lists: {all}");
    assert_eq!(
        emails(&all),
        [
            "owner@example.com",
            "admin@example.com",
            "member@example.com",
            "dev_1%@example.com"
        ],
        "{backend}: in the order they joined"
    );
    assert_eq!(
        (all["current_page"].as_u64(), all["per_page"].as_u64()),
        (Some(1), Some(10))
    );
    assert_eq!(all["next_page_id"], Value::Null, "{backend}");
    let first = &all["items"][0];
    assert_eq!(first["role"], "owner");
    assert_eq!(
        (first["role_id"].as_i64(), first["role_rank"].as_i64()),
        (Some(1), Some(10))
    );
    assert_eq!(first["status"], "active");

    // Pages of three, then one.
    let (_, p1) = call(
        &app,
        Method::GET,
        &format!("{path}?limit=3"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(emails(&p1).len(), 3, "{backend}");
    let cursor = p1["next_page_id"].as_str().expect("a next page").to_owned();
    let (_, p2) = call(
        &app,
        Method::GET,
        &format!("{path}?limit=3&page_id={cursor}"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(emails(&p2), ["dev_1%@example.com"], "{backend}");
    assert_eq!(
        (p2["current_page"].as_u64(), p2["next_page_id"].clone()),
        (Some(2), Value::Null)
    );

    // The filter: any case; `%` and `_` match themselves.
    let (_, f) = call(
        &app,
        Method::GET,
        &format!("{path}?email=ADMIN"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(emails(&f), ["admin@example.com"], "{backend}");
    let (_, f) = call(
        &app,
        Method::GET,
        &format!("{path}?email=_1%25"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(emails(&f), ["dev_1%@example.com"], "{backend}");
    let (_, f) = call(
        &app,
        Method::GET,
        &format!("{path}?email=r_e"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(
        emails(&f),
        Vec::<&str>::new(),
        "{backend}: `_` is no wildcard"
    );

    let (status, n) = call(
        &app,
        Method::GET,
        &format!("{path}/count"),
        &app.member.key,
        None,
    )
    .await;
    assert_eq!((status, n), (200, json!(4)), "{backend}");
    let (_, n) = call(
        &app,
        Method::GET,
        &format!("{path}/count?email=example.COM"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(n, json!(4), "{backend}");
    let (_, n) = call(
        &app,
        Method::GET,
        &format!("{path}/count?email=member"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(n, json!(1), "{backend}");

    for (query, loc) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("page_id=bm90LWEtY3Vyc29y", "page_id"),
        ("email=", "email"),
    ] {
        let (status, body) = call(
            &app,
            Method::GET,
            &format!("{path}?{query}"),
            &app.owner.key,
            None,
        )
        .await;
        assert_eq!(status, 422, "{backend}: {query}: {body}");
        assert_eq!(
            body["detail"][0]["loc"],
            json!(["query", loc]),
            "{backend}: {query}"
        );
    }
    let long = "a".repeat(256);
    let (status, _) = call(
        &app,
        Method::GET,
        &format!("{path}?email={long}"),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(status, 422, "{backend}: a filter past 255 characters");
    let (status, body) = call(
        &app,
        Method::GET,
        "/api/organizations/not-a-uuid/members",
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(status, 422, "{backend}");
    assert_one_error(&body, &json!(["path", "org_id"]), "uuid_parsing");
    // Another organization's members: its id does not leak.
    let (status, body) = call(
        &app,
        Method::GET,
        &members(app.other_org),
        &app.owner.key,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (404, detail("Current organization not found")),
        "{backend}"
    );
    app.stop().await;
}
