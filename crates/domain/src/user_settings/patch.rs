//! `POST /api/v1/settings` (issue 21): a partial update as OpenHands' clients send it. The
//! nested settings come as `agent_settings_diff` and `conversation_settings_diff`, deep-merged
//! into what is stored (a key set to `null` is unset); the app preferences as top-level fields
//! (`null` unsets one). The legacy nested keys `agent_settings` and `conversation_settings` are
//! refused (422), as OpenHands refuses them. Fields a `GET` answers but a client cannot set
//! (`llm_api_key_set`, `provider_tokens_set`, `email`, …) and unknown fields are ignored, so a
//! `GET` → edit → `POST` round trip works.

use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use super::refuse_nul_deep;
use crate::settings::parse_marketplace;
use crate::validation::{
    bool_type, field, float_type, list_type, loc, model_type, not_one_of, string_type, value_error,
};

/// OpenHands' `SandboxGroupingStrategy`.
pub const SANDBOX_GROUPING_STRATEGIES: [&str; 5] = [
    "NO_GROUPING",
    "GROUP_BY_NEWEST",
    "LEAST_RECENTLY_USED",
    "FEWEST_CONVERSATIONS",
    "ADD_TO_ANY",
];

/// `conversation_settings.security_analyzer` values (or `null`).
pub const SECURITY_ANALYZERS: [&str; 2] = ["llm", "none"];

/// The app preferences a client may set that are booleans (`null` unsets one).
pub const BOOL_PREFS: [&str; 4] = [
    "enable_sound_notifications",
    "enable_proactive_conversation_starters",
    "git_full_clone",
    "v1_enabled",
];
/// The app preferences that are a boolean or `null` (a value of its own).
pub const NULLABLE_BOOL_PREFS: [&str; 1] = ["user_consents_to_analytics"];
/// The app preferences that are text (`null` unsets one).
pub const STRING_PREFS: [&str; 6] = [
    "language",
    "git_user_name",
    "git_user_email",
    "sandbox_base_container_image",
    "sandbox_runtime_container_image",
    "default_sandbox_spec_id",
];
/// The app preferences that are integers in `i64`'s range (`3.0` taken as `3`; `null` unsets
/// one).
pub const INT_PREFS: [&str; 2] = ["user_version", "remote_runtime_resource_factor"];

/// A change to one secret field: `None` leaves it, `Some(None)` unsets it, `Some(Some(v))`
/// sets it.
pub type SecretChange = Option<Option<String>>;

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

/// Reads a `POST /api/v1/settings` body.
///
/// # Errors
/// A 422 entry: not an object (`model_type`), a legacy nested key (`value_error` at it), a
/// field of the wrong type, an LLM base URL that is not `http(s)://`, a `max_budget_per_task`
/// not above 0, a conversation setting out of range, a NUL anywhere.
pub fn parse_settings_patch(body: &Value) -> Result<SettingsPatch, ValidationError> {
    let root = loc(["body"]);
    let Some(obj) = body.as_object() else {
        return Err(model_type(root, "Settings", body));
    };
    refuse_nul_deep(body, &root)?;
    for legacy in ["agent_settings", "conversation_settings"] {
        if let Some(v) = obj.get(legacy) {
            return Err(value_error(
                field(&root, legacy),
                &format!("Use {legacy}_diff: legacy nested settings keys are not accepted"),
                v,
            ));
        }
    }
    let mut patch = SettingsPatch::default();
    if let Some(v) = obj.get("agent_settings_diff") {
        agent_diff(&mut patch, v, &field(&root, "agent_settings_diff"))?;
    }
    if let Some(v) = obj.get("conversation_settings_diff") {
        patch.conversation_diff =
            conversation_diff(v, &field(&root, "conversation_settings_diff"))?;
    }
    if let Some(v) = obj.get("search_api_key") {
        patch.search_api_key = Some(secret_text(v, field(&root, "search_api_key"))?);
    }
    preferences(&mut patch, obj, &root)?;
    Ok(patch)
}

