//! Heartbeats: a client that answers pings, and one that answers nothing.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;

use crate::common::spawn_app;
use crate::live_delivery::client::{connect, conversation, ingest, next_json};

/// A websocket client that answers nothing (no pong, no close): the upgrade written by hand
/// on a TCP stream, then the server's frames read as bytes (unmasked, RFC 6455 §5.2).
pub struct RawSocket {
    tcp: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl RawSocket {
    async fn open(base: &str, path: &str, key: &str) -> RawSocket {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = base.trim_start_matches("http://");
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             X-Access-Token: {key}\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut chunk))
                .await
                .expect("the upgrade's answer within 10 s")
                .unwrap();
            assert!(n > 0, "closed during the upgrade");
            buf.extend_from_slice(&chunk[..n]);
        };
        assert!(
            buf.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&buf)
        );
        buf.drain(..end);
        RawSocket { tcp, buf }
    }

    /// The frames (opcode, payload) the server sends up to and including its close frame.
    async fn frames_until_close(&mut self) -> Vec<(u8, Vec<u8>)> {
        use tokio::io::AsyncReadExt;
        let mut frames = Vec::new();
        loop {
            while let Some((op, payload, used)) = parse_frame(&self.buf) {
                self.buf.drain(..used);
                frames.push((op, payload));
                if op == 0x8 {
                    return frames;
                }
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(10), self.tcp.read(&mut chunk))
                .await
                .expect("a close within 10 s")
                .unwrap();
            assert!(n > 0, "closed without a close frame: {frames:?}");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// One unmasked frame at the start of `b`: (opcode, payload, bytes used), or `None` if `b`
/// does not hold a whole one yet.
pub fn parse_frame(b: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    let (op, len7) = (*b.first()? & 0x0f, *b.get(1)? & 0x7f);
    let (len, at) = match len7 {
        126 => (usize::from(u16::from_be_bytes([*b.get(2)?, *b.get(3)?])), 4),
        127 => (
            usize::try_from(u64::from_be_bytes(b.get(2..10)?.try_into().ok()?)).ok()?,
            10,
        ),
        n => (usize::from(n), 2),
    };
    Some((op, b.get(at..at + len)?.to_vec(), at + len))
}

/// Heartbeats (API.md, Live delivery): every socket is pinged each interval; one that answers
/// stays open and keeps receiving events, one that leaves two pings unanswered is closed with
/// 1011 at the next heartbeat.
pub async fn heartbeats(backend: Backend) {
    let app = spawn_app(backend).await;
    let every = Duration::from_millis(250);
    app.live.set_ping_interval(every);
    let (conv, session) = conversation(&app, 1).await;
    let path = format!("/sockets/session/{conv}");
    let mut answering = connect(&app.base, &path, &app.owner.key).await;
    let mut silent = RawSocket::open(&app.base, &path, &app.owner.key).await;
    assert_eq!(next_json(&mut answering).await["type"], "sync");
    // The answering client reads (tungstenite answers each ping) for eight intervals; the
    // silent one never answers anything.
    let mut pings = 0;
    let until = tokio::time::Instant::now() + every * 8;
    while let Ok(m) = tokio::time::timeout_at(until, answering.next()).await {
        match m {
            Some(Ok(Message::Ping(_))) => pings += 1,
            Some(Ok(Message::Close(c))) => panic!("{backend}: answering socket closed: {c:?}"),
            other => panic!("{backend}: unexpected {other:?}"),
        }
    }
    assert!(
        (4..=9).contains(&pings),
        "{backend}: {pings} pings in eight intervals"
    );
    let frames = silent.frames_until_close().await;
    let pings = frames.iter().filter(|(op, _)| *op == 0x9).count();
    let close = frames.last().expect("frames");
    assert_eq!(
        (pings, close.0, &close.1[..2]),
        (2, 0x8, &1011u16.to_be_bytes()[..]),
        "{backend}: closed after two unanswered pings: {frames:?}"
    );
    // The answering socket still delivers.
    ingest(&app, &session, &conv, 1, 2).await;
    let v = next_json(&mut answering).await;
    assert_eq!(
        (&v["type"], &v["seq"]),
        (&json!("durable"), &json!(1)),
        "{backend}: {v}"
    );
    app.stop().await;
}
