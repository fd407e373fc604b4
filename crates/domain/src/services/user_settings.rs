//! Each user's own settings and LLM profiles in the effective organization (issue 21;
//! OpenHands' `/api/v1/settings` and `/api/v1/settings/profiles`). A member reads and changes
//! only their own; keys are sealed before they are stored and never answered, except to the
//! user's own sandbox through `GET /api/v1/users/me?expose_secrets=true`
//! ([`UserSettingsService::exposed`]).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::provider_links::ProviderLinks;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::mcp_redaction::{keep_masked, mask_mcp};
use crate::identity::sealing::Sealer;
use crate::ids::{OrgId, UserId};
use crate::org_profiles::{ProfileListResponse, profile_list};
use crate::ports::{
    IdentityStore, OrgDefaultsStore, OrgSettingsStore, UserSecretStore, UserSettingsStore,
};
use crate::time_input::now_micros;
pub use crate::user_settings::own_llm::OwnLlm;
use crate::user_settings::patch::SettingsPatch;
use crate::user_settings::profiles::{
    SaveProfile, StoredProfile, delete_in, profile_not_found, rename_in, save_into,
};
use crate::user_settings::view::{
    ProfileDetailResponse, SettingsResponse, ViewParts, profile_detail, settings_view,
};
use crate::user_settings::{Binding, UserSettingsRecord, deep_merge};

/// Users' settings and profiles.
#[derive(Clone)]
pub struct UserSettingsService {
    pub(crate) settings: Arc<dyn UserSettingsStore>,
    pub(crate) secrets: Arc<dyn UserSecretStore>,
    identity: Arc<dyn IdentityStore>,
    pub(crate) orgs: Arc<dyn OrgSettingsStore>,
    /// The provider connections LLM profiles name.
    links: ProviderLinks,
    pub(crate) sealer: Option<Sealer>,
}

/// What `GET /api/v1/users/me?expose_secrets=true` adds (OpenHands' hosted server, read by the
/// SDK's `OpenHandsCloudWorkspace.get_llm()` and `get_mcp_config()`). `Debug` shows no key.
#[derive(Clone, Default, PartialEq)]
pub struct ExposedSettings {
    /// The user's LLM model (active profile, else settings).
    pub llm_model: Option<String>,
    /// Its key, in the clear.
    pub llm_api_key: Option<String>,
    /// Its base URL.
    pub llm_base_url: Option<String>,
    /// `{"profiles": {name: config with its key}, "active"}`.
    pub llm_profiles: Value,
    /// The MCP configuration, unmasked.
    pub mcp_config: Option<Value>,
}

impl std::fmt::Debug for ExposedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExposedSettings")
            .field("llm_model", &self.llm_model)
            .field("llm_base_url", &self.llm_base_url)
            .finish_non_exhaustive()
    }
}

impl UserSettingsService {
    /// The service over its stores, without a sealer (keys cannot be stored until
    /// [`with_sealer`](Self::with_sealer)).
    pub fn new(
        settings: Arc<dyn UserSettingsStore>,
        secrets: Arc<dyn UserSecretStore>,
        identity: Arc<dyn IdentityStore>,
        orgs: Arc<dyn OrgSettingsStore>,
        org_defaults: Arc<dyn OrgDefaultsStore>,
    ) -> Self {
        UserSettingsService {
            settings,
            secrets,
            identity,
            orgs,
            links: ProviderLinks::new(org_defaults),
            sealer: None,
        }
    }

