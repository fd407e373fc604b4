//! Keys minted for a trusted service (issue 31; OpenHands' `/api/service/...`, its
//! `enterprise/server/routes/service.py`): the automation service's dispatcher asks for an API
//! key of the user who owns an automation, in the automation's organization, before each run,
//! authenticated by the shared service key the operator configures
//! (`serve --service-api-key-file`).
//!
//! **Decision:** unlike OpenHands' hidden, never-expiring "system" keys, a minted key is an
//! ordinary API key of the user: bound to the organization, named as the request says,
//! expiring after [`SERVICE_KEY_LIFETIME`], listed by `GET /api/keys` and revocable by
//! `DELETE /api/keys/{id}` like any other. Each call mints a new key (only a key's SHA-256 is
//! stored, so an existing one cannot be answered again).

use std::sync::Arc;

use serde::Deserialize;
use time::Duration;

use crate::error::DomainError;
use crate::identity::api_keys::{ApiKeyHash, IssuedKey, MAX_KEY_NAME_CHARS, hash_api_key};
use crate::ids::{OrgId, UserId};
use crate::ports::IdentityStore;
use crate::services::ApiKeyService;
use crate::time_input::now_micros;

/// How long a minted key lives: a day, longer than an automation run may last (the automation
/// service's runs time out sooner, and it mints a new key for each run and again after a 401).
pub const SERVICE_KEY_LIFETIME: Duration = Duration::hours(24);

/// The service key the operator configured, kept as its SHA-256 and compared in constant time
/// (the comparison of [`ApiKeyHash`]), so neither the key nor where a guess differs leaks.
#[derive(Clone)]
pub struct ServiceKey(ApiKeyHash);

impl ServiceKey {
    /// The key from its text (surrounding white space dropped); `None` for an empty one.
    pub fn new(secret: &str) -> Option<ServiceKey> {
        let secret = secret.trim();
        (!secret.is_empty()).then(|| ServiceKey(hash_api_key(secret)))
    }

    /// Whether `presented` is the key.
    pub fn matches(&self, presented: &str) -> bool {
        hash_api_key(presented) == self.0
    }
}

impl std::fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceKey(..)")
    }
}

/// The service routes' rules: the service key, then the user and the membership, then the key.
#[derive(Clone)]
pub struct ServiceKeyService {
    identity: Arc<dyn IdentityStore>,
    api_keys: ApiKeyService,
    key: Option<ServiceKey>,
}

impl ServiceKeyService {
    /// Over the identity store, issuing through `api_keys`; no service key (every route 503).
    pub fn new(identity: Arc<dyn IdentityStore>, api_keys: ApiKeyService) -> Self {
        ServiceKeyService {
            identity,
            api_keys,
            key: None,
        }
    }

