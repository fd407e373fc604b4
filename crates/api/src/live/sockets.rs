//! The websocket endpoints of live delivery (API.md, Live delivery): the upgrade, its query,
//! admission under `--max-subscribers`, and authentication (on the upgrade, by the first
//! frame, or by the deprecated query parameter), before the subscriber's tail
//! (`live::tail`) takes over.

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, get, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream};
use switchboard_domain::live_frames::ClientFrame;
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::{ConversationId, DomainError, OrgContext, parse_uuid};
use utoipa_actix_web::service_config::ServiceConfig;

use super::tail::{Accepted, Protocol, Start, close, is_invalid_text, run_tail};
use crate::AppState;
use crate::extract::{presented_key, requested_org};
use crate::member_sockets::SocketLimit;

/// Close code: authentication failed (the agent server's).
pub const CLOSE_AUTH_FAILED: u16 = 4001;
/// Close code: the conversation is unknown or not visible to the caller.
pub const CLOSE_NOT_FOUND: u16 = 4004;
/// Close code: the server is at `--max-subscribers`, or the key at `--max-sockets-per-key`
/// (try again later).
pub const CLOSE_TRY_AGAIN: u16 = 1013;

/// Registers the socket routes and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(events_socket).service(session_socket);
}

/// The query of a socket upgrade, as pairs (unknown names ignored).
fn query_pairs(req: &HttpRequest) -> Vec<(String, String)> {
    serde_urlencoded::from_str(req.query_string()).unwrap_or_default()
}

fn query_value<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Where an events socket starts (reference agent-server WebSocket): `resend_mode=all`,
/// `resend_mode=since` with `after_timestamp` (inclusive, an instant, with or without offset;
/// naive = UTC), the deprecated `resend_all=true`, or live only. `Err` = refuse the handshake
/// with 403, as the agent server does for an invalid `resend_mode`.
fn events_start(pairs: &[(String, String)]) -> Result<Start, &'static str> {
    let resend_all = query_value(pairs, "resend_all")
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"));
    match query_value(pairs, "resend_mode") {
        Some("all") => Ok(Start::All),
        Some("since") => {
            let at = query_value(pairs, "after_timestamp")
                .ok_or("resend_mode=since needs after_timestamp")?;
            parse_datetime(at)
                .map(Start::Since)
                .ok_or("after_timestamp is not a date-time")
        }
        Some(_) => Err("resend_mode must be all or since"),
        None if resend_all => Ok(Start::All),
        None => Ok(Start::LiveOnly),
    }
}

/// Where a session socket starts: `after_seq=N` (N ≥ -1; -1 = the whole history), or live
/// only when absent. `Err` = 403.
fn session_start(pairs: &[(String, String)]) -> Result<Start, &'static str> {
    match query_value(pairs, "after_seq") {
        None => Ok(Start::LiveOnly),
        Some(v) => match v.trim().parse::<i64>() {
            Ok(n) if n >= -1 => Ok(Start::AfterSeq(n)),
            _ => Err("after_seq must be an integer >= -1"),
        },
    }
}

fn forbidden(detail: &str) -> HttpResponse {
    HttpResponse::Forbidden().json(serde_json::json!({ "detail": detail }))
}

