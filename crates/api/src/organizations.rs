//! The caller's organizations (issue 21; OpenHands' enterprise routes its clients use to find
//! their organization): `GET /api/organizations`, `GET /api/organizations/{org_id}/me` and
//! (issue 25, Agent Canvas) `GET /api/organizations/{org_id}/members/{user_id}`.

use actix_web::{get, web};
use switchboard_domain::{OrgId, Role, UserId};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, OrgMeResponse, OrgMemberResponse, OrgPage, OrgResponse};
use crate::error::ApiResult;
use crate::extract::{Caller, path_uuid};
use crate::responses::ApiKeyErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_organizations)
        .service(organization_me)
        .service(organization_member);
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

/// One member of an organization, read by any member (OpenHands' `OrgMemberResponse`:
/// `user_id`, `email`, `role_id`, `role`, `role_rank`, `status`). 404 when the caller is not a
/// member, or `user_id` is not; 403 for a key bound elsewhere; 422 for ids not UUIDs.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("user_id" = uuid::Uuid, Path, description = "User (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgMemberResponse),
        ApiKeyErrors,
        (status = 404, description = "Not a member, or no such member", body = ErrorDetail),
    ))]
#[get("/api/organizations/{org_id}/members/{user_id}")]
pub async fn organization_member(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<OrgMemberResponse>> {
    let (raw_org, raw_user) = path.into_inner();
    let m = caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw_org, "org_id")?);
            let user = UserId(path_uuid(&raw_user, "user_id")?);
            Ok(s.services.users().org_member(&ctx, org, user)?)
        })
        .await?;
    // OpenHands' seeded `role` rows (reference/openhands-org-settings.md §2.1).
    let (role_id, role_rank) = match m.role {
        Role::Owner => (1, 10),
        Role::Admin => (2, 20),
        Role::Member => (3, 1000),
    };
    Ok(web::Json(OrgMemberResponse {
        user_id: m.user_id.0,
        email: m.email,
        role_id,
        role: m.role.as_str().to_owned(),
        role_rank,
        status: "active".into(),
    }))
}
