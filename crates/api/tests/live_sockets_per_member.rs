//! Websockets per member (issue 18, Quotas; issue 33: `--max-sockets-per-member`, default
//! 200, counted per user and no longer per key), on both backends: one member opens as many as
//! they may, one more is closed with 1013, also through another of their keys (minting keys
//! does not multiply the limit), while another member still gets a socket when the server has
//! room for only one more; a socket closed makes room for its member again, by any key.
//! Per organization (`--max-sockets-per-org`): its members together hold at most the limit,
//! whoever opens them, while another organization's member is not refused.

use crate::common;

use std::time::Duration;

use common::{TestApp, spawn_app};
use futures_util::StreamExt;
use serde_json::Value;
use switchboard_testkit::Backend;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

on_both_backends!(one_member_cannot_take_every_socket);
on_both_backends!(one_organization_cannot_take_every_socket);

/// The default `--max-sockets-per-member`.
const PER_MEMBER: usize = 200;

async fn open(app: &TestApp, conv: &str, key: &str) -> Ws {
    let url = format!(
        "{}/sockets/session/{conv}",
        app.base.replacen("http://", "ws://", 1)
    );
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("X-Access-Token", key.parse().unwrap());
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

/// What the server sends first: `Ok(type)` of a text frame, or `Err(close code)`.
async fn first(ws: &mut Ws) -> Result<String, u16> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a frame within 20 s");
        match m {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                return Ok(v["type"].as_str().unwrap_or_default().to_owned());
            }
            Some(Ok(Message::Close(Some(c)))) => return Err(u16::from(c.code)),
            Some(Ok(Message::Close(None))) | None => return Err(1005),
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("socket error: {e}"),
        }
    }
}

async fn one_member_cannot_take_every_socket(backend: Backend) {
    let app = spawn_app(backend).await;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    app.ingest(
        &session,
        &conv,
        &[r#"{"id":"e1","timestamp":"2026-11-21T10:00:00","source":"user","kind":"PauseEvent"}"#],
    )
    .await;
    // Room on the server for one socket more than a member may hold.
    app.live
        .set_max_subscribers(app.live.subscribers() + PER_MEMBER + 1);
    let greedy = app.owner.key.clone();
    let mut held = Vec::with_capacity(PER_MEMBER);
    for i in 0..PER_MEMBER {
        let mut ws = open(&app, &conv, &greedy).await;
        assert_eq!(
            first(&mut ws).await,
            Ok("sync".into()),
            "{backend}: socket {i}"
        );
        held.push(ws);
    }
    let mut over = open(&app, &conv, &greedy).await;
    assert_eq!(
        first(&mut over).await,
        Err(1013),
        "{backend}: one over the member's limit"
    );
    // Another key of the same member is refused too: the limit is per member.
    let mut minted = open(&app, &conv, &app.bound_owner.key).await;
    assert_eq!(
        first(&mut minted).await,
        Err(1013),
        "{backend}: the owner's other key"
    );
    // Another member (the admin) is not refused: the server still has room for them.
    let mut other = open(&app, &conv, &app.admin.key).await;
    assert_eq!(
        first(&mut other).await,
        Ok("sync".into()),
        "{backend}: another member"
    );
    drop(other);
    // A socket closed gives its member room again, by any of their keys.
    let mut one = held.pop().unwrap();
    one.close(None).await.unwrap();
    drop(one);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = open(&app, &conv, &app.bound_owner.key).await;
    assert_eq!(
        first(&mut again).await,
        Ok("sync".into()),
        "{backend}: room again"
    );
}

async fn one_organization_cannot_take_every_socket(backend: Backend) {
    const PER_ORG: usize = 3;
    let app = spawn_app(backend).await;
    let event =
        r#"{"id":"e1","timestamp":"2026-11-21T10:00:00","source":"user","kind":"PauseEvent"}"#;
    let session = app.register_sandbox(app.org, app.owner.user_id).await;
    let conv = uuid::Uuid::new_v4().to_string();
    app.ingest(&session, &conv, &[event]).await;
    let elsewhere = app
        .register_sandbox(app.other_org, app.non_member.user_id)
        .await;
    let other_conv = uuid::Uuid::new_v4().to_string();
    app.ingest(&elsewhere, &other_conv, &[event]).await;
    app.live.set_max_sockets_per_org(Some(PER_ORG));

    // Three members of organization A, each far under their own limit, fill A's.
    let mut held = Vec::new();
    for key in [&app.owner.key, &app.admin.key, &app.owner.key] {
        let mut ws = open(&app, &conv, key).await;
        assert_eq!(first(&mut ws).await, Ok("sync".into()), "{backend}");
        held.push(ws);
    }
    let mut over = open(&app, &conv, &app.admin.key).await;
    assert_eq!(
        first(&mut over).await,
        Err(1013),
        "{backend}: one over the organization's limit, by a member who holds one"
    );
    // Organization B's member is not refused.
    let mut other = open(&app, &other_conv, &app.non_member.key).await;
    assert_eq!(
        first(&mut other).await,
        Ok("sync".into()),
        "{backend}: another organization"
    );
    // A socket of A closed makes room for any of A's members.
    let mut one = held.pop().unwrap();
    one.close(None).await.unwrap();
    drop(one);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = open(&app, &conv, &app.admin.key).await;
    assert_eq!(
        first(&mut again).await,
        Ok("sync".into()),
        "{backend}: room again"
    );
}
