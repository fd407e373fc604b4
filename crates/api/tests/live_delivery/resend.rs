//! What a socket is sent before live events: `resend_mode` all and since, the full state from
//! the store, and the session socket's `after_seq` resume.

use futures_util::SinkExt;
use serde_json::Value;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;

use crate::common::spawn_app;
use crate::live_delivery::client::{
    connect, conversation, event, ingest, is_full_state, next_json, quiet,
};

pub async fn resend_modes(backend: Backend) {
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
pub async fn full_state_from_store(backend: Backend) {
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

pub async fn session_resume(backend: Backend) {
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
