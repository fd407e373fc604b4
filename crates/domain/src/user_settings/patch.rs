//! `POST /api/v1/settings` (issue 21): a partial update as OpenHands' clients send it
//! ([`SettingsRequest`], OpenHands' `Settings`). The nested settings come as
//! `agent_settings_diff` and `conversation_settings_diff` ([`super::diffs`]), deep-merged into
//! what is stored (a key set to `null` is unset); the app preferences as top-level fields
//! (`null` unsets one). The legacy nested keys `agent_settings` and `conversation_settings`
//! are refused (422), as OpenHands refuses them. Fields a `GET` answers but a client cannot set
//! (`llm_api_key_set`, `provider_tokens_set`, `email`, …) and unknown fields are ignored, so a
//! `GET` → edit → `POST` round trip works. No NUL anywhere.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use switchboard_model::{LocItem, ValidationError};
use utoipa::ToSchema;
use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, SchemaType, Type};

use super::diffs::{
    AgentDiff, ConversationSettingsDiff, SecretChange, agent_settings_diff_schema, secret_change,
};
use crate::settings::parse_marketplace;
use crate::typed_body::RequestBody;
use crate::typed_body::fields::{self, JsonValueWithoutNul, Whole};
use crate::validation::{NO_NUL_PATTERN, field, loc};
use crate::validation::{refuse_nul_deep, refuse_nul_in};

/// OpenHands' `SandboxGroupingStrategy`.
pub const SANDBOX_GROUPING_STRATEGIES: [&str; 5] = [
    "NO_GROUPING",
    "GROUP_BY_NEWEST",
    "LEAST_RECENTLY_USED",
    "FEWEST_CONVERSATIONS",
    "ADD_TO_ANY",
];

/// A validated `POST /api/v1/settings` body. `Debug` shows no key.
#[derive(Clone, Default, PartialEq)]
pub struct SettingsPatch {
    /// `agent_settings_diff` without `llm.api_key` and `mcp_config`.
    pub agent_diff: Option<Map<String, Value>>,
    /// Whether the diff touches `llm` (a profile stops being the active one).
    pub touches_llm: bool,
    /// `agent_settings_diff.llm.api_key` (`""` unsets, as `null`).
    pub llm_api_key: SecretChange,
    /// `agent_settings_diff.mcp_config`: `Some(None)` unsets it.
    pub mcp_config: Option<Option<Value>>,
    /// `conversation_settings_diff`.
    pub conversation_diff: Option<Map<String, Value>>,
    /// Top-level preferences: `null` unsets one.
    pub preferences: Map<String, Value>,
    /// `search_api_key`.
    pub search_api_key: SecretChange,
}

impl std::fmt::Debug for SettingsPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsPatch")
            .field("agent_diff", &self.agent_diff)
            .field("llm_api_key", &self.llm_api_key.as_ref().map(|_| "***"))
            .field("mcp_config", &self.mcp_config.as_ref().map(|_| "***"))
            .field("conversation_diff", &self.conversation_diff)
            .field("preferences", &self.preferences)
            .field(
                "search_api_key",
                &self.search_api_key.as_ref().map(|_| "***"),
            )
            .finish()
    }
}

