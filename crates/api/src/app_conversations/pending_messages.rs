//! `POST /api/v1/conversations/{conversation_id}/pending-messages` (issue 22; OpenHands'
//! "Queue Pending Message"): a message for a conversation that is still starting is stored and
//! delivered to its agent server when the start is `READY`; for a conversation that is ready
//! it is delivered at once. The id may be the conversation's, its start task's, or
//! `task-<start task id>` as OpenHands' clients send it before the conversation exists.

use actix_web::{HttpResponse, post, web};
use switchboard_domain::conversations::app::SendMessage;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, PendingMessageResponse};
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody};
use crate::responses::ApiKeyErrors;

/// Registers the route of this module and its OpenAPI path.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(queue_pending_message);
}

/// Queues a user message until the conversation is ready (at most 10 per conversation), or
/// delivers it at once when it is (then as send-message: a paused sandbox is resumed first).
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = String, Path, description = "The conversation's id, its start task's id, or task-<start task id> (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    request_body = SendMessage,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = PendingMessageResponse),
        (status = 404, description = "No conversation or start the caller sees", body = ErrorDetail),
        (status = 409, description = "The conversation's start failed; or, the conversation being ready, its sandbox is MISSING, deleted, ERROR, not RUNNING in time, or not run by Switchboard", body = ErrorDetail),
        (status = 413, description = "Body over 1 MiB", body = ErrorDetail),
        (status = 429, description = "10 messages are queued for the conversation already", body = ErrorDetail),
        (status = 502, description = "Delivered at once: the agent server failed", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/conversations/{conversation_id}/pending-messages")]
pub async fn queue_pending_message(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let target = path.into_inner();
    let s = state.clone();
    let queued = state
        .blocking(move || {
            let message = body.typed::<SendMessage>()?;
            Ok(s.services
                .pending_messages()
                .queue(&ctx, &target, &message)?)
        })
        .await?;
    Ok(HttpResponse::Created().json(PendingMessageResponse::from(queued)))
}
