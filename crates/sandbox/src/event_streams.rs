//! The stream path's websocket client (issue 19): [`WsEventStreams`] implements the domain's
//! [`AgentEventStreams`] with one `tokio-tungstenite` socket per streamed conversation to its
//! agent server's `/sockets/events/{id}` (`X-Session-API-Key`; `resend_mode=all`, or
//! `resend_mode=since&after_timestamp=…` from [`resend_after`] of the newest event known).
//!
//! Nothing runs in the background: the sockets live in a current-thread Tokio runtime of this
//! client that starts no thread, and are driven only inside [`AgentEventStreams::receive`], on
//! the caller's thread (the supervisor's job). Between two calls the kernel buffers what
//! arrives. A lost socket (closed, failed, refused) is connected again after a backoff
//! (50 ms after a socket that had sent frames ended, doubling to 5 s while connections fail
//! or are refused before their first frame), resending from
//! a margin before the newest event it had received, so nothing published meanwhile is
//! missed; what is resent twice the store skips.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use switchboard_domain::ConversationId;
use switchboard_domain::sandboxes::event_streams::{
    AgentEventStreams, Received, StreamFrame, StreamTarget, resend_after,
};
use time::OffsetDateTime;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The longest a connection (TCP and the websocket handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The wait before connecting again after an open socket ended.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between two failed connections.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The most frames read from one socket before the others get their turn.
const FRAMES_PER_TURN: usize = 256;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;
type Connecting = Pin<Box<dyn Future<Output = Result<Socket, String>> + Send>>;

/// Where one stream is.
enum State {
    Connecting(Connecting),
    Open(Box<Socket>),
    Waiting(Pin<Box<tokio::time::Sleep>>),
}

/// One streamed conversation.
struct Stream {
    target: StreamTarget,
    state: State,
    /// The newest event instant received (or the target's, before any): where a reconnection
    /// resends from.
    newest: Option<OffsetDateTime>,
    backoff: Duration,
    /// The next frame is the first of a connection (the subscriber's own `full_state`).
    first_frame: bool,
    /// Whether a connection was ever open (a later one is a resume, logged as such).
    opened: bool,
    /// Whether the current connection sent a frame (one that ends before any, as a refusal
    /// with 4001, 4004 or 1013 does, counts as a failed connection: its backoff grows).
    heard: bool,
}

/// What happened to an open socket in one turn.
enum Turn {
    /// Nothing more to read now.
    Idle,
    /// The socket ended (why).
    Lost(String),
}

impl Stream {
    fn new(target: StreamTarget) -> Stream {
        Stream {
            state: State::Connecting(connect(&target, target.resend_from)),
            newest: target.resend_from,
            target,
            backoff: FIRST_BACKOFF,
            first_frame: true,
            opened: false,
            heard: false,
        }
    }

    /// Drives the stream as far as it goes without waiting; frames go to `out`.
    fn poll(&mut self, cx: &mut Context<'_>, out: &mut Vec<StreamFrame>) {
        loop {
            match &mut self.state {
                State::Connecting(f) => match f.as_mut().poll(cx) {
                    Poll::Pending => return,
                    Poll::Ready(Ok(socket)) => {
                        tracing::info!(conversation = %self.target.conversation, sandbox = %self.target.sandbox, resumed = self.opened, "agent event stream open");
                        self.opened = true;
                        self.first_frame = true;
                        self.heard = false;
                        self.state = State::Open(Box::new(socket));
                    }
                    Poll::Ready(Err(why)) => {
                        tracing::debug!(conversation = %self.target.conversation, error = %why, retry_in = ?self.backoff, "agent event stream: connecting failed");
                        self.wait(false);
                    }
                },
                State::Waiting(sleep) => match sleep.as_mut().poll(cx) {
                    Poll::Pending => return,
                    Poll::Ready(()) => {
                        self.state = State::Connecting(connect(&self.target, self.newest));
                    }
                },
                State::Open(socket) => {
                    let (turn, frames) = read_turn(socket, cx);
                    for text in frames {
                        self.frame(text, out);
                    }
                    match turn {
                        Turn::Idle => return,
                        Turn::Lost(why) if self.heard => {
                            tracing::info!(conversation = %self.target.conversation, sandbox = %self.target.sandbox, reason = %why, "agent event stream lost; connecting again");
                            self.wait(true);
                        }
                        Turn::Lost(why) => {
                            tracing::debug!(conversation = %self.target.conversation, reason = %why, retry_in = ?self.backoff, "agent event stream refused");
                            self.wait(false);
                        }
                    }
                }
            }
        }
    }

    /// Waits the backoff before the next connection; `reset`: the wait is the first one.
    fn wait(&mut self, reset: bool) {
        let delay = if reset { FIRST_BACKOFF } else { self.backoff };
        self.backoff = (delay * 2).min(MAX_BACKOFF);
        self.state = State::Waiting(Box::pin(tokio::time::sleep(delay)));
    }

    /// One received event: the subscriber's own `full_state` snapshot is left out, the
    /// newest instant kept.
    fn frame(&mut self, text: String, out: &mut Vec<StreamFrame>) {
        self.heard = true;
        let (snapshot, ts) = {
            let head: Head<'_> = serde_json::from_str(&text).unwrap_or_default();
            (
                head.kind.as_deref() == Some("ConversationStateUpdateEvent")
                    && head.key.as_deref() == Some("full_state"),
                head.timestamp
                    .as_deref()
                    .and_then(switchboard_model::parse_instant),
            )
        };
        if std::mem::replace(&mut self.first_frame, false) && snapshot {
            return;
        }
        if let Some(ts) = ts
            && self.newest.is_none_or(|n| ts > n)
        {
            self.newest = Some(ts);
        }
        out.push(StreamFrame {
            conversation: self.target.conversation,
            text,
        });
    }
}

/// The fields of a frame the client looks at.
#[derive(Deserialize, Default)]
struct Head<'a> {
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
}

