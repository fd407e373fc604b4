//! The services: identity (authentication, effective organization, permissions), API keys,
//! organization app settings and the operator commands. Every method blocks on storage.

use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;

use crate::api_keys::{
    ApiKeyRecord, KeyRejection, LAST_USED_DEBOUNCE, generate_api_key, hash_api_key,
};
use crate::error::{DomainError, StorageError};
use crate::ids::{ApiKeyId, OrgId, UserId};
use crate::permissions::{Permission, Role};
use crate::ports::{Org, Store, User};
use crate::settings::{OrgAppSettings, SettingsUpdate, duplicate_marketplace_names};
use crate::time_input::{format_rfc3339_micros, now_micros};

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

/// An API key as shown to its owner (never the secret, except once at creation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiKeyView {
    /// Key id.
    pub id: ApiKeyId,
    /// Name.
    pub name: String,
    /// The first characters of the key, to recognize it.
    pub prefix: String,
    /// Bound organization, or `null` for an unbound key.
    pub org_id: Option<OrgId>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, or `null`.
    pub last_used_at: Option<String>,
    /// RFC 3339, or `null`.
    pub expires_at: Option<String>,
    /// Whether the key was revoked.
    pub revoked: bool,
}

impl From<&ApiKeyRecord> for ApiKeyView {
    fn from(k: &ApiKeyRecord) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name.clone(),
            prefix: k.display_prefix.clone(),
            org_id: k.org_id,
            created_at: format_rfc3339_micros(k.created_at),
            last_used_at: k.last_used_at.map(format_rfc3339_micros),
            expires_at: k.expires_at.map(format_rfc3339_micros),
            revoked: k.revoked_at.is_some(),
        }
    }
}

/// A new key: its record and the secret, shown once.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    /// The stored record.
    pub record: ApiKeyRecord,
    /// The key itself.
    pub secret: String,
}

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
    membership: Option<crate::ports::OrgMembership>,
) -> Result<OrgContext, DomainError> {
    match membership {
        None if requested.is_some() && principal.bound_org.is_none() => {
            Err(DomainError::NotAMember)
        }
        None => Err(DomainError::OrgNotFound),
        Some(m) => match m.role {
            Some(role) => Ok(OrgContext {
                principal,
                org: m.org,
                role,
            }),
            None => Err(DomainError::NotAMember),
        },
    }
}

/// The domain services over one store.
#[derive(Clone)]
pub struct Switchboard {
    store: Arc<dyn Store>,
}

impl Switchboard {
    /// Services over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Switchboard { store }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Checks a presented API key (API.md, Identity): unknown, expired or revoked keys are
    /// refused; a successful use is written to `last_used_at` at most once a minute.
    ///
    /// # Errors
    /// [`DomainError::InvalidApiKey`], [`DomainError::ApiKeyExpired`],
    /// [`DomainError::ApiKeyRevoked`], or a storage failure.
    pub fn authenticate(&self, presented: &str) -> Result<Principal, DomainError> {
        self.check_key(presented, None).map(|(p, _)| p)
    }

    fn check_key(
        &self,
        presented: &str,
        requested: Option<OrgId>,
    ) -> Result<(Principal, Option<crate::ports::OrgMembership>), DomainError> {
        let hash = hash_api_key(presented);
        let found = self
            .store
            .api_key_by_hash(&hash, requested)?
            .ok_or(DomainError::InvalidApiKey)?;
        let now = now_micros();
        found.key.check_usable(now).map_err(|r| match r {
            KeyRejection::Expired => DomainError::ApiKeyExpired,
            KeyRejection::Revoked => DomainError::ApiKeyRevoked,
        })?;
        if found.key.needs_touch(now) {
            self.store
                .touch_api_key(found.key.id, now, now - LAST_USED_DEBOUNCE)?;
        }
        let principal = Principal {
            user_id: found.key.user_id,
            key_id: found.key.id,
            bound_org: found.key.org_id,
            current_org: found.user_current_org,
        };
        Ok((principal, found.effective))
    }

