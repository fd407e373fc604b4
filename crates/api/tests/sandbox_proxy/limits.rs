//! The proxy's sockets to sandboxes counted in their budget (`max_upstream_sockets`, the share
//! of the open-files limit `serve` gives them): past it a clear 503 and the API goes on; and a
//! request body that trickles in (a byte every few seconds) cut with 408 by the read timeout
//! and the minimum rate, its sandbox connection given back.

use std::io::{Read, Write};

use super::websockets::open;
use super::*;

/// The proxy's sockets in these tests.
const SOCKETS: usize = 2;

pub(crate) async fn sockets_and_slow_bodies(backend: Backend) {
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(ProxyConfig {
                max_upstream_sockets: SOCKETS,
                ..proxy_config()
            }),
            ..SandboxOptions::default()
        },
    )
    .await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let conv = uuid::Uuid::new_v4().simple().to_string();
    let echo = format!("{url}/api/standin/echo");

    // Websockets hold every socket: the next socket is refused with a clear 503.
    let mut held = Vec::new();
    for _ in 0..SOCKETS {
        held.push(open(&url, &conv, Some(&session)).await.unwrap());
    }
    match open(&url, &conv, Some(&session)).await {
        Err(WsError::Http(r)) => {
            assert_eq!(r.status().as_u16(), 503, "{backend}");
            assert_eq!(
                r.headers().get("retry-after").map(|v| v.to_str().unwrap()),
                Some("1"),
                "{backend}"
            );
        }
        other => panic!("{backend}: {:?}", other.map(|_| ())),
    }
    let res = reqwest::Client::new()
        .post(&echo)
        .header("X-Session-API-Key", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 503, "{backend}");
    assert_eq!(res.headers()["retry-after"], "1", "{backend}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"detail": "Too many connections to sandboxes, retry later"}),
        "{backend}"
    );
    // The API is served meanwhile, and the agent server's probes answered by Switchboard.
    let (status, _) = app.call(Method::GET, "/health", None, None).await;
    assert_eq!(status, 200, "{backend}");
    let info = app.info(&app.owner.key, &id).await;
    assert_eq!(info["status"], "RUNNING", "{backend}");
    let (status, _) = send(Method::GET, &format!("{url}/alive"), &Cred::None, None).await;
    assert_eq!(status, 200, "{backend}");

    // Closed, their sockets come back.
    for mut s in held.drain(..) {
        s.close(None).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = send(Method::POST, &echo, &Cred::Session(&session), None).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{backend}");
        assert!(
            Instant::now() < deadline,
            "{backend}: sockets not given back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The pooled connection of that request is closed once idle (half the read timeout).
    tokio::time::sleep(Duration::from_secs(3)).await;

    // A body sent a byte every 3 s: 408 and the connection closed, within the grace of the
    // minimum rate and a check or two (not the 30 s read timeout).
    let session_for_slow = session.clone();
    let echo_for_slow = echo.clone();
    let slow = tokio::task::spawn_blocking(move || {
        slow_post(&echo_for_slow, &session_for_slow, Duration::from_secs(3))
    });
    let (status, took, closed) = slow.await.unwrap();
    assert_eq!(status, 408, "{backend}");
    assert!(closed, "{backend}: the connection is closed after a 408");
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(15),
        "{backend}: answered after {took:?}"
    );
    // Its sandbox connection was given back: every socket can be taken again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..SOCKETS {
        held.push(open(&url, &conv, Some(&session)).await.unwrap());
    }
    drop(held);
}

/// `POST url` with a declared 100-byte body sent one byte every `every` on a raw socket:
/// the status answered, how long it took, and whether the server closed the connection.
fn slow_post(url: &str, session: &str, every: Duration) -> (u16, Duration, bool) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nX-Session-API-Key: {session}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let began = Instant::now();
    let mut answer = Vec::new();
    let mut next_byte = began;
    let mut buf = [0u8; 4096];
    let closed = loop {
        assert!(
            began.elapsed() < Duration::from_secs(40),
            "no answer: {}",
            String::from_utf8_lossy(&answer)
        );
        if Instant::now() >= next_byte {
            // Writing may fail once the server has answered and closed.
            let _ = s.write_all(b"x");
            next_byte += every;
        }
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break true,
        }
    };
    let took = began.elapsed();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text}"));
    (status, took, closed)
}