/// Upgrades, then admits, authenticates and checks the conversation in a task of its own.
fn upgrade(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    conversation: String,
    start: Result<Start, &'static str>,
    protocol: Protocol,
) -> Result<HttpResponse, actix_web::Error> {
    let start = match start {
        Ok(s) => s,
        Err(detail) => return Ok(forbidden(detail)),
    };
    let pairs = query_pairs(&req);
    let key = presented_key(&req)
        .filter(|k| !k.is_empty())
        .or_else(|| query_value(&pairs, "session_api_key").map(str::to_owned));
    let requested = requested_org(&req).ok().flatten();
    let (response, session, stream) = actix_ws::handle(&req, body)?;
    let live = state.live.clone();
    let stream = stream
        .max_frame_size(live.config().max_frame_bytes)
        .aggregate_continuations()
        .max_continuation_size(live.config().max_frame_bytes);
    actix_web::rt::spawn(async move {
        let Some(mut admission) = live.admit() else {
            close(session, CLOSE_TRY_AGAIN, "too many subscribers").await;
            return;
        };
        let timeout = live.config().auth_timeout;
        let mut stream = stream;
        let key = match key {
            Some(k) => Ok(k),
            None => first_frame_key(&mut stream, timeout).await,
        };
        let key = match key {
            Ok(key) => key,
            Err(CLOSE_INVALID_TEXT) => {
                close(session, CLOSE_INVALID_TEXT, "text frame is not UTF-8").await;
                return;
            }
            Err(_) => {
                close(session, CLOSE_AUTH_FAILED, "authentication failed").await;
                return;
            }
        };
        let Some(conversation) = parse_uuid(&conversation).map(ConversationId) else {
            close(session, CLOSE_NOT_FOUND, "conversation not found").await;
            return;
        };
        match check(&state, key, requested, conversation).await {
            Ok(ctx) => {
                if let Err(limit) = admission.count_for_member(ctx.principal.user_id, ctx.org.id) {
                    let reason = match limit {
                        SocketLimit::Member => "too many sockets for this member",
                        SocketLimit::Org => "too many sockets for this organization",
                    };
                    close(session, CLOSE_TRY_AGAIN, reason).await;
                    return;
                }
                // A task of its own: this one (its handshake state included) ends here and
                // its memory goes back, so an idle socket holds only the tail's state.
                let tail = run_tail(Accepted {
                    state,
                    session,
                    stream,
                    ctx,
                    conversation,
                    start,
                    protocol,
                    admission,
                });
                actix_web::rt::spawn(tail);
                return;
            }
            Err(code) => {
                let reason = if code == CLOSE_AUTH_FAILED {
                    "authentication failed"
                } else if code == CLOSE_NOT_FOUND {
                    "conversation not found"
                } else {
                    "internal error"
                };
                close(session, code, reason).await;
            }
        }
        drop(admission);
    });
    Ok(response)
}

/// Close code for a text frame that is not UTF-8 (RFC 6455 §7.4.1: "inconsistent with the
/// type of the message").
const CLOSE_INVALID_TEXT: u16 = 1007;

/// The key of a first frame `{"type":"auth","session_api_key":"…"}` received within
/// `timeout`; else the close code: [`CLOSE_INVALID_TEXT`] for a text frame that is not UTF-8,
/// [`CLOSE_AUTH_FAILED`] for anything else (another frame, none in time).
async fn first_frame_key(
    stream: &mut AggregatedMessageStream,
    timeout: Duration,
) -> Result<String, u16> {
    let frame = tokio::time::timeout(timeout, async {
        loop {
            match stream.recv().await {
                Some(Ok(AggregatedMessage::Text(t))) => return Ok(t),
                Some(Ok(AggregatedMessage::Ping(_) | AggregatedMessage::Pong(_))) => continue,
                Some(Err(e)) if is_invalid_text(&e) => return Err(CLOSE_INVALID_TEXT),
                _ => return Err(CLOSE_AUTH_FAILED),
            }
        }
    })
    .await
    .map_err(|_| CLOSE_AUTH_FAILED)??;
    match ClientFrame::read(&frame) {
        ClientFrame::Auth(Some(key)) => Ok(key),
        _ => Err(CLOSE_AUTH_FAILED),
    }
}

/// Authenticates the key and checks that it may read the conversation's events: the context,
/// or the close code (4001, 4004, 1011).
async fn check(
    state: &web::Data<AppState>,
    key: String,
    requested: Option<switchboard_domain::OrgId>,
    conversation: ConversationId,
) -> Result<OrgContext, u16> {
    let st = state.clone();
    let result = state
        .blocking(move || {
            let ctx = match st.services.auth().authenticate_in(&key, requested) {
                Ok(c) => c,
                Err(_) => return Ok(Err(CLOSE_AUTH_FAILED)),
            };
            Ok(match st.services.events().check_watch(&ctx, conversation) {
                Ok(()) => Ok(ctx),
                Err(DomainError::ConversationNotFound) => Err(CLOSE_NOT_FOUND),
                Err(_) => Err(1011),
            })
        })
        .await;
    result.unwrap_or(Err(1011))
}

