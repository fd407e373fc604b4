//! The websocket client of these tests (a key in each form, frames as JSON, close codes) and
//! the events they send through the webhook.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use switchboard_domain::ConversationId;
use switchboard_domain::ports::EventStore;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::TestApp;

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How a test presents its key.
pub enum Auth<'a> {
    Header(&'a str),
    Bearer(&'a str),
    Query(&'a str),
    None,
}

pub fn ws_url(base: &str, path: &str) -> String {
    format!("{}{}", base.replacen("http://", "ws://", 1), path)
}

pub async fn try_connect(base: &str, path: &str, auth: Auth<'_>) -> Result<Ws, String> {
    let path = match auth {
        Auth::Query(k) => {
            let sep = if path.contains('?') { '&' } else { '?' };
            format!("{path}{sep}session_api_key={k}")
        }
        _ => path.to_owned(),
    };
    let mut req = ws_url(base, &path).into_client_request().unwrap();
    match auth {
        Auth::Header(k) => {
            req.headers_mut()
                .insert("X-Access-Token", k.parse().unwrap());
        }
        Auth::Bearer(k) => {
            req.headers_mut()
                .insert("Authorization", format!("Bearer {k}").parse().unwrap());
        }
        _ => {}
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            Err(format!("http {}", r.status().as_u16()))
        }
        Err(e) => Err(e.to_string()),
    }
}

pub async fn connect(base: &str, path: &str, key: &str) -> Ws {
    try_connect(base, path, Auth::Header(key)).await.unwrap()
}

/// The next text frame as JSON (pings answered by the client library); panics on close or
/// after 20 s.
pub async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a frame within 20 s")
            .expect("socket open")
            .expect("frame");
        match m {
            Message::Text(t) => return serde_json::from_str(&t).unwrap(),
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => continue,
        }
    }
}

/// The close code the server sends next (text frames before it are skipped).
pub async fn close_code(ws: &mut Ws) -> u16 {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a close within 20 s");
        match m {
            Some(Ok(Message::Close(Some(c)))) => return u16::from(c.code),
            Some(Ok(Message::Close(None))) | None => return 1005,
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("error before close: {e}"),
        }
    }
}

/// No text frame arrives within `ms`.
pub async fn quiet(ws: &mut Ws, ms: u64) {
    if let Ok(Some(Ok(Message::Text(t)))) =
        tokio::time::timeout(Duration::from_millis(ms), ws.next()).await
    {
        panic!("unexpected frame {t}");
    }
}

pub fn event(i: usize) -> String {
    format!(
        r#"{{"id":"e{i}","timestamp":"2026-11-21T10:{:02}:{:02}.{:06}","source":"user","kind":"PauseEvent"}}"#,
        (i / 60) % 60,
        i % 60,
        i % 1_000_000
    )
}

pub fn events(from: usize, to: usize) -> Vec<String> {
    (from..to).map(event).collect()
}

pub async fn ingest(app: &TestApp, session: &str, conv: &str, from: usize, to: usize) {
    let evs = events(from, to);
    let refs: Vec<&str> = evs.iter().map(String::as_str).collect();
    app.ingest(session, conv, &refs).await;
}

/// A conversation of the owner (org A) with `n` events, and the sandbox's session key.
pub async fn conversation(app: &TestApp, n: usize) -> (String, String) {
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    ingest(app, &session, &conv, 0, n.max(1)).await;
    (conv, session)
}

pub fn is_full_state(v: &Value) {
    assert_eq!(v["kind"], "ConversationStateUpdateEvent", "{v}");
    assert_eq!(v["key"], "full_state", "{v}");
}

/// The store's order of a conversation: ids by position.
pub async fn store_order(app: &TestApp, conv: &str) -> Vec<String> {
    let store = app.store.clone();
    let id = ConversationId(uuid::Uuid::parse_str(conv).unwrap());
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let mut after = -1;
        loop {
            let page = store.events_after(id, after, None, 1000).unwrap();
            let Some(l) = page.last() else { break };
            after = l.position;
            for e in page {
                assert_eq!(e.position as usize, out.len());
                let v: Value = serde_json::from_str(&e.payload).unwrap();
                out.push(v["id"].as_str().unwrap().to_owned());
            }
        }
        out
    })
    .await
    .unwrap()
}
