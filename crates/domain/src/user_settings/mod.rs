//! Each user's own settings in an organization (issue 21; OpenHands' `Settings` and
//! `GETSettingsModel`, reference app server OpenAPI 1.11.0): the agent settings (the LLM's
//! model and base URL, the rest kept as sent), the conversation settings, the app preferences,
//! the LLM profiles ([`profiles`]), and the keys, each sealed with the installation key
//! ([`crate::identity::sealing::Sealer`]) and bound to its user and organization, so a sealed
//! value copied to another row does not open.
//!
//! [`patch`] reads `POST /api/v1/settings`; [`view`] writes `GET /api/v1/settings`.

pub mod agent_fields;
pub mod diffs;
pub mod own_llm;
pub mod patch;
pub mod profiles;
pub mod schema;
pub mod view;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::ids::{OrgId, UserId};

pub use profiles::StoredProfile;

/// A user's settings in one organization as stored. Nothing here is a secret in the clear:
/// the LLM key, the search key and the MCP configuration (whose servers may carry keys) are
/// sealed; `agent_settings` never holds `llm.api_key` nor `mcp_config`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserSettingsRecord {
    /// The agent settings without any key (`llm.model`, `llm.base_url`, and whatever else the
    /// client sent, kept as sent).
    pub agent_settings: Map<String, Value>,
    /// The conversation settings as sent (known fields checked by [`patch`]).
    pub conversation_settings: Map<String, Value>,
    /// The app preferences (top-level fields of OpenHands' `Settings`).
    pub preferences: Map<String, Value>,
    /// `agent_settings.llm.api_key`, sealed for [`Binding::LlmApiKey`].
    pub llm_api_key_sealed: Option<String>,
    /// `search_api_key`, sealed for [`Binding::SearchApiKey`].
    pub search_api_key_sealed: Option<String>,
    /// `agent_settings.mcp_config` (JSON text), sealed for [`Binding::McpConfig`].
    pub mcp_config_sealed: Option<String>,
    /// The saved LLM profiles, in name order.
    pub profiles: Vec<StoredProfile>,
    /// The active profile's name.
    pub active_profile: Option<String>,
    /// When the row was last written; `None` for settings never stored (the defaults).
    pub updated_at: Option<OffsetDateTime>,
}

impl UserSettingsRecord {
    /// The LLM object of the agent settings (`agent_settings.llm`), if any.
    pub fn llm(&self) -> Option<&Map<String, Value>> {
        self.agent_settings.get("llm").and_then(Value::as_object)
    }

    /// `agent_settings.llm.<key>` as text.
    pub fn llm_str(&self, key: &str) -> Option<&str> {
        self.llm()?.get(key)?.as_str().filter(|s| !s.is_empty())
    }

    /// A stored profile by name.
    pub fn profile(&self, name: &str) -> Option<&StoredProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }
}

/// What a sealed value of a user's settings is bound to (the associated data of the seal):
/// the organization, the user and the field, so that a value moved to another user, another
/// organization or another field does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `agent_settings.llm.api_key`.
    LlmApiKey,
    /// `search_api_key`.
    SearchApiKey,
    /// `agent_settings.mcp_config`.
    McpConfig,
    /// A profile's key (any profile of the user: renaming keeps it).
    ProfileApiKey,
    /// A custom secret's value (any secret of the user: renaming keeps it).
    CustomSecret,
    /// A git provider token.
    ProviderToken,
}

impl Binding {
    /// The associated data: `user-settings:<org>:<user>:<field>`.
    pub fn of(self, org: OrgId, user: UserId) -> String {
        let what = match self {
            Binding::LlmApiKey => "llm_api_key",
            Binding::SearchApiKey => "search_api_key",
            Binding::McpConfig => "mcp_config",
            Binding::ProfileApiKey => "profile_api_key",
            Binding::CustomSecret => "custom_secret",
            Binding::ProviderToken => "provider_token",
        };
        format!("user-settings:{org}:{user}:{what}")
    }
}

/// Merges `diff` into `target` as OpenHands' `*_diff` payloads are merged: objects merge key
/// by key at any depth, a `null` removes the key, anything else replaces it.
pub fn deep_merge(target: &mut Map<String, Value>, diff: &Map<String, Value>) {
    for (k, v) in diff {
        match v {
            Value::Null => {
                target.remove(k);
            }
            Value::Object(d) => match target.get_mut(k) {
                Some(Value::Object(t)) => deep_merge(t, d),
                _ => {
                    let mut fresh = Map::new();
                    deep_merge(&mut fresh, d);
                    target.insert(k.clone(), Value::Object(fresh));
                }
            },
            other => {
                target.insert(k.clone(), other.clone());
            }
        }
    }
}

/// Opens `sealed`, a value of `user` in `org` sealed under `binding` (issue 21), for the
/// settings and the secrets services alike.
///
/// # Errors
/// A value that does not open (another installation key, another binding) is a storage
/// failure whose message names the binding and the user, never the value.
pub(crate) fn open_sealed(
    sealer: &crate::identity::sealing::Sealer,
    sealed: &str,
    binding: Binding,
    org: OrgId,
    user: UserId,
) -> Result<String, crate::error::DomainError> {
    sealer.open(sealed, &binding.of(org, user)).map_err(|e| {
        crate::error::DomainError::Storage(crate::StorageError::Other(
            format!("a sealed {binding:?} of user {user} does not open: {e}").into(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_merge_merges_objects_and_null_unsets() {
        let mut t = json!({"llm": {"model": "a", "base_url": "u"}, "x": 1})
            .as_object()
            .cloned()
            .unwrap();
        let d =
            json!({"llm": {"model": "b", "base_url": null}, "x": null, "y": {"z": null, "w": 2}});
        deep_merge(&mut t, d.as_object().unwrap());
        assert_eq!(
            Value::Object(t),
            json!({"llm": {"model": "b"}, "y": {"w": 2}})
        );
    }

    #[test]
    fn bindings_differ_by_user_org_and_field() {
        let (o, u) = (OrgId(uuid::Uuid::nil()), UserId(uuid::Uuid::max()));
        assert_ne!(Binding::LlmApiKey.of(o, u), Binding::SearchApiKey.of(o, u));
        assert_ne!(
            Binding::LlmApiKey.of(o, u),
            Binding::LlmApiKey.of(OrgId(uuid::Uuid::max()), u)
        );
    }
}
