//! Organization app settings (spec §4.2; API.md, Organization settings):
//! `GET`/`POST /api/organizations/app`.

use actix_web::{get, post, web};
use switchboard_domain::Permission;
use switchboard_domain::settings::{OrgAppSettingsUpdate, SettingsUpdate};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, OrgAppSettingsResponse};
use crate::error::ApiResult;
use crate::extract::{Caller, RawBody};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_org_app_settings)
        .service(update_org_app_settings);
}

/// The effective organization's app settings (`manage_application_settings`, every role).
#[utoipa::path(tag = "Orgs",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to act on (UUID); default: the key's bound organization, else the user's current one")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgAppSettingsResponse),
        ApiKeyErrors,
        (status = 422, description = "Malformed X-Org-Id", body = crate::dto::HTTPValidationError),
    ))]
#[get("/api/organizations/app")]
pub async fn get_org_app_settings(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<OrgAppSettingsResponse>> {
    let settings = caller
        .run(state, |s, ctx| {
            Ok(s.services.org_settings().org_settings(&ctx)?)
        })
        .await?;
    Ok(web::Json((&settings).into()))
}

/// Updates the effective organization's app settings. Checks, in order: API key (401),
/// `manage_application_settings` in the effective organization (403/404), body (413, 408,
/// 503 while reading it; then 422),
/// `edit_org_settings` when `registered_marketplaces` is sent (403), the version in
/// `last_known_updated_at` (409), duplicate marketplace names (400).
#[utoipa::path(tag = "Orgs",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to act on (UUID)")),
    request_body = OrgAppSettingsUpdate,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgAppSettingsResponse),
        (status = 400, description = "Duplicate marketplace names", body = ErrorDetail),
        (status = 409, description = "Modified since last_known_updated_at", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/organizations/app")]
pub async fn update_org_app_settings(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<OrgAppSettingsResponse>> {
    let ctx = caller.authenticate(&state).await?;
    ctx.require(Permission::ManageApplicationSettings)?;
    let body = body.read().await?;
    let s = state.clone();
    let settings = state
        .blocking(move || {
            let update = SettingsUpdate::from(body.typed::<OrgAppSettingsUpdate>()?);
            Ok(s.services
                .org_settings()
                .update_org_settings(&ctx, update)?)
        })
        .await?;
    Ok(web::Json((&settings).into()))
}
