//! The per-replica cache of organization settings (issue 23; API.md, Organization
//! settings): a GET reads no database row when the settings are cached.
//!
//! Safe because every write of the settings goes through
//! [`update_org_settings`](switchboard_domain::ports::OrgSettingsStore::update_org_settings),
//! which invalidates this process's entry after its commit and, on PostgreSQL, sends
//! `NOTIFY` [`SETTINGS_CHANNEL`] (payload: the organization id) in its transaction, so every
//! other replica's listener ([`crate::listen::listen_for_caches`]) invalidates its own. The
//! rules of [`ReadCache`] apply (used on PostgreSQL only while the listener is connected;
//! fills ordered after invalidations). SQLite is served by one process, which sees all its
//! writes: no time to live.

use switchboard_domain::OrgId;
use switchboard_domain::settings::OrgAppSettings;

use super::read_cache::ReadCache;

/// The channel settings writes notify on PostgreSQL (payload: the organization's id).
pub const SETTINGS_CHANNEL: &str = "switchboard_settings";

/// At most this many organizations' settings are cached per process.
pub(crate) const SETTINGS_CACHED: usize = 100_000;

/// Cached settings per organization.
pub type SettingsCache = ReadCache<OrgId, OrgAppSettings>;

/// The settings cache of a store on SQLite (`enabled`) or PostgreSQL (enabled by its
/// listener).
pub(crate) fn settings_cache(enabled: bool) -> SettingsCache {
    ReadCache::new(enabled, None, SETTINGS_CACHED)
}
