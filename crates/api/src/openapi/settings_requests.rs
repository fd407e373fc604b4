//! The request bodies of a member's own settings and LLM profiles and of the organization's
//! defaults (issue 21) not yet declared as types (`switchboard_domain::typed_body`), written as
//! JSON Schema with every rule their parsers enforce that JSON Schema can state, as
//! [`super::requests`] does for the other bodies: the legacy nested settings keys refused, the
//! preferences by type, the conversation settings' ranges, the LLM base URL's scheme, and no
//! NUL (U+0000) in any string or key of the bodies whose parsers refuse one anywhere. What JSON
//! Schema cannot state (the profile limit) is in the descriptions and API.md. The profile
//! rename and switch, custom secret and git provider bodies are typed: their schemas are
//! derived from their declarations.

use serde_json::{Value, json};
use switchboard_domain::agent_profile_fields::{AGENT_CLASS, CONDENSER_KINDS, CRITIC_MODES};
use switchboard_domain::user_settings::patch::{
    BOOL_PREFS, INT_PREFS, NULLABLE_BOOL_PREFS, SANDBOX_GROUPING_STRATEGIES, SECURITY_ANALYZERS,
    STRING_PREFS,
};
use switchboard_domain::validation::NO_NUL_PATTERN;

/// An LLM base URL as `check_llm_fields` takes it: empty (unset), or `http://` / `https://`
/// then anything without NUL.
pub const BASE_URL_PATTERN: &str = r"^(https?://[^\x00]*)?$";

/// A reference to the component `name`.
fn component(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Text without NUL, or `null`.
fn nullable_text() -> Value {
    json!({"type": ["string", "null"], "pattern": NO_NUL_PATTERN})
}

/// An object whose keys hold no NUL, with `properties`, any other key taking a value without
/// NUL.
fn nul_free_object(description: &str, properties: Value) -> Value {
    json!({
        "type": "object",
        "description": description,
        "propertyNames": {"pattern": NO_NUL_PATTERN},
        "properties": properties,
        "additionalProperties": component("JsonValueWithoutNul"),
    })
}

/// `POST /api/v1/settings`' body.
fn settings_schema() -> Value {
    let mut properties = serde_json::Map::new();
    for legacy in ["agent_settings", "conversation_settings"] {
        properties.insert(legacy.into(), Value::Bool(false));
    }
    for key in BOOL_PREFS.iter().chain(&NULLABLE_BOOL_PREFS) {
        properties.insert((*key).into(), json!({"type": ["boolean", "null"]}));
    }
    for key in STRING_PREFS.iter().chain(&["search_api_key"]) {
        properties.insert((*key).into(), nullable_text());
    }
    for key in INT_PREFS {
        properties.insert(
            key.into(),
            json!({"type": ["integer", "null"], "minimum": i64::MIN, "maximum": i64::MAX}),
        );
    }
    let count = json!({"type": ["integer", "null"], "minimum": 1, "maximum": i64::MAX});
    let extra = json!({
        "max_budget_per_task": {"anyOf": [
            {"type": "number", "exclusiveMinimum": 0, "maximum": f64::MAX},
            {"type": "null"},
        ], "description": "A finite number > 0, or `null` to unset."},
        "disabled_skills": {"type": ["array", "null"], "items": {"type": "string", "pattern": NO_NUL_PATTERN}},
        "sandbox_grouping_strategy": {"enum": SANDBOX_GROUPING_STRATEGIES.iter().map(|s| json!(s)).chain([Value::Null]).collect::<Vec<_>>()},
        "registered_marketplaces": {"anyOf": [
            {"type": "array", "items": {"allOf": [component("MarketplaceRegistrationInput"), component("JsonValueWithoutNul")]}},
            {"type": "null"},
        ]},
        "agent_settings_diff": {"anyOf": [
            nul_free_object("Deep-merged into the stored agent settings (`null` removes a key).", json!({
                "llm": {"anyOf": [component("LLMSettingsInput"), {"type": "null"}], "description": "`null` unsets the key."},
                "mcp_config": {"anyOf": [nul_free_object("The MCP configuration (sealed).", json!({})), {"type": "null"}]},
            })),
            {"type": "null"},
        ]},
        "conversation_settings_diff": {"anyOf": [
            nul_free_object("Deep-merged into the stored conversation settings.", json!({
                "schema_version": count,
                "max_iterations": count,
                "confirmation_mode": {"type": ["boolean", "null"]},
                "security_analyzer": {"enum": SECURITY_ANALYZERS.iter().map(|s| json!(s)).chain([Value::Null]).collect::<Vec<_>>()},
            })),
            {"type": "null"},
        ]},
    });
    properties.extend(
        extra
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    nul_free_object(
        "`Settings` as a partial update: the nested settings as `*_diff`, the preferences at the top level (`null` unsets one); the legacy `agent_settings` and `conversation_settings` are refused; fields a GET answers but a client cannot set, and unknown fields, are ignored. No NUL in any string or key.",
        Value::Object(properties),
    )
}

/// An object of the known `fields` (each its schema), other fields of any value (ignored), or
/// `null` (the defaults).
fn settings_object(title: &str, description: &str, fields: Value) -> Value {
    json!({"anyOf": [{
        "type": "object", "title": title, "description": description, "properties": fields,
        "propertyNames": {"pattern": NO_NUL_PATTERN},
        "additionalProperties": component("JsonValueWithoutNul"),
    }, {"type": "null"}]})
}

/// The SDK's `CondenserSettingsConfig`, its bounds (every field checked whatever the kind).
pub(super) fn condenser() -> Value {
    let fraction = json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1});
    settings_object(
        "CondenserSettings",
        "How the agent condenses its history; absent or `null`: an enabled LLM summarizing condenser (240 events, the first 2 kept). `enabled: false`: none.",
        json!({
            "condenser_kind": {"enum": CONDENSER_KINDS},
            "enabled": {"type": "boolean"},
            "max_size": {"type": "integer", "minimum": 20, "maximum": i64::MAX},
            "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": i64::MAX},
            "keep_first": {"type": "integer", "minimum": 0, "maximum": i64::MAX},
            "minimum_progress": fraction,
            "hard_context_reset_max_retries": {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            "hard_context_reset_context_scaling": fraction,
        }),
    )
}

