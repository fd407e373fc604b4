//! The caller's API keys (API.md, Identity): `POST`/`GET /api/keys`, `DELETE /api/keys/{id}`.

use actix_web::{delete, get, post, web};
use switchboard_domain::identity::api_keys::ApiKeyCreate;
use switchboard_domain::{ApiKeyId, ApiKeyView, Permission};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{
    ApiKeyCreated, ApiKeyList, ApiKeyRevoked, CurrentKeyResponse, ErrorDetail, HTTPValidationError,
    LlmApiKeyResponse,
};
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody, path_uuid};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(create_api_key)
        .service(list_api_keys)
        .service(current_api_key)
        .service(byor_llm_key)
        .service(revoke_api_key);
}

/// Creates an API key for the caller, bound to the effective organization
/// (`manage_api_keys`). The key is in the response, once; only its SHA-256 is stored.
#[utoipa::path(tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to bind the key to (UUID)")),
    request_body = ApiKeyCreate,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ApiKeyCreated),
        BodyErrors,
        ApiKeyErrors,
        (status = 409, description = "The caller already holds `--max-api-keys-per-member` live keys (default 100): revoke one first", body = ErrorDetail),
        (status = 422, description = "Bad name or an expiry in the past", body = HTTPValidationError),
    ))]
#[post("/api/keys")]
pub async fn create_api_key(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<ApiKeyCreated>> {
    let ctx = caller.authenticate(&state).await?;
    ctx.require(Permission::ManageApiKeys)?;
    let body = body.read().await?;
    let s = state.clone();
    let issued = state
        .blocking(move || {
            let request = body.typed::<ApiKeyCreate>()?;
            Ok(s.services.api_keys().create_api_key(
                &ctx,
                request.name().to_owned(),
                request.expires_at(),
            )?)
        })
        .await?;
    Ok(web::Json(issued.into()))
}

/// The caller's API keys usable in the effective organization (bound to it, or unbound),
/// newest first, revoked ones included (`manage_api_keys`).
#[utoipa::path(tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = ApiKeyList), ApiKeyErrors))]
#[get("/api/keys")]
pub async fn list_api_keys(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<ApiKeyList>> {
    let keys = caller
        .run(state, |s, ctx| {
            Ok(s.services.api_keys().list_api_keys(&ctx)?)
        })
        .await?;
    Ok(web::Json(ApiKeyList {
        items: keys.iter().map(|k| ApiKeyView::from(k).into()).collect(),
    }))
}

/// The key of this request (issue 21; OpenHands' `GET /api/keys/current`, which its clients
/// use to find their organization): its id, name, the effective organization of the request,
/// the organization it is bound to, its user. No permission needed.
#[utoipa::path(tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = CurrentKeyResponse), ApiKeyErrors))]
#[get("/api/keys/current")]
pub async fn current_api_key(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<CurrentKeyResponse>> {
    let (key, org) = caller
        .run(state, |s, ctx| {
            Ok((s.services.api_keys().current_key(&ctx)?, ctx.org.id))
        })
        .await?;
    Ok(web::Json(CurrentKeyResponse {
        id: key.id.0,
        name: key.name,
        org_id: org.0,
        bound_org_id: key.org_id.map(|o| o.0),
        user_id: key.user_id.0,
        auth_type: "api_key".into(),
    }))
}

/// The caller's own LLM key in the effective organization (OpenHands' BYOR key, which its CLI's
/// `openhands login` reads before the settings): the active profile's, else the settings';
/// `{"key": null}` when they stored none. Never the organization's or the operator's key.
#[utoipa::path(tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = LlmApiKeyResponse), ApiKeyErrors))]
#[get("/api/keys/llm/byor")]
pub async fn byor_llm_key(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<LlmApiKeyResponse>> {
    let key = caller
        .run(state, |s, ctx| {
            let key = s
                .services
                .user_settings()
                .own_llm_key(ctx.org.id, ctx.principal.user_id)?;
            tracing::info!(user = %ctx.principal.user_id, org = %ctx.org.id, found = key.is_some(), "the user's own LLM key was read (byor)");
            Ok(key)
        })
        .await?;
    Ok(web::Json(LlmApiKeyResponse { key }))
}

/// Revokes one of the caller's keys (`manage_api_keys`); another user's key is 404.
#[utoipa::path(tag = "Keys",
    params(("id" = uuid::Uuid, Path, description = "Key id (UUID)"), ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ApiKeyRevoked),
        ApiKeyErrors,
        (status = 404, description = "No such key of the caller's", body = ErrorDetail),
    ))]
#[delete("/api/keys/{id}")]
pub async fn revoke_api_key(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> ApiResult<web::Json<ApiKeyRevoked>> {
    let id = id.into_inner();
    let key = caller
        .run(state, move |s, ctx| {
            // The path is checked after authentication, like any other input.
            let id = ApiKeyId(path_uuid(&id, "id")?);
            Ok(s.services.api_keys().revoke_api_key(&ctx, id)?)
        })
        .await?;
    Ok(web::Json(ApiKeyRevoked {
        id: key.id.0,
        revoked: key.revoked_at.is_some(),
    }))
}
