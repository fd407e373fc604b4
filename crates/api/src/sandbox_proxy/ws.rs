//! Websockets through the proxy: each client socket gets a socket of its own to the sandbox's
//! service (the agent server replays and subscribes per socket), relayed frame by frame both
//! ways: text, binary, pings and pongs (heartbeats pass through), and close frames with their
//! codes and reasons.
//!
//! The sandbox is never held up by a client: its frames are read as they come and queued for
//! the client in a bounded queue ([`super::ProxyConfig::ws_queue`] frames); a client that
//! falls that far behind and makes no room in it for [`super::ProxyConfig::ws_stall`] is
//! closed (1008, "client too slow") and its upstream socket closed, while every other client
//! goes on. (A client that reads, only slower for a moment than a burst comes, is not closed:
//! each frame it takes makes room for the next.) A client's frames go upstream as fast as the sandbox
//! takes them (that client alone waits).
//!
//! Credentials as for HTTP, checked before the upgrade (401/404/409 answers); a client with
//! none in its headers or query is upgraded and must send `{"type": "auth",
//! "session_api_key": …}` (a session key, or an API key) first, within
//! [`super::ProxyConfig::ws_auth_timeout`], or is closed with 4001 as the agent server does.
//! Auth frames are never forwarded (Switchboard authenticates upstream by header).

use std::time::Duration;

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Session};
use bytestring::ByteString;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use switchboard_domain::DomainError;
use switchboard_domain::services::ProxyTarget;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode as WsCloseCode;
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::access::{Credential, credential, resolve};
use super::config::{Proxy, ProxyConfig};
use super::route::Route;
use crate::error::ApiError;
use crate::member_sockets::{MemberPermit, SocketLimit};
use crate::metrics::OpenGauge;
use crate::state::AppState;

/// The upstream socket, and its permit among the proxy's sockets (given back when the relay
/// ends: [`super::upstream`]).
struct Upstream {
    socket: Socket,
    _permit: OwnedSemaphorePermit,
    /// Counted for the member (`--max-sockets-per-member`) while it is open.
    _member: Option<MemberPermit>,
}

