//! Ports: what the domain needs from storage. Implemented by the storage crate for SQLite
//! and PostgreSQL; calls block, so async callers run them on a blocking pool.

use time::OffsetDateTime;

use crate::api_keys::{ApiKeyRecord, KeyHash};
use crate::error::StorageError;
use crate::events::{
    AppendOutcome, Conversation, EventFilter, NewEvent, Sandbox, SearchQuery, StoredEvent,
};
use crate::ids::ConversationId;
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::Role;
use crate::settings::{OrgAppSettings, SettingsChange};

/// An organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Org {
    /// Id.
    pub id: OrgId,
    /// Display name.
    pub name: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// A user.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// Id.
    pub id: UserId,
    /// Unique e-mail.
    pub email: String,
    /// Display name.
    pub name: Option<String>,
    /// The organization used when a request names none; `None` when it was deleted.
    pub current_org_id: Option<OrgId>,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// An API key found by its hash, with what authentication needs of its user.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyLookup {
    /// The key.
    pub key: ApiKeyRecord,
    /// The key's user's current organization.
    pub user_current_org: Option<OrgId>,
    /// The organization the request would act on, read in the same query: the key's bound
    /// organization, else the requested one, else the user's current one; with the user's role
    /// there. `None` when that organization does not exist (or none applies).
    pub effective: Option<OrgMembership>,
}

/// An organization and the caller's role in it, read together.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgMembership {
    /// The organization.
    pub org: Org,
    /// The user's role, `None` when not a member.
    pub role: Option<Role>,
}

/// Result of a conditional settings write.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingsWrite {
    /// Written; the new settings (with a new, strictly greater `updated_at`).
    Written(OrgAppSettings),
    /// The stored version differs from the expected one; nothing written.
    Stale {
        /// The stored version.
        actual: OffsetDateTime,
    },
    /// No such organization.
    NotFound,
}

/// Organizations, users, memberships and API keys.
pub trait IdentityStore: Send + Sync {
    /// The key with this hash, its user's current organization, and the effective
    /// organization for `requested` (see [`KeyLookup::effective`]), in one read.
    fn api_key_by_hash(
        &self,
        hash: &KeyHash,
        requested: Option<OrgId>,
    ) -> Result<Option<KeyLookup>, StorageError>;
    /// Sets `last_used_at = now` unless it is already at or after `not_before` (debounce:
    /// one conditional update, so concurrent requests write it once).
    fn touch_api_key(
        &self,
        id: ApiKeyId,
        now: OffsetDateTime,
        not_before: OffsetDateTime,
    ) -> Result<(), StorageError>;
    /// A user.
    fn user(&self, id: UserId) -> Result<Option<User>, StorageError>;
    /// A user by e-mail (exact match).
    fn user_by_email(&self, email: &str) -> Result<Option<User>, StorageError>;
    /// An organization and `user`'s role in it; `None` when the organization does not exist.
    fn org_membership(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<OrgMembership>, StorageError>;
    /// An organization by name (exact match), the oldest if several.
    fn org_by_name(&self, name: &str) -> Result<Option<Org>, StorageError>;
    /// Number of organizations.
    fn count_orgs(&self) -> Result<i64, StorageError>;
    /// Creates an organization with default app settings (version = `created_at`).
    fn create_org(&self, org: &Org) -> Result<(), StorageError>;
    /// Creates a user.
    fn create_user(&self, user: &User) -> Result<(), StorageError>;
    /// Adds `user` to `org` with `role`, or changes the role of an existing member.
    fn put_member(
        &self,
        org: OrgId,
        user: UserId,
        role: Role,
        now: OffsetDateTime,
    ) -> Result<(), StorageError>;
    /// Sets a user's current organization.
    fn set_current_org(&self, user: UserId, org: OrgId) -> Result<(), StorageError>;
    /// Stores a new key.
    fn insert_api_key(&self, key: &ApiKeyRecord, hash: &KeyHash) -> Result<(), StorageError>;
    /// A user's keys, newest first, revoked ones included.
    fn api_keys_of(&self, user: UserId) -> Result<Vec<ApiKeyRecord>, StorageError>;
    /// One key.
    fn api_key(&self, id: ApiKeyId) -> Result<Option<ApiKeyRecord>, StorageError>;
    /// Marks a key revoked at `now` (no-op if already revoked); `false` when there is no key.
    fn revoke_api_key(&self, id: ApiKeyId, now: OffsetDateTime) -> Result<bool, StorageError>;
}

/// Organization app settings.
pub trait OrgSettingsStore: Send + Sync {
    /// The settings of an organization.
    fn org_settings(&self, org: OrgId) -> Result<Option<OrgAppSettings>, StorageError>;
    /// Applies `change` in one atomic step. With `expected`, only if the stored version equals
    /// it to the microsecond (the check and the write are one conditional update). The new
    /// version is `max(now, stored + 1 µs)`, so versions strictly increase.
    fn update_org_settings(
        &self,
        org: OrgId,
        change: &SettingsChange,
        expected: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<SettingsWrite, StorageError>;
}

/// Sandboxes, conversations and the event log.
pub trait EventStore: Send + Sync {
    /// Registers a sandbox with its hashed session key.
    fn create_sandbox(&self, sandbox: &Sandbox, key_hash: &KeyHash) -> Result<(), StorageError>;
    /// The sandbox whose session key has this hash.
    fn sandbox_by_key_hash(&self, hash: &KeyHash) -> Result<Option<Sandbox>, StorageError>;
    /// A conversation.
    fn conversation(&self, id: ConversationId) -> Result<Option<Conversation>, StorageError>;
    /// Appends a batch in one transaction: creates `conversation` if it does not exist (its
    /// org, owner and sandbox taken from `conversation`), skips events whose id the
    /// conversation already has (and repeats within the batch), inserts the rest in order, and
    /// sets the run state to `status` when given. `Ok(None)` when the conversation exists in
    /// another organization (nothing written). On PostgreSQL commit order equals `seq` order.
    fn append_events(
        &self,
        conversation: Conversation,
        events: Vec<NewEvent>,
        status: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<AppendOutcome>, StorageError>;
    /// Creates or updates a conversation from the agent server's `ConversationInfo`: title
    /// (when given), run state (when given) and the info itself as metadata. `Ok(false)` when
    /// the conversation exists in another organization (nothing written).
    fn upsert_conversation_info(
        &self,
        conversation: &Conversation,
        metadata: &str,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;
    /// Up to `query.limit + 1` events in order, after `query.after` (keyset on `(ts, seq)`).
    fn search_events(
        &self,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<Vec<StoredEvent>, StorageError>;
    /// How many events match.
    fn count_events(
        &self,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, StorageError>;
    /// The events with these ids (any order; missing ids absent): `(event_id, payload)`.
    fn get_events(
        &self,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<(String, String)>, StorageError>;
}

/// Everything the domain needs of storage.
pub trait Store: IdentityStore + OrgSettingsStore + EventStore {
    /// Whether the database answers and its migrations are applied (for `/ready`).
    fn ready(&self) -> Result<(), StorageError>;
}
