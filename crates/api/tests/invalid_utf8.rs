//! Invalid UTF-8 and lone surrogates in every kind of input, on both backends, through HTTP:
//! JSON bodies (raw bytes that are not UTF-8, and `\ud800` escapes, which JSON's grammar
//! allows but no Unicode string holds) are 422 `json_invalid` and store nothing; query
//! parameters that must parse (kinds, instants, cursors) are 422, free text and ids are
//! decoded with U+FFFD for what is not UTF-8 (the WHATWG form-urlencoded rule) and find
//! nothing; path segments and header values that do not decode are a 4xx; never a 500, and
//! what was stored before is read back unchanged.

use crate::common;

use common::*;
use reqwest::Method;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

/// Byte sequences that are not UTF-8: a lone 0xFF, a lone continuation byte, an overlong
/// `/`, an encoded surrogate (U+D800), a sequence cut short at the end of the string.
const NOT_UTF8: [&[u8]; 5] = [
    b"\xff",
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"ab\xe2\x82",
];

/// `prefix` + `bad` + `suffix` as bytes.
fn with(prefix: &str, bad: &[u8], suffix: &str) -> Vec<u8> {
    let mut v = prefix.as_bytes().to_vec();
    v.extend_from_slice(bad);
    v.extend_from_slice(suffix.as_bytes());
    v
}

/// A message event with id `id` whose text is `text` (raw JSON string content).
fn message_json(id: &str, text: &str) -> String {
    format!(
        r#"{{"id":"{id}","timestamp":"2026-11-23T10:00:00.000001","source":"agent","llm_message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"kind":"MessageEvent"}}"#
    )
}

#[track_caller]
fn assert_json_invalid(status: u16, body: &Value, context: &str) {
    assert_eq!(status, 422, "{context}: {body}");
    assert_eq!(
        body["detail"][0]["type"], "json_invalid",
        "{context}: {body}"
    );
}

