//! The pass-through's per-replica cache of authorized tokens (issue 38): a conversation's
//! agent makes its LLM calls one after another, so its token is checked against the database
//! (its route, its budgets, its key opened) at most once per [`ROUTE_CACHE_TTL`] on each
//! replica, and not on the worker's blocking pool. Only what was authorized is kept (an
//! unknown token always reads the database), at most [`ROUTES_CACHED`] tokens. The price,
//! stated in API.md ("LLM pass-through"): a token whose sandbox was deleted, or a budget
//! reached, is refused within that time rather than on the very next request, as API keys
//! revoked by the CLI.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an authorized token is served from the cache.
pub const ROUTE_CACHE_TTL: Duration = Duration::from_secs(1);

/// At most this many tokens are cached per replica.
pub const ROUTES_CACHED: usize = 10_000;

/// Authorized tokens by their hash, with when they were checked and what they opened (the
/// pass-through's `RelayTarget`).
pub(crate) struct RouteCache<T> {
    entries: Mutex<HashMap<String, (Instant, T)>>,
}

impl<T> Default for RouteCache<T> {
    fn default() -> Self {
        RouteCache {
            entries: Mutex::default(),
        }
    }
}

impl<T: Clone> RouteCache<T> {
    /// The target of `hash` checked less than [`ROUTE_CACHE_TTL`] ago.
    pub(crate) fn get(&self, hash: &str) -> Option<T> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(hash)
            .filter(|(at, _)| at.elapsed() < ROUTE_CACHE_TTL)
            .map(|(_, t)| t.clone())
    }

    /// Keeps `target`, checked now, under `hash` (expired entries dropped when full; all of
    /// them when still full).
    pub(crate) fn put(&self, hash: String, target: T) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= ROUTES_CACHED {
            entries.retain(|_, (at, _)| at.elapsed() < ROUTE_CACHE_TTL);
            if entries.len() >= ROUTES_CACHED {
                entries.clear();
            }
        }
        entries.insert(hash, (Instant::now(), target));
    }
}
