//! What the server did, as metrics (docs/metrics.md): webhook batches, the sandbox proxy,
//! live subscribers and conversation starts. Registered by
//! [`crate::metrics::Metrics::new`]; background jobs are in [`super::jobs`].
//!
//! Recording is cheap: every label value is one of a fixed set, and the children of each
//! family are resolved once here, so an event is one atomic add (no label lookup, no
//! allocation).

use actix_web::ResponseError;
use actix_web::http::StatusCode;
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, Registry};

use super::exposition::OwnListener;
use super::families::{counters, gauge, histograms};
use super::jobs::Jobs;
use crate::error::ApiError;

/// Which webhook a batch came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    /// `POST /api/v1/webhooks/events/{conversation_id}`: a batch of events.
    Events,
    /// `POST /api/v1/webhooks/conversations`: a `ConversationInfo`.
    Conversation,
}

impl WebhookKind {
    const ALL: [WebhookKind; 2] = [WebhookKind::Events, WebhookKind::Conversation];

    fn label(self) -> &'static str {
        match self {
            WebhookKind::Events => "events",
            WebhookKind::Conversation => "conversation",
        }
    }
}

/// A webhook batch's result, the `result` label of `webhook_batches_total`: accepted, or
/// why it was refused (from the answer's status).
const WEBHOOK_RESULTS: [&str; 9] = [
    "accepted",
    "unauthenticated",
    "not_found",
    "invalid",
    "too_large",
    "timeout",
    "quota",
    "unavailable",
    "error",
];

/// The index in [`WEBHOOK_RESULTS`] of a refusal with `status`.
fn refusal_index(status: StatusCode) -> usize {
    match status.as_u16() {
        401 | 403 => 1,
        404 => 2,
        400 | 422 => 3,
        413 => 4,
        408 => 5,
        507 => 6,
        503 => 7,
        _ => 8,
    }
}

/// The proxy's outcomes, the `outcome` label of `sandbox_proxy_requests_total`.
const PROXY_OUTCOMES: [&str; 5] = ["forwarded", "probe", "refused", "upstream_error", "error"];

/// Kinds of upstream failures, the `kind` label of `sandbox_proxy_upstream_errors_total`.
const UPSTREAM_KINDS: [&str; 3] = ["unreachable", "timeout", "no_socket"];

/// How a proxied request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyOutcome {
    /// Passed to the sandbox's service (whatever it answered), or a websocket upgraded.
    Forwarded,
    /// A probe (`/alive`, `/health`, `/ready`) answered by Switchboard without credentials.
    Probe,
}

/// The metrics of what the server did (see the module's documentation).
#[derive(Clone)]
pub struct Activity {
    /// `webhook_batches_total{kind, result}`, by [`WebhookKind`] then [`WEBHOOK_RESULTS`].
    batches: Vec<Vec<IntCounter>>,
    /// `webhook_batch_duration_seconds{kind, outcome}`, by kind then accepted/refused.
    batch_seconds: Vec<[Histogram; 2]>,
    /// `webhook_events_total{result}`: stored, skipped (already stored).
    events_stored: IntCounter,
    events_skipped: IntCounter,
    /// `sandbox_proxy_requests_total{protocol, outcome}`, by http/websocket then
    /// [`PROXY_OUTCOMES`].
    proxy_requests: [Vec<IntCounter>; 2],
    /// `sandbox_proxy_upstream_errors_total{kind}`, by [`UPSTREAM_KINDS`].
    upstream_errors: Vec<IntCounter>,
    /// `sandbox_proxy_open_websockets`.
    proxy_sockets: IntGauge,
    /// `live_subscribers`, `live_conversations_watched`, `live_relays`: read at each scrape.
    live_subscribers: IntGauge,
    live_watched: IntGauge,
    live_relays: IntGauge,
    /// `conversation_starts_total{result}`: accepted, refused.
    starts_accepted: IntCounter,
    starts_refused: IntCounter,
    /// The background jobs' families.
    jobs: Jobs,
    /// Whether `/metrics` is served on a listener of its own.
    own_listener: OwnListener,
}

/// `webhook_batch_duration_seconds`' buckets.
const BATCH_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

