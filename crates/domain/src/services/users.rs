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
}
