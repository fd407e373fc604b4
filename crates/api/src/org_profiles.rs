//! An organization's LLM profiles and LLM provider connections (issue 25; the routes Agent
//! Canvas uses when an organization is picked): `/api/organizations/{org_id}/profiles…` and
//! `/api/organizations/{org_id}/provider-connections…`. Every member reads
//! (`view_org_settings`), owners and admins write (`edit_org_settings`: a member is 403
//! whatever the body). No key is ever answered. Profile names match `^[A-Za-z0-9._-]{1,64}$`
//! (422 at `["path", "name"]`).

use actix_web::{HttpResponse, delete, get, patch, post, web};
use serde_json::Value;
use switchboard_domain::OrgId;
use switchboard_domain::identity::OrgContext;
use switchboard_domain::org_profiles::{
    CreateProviderConnectionRequest, OrgProfileDetail, ProfileListResponse, ProviderConnection,
    ProviderConnectionList, UpdateProviderConnectionRequest,
};
use switchboard_domain::validation::loc;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, OrgActivateProfileResponse, ProfileMutationResponse};
use crate::error::ApiResult;
use crate::extract::{Body, Caller, RawBody, path_uuid};
use crate::named_profiles::{self, ProfileRoutes};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_org_profiles)
        .service(get_org_profile)
        .service(save_org_profile)
        .service(delete_org_profile)
        .service(rename_org_profile)
        .service(activate_org_profile)
        .service(list_connections)
        .service(create_connection)
        .service(update_connection)
        .service(delete_connection);
}

/// The organization's LLM profiles (`ProfileListResponse`: name, model, base URL,
/// `api_key_set`; and `active_profile`, the one whose LLM is the organization's default).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The organization's profiles (no key) and the active one", body = ProfileListResponse),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/organizations/{org_id}/profiles")]
pub async fn list_org_profiles(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
) -> ApiResult<web::Json<ProfileListResponse>> {
    named_profiles::list::<OrgLlmProfiles>(state, caller, org_id.into_inner()).await
}

/// One organization profile: `{name, llm (api_key null), api_key_set}`.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The profile (no key)", body = OrgProfileDetail),
        (status = 404, description = "No such profile, or not a member", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/organizations/{org_id}/profiles/{name}")]
pub async fn get_org_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<OrgProfileDetail>> {
    let (org, name) = path.into_inner();
    named_profiles::get::<OrgLlmProfiles>(state, caller, org, name).await
}

/// Saves an organization profile (`SaveProfileRequest`, body optional: the LLM sent, else the
/// organization's default LLM; a key sent is sealed, none keeps the stored one). 201. At the
/// profile limit a new name is a 409.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = Option<switchboard_domain::user_settings::profiles::SaveProfileRequest>, description = "`SaveProfileRequest` (optional)", content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = ProfileMutationResponse),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        (status = 409, description = "Profile limit reached", body = ErrorDetail),
        (status = 503, description = "A key sent to a server without the installation key", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/organizations/{org_id}/profiles/{name}")]
pub async fn save_org_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let (org, name) = path.into_inner();
    named_profiles::save::<OrgLlmProfiles>(state, caller, org, name, body).await
}

/// Deletes an organization profile; idempotent. The organization's default LLM stays.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ProfileMutationResponse),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[delete("/api/organizations/{org_id}/profiles/{name}")]
pub async fn delete_org_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    let (org, name) = path.into_inner();
    named_profiles::delete::<OrgLlmProfiles>(state, caller, org, name).await
}

/// Renames an organization profile (`{"new_name": …}`); 409 when the new name is taken.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = switchboard_domain::user_settings::profiles::RenameProfileRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ProfileMutationResponse),
        (status = 404, description = "No such profile, or not a member", body = ErrorDetail),
        (status = 409, description = "The new name is taken", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/organizations/{org_id}/profiles/{name}/rename")]
pub async fn rename_org_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: RawBody,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    let (org, name) = path.into_inner();
    named_profiles::rename::<OrgLlmProfiles>(state, caller, org, name, body).await
}