/// `Settings` as a partial update: the nested settings as `*_diff`, the preferences at the
/// top level (`null` unsets one); the legacy `agent_settings` and `conversation_settings` are
/// refused; fields a GET answers but a client cannot set, and unknown fields, are ignored. No
/// NUL in any string or key.
// The body of `POST /api/v1/settings`. The preferences are the fields that serialize
// (`SettingsPatch::preferences`); the others never do (`fields::always`). No `Debug`: it holds
// keys (`SettingsPatch`'s hides them).
#[derive(Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(default)]
#[schema(as = Settings)]
pub struct SettingsRequest {
    /// Refused: `agent_settings_diff` replaces it.
    #[serde(skip_serializing_if = "fields::always")]
    #[schema(schema_with = legacy_agent_settings)]
    agent_settings: Option<Value>,
    /// Refused: `conversation_settings_diff` replaces it.
    #[serde(skip_serializing_if = "fields::always")]
    #[schema(schema_with = legacy_conversation_settings)]
    conversation_settings: Option<Value>,
    // The app preferences, each `null` to unset.
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    enable_sound_notifications: Option<Option<bool>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    enable_proactive_conversation_starters: Option<Option<bool>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    git_full_clone: Option<Option<bool>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    v1_enabled: Option<Option<bool>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_bool)]
    user_consents_to_analytics: Option<Option<bool>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    language: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    git_user_name: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    git_user_email: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    sandbox_base_container_image: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    sandbox_runtime_container_image: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = fields::nullable_text)]
    default_sandbox_spec_id: Option<Option<String>>,
    /// Sealed, never answered (`search_api_key_set`); `""` or `null` unsets it.
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "fields::always"
    )]
    #[schema(schema_with = fields::nullable_text)]
    search_api_key: Option<Option<String>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = any_integer)]
    user_version: Option<Option<Whole>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = any_integer)]
    remote_runtime_resource_factor: Option<Option<Whole>>,
    /// Kept as sent (`5` stays `5`).
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = budget)]
    max_budget_per_task: Option<Option<Number>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = names)]
    disabled_skills: Option<Option<Vec<String>>>,
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = grouping_strategy)]
    sandbox_grouping_strategy: Option<Option<String>>,
    /// Each entry as the organization's ([`parse_marketplace`]), kept as sent.
    #[serde(
        deserialize_with = "fields::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = marketplaces)]
    registered_marketplaces: Option<Option<Vec<Value>>>,
    /// [`AgentDiff`]'s rules.
    #[serde(skip_serializing_if = "fields::always")]
    #[schema(schema_with = agent_settings_diff_schema)]
    agent_settings_diff: Option<Value>,
    /// Deep-merged into the stored conversation settings.
    #[serde(skip_serializing_if = "fields::always")]
    conversation_settings_diff: Option<ConversationSettingsDiff>,
    /// Any other key: ignored.
    #[serde(flatten, skip_serializing_if = "fields::always")]
    #[schema(schema_with = fields::others_without_nul)]
    others: Map<String, Value>,
}

impl RequestBody for SettingsRequest {
    /// What the schema leaves to the code: no NUL in the keys ignored, the diffs and the
    /// marketplace entries (judged first, as the whole body's rule), then the agent diff
    /// ([`AgentDiff::check`]) and each marketplace entry ([`parse_marketplace`]). The first
    /// failure only, as these rules always answered.
    fn check(&self) -> Result<(), Vec<ValidationError>> {
        let root = loc(["body"]);
        let first = || {
            refuse_nul_in(&self.others, &root)?;
            let marketplaces = self.registered_marketplaces.iter().flatten().flatten();
            let at = field(&root, "registered_marketplaces");
            for (i, entry) in marketplaces.clone().enumerate() {
                refuse_nul_deep(entry, &index(&at, i))?;
            }
            if let Some(diff) = &self.agent_settings_diff {
                AgentDiff::check(diff, &field(&root, "agent_settings_diff"))?;
            }
            if let Some(diff) = &self.conversation_settings_diff {
                diff.check(&field(&root, "conversation_settings_diff"))?;
            }
            for (i, entry) in marketplaces.enumerate() {
                parse_marketplace(entry, &index(&at, i))?;
            }
            Ok(())
        };
        first().map_err(|e: ValidationError| vec![e])
    }
}

impl From<SettingsRequest> for SettingsPatch {
    fn from(body: SettingsRequest) -> Self {
        let preferences = match serde_json::to_value(&body) {
            Ok(Value::Object(m)) => m,
            _ => unreachable!("a struct of JSON values serializes as an object"),
        };
        let agent = body.agent_settings_diff.and_then(AgentDiff::split);
        let (agent_diff, touches_llm, llm_api_key, mcp_config) = match agent {
            Some(a) => (Some(a.diff), a.touches_llm, a.llm_api_key, a.mcp_config),
            None => (None, false, None, None),
        };
        SettingsPatch {
            agent_diff,
            touches_llm,
            llm_api_key,
            mcp_config,
            conversation_diff: body
                .conversation_settings_diff
                .map(ConversationSettingsDiff::into_map),
            preferences,
            search_api_key: secret_change(body.search_api_key),
        }
    }
}

/// `at` then index `i`.
fn index(at: &[LocItem], i: usize) -> Vec<LocItem> {
    let mut l = at.to_vec();
    l.push(LocItem::Index(i));
    l
}

/// The words of a refused legacy key `name`, naming its `*_diff`.
fn legacy(name: &str) -> Object {
    fields::refused(&format!(
        "Use {name}_diff: legacy nested settings keys are not accepted"
    ))
}

