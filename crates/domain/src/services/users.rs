//! Users as they see themselves (`GET /api/v1/users/me`).

use std::sync::Arc;

use serde::Serialize;

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::ports::IdentityStore;

/// `GET /api/v1/users/me`: the user, the effective organization, the role and its permissions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeView {
    /// User id.
    pub user_id: UserId,
    /// E-mail.
    pub email: String,
    /// Display name.
    pub name: Option<String>,
    /// Effective organization.
    pub org_id: OrgId,
    /// Its name.
    pub org_name: String,
    /// The caller's role there.
    pub role: String,
    /// The role's permissions, sorted.
    pub permissions: Vec<String>,
    /// The key used for this request.
    pub api_key_id: ApiKeyId,
    /// The organization that key is bound to, or `null`.
    pub api_key_org_id: Option<OrgId>,
}

/// One organization of the caller (issue 21: `GET /api/organizations`).
#[derive(Debug, Clone, PartialEq)]
pub struct MyOrg {
    /// Organization id.
    pub id: OrgId,
    /// Its name.
    pub name: String,
    /// The caller's role there.
    pub role: String,
    /// Creation time.
    pub created_at: time::OffsetDateTime,
}

/// The caller in one organization (issue 21: `GET /api/organizations/{org_id}/me`).
#[derive(Debug, Clone, PartialEq)]
pub struct OrgMe {
    /// The organization.
    pub org_id: OrgId,
    /// The caller.
    pub user_id: UserId,
    /// Their e-mail.
    pub email: String,
    /// Their role there.
    pub role: String,
    /// The role's permissions, sorted.
    pub permissions: Vec<String>,
}

/// One member of an organization as another member reads them (OpenHands'
/// `OrgMemberResponse`).
#[derive(Debug, Clone, PartialEq)]
pub struct OrgMember {
    /// The member.
    pub user_id: UserId,
    /// Their e-mail.
    pub email: String,
    /// Their role there.
    pub role: crate::Role,
    /// Whether the user is disabled (issue 34; OpenHands' `status`).
    pub disabled: bool,
}

/// The caller's own view of themselves.
#[derive(Clone)]
pub struct UserService {
    identity: Arc<dyn IdentityStore>,
}

impl UserService {
    /// The service over the identity store.
    pub fn new(identity: Arc<dyn IdentityStore>) -> Self {
        UserService { identity }
    }

    /// The caller, the effective organization and the caller's permissions there.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`] if the user vanished, or a storage failure.
    pub fn me(&self, ctx: &OrgContext) -> Result<MeView, DomainError> {
        let user = self
            .identity
            .user(ctx.principal.user_id)?
            .ok_or(DomainError::UserNotFound)?;
        Ok(MeView {
            user_id: user.id,
            email: user.email,
            name: user.name,
            org_id: ctx.org.id,
            org_name: ctx.org.name.clone(),
            role: ctx.role.as_str().to_owned(),
            permissions: ctx
                .role
                .permissions()
                .into_iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
            api_key_id: ctx.principal.key_id,
            api_key_org_id: ctx.principal.bound_org,
        })
    }

    /// Every organization the caller is a member of, by name, and the caller's current one
    /// (the key's bound organization for a bound key: the only one it acts in).
    ///
    /// # Errors
    /// Storage.
    pub fn organizations(&self, ctx: &OrgContext) -> Result<(Vec<MyOrg>, OrgId), DomainError> {
        let orgs = self
            .identity
            .memberships(ctx.principal.user_id)?
            .into_iter()
            .filter(|m| ctx.principal.bound_org.is_none_or(|b| b == m.org.id))
            .filter_map(|m| {
                Some(MyOrg {
                    id: m.org.id,
                    name: m.org.name,
                    role: m.role?.as_str().to_owned(),
                    created_at: m.org.created_at,
                })
            })
            .collect();
        Ok((orgs, ctx.org.id))
    }

    /// The caller's membership in `org`: 404 when not a member (or no such organization),
    /// 403 when the key is bound to another organization.
    ///
    /// # Errors
    /// [`DomainError::KeyNotAuthorizedForOrg`], [`DomainError::OrgNotFound`], storage.
    pub fn org_me(&self, ctx: &OrgContext, org: OrgId) -> Result<OrgMe, DomainError> {
        if ctx.principal.bound_org.is_some_and(|b| b != org) {
            return Err(DomainError::KeyNotAuthorizedForOrg);
        }
        let user = self
            .identity
            .user(ctx.principal.user_id)?
            .ok_or(DomainError::UserNotFound)?;
        let role = self
            .identity
            .org_membership(org, user.id)?
            .and_then(|m| m.role)
            .ok_or(DomainError::OrgNotFound)?;
        Ok(OrgMe {
            org_id: org,
            user_id: user.id,
            email: user.email,
            role: role.as_str().to_owned(),
            permissions: role
                .permissions()
                .into_iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
        })
    }

    /// `GET /api/organizations/{org_id}/members/{user_id}`: one member of `org`, read by any
    /// member (OpenHands: the members list's permission, `view_org_settings`).
    ///
    /// # Errors
    /// 403 [`DomainError::KeyNotAuthorizedForOrg`] for a key bound elsewhere; 404
    /// [`DomainError::OrgNotFound`] when the caller is not a member; 404
    /// [`DomainError::NotFound`] when `user` is not (or no user is that id).
    pub fn org_member(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        user: UserId,
    ) -> Result<OrgMember, DomainError> {
        if ctx.principal.bound_org.is_some_and(|b| b != org) {
            return Err(DomainError::KeyNotAuthorizedForOrg);
        }
        let mine = self
            .identity
            .org_membership(org, ctx.principal.user_id)?
            .and_then(|m| m.role)
            .ok_or(DomainError::OrgNotFound)?;
        if !mine.grants(crate::Permission::ViewOrgSettings) {
            return Err(DomainError::PermissionDenied(
                crate::Permission::ViewOrgSettings,
            ));
        }
        let gone = || DomainError::NotFound("Member not found".into());
        let role = self
            .identity
            .org_membership(org, user)?
            .and_then(|m| m.role)
            .ok_or_else(gone)?;
        let who = self.identity.user(user)?.ok_or_else(gone)?;
        Ok(OrgMember {
            user_id: who.id,
            email: who.email,
            role,
            disabled: who.disabled_at.is_some(),
        })
    }
}
