//! The agent profile fields that become parts of the agent a start launches (issue 25), read
//! as the SDK reads them (software-agent-sdk 1.58.2, `openhands/sdk/profiles/agent_profile.py`
//! and `openhands/sdk/settings/model.py`): `condenser` (the SDK's `CondenserSettingsConfig`),
//! `verification` (`ProfileVerificationSettings`), `agent` and `acp_server`. Each reader
//! answers the value as stored: the known fields with the SDK's defaults filled in and
//! anything else left out (pydantic ignores unknown fields of these models), so what a
//! `GET` answers is what a start applies.
//!
//! Refused at save, with why (Switchboard's own rules, beyond the SDK's):
//! - `verification.critic_enabled: true`: the SDK's `APIBasedCritic` authenticates to its
//!   critic service (All-Hands' by default) with the agent's LLM key, and a profile holds no
//!   critic key of its own; Switchboard sends an LLM key only to the base URL of the party
//!   that set it (`services::start_settings`), so it does not start the critic.
//! - `agent` other than `CodeActAgent`: the agent server 1.58.2 builds one agent class, the
//!   SDK's `Agent` (its settings' `create_agent` never reads `agent`), so another name would
//!   be stored and not acted on.

use serde_json::{Map, Value, json};
use switchboard_model::{ErrorType, LocItem, ValidationError};

use crate::validation::{
    bool_type, field, float_type, greater_than, less_than_equal, model_type, not_one_of,
    string_type, value_error,
};

/// The condenser kinds (the SDK's `CondenserKind`): `llm_summarizing` (the default) and `no_op`.
pub const CONDENSER_KINDS: [&str; 2] = ["llm_summarizing", "no_op"];

/// When the critic runs (the SDK's `CriticMode`).
pub const CRITIC_MODES: [&str; 2] = ["finish_and_message", "all_actions"];

/// The ACP servers a profile may name (the SDK's `ACPServerKind`); `custom` has no default
/// command, so it runs only with `acp_command`.
pub const ACP_SERVERS: [&str; 7] = [
    "claude-code",
    "codex",
    "gemini-cli",
    "kimi-code",
    "pi",
    "opencode",
    "custom",
];

/// The one agent class the agent server builds (the SDK's `Agent`, named `CodeActAgent` in
/// profiles and settings).
pub const AGENT_CLASS: &str = "CodeActAgent";

/// Why an `agent` other than [`AGENT_CLASS`] is refused (the module's text).
pub const AGENT_REFUSED: &str = "agent must be 'CodeActAgent': the agent server builds one \
    agent class, the SDK's Agent, whatever a profile names";

/// Why `verification.critic_enabled: true` is refused (the module's text).
pub const CRITIC_REFUSED: &str = "the critic is not started by this server: the SDK's \
    APIBasedCritic authenticates to its critic service with the agent's LLM key, and \
    Switchboard sends an LLM key only to the base URL of whoever set it (a profile holds no \
    critic key of its own)";

/// Reads `condenser` (absent or `null`: the SDK's default, an enabled LLM summarizing
/// condenser): `condenser_kind` one of [`CONDENSER_KINDS`], `enabled` a boolean, `max_size` an
/// integer ≥ 20 (events), `max_tokens` an integer ≥ 1 or null (tokens), `keep_first` an
/// integer ≥ 0 (events), `minimum_progress` a number in (0, 1), `hard_context_reset_max_retries`
/// an integer ≥ 1, `hard_context_reset_context_scaling` a number in (0, 1). Returns the
/// settings with the defaults filled in (`no_op`: `condenser_kind` and `enabled` only; the
/// other fields are still checked).
///
/// # Errors
/// A 422 entry under `at`: not an object, a field of the wrong type or out of its bounds.
pub fn parse_condenser(v: Option<&Value>, at: &[LocItem]) -> Result<Value, ValidationError> {
    let obj = &settings_object(v, at, "LLMSummarizingCondenserSettings")?;
    let kind = match obj.get("condenser_kind") {
        None => "llm_summarizing",
        Some(Value::String(k)) if CONDENSER_KINDS.contains(&k.as_str()) => k.as_str(),
        Some(other) => {
            return Err(not_one_of(
                ErrorType::LiteralError,
                field(at, "condenser_kind"),
                &CONDENSER_KINDS,
                other,
            ));
        }
    };
    let enabled = boolean(obj, "enabled", at, true)?;
    let mut out = Map::new();
    out.insert("condenser_kind".into(), json!(kind));
    out.insert("enabled".into(), json!(enabled));
    let summarizing = [
        ("max_size", integer(obj, "max_size", at, 20, 240)?),
        (
            "max_tokens",
            match obj.get("max_tokens") {
                None | Some(Value::Null) => Value::Null,
                Some(_) => integer(obj, "max_tokens", at, 1, 1)?,
            },
        ),
        ("keep_first", integer(obj, "keep_first", at, 0, 2)?),
        (
            "minimum_progress",
            fraction(obj, "minimum_progress", at, 0.1)?,
        ),
        (
            "hard_context_reset_max_retries",
            integer(obj, "hard_context_reset_max_retries", at, 1, 5)?,
        ),
        (
            "hard_context_reset_context_scaling",
            fraction(obj, "hard_context_reset_context_scaling", at, 0.8)?,
        ),
    ];
    if kind == "llm_summarizing" {
        for (k, v) in summarizing {
            out.insert(k.into(), v);
        }
    }
    Ok(Value::Object(out))
}

