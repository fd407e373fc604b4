//! Each user's own settings in an organization (issue 21): one record per user and
//! organization, changed only by a read-modify-write in one transaction.

use time::OffsetDateTime;

use crate::error::{DomainError, StorageError};
use crate::ids::{OrgId, UserId};
use crate::user_settings::UserSettingsRecord;

/// A change to a user's settings record: called once, inside the store's write transaction,
/// with the stored record (the defaults when none is stored). `Ok(true)` writes the record as
/// left, `Ok(false)` writes nothing; an error writes nothing and is returned.
pub type SettingsEdit<'a> = &'a mut dyn FnMut(&mut UserSettingsRecord) -> Result<bool, DomainError>;

/// Users' settings records.
pub trait UserSettingsStore: Send + Sync {
    /// The record of `user` in `org`; `None` when none was ever written.
    fn user_settings(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<UserSettingsRecord>, StorageError>;

    /// Applies `edit` to the record in one write transaction (the row locked on PostgreSQL,
    /// SQLite's write lock), so concurrent changes of one user queue instead of losing each
    /// other's (OpenHands serializes them with a per-process lock only). A written record gets
    /// `updated_at = now`. Returns the record as it stands after.
    ///
    /// # Errors
    /// `edit`'s error, or a storage failure.
    fn update_user_settings(
        &self,
        org: OrgId,
        user: UserId,
        now: OffsetDateTime,
        edit: SettingsEdit<'_>,
    ) -> Result<UserSettingsRecord, DomainError>;
}
