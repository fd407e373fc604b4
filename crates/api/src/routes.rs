//! Handlers. Each documents its responses for the OpenAPI document; [`ROUTES`] lists every
//! route the app serves (a test checks it against the document and the live server).

use actix_web::{HttpResponse, web};
use switchboard_domain::identity::api_keys::parse_new_key;
use switchboard_domain::settings::parse_settings_update;
use switchboard_domain::{ApiKeyId, ApiKeyView};

use crate::AppState;
use crate::dto::{
    ApiKeyCreated, ApiKeyList, ApiKeyRevoked, ErrorDetail, HTTPValidationError, MeResponse,
    OrgAppSettingsResponse, Status,
};
use crate::error::{ApiError, ApiResult};
use crate::events;
use crate::extract::{BodyLimit, Caller, RawBody, path_uuid};

/// Every route: method and path pattern, as in the OpenAPI document.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/health"),
    ("get", "/ready"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/api/organizations/app"),
    ("post", "/api/organizations/app"),
    ("post", "/api/keys"),
    ("get", "/api/keys"),
    ("delete", "/api/keys/{id}"),
    ("get", "/api/v1/users/me"),
    (
        "get",
        "/api/v1/conversation/{conversation_id}/events/search",
    ),
    ("get", "/api/v1/conversation/{conversation_id}/events/count"),
    ("get", "/api/v1/conversation/{conversation_id}/events"),
    ("post", "/api/v1/webhooks/events/{conversation_id}"),
    ("post", "/api/v1/webhooks/conversations"),
];

/// Registers every route of [`ROUTES`]; a known path with another method answers 405.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let resource =
        |path: &str| web::resource(path.to_owned()).default_service(web::to(method_not_allowed));
    cfg.service(resource("/health").route(web::get().to(health)))
        .service(resource("/ready").route(web::get().to(ready)))
        .service(resource("/metrics").route(web::get().to(metrics)))
        .service(resource("/openapi.json").route(web::get().to(openapi_json)))
        .service(
            resource("/api/organizations/app")
                .route(web::get().to(get_org_app_settings))
                .route(web::post().to(update_org_app_settings)),
        )
        .service(
            resource("/api/keys")
                .route(web::post().to(create_api_key))
                .route(web::get().to(list_api_keys)),
        )
        .service(resource("/api/keys/{id}").route(web::delete().to(revoke_api_key)))
        .service(resource("/api/v1/users/me").route(web::get().to(users_me)))
        .service(
            resource("/api/v1/conversation/{conversation_id}/events/search")
                .route(web::get().to(events::search_events)),
        )
        .service(
            resource("/api/v1/conversation/{conversation_id}/events/count")
                .route(web::get().to(events::count_events)),
        )
        .service(
            resource("/api/v1/conversation/{conversation_id}/events")
                .route(web::get().to(events::get_events)),
        )
        .service(
            resource("/api/v1/webhooks/events/{conversation_id}")
                .app_data(BodyLimit(events::WEBHOOK_BODY_LIMIT))
                .route(web::post().to(events::webhook_events)),
        )
        .service(
            resource("/api/v1/webhooks/conversations")
                .app_data(BodyLimit(events::WEBHOOK_BODY_LIMIT))
                .route(web::post().to(events::webhook_conversations)),
        );
}

/// A known path with a method it does not serve: 405 `{"detail": "Method Not Allowed"}`.
pub async fn method_not_allowed() -> HttpResponse {
    HttpResponse::MethodNotAllowed().json(ErrorDetail {
        detail: "Method Not Allowed".into(),
    })
}

/// Liveness: the process serves requests.
#[utoipa::path(get, path = "/health", tag = "Health", responses((status = 200, body = Status)))]
pub async fn health() -> web::Json<Status> {
    web::Json(Status {
        status: "ok".into(),
    })
}

/// Readiness: the database answers and every migration is applied.
#[utoipa::path(get, path = "/ready", tag = "Health", responses(
    (status = 200, body = Status),
    (status = 503, description = "Database unreachable or migrations pending", body = ErrorDetail),
))]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let store = state.services.store().clone();
    match web::block(move || store.ready()).await {
        Ok(Ok(())) => HttpResponse::Ok().json(Status {
            status: "ready".into(),
        }),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready");
            HttpResponse::ServiceUnavailable().json(ErrorDetail {
                detail: "Not ready".into(),
            })
        }
        Err(_) => HttpResponse::ServiceUnavailable().json(ErrorDetail {
            detail: "Not ready".into(),
        }),
    }
}

/// Prometheus metrics: request counts and latency histograms by route and status, pool usage.
#[utoipa::path(get, path = "/metrics", tag = "Health", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.pool_stats.as_ref().map(|f| f());
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render(pool))
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "Health", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(crate::openapi::document_json())
}

