//! Users as they see themselves: `GET /api/v1/users/me` (issue 21 adds OpenHands' `UserInfo`
//! fields and, for the caller's own running sandbox, the user's LLM and MCP configuration).

use actix_web::{HttpRequest, get, web};
use serde_json::{Value, json};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::MeResponse;
use crate::error::ApiResult;
use crate::extract::{Caller, QueryPairs, SESSION_KEY_HEADER};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(users_me);
}

/// The caller, the effective organization, the caller's role and permissions there, and
/// OpenHands' `UserInfo` fields (`id`, the settings of `GET /api/v1/settings`, keys never).
/// With `expose_secrets=true` (OpenHands' hosted server, for the SDK's
/// `OpenHandsCloudWorkspace.get_llm()`): also `llm_model`, `llm_api_key`, `llm_base_url`,
/// `llm_profiles` with their keys and the unmasked `mcp_config` of the caller's own settings
/// (never the organization's or the operator's key) — only with the caller's API key *and*
/// the `X-Session-API-Key` of a running sandbox of the caller's in the effective organization
/// (401 without it or for an unknown one or a sandbox not running, 403 for another's).
/// Without `expose_secrets`, that same session key unmasks `mcp_config` (the SDK's
/// `get_mcp_config()` sends it so); any other caller sees its credentials masked.
#[utoipa::path(tag = "Users",
    params(("expose_secrets" = Option<bool>, Query, description = "Add the caller's LLM key, profiles with keys and MCP configuration (needs X-Session-API-Key)"),
           ("X-Session-API-Key" = Option<String>, Header, description = "With expose_secrets: the session key of a running sandbox of the caller's"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = MeResponse), ApiKeyErrors))]
#[get("/api/v1/users/me")]
pub async fn users_me(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    req: HttpRequest,
) -> ApiResult<web::Json<MeResponse>> {
    let session = req
        .headers()
        .get(SESSION_KEY_HEADER)
        .map(|v| v.to_str().unwrap_or("").to_owned());
    let (me, info) = caller
        .run(state, move |s, ctx| {
            let expose = query.flag("expose_secrets")?.unwrap_or(false);
            let me = s.services.users().me(&ctx)?;
            let mut info = serde_json::to_value(s.services.member_settings(&ctx)?)
                .map_err(|e| crate::error::ApiError::Internal(e.to_string()))?;
            if expose {
                let sandbox = s
                    .services
                    .sandboxes()
                    .authenticate_sandbox(session.as_deref())?;
                s.services.user_secrets().check_own_sandbox(&ctx, &sandbox)?;
                let e = s
                    .services
                    .user_settings()
                    .exposed(ctx.org.id, ctx.principal.user_id)?;
                tracing::info!(user = %ctx.principal.user_id, sandbox = %sandbox.id, "the user's LLM settings were read by their sandbox");
                info["llm_model"] = json!(e.llm_model);
                info["llm_api_key"] = json!(e.llm_api_key);
                info["llm_base_url"] = json!(e.llm_base_url);
                info["llm_profiles"] = e.llm_profiles;
                info["mcp_config"] = e.mcp_config.unwrap_or(Value::Null);
            } else {
                // The SDK's `get_mcp_config()` sends the session key without expose_secrets:
                // the caller's own running sandbox gets the configuration unmasked, anyone
                // else the masked one.
                let own_sandbox = session.as_deref().is_some_and(|k| {
                    s.services
                        .sandboxes()
                        .authenticate_sandbox(Some(k))
                        .and_then(|sb| s.services.user_secrets().check_own_sandbox(&ctx, &sb))
                        .is_ok()
                });
                info["mcp_config"] = if own_sandbox {
                    s.services
                        .user_settings()
                        .mcp_config(ctx.org.id, ctx.principal.user_id)?
                        .unwrap_or(Value::Null)
                } else {
                    info["agent_settings"]["mcp_config"].clone()
                };
            }
            Ok((me, info))
        })
        .await?;
    Ok(web::Json(MeResponse::with_info(me, info)))
}
