//! Each user's own settings (issue 21; OpenHands' `/api/v1/settings`): `GET` and `POST
//! /api/v1/settings`, `GET /api/v1/settings/agent-schema` and `/conversation-schema`.

use actix_web::{get, post, web};
use serde_json::Value;
use switchboard_domain::typed_body;
use switchboard_domain::user_settings::patch::{SettingsPatch, SettingsRequest};
use switchboard_domain::user_settings::schema::{agent_schema, conversation_schema};
use switchboard_domain::user_settings::view::SettingsResponse;
use switchboard_domain::validation::loc;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::EditResponse;
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(load_settings)
        .service(store_settings)
        .service(agent_settings_schema)
        .service(conversation_settings_schema);
}

/// The caller's settings in the effective organization (OpenHands' `GETSettingsModel`):
/// `agent_settings` (with `llm.api_key` always null and MCP credentials masked),
/// `conversation_settings`, `llm_profiles` (no keys), the app preferences, and
/// `llm_api_key_set`, `search_api_key_set`, `provider_tokens_set`. The defaults when nothing
/// was stored (OpenHands answers 404 then). The LLM shown (`agent_settings.llm.model` and
/// `base_url`, `llm_api_key_set`) is the one a start would use: the caller's own, else the
/// organization's default, else the operator's; the additive `llm_source` says whose
/// (`user`, `organization`, `operator`, or null).
#[utoipa::path(tag = "Settings",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = SettingsResponse), ApiKeyErrors))]
#[get("/api/v1/settings")]
pub async fn load_settings(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<SettingsResponse>> {
    let settings = caller
        .run(state, |s, ctx| Ok(s.services.member_settings(&ctx)?))
        .await?;
    Ok(web::Json(settings))
}

/// Changes the caller's settings: `agent_settings_diff` and `conversation_settings_diff` are
/// deep-merged into what is stored (a key set to null is unset), top-level preferences
/// replace theirs (null unsets). `agent_settings_diff.llm.api_key`, `search_api_key` and
/// `agent_settings_diff.mcp_config` are sealed. The legacy keys `agent_settings` and
/// `conversation_settings` are a 422. One transaction: concurrent changes never lose each
/// other.
#[utoipa::path(tag = "Settings",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = SettingsRequest, description = "A partial `Settings` with `agent_settings_diff` / `conversation_settings_diff`", content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = EditResponse),
        (status = 503, description = "No installation key, or no room for the body", body = crate::dto::ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/v1/settings")]
pub async fn store_settings(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<EditResponse>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let json = body.json()?;
            let patch: SettingsPatch = typed_body::parse::<SettingsRequest>(&json)?.into();
            s.llm_catalog.allow_list().check_field(
                json.pointer("/agent_settings_diff/llm/model"),
                loc(["body", "agent_settings_diff", "llm", "model"]),
            )?;
            Ok(s.services.user_settings().store_settings(&ctx, patch)?)
        })
        .await?;
    Ok(web::Json(EditResponse {
        message: "Settings stored".into(),
    }))
}

/// The agent settings' JSON Schema: the fields Switchboard checks (`llm`, `mcp_config`).
#[utoipa::path(tag = "Settings",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, description = "JSON Schema", body = Object), ApiKeyErrors))]
#[get("/api/v1/settings/agent-schema")]
pub async fn agent_settings_schema(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<Value>> {
    caller.authenticate(&state).await?;
    Ok(web::Json(agent_schema()))
}

/// The conversation settings' JSON Schema.
#[utoipa::path(tag = "Settings",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, description = "JSON Schema", body = Object), ApiKeyErrors))]
#[get("/api/v1/settings/conversation-schema")]
pub async fn conversation_settings_schema(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<Value>> {
    caller.authenticate(&state).await?;
    Ok(web::Json(conversation_schema()))
}
