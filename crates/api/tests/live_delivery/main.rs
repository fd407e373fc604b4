//! Live delivery over real websockets against the real server, on both backends (API.md, Live
//! delivery): authentication in its three forms and every close code; `resend_mode` all and
//! since (an offset timestamp); `after_seq` resume with exactly the missing events; writers
//! and subscribers at random, every stream equal to the store's order; a subscriber that reads
//! nothing while 10,000 events arrive; two replicas on one PostgreSQL; the LISTEN connection
//! killed.
//!
//! One file per topic: `client.rs` (the websocket client and the events the tests send),
//! `auth.rs` (authentication, close codes, frames that are not UTF-8), `resend.rs` (resend
//! modes, the full state, session resume), `load.rs` (many writers and subscribers, a slow
//! subscriber), `agent.rs` (messages to and deltas from a running sandbox's agent server),
//! `pings.rs` (heartbeats), `replicas.rs` (a second replica; the test itself is below).

use crate::common;
mod agent;
mod auth;
mod client;
mod load;
mod pings;
mod replicas;
mod resend;

use agent::{socket_messages, transient_relay};
use auth::{auth_and_close_codes, text_frames_that_are_not_utf8};
use client::{connect, conversation, ingest, next_json};
use common::spawn_app;
use load::{slow_subscriber, writers_and_subscribers};
use pings::heartbeats;
use replicas::{kill_listeners, spawn_replica};
use resend::{full_state_from_store, resend_modes, session_resume};
use switchboard_testkit::Backend;

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
