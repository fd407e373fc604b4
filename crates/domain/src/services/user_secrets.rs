//! Each user's custom secrets and git provider tokens (issue 21; OpenHands' `/api/v1/secrets`
//! and the sandbox-scoped `/api/v1/sandboxes/{id}/settings/secrets`). Values are sealed before
//! they are stored; the user sees names and descriptions only; a sandbox, with its session
//! key, reads its owner's values one by one, each read logged without the value.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::sealing::Sealer;
use crate::ids::{OrgId, UserId};
use crate::ports::{SandboxStore, SecretUpdate, UserSecretStore};
use crate::sandboxes::Sandbox;
use crate::sandboxes::runtime::SandboxStatus;
use crate::time_input::now_micros;
use crate::user_secrets::{
    NewSecret, ProviderTokenInput, SecretCursor, SecretMeta, StoredProviderToken, StoredSecret,
    provider_secret_name,
};
use crate::user_settings::Binding;

/// The most custom secrets a user keeps in one organization; one more is a 409.
pub const MAX_SECRETS_PER_USER: usize = 500;

/// Users' custom secrets and provider tokens.
#[derive(Clone)]
pub struct UserSecretService {
    secrets: Arc<dyn UserSecretStore>,
    sandboxes: Arc<dyn SandboxStore>,
    sealer: Option<Sealer>,
}

/// A page of `GET /api/v1/secrets/search`.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretPage {
    /// Names and descriptions, by name.
    pub items: Vec<SecretMeta>,
    /// The cursor of the next page, when there is one.
    pub next_page_id: Option<String>,
}

impl UserSecretService {
    /// The service over its stores, without a sealer.
    pub fn new(secrets: Arc<dyn UserSecretStore>, sandboxes: Arc<dyn SandboxStore>) -> Self {
        UserSecretService {
            secrets,
            sandboxes,
            sealer: None,
        }
    }

