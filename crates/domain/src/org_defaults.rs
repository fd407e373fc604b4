//! An organization's defaults for its members (issue 21; OpenHands' enterprise
//! `GET`/`PATCH /api/organizations/{org_id}/settings`, `OrgDefaultsSettingsResponse`): the
//! agent settings (the LLM's model and base URL, the rest kept as sent), the conversation
//! settings, and three values sealed with the installation key, bound to the organization and
//! the field ([`OrgBinding`]): the LLM key, the search key and the MCP configuration.
//!
//! A member's own settings win over these at a start; the operator's `--llm-*` flags are the
//! last fallback (`services::start_settings`). No answer holds a sealed value: the LLM key is
//! answered as `llm_api_key_set`, the search key as a mask, the MCP configuration masked.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_model::ValidationError;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::ids::OrgId;
use crate::typed_body::{RequestBody, fields};
use crate::user_settings::diffs::{
    AgentDiff, ConversationSettingsDiff, SecretChange, agent_settings_diff_schema, secret_change,
};
use crate::validation::{field, loc};

/// An organization's defaults as stored. Nothing here is a secret in the clear.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OrgDefaultsRecord {
    /// The agent settings without any key (`llm.model`, `llm.base_url`, the rest as sent).
    pub agent_settings: Map<String, Value>,
    /// The conversation settings as sent (known fields checked as a user's are).
    pub conversation_settings: Map<String, Value>,
    /// `agent_settings.llm.api_key` (or `llm_api_key`), sealed for [`OrgBinding::LlmApiKey`].
    pub llm_api_key_sealed: Option<String>,
    /// `search_api_key`, sealed for [`OrgBinding::SearchApiKey`].
    pub search_api_key_sealed: Option<String>,
    /// `agent_settings.mcp_config` (JSON text), sealed for [`OrgBinding::McpConfig`].
    pub mcp_config_sealed: Option<String>,
    /// The organization's LLM profiles (issue 25), each key sealed for
    /// [`OrgBinding::ProfileApiKey`], by name.
    pub profiles: Vec<crate::user_settings::StoredProfile>,
    /// The profile last activated, while the defaults' LLM is still it.
    pub active_profile: Option<String>,
    /// The organization's LLM provider connections (issue 25), each key sealed for
    /// [`OrgBinding::ConnectionApiKey`].
    pub provider_connections: Vec<crate::org_profiles::StoredConnection>,
    /// When the row was last written; `None` for defaults never stored.
    pub updated_at: Option<OffsetDateTime>,
}

impl OrgDefaultsRecord {
    /// `agent_settings.llm.<key>` as non-empty text.
    pub fn llm_str(&self, key: &str) -> Option<&str> {
        self.agent_settings
            .get("llm")?
            .as_object()?
            .get(key)?
            .as_str()
            .filter(|s| !s.is_empty())
    }
}

/// What a sealed value of an organization's defaults is bound to: the organization and the
/// field, so a value moved to another organization, another field or a user's row does not
/// open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrgBinding {
    /// The default LLM key.
    LlmApiKey,
    /// The default search key.
    SearchApiKey,
    /// The default MCP configuration.
    McpConfig,
    /// An LLM profile's key (any profile of the organization: renaming keeps it).
    ProfileApiKey,
    /// An LLM provider connection's key (any connection of the organization).
    ConnectionApiKey,
}

impl OrgBinding {
    /// The associated data: `org-defaults:<org>:<field>`.
    pub fn of(self, org: OrgId) -> String {
        let what = match self {
            OrgBinding::LlmApiKey => "llm_api_key",
            OrgBinding::SearchApiKey => "search_api_key",
            OrgBinding::McpConfig => "mcp_config",
            OrgBinding::ProfileApiKey => "profile_api_key",
            OrgBinding::ConnectionApiKey => "provider_connection_api_key",
        };
        format!("org-defaults:{org}:{what}")
    }
}

/// `GET` and `PATCH /api/organizations/{org_id}/settings`' answer (OpenHands'
/// `OrgDefaultsSettingsResponse`): no key is ever answered.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrgDefaultsSettingsResponse {
    /// The agent settings: `llm.api_key` always `null`, the MCP configuration's credentials
    /// masked (or `null`).
    #[schema(schema_with = crate::user_settings::diffs::agent_settings_answer_schema)]
    pub agent_settings: Map<String, Value>,
    /// The conversation settings, defaults filled in.
    #[schema(value_type = crate::user_settings::diffs::ConversationSettingsDiff)]
    pub conversation_settings: Map<String, Value>,
    /// Whether a default LLM key is stored.
    pub llm_api_key_set: bool,
    /// `**********` when a search key is stored, else `null`.
    pub search_api_key: Option<String>,
}

/// The organization's defaults as a partial update: the diffs deep-merged (`null` unsets a
/// key), the keys sealed (`""` or `null` unsets one); `llm_api_key` wins over
/// `agent_settings_diff.llm.api_key`. Any other field is refused. Each field is checked as a
/// member's settings check it.
// OpenHands' `OrgDefaultsSettingsUpdate`, the body of `PATCH
// /api/organizations/{org_id}/settings`. No `Debug`: it holds keys.
#[derive(Clone, Default, PartialEq, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OrgDefaultsSettingsUpdate {
    /// [`AgentDiff`]'s rules.
    #[schema(schema_with = agent_settings_diff_schema)]
    agent_settings_diff: Option<Value>,
    /// Deep-merged into the stored conversation settings.
    conversation_settings_diff: Option<ConversationSettingsDiff>,
    /// The default search key.
    #[serde(deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_text)]
    search_api_key: Option<Option<String>>,
    /// The default LLM key.
    #[serde(deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_text)]
    llm_api_key: Option<Option<String>>,
}

