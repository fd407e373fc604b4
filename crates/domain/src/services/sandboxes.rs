//! Sandboxes: registration and session-key authentication (API.md, Event ingestion).

use std::sync::Arc;

use crate::error::DomainError;
use crate::identity::session_keys::{SessionKey, SessionKeyHash};
use crate::ids::{OrgId, SandboxId, UserId};
use crate::ports::{IdentityStore, SandboxStore};
use crate::sandboxes::{RegisteredSandbox, Sandbox};
use crate::services::existing_member;
use crate::time_input::now_micros;

/// Registers sandboxes and authenticates their agent servers.
#[derive(Clone)]
pub struct SandboxService {
    identity: Arc<dyn IdentityStore>,
    sandboxes: Arc<dyn SandboxStore>,
}

impl SandboxService {
    /// The service over the identity and sandbox stores.
    pub fn new(identity: Arc<dyn IdentityStore>, sandboxes: Arc<dyn SandboxStore>) -> Self {
        SandboxService {
            identity,
            sandboxes,
        }
    }

    /// Registers an agent server run elsewhere as a sandbox of `org` owned by `user` (a
    /// member); only the session key's SHA-256 is stored.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`], [`DomainError::OrgNotFound`], [`DomainError::NotAMember`].
    pub fn register_sandbox(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<RegisteredSandbox, DomainError> {
        existing_member(&*self.identity, org, user)?;
        let key = SessionKey::generate();
        let sandbox = Sandbox {
            id: SandboxId::new_random(),
            org_id: org,
            owner_id: user,
            created_at: now_micros(),
        };
        self.sandboxes.create_sandbox(&sandbox, &key.hash())?;
        Ok(RegisteredSandbox {
            sandbox_id: sandbox.id,
            session_api_key: key.expose().to_owned(),
        })
    }

    /// The sandbox behind a webhook's `X-Session-API-Key`.
    ///
    /// # Errors
    /// [`DomainError::SessionKeyRequired`] (absent or empty), [`DomainError::InvalidSessionKey`].
    pub fn authenticate_sandbox(&self, key: Option<&str>) -> Result<Sandbox, DomainError> {
        let key = key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or(DomainError::SessionKeyRequired)?;
        self.sandboxes
            .sandbox_by_key_hash(&SessionKeyHash::of(key))?
            .ok_or(DomainError::InvalidSessionKey)
    }
}
