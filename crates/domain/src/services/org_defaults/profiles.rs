//! An organization's LLM profiles and LLM provider connections (issue 25; the routes Agent
//! Canvas uses under `/api/organizations/{org_id}/profiles…` and `/provider-connections…`):
//! every member reads them (`view_org_settings`), owners and admins change them
//! (`edit_org_settings`), as OpenHands' `org_profiles.py` gates them. Part of the
//! organization's defaults record (the storage keeps the profiles as rows of their own,
//! written with it), keys sealed ([`OrgBinding::ProfileApiKey`],
//! [`OrgBinding::ConnectionApiKey`]) and never answered.
//!
//! Activating a profile makes its LLM (and key) the organization's default LLM, which a
//! member's start takes when the member set none (`services::start_settings`).

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::OrgDefaultsService;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::sealing::Sealer;
use crate::ids::OrgId;
use crate::org_defaults::{OrgBinding, OrgDefaultsRecord};
use crate::org_profiles::{
    ConnectionInput, MAX_CONNECTIONS, OrgProfileDetail, ProfileListResponse, ProviderConnection,
    ProviderConnectionList, StoredConnection, answered_llm, profile_item, profile_list,
    through_connection,
};
use crate::permissions::Permission;
use crate::time_input::now_micros;
use crate::user_settings::profiles::{
    RenameProfileRequest, SaveProfile, delete_in, profile_not_found, rename_in, save_into,
};

fn connection_not_found(id: &str) -> DomainError {
    DomainError::NotFound(format!("Provider connection '{id}' not found"))
}

/// A sealed value of `org` opened under one binding and sealed again under another.
fn reseal(
    sealer: &Sealer,
    sealed: &str,
    org: OrgId,
    from: OrgBinding,
    to: OrgBinding,
) -> Result<String, DomainError> {
    let plain = sealer.open(sealed, &from.of(org)).map_err(|e| {
        DomainError::Storage(crate::StorageError::Other(
            format!("a sealed {from:?} of organization {org} does not open: {e}").into(),
        ))
    })?;
    Ok(sealer.seal(&plain, &to.of(org)))
}

/// The profile `name`'s LLM (model and base URL) and key as the defaults' LLM.
fn apply_profile(
    rec: &mut OrgDefaultsRecord,
    name: &str,
    sealer: Option<&Sealer>,
    org: OrgId,
) -> Result<Map<String, Value>, DomainError> {
    let p = rec
        .profiles
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .ok_or_else(|| profile_not_found(name))?;
    let mut llm = Map::new();
    for k in ["model", "base_url", "provider_connection_id"] {
        if let Some(v) = p.config_str(k) {
            llm.insert(k.into(), json!(v));
        }
    }
    rec.agent_settings.insert("llm".into(), Value::Object(llm));
    rec.llm_api_key_sealed = match (&p.api_key_sealed, sealer) {
        (Some(s), Some(sealer)) => Some(reseal(
            sealer,
            s,
            org,
            OrgBinding::ProfileApiKey,
            OrgBinding::LlmApiKey,
        )?),
        _ => None,
    };
    rec.active_profile = Some(name.to_owned());
    Ok(answered_llm(&p.config))
}

