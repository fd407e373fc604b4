//! The sandbox proxy (issue 22), on both backends, with real sandboxes (the stand-in agent
//! server as processes): who gets through and who is stopped before anything reaches the
//! sandbox, HTTP streamed both ways (a 100 MiB download with flat memory, chunked uploads),
//! a sandbox that stops answering, websockets relayed to 200 clients of one sandbox, a client
//! that stops reading while the others and the sandbox go on, heartbeats, close codes and
//! first-frame auth; and the URLs the API shows under the public URL.

#[macro_use]
mod common;

use std::time::{Duration, Instant};

use common::sandboxes::{SandboxApp, SandboxOptions, spawn_sandbox_app};
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_api::sandbox_proxy::ProxyConfig;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

on_both_backends!(
    who_gets_through,
    http_streams_both_ways,
    websockets_relay,
    urls_point_at_the_proxy,
    routes_by_host
);

/// The proxy's limits in these tests: a small body limit and a short read timeout (a sandbox
/// that stops answering), a small per-client websocket queue (a client that stops reading).
fn proxy_config() -> ProxyConfig {
    ProxyConfig {
        max_body: 4 << 20,
        read_timeout: Duration::from_secs(3),
        ws_queue: 64,
        ws_auth_timeout: Duration::from_secs(2),
        ..ProxyConfig::default()
    }
}

async fn app(backend: Backend) -> SandboxApp {
    spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(proxy_config()),
            ..SandboxOptions::default()
        },
    )
    .await
}

/// A running sandbox of `key`'s: (id, session key, the URL shown for its agent server).
async fn running(app: &SandboxApp, key: &str) -> (String, String, String) {
    let started = app.start(key, None).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(key, &id, "RUNNING").await;
    (
        id,
        info["session_api_key"].as_str().unwrap().to_owned(),
        info["exposed_urls"][0]["url"].as_str().unwrap().to_owned(),
    )
}

/// The stand-in's own address (what Switchboard reaches), from the stored record.
fn direct(app: &SandboxApp, id: &str) -> String {
    app.record(id).unwrap().agent_server_url.unwrap()
}