impl Activity {
    /// Creates the families and registers them in `registry`.
    ///
    /// # Panics
    /// Never in practice: the definitions are static, valid and unique in the registry.
    pub(crate) fn new(registry: &Registry) -> Self {
        let (batches, batch_seconds, events) = webhook_families(registry);
        let (proxy, upstream) = proxy_families(registry);
        let starts = counters(
            registry,
            "conversation_starts_total",
            "Conversation start requests by result: accepted (a start task was written), refused (an error answer).",
            &["result"],
        );
        let children = |protocol: &str| {
            PROXY_OUTCOMES
                .iter()
                .map(|o| proxy.with_label_values(&[protocol, o]))
                .collect()
        };
        Activity {
            batches: WebhookKind::ALL
                .iter()
                .map(|k| {
                    WEBHOOK_RESULTS
                        .iter()
                        .map(|r| batches.with_label_values(&[k.label(), r]))
                        .collect()
                })
                .collect(),
            batch_seconds: WebhookKind::ALL
                .iter()
                .map(|k| {
                    [
                        batch_seconds.with_label_values(&[k.label(), "accepted"]),
                        batch_seconds.with_label_values(&[k.label(), "refused"]),
                    ]
                })
                .collect(),
            events_stored: events.with_label_values(&["stored"]),
            events_skipped: events.with_label_values(&["skipped"]),
            proxy_requests: [children("http"), children("websocket")],
            upstream_errors: UPSTREAM_KINDS
                .iter()
                .map(|k| upstream.with_label_values(&[k]))
                .collect(),
            proxy_sockets: gauge(
                registry,
                "sandbox_proxy_open_websockets",
                "Websockets relayed to sandboxes open now.",
            ),
            live_subscribers: gauge(
                registry,
                "live_subscribers",
                "Live-delivery websockets (/sockets/events, /sockets/session) open now on this process.",
            ),
            live_watched: gauge(
                registry,
                "live_conversations_watched",
                "Conversations with at least one live subscriber on this process.",
            ),
            live_relays: gauge(
                registry,
                "live_relays",
                "Sockets to agent servers relaying transient events to live subscribers.",
            ),
            starts_accepted: starts.with_label_values(&["accepted"]),
            starts_refused: starts.with_label_values(&["refused"]),
            jobs: Jobs::new(registry),
            own_listener: OwnListener::default(),
        }
    }

    /// Records one webhook batch of `kind` that took `seconds`: accepted (with the events
    /// stored and skipped, for an events batch), or refused with `result`'s error.
    pub fn webhook_batch<T>(&self, kind: WebhookKind, result: &Result<T, ApiError>, seconds: f64) {
        let k = kind as usize;
        let (index, refused) = match result {
            Ok(_) => (0, false),
            Err(e) => (refusal_index(e.status_code()), true),
        };
        self.batches[k][index].inc();
        self.batch_seconds[k][usize::from(refused)].observe(seconds);
    }

    /// Records the events of an accepted batch: `stored` new ones, `skipped` already stored.
    pub fn webhook_events(&self, stored: usize, skipped: usize) {
        self.events_stored.inc_by(stored as u64);
        self.events_skipped.inc_by(skipped as u64);
    }

    /// Records one proxied request (`websocket`: an upgrade) that ended with `result`: an
    /// error is `refused` when it is a 4xx or a limit's 503 (sockets per member or
    /// organization, bodies in flight), `upstream_error` (also counted by kind) when the
    /// sandbox's service did not answer, else `error`.
    pub fn proxy_request(&self, websocket: bool, result: Result<ProxyOutcome, &ApiError>) {
        let outcome = match result {
            Ok(ProxyOutcome::Forwarded) => 0,
            Ok(ProxyOutcome::Probe) => 1,
            Err(e) => {
                let limit = matches!(
                    e,
                    ApiError::MemberSocketsExhausted
                        | ApiError::OrgSocketsExhausted
                        | ApiError::BodiesInFlight
                );
                if self.upstream_error(e) {
                    3
                } else if limit || !e.status_code().is_server_error() {
                    2
                } else {
                    4
                }
            }
        };
        self.proxy_requests[usize::from(websocket)][outcome].inc();
    }

    /// Counts `e` in `sandbox_proxy_upstream_errors_total` when it is an upstream failure;
    /// whether it was.
    pub fn upstream_error(&self, e: &ApiError) -> bool {
        let kind = match e {
            ApiError::UpstreamUnreachable => 0,
            ApiError::UpstreamTimeout => 1,
            ApiError::ProxySocketsExhausted => 2,
            _ => return false,
        };
        self.upstream_errors[kind].inc();
        true
    }

    /// One relayed websocket open: counted in `sandbox_proxy_open_websockets` until the
    /// guard is dropped.
    pub fn proxy_socket(&self) -> OpenGauge {
        OpenGauge::new(&self.proxy_sockets)
    }

    /// Sets the live-delivery gauges (read at each scrape): open sockets, conversations
    /// watched, relays running.
    pub fn live_now(&self, subscribers: usize, watched: usize, relays: usize) {
        let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        self.live_subscribers.set(n(subscribers));
        self.live_watched.set(n(watched));
        self.live_relays.set(n(relays));
    }

