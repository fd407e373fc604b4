//! An organization's defaults for its members (issue 21): one record per organization,
//! changed only by a read-modify-write in one transaction.

use time::OffsetDateTime;

use crate::error::{DomainError, StorageError};
use crate::ids::OrgId;
use crate::org_defaults::OrgDefaultsRecord;

/// A change to an organization's defaults: called once, inside the store's write
/// transaction, with the stored record (the empty defaults when none is stored). `Ok(true)`
/// writes the record as left, `Ok(false)` writes nothing; an error writes nothing and is
/// returned.
pub type OrgDefaultsEdit<'a> =
    &'a mut dyn FnMut(&mut OrgDefaultsRecord) -> Result<bool, DomainError>;

/// Organizations' defaults records.
pub trait OrgDefaultsStore: Send + Sync {
    /// The defaults of `org`; `None` when none were ever written.
    fn org_defaults(&self, org: OrgId) -> Result<Option<OrgDefaultsRecord>, StorageError>;

    /// Applies `edit` in one write transaction (the row locked on PostgreSQL, SQLite's write
    /// lock). A written record gets `updated_at = now`. Returns the record as it stands after.
    ///
    /// # Errors
    /// `edit`'s error, or a storage failure (an organization that does not exist included).
    fn update_org_defaults(
        &self,
        org: OrgId,
        now: OffsetDateTime,
        edit: OrgDefaultsEdit<'_>,
    ) -> Result<OrgDefaultsRecord, DomainError>;
}
