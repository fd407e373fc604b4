//! The per-replica cache of API-key lookups (issue 23: settings reads at 15,000 per second;
//! API.md, Identity): authenticating a request reads no database row when its key, with the
//! organization it asked for, was looked up within the last [`KEY_CACHE_TTL`].
//!
//! What keeps it right ([`ReadCache`]'s rules):
//! - Every identity write of this process ([`IdentityStore`](switchboard_domain::ports::IdentityStore):
//!   organizations, users, members and roles, current organization, key revocation) clears
//!   the whole cache after it is written, and on PostgreSQL sends `NOTIFY`
//!   [`IDENTITY_CHANNEL`], so every replica's listener clears its own: a key revoked through
//!   any replica is refused by every replica once the notification arrives (milliseconds).
//!   On PostgreSQL the cache is used only while that listener is connected.
//! - Expiry (`expires_at`) is checked at each use against the clock, cached or not.
//! - Entries live at most [`KEY_CACHE_TTL`]: the operator's CLI writing to the same SQLite
//!   file from another process cannot notify the server, so a key it revokes stops working
//!   within that time.
//! - `last_used_at` written by [`touch_api_key`](switchboard_domain::ports::IdentityStore::touch_api_key)
//!   is copied into the cached entries, so the once-a-minute write stays once a minute.
//! - Unknown keys are not cached (nothing an unauthenticated caller sends takes memory), and
//!   at most [`KEYS_CACHED`] lookups are held.

use std::time::Duration;

use switchboard_domain::OrgId;
use switchboard_domain::ports::KeyLookup;

use super::read_cache::ReadCache;

/// The channel identity writes notify on PostgreSQL (no payload: every entry is dropped).
pub const IDENTITY_CHANNEL: &str = "switchboard_identity";

/// How long a lookup is served from the cache before the database is read again.
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(1);

/// At most this many lookups (key hash, requested organization) are cached per process.
pub(crate) const KEYS_CACHED: usize = 10_000;

/// Cached lookups by (the key's hash, the organization asked for with `X-Org-Id`).
pub type KeyCache = ReadCache<(String, Option<OrgId>), KeyLookup>;

/// The key cache of a store on SQLite (`enabled`) or PostgreSQL (enabled by its listener).
pub(crate) fn key_cache(enabled: bool) -> KeyCache {
    ReadCache::new(enabled, Some(KEY_CACHE_TTL), KEYS_CACHED)
}
