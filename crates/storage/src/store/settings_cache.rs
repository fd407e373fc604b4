//! The per-replica cache of organization settings (issue 23; API.md, Organization
//! settings): a GET reads no database row when the settings are cached.
//!
//! Safe because every write of the settings goes through
//! [`update_org_settings`](switchboard_domain::ports::OrgSettingsStore::update_org_settings),
//! which invalidates this process's entry after its commit and, on PostgreSQL, sends
//! `NOTIFY` [`SETTINGS_CHANNEL`] (payload: the organization id) in its transaction, so every
//! other replica's listener ([`crate::listen::listen_for_settings`]) invalidates its own.
//! On PostgreSQL the cache is used only while that listener is connected (a notification sent
//! while it is down would be lost): it starts disabled and is cleared on every (re)connect.
//! SQLite is served by one process, which sees all its writes.
//!
//! A read that started before an invalidation does not fill the cache with what it read
//! (the generation check of [`SettingsCache::fill`]): otherwise a reply read just before a
//! write committed elsewhere could stay cached after that write's notification.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use switchboard_domain::OrgId;
use switchboard_domain::settings::OrgAppSettings;

/// The channel settings writes notify on PostgreSQL (payload: the organization's id).
pub const SETTINGS_CHANNEL: &str = "switchboard_settings";

/// Cached settings per organization, with the generation that orders fills after
/// invalidations.
#[derive(Debug, Default)]
pub struct SettingsCache {
    enabled: AtomicBool,
    generation: AtomicU64,
    entries: RwLock<HashMap<OrgId, OrgAppSettings>>,
}

impl SettingsCache {
    /// A cache, used at once (`enabled`, SQLite) or once a listener connects (PostgreSQL).
    pub(crate) fn new(enabled: bool) -> Self {
        SettingsCache {
            enabled: AtomicBool::new(enabled),
            ..SettingsCache::default()
        }
    }

    /// The cached settings of `org`, if the cache is in use and holds them.
    pub(crate) fn get(&self, org: OrgId) -> Option<OrgAppSettings> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        self.entries.read().ok()?.get(&org).cloned()
    }

    /// The generation to pass to [`fill`](Self::fill), taken before reading the database.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches `settings`, read after [`generation`](Self::generation) returned `seen`,
    /// unless an invalidation came since (or the cache is not in use).
    pub(crate) fn fill(&self, seen: u64, settings: &OrgAppSettings) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut map) = self.entries.write()
            && self.generation.load(Ordering::Acquire) == seen
        {
            map.insert(settings.org_id, settings.clone());
        }
    }

    /// Forgets `org`'s settings (a write here or a notification from another replica).
    pub fn invalidate(&self, org: OrgId) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        map.remove(&org);
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

    fn clear(&self) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        map.clear();
    }

    /// Whether reads are served from the cache now.
    pub fn in_use(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(org: OrgId, budget: f64) -> OrgAppSettings {
        OrgAppSettings {
            org_id: org,
            enable_proactive_conversation_starters: false,
            max_budget_per_task: Some(budget),
            registered_marketplaces: Vec::new(),
            updated_at: time::OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_read_begun_before_an_invalidation_is_not_cached() {
        let org = OrgId(uuid::Uuid::new_v4());
        let cache = SettingsCache::new(true);
        let seen = cache.generation();
        cache.invalidate(org);
        cache.fill(seen, &settings(org, 1.0));
        assert_eq!(cache.get(org), None);
        let seen = cache.generation();
        cache.fill(seen, &settings(org, 2.0));
        assert_eq!(cache.get(org).unwrap().max_budget_per_task, Some(2.0));
        cache.disconnected();
        assert_eq!(cache.get(org), None, "not used while the listener is down");
        cache.fill(cache.generation(), &settings(org, 3.0));
        cache.connected();
        assert_eq!(cache.get(org), None, "cleared on connect");
    }
}
