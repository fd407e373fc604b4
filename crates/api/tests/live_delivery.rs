//! Live delivery over real websockets against the real server, on both backends (API.md, Live
//! delivery): authentication in its three forms and every close code; `resend_mode` all and
//! since (an offset timestamp); `after_seq` resume with exactly the missing events; writers
//! and subscribers at random, every stream equal to the store's order; a subscriber that reads
//! nothing while 10,000 events arrive; two replicas on one PostgreSQL; the LISTEN connection
//! killed.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestApp, spawn_app};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use switchboard_domain::ConversationId;
use switchboard_domain::ports::EventStore;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How a test presents its key.
enum Auth<'a> {
    Header(&'a str),
    Bearer(&'a str),
    Query(&'a str),
    None,
}

fn ws_url(base: &str, path: &str) -> String {
    format!("{}{}", base.replacen("http://", "ws://", 1), path)
}

async fn try_connect(base: &str, path: &str, auth: Auth<'_>) -> Result<Ws, String> {
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

async fn connect(base: &str, path: &str, key: &str) -> Ws {
    try_connect(base, path, Auth::Header(key)).await.unwrap()
}

/// The next text frame as JSON (pings answered by the client library); panics on close or
/// after 20 s.
async fn next_json(ws: &mut Ws) -> Value {
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
async fn close_code(ws: &mut Ws) -> u16 {
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
async fn quiet(ws: &mut Ws, ms: u64) {
    if let Ok(Some(Ok(Message::Text(t)))) =
        tokio::time::timeout(Duration::from_millis(ms), ws.next()).await
    {
        panic!("unexpected frame {t}");
    }
}

fn event(i: usize) -> String {
    format!(
        r#"{{"id":"e{i}","timestamp":"2026-11-21T10:{:02}:{:02}.{:06}","source":"user","kind":"PauseEvent"}}"#,
        (i / 60) % 60,
        i % 60,
        i % 1_000_000
    )
}

fn events(from: usize, to: usize) -> Vec<String> {
    (from..to).map(event).collect()
}

async fn ingest(app: &TestApp, session: &str, conv: &str, from: usize, to: usize) {
    let evs = events(from, to);
    let refs: Vec<&str> = evs.iter().map(String::as_str).collect();
    app.ingest(session, conv, &refs).await;
}

/// A conversation of the owner (org A) with `n` events, and the sandbox's session key.
async fn conversation(app: &TestApp, n: usize) -> (String, String) {
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    ingest(app, &session, &conv, 0, n.max(1)).await;
    (conv, session)
}

fn is_full_state(v: &Value) {
    assert_eq!(v["kind"], "ConversationStateUpdateEvent", "{v}");
    assert_eq!(v["key"], "full_state", "{v}");
}

async fn auth_and_close_codes(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, _) = conversation(&app, 1).await;
    let path = format!("/sockets/events/{conv}");
    let key = app.owner.key.clone();
    for auth in [Auth::Header(&key), Auth::Bearer(&key), Auth::Query(&key)] {
        let mut ws = try_connect(&app.base, &path, auth).await.unwrap();
        is_full_state(&next_json(&mut ws).await);
    }
    // The first frame.
    let mut ws = try_connect(&app.base, &path, Auth::None).await.unwrap();
    ws.send(Message::text(
        serde_json::json!({"type": "auth", "session_api_key": key}).to_string(),
    ))
    .await
    .unwrap();
    is_full_state(&next_json(&mut ws).await);
    // An admin of the org sees it too (view_org_conversations).
    let mut ws = connect(&app.base, &path, &app.admin.key).await;
    is_full_state(&next_json(&mut ws).await);

    // 4001: a wrong key in each form, and a first frame that is not auth.
    for auth in [
        Auth::Header("nope"),
        Auth::Bearer("nope"),
        Auth::Query("nope"),
    ] {
        let mut ws = try_connect(&app.base, &path, auth).await.unwrap();
        assert_eq!(close_code(&mut ws).await, 4001, "{backend}");
    }
    let mut ws = try_connect(&app.base, &path, Auth::None).await.unwrap();
    ws.send(Message::text(r#"{"type":"auth","session_api_key":"nope"}"#))
        .await
        .unwrap();
    assert_eq!(close_code(&mut ws).await, 4001);
    let mut ws = try_connect(&app.base, &path, Auth::None).await.unwrap();
    ws.send(Message::text(r#"{"role":"user","content":[]}"#))
        .await
        .unwrap();
    assert_eq!(close_code(&mut ws).await, 4001);
    let mut ws = try_connect(&app.base, &path, Auth::Header(&app.revoked.key))
        .await
        .unwrap();
    assert_eq!(close_code(&mut ws).await, 4001);

    // 4004: another org's member, and an unknown conversation; the session socket alike.
    let mut ws = connect(&app.base, &path, &app.non_member.key).await;
    assert_eq!(close_code(&mut ws).await, 4004);
    let unknown = format!("/sockets/events/{}", uuid::Uuid::new_v4());
    let mut ws = connect(&app.base, &unknown, &key).await;
    assert_eq!(close_code(&mut ws).await, 4004);
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{}?after_seq=-1", uuid::Uuid::new_v4()),
        &key,
    )
    .await;
    assert_eq!(close_code(&mut ws).await, 4004);

    // 403 handshakes.
    for q in [
        "resend_mode=none",
        "resend_mode=since",
        "resend_mode=since&after_timestamp=x",
    ] {
        let r = try_connect(&app.base, &format!("{path}?{q}"), Auth::Header(&key)).await;
        assert_eq!(r.err().as_deref(), Some("http 403"), "{q}");
    }
    let r = try_connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq=-2"),
        Auth::Header(&key),
    )
    .await;
    assert_eq!(r.err().as_deref(), Some("http 403"));

    // 1013 at the subscriber limit; room again once one leaves.
    let open = app.live.subscribers();
    app.live.set_max_subscribers(open + 1);
    let mut first = connect(&app.base, &path, &key).await;
    is_full_state(&next_json(&mut first).await);
    let mut second = connect(&app.base, &path, &key).await;
    assert_eq!(close_code(&mut second).await, 1013);
    first.close(None).await.unwrap();
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = connect(&app.base, &path, &key).await;
    is_full_state(&next_json(&mut third).await);

    // 1001 when the server stops.
    app.live.set_max_subscribers(1000);
    let mut ws = connect(&app.base, &path, &key).await;
    is_full_state(&next_json(&mut ws).await);
    app.live.shutdown();
    assert_eq!(close_code(&mut ws).await, 1001);
    // And a socket opened while it stops, at once (not at the next heartbeat, 20 s on).
    let mut late = connect(&app.base, &path, &key).await;
    let code = tokio::time::timeout(Duration::from_secs(5), close_code(&mut late)).await;
    assert_eq!(code.expect("closed within 5 s"), 1001);
}

async fn resend_modes(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, session) = conversation(&app, 5).await;
    let key = app.owner.key.clone();
    let path = format!("/sockets/events/{conv}");
    let ids = |v: &[Value]| {
        v.iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };

    for q in ["resend_mode=all", "resend_all=true"] {
        let mut ws = connect(&app.base, &format!("{path}?{q}"), &key).await;
        is_full_state(&next_json(&mut ws).await);
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(next_json(&mut ws).await);
        }
        assert_eq!(ids(&got), ["e0", "e1", "e2", "e3", "e4"], "{backend} {q}");
        assert_eq!(got[2], serde_json::from_str::<Value>(&event(2)).unwrap());
        quiet(&mut ws, 200).await;
    }
    // since, with an offset: 12:00:02+02:00 is 10:00:02Z, inclusive.
    let mut since = connect(
        &app.base,
        &format!("{path}?resend_mode=since&after_timestamp=2026-11-21T12:00:02%2B02:00"),
        &key,
    )
    .await;
    is_full_state(&next_json(&mut since).await);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(next_json(&mut since).await);
    }
    assert_eq!(ids(&got), ["e2", "e3", "e4"], "{backend}");
    quiet(&mut since, 200).await;
    // Live only: nothing but the state until an event arrives.
    let mut live = connect(&app.base, &path, &key).await;
    is_full_state(&next_json(&mut live).await);
    quiet(&mut live, 200).await;
    // An event older than the since bound still arrives live on every socket.
    app.ingest(&session, &conv, &[&event(0).replace("\"e0\"", "\"old\"")])
        .await;
    ingest(&app, &session, &conv, 5, 7).await;
    for ws in [&mut since, &mut live] {
        let got = vec![
            next_json(ws).await,
            next_json(ws).await,
            next_json(ws).await,
        ];
        assert_eq!(ids(&got), ["old", "e5", "e6"], "{backend}");
    }
    // A bad client frame: a ServerErrorEvent, and the socket stays open.
    live.send(Message::text("not json")).await.unwrap();
    let err = next_json(&mut live).await;
    assert_eq!(err["kind"], "ServerErrorEvent");
    assert_eq!(err["code"], "invalid_frame");
    ingest(&app, &session, &conv, 7, 8).await;
    assert_eq!(next_json(&mut live).await["id"], "e7");
}

/// The full state is the latest stored snapshot with later field updates applied.
async fn full_state_from_store(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, session) = conversation(&app, 1).await;
    let snap = r#"{"id":"s1","timestamp":"2026-11-21T10:00:01","source":"environment","key":"full_state","value":{"id":"x","execution_status":"idle","max_iterations":50},"kind":"ConversationStateUpdateEvent"}"#;
    let upd = r#"{"id":"s2","timestamp":"2026-11-21T10:00:02","source":"environment","key":"execution_status","value":"running","kind":"ConversationStateUpdateEvent"}"#;
    let old = r#"{"id":"s0","timestamp":"2026-11-21T10:00:00","source":"environment","key":"max_iterations","value":7,"kind":"ConversationStateUpdateEvent"}"#;
    app.ingest(&session, &conv, &[old, snap, upd]).await;
    let mut ws = connect(
        &app.base,
        &format!("/sockets/events/{conv}"),
        &app.owner.key,
    )
    .await;
    let state = next_json(&mut ws).await;
    is_full_state(&state);
    assert_eq!(
        state["value"],
        serde_json::json!({"id":"x","execution_status":"running","max_iterations":50}),
        "{backend}"
    );
}

async fn session_resume(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, session) = conversation(&app, 6).await;
    let key = app.owner.key.clone();
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq=-1"),
        &key,
    )
    .await;
    assert_eq!(
        next_json(&mut ws).await,
        serde_json::json!({"type":"sync","from_seq":0,"through_seq":5})
    );
    for seq in 0..3 {
        let f = next_json(&mut ws).await;
        assert_eq!(f["type"], "durable");
        assert_eq!(f["seq"], seq);
        assert_eq!(f["event"]["id"], format!("e{seq}"));
    }
    drop(ws);
    ingest(&app, &session, &conv, 6, 9).await;
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq=2"),
        &key,
    )
    .await;
    assert_eq!(
        next_json(&mut ws).await,
        serde_json::json!({"type":"sync","from_seq":3,"through_seq":8})
    );
    for seq in 3..9 {
        let f = next_json(&mut ws).await;
        assert_eq!(
            (f["seq"].as_i64(), f["event"]["id"].as_str()),
            (Some(seq), Some(format!("e{seq}").as_str())),
            "{backend}"
        );
    }
    quiet(&mut ws, 200).await;
    // A bad client frame: an error envelope; the socket stays open and live.
    ws.send(Message::text(r#"{"hello":1}"#)).await.unwrap();
    let err = next_json(&mut ws).await;
    assert_eq!(err["type"], "error", "{err}");
    ingest(&app, &session, &conv, 9, 10).await;
    let f = next_json(&mut ws).await;
    assert_eq!(
        (f["type"].as_str(), f["seq"].as_i64()),
        (Some("durable"), Some(9))
    );
    // Live only.
    let mut live = connect(&app.base, &format!("/sockets/session/{conv}"), &key).await;
    assert_eq!(
        next_json(&mut live).await,
        serde_json::json!({"type":"sync","from_seq":10,"through_seq":9})
    );
    quiet(&mut live, 200).await;
}

/// The store's order of a conversation: ids by position.
async fn store_order(app: &TestApp, conv: &str) -> Vec<String> {
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

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn writers_and_subscribers(backend: Backend) {
    let app = Arc::new(spawn_app(backend).await);
    let (conv, session) = conversation(&app, 1).await;
    const WRITERS: usize = 10;
    const BATCHES: usize = 20;
    const PER: usize = 5;
    let total = 1 + WRITERS * BATCHES * PER;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            let (conv, session) = (conv.clone(), session.clone());
            tokio::spawn(async move {
                for b in 0..BATCHES {
                    let from = 1 + (w * BATCHES + b) * PER;
                    ingest(&app, &session, &conv, from, from + PER).await;
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            })
        })
        .collect();
    let subscribers: Vec<_> = (0..50u64)
        .map(|s| {
            let app = app.clone();
            let conv = conv.clone();
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (s + 1));
                tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
                let mut got: Vec<String> = Vec::new();
                while got.len() < total {
                    let path =
                        format!("/sockets/session/{conv}?after_seq={}", got.len() as i64 - 1);
                    let mut ws = connect(&app.base, &path, &app.owner.key).await;
                    let sync = next_json(&mut ws).await;
                    assert_eq!(sync["from_seq"].as_u64(), Some(got.len() as u64));
                    // Read a random number of frames, then drop the socket (or read to the end).
                    let take = 1 + rng.below(400) as usize;
                    for _ in 0..take {
                        if got.len() == total {
                            break;
                        }
                        let f = next_json(&mut ws).await;
                        assert_eq!(
                            f["seq"].as_u64(),
                            Some(got.len() as u64),
                            "gap or duplicate"
                        );
                        got.push(f["event"]["id"].as_str().unwrap().to_owned());
                    }
                }
                got
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let order = store_order(&app, &conv).await;
    assert_eq!(order.len(), total);
    for s in subscribers {
        let got = s.await.unwrap();
        assert_eq!(
            got, order,
            "{backend}: a subscriber's stream differs from the store"
        );
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

async fn slow_subscriber(backend: Backend) {
    let app = spawn_app(backend).await;
    let (conv, session) = conversation(&app, 1).await;
    let key = app.owner.key.clone();
    // Subscribed from the start, reading nothing while 10,000 events arrive.
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq=-1"),
        &key,
    )
    .await;
    let before = rss_kib();
    for b in 0..100 {
        ingest(&app, &session, &conv, 1 + b * 100, 1 + (b + 1) * 100).await;
    }
    let grown = rss_kib().saturating_sub(before);
    // The server holds at most a page and a socket buffer for it, whatever it fell behind by.
    assert!(grown < 64 * 1024, "{backend}: RSS grew {grown} KiB");
    // Nothing lost: read some, drop, resume with after_seq and read to the end.
    let _sync = next_json(&mut ws).await;
    let mut next = 0u64;
    for _ in 0..1000 {
        let f = next_json(&mut ws).await;
        assert_eq!(f["seq"].as_u64(), Some(next));
        next += 1;
    }
    drop(ws);
    let mut ws = connect(
        &app.base,
        &format!("/sockets/session/{conv}?after_seq={}", next - 1),
        &key,
    )
    .await;
    let _sync = next_json(&mut ws).await;
    while next < 10_001 {
        let f = next_json(&mut ws).await;
        assert_eq!(f["seq"].as_u64(), Some(next), "{backend}");
        next += 1;
    }
    quiet(&mut ws, 200).await;
}

/// A sandbox app with a started (stand-in) sandbox, RUNNING, and a conversation on it made
/// through the sandbox's webhook: the app, the owner's key, the agent server's URL and the
/// conversation id.
async fn running_conversation(
    backend: Backend,
) -> (common::sandboxes::SandboxApp, String, String, String) {
    use common::sandboxes::{SandboxOptions, spawn_sandbox_app};
    let app = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let started = app.start(&key, None).await;
    let sb = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(&key, &sb, "RUNNING").await;
    let session = info["session_api_key"].as_str().unwrap().to_owned();
    let url = info["exposed_urls"][0]["url"].as_str().unwrap().to_owned();
    let conv = uuid::Uuid::new_v4().to_string();
    let body =
        serde_json::json!({"id": conv, "title": "t", "execution_status": "idle"}).to_string();
    let (status, _) = app
        .post_webhook("/api/v1/webhooks/conversations", Some(&session), body)
        .await;
    assert_eq!(status, 200);
    (app, key, url, conv)
}

/// A `Message` frame is sent to the conversation (send-message, `run: true`) on either socket;
/// a malformed one gets an error frame and nothing is sent.
async fn socket_messages(backend: Backend) {
    let (app, key, url, conv) = running_conversation(backend).await;
    let received = || async {
        reqwest::get(format!("{url}/standin/received"))
            .await
            .unwrap()
            .json::<Vec<Value>>()
            .await
            .unwrap()
    };
    let mut ws = connect(&app.base, &format!("/sockets/events/{conv}"), &key).await;
    is_full_state(&next_json(&mut ws).await);
    ws.send(Message::text(r#"{"role":"user","content":[]}"#))
        .await
        .unwrap();
    let err = next_json(&mut ws).await;
    assert_eq!(
        (err["kind"].as_str(), err["code"].as_str()),
        (Some("ServerErrorEvent"), Some("invalid_message")),
        "{err}"
    );
    ws.send(Message::text(
        r#"{"role":"user","content":[{"type":"text","text":"over the socket"}]}"#,
    ))
    .await
    .unwrap();
    let mut mine = Vec::new();
    for _ in 0..100 {
        mine = received().await;
        if !mine.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(mine.len(), 1, "{backend}: {mine:?}");
    assert_eq!(
        mine[0]["path"],
        format!("/api/conversations/{}/events", conv.replace('-', ""))
    );
    assert_eq!(
        mine[0]["body"],
        serde_json::json!({"role":"user","content":[{"type":"text","text":"over the socket"}],"run":true})
    );
    // The session socket too.
    let mut ws = connect(&app.base, &format!("/sockets/session/{conv}"), &key).await;
    let _sync = next_json(&mut ws).await;
    ws.send(Message::text(
        r#"{"role":"user","content":[{"type":"text","text":"again"}]}"#,
    ))
    .await
    .unwrap();
    for _ in 0..100 {
        mine = received().await;
        if mine.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(mine.len(), 2, "{backend}: {mine:?}");
    assert_eq!(mine[1]["body"]["content"][0]["text"], "again");
}

/// The stand-in agent server's open event sockets (over every conversation) once it reports
/// `want`, within 10 s.
async fn upstream_sockets(agent: &str, want: u64) -> u64 {
    let mut open = u64::MAX;
    for _ in 0..200 {
        let v: Value = reqwest::get(format!("{agent}/standin/sockets"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        open = v["open"].as_u64().unwrap();
        if open == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    open
}

/// Has the stand-in send deltas on its open sockets of `conv`; how many sockets got them.
async fn stream_deltas(agent: &str, conv: &str, deltas: &[&str]) -> u64 {
    let v: Value = reqwest::Client::new()
        .post(format!("{agent}/standin/stream/{conv}"))
        .json(&serde_json::json!({ "deltas": deltas }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["sockets"].as_u64().unwrap()
}

/// While subscribers watch a conversation whose sandbox runs, one upstream socket to its agent
/// server relays the `StreamingDeltaEvent`s as transient frames (raw on `/sockets/events`,
/// `transient` envelopes on `/sockets/session`), never stored, and not the agent server's
/// durable events; the upstream socket closes when the last subscriber leaves.
async fn transient_relay(backend: Backend) {
    let (app, key, agent, conv) = running_conversation(backend).await;
    assert_eq!(upstream_sockets(&agent, 0).await, 0);

    let mut events = connect(&app.base, &format!("/sockets/events/{conv}"), &key).await;
    is_full_state(&next_json(&mut events).await);
    let mut session_ws = connect(&app.base, &format!("/sockets/session/{conv}"), &key).await;
    assert_eq!(next_json(&mut session_ws).await["type"], "sync");
    assert_eq!(
        upstream_sockets(&agent, 1).await,
        1,
        "{backend}: one upstream socket for two subscribers"
    );
    assert_eq!(stream_deltas(&agent, &conv, &["Hel", "lo"]).await, 1);
    for want in ["Hel", "lo"] {
        let e = next_json(&mut events).await;
        assert_eq!(e["kind"], "StreamingDeltaEvent", "{backend}: {e}");
        assert_eq!(e["content"], want);
        let s = next_json(&mut session_ws).await;
        assert_eq!(s["type"], "transient", "{backend}: {s}");
        assert_eq!(s["event"]["kind"], "StreamingDeltaEvent");
        assert_eq!(s["event"]["content"], want);
    }
    // The agent server's MessageEvent that followed is not relayed (it is durable: it comes
    // through the webhooks and the store), and nothing was stored.
    quiet(&mut events, 300).await;
    quiet(&mut session_ws, 100).await;
    assert!(store_order(&app, &conv).await.is_empty(), "{backend}");

    drop(events);
    assert_eq!(
        upstream_sockets(&agent, 1).await,
        1,
        "{backend}: kept while a subscriber remains"
    );
    session_ws.close(None).await.unwrap();
    assert_eq!(
        upstream_sockets(&agent, 0).await,
        0,
        "{backend}: closed when the last subscriber left"
    );
}

/// A text frame that is not UTF-8 (RFC 6455 §8.1: the endpoint must fail the connection) is
/// answered with close code 1007, as the first frame of an unauthenticated socket and on an
/// authenticated one; the server goes on serving.
async fn text_frames_that_are_not_utf8(backend: Backend) {
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    let app = spawn_app(backend).await;
    let (conv, _session) = conversation(&app, 3).await;
    let raw = |bytes: &'static [u8]| {
        Message::Frame(Frame::message(bytes, OpCode::Data(Data::Text), true))
    };
    for path in [
        format!("/sockets/session/{conv}"),
        format!("/sockets/events/{conv}"),
    ] {
        // Unauthenticated: the first frame would carry the key.
        let mut ws = try_connect(&app.base, &path, Auth::None).await.unwrap();
        ws.send(raw(b"{\"type\":\"auth\",\"session_api_key\":\"\xff\"}"))
            .await
            .unwrap();
        assert_eq!(close_code(&mut ws).await, 1007, "{backend} {path}");

        // Authenticated: history first, then the bad frame.
        let mut ws = connect(&app.base, &path, &app.owner.key).await;
        next_json(&mut ws).await;
        ws.send(raw(b"\xed\xa0\x80")).await.unwrap();
        assert_eq!(close_code(&mut ws).await, 1007, "{backend} {path}");
    }
    let mut ws = connect(
        &app.base,
        &format!("/sockets/events/{conv}"),
        &app.owner.key,
    )
    .await;
    next_json(&mut ws).await;
    app.stop().await;
}

/// A websocket client that answers nothing (no pong, no close): the upgrade written by hand
/// on a TCP stream, then the server's frames read as bytes (unmasked, RFC 6455 §5.2).
struct RawSocket {
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
fn parse_frame(b: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
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
async fn heartbeats(backend: Backend) {
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

on_both_backends!(
    heartbeats,
    transient_relay,
    text_frames_that_are_not_utf8,
    socket_messages,
    auth_and_close_codes,
    resend_modes,
    full_state_from_store,
    session_resume,
    writers_and_subscribers,
    slow_subscriber
);

/// A second replica on the same PostgreSQL database: its own store, hub and LISTEN task.
struct Replica {
    base: String,
    handle: actix_web::dev::ServerHandle,
    listener: tokio::task::JoinHandle<()>,
}

async fn spawn_replica(url: &str) -> Replica {
    use switchboard_api::{AppState, create_app};
    let u = url.to_owned();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || switchboard_storage::DieselStore::open(&u, None))
            .await
            .unwrap()
            .unwrap()
            .0,
    );
    let services = switchboard_domain::Switchboard::new(store.clone());
    let state = actix_web::web::Data::new(AppState::new(services, None));
    store.observe_appends(state.live.hub());
    let listener = tokio::spawn(switchboard_storage::listen::listen_for_appends(
        url.to_owned(),
        state.live.hub(),
    ));
    let server = actix_web::HttpServer::new(move || create_app(state.clone()))
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Replica {
        base: format!("http://{addr}"),
        handle,
        listener,
    }
}

/// Kills every LISTEN connection on the test database.
async fn kill_listeners(app: &TestApp) {
    app.exec_sql(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{}' AND datname = current_database()",
        switchboard_storage::listen::LISTENER_APPLICATION_NAME
    ))
    .await;
}

#[tokio::test]
async fn postgres_replicas_and_listener_loss() {
    let app = spawn_app(Backend::Postgres).await;
    let (conv, session) = conversation(&app, 1).await;
    let b = spawn_replica(&app.url).await;
    // A subscriber on replica B; webhooks into replica A.
    let mut ws = connect(
        &b.base,
        &format!("/sockets/session/{conv}?after_seq=0"),
        &app.owner.key,
    )
    .await;
    let _sync = next_json(&mut ws).await;
    ingest(&app, &session, &conv, 1, 4).await;
    for seq in 1..4 {
        assert_eq!(
            next_json(&mut ws).await["seq"],
            seq,
            "delivered on the other replica"
        );
    }
    // Kill the LISTEN connections, append while they are down: nothing is lost.
    for round in 0..3 {
        kill_listeners(&app).await;
        let from = 4 + round * 3;
        ingest(&app, &session, &conv, from, from + 3).await;
        for seq in from..from + 3 {
            assert_eq!(next_json(&mut ws).await["seq"], seq as u64, "round {round}");
        }
    }
    drop(ws);
    b.listener.abort();
    b.handle.stop(false).await;
}
