//! The caller's API keys (API.md, Identity): create, list, revoke.

use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::api_keys::{ApiKeyRecord, IssuedKey, generate_api_key};
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::Permission;
use crate::ports::IdentityStore;
use crate::time_input::{format_rfc3339_micros, now_micros};
use crate::validation::{self, loc};

/// The most live API keys (not revoked, not expired) a member may hold by default
/// ([`ApiKeyService::with_max_per_member`], issue 33).
pub const DEFAULT_MAX_API_KEYS_PER_MEMBER: usize = 100;

/// Issues, lists and revokes API keys.
#[derive(Clone)]
pub struct ApiKeyService {
    identity: Arc<dyn IdentityStore>,
    max_per_member: usize,
}

impl ApiKeyService {
    /// The service over the identity store.
    pub fn new(identity: Arc<dyn IdentityStore>) -> Self {
        ApiKeyService {
            identity,
            max_per_member: DEFAULT_MAX_API_KEYS_PER_MEMBER,
        }
    }

    /// The same service, letting a member hold at most `max` live keys through
    /// [`ApiKeyService::create_api_key`] (`--max-api-keys-per-member`).
    #[must_use]
    pub fn with_max_per_member(mut self, max: usize) -> Self {
        self.max_per_member = max;
        self
    }

    /// Creates a key for the caller, bound to the effective organization
    /// (`manage_api_keys`). `expires_at` must be in the future. A caller who already holds
    /// the most live keys allowed (not revoked, not expired, in any organization; issue 33:
    /// minting keys must not multiply what a member may hold) gets none.
    ///
    /// # Errors
    /// 403 without the permission; [`DomainError::Invalid`] for a past expiry;
    /// [`DomainError::Conflict`] (409) at the limit.
    pub fn create_api_key(
        &self,
        ctx: &OrgContext,
        name: String,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<IssuedKey, DomainError> {
        ctx.require(Permission::ManageApiKeys)?;
        self.issue_within_limit(ctx.principal.user_id, Some(ctx.org.id), name, expires_at)
    }

    /// [`ApiKeyService::issue_key`] unless `user_id` holds the most live keys allowed already
    /// (the limit of [`ApiKeyService::create_api_key`]; issue 34: keys made on the account
    /// page and by `openhands login` count too).
    ///
    /// # Errors
    /// [`DomainError::Conflict`] (409) at the limit; as [`ApiKeyService::issue_key`].
    pub(crate) fn issue_within_limit(
        &self,
        user_id: UserId,
        org_id: Option<OrgId>,
        name: String,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<IssuedKey, DomainError> {
        let now = now_micros();
        let live = self
            .identity
            .api_keys_of(user_id)?
            .iter()
            .filter(|k| k.revoked_at.is_none() && k.expires_at.is_none_or(|e| e > now))
            .count();
        if live >= self.max_per_member {
            return Err(DomainError::Conflict(format!(
                "You hold {live} API keys, the most a member may hold ({}); revoke one to create another",
                self.max_per_member
            )));
        }
        self.issue_key(user_id, org_id, name, expires_at)
    }

    /// Issues a key for `user_id`, bound to `org_id` when given; `expires_at` must be in the
    /// future. Membership is the caller's to check.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] for a past expiry, or a storage failure.
    pub(crate) fn issue_key(
        &self,
        user_id: UserId,
        org_id: Option<OrgId>,
        name: String,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<IssuedKey, DomainError> {
        let now = now_micros();
        if let Some(e) = expires_at
            && e <= now
        {
            // Every 422 entry carries its input (API.md, Conventions).
            return Err(validation::value_error(
                loc(["body", "expires_at"]),
                "Expiration date cannot be in the past",
                &Value::String(format_rfc3339_micros(e)),
            )
            .into());
        }
        let new = generate_api_key();
        let record = ApiKeyRecord {
            id: ApiKeyId::new_random(),
            user_id,
            org_id,
            name,
            display_prefix: new.display_prefix,
            created_at: now,
            last_used_at: None,
            expires_at,
            revoked_at: None,
        };
        self.identity.insert_api_key(&record, &new.hash)?;
        Ok(IssuedKey {
            record,
            secret: new.secret,
        })
    }

    /// The caller's keys usable in the effective organization (bound to it, or unbound),
    /// revoked ones included, newest first (`manage_api_keys`).
    ///
    /// # Errors
    /// 403 without the permission.
    pub fn list_api_keys(&self, ctx: &OrgContext) -> Result<Vec<ApiKeyRecord>, DomainError> {
        ctx.require(Permission::ManageApiKeys)?;
        let mut keys = self.identity.api_keys_of(ctx.principal.user_id)?;
        keys.retain(|k| k.org_id.is_none() || k.org_id == Some(ctx.org.id));
        Ok(keys)
    }

    /// Revokes one of the caller's keys (`manage_api_keys`). Another user's key, or a key
    /// bound to another organization, is "not found".
    ///
    /// # Errors
    /// 403 without the permission; [`DomainError::ApiKeyNotFound`].
    pub fn revoke_api_key(
        &self,
        ctx: &OrgContext,
        id: ApiKeyId,
    ) -> Result<ApiKeyRecord, DomainError> {
        ctx.require(Permission::ManageApiKeys)?;
        let key = self
            .identity
            .api_key(id)?
            .ok_or(DomainError::ApiKeyNotFound)?;
        if key.user_id != ctx.principal.user_id || key.org_id.is_some_and(|o| o != ctx.org.id) {
            return Err(DomainError::ApiKeyNotFound);
        }
        self.identity.revoke_api_key(id, now_micros())?;
        self.identity
            .api_key(id)?
            .ok_or(DomainError::ApiKeyNotFound)
    }

    /// The key of this request (issue 21: `GET /api/keys/current`; no permission needed: a
    /// key may always describe itself).
    ///
    /// # Errors
    /// [`DomainError::ApiKeyNotFound`] if it vanished; storage.
    pub fn current_key(&self, ctx: &OrgContext) -> Result<ApiKeyRecord, DomainError> {
        self.identity
            .api_key(ctx.principal.key_id)?
            .ok_or(DomainError::ApiKeyNotFound)
    }
}
