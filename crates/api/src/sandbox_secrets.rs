//! What a sandbox reads of its owner's secrets (issue 21; OpenHands' sandbox-scoped
//! `/api/v1/sandboxes/{sandbox_id}/settings/secrets`), authenticated by that sandbox's
//! session key (`X-Session-API-Key`): the names, and one value at a time as text. Only the
//! sandbox's own id, only while it runs; each read is logged without the value.

use actix_web::{HttpResponse, get, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, SecretNameItem, SecretNamesResponse};
use crate::error::ApiResult;
use crate::extract::SandboxCaller;
use crate::responses::SandboxSessionErrors;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_secret_names).service(get_secret_value);
}

/// The names (and descriptions) of the sandbox owner's custom secrets and provider tokens
/// (`github_token`, …), never values (`SecretNamesResponse`).
#[utoipa::path(tag = "Sandbox",
    params(("sandbox_id" = String, Path, description = "This sandbox's id")),
    security(("SessionKeyHeader" = [])),
    responses((status = 200, body = SecretNamesResponse), SandboxSessionErrors))]
#[get("/api/v1/sandboxes/{sandbox_id}/settings/secrets")]
pub async fn list_secret_names(
    state: web::Data<AppState>,
    caller: SandboxCaller,
    sandbox_id: web::Path<String>,
) -> ApiResult<web::Json<SecretNamesResponse>> {
    let path_id = sandbox_id.into_inner();
    let names = caller
        .run(state, move |s, sandbox| {
            Ok(s.services
                .user_secrets()
                .sandbox_secret_names(&sandbox, &path_id)?)
        })
        .await?;
    Ok(web::Json(SecretNamesResponse {
        secrets: names
            .into_iter()
            .map(|m| SecretNameItem {
                name: m.name,
                description: m.description,
            })
            .collect(),
    }))
}

/// One value of the sandbox owner's, as `text/plain`: a custom secret of that name, else the
/// provider token it names (`github_token`, …). 404 when there is none.
#[utoipa::path(tag = "Sandbox",
    params(("sandbox_id" = String, Path, description = "This sandbox's id"),
           ("secret_name" = String, Path, description = "The secret's name")),
    security(("SessionKeyHeader" = [])),
    responses(
        (status = 200, description = "The value", body = String, content_type = "text/plain"),
        SandboxSessionErrors,
        (status = 404, description = "No secret of that name", body = ErrorDetail),
    ))]
#[get("/api/v1/sandboxes/{sandbox_id}/settings/secrets/{secret_name}")]
pub async fn get_secret_value(
    state: web::Data<AppState>,
    caller: SandboxCaller,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (path_id, name) = path.into_inner();
    let value = caller
        .run(state, move |s, sandbox| {
            Ok(s.services
                .user_secrets()
                .sandbox_secret_value(&sandbox, &path_id, &name)?)
        })
        .await?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(value))
}
