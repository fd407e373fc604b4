//! The operator's commands on users and members (issue 34: `users list|disable|enable|remove`,
//! `members remove`, `audit list`), each writing its audit entry with the operator as actor.
//! No authentication: they need access to the database. The same rules bind the operator
//! where they keep data whole: an organization keeps an owner.

use std::sync::Arc;

use serde_json::json;
use time::OffsetDateTime;

use crate::error::DomainError;
use crate::identity::User;
use crate::identity::audit::{Actor, AuditAction, AuditEntry, AuditRecord};
use crate::ids::{OrgId, UserId};
use crate::permissions::Role;
use crate::ports::{IdentityStore, MemberChange, MemberStore, UserRemoval};
use crate::time_input::now_micros;

/// The most users or audit entries one call lists.
pub const MAX_USERS_PER_PAGE: u32 = 1000;

/// Users and members as the operator manages them.
#[derive(Clone)]
pub struct UserAdminService {
    identity: Arc<dyn IdentityStore>,
    members: Arc<dyn MemberStore>,
}

/// An operator's audit entry about `target`.
fn operator_entry(
    org: Option<OrgId>,
    action: AuditAction,
    target: &User,
    detail: serde_json::Value,
) -> AuditEntry {
    AuditEntry {
        org,
        actor: Actor::Operator,
        action,
        target: Some((target.id, target.email.clone())),
        detail,
        remote_addr: None,
        at: now_micros(),
    }
}

impl UserAdminService {
    /// The service over the identity and member stores.
    pub fn new(identity: Arc<dyn IdentityStore>, members: Arc<dyn MemberStore>) -> Self {
        UserAdminService { identity, members }
    }

    /// A user.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`]; storage.
    pub fn existing(&self, user: UserId) -> Result<User, DomainError> {
        self.identity.user(user)?.ok_or(DomainError::UserNotFound)
    }

    /// Up to `limit` users (1..=[`MAX_USERS_PER_PAGE`]) whose e-mail contains `email`, after
    /// `after`, oldest first.
    ///
    /// # Errors
    /// Storage.
    pub fn list_users(
        &self,
        email: Option<&str>,
        after: Option<(OffsetDateTime, UserId)>,
        limit: u32,
    ) -> Result<Vec<User>, DomainError> {
        Ok(self
            .members
            .users_page(email, after, limit.clamp(1, MAX_USERS_PER_PAGE))?)
    }

    /// Disables (`disabled`) or enables a user: every key of theirs is refused (401) or
    /// accepted again at once, on every replica. Doing what is already done writes nothing.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`]; storage.
    pub fn set_disabled(&self, user: UserId, disabled: bool) -> Result<User, DomainError> {
        let mut u = self.existing(user)?;
        if u.disabled_at.is_some() == disabled {
            return Ok(u);
        }
        let (action, at) = if disabled {
            (AuditAction::UserDisabled, Some(now_micros()))
        } else {
            (AuditAction::UserEnabled, None)
        };
        let audit = operator_entry(None, action, &u, json!({}));
        if !self.members.set_user_disabled(user, at, &audit)? {
            return Err(DomainError::UserNotFound);
        }
        u.disabled_at = at;
        Ok(u)
    }

    /// Removes a user with all they own (memberships, keys, settings, secrets,
    /// conversations, sandbox records); refused while they are an organization's only owner.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`]; [`DomainError::Conflict`] naming the organizations
    /// they are the only owner of; storage.
    pub fn remove_user(&self, user: UserId) -> Result<User, DomainError> {
        let u = self.existing(user)?;
        let audit = operator_entry(None, AuditAction::UserRemoved, &u, json!({}));
        match self.members.remove_user(user, &audit)? {
            UserRemoval::Removed => Ok(u),
            UserRemoval::NotFound => Err(DomainError::UserNotFound),
            UserRemoval::LastOwnerOf(orgs) => Err(DomainError::Conflict(format!(
                "{} is the only owner of organization(s) {}: make another member owner first",
                u.email,
                orgs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Removes a member from an organization (their keys bound to it revoked); refused for
    /// its last owner.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`], [`DomainError::OrgNotFound`], [`DomainError::NotAMember`],
    /// [`DomainError::Conflict`] for the last owner; storage.
    pub fn remove_member(&self, org: OrgId, user: UserId) -> Result<Role, DomainError> {
        let u = self.existing(user)?;
        let role = self
            .identity
            .org_membership(org, user)?
            .ok_or(DomainError::OrgNotFound)?
            .role
            .ok_or(DomainError::NotAMember)?;
        let audit = operator_entry(
            Some(org),
            AuditAction::MemberRemoved,
            &u,
            json!({ "role": role.as_str() }),
        );
        match self.members.remove_member(org, user, role, &audit)? {
            MemberChange::Done => Ok(role),
            MemberChange::LastOwner => Err(DomainError::Conflict(format!(
                "{} is the last owner of organization {org}: make another member owner first",
                u.email
            ))),
            MemberChange::Stale => Err(DomainError::Conflict(
                "the membership changed meanwhile; run the command again".into(),
            )),
        }
    }

    /// Records an operator's change made through another service (a member added, a key
    /// revoked).
    ///
    /// # Errors
    /// Storage.
    pub fn record(
        &self,
        org: Option<OrgId>,
        action: AuditAction,
        target: UserId,
        detail: serde_json::Value,
    ) -> Result<(), DomainError> {
        let u = self.existing(target)?;
        Ok(self
            .members
            .append_audit(&operator_entry(org, action, &u, detail))?)
    }

    /// Up to `limit` audit entries of `org` (`None`: the operator's changes to users as a
    /// whole), newest first, before `before`.
    ///
    /// # Errors
    /// Storage.
    pub fn audit(
        &self,
        org: Option<OrgId>,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, DomainError> {
        Ok(self
            .members
            .audit_page(org, before, limit.clamp(1, MAX_USERS_PER_PAGE))?)
    }
}