impl RequestBody for OrgDefaultsSettingsUpdate {
    /// The diffs' rules the schema leaves to the code ([`AgentDiff::check`],
    /// [`ConversationSettingsDiff::check`]); the first failure only.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let root = loc(["body"]);
        let first = || {
            if let Some(diff) = &self.agent_settings_diff {
                AgentDiff::check(diff, &field(&root, "agent_settings_diff"))?;
            }
            if let Some(diff) = &self.conversation_settings_diff {
                diff.check(&field(&root, "conversation_settings_diff"))?;
            }
            Ok(())
        };
        first().map_err(|e: ValidationError| vec![e])
    }
}

impl From<OrgDefaultsSettingsUpdate> for OrgDefaultsPatch {
    fn from(body: OrgDefaultsSettingsUpdate) -> Self {
        let agent = body.agent_settings_diff.and_then(AgentDiff::split);
        let (agent_diff, llm_api_key, mcp_config) = match agent {
            Some(a) => (Some(a.diff), a.llm_api_key, a.mcp_config),
            None => (None, None, None),
        };
        OrgDefaultsPatch {
            agent_diff,
            llm_api_key: secret_change(body.llm_api_key).or(llm_api_key),
            mcp_config,
            conversation_diff: body
                .conversation_settings_diff
                .map(ConversationSettingsDiff::into_map),
            search_api_key: secret_change(body.search_api_key),
        }
    }
}

/// A validated `PATCH /api/organizations/{org_id}/settings` body. `Debug` shows no key.
#[derive(Clone, Default, PartialEq)]
pub struct OrgDefaultsPatch {
    /// `agent_settings_diff` without `llm.api_key` and `mcp_config`.
    pub agent_diff: Option<Map<String, Value>>,
    /// The LLM key: `llm_api_key`, else `agent_settings_diff.llm.api_key` (`""` or `null`
    /// unsets it; `llm: null` unsets it with the LLM).
    pub llm_api_key: SecretChange,
    /// `agent_settings_diff.mcp_config`: `Some(None)` unsets it.
    pub mcp_config: Option<Option<Value>>,
    /// `conversation_settings_diff`.
    pub conversation_diff: Option<Map<String, Value>>,
    /// `search_api_key`.
    pub search_api_key: SecretChange,
}

impl std::fmt::Debug for OrgDefaultsPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrgDefaultsPatch")
            .field("agent_diff", &self.agent_diff)
            .field("llm_api_key", &self.llm_api_key.as_ref().map(|_| "***"))
            .field("mcp_config", &self.mcp_config.as_ref().map(|_| "***"))
            .field("conversation_diff", &self.conversation_diff)
            .field(
                "search_api_key",
                &self.search_api_key.as_ref().map(|_| "***"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_model::LocItem;

    /// A body as the service reads it (its first failure).
    fn parse_org_defaults_patch(body: &Value) -> Result<OrgDefaultsPatch, ValidationError> {
        crate::typed_body::parse_one::<OrgDefaultsSettingsUpdate>(body).map(OrgDefaultsPatch::from)
    }

    /// Where an entry of a 422 points.
    fn at(e: &ValidationError) -> Vec<LocItem> {
        e.loc.clone()
    }

    #[test]
    fn the_key_comes_from_either_place_and_other_fields_are_refused() {
        let p = parse_org_defaults_patch(&json!({"agent_settings_diff": {"llm": {"model": "m", "api_key": "k1"}, "mcp_config": {"a": 1}}})).unwrap();
        assert_eq!(p.llm_api_key, Some(Some("k1".into())));
        assert_eq!(
            p.agent_diff,
            Some(json!({"llm": {"model": "m"}}).as_object().cloned().unwrap())
        );
        assert_eq!(p.mcp_config, Some(Some(json!({"a": 1}))));
        let p = parse_org_defaults_patch(
            &json!({"llm_api_key": "k2", "agent_settings_diff": {"llm": {"api_key": "k1"}}}),
        )
        .unwrap();
        assert_eq!(
            p.llm_api_key,
            Some(Some("k2".into())),
            "the top-level key wins"
        );
        assert!(!format!("{p:?}").contains("k2"));
        let p = parse_org_defaults_patch(&json!({"llm_api_key": ""})).unwrap();
        assert_eq!(p.llm_api_key, Some(None));
        let e = parse_org_defaults_patch(&json!({"language": "en"})).unwrap_err();
        assert_eq!(at(&e), loc(["body", "language"]));
        let e = parse_org_defaults_patch(&json!({"llm_api_key": 3})).unwrap_err();
        assert_eq!(at(&e), loc(["body", "llm_api_key"]));
        let e = parse_org_defaults_patch(
            &json!({"agent_settings_diff": {"llm": {"base_url": "ftp://x"}}}),
        )
        .unwrap_err();
        assert_eq!(
            at(&e),
            loc(["body", "agent_settings_diff", "llm", "base_url"])
        );
        assert!(parse_org_defaults_patch(&json!([1])).is_err());
    }

    #[test]
    fn bindings_differ_by_org_and_field_and_from_users() {
        let o = OrgId(uuid::Uuid::nil());
        assert_ne!(OrgBinding::LlmApiKey.of(o), OrgBinding::McpConfig.of(o));
        assert_ne!(
            OrgBinding::LlmApiKey.of(o),
            OrgBinding::LlmApiKey.of(OrgId(uuid::Uuid::max()))
        );
        assert!(OrgBinding::LlmApiKey.of(o).starts_with("org-defaults:"));
    }
}
