//! Serving the metrics: `GET /metrics` on the API's port ([`crate::health::metrics`]), or on a
//! listener of its own (`switchboard serve --metrics-listen ADDR`, [`metrics_app`]), then
//! not on the API's port (404 there), so that the API's port can be public while the metrics
//! stay on a private address.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpResponse, web};

use crate::state::AppState;

/// Whether the metrics have a listener of their own (shared by every clone of the registry).
#[derive(Debug, Clone, Default)]
pub struct OwnListener(Arc<AtomicBool>);

impl OwnListener {
    /// From now on the metrics are served by [`metrics_app`] alone.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether they are.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The Prometheus text exposition of `state`'s registry, with the pool, the database's disk
/// and live delivery read now.
pub async fn exposition(state: &AppState) -> HttpResponse {
    let pool = state.pool_stats.as_ref().map(|f| f());
    let disk = state.disk_stats.clone();
    let disk = web::block(move || disk.and_then(|f| f()))
        .await
        .ok()
        .flatten();
    let live = &state.live;
    state.metrics.activity().live_now(
        live.subscribers(),
        live.hub().watched(),
        live.relays().running(),
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render(pool, disk))
}

/// The app of the metrics' own listener: `GET /metrics` (anything else is 404). Marks the
/// registry as served here, so the API's port answers 404 for `/metrics` (the binary also
/// marks it before any server starts, so no worker ever serves it on the API's port).
pub fn metrics_app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    state.metrics.activity().own_listener().set();
    App::new().app_data(state).route(
        "/metrics",
        web::get().to(|state: web::Data<AppState>| async move { exposition(&state).await }),
    )
}
