//! Each user's custom secrets and git provider tokens (issue 21; OpenHands'
//! `/api/v1/secrets`): search (names and descriptions only), create or replace, rename or
//! re-describe, delete; provider tokens stored and unset. No answer holds a value.

use actix_web::{HttpResponse, delete, get, post, put, web};
use switchboard_domain::events::MAX_PAGE_LIMIT;
use switchboard_domain::user_secrets::{
    NewSecret, ProviderTokensRequest, SecretCursor, SecretMeta,
};
use switchboard_domain::validation::{loc, refuse_nul};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{CustomSecretPage, EditResponse, ErrorDetail};
use crate::error::ApiResult;
use crate::extract::{Caller, QueryPairs, RawBody};
use crate::responses::{ApiKeyErrors, BodyErrors};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    // The git-providers routes first: `DELETE /api/v1/secrets/git-providers` must not be taken
    // for the deletion of a secret named `git-providers` (its literal path wins, as in
    // OpenHands; a secret of that name is still reachable by `PUT`).
    cfg.service(search_secrets)
        .service(store_provider_tokens)
        .service(unset_provider_tokens)
        .service(create_secret)
        .service(update_secret)
        .service(delete_secret);
}

/// The caller's custom secrets in the effective organization, by name: names and
/// descriptions, never values (`CustomSecretPage`). `name__contains` filters (case-sensitive);
/// `page_id` is the cursor of the previous page, `limit` 1 to 100 (default 100).
#[utoipa::path(tag = "Secrets",
    params(
        ("name__contains" = Option<String>, Query, pattern = "^[^\\x00]*$", description = "Names containing this text (no NUL)"),
        ("page_id" = Option<String>, Query, description = "next_page_id of the previous page"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "At most this many (default 100)"),
        ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = CustomSecretPage), ApiKeyErrors))]
#[get("/api/v1/secrets/search")]
pub async fn search_secrets(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<web::Json<CustomSecretPage>> {
    let page = caller
        .run(state, move |s, ctx| {
            let (after, limit) = query.paging::<SecretCursor>(MAX_PAGE_LIMIT)?;
            let contains = query.all("name__contains").pop();
            if let Some(c) = &contains {
                refuse_nul(|| loc(["query", "name__contains"]), c)?;
            }
            Ok(s.services.user_secrets().search(
                &ctx,
                contains.as_deref(),
                after,
                limit as usize,
            )?)
        })
        .await?;
    Ok(web::Json(CustomSecretPage {
        items: page.items,
        next_page_id: page.next_page_id,
    }))
}

/// Creates a custom secret, or replaces the value and description of the caller's secret of
/// that name (`CustomSecretCreate`: `name`, `value`, `description`). The value is sealed. 201.
#[utoipa::path(tag = "Secrets",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = NewSecret,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 201, body = EditResponse),
        (status = 409, description = "Secret limit reached", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
    ))]
#[post("/api/v1/secrets")]
pub async fn create_secret(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<HttpResponse> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let secret = body.typed::<NewSecret>()?;
            Ok(s.services.user_secrets().create(&ctx, secret)?)
        })
        .await?;
    Ok(HttpResponse::Created().json(EditResponse {
        message: "Secret created successfully".into(),
    }))
}

/// Renames and re-describes one of the caller's secrets (`CustomSecretWithoutValue`), its
/// value kept. `secret_id` is the secret's name, as in OpenHands. 404 for an unknown name, 400
/// when the new name is taken.
#[utoipa::path(tag = "Secrets",
    params(("secret_id" = String, Path, description = "The secret's name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = SecretMeta,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = EditResponse),
        (status = 400, description = "The new name is taken", body = ErrorDetail),
        BodyErrors,
        ApiKeyErrors,
        (status = 404, description = "No secret of that name", body = ErrorDetail),
    ))]
#[put("/api/v1/secrets/{secret_id}")]
pub async fn update_secret(
    state: web::Data<AppState>,
    caller: Caller,
    secret_id: web::Path<String>,
    body: RawBody,
) -> ApiResult<web::Json<EditResponse>> {
    let name = secret_id.into_inner();
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let change = body.typed::<SecretMeta>()?;
            Ok(s.services.user_secrets().update(&ctx, &name, &change)?)
        })
        .await?;
    Ok(web::Json(EditResponse {
        message: "Secret updated successfully".into(),
    }))
}

/// Deletes one of the caller's secrets. 404 for an unknown name.
#[utoipa::path(tag = "Secrets",
    params(("secret_id" = String, Path, description = "The secret's name"),
           ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = EditResponse),
        ApiKeyErrors,
        (status = 404, description = "No secret of that name", body = ErrorDetail),
    ))]
#[delete("/api/v1/secrets/{secret_id}")]
pub async fn delete_secret(
    state: web::Data<AppState>,
    caller: Caller,
    secret_id: web::Path<String>,
) -> ApiResult<web::Json<EditResponse>> {
    let name = secret_id.into_inner();
    caller
        .run(state, move |s, ctx| {
            Ok(s.services.user_secrets().delete(&ctx, &name)?)
        })
        .await?;
    Ok(web::Json(EditResponse {
        message: "Secret deleted successfully".into(),
    }))
}

/// Stores the caller's git provider tokens (`POSTProviderModel`: `provider_tokens` maps
/// `github`, `gitlab`, `bitbucket`, `bitbucket_data_center`, `forgejo`, `azure_devops` or
/// `enterprise_sso` to `{token, host}`). The set sent replaces the set stored; an entry without
/// a token keeps the stored token. Tokens are sealed and never answered.
#[utoipa::path(tag = "Secrets",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    request_body = ProviderTokensRequest,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = EditResponse), BodyErrors, ApiKeyErrors))]
#[post("/api/v1/secrets/git-providers")]
pub async fn store_provider_tokens(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<EditResponse>> {
    let ctx = caller.authenticate(&state).await?;
    let body = body.read().await?;
    let s = state.clone();
    state
        .blocking(move || {
            let tokens = body.typed::<ProviderTokensRequest>()?.into_inputs();
            Ok(s.services
                .user_secrets()
                .store_provider_tokens(&ctx, tokens)?)
        })
        .await?;
    Ok(web::Json(EditResponse {
        message: "Git providers stored".into(),
    }))
}

/// Deletes every git provider token of the caller.
#[utoipa::path(tag = "Secrets",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses((status = 200, body = EditResponse), ApiKeyErrors))]
#[delete("/api/v1/secrets/git-providers")]
pub async fn unset_provider_tokens(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<EditResponse>> {
    caller
        .run(state, |s, ctx| {
            Ok(s.services.user_secrets().delete_provider_tokens(&ctx)?)
        })
        .await?;
    Ok(web::Json(EditResponse {
        message: "Unset Git provider tokens".into(),
    }))
}