impl OrgDefaultsService {
    fn edit_org(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        edit: &mut dyn FnMut(&mut OrgDefaultsRecord) -> Result<bool, DomainError>,
    ) -> Result<OrgDefaultsRecord, DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        self.store.update_org_defaults(org, now_micros(), edit)
    }

    fn read_org(&self, ctx: &OrgContext, org: OrgId) -> Result<OrgDefaultsRecord, DomainError> {
        self.require_in(ctx, org, Permission::ViewOrgSettings)?;
        Ok(self.store.org_defaults(org)?.unwrap_or_default())
    }

    /// `GET /api/organizations/{org_id}/profiles`: `ProfileListResponse`.
    ///
    /// # Errors
    /// 403 for a key bound elsewhere, 404 when not a member; storage.
    pub fn profiles(
        &self,
        ctx: &OrgContext,
        org: OrgId,
    ) -> Result<ProfileListResponse, DomainError> {
        let rec = self.read_org(ctx, org)?;
        Ok(profile_list(
            &rec.profiles,
            rec.active_profile.as_deref(),
            &rec.provider_connections,
        ))
    }

    /// `GET /api/organizations/{org_id}/profiles/{name}`: `{name, llm (api_key null),
    /// api_key_set}`.
    ///
    /// # Errors
    /// 404 for an unknown profile (or when not a member); 403 for a key bound elsewhere.
    pub fn profile(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
    ) -> Result<OrgProfileDetail, DomainError> {
        let rec = self.read_org(ctx, org)?;
        let p = rec
            .profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| profile_not_found(name))?;
        Ok(OrgProfileDetail {
            name: name.to_owned(),
            llm: answered_llm(&p.config),
            api_key_set: profile_item(p, &rec.provider_connections).api_key_set,
        })
    }

    /// `POST /api/organizations/{org_id}/profiles/{name}` (`edit_org_settings`), with the
    /// rules of a member's profiles: the LLM sent, else the defaults' current one; a key sent
    /// is sealed, none keeps the stored one; `include_secrets: false` stores none. Saving the
    /// active profile applies it again.
    ///
    /// # Errors
    /// 403/404 as [`Self::profiles`] and 403 without the permission; 409 for a new profile
    /// past [`MAX_PROFILES_PER_USER`](crate::user_settings::profiles::MAX_PROFILES_PER_USER); 422 for the body (`SaveProfileRequest`, judged after
    /// the permission; none or null: defaults); 503 when a key is sent to a server without the
    /// installation key; storage.
    pub fn save_profile(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
        body: Option<&Value>,
    ) -> Result<(), DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        let save = SaveProfile::read(body).map_err(|mut e| e.swap_remove(0))?;
        let sent_key = match &save.api_key {
            Some(k) => Some(self.sealer()?.seal(k, &OrgBinding::ProfileApiKey.of(org))),
            None => None,
        };
        let sealer = self.sealer.clone();
        self.edit_org(ctx, org, &mut |rec| {
            let (llm_key, settings) = (&rec.llm_api_key_sealed, &rec.agent_settings);
            save_into(&mut rec.profiles, name, &save, sent_key.as_deref(), || {
                let key = match (llm_key, &sealer) {
                    (Some(s), Some(sealer)) => Some(reseal(
                        sealer,
                        s,
                        org,
                        OrgBinding::LlmApiKey,
                        OrgBinding::ProfileApiKey,
                    )?),
                    _ => None,
                };
                let llm = settings.get("llm").and_then(Value::as_object);
                Ok((llm.cloned().unwrap_or_default(), key))
            })?;
            if rec.active_profile.as_deref() == Some(name) {
                apply_profile(rec, name, sealer.as_ref(), org)?;
            }
            Ok(true)
        })?;
        tracing::info!(%org, user = %ctx.principal.user_id, profile = name, "an organization profile was saved");
        Ok(())
    }

    /// `DELETE /api/organizations/{org_id}/profiles/{name}`: idempotent; the defaults' LLM
    /// stays as it is.
    ///
    /// # Errors
    /// 403/404 as [`Self::save_profile`]; storage.
    pub fn delete_profile(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
    ) -> Result<(), DomainError> {
        self.edit_org(ctx, org, &mut |rec| {
            Ok(delete_in(&mut rec.profiles, &mut rec.active_profile, name))
        })?;
        Ok(())
    }

    /// `POST /api/organizations/{org_id}/profiles/{name}/rename`: configuration, key and
    /// active flag kept.
    ///
    /// # Errors
    /// 404 for an unknown profile; 409 when another has the new name; 422 for the body
    /// (`{"new_name": …}`, after the permission); 403/404 as [`Self::save_profile`]; storage.
    /// Returns the new name.
    pub fn rename_profile(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
        body: &Value,
    ) -> Result<String, DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        let new_name = crate::typed_body::parse_one::<RenameProfileRequest>(body)?.new_name;
        let new_name = new_name.as_str();
        self.edit_org(ctx, org, &mut |rec| {
            rename_in(&mut rec.profiles, &mut rec.active_profile, name, new_name)
        })?;
        Ok(new_name.to_owned())
    }

    /// `POST /api/organizations/{org_id}/profiles/{name}/activate`: the profile's LLM and key
    /// become the organization's default LLM. Returns the LLM (`api_key` null).
    ///
    /// # Errors
    /// 404 for an unknown profile; 403/404 as [`Self::save_profile`]; storage.
    pub fn activate_profile(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        name: &str,
    ) -> Result<Map<String, Value>, DomainError> {
        let sealer = self.sealer.clone();
        let mut llm = Map::new();
        self.edit_org(ctx, org, &mut |rec| {
            llm = apply_profile(rec, name, sealer.as_ref(), org)?;
            Ok(true)
        })?;
        tracing::info!(%org, user = %ctx.principal.user_id, profile = name, "an organization profile was activated");
        Ok(llm)
    }

    /// The LLM of the organization's profile `name`, its key opened (for a start from an
    /// agent profile whose `llm_profile_ref` names no LLM profile of the member's own), through
    /// the provider connection it names ([`through_connection`]: `broken` when deleted);
    /// `None` when there is no such profile. On a server without the installation key the key
    /// is left out.
    ///
    /// # Errors
    /// A key that does not open (another installation key); storage.
    pub(crate) fn profile_llm(
        &self,
        org: OrgId,
        name: &str,
    ) -> Result<Option<crate::user_settings::own_llm::OwnLlm>, DomainError> {
        let Some(rec) = self.store.org_defaults(org)? else {
            return Ok(None);
        };
        let Some(p) = rec.profiles.iter().find(|p| p.name == name) else {
            return Ok(None);
        };
        let api_key = match (&p.api_key_sealed, &self.sealer) {
            (Some(s), Some(_)) => Some(self.open(s, OrgBinding::ProfileApiKey, org)?),
            _ => None,
        };
        let own = crate::user_settings::own_llm::OwnLlm {
            model: p.config_str("model").map(str::to_owned),
            base_url: p.config_str("base_url").map(str::to_owned),
            api_key,
            broken: None,
            key_owner: Some("organization"),
        };
        let owner = format!("The organization's LLM profile '{name}'");
        through_connection(own, &p.config, &rec.provider_connections, &owner, |s| {
            self.open_connection_key(s, org)
        })
        .map(Some)
    }

    /// The default LLM of `rec` (in `out`) through the provider connection it names (an
    /// activated profile's, [`through_connection`]).
    ///
    /// # Errors
    /// A key that does not open.
    pub(super) fn link_default_llm(
        &self,
        rec: &OrgDefaultsRecord,
        org: OrgId,
        out: &mut super::OrgStartDefaults,
    ) -> Result<(), DomainError> {
        let Some(config) = rec.agent_settings.get("llm").and_then(Value::as_object) else {
            return Ok(());
        };
        let llm = crate::user_settings::own_llm::OwnLlm {
            model: out.model.clone(),
            base_url: out.base_url.take(),
            api_key: out.api_key.take(),
            broken: None,
            key_owner: Some("organization"),
        };
        let llm = through_connection(
            llm,
            config,
            &rec.provider_connections,
            "The organization's default LLM",
            |s| self.open_connection_key(s, org),
        )?;
        out.base_url = llm.base_url;
        out.api_key = llm.api_key;
        out.llm_broken = llm.broken;
        Ok(())
    }

    /// A provider connection's sealed key of `org`, opened; `None` on a server without the
    /// installation key.
    ///
    /// # Errors
    /// A key that does not open (another installation key).
    pub(crate) fn open_connection_key(
        &self,
        sealed: &str,
        org: OrgId,
    ) -> Result<Option<String>, DomainError> {
        if self.sealer.is_none() {
            return Ok(None);
        }
        self.open(sealed, OrgBinding::ConnectionApiKey, org)
            .map(Some)
    }

    /// `GET /api/organizations/{org_id}/provider-connections`: `{connections: [...]}`, each
    /// Agent Canvas's `ProviderConnection` (no key; `api_key_set`).
    ///
    /// # Errors
    /// 403 for a key bound elsewhere, 404 when not a member; storage.
    pub fn connections(
        &self,
        ctx: &OrgContext,
        org: OrgId,
    ) -> Result<ProviderConnectionList, DomainError> {
        let rec = self.read_org(ctx, org)?;
        let connections = rec
            .provider_connections
            .iter()
            .map(StoredConnection::view)
            .collect();
        Ok(ProviderConnectionList { connections })
    }

    /// `POST /api/organizations/{org_id}/provider-connections`: a new connection, its key
    /// sealed. Returns it.
    ///
    /// # Errors
    /// 409 past [`MAX_CONNECTIONS`]; 422 for the body (after the permission); 503 on a
    /// server without the installation key; 403/404 as [`Self::save_profile`]; storage.
    pub fn create_connection(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        body: &Value,
    ) -> Result<ProviderConnection, DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        let input = ConnectionInput::read(body, true)?;
        let key = match &input.api_key {
            Some(k) => Some(
                self.sealer()?
                    .seal(k, &OrgBinding::ConnectionApiKey.of(org)),
            ),
            None => None,
        };
        let now = now_micros().unix_timestamp();
        let made = StoredConnection {
            id: Uuid::new_v4(),
            display_name: input.display_name.clone().unwrap_or_default(),
            provider: input.provider.clone().unwrap_or_default(),
            base_url: input.base_url.clone().flatten(),
            api_key_sealed: key,
            created_at: now,
            updated_at: now,
        };
        self.edit_org(ctx, org, &mut |rec| {
            if rec.provider_connections.len() >= MAX_CONNECTIONS {
                return Err(DomainError::AlreadyExists(format!(
                    "Provider connection limit reached: at most {MAX_CONNECTIONS}"
                )));
            }
            rec.provider_connections.push(made.clone());
            Ok(true)
        })?;
        Ok(made.view())
    }

    /// `PATCH /api/organizations/{org_id}/provider-connections/{id}`: the fields sent
    /// changed (a key sent is sealed). Returns the connection.
    ///
    /// # Errors
    /// 404 for an unknown id; 422 for the body (after the permission); 503 when a key is
    /// sent to a server without the installation key; 403/404 as [`Self::save_profile`];
    /// storage.
    pub fn update_connection(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        id: &str,
        body: &Value,
    ) -> Result<ProviderConnection, DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        let input = ConnectionInput::read(body, false)?;
        let key = match &input.api_key {
            Some(k) => Some(
                self.sealer()?
                    .seal(k, &OrgBinding::ConnectionApiKey.of(org)),
            ),
            None => None,
        };
        let wanted = Uuid::parse_str(id).ok();
        let mut out = None;
        self.edit_org(ctx, org, &mut |rec| {
            let c = rec
                .provider_connections
                .iter_mut()
                .find(|c| Some(c.id) == wanted)
                .ok_or_else(|| connection_not_found(id))?;
            if let Some(v) = &input.display_name {
                v.clone_into(&mut c.display_name);
            }
            if let Some(v) = &input.provider {
                v.clone_into(&mut c.provider);
            }
            if let Some(v) = &input.base_url {
                c.base_url.clone_from(v);
            }
            if key.is_some() {
                c.api_key_sealed.clone_from(&key);
            }
            c.updated_at = now_micros().unix_timestamp();
            out = Some(c.view());
            Ok(true)
        })?;
        out.ok_or_else(|| connection_not_found(id))
    }

    /// `DELETE /api/organizations/{org_id}/provider-connections/{id}`: returns the connection
    /// deleted.
    ///
    /// # Errors
    /// 404 for an unknown id; 403/404 as [`Self::save_profile`]; storage.
    pub fn delete_connection(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        id: &str,
    ) -> Result<ProviderConnection, DomainError> {
        let wanted = Uuid::parse_str(id).ok();
        let mut out = None;
        self.edit_org(ctx, org, &mut |rec| {
            let at = rec
                .provider_connections
                .iter()
                .position(|c| Some(c.id) == wanted)
                .ok_or_else(|| connection_not_found(id))?;
            out = Some(rec.provider_connections.remove(at).view());
            Ok(true)
        })?;
        out.ok_or_else(|| connection_not_found(id))
    }
}
