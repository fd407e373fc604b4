//! One subscriber's tail of a conversation's events (API.md, Live delivery): the first frame,
//! the history, then live events, read page by page from the store after the last position
//! sent, woken by the hub when caught up; heartbeats, client frames, and the close on server
//! shutdown.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use actix_ws::{AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Session};
use bytestring::ByteString;
use futures_util::FutureExt;
use serde_json::Value;
use switchboard_domain::conversations::app::SendMessage;
use switchboard_domain::events::PositionedEvent;
use switchboard_domain::live_frames::ClientFrame;
use switchboard_domain::typed_body;
use switchboard_domain::{ConversationId, OrgContext};
use time::OffsetDateTime;

use super::hub::{PAGE, SharedEvent, Watch};
use super::relay::{RelayGuard, Transient};
use super::{Admission, Signal};
use crate::AppState;

/// Which protocol a socket speaks; as a number, the kind of frame it is sent for an event
/// ([`Shared::frame`](super::hub::Shared::frame)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `/sockets/events`: each event's stored JSON; a `full_state` first.
    Events = 0,
    /// `/sockets/session`: envelopes with `seq`.
    Session = 1,
}

const _: () = assert!(Protocol::Session as usize + 1 == super::hub::FRAME_KINDS);

/// The frame an event is sent as: its stored JSON on `/sockets/events`, a `durable`
/// envelope on `/sockets/session`.
fn render(protocol: Protocol, e: &PositionedEvent) -> ByteString {
    match protocol {
        Protocol::Events => e.payload.clone().into(),
        Protocol::Session => format!(
            "{{\"type\":\"durable\",\"seq\":{},\"event\":{}}}",
            e.position, e.payload
        )
        .into(),
    }
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

/// An authenticated socket of a visible conversation, ready to be served (`sockets` hands
/// it over once the handshake checks passed).
pub(crate) struct Accepted {
    pub state: web::Data<AppState>,
    pub session: Session,
    pub stream: AggregatedMessageStream,
    pub ctx: OrgContext,
    pub conversation: ConversationId,
    pub start: Start,
    pub protocol: Protocol,
    /// Its place under `--max-subscribers`, given back when the socket ends.
    pub admission: Admission,
}

/// One subscriber: everything an open socket holds. An idle socket is this struct and the
/// few wake-up registrations of its `select!`, in one task; what is needed only while
/// sending (store reads, the close, client frames) is boxed when used, so it never sizes the
/// idle task.
struct Tail {
    state: web::Data<AppState>,
    session: Session,
    stream: AggregatedMessageStream,
    /// Boxed: read only to send a client's messages.
    ctx: Box<OrgContext>,
    conversation: ConversationId,
    protocol: Protocol,
    start: Start,
    /// The last position sent (or skipped as before the start).
    last: i64,
    /// While replaying `resend_mode=since`: the filter and the end of that history.
    since: Option<(OffsetDateTime, i64)>,
    /// Pings sent and not answered.
    missed_pongs: u32,
    /// The event count the last wake-up announced (or the count read at the start): every
    /// position below it is committed.
    needed: i64,
    /// The conversation's wake-up and shared window; registered before the store is read.
    watch: Watch,
    /// The agent server's transient events, relayed while this socket is open.
    relay: RelayGuard,
    /// Heartbeats and the server's shutdown.
    signals: tokio::sync::watch::Receiver<Signal>,
    _admission: Admission,
}

/// Serves a socket until the client leaves, the heartbeat fails, or the server stops. Not an
/// `async fn`: the task's future is [`Tail::run`]'s alone, with no second copy of the socket.
pub(crate) fn run_tail(socket: Accepted) -> impl Future<Output = ()> {
    let live = socket.state.live.clone();
    // Registered before the store is read: an append committed after this wakes us.
    let watch = live.hub().watch(socket.conversation);
    let relay = live
        .relays()
        .join(socket.state.clone(), socket.conversation);
    let tail = Tail {
        signals: live.signals(),
        state: socket.state,
        session: socket.session,
        stream: socket.stream,
        ctx: Box::new(socket.ctx),
        conversation: socket.conversation,
        protocol: socket.protocol,
        start: socket.start,
        last: -1,
        since: None,
        missed_pongs: 0,
        needed: 0,
        watch,
        relay,
        _admission: socket.admission,
    };
    tail.run()
}

impl Tail {
    /// The socket's task. Not an `async fn`: one taking `mut self` keeps a second copy of
    /// `self` (the argument, then the binding), and this future is what an idle socket costs
    /// (904 bytes; about 1,300 as an `async fn`).
    #[allow(clippy::manual_async_fn)]
    fn run(mut self) -> impl Future<Output = ()> {
        async move {
            if let Err(Stop::Close(code, reason)) = self.serve().await {
                // Boxed: the close does not size the task that awaits it.
                Box::pin(close(self.session.clone(), code, reason)).await;
            }
        }
    }

    /// The first frame, then history and live events until the socket ends.
    async fn serve(&mut self) -> Result<(), Stop> {
        // A socket admitted while the server stops: its receiver has already seen the signal.
        if self.signals.borrow().stopping {
            return Err(Stop::Close(1001, "server stopping"));
        }
        Box::pin(self.begin()).await?;
        let mut behind = true;
        loop {
            if self.signals.has_changed().unwrap_or(true) {
                Box::pin(self.on_signal()).await?;
            }
            if behind {
                behind = self.send_next().await?;
                // Between pages, answer what the client sent without waiting for it.
                while let Some(Some(msg)) = self.stream.recv().now_or_never() {
                    Box::pin(self.on_client(msg)).await?;
                }
                continue;
            }
            tokio::select! {
                changed = self.watch.wake.changed() => {
                    if changed.is_err() {
                        return Err(Stop::Gone);
                    }
                    behind = true;
                }
                msg = self.stream.recv() => match msg {
                    Some(m) => Box::pin(self.on_client(m)).await?,
                    None => return Err(Stop::Gone),
                },
                changed = self.signals.changed() => {
                    if changed.is_err() {
                        return Err(Stop::Close(1001, "server stopping"));
                    }
                    Box::pin(self.on_signal()).await?;
                }
                frame = self.relay.frames.recv() => match frame {
                    Ok(event) => Box::pin(self.send_transient(&event)).await?,
                    // Skipped deltas are transient: the final event comes from the store.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        return Err(Stop::Close(1011, "internal error"));
                    }
                },
            }
        }
    }

    /// Reads the event count, places the start, and sends the first frame (`full_state`, or
    /// `sync`).
    async fn begin(&mut self) -> Result<(), Stop> {
        let count = self.read(|s, c| s.services.events().event_count(c)).await?;
        self.needed = count;
        match self.start {
            Start::LiveOnly => self.last = count - 1,
            Start::All => {}
            Start::Since(t) => self.since = Some((t, count)),
            Start::AfterSeq(n) => self.last = n,
        }
        match self.protocol {
            Protocol::Events => {
                let state = self.read(|s, c| s.services.events().full_state(c)).await?;
                self.send(state.into()).await
            }
            Protocol::Session => {
                let sync = serde_json::json!({
                    "type": "sync",
                    "from_seq": self.last + 1,
                    "through_seq": count - 1,
                });
                self.send(sync.to_string().into()).await
            }
        }
    }

    /// Sends what the last wake-up announced: from the conversation's shared window when it
    /// covers it (the common case: one append, every subscriber woken for it), else a page
    /// read from the store. Whether more may follow at once.
    async fn send_next(&mut self) -> Result<bool, Stop> {
        self.needed = self.needed.max(*self.watch.wake.borrow_and_update());
        // After the wake-up's value: a resync that woke us is seen here.
        let epoch = self.state.live.hub().epoch();
        if self.since.is_none()
            && let Some(page) =
                self.watch
                    .recent
                    .after(self.last, self.needed, epoch, PAGE as usize)
        {
            self.send_shared(&page).await?;
            return Ok(page.len() == PAGE as usize || self.last < self.needed - 1);
        }
        Box::pin(self.send_page(epoch)).await
    }

    /// Sends events of the shared window (their frames rendered once for every subscriber).
    async fn send_shared(&mut self, page: &[Arc<SharedEvent>]) -> Result<(), Stop> {
        for e in page {
            let frame = e.frame(self.protocol as usize, |e| render(self.protocol, e));
            self.send(frame).await?;
            self.last = self.last.max(e.position());
        }
        Ok(())
    }

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

    async fn send(&mut self, frame: ByteString) -> Result<(), Stop> {
        self.session.text(frame).await.map_err(|_| Stop::Gone)
    }

    /// Reads and sends the next page from the store; whether more may follow at once.
    async fn send_page(&mut self, epoch: u64) -> Result<bool, Stop> {
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
        let (page, gap) = self.live_page(epoch).await?;
        let full = page.len() == PAGE as usize;
        self.send_shared(&page).await?;
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
    async fn live_page(&self, epoch: u64) -> Result<(Vec<Arc<SharedEvent>>, bool), Stop> {
        let after = self.last;
        let recent = &self.watch.recent;
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
        self.send(render(self.protocol, e)).await?;
        self.last = self.last.max(e.position);
        Ok(())
    }

    /// A relayed transient event (never stored): the agent server's JSON on
    /// `/sockets/events`, a `transient` envelope on `/sockets/session`.
    async fn send_transient(&mut self, event: &Transient) -> Result<(), Stop> {
        let frame = event.frame(self.protocol as usize, |text| match self.protocol {
            Protocol::Events => text.clone(),
            Protocol::Session => format!("{{\"type\":\"transient\",\"event\":{text}}}").into(),
        });
        self.send(frame).await
    }

    /// The process's signal changed: the server stops (close 1001), or a heartbeat.
    async fn on_signal(&mut self) -> Result<(), Stop> {
        let signal = *self.signals.borrow_and_update();
        if signal.stopping {
            return Err(Stop::Close(1001, "server stopping"));
        }
        self.ping().await
    }

    /// A heartbeat: pings, or closes (1011) when the last two pings went unanswered.
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
            Err(e) if is_invalid_text(&e) => Err(Stop::Close(1007, "text frame is not UTF-8")),
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
        let parsed = match typed_body::parse::<SendMessage>(&body) {
            Ok(m) => m,
            Err(errors) => {
                let detail = errors
                    .first()
                    .map(|e| e.msg.clone())
                    .unwrap_or_else(|| "invalid message".into());
                return self.error("invalid_message", &detail).await;
            }
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
        self.send(frame.to_string().into()).await
    }
}

/// Closes with `code` and a short reason.
pub(super) async fn close(session: Session, code: u16, reason: &str) {
    let _ = session
        .close(Some(CloseReason {
            code: CloseCode::from(code),
            description: Some(reason.to_owned()),
        }))
        .await;
}

/// Whether a frame error is a text frame (or a continued text message) that is not UTF-8:
/// actix-ws reports it as an I/O error of kind `InvalidData`.
pub(super) fn is_invalid_text(e: &actix_ws::ProtocolError) -> bool {
    matches!(e, actix_ws::ProtocolError::Io(io) if io.kind() == std::io::ErrorKind::InvalidData)
}
