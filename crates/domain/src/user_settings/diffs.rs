//! The nested settings that `POST /api/v1/settings` and `PATCH
//! /api/organizations/{org_id}/settings` share (issue 21): `agent_settings_diff`,
//! `conversation_settings_diff`, and the LLM object a diff and a profile save carry.
//!
//! Each is a typed body: [`ConversationSettingsDiff`], [`AgentSettingsDiff`], [`LlmInput`].
//! The agent diff and the LLM object are judged by [`AgentDiff::check`] and [`check_llm`] (the
//! bodies' `RequestBody::check`), which word each failure as the API always has: the first
//! one, a NUL anywhere first; the agent diff is then stored as sent but for
//! [`AgentDiff::split`]'s changes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_model::{LocItem, ValidationError};
use utoipa::ToSchema;
use utoipa::openapi::schema::{AnyOfBuilder, Schema};

use super::agent_fields;
use crate::agent_profile_fields::{CondenserSettings, VerificationSettings};
use crate::typed_body::fields::{self, Whole};
use crate::validation::{refuse_nul_deep, refuse_nul_in};

/// `conversation_settings.security_analyzer` values (or `null`).
pub const SECURITY_ANALYZERS: [&str; 2] = ["llm", "none"];

/// A change to one secret field: `None` leaves it, `Some(None)` unsets it, `Some(Some(v))`
/// sets it.
pub type SecretChange = Option<Option<String>>;

/// An LLM base URL as [`check_llm`] takes it: empty (unset), or `http://` / `https://` then
/// anything without NUL.
pub const BASE_URL_PATTERN: &str = r"^(https?://[^\x00]*)?$";

/// `conversation_settings_diff` (OpenHands' `ConversationSettings`, as a diff): deep-merged
/// into the stored conversation settings, `null` unsetting a key; the fields below checked,
/// any other kept as sent (without NUL). A whole number sent as `7.0` is taken and stored as
/// `7`, as pydantic's lax mode does.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[schema(as = ConversationSettings)]
pub struct ConversationSettingsDiff {
    /// An integer ≥ 1, or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = at_least_one)]
    schema_version: Option<Option<Whole>>,
    /// An integer ≥ 1 (the iterations of a start whose request sets none), or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = at_least_one)]
    max_iterations: Option<Option<Whole>>,
    /// Whether a start asks the agent server to confirm actions, or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    confirmation_mode: Option<Option<bool>>,
    /// [`SECURITY_ANALYZERS`] or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = security_analyzer)]
    security_analyzer: Option<Option<String>>,
    /// Any other key, kept as sent.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

fn at_least_one() -> utoipa::openapi::schema::Object {
    fields::nullable_integer_from(1).build()
}

fn security_analyzer() -> utoipa::openapi::schema::Object {
    fields::literal_or_null(&SECURITY_ANALYZERS)
}

impl ConversationSettingsDiff {
    /// What [`crate::typed_body::RequestBody::check`] judges of the diff at `at`: no NUL in
    /// the keys it does not declare.
    ///
    /// # Errors
    /// `string_pattern_mismatch` at the first NUL.
    pub fn check(&self, at: &[LocItem]) -> Result<(), ValidationError> {
        refuse_nul_in(&self.others, at)
    }

    /// The diff as merged: the fields sent, the integers as integers.
    pub fn into_map(self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => unreachable!("a struct of JSON values serializes as an object"),
        }
    }
}

