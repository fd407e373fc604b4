//! Everything the webhook and the events routes must refuse (API.md, Conventions, Events and
//! Event ingestion): invalid events reject their whole batch, authentication comes first, other
//! organizations' conversations are 404 to readers and store nothing from another
//! organization's sandbox, malformed queries are FastAPI-shaped 422s.

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

/// A valid event of the corpus with a fresh id.
fn fresh(kind_file: &str) -> (String, String) {
    let line = read_lines(&corpus_dir().join("valid").join(kind_file))
        .into_iter()
        .next()
        .unwrap();
    let mut v: Value = serde_json::from_str(&line).unwrap();
    let id = uuid::Uuid::new_v4().to_string();
    v["id"] = json!(id);
    (id, v.to_string())
}

/// Posts `batch` (JSON texts) and returns the response.
async fn post_batch(
    app: &TestApp,
    session: Option<&str>,
    conv: &str,
    batch: &[&str],
) -> (u16, Value) {
    app.post_webhook(
        &webhook_events_path(conv),
        session,
        format!("[{}]", batch.join(",")),
    )
    .await
}

async fn count(app: &TestApp, key: &str, conv: &str) -> Value {
    let (status, body) = app.get_query(&events_path(conv, "/count"), key, &[]).await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
    body
}

async fn get_ids(app: &TestApp, key: &str, conv: &str, ids: &[&str]) -> Value {
    let q: Vec<(&str, String)> = ids.iter().map(|i| ("id", (*i).to_owned())).collect();
    let (status, body) = app.get_query(&events_path(conv, ""), key, &q).await;
    assert_eq!(status, 200, "{}: {body}", app.backend);
    body
}