fn legacy_agent_settings() -> Object {
    legacy("agent_settings")
}

fn legacy_conversation_settings() -> Object {
    legacy("conversation_settings")
}

/// An integer in `i64`'s range, or `null`.
fn any_integer() -> Object {
    fields::nullable_integer_from(i64::MIN).build()
}

/// `max_budget_per_task`: a finite number > 0, or `null`.
fn budget() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Number, Type::Null]))
        .exclusive_minimum(Some(0))
        .maximum(Some(f64::MAX))
        .description(Some("A finite number > 0, or `null` to unset."))
        .extensions(Some(fields::value_error_words(
            "max_budget_per_task must be greater than 0",
        )))
        .build()
}

/// A list of text without NUL, or `null`.
fn names() -> utoipa::openapi::schema::Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(fields::text_matching(NO_NUL_PATTERN))
        .build()
}

fn grouping_strategy() -> Object {
    fields::one_of_or_null(&SANDBOX_GROUPING_STRATEGIES)
}

/// A list of marketplace entries as the organization's app settings take them (the component
/// `MarketplaceRegistrationInput`), without NUL, or `null`; each entry judged by
/// [`parse_marketplace`].
fn marketplaces() -> utoipa::openapi::schema::Array {
    let entry = utoipa::openapi::schema::AllOfBuilder::new()
        .item(utoipa::openapi::Ref::from_schema_name(
            "MarketplaceRegistrationInput",
        ))
        .item(utoipa::openapi::Ref::from_schema_name(
            JsonValueWithoutNul::NAME,
        ));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(utoipa::openapi::RefOr::T(fields::documentation_only(entry)))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The patch a body makes, as the route reads it.
    fn parse_settings_patch(body: &Value) -> Result<SettingsPatch, Vec<ValidationError>> {
        crate::typed_body::parse::<SettingsRequest>(body).map(SettingsPatch::from)
    }

    #[test]
    fn integers_sent_as_whole_numbers_are_stored_as_integers() {
        let p = parse_settings_patch(&json!({
            "user_version": 3.0,
            "conversation_settings_diff": {"max_iterations": 7.0, "schema_version": 1},
        }))
        .unwrap();
        assert_eq!(p.preferences["user_version"], json!(3));
        assert!(p.preferences["user_version"].is_i64());
        let diff = p.conversation_diff.unwrap();
        assert!(diff["max_iterations"].is_i64() && diff["max_iterations"] == json!(7));
        for bad in [
            json!({"user_version": 1.5}),
            json!({"user_version": 9.3e18}),
            json!({"conversation_settings_diff": {"max_iterations": 0.0}}),
            json!({"conversation_settings_diff": {"max_iterations": 2.5}}),
            json!({"conversation_settings_diff": {"max_iterations": 18446744073709551615u64}}),
        ] {
            assert!(parse_settings_patch(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn diffs_keys_and_preferences_are_read() {
        let p = parse_settings_patch(&json!({
            "agent_settings_diff": {"llm": {"model": "openai/x", "api_key": "k1", "base_url": ""},
                                     "mcp_config": {"sse_servers": []}, "condenser": {"max_size": 80}},
            "conversation_settings_diff": {"confirmation_mode": true, "max_iterations": 7},
            "language": "fr", "user_consents_to_analytics": null, "llm_api_key_set": true,
            "search_api_key": "s1", "unknown": 1,
        }))
        .unwrap();
        assert_eq!(p.llm_api_key, Some(Some("k1".into())));
        assert_eq!(p.search_api_key, Some(Some("s1".into())));
        assert!(p.touches_llm);
        let diff = Value::Object(p.agent_diff.clone().unwrap());
        assert_eq!(
            diff,
            json!({"llm": {"model": "openai/x", "base_url": null}, "condenser": {"max_size": 80}})
        );
        assert_eq!(p.mcp_config, Some(Some(json!({"sse_servers": []}))));
        assert_eq!(p.preferences.len(), 2, "{:?}", p.preferences);
        assert!(!format!("{p:?}").contains("k1"));
    }

    /// Each rule's entry, as the hand parser worded it and pydantic words it: the schema's
    /// (types, ranges, literals, a legacy key, the budget's words) and the check's (the free-form
    /// parts, a NUL there); the entries of several failures in field order.
    #[test]
    fn each_rule_has_its_entry() {
        let legacy = "Use agent_settings_diff: legacy nested settings keys are not accepted";
        let budget = "max_budget_per_task must be greater than 0";
        let cases = [
            (
                json!({"agent_settings": {}}),
                json!({"type": "value_error", "loc": ["body", "agent_settings"],
                       "msg": format!("Value error, {legacy}"), "input": {}, "ctx": {"error": legacy}}),
            ),
            (
                json!({"max_budget_per_task": 0}),
                json!({"type": "value_error", "loc": ["body", "max_budget_per_task"],
                       "msg": format!("Value error, {budget}"), "input": 0, "ctx": {"error": budget}}),
            ),
            (
                json!({"max_budget_per_task": "x"}),
                json!({"type": "float_type", "loc": ["body", "max_budget_per_task"],
                       "msg": "Input should be a valid number", "input": "x"}),
            ),
            (
                json!({"conversation_settings_diff": {"max_iterations": 0}}),
                json!({"type": "greater_than_equal", "loc": ["body", "conversation_settings_diff", "max_iterations"],
                       "msg": "Input should be greater than or equal to 1", "input": 0, "ctx": {"ge": 1}}),
            ),
            (
                json!({"conversation_settings_diff": {"security_analyzer": 3}}),
                json!({"type": "literal_error", "loc": ["body", "conversation_settings_diff", "security_analyzer"],
                       "msg": "Input should be 'llm' or 'none'", "input": 3, "ctx": {"expected": "'llm' or 'none'"}}),
            ),
            (
                json!({"conversation_settings_diff": []}),
                json!({"type": "model_type", "loc": ["body", "conversation_settings_diff"],
                       "msg": "Input should be a valid dictionary or instance of ConversationSettings", "input": []}),
            ),
            (
                json!({"agent_settings_diff": {"llm": 3}}),
                json!({"type": "model_type", "loc": ["body", "agent_settings_diff", "llm"],
                       "msg": "Input should be a valid dictionary or instance of LLM", "input": 3}),
            ),
            (
                json!({"unknown": {"deep": ["a\u{0}"]}}),
                json!({"type": "string_pattern_mismatch", "loc": ["body", "unknown", "deep", 0],
                       "msg": "String should match pattern '^[^\\x00]*$'", "input": "a\u{0}",
                       "ctx": {"pattern": "^[^\\x00]*$"}}),
            ),
        ];
        for (body, want) in cases {
            let e = parse_settings_patch(&body).unwrap_err();
            assert_eq!(serde_json::to_value(&e).unwrap(), json!([want]), "{body}");
        }
        let e = parse_settings_patch(&json!({"zzz": 1, "language": 3, "agent_settings": 1,
            "conversation_settings_diff": {"max_iterations": "x"}}))
        .unwrap_err();
        let at: Vec<_> = e.iter().map(|e| e.loc[1].clone()).collect();
        assert_eq!(
            serde_json::to_value(at).unwrap(),
            json!(["agent_settings", "language", "conversation_settings_diff"])
        );
    }

    #[test]
    fn bad_bodies_are_422_at_their_field() {
        let cases = [
            (json!([]), "body"),
            (json!({"agent_settings": {}}), "agent_settings"),
            (
                json!({"agent_settings_diff": {"llm": {"base_url": "ftp://x"}}}),
                "base_url",
            ),
            (
                json!({"agent_settings_diff": {"llm": {"api_key": 5}}}),
                "api_key",
            ),
            (
                json!({"conversation_settings_diff": {"max_iterations": 0}}),
                "max_iterations",
            ),
            (
                json!({"conversation_settings_diff": {"security_analyzer": "x"}}),
                "security_analyzer",
            ),
            (json!({"max_budget_per_task": 0}), "max_budget_per_task"),
            (
                json!({"sandbox_grouping_strategy": "X"}),
                "sandbox_grouping_strategy",
            ),
            (json!({"language": 3}), "language"),
            (json!({"disabled_skills": [1]}), "disabled_skills"),
            (json!({"git_user_name": "a\u{0}"}), "git_user_name"),
        ];
        for (body, at) in cases {
            let e = parse_settings_patch(&body).unwrap_err();
            assert!(format!("{e:?}").contains(at), "{body}: {e:?}");
        }
    }
}
