//! One subscriber's tail of a conversation's events (API.md, Live delivery): the first frame,
//! the history, then live events, read page by page from the store after the last position
//! sent, woken by the hub when caught up; heartbeats, client frames, and the close on server
//! shutdown.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use actix_ws::{AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Session};
use futures_util::FutureExt;
use serde_json::Value;
use switchboard_domain::events::PositionedEvent;
use switchboard_domain::live_frames::ClientFrame;
use switchboard_domain::{ConversationId, OrgContext};
use time::OffsetDateTime;

use super::hub::Recent;
use crate::AppState;

/// Events read from the store per page: the most the server holds for one subscriber.
pub(crate) const PAGE: u32 = 256;

/// Which protocol a socket speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `/sockets/events`: each event's stored JSON; a `full_state` first.
    Events,
    /// `/sockets/session`: envelopes with `seq`.
    Session,
}

/// Where a subscriber starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// New events only.
    LiveOnly,
    /// The whole history first.
    All,
    /// History at or after this instant first (any position), then every new event.
    Since(OffsetDateTime),
    /// Every event after this position.
    AfterSeq(i64),
}

/// Why a tail stops.
enum Stop {
    /// The client closed, or the socket is gone.
    Gone,
    /// Close with this code and reason.
    Close(u16, &'static str),
}

/// The state of one subscriber's tail.
struct Tail {
    state: web::Data<AppState>,
    session: Session,
    ctx: OrgContext,
    conversation: ConversationId,
    protocol: Protocol,
    /// The last position sent (or skipped as before the start).
    last: i64,
    /// While replaying `resend_mode=since`: the filter and the end of that history.
    since: Option<(OffsetDateTime, i64)>,
    /// Pings sent and not answered.
    missed_pongs: u32,
    /// The event count the last wake-up announced (or the count read at the start): every
    /// position below it is committed.
    needed: i64,
}

/// Runs a subscriber until the client leaves, the heartbeat fails, or the server stops.
pub(crate) async fn run_tail(
    state: web::Data<AppState>,
    session: Session,
    mut stream: AggregatedMessageStream,
    ctx: OrgContext,
    conversation: ConversationId,
    start: Start,
    protocol: Protocol,
) {
    let live = state.live.clone();
    // Registered before the store is read: an append committed after this wakes us.
    let mut watch = live.hub().watch(conversation);
    let mut stopping = live.stopping.subscribe();
    // The agent server's transient events, relayed while this socket is open.
    let mut relay = live.relays().join(state.clone(), conversation);
    let mut tail = Tail {
        state,
        session,
        ctx,
        conversation,
        protocol,
        last: -1,
        since: None,
        missed_pongs: 0,
        needed: 0,
    };
    let outcome = async {
        // Awaits other than the idle select! are boxed: a future's size is that of its
        // largest await, and the idle one is what every open socket holds.
        let count = Box::pin(tail.read(|s, c| s.services.events().event_count(c))).await?;
        tail.needed = count;
        match start {
            Start::LiveOnly => tail.last = count - 1,
            Start::All => {}
            Start::Since(t) => tail.since = Some((t, count)),
            Start::AfterSeq(n) => tail.last = n,
        }
        match protocol {
            Protocol::Events => {
                let state = Box::pin(tail.read(|s, c| s.services.events().full_state(c))).await?;
                Box::pin(tail.send(state)).await?;
            }
            Protocol::Session => {
                let sync = serde_json::json!({
                    "type": "sync",
                    "from_seq": tail.last + 1,
                    "through_seq": count - 1,
                });
                Box::pin(tail.send(sync.to_string())).await?;
            }
        }
        let ping_every = live.config().ping_interval;
        let mut pings =
            tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
        let mut behind = true;
        loop {
            if *stopping.borrow() {
                return Err(Stop::Close(1001, "server stopping"));
            }
            if behind {
                tail.needed = tail.needed.max(*watch.wake.borrow_and_update());
                // After the wake-up's value: a resync that woke us is seen here.
                let epoch = live.hub().epoch();
                behind = Box::pin(tail.send_page(&watch.recent, epoch)).await?;
                // Between pages, answer what the client sent without waiting for it.
                while let Some(Some(msg)) = stream.recv().now_or_never() {
                    Box::pin(tail.on_client(msg)).await?;
                }
                if pings.tick().now_or_never().is_some() {
                    Box::pin(tail.ping()).await?;
                }
                continue;
            }
            tokio::select! {
                changed = watch.wake.changed() => {
                    if changed.is_err() {
                        return Err(Stop::Gone);
                    }
                    behind = true;
                }
                msg = stream.recv() => match msg {
                    Some(m) => Box::pin(tail.on_client(m)).await?,
                    None => return Err(Stop::Gone),
                },
                _ = pings.tick() => Box::pin(tail.ping()).await?,
                frame = relay.frames.recv() => match frame {
                    Ok(event) => Box::pin(tail.send_transient(&event)).await?,
                    // Skipped deltas are transient: the final event comes from the store.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        return Err(Stop::Close(1011, "internal error"));
                    }
                },
                _ = stopping.changed() => return Err(Stop::Close(1001, "server stopping")),
            }
        }
    }
    .await;
    let result: Result<(), Stop> = outcome;
    if let Err(Stop::Close(code, reason)) = result {
        let _ = tail
            .session
            .close(Some(CloseReason {
                code: CloseCode::from(code),
                description: Some(reason.to_owned()),
            }))
            .await;
    }
}