/// Every invalid corpus line, inside an otherwise valid batch, rejects the batch: 422 at
/// `["body", index, …]` and nothing stored.
async fn invalid_corpus_rejects_the_batch(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let (_, seed) = fresh("PauseEvent.jsonl");
    app.ingest(&session, &conv, &[&seed]).await;
    let key = app.owner.key.clone();
    let mut checked = 0;
    for file in jsonl_files(&corpus_dir().join("invalid")) {
        for (line_no, line) in read_lines(&file).into_iter().enumerate() {
            let case: Value = serde_json::from_str(&line).unwrap();
            let bad = case["event"].to_string();
            let what = format!("{}:{} ({})", file.display(), line_no + 1, case["why"]);
            let (id1, e1) = fresh("MessageEvent.jsonl");
            let (id2, e2) = fresh("PauseEvent.jsonl");
            let (id3, e3) = fresh("ObservationEvent.jsonl");
            let (status, body) =
                post_batch(&app, Some(&session), &conv, &[&e1, &e2, &bad, &e3]).await;
            assert_eq!(status, 422, "{backend}: {what}: {body}");
            let first = &body["detail"][0];
            let loc = first["loc"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {body}"));
            assert!(
                loc.len() >= 2 && loc[0] == "body" && loc[1] == 2,
                "{backend}: {what}: loc {loc:?}"
            );
            assert!(
                first["type"].as_str().is_some_and(|t| !t.is_empty())
                    && first["msg"].as_str().is_some_and(|m| !m.is_empty()),
                "{backend}: {what}: {body}"
            );
            assert_eq!(
                count(&app, &key, &conv).await,
                json!(1),
                "{backend}: {what}"
            );
            assert_eq!(
                get_ids(&app, &key, &conv, &[&id1, &id2, &id3]).await,
                json!([null, null, null]),
                "{backend}: {what}"
            );
            checked += 1;
        }
    }
    assert!(checked > 300, "{checked}");
}

/// Malformed bodies, authentication, path ids and other organizations on the webhook.
async fn webhook_refusals(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let (id, ev) = fresh("PauseEvent.jsonl");
    let path = webhook_events_path(&conv);

    // Not a list.
    let (status, body) = app.post_webhook(&path, Some(&session), ev.clone()).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body"]),
        "{backend}: {body}"
    );
    assert_eq!(body["detail"][0]["type"], "list_type", "{backend}: {body}");
    // Malformed JSON.
    let (status, body) = app.post_webhook(&path, Some(&session), "[{\"id\": ").await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_eq!(
        body["detail"][0]["type"], "json_invalid",
        "{backend}: {body}"
    );
    assert_eq!(body["detail"][0]["loc"][0], "body", "{backend}: {body}");

    // Authentication.
    let batch = format!("[{ev}]");
    let (status, body) = app.post_webhook(&path, None, batch.clone()).await;
    assert_eq!(
        (status, body),
        (401, detail("X-Session-API-Key header is required")),
        "{backend}"
    );
    let (status, body) = app.post_webhook(&path, Some(""), batch.clone()).await;
    assert_eq!(
        (status, body),
        (401, detail("X-Session-API-Key header is required")),
        "{backend}"
    );
    let wrong = format!("{}x", session);
    let (status, body) = app.post_webhook(&path, Some(&wrong), batch.clone()).await;
    assert_eq!(
        (status, body),
        (401, detail("Invalid session API key")),
        "{backend}"
    );
    let (status, body) = app
        .post_webhook(&path, Some(&app.owner.key), batch.clone())
        .await;
    assert_eq!(
        (status, body),
        (401, detail("Invalid session API key")),
        "{backend}"
    );
    // An API key in its usual header is no session key.
    let r = app
        .req(reqwest::Method::POST, &path, Some(&app.owner.key))
        .header("content-type", "application/json")
        .body(batch.clone())
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(r).await;
    assert_eq!(
        (status, body),
        (401, detail("X-Session-API-Key header is required")),
        "{backend}"
    );
    // Authentication comes before the body: an invalid body without a key is 401.
    let (status, _) = app.post_webhook(&path, None, "not json").await;
    assert_eq!(status, 401, "{backend}");

    // Path ids.
    for bad in ["not-a-uuid", "1234", &format!("{conv}0")] {
        let p = webhook_events_path(bad);
        let (status, body) = app.post_webhook(&p, Some(&session), batch.clone()).await;
        assert_eq!(status, 422, "{backend}: {bad}: {body}");
        assert_one_error(&body, &json!(["path", "conversation_id"]), "uuid_parsing");
        let (status, body) = app.post_webhook(&p, None, batch.clone()).await;
        assert_eq!(
            (status, body),
            (401, detail("X-Session-API-Key header is required")),
            "{backend}: {bad}"
        );
    }
    // Nothing of the above was stored: the conversation does not even exist.
    let (status, body) = app
        .get_query(&events_path(&conv, "/count"), &app.owner.key, &[])
        .await;
    assert_eq!(
        (status, body),
        (404, detail("Conversation not found")),
        "{backend}"
    );

    // Another organization's conversation: answered as an unknown one (ids do not leak),
    // nothing stored.
    app.ingest(&session, &conv, &[&ev]).await;
    let session_b = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    let (id_b, ev_b) = fresh("MessageEvent.jsonl");
    let (status, body) = post_batch(&app, Some(&session_b), &conv, &[&ev_b]).await;
    assert_eq!((status, body), (200, json!({"success": true})), "{backend}");
    let info = json!({"id": conv, "title": "hijacked", "execution_status": "error"});
    let (status, body) = app
        .post_webhook(
            "/api/v1/webhooks/conversations",
            Some(&session_b),
            info.to_string(),
        )
        .await;
    assert_eq!((status, body), (200, json!({"success": true})), "{backend}");
    assert_eq!(
        count(&app, &app.owner.key, &conv).await,
        json!(1),
        "{backend}"
    );
    assert_eq!(
        get_ids(&app, &app.owner.key, &conv, &[&id, &id_b]).await,
        json!([canonical(&ev), null]),
        "{backend}"
    );
    let stored = app.conversation(&conv).await.unwrap();
    assert_eq!(
        (
            stored.org_id,
            stored.owner_id,
            stored.title,
            stored.execution_status
        ),
        (app.org, app.owner.user_id, None, None),
        "{backend}"
    );
}

/// Malformed search, count and get queries: one 422 entry at `["query", name]` each.
async fn query_errors(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let (_, ev) = fresh("PauseEvent.jsonl");
    app.ingest(&session, &conv, &[&ev]).await;
    let key = &app.owner.key;
    let search = events_path(&conv, "/search");
    let count = events_path(&conv, "/count");
    for (path, name, value, ty) in [
        (&search, "limit", "0", "greater_than"),
        (&search, "limit", "-3", "greater_than"),
        (&search, "limit", "101", "less_than_equal"),
        (&search, "limit", "abc", "int_parsing"),
        (&search, "kind__eq", "Bogus", "literal_error"),
        (&search, "kind__eq", "pauseevent", "literal_error"),
        (&search, "sort_order", "asc", "enum"),
        (
            &search,
            "timestamp__gte",
            "notadate",
            "datetime_from_date_parsing",
        ),
        (
            &search,
            "timestamp__lt",
            "2026-13-45",
            "datetime_from_date_parsing",
        ),
        (&search, "page_id", "garbage", "value_error"),
        (&search, "page_id", "!!!", "value_error"),
        (&count, "kind__eq", "Bogus", "literal_error"),
        (
            &count,
            "timestamp__gte",
            "notadate",
            "datetime_from_date_parsing",
        ),
    ] {
        let (status, body) = app.get_query(path, key, &[(name, value.to_owned())]).await;
        assert_eq!(status, 422, "{backend}: {path} {name}={value}: {body}");
        assert_one_error(&body, &json!(["query", name]), ty);
        assert_eq!(body["detail"][0]["input"], value, "{backend}: {body}");
    }
    // Every malformed parameter is reported.
    let (status, body) = app
        .get_query(
            &search,
            key,
            &[("limit", "0".to_owned()), ("sort_order", "x".to_owned())],
        )
        .await;
    assert_eq!(status, 422, "{backend}");
    assert_eq!(
        body["detail"].as_array().unwrap().len(),
        2,
        "{backend}: {body}"
    );
    // A bad path id on the read routes.
    for suffix in ["/search", "/count", ""] {
        let (status, body) = app
            .get_query(&events_path("nope", suffix), key, &[("id", "x".to_owned())])
            .await;
        assert_eq!(status, 422, "{backend}: {suffix}: {body}");
        assert_one_error(&body, &json!(["path", "conversation_id"]), "uuid_parsing");
    }
    // Batch get without ids.
    let (status, body) = app.get_query(&events_path(&conv, ""), key, &[]).await;
    assert_eq!(status, 422, "{backend}: {body}");
    assert_one_error(&body, &json!(["query", "id"]), "missing");
}