    /// The same, authenticating with `key`.
    #[must_use]
    pub fn with_key(mut self, key: ServiceKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Whether a service key is configured (`GET /api/service/health`).
    pub fn configured(&self) -> bool {
        self.key.is_some()
    }

    /// Checks the presented `X-Service-API-Key` (before any body is read).
    ///
    /// # Errors
    /// [`DomainError::ServiceAuthNotConfigured`] (503) without a configured key;
    /// [`DomainError::ServiceKeyRequired`] (401) without a header (or an empty one);
    /// [`DomainError::InvalidServiceKey`] (401) for another key.
    pub fn check(&self, presented: Option<&str>) -> Result<(), DomainError> {
        let key = self
            .key
            .as_ref()
            .ok_or(DomainError::ServiceAuthNotConfigured)?;
        match presented.filter(|p| !p.is_empty()) {
            None => Err(DomainError::ServiceKeyRequired),
            Some(p) if key.matches(p) => Ok(()),
            Some(_) => {
                tracing::warn!("a service route was called with a wrong service key");
                Err(DomainError::InvalidServiceKey)
            }
        }
    }

    /// The user named by the path (OpenHands takes any string there): 404 `User {id} not
    /// found` for an unknown one or one that is not a UUID; 403 `User {id} is not a member of
    /// org {org}` outside the organization.
    fn member(&self, user: &str, org: OrgId) -> Result<UserId, DomainError> {
        let not_found = || DomainError::NotFound(format!("User {user} not found"));
        let id = uuid::Uuid::parse_str(user)
            .map(UserId)
            .map_err(|_| not_found())?;
        self.identity.user(id)?.ok_or_else(not_found)?;
        let member = self
            .identity
            .org_membership(org, id)?
            .is_some_and(|m| m.role.is_some());
        if !member {
            return Err(DomainError::Forbidden(format!(
                "User {user} is not a member of org {org}"
            )));
        }
        Ok(id)
    }

    /// `POST /api/service/users/{user_id}/orgs/{org_id}/api-keys`: a new key of `user` bound to
    /// `org`, named by the body's `name` (`CreateUserApiKeyRequest`: a string, 1 to
    /// [`MAX_KEY_NAME_CHARS`] characters after trimming), expiring after
    /// [`SERVICE_KEY_LIFETIME`]. Call [`check`](Self::check) first.
    ///
    /// # Errors
    /// 404 `User {id} not found` for an unknown user; 403 outside the organization; storage.
    pub fn mint(
        &self,
        user: &str,
        org: OrgId,
        body: &CreateUserApiKeyRequest,
    ) -> Result<IssuedKey, DomainError> {
        let id = self.member(user, org)?;
        let key = self.api_keys.issue_key(
            id,
            Some(org),
            body.name().to_owned(),
            Some(now_micros() + SERVICE_KEY_LIFETIME),
        )?;
        tracing::info!(user = %id, %org, key = %key.record.id, name = %key.record.name, "a service minted an API key");
        Ok(key)
    }

    /// `DELETE /api/service/users/{user_id}/orgs/{org_id}/api-keys/{key_name}`: revokes every
    /// unrevoked key of `user` bound to `org` named `name`; how many. Call
    /// [`check`](Self::check) first.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] when there is none (OpenHands' 404 text); storage.
    pub fn revoke_named(&self, user: &str, org: OrgId, name: &str) -> Result<usize, DomainError> {
        let not_found = || {
            DomainError::NotFound(format!(
                "API key with name \"{name}\" not found for user {user} in org {org}"
            ))
        };
        let Ok(id) = uuid::Uuid::parse_str(user).map(UserId) else {
            return Err(not_found());
        };
        let now = now_micros();
        let mut revoked = 0;
        for k in self.identity.api_keys_of(id)? {
            if k.org_id == Some(org) && k.name == name && k.revoked_at.is_none() {
                revoked += usize::from(self.identity.revoke_api_key(k.id, now)?);
            }
        }
        if revoked == 0 {
            return Err(not_found());
        }
        tracing::info!(user = %id, %org, name, revoked, "a service revoked API keys");
        Ok(revoked)
    }
}

/// `POST /api/service/users/{user_id}/orgs/{org_id}/api-keys`' body (OpenHands'
/// `CreateUserApiKeyRequest`): other keys are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct CreateUserApiKeyRequest {
    /// The minted key's name: 1 to [`MAX_KEY_NAME_CHARS`] characters, not all white space
    /// ([`KEY_NAME_PATTERN`](crate::identity::api_keys::KEY_NAME_PATTERN)), no NUL; trimmed ([`Self::name`]).
    #[schema(schema_with = key_name_schema)]
    name: String,
}

impl crate::typed_body::RequestBody for CreateUserApiKeyRequest {}

impl CreateUserApiKeyRequest {
    /// The name, trimmed.
    pub fn name(&self) -> &str {
        self.name.trim()
    }
}

/// A key's name ([`KEY_NAME_PATTERN`](crate::identity::api_keys::KEY_NAME_PATTERN), at most [`MAX_KEY_NAME_CHARS`] characters); any
/// failure one `value_error`.
fn key_name_schema() -> utoipa::openapi::schema::Object {
    crate::identity::api_keys::key_name_schema(
        "The minted key's name: ",
        crate::typed_body::fields::value_error_words(&format!(
            "name is required and must have 1 to {MAX_KEY_NAME_CHARS} characters, not all white space, and no NUL (U+0000)"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_service_key_matches_only_itself() {
        assert!(ServiceKey::new("  ").is_none());
        let k = ServiceKey::new(" s3cret\n").unwrap();
        assert!(k.matches("s3cret"));
        assert!(!k.matches("s3cre"));
        assert!(!k.matches("s3cret "));
        assert_eq!(format!("{k:?}"), "ServiceKey(..)");
    }

    #[test]
    fn names() {
        let read = |v| crate::typed_body::parse::<CreateUserApiKeyRequest>(&v);
        assert_eq!(
            read(json!({"name": " automation ", "other": 1}))
                .unwrap()
                .name(),
            "automation"
        );
        for (bad, kind) in [
            (json!({}), "missing"),
            (json!({"name": ""}), "value_error"),
            (json!({"name": "   "}), "value_error"),
            (json!({"name": 3}), "string_type"),
            (json!({"name": "a\u{0}b"}), "value_error"),
            (json!({"name": "x".repeat(101)}), "value_error"),
            (json!([]), "model_type"),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert_eq!(e.len(), 1, "{bad}: {e:?}");
            assert_eq!(e[0].error_type.as_str(), kind, "{bad}");
        }
        assert!(read(json!({"name": "x".repeat(100)})).is_ok());
    }
}
