//! Sockets of a conversation whose sandbox runs: messages sent to its agent server, and the
//! agent server's streaming deltas relayed as transient frames.

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::Value;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;

use crate::common;
use crate::live_delivery::client::{connect, is_full_state, next_json, quiet, store_order};

/// A sandbox app with a started (stand-in) sandbox, RUNNING, and a conversation on it made
/// through the sandbox's webhook: the app, the owner's key, the agent server's URL and the
/// conversation id.
pub async fn running_conversation(
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
pub async fn socket_messages(backend: Backend) {
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
pub async fn upstream_sockets(agent: &str, want: u64) -> u64 {
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
pub async fn stream_deltas(agent: &str, conv: &str, deltas: &[&str]) -> u64 {
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
pub async fn transient_relay(backend: Backend) {
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