/// The effective organization's app settings (`manage_application_settings`, every role).
#[utoipa::path(get, path = "/api/organizations/app", tag = "Orgs",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to act on (UUID); default: the key's bound organization, else the user's current one")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgAppSettingsResponse),
        (status = 401, description = "No, unknown, expired or revoked API key", body = ErrorDetail),
        (status = 403, description = "Not a member, key bound elsewhere, or permission missing", body = ErrorDetail),
        (status = 404, description = "The effective organization does not exist", body = ErrorDetail),
        (status = 422, description = "Malformed X-Org-Id", body = HTTPValidationError),
        (status = 500, body = ErrorDetail),
    ))]
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
/// `manage_application_settings` in the effective organization (403/404), body (422),
/// `edit_org_settings` when `registered_marketplaces` is sent (403), the version in
/// `last_known_updated_at` (409), duplicate marketplace names (400).
#[utoipa::path(post, path = "/api/organizations/app", tag = "Orgs",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to act on (UUID)")),
    request_body = crate::dto::OrgAppSettingsUpdate,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = OrgAppSettingsResponse),
        (status = 400, description = "Duplicate marketplace names", body = ErrorDetail),
        (status = 401, body = ErrorDetail),
        (status = 403, body = ErrorDetail),
        (status = 404, body = ErrorDetail),
        (status = 409, description = "Modified since last_known_updated_at", body = ErrorDetail),
        (status = 413, description = "Body over 1 MiB", body = ErrorDetail),
        (status = 422, body = HTTPValidationError),
        (status = 500, body = ErrorDetail),
    ))]
pub async fn update_org_app_settings(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<OrgAppSettingsResponse>> {
    let settings = caller
        .run(state, move |s, ctx| {
            ctx.require(switchboard_domain::Permission::ManageApplicationSettings)?;
            let update = parse_settings_update(&body.json()?)?;
            Ok(s.services
                .org_settings()
                .update_org_settings(&ctx, update)?)
        })
        .await?;
    Ok(web::Json((&settings).into()))
}

/// Creates an API key for the caller, bound to the effective organization
/// (`manage_api_keys`). The key is in the response, once; only its SHA-256 is stored.
#[utoipa::path(post, path = "/api/keys", tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization to bind the key to (UUID)")),
    request_body = crate::dto::ApiKeyCreate,
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ApiKeyCreated),
        (status = 401, body = ErrorDetail), (status = 403, body = ErrorDetail), (status = 404, body = ErrorDetail),
        (status = 413, body = ErrorDetail),
        (status = 422, description = "Bad name or an expiry in the past", body = HTTPValidationError),
        (status = 500, body = ErrorDetail),
    ))]
pub async fn create_api_key(
    state: web::Data<AppState>,
    caller: Caller,
    body: RawBody,
) -> ApiResult<web::Json<ApiKeyCreated>> {
    let issued = caller
        .run(state, move |s, ctx| {
            ctx.require(switchboard_domain::Permission::ManageApiKeys)?;
            let request = parse_new_key(&body.json()?)?;
            Ok(s.services
                .api_keys()
                .create_api_key(&ctx, request.name, request.expires_at)?)
        })
        .await?;
    Ok(web::Json(issued.into()))
}

/// The caller's API keys usable in the effective organization (bound to it, or unbound),
/// newest first, revoked ones included (`manage_api_keys`).
#[utoipa::path(get, path = "/api/keys", tag = "Keys",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ApiKeyList),
        (status = 401, body = ErrorDetail), (status = 403, body = ErrorDetail), (status = 404, body = ErrorDetail),
        (status = 422, body = HTTPValidationError), (status = 500, body = ErrorDetail),
    ))]
pub async fn list_api_keys(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<ApiKeyList>> {
    let keys = caller
        .run(state, |s, ctx| {
            Ok(s.services.api_keys().list_api_keys(&ctx)?)
        })
        .await?;
    Ok(web::Json(ApiKeyList {
        items: keys.iter().map(|k| ApiKeyView::from(k).into()).collect(),
    }))
}

/// Revokes one of the caller's keys (`manage_api_keys`); another user's key is 404.
#[utoipa::path(delete, path = "/api/keys/{id}", tag = "Keys",
    params(("id" = String, Path, description = "Key id (UUID)"), ("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = ApiKeyRevoked),
        (status = 401, body = ErrorDetail), (status = 403, body = ErrorDetail),
        (status = 404, description = "No such key of the caller's", body = ErrorDetail),
        (status = 422, body = HTTPValidationError), (status = 500, body = ErrorDetail),
    ))]
pub async fn revoke_api_key(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> ApiResult<web::Json<ApiKeyRevoked>> {
    let id = id.into_inner();
    let key = caller
        .run(state, move |s, ctx| {
            // The path is checked after authentication, like any other input.
            let id = ApiKeyId(path_uuid(&id, "id")?);
            Ok(s.services.api_keys().revoke_api_key(&ctx, id)?)
        })
        .await?;
    Ok(web::Json(ApiKeyRevoked {
        id: key.id.0,
        revoked: key.revoked_at.is_some(),
    }))
}

/// The caller, the effective organization, the caller's role and permissions there.
#[utoipa::path(get, path = "/api/v1/users/me", tag = "Users",
    params(("X-Org-Id" = Option<String>, Header, description = "Organization (UUID)")),
    security(("APIKeyHeader" = []), ("BearerAuth" = [])),
    responses(
        (status = 200, body = MeResponse),
        (status = 401, body = ErrorDetail), (status = 403, body = ErrorDetail), (status = 404, body = ErrorDetail),
        (status = 422, body = HTTPValidationError), (status = 500, body = ErrorDetail),
    ))]
pub async fn users_me(
    state: web::Data<AppState>,
    caller: Caller,
) -> ApiResult<web::Json<MeResponse>> {
    let me = caller
        .run(state, |s, ctx| Ok(s.services.users().me(&ctx)?))
        .await?;
    Ok(web::Json(me.into()))
}

/// Unknown routes: 404 `{"detail": "Not Found"}`, as FastAPI answers.
pub async fn not_found() -> HttpResponse {
    HttpResponse::NotFound().json(ErrorDetail {
        detail: "Not Found".into(),
    })
}

impl From<std::convert::Infallible> for ApiError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}