/// Unknown and other organizations' conversations are 404 on search, count and get, for
/// every actor outside the org; the owner and the org's admins and owners see them, other
/// members do not (the project's conversation visibility rule).
async fn visibility(backend: Backend) {
    let app = spawn_app(backend).await;
    let session_a = app.register_sandbox(app.org, app.owner.user_id).await;
    let session_b = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    let conv_a = uuid::Uuid::new_v4().to_string();
    let conv_b = uuid::Uuid::new_v4().to_string();
    let (id_a, ev_a) = fresh("PauseEvent.jsonl");
    let (id_b, ev_b) = fresh("PauseEvent.jsonl");
    app.ingest(&session_a, &conv_a, &[&ev_a]).await;
    app.ingest(&session_b, &conv_b, &[&ev_b]).await;
    let unknown = uuid::Uuid::new_v4().to_string();

    let routes = |conv: &str, id: &str| {
        [
            (events_path(conv, "/search"), vec![]),
            (events_path(conv, "/count"), vec![]),
            (events_path(conv, ""), vec![("id", id.to_owned())]),
        ]
    };
    let not_found = detail("Conversation not found");
    // A member sees only its own conversations (conv_a is the owner's): 404, never 403.
    for (path, q) in routes(&conv_a, &id_a) {
        let (status, body) = app.get_query(&path, &app.member.key, &q).await;
        assert_eq!(
            (status, &body),
            (404, &not_found),
            "{backend}: member: {path}"
        );
    }
    for key in [&app.owner.key, &app.admin.key, &app.bound_owner.key] {
        for (path, q) in routes(&unknown, &id_a)
            .iter()
            .chain(&routes(&conv_b, &id_b))
        {
            let (status, body) = app.get_query(path, key, q).await;
            assert_eq!((status, &body), (404, &not_found), "{backend}: {path}");
        }
        let (status, body) = app
            .get_query(&events_path(&conv_a, "/count"), key, &[])
            .await;
        assert_eq!((status, body), (200, json!(1)), "{backend}");
        let (status, body) = app
            .get_query(&events_path(&conv_a, "/search"), key, &[])
            .await;
        assert_eq!(
            (status, body),
            (
                200,
                json!({"items": [canonical(&ev_a)], "next_page_id": null})
            ),
            "{backend}"
        );
        let (status, body) = app
            .get_query(&events_path(&conv_a, ""), key, &[("id", id_a.clone())])
            .await;
        assert_eq!(
            (status, body),
            (200, json!([canonical(&ev_a)])),
            "{backend}"
        );
    }
    // The non-member (org B) sees B's conversation, never A's.
    let key = &app.non_member.key;
    for (path, q) in routes(&conv_a, &id_a)
        .iter()
        .chain(&routes(&unknown, &id_a))
    {
        let (status, body) = app.get_query(path, key, q).await;
        assert_eq!((status, &body), (404, &not_found), "{backend}: {path}");
    }
    let (status, body) = app
        .get_query(&events_path(&conv_b, "/count"), key, &[])
        .await;
    assert_eq!((status, body), (200, json!(1)), "{backend}");
    // Without credentials: 401 before anything else.
    let r = app.get(&events_path(&conv_a, "/search"), None).await;
    assert_eq!(r.status().as_u16(), 401, "{backend}");
}

on_both_backends!(
    invalid_corpus_rejects_the_batch,
    webhook_refusals,
    query_errors,
    visibility
);
