//! An organization's defaults for its members (issue 21; OpenHands' enterprise
//! `GET`/`PATCH /api/organizations/{org_id}/settings`): every member reads them
//! (`view_org_settings`) without any key, an owner or admin changes them
//! (`edit_org_settings`), and a start takes them between the member's own settings and the
//! operator's flags ([`OrgDefaultsService::for_start`]).

mod profiles;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::mcp_redaction::{keep_masked, mask_mcp};
use crate::identity::redaction::MASK;
use crate::identity::sealing::Sealer;
use crate::ids::OrgId;
use crate::org_defaults::{
    OrgBinding, OrgDefaultsPatch, OrgDefaultsRecord, OrgDefaultsSettingsResponse,
    OrgDefaultsSettingsUpdate,
};
use crate::permissions::{Permission, Role};
use crate::ports::{IdentityStore, OrgDefaultsStore};
use crate::time_input::now_micros;
use crate::user_settings::deep_merge;
use crate::user_settings::view::conversation_defaults;

/// Organizations' defaults.
#[derive(Clone)]
pub struct OrgDefaultsService {
    store: Arc<dyn OrgDefaultsStore>,
    identity: Arc<dyn IdentityStore>,
    sealer: Option<Sealer>,
}

/// What a start takes from the organization: its default LLM (key opened) and MCP
/// configuration. `Debug` shows no key.
#[derive(Clone, Default, PartialEq)]
pub struct OrgStartDefaults {
    /// `agent_settings.llm.model`.
    pub model: Option<String>,
    /// `agent_settings.llm.base_url`.
    pub base_url: Option<String>,
    /// The LLM key, in the clear.
    pub api_key: Option<String>,
    /// The MCP configuration, unmasked.
    pub mcp_config: Option<Value>,
    /// The organization's `conversation_settings` (what its members' own override; issue 36).
    pub conversation_settings: serde_json::Map<String, Value>,
    /// Why the default LLM cannot be used: it names a provider connection that no longer
    /// exists (`base_url` and `api_key` are then none; issue 25).
    pub llm_broken: Option<String>,
}

