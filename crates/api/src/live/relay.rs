//! The relay of an agent server's transient events (API.md, Live delivery; spec §6.4): while
//! at least one subscriber of this process watches a conversation, one task holds one
//! websocket to the conversation's agent server (`/sockets/events/{id}`, authenticated with
//! the sandbox's session key in `X-Session-API-Key`) and forwards its `StreamingDeltaEvent`s
//! and `ConversationStateUpdateEvent`s to the subscribers through a bounded broadcast. They
//! are never stored. The socket closes when the last subscriber leaves; a failure is logged
//! and retried with backoff while subscribers remain, and never touches durable delivery.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::web;
use bytestring::ByteString;
use futures_util::StreamExt;
use serde_json::Value;
use switchboard_domain::ConversationId;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::hub::Shared;
use crate::AppState;

/// Default [`super::LiveConfig::max_relays`].
pub const DEFAULT_MAX_RELAYS: usize = 10_000;

/// Transient frames buffered per conversation; a subscriber further behind skips the oldest
/// (they are transient: the final event comes from the store).
const BUFFER: usize = 256;
/// First retry delay; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest retry delay.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Event kinds relayed (the rest arrives durably through the webhooks and the store).
const RELAYED_KINDS: [&str; 2] = ["StreamingDeltaEvent", "ConversationStateUpdateEvent"];

/// The relays of this process, one per watched conversation, at most `max` at once (each
/// holds a socket to an agent server: `serve` derives `max` from the open-files limit).
pub struct Relays {
    running: Mutex<HashMap<ConversationId, Relay>>,
    max: usize,
    /// Whether a conversation was left without a relay at `max` since the last one ended
    /// (logged once per such stretch).
    full_logged: std::sync::atomic::AtomicBool,
}

impl Default for Relays {
    fn default() -> Self {
        Relays::new(DEFAULT_MAX_RELAYS)
    }
}

/// A relayed transient event: the agent server's JSON, with the frames sent for it (each
/// rendered once for all the subscribers of this process).
pub type Transient = Arc<Shared<ByteString>>;

struct Relay {
    frames: broadcast::Sender<Transient>,
    stop: watch::Sender<bool>,
    subscribers: usize,
}

/// A subscriber's share of a relay: receives the transient events; the last one dropped
/// stops the relay (and closes its upstream socket).
pub struct RelayGuard {
    relays: Arc<Relays>,
    conversation: ConversationId,
    /// Whether it counts as a subscriber of a relay (`false`: none could be started).
    counted: bool,
    /// The conversation's transient events.
    pub frames: broadcast::Receiver<Transient>,
}

