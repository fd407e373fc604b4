//! Members managed through the API and the operator's commands (issue 34): pages of an
//! organization's members and of all users, role changes and removals that keep an owner,
//! disabling and removing users, and the audit log each of these writes in its transaction.

use time::OffsetDateTime;

use crate::error::StorageError;
use crate::identity::User;
use crate::identity::audit::{AuditEntry, AuditRecord};
use crate::ids::{OrgId, UserId};
use crate::permissions::Role;

/// One member of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    /// The user.
    pub user_id: UserId,
    /// Their e-mail.
    pub email: String,
    /// Their role there.
    pub role: Role,
    /// When they became a member (the list's order, with `user_id`).
    pub joined_at: OffsetDateTime,
    /// Whether the user is disabled.
    pub disabled: bool,
}

/// A position in an organization's member list: `(joined_at, user_id)`, the keyset it is
/// ordered by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemberPosition {
    /// When the member joined.
    pub joined_at: OffsetDateTime,
    /// The member.
    pub user_id: UserId,
}

/// Which members a page or count takes: an e-mail filter (case-insensitive substring; `%`
/// and `_` match themselves) and where the page starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemberQuery<'a> {
    /// Only e-mails containing this, any case.
    pub email: Option<&'a str>,
    /// Only members after this position (a page) or at and before it (a count).
    pub position: Option<MemberPosition>,
}

/// What a guarded change to a membership did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// Done, and its audit entry written.
    Done,
    /// The member's role is no longer the expected one, or they are no longer a member:
    /// nothing done (the caller judged the change on what it read before).
    Stale,
    /// The change would leave the organization without an owner: nothing done.
    LastOwner,
}

/// What removing a user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserRemoval {
    /// Removed, with their memberships, keys, settings, secrets, conversations and sandbox
    /// records; the audit entry written.
    Removed,
    /// No such user.
    NotFound,
    /// They are the only owner of these organizations: nothing done.
    LastOwnerOf(Vec<OrgId>),
}

/// Members, users as a whole, and the audit log.
pub trait MemberStore: Send + Sync {
    /// Up to `limit` members of `org` matching `query`, after `query.position`, in
    /// `(joined_at, user_id)` order.
    fn members_page(
        &self,
        org: OrgId,
        query: MemberQuery<'_>,
        limit: u32,
    ) -> Result<Vec<MemberRow>, StorageError>;
    /// How many members of `org` match `query.email`, at or before `query.position` when
    /// given (so a page's number is known).
    fn count_members(&self, org: OrgId, query: MemberQuery<'_>) -> Result<i64, StorageError>;
    /// Makes `user` a member of `org` with `role` unless they are one already
    /// ([`MemberChange::Stale`]); their current organization when they had none. Writes
    /// `audit`.
    fn add_member(
        &self,
        org: OrgId,
        user: UserId,
        role: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError>;
    /// Sets `user`'s role in `org` to `to` if it is still `from`, unless that leaves `org`
    /// without an owner; writes `audit` with the change. Serialized per organization.
    fn change_member_role(
        &self,
        org: OrgId,
        user: UserId,
        from: Role,
        to: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError>;
    /// Removes `user` from `org` if their role is still `from`, unless they are its last
    /// owner; a user whose current organization it was gets their oldest other one (or none).
    /// Their keys bound to `org` are revoked. Writes `audit`. Serialized per organization.
    fn remove_member(
        &self,
        org: OrgId,
        user: UserId,
        from: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError>;
    /// Up to `limit` users after `after` (`(created_at, id)` order), with an e-mail filter as
    /// [`MemberQuery::email`].
    fn users_page(
        &self,
        email: Option<&str>,
        after: Option<(OffsetDateTime, UserId)>,
        limit: u32,
    ) -> Result<Vec<User>, StorageError>;
    /// Disables (`Some(at)`) or enables (`None`) a user, writing `audit`; `false` when there
    /// is no such user. Every replica refuses the user's keys at once.
    fn set_user_disabled(
        &self,
        user: UserId,
        at: Option<OffsetDateTime>,
        audit: &AuditEntry,
    ) -> Result<bool, StorageError>;
    /// Removes a user and all they own, unless they are an organization's only owner.
    fn remove_user(&self, user: UserId, audit: &AuditEntry) -> Result<UserRemoval, StorageError>;
    /// Writes an entry for a change made elsewhere (a member added, a key revoked).
    fn append_audit(&self, entry: &AuditEntry) -> Result<(), StorageError>;
    /// Up to `limit` entries of `org` (`None`: the entries of no organization, the
    /// operator's changes to users as a whole), newest first, before position `before`.
    fn audit_page(
        &self,
        org: Option<OrgId>,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, StorageError>;
}
