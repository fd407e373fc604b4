//! # switchboard-api
//!
//! The HTTP API as an actix-web app: [`create_app`] builds it over an [`AppState`] (the domain
//! services, metrics, pool statistics), so tests and the binary run the same app. One handler
//! module per resource ([`health`], [`org_settings`], [`keys`], [`users`], [`events`],
//! [`webhooks`], [`sandbox_specs`], [`sandboxes`]) registers its routes and their OpenAPI paths in one declaration, collected by
//! [`routes`]. Sandbox traffic is proxied by [`sandbox_proxy`] under `/sandboxes/…`; browsers
//! of other origins are answered by [`cors`]. Handlers authenticate from the headers first ([`extract::Caller`]:
//! `X-Access-Token` or `Authorization: Bearer`; [`extract::SandboxCaller`]:
//! `X-Session-API-Key`) and resolve the effective organization, and only then read bodies
//! (under [`extract::BodyLimits`]) and validate them; failures map to statuses in one
//! table ([`error::ApiError`]), 422s in FastAPI's shape. Blocking domain work runs on actix's
//! blocking pool, never on the async executor.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};
use std::sync::Arc;
use utoipa_actix_web::AppExt;

use switchboard_domain::Switchboard;
use tokio::sync::Semaphore;

pub mod app_conversations;
pub mod cors;
pub mod dto;
pub mod error;
pub mod events;
pub mod extract;
pub mod health;
pub mod keys;
pub mod live;
pub mod llm_profiles;
pub mod metrics;
pub mod openapi;
pub mod org_defaults;
pub mod org_settings;
pub mod organizations;
pub mod rate_limit;
pub mod reads;
pub mod responses;
pub mod routes;
pub mod sandbox_proxy;
pub mod sandbox_secrets;
pub mod sandbox_specs;
pub mod sandboxes;
pub mod server_details;
pub mod user_secrets;
pub mod user_settings;
pub mod users;
pub mod webhooks;
pub mod zip;

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
    /// Admission to blocking database work: as many permits as database connections, so
    /// requests beyond that wait here (an async wait, no thread) instead of parking blocking
    /// threads on the connection pool (measured: the thread churn cost more than the queries).
    pub db_permits: Arc<Semaphore>,
    /// The limits on reading request bodies and the room for body bytes in flight, shared by
    /// every worker (API.md, Request bodies).
    pub bodies: Arc<extract::BodyGate>,
    /// Request rate limits (API.md, Reliability and security); `None` when both are off.
    pub rate_limits: Option<Arc<rate_limit::RateLimits>>,
    /// Live delivery: the subscribers' hub, limits and shutdown (API.md, Live delivery).
    pub live: Arc<live::Live>,
    /// The sandbox proxy and the public URLs it gives the API (API.md, Sandbox proxy).
    pub proxy: Arc<sandbox_proxy::Proxy>,
    /// Browser origins allowed to call the API (`--cors-allowed-origin`; none by default).
    pub cors: Arc<cors::CorsConfig>,
    /// When this server started (`/server_info`, the web client config's `updated_at`).
    pub started: std::time::SystemTime,
}

/// The OpenAPI document as served at `/openapi.json` ([`openapi::document_json`], built once
/// from the route table). The crate root is where the route table ([`routes`]) and the
/// document meet: the document lists every route, `/openapi.json` among them, so the handlers
/// read it from here rather than from the module that builds it.
pub fn openapi_document() -> &'static str {
    openapi::document_json()
}

/// Default concurrent blocking calls when the pool size is not given.
pub const DEFAULT_DB_CONCURRENCY: usize = 8;

impl AppState {
    /// State over `services` with a fresh metrics registry, admitting
    /// [`DEFAULT_DB_CONCURRENCY`] blocking calls at once.
    pub fn new(services: Switchboard, pool_stats: Option<PoolStatsFn>) -> Self {
        AppState::with_db_concurrency(services, pool_stats, DEFAULT_DB_CONCURRENCY)
    }

    /// As [`AppState::new`], admitting `db_concurrency` blocking calls at once (the number of
    /// database connections; at least 1).
    pub fn with_db_concurrency(
        services: Switchboard,
        pool_stats: Option<PoolStatsFn>,
        db_concurrency: usize,
    ) -> Self {
        AppState {
            services,
            metrics: Metrics::new(),
            pool_stats,
            db_permits: Arc::new(Semaphore::new(db_concurrency.max(1))),
            bodies: Arc::new(extract::BodyGate::default()),
            rate_limits: None,
            live: Arc::new(live::Live::default()),
            proxy: Arc::new(sandbox_proxy::Proxy::default()),
            cors: Arc::new(cors::CorsConfig::default()),
            started: std::time::SystemTime::now(),
        }
    }

    /// The same state proxying sandbox traffic under `config` (its public URL rewrites the
    /// URLs the API shows).
    pub fn with_proxy(mut self, config: sandbox_proxy::ProxyConfig) -> Self {
        self.proxy = Arc::new(sandbox_proxy::Proxy::new(config));
        self
    }

    /// The same state allowing cross-origin requests from `origins`.
    pub fn with_cors_origins(mut self, origins: Vec<String>) -> Self {
        self.cors = Arc::new(cors::CorsConfig::new(origins));
        self
    }

    /// The same state reading bodies under `limits` instead of the defaults.
    pub fn with_body_limits(mut self, limits: extract::BodyLimits) -> Self {
        self.bodies = Arc::new(extract::BodyGate::new(limits));
        self
    }

    /// The same state limiting request rates by `config` (no limiter when both are 0).
    pub fn with_rate_limits(mut self, config: rate_limit::RateLimitConfig) -> Self {
        let limits = rate_limit::RateLimits::new(config);
        self.rate_limits = limits.enabled().then(|| Arc::new(limits));
        self
    }

    /// The same state with live delivery under `config`.
    pub fn with_live(mut self, config: live::LiveConfig) -> Self {
        self.live = Arc::new(live::Live::new(config));
        self
    }

    /// Runs blocking domain work on the blocking pool once admitted.
    ///
    /// # Errors
    /// `f`'s error, or an internal error if the blocking task failed.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, error::ApiError> + Send + 'static,
    ) -> Result<T, error::ApiError> {
        let _permit = self
            .db_permits
            .acquire()
            .await
            .map_err(|_| error::ApiError::Internal("admission semaphore closed".into()))?;
        web::block(f).await?
    }
}

/// The app: every route of the route table ([`routes::configure`]), 405 (with `Allow`) and 404
/// answers in FastAPI's shape, and the request-id/metrics middleware.
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
    let (app, doc) = App::new()
        .into_utoipa_app()
        .app_data(state)
        .configure(routes::configure)
        .split_for_parts();
    let paths = doc
        .paths
        .paths
        .iter()
        .map(|(path, item)| (path.clone(), routes::allowed_methods(item)));
    routes::fallbacks(sandbox_proxy::register(app), paths)
        .wrap(from_fn(sandbox_proxy::hosts::route_by_host))
        .wrap(from_fn(rate_limit::limit))
        .wrap(from_fn(cors::cors))
        .wrap(from_fn(metrics::observe))
}
