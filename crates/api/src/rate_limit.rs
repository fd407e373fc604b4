//! Request rate limits per credential and per client address (`--rate-limit-per-key N`,
//! `--rate-limit-per-ip N`; API.md, Reliability and security): a token bucket per key of
//! `N` requests per second with a burst of `N` (the `governor` crate's GCRA), off when `N` is 0.
//!
//! A request over a limit is answered 429 `{"detail": "..."}` with `Retry-After` (whole
//! seconds, at least 1) before any authentication or body read, so a flood costs no database
//! work. The per-address limit is checked first, then the per-credential one. The credential
//! is the API key (`X-Access-Token`, else `Authorization: Bearer`) or the sandbox session key
//! (`X-Session-API-Key`, the webhooks): webhooks from a sandbox are limited by its session key
//! and answered 429 like any other request, never dropped silently (the agent server retries).
//! Buckets are keyed by the SHA-256 of the credential, so the limiter holds no secret; an
//! unknown or garbage credential gets a bucket of its own (the per-address limit bounds those).
//! The health routes (`/health`, `/ready`, `/metrics`, `/alive`) are never limited: probes must see the
//! server as it is. The client address is the TCP peer (no proxy header is trusted).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{ResponseError, web};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::extract::{SESSION_KEY_HEADER, presented_key};

/// Routes never limited (operational probes).
const EXEMPT: [&str; 4] = ["/health", "/ready", "/metrics", "/alive"];

/// Checks between two purges of idle buckets.
const PURGE_EVERY: u64 = 4096;

/// The configured limits, in requests per second (burst the same); 0 turns one off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Requests per second per credential (API key or session key); 0 = unlimited.
    pub per_key: u32,
    /// Requests per second per client address; 0 = unlimited.
    pub per_ip: u32,
}

/// The limiters of a server, shared by every worker.
pub struct RateLimits {
    per_key: Option<DefaultKeyedRateLimiter<[u8; 32]>>,
    per_ip: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU64,
}

fn limiter<K: std::hash::Hash + Eq + Clone>(n: u32) -> Option<DefaultKeyedRateLimiter<K>> {
    NonZeroU32::new(n).map(|n| RateLimiter::dashmap(Quota::per_second(n).allow_burst(n)))
}

impl RateLimits {
    /// Limiters for `config`.
    pub fn new(config: RateLimitConfig) -> Self {
        RateLimits {
            per_key: limiter(config.per_key),
            per_ip: limiter(config.per_ip),
            checks: AtomicU64::new(0),
        }
    }

    /// Whether any limit is on.
    pub fn enabled(&self) -> bool {
        self.per_key.is_some() || self.per_ip.is_some()
    }

    /// Takes one request from the buckets of `ip` and `credential`; `Err(seconds)` to wait
    /// (at least 1) when one of them is empty.
    pub fn check(&self, ip: Option<IpAddr>, credential: Option<&str>) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            self.purge();
        }
        if let (Some(l), Some(ip)) = (&self.per_ip, ip) {
            l.check_key(&ip).map_err(retry_after)?;
        }
        if let (Some(l), Some(c)) = (&self.per_key, credential.filter(|c| !c.is_empty())) {
            let digest: [u8; 32] = Sha256::digest(c.as_bytes()).into();
            l.check_key(&digest).map_err(retry_after)?;
        }
        Ok(())
    }

    /// Drops the buckets that are full again (they behave as new ones), bounding memory.
    fn purge(&self) {
        if let Some(l) = &self.per_key {
            l.retain_recent();
            l.shrink_to_fit();
        }
        if let Some(l) = &self.per_ip {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

fn retry_after(not_until: governor::NotUntil<<DefaultClock as Clock>::Instant>) -> u64 {
    let wait = not_until.wait_time_from(DefaultClock::default().now());
    // Whole seconds, rounded up, at least 1 (RFC 9110 §10.2.3 takes integers).
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// The credential a request presents: its API key, else its session key.
fn credential(req: &ServiceRequest) -> Option<String> {
    presented_key(req.request()).or_else(|| {
        req.headers()
            .get(SESSION_KEY_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
    })
}

/// Middleware: answers 429 when the request's address or credential is over its limit
/// (see the module documentation), else passes it on.
///
/// # Errors
/// Whatever the inner service returns.
pub async fn limit(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let limits = req.app_data::<web::Data<RateLimits>>().cloned();
    if let Some(limits) = limits
        && !EXEMPT.contains(&req.path())
    {
        let ip = req.peer_addr().map(|a| a.ip());
        if let Err(secs) = limits.check(ip, credential(&req).as_deref()) {
            let resp = ApiError::RateLimited {
                retry_after_secs: secs,
            }
            .error_response();
            return Ok(req.into_response(resp).map_into_right_body());
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_burst_then_refused() {
        assert!(!RateLimits::new(RateLimitConfig::default()).enabled());
        let l = RateLimits::new(RateLimitConfig {
            per_key: 3,
            per_ip: 0,
        });
        for _ in 0..3 {
            l.check(None, Some("k1")).unwrap();
        }
        let wait = l.check(None, Some("k1")).unwrap_err();
        assert!(wait >= 1, "{wait}");
        // Another key has its own bucket; no credential is not limited per key.
        l.check(None, Some("k2")).unwrap();
        for _ in 0..10 {
            l.check(None, None).unwrap();
        }
    }

    #[test]
    fn per_ip_counts_every_credential() {
        let l = RateLimits::new(RateLimitConfig {
            per_key: 0,
            per_ip: 2,
        });
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        l.check(Some(ip), Some("a")).unwrap();
        l.check(Some(ip), Some("b")).unwrap();
        assert!(l.check(Some(ip), Some("c")).is_err());
        l.check(Some("10.0.0.2".parse().unwrap()), Some("a"))
            .unwrap();
    }
}
