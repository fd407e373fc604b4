//! Authentication (API.md, Identity): the API key, then the organization the request acts on.

use std::sync::Arc;

use crate::error::DomainError;
use crate::identity::api_keys::{KeyRejection, LAST_USED_DEBOUNCE, hash_api_key};
use crate::identity::{OrgContext, Principal, require_member};
use crate::ids::OrgId;
use crate::ports::{IdentityStore, OrgMembership};
use crate::time_input::now_micros;

/// Checks API keys and resolves the effective organization.
#[derive(Clone)]
pub struct AuthService {
    identity: Arc<dyn IdentityStore>,
}

/// The organization a request acts on (API.md, Identity), before checking it exists.
fn effective_org_id(principal: &Principal, requested: Option<OrgId>) -> Result<OrgId, DomainError> {
    match (principal.bound_org, requested) {
        (Some(bound), Some(req)) if bound != req => Err(DomainError::KeyNotAuthorizedForOrg),
        (Some(bound), _) => Ok(bound),
        (None, Some(req)) => Ok(req),
        (None, None) => principal.current_org.ok_or(DomainError::OrgNotFound),
    }
}

/// The context from a membership lookup: a missing organization is 404 (or, when named by
/// `X-Org-Id`, the same 403 as a non-member, so ids do not leak); no role is 403.
fn context_of(
    principal: Principal,
    requested: Option<OrgId>,
    membership: Option<OrgMembership>,
) -> Result<OrgContext, DomainError> {
    if membership.is_none() && requested.is_some() && principal.bound_org.is_none() {
        return Err(DomainError::NotAMember);
    }
    let member = require_member(membership)?;
    Ok(OrgContext {
        principal,
        org: member.org,
        role: member.role,
    })
}

impl AuthService {
    /// The service over the identity store.
    pub fn new(identity: Arc<dyn IdentityStore>) -> Self {
        AuthService { identity }
    }

    /// Checks a presented API key (API.md, Identity): unknown, expired or revoked keys are
    /// refused; a successful use is written to `last_used_at` at most once a minute.
    ///
    /// # Errors
    /// [`DomainError::InvalidApiKey`], [`DomainError::ApiKeyExpired`],
    /// [`DomainError::ApiKeyRevoked`], [`DomainError::UserDisabled`], or a storage failure.
    pub fn authenticate(&self, presented: &str) -> Result<Principal, DomainError> {
        self.check_key(presented, None).map(|(p, _)| p)
    }

    fn check_key(
        &self,
        presented: &str,
        requested: Option<OrgId>,
    ) -> Result<(Principal, Option<OrgMembership>), DomainError> {
        let hash = hash_api_key(presented);
        let found = self
            .identity
            .api_key_by_hash(&hash, requested)?
            .ok_or(DomainError::InvalidApiKey)?;
        let now = now_micros();
        found.key.check_usable(now).map_err(|r| match r {
            KeyRejection::Expired => DomainError::ApiKeyExpired,
            KeyRejection::Revoked => DomainError::ApiKeyRevoked,
        })?;
        if found.user_disabled {
            return Err(DomainError::UserDisabled);
        }
        // Recording the use is best effort: a database that cannot take writes (disk full)
        // must not turn a read into a 503 (API.md, Reliability and security).
        if found.key.needs_touch(now)
            && let Err(e) = self
                .identity
                .touch_api_key(found.key.id, now, now - LAST_USED_DEBOUNCE)
        {
            tracing::warn!(error = %e, "could not record an API key's last use");
        }
        let principal = Principal {
            user_id: found.key.user_id,
            key_id: found.key.id,
            bound_org: found.key.org_id,
            current_org: found.user_current_org,
        };
        Ok((principal, found.effective))
    }

    /// [`AuthService::authenticate`], then the organization the request acts on (API.md,
    /// Identity): the key's bound organization (a different `requested` one is refused); else
    /// `requested` (the `X-Org-Id` header); else the user's current organization, where the
    /// caller must be a member. The key and the effective organization are read in one query
    /// (the hot path of every request).
    ///
    /// # Errors
    /// As [`AuthService::authenticate`]; [`DomainError::KeyNotAuthorizedForOrg`] (403),
    /// [`DomainError::OrgNotFound`] (404), [`DomainError::NotAMember`] (403).
    pub fn authenticate_in(
        &self,
        presented: &str,
        requested: Option<OrgId>,
    ) -> Result<OrgContext, DomainError> {
        let (principal, effective) = self.check_key(presented, requested)?;
        let org_id = effective_org_id(&principal, requested)?;
        let membership = match effective {
            Some(m) if m.org.id == org_id => Some(m),
            _ => self.identity.org_membership(org_id, principal.user_id)?,
        };
        context_of(principal, requested, membership)
    }
}
