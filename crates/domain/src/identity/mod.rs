//! Identity (API.md, Identity): organizations, users, who is calling ([`Principal`]), the
//! organization a request acts on ([`OrgContext`]) and the one membership rule
//! ([`require_member`]); API keys ([`api_keys`]) and sandbox session keys ([`session_keys`]).

pub mod api_keys;
pub mod audit;
pub mod installation;
pub mod mcp_redaction;
pub mod redaction;
pub mod sealing;
pub(crate) mod secrets;
pub mod session_keys;
pub mod sign_in;

use time::OffsetDateTime;

use crate::error::DomainError;
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::{Permission, Role};

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
    /// When the user was disabled (issue 34: their keys and sessions are refused); `None`
    /// while enabled.
    pub disabled_at: Option<OffsetDateTime>,
}

/// Who is calling: the user behind a valid API key.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The user.
    pub user_id: UserId,
    /// The key used.
    pub key_id: ApiKeyId,
    /// The organization the key is bound to, if any.
    pub bound_org: Option<OrgId>,
    /// The user's current organization when the key was checked.
    pub current_org: Option<OrgId>,
}

/// A member of an organization: the organization and the member's role there.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The organization.
    pub org: Org,
    /// The role.
    pub role: Role,
}

/// The one membership rule (API.md, Identity), for every operation that acts in an
/// organization on a user's behalf: the organization must exist and the user must have a
/// role there.
///
/// # Errors
/// [`DomainError::OrgNotFound`] when `membership` is `None` (no such organization);
/// [`DomainError::NotAMember`] when the user has no role there.
pub fn require_member(membership: Option<OrgMembership>) -> Result<Member, DomainError> {
    let m = membership.ok_or(DomainError::OrgNotFound)?;
    match m.role {
        Some(role) => Ok(Member { org: m.org, role }),
        None => Err(DomainError::NotAMember),
    }
}

/// The organization a request acts on, and the caller's role in it.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgContext {
    /// The caller.
    pub principal: Principal,
    /// The effective organization.
    pub org: Org,
    /// The caller's role there.
    pub role: Role,
}

impl OrgContext {
    /// Checks a permission required by the whole operation.
    ///
    /// # Errors
    /// [`DomainError::PermissionDenied`] when the role lacks it.
    pub fn require(&self, permission: Permission) -> Result<(), DomainError> {
        if self.role.grants(permission) {
            Ok(())
        } else {
            Err(DomainError::PermissionDenied(permission))
        }
    }
}

/// An organization and the caller's role in it, read together.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgMembership {
    /// The organization.
    pub org: Org,
    /// The user's role, `None` when not a member.
    pub role: Option<Role>,
}
