//! The routes a trusted service calls (issue 31; OpenHands' `/api/service/...`): the automation
//! service mints the API key of each run's user with `POST
//! /api/service/users/{user_id}/orgs/{org_id}/api-keys`, authenticated by `X-Service-API-Key`
//! (the key of `serve --service-api-key-file`). The rules are the domain's
//! ([`switchboard_domain::services::ServiceKeyService`]).

use actix_web::{HttpRequest, delete, get, post, web};
use switchboard_domain::OrgId;
use switchboard_domain::services::CreateUserApiKeyRequest;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{
    EditResponse, ErrorDetail, HTTPValidationError, ServiceHealth, ServiceKeyCreated,
};
use crate::error::ApiResult;
use crate::extract::{RawBody, path_uuid};
use crate::responses::BodyErrors;

/// The header carrying the service key.
pub const SERVICE_KEY_HEADER: &str = "X-Service-API-Key";

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(service_health)
        .service(mint_service_key)
        .service(revoke_service_key);
}

/// The presented service key: `None` without the header; a header that is not visible ASCII
/// is presented but wrong.
fn presented(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(SERVICE_KEY_HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}"))
}

/// Whether the service routes are configured (no authentication, as OpenHands').
#[utoipa::path(tag = "Service", responses((status = 200, body = ServiceHealth)))]
#[get("/api/service/health")]
pub async fn service_health(state: web::Data<AppState>) -> web::Json<ServiceHealth> {
    web::Json(ServiceHealth {
        status: "ok".into(),
        service_auth_configured: state.services.service_keys().configured(),
    })
}

/// Mints an API key for `user_id`, bound to `org_id`, for a service holding the service key:
/// an ordinary key of the user's (listed by `GET /api/keys`, revocable), expiring after 24 h.
/// The key is checked before the path and the body.
#[utoipa::path(tag = "Service",
    params(("user_id" = String, Path, description = "The user (UUID)"),
           ("org_id" = uuid::Uuid, Path, description = "The organization (UUID)")),
    security(("ServiceKeyHeader" = [])),
    request_body(content = CreateUserApiKeyRequest, content_type = "application/json"),
    responses(
        (status = 200, body = ServiceKeyCreated),
        (status = 401, description = "No or a wrong service key", body = ErrorDetail),
        (status = 403, description = "The user is not a member of the organization", body = ErrorDetail),
        (status = 404, description = "No such user", body = ErrorDetail),
        (status = 422, description = "Bad organization id or name", body = HTTPValidationError),
        BodyErrors,
        (status = 500, description = "Internal error", body = ErrorDetail),
        (status = 503, description = "No service key configured (`--service-api-key-file`), or no room for the body", body = ErrorDetail),
    ))]
#[post("/api/service/users/{user_id}/orgs/{org_id}/api-keys")]
pub async fn mint_service_key(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: RawBody,
) -> ApiResult<web::Json<ServiceKeyCreated>> {
    state.services.service_keys().check(presented(&req))?;
    let (user, org) = path.into_inner();
    let org = OrgId(path_uuid(&org, "org_id")?);
    let body = body.read().await?;
    let s = state.clone();
    let key = state
        .blocking(move || {
            let request = body.typed::<CreateUserApiKeyRequest>()?;
            Ok(s.services.service_keys().mint(&user, org, &request)?)
        })
        .await?;
    Ok(web::Json(key.into()))
}

/// Revokes the keys named `key_name` of `user_id` bound to `org_id` (what a service minted).
#[utoipa::path(tag = "Service",
    params(("user_id" = String, Path, description = "The user (UUID)"),
           ("org_id" = uuid::Uuid, Path, description = "The organization (UUID)"),
           ("key_name" = String, Path, description = "The name the keys were minted with")),
    security(("ServiceKeyHeader" = [])),
    responses(
        (status = 200, body = EditResponse),
        (status = 401, description = "No or a wrong service key", body = ErrorDetail),
        (status = 404, description = "No such key", body = ErrorDetail),
        (status = 422, description = "Bad organization id", body = HTTPValidationError),
        (status = 500, description = "Internal error", body = ErrorDetail),
        (status = 503, description = "No service key configured (`--service-api-key-file`)", body = ErrorDetail),
    ))]
#[delete("/api/service/users/{user_id}/orgs/{org_id}/api-keys/{key_name}")]
pub async fn revoke_service_key(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String, String)>,
) -> ApiResult<web::Json<EditResponse>> {
    state.services.service_keys().check(presented(&req))?;
    let (user, org, name) = path.into_inner();
    let org = OrgId(path_uuid(&org, "org_id")?);
    let s = state.clone();
    state
        .blocking(move || Ok(s.services.service_keys().revoke_named(&user, org, &name)?))
        .await?;
    Ok(web::Json(EditResponse {
        message: "API key deleted successfully".into(),
    }))
}
