//! Each user's agent profiles in the effective organization (issue 25; the agent server's
//! `/api/agent-profiles`, served by OpenHands' cloud with the same contract, which Agent
//! Canvas uses): list, read, save, delete, rename, activate. Names match
//! `^[A-Za-z0-9._-]{1,64}$` (422 otherwise, at `["path", "name"]`, judged after
//! authentication); `activate` takes the profile's id.

use actix_web::{HttpResponse, delete, get, post, web};
use serde_json::Value;
use switchboard_domain::agent_profile_body::{self, AgentProfile};
use switchboard_domain::agent_profiles::{AgentProfileDetailResponse, AgentProfileListResponse};
use switchboard_domain::identity::OrgContext;
use switchboard_domain::user_settings::profiles::RenameProfileRequest;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ActivateAgentProfileResponse, ErrorDetail, ProfileMutationResponse};
use crate::error::ApiResult;
use crate::extract::{Body, Caller, RawBody};
use crate::named_profiles::{self, ProfileRoutes};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_agent_profiles)
        .service(get_agent_profile)
        .service(save_agent_profile)
        .service(delete_agent_profile)
        .service(rename_agent_profile)
        .service(activate_agent_profile);
}

/// The caller's agent profiles (`AgentProfileListResponse`: `profiles`, each `{id, name,
/// agent_kind, revision, llm_profile_ref, mcp_server_refs}`, by name; and
/// `active_agent_profile_id`). None are seeded.
#[utoipa::path(tag = "Agent Profiles",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, description = "The caller's agent profiles and the active one", body = AgentProfileListResponse), ApiKeyErrors))]
#[get("/api/agent-profiles")]
pub async fn list_agent_profiles(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<AgentProfileListResponse>> {
    named_profiles::list::<AgentProfiles>(state, caller, ()).await
}

/// One agent profile (`AgentProfileDetailResponse`: `{name, profile}`, the whole profile with
/// its `id`, `revision` and `schema_version`).
#[utoipa::path(tag = "Agent Profiles",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, description = "The whole profile", body = AgentProfileDetailResponse),
        ApiKeyErrors,
        (status = 404, description = "No such profile of the caller's", body = ErrorDetail),
    ))]
#[get("/api/agent-profiles/{name}")]
pub async fn get_agent_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> ApiResult<web::Json<AgentProfileDetailResponse>> {
    named_profiles::get::<AgentProfiles>(state, caller, (), name.into_inner()).await
}

/// Saves an agent profile (the SDK's `AgentProfile`: `agent_kind` `openhands`, with
/// `llm_profile_ref`, or `acp`; each kind's fields only). The path names it; `id` and
/// `revision` sent are ignored (a namesake keeps its id, its revision bumped). 201. At
/// the profile limit a new name is a 409. A 422 for what a start could not carry out, saying
/// why: `agent` other than `CodeActAgent`, `verification.critic_enabled: true`, an unknown
/// `acp_server` (docs/API.md, "Agent profiles").
#[utoipa::path(tag = "Agent Profiles",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = AgentProfile,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = ProfileMutationResponse),
        (status = 409, description = "Profile limit reached", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/agent-profiles/{name}")]
pub async fn save_agent_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    named_profiles::save::<AgentProfiles>(state, caller, (), name.into_inner(), body).await
}

/// Deletes an agent profile; idempotent (200 when there was none). Deleting the active one
/// clears `active_agent_profile_id`.
#[utoipa::path(tag = "Agent Profiles",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "Profile name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = ProfileMutationResponse), ApiKeyErrors))]
#[delete("/api/agent-profiles/{name}")]
pub async fn delete_agent_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    named_profiles::delete::<AgentProfiles>(state, caller, (), name.into_inner()).await
}

/// Renames an agent profile (`{"new_name": …}`): id, revision and the active pointer kept.
/// 404 when there is none; 409 when another profile has the new name.
#[utoipa::path(tag = "Agent Profiles",
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
#[post("/api/agent-profiles/{name}/rename")]
pub async fn rename_agent_profile(
    state: web::Data<AppState>,
    caller: Caller,
    name: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    named_profiles::rename::<AgentProfiles>(state, caller, (), name.into_inner(), body).await
}

/// Makes the profile with this id the caller's active one (a pointer: no settings change;
/// Agent Canvas starts its next conversations from it). 404 when no profile of the caller's
/// has that id. The body (`{}`) is not read.
#[utoipa::path(tag = "Agent Profiles",
    params(("profile_id" = String, Path, description = "The profile's id (UUID)"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ActivateAgentProfileResponse),
        ApiKeyErrors,
        (status = 404, description = "No profile of the caller's has that id", body = ErrorDetail),
    ))]
#[post("/api/agent-profiles/{profile_id}/activate")]
pub async fn activate_agent_profile(
    state: web::Data<AppState>,
    caller: Caller,
    profile_id: web::Path<String>,
) -> ApiResult<web::Json<ActivateAgentProfileResponse>> {
    let id = profile_id.into_inner();
    let i = id.clone();
    caller
        .run(state, move |s, ctx| {
            Ok(s.services.agent_profiles().activate(&ctx, &i)?)
        })
        .await?;
    Ok(web::Json(ActivateAgentProfileResponse {
        message: format!("Agent profile '{id}' activated"),
        id,
        agent_settings_applied: false,
    }))
}

/// A member's agent profiles in the effective organization.
struct AgentProfiles;

impl ProfileRoutes for AgentProfiles {
    type Owner = ();
    type Scope = ();
    type List = AgentProfileListResponse;
    type Detail = AgentProfileDetailResponse;
    const NOUN: &'static str = "Agent profile";
    const OPTIONAL_BODY: bool = false;

    fn scope((): ()) -> ApiResult<()> {
        Ok(())
    }

    fn list(s: &AppState, ctx: &OrgContext, (): ()) -> ApiResult<AgentProfileListResponse> {
        Ok(s.services.agent_profiles().list(ctx)?)
    }

    fn get(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        name: &str,
    ) -> ApiResult<AgentProfileDetailResponse> {
        Ok(s.services.agent_profiles().get(ctx, name)?)
    }

    fn save(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        name: &str,
        body: Option<&Value>,
    ) -> ApiResult<()> {
        let input = agent_profile_body::read(body.unwrap_or(&Value::Null))?;
        Ok(s.services.agent_profiles().save(ctx, name, input)?)
    }

    fn delete(s: &AppState, ctx: &OrgContext, (): (), name: &str) -> ApiResult<()> {
        Ok(s.services.agent_profiles().delete(ctx, name)?)
    }

    fn rename(
        s: &AppState,
        ctx: &OrgContext,
        (): (),
        name: &str,
        body: &Body,
    ) -> ApiResult<(String, String)> {
        let new_name = body.typed::<RenameProfileRequest>()?.new_name;
        let message = s.services.agent_profiles().rename(ctx, name, &new_name)?;
        Ok((new_name, message))
    }
}