impl std::fmt::Debug for OrgStartDefaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrgStartDefaults")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl OrgDefaultsService {
    /// Over the stores, without a sealer (keys cannot be stored or opened until
    /// [`with_sealer`](Self::with_sealer)).
    pub fn new(store: Arc<dyn OrgDefaultsStore>, identity: Arc<dyn IdentityStore>) -> Self {
        OrgDefaultsService {
            store,
            identity,
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

    fn open(&self, sealed: &str, b: OrgBinding, org: OrgId) -> Result<String, DomainError> {
        self.sealer()?.open(sealed, &b.of(org)).map_err(|e| {
            DomainError::Storage(crate::StorageError::Other(
                format!("a sealed {b:?} of organization {org} does not open: {e}").into(),
            ))
        })
    }

    /// The caller's role in `org` (the path's organization), which must grant `permission`.
    ///
    /// # Errors
    /// 403 [`DomainError::KeyNotAuthorizedForOrg`] for a key bound to another organization;
    /// 404 [`DomainError::OrgNotFound`] when not a member; 403
    /// [`DomainError::PermissionDenied`] without the permission.
    fn require_in(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        permission: Permission,
    ) -> Result<Role, DomainError> {
        if ctx.principal.bound_org.is_some_and(|b| b != org) {
            return Err(DomainError::KeyNotAuthorizedForOrg);
        }
        let role = self
            .identity
            .org_membership(org, ctx.principal.user_id)?
            .and_then(|m| m.role)
            .ok_or(DomainError::OrgNotFound)?;
        if !role.grants(permission) {
            return Err(DomainError::PermissionDenied(permission));
        }
        Ok(role)
    }

    /// `GET /api/organizations/{org_id}/settings` (`view_org_settings`, every member):
    /// OpenHands' `OrgDefaultsSettingsResponse`, no key in it.
    ///
    /// # Errors
    /// 403 for a key bound to another organization, 404 when not a member; a value that does
    /// not open; storage.
    pub fn view(
        &self,
        ctx: &OrgContext,
        org: OrgId,
    ) -> Result<OrgDefaultsSettingsResponse, DomainError> {
        self.require_in(ctx, org, Permission::ViewOrgSettings)?;
        let rec = self.store.org_defaults(org)?.unwrap_or_default();
        self.answer(&rec, org)
    }

    /// `PATCH /api/organizations/{org_id}/settings` (`edit_org_settings`: owners and admins):
    /// the diffs deep-merged (`null` unsets), the keys sealed, in one transaction; answers as
    /// [`Self::view`]. An `mcp_config` sent back with the credentials [`Self::view`] masked
    /// still masked keeps the stored ones ([`keep_masked`], issue 38).
    ///
    /// The permission is checked before the body ([`OrgDefaultsSettingsUpdate`], its first
    /// failure answered).
    ///
    /// # Errors
    /// 403 for a key bound elsewhere or without the permission, 404 when not a member; 422
    /// for the body; 503 [`DomainError::SecretsUnavailable`] on a server without the
    /// installation key; storage.
    pub fn update(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        body: &Value,
    ) -> Result<OrgDefaultsSettingsResponse, DomainError> {
        self.require_in(ctx, org, Permission::EditOrgSettings)?;
        let patch: OrgDefaultsPatch =
            crate::typed_body::parse_one::<OrgDefaultsSettingsUpdate>(body)?.into();
        let seal =
            |v: &str, b: OrgBinding| Ok::<_, DomainError>(self.sealer()?.seal(v, &b.of(org)));
        let llm_key = sealed_change(&patch.llm_api_key, |k| seal(k, OrgBinding::LlmApiKey))?;
        let search_key =
            sealed_change(&patch.search_api_key, |k| seal(k, OrgBinding::SearchApiKey))?;
        if matches!(patch.mcp_config, Some(Some(_))) {
            self.sealer()?;
        }
        let rec = self
            .store
            .update_org_defaults(org, now_micros(), &mut |rec| {
                let mut changed = false;
                if let Some(d) = &patch.agent_diff {
                    // The defaults' LLM changed: it is no longer the activated profile.
                    if d.contains_key("llm") {
                        rec.active_profile = None;
                    }
                    deep_merge(&mut rec.agent_settings, d);
                    changed = true;
                }
                if llm_key.is_some() {
                    rec.active_profile = None;
                }
                if let Some(d) = &patch.conversation_diff {
                    deep_merge(&mut rec.conversation_settings, d);
                    changed = true;
                }
                if let Some(change) = &patch.mcp_config {
                    rec.mcp_config_sealed = match change {
                        Some(sent) => {
                            Some(self.seal_mcp(sent, rec.mcp_config_sealed.as_deref(), org)?)
                        }
                        None => None,
                    };
                    changed = true;
                }
                for (change, slot) in [
                    (&llm_key, &mut rec.llm_api_key_sealed),
                    (&search_key, &mut rec.search_api_key_sealed),
                ] {
                    if let Some(v) = change {
                        slot.clone_from(v);
                        changed = true;
                    }
                }
                Ok(changed)
            })?;
        tracing::info!(%org, user = %ctx.principal.user_id, "the organization's defaults changed");
        self.answer(&rec, org)
    }

    /// The MCP configuration `sent` sealed, each credential it shows masked as answered kept
    /// from the `stored` one ([`keep_masked`]: a read-edit-write round trip keeps them).
    ///
    /// # Errors
    /// No installation key; a stored value that does not open.
    fn seal_mcp(
        &self,
        sent: &Value,
        stored: Option<&str>,
        org: OrgId,
    ) -> Result<String, DomainError> {
        let value = match stored {
            Some(s) => keep_masked(sent, &mcp_value(&self.open(s, OrgBinding::McpConfig, org)?)),
            None => sent.clone(),
        };
        Ok(self
            .sealer()?
            .seal(&value.to_string(), &OrgBinding::McpConfig.of(org)))
    }

    fn answer(
        &self,
        rec: &OrgDefaultsRecord,
        org: OrgId,
    ) -> Result<OrgDefaultsSettingsResponse, DomainError> {
        let mut agent = rec.agent_settings.clone();
        let mut llm = agent
            .get("llm")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for k in ["model", "base_url"] {
            llm.entry(k).or_insert(Value::Null);
        }
        llm.insert("api_key".into(), Value::Null);
        agent.insert("llm".into(), Value::Object(llm));
        let mcp = match &rec.mcp_config_sealed {
            Some(s) => mask_mcp(&mcp_value(&self.open(s, OrgBinding::McpConfig, org)?)),
            None => Value::Null,
        };
        agent.insert("mcp_config".into(), mcp);
        let mut conv = conversation_defaults();
        for (k, v) in &rec.conversation_settings {
            conv.insert(k.clone(), v.clone());
        }
        Ok(OrgDefaultsSettingsResponse {
            agent_settings: agent,
            conversation_settings: conv,
            llm_api_key_set: rec.llm_api_key_sealed.is_some(),
            search_api_key: rec.search_api_key_sealed.as_ref().map(|_| MASK.to_owned()),
        })
    }

    /// Whether `org` has a default LLM key.
    ///
    /// # Errors
    /// Storage.
    pub fn llm_key_set(&self, org: OrgId) -> Result<bool, DomainError> {
        Ok(self
            .store
            .org_defaults(org)?
            .is_some_and(|r| r.llm_api_key_sealed.is_some()))
    }

    /// What a start in `org` takes from its defaults, keys opened; none on a server without
    /// the installation key (which runs no start).
    ///
    /// # Errors
    /// A value that does not open (another installation key); storage.
    pub fn for_start(&self, org: OrgId) -> Result<OrgStartDefaults, DomainError> {
        let Some(rec) = self.store.org_defaults(org)? else {
            return Ok(OrgStartDefaults::default());
        };
        if self.sealer.is_none() {
            return Ok(OrgStartDefaults {
                conversation_settings: rec.conversation_settings,
                ..OrgStartDefaults::default()
            });
        }
        let mut out = OrgStartDefaults {
            conversation_settings: rec.conversation_settings.clone(),
            model: rec.llm_str("model").map(str::to_owned),
            base_url: rec.llm_str("base_url").map(str::to_owned),
            api_key: rec
                .llm_api_key_sealed
                .as_deref()
                .map(|s| self.open(s, OrgBinding::LlmApiKey, org))
                .transpose()?,
            mcp_config: rec
                .mcp_config_sealed
                .as_deref()
                .map(|s| {
                    Ok::<_, DomainError>(mcp_value(&self.open(s, OrgBinding::McpConfig, org)?))
                })
                .transpose()?
                .filter(|v| !v.is_null()),
            llm_broken: None,
        };
        self.link_default_llm(&rec, org, &mut out)?;
        Ok(out)
    }
}

/// A secret change sealed: `None` leaves it, `Some(None)` unsets it.
fn sealed_change(
    change: &Option<Option<String>>,
    seal: impl Fn(&str) -> Result<String, DomainError>,
) -> Result<Option<Option<String>>, DomainError> {
    Ok(match change {
        None => None,
        Some(None) => Some(None),
        Some(Some(v)) => Some(Some(seal(v)?)),
    })
}

/// The MCP configuration's JSON text as a value (an object; anything else is dropped).
fn mcp_value(text: &str) -> Value {
    serde_json::from_str::<Map<String, Value>>(text).map_or(Value::Null, Value::Object)
}
