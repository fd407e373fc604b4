//! Organizations, users, memberships and API keys.

use time::OffsetDateTime;

use crate::error::StorageError;
pub use crate::identity::OrgMembership;
use crate::identity::api_keys::{ApiKeyHash, ApiKeyRecord};
use crate::identity::{Org, User};
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::Role;

/// An API key found by its hash, with what authentication needs of its user.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyLookup {
    /// The key.
    pub key: ApiKeyRecord,
    /// The key's user's current organization.
    pub user_current_org: Option<OrgId>,
    /// Whether the key's user is disabled (issue 34: every key of theirs is refused).
    pub user_disabled: bool,
    /// The organization the request would act on, read in the same query: the key's bound
    /// organization, else the requested one, else the user's current one; with the user's role
    /// there. `None` when that organization does not exist (or none applies).
    pub effective: Option<OrgMembership>,
}

/// Organizations, users, memberships and API keys.
pub trait IdentityStore: Send + Sync {
    /// The key with this hash, its user's current organization, and the effective
    /// organization for `requested` (see [`KeyLookup::effective`]), in one read.
    fn api_key_by_hash(
        &self,
        hash: &ApiKeyHash,
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
    /// Every organization `user` is a member of, with the role there, by name (issue 21:
    /// `GET /api/organizations`).
    fn memberships(&self, user: UserId) -> Result<Vec<OrgMembership>, StorageError>;
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
    fn insert_api_key(&self, key: &ApiKeyRecord, hash: &ApiKeyHash) -> Result<(), StorageError>;
    /// A user's keys, newest first, revoked ones included.
    fn api_keys_of(&self, user: UserId) -> Result<Vec<ApiKeyRecord>, StorageError>;
    /// One key.
    fn api_key(&self, id: ApiKeyId) -> Result<Option<ApiKeyRecord>, StorageError>;
    /// Marks a key revoked at `now` (no-op if already revoked); `false` when there is no key.
    fn revoke_api_key(&self, id: ApiKeyId, now: OffsetDateTime) -> Result<bool, StorageError>;
}
