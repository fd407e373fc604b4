//! Each user's LLM profiles (issue 21; OpenHands' `/api/v1/settings/profiles`): list, read,
//! save, delete, activate, rename. Names match `^[A-Za-z0-9._-]{1,64}$` (422 otherwise, at
//! `["path", "name"]`, judged after authentication).

use actix_web::{HttpResponse, delete, get, post, web};
use serde_json::Value;
use switchboard_domain::identity::OrgContext;
use switchboard_domain::org_profiles::ProfileListResponse;
use switchboard_domain::user_settings::profiles::{
    RenameProfileRequest, SaveProfile, SaveProfileRequest,
};
use switchboard_domain::user_settings::view::ProfileDetailResponse;
use switchboard_domain::validation::loc;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ActivateProfileResponse, ErrorDetail, ProfileMutationResponse};
use crate::error::ApiResult;
use crate::extract::{Body, Caller, RawBody};
use crate::named_profiles::{self, ProfileRoutes};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_profiles)
        .service(get_profile)
        .service(save_profile)
        .service(delete_profile)
        .service(activate_profile)
        .service(rename_profile);
}

/// The caller's profiles (`ProfileListResponse`: name, model, base URL, `api_key_set`; never a
/// key) and the active one.
#[utoipa::path(tag = "Settings",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, description = "The caller's profiles (no key) and the active one", body = ProfileListResponse), ApiKeyErrors))]
#[get("/api/v1/settings/profiles")]
pub async fn list_profiles(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<ProfileListResponse>> {
    named_profiles::list::<MemberLlmProfiles>(state, caller, ()).await
}

/// One profile (`ProfileDetailResponse`: its LLM with `api_key` null, and `api_key_set`).
#[utoipa::path(tag = "Settings",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The profile (no key)", body = ProfileDetailResponse),
        ApiKeyErrors,
        (status = 404, description = "No such profile of the caller's", body = ErrorDetail),
    ))]
#[get("/api/v1/settings/profiles/{name}")]
pub async fn get_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> ApiResult<web::Json<ProfileDetailResponse>> {
    named_profiles::get::<MemberLlmProfiles>(state, caller, (), name.into_inner()).await
}

/// Saves a profile (`SaveProfileRequest`, body optional): the LLM sent, else the settings'
/// current one; a key sent is sealed, none keeps the stored one. 201. At the profile limit a
/// new name is a 409.
#[utoipa::path(tag = "Settings",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body(content = Option<SaveProfileRequest>, description = "`SaveProfileRequest` (optional)", content_type = "application/json"),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = ProfileMutationResponse),
        (status = 409, description = "Profile limit reached", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/v1/settings/profiles/{name}")]
pub async fn save_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    named_profiles::save::<MemberLlmProfiles>(state, caller, (), name.into_inner(), body).await
}

/// Deletes a profile; idempotent (200 when there was none).
#[utoipa::path(tag = "Settings",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = ProfileMutationResponse), ApiKeyErrors))]
#[delete("/api/v1/settings/profiles/{name}")]
pub async fn delete_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    named_profiles::delete::<MemberLlmProfiles>(state, caller, (), name.into_inner()).await
}

/// Makes a profile the active one: its LLM (and key) becomes the settings' LLM, used by the
/// caller's next conversation starts.
#[utoipa::path(tag = "Settings",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ActivateProfileResponse),
        ApiKeyErrors,
        (status = 404, description = "No such profile of the caller's", body = ErrorDetail),
    ))]
#[post("/api/v1/settings/profiles/{name}/activate")]
pub async fn activate_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> ApiResult<web::Json<ActivateProfileResponse>> {
    let name = name.into_inner();
    let n = name.clone();
    let model = caller
        .run(state, move |s, ctx| {
            named_profiles::named::<MemberLlmProfiles>((), &n)?;
            Ok(s.services.user_settings().activate_profile(&ctx, &n)?)
        })
        .await?;
    Ok(web::Json(ActivateProfileResponse {
        message: format!("Switched to profile '{name}'"),
        name,
        model,
    }))
}

/// Renames a profile (`{"new_name": …}`): configuration, key and active flag kept. 409 when
/// another profile has the new name.
#[utoipa::path(tag = "Settings",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = RenameProfileRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ProfileMutationResponse),
        (status = 404, description = "No such profile of the caller's", body = ErrorDetail),
        (status = 409, description = "The new name is taken", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/v1/settings/profiles/{name}/rename")]
pub async fn rename_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    named_profiles::rename::<MemberLlmProfiles>(state, caller, (), name.into_inner(), body).await
}

/// A member's LLM profiles in the effective organization.
struct MemberLlmProfiles;

impl ProfileRoutes for MemberLlmProfiles {
    type Owner = ();
    type Scope = ();
    type List = ProfileListResponse;
    type Detail = ProfileDetailResponse;
    const NOUN: &'static str = "Profile";
    const OPTIONAL_BODY: bool = true;

    fn scope((): ()) -> ApiResult<()> {
        Ok(())
    }

    fn list(s: &AppState, ctx: &OrgContext, (): ()) -> ApiResult<ProfileListResponse> {
        Ok(s.services.user_settings().profiles(ctx)?)
    }

    fn get(s: &AppState, ctx: &OrgContext, (): (), name: &str) -> ApiResult<ProfileDetailResponse> {
        Ok(s.services.user_settings().profile(ctx, name)?)
    }

    /// The body read (`SaveProfileRequest`), then its model judged by the allow list.
    fn save(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        name: &str,
        body: Option<&Value>,
    ) -> ApiResult<()> {
        let save = SaveProfile::read(body)?;
        s.llm_catalog.allow_list().check_field(
            body.and_then(|j| j.pointer("/llm/model")),
            loc(["body", "llm", "model"]),
        )?;
        Ok(s.services.user_settings().save_profile(ctx, name, save)?)
    }

    fn delete(s: &AppState, ctx: &OrgContext, (): (), name: &str) -> ApiResult<()> {
        Ok(s.services.user_settings().delete_profile(ctx, name)?)
    }

    fn rename(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        name: &str,
        body: &Body,
    ) -> ApiResult<(String, String)> {
        let new_name = body.typed::<RenameProfileRequest>()?.new_name;
        s.services
            .user_settings()
            .rename_profile(ctx, name, &new_name)?;
        let message = format!("Profile '{name}' renamed to '{new_name}'");
        Ok((new_name, message))
    }
}