    /// The same service sealing with the installation key.
    #[must_use]
    pub fn with_sealer(mut self, sealer: Sealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    fn sealer(&self) -> Result<&Sealer, DomainError> {
        self.sealer.as_ref().ok_or(DomainError::SecretsUnavailable)
    }

    fn open(
        &self,
        sealed: &str,
        binding: Binding,
        org: OrgId,
        user: UserId,
    ) -> Result<String, DomainError> {
        crate::user_settings::open_sealed(self.sealer()?, sealed, binding, org, user)
    }

    /// `GET /api/v1/secrets/search`: the caller's secrets whose name contains `name_contains`
    /// (case-sensitive), by name, after the cursor, at most `limit`.
    ///
    /// # Errors
    /// Storage.
    pub fn search(
        &self,
        ctx: &OrgContext,
        name_contains: Option<&str>,
        after: Option<SecretCursor>,
        limit: usize,
    ) -> Result<SecretPage, DomainError> {
        let all = self
            .secrets
            .secret_metas(ctx.org.id, ctx.principal.user_id)?;
        let mut items: Vec<SecretMeta> = all
            .into_iter()
            .filter(|s| name_contains.is_none_or(|n| s.name.contains(n)))
            .filter(|s| {
                after
                    .as_ref()
                    .is_none_or(|c| s.name.as_str() > c.0.as_str())
            })
            .take(limit + 1)
            .collect();
        let next_page_id = (items.len() > limit).then(|| {
            items.truncate(limit);
            SecretCursor(items[limit - 1].name.clone()).encode()
        });
        Ok(SecretPage {
            items,
            next_page_id,
        })
    }

    /// `POST /api/v1/secrets`: creates the secret, or replaces the value and description of
    /// the caller's secret of that name (OpenHands 1.11.0).
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] (409) past [`MAX_SECRETS_PER_USER`];
    /// [`DomainError::SecretsUnavailable`]; storage.
    pub fn create(&self, ctx: &OrgContext, secret: NewSecret) -> Result<(), DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let stored = StoredSecret {
            value_sealed: self
                .sealer()?
                .seal(&secret.value, &Binding::CustomSecret.of(org, user)),
            name: secret.name,
            description: secret.description,
        };
        if !self
            .secrets
            .put_user_secret(org, user, &stored, MAX_SECRETS_PER_USER, now_micros())?
        {
            return Err(DomainError::AlreadyExists(format!(
                "Secret limit reached: at most {MAX_SECRETS_PER_USER} secrets"
            )));
        }
        Ok(())
    }

    /// `PUT /api/v1/secrets/{name}`: a new name and description, the value kept.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown name; [`DomainError::BadRequest`] (400, as
    /// OpenHands) when another secret has the new name; storage.
    pub fn update(
        &self,
        ctx: &OrgContext,
        name: &str,
        change: &SecretMeta,
    ) -> Result<(), DomainError> {
        match self.secrets.update_user_secret(
            ctx.org.id,
            ctx.principal.user_id,
            name,
            change,
            now_micros(),
        )? {
            SecretUpdate::Updated => Ok(()),
            SecretUpdate::NotFound => Err(secret_not_found(name)),
            SecretUpdate::NameTaken => Err(DomainError::BadRequest(format!(
                "Secret {} already exists",
                change.name
            ))),
        }
    }

    /// `DELETE /api/v1/secrets/{name}`.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown name; storage.
    pub fn delete(&self, ctx: &OrgContext, name: &str) -> Result<(), DomainError> {
        if self
            .secrets
            .delete_user_secret(ctx.org.id, ctx.principal.user_id, name)?
        {
            Ok(())
        } else {
            Err(secret_not_found(name))
        }
    }

    /// `POST /api/v1/secrets/git-providers`: the set sent replaces the set stored; an entry
    /// without a token keeps the stored token of its provider.
    ///
    /// # Errors
    /// [`DomainError::SecretsUnavailable`]; storage.
    pub fn store_provider_tokens(
        &self,
        ctx: &OrgContext,
        tokens: Vec<ProviderTokenInput>,
    ) -> Result<(), DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let mut stored = Vec::with_capacity(tokens.len());
        for t in tokens {
            let token_sealed = match &t.token {
                Some(tok) => Some(
                    self.sealer()?
                        .seal(tok, &Binding::ProviderToken.of(org, user)),
                ),
                None => None,
            };
            stored.push(StoredProviderToken {
                provider: t.provider,
                host: t.host,
                token_sealed,
            });
        }
        self.secrets
            .replace_provider_tokens(org, user, &stored, now_micros())?;
        Ok(())
    }

    /// `DELETE /api/v1/secrets/git-providers`: every provider token of the caller.
    ///
    /// # Errors
    /// Storage.
    pub fn delete_provider_tokens(&self, ctx: &OrgContext) -> Result<(), DomainError> {
        self.secrets
            .delete_provider_tokens(ctx.org.id, ctx.principal.user_id)?;
        Ok(())
    }

    /// The sandbox of a session key, checked for a sandbox route: the path's id must be its
    /// own (403 `Session API key does not match sandbox`) and it must be running (401
    /// `Sandbox is not running`), as OpenHands answers.
    fn sandbox_route(&self, sandbox: &Sandbox, path_id: &str) -> Result<(), DomainError> {
        let same = crate::ids::parse_uuid(path_id).is_some_and(|u| u == sandbox.id.0);
        if !same {
            return Err(DomainError::SessionKeyMismatch);
        }
        let record = self
            .sandboxes
            .sandbox(sandbox.id)?
            .ok_or(DomainError::InvalidSessionKey)?;
        if record.is_managed() && record.status != SandboxStatus::Running {
            return Err(DomainError::SandboxNotRunning);
        }
        Ok(())
    }

    /// For `GET /api/v1/users/me?expose_secrets=true` (OpenHands' rule): the session key's
    /// sandbox must be the caller's own, in the effective organization (else 403
    /// `Session API key does not match sandbox`), and running (else 401).
    ///
    /// # Errors
    /// Those above; storage.
    pub fn check_own_sandbox(
        &self,
        ctx: &OrgContext,
        sandbox: &Sandbox,
    ) -> Result<(), DomainError> {
        if sandbox.owner_id != ctx.principal.user_id || sandbox.org_id != ctx.org.id {
            return Err(DomainError::SessionKeyMismatch);
        }
        self.sandbox_route(sandbox, &sandbox.id.to_string())
    }

    /// `GET /api/v1/sandboxes/{id}/settings/secrets`: the names (and descriptions) of the
    /// sandbox owner's custom secrets and provider tokens (`<provider>_token`).
    ///
    /// # Errors
    /// As the route check above; storage.
    pub fn sandbox_secret_names(
        &self,
        sandbox: &Sandbox,
        path_id: &str,
    ) -> Result<Vec<SecretMeta>, DomainError> {
        self.sandbox_route(sandbox, path_id)?;
        let (org, user) = (sandbox.org_id, sandbox.owner_id);
        let mut out = self.secrets.secret_metas(org, user)?;
        for t in self.secrets.provider_tokens(org, user)? {
            let name = provider_secret_name(&t.provider);
            if t.token_sealed.is_some() && !out.iter().any(|s| s.name == name) {
                out.push(SecretMeta {
                    name,
                    description: Some(format!("{} token", t.provider)),
                });
            }
        }
        tracing::info!(sandbox = %sandbox.id, user = %user, count = out.len(), "a sandbox listed its owner's secrets");
        Ok(out)
    }

    /// `GET /api/v1/sandboxes/{id}/settings/secrets/{name}`: one value of the sandbox owner,
    /// a custom secret first, else a provider token; the read is logged, never the value.
    ///
    /// # Errors
    /// As the route check above; [`DomainError::NotFound`] for an unknown name; storage.
    pub fn sandbox_secret_value(
        &self,
        sandbox: &Sandbox,
        path_id: &str,
        name: &str,
    ) -> Result<String, DomainError> {
        self.sandbox_route(sandbox, path_id)?;
        let (org, user) = (sandbox.org_id, sandbox.owner_id);
        let value = match self.secrets.user_secret(org, user, name)? {
            Some(s) => Some(self.open(&s.value_sealed, Binding::CustomSecret, org, user)?),
            None => self
                .secrets
                .provider_tokens(org, user)?
                .into_iter()
                .find(|t| provider_secret_name(&t.provider) == name)
                .and_then(|t| t.token_sealed)
                .map(|s| self.open(&s, Binding::ProviderToken, org, user))
                .transpose()?,
        };
        tracing::info!(sandbox = %sandbox.id, user = %user, secret = name, found = value.is_some(), "a sandbox read its owner's secret");
        value.ok_or_else(|| secret_not_found(name))
    }

    /// The secrets a conversation of `user` gets (name → value): their provider tokens as
    /// `<provider>_token`, then their custom secrets (which win on a shared name).
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn start_secrets(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Map<String, Value>, DomainError> {
        let mut out = Map::new();
        let tokens = self.secrets.provider_tokens(org, user)?;
        let custom = self.secrets.user_secrets(org, user)?;
        if tokens.is_empty() && custom.is_empty() {
            return Ok(out);
        }
        for t in tokens {
            if let Some(s) = &t.token_sealed {
                let v = self.open(s, Binding::ProviderToken, org, user)?;
                out.insert(provider_secret_name(&t.provider), json!(v));
            }
        }
        for s in custom {
            let v = self.open(&s.value_sealed, Binding::CustomSecret, org, user)?;
            out.insert(s.name, json!(v));
        }
        Ok(out)
    }

    /// The token of `provider` of `user`, opened (`None` when none is stored), and the host
    /// stored with it (`None` for the provider's public host).
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn provider_token(
        &self,
        org: OrgId,
        user: UserId,
        provider: &str,
    ) -> Result<(Option<String>, Option<String>), DomainError> {
        let Some(t) = self
            .secrets
            .provider_tokens(org, user)?
            .into_iter()
            .find(|t| t.provider == provider)
        else {
            return Ok((None, None));
        };
        let token = t
            .token_sealed
            .as_deref()
            .map(|s| self.open(s, Binding::ProviderToken, org, user))
            .transpose()?;
        Ok((token, t.host))
    }
}

fn secret_not_found(name: &str) -> DomainError {
    DomainError::NotFound(format!("Secret with ID {name} not found"))
}