/// `agent_settings_diff` (OpenHands' `AgentSettings`, as a diff), declared: deep-merged into
/// the stored agent settings, `null` removing a key; `mcp_config` an object or `null`; `llm`
/// an [`LlmInput`] or `null`; the fields a start acts on or refuses
/// ([`super::agent_fields`]' list: `condenser`, `verification`, `agent`, `agent_kind`,
/// `tool_concurrency_limit`, `tools`); any other key kept as sent; no NUL. Judged by
/// [`AgentDiff::check`]; what is stored is the diff as sent but for [`AgentDiff::split`]'s
/// changes, so a key keeps the place it was sent at.
#[derive(Clone, Deserialize, ToSchema)]
#[allow(
    dead_code,
    reason = "a judge: its fields are read by parsing, the diff is stored as sent"
)]
#[schema(
    as = AgentSettings,
    description = "Deep-merged into the stored agent settings (`null` removes a key)."
)]
pub struct AgentSettingsDiff {
    /// The MCP configuration (sealed), or `null`.
    #[serde(default)]
    #[schema(schema_with = mcp_config_schema)]
    mcp_config: Option<Map<String, Value>>,
    /// The LLM, or `null` (unsets it).
    #[serde(default)]
    #[schema(schema_with = nullable_llm)]
    llm: Option<LlmInput>,
    /// The condenser, or `null` (the default).
    #[serde(default)]
    #[schema(schema_with = fields::inline_or_null::<CondenserSettings>)]
    condenser: Option<CondenserSettings>,
    /// The critic's settings (the critic off), or `null`.
    #[serde(default)]
    #[schema(schema_with = fields::inline_or_null::<VerificationSettings>)]
    verification: Option<VerificationSettings>,
    /// [`AGENT_CLASS`](crate::agent_profile_fields::AGENT_CLASS) or `null`.
    #[serde(default)]
    #[schema(schema_with = agent_fields::agent_schema)]
    agent: Option<String>,
    /// `openhands` or `null`.
    #[serde(default)]
    #[schema(schema_with = agent_fields::agent_kind_schema)]
    agent_kind: Option<String>,
    /// An integer ≥ 1, or `null`.
    #[serde(default)]
    #[schema(schema_with = agent_fields::concurrency_schema)]
    tool_concurrency_limit: Option<Whole>,
    /// `{name, params}` objects replacing the standard tools, or `null`.
    #[serde(default)]
    #[schema(schema_with = agent_fields::tools_schema)]
    tools: Option<Vec<Map<String, Value>>>,
    /// Any other key: kept as sent.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

impl crate::typed_body::RequestBody for AgentSettingsDiff {}

fn mcp_config_schema() -> Schema {
    AnyOfBuilder::new()
        .item(fields::free_form("The MCP configuration (sealed).").title(Some("MCPConfig")))
        .item(fields::null())
        .into()
}

fn nullable_llm() -> Schema {
    AnyOfBuilder::new()
        .item(llm_schema("LLM"))
        .item(fields::null())
        .description(Some("`null` unsets the key."))
        .into()
}

/// A checked `agent_settings_diff`, split for storage.
#[derive(Clone, Default, PartialEq)]
pub struct AgentDiff {
    /// The diff without `llm.api_key` and `mcp_config`, `llm` as [`LlmInput::split`] stores
    /// it, `tool_concurrency_limit` an integer.
    pub diff: Map<String, Value>,
    /// Whether the diff touches `llm` (a profile stops being the active one).
    pub touches_llm: bool,
    /// `llm.api_key` (`""` unsets, as `null`; `llm: null` unsets it with the LLM).
    pub llm_api_key: SecretChange,
    /// `mcp_config`: `Some(None)` unsets it.
    pub mcp_config: Option<Option<Value>>,
}

impl AgentDiff {
    /// Judges `agent_settings_diff` at `at`: no NUL in a key or a string (reported first,
    /// wherever it is), then `null` or an [`AgentSettingsDiff`].
    ///
    /// # Errors
    /// The first failure's 422 entry: `string_pattern_mismatch` at a NUL, `model_type`
    /// (`AgentSettings`, `MCPConfig`, `LLM`), or the field's own.
    pub fn check(v: &Value, at: &[LocItem]) -> Result<(), ValidationError> {
        refuse_nul_deep(v, at)?;
        if v.is_null() {
            return Ok(());
        }
        crate::typed_body::parse_at::<AgentSettingsDiff>(v, at)
            .map(drop)
            .map_err(|mut e| e.swap_remove(0))
    }