/// The upstream socket itself.
type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Close code for a failed first-frame auth (the agent server's).
pub const CLOSE_AUTH_FAILED: u16 = 4001;
/// Close code when the sandbox is unknown to the caller.
pub const CLOSE_NOT_FOUND: u16 = 4004;
/// Close code when the sandbox is not `RUNNING`.
pub const CLOSE_NOT_RUNNING: u16 = 4009;
/// Close code for a client that fell [`ProxyConfig::ws_queue`] frames behind (RFC 6455
/// policy violation).
pub const CLOSE_TOO_SLOW: u16 = 1008;
/// Close code when the sandbox's socket failed (RFC 6455 internal error).
pub const CLOSE_UPSTREAM_FAILED: u16 = 1011;
/// Close code when no socket to the sandbox is left in the open-files budget (RFC 6455 "try
/// again later").
pub const CLOSE_TRY_AGAIN: u16 = 1013;
/// How long a close is given to reach a client or the sandbox.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// The upstream socket's read buffer (allocated up front, per socket): small, so an idle
/// relayed socket costs little; larger frames grow it as needed.
const UPSTREAM_READ_BUFFER: usize = 4096;

/// Whether `req` asks for a websocket.
pub fn is_upgrade(req: &HttpRequest) -> bool {
    req.method() == actix_web::http::Method::GET
        && req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Relays the websocket of `req` to the sandbox's service.
///
/// # Errors
/// Before the upgrade: the credential's 401/404/409, 502/504 when the sandbox's socket cannot
/// be opened, or the status the sandbox refused its handshake with.
pub async fn relay(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
    route: Route,
) -> Result<HttpResponse, ApiError> {
    let config = state.proxy.config().clone();
    if let Some(cred) = credential(&req) {
        let session = matches!(cred, Credential::Session(_));
        let target = resolve(&state, &route, cred).await?;
        super::access::note_target(&req, session, &target);
        let (upstream, protocol) = connect(&req, &route, &target, &state.proxy).await?;
        let (response, session, stream) = match protocol {
            Some(p) => actix_ws::handle_with_protocols(&req, payload, &[p.as_str()]),
            None => actix_ws::handle(&req, payload),
        }
        .map_err(|e| ApiError::BadBody(e.to_string()))?;
        let stream = limits(stream, &config);
        let open = state.metrics.activity().proxy_socket();
        actix_web::rt::spawn(pump(session, stream, upstream, config, open));
        return Ok(response);
    }
    let (response, session, stream) =
        actix_ws::handle(&req, payload).map_err(|e| ApiError::BadBody(e.to_string()))?;
    let mut stream = limits(stream, &config);
    actix_web::rt::spawn(async move {
        let Some(key) = first_frame_key(&mut stream, config.ws_auth_timeout).await else {
            close(session, CLOSE_AUTH_FAILED, "Authentication failed").await;
            return;
        };
        let target = match resolve_first_frame(&state, &route, key).await {
            Ok(t) => t,
            Err(e) => {
                let (code, reason) = close_for(&e);
                close(session, code, reason).await;
                return;
            }
        };
        let connected = connect(&req, &route, &target, &state.proxy).await;
        if let Err(e) = &connected {
            state.metrics.activity().upstream_error(e);
        }
        match connected {
            Ok((upstream, _)) => {
                let open = state.metrics.activity().proxy_socket();
                pump(session, stream, upstream, config, open).await;
            }
            Err(
                ApiError::ProxySocketsExhausted
                | ApiError::MemberSocketsExhausted
                | ApiError::OrgSocketsExhausted,
            ) => {
                close(
                    session,
                    CLOSE_TRY_AGAIN,
                    "too many connections to sandboxes",
                )
                .await;
            }
            Err(_) => close(session, CLOSE_UPSTREAM_FAILED, "sandbox unreachable").await,
        }
    });
    Ok(response)
}

/// The client stream with the proxy's message limits.
fn limits(stream: actix_ws::MessageStream, config: &ProxyConfig) -> AggregatedMessageStream {
    stream
        .max_frame_size(config.ws_max_message)
        .aggregate_continuations()
        .max_continuation_size(config.ws_max_message)
}

/// A first-frame key: a session key, else an API key (the agent server knows only session
/// keys; browsers of Switchboard's users may hold an API key instead).
async fn resolve_first_frame(
    state: &web::Data<AppState>,
    route: &Route,
    key: String,
) -> Result<ProxyTarget, ApiError> {
    match resolve(state, route, Credential::Session(key.clone())).await {
        Err(ApiError::Domain(DomainError::InvalidSessionKey)) => {
            resolve(state, route, Credential::ApiKey(key)).await
        }
        other => other,
    }
}

/// The close code and reason for a refusal after the upgrade.
fn close_for(e: &ApiError) -> (u16, &'static str) {
    match e {
        ApiError::Domain(DomainError::SandboxNotFound) => (CLOSE_NOT_FOUND, "sandbox not found"),
        ApiError::Domain(DomainError::SandboxNotReachable(_)) => {
            (CLOSE_NOT_RUNNING, "sandbox is not running")
        }
        ApiError::Domain(_) => (CLOSE_AUTH_FAILED, "Authentication failed"),
        _ => (CLOSE_UPSTREAM_FAILED, "internal error"),
    }
}

/// The key of a first `{"type": "auth", "session_api_key": …}` text frame, awaited up to
/// `timeout`; `None` for anything else.
async fn first_frame_key(
    stream: &mut AggregatedMessageStream,
    timeout: Duration,
) -> Option<String> {
    loop {
        let msg = tokio::time::timeout(timeout, stream.next()).await.ok()??;
        match msg.ok()? {
            AggregatedMessage::Text(t) => return auth_key(&t),
            AggregatedMessage::Ping(_) | AggregatedMessage::Pong(_) => continue,
            _ => return None,
        }
    }
}

/// The key of an auth frame (`{"type": "auth", "session_api_key": "…"}`, nothing else).
pub fn auth_key(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    if obj.get("type")? != "auth" || obj.keys().any(|k| k != "type" && k != "session_api_key") {
        return None;
    }
    obj.get("session_api_key")?
        .as_str()
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// Opens the sandbox's socket with its session key, holding one of `sockets`' permits; with
/// the subprotocol it chose.
///
/// # Errors
/// 404 for a service the sandbox does not expose; 503 when no socket is left in the
/// open-files budget; 502/504 when the socket cannot be opened.
async fn connect(
    req: &HttpRequest,
    route: &Route,
    target: &ProxyTarget,
    proxy: &Proxy,
) -> Result<(Upstream, Option<String>), ApiError> {
    let config = proxy.config();
    let base = target
        .service_url(&route.service)
        .ok_or(DomainError::SandboxNotFound)?;
    let member = match target.member {
        Some(m) => Some(proxy.member_sockets().take(m, target.org).map_err(|limit| {
            match limit {
                SocketLimit::Member => {
                    tracing::warn!(sandbox = ?route.sandbox_id, member = %m, "a member holds --max-sockets-per-member proxied sockets already");
                    ApiError::MemberSocketsExhausted
                }
                SocketLimit::Org => {
                    tracing::warn!(sandbox = ?route.sandbox_id, org = ?target.org, "an organization holds --max-sockets-per-org proxied sockets already");
                    ApiError::OrgSocketsExhausted
                }
            }
        })?),
        None => None,
    };
    let permit = proxy.sockets().take().map_err(|_| {
        tracing::warn!(sandbox = ?route.sandbox_id, "no socket left in the proxy's share of the open-files budget");
        ApiError::ProxySocketsExhausted
    })?;
    let url = super::http::upstream_url(base, route, req.query_string());
    let url = match url.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => url,
    };
    let mut request = url
        .into_client_request()
        .map_err(|_| ApiError::UpstreamUnreachable)?;
    let headers = super::http::upstream_headers(req, route, target);
    copy_handshake_headers(&headers, request.headers_mut());
    let ws_config = WebSocketConfig::default()
        .read_buffer_size(UPSTREAM_READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(Some(config.ws_max_message))
        .max_frame_size(Some(config.ws_max_message));
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(ws_config), true);
    match tokio::time::timeout(config.connect_timeout + config.connect_timeout, connecting).await {
        Err(_) => Err(ApiError::UpstreamTimeout),
        Ok(Ok((socket, answer))) => {
            let protocol = answer
                .headers()
                .get("sec-websocket-protocol")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            Ok((
                Upstream {
                    socket,
                    _permit: permit,
                    _member: member,
                },
                protocol,
            ))
        }
        Ok(Err(tungstenite::Error::Http(answer))) => {
            let status = answer.status().as_u16();
            tracing::warn!(status, "a sandbox's service refused a websocket");
            Err(ApiError::UpstreamUnreachable)
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "a sandbox's websocket could not be opened");
            Err(ApiError::UpstreamUnreachable)
        }
    }
}

/// The client's handshake headers that go upstream (those of [`super::http::upstream_headers`]
/// but the websocket handshake's own, which the upstream client writes itself).
fn copy_handshake_headers(from: &HeaderMap, to: &mut tungstenite::http::HeaderMap) {
    for (name, value) in from {
        let n = name.as_str();
        if n.starts_with("sec-websocket-") && n != "sec-websocket-protocol" {
            continue;
        }
        if matches!(n, "content-length" | "content-type") {
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            tungstenite::http::HeaderName::from_bytes(n.as_bytes()),
            tungstenite::http::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            to.append(n, v);
        }
    }
}

/// Why the sandbox-to-client direction ended.
enum UpstreamEnd {
    /// The sandbox closed (its close frame is queued for the client) or its socket ended.
    Closed,
    /// The client fell a whole queue behind and made no room for the stall time.
    Slow,
}

/// Relays until either side closes (counted in `sandbox_proxy_open_websockets` while
/// `_open` lives).
async fn pump(
    session: Session,
    mut client: AggregatedMessageStream,
    upstream: Upstream,
    config: ProxyConfig,
    _open: OpenGauge,
) {
    let Upstream {
        socket,
        _permit,
        _member,
    } = upstream;
    let (mut up_tx, up_rx) = socket.split();
    let (queue, queued) = tokio::sync::mpsc::channel::<Message>(config.ws_queue.max(1));
    let mut reader = actix_web::rt::spawn(read_upstream(up_rx, queue, config.ws_stall));
    let mut writer = actix_web::rt::spawn(write_client(session.clone(), queued));
    loop {
        tokio::select! {
            end = &mut reader => {
                if matches!(end, Ok(UpstreamEnd::Slow)) {
                    writer.abort();
                    let bye = Message::Close(Some(CloseFrame {
                        code: WsCloseCode::from(1001u16),
                        reason: "client too slow".into(),
                    }));
                    let _ = tokio::time::timeout(CLOSE_WAIT, up_tx.send(bye)).await;
                    close(session, CLOSE_TOO_SLOW, "client too slow").await;
                } else {
                    // The queued frames, the sandbox's close frame last, reach the client.
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut writer).await;
                    writer.abort();
                }
                return;
            }
            msg = client.next() => {
                if !to_upstream(&mut up_tx, msg).await {
                    // The sandbox answers the close; the reader then ends.
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut reader).await;
                    reader.abort();
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut writer).await;
                    writer.abort();
                    return;
                }
            }
        }
    }
}

