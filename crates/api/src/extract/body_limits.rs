//! The server-wide limits on reading request bodies (API.md, Request bodies): how many body
//! bytes may be held at once across every request ([`BodyGate`], a semaphore counting bytes),
//! how long a body may take, and the slowest rate it may arrive at ([`BodyLimits`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Default of `--max-body-bytes-in-flight`: 64 MiB, eight webhook bodies of the largest size
/// or sixty-four of the 1 MiB routes at once (API.md, Request bodies).
pub const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT: usize = 64 << 20;
/// Default of `--body-read-timeout`: 30 s from the first byte awaited to the last.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of `--body-min-rate`: 240 bytes/s averaged since reading began, checked once
/// [`MIN_RATE_GRACE`] has passed (Kestrel's `MinRequestBodyDataRate` defaults).
pub const DEFAULT_BODY_MIN_RATE: u32 = 240;
/// A body is held to the minimum rate only after this long: short bodies on a slow start are
/// not refused.
pub const MIN_RATE_GRACE: Duration = Duration::from_secs(5);
/// How often a body that sends nothing is checked against its deadline and rate.
pub(crate) const RATE_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Limits on reading request bodies, the same for every route (each route has its own size
/// limit besides: `DEFAULT_BODY_LIMIT`, `WEBHOOK_BODY_LIMIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Bytes of request bodies the server holds at once, across every request; a body waits
    /// for room (at most `read_timeout`, then 503). Must be at least the largest route limit.
    pub max_in_flight: usize,
    /// The longest a body may take to arrive once admitted: 408 and the connection closed.
    pub read_timeout: Duration,
    /// The slowest average rate in bytes/s a body may arrive at once [`MIN_RATE_GRACE`] has
    /// passed: 408 and the connection closed; 0 turns the check off.
    pub min_rate: u32,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_in_flight: DEFAULT_MAX_BODY_BYTES_IN_FLIGHT,
            read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            min_rate: DEFAULT_BODY_MIN_RATE,
        }
    }
}

impl BodyLimits {
    /// Whether a body that has delivered `received` bytes after `elapsed` is too slow: past
    /// [`MIN_RATE_GRACE`], below `min_rate` bytes/s on average.
    pub fn too_slow(&self, received: usize, elapsed: Duration) -> bool {
        self.min_rate > 0
            && elapsed >= MIN_RATE_GRACE
            && (received as f64) < f64::from(self.min_rate) * elapsed.as_secs_f64()
    }
}

/// Admission of request bodies: a semaphore of [`BodyLimits::max_in_flight`] permits, one per
/// byte. A body takes its declared length (or its route's limit when it declares none) before
/// its first byte is read, and gives it back when the request is done with it.
#[derive(Debug)]
pub struct BodyGate {
    limits: BodyLimits,
    bytes: Arc<Semaphore>,
}

impl BodyGate {
    /// A gate with `limits`.
    pub fn new(limits: BodyLimits) -> Self {
        BodyGate {
            bytes: Arc::new(Semaphore::new(limits.max_in_flight)),
            limits,
        }
    }

    /// The limits.
    pub fn limits(&self) -> &BodyLimits {
        &self.limits
    }

    /// Bytes not taken by a body right now.
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }

    /// Waits for room for `n` bytes, at most [`BodyLimits::read_timeout`]; `None` for 0 bytes.
    ///
    /// # Errors
    /// [`ApiError::BodiesInFlight`] (503) when no room came in time, or when `n` exceeds
    /// the whole budget (a configuration the binary refuses).
    pub async fn admit(&self, n: usize) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        if n == 0 {
            return Ok(None);
        }
        let Ok(count) = u32::try_from(n) else {
            return Err(ApiError::BodiesInFlight);
        };
        if n > self.limits.max_in_flight {
            return Err(ApiError::BodiesInFlight);
        }
        match tokio::time::timeout(
            self.limits.read_timeout,
            self.bytes.clone().acquire_many_owned(count),
        )
        .await
        {
            Ok(Ok(permit)) => Ok(Some(permit)),
            _ => Err(ApiError::BodiesInFlight),
        }
    }
}

impl Default for BodyGate {
    fn default() -> Self {
        BodyGate::new(BodyLimits::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_checked_after_the_grace_only() {
        let limits = BodyLimits::default();
        assert!(!limits.too_slow(0, Duration::from_secs(4)));
        assert!(limits.too_slow(5, Duration::from_secs(5)));
        assert!(!limits.too_slow(240 * 6, Duration::from_secs(6)));
        assert!(limits.too_slow(240 * 6 - 1, Duration::from_secs(6)));
        let off = BodyLimits {
            min_rate: 0,
            ..limits
        };
        assert!(!off.too_slow(0, Duration::from_secs(60)));
    }

    #[tokio::test]
    async fn admission_counts_bytes_and_gives_them_back() {
        let gate = BodyGate::new(BodyLimits {
            max_in_flight: 10,
            read_timeout: Duration::from_millis(50),
            min_rate: 0,
        });
        assert!(gate.admit(0).await.unwrap().is_none());
        let a = gate.admit(6).await.unwrap();
        assert_eq!(gate.available(), 4);
        assert!(matches!(gate.admit(5).await, Err(ApiError::BodiesInFlight)));
        assert!(matches!(
            gate.admit(11).await,
            Err(ApiError::BodiesInFlight)
        ));
        drop(a);
        assert_eq!(gate.available(), 10);
        assert!(gate.admit(10).await.unwrap().is_some());
    }
}