/// Proxied websockets per member (issue 33, `--max-sockets-per-member`): a member's sockets,
/// by their API keys or by their sandbox's session key, count together; one more is a clear
/// 503 while another member still gets one; a socket closed gives its member room again.
pub(crate) async fn proxied_sockets_per_member(backend: Backend) {
    const PER_MEMBER: usize = 2;
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(ProxyConfig {
                max_sockets_per_member: PER_MEMBER,
                ..proxy_config()
            }),
            ..SandboxOptions::default()
        },
    )
    .await;
    let (_, session, url) = running(&app, &app.owner.key).await;
    let conv = uuid::Uuid::new_v4().simple().to_string();
    let mut held = vec![
        open(&url, &conv, Some(&session)).await.unwrap(),
        by_key(&url, &conv, &app.owner.key).await.unwrap().0,
    ];
    for refused in [
        open(&url, &conv, Some(&session)).await.map(|_| ()),
        by_key(&url, &conv, &app.bound_owner.key).await.map(|_| ()),
    ] {
        match refused {
            Err(WsError::Http(r)) => {
                assert_eq!(r.status().as_u16(), 503, "{backend}");
                let body = String::from_utf8_lossy(r.body().as_deref().unwrap_or_default());
                assert!(body.contains("for this member"), "{backend}: {body}");
            }
            other => panic!("{backend}: one over the member's limit: {other:?}"),
        }
    }
    // Another member who sees the sandbox (the admin) is not refused.
    let admin = by_key(&url, &conv, &app.admin.key).await;
    assert!(
        admin.is_ok(),
        "{backend}: another member: {:?}",
        admin.err()
    );
    // Closed, a socket gives its member room again.
    held.pop().unwrap().close(None).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while open(&url, &conv, Some(&session)).await.is_err() {
        assert!(Instant::now() < deadline, "{backend}: no room again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Proxied websockets per organization (issue 33, `--max-sockets-per-org`): the sockets of
/// the members of the sandbox's organization count together, whoever opens them; one more is
/// a clear 503 naming the organization, while another organization's member is not refused.
pub(crate) async fn proxied_sockets_per_org(backend: Backend) {
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(ProxyConfig {
                max_sockets_per_member: 2,
                max_sockets_per_org: Some(3),
                ..proxy_config()
            }),
            ..SandboxOptions::default()
        },
    )
    .await;
    let (_, session, url) = running(&app, &app.owner.key).await;
    let (_, _, elsewhere) = running(&app, &app.non_member.key).await;
    let conv = uuid::Uuid::new_v4().simple().to_string();
    // The owner (two: their limit) and the admin (one) fill the organization's three.
    let _held = [
        open(&url, &conv, Some(&session)).await.unwrap(),
        by_key(&url, &conv, &app.owner.key).await.unwrap().0,
        by_key(&url, &conv, &app.admin.key).await.unwrap().0,
    ];
    match by_key(&url, &conv, &app.admin.key).await {
        Err(WsError::Http(r)) => {
            assert_eq!(r.status().as_u16(), 503, "{backend}");
            let body = String::from_utf8_lossy(r.body().as_deref().unwrap_or_default());
            assert!(body.contains("for this organization"), "{backend}: {body}");
        }
        other => panic!("{backend}: one over the organization's limit: {other:?}"),
    }
    // Another organization's member, at their own sandbox, is not refused.
    let other = by_key(&elsewhere, &conv, &app.non_member.key).await;
    assert!(
        other.is_ok(),
        "{backend}: another organization: {:?}",
        other.err()
    );
}

/// Opens the events socket of `conv` through the proxy at `url` with API key `key`.
async fn by_key(
    url: &str,
    conv: &str,
    key: &str,
) -> Result<
    (
        Ws,
        tokio_tungstenite::tungstenite::handshake::client::Response,
    ),
    WsError,
> {
    let ws = url.replacen("http://", "ws://", 1);
    let mut req = format!("{ws}/sockets/events/{conv}")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("X-Access-Token", key.parse().unwrap());
    tokio_tungstenite::connect_async(req).await
}

/// A websocket to a sandbox through the proxy.
type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