    /// The same service sealing with the installation key.
    #[must_use]
    pub fn with_sealer(mut self, sealer: Sealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// The sealer.
    ///
    /// # Errors
    /// [`DomainError::SecretsUnavailable`] on a server without an installation key.
    pub(crate) fn sealer(&self) -> Result<&Sealer, DomainError> {
        self.sealer.as_ref().ok_or(DomainError::SecretsUnavailable)
    }

    fn record(&self, org: OrgId, user: UserId) -> Result<UserSettingsRecord, DomainError> {
        Ok(self.settings.user_settings(org, user)?.unwrap_or_default())
    }

    /// Opens a sealed value of `user` in `org`.
    ///
    /// # Errors
    /// [`DomainError::SecretsUnavailable`]; a value that does not open (another installation
    /// key) is a storage failure, logged without the value.
    pub(crate) fn open(
        &self,
        sealed: &str,
        binding: Binding,
        org: OrgId,
        user: UserId,
    ) -> Result<String, DomainError> {
        crate::user_settings::open_sealed(self.sealer()?, sealed, binding, org, user)
    }

    /// `GET /api/v1/settings`: the caller's settings (defaults when none are stored).
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`], a value that does not open, storage.
    pub fn settings(&self, ctx: &OrgContext) -> Result<SettingsResponse, DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let rec = self.record(org, user)?;
        let who = self.identity.user(user)?.ok_or(DomainError::UserNotFound)?;
        let mcp_config = match &rec.mcp_config_sealed {
            Some(s) => Some(mask_mcp(&mcp_value(&self.open(
                s,
                Binding::McpConfig,
                org,
                user,
            )?))),
            None => None,
        };
        let provider_tokens_set: Map<String, Value> = self
            .secrets
            .provider_tokens(org, user)?
            .into_iter()
            .map(|t| (t.provider, json!(t.host)))
            .collect();
        let inherited_marketplaces = self
            .orgs
            .org_settings(org)?
            .map(|s| {
                s.registered_marketplaces
                    .iter()
                    .filter_map(|m| serde_json::to_value(m).ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(settings_view(
            &rec,
            ViewParts {
                email: &who.email,
                mcp_config,
                provider_tokens_set,
                inherited_marketplaces,
            },
        ))
    }

    /// `POST /api/v1/settings`: applies a validated patch in one transaction. Keys are sealed
    /// first. A diff touching `llm` ends the active profile (the settings are no longer it).
    /// An `mcp_config` sent back with the credentials [`Self::settings`] masked still masked
    /// keeps the stored ones ([`keep_masked`], issue 38).
    ///
    /// # Errors
    /// [`DomainError::SecretsUnavailable`] when a key is sent to a server without an
    /// installation key; storage.
    pub fn store_settings(
        &self,
        ctx: &OrgContext,
        patch: SettingsPatch,
    ) -> Result<(), DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let seal = |v: &Option<String>, b: Binding| -> Result<Option<String>, DomainError> {
            v.as_ref()
                .map(|k| Ok(self.sealer()?.seal(k, &b.of(org, user))))
                .transpose()
        };
        let llm_key = patch
            .llm_api_key
            .as_ref()
            .map(|k| seal(k, Binding::LlmApiKey))
            .transpose()?;
        let search_key = patch
            .search_api_key
            .as_ref()
            .map(|k| seal(k, Binding::SearchApiKey))
            .transpose()?;
        if matches!(patch.mcp_config, Some(Some(_))) {
            self.sealer()?;
        }
        self.settings
            .update_user_settings(org, user, now_micros(), &mut |rec| {
                if let Some(diff) = &patch.agent_diff {
                    deep_merge(&mut rec.agent_settings, diff);
                }
                if patch.touches_llm {
                    rec.active_profile = None;
                }
                if let Some(diff) = &patch.conversation_diff {
                    deep_merge(&mut rec.conversation_settings, diff);
                }
                for (k, v) in &patch.preferences {
                    if v.is_null() {
                        rec.preferences.remove(k);
                    } else {
                        rec.preferences.insert(k.clone(), v.clone());
                    }
                }
                if let Some(k) = &llm_key {
                    rec.llm_api_key_sealed.clone_from(k);
                }
                if let Some(k) = &search_key {
                    rec.search_api_key_sealed.clone_from(k);
                }
                if let Some(change) = &patch.mcp_config {
                    let stored = rec.mcp_config_sealed.as_deref();
                    rec.mcp_config_sealed = match change {
                        Some(sent) => Some(self.seal_mcp(sent, stored, org, user)?),
                        None => None,
                    };
                }
                Ok(true)
            })?;
        Ok(())
    }

    /// The MCP configuration `sent` sealed for `user`, each credential it shows masked as
    /// answered kept from the `stored` one ([`keep_masked`]: a round trip keeps them).
    ///
    /// # Errors
    /// No installation key; a stored value that does not open.
    fn seal_mcp(
        &self,
        sent: &Value,
        stored: Option<&str>,
        org: OrgId,
        user: UserId,
    ) -> Result<String, DomainError> {
        let value = match stored {
            Some(s) => keep_masked(
                sent,
                &mcp_value(&self.open(s, Binding::McpConfig, org, user)?),
            ),
            None => sent.clone(),
        };
        Ok(self
            .sealer()?
            .seal(&value.to_string(), &Binding::McpConfig.of(org, user)))
    }

    /// `GET /api/v1/settings/profiles`.
    ///
    /// # Errors
    /// Storage.
    pub fn profiles(&self, ctx: &OrgContext) -> Result<ProfileListResponse, DomainError> {
        let rec = self.record(ctx.org.id, ctx.principal.user_id)?;
        Ok(profile_list(
            &rec.profiles,
            rec.active_profile.as_deref(),
            &self.links.connections(ctx.org.id)?,
        ))
    }

    /// `GET /api/v1/settings/profiles/{name}`: `{name, config (api_key null), api_key_set}`
    /// (a profile linked to a provider connection has a key when the connection has one).
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile; storage.
    pub fn profile(
        &self,
        ctx: &OrgContext,
        name: &str,
    ) -> Result<ProfileDetailResponse, DomainError> {
        let rec = self.record(ctx.org.id, ctx.principal.user_id)?;
        let p = rec.profile(name).ok_or_else(|| profile_not_found(name))?;
        Ok(profile_detail(p, &self.links.connections(ctx.org.id)?))
    }

    /// `POST /api/v1/settings/profiles/{name}` (OpenHands' rules): the LLM sent, else the
    /// settings' current one; a key sent is sealed, none sent keeps the profile's stored one;
    /// `include_secrets: false` stores none; `preserve_existing_api_key` keeps the stored one.
    /// Saving the active profile applies it to the settings too.
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] (409) for a new profile past
    /// [`MAX_PROFILES_PER_USER`](crate::user_settings::profiles::MAX_PROFILES_PER_USER); [`DomainError::SecretsUnavailable`]; storage.
    pub fn save_profile(
        &self,
        ctx: &OrgContext,
        name: &str,
        save: SaveProfile,
    ) -> Result<(), DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let sent_key = save
            .api_key
            .as_ref()
            .map(|k| {
                Ok::<_, DomainError>(
                    self.sealer()?
                        .seal(k, &Binding::ProfileApiKey.of(org, user)),
                )
            })
            .transpose()?;
        let sealer = self.sealer.clone();
        self.settings
            .update_user_settings(org, user, now_micros(), &mut |rec| {
                let (llm_key, settings) = (&rec.llm_api_key_sealed, &rec.agent_settings);
                save_into(&mut rec.profiles, name, &save, sent_key.as_deref(), || {
                    let key = match (llm_key, &sealer) {
                        (Some(s), Some(sealer)) => Some(reseal(
                            sealer,
                            s,
                            &Binding::LlmApiKey.of(org, user),
                            &Binding::ProfileApiKey.of(org, user),
                        )?),
                        _ => None,
                    };
                    let llm = settings.get("llm").and_then(Value::as_object);
                    Ok((llm.cloned().unwrap_or_default(), key))
                })?;
                if rec.active_profile.as_deref() == Some(name) {
                    apply_profile(rec, name, sealer.as_ref(), org, user)?;
                }
                Ok(true)
            })?;
        Ok(())
    }

    /// `DELETE /api/v1/settings/profiles/{name}`: idempotent; deleting the active profile
    /// leaves the settings as they are, with no active profile.
    ///
    /// # Errors
    /// Storage.
    pub fn delete_profile(&self, ctx: &OrgContext, name: &str) -> Result<(), DomainError> {
        self.settings.update_user_settings(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |rec| Ok(delete_in(&mut rec.profiles, &mut rec.active_profile, name)),
        )?;
        Ok(())
    }

    /// `POST …/profiles/{name}/activate`: the profile's LLM (and key) becomes the settings'
    /// LLM and the profile the active one. Returns its model.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile; storage.
    pub fn activate_profile(
        &self,
        ctx: &OrgContext,
        name: &str,
    ) -> Result<Option<String>, DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let sealer = self.sealer.clone();
        let rec = self
            .settings
            .update_user_settings(org, user, now_micros(), &mut |rec| {
                apply_profile(rec, name, sealer.as_ref(), org, user)?;
                rec.active_profile = Some(name.to_owned());
                Ok(true)
            })?;
        Ok(rec.llm_str("model").map(str::to_owned))
    }

    /// `POST …/profiles/{name}/rename`: the configuration, key and active flag kept.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile, [`DomainError::AlreadyExists`] (409)
    /// when another profile has the new name; storage.
    pub fn rename_profile(
        &self,
        ctx: &OrgContext,
        name: &str,
        new_name: &str,
    ) -> Result<(), DomainError> {
        self.settings.update_user_settings(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |rec| rename_in(&mut rec.profiles, &mut rec.active_profile, name, new_name),
        )?;
        Ok(())
    }

    /// The user's own LLM, key opened: the active profile's, else the settings'. `None` when
    /// the user set neither a model nor a key.
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn own_llm(&self, org: OrgId, user: UserId) -> Result<Option<OwnLlm>, DomainError> {
        let rec = self.record(org, user)?;
        self.own_llm_of(&rec, org, user)
    }

    fn own_llm_of(
        &self,
        rec: &UserSettingsRecord,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<OwnLlm>, DomainError> {
        let active = rec.active_profile.as_deref().and_then(|n| rec.profile(n));
        let llm = match active {
            Some(p) => self.profile_own_llm(p, org, user)?,
            None => self.llm_of(
                rec.llm().unwrap_or(&Map::new()),
                rec.llm_api_key_sealed.as_deref(),
                Binding::LlmApiKey,
                (org, user),
                "Your LLM settings",
            )?,
        };
        Ok((llm.model.is_some()
            || llm.api_key.is_some()
            || llm.base_url.is_some()
            || llm.broken.is_some())
        .then_some(llm))
    }

    /// The LLM of the caller's profile `name`, key opened.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile; a value that does not open; storage.
    pub fn profile_llm(&self, ctx: &OrgContext, name: &str) -> Result<OwnLlm, DomainError> {
        let (org, user) = (ctx.org.id, ctx.principal.user_id);
        let rec = self.record(org, user)?;
        let p = rec.profile(name).ok_or_else(|| profile_not_found(name))?;
        self.profile_own_llm(p, org, user)
    }

    /// A profile's LLM, its key opened; through the provider connection it names, if any
    /// (the connection's base URL and key; `broken` when the connection was deleted).
    pub(crate) fn profile_own_llm(
        &self,
        p: &StoredProfile,
        org: OrgId,
        user: UserId,
    ) -> Result<OwnLlm, DomainError> {
        self.llm_of(
            &p.config,
            p.api_key_sealed.as_deref(),
            Binding::ProfileApiKey,
            (org, user),
            &format!("LLM profile '{}'", p.name),
        )
    }

    /// The LLM an LLM configuration (`model`, `base_url`, `provider_connection_id`) and its
    /// sealed key (bound as `binding`) make: the key opened, then through the provider
    /// connection the configuration names, if any (`owner` names it in a broken link's words).
    fn llm_of(
        &self,
        config: &Map<String, Value>,
        sealed_key: Option<&str>,
        binding: Binding,
        (org, user): (OrgId, UserId),
        owner: &str,
    ) -> Result<OwnLlm, DomainError> {
        let text = |k: &str| {
            config
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let own = OwnLlm {
            model: text("model"),
            base_url: text("base_url"),
            api_key: sealed_key
                .map(|s| self.open(s, binding, org, user))
                .transpose()?,
            broken: None,
            key_owner: None,
        };
        self.links
            .linked(own, config, org, owner, self.sealer.as_ref())
    }

    /// `GET /api/keys/llm/byor`: the key of the user's own LLM (the active profile's, else the
    /// settings'), in the clear; `None` when they stored none, and on a server without the
    /// installation key (where none can be stored). Never the organization's or the
    /// operator's key.
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn own_llm_key(&self, org: OrgId, user: UserId) -> Result<Option<String>, DomainError> {
        if self.sealer.is_none() {
            return Ok(None);
        }
        Ok(self.own_llm(org, user)?.and_then(|l| l.api_key))
    }

    /// Whether `user` stored an LLM key in `org` (settings or active profile).
    ///
    /// # Errors
    /// Storage.
    pub fn llm_key_set(&self, org: OrgId, user: UserId) -> Result<bool, DomainError> {
        Ok(self
            .settings
            .user_settings(org, user)?
            .is_some_and(|r| r.llm_api_key_sealed.is_some()))
    }

    /// The user's MCP configuration, opened (unmasked).
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn mcp_config(&self, org: OrgId, user: UserId) -> Result<Option<Value>, DomainError> {
        let rec = self.record(org, user)?;
        rec.mcp_config_sealed
            .as_deref()
            .map(|s| Ok(mcp_value(&self.open(s, Binding::McpConfig, org, user)?)))
            .transpose()
    }

    /// `GET /api/v1/users/me?expose_secrets=true`: the user's own LLM (never the operator's
    /// or the organization's key), their profiles with keys, their MCP configuration.
    ///
    /// # Errors
    /// A value that does not open; storage.
    pub fn exposed(&self, org: OrgId, user: UserId) -> Result<ExposedSettings, DomainError> {
        let rec = self.record(org, user)?;
        let own = self.own_llm_of(&rec, org, user)?.unwrap_or_default();
        let mut profiles = Map::new();
        for p in &rec.profiles {
            let mut c = p.config.clone();
            let llm = self.profile_own_llm(p, org, user)?;
            if crate::user_settings::profiles::connection_id(&p.config).is_some() {
                c.insert("base_url".into(), json!(llm.base_url));
            }
            c.insert("api_key".into(), json!(llm.api_key));
            profiles.insert(p.name.clone(), Value::Object(c));
        }
        Ok(ExposedSettings {
            llm_model: own.model,
            llm_api_key: own.api_key,
            llm_base_url: own.base_url,
            llm_profiles: json!({"profiles": profiles, "active": rec.active_profile}),
            mcp_config: rec
                .mcp_config_sealed
                .as_deref()
                .map(|s| {
                    Ok::<_, DomainError>(mcp_value(&self.open(s, Binding::McpConfig, org, user)?))
                })
                .transpose()?,
        })
    }
}

/// The MCP configuration's JSON text as a value (an object; anything else is dropped).
fn mcp_value(text: &str) -> Value {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
        .unwrap_or(Value::Null)
}

/// A sealed value opened under one binding and sealed again under another.
fn reseal(sealer: &Sealer, sealed: &str, from: &str, to: &str) -> Result<String, DomainError> {
    let plain = sealer.open(sealed, from).map_err(|e| {
        DomainError::Storage(crate::StorageError::Other(
            format!("a sealed key does not open: {e}").into(),
        ))
    })?;
    Ok(sealer.seal(&plain, to))
}

/// The profile's LLM (and key, sealed again for the settings) as the settings' LLM.
fn apply_profile(
    rec: &mut UserSettingsRecord,
    name: &str,
    sealer: Option<&Sealer>,
    org: OrgId,
    user: UserId,
) -> Result<(), DomainError> {
    let p = rec
        .profile(name)
        .cloned()
        .ok_or_else(|| profile_not_found(name))?;
    rec.agent_settings
        .insert("llm".into(), Value::Object(p.config.clone()));
    rec.llm_api_key_sealed = match (&p.api_key_sealed, sealer) {
        (Some(s), Some(sealer)) => Some(reseal(
            sealer,
            s,
            &Binding::ProfileApiKey.of(org, user),
            &Binding::LlmApiKey.of(org, user),
        )?),
        _ => None,
    };
    Ok(())
}