/// Bodies: every route that reads JSON refuses them with 422 `json_invalid`; nothing is stored.
async fn bodies_that_are_not_utf8_are_refused(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let stored = message_json(&uuid::Uuid::new_v4().to_string(), "before");
    app.ingest(&session, &conv, &[&stored]).await;
    let settings_before = app.settings().await;
    let key = &app.owner.key;

    for bad in NOT_UTF8 {
        let context = format!("{backend} {bad:x?}");
        // A webhook batch: one good event and one whose text is not UTF-8; neither is stored.
        let good = message_json(&uuid::Uuid::new_v4().to_string(), "good");
        let second = message_json("bad-utf8", "@@");
        let (head, tail) = second.split_once("@@").unwrap();
        let batch = with(&format!("[{good},{head}"), bad, &format!("{tail}]"));
        let (status, got) = app
            .post_webhook(&webhook_events_path(&conv), Some(&session), batch)
            .await;
        assert_json_invalid(status, &got, &format!("{context} webhook events"));

        let title = with(&format!(r#"{{"id":"{conv}","title":""#), bad, r#""}"#);
        let (status, got) = app
            .post_webhook("/api/v1/webhooks/conversations", Some(&session), title)
            .await;
        assert_json_invalid(status, &got, &format!("{context} webhook conversation"));

        let (status, got) = app
            .post_settings_raw(Some(key), with(r#"{"llm_model":""#, bad, r#""}"#))
            .await;
        assert_json_invalid(status, &got, &format!("{context} settings"));

        for (path, body) in [
            ("/api/keys", with(r#"{"name":""#, bad, r#""}"#)),
            (
                "/api/v1/app-conversations",
                with(r#"{"title":""#, bad, r#""}"#),
            ),
        ] {
            let r = app
                .req(Method::POST, path, Some(key))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            let (status, got) = status_json(r).await;
            assert_json_invalid(status, &got, &format!("{context} {path}"));
        }
    }

    // Lone surrogates written as JSON escapes.
    for escape in [r"\ud800", r"\udfff", r"x\ud83dy"] {
        let context = format!("{backend} {escape}");
        let second = message_json("lone-surrogate", escape);
        let (status, got) = app
            .post_webhook(
                &webhook_events_path(&conv),
                Some(&session),
                format!("[{second}]"),
            )
            .await;
        assert_json_invalid(status, &got, &format!("{context} webhook events"));
        let (status, got) = app
            .post_settings_raw(Some(key), format!(r#"{{"llm_model":"{escape}"}}"#))
            .await;
        assert_json_invalid(status, &got, &format!("{context} settings"));
    }

    // Nothing was stored or changed: the conversation still holds its one event, the settings
    // are as they were, no key or start task was made.
    let (status, count) = app.get_query(&events_path(&conv, "/count"), key, &[]).await;
    assert_eq!((status, count), (200, json!(1)), "{backend}");
    let (status, page) = app
        .get_query(&events_path(&conv, "/search"), key, &[])
        .await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(page["items"][0], canonical(&stored), "{backend}");
    assert_eq!(app.settings().await, settings_before, "{backend}");
    let (status, keys) = status_json(app.get("/api/keys", Some(key)).await).await;
    assert_eq!(status, 200, "{backend}: {keys}");
    assert!(
        !keys.to_string().contains('\u{fffd}'),
        "{backend}: a key was made from a name that is not UTF-8: {keys}"
    );
    app.stop().await;
}

/// Query parameters and path segments that percent-decode to bytes that are not UTF-8, and
/// header values with such bytes: a 4xx, never a 500; the server goes on.
async fn queries_paths_and_headers_that_are_not_utf8(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let stored = message_json(&uuid::Uuid::new_v4().to_string(), "before");
    app.ingest(&session, &conv, &[&stored]).await;
    let key = &app.owner.key;

    let search = events_path(&conv, "/search");
    let queries = [
        format!("{search}?kind__eq=%FF"),
        format!("{search}?page_id=%C0%AF"),
        format!("{search}?timestamp__gte=%ED%A0%80"),
        "/api/v1/sandboxes/search?page_id=%80".to_owned(),
        "/api/v1/sandbox-specs/search?page_id=%FF".to_owned(),
        "/api/v1/app-conversations/start-tasks/search?page_id=%FF".to_owned(),
    ];
    for path in &queries {
        let (status, body) = status_json(app.get(path, Some(key)).await).await;
        assert!(
            status == 422 || status == 400,
            "{backend} {path}: {status} {body}"
        );
        assert!(
            body["detail"].is_array() || body["detail"].is_string(),
            "{backend} {path}: {body}"
        );
    }

    // Ids in paths: 422 `uuid_parsing`, as any malformed id.
    for (method, path) in [
        (
            Method::GET,
            "/api/v1/conversation/%FF/events/search".to_owned(),
        ),
        (
            Method::DELETE,
            "/api/v1/app-conversations/%C0%AF".to_owned(),
        ),
        (Method::POST, "/api/v1/sandboxes/%ED%A0%80/pause".to_owned()),
        (
            Method::GET,
            format!("/api/v1/conversation/{conv}%FF/events/count"),
        ),
    ] {
        let r = app.req(method, &path, Some(key)).send().await.unwrap();
        let (status, body) = status_json(r).await;
        assert_eq!(status, 422, "{backend} {path}: {body}");
        assert_eq!(
            body["detail"][0]["type"], "uuid_parsing",
            "{backend} {path}: {body}"
        );
    }

    // Query strings are decoded as the WHATWG URL standard's form-urlencoded parser does:
    // bytes that are not UTF-8 become U+FFFD. A batch get by such an id finds nothing, as any
    // unknown id; a text filter looks for U+FFFD, which no title here holds.
    let path = format!("{}?id=%FF%FE", events_path(&conv, ""));
    let (status, body) = status_json(app.get(&path, Some(key)).await).await;
    assert_eq!((status, body), (200, json!([null])), "{backend} {path}");
    let path = "/api/v1/app-conversations/search?title__contains=%FF";
    let (status, body) = status_json(app.get(path, Some(key)).await).await;
    assert_eq!(
        (status, body),
        (200, json!({"items": [], "next_page_id": null})),
        "{backend} {path}"
    );

    // Header values: a key that is not UTF-8 is no key (401); an X-Org-Id that is not is 422.
    let bad_key = HeaderValue::from_bytes(b"sb_\xff\xfe").unwrap();
    let r = app
        .req(Method::GET, "/api/v1/users/me", None)
        .header("X-Access-Token", bad_key)
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(r).await;
    assert_eq!(status, 401, "{backend}: {body}");
    let bad_session = HeaderValue::from_bytes(b"sbs_\xc0\xaf").unwrap();
    let r = app
        .req(Method::POST, &webhook_events_path(&conv), None)
        .header("X-Session-API-Key", bad_session)
        .header("content-type", "application/json")
        .body("[]")
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(r).await;
    assert_eq!(status, 401, "{backend}: {body}");
    let r = app
        .req(Method::GET, "/api/organizations/app", Some(key))
        .header("X-Org-Id", HeaderValue::from_bytes(b"\xff").unwrap())
        .send()
        .await
        .unwrap();
    let (status, body) = status_json(r).await;
    assert_eq!(status, 422, "{backend}: {body}");

    // What was stored is unchanged, and the server answers.
    let (status, page) = app.get_query(&search, key, &[]).await;
    assert_eq!(status, 200, "{backend}: {page}");
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1), "{backend}");
    assert_eq!(page["items"][0], canonical(&stored), "{backend}");
    app.stop().await;
}

on_both_backends!(
    bodies_that_are_not_utf8_are_refused,
    queries_paths_and_headers_that_are_not_utf8,
);
