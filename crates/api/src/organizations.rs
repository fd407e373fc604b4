//! The caller's organizations (issue 21; OpenHands' enterprise routes its clients use to find
//! their organization): `GET /api/organizations` and `GET /api/organizations/{org_id}/me`
//! (the members routes are [`crate::members`]'s).

use actix_web::{get, web};
use switchboard_domain::OrgId;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, OrgMeResponse, OrgPage, OrgResponse};
use crate::error::ApiResult;
use crate::extract::{Caller, path_uuid};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_organizations).service(organization_me);
}

/// Every organization the caller is a member of (only the bound one for a bound key), by
/// name, with the caller's role, and `current_org_id`, the effective organization of this
/// request. One page.
#[utoipa::path(tag = "Orgs",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = OrgPage), ApiKeyErrors))]
#[get("/api/organizations")]
pub async fn list_organizations(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<OrgPage>> {
    let (orgs, current) = caller
        .run(state, |s, ctx| {
            Ok(s.services.users().organizations(&ctx)?)
        })
        .await?;
    Ok(web::Json(OrgPage {
        items: orgs
            .into_iter()
            .map(|o| OrgResponse {
                id: o.id.0,
                name: o.name,
                role: o.role,
                is_personal: false,
                credits: None,
                created_at: switchboard_domain::time_input::format_rfc3339_micros(o.created_at),
            })
            .collect(),
        next_page_id: None,
        current_org_id: current.0,
    }))
}

/// The caller in one organization: role, permissions, and whether they stored an LLM key
/// there (masked, never the key). 404 when not a member; 403 for a key bound elsewhere.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgMeResponse),
        ApiKeyErrors,
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
    ))]
#[get("/api/organizations/{org_id}/me")]
pub async fn organization_me(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
) -> ApiResult<web::Json<OrgMeResponse>> {
    let raw = org_id.into_inner();
    let (me, key_set) = caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let me = s.services.users().org_me(&ctx, org)?;
            let key_set = s
                .services
                .user_settings()
                .llm_key_set(org, ctx.principal.user_id)?;
            Ok((me, key_set))
        })
        .await?;
    Ok(web::Json(OrgMeResponse {
        org_id: me.org_id.0,
        user_id: me.user_id.0,
        email: me.email,
        role: me.role,
        permissions: me.permissions,
        llm_api_key: key_set.then(|| "**********".to_owned()),
        llm_api_key_for_byor: None,
        status: "active".into(),
    }))
}