/// Reads what an open socket has now (at most [`FRAMES_PER_TURN`] frames, then it asks to be
/// polled again): the text frames, and whether it is idle or ended. Pings are answered by the
/// socket as it reads.
fn read_turn(socket: &mut Socket, cx: &mut Context<'_>) -> (Turn, Vec<String>) {
    let mut frames = Vec::new();
    loop {
        if frames.len() >= FRAMES_PER_TURN {
            cx.waker().wake_by_ref();
            return (Turn::Idle, frames);
        }
        match socket.poll_next_unpin(cx) {
            Poll::Pending => return (Turn::Idle, frames),
            Poll::Ready(Some(Ok(Message::Text(text)))) => frames.push(text.as_str().to_owned()),
            Poll::Ready(Some(Ok(Message::Close(frame)))) => {
                let why = frame.map_or_else(
                    || "closed by the agent server".to_owned(),
                    |f| format!("closed by the agent server: {} {}", f.code, f.reason),
                );
                return (Turn::Lost(why), frames);
            }
            Poll::Ready(Some(Ok(_))) => {}
            Poll::Ready(Some(Err(e))) => return (Turn::Lost(e.to_string()), frames),
            Poll::Ready(None) => return (Turn::Lost("the socket ended".to_owned()), frames),
        }
    }
}

/// A connection to the target's socket, resending from a margin before `newest` (every
/// event when `None`). Timers start when it is first polled (inside the client's runtime).
fn connect(target: &StreamTarget, newest: Option<OffsetDateTime>) -> Connecting {
    let base = target
        .base_url
        .trim_end_matches('/')
        .replacen("https://", "wss://", 1)
        .replacen("http://", "ws://", 1);
    let resend = match newest {
        Some(t) => format!("resend_mode=since&after_timestamp={}", resend_after(t)),
        None => "resend_mode=all".to_owned(),
    };
    let url = format!(
        "{base}/sockets/events/{}?{resend}",
        target.conversation.0.simple()
    );
    let key = target.key.expose().to_owned();
    Box::pin(async move {
        let mut request = url.into_client_request().map_err(|e| e.to_string())?;
        let header = key
            .parse()
            .map_err(|_| "the session key is not a header value".to_owned())?;
        request.headers_mut().insert("X-Session-API-Key", header);
        let connecting = tokio_tungstenite::connect_async_with_config(request, None, true);
        match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
            Ok(Ok((socket, _))) => Ok(socket),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no connection within {CONNECT_TIMEOUT:?}")),
        }
    })
}

/// The streams and the runtime that drives them.
struct Inner {
    // Dropped before the runtime.
    streams: HashMap<ConversationId, Stream>,
    runtime: tokio::runtime::Runtime,
}

/// The agent servers' event sockets of the stream path (module documentation).
pub struct WsEventStreams {
    inner: Mutex<Inner>,
    interrupt: Notify,
    streamed: AtomicUsize,
}

impl WsEventStreams {
    /// No stream yet.
    ///
    /// # Errors
    /// The runtime cannot be built (the process has no file descriptor left for its timer or
    /// I/O driver).
    pub fn new() -> std::io::Result<WsEventStreams> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(WsEventStreams {
            inner: Mutex::new(Inner {
                streams: HashMap::new(),
                runtime,
            }),
            interrupt: Notify::new(),
            streamed: AtomicUsize::new(0),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AgentEventStreams for WsEventStreams {
    fn keep(&self, wanted: Vec<StreamTarget>) {
        let mut inner = self.inner();
        let Inner { streams, runtime } = &mut *inner;
        let _entered = runtime.enter();
        let mut kept = HashMap::with_capacity(wanted.len());
        for target in wanted {
            let id = target.conversation;
            let stream = match streams.remove(&id) {
                Some(s) if s.target.base_url == target.base_url && s.target.key == target.key => s,
                _ => Stream::new(target),
            };
            kept.insert(id, stream);
        }
        for (id, stream) in streams.drain() {
            tracing::info!(conversation = %id, sandbox = %stream.target.sandbox, "agent event stream closed: its sandbox no longer runs, or it is no longer among the streamed");
        }
        *streams = kept;
        self.streamed.store(streams.len(), Ordering::Relaxed);
    }

    fn receive(&self, wait: Duration) -> Received {
        let mut inner = self.inner();
        let Inner { streams, runtime } = &mut *inner;
        let mut frames = Vec::new();
        let interrupted = runtime.block_on(async {
            let all = std::future::poll_fn(|cx| {
                for stream in streams.values_mut() {
                    stream.poll(cx, &mut frames);
                }
                if frames.is_empty() {
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            });
            tokio::select! {
                biased;
                () = self.interrupt.notified() => true,
                () = all => false,
                () = tokio::time::sleep(wait) => false,
            }
        });
        Received {
            frames,
            interrupted,
        }
    }

    fn interrupt(&self) {
        self.interrupt.notify_one();
    }

    fn streamed(&self) -> usize {
        self.streamed.load(Ordering::Relaxed)
    }
}
