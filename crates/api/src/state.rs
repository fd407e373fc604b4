//! The state every handler shares ([`AppState`]): the domain services and the HTTP layer's
//! components (metrics, body limits, rate limits, live delivery, the sandbox proxy, CORS),
//! each defined in its own module; the app ([`crate::app`]) registers it and each component
//! beside it for the middleware that needs only that one.

use actix_web::web;
use std::sync::Arc;
use tokio::sync::Semaphore;

use switchboard_domain::Switchboard;
use switchboard_domain::llm_catalog::LlmCatalog;
use switchboard_domain::skills::SkillLibrary;

use crate::cors::CorsConfig;
use crate::error::ApiError;
use crate::extract::{BodyGate, BodyLimits};
use crate::live::{Live, LiveConfig};
use crate::metrics::{DiskStatsFn, Metrics, PoolStatsFn};
use crate::rate_limit::{RateLimitConfig, RateLimits};
use crate::sandbox_proxy::config::{Proxy, ProxyConfig};
use crate::web_client::WebClient;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The domain services.
    pub services: Switchboard,
    /// The metrics registry.
    pub metrics: Metrics,
    /// Pool usage of the storage, for `/metrics`.
    pub pool_stats: Option<PoolStatsFn>,
    /// The database's disk against its reserve, for `/ready` and `/metrics` (none: no
    /// reserve).
    pub disk_stats: Option<DiskStatsFn>,
    /// Admission to blocking database work: as many permits as database connections, so
    /// requests beyond that wait here (an async wait, no thread) instead of parking blocking
    /// threads on the connection pool (measured: the thread churn cost more than the queries).
    pub db_permits: Arc<Semaphore>,
    /// The limits on reading request bodies and the room for body bytes in flight, shared by
    /// every worker (API.md, Request bodies).
    pub bodies: Arc<BodyGate>,
    /// Request rate limits (API.md, Reliability and security); `None` when both are off.
    pub rate_limits: Option<Arc<RateLimits>>,
    /// Live delivery: the subscribers' hub, limits and shutdown (API.md, Live delivery).
    pub live: Arc<Live>,
    /// The sandbox proxy and the public URLs it gives the API (API.md, Sandbox proxy).
    pub proxy: Arc<Proxy>,
    /// Browser origins allowed to call the API (`--cors-allowed-origin`; none by default).
    pub cors: Arc<CorsConfig>,
    /// The LLM models members may pick (`--llm-model-allow`; the whole shipped catalog by
    /// default).
    pub llm_catalog: Arc<LlmCatalog>,
    /// The operator's skills directory (`--skills-dir`; none by default).
    pub skills: SkillLibrary,
    /// The browser client served at `/` (`--web-client`), if any.
    pub web_client: Option<Arc<WebClient>>,
    /// Sign-in through the OpenID provider and device logins (issue 34); `None` without
    /// `--oidc-issuer`.
    pub sign_in: Option<Arc<crate::sign_in::config::SignIn>>,
    /// When this server started (`/server_info`, the web client config's `updated_at`).
    pub started: std::time::SystemTime,
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
            disk_stats: None,
            db_permits: Arc::new(Semaphore::new(db_concurrency.max(1))),
            bodies: Arc::new(BodyGate::default()),
            rate_limits: None,
            live: Arc::new(Live::default()),
            proxy: Arc::new(Proxy::default()),
            cors: Arc::new(CorsConfig::default()),
            llm_catalog: Arc::new(LlmCatalog::shipped(&[])),
            skills: SkillLibrary::default(),
            web_client: None,
            sign_in: None,
            started: std::time::SystemTime::now(),
        }
    }

    /// The same state reporting the database's disk against its reserve (`--min-free-disk`)
    /// in `/ready` and `/metrics`.
    #[must_use]
    pub fn with_disk_stats(mut self, disk: DiskStatsFn) -> Self {
        self.disk_stats = Some(disk);
        self
    }

    /// The same state proxying sandbox traffic under `config` (its public URL rewrites the
    /// URLs the API shows).
    pub fn with_proxy(mut self, config: ProxyConfig) -> Self {
        self.proxy = Arc::new(Proxy::new(config));
        self
    }

    /// The catalog of LLM models members are offered.
    pub fn with_llm_catalog(mut self, catalog: LlmCatalog) -> Self {
        self.llm_catalog = Arc::new(catalog);
        self
    }

    /// The skills directory `GET /api/v1/skills/search` reads.
    pub fn with_skills(mut self, skills: SkillLibrary) -> Self {
        self.skills = skills;
        self
    }

    /// Signs people in through the OpenID provider (issue 34, [`crate::sign_in`]).
    pub fn with_sign_in(mut self, sign_in: Arc<crate::sign_in::config::SignIn>) -> Self {
        self.sign_in = Some(sign_in);
        self
    }

    /// Serves a browser client's built files at `/` ([`crate::web_client`]).
    pub fn with_web_client(mut self, client: WebClient) -> Self {
        self.web_client = Some(Arc::new(client));
        self
    }

    /// The same state allowing cross-origin requests from `origins`.
    pub fn with_cors_origins(mut self, origins: Vec<String>) -> Self {
        self.cors = Arc::new(CorsConfig::new(origins));
        self
    }

    /// The same state reading bodies under `limits` instead of the defaults.
    pub fn with_body_limits(mut self, limits: BodyLimits) -> Self {
        self.bodies = Arc::new(BodyGate::new(limits));
        self
    }

    /// The same state limiting request rates by `config` (no limiter when both are 0).
    pub fn with_rate_limits(mut self, config: RateLimitConfig) -> Self {
        let limits = RateLimits::new(config);
        self.rate_limits = limits.enabled().then(|| Arc::new(limits));
        self
    }

    /// The same state with live delivery under `config`.
    pub fn with_live(mut self, config: LiveConfig) -> Self {
        self.live = Arc::new(Live::new(config));
        self
    }

    /// Runs blocking domain work on the blocking pool once admitted.
    ///
    /// # Errors
    /// `f`'s error, or an internal error if the blocking task failed.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = self
            .db_permits
            .acquire()
            .await
            .map_err(|_| ApiError::Internal("admission semaphore closed".into()))?;
        web::block(f).await?
    }
}
