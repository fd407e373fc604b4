//! The agent-server webhooks (API.md, Event ingestion), authenticated by the sandbox's
//! session key: event batches and `ConversationInfo` updates.

use std::time::Instant;

use actix_web::{HttpResponse, post, web};
use serde_json::json;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{RawBody, SandboxCaller, conversation_id};
use crate::metrics::WebhookKind;
use crate::responses::WebhookErrors;

pub use crate::extract::WEBHOOK_BODY_LIMIT;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(webhook_events).service(webhook_conversations);
}

/// `{"success": true}`: a webhook's answer once what it carried is durable.
fn success() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "success": true }))
}

/// Receives a batch of events from an agent server: validated whole, stored atomically, ids
/// already stored skipped (retries never duplicate). `{"success": true}` means every event is
/// durable.
///
/// 507: none was stored (event quotas and the disk reserve, issue 33).
#[utoipa::path(tag = "Webhooks",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation UUID (dashed or 32 hex)"),
    ),
    security(("SessionKeyHeader" = [])),
    request_body(content = Vec<Object>, description = "JSON array of events (`Event`)", content_type = "application/json"),
    responses(
        (status = 200, description = "{\"success\": true}"),
        WebhookErrors,
        (status = 422, description = "An invalid event (loc names its index and field): nothing stored", body = crate::dto::HTTPValidationError),
        (status = 507, description = "An event quota (per conversation or organization) or the disk reserve refused the batch: nothing stored; `detail` names the limit and its flag", body = crate::dto::ErrorDetail),
    ))]
#[post("/api/v1/webhooks/events/{conversation_id}")]
pub async fn webhook_events(
    state: web::Data<AppState>,
    caller: SandboxCaller,
    path: web::Path<String>,
    body: RawBody<WEBHOOK_BODY_LIMIT>,
) -> ApiResult<HttpResponse> {
    let started = Instant::now();
    let result = ingest_events(&state, caller, &path.into_inner(), body).await;
    let activity = state.metrics.activity();
    activity.webhook_batch(
        WebhookKind::Events,
        &result,
        started.elapsed().as_secs_f64(),
    );
    let (stored, skipped) = result?;
    activity.webhook_events(stored, skipped);
    Ok(success())
}

/// [`webhook_events`]' work: the events stored and skipped (already stored).
async fn ingest_events(
    state: &web::Data<AppState>,
    caller: SandboxCaller,
    path: &str,
    body: RawBody<WEBHOOK_BODY_LIMIT>,
) -> ApiResult<(usize, usize)> {
    let sandbox = caller.authenticate(state).await?;
    let id = conversation_id(path)?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let outcome = s
                .services
                .events()
                .ingest_events(&sandbox, id, body.text()?)?;
            tracing::debug!(stored = outcome.stored, skipped = outcome.skipped, conversation = %id, "events ingested");
            Ok((outcome.stored, outcome.skipped))
        })
        .await
}

/// Receives an agent server's `ConversationInfo`: updates the conversation's title, run state
/// and metadata (creating the conversation if need be).
#[utoipa::path(tag = "Webhooks",
    security(("SessionKeyHeader" = [])),
    request_body = switchboard_domain::conversations::ConversationInfoBody,
    responses((status = 200, description = "{\"success\": true}"), WebhookErrors))]
#[post("/api/v1/webhooks/conversations")]
pub async fn webhook_conversations(
    state: web::Data<AppState>,
    caller: SandboxCaller,
    body: RawBody<WEBHOOK_BODY_LIMIT>,
) -> ApiResult<HttpResponse> {
    let started = Instant::now();
    let result = ingest_conversation(&state, caller, body).await;
    state.metrics.activity().webhook_batch(
        WebhookKind::Conversation,
        &result,
        started.elapsed().as_secs_f64(),
    );
    result?;
    Ok(success())
}

/// [`webhook_conversations`]' work.
async fn ingest_conversation(
    state: &web::Data<AppState>,
    caller: SandboxCaller,
    body: RawBody<WEBHOOK_BODY_LIMIT>,
) -> ApiResult<()> {
    let sandbox = caller.authenticate(state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let info = body.json()?;
            Ok(s.services
                .conversations()
                .ingest_conversation_info(&sandbox, &info)?)
        })
        .await
}
