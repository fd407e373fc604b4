//! The routes of a collection of named profiles, once (issue 37): a member's LLM profiles
//! (`/api/v1/settings/profiles`), an organization's (`/api/organizations/{org_id}/profiles`)
//! and a member's agent profiles (`/api/agent-profiles`) are listed, read, saved, deleted and
//! renamed by these generic handlers; each collection is a [`ProfileRoutes`] naming what its
//! path holds besides the profile's name and which service does each operation, and its
//! module keeps the annotated routes (their OpenAPI paths) calling these.
//!
//! The order of the checks is the same for all: the key (401, and the organization's 403 or
//! 404), the path (the organization's id, then the profile's name: 422 at `["path", …]`), the
//! body (read only after both; API.md, Request bodies), then the service (permission, the
//! body's 422s, 404, 409). Activating differs per collection (what it changes and answers)
//! and stays with each.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use serde_json::Value;
use switchboard_domain::identity::OrgContext;
use switchboard_domain::user_settings::profiles::check_profile_name;
use switchboard_domain::validation::loc;

use crate::AppState;
use crate::dto::ProfileMutationResponse;
use crate::error::ApiResult;
use crate::extract::{Body, Caller, RawBody};

/// A collection of named profiles as its routes serve it.
pub trait ProfileRoutes: 'static {
    /// What the path holds besides the profile's name, as sent (`()`: the caller's own).
    type Owner: Send + 'static;
    /// [`ProfileRoutes::Owner`] read (e.g. the organization's id).
    type Scope: Send + 'static;
    /// The list's answer.
    type List: Serialize + Send + 'static;
    /// One profile's answer.
    type Detail: Serialize + Send + 'static;
    /// The noun of the answers' messages (`Profile`, `Agent profile`).
    const NOUN: &'static str;
    /// Whether a save's body may be empty (all defaults).
    const OPTIONAL_BODY: bool;

    /// Reads the owner.
    ///
    /// # Errors
    /// A 422 at its `["path", …]`.
    fn scope(owner: Self::Owner) -> ApiResult<Self::Scope>;

    /// The list answer.
    ///
    /// # Errors
    /// The service's.
    fn list(s: &AppState, ctx: &OrgContext, scope: Self::Scope) -> ApiResult<Self::List>;

    /// One profile's answer.
    ///
    /// # Errors
    /// The service's (404 for an unknown name).
    fn get(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        name: &str,
    ) -> ApiResult<Self::Detail>;

    /// Saves `name` from the body (`None`: empty, when [`ProfileRoutes::OPTIONAL_BODY`]).
    ///
    /// # Errors
    /// The body's 422s and the service's (403, 409).
    fn save(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        name: &str,
        body: Option<&Value>,
    ) -> ApiResult<()>;

    /// Deletes `name` (idempotent).
    ///
    /// # Errors
    /// The service's (403).
    fn delete(s: &AppState, ctx: &OrgContext, scope: Self::Scope, name: &str) -> ApiResult<()>;

    /// Renames `name` to the body's `new_name`. Returns the new name and the answer's message.
    ///
    /// # Errors
    /// The body's 422s and the service's (403, 404, 409).
    fn rename(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        name: &str,
        body: &Body,
    ) -> ApiResult<(String, String)>;
}

/// The owner read, then the profile's name checked (`^[A-Za-z0-9._-]{1,64}$`: 422 at
/// `["path", "name"]`); for a collection's own routes (its activation) too.
///
/// # Errors
/// Those 422s.
pub fn named<P: ProfileRoutes>(owner: P::Owner, name: &str) -> ApiResult<P::Scope> {
    let scope = P::scope(owner)?;
    check_profile_name(name, loc(["path", "name"]))?;
    Ok(scope)
}

/// `GET …/profiles`.
///
/// # Errors
/// The key's, the owner's and the service's.
pub async fn list<P: ProfileRoutes>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
) -> ApiResult<web::Json<P::List>> {
    let answer = caller
        .run(state, move |s, ctx| P::list(s, &ctx, P::scope(owner)?))
        .await?;
    Ok(web::Json(answer))
}

/// `GET …/profiles/{name}`.
///
/// # Errors
/// The key's, the path's and the service's.
pub async fn get<P: ProfileRoutes>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
    name: String,
) -> ApiResult<web::Json<P::Detail>> {
    let answer = caller
        .run(state, move |s, ctx| {
            let scope = named::<P>(owner, &name)?;
            P::get(s, &ctx, scope, &name)
        })
        .await?;
    Ok(web::Json(answer))
}

/// `POST …/profiles/{name}`: 201 `{name, message: "<noun> '<name>' saved"}`.
///
/// # Errors
/// The key's, the path's, the body's and the service's.
pub async fn save<P: ProfileRoutes>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
    name: String,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let n = name.clone();
    with_body::<P, _>(
        state,
        caller,
        owner,
        &name,
        body,
        move |s, ctx, scope, body| {
            let empty = P::OPTIONAL_BODY && body.bytes().iter().all(u8::is_ascii_whitespace);
            let json = if empty { None } else { Some(body.json()?) };
            P::save(s, ctx, scope, &n, json.as_ref())
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(ProfileMutationResponse {
        message: format!("{} '{name}' saved", P::NOUN),
        name,
    }))
}

/// `DELETE …/profiles/{name}`: `{name, message: "<noun> '<name>' deleted"}`, also when there
/// was none.
///
/// # Errors
/// The key's, the path's and the service's.
pub async fn delete<P: ProfileRoutes>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
    name: String,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    let n = name.clone();
    caller
        .run(state, move |s, ctx| {
            let scope = named::<P>(owner, &n)?;
            P::delete(s, &ctx, scope, &n)
        })
        .await?;
    Ok(web::Json(ProfileMutationResponse {
        message: format!("{} '{name}' deleted", P::NOUN),
        name,
    }))
}

/// `POST …/profiles/{name}/rename`: `{name: <the new name>, message}`.
///
/// # Errors
/// The key's, the path's, the body's and the service's.
pub async fn rename<P: ProfileRoutes>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
    name: String,
    body: RawBody,
) -> ApiResult<web::Json<ProfileMutationResponse>> {
    let n = name.clone();
    let (name, message) = with_body::<P, _>(
        state,
        caller,
        owner,
        &name,
        body,
        move |s, ctx, scope, body| P::rename(s, ctx, scope, &n, &body),
    )
    .await?;
    Ok(web::Json(ProfileMutationResponse { name, message }))
}

/// A route with a body, in the order every collection keeps: the key, the path (owner, then
/// `name`), the body read (only then), then `f` on the blocking pool.
async fn with_body<P: ProfileRoutes, T: Send + 'static>(
    state: web::Data<AppState>,
    caller: Caller,
    owner: P::Owner,
    name: &str,
    body: RawBody,
    f: impl FnOnce(&AppState, &OrgContext, P::Scope, Body) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let ctx = caller.authenticate(&state).await?;
    let scope = named::<P>(owner, name)?;
    let body = body.read().await?;
    let s = state.clone();
    state.blocking(move || f(&s, &ctx, scope, body)).await
}
