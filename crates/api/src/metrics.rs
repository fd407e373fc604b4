//! Prometheus metrics and the request middleware: a request id on every request (its log
//! span, its response header), and request counts and latency histograms by route and status.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, web};
use futures_util::future::LocalBoxFuture;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use switchboard_domain::sandboxes::failures::StartFailure;
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::sandboxes::settings::SandboxObserver;
use tracing::Instrument;

pub mod access_log;
mod activity;
pub mod exposition;
mod families;
mod jobs;
pub mod llm_relay;

pub use activity::{Activity, OpenGauge, ProxyOutcome, WebhookKind};
pub use jobs::{JobMetrics, Jobs};

/// The request id header, set on every response (and honoured on requests when it is a
/// short printable token).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// A request's id, in the request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Pool usage reported by the storage the binary wired in (the domain's
/// [`PoolUsage`](switchboard_domain::ports::PoolUsage)).
pub use switchboard_domain::ports::PoolUsage as PoolStats;

/// A source of pool statistics (a closure over the storage pool).
pub type PoolStatsFn = Arc<dyn Fn() -> PoolStats + Send + Sync>;

/// The database's filesystem against the operator's reserve (`--min-free-disk`, issue 33).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskStats {
    /// Free bytes (available to an unprivileged writer).
    pub free: u64,
    /// The reserve, bytes: below it event appends are refused (507).
    pub reserve: u64,
}

impl DiskStats {
    /// Whether event appends are refused now.
    pub fn under_reserve(&self) -> bool {
        self.free < self.reserve
    }
}

/// A source of [`DiskStats`]; `None` when no reserve is set or the free space cannot be read.
pub type DiskStatsFn = Arc<dyn Fn() -> Option<DiskStats> + Send + Sync>;

/// The metrics registry of one app.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    pool: IntGaugeVec,
    disk: IntGaugeVec,
    sandboxes: IntGaugeVec,
    warm_pool: IntGauge,
    sandbox_start: HistogramVec,
    sandbox_starts: IntCounterVec,
    sandbox_start_failures: IntCounterVec,
    /// Webhooks, proxy, live, background jobs, conversation starts ([`Activity`]).
    activity: Activity,
    /// The LLM pass-through (issue 38).
    llm_relay: llm_relay::LlmRelayMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    // Long: every metric family is defined and registered here, one after the other.
    /// A fresh registry with Switchboard's metrics.
    ///
    /// # Panics
    /// Never in practice: the metric definitions are static and valid.
    pub fn new() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests by method, route pattern and status.",
            ),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "HTTP request latency in seconds by method, route pattern and status.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
            ]),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let pool = IntGaugeVec::new(
            Opts::new(
                "db_pool_connections",
                "Database pool connections by state (open, idle, max).",
            ),
            &["state"],
        )
        .expect("valid metric");
        let disk = IntGaugeVec::new(
            Opts::new(
                "database_disk_bytes",
                "The database's filesystem: free bytes and the reserve under which event appends are refused (--min-free-disk).",
            ),
            &["state"],
        )
        .expect("valid metric");
        let sandboxes = IntGaugeVec::new(
            Opts::new(
                "sandboxes",
                "Sandboxes by runtime and status at the last reconciliation (warm-pool ones excluded).",
            ),
            &["runtime", "status"],
        )
        .expect("valid metric");
        let warm_pool = IntGauge::new(
            "sandbox_warm_pool_ready",
            "Warm-pool sandboxes ready to be claimed (RUNNING, unowned).",
        )
        .expect("valid metric");
        let sandbox_start = HistogramVec::new(
            HistogramOpts::new(
                "sandbox_start_duration_seconds",
                "Seconds from a sandbox start (or resume) to RUNNING, by runtime and source (warm: claimed from the pool; cold: launched).",
            )
            .buckets(vec![
                0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0,
            ]),
            &["runtime", "source"],
        )
        .expect("valid metric");
        let sandbox_starts = IntCounterVec::new(
            Opts::new(
                "sandbox_starts_total",
                "Sandbox starts of users by runtime and source (warm: claimed from the pool; cold: a new sandbox launched).",
            ),
            &["runtime", "source"],
        )
        .expect("valid metric");
        let sandbox_start_failures = IntCounterVec::new(
            Opts::new(
                "sandbox_start_failures_total",
                "Sandboxes (the warm pool's included) that failed before their agent server first answered, by runtime and reason: command_not_found, exited_early, timeout, image_missing, runtime_error.",
            ),
            &["runtime", "reason"],
        )
        .expect("valid metric");
        for metric in [
            Box::new(sandboxes.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(warm_pool.clone()),
            Box::new(sandbox_start.clone()),
            Box::new(sandbox_starts.clone()),
            Box::new(sandbox_start_failures.clone()),
            Box::new(disk.clone()),
        ] {
            registry.register(metric).expect("unique metric");
        }
        registry
            .register(Box::new(requests.clone()))
            .expect("unique metric");
        registry
            .register(Box::new(latency.clone()))
            .expect("unique metric");
        registry
            .register(Box::new(pool.clone()))
            .expect("unique metric");
        let activity = Activity::new(&registry);
        Metrics {
            llm_relay: llm_relay::LlmRelayMetrics::new(&registry),
            activity,
            registry,
            requests,
            latency,
            pool,
            disk,
            sandboxes,
            warm_pool,
            sandbox_start,
            sandbox_starts,
            sandbox_start_failures,
        }
    }

    /// The activity metrics: webhooks, the proxy, live, background jobs, conversation starts.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// The LLM pass-through's metrics.
    pub fn llm_relay(&self) -> &llm_relay::LlmRelayMetrics {
        &self.llm_relay
    }

    /// Records one finished request.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let status = status.to_string();
        let labels = [method, route, status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.latency.with_label_values(&labels).observe(seconds);
    }

    /// The Prometheus text exposition, with pool usage and the database's disk read now.
    pub fn render(&self, pool: Option<PoolStats>, disk: Option<DiskStats>) -> String {
        if let Some(d) = disk {
            let set = |state: &str, v: u64| {
                self.disk
                    .with_label_values(&[state])
                    .set(i64::try_from(v).unwrap_or(i64::MAX));
            };
            set("free", d.free);
            set("reserve", d.reserve);
        }
        if let Some(p) = pool {
            self.pool
                .with_label_values(&["open"])
                .set(i64::from(p.connections));
            self.pool
                .with_label_values(&["idle"])
                .set(i64::from(p.idle));
            self.pool
                .with_label_values(&["max"])
                .set(i64::from(p.max_size));
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encoding to a Vec cannot fail");
        String::from_utf8(out).unwrap_or_default()
    }
}

