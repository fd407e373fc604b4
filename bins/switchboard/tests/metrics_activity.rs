//! The metrics say what happened and the access log says who did what, through the real
//! binary with a real sandbox (the stand-in agent server) on both backends: webhook batches
//! accepted and refused, requests through the sandbox proxy (forwarded, a probe, refused, an
//! upstream timeout), a proxied websocket and a live one open, conversation starts refused
//! and background jobs' steps, all read from `/metrics` on its own listener
//! (`--metrics-listen`, and 404 on the API's port); the access log's JSON lines carry the
//! route template, the request id and the caller, never a key or a raw path. And the access
//! log in the text format, switched off through the log filter.

use crate::common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The value of the series `name{labels}` in a Prometheus text exposition (labels in any
/// order); 0 when absent.
fn series(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((head, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (n, rest) = head.split_once('{').unwrap_or((head, "}"));
        if n != name {
            continue;
        }
        let pairs: Vec<&str> = rest
            .trim_end_matches('}')
            .split(',')
            .filter(|p| !p.is_empty())
            .collect();
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        if pairs.len() == wanted.len() && wanted.iter().all(|w| pairs.contains(&w.as_str())) {
            return value.parse().unwrap();
        }
    }
    0.0
}

/// Two events for `conv`'s webhook.
fn batch() -> String {
    let event = |i: u32| {
        format!(
            r#"{{"id":"00000000-0000-4000-8000-{i:012}","timestamp":"2026-11-29T10:00:00","kind":"MessageEvent","source":"user","llm_message":{{"role":"user","content":[{{"type":"text","text":"hi"}}]}}}}"#
        )
    };
    format!("[{},{}]", event(1), event(2))
}

fn post_batch(server: &Server, session: &str, conv: &str, body: &str) -> u16 {
    client()
        .post(server.url(&format!("/api/v1/webhooks/events/{conv}")))
        .header("X-Session-API-Key", session)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .unwrap()
        .status()
        .as_u16()
}

fn websocket(url: &str, header: (&'static str, &str)) -> Socket {
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert(header.0, header.1.parse().unwrap());
    let (socket, _) = tungstenite::connect(request).expect("the upgrade");
    socket
}

/// Scrapes until `check` holds for the exposition (10 s at most), and answers it.
#[track_caller]
fn scrape_until(metrics: &str, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = client().get(metrics).send().unwrap().text().unwrap();
        if check(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every access log line (`--log-format json`) printed so far, as its fields.
fn access_lines(server: &Server) -> Vec<Value> {
    server
        .stderr_lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "switchboard::access")
        .map(|l| l["fields"].clone())
        .collect()
}

#[allow(clippy::too_many_lines)] // One story: each step's series read back in turn.
fn metrics_say_what_happened(backend: Backend) {
    let db = TestDatabase::new(backend);
    let data = TempDir::new();
    let data_dir = data.path().display().to_string();
    let specs = standin_specs_file(data.path());
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![
                "--data-dir",
                &data_dir,
                "--sandbox-specs",
                &specs,
                "--metrics-listen",
                &metrics_addr,
                "--proxy-read-timeout",
                "1",
                "--log-format",
                "json",
            ],
            env: vec![],
        },
    );
    let metrics = format!("http://{metrics_addr}/metrics");
    let key = server.bootstrap_key();
    let user = str_of(server.bootstrapped.as_ref().unwrap(), "user_id").to_owned();

    // The metrics are on their own listener alone.
    let on_api = client().get(server.url("/metrics")).send().unwrap();
    assert_eq!(on_api.status().as_u16(), 404, "{backend}");
    let before = client().get(&metrics).send().unwrap().text().unwrap();
    assert!(
        before.contains("# TYPE webhook_batches_total counter"),
        "{before}"
    );

    // A sandbox, started by the bootstrap user.
    let (code, body) = send_json(
        client()
            .post(server.url("/api/v1/sandboxes"))
            .header("X-Access-Token", &key)
            .header("x-request-id", "metrics-test-start"),
    );
    assert_eq!(code, 200, "{backend}: {body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let running = wait_sandbox_status(&server, &key, &id, "RUNNING");
    let session = running["session_api_key"].as_str().unwrap().to_owned();
    let agent = running["exposed_urls"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();

    // Webhooks: a batch stored, the same batch again (skipped), a wrong key, an invalid event.
    let conv = "5a1d7c2e-3f7a-4b8e-9d2c-1a2b3c4d5e6f";
    assert_eq!(
        post_batch(&server, &session, conv, &batch()),
        200,
        "{backend}"
    );
    assert_eq!(
        post_batch(&server, &session, conv, &batch()),
        200,
        "{backend}"
    );
    assert_eq!(
        post_batch(&server, "not-a-key", conv, &batch()),
        401,
        "{backend}"
    );
    assert_eq!(
        post_batch(&server, &session, conv, r#"[{"id": 1}]"#),
        422,
        "{backend}"
    );

    // The proxy: a probe without credentials, a forwarded request, one refused, one the
    // sandbox does not answer in time (504 after --proxy-read-timeout).
    let get = |path: &str, session: Option<&str>| {
        let mut r = client().get(format!("{agent}{path}"));
        if let Some(s) = session {
            r = r.header("X-Session-API-Key", s);
        }
        r.send().unwrap().status().as_u16()
    };
    assert_eq!(get("/alive", None), 200, "{backend}");
    assert_eq!(get("/server_info", Some(&session)), 200, "{backend}");
    assert_eq!(get("/server_info", None), 401, "{backend}");
    assert_eq!(get("/standin/hang", Some(&session)), 504, "{backend}");

    // A conversation start refused (an unknown field).
    let (code, _) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", &key)
            .json(&json!({"no_such_field": 1})),
    );
    assert_eq!(code, 422, "{backend}");

    // A proxied websocket and a live one, open while the metrics are read.
    let ws_base = agent.replacen("http://", "ws://", 1);
    let mut proxied = websocket(
        &format!("{ws_base}/sockets/events/{conv}"),
        ("X-Session-API-Key", &session),
    );
    let live_url = server
        .url(&format!("/sockets/events/{conv}"))
        .replacen("http://", "ws://", 1);
    let mut live = websocket(&live_url, ("X-Access-Token", &key));
    let open = scrape_until(&metrics, "both sockets counted", |t| {
        series(t, "sandbox_proxy_open_websockets", &[]) == 1.0
            && series(t, "live_subscribers", &[]) == 1.0
    });
    assert_eq!(
        series(&open, "live_conversations_watched", &[]),
        1.0,
        "{open}"
    );

    let d = |name: &str, labels: &[(&str, &str)]| {
        series(&open, name, labels) - series(&before, name, labels)
    };
    let events = [("kind", "events")];
    assert_eq!(
        d(
            "webhook_batches_total",
            &[events[0], ("result", "accepted")]
        ),
        2.0,
        "{backend}: {open}"
    );
    assert_eq!(
        d(
            "webhook_batches_total",
            &[events[0], ("result", "unauthenticated")]
        ),
        1.0
    );
    assert_eq!(
        d("webhook_batches_total", &[events[0], ("result", "invalid")]),
        1.0
    );
    assert_eq!(
        d("webhook_events_total", &[("result", "stored")]),
        2.0,
        "{backend}"
    );
    assert_eq!(
        d("webhook_events_total", &[("result", "skipped")]),
        2.0,
        "{backend}"
    );
    assert_eq!(
        d(
            "webhook_batch_duration_seconds_count",
            &[events[0], ("outcome", "accepted")]
        ),
        2.0
    );
    assert_eq!(
        d(
            "webhook_batch_duration_seconds_count",
            &[events[0], ("outcome", "refused")]
        ),
        2.0
    );
    let http = ("protocol", "http");
    assert_eq!(
        d(
            "sandbox_proxy_requests_total",
            &[http, ("outcome", "probe")]
        ),
        1.0
    );
    assert!(
        d(
            "sandbox_proxy_requests_total",
            &[http, ("outcome", "forwarded")]
        ) >= 1.0,
        "{backend}: {open}"
    );
    assert_eq!(
        d(
            "sandbox_proxy_requests_total",
            &[http, ("outcome", "refused")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "sandbox_proxy_requests_total",
            &[http, ("outcome", "upstream_error")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "sandbox_proxy_upstream_errors_total",
            &[("kind", "timeout")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "sandbox_proxy_requests_total",
            &[("protocol", "websocket"), ("outcome", "forwarded")]
        ),
        1.0
    );
    assert_eq!(
        d("conversation_starts_total", &[("result", "refused")]),
        1.0
    );
    let reconciler = [("job", "sandbox-reconciler"), ("result", "ok")];
    assert!(
        series(&open, "background_job_runs_total", &reconciler) >= 1.0,
        "{open}"
    );
    let last = series(
        &open,
        "background_job_last_success_timestamp_seconds",
        &[("job", "sandbox-reconciler")],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (now - 60.0..=now + 1.0).contains(&last),
        "{backend}: {last}"
    );

    // Closed sockets leave the gauges.
    proxied.close(None).unwrap();
    live.close(None).unwrap();
    for socket in [&mut proxied, &mut live] {
        while !matches!(socket.read(), Err(_) | Ok(Message::Close(_))) {}
    }
    scrape_until(&metrics, "both sockets closed", |t| {
        series(t, "sandbox_proxy_open_websockets", &[]) == 0.0
            && series(t, "live_subscribers", &[]) == 0.0
    });

    // The access log: the route template, the request id, the caller; no key, no raw path.
    let lines = access_lines(&server);
    let start = lines
        .iter()
        .find(|l| l["request_id"] == "metrics-test-start")
        .unwrap_or_else(|| panic!("{backend}: no line for the start: {lines:#?}"));
    assert_eq!(
        (&start["method"], &start["route"], &start["status"]),
        (&json!("POST"), &json!("/api/v1/sandboxes"), &json!(200)),
        "{backend}: {start}"
    );
    assert_eq!(
        start["caller"],
        format!("user:{user}"),
        "{backend}: {start}"
    );
    let key_id = start["key_id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(key_id).is_ok(), "{backend}: {start}");
    assert!(start["duration_ms"].as_f64().unwrap() > 0.0, "{start}");
    let hook = lines
        .iter()
        .find(|l| {
            l["status"] == 200
                && l["method"] == "POST"
                && l["route"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("/api/v1/webhooks/events/"))
        })
        .unwrap_or_else(|| panic!("{backend}: no webhook line: {lines:#?}"));
    assert_eq!(
        (&hook["route"], &hook["caller"], &hook["key_id"]),
        (
            &json!("/api/v1/webhooks/events/{conversation_id}"),
            &json!(format!("sandbox:{id}")),
            &json!("-")
        ),
        "{backend}: {hook}"
    );
    let refused = lines
        .iter()
        .find(|l| l["status"] == 401 && l["route"] == hook["route"])
        .unwrap_or_else(|| panic!("{backend}: no refused webhook line: {lines:#?}"));
    assert_eq!(refused["caller"], "-", "{backend}: {refused}");
    let stderr = server.stderr_lines().join("\n");
    for secret in [&key, &session] {
        assert!(
            !stderr.contains(secret.as_str()),
            "{backend}: a key in the log"
        );
    }
    for line in &lines {
        let route = line["route"].as_str().unwrap();
        assert!(
            !route.contains(conv) && !route.contains(&id),
            "{backend}: a raw path in the access log: {line}"
        );
    }
}

#[test]
fn metrics_say_what_happened_sqlite() {
    metrics_say_what_happened(Backend::Sqlite);
}

#[test]
fn metrics_say_what_happened_postgres() {
    metrics_say_what_happened(Backend::Postgres);
}

/// The text format's access line, and the filter that turns the access log off while the
/// rest of the log stays; `/metrics` on the API's port without `--metrics-listen`.
#[test]
fn access_log_in_text_and_switched_off_by_the_filter() {
    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn(db.url());
    let key = server.bootstrap_key();
    let res = client()
        .get(server.url("/api/v1/users/me"))
        .header("X-Access-Token", &key)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    let line = server
        .wait_for_stderr(&format!("request_id={id}"), Duration::from_secs(5))
        .expect("an access line");
    assert!(
        line.contains("switchboard::access")
            && line.contains("route=/api/v1/users/me")
            && line.contains("status=200")
            && line.contains("caller=user:"),
        "{line}"
    );
    assert!(!line.contains(&key), "{line}");
    let scraped = client().get(server.url("/metrics")).send().unwrap();
    assert_eq!(scraped.status().as_u16(), 200);
    assert!(scraped.text().unwrap().contains("live_subscribers 0"));
    drop(server);

    let db = TestDatabase::new(Backend::Sqlite);
    let server = Server::spawn_with(
        db.url(),
        ServeOptions {
            args: vec![],
            env: vec![("SWITCHBOARD_LOG", "info,switchboard::access=off")],
        },
    );
    let key = server.bootstrap_key();
    for _ in 0..3 {
        let res = client()
            .get(server.url("/api/v1/users/me"))
            .header("X-Access-Token", &key)
            .send()
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
    }
    server.sigterm();
    assert!(
        server
            .wait_for_stderr("stopped", Duration::from_secs(10))
            .is_some(),
        "the rest of the log stays"
    );
    let lines = server.stderr_lines();
    assert!(
        !lines.iter().any(|l| l.contains("switchboard::access")),
        "{lines:#?}"
    );
}
