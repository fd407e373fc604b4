//! Starting app conversations (issue 10; reference app-server §5.2, §5.3): `POST
//! /api/v1/app-conversations` writes the start task (`WORKING`), wakes the `conversation-start`
//! job (which runs the pipeline) and answers the task at once; `POST …/stream-start` follows
//! the task's snapshots (`Follower`) and streams them as a JSON array until `READY` or
//! `ERROR`. The tasks are read through `start_tasks.rs`.

use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{HttpResponse, post, web};
use serde_json::Value;
use switchboard_domain::conversations::start_request::StartBody;
use switchboard_domain::conversations::start_tasks::StartTask;
use switchboard_domain::identity::OrgContext;
use switchboard_domain::services::Follower;
use switchboard_domain::{DomainError, Switchboard};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{AppConversationStartTask, ErrorDetail};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, RawBody, parse_json_body};
use crate::responses::ApiKeyErrors;

/// Registers the start routes and their OpenAPI paths (before the start-task reads, as the
/// document lists them).
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(start_conversation).service(stream_start);
}

/// How long one wait for a followed task's next snapshot lasts before the store is read
/// (another replica may run it).
const FOLLOW_WAIT: Duration = Duration::from_secs(1);

/// Authenticates, reads the body and runs `write` with the context and the JSON body on the
/// blocking pool (which checks it and writes the `WORKING` task); counted in
/// `conversation_starts_total`.
async fn begin<T: Send + 'static>(
    state: &web::Data<AppState>,
    caller: Caller,
    body: RawBody,
    write: impl FnOnce(&Switchboard, &OrgContext, &Value) -> Result<T, DomainError> + Send + 'static,
) -> Result<T, ApiError> {
    let result = write_task(state, caller, body, write).await;
    state.metrics.activity().conversation_start(result.is_ok());
    result
}

/// [`begin`]'s work.
async fn write_task<T: Send + 'static>(
    state: &web::Data<AppState>,
    caller: Caller,
    body: RawBody,
    write: impl FnOnce(&Switchboard, &OrgContext, &Value) -> Result<T, DomainError> + Send + 'static,
) -> Result<T, ApiError> {
    let ctx = caller.authenticate(state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let json = parse_json_body(body.bytes())?;
            Ok(write(&s.services, &ctx, &json)?)
        })
        .await
}

const START_DOC: &str = "OpenHands' AppConversationStartRequest, read strictly: an unknown field or a value of the wrong shape is a 422. Switchboard also takes `sandbox_spec_id`, `max_iterations` and `tags`.";

/// Starts a conversation: answers its start task, `WORKING`, at once; the pipeline
/// (`WAITING_FOR_SANDBOX`, `PREPARING_REPOSITORY`, `RUNNING_SETUP_SCRIPT`,
/// `STARTING_CONVERSATION`, `READY` or `ERROR`) goes on in the background: poll
/// `GET /api/v1/app-conversations/start-tasks?ids=…`.
#[utoipa::path(tag = "App conversations",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = StartBody, description = START_DOC),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = AppConversationStartTask),
        (status = 400, description = "A suggested_task with an initial_message, or an unknown parent conversation", body = ErrorDetail),
        (status = 409, description = "The conversation_id of a conversation the caller sees (one it does not see is taken as unknown: the start gets a fresh id)", body = ErrorDetail),
        (status = 503, description = "This server runs no sandboxes", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations")]
pub async fn start_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<AppConversationStartTask>> {
    let task = begin(&state, caller, body, |s, ctx, json| {
        s.conversation_start().begin(ctx, json)
    })
    .await?;
    Ok(web::Json(AppConversationStartTask::present(
        &task,
        state.proxy.public(),
    )))
}

/// Starts a conversation and streams its start task as a JSON array (`[`, the `WORKING`
/// task, then `,` and a snapshot after each step, `]` after `READY` or `ERROR`), as OpenHands
/// does. Errors before the task exists are ordinary answers.
#[utoipa::path(tag = "App conversations",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = StartBody, description = START_DOC),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "A JSON array of task snapshots, streamed", body = Vec<AppConversationStartTask>),
        (status = 400, description = "As POST /api/v1/app-conversations", body = ErrorDetail),
        (status = 409, description = "As POST /api/v1/app-conversations", body = ErrorDetail),
        (status = 503, description = "This server runs no sandboxes", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations/stream-start")]
pub async fn stream_start(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let (task, follower) = begin(&state, caller, body, |s, ctx, json| {
        s.conversation_start().begin_followed(ctx, json)
    })
    .await?;
    let first = serde_json::to_string(&AppConversationStartTask::present(
        &task,
        state.proxy.public(),
    ))
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    let head = futures_util::stream::iter([Ok::<Bytes, actix_web::Error>(Bytes::from(format!(
        "[\n{first}"
    )))]);
    let proxy = state.proxy.clone();
    let rest = futures_util::stream::unfold(Some(follower), move |follower| {
        let proxy = proxy.clone();
        async move {
            let next = next_snapshots(follower?).await;
            let mut chunk = String::new();
            // The array closes after READY or ERROR, or when the task can no longer be read.
            let mut done = next.is_none();
            let (follower, snapshots) = next.map_or((None, Vec::new()), |(f, s)| (Some(f), s));
            for t in snapshots {
                let text =
                    serde_json::to_string(&AppConversationStartTask::present(&t, proxy.public()))
                        .unwrap_or_else(|_| "null".into());
                chunk.push_str(",\n");
                chunk.push_str(&text);
                done |= t.status.is_final();
            }
            if done {
                chunk.push_str("\n]");
            }
            Some((Ok(Bytes::from(chunk)), follower.filter(|_| !done)))
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .streaming(futures_util::StreamExt::chain(head, rest)))
}

/// The followed task's next snapshots (at least one), waited for on the blocking pool one
/// [`FOLLOW_WAIT`] at a time; `None` once the task cannot be read (gone, the store fails, or
/// the server stops).
async fn next_snapshots(mut follower: Follower) -> Option<(Follower, Vec<StartTask>)> {
    loop {
        let (back, next) = web::block(move || {
            let next = follower.next(FOLLOW_WAIT);
            (follower, next)
        })
        .await
        .ok()?;
        follower = back;
        match next {
            Ok(snapshots) if snapshots.is_empty() => {}
            Ok(snapshots) => return Some((follower, snapshots)),
            Err(e) => {
                tracing::warn!(error = %e, "following a start task failed");
                return None;
            }
        }
    }
}