/// Reads `verification` (absent or `null`: the defaults, the critic off): `critic_enabled`
/// `false`, `critic_mode` one of [`CRITIC_MODES`], `enable_iterative_refinement` a boolean,
/// `critic_threshold` a number from 0 to 1, `max_refinement_iterations` an integer ≥ 1,
/// `critic_server_url` and `critic_model_name` text or null. Returns the settings with the
/// defaults filled in.
///
/// # Errors
/// A 422 entry under `at`: not an object, a field of the wrong type or out of its bounds,
/// `critic_enabled: true` ([`CRITIC_REFUSED`]).
pub fn parse_verification(v: Option<&Value>, at: &[LocItem]) -> Result<Value, ValidationError> {
    let obj = &settings_object(v, at, "ProfileVerificationSettings")?;
    if boolean(obj, "critic_enabled", at, false)? {
        return Err(value_error(
            field(at, "critic_enabled"),
            CRITIC_REFUSED,
            &json!(true),
        ));
    }
    let mode = match obj.get("critic_mode") {
        None => CRITIC_MODES[0],
        Some(Value::String(m)) if CRITIC_MODES.contains(&m.as_str()) => m.as_str(),
        Some(other) => {
            return Err(not_one_of(
                ErrorType::LiteralError,
                field(at, "critic_mode"),
                &CRITIC_MODES,
                other,
            ));
        }
    };
    let threshold = match obj.get("critic_threshold") {
        None => 0.6,
        Some(n) => match n.as_f64() {
            Some(f) if f < 0.0 => return Err(at_least(field(at, "critic_threshold"), 0, n)),
            Some(f) if f > 1.0 => return Err(less_than_equal(field(at, "critic_threshold"), 1, n)),
            Some(f) => f,
            None => return Err(float_type(field(at, "critic_threshold"), n)),
        },
    };
    let mut out = Map::new();
    out.insert("critic_enabled".into(), json!(false));
    out.insert("critic_mode".into(), json!(mode));
    out.insert(
        "enable_iterative_refinement".into(),
        json!(boolean(obj, "enable_iterative_refinement", at, false)?),
    );
    out.insert("critic_threshold".into(), json!(threshold));
    out.insert(
        "max_refinement_iterations".into(),
        integer(obj, "max_refinement_iterations", at, 1, 3)?,
    );
    for key in ["critic_server_url", "critic_model_name"] {
        let v = match obj.get(key) {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(s)) => json!(s),
            Some(other) => return Err(string_type(field(at, key), other)),
        };
        out.insert(key.into(), v);
    }
    Ok(Value::Object(out))
}

/// The settings object at `v` (absent or `null`: an empty one, the defaults).
///
/// # Errors
/// `model_type` at `at` naming `title` for anything but an object or `null`.
fn settings_object(
    v: Option<&Value>,
    at: &[LocItem],
    title: &str,
) -> Result<Map<String, Value>, ValidationError> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(o)) => Ok(o.clone()),
        Some(other) => Err(model_type(at.to_vec(), title, other)),
    }
}

/// Checks `agent` (already text): only [`AGENT_CLASS`].
///
/// # Errors
/// A `value_error` at `at` saying the agent server builds `CodeActAgent` only.
pub fn check_agent_class(name: &str, at: Vec<LocItem>) -> Result<(), ValidationError> {
    if name == AGENT_CLASS {
        return Ok(());
    }
    Err(value_error(at, AGENT_REFUSED, &json!(name)))
}

/// Checks `acp_server` (already text): one of [`ACP_SERVERS`].
///
/// # Errors
/// A `literal_error` at `at`.
pub fn check_acp_server(name: &str, at: Vec<LocItem>) -> Result<(), ValidationError> {
    if ACP_SERVERS.contains(&name) {
        return Ok(());
    }
    Err(not_one_of(
        ErrorType::LiteralError,
        at,
        &ACP_SERVERS,
        &json!(name),
    ))
}

/// `obj.<key>` as a boolean, `default` when absent.
fn boolean(
    obj: &Map<String, Value>,
    key: &str,
    at: &[LocItem],
    default: bool,
) -> Result<bool, ValidationError> {
    match obj.get(key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(bool_type(field(at, key), other)),
    }
}

