//! Agent profiles' storage (issue 25): one set per user and organization.

use time::OffsetDateTime;

use crate::agent_profiles::AgentProfileSet;
use crate::error::{DomainError, StorageError};
use crate::ids::{OrgId, UserId};

/// An edit of one set: `Ok(true)` writes the set back, `Ok(false)` leaves it, an error
/// refuses (nothing written).
pub type AgentProfileEdit<'a> =
    &'a mut dyn FnMut(&mut AgentProfileSet) -> Result<bool, DomainError>;

/// Users' agent profiles.
pub trait AgentProfileStore: Send + Sync {
    /// The profiles of `user` in `org`, sorted by name, and the active one's id (empty when
    /// none were ever saved).
    fn agent_profiles(&self, org: OrgId, user: UserId) -> Result<AgentProfileSet, StorageError>;

    /// Applies `edit` to the set in one write transaction (the member's row locked on
    /// PostgreSQL, SQLite's write lock), so two changes of one user queue. Rows changed get
    /// `updated_at = now`. Returns the set as it stands after.
    ///
    /// # Errors
    /// `edit`'s error, or a storage failure.
    fn update_agent_profiles(
        &self,
        org: OrgId,
        user: UserId,
        now: OffsetDateTime,
        edit: AgentProfileEdit<'_>,
    ) -> Result<AgentProfileSet, DomainError>;
}