/// Forwards one client message upstream; `false` once the client is gone or closed (its
/// close frame, code and reason, forwarded).
async fn to_upstream(
    up: &mut SplitSink<Socket, Message>,
    msg: Option<Result<AggregatedMessage, actix_ws::ProtocolError>>,
) -> bool {
    let out = match msg {
        Some(Ok(AggregatedMessage::Text(t))) => {
            if auth_key(&t).is_some() {
                return true;
            }
            match Utf8Bytes::try_from(t.into_bytes()) {
                Ok(text) => Message::Text(text),
                Err(_) => return true,
            }
        }
        Some(Ok(AggregatedMessage::Binary(b))) => Message::Binary(b),
        Some(Ok(AggregatedMessage::Ping(b))) => Message::Ping(b),
        Some(Ok(AggregatedMessage::Pong(b))) => Message::Pong(b),
        Some(Ok(AggregatedMessage::Close(reason))) => {
            let frame = reason.map(|r| CloseFrame {
                code: u16::from(r.code).into(),
                reason: r.description.unwrap_or_default().into(),
            });
            let _ = tokio::time::timeout(CLOSE_WAIT, up.send(Message::Close(frame))).await;
            return false;
        }
        Some(Err(_)) | None => {
            let _ = tokio::time::timeout(CLOSE_WAIT, up.send(Message::Close(None))).await;
            return false;
        }
    };
    up.send(out).await.is_ok()
}