/// A key: a string (`""` meaning none) or `null`.
fn secret_text(v: &Value, at: Vec<LocItem>) -> Result<Option<String>, ValidationError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(string_type(at, other)),
    }
}

fn agent_diff(patch: &mut SettingsPatch, v: &Value, at: &[LocItem]) -> Result<(), ValidationError> {
    let mut diff = match v {
        Value::Null => return Ok(()),
        Value::Object(m) => m.clone(),
        other => return Err(model_type(at.to_vec(), "AgentSettings", other)),
    };
    if let Some(mcp) = diff.remove("mcp_config") {
        patch.mcp_config = Some(match mcp {
            Value::Null => None,
            Value::Object(_) => Some(mcp),
            other => return Err(model_type(field(at, "mcp_config"), "MCPConfig", &other)),
        });
    }
    if let Some(llm) = diff.get_mut("llm") {
        patch.touches_llm = true;
        let l = field(at, "llm");
        match llm {
            Value::Null => patch.llm_api_key = Some(None),
            Value::Object(m) => {
                if let Some(key) = m.remove("api_key") {
                    patch.llm_api_key = Some(secret_text(&key, field(&l, "api_key"))?);
                }
                check_llm_fields(m, &l)?;
            }
            other => return Err(model_type(l, "LLM", other)),
        }
    }
    super::agent_fields::check_agent_diff(&diff, at)?;
    patch.agent_diff = Some(diff);
    Ok(())
}

/// `model`, `base_url` and `provider_connection_id` of an LLM object: strings or `null`; a base URL `http://` or
/// `https://` (an empty one unsets it).
///
/// # Errors
/// `string_type` or `value_error` at the field.
pub fn check_llm_fields(m: &mut Map<String, Value>, at: &[LocItem]) -> Result<(), ValidationError> {
    for key in ["model", "base_url"] {
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {
                m.insert(key.to_owned(), Value::Null);
            }
            Some(Value::String(s)) => {
                if key == "base_url" && !(s.starts_with("http://") || s.starts_with("https://")) {
                    return Err(value_error(
                        field(at, key),
                        "base_url must be an http:// or https:// URL",
                        &json!(s),
                    ));
                }
            }
            Some(other) => return Err(string_type(field(at, key), other)),
        }
    }
    // The provider connection whose base URL and key the LLM takes (issue 25).
    match m.get("provider_connection_id") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(other) => return Err(string_type(field(at, "provider_connection_id"), other)),
    }
    Ok(())
}

/// `conversation_settings_diff`: `schema_version` and `max_iterations` integers ≥ 1 (`3.0`
/// taken and stored as `3`),
/// `confirmation_mode` a boolean, `security_analyzer` `"llm"`, `"none"` or `null`; other
/// fields kept as sent.
fn conversation_diff(
    v: &Value,
    at: &[LocItem],
) -> Result<Option<Map<String, Value>>, ValidationError> {
    let m = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => return Err(model_type(at.to_vec(), "ConversationSettings", other)),
    };
    let mut out = m.clone();
    for key in ["schema_version", "max_iterations"] {
        match m.get(key).map(|n| (n, integral(n))) {
            None | Some((Value::Null, _)) => {}
            Some((_, Some(n))) if n >= 1 => {
                out.insert(key.to_owned(), json!(n));
            }
            Some((n, Some(_))) => {
                return Err(ValidationError::new(
                    ErrorType::GreaterThanEqual,
                    field(at, key),
                    "Input should be greater than or equal to 1",
                )
                .with_input(n.clone())
                .with_ctx(json!({"ge": 1})));
            }
            Some((other, None)) => {
                return Err(ValidationError::new(
                    ErrorType::IntType,
                    field(at, key),
                    "Input should be a valid integer",
                )
                .with_input(other.clone()));
            }
        }
    }
    match m.get("confirmation_mode") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(other) => return Err(bool_type(field(at, "confirmation_mode"), other)),
    }
    match m.get("security_analyzer") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if SECURITY_ANALYZERS.contains(&s.as_str()) => {}
        Some(other) => {
            return Err(not_one_of(
                ErrorType::LiteralError,
                field(at, "security_analyzer"),
                &SECURITY_ANALYZERS,
                other,
            ));
        }
    }
    Ok(Some(out))
}