/// How a request authenticates.
enum Cred<'a> {
    None,
    Bearer(&'a str),
    AccessToken(&'a str),
    Session(&'a str),
    SessionQuery(&'a str),
}

async fn send(method: Method, url: &str, cred: &Cred<'_>, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = match cred {
        Cred::SessionQuery(k) => format!("{url}?session_api_key={k}&keep=1"),
        _ => url.to_owned(),
    };
    let mut r = client.request(method, &url);
    r = match cred {
        Cred::Bearer(k) => r.header("Authorization", format!("Bearer {k}")),
        Cred::AccessToken(k) => r.header("X-Access-Token", *k),
        Cred::Session(k) => r.header("X-Session-API-Key", *k),
        _ => r,
    };
    if let Some(b) = body {
        r = r.json(&b);
    }
    common::status_json(r.send().await.unwrap()).await
}

async fn who_gets_through(backend: Backend) {
    let app = app(backend).await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let (_, their_session, _) = running(&app, &app.member.key).await;
    assert_eq!(
        url,
        format!("{}/sandboxes/{id}/agent_server", app.base),
        "{backend}"
    );
    let conv = uuid::Uuid::new_v4().simple().to_string();
    let send_message = format!("{url}/api/conversations/{conv}/events");
    let message = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let unknown = format!(
        "{}/sandboxes/{}/agent_server/api/conversations/{conv}/events",
        app.base,
        uuid::Uuid::new_v4()
    );
    let garbage = format!("{}/sandboxes/not-a-sandbox/agent_server/api/x", app.base);
    let vscode = format!("{}/sandboxes/{id}/vscode/api/x", app.base);
    let cases: Vec<(&str, &str, Cred<'_>, u16)> = vec![
        ("no credentials", send_message.as_str(), Cred::None, 401),
        (
            "owner bearer",
            send_message.as_str(),
            Cred::Bearer(&app.owner.key),
            200,
        ),
        (
            "owner token",
            send_message.as_str(),
            Cred::AccessToken(&app.owner.key),
            200,
        ),
        (
            "session key",
            send_message.as_str(),
            Cred::Session(&session),
            200,
        ),
        (
            "session query",
            send_message.as_str(),
            Cred::SessionQuery(&session),
            200,
        ),
        (
            "admin",
            send_message.as_str(),
            Cred::Bearer(&app.admin.key),
            200,
        ),
        (
            "another member",
            send_message.as_str(),
            Cred::Bearer(&app.member.key),
            404,
        ),
        (
            "another org",
            send_message.as_str(),
            Cred::Bearer(&app.non_member.key),
            404,
        ),
        (
            "another sandbox's key",
            send_message.as_str(),
            Cred::Session(&their_session),
            404,
        ),
        (
            "unknown session key",
            send_message.as_str(),
            Cred::Session("sbs_nope"),
            401,
        ),
        (
            "expired key",
            send_message.as_str(),
            Cred::Bearer(&app.expired.key),
            401,
        ),
        (
            "revoked key",
            send_message.as_str(),
            Cred::Bearer(&app.revoked.key),
            401,
        ),
        (
            "unknown sandbox",
            unknown.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
        (
            "not a sandbox id",
            garbage.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
        (
            "a service not exposed",
            vscode.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
    ];
    let mut through = 0;
    for (what, url, cred, want) in &cases {
        let (status, body) = send(Method::POST, url, cred, Some(message.clone())).await;
        assert_eq!(status, *want, "{backend}: {what}: {body}");
        if *want == 200 {
            assert_eq!(body, json!({"success": true}), "{backend}: {what}");
            through += 1;
        } else {
            assert!(body["detail"].is_string(), "{backend}: {what}: {body}");
        }
    }
    // Only the allowed requests reached the sandbox.
    let (_, received) = send(
        Method::GET,
        &format!("{}/standin/received", direct(&app, &id)),
        &Cred::None,
        None,
    )
    .await;
    assert_eq!(
        received.as_array().unwrap().len(),
        through,
        "{backend}: {received}"
    );

    // Upstream, Switchboard presents the session key and nothing of the client's.
    let (status, echo) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::Bearer(&app.owner.key),
        Some(json!({"x": 1})),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    let headers = &echo["headers"];
    assert_eq!(headers["x-session-api-key"], session.as_str(), "{backend}");
    assert!(headers.get("authorization").is_none(), "{backend}: {echo}");
    assert_eq!(
        headers["x-forwarded-prefix"],
        format!("/sandboxes/{id}/agent_server")
    );
    let (_, echo) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::SessionQuery(&session),
        None,
    )
    .await;
    assert_eq!(echo["path"], "/api/standin/echo?keep=1", "{backend}");

    // The probes answer without a key, from the sandbox's status.
    let (status, alive) = send(Method::GET, &format!("{url}/alive"), &Cred::None, None).await;
    assert_eq!((status, alive), (200, json!({"status": "ok"})), "{backend}");
    let (status, _) = send(
        Method::GET,
        &format!("{url}/server_info"),
        &Cred::None,
        None,
    )
    .await;
    assert_eq!(status, 401, "{backend}");

    // A paused sandbox: 409 for everyone, probes included.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&app.owner.key),
            None,
        )
        .await;
    assert_eq!(status, 200);
    app.wait_status(&app.owner.key, &id, "PAUSED").await;
    for cred in [Cred::Bearer(&app.owner.key), Cred::Session(&session)] {
        let (status, body) = send(Method::POST, &send_message, &cred, Some(message.clone())).await;
        assert_eq!(status, 409, "{backend}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("PAUSED"),
            "{backend}: {body}"
        );
    }
    let (status, _) = send(Method::GET, &format!("{url}/alive"), &Cred::None, None).await;
    assert_eq!(status, 409, "{backend}");
    // Another member still learns nothing about it.
    let (status, _) = send(
        Method::POST,
        &send_message,
        &Cred::Bearer(&app.member.key),
        Some(message),
    )
    .await;
    assert_eq!(status, 404, "{backend}");
}

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

async fn http_streams_both_ways(backend: Backend) {
    let app = app(backend).await;
    let (_, session, url) = running(&app, &app.owner.key).await;
    let client = reqwest::Client::new();

    // A 100 MiB download, streamed: this process (the proxy runs in it) does not grow by it.
    let size: u64 = 100 << 20;
    let before = rss_kib();
    let mut peak = before;
    let res = client
        .get(format!("{url}/standin/blob/{size}"))
        .header("X-Session-API-Key", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "{backend}");
    assert_eq!(
        res.content_length(),
        Some(size),
        "{backend}: the length is kept"
    );
    let mut stream = res.bytes_stream();
    let mut got: u64 = 0;
    let mut chunks = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        assert!(chunk.iter().all(|b| *b == 0xAB));
        got += chunk.len() as u64;
        chunks += 1;
        if chunks.is_multiple_of(64) {
            peak = peak.max(rss_kib());
        }
    }
    assert_eq!(got, size, "{backend}");
    assert!(
        peak < before + 48 * 1024,
        "{backend}: memory grew from {before} KiB to {peak} KiB during a 100 MiB download"
    );

    // Uploads, streamed: with a length, and chunked (no length).
    let body: Vec<u8> = (0..(3 << 20)).map(|i| (i % 251) as u8).collect();
    let digest = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(&body))
    };
    let (status, echo) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(body.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(
        (&echo["body_length"], &echo["sha256"]),
        (&json!(body.len()), &json!(digest)),
        "{backend}"
    );
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(100_000).map(|c| Ok(c.to_vec())).collect();
    let (status, echo) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                chunks,
            )))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(echo["sha256"], json!(digest), "{backend}");

    // Over the body limit: 413 before the sandbox is called.
    let big = vec![b'x'; 5 << 20];
    let (status, body) = common::status_json(
        client
            .post(format!("{url}/api/standin/echo"))
            .header("X-Session-API-Key", &session)
            .body(big)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 413, "{backend}: {body}");

    // A sandbox that stops answering: 504 after the read timeout, and the proxy goes on.
    let began = Instant::now();
    let res = client
        .get(format!("{url}/standin/hang"))
        .header("X-Session-API-Key", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 504, "{backend}");
    assert!(began.elapsed() < Duration::from_secs(15), "{backend}");
    let (status, _) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::Session(&session),
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens the agent server's event socket of `conv` through the proxy (`url`: the URL shown),
/// with `session` in the header, or none.
async fn open(url: &str, conv: &str, session: Option<&str>) -> Result<Socket, WsError> {
    let ws = url.replacen("http://", "ws://", 1);
    let mut req = format!("{ws}/sockets/events/{conv}")
        .into_client_request()
        .unwrap();
    if let Some(k) = session {
        req.headers_mut()
            .insert("X-Session-API-Key", k.parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.map(|(s, _)| s)
}

/// The next data or close message within `within` (pings and pongs skipped unless asked).
async fn next(socket: &mut Socket, within: Duration) -> Option<Message> {
    tokio::time::timeout(within, socket.next())
        .await
        .ok()
        .flatten()
        .and_then(Result::ok)
}

async fn stream_to(url: &str, session: &str, conv: &str, deltas: Vec<String>) -> Value {
    let (status, body) = send(
        Method::POST,
        &format!("{url}/standin/stream/{conv}"),
        &Cred::Session(session),
        Some(json!({"deltas": deltas})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn websockets_relay(backend: Backend) {
    let app = app(backend).await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let direct = direct(&app, &id);
    let conv = uuid::Uuid::new_v4().simple().to_string();

    // Refused before the upgrade: no credentials in the headers is first-frame auth (below);
    // a wrong key, another org's key: HTTP answers.
    match open(&url, &conv, Some("sbs_nope")).await {
        Err(WsError::Http(r)) => assert_eq!(r.status().as_u16(), 401, "{backend}"),
        other => panic!("{backend}: {:?}", other.map(|_| ())),
    }

    // 200 clients on one sandbox: each gets every frame.
    let mut clients = Vec::new();
    for _ in 0..200 {
        clients.push(open(&url, &conv, Some(&session)).await.unwrap());
    }
    let sent = stream_to(&url, &session, &conv, vec!["Hel".into(), "lo".into()]).await;
    assert_eq!(sent["sockets"], 200, "{backend}");
    for c in &mut clients {
        for want in ["StreamingDeltaEvent", "StreamingDeltaEvent", "MessageEvent"] {
            let msg = next(c, Duration::from_secs(20)).await.expect("a frame");
            let v: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
            assert_eq!(v["kind"], want, "{backend}: {v}");
        }
    }
    for mut c in clients.drain(..) {
        let _ = c.close(None).await;
    }

    // Heartbeats pass through; so do close codes, both ways.
    let mut c = open(&url, &conv, Some(&session)).await.unwrap();
    c.send(Message::Ping(b"hb".to_vec().into())).await.unwrap();
    let pong = loop {
        match next(&mut c, Duration::from_secs(10)).await {
            Some(Message::Pong(p)) => break p,
            Some(_) => {}
            None => panic!("{backend}: no pong"),
        }
    };
    assert_eq!(&pong[..], b"hb", "{backend}");
    c.send(Message::Close(Some(CloseFrame {
        code: CloseCode::from(4321),
        reason: "bye".into(),
    })))
    .await
    .unwrap();
    match next(&mut c, Duration::from_secs(10)).await {
        Some(Message::Close(Some(f))) => assert_eq!(u16::from(f.code), 4321, "{backend}"),
        other => panic!("{backend}: {other:?}"),
    }
    let mut c = open(&url, &conv, Some(&session)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, body) = send(
        Method::POST,
        &format!("{url}/standin/close/{conv}"),
        &Cred::Session(&session),
        Some(json!({"code": 4455, "reason": "done"})),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {body}");
    match next(&mut c, Duration::from_secs(10)).await {
        Some(Message::Close(Some(f))) => {
            assert_eq!(
                (u16::from(f.code), f.reason.as_str()),
                (4455, "done"),
                "{backend}"
            )
        }
        other => panic!("{backend}: {other:?}"),
    }

    // First-frame auth: the session key, or an API key; the auth frame never goes upstream.
    for key in [session.as_str(), app.owner.key.as_str()] {
        let mut c = open(&url, &conv, None).await.unwrap();
        let auth = json!({"type": "auth", "session_api_key": key}).to_string();
        c.send(Message::text(auth)).await.unwrap();
        c.send(Message::text("echo:hi")).await.unwrap();
        let msg = next(&mut c, Duration::from_secs(10))
            .await
            .expect("the echo");
        assert_eq!(msg.to_text().unwrap(), "echo:hi", "{backend}");
    }
    for frame in [
        Some(json!({"type": "auth", "session_api_key": "sbs_nope"}).to_string()),
        Some(json!({"type": "auth", "session_api_key": app.member.key}).to_string()),
        Some("echo:not auth".to_owned()),
        None,
    ] {
        let mut c = open(&url, &conv, None).await.unwrap();
        if let Some(f) = &frame {
            c.send(Message::text(f.clone())).await.unwrap();
        }
        match next(&mut c, Duration::from_secs(10)).await {
            Some(Message::Close(Some(f))) => {
                let code = u16::from(f.code);
                assert!(code == 4001 || code == 4004, "{backend}: {frame:?}: {code}");
            }
            other => panic!("{backend}: {frame:?}: {other:?}"),
        }
    }

    // A client that stops reading: the sandbox and the other clients go on; it is closed.
    let mut fast = Vec::new();
    for _ in 0..3 {
        fast.push(open(&url, &conv, Some(&session)).await.unwrap());
    }
    let slow = open(&url, &conv, Some(&session)).await.unwrap();
    // 1,000 frames of 15 kB, then the message joining them (15 MB, under the proxy's 16 MiB):
    // far more than the socket buffers, the session's channel and the queue of 64 hold.
    let deltas: Vec<String> = (0..1000)
        .map(|i| format!("{i:05}{}", "x".repeat(15_000)))
        .collect();
    let readers: Vec<_> = fast
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                let mut n = 0;
                while n < 1001 {
                    match next(&mut c, Duration::from_secs(60)).await {
                        Some(Message::Text(_)) => n += 1,
                        Some(_) => {}
                        None => break,
                    }
                }
                n
            })
        })
        .collect();
    let began = Instant::now();
    // Sent by the sandbox itself (the request is over the proxy's body limit).
    let sent = tokio::time::timeout(
        Duration::from_secs(120),
        stream_to(&direct, &session, &conv, deltas),
    )
    .await
    .expect("the sandbox was held up by a client that does not read");
    // (Sockets of earlier clients may still be closing at the stand-in.)
    assert!(sent["sockets"].as_u64() >= Some(4), "{backend}: {sent}");
    for r in readers {
        assert_eq!(
            r.await.unwrap(),
            1001,
            "{backend}: a reading client missed frames"
        );
    }
    eprintln!(
        "{backend}: 1001 frames (30 MB) to 4 clients in {:?}",
        began.elapsed()
    );
    // The slow client, reading at last, finds its socket closed before the end.
    let mut slow = slow;
    let mut n = 0;
    let mut closed_with = None;
    while let Some(msg) = next(&mut slow, Duration::from_secs(10)).await {
        match msg {
            Message::Text(_) => n += 1,
            Message::Close(f) => {
                closed_with = f.map(|f| u16::from(f.code));
                break;
            }
            _ => {}
        }
    }
    assert!(n < 1001, "{backend}: the slow client got everything ({n})");
    assert!(
        closed_with.is_none_or(|c| c == 1008),
        "{backend}: closed with {closed_with:?}"
    );
}

async fn urls_point_at_the_proxy(backend: Backend) {
    let app = app(backend).await;
    let key = app.owner.key.clone();
    let (status, task) = app
        .call(
            Method::POST,
            "/api/v1/app-conversations",
            Some(&key),
            Some(
                json!({"llm_model": "openai/fake-model", "initial_message": {"role": "user",
                "content": [{"type": "text", "text": "hi"}]}}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {task}");
    let id = task["id"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{backend}: {id}"
    );
    let dashed = uuid::Uuid::parse_str(&id).unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        // Both forms of the id are accepted.
        let (_, tasks) = app
            .call(
                Method::GET,
                &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
                Some(&key),
                None,
            )
            .await;
        let (_, again) = app
            .call(
                Method::GET,
                &format!("/api/v1/app-conversations/start-tasks?ids={dashed}"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(tasks[0]["id"], again[0]["id"], "{backend}");
        match tasks[0]["status"].as_str() {
            Some("READY") => break tasks[0].clone(),
            Some("ERROR") => panic!("{backend}: {tasks}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "{backend}: {tasks}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["id"], id.as_str(), "{backend}");
    let conv = done["app_conversation_id"].as_str().unwrap().to_owned();
    assert!(conv.len() == 32 && !conv.contains('-'), "{backend}: {done}");
    let sandbox = done["sandbox_id"].as_str().unwrap();
    let agent = format!("{}/sandboxes/{sandbox}/agent_server", app.base);
    assert_eq!(
        done["agent_server_url"],
        agent.as_str(),
        "{backend}: {done}"
    );
    let (_, got) = app
        .call(
            Method::GET,
            &format!("/api/v1/app-conversations?ids={conv}"),
            Some(&key),
            None,
        )
        .await;
    let c = &got[0];
    assert_eq!(c["id"], conv.as_str(), "{backend}: {got}");
    assert_eq!(
        c["conversation_url"],
        format!("{agent}/api/conversations/{conv}"),
        "{backend}: {c}"
    );
    // The URL answers, through Switchboard, for the session key shown beside it.
    let session = c["session_api_key"].as_str().unwrap();
    let (status, info) = send(
        Method::GET,
        c["conversation_url"].as_str().unwrap(),
        &Cred::Session(session),
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}: {info}");
    assert_eq!(
        info["id"].as_str().map(|s| s.replace('-', "")),
        Some(conv.clone()),
        "{backend}: {info}"
    );
    // The stored record keeps the sandbox's own URL.
    let record = app.record(sandbox).unwrap();
    assert!(
        !record.agent_server_url.unwrap().contains("/sandboxes/"),
        "{backend}"
    );
}

/// `--sandbox-host-pattern`: the URL shown is the sandbox's own host under the public URL's
/// scheme and port, and a request with that `Host` reaches the service with its whole path,
/// under the same rules as the path form.
async fn routes_by_host(backend: Backend) {
    use switchboard_api::sandbox_proxy::hosts::HostPattern;
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(ProxyConfig {
                host_pattern: Some(HostPattern::parse("{id}-{service}.sb.test").unwrap()),
                ..proxy_config()
            }),
            ..SandboxOptions::default()
        },
    )
    .await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let port = app.base.rsplit(':').next().unwrap().to_owned();
    let host = format!("{id}-agent-server.sb.test:{port}");
    assert_eq!(url, format!("http://{host}"), "{backend}");
    let client = reqwest::Client::new();
    let call = |key: Option<&str>, path: &str| {
        let mut r = client
            .post(format!("{}{path}", app.base))
            .header("Host", host.clone())
            .json(&json!({}));
        if let Some(k) = key {
            r = r.header("X-Session-API-Key", k.to_owned());
        }
        r.send()
    };
    let (status, echo) =
        common::status_json(call(Some(&session), "/api/standin/echo").await.unwrap()).await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(echo["path"], "/api/standin/echo", "{backend}");
    let (status, _) = common::status_json(call(None, "/api/standin/echo").await.unwrap()).await;
    assert_eq!(status, 401, "{backend}");
    // The API's own routes on its own host are untouched.
    let (status, _) =
        common::status_json(app.get("/api/v1/users/me", Some(&app.owner.key)).await).await;
    assert_eq!(status, 200, "{backend}");
}