/// Reads the sandbox's frames as they come into the client's queue; ends at the sandbox's
/// close (queued too), at its socket's end, or when the queue stays full for `stall`.
async fn read_upstream(
    mut up: SplitStream<Socket>,
    queue: tokio::sync::mpsc::Sender<Message>,
    stall: Duration,
) -> UpstreamEnd {
    use tokio::sync::mpsc::error::TrySendError;
    while let Some(msg) = up.next().await {
        let Ok(msg) = msg else {
            let _ = queue.try_send(Message::Close(Some(CloseFrame {
                code: CLOSE_UPSTREAM_FAILED.into(),
                reason: "sandbox socket failed".into(),
            })));
            return UpstreamEnd::Closed;
        };
        let last = matches!(msg, Message::Close(_));
        let queued = match queue.try_send(msg) {
            Ok(()) => true,
            Err(TrySendError::Full(msg)) => {
                match tokio::time::timeout(stall, queue.send(msg)).await {
                    Ok(sent) => sent.is_ok(),
                    Err(_) => return UpstreamEnd::Slow,
                }
            }
            Err(TrySendError::Closed(_)) => false,
        };
        if last || !queued {
            return UpstreamEnd::Closed;
        }
    }
    UpstreamEnd::Closed
}

/// Writes the queued frames to the client, in order; a close frame ends it.
async fn write_client(mut session: Session, mut queued: tokio::sync::mpsc::Receiver<Message>) {
    while let Some(msg) = queued.recv().await {
        let sent = match msg {
            Message::Text(t) => match ByteString::try_from(web::Bytes::from(t)) {
                Ok(s) => session.text(s).await,
                Err(_) => Ok(()),
            },
            Message::Binary(b) => session.binary(b).await,
            Message::Ping(b) => session.ping(&b).await,
            Message::Pong(b) => session.pong(&b).await,
            Message::Close(frame) => {
                let reason = frame.map(|f| CloseReason {
                    code: CloseCode::from(u16::from(f.code)),
                    description: Some(f.reason.to_string()).filter(|r| !r.is_empty()),
                });
                let _ = tokio::time::timeout(CLOSE_WAIT, session.close(reason)).await;
                return;
            }
            Message::Frame(_) => Ok(()),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Closes the client with `code` and `reason` (given [`CLOSE_WAIT`] to get through).
async fn close(session: Session, code: u16, reason: &str) {
    let reason = CloseReason {
        code: CloseCode::from(code),
        description: Some(reason.to_owned()),
    };
    let _ = tokio::time::timeout(CLOSE_WAIT, session.close(Some(reason))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_frames_are_recognized() {
        assert_eq!(
            auth_key(r#"{"type":"auth","session_api_key":"k"}"#),
            Some("k".into())
        );
        assert_eq!(auth_key(r#"{"type":"auth","session_api_key":""}"#), None);
        assert_eq!(
            auth_key(r#"{"type":"auth","session_api_key":"k","x":1}"#),
            None
        );
        assert_eq!(auth_key(r#"{"type":"message"}"#), None);
        assert_eq!(auth_key("not json"), None);
    }
}
