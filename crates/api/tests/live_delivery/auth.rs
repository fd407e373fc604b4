//! Authentication in its three forms and the first frame, every close code, and text frames
//! that are not UTF-8.

use std::time::Duration;

use futures_util::SinkExt;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;

use crate::common::spawn_app;
use crate::live_delivery::client::{
    Auth, close_code, connect, conversation, is_full_state, next_json, try_connect,
};

pub async fn auth_and_close_codes(backend: Backend) {
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

/// A text frame that is not UTF-8 (RFC 6455 §8.1: the endpoint must fail the connection) is
/// answered with close code 1007, as the first frame of an unauthenticated socket and on an
/// authenticated one; the server goes on serving.
pub async fn text_frames_that_are_not_utf8(backend: Backend) {
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