    /// Records a conversation start request: accepted (its task written) or refused.
    pub fn conversation_start(&self, accepted: bool) {
        if accepted {
            self.starts_accepted.inc();
        } else {
            self.starts_refused.inc();
        }
    }

    /// The background jobs' metrics.
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// Whether `/metrics` has a listener of its own ([`super::exposition`]).
    pub fn own_listener(&self) -> &OwnListener {
        &self.own_listener
    }
}

/// The webhooks' families: batches, their duration, their events.
fn webhook_families(registry: &Registry) -> (IntCounterVec, HistogramVec, IntCounterVec) {
    (
        counters(
            registry,
            "webhook_batches_total",
            "Webhook batches from agent servers by kind (events, conversation) and result (accepted, or the reason of the refusal).",
            &["kind", "result"],
        ),
        histograms(
            registry,
            "webhook_batch_duration_seconds",
            "Seconds to receive, check and store a webhook batch, by kind and outcome (accepted, refused).",
            &["kind", "outcome"],
            &BATCH_BUCKETS,
        ),
        counters(
            registry,
            "webhook_events_total",
            "Events of accepted webhook batches: stored, or skipped as already stored (a retried batch).",
            &["result"],
        ),
    )
}

/// The proxy's families: requests by outcome, upstream errors by kind.
fn proxy_families(registry: &Registry) -> (IntCounterVec, IntCounterVec) {
    (
        counters(
            registry,
            "sandbox_proxy_requests_total",
            "Requests to sandboxes through the proxy by protocol (http, websocket) and outcome (forwarded, probe, refused, upstream_error, error).",
            &["protocol", "outcome"],
        ),
        counters(
            registry,
            "sandbox_proxy_upstream_errors_total",
            "Failures to reach a sandbox's service through the proxy by kind (unreachable, timeout, no_socket).",
            &["kind"],
        ),
    )
}

/// Counts one open thing in a gauge until dropped.
#[must_use = "the gauge goes down when this is dropped"]
pub struct OpenGauge(IntGauge);

impl OpenGauge {
    fn new(gauge: &IntGauge) -> Self {
        gauge.inc();
        OpenGauge(gauge.clone())
    }
}

impl Drop for OpenGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use switchboard_domain::DomainError;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn refusals_are_counted_by_reason_and_upstream_failures_by_kind() {
        let m = Metrics::new();
        let a = m.activity();
        a.webhook_batch(WebhookKind::Events, &Ok(()), 0.002);
        a.webhook_events(3, 1);
        let unknown: Result<(), ApiError> = Err(DomainError::NotAuthenticated.into());
        a.webhook_batch(WebhookKind::Events, &unknown, 0.001);
        let big: Result<(), ApiError> = Err(ApiError::PayloadTooLarge { limit: 1 });
        a.webhook_batch(WebhookKind::Conversation, &big, 0.001);
        a.proxy_request(false, Err(&ApiError::UpstreamTimeout));
        a.proxy_request(true, Ok(ProxyOutcome::Forwarded));
        a.proxy_request(false, Err(&DomainError::NotAuthenticated.into()));
        let open = a.proxy_socket();
        let text = m.render(None, None);
        let v = |s: &str| value(&text, s);
        assert_eq!(
            v(r#"webhook_batches_total{kind="events",result="accepted"}"#),
            Some(1.0)
        );
        assert_eq!(
            v(r#"webhook_batches_total{kind="events",result="unauthenticated"}"#),
            Some(1.0)
        );
        assert_eq!(
            v(r#"webhook_batches_total{kind="conversation",result="too_large"}"#),
            Some(1.0)
        );
        assert_eq!(v(r#"webhook_events_total{result="stored"}"#), Some(3.0));
        assert_eq!(
            v(r#"webhook_batch_duration_seconds_count{kind="events",outcome="refused"}"#),
            Some(1.0)
        );
        assert_eq!(
            v(r#"sandbox_proxy_requests_total{outcome="upstream_error",protocol="http"}"#),
            Some(1.0)
        );
        assert_eq!(
            v(r#"sandbox_proxy_requests_total{outcome="refused",protocol="http"}"#),
            Some(1.0)
        );
        assert_eq!(
            v(r#"sandbox_proxy_upstream_errors_total{kind="timeout"}"#),
            Some(1.0)
        );
        assert_eq!(v("sandbox_proxy_open_websockets"), Some(1.0));
        drop(open);
        assert_eq!(
            value(&m.render(None, None), "sandbox_proxy_open_websockets"),
            Some(0.0)
        );
    }
}
