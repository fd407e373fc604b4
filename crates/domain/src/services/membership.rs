//! Membership checks that several services make before they act for a user in an
//! organization (the operator's commands, a sandbox started for a user).

use crate::error::DomainError;
use crate::identity::{Member, require_member};
use crate::ids::{OrgId, UserId};
use crate::ports::IdentityStore;

/// An existing user who is a member of `org` ([`require_member`]).
///
/// # Errors
/// [`DomainError::UserNotFound`], [`DomainError::OrgNotFound`], [`DomainError::NotAMember`].
pub(crate) fn existing_member(
    identity: &dyn IdentityStore,
    org: OrgId,
    user: UserId,
) -> Result<Member, DomainError> {
    identity.user(user)?.ok_or(DomainError::UserNotFound)?;
    require_member(identity.org_membership(org, user)?)
}
