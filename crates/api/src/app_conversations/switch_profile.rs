//! `POST /api/v1/app-conversations/{conversation_id}/switch_profile` (issue 21; OpenHands'
//! `SwitchProfileRequest`): the running conversation's LLM replaced by one of the caller's LLM
//! profiles, resolved here (profiles live in Switchboard, not in the sandbox) and handed to the
//! agent server's `switch_llm` with its key.

use actix_web::{post, web};
use switchboard_domain::DomainError;
use switchboard_domain::user_settings::profiles::SwitchProfileRequest;

use crate::AppState;
use crate::dto::{ErrorDetail, Success};
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody, conversation_id};
use crate::responses::ApiKeyErrors;

/// Switches the running conversation's LLM to the caller's profile `profile_name`: its model,
/// base URL and key, from the agent server's next step on. The sandbox is resumed or waited
/// for as for send-message. Answers `{"success": true}`.
#[utoipa::path(tag = "App conversations",
    params(
        ("conversation_id" = uuid::Uuid, Path, description = "Conversation id (dashed or 32 hex)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)"),
    ),
    request_body = SwitchProfileRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = Success),
        (status = 400, description = "The profile names no model, or a model `--llm-model-allow` does not allow", body = ErrorDetail),
        (status = 404, description = "No such profile of the caller's; or the conversation is unknown, another organization's, or another member's seen by a member", body = ErrorDetail),
        (status = 409, description = "The sandbox is not run by Switchboard", body = ErrorDetail),
        (status = 410, description = "The sandbox is MISSING or deleted", body = ErrorDetail),
        (status = 502, description = "The agent server failed", body = ErrorDetail),
        (status = 503, description = "The sandbox is ERROR or did not become RUNNING in time", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/v1/app-conversations/{conversation_id}/switch_profile")]
pub async fn switch_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<Success>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let raw = path.into_inner();
    let s = state.clone();
    state
        .blocking(move || {
            let id = conversation_id(&raw)?;
            let name = body.typed::<SwitchProfileRequest>()?.profile_name;
            let conversations = s.services.app_conversations();
            // An unknown conversation is its 404 before the profile's.
            conversations.require_visible(&ctx, id)?;
            let llm = s.services.user_settings().profile_llm(&ctx, &name)?;
            if let Some(why) = llm
                .model
                .as_deref()
                .and_then(|m| s.llm_catalog.allow_list().refusal(m))
            {
                return Err(DomainError::BadRequest(why).into());
            }
            conversations.switch_profile(&ctx, id, llm, &name, s.services.llm_relay())?;
            Ok(())
        })
        .await?;
    Ok(web::Json(Success { success: true }))
}
