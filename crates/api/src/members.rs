//! Members managed through the API (issue 34; OpenHands' `/api/organizations/{org_id}/members…`
//! routes, reference/openhands-org-settings.md §3.2): list with paging and an e-mail filter,
//! count, read one, change a role, remove; and the organization's audit log, read by owners.
//! The rules are the domain's ([`switchboard_domain::services::MemberService`]).

use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, web};
use switchboard_domain::cursor::Keyset;
use switchboard_domain::ports::MemberPosition;
use switchboard_domain::services::{AuditPosition, OrgMember, OrgMemberCreate, OrgMemberUpdate};
use switchboard_domain::{OrgId, UserId, validation};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{
    AuditLogPage, EditResponse, ErrorDetail, HTTPValidationError, OrgMemberPage, OrgMemberResponse,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Caller, QueryPairs, RawBody, path_uuid};
use crate::openapi::params::{EmailFilterParam, MemberPageLimit, PageLimit};
use crate::responses::{ApiKeyErrors, BodyErrors};
use crate::sign_in::remote_addr;

/// Registers the routes of this module and their OpenAPI paths (`count` before
/// `{user_id}`, which it would otherwise match).
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_members)
        .service(add_member)
        .service(count_members)
        .service(organization_member)
        .service(update_member)
        .service(remove_member)
        .service(audit_log);
}

/// The most characters of the `email` filter (OpenHands: 1–255).
const MAX_EMAIL_FILTER: usize = 255;

/// The `email` query parameter: 1..=255 characters, or absent.
fn email_filter(q: &QueryPairs) -> Result<Option<String>, ApiError> {
    let Some(e) = q.all("email").pop() else {
        return Ok(None);
    };
    let n = e.chars().count();
    if n == 0 {
        return Err(validation::string_too_short(QueryPairs::loc("email"), 1, &e).into());
    }
    if n > MAX_EMAIL_FILTER {
        return Err(validation::value_error(
            QueryPairs::loc("email"),
            "email may have at most 255 characters",
            &serde_json::Value::String(e),
        )
        .into());
    }
    validation::refuse_nul(|| QueryPairs::loc("email"), &e)?;
    Ok(Some(e))
}

/// The members of an organization, in the order they joined, `limit` (1–100, default 10) a
/// page, those whose e-mail contains `email` (any case) when given; any member reads them
/// (OpenHands' `OrgMemberPage`, with `next_page_id` added).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("page_id" = Option<String>, Query, description = "Cursor from `next_page_id`"),
           ("limit" = inline(Option<MemberPageLimit>), Query, description = "1–100, default 10"),
           ("email" = inline(Option<EmailFilterParam>), Query, description = "E-mail contains (any case), 1–255 characters"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgMemberPage),
        ApiKeyErrors,
        (status = 422, description = "Malformed id, cursor, limit or filter", body = HTTPValidationError),
    ))]
#[get("/api/organizations/{org_id}/members")]
pub async fn list_members(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<OrgMemberPage>> {
    let raw = org_id.into_inner();
    caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let (after, limit) = query.paging_or::<MemberPosition>(100, 10)?;
            let email = email_filter(&query)?;
            let page = s
                .services
                .members()
                .list(&ctx, org, email.as_deref(), after, limit)?;
            Ok(web::Json(OrgMemberPage {
                items: page
                    .items
                    .into_iter()
                    .map(|m| OrgMember::from(m).into())
                    .collect(),
                current_page: page.current_page,
                per_page: limit,
                next_page_id: page.next.map(|p| p.encode()),
            }))
        })
        .await
}

/// Adds a user (one who has signed in, or the operator made) to the organization by e-mail:
/// body `{"email": "…", "role": "owner"|"admin"|"member"}` (`role` defaults to `member`).
/// Owners add any role, admins admins and members. Written to the audit log. (OpenHands
/// invites by e-mail instead; Switchboard sends no mail: a person signs in once, then an
/// owner or admin adds them, or a sign-in rule does.)
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = OrgMemberCreate, content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = OrgMemberResponse),
        BodyErrors,
        ApiKeyErrors,
        (status = 404, description = "No user has this e-mail", body = ErrorDetail),
        (status = 409, description = "A member already", body = ErrorDetail),
        (status = 422, description = "Malformed id or body", body = HTTPValidationError),
    ))]
#[post("/api/organizations/{org_id}/members")]
pub async fn add_member(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let ctx = caller.authenticate(&state).await?;
    let org = OrgId(path_uuid(&org_id, "org_id")?);
    let body = body.read().await?;
    let remote = remote_addr(&req);
    let s = state.clone();
    let m = state
        .blocking(move || {
            s.services.members().caller_role(&ctx, org)?;
            let add = body.typed::<OrgMemberCreate>()?;
            Ok(s.services
                .members()
                .add(&ctx, org, add.email(), add.role(), remote)?)
        })
        .await?;
    Ok(HttpResponse::Created().json(OrgMemberResponse::from(m)))
}

