//! # switchboard-api
//!
//! The HTTP API as an actix-web app: [`create_app`] builds it over an [`AppState`] (the domain
//! services, metrics, pool statistics), so tests and the binary run the same app. Handlers
//! authenticate first (`X-Access-Token` or `Authorization: Bearer`), resolve the effective
//! organization, then read and validate bodies; failures map to statuses in one table
//! ([`error::ApiError`]), 422s in FastAPI's shape. Blocking domain work runs on actix's
//! blocking pool, never on the async executor.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};
use switchboard_domain::Switchboard;

pub mod dto;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod openapi;
pub mod routes;

pub use metrics::{Metrics, PoolStats, PoolStatsFn};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The domain services.
    pub services: Switchboard,
    /// The metrics registry.
    pub metrics: Metrics,
    /// Pool usage of the storage, for `/metrics`.
    pub pool_stats: Option<PoolStatsFn>,
}

impl AppState {
    /// State over `services` with a fresh metrics registry.
    pub fn new(services: Switchboard, pool_stats: Option<PoolStatsFn>) -> Self {
        AppState {
            services,
            metrics: Metrics::new(),
            pool_stats,
        }
    }
}

/// The app: every route of [`routes::ROUTES`], the request-id/metrics middleware, JSON 404s.
pub fn create_app(
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
    App::new()
        .app_data(state)
        .app_data(extract::BodyLimit(extract::DEFAULT_BODY_LIMIT))
        .configure(routes::configure)
        .default_service(web::to(routes::not_found))
        .wrap(from_fn(metrics::observe))
}
