//! Operational routes: liveness, readiness, Prometheus metrics and the OpenAPI document. They
//! need no key.

use actix_web::{HttpResponse, get, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::AppState;
use crate::dto::{ErrorDetail, Status};

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(health)
        .service(ready)
        .service(metrics)
        .service(openapi_json);
}

/// Liveness: the process serves requests.
#[utoipa::path(tag = "Health", responses((status = 200, body = Status)))]
#[get("/health")]
pub async fn health() -> web::Json<Status> {
    web::Json(Status {
        status: "ok".into(),
        detail: None,
    })
}

/// Readiness: the database answers and every migration is applied.
///
/// While the database's disk is under the operator's reserve (`--min-free-disk`) it is still ready (reads and deletes
/// go on; deletes free space) but says `degraded`, with the free bytes, since event appends
/// are refused (507).
#[utoipa::path(tag = "Health", responses(
    (status = 200, body = Status),
    (status = 503, description = "Database unreachable or migrations pending", body = ErrorDetail),
))]
#[get("/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let store = state.services.store().clone();
    let disk = state.disk_stats.clone();
    match web::block(move || store.ready().map(|()| disk.and_then(|f| f()))).await {
        Ok(Ok(Some(d))) if d.under_reserve() => HttpResponse::Ok().json(Status {
            status: "degraded".into(),
            detail: Some(format!(
                "event appends are refused: the database's disk has {} bytes free, under the reserve of {} bytes (--min-free-disk)",
                d.free, d.reserve
            )),
        }),
        Ok(Ok(_)) => HttpResponse::Ok().json(Status {
            status: "ready".into(),
            detail: None,
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

/// Prometheus metrics: requests, webhooks, the sandbox proxy, live delivery, jobs, sandboxes.
///
/// Every family is described in docs/metrics.md. 404 when the metrics are served on a
/// listener of their own (`--metrics-listen`).
#[utoipa::path(tag = "Health", responses(
    (status = 200, description = "Prometheus text format", content_type = "text/plain"),
    (status = 404, description = "Served on the metrics listener instead (--metrics-listen)", body = ErrorDetail),
))]
#[get("/metrics")]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    if state.metrics.activity().own_listener().is_set() {
        return HttpResponse::NotFound().json(ErrorDetail {
            detail: "Not Found".into(),
        });
    }
    crate::metrics::exposition::exposition(&state).await
}

/// This document.
#[utoipa::path(tag = "Health", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
#[get("/openapi.json")]
pub async fn openapi_json(doc: web::Data<OpenApiDocument>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.0)
}

/// The OpenAPI document as `/openapi.json` serves it: pretty JSON, built once from the route
/// table ([`crate::openapi::document_json`]) and registered by [`crate::app::create_app`], so
/// this module, which the route table lists, does not depend on the document's builder.
pub struct OpenApiDocument(pub &'static str);
