//! Websockets relayed: many clients of one sandbox, a client that stops reading, heartbeats,
//! close codes and first-frame auth.

use super::*;

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens the agent server's event socket of `conv` through the proxy (`url`: the URL shown),
/// with `session` in the header, or none.
pub(crate) async fn open(url: &str, conv: &str, session: Option<&str>) -> Result<Socket, WsError> {
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

pub(crate) async fn websockets_relay(backend: Backend) {
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
    // The first reader looks away for 0.5 s (under the proxy's 2 s stall) after 100 frames,
    // as a client on a busy host does: it falls a whole queue behind, and keeps its socket.
    let readers: Vec<_> = fast
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            tokio::spawn(async move {
                let mut n = 0;
                while n < 1001 {
                    if i == 0 && n == 100 {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
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