/// Makes an organization profile's LLM (and key) the organization's default LLM: `{name,
/// message, llm}` (`llm.api_key` null).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The organization's default LLM now (no key)", body = OrgActivateProfileResponse),
        (status = 404, description = "No such profile, or not a member", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[post("/api/organizations/{org_id}/profiles/{name}/activate")]
pub async fn activate_org_profile(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<OrgActivateProfileResponse>> {
    let (raw, name) = path.into_inner();
    let n = name.clone();
    let llm = caller
        .run(state, move |s, ctx| {
            let org = named_profiles::named::<OrgLlmProfiles>(raw, &n)?;
            Ok(s.services.org_defaults().activate_profile(&ctx, org, &n)?)
        })
        .await?;
    Ok(web::Json(OrgActivateProfileResponse {
        message: format!("Switched to profile '{name}'"),
        name,
        llm,
    }))
}

/// The organization's LLM provider connections: `{connections: [{id, display_name,
/// provider, base_url, created_at, updated_at, api_key_set}]}` (times in seconds since the
/// epoch; never a key).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The connections (no key)", body = ProviderConnectionList),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[get("/api/organizations/{org_id}/provider-connections")]
pub async fn list_connections(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
) -> ApiResult<web::Json<ProviderConnectionList>> {
    let raw = org_id.into_inner();
    let answer = caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            Ok(s.services.org_defaults().connections(&ctx, org)?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// Adds a provider connection (`{display_name, provider, api_key, base_url?}`; the key
/// sealed). 201 with the connection (no key).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = CreateProviderConnectionRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, description = "The connection made (no key)", body = ProviderConnection),
        (status = 404, description = "Not a member of that organization", body = ErrorDetail),
        (status = 409, description = "Connection limit reached", body = ErrorDetail),
        (status = 503, description = "No installation key", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/organizations/{org_id}/provider-connections")]
pub async fn create_connection(
    state: web::Data<AppState>,
    caller: Caller,
    org_id: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let raw = org_id.into_inner();
    let ctx = caller.authenticate(&state).await?;
    let org = OrgId(path_uuid(&raw, "org_id")?);
    let body = body.read().await?;
    let s = state.clone();
    let made = state
        .blocking(move || {
            Ok(s.services
                .org_defaults()
                .create_connection(&ctx, org, &body.json()?)?)
        })
        .await?;
    Ok(HttpResponse::Created().json(made))
}

/// Changes a provider connection: the fields sent (`display_name`, `provider`, `base_url`,
/// `api_key`; a key may be replaced, never removed). Answers the connection (no key).
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("id" = String, Path, description = "Connection id"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = UpdateProviderConnectionRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The connection (no key)", body = ProviderConnection),
        (status = 404, description = "No such connection, or not a member", body = ErrorDetail),
        (status = 503, description = "No installation key", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[patch("/api/organizations/{org_id}/provider-connections/{id}")]
pub async fn update_connection(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: RawBody,
) -> ApiResult<web::Json<ProviderConnection>> {
    let (raw, id) = path.into_inner();
    let ctx = caller.authenticate(&state).await?;
    let org = OrgId(path_uuid(&raw, "org_id")?);
    let body = body.read().await?;
    let s = state.clone();
    let answer = state
        .blocking(move || {
            Ok(s.services
                .org_defaults()
                .update_connection(&ctx, org, &id, &body.json()?)?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// Deletes a provider connection; answers it (no key). 404 for an unknown id.
#[utoipa::path(tag = "Orgs",
    params(("org_id" = uuid::Uuid, Path, description = "Organization (UUID)"),
           ("id" = String, Path, description = "Connection id"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The connection (no key)", body = ProviderConnection),
        (status = 404, description = "No such connection, or not a member", body = ErrorDetail),
        ApiKeyErrors,
    ))]
#[delete("/api/organizations/{org_id}/provider-connections/{id}")]
pub async fn delete_connection(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> ApiResult<web::Json<ProviderConnection>> {
    let (raw, id) = path.into_inner();
    let answer = caller
        .run(state, move |s, ctx| {
            let org = OrgId(path_uuid(&raw, "org_id")?);
            Ok(s.services
                .org_defaults()
                .delete_connection(&ctx, org, &id)?)
        })
        .await?;
    Ok(web::Json(answer))
}

/// An organization's LLM profiles, the organization named in the path.
struct OrgLlmProfiles;

impl ProfileRoutes for OrgLlmProfiles {
    type Owner = String;
    type Scope = OrgId;
    type List = ProfileListResponse;
    type Detail = OrgProfileDetail;
    const NOUN: &'static str = "Profile";
    const OPTIONAL_BODY: bool = true;

    fn scope(owner: String) -> ApiResult<OrgId> {
        Ok(OrgId(path_uuid(&owner, "org_id")?))
    }

    fn list(s: &AppState, ctx: &OrgContext, org: OrgId) -> ApiResult<ProfileListResponse> {
        Ok(s.services.org_defaults().profiles(ctx, org)?)
    }

    fn get(s: &AppState, ctx: &OrgContext, org: OrgId, name: &str) -> ApiResult<OrgProfileDetail> {
        Ok(s.services.org_defaults().profile(ctx, org, name)?)
    }

    /// The model judged by the allow list, then the service (the permission, then the body).
    fn save(
        s: &AppState,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
        body: Option<&Value>,
    ) -> ApiResult<()> {
        s.llm_catalog.allow_list().check_field(
            body.and_then(|j| j.pointer("/llm/model")),
            loc(["body", "llm", "model"]),
        )?;
        Ok(s.services
            .org_defaults()
            .save_profile(ctx, org, name, body)?)
    }

    fn delete(s: &AppState, ctx: &OrgContext, org: OrgId, name: &str) -> ApiResult<()> {
        Ok(s.services.org_defaults().delete_profile(ctx, org, name)?)
    }

    /// The service reads the body after the permission.
    fn rename(
        s: &AppState,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
        body: &Body,
    ) -> ApiResult<(String, String)> {
        let new_name = s
            .services
            .org_defaults()
            .rename_profile(ctx, org, name, &body.json()?)?;
        let message = format!("Profile '{name}' renamed to '{new_name}'");
        Ok((new_name, message))
    }
}
