//! Reading request bodies (API.md, Request bodies; issue 7 §2-§3), over raw TCP so the test
//! controls when each byte is sent: every route with a body answers an unauthenticated
//! request from its headers, without waiting for the body; a body trickled too slowly or past
//! the read timeout is a 408 that closes the connection; bodies wait for room among the bytes
//! in flight and are refused with 503 when none comes in time.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_api::extract::BodyLimits;
use switchboard_testkit::Backend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response read off a raw connection.
#[derive(Debug)]
struct RawResponse {
    status: u16,
    /// Header names lowercased.
    headers: Vec<(String, String)>,
    body: Value,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Opens a connection to the app and sends a request head (the body, if any, is up to the
/// caller).
async fn send_head(app: &TestApp, head: &str) -> TcpStream {
    let addr = app.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// A `POST` head with `Content-Length: length` and the given extra header lines.
fn post_head(path: &str, length: usize, headers: &[String]) -> String {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// Reads one response (head and a `Content-Length` body) within `within`.
async fn read_response(stream: &mut TcpStream, within: Duration) -> RawResponse {
    tokio::time::timeout(within, async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before a response: {buf:?}");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        while buf.len() < head_end + length {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed inside the body");
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap();
        RawResponse {
            status,
            headers,
            body,
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no response within {within:?}"))
}

/// Whether the server closes the connection within `within` (reads reach the end, or fail).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Every route with a body answers a request without a valid key from its headers: the
/// body is never awaited (here it never comes), the answer is 401 and the connection closes.
async fn unauthenticated_bodies_are_never_read(backend: Backend) {
    let app = spawn_app(backend).await;
    let conv = uuid::Uuid::new_v4();
    let routes: [(&str, usize, &str); 4] = [
        (SETTINGS, 1 << 20, "X-Access-Token"),
        ("/api/keys", 1 << 20, "X-Access-Token"),
        (
            &webhook_events_path(&conv.to_string()),
            8 << 20,
            "X-Session-API-Key",
        ),
        (
            "/api/v1/webhooks/conversations",
            8 << 20,
            "X-Session-API-Key",
        ),
    ]
    .map(|(p, l, h)| (Box::leak(p.to_owned().into_boxed_str()) as &str, l, h));
    for (path, length, header) in routes {
        for credentials in [vec![], vec![format!("{header}: sb_wrong_key")]] {
            let started = Instant::now();
            let mut stream = send_head(&app, &post_head(path, length, &credentials)).await;
            stream.write_all(b"[{\"kind\":").await.unwrap();
            let res = read_response(&mut stream, Duration::from_secs(5)).await;
            assert_eq!(
                res.status, 401,
                "{backend}: {path} {credentials:?}: {res:?}"
            );
            assert!(res.body["detail"].is_string(), "{backend}: {res:?}");
            assert_eq!(
                res.header("connection"),
                Some("close"),
                "{backend}: {res:?}"
            );
            assert!(
                closed_within(&mut stream, Duration::from_secs(10)).await,
                "{backend}: {path}: the connection stays open"
            );
            assert!(started.elapsed() < Duration::from_secs(10), "{backend}");
        }
    }
    // Nothing was ever admitted.
    assert_eq!(app.bodies.available(), BodyLimits::default().max_in_flight);
}

/// A body trickled at one byte per second: 408 `{"detail": …}` once the read timeout has
/// passed, and the connection is closed.
async fn a_trickled_body_times_out(backend: Backend) {
    let limits = BodyLimits {
        read_timeout: Duration::from_secs(2),
        min_rate: 0,
        ..BodyLimits::default()
    };
    let app = spawn_app_with(backend, limits).await;
    let body = br#"{"max_budget_per_task": 5}"#;
    let head = post_head(
        SETTINGS,
        body.len(),
        &[format!("X-Access-Token: {}", app.owner.key)],
    );
    let started = Instant::now();
    let mut stream = send_head(&app, &head).await;
    let (mut reader, mut writer) = stream.split();
    let trickle = async {
        for b in body {
            if writer.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    let mut first = [0u8; 1];
    let peek = async { reader.peek(&mut first).await };
    tokio::select! {
        _ = trickle => panic!("{backend}: the whole body was sent without an answer"),
        r = peek => { r.unwrap(); }
    }
    let res = read_response(&mut stream, Duration::from_secs(2)).await;
    let waited = started.elapsed();
    assert_eq!(res.status, 408, "{backend}: {res:?}");
    assert!(res.body["detail"].is_string(), "{backend}: {res:?}");
    assert_eq!(
        res.header("connection"),
        Some("close"),
        "{backend}: {res:?}"
    );
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(5),
        "{backend}: answered after {waited:?}"
    );
    assert!(closed_within(&mut stream, Duration::from_secs(10)).await);
    // The settings did not change, and the room was given back.
    assert_eq!(app.settings().await["max_budget_per_task"], Value::Null);
    assert_eq!(app.bodies.available(), limits.max_in_flight);
}

/// A body below the minimum rate is cut after the grace period, well before the read timeout.
async fn a_body_below_the_minimum_rate_is_cut(backend: Backend) {
    let limits = BodyLimits {
        read_timeout: Duration::from_secs(60),
        min_rate: 100,
        ..BodyLimits::default()
    };
    let app = spawn_app_with(backend, limits).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let head = post_head(
        &webhook_events_path(&conv),
        4096,
        &[format!("X-Session-API-Key: {session}")],
    );
    let started = Instant::now();
    let mut stream = send_head(&app, &head).await;
    // One byte a second for up to 15 seconds; the answer comes while sending.
    let res = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            stream.write_all(b" ").await.unwrap();
            let mut probe = [0u8; 1];
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_secs(1), stream.peek(&mut probe)).await
                && n > 0
            {
                return read_response(&mut stream, Duration::from_secs(2)).await;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{backend}: no answer to a body at 1 byte/s"));
    let waited = started.elapsed();
    assert_eq!(res.status, 408, "{backend}: {res:?}");
    assert_eq!(
        res.header("connection"),
        Some("close"),
        "{backend}: {res:?}"
    );
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(9),
        "{backend}: cut after {waited:?}"
    );
    assert!(app.conversation(&conv).await.is_none(), "{backend}");
}

/// Bodies wait for room among the bytes in flight, first come first served; one that finds
/// none within the read timeout is a 503 with `Retry-After`; once the room is given back,
/// requests pass again.
async fn bodies_wait_for_room_then_get_503(backend: Backend) {
    let limits = BodyLimits {
        max_in_flight: 1 << 20,
        read_timeout: Duration::from_secs(2),
        min_rate: 0,
    };
    let app = spawn_app_with(backend, limits).await;
    let key = format!("X-Access-Token: {}", app.owner.key);
    // A takes the whole room and sends a little; A2 queues for the whole room behind it.
    let mut a = send_head(
        &app,
        &post_head(SETTINGS, 1 << 20, std::slice::from_ref(&key)),
    )
    .await;
    a.write_all(b"{").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.bodies.available(), 0, "{backend}: A holds the room");
    let mut a2 = send_head(
        &app,
        &post_head(SETTINGS, 1 << 20, std::slice::from_ref(&key)),
    )
    .await;
    a2.write_all(b"{").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // B, small, waits behind A2: A times out at 2 s, A2 gets the room, B's wait runs out.
    let started = Instant::now();
    let (status, body) = app
        .post_settings(&app.owner.key, &json!({"max_budget_per_task": 1.5}))
        .await;
    let waited = started.elapsed();
    assert_eq!(status, 503, "{backend}: {body}");
    assert!(body["detail"].is_string(), "{backend}: {body}");
    assert!(
        waited >= Duration::from_secs(2),
        "{backend}: refused after {waited:?} without waiting"
    );
    let res = read_response(&mut a, Duration::from_secs(5)).await;
    assert_eq!(res.status, 408, "{backend}: A: {res:?}");
    let res = read_response(&mut a2, Duration::from_secs(5)).await;
    assert_eq!(res.status, 408, "{backend}: A2: {res:?}");
    assert_eq!(
        app.bodies.available(),
        1 << 20,
        "{backend}: room given back"
    );

    let r = app
        .req(reqwest::Method::POST, SETTINGS, Some(&app.owner.key))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    let (status, _) = status_json(r).await;
    assert_eq!(
        status, 422,
        "{backend}: an empty body is judged, not refused"
    );
    let (status, body) = app
        .post_settings(&app.owner.key, &json!({"max_budget_per_task": 1.5}))
        .await;
    assert_eq!(status, 200, "{backend}: {body}");
}

/// A body without a declared length (chunked) is read, and the room it reserved (the route's
/// limit) is given back once the request is done.
async fn chunked_bodies_give_their_room_back(backend: Backend) {
    let app = spawn_app(backend).await;
    let head = format!(
        "POST {SETTINGS} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Access-Token: {}\r\n\r\n",
        app.owner.key
    );
    let mut stream = send_head(&app, &head).await;
    for part in [&b"{\"max_budget_per_"[..], b"task\": 2.5}"] {
        stream
            .write_all(format!("{:x}\r\n", part.len()).as_bytes())
            .await
            .unwrap();
        stream.write_all(part).await.unwrap();
        stream.write_all(b"\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    let res = read_response(&mut stream, Duration::from_secs(5)).await;
    let (status, body) = (res.status, res.body);
    assert_eq!(status, 200, "{backend}: {body}");
    assert_eq!(body["max_budget_per_task"], 2.5, "{backend}");
    assert_eq!(app.bodies.available(), BodyLimits::default().max_in_flight);
}

/// JSON nested far deeper than any real request (50,000 levels of arrays, then of objects) in
/// every body that holds free-form JSON: 422 `json_invalid` (serde_json's recursion limit of
/// 128), never a crash; nothing stored; the server answers normally afterwards.
async fn deep_nesting_is_refused(backend: Backend) {
    use reqwest::Method;
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    let arrays = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(50_000), "}".repeat(50_000));
    let key = &app.owner.key;
    let api: [(&str, String); 4] = [
        ("/api/organizations/app", arrays.clone()),
        (
            "/api/organizations/app",
            format!(r#"{{"registered_marketplaces":{arrays}}}"#),
        ),
        ("/api/keys", objects.clone()),
        (
            "/api/v1/app-conversations",
            format!(r#"{{"suggested_task":{objects}}}"#),
        ),
    ];
    for (path, body) in api {
        let r = app
            .req(Method::POST, path, Some(key))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let (status, got) = status_json(r).await;
        assert_eq!(status, 422, "{backend} {path}: {got}");
        assert_eq!(
            got["detail"][0]["type"], "json_invalid",
            "{backend} {path}: {got}"
        );
    }
    let event = format!(
        r#"[{{"id":"deep-1","timestamp":"2026-11-23T10:00:00","source":"agent","kind":"MessageEvent","llm_message":{{"role":"assistant","content":[]}},"extra":{objects}}}]"#
    );
    let hooks: [(String, String); 3] = [
        (webhook_events_path(&conv), event),
        (webhook_events_path(&conv), arrays.clone()),
        (
            "/api/v1/webhooks/conversations".to_owned(),
            format!(r#"{{"id":"{conv}","title":{objects}}}"#),
        ),
    ];
    for (path, body) in hooks {
        let (status, got) = app.post_webhook(&path, Some(&session), body).await;
        assert_eq!(status, 422, "{backend} {path}: {got}");
        assert_eq!(
            got["detail"][0]["type"], "json_invalid",
            "{backend} {path}: {got}"
        );
    }
    // Nothing was stored, and the server goes on.
    let r = app
        .req(
            Method::GET,
            &format!("/api/v1/conversation/{conv}/events/count"),
            Some(key),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        404,
        "{backend}: no conversation was created"
    );
    let r = app
        .req(Method::GET, "/api/v1/users/me", Some(key))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    app.stop().await;
}

/// Huge id lists: 1,000 ids on a batch get are the documented 400 naming the count; a request
/// head past actix's 32 KiB (10,000 ids) is 431 before any route runs; the server goes on.
async fn huge_id_lists(backend: Backend) {
    use reqwest::Method;
    let app = spawn_app(backend).await;
    let key = &app.owner.key;
    let ids = |n: usize| -> String {
        (0..n)
            .map(|_| format!("id={}", uuid::Uuid::new_v4()))
            .collect::<Vec<_>>()
            .join("&")
    };
    let path = format!("/api/v1/sandboxes?{}", ids(1_000));
    let (status, body) = status_json(app.get(&path, Some(key)).await).await;
    assert_eq!(
        (status, body),
        (
            400,
            detail("Cannot request more than 100 sandboxes at once, got 1000")
        ),
        "{backend}"
    );

    let head = format!(
        "GET /api/v1/sandboxes?{} HTTP/1.1\r\nHost: test\r\nX-Access-Token: {key}\r\n\r\n",
        ids(10_000)
    );
    let mut stream = send_head(&app, &head).await;
    // actix answers before any route, with an empty body.
    let mut first = vec![0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut first))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let line = String::from_utf8_lossy(&first[..n]).to_string();
    assert!(line.starts_with("HTTP/1.1 431 "), "{backend}: {line:?}");

    let r = app
        .req(Method::GET, "/api/v1/users/me", Some(key))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{backend}");
    app.stop().await;
}

on_both_backends!(
    deep_nesting_is_refused,
    huge_id_lists,
    unauthenticated_bodies_are_never_read,
    a_trickled_body_times_out,
    a_body_below_the_minimum_rate_is_cut,
    bodies_wait_for_room_then_get_503,
    chunked_bodies_give_their_room_back,
);