/// How many members an organization has (those whose e-mail contains `email`, when given):
/// an integer, as OpenHands answers.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("email" = inline(Option<EmailFilterParam>), Query, description = "E-mail contains (any case), 1–255 characters"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = i64, content_type = "application/json"),
        ApiKeyErrors,
        (status = 422, description = "Malformed id or filter", body = HTTPValidationError),
    ))]
#[get("/api/organizations/{org_id}/members/count")]
pub async fn count_members(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<i64>> {
    let raw = org_id.into_inner();
    caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let email = email_filter(&query)?;
            Ok(web::Json(s.services.members().count(
                &ctx,
                org,
                email.as_deref(),
            )?))
        })
        .await
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
    Ok(web::Json(m.into()))
}

/// Changes a member's role (body `{"role": "owner"|"admin"|"member"}`, OpenHands'
/// `OrgMemberUpdate`). Owners change admins and members to any role; admins change members
/// to admin or member; nobody changes an owner or themselves; the last owner keeps the role.
/// Written to the audit log.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("user_id" = uuid::Uuid, Path, description = "User (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = OrgMemberUpdate, content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgMemberResponse),
        BodyErrors,
        ApiKeyErrors,
        (status = 400, description = "The last owner cannot be demoted", body = ErrorDetail),
        (status = 404, description = "No such member", body = ErrorDetail),
        (status = 409, description = "The member changed meanwhile", body = ErrorDetail),
        (status = 422, description = "Malformed id or body", body = HTTPValidationError),
    ))]
#[patch("/api/organizations/{org_id}/members/{user_id}")]
pub async fn update_member(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: RawBody,
) -> ApiResult<web::Json<OrgMemberResponse>> {
    let ctx = caller.authenticate(&state).await?;
    let (raw_org, raw_user) = path.into_inner();
    let org = OrgId(path_uuid(&raw_org, "org_id")?);
    let user = UserId(path_uuid(&raw_user, "user_id")?);
    let body = body.read().await?;
    let remote = remote_addr(&req);
    let s = state.clone();
    let m = state
        .blocking(move || {
            // An organization the caller is not in is 404 before its body is judged.
            s.services.members().caller_role(&ctx, org)?;
            let role = body.typed::<OrgMemberUpdate>()?.role;
            Ok(s.services
                .members()
                .change_role(&ctx, org, user, role, remote)?)
        })
        .await?;
    Ok(web::Json(m.into()))
}

/// Removes a member from an organization: owners remove admins and members, admins remove
/// members; nobody removes themselves; the last owner stays. The member's keys bound to the
/// organization are revoked, and none of their keys acts there any more, on every replica at
/// once. Written to the audit log. Answers `{"message": "Member removed successfully"}`.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("user_id" = uuid::Uuid, Path, description = "User (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = EditResponse),
        ApiKeyErrors,
        (status = 400, description = "The last owner cannot be removed", body = ErrorDetail),
        (status = 404, description = "No such member", body = ErrorDetail),
        (status = 409, description = "The member changed meanwhile", body = ErrorDetail),
        (status = 422, description = "Malformed id", body = HTTPValidationError),
    ))]
#[delete("/api/organizations/{org_id}/members/{user_id}")]
pub async fn remove_member(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<EditResponse>> {
    let (raw_org, raw_user) = path.into_inner();
    let remote = remote_addr(&req);
    caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw_org, "org_id")?);
            let user = UserId(path_uuid(&raw_user, "user_id")?);
            s.services.members().remove(&ctx, org, user, remote)?;
            Ok(web::Json(EditResponse {
                message: "Member removed successfully".into(),
            }))
        })
        .await
}

/// The organization's audit log, newest first, `limit` (1–100, default 100) a page: every
/// change to its members (and the operator's, and revoked keys), with who, what, when and
/// from which address. Owners only.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("page_id" = Option<String>, Query, description = "Cursor from `next_page_id`"),
           ("limit" = inline(Option<PageLimit>), Query, description = "1–100, default 100"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = AuditLogPage),
        ApiKeyErrors,
        (status = 422, description = "Malformed id, cursor or limit", body = HTTPValidationError),
    ))]
#[get("/api/organizations/{org_id}/audit-log")]
pub async fn audit_log(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    query: QueryPairs,
) -> ApiResult<web::Json<AuditLogPage>> {
    let raw = org_id.into_inner();
    caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            let (before, limit) = query.paging::<AuditPosition>(100)?;
            let mut items =
                s.services
                    .members()
                    .audit_log(&ctx, org, before.map(|p| p.0), limit + 1)?;
            let more = items.len() > limit as usize;
            items.truncate(limit as usize);
            let next_page_id = more
                .then(|| items.last().map(|e| AuditPosition(e.id).encode()))
                .flatten();
            Ok(web::Json(AuditLogPage {
                items: items.into_iter().map(Into::into).collect(),
                next_page_id,
            }))
        })
        .await
}