    /// The parts of a diff [`Self::check`] passed; `None` for `null`.
    pub fn split(v: Value) -> Option<AgentDiff> {
        let Value::Object(mut diff) = v else {
            return None;
        };
        let mcp_config = diff
            .remove("mcp_config")
            .map(|m| Some(m).filter(Value::is_object));
        let mut out = AgentDiff {
            mcp_config,
            ..AgentDiff::default()
        };
        if let Some(llm) = diff.get_mut("llm") {
            out.touches_llm = true;
            out.llm_api_key = match llm {
                Value::Object(m) => {
                    let (config, key) = LlmInput::checked(std::mem::take(m)).split();
                    *m = config;
                    key
                }
                _ => Some(None),
            };
        }
        // A whole number sent as `3.0` is stored as `3`, as pydantic's lax mode takes it.
        if let Some(limit) = diff.get_mut("tool_concurrency_limit")
            && let Ok(Whole(n)) = Whole::deserialize(&*limit)
        {
            *limit = Value::from(n);
        }
        out.diff = diff;
        Some(out)
    }
}

impl std::fmt::Debug for AgentDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDiff")
            .field("diff", &self.diff)
            .field("touches_llm", &self.touches_llm)
            .field("llm_api_key", &self.llm_api_key.as_ref().map(|_| "***"))
            .field("mcp_config", &self.mcp_config.as_ref().map(|_| "***"))
            .finish()
    }
}

/// An LLM object (`agent_settings_diff.llm`, a profile save's `llm`; OpenHands' `LLM`):
/// `api_key`, `model`, `base_url` and `provider_connection_id` text or `null`, a non-empty base
/// URL `http://` or `https://` ([`BASE_URL_PATTERN`]); other keys kept as sent; no NUL.
/// Serialized, it is the LLM as stored ([`LlmInput::split`]): no `api_key`, `model` and
/// `base_url` sent as `""` unset (`null`), what was not sent left out.
#[derive(Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[schema(
    as = LLM,
    description = "An LLM configuration: `api_key` is sealed (`\"\"` or `null`: none); `model` and `base_url` are text or `null` (`\"\"` unsets); a base URL is `http://` or `https://`; `provider_connection_id` names one of the organization's provider connections, whose base URL and key the LLM then uses (a profile naming one stores no key or base URL of its own)."
)]
pub struct LlmInput {
    /// The key (sealed), or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "fields::always"
    )]
    #[schema(schema_with = fields::nullable_text)]
    api_key: Option<Option<String>>,
    /// The model, or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "text_or_unset"
    )]
    #[schema(schema_with = fields::nullable_text)]
    model: Option<Option<String>>,
    /// The base URL ([`BASE_URL_PATTERN`]), or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "text_or_unset"
    )]
    #[schema(schema_with = base_url_schema)]
    base_url: Option<Option<String>>,
    /// The provider connection whose base URL and key the LLM takes (issue 25), or `null`.
    #[serde(
        default,
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    provider_connection_id: Option<Option<String>>,
    /// Any other key: kept as sent.
    #[serde(flatten)]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

/// `#[serde(serialize_with = …)]` for text that `""` unsets: `""` is written `null`.
fn text_or_unset<S: serde::Serializer>(
    v: &Option<Option<String>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    v.as_ref()
        .and_then(Option::as_deref)
        .filter(|t| !t.is_empty())
        .serialize(s)
}

impl LlmInput {
    /// The LLM as stored (this type serialized) and its key apart: `None` when not sent,
    /// `Some(None)` for `""` or `null`.
    pub fn split(mut self) -> (Map<String, Value>, SecretChange) {
        let key = secret_change(self.api_key.take());
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => (m, key),
            _ => unreachable!("a struct of JSON values serializes as an object"),
        }
    }

    /// Reads an LLM object [`check_llm`] passed.
    ///
    /// # Panics
    /// When `llm` is not one (a caller's bug: it is checked first).
    pub fn checked(llm: Map<String, Value>) -> LlmInput {
        serde_json::from_value(Value::Object(llm)).expect("the LLM object was checked")
    }
}

impl crate::typed_body::RequestBody for LlmInput {
    /// No NUL in the other keys.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        fields::check_others(&self.others)
    }
}

/// An LLM's base URL: [`BASE_URL_PATTERN`] or `null`, anything else one `value_error`.
fn base_url_schema() -> utoipa::openapi::schema::Object {
    fields::nullable_string()
        .pattern(Some(BASE_URL_PATTERN))
        .extensions(Some(fields::value_error_words_nul_apart(
            "base_url must be an http:// or https:// URL",
        )))
        .build()
}

/// Checks an LLM object (`llm`, a JSON object) at `at` ([`LlmInput`]).
///
/// # Errors
/// The first 422 entry under `at`: `string_type` or `value_error` at the field, a NUL's own.
pub fn check_llm(llm: &Value, at: &[LocItem]) -> Result<(), ValidationError> {
    crate::typed_body::parse_at::<LlmInput>(llm, at)
        .map(drop)
        .map_err(|mut e| e.swap_remove(0))
}