impl SandboxObserver for Metrics {
    fn started(&self, runtime: &str, warm: bool) {
        self.sandbox_starts
            .with_label_values(&[runtime, if warm { "warm" } else { "cold" }])
            .inc();
    }

    fn start_finished(&self, runtime: &str, seconds: f64, warm: bool) {
        self.sandbox_start
            .with_label_values(&[runtime, if warm { "warm" } else { "cold" }])
            .observe(seconds);
    }

    fn start_failed(&self, runtime: &str, kind: StartFailure) {
        // Every reason of the runtime is shown (zeros included) once one failed.
        for k in StartFailure::ALL {
            let counter = self
                .sandbox_start_failures
                .with_label_values(&[runtime, k.as_str()]);
            if k == kind {
                counter.inc();
            }
        }
    }

    fn statuses(&self, counts: &[(&str, SandboxStatus, usize)], warm_ready: usize) {
        for (runtime, status, n) in counts {
            self.sandboxes
                .with_label_values(&[runtime, status.as_str()])
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        self.warm_pool(warm_ready);
    }

    fn warm_pool(&self, ready: usize) {
        self.warm_pool.set(i64::try_from(ready).unwrap_or(i64::MAX));
    }
}

fn acceptable_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    (!s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    .then(|| s.to_owned())
}

/// The middleware: request id, tracing span, metrics, and the `x-request-id` response header.
///
/// The outermost layer, so its future is boxed: actix-http keeps the service's future inline
/// in each connection's dispatcher, sized for the largest request future, and a websocket
/// keeps its dispatcher for as long as it is open (API.md, Live delivery: idle sockets).
///
/// # Errors
/// Whatever the inner service returns (errors are rendered into responses by actix).
pub fn observe<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> LocalBoxFuture<'static, Result<ServiceResponse<B>, actix_web::Error>> {
    Box::pin(observed(req, next))
}

async fn observed<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let started = Instant::now();
    let id = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(acceptable_request_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    req.extensions_mut().insert(RequestId(id.clone()));
    let metrics = req.app_data::<web::Data<Metrics>>().cloned();
    let method = req.method().clone();
    let span = tracing::info_span!("request", request_id = %id, method = %method.as_str(), path = %req.path());
    let mut res = next.call(req).instrument(span).await?;
    let status = res.status().as_u16();
    let pattern = res.request().match_pattern();
    let route = pattern
        .as_deref()
        .or_else(|| {
            let extensions = res.request().extensions();
            extensions.get::<access_log::RouteLabel>().map(|l| l.0)
        })
        .unwrap_or("unmatched");
    let elapsed = started.elapsed();
    if let Some(metrics) = metrics {
        metrics.observe(method.as_str(), route, status, elapsed.as_secs_f64());
    }
    // Outside the request's span: the line carries the route template, never the raw path.
    if access_log::enabled() {
        let caller = res
            .request()
            .extensions()
            .get::<access_log::CallerSlot>()
            .and_then(access_log::CallerSlot::get);
        access_log::write(&access_log::Line {
            method: method.as_str(),
            route,
            status,
            elapsed,
            request_id: &id,
            caller,
        });
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID_HEADER), v);
    }
    Ok(res)
}
