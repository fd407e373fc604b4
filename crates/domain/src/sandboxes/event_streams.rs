//! The stream path's port (issue 19, "every event in the store within 100 ms"): Switchboard
//! holds the agent server's own event websocket of each conversation it streams and stores
//! every event as it arrives, ahead of the webhook that carries the same event a little later
//! (the agent server posts its webhooks one batch at a time, through a new HTTP client each).
//! The webhook and the pull path stay as the safety nets; the store's append is idempotent by
//! event id, so whichever path comes second stores nothing.
//!
//! The agent server's socket (reference agent-server-webhooks §1, "WebSocket";
//! `/sockets/events/{conversation_id}`): authenticated with `X-Session-API-Key`; on connect it
//! subscribes the socket, sends a `full_state` `ConversationStateUpdateEvent` made for that
//! subscriber (a fresh id each time, never persisted), then resends persisted events
//! (`resend_mode=all`, or `resend_mode=since&after_timestamp=T`, inclusive, a naive `T` read in
//! the agent server's time zone), then every event as it is published, each frame one event as
//! JSON. Close codes: 4001 authentication failed, 4004 no such conversation, 1013 too many
//! subscribers.
//!
//! Implemented by `switchboard-sandbox`'s `event_streams.rs`; driven by the job
//! `agent-event-streams` (`services/event_streams.rs`). Nothing runs between two calls: the
//! sockets are read only inside [`AgentEventStreams::receive`], on the caller's thread.

use std::time::Duration;

use time::OffsetDateTime;

use crate::identity::session_keys::SessionKey;
use crate::ids::{ConversationId, SandboxId};

/// How far before the newest event already held a resend starts: an event made a moment
/// before another may be persisted after it, and a resend from the exact instant would miss
/// it. What is resent twice is skipped by the store (idempotent by id).
pub const RESEND_MARGIN: Duration = Duration::from_secs(1);

/// A conversation whose events to stream, and where.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamTarget {
    /// The conversation.
    pub conversation: ConversationId,
    /// The sandbox whose agent server runs it.
    pub sandbox: SandboxId,
    /// The agent server's base URL (`http://127.0.0.1:PORT`).
    pub base_url: String,
    /// The sandbox's session key.
    pub key: SessionKey,
    /// The instant of the newest event already stored: the first connection asks the agent
    /// server to resend from [`RESEND_MARGIN`] before it (`None`: every event). Later
    /// connections resend from the newest event the stream itself received, the same way.
    pub resend_from: Option<OffsetDateTime>,
}

impl std::fmt::Debug for StreamTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTarget")
            .field("conversation", &self.conversation)
            .field("sandbox", &self.sandbox)
            .field("base_url", &self.base_url)
            .field("resend_from", &self.resend_from)
            .finish_non_exhaustive()
    }
}

/// One frame of a stream: an event as the agent server sent it (JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFrame {
    /// The conversation it belongs to.
    pub conversation: ConversationId,
    /// The event, as JSON text.
    pub text: String,
}

/// What one [`AgentEventStreams::receive`] brought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Received {
    /// The frames, in the order they arrived (per conversation: the agent server's order).
    pub frames: Vec<StreamFrame>,
    /// Whether [`AgentEventStreams::interrupt`] cut the wait short (the caller should look
    /// at what to stream again).
    pub interrupted: bool,
}

/// The agent servers' event sockets, one per streamed conversation, at most as many as the
/// caller keeps. Blocking; called from one job at a time.
pub trait AgentEventStreams: Send + Sync {
    /// Streams exactly `wanted`: opens a socket for each conversation not streamed yet,
    /// closes those of conversations not named, and reopens one whose URL or key changed.
    /// Opening happens during [`AgentEventStreams::receive`].
    fn keep(&self, wanted: Vec<StreamTarget>);

    /// Waits at most `wait` for frames of the kept streams (connecting, reconnecting after a
    /// loss with backoff and a resend of what was missed, answering the agent server's
    /// pings), and returns as soon as some arrived, or `wait` passed, or
    /// [`AgentEventStreams::interrupt`] was called. The `full_state` snapshot each new
    /// subscriber gets first is not returned (it is no persisted event). Failures are the
    /// implementation's to log and retry; none is returned.
    fn receive(&self, wait: Duration) -> Received;

    /// Ends the current (or the next) [`AgentEventStreams::receive`] at once. Any thread.
    fn interrupt(&self);

    /// How many conversations are streamed (kept) now.
    fn streamed(&self) -> usize;
}

/// The `after_timestamp` of a resend from `newest`: [`RESEND_MARGIN`] before it, written as
/// the agent server writes timestamps (naive, microseconds), which it reads in its own time
/// zone, the one its naive timestamps were written in (Switchboard reads naive as UTC, so the
/// round trip gives back the agent server's own clock).
pub fn resend_after(newest: OffsetDateTime) -> String {
    switchboard_model::format_naive(newest - RESEND_MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resend_starts_a_margin_before_the_newest_event() {
        let newest = switchboard_model::parse_instant("2026-11-21T09:04:49.990782").unwrap();
        assert_eq!(resend_after(newest), "2026-11-21T09:04:48.990782");
        let whole = switchboard_model::parse_instant("2026-11-21T00:00:00.5").unwrap();
        assert_eq!(resend_after(whole), "2026-11-20T23:59:59.500000");
    }

    #[test]
    fn a_target_never_prints_its_key() {
        let t = StreamTarget {
            conversation: ConversationId(uuid::Uuid::nil()),
            sandbox: SandboxId(uuid::Uuid::nil()),
            base_url: "http://127.0.0.1:1".into(),
            key: SessionKey::new("sbs_secret"),
            resend_from: None,
        };
        assert!(!format!("{t:?}").contains("sbs_secret"));
    }
}