/// The SDK's `ProfileVerificationSettings`, the critic off (`critic_enabled: true` is refused:
/// the critic would take the agent's LLM key to its critic service).
pub(super) fn verification() -> Value {
    settings_object(
        "ProfileVerificationSettings",
        "The critic's settings. `critic_enabled` must be false: Switchboard does not start the critic, which authenticates to its critic service with the agent's LLM key.",
        json!({
            "critic_enabled": {"enum": [false]},
            "critic_mode": {"enum": CRITIC_MODES},
            "enable_iterative_refinement": {"type": "boolean"},
            "critic_threshold": {"type": "number", "minimum": 0, "maximum": 1},
            "max_refinement_iterations": {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            "critic_server_url": nullable_text(),
            "critic_model_name": nullable_text(),
        }),
    )
}

/// The fields of a member's `agent_settings_diff` a start acts on or refuses beyond `llm` and
/// `mcp_config` (`switchboard_domain::user_settings::agent_fields`; issue 36).
fn member_agent_fields() -> Value {
    json!({
        "condenser": condenser(),
        "verification": verification(),
        "agent": {"enum": [AGENT_CLASS, null], "description": "The one agent class the agent server builds."},
        "agent_kind": {"enum": ["openhands", null], "description": "An ACP agent starts from an agent profile."},
        "tool_concurrency_limit": {"type": ["integer", "null"], "minimum": 1, "maximum": i64::MAX},
        "tools": {"type": ["array", "null"], "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "pattern": NO_NUL_PATTERN}, "params": component("JsonValueWithoutNul")},
            "propertyNames": {"pattern": NO_NUL_PATTERN},
            "additionalProperties": component("JsonValueWithoutNul"),
        }},
    })
}

/// `POST /api/v1/settings`' body with the member's agent fields stated
/// ([`member_agent_fields`]); the organization's defaults take the agent diff without them.
fn member_settings_schema() -> Value {
    let mut s = settings_schema();
    if let Some(props) = s
        .pointer_mut("/properties/agent_settings_diff/anyOf/0/properties")
        .and_then(Value::as_object_mut)
    {
        for (k, v) in member_agent_fields().as_object().into_iter().flatten() {
            props.insert(k.clone(), v.clone());
        }
    }
    s
}

/// `PATCH /api/organizations/{org_id}/settings`' body: OpenHands' four fields, each as a
/// member's settings take it; any other field refused.
fn org_defaults_schema() -> Value {
    let user = settings_schema();
    let mut properties = serde_json::Map::new();
    for key in [
        "agent_settings_diff",
        "conversation_settings_diff",
        "search_api_key",
    ] {
        properties.insert(key.into(), user["properties"][key].clone());
    }
    properties.insert("llm_api_key".into(), nullable_text());
    json!({
        "type": "object",
        "description": "The organization's defaults as a partial update: the diffs deep-merged (`null` unsets a key), the keys sealed (`\"\"` or `null` unsets one); `llm_api_key` wins over `agent_settings_diff.llm.api_key`. Any other field is refused.",
        "properties": properties,
        "additionalProperties": false,
    })
}

