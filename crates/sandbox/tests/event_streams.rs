//! The stream path's client ([`WsEventStreams`], issue 19) against a websocket server that
//! speaks as the agent server's `/sockets/events/{id}` does (reference agent-server-webhooks
//! §1, "WebSocket"): the subscriber's own `full_state` snapshot first, then events; the real
//! agent server is exercised by `bins/switchboard/tests/event_catch_up/streams.rs`.

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::sandboxes::event_streams::{AgentEventStreams, StreamTarget};
use switchboard_domain::{ConversationId, SandboxId};
use switchboard_sandbox::WsEventStreams;
use tungstenite::Message;
use tungstenite::handshake::server::{Request, Response};

fn target(port: u16, conversation: ConversationId) -> StreamTarget {
    StreamTarget {
        conversation,
        sandbox: SandboxId(uuid::Uuid::new_v4()),
        base_url: format!("http://127.0.0.1:{port}"),
        key: SessionKey::new("sbs_test"),
        resend_from: None,
    }
}

fn event(id: &str, timestamp: &str) -> String {
    format!(r#"{{"id":"{id}","timestamp":"{timestamp}","source":"user","kind":"PauseEvent"}}"#)
}

/// Receives until `n` frames arrived (at most 10 s).
fn frames(streams: &WsEventStreams, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        out.extend(
            streams
                .receive(Duration::from_millis(200))
                .frames
                .into_iter()
                .map(|f| f.text),
        );
    }
    out
}

#[test]
// tungstenite's handshake callback type fixes its error variant (an HTTP response).
#[allow(clippy::result_large_err)]
fn events_arrive_without_the_snapshot_and_a_lost_socket_resends_from_the_newest() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (uris, seen) = mpsc::channel::<(String, Option<String>)>();
    let server = std::thread::spawn(move || {
        // First connection: the snapshot, two events, then the server closes the socket.
        // Second: one more event, and it stays open until the client goes.
        for round in 0..2 {
            let (tcp, _) = listener.accept().unwrap();
            let uris = uris.clone();
            let mut ws = tungstenite::accept_hdr(tcp, |req: &Request, res: Response| {
                let key = req
                    .headers()
                    .get("X-Session-API-Key")
                    .map(|v| v.to_str().unwrap().to_owned());
                uris.send((req.uri().to_string(), key)).unwrap();
                Ok(res)
            })
            .unwrap();
            let snapshot = r#"{"id":"s","timestamp":"2026-11-21T09:05:44.9","source":"environment","key":"full_state","value":{},"kind":"ConversationStateUpdateEvent"}"#;
            ws.send(Message::text(snapshot)).unwrap();
            if round == 0 {
                ws.send(Message::text(event("e1", "2026-11-21T09:04:47.817809")))
                    .unwrap();
                ws.send(Message::text(event("e2", "2026-11-21T09:04:49.5")))
                    .unwrap();
                ws.close(None).unwrap();
                while ws.read().is_ok() {}
            } else {
                ws.send(Message::text(event("e3", "2026-11-21T09:04:50")))
                    .unwrap();
                while ws.read().is_ok() {}
            }
        }
    });
    let conversation = ConversationId(uuid::Uuid::new_v4());
    let streams = WsEventStreams::new().unwrap();
    streams.keep(vec![target(port, conversation)]);
    assert_eq!(streams.streamed(), 1);

    let got = frames(&streams, 3);
    let ids: Vec<String> = got
        .iter()
        .map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap()["id"].to_string())
        .collect();
    assert_eq!(ids, [r#""e1""#, r#""e2""#, r#""e3""#], "{got:?}");

    let (first, key) = seen.recv().unwrap();
    assert_eq!(
        first,
        format!(
            "/sockets/events/{}?resend_mode=all",
            conversation.0.simple()
        )
    );
    assert_eq!(key.as_deref(), Some("sbs_test"));
    // The second connection resends from a second before the newest event received.
    let (second, _) = seen.recv().unwrap();
    assert!(
        second.ends_with("?resend_mode=since&after_timestamp=2026-11-21T09:04:48.500000"),
        "{second}"
    );

    streams.keep(Vec::new());
    assert_eq!(streams.streamed(), 0);
    // The client closed its socket: the server's read ends.
    server.join().unwrap();
}

#[test]
fn a_receive_waits_its_time_and_an_interrupt_cuts_it_short() {
    // Nothing listens there: the stream keeps failing to connect, quietly.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let streams = WsEventStreams::new().unwrap();
    streams.keep(vec![target(port, ConversationId(uuid::Uuid::new_v4()))]);
    let began = Instant::now();
    let r = streams.receive(Duration::from_millis(300));
    assert!(r.frames.is_empty() && !r.interrupted);
    assert!(
        began.elapsed() >= Duration::from_millis(250),
        "{:?}",
        began.elapsed()
    );

    streams.interrupt();
    let began = Instant::now();
    let r = streams.receive(Duration::from_secs(10));
    assert!(r.interrupted);
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
}