    /// [`Switchboard::authenticate`], then the organization the request acts on (API.md,
    /// Identity): the key's bound organization (a different `requested` one is refused); else
    /// `requested` (the `X-Org-Id` header); else the user's current organization, where the
    /// caller must be a member. The key and the effective organization are read in one query
    /// (the hot path of every request).
    ///
    /// # Errors
    /// As [`Switchboard::authenticate`]; [`DomainError::KeyNotAuthorizedForOrg`] (403),
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
            _ => self.store.org_membership(org_id, principal.user_id)?,
        };
        context_of(principal, requested, membership)
    }

    /// The effective organization's app settings (`manage_application_settings`).
    ///
    /// # Errors
    /// 403 without the permission, 404 when the organization is gone.
    pub fn org_settings(&self, ctx: &OrgContext) -> Result<OrgAppSettings, DomainError> {
        ctx.require(Permission::ManageApplicationSettings)?;
        self.store
            .org_settings(ctx.org.id)?
            .ok_or(DomainError::OrgNotFound)
    }

    /// Applies a validated update (reference §1.6 from rule 4 on): `edit_org_settings` when
    /// marketplaces are sent; an empty body returns the current settings; the version check
    /// (409) before the duplicate-name check (400); then one conditional write.
    ///
    /// # Errors
    /// [`DomainError::PermissionDenied`], [`DomainError::MissingPermission`],
    /// [`DomainError::OrgNotFound`], [`DomainError::StaleSettings`],
    /// [`DomainError::DuplicateMarketplaceNames`], or a storage failure.
    pub fn update_org_settings(
        &self,
        ctx: &OrgContext,
        update: SettingsUpdate,
    ) -> Result<OrgAppSettings, DomainError> {
        ctx.require(Permission::ManageApplicationSettings)?;
        if update.change.registered_marketplaces.is_some()
            && !ctx.role.grants(Permission::EditOrgSettings)
        {
            return Err(DomainError::MissingPermission(Permission::EditOrgSettings));
        }
        let org_id = ctx.org.id;
        if !update.has_any_field {
            return self
                .store
                .org_settings(org_id)?
                .ok_or(DomainError::OrgNotFound);
        }
        let dups = update
            .change
            .registered_marketplaces
            .as_deref()
            .map(duplicate_marketplace_names)
            .unwrap_or_default();
        if update.change.is_empty() || !dups.is_empty() {
            // Nothing to write (or nothing writable): the version check still applies.
            let current = self
                .store
                .org_settings(org_id)?
                .ok_or(DomainError::OrgNotFound)?;
            if let Some(expected) = update.last_known_updated_at
                && expected != current.updated_at
            {
                return Err(DomainError::StaleSettings {
                    org_id,
                    expected,
                    actual: current.updated_at,
                });
            }
            if !dups.is_empty() {
                return Err(DomainError::DuplicateMarketplaceNames(dups));
            }
            return Ok(current);
        }
        match self.store.update_org_settings(
            org_id,
            &update.change,
            update.last_known_updated_at,
            now_micros(),
        )? {
            crate::ports::SettingsWrite::Written(s) => Ok(s),
            crate::ports::SettingsWrite::NotFound => Err(DomainError::OrgNotFound),
            crate::ports::SettingsWrite::Stale { actual } => Err(DomainError::StaleSettings {
                org_id,
                expected: update.last_known_updated_at.unwrap_or(actual),
                actual,
            }),
        }
    }

    /// Creates a key for the caller, bound to the effective organization
    /// (`manage_api_keys`). `expires_at` must be in the future.
    ///
    /// # Errors
    /// 403 without the permission; [`DomainError::Invalid`] for a past expiry.
    pub fn create_api_key(
        &self,
        ctx: &OrgContext,
        name: String,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<IssuedKey, DomainError> {
        ctx.require(Permission::ManageApiKeys)?;
        self.issue_key(ctx.principal.user_id, Some(ctx.org.id), name, expires_at)
    }

    fn issue_key(
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
            return Err(switchboard_model::ValidationError::new(
                switchboard_model::ErrorType::ValueError,
                vec!["body".into(), "expires_at".into()],
                "Value error, Expiration date cannot be in the past",
            )
            .with_input(serde_json::Value::String(format_rfc3339_micros(e)))
            .with_ctx(serde_json::json!({ "error": "Expiration date cannot be in the past" }))
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
        self.store.insert_api_key(&record, &new.hash)?;
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
        let mut keys = self.store.api_keys_of(ctx.principal.user_id)?;
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
        let key = self.store.api_key(id)?.ok_or(DomainError::ApiKeyNotFound)?;
        if key.user_id != ctx.principal.user_id || key.org_id.is_some_and(|o| o != ctx.org.id) {
            return Err(DomainError::ApiKeyNotFound);
        }
        self.store.revoke_api_key(id, now_micros())?;
        self.store.api_key(id)?.ok_or(DomainError::ApiKeyNotFound)
    }

    /// The caller, the effective organization and the caller's permissions there.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`] if the user vanished, or a storage failure.
    pub fn me(&self, ctx: &OrgContext) -> Result<MeView, DomainError> {
        let user = self
            .store
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

    // ---- operator commands (CLI; no authentication: they need database access) ----

    /// Creates, if absent, the organization `org_name` and the user `email` as its owner (and
    /// makes it the user's current organization), then issues a new unbound key for the user.
    ///
    /// # Errors
    /// A storage failure.
    pub fn bootstrap(&self, org_name: &str, email: &str) -> Result<Bootstrapped, DomainError> {
        let now = now_micros();
        let org = match self.store.org_by_name(org_name)? {
            Some(o) => o,
            None => {
                let o = Org {
                    id: OrgId::new_random(),
                    name: org_name.to_owned(),
                    created_at: now,
                };
                self.store.create_org(&o)?;
                o
            }
        };
        let user = match self.store.user_by_email(email)? {
            Some(u) => u,
            None => self.create_user(email, None)?,
        };
        self.store.put_member(org.id, user.id, Role::Owner, now)?;
        if user.current_org_id.is_none() {
            self.store.set_current_org(user.id, org.id)?;
        }
        let key = self.issue_key(user.id, None, "bootstrap".to_owned(), None)?;
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
        Ok(self.store.count_orgs()? == 0)
    }

    /// Creates a user.
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] for a taken e-mail; [`DomainError::Invalid`] for an
    /// e-mail without `@`.
    pub fn create_user(&self, email: &str, name: Option<String>) -> Result<User, DomainError> {
        let email = email.trim();
        if !email.contains('@') || email.len() > 320 {
            return Err(switchboard_model::ValidationError::new(
                switchboard_model::ErrorType::ValueError,
                vec!["email".into()],
                "Value error, an e-mail address needs an '@'",
            )
            .into());
        }
        let user = User {
            id: UserId::new_random(),
            email: email.to_owned(),
            name,
            current_org_id: None,
            created_at: now_micros(),
        };
        match self.store.create_user(&user) {
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
        let u = self.store.user(user)?.ok_or(DomainError::UserNotFound)?;
        self.store
            .org_membership(org, user)?
            .ok_or(DomainError::OrgNotFound)?;
        self.store.put_member(org, user, role, now_micros())?;
        if u.current_org_id.is_none() {
            self.store.set_current_org(user, org)?;
        }
        Ok(())
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
        self.store.user(user)?.ok_or(DomainError::UserNotFound)?;
        if let Some(o) = org {
            let m = self
                .store
                .org_membership(o, user)?
                .ok_or(DomainError::OrgNotFound)?;
            if m.role.is_none() {
                return Err(DomainError::NotAMember);
            }
        }
        self.issue_key(user, org, name, expires_at)
    }

    /// A user's keys (operator view).
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`].
    pub fn operator_list_keys(&self, user: UserId) -> Result<Vec<ApiKeyRecord>, DomainError> {
        self.store.user(user)?.ok_or(DomainError::UserNotFound)?;
        Ok(self.store.api_keys_of(user)?)
    }

    /// Revokes any key (operator).
    ///
    /// # Errors
    /// [`DomainError::ApiKeyNotFound`].
    pub fn operator_revoke_key(&self, id: ApiKeyId) -> Result<(), DomainError> {
        if self.store.revoke_api_key(id, now_micros())? {
            Ok(())
        } else {
            Err(DomainError::ApiKeyNotFound)
        }
    }
}

/// A newly registered sandbox and its session key (shown once).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegisteredSandbox {
    /// Sandbox id.
    pub sandbox_id: crate::ids::SandboxId,
    /// The `X-Session-API-Key` of its agent server: `sbs_` + 43 base62 characters.
    pub session_api_key: String,
}

impl Switchboard {
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
        self.store.user(user)?.ok_or(DomainError::UserNotFound)?;
        let m = self
            .store
            .org_membership(org, user)?
            .ok_or(DomainError::OrgNotFound)?;
        if m.role.is_none() {
            return Err(DomainError::NotAMember);
        }
        let key = crate::api_keys::generate_secret(crate::api_keys::SESSION_KEY_PREFIX);
        let sandbox = crate::events::Sandbox {
            id: crate::ids::SandboxId::new_random(),
            org_id: org,
            owner_id: user,
            created_at: now_micros(),
        };
        self.store.create_sandbox(&sandbox, &key.hash)?;
        Ok(RegisteredSandbox {
            sandbox_id: sandbox.id,
            session_api_key: key.secret,
        })
    }

    /// The sandbox behind a webhook's `X-Session-API-Key`.
    ///
    /// # Errors
    /// [`DomainError::SessionKeyRequired`] (absent or empty), [`DomainError::InvalidSessionKey`].
    pub fn authenticate_sandbox(
        &self,
        key: Option<&str>,
    ) -> Result<crate::events::Sandbox, DomainError> {
        let key = key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or(DomainError::SessionKeyRequired)?;
        self.store
            .sandbox_by_key_hash(&hash_api_key(key))?
            .ok_or(DomainError::InvalidSessionKey)
    }

    fn new_conversation(
        sandbox: &crate::events::Sandbox,
        id: crate::ids::ConversationId,
    ) -> crate::events::Conversation {
        let now = now_micros();
        crate::events::Conversation {
            id,
            org_id: sandbox.org_id,
            owner_id: sandbox.owner_id,
            sandbox_id: Some(sandbox.id),
            title: None,
            execution_status: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Ingests a webhook batch (API.md, Event ingestion): validated whole (422, nothing
    /// stored), stored atomically, ids already stored skipped, the conversation created if
    /// unknown (owned by the sandbox's owner and org), the run state updated in the same
    /// transaction.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] (422 at `["body", i, …]`), [`DomainError::ConversationNotFound`]
    /// when the conversation belongs to another organization.
    pub fn ingest_events(
        &self,
        sandbox: &crate::events::Sandbox,
        conversation: crate::ids::ConversationId,
        body: &str,
    ) -> Result<crate::events::AppendOutcome, DomainError> {
        let (events, status) = crate::events::prepare_batch(body)?;
        let conv = Self::new_conversation(sandbox, conversation);
        self.store
            .append_events(conv, events, status, now_micros())?
            .ok_or(DomainError::ConversationNotFound)
    }

    /// Applies the agent server's `ConversationInfo` (a JSON object with `id`; `title` and
    /// `execution_status` when present): creates or updates the conversation and keeps the
    /// whole object as metadata. A `deleting` status is ignored, as OpenHands does.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] for a body without a UUID `id` or with non-string title or
    /// status; [`DomainError::ConversationNotFound`] for another organization's conversation.
    pub fn ingest_conversation_info(
        &self,
        sandbox: &crate::events::Sandbox,
        info: &serde_json::Value,
    ) -> Result<(), DomainError> {
        use switchboard_model::{ErrorType, ValidationError};
        let obj = info.as_object().ok_or_else(|| {
            ValidationError::new(
                ErrorType::ModelType,
                vec!["body".into()],
                "Input should be a valid dictionary or instance of ConversationInfo",
            )
            .with_input(info.clone())
        })?;
        let id = match obj.get("id") {
            Some(serde_json::Value::String(s)) => crate::ids::parse_uuid(s)
                .map(crate::ids::ConversationId)
                .ok_or_else(|| {
                    ValidationError::new(
                        ErrorType::UuidParsing,
                        vec!["body".into(), "id".into()],
                        "Input should be a valid UUID",
                    )
                    .with_input(serde_json::Value::String(s.clone()))
                })?,
            Some(other) => {
                return Err(ValidationError::new(
                    ErrorType::StringType,
                    vec!["body".into(), "id".into()],
                    "Input should be a valid string",
                )
                .with_input(other.clone())
                .into());
            }
            None => {
                return Err(ValidationError::new(
                    ErrorType::Missing,
                    vec!["body".into(), "id".into()],
                    "Field required",
                )
                .into());
            }
        };
        let text = |key: &str| -> Result<Option<String>, DomainError> {
            match obj.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(ValidationError::new(
                    ErrorType::StringType,
                    vec!["body".into(), key.into()],
                    "Input should be a valid string",
                )
                .with_input(other.clone())
                .into()),
            }
        };
        let title = text("title")?;
        let status = text("execution_status")?;
        if status.as_deref() == Some("deleting") {
            return Ok(());
        }
        let mut conv = Self::new_conversation(sandbox, id);
        conv.title = title;
        conv.execution_status = status;
        if self
            .store
            .upsert_conversation_info(&conv, &info.to_string(), now_micros())?
        {
            Ok(())
        } else {
            Err(DomainError::ConversationNotFound)
        }
    }

    fn visible_conversation(
        &self,
        ctx: &OrgContext,
        id: crate::ids::ConversationId,
    ) -> Result<crate::events::Conversation, DomainError> {
        match self.store.conversation(id)? {
            Some(c) if c.org_id == ctx.org.id => Ok(c),
            _ => Err(DomainError::ConversationNotFound),
        }
    }

    /// One page of a conversation's events (spec §4.1): the next page continues after the
    /// last item, with no duplicates or gaps even while events arrive.
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] for an unknown conversation or another org's.
    pub fn search_events(
        &self,
        ctx: &OrgContext,
        conversation: crate::ids::ConversationId,
        query: &crate::events::SearchQuery,
    ) -> Result<crate::events::EventPageOut, DomainError> {
        self.visible_conversation(ctx, conversation)?;
        let mut rows = self.store.search_events(conversation, query)?;
        let more = rows.len() > query.limit as usize;
        rows.truncate(query.limit as usize);
        let next_page_id = if more {
            rows.last().map(|r| {
                crate::events::Cursor {
                    ts: r.ts,
                    seq: r.seq,
                }
                .encode()
            })
        } else {
            None
        };
        Ok(crate::events::EventPageOut {
            items: rows.into_iter().map(|r| r.payload).collect(),
            next_page_id,
        })
    }

    /// How many events match (spec §4.1 filters).
    ///
    /// # Errors
    /// As [`Switchboard::search_events`].
    pub fn count_events(
        &self,
        ctx: &OrgContext,
        conversation: crate::ids::ConversationId,
        filter: &crate::events::EventFilter,
    ) -> Result<i64, DomainError> {
        self.visible_conversation(ctx, conversation)?;
        Ok(self.store.count_events(conversation, filter)?)
    }

    /// The events with these ids, in request order, `None` for unknown ids (API.md).
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over 100 ids; as [`Switchboard::search_events`].
    pub fn get_events(
        &self,
        ctx: &OrgContext,
        conversation: crate::ids::ConversationId,
        ids: &[String],
    ) -> Result<Vec<Option<String>>, DomainError> {
        if ids.len() > crate::events::MAX_BATCH_GET {
            return Err(DomainError::TooManyIds(ids.len()));
        }
        self.visible_conversation(ctx, conversation)?;
        let found: std::collections::HashMap<String, String> = self
            .store
            .get_events(conversation, ids)?
            .into_iter()
            .collect();
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }
}