/// An integer as OpenHands' models take one in lax mode: a JSON integer, or a number without
/// a fraction (`3.0`), within `i64`'s range; `None` for anything else.
fn integral(v: &Value) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && (-LIMIT..LIMIT).contains(f))
            .map(|f| f as i64)
    })
}

/// The top-level app preferences, each by its type; `null` unsets one.
fn preferences(
    patch: &mut SettingsPatch,
    obj: &Map<String, Value>,
    root: &[LocItem],
) -> Result<(), ValidationError> {
    let prefs = &mut patch.preferences;
    for (key, sent) in obj {
        let at = field(root, key);
        let k = key.as_str();
        // An integer preference sent as `3.0` is stored as `3`.
        let normalized = INT_PREFS
            .contains(&k)
            .then(|| integral(sent).map(|n| json!(n)))
            .flatten();
        let v = normalized.as_ref().unwrap_or(sent);
        let ok = if v.is_null() {
            BOOL_PREFS.contains(&k)
                || NULLABLE_BOOL_PREFS.contains(&k)
                || STRING_PREFS.contains(&k)
                || INT_PREFS.contains(&k)
                || matches!(
                    k,
                    "max_budget_per_task"
                        | "disabled_skills"
                        | "sandbox_grouping_strategy"
                        | "registered_marketplaces"
                )
        } else if BOOL_PREFS.contains(&k) || NULLABLE_BOOL_PREFS.contains(&k) {
            v.is_boolean() || return Err(bool_type(at, v))
        } else if STRING_PREFS.contains(&k) {
            v.is_string() || return Err(string_type(at, v))
        } else if INT_PREFS.contains(&k) {
            v.is_i64()
                || return Err(ValidationError::new(
                    ErrorType::IntType,
                    at,
                    "Input should be a valid integer",
                )
                .with_input(v.clone()))
        } else {
            match k {
                "max_budget_per_task" => budget(v, at)?,
                "disabled_skills" => string_list(v, &at)?,
                "sandbox_grouping_strategy" => {
                    let known = v
                        .as_str()
                        .is_some_and(|s| SANDBOX_GROUPING_STRATEGIES.contains(&s));
                    known
                        || return Err(not_one_of(
                            ErrorType::Enum,
                            at,
                            &SANDBOX_GROUPING_STRATEGIES,
                            v,
                        ))
                }
                "registered_marketplaces" => marketplaces(v, &at)?,
                _ => false,
            }
        };
        if ok {
            prefs.insert(key.clone(), v.clone());
        }
    }
    Ok(())
}

fn budget(v: &Value, at: Vec<LocItem>) -> Result<bool, ValidationError> {
    let Some(x) = v.as_f64() else {
        return Err(float_type(at, v));
    };
    if !x.is_finite() || x <= 0.0 {
        return Err(value_error(
            at,
            "max_budget_per_task must be greater than 0",
            v,
        ));
    }
    Ok(true)
}

fn string_list(v: &Value, at: &[LocItem]) -> Result<bool, ValidationError> {
    let Value::Array(items) = v else {
        return Err(list_type(at.to_vec(), v));
    };
    for (i, item) in items.iter().enumerate() {
        if !item.is_string() {
            let mut l = at.to_vec();
            l.push(LocItem::Index(i));
            return Err(string_type(l, item));
        }
    }
    Ok(true)
}

fn marketplaces(v: &Value, at: &[LocItem]) -> Result<bool, ValidationError> {
    let Value::Array(items) = v else {
        return Err(list_type(at.to_vec(), v));
    };
    for (i, item) in items.iter().enumerate() {
        let mut l = at.to_vec();
        l.push(LocItem::Index(i));
        parse_marketplace(item, &l)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

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