impl Relays {
    /// No relay yet; at most `max` at once.
    pub fn new(max: usize) -> Self {
        Relays {
            running: Mutex::new(HashMap::new()),
            max,
            full_logged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConversationId, Relay>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Joins the relay of `conversation`, starting it (on the current runtime) if this is its
    /// first subscriber. At the limit of relays, a conversation without one gets a guard
    /// that receives nothing (its subscribers still get every durable event).
    pub fn join(
        self: &Arc<Self>,
        state: web::Data<AppState>,
        conversation: ConversationId,
    ) -> RelayGuard {
        let mut map = self.lock();
        if !map.contains_key(&conversation) && map.len() >= self.max {
            if !self
                .full_logged
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(max = self.max, %conversation, "transient relay: at the limit of relays (derived from the open-files limit); newly watched conversations get durable events only until one ends");
            }
            let (_, frames) = broadcast::channel(1);
            return RelayGuard {
                relays: self.clone(),
                conversation,
                counted: false,
                frames,
            };
        }
        let relay = map.entry(conversation).or_insert_with(|| {
            let (frames, _) = broadcast::channel(BUFFER);
            let (stop, stopped) = watch::channel(false);
            actix_web::rt::spawn(run(state, conversation, frames.clone(), stopped));
            Relay {
                frames,
                stop,
                subscribers: 0,
            }
        });
        relay.subscribers += 1;
        RelayGuard {
            relays: self.clone(),
            conversation,
            counted: true,
            frames: relay.frames.subscribe(),
        }
    }

    /// Conversations relayed now.
    pub fn running(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for RelayGuard {
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        let mut map = self.relays.lock();
        if let Some(r) = map.get_mut(&self.conversation) {
            r.subscribers -= 1;
            if r.subscribers == 0 {
                r.stop.send_replace(true);
                map.remove(&self.conversation);
                self.relays
                    .full_logged
                    .store(false, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Why one upstream connection ended.
enum Ended {
    /// The last subscriber left.
    Stopped,
    /// Nothing to connect to (the sandbox does not run), or the connection failed or ended.
    Retry,
}

/// The relay task: connect, forward, and on any failure wait (backoff) and connect again,
/// until stopped.
async fn run(
    state: web::Data<AppState>,
    conversation: ConversationId,
    frames: broadcast::Sender<Transient>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if *stop.borrow() {
            return;
        }
        match relay_once(&state, conversation, &frames, &mut stop, &mut backoff).await {
            Ended::Stopped => return,
            Ended::Retry => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One upstream connection, from resolving the agent server to its end.
async fn relay_once(
    state: &web::Data<AppState>,
    conversation: ConversationId,
    frames: &broadcast::Sender<Transient>,
    stop: &mut watch::Receiver<bool>,
    backoff: &mut Duration,
) -> Ended {
    let st = state.clone();
    let endpoint = state
        .blocking(move || {
            st.services
                .app_conversations()
                .agent_endpoint(conversation)
                .map_err(Into::into)
        })
        .await;
    let (base, key) = match endpoint {
        Ok(Some(e)) => e,
        Ok(None) => return Ended::Retry,
        Err(e) => {
            tracing::warn!(%conversation, error = %e, "transient relay: reading the sandbox failed");
            return Ended::Retry;
        }
    };
    let url = format!(
        "{}/sockets/events/{}",
        base.trim_end_matches('/')
            .replacen("https://", "wss://", 1)
            .replacen("http://", "ws://", 1),
        conversation.0.simple()
    );
    let mut request = match url.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(%conversation, error = %e, "transient relay: bad agent server URL");
            return Ended::Retry;
        }
    };
    let Ok(header) = key.expose().parse() else {
        return Ended::Retry;
    };
    request.headers_mut().insert("X-Session-API-Key", header);
    let connect = tokio::select! {
        c = tokio_tungstenite::connect_async(request) => c,
        _ = stop.changed() => return Ended::Stopped,
    };
    let mut socket = match connect {
        Ok((s, _)) => s,
        Err(e) => {
            tracing::warn!(%conversation, error = %e, "transient relay: connecting to the agent server failed");
            return Ended::Retry;
        }
    };
    *backoff = FIRST_BACKOFF;
    tracing::debug!(%conversation, "transient relay: connected");
    loop {
        tokio::select! {
            _ = stop.changed() => {
                let _ = socket.close(None).await;
                return Ended::Stopped;
            }
            msg = socket.next() => match msg {
                Some(Ok(Message::Text(text))) => {
                    if is_relayed(text.as_str()) {
                        // No receiver is not an error: a subscriber may be between joins.
                        let _ = frames.send(Arc::new(Shared::new(ByteString::from(text.as_str()))));
                    }
                }
                Some(Ok(Message::Close(_))) | None => {
                    tracing::info!(%conversation, "transient relay: the agent server closed the socket");
                    return Ended::Retry;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    tracing::warn!(%conversation, error = %e, "transient relay: the agent server socket failed");
                    return Ended::Retry;
                }
            }
        }
    }
}

/// Whether an agent server frame is one of [`RELAYED_KINDS`].
fn is_relayed(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("kind")?.as_str().map(|k| RELAYED_KINDS.contains(&k)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relays_deltas_and_state_updates_only() {
        assert!(is_relayed(
            r#"{"kind":"StreamingDeltaEvent","content":"a"}"#
        ));
        assert!(is_relayed(
            r#"{"kind":"ConversationStateUpdateEvent","key":"full_state"}"#
        ));
        assert!(!is_relayed(r#"{"kind":"MessageEvent"}"#));
        assert!(!is_relayed("not json"));
    }
}