/// A key sent as text or `null` (`""` is none, as `null`).
pub fn secret_change(sent: Option<Option<String>>) -> SecretChange {
    sent.map(|k| k.filter(|s| !s.is_empty()))
}

/// The schema of an LLM object ([`LlmInput`], inline), titled `title` (what a 422 names it).
pub fn llm_schema(title: &str) -> Schema {
    fields::inline::<LlmInput>(Some(title))
}

/// `agent_settings_diff`'s schema: an [`AgentSettingsDiff`] or `null`, documented only (the
/// bodies' `RequestBody::check` judges it by [`AgentDiff::check`], which words a NUL first).
pub fn agent_settings_diff_schema() -> Schema {
    fields::documentation_only(
        AnyOfBuilder::new()
            .item(fields::inline::<AgentSettingsDiff>(None))
            .item(fields::null()),
    )
}

/// The agent settings as answered (`OrgDefaultsSettingsResponse`'s `agent_settings`): `llm`
/// with `model` and `base_url` (text or `null`) and `api_key` always `null`, `mcp_config` with
/// its credentials masked or `null`, any other key as stored.
pub fn agent_settings_answer_schema() -> Schema {
    let llm = fields::free_form(
        "The LLM: `api_key` is always `null` (`llm_api_key_set` says whether a key is stored).",
    )
    .title(Some("AnsweredLLM"))
    .required("model")
    .required("base_url")
    .required("api_key")
    .property("model", fields::nullable_text())
    .property("base_url", fields::nullable_text())
    .property("api_key", fields::null());
    fields::free_form("The stored agent settings; no key is ever answered.")
        .title(Some("AnsweredAgentSettings"))
        .required("llm")
        .property("llm", llm)
        .property(
            "mcp_config",
            AnyOfBuilder::new()
                .item(fields::free_form(
                    "The MCP configuration, its credentials masked (`**********`).",
                ))
                .item(fields::null()),
        )
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::loc;
    use serde_json::json;

    /// The document's base URL pattern takes exactly what [`check_llm`] takes.
    #[test]
    fn the_base_url_pattern_agrees_with_the_check() {
        let pattern = regex::Regex::new(BASE_URL_PATTERN).unwrap();
        for url in [
            "", "http://x", "https://", "ftp://x", "HTTP://x", "http:/x", "x",
        ] {
            let llm = json!({ "base_url": url });
            assert_eq!(
                pattern.is_match(url),
                check_llm(&llm, &loc(["body"])).is_ok(),
                "{url:?}"
            );
        }
    }

    #[test]
    fn an_llm_is_stored_without_its_key_and_empty_text_unsets() {
        let sent = json!({"model": "", "base_url": "http://x", "api_key": "", "extra": 1});
        let split = |v: Value| LlmInput::checked(v.as_object().cloned().unwrap()).split();
        let (config, key) = split(sent);
        assert_eq!(key, Some(None));
        assert_eq!(
            serde_json::to_string(&config).unwrap(),
            r#"{"model":null,"base_url":"http://x","extra":1}"#
        );
        let (_, key) = split(json!({"api_key": "k"}));
        assert_eq!(key, Some(Some("k".into())));
        assert_eq!(split(json!({})).1, None);
    }

    /// The agent diff is kept in the order sent (it is stored and answered so).
    #[test]
    fn the_agent_diff_keeps_its_order() {
        let sent = json!({"z": 1, "llm": {"api_key": "k", "model": "m"}, "a": 2, "mcp_config": {}});
        assert!(AgentDiff::check(&sent, &loc(["body", "agent_settings_diff"])).is_ok());
        let split = AgentDiff::split(sent).unwrap();
        assert_eq!(
            serde_json::to_string(&split.diff).unwrap(),
            r#"{"z":1,"llm":{"model":"m"},"a":2}"#
        );
        assert_eq!(
            (split.touches_llm, split.llm_api_key, split.mcp_config),
            (true, Some(Some("k".into())), Some(Some(json!({}))))
        );
        assert!(AgentDiff::split(Value::Null).is_none());
    }
}
