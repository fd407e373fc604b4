//! The operator commands (CLI; no authentication: they need database access).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::error::{DomainError, StorageError};
use crate::identity::api_keys::{ApiKeyRecord, IssuedKey};
use crate::identity::audit::AuditAction;
use crate::identity::{Org, User};
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::Role;
use crate::ports::IdentityStore;
use crate::services::membership::existing_member;
use crate::services::{ApiKeyService, UserAdminService};
use crate::time_input::now_micros;
use crate::validation::{self, loc};

/// What `bootstrap` created or found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bootstrapped {
    /// The organization.
    pub org_id: OrgId,
    /// Its owner.
    pub user_id: UserId,
    /// A new API key for the owner, bound to nothing (usable in every organization of theirs).
    pub api_key: String,
}

/// Organizations, users, members and keys, as an operator manages them.
#[derive(Clone)]
pub struct OperatorService {
    identity: Arc<dyn IdentityStore>,
    api_keys: ApiKeyService,
    audit: UserAdminService,
}

impl OperatorService {
    /// The service over the identity store, issuing keys through `api_keys` and writing the
    /// audit log (issue 34) through `audit`.
    pub fn new(
        identity: Arc<dyn IdentityStore>,
        api_keys: ApiKeyService,
        audit: UserAdminService,
    ) -> Self {
        OperatorService {
            identity,
            api_keys,
            audit,
        }
    }

    /// Creates, if absent, the organization `org_name` and the user `email` as its owner (and
    /// makes it the user's current organization), then issues a new unbound key for the user.
    ///
    /// # Errors
    /// A storage failure.
    pub fn bootstrap(&self, org_name: &str, email: &str) -> Result<Bootstrapped, DomainError> {
        let now = now_micros();
        let org = match self.identity.org_by_name(org_name)? {
            Some(o) => o,
            None => {
                let o = Org {
                    id: OrgId::new_random(),
                    name: org_name.to_owned(),
                    created_at: now,
                };
                self.identity.create_org(&o)?;
                o
            }
        };
        let user = match self.identity.user_by_email(email)? {
            Some(u) => u,
            None => self.create_user(email, None)?,
        };
        self.identity
            .put_member(org.id, user.id, Role::Owner, now)?;
        if user.current_org_id.is_none() {
            self.identity.set_current_org(user.id, org.id)?;
        }
        let key = self
            .api_keys
            .issue_key(user.id, None, "bootstrap".to_owned(), None)?;
        Ok(Bootstrapped {
            org_id: org.id,
            user_id: user.id,
            api_key: key.secret,
        })
    }

    /// Whether the database has no organization yet (first start).
    ///
    /// # Errors
    /// A storage failure.
    pub fn is_empty(&self) -> Result<bool, DomainError> {
        Ok(self.identity.count_orgs()? == 0)
    }

    /// Creates a user.
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] for a taken e-mail; [`DomainError::Invalid`] for an
    /// e-mail without `@`.
    pub fn create_user(&self, email: &str, name: Option<String>) -> Result<User, DomainError> {
        let email = email.trim();
        if !email.contains('@') || email.len() > 320 {
            return Err(validation::value_error(
                loc(["email"]),
                "an e-mail address needs an '@'",
                &Value::String(email.to_owned()),
            )
            .into());
        }
        let user = User {
            id: UserId::new_random(),
            email: email.to_owned(),
            name,
            current_org_id: None,
            created_at: now_micros(),
            disabled_at: None,
        };
        match self.identity.create_user(&user) {
            Ok(()) => Ok(user),
            Err(StorageError::UniqueViolation(_)) => Err(DomainError::AlreadyExists(format!(
                "a user with e-mail {email} exists"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Adds a member (or changes a member's role); the organization becomes the user's current
    /// one if they had none.
    ///
    /// # Errors
    /// [`DomainError::OrgNotFound`] or [`DomainError::UserNotFound`].
    pub fn add_member(&self, org: OrgId, user: UserId, role: Role) -> Result<(), DomainError> {
        let u = self.identity.user(user)?.ok_or(DomainError::UserNotFound)?;
        self.identity
            .org_membership(org, user)?
            .ok_or(DomainError::OrgNotFound)?;
        let before = self
            .identity
            .org_membership(org, user)?
            .and_then(|m| m.role);
        self.identity.put_member(org, user, role, now_micros())?;
        if u.current_org_id.is_none() {
            self.identity.set_current_org(user, org)?;
        }
        match before {
            None => self.audit.record(
                Some(org),
                AuditAction::MemberAdded,
                user,
                json!({ "role": role.as_str() }),
            ),
            Some(from) if from != role => self.audit.record(
                Some(org),
                AuditAction::MemberRoleChanged,
                user,
                json!({ "from": from.as_str(), "to": role.as_str() }),
            ),
            Some(_) => Ok(()),
        }
    }

    /// Issues a key for a user, bound to `org` when given (the user must be a member).
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`], [`DomainError::OrgNotFound`], [`DomainError::NotAMember`],
    /// [`DomainError::Invalid`] for a past expiry.
    pub fn operator_create_key(
        &self,
        user: UserId,
        org: Option<OrgId>,
        name: String,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<IssuedKey, DomainError> {
        match org {
            Some(o) => {
                existing_member(&*self.identity, o, user)?;
            }
            None => {
                self.identity.user(user)?.ok_or(DomainError::UserNotFound)?;
            }
        }
        self.api_keys.issue_key(user, org, name, expires_at)
    }

    /// A user's keys (operator view).
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`].
    pub fn operator_list_keys(&self, user: UserId) -> Result<Vec<ApiKeyRecord>, DomainError> {
        self.identity.user(user)?.ok_or(DomainError::UserNotFound)?;
        Ok(self.identity.api_keys_of(user)?)
    }

    /// Revokes any key (operator); a key not revoked before is written to the audit log.
    ///
    /// # Errors
    /// [`DomainError::ApiKeyNotFound`].
    pub fn operator_revoke_key(&self, id: ApiKeyId) -> Result<(), DomainError> {
        let key = self
            .identity
            .api_key(id)?
            .ok_or(DomainError::ApiKeyNotFound)?;
        if !self.identity.revoke_api_key(id, now_micros())? {
            return Err(DomainError::ApiKeyNotFound);
        }
        if key.revoked_at.is_some() {
            return Ok(());
        }
        self.audit.record(
            key.org_id,
            AuditAction::ApiKeyRevoked,
            key.user_id,
            json!({ "key_id": id, "name": key.name }),
        )
    }
}