impl Tail {
    /// Runs a blocking read on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&AppState, ConversationId) -> Result<T, switchboard_domain::DomainError>
        + Send
        + 'static,
    ) -> Result<T, Stop> {
        let st = self.state.clone();
        let conv = self.conversation;
        self.state
            .blocking(move || f(&st, conv).map_err(Into::into))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "live delivery: reading the store failed");
                Stop::Close(1011, "internal error")
            })
    }

    async fn send(&mut self, text: String) -> Result<(), Stop> {
        self.session.text(text).await.map_err(|_| Stop::Gone)
    }

    /// Reads and sends the next page; whether more may follow at once.
    async fn send_page(&mut self, recent: &Recent, epoch: u64) -> Result<bool, Stop> {
        let after = self.last;
        if let Some((t, end)) = self.since {
            let page = self
                .read(move |s, c| s.services.events().events_after(c, after, Some(t), PAGE))
                .await?;
            let full = page.len() == PAGE as usize;
            let history: Vec<PositionedEvent> =
                page.into_iter().take_while(|e| e.position < end).collect();
            let done = !full || history.len() < PAGE as usize;
            for e in &history {
                self.send_event(e).await?;
            }
            if done {
                // The history filtered by time ends here; every later event follows.
                self.since = None;
                self.last = self.last.max(end - 1);
            }
            return Ok(true);
        }
        let (page, gap) = self.live_page(recent, epoch).await?;
        let full = page.len() == PAGE as usize;
        for e in &page {
            self.send_event(e).await?;
        }
        if gap || (page.is_empty() && self.last < self.needed - 1) {
            // Not yet visible (a commit still in flight): read again shortly.
            tokio::time::sleep(Duration::from_millis(2)).await;
            return Ok(true);
        }
        Ok(full || self.last < self.needed - 1)
    }

    /// The next live page after the last position sent: from the conversation's shared
    /// window when it covers this wake-up, else read from the store by one subscriber at a
    /// time (the others then find it in the window: one query per append, not one per
    /// subscriber). The flag: the store showed a later event past a gap.
    async fn live_page(
        &self,
        recent: &Recent,
        epoch: u64,
    ) -> Result<(Vec<Arc<PositionedEvent>>, bool), Stop> {
        let after = self.last;
        let turn = loop {
            if let Some(page) = recent.after(after, self.needed, epoch, PAGE as usize) {
                return Ok((page, false));
            }
            if let Some(turn) = recent.read_turn().await {
                break turn;
            }
        };
        let read_epoch = self.state.live.hub().epoch();
        let read = self
            .read(move |s, c| s.services.events().events_after(c, after, None, PAGE))
            .await;
        let absorbed = read.map(|read| recent.absorb(after, read_epoch, read));
        drop(turn);
        absorbed
    }

    async fn send_event(&mut self, e: &PositionedEvent) -> Result<(), Stop> {
        let frame = match self.protocol {
            Protocol::Events => e.payload.clone(),
            Protocol::Session => {
                format!(
                    "{{\"type\":\"durable\",\"seq\":{},\"event\":{}}}",
                    e.position, e.payload
                )
            }
        };
        self.send(frame).await?;
        self.last = self.last.max(e.position);
        Ok(())
    }

    /// A relayed transient event (never stored): the agent server's JSON on
    /// `/sockets/events`, a `transient` envelope on `/sockets/session`.
    async fn send_transient(&mut self, event: &str) -> Result<(), Stop> {
        let frame = match self.protocol {
            Protocol::Events => event.to_owned(),
            Protocol::Session => format!("{{\"type\":\"transient\",\"event\":{event}}}"),
        };
        self.send(frame).await
    }

    async fn ping(&mut self) -> Result<(), Stop> {
        if self.missed_pongs >= 2 {
            return Err(Stop::Close(1011, "heartbeat: two pings unanswered"));
        }
        self.missed_pongs += 1;
        self.session.ping(b"").await.map_err(|_| Stop::Gone)
    }

    async fn on_client(
        &mut self,
        msg: Result<AggregatedMessage, actix_ws::ProtocolError>,
    ) -> Result<(), Stop> {
        match msg {
            Ok(AggregatedMessage::Ping(b)) => self.session.pong(&b).await.map_err(|_| Stop::Gone),
            Ok(AggregatedMessage::Pong(_)) => {
                self.missed_pongs = 0;
                Ok(())
            }
            Ok(AggregatedMessage::Close(_)) => Err(Stop::Close(1000, "closed")),
            Ok(AggregatedMessage::Text(t)) => self.on_text(&t).await,
            Ok(AggregatedMessage::Binary(_)) => {
                self.error("invalid_frame", "binary frames are not accepted")
                    .await
            }
            Err(actix_ws::ProtocolError::Overflow) => Err(Stop::Close(1009, "frame too large")),
            Err(e) if super::sockets::is_invalid_text(&e) => {
                Err(Stop::Close(1007, "text frame is not UTF-8"))
            }
            Err(_) => Err(Stop::Close(1002, "protocol error")),
        }
    }

    async fn on_text(&mut self, text: &str) -> Result<(), Stop> {
        match ClientFrame::read(text) {
            // Already authenticated (a client that sends its key both ways).
            ClientFrame::Auth(_) => Ok(()),
            ClientFrame::Message(v) => self.send_message(v).await,
            ClientFrame::Invalid(detail) => self.error("invalid_frame", detail).await,
        }
    }

    /// A client `Message` (`{role, content}`): sent to the conversation as send-message with
    /// `run: true` (the agent server's socket behaviour); a refusal is an error frame.
    async fn send_message(&mut self, message: Value) -> Result<(), Stop> {
        let body = serde_json::json!({
            "role": message["role"],
            "content": message["content"],
            "run": true,
        });
        let parsed = match crate::app_conversations::parse_message(&body) {
            Ok(m) => m,
            Err(crate::error::ApiError::Validation(errors)) => {
                let detail = errors
                    .first()
                    .map(|e| e.msg.clone())
                    .unwrap_or_else(|| "invalid message".into());
                return self.error("invalid_message", &detail).await;
            }
            Err(e) => return self.error("invalid_message", &e.to_string()).await,
        };
        let st = self.state.clone();
        let ctx = self.ctx.clone();
        let conv = self.conversation;
        let sent = self
            .state
            .blocking(move || {
                st.services
                    .app_conversations()
                    .send_message(&ctx, conv, &parsed)
                    .map_err(Into::into)
            })
            .await;
        match sent {
            Ok(_) => Ok(()),
            Err(e) => self.error("send_message_failed", &e.to_string()).await,
        }
    }

    /// An error frame; the socket stays open.
    async fn error(&mut self, code: &str, detail: &str) -> Result<(), Stop> {
        let frame = match self.protocol {
            Protocol::Events => serde_json::json!({
                "id": uuid::Uuid::new_v4().to_string(),
                "timestamp": switchboard_domain::time_input::format_rfc3339_micros(
                    switchboard_domain::time_input::now_micros()
                ).trim_end_matches('Z'),
                "source": "environment",
                "code": code,
                "detail": detail,
                "kind": "ServerErrorEvent",
            }),
            Protocol::Session => serde_json::json!({
                "type": "error",
                "code": code,
                "detail": detail,
            }),
        };
        self.send(frame.to_string()).await
    }
}
