//! An organization's defaults for its members (issue 21; OpenHands' enterprise routes):
//! `GET` and `PATCH /api/organizations/{org_id}/settings`.

use actix_web::{get, patch, web};
use switchboard_domain::OrgId;
use switchboard_domain::org_defaults::OrgDefaultsSettingsResponse;
use switchboard_domain::validation::loc;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::ErrorDetail;
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody, path_uuid};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_org_defaults).service(patch_org_defaults);
}

/// The organization's defaults (`view_org_settings`: every member), OpenHands'
/// `OrgDefaultsSettingsResponse`: `agent_settings` (`llm.api_key` always null, the MCP
/// configuration's credentials masked), `conversation_settings` (defaults filled),
/// `llm_api_key_set`, `search_api_key` (`"**********"` or null). No key is ever answered.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgDefaultsSettingsResponse),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/organizations/{org_id}/settings")]
pub async fn get_org_defaults(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
) -> ApiResult<web::Json<OrgDefaultsSettingsResponse>> {
    let raw = org_id.into_inner();
    let answer = caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            Ok(s.services.org_defaults().view(&ctx, org)?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// Changes the organization's defaults (`edit_org_settings`: owners and admins; a member is
/// 403 whatever the body): `agent_settings_diff` (the LLM's `model`, `base_url`, `api_key`,
/// and `mcp_config`) and `conversation_settings_diff` deep-merged, `llm_api_key` and
/// `search_api_key` sealed; any other field is a 422. Answers as the GET.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = switchboard_domain::org_defaults::OrgDefaultsSettingsUpdate, description = "`OrgDefaultsSettingsUpdate`", content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgDefaultsSettingsResponse),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        (status = 503, description = "No installation key, or no room for the body", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[patch("/api/organizations/{org_id}/settings")]
pub async fn patch_org_defaults(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<OrgDefaultsSettingsResponse>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let raw = org_id.into_inner();
    let s = state.clone();
    let answer = state
        .blocking(move || {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let json = body.json()?;
            s.llm_catalog.allow_list().check_field(
                json.pointer("/agent_settings_diff/llm/model"),
                loc(["body", "agent_settings_diff", "llm", "model"]),
            )?;
            Ok(s.services.org_defaults().update(&ctx, org, &json)?)
        })
        .await?;
    Ok(web::Json(answer))
}