/// `obj.<key>` as an integer ≥ `min` (a number without a fraction taken as one, as pydantic's
/// lax mode does), `default` when absent.
fn integer(
    obj: &Map<String, Value>,
    key: &str,
    at: &[LocItem],
    min: i64,
    default: i64,
) -> Result<Value, ValidationError> {
    let Some(v) = obj.get(key) else {
        return Ok(json!(default));
    };
    let n = v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    });
    match n {
        Some(n) if n >= min => Ok(json!(n)),
        Some(_) => Err(at_least(field(at, key), min, v)),
        None => Err(ValidationError::new(
            ErrorType::IntType,
            field(at, key),
            "Input should be a valid integer",
        )
        .with_input(v.clone())),
    }
}

/// `obj.<key>` as a number strictly between 0 and 1, `default` when absent.
fn fraction(
    obj: &Map<String, Value>,
    key: &str,
    at: &[LocItem],
    default: f64,
) -> Result<Value, ValidationError> {
    let Some(v) = obj.get(key) else {
        return Ok(json!(default));
    };
    match v.as_f64() {
        Some(f) if f <= 0.0 => Err(greater_than(field(at, key), 0, v)),
        Some(f) if f >= 1.0 => Err(value_error(
            field(at, key),
            "Input should be less than 1",
            v,
        )),
        Some(f) => Ok(json!(f)),
        None => Err(float_type(field(at, key), v)),
    }
}

/// `greater_than_equal`: a number below its lower bound `ge`.
fn at_least(at: Vec<LocItem>, ge: i64, input: &Value) -> ValidationError {
    ValidationError::new(
        ErrorType::GreaterThanEqual,
        at,
        format!("Input should be greater than or equal to {ge}"),
    )
    .with_input(input.clone())
    .with_ctx(json!({ "ge": ge }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::loc;

    #[test]
    fn condenser_defaults_and_bounds() {
        let at = loc(["body", "condenser"]);
        let d = parse_condenser(None, &at).unwrap();
        assert_eq!(
            d,
            json!({"condenser_kind": "llm_summarizing", "enabled": true, "max_size": 240,
                   "max_tokens": null, "keep_first": 2, "minimum_progress": 0.1,
                   "hard_context_reset_max_retries": 5,
                   "hard_context_reset_context_scaling": 0.8})
        );
        assert_eq!(parse_condenser(Some(&Value::Null), &at).unwrap(), d);
        // Unknown fields are dropped, whole numbers taken as integers; reading twice is the same.
        let c = parse_condenser(Some(&json!({"max_size": 80.0, "surprise": 1})), &at).unwrap();
        assert_eq!(
            (c["max_size"].clone(), c.get("surprise")),
            (json!(80), None)
        );
        assert_eq!(parse_condenser(Some(&c), &at).unwrap(), c);
        assert_eq!(
            parse_condenser(Some(&json!({"condenser_kind": "no_op"})), &at).unwrap(),
            json!({"condenser_kind": "no_op", "enabled": true})
        );
        for (bad, key) in [
            (json!({"max_size": 19}), "max_size"),
            (json!({"max_size": 2.5}), "max_size"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"keep_first": -1}), "keep_first"),
            (json!({"minimum_progress": 1}), "minimum_progress"),
            (json!({"minimum_progress": 0}), "minimum_progress"),
            (json!({"enabled": "yes"}), "enabled"),
            (json!({"condenser_kind": "pipeline"}), "condenser_kind"),
        ] {
            let e = parse_condenser(Some(&bad), &at).unwrap_err();
            assert_eq!(e.loc, field(&at, key), "{bad}");
        }
        assert!(parse_condenser(Some(&json!([])), &at).is_err());
    }

    #[test]
    fn verification_refuses_the_critic() {
        let at = loc(["body", "verification"]);
        let v = parse_verification(None, &at).unwrap();
        assert_eq!(v["critic_enabled"], false);
        assert_eq!(v["critic_mode"], "finish_and_message");
        assert_eq!(v["max_refinement_iterations"], 3);
        let e = parse_verification(Some(&json!({"critic_enabled": true})), &at).unwrap_err();
        assert_eq!(e.error_type, ErrorType::ValueError);
        assert!(e.msg.contains("LLM key"), "{}", e.msg);
        for bad in [
            json!({"critic_threshold": 1.5}),
            json!({"critic_threshold": -0.1}),
            json!({"critic_mode": "never"}),
            json!({"max_refinement_iterations": 0}),
            json!({"critic_server_url": 3}),
        ] {
            assert!(parse_verification(Some(&bad), &at).is_err(), "{bad}");
        }
    }

    #[test]
    fn agent_and_acp_server_names() {
        assert!(check_agent_class("CodeActAgent", loc(["body", "agent"])).is_ok());
        let e = check_agent_class("PlannerAgent", loc(["body", "agent"])).unwrap_err();
        assert_eq!(e.error_type, ErrorType::ValueError);
        assert!(check_acp_server("custom", loc(["body", "acp_server"])).is_ok());
        assert!(check_acp_server("claude", loc(["body", "acp_server"])).is_err());
    }
}
