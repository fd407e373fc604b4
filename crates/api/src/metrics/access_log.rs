//! The access log (docs/metrics.md, Access log): one line per request at `INFO` on the
//! tracing target [`ACCESS_TARGET`], written by the request middleware when the response is
//! ready: method, route template (never the raw path or the query), status, duration, request
//! id and the caller as authenticated (a user and the id of the key used, or a sandbox; never
//! a key itself). Switched off like any target: `SWITCHBOARD_LOG=info,switchboard::access=off`.
//!
//! The caller is known only once a handler has authenticated the request, on the blocking
//! pool; the extractors put a [`CallerSlot`] in the request's extensions (only while the
//! target is enabled) and authentication fills it.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::{HttpMessage, HttpRequest};
use switchboard_domain::{ApiKeyId, SandboxId, UserId};

/// The tracing target of the access log.
pub const ACCESS_TARGET: &str = "switchboard::access";

/// The route label of a request no route pattern matched but a middleware handled (the
/// sandbox proxy's host and port forms), in the request's extensions: used in place of
/// `unmatched` by the metrics and the access log.
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

/// Who made a request, as authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallerId {
    /// A user, with the id of the API key used when the request presented one.
    User {
        /// The user.
        user: UserId,
        /// The key's id (never the key).
        key: Option<ApiKeyId>,
    },
    /// A sandbox, by its session key (webhooks, the proxy).
    Sandbox(SandboxId),
}

impl fmt::Display for CallerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallerId::User { user, .. } => write!(f, "user:{user}"),
            CallerId::Sandbox(id) => write!(f, "sandbox:{id}"),
        }
    }
}

/// Where authentication leaves the caller for the access log: shared by the request's
/// extensions and the extractor that authenticates (which runs on another thread).
#[derive(Debug, Clone, Default)]
pub struct CallerSlot(Arc<OnceLock<CallerId>>);

impl CallerSlot {
    /// The slot of `req` (made on first use), or `None` when the access log is off (then
    /// nothing is recorded, nothing allocated).
    pub fn of(req: &HttpRequest) -> Option<CallerSlot> {
        if !enabled() {
            return None;
        }
        if let Some(slot) = req.extensions().get::<CallerSlot>() {
            return Some(slot.clone());
        }
        let slot = CallerSlot::default();
        req.extensions_mut().insert(slot.clone());
        Some(slot)
    }

    /// Records the caller (the first one recorded stays).
    pub fn set(&self, caller: CallerId) {
        let _ = self.0.set(caller);
    }

    /// The caller recorded, if any.
    pub fn get(&self) -> Option<CallerId> {
        self.0.get().copied()
    }
}

/// Records `caller` for `req`'s access log line (nothing when the log is off).
pub fn note_caller(req: &HttpRequest, caller: CallerId) {
    if let Some(slot) = CallerSlot::of(req) {
        slot.set(caller);
    }
}

/// Whether access log lines are written (the target's filter, read from the callsite cache).
pub fn enabled() -> bool {
    tracing::enabled!(target: ACCESS_TARGET, tracing::Level::INFO)
}

/// What one access log line says.
pub(super) struct Line<'a> {
    pub method: &'a str,
    pub route: &'a str,
    pub status: u16,
    pub elapsed: Duration,
    pub request_id: &'a str,
    pub caller: Option<CallerId>,
}

/// Writes `line` at `INFO` on [`ACCESS_TARGET`].
pub(super) fn write(line: &Line<'_>) {
    let caller = Absent(line.caller.as_ref());
    let key_id = Absent(match &line.caller {
        Some(CallerId::User { key: Some(k), .. }) => Some(k),
        _ => None,
    });
    tracing::info!(
        target: ACCESS_TARGET,
        method = %line.method,
        route = %line.route,
        status = line.status,
        duration_ms = line.elapsed.as_secs_f64() * 1000.0,
        request_id = %line.request_id,
        caller = %caller,
        key_id = %key_id,
        "request"
    );
}

/// A value, or `-` when absent.
struct Absent<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Absent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}
