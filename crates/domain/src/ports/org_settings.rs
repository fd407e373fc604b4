//! Organization app settings.

use time::OffsetDateTime;

use crate::error::StorageError;
use crate::ids::OrgId;
use crate::settings::{OrgAppSettings, SettingsChange};

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
