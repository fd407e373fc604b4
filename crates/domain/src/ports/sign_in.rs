//! Sign-in's storage (issue 34): provider identities, sign-ins in flight, browser sessions and
//! device authorizations. Secrets arrive hashed ([`crate::identity::sign_in::secret_hash`]).

use time::OffsetDateTime;

use crate::error::StorageError;
use crate::identity::User;
use crate::identity::audit::AuditEntry;
use crate::identity::sign_in::{DeviceGrant, DevicePoll, SignInState, WebSession};
use crate::ids::{OrgId, UserId};
use crate::permissions::Role;

/// A provider identity to link to a user.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentityLink<'a> {
    /// Issuer URL.
    pub issuer: &'a str,
    /// Subject there.
    pub subject: &'a str,
    /// The e-mail of this sign-in.
    pub email: &'a str,
    /// Now.
    pub at: OffsetDateTime,
}

/// A new browser session.
#[derive(Debug, Clone, PartialEq)]
pub struct NewWebSession<'a> {
    /// SHA-256 hex of the cookie.
    pub id_hash: &'a str,
    /// The user.
    pub user_id: UserId,
    /// Its CSRF token.
    pub csrf_token: &'a str,
    /// Where it was opened from.
    pub remote_addr: Option<&'a str>,
    /// Opened.
    pub created_at: OffsetDateTime,
    /// Lapses.
    pub expires_at: OffsetDateTime,
}

/// A new device authorization.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDeviceGrant<'a> {
    /// SHA-256 hex of the device code.
    pub device_code_hash: &'a str,
    /// The user code.
    pub user_code: &'a str,
    /// Seconds between polls.
    pub interval_secs: i64,
    /// Who asked.
    pub remote_addr: Option<&'a str>,
    /// Asked.
    pub created_at: OffsetDateTime,
    /// Lapses.
    pub expires_at: OffsetDateTime,
}

/// Sign-in's storage.
pub trait SignInStore: Send + Sync {
    /// Keeps a sign-in in flight under its state's hash.
    fn put_sign_in_state(&self, state_hash: &str, state: &SignInState) -> Result<(), StorageError>;
    /// Takes (deletes and returns) the sign-in of `state_hash` if it has not lapsed at `now`:
    /// a state is used once.
    fn take_sign_in_state(
        &self,
        state_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<SignInState>, StorageError>;
    /// The user linked to a provider identity.
    fn user_by_identity(&self, issuer: &str, subject: &str)
    -> Result<Option<UserId>, StorageError>;
    /// Links (or refreshes the link of) a provider identity to `user`.
    fn link_identity(&self, user: UserId, link: &IdentityLink<'_>) -> Result<(), StorageError>;
    /// Creates `user` with its identity and the memberships of the operator's rules (the
    /// first becomes their current organization), each with its audit entry, in one
    /// transaction.
    fn create_signed_in_user(
        &self,
        user: &User,
        link: &IdentityLink<'_>,
        memberships: &[(OrgId, Role, AuditEntry)],
    ) -> Result<(), StorageError>;
    /// Opens a session.
    fn insert_web_session(&self, session: &NewWebSession<'_>) -> Result<(), StorageError>;
    /// The session of `id_hash` if it has not lapsed at `now`.
    fn web_session(
        &self,
        id_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<WebSession>, StorageError>;
    /// Ends a session (nothing when there is none).
    fn delete_web_session(&self, id_hash: &str) -> Result<(), StorageError>;
    /// Device authorizations pending at `now` (for the cap on those in flight).
    fn count_pending_device_grants(&self, now: OffsetDateTime) -> Result<i64, StorageError>;
    /// Stores a device authorization; [`StorageError::UniqueViolation`] when its user code is
    /// taken.
    fn insert_device_grant(&self, grant: &NewDeviceGrant<'_>) -> Result<(), StorageError>;
    /// The device authorization of a user code, if it has not lapsed at `now`.
    fn device_grant(
        &self,
        user_code: &str,
        now: OffsetDateTime,
    ) -> Result<Option<DeviceGrant>, StorageError>;
    /// Approves (for `user`) or denies a pending authorization that has not lapsed; `false`
    /// when there is none such.
    fn decide_device_grant(
        &self,
        user_code: &str,
        user: UserId,
        approve: bool,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;
    /// One poll of a device code at `now`, decided in one transaction ([`DevicePoll`]).
    fn poll_device_grant(
        &self,
        device_code_hash: &str,
        now: OffsetDateTime,
    ) -> Result<DevicePoll, StorageError>;
    /// Deletes what lapsed before `now`: sign-ins in flight, sessions, device
    /// authorizations. Returns how many rows went.
    fn purge_sign_in(&self, now: OffsetDateTime) -> Result<u64, StorageError>;
}
