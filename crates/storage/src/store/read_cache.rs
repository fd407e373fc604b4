//! A per-replica read cache kept right by invalidation (issue 23): the organization settings
//! ([`super::SettingsCache`]) and the API-key lookups of authentication
//! ([`super::KeyCache`]) are both one of these.
//!
//! The rules every instance keeps:
//! - Writes through this process invalidate after their commit; on PostgreSQL they also send
//!   a `NOTIFY` in (or right after) their transaction, and every replica's listener
//!   ([`crate::listen::listen_for_caches`]) invalidates its own copy. On PostgreSQL the cache is
//!   used only while that listener is connected (a notification sent while it is down would be
//!   lost): it starts disabled and is cleared on every (re)connect.
//! - A read that started before an invalidation does not fill the cache with what it read
//!   (the generation check of [`ReadCache::fill`]): otherwise a row read just before a write
//!   committed elsewhere could stay cached after that write's notification.
//! - An optional time to live bounds how long an entry is served without reading the
//!   database again, for writers that cannot notify (another process on the same SQLite file).
//! - At most `capacity` entries; a fill beyond it starts over from empty (entries are cheap
//!   to read again, and a bound keeps memory flat whatever callers send).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Cached values by key, with the generation that orders fills after invalidations.
#[derive(Debug)]
pub struct ReadCache<K, V> {
    enabled: AtomicBool,
    generation: AtomicU64,
    ttl: Option<Duration>,
    capacity: usize,
    entries: RwLock<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> ReadCache<K, V> {
    /// A cache, used at once (`enabled`: SQLite) or once a listener connects (PostgreSQL);
    /// entries older than `ttl` (when given) are read again; at most `capacity` entries.
    pub(crate) fn new(enabled: bool, ttl: Option<Duration>, capacity: usize) -> Self {
        ReadCache {
            enabled: AtomicBool::new(enabled),
            generation: AtomicU64::new(0),
            ttl,
            capacity,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// The cached value of `key`, if the cache is in use and holds a fresh one.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let map = self.entries.read().ok()?;
        let (value, filled) = map.get(key)?;
        match self.ttl {
            Some(ttl) if filled.elapsed() >= ttl => None,
            _ => Some(value.clone()),
        }
    }

    /// The generation to pass to [`fill`](Self::fill), taken before reading the database.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches `value` under `key`, read after [`generation`](Self::generation) returned
    /// `seen`, unless an invalidation came since (or the cache is not in use).
    pub(crate) fn fill(&self, seen: u64, key: K, value: V) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut map) = self.entries.write()
            && self.generation.load(Ordering::Acquire) == seen
        {
            if map.len() >= self.capacity && !map.contains_key(&key) {
                map.clear();
            }
            map.insert(key, (value, Instant::now()));
        }
    }

    /// Changes every cached value in place (their age unchanged): for a write this process
    /// makes and knows the effect of, such as an API key's `last_used_at`.
    pub(crate) fn update_all(&self, mut change: impl FnMut(&mut V)) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        for (value, _) in map.values_mut() {
            change(value);
        }
    }

    /// Forgets `key` (a write here or a notification from another replica).
    pub fn invalidate(&self, key: &K) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        map.remove(key);
    }

    /// Forgets everything (a write whose reach is not one key).
    pub fn clear(&self) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        map.clear();
    }

    /// Forgets everything and starts using the cache: the listener has (re)connected.
    pub fn connected(&self) {
        self.clear();
        self.enabled.store(true, Ordering::Release);
    }

    /// Stops using the cache: the listener is down, notifications may be lost.
    pub fn disconnected(&self) {
        self.enabled.store(false, Ordering::Release);
        self.clear();
    }

    /// Whether reads are served from the cache now.
    pub fn in_use(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// How many entries are held (for tests and metrics).
    pub fn len(&self) -> usize {
        self.entries.read().map_or(0, |m| m.len())
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_begun_before_an_invalidation_is_not_cached() {
        let cache: ReadCache<u8, u32> = ReadCache::new(true, None, 8);
        let seen = cache.generation();
        cache.invalidate(&1);
        cache.fill(seen, 1, 10);
        assert_eq!(cache.get(&1), None);
        cache.fill(cache.generation(), 1, 20);
        assert_eq!(cache.get(&1), Some(20));
        cache.disconnected();
        assert_eq!(cache.get(&1), None, "not used while the listener is down");
        cache.fill(cache.generation(), 1, 30);
        cache.connected();
        assert_eq!(cache.get(&1), None, "cleared on connect");
    }

    #[test]
    fn entries_expire_and_the_size_is_bounded() {
        let cache: ReadCache<u32, u32> = ReadCache::new(true, Some(Duration::ZERO), 4);
        cache.fill(cache.generation(), 1, 1);
        assert_eq!(cache.get(&1), None, "older than a zero time to live");
        let cache: ReadCache<u32, u32> = ReadCache::new(true, None, 4);
        for k in 0..4 {
            cache.fill(cache.generation(), k, k);
        }
        assert_eq!(cache.len(), 4);
        cache.fill(cache.generation(), 4, 4);
        assert_eq!(cache.len(), 1, "a fill past the capacity starts over");
        assert_eq!(cache.get(&4), Some(4));
        cache.update_all(|v| *v += 1);
        assert_eq!(cache.get(&4), Some(5));
        cache.clear();
        assert!(cache.is_empty());
    }
}