/// Watches a conversation (API.md, Live delivery; the agent server's
/// `/sockets/events/{conversation_id}`): a websocket. Authenticate with `X-Access-Token` or
/// `Authorization: Bearer` on the upgrade, else with a first frame
/// `{"type":"auth","session_api_key":"<API key>"}` within 10 s, or the deprecated query
/// `session_api_key`. Frames: first a `ConversationStateUpdateEvent` (`key: "full_state"`)
/// built from the stored state, then the history asked for (`resend_mode=all`;
/// `resend_mode=since&after_timestamp=…`, inclusive, compared as instants; `resend_all=true`;
/// none = live only), then every new event as it is stored, each as its stored JSON, in
/// order, each once. While the conversation's sandbox runs, the agent server's
/// `StreamingDeltaEvent`s and `ConversationStateUpdateEvent`s are relayed as they come, as
/// its JSON (transient: never stored, never replayed). Client frames: a `Message` (`{role, content}`) is sent to the
/// conversation with `run: true`; anything else gets a `ServerErrorEvent` frame. Close codes:
/// 4001 authentication failed, 4004 unknown or not visible conversation, 1013 at the
/// subscriber limit, 1001 server stopping, 1009 frame too large, 1007 a text frame that is
/// not UTF-8, 1011 heartbeat lost or the store failed. An invalid `resend_mode`
/// fails the handshake with 403.
#[utoipa::path(tag = "Live delivery",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID"),
        ("resend_mode" = Option<String>, Query, description = "`all` or `since`; absent = live only"),
        ("after_timestamp" = Option<String>, Query, description = "With `resend_mode=since`: events at or after this instant (RFC 3339, naive = UTC)"),
        ("resend_all" = Option<bool>, Query, description = "Deprecated: `true` = `resend_mode=all`"),
        ("session_api_key" = Option<String>, Query, description = "Deprecated: the API key"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 101, description = "Switching protocols: the websocket"),
        (status = 400, description = "Not a websocket upgrade"),
        (status = 403, description = "Invalid resend_mode or after_timestamp", body = crate::dto::ErrorDetail),
    ))]
#[get("/sockets/events/{conversation_id}")]
pub async fn events_socket(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, actix_web::Error> {
    let start = events_start(&query_pairs(&req));
    upgrade(req, body, state, path.into_inner(), start, Protocol::Events)
}

/// Watches a conversation with sequence numbers (API.md, Live delivery; the agent server
/// 1.58.2 envelope protocol): a websocket, authenticated as `/sockets/events`. Frames are
/// envelopes: first `{"type":"sync","from_seq":F,"through_seq":T}` (the history that follows
/// is positions F..=T, empty when F > T), then `{"type":"durable","seq":N,"event":{…}}` for
/// each stored event in order, each once (history, then live), `{"type":"transient","event":
/// {…}}` for the agent server's relayed `StreamingDeltaEvent`s and `ConversationStateUpdateEvent`s
/// (never stored, never replayed), and `{"type":"error",
/// "code":…,"detail":…}` for a bad client frame. `after_seq=N` resumes after position N
/// (`-1`: the whole history); absent = live only. An invalid `after_seq` fails the handshake
/// with 403.
#[utoipa::path(tag = "Live delivery",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID"),
        ("after_seq" = Option<i64>, Query, description = "Resume after this position; -1 = full history; absent = live only"),
        ("session_api_key" = Option<String>, Query, description = "Deprecated: the API key"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 101, description = "Switching protocols: the websocket"),
        (status = 400, description = "Not a websocket upgrade"),
        (status = 403, description = "Invalid after_seq", body = crate::dto::ErrorDetail),
    ))]
#[get("/sockets/session/{conversation_id}")]
pub async fn session_socket(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, actix_web::Error> {
    let start = session_start(&query_pairs(&req));
    upgrade(
        req,
        body,
        state,
        path.into_inner(),
        start,
        Protocol::Session,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        serde_urlencoded::from_str(q).unwrap()
    }

    #[test]
    fn starts_from_the_query() {
        assert!(matches!(events_start(&pairs("")), Ok(Start::LiveOnly)));
        assert!(matches!(
            events_start(&pairs("resend_mode=all")),
            Ok(Start::All)
        ));
        assert!(matches!(
            events_start(&pairs("resend_all=true")),
            Ok(Start::All)
        ));
        assert!(events_start(&pairs("resend_mode=none")).is_err());
        assert!(events_start(&pairs("resend_mode=since")).is_err());
        let Ok(Start::Since(t)) = events_start(&pairs(
            "resend_mode=since&after_timestamp=2026-11-21T10:00:00%2B02:00",
        )) else {
            panic!("since")
        };
        // 10:00+02:00 is 08:00Z.
        assert_eq!(t.unix_timestamp(), 1_795_248_000);
        assert!(matches!(
            session_start(&pairs("after_seq=-1")),
            Ok(Start::AfterSeq(-1))
        ));
        assert!(session_start(&pairs("after_seq=-2")).is_err());
        assert!(session_start(&pairs("after_seq=x")).is_err());
    }
}