// Over 100 lines, on purpose: a declaration (one JSON Schema literal per request body), not logic.
/// The request body schemas of this module, by component name.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("OrgDefaultsSettingsUpdate", org_defaults_schema()),
        (
            "JsonValueWithoutNul",
            json!({
                "description": "Any JSON value with no NUL (U+0000) in a string or an object key.",
                "anyOf": [
                    {"type": "string", "pattern": NO_NUL_PATTERN},
                    {"type": ["number", "boolean", "null"]},
                    {"type": "array", "items": component("JsonValueWithoutNul")},
                    {"type": "object", "propertyNames": {"pattern": NO_NUL_PATTERN}, "additionalProperties": component("JsonValueWithoutNul")},
                ],
            }),
        ),
        (
            "LLMSettingsInput",
            nul_free_object(
                "An LLM configuration: `api_key` is sealed (`\"\"` or `null`: none); `model` and `base_url` are text or `null` (`\"\"` unsets); a base URL is `http://` or `https://`; `provider_connection_id` names one of the organization's provider connections, whose base URL and key the LLM then uses (a profile naming one stores no key or base URL of its own).",
                json!({
                    "api_key": nullable_text(),
                    "model": nullable_text(),
                    "base_url": {"type": ["string", "null"], "pattern": BASE_URL_PATTERN},
                    "provider_connection_id": nullable_text(),
                }),
            ),
        ),
        ("Settings", member_settings_schema()),
        (
            "SaveProfileRequest",
            json!({
                "type": ["object", "null"],
                "description": "Optional; none or `null` means every default: the profile saves the current settings' LLM, with its key.",
                "propertyNames": {"pattern": NO_NUL_PATTERN},
                "properties": {
                    "include_secrets": {"type": "boolean", "default": true},
                    "preserve_existing_api_key": {"type": "boolean", "default": false},
                    "llm": {"anyOf": [component("LLMSettingsInput"), {"type": "null"}]},
                },
                "additionalProperties": component("JsonValueWithoutNul"),
            }),
        ),
    ]
}

/// Which operation takes which body: `(path, method, schema name, required)`.
pub const BODIES: [(&str, &str, &str, bool); 3] = [
    (
        "/api/organizations/{org_id}/settings",
        "patch",
        "OrgDefaultsSettingsUpdate",
        true,
    ),
    ("/api/v1/settings", "post", "Settings", true),
    (
        "/api/v1/settings/profiles/{name}",
        "post",
        "SaveProfileRequest",
        false,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_domain::user_secrets::{SECRET_NAME_PATTERN, is_secret_name};
    use switchboard_domain::user_settings::patch::parse_settings_patch;
    use switchboard_domain::user_settings::profiles::{PROFILE_NAME_PATTERN, is_profile_name};

    fn matches(pattern: &str, s: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(s)
    }

    /// The patterns take exactly what the parsers take.
    #[test]
    fn patterns_agree_with_the_parsers() {
        for url in [
            "", "http://x", "https://", "ftp://x", "HTTP://x", "http:/x", "x",
        ] {
            let body = json!({"agent_settings_diff": {"llm": {"base_url": url}}});
            assert_eq!(
                matches(BASE_URL_PATTERN, url),
                parse_settings_patch(&body).is_ok(),
                "{url:?}"
            );
        }
        let long = "x".repeat(129);
        for name in [
            "a",
            "a.b-c_D9",
            "",
            "a b",
            "a/b",
            "\u{e9}",
            long.as_str(),
            &long[..64],
        ] {
            assert_eq!(
                matches(PROFILE_NAME_PATTERN, name),
                is_profile_name(name),
                "{name:?}"
            );
            assert_eq!(
                matches(SECRET_NAME_PATTERN, name),
                is_secret_name(name),
                "{name:?}"
            );
        }
    }

    /// Every body named in [`BODIES`] has a schema, and the document points at it.
    #[test]
    fn bodies_are_in_the_document() {
        let doc = crate::openapi::document();
        for (path, method, name, required) in BODIES {
            assert!(doc["components"]["schemas"][name].is_object(), "{name}");
            let body = &doc["paths"][path][method]["requestBody"];
            assert_eq!(
                body["content"]["application/json"]["schema"]["$ref"],
                format!("#/components/schemas/{name}"),
                "{method} {path}"
            );
            assert_eq!(body["required"], required, "{method} {path}");
        }
    }
}
